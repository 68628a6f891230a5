//! The f32 and bf16 pools' inner loops over contiguous lanes, compiled for the widest
//! vectors the CPU has (AVX-512, AVX2, or the baseline): the lanes of a window row are taken
//! in chunks of 16, whose maxima and winners stay in registers. Maxima and winners are
//! selections (a bf16 lane compared as its exact f32 value) and a cotangent is written as
//! `0 + dy` (as the general path rounds it), so every width gives the same bits.

/// Lanes per chunk: one AVX-512 vector of f32.
const W: usize = 16;

/// A lane type the vectorised loops take.
pub trait Lane: Copy + 'static {
    const ZERO: Self;
    /// The value as f32 (exact), which `beats` compares.
    fn key(self) -> f32;
    /// `0 + self` rounded to the type: what the general path writes for a cotangent.
    fn plus_zero(self) -> Self;
}

impl Lane for f32 {
    const ZERO: f32 = 0.0;
    #[inline(always)]
    fn key(self) -> f32 {
        self
    }
    #[inline(always)]
    fn plus_zero(self) -> f32 {
        0.0 + self
    }
}

impl Lane for half::bf16 {
    const ZERO: half::bf16 = half::bf16::ZERO;
    #[inline(always)]
    fn key(self) -> f32 {
        f32::from_bits((self.to_bits() as u32) << 16)
    }
    /// (Exact in f32: `0 + x` is `x`, or +0 for −0, or the NaN made quiet, whose high half is
    /// the bf16 NaN made quiet.)
    #[inline(always)]
    fn plus_zero(self) -> half::bf16 {
        half::bf16::from_bits(((0.0 + self.key()).to_bits() >> 16) as u16)
    }
}

/// The lane types, for callers holding untyped rows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    F32,
    Bf16,
}

impl Kind {
    /// The kind of `T`, where the loops take it.
    pub fn of<T: 'static>() -> Option<Kind> {
        use std::any::TypeId;
        let t = TypeId::of::<T>();
        if t == TypeId::of::<f32>() {
            Some(Kind::F32)
        } else if t == TypeId::of::<half::bf16>() {
            Some(Kind::Bf16)
        } else {
            None
        }
    }
}

/// Whether `v` beats the running maximum `best` (`ir::window::beats` on f32: greater, or a
/// NaN over a number; ties keep the earlier position).
#[inline(always)]
fn beats(v: f32, best: f32) -> bool {
    v > best || (v.is_nan() && !best.is_nan())
}

/// The maxima of the rows `xs` (at least one) into `y`, over `b` lanes.
#[inline(always)]
unsafe fn maxima_body<L: Lane>(xs: &[*const L], y: *mut L, b: usize) {
    let mut c = 0;
    while c + W <= b {
        let mut best = *(xs[0].add(c) as *const [L; W]);
        for x in &xs[1..] {
            let v = *(x.add(c) as *const [L; W]);
            for l in 0..W {
                best[l] = if beats(v[l].key(), best[l].key()) {
                    v[l]
                } else {
                    best[l]
                };
            }
        }
        *(y.add(c) as *mut [L; W]) = best;
        c += W;
    }
    for c in c..b {
        let mut best = *xs[0].add(c);
        for x in &xs[1..] {
            let v = *x.add(c);
            best = if beats(v.key(), best.key()) { v } else { best };
        }
        *y.add(c) = best;
    }
}

