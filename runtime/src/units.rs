//! How sizes print, everywhere a person reads one (reports, plan pictures, error messages):
//! one function, so a figure reads the same in a report and in the error it explains; and
//! how much heap a request takes, everywhere memory is counted.

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

/// The allocator's block for a request of `n` bytes (0: no block): glibc's chunk, the
/// request plus its 8-byte header rounded to 16, at least 32.
pub(crate) fn heap_block(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (n + 8).next_multiple_of(16).max(32)
    }
}
