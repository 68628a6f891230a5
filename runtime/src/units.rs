//! How sizes print, everywhere a person reads one (reports, plan pictures, error messages):
//! one function, so a figure reads the same in a report and in the error it explains.

/// `bytes` as a person reads it: `512 B`, `3.5 KiB`, `24.0 MiB`, `1.93 GiB`, `128.00 TiB`.
pub fn human_bytes(bytes: usize) -> String {
    const KIB: f64 = 1024.0;
    const LARGE: [&str; 4] = ["GiB", "TiB", "PiB", "EiB"];
    let b = bytes as f64;
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    if b < KIB * KIB {
        return format!("{:.1} KiB", b / KIB);
    }
    if b < KIB * KIB * KIB {
        return format!("{:.1} MiB", b / (KIB * KIB));
    }
    let mut v = b / (KIB * KIB * KIB);
    let mut unit = LARGE[0];
    for u in &LARGE[1..] {
        if v < KIB {
            break;
        }
        v /= KIB;
        unit = u;
    }
    format!("{v:.2} {unit}")
}