/// One window of a disjoint max-scatter over `b` lanes: the row of `outs` whose `xs` row
/// wins a lane takes `dy`'s lane (`0 + dy`), the others zero.
#[inline(always)]
unsafe fn scatter_body<L: Lane>(xs: &[*const L], outs: &[*mut L], dy: *const L, b: usize) {
    let mut c = 0;
    while c + W <= b {
        let mut best = *(xs[0].add(c) as *const [L; W]);
        let mut arg = [0u32; W];
        for (k, x) in xs.iter().enumerate().skip(1) {
            let v = *(x.add(c) as *const [L; W]);
            for l in 0..W {
                let wins = beats(v[l].key(), best[l].key());
                best[l] = if wins { v[l] } else { best[l] };
                arg[l] = if wins { k as u32 } else { arg[l] };
            }
        }
        let d = *(dy.add(c) as *const [L; W]);
        for (k, o) in outs.iter().enumerate() {
            let mut r = [L::ZERO; W];
            for l in 0..W {
                r[l] = if arg[l] == k as u32 {
                    d[l].plus_zero()
                } else {
                    L::ZERO
                };
            }
            *(o.add(c) as *mut [L; W]) = r;
        }
        c += W;
    }
    for c in c..b {
        let (mut best, mut arg) = (*xs[0].add(c), 0);
        for (k, x) in xs.iter().enumerate().skip(1) {
            let v = *x.add(c);
            if beats(v.key(), best.key()) {
                (best, arg) = (v, k);
            }
        }
        for (k, o) in outs.iter().enumerate() {
            *o.add(c) = if arg == k {
                (*dy.add(c)).plus_zero()
            } else {
                L::ZERO
            };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use super::Lane;
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn maxima_avx512<L: Lane>(xs: &[*const L], y: *mut L, b: usize) {
        super::maxima_body(xs, y, b)
    }
    #[target_feature(enable = "avx2")]
    pub unsafe fn maxima_avx2<L: Lane>(xs: &[*const L], y: *mut L, b: usize) {
        super::maxima_body(xs, y, b)
    }
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn scatter_avx512<L: Lane>(xs: &[*const L], o: &[*mut L], dy: *const L, b: usize) {
        super::scatter_body(xs, o, dy, b)
    }
    #[target_feature(enable = "avx2")]
    pub unsafe fn scatter_avx2<L: Lane>(xs: &[*const L], o: &[*mut L], dy: *const L, b: usize) {
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

/// Rows of untyped pointers as rows of `L`.
unsafe fn typed<P, L>(rows: &[P]) -> &[L] {
    debug_assert_eq!(size_of::<P>(), size_of::<L>());
    std::slice::from_raw_parts(rows.as_ptr() as *const L, rows.len())
}

/// `maxima` on rows of lanes of `kind`.
///
/// # Safety
/// As `maxima`'s, the rows holding lanes of `kind`.
pub unsafe fn maxima_of(kind: Kind, xs: &[*const u8], y: *mut u8, b: usize) {
    match kind {
        Kind::F32 => maxima::<f32>(typed(xs), y as *mut f32, b),
        Kind::Bf16 => maxima::<half::bf16>(typed(xs), y as *mut half::bf16, b),
    }
}

/// `scatter` on rows of lanes of `kind`.
///
/// # Safety
/// As `scatter`'s, the rows holding lanes of `kind`.
pub unsafe fn scatter_of(kind: Kind, xs: &[*const u8], outs: &[*mut u8], dy: *const u8, b: usize) {
    match kind {
        Kind::F32 => scatter::<f32>(typed(xs), typed(outs), dy as *const f32, b),
        Kind::Bf16 => scatter::<half::bf16>(typed(xs), typed(outs), dy as *const half::bf16, b),
    }
}

/// The maxima of the rows `xs` (at least one, each `b` contiguous lanes) into `y`.
///
/// # Safety
/// Every row is valid for `b` reads and `y` for `b` writes.
pub unsafe fn maxima<L: Lane>(xs: &[*const L], y: *mut L, b: usize) {
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
pub unsafe fn scatter<L: Lane>(xs: &[*const L], outs: &[*mut L], dy: *const L, b: usize) {
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
    /// bf16 lanes: `plus_zero` is the general path's `0 + dy` rounded to bf16 on every bit
    /// pattern, and every width selects the first maximum by the f64 definition and writes
    /// those cotangents, NaNs, ties and signed zeros included.
    #[test]
    fn bf16_lanes_follow_the_general_definition() {
        for bits in 0..=u16::MAX {
            let v = half::bf16::from_bits(bits);
            let want = crate::dtype::bf16_of(0.0 + v.to_f64()).to_bits();
            assert_eq!(v.plus_zero().to_bits(), want, "0 + {bits:#06x}");
        }
        let specials = [
            0.0f32,
            -0.0,
            1.0,
            1.0,
            f32::NAN,
            -f32::INFINITY,
            2.5,
            -3.0,
            1.0078125,
        ];
        let n = specials.len();
        let h = |x: f32| half::bf16::from_f32(x);
        for b in [1usize, 5, 16, 21, 40] {
            let rows: Vec<Vec<half::bf16>> = (0..4)
                .map(|k| {
                    (0..b)
                        .map(|c| h(specials[(c * 7 + k * 3 + c / 3) % n]))
                        .collect()
                })
                .collect();
            let dy: Vec<half::bf16> = (0..b).map(|c| h(specials[(c * 5 + 1) % n])).collect();
            let xs: Vec<*const half::bf16> = rows.iter().map(|r| r.as_ptr()).collect();
            let mut want_max = vec![half::bf16::ZERO; b];
            let mut want_out = vec![vec![half::bf16::ZERO; b]; 4];
            for c in 0..b {
                let (mut best, mut arg) = (rows[0][c], 0);
                for (k, row) in rows.iter().enumerate().skip(1) {
                    if crate::ir::window::beats(row[c].to_f64(), best.to_f64()) {
                        (best, arg) = (row[c], k);
                    }
                }
                want_max[c] = best;
                want_out[arg][c] = crate::dtype::bf16_of(0.0 + dy[c].to_f64());
            }
            let mut y = vec![h(7.0); b];
            let mut out = vec![vec![h(7.0); b]; 4];
            let outs: Vec<*mut half::bf16> = out.iter_mut().map(|r| r.as_mut_ptr()).collect();
            unsafe {
                maxima(&xs, y.as_mut_ptr(), b);
                scatter(&xs, &outs, dy.as_ptr(), b);
            }
            let bits = |v: &[half::bf16]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&y), bits(&want_max), "bf16 maxima, {b} lanes");
            // And the baseline width.
            let mut y0 = vec![h(7.0); b];
            unsafe { maxima_body(&xs, y0.as_mut_ptr(), b) };
            assert_eq!(
                bits(&y0),
                bits(&want_max),
                "baseline bf16 maxima, {b} lanes"
            );
            for k in 0..4 {
                assert_eq!(bits(&out[k]), bits(&want_out[k]), "bf16 scatter, row {k}");
            }
        }
    }
}
