//! The f32 pools' inner loops over contiguous lanes, compiled for the widest vectors the
//! CPU has (AVX-512, AVX2, or the baseline): the lanes of a window row are taken in chunks
//! of 16, whose maxima and winners stay in registers. Maxima and winners are selections
//! and a cotangent is written as `0 + dy` (as the general path rounds it), so every width
//! gives the same bits.

/// Lanes per chunk: one AVX-512 vector.
const W: usize = 16;

/// Whether `v` beats the running maximum `best` (`ir::window::beats` on f32: greater, or a
/// NaN over a number; ties keep the earlier position).
#[inline(always)]
fn beats(v: f32, best: f32) -> bool {
    v > best || (v.is_nan() && !best.is_nan())
}

/// The maxima of the rows `xs` (at least one) into `y`, over `b` lanes.
#[inline(always)]
unsafe fn maxima_body(xs: &[*const f32], y: *mut f32, b: usize) {
    let mut c = 0;
    while c + W <= b {
        let mut best = *(xs[0].add(c) as *const [f32; W]);
        for x in &xs[1..] {
            let v = *(x.add(c) as *const [f32; W]);
            for l in 0..W {
                best[l] = if beats(v[l], best[l]) { v[l] } else { best[l] };
            }
        }
        *(y.add(c) as *mut [f32; W]) = best;
        c += W;
    }
    for c in c..b {
        let mut best = *xs[0].add(c);
        for x in &xs[1..] {
            let v = *x.add(c);
            best = if beats(v, best) { v } else { best };
        }
        *y.add(c) = best;
    }
}

/// One window of a disjoint max-scatter over `b` lanes: the row of `outs` whose `xs` row
/// wins a lane takes `dy`'s lane (`0 + dy`), the others zero.
#[inline(always)]
unsafe fn scatter_body(xs: &[*const f32], outs: &[*mut f32], dy: *const f32, b: usize) {
    let mut c = 0;
    while c + W <= b {
        let mut best = *(xs[0].add(c) as *const [f32; W]);
        let mut arg = [0u32; W];
        for (k, x) in xs.iter().enumerate().skip(1) {
            let v = *(x.add(c) as *const [f32; W]);
            for l in 0..W {
                let wins = beats(v[l], best[l]);
                best[l] = if wins { v[l] } else { best[l] };
                arg[l] = if wins { k as u32 } else { arg[l] };
            }
        }
        let d = *(dy.add(c) as *const [f32; W]);
        for (k, o) in outs.iter().enumerate() {
            let mut r = [0f32; W];
            for l in 0..W {
                r[l] = if arg[l] == k as u32 { 0.0 + d[l] } else { 0.0 };
            }
            *(o.add(c) as *mut [f32; W]) = r;
        }
        c += W;
    }
    for c in c..b {
        let (mut best, mut arg) = (*xs[0].add(c), 0);
        for (k, x) in xs.iter().enumerate().skip(1) {
            let v = *x.add(c);
            if beats(v, best) {
                (best, arg) = (v, k);
            }
        }
        for (k, o) in outs.iter().enumerate() {
            *o.add(c) = if arg == k { 0.0 + *dy.add(c) } else { 0.0 };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod wide {
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn maxima_avx512(xs: &[*const f32], y: *mut f32, b: usize) {
        super::maxima_body(xs, y, b)
    }
    #[target_feature(enable = "avx2")]
    pub unsafe fn maxima_avx2(xs: &[*const f32], y: *mut f32, b: usize) {
        super::maxima_body(xs, y, b)
    }
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn scatter_avx512(xs: &[*const f32], o: &[*mut f32], dy: *const f32, b: usize) {
        super::scatter_body(xs, o, dy, b)
    }
    #[target_feature(enable = "avx2")]
    pub unsafe fn scatter_avx2(xs: &[*const f32], o: &[*mut f32], dy: *const f32, b: usize) {
        super::scatter_body(xs, o, dy, b)
    }
}

/// The vector width the running CPU offers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Width {
    Avx512,
    Avx2,
    Base,
}

fn width() -> Width {
    static WIDTH: std::sync::OnceLock<Width> = std::sync::OnceLock::new();
    *WIDTH.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vl")
            {
                return Width::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Width::Avx2;
            }
        }
        Width::Base
    })
}

/// The maxima of the rows `xs` (at least one, each `b` contiguous lanes) into `y`.
///
/// # Safety
/// Every row is valid for `b` reads and `y` for `b` writes.
pub unsafe fn maxima(xs: &[*const f32], y: *mut f32, b: usize) {
    debug_assert!(!xs.is_empty());
    match width() {
        #[cfg(target_arch = "x86_64")]
        Width::Avx512 => wide::maxima_avx512(xs, y, b),
        #[cfg(target_arch = "x86_64")]
        Width::Avx2 => wide::maxima_avx2(xs, y, b),
        _ => maxima_body(xs, y, b),
    }
}

/// One window of a disjoint max-scatter: `outs[k]` (the input row `xs[k]` lies over) takes
/// `dy` in the lanes where `xs[k]` is the window's first maximum, zero elsewhere.
///
/// # Safety
/// `xs` and `outs` are as long (at least one), every row is valid for `b` lanes, the rows
/// of `outs` do not overlap each other or the others.
pub unsafe fn scatter(xs: &[*const f32], outs: &[*mut f32], dy: *const f32, b: usize) {
    debug_assert!(!xs.is_empty() && xs.len() == outs.len());
    match width() {
        #[cfg(target_arch = "x86_64")]
        Width::Avx512 => wide::scatter_avx512(xs, outs, dy, b),
        #[cfg(target_arch = "x86_64")]
        Width::Avx2 => wide::scatter_avx2(xs, outs, dy, b),
        _ => scatter_body(xs, outs, dy, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every width computes what the scalar definition does, NaNs, ties and signed zeros
    /// included, on rows longer and shorter than a chunk.
    #[test]
    fn every_width_selects_the_first_maximum() {
        let specials = [0.0f32, -0.0, 1.0, 1.0, f32::NAN, -f32::INFINITY, 2.5, -3.0];
        for b in [1usize, 5, 16, 21, 40] {
            let rows: Vec<Vec<f32>> = (0..4)
                .map(|k| {
                    (0..b)
                        .map(|c| specials[(c * 7 + k * 3 + c / 3) % specials.len()])
                        .collect()
                })
                .collect();
            let dy: Vec<f32> = (0..b).map(|c| specials[(c * 5 + 1) % 8]).collect();
            let xs: Vec<*const f32> = rows.iter().map(|r| r.as_ptr()).collect();
            // The definition, lane by lane.
            let mut want_max = vec![0f32; b];
            let mut want_out = vec![vec![0f32; b]; 4];
            for c in 0..b {
                let (mut best, mut arg) = (rows[0][c], 0);
                for (k, row) in rows.iter().enumerate().skip(1) {
                    if beats(row[c], best) {
                        (best, arg) = (row[c], k);
                    }
                }
                want_max[c] = best;
                want_out[arg][c] = 0.0 + dy[c];
            }
            let mut widths = vec![Width::Base];
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") {
                    widths.push(Width::Avx2);
                }
                if width() == Width::Avx512 {
                    widths.push(Width::Avx512);
                }
            }
            for w in widths {
                let mut y = vec![7f32; b];
                let mut out = vec![vec![7f32; b]; 4];
                let outs: Vec<*mut f32> = out.iter_mut().map(|r| r.as_mut_ptr()).collect();
                unsafe {
                    match w {
                        #[cfg(target_arch = "x86_64")]
                        Width::Avx512 => {
                            wide::maxima_avx512(&xs, y.as_mut_ptr(), b);
                            wide::scatter_avx512(&xs, &outs, dy.as_ptr(), b);
                        }
                        #[cfg(target_arch = "x86_64")]
                        Width::Avx2 => {
                            wide::maxima_avx2(&xs, y.as_mut_ptr(), b);
                            wide::scatter_avx2(&xs, &outs, dy.as_ptr(), b);
                        }
                        _ => {
                            maxima_body(&xs, y.as_mut_ptr(), b);
                            scatter_body(&xs, &outs, dy.as_ptr(), b);
                        }
                    }
                }
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&y), bits(&want_max), "maxima at {w:?}, {b} lanes");
                for k in 0..4 {
                    assert_eq!(
                        bits(&out[k]),
                        bits(&want_out[k]),
                        "scatter at {w:?}, row {k}"
                    );
                }
            }
        }
    }
}
