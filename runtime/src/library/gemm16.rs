//! Products of bf16 matrices on `vdpbf16ps` (AVX-512 BF16): operands read as bf16, every
//! product accumulated in f32 over the whole of `k`, the result rounded once to bf16.
//!
//! `vdpbf16ps` adds to each of 16 f32 lanes the dot product of a pair of bf16 values of one
//! operand with a pair of the other: `acc[j] += a[2j]·b[2j] + a[2j+1]·b[2j+1]` (products
//! exact in f32, the two additions rounded to nearest even; subnormal inputs and results
//! are flushed to zero). So both operands are packed in pairs along `k`: a panel of the
//! left operand holds, for each pair `p`, the 32-bit pair `(a[i, 2p], a[i, 2p+1])` of each
//! of its `MR` rows (broadcast to every lane), a panel of the right one the pairs of each of
//! its `NR` columns (two vectors of 16 lanes). The tile kernel keeps `MR × NR` f32
//! accumulators in 28 registers and runs over every pair of `k` before it rounds and
//! stores, so each result is one sum in a fixed order: the same bits whatever the split of
//! the work and the number of threads.
//!
//! No `k` blocking: a tile reads 184 bytes per 28 instructions, which the L2 and L3 caches
//! serve, and with the whole sum in registers no f32 partial result needs memory.
//! The operand of fewer packed bytes is packed whole once (shared by every task); each
//! task packs one panel of the other at a time and runs it against all of the shared one.
//! Both live in the program's scratch (`scratch_bytes`), planned in its arena and counted in
//! its memory report.
//!
//! Measured against the f32 GEMM by `benches/gemm_compare.rs` (docs/performance.md).

use super::Mat;

/// Rows of a tile: the left operand's panel height (28 accumulators, 2 right-operand
/// vectors and the broadcast pair fill the 32 vector registers but one).
pub const MR: usize = 14;
/// Columns of a tile: two vectors of 16 f32 lanes.
pub const NR: usize = 32;
/// The most tasks a product is split into: a function of its sizes only, never of the
/// thread count (rayon spreads the tasks over whatever threads there are).
const SLOTS: usize = 8;
/// Below this many multiply-adds a product runs on the calling thread.
const PARALLEL_MACS: usize = 1 << 21;
/// The most panels of the streamed operand a task packs at once, and their most bytes.
const GROUP: usize = 4;
const GROUP_BYTES: usize = 256 << 10;
/// Alignment of the scratch regions (a cache line).
const ALIGN: usize = 64;

/// Whether this CPU runs the bf16 kernel (AVX-512 F, BW, VL and BF16).
pub fn native() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static NATIVE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *NATIVE.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vl")
                && std::arch::is_x86_feature_detected!("avx512bf16")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Which operand is packed whole.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Shared {
    /// The right operand: each task packs a panel of `MR` rows of the left one at a time.
    Right,
    /// The left operand: each task packs a panel of `NR` columns of the right one at a time.
    Left,
}

/// How a product `[m, k] @ [k, n]` is packed and split.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    m: usize,
    k: usize,
    n: usize,
    /// Pairs of `k` (the last one padded with a zero where `k` is odd).
    kp: usize,
    shared: Shared,
    /// Tasks, each with a contiguous range of the streamed operand's panels.
    slots: usize,
    /// Panels of the streamed operand a task packs at once (`GROUP_BYTES` at most).
    group: usize,
}

impl Geometry {
    fn of(m: usize, k: usize, n: usize) -> Geometry {
        let kp = k.div_ceil(2);
        let (rows, cols) = (m.div_ceil(MR), n.div_ceil(NR));
        let shared = if cols * NR <= rows * MR {
            Shared::Right
        } else {
            Shared::Left
        };
        let streamed = match shared {
            Shared::Right => rows,
            Shared::Left => cols,
        };
        let slots = if m.saturating_mul(k).saturating_mul(n) < PARALLEL_MACS {
            1
        } else {
            streamed.clamp(1, SLOTS)
        };
        let mut g = Geometry {
            m,
            k,
            n,
            kp,
            shared,
            slots,
            group: 1,
        };
        let (_, panel) = g.regions();
        // (`k = 0`: empty panels; the tiles still write their zeros.)
        g.group = (GROUP_BYTES / panel.max(1)).clamp(1, GROUP);
        g
    }

    /// Panels of the left operand (`MR` rows each) and of the right one (`NR` columns).
    fn panels(&self) -> (usize, usize) {
        (self.m.div_ceil(MR), self.n.div_ceil(NR))
    }

    /// Bytes of one packed panel of `lanes` rows or columns.
    fn panel_bytes(&self, lanes: usize) -> usize {
        (self.kp * lanes * 4).next_multiple_of(ALIGN)
    }

    /// Bytes of the shared operand packed whole, and of one task's panel of the other.
    fn regions(&self) -> (usize, usize) {
        let (rows, cols) = self.panels();
        match self.shared {
            Shared::Right => (cols * self.panel_bytes(NR), self.panel_bytes(MR)),
            Shared::Left => (rows * self.panel_bytes(MR), self.panel_bytes(NR)),
        }
    }

    fn scratch_bytes(&self) -> usize {
        let (shared, panel) = self.regions();
        shared + self.slots * self.group * panel + ALIGN
    }
}

/// Scratch bytes of a bf16 product `[m, k] @ [k, n]` (`run`'s `scratch`).
pub fn scratch_bytes(m: usize, k: usize, n: usize) -> usize {
    Geometry::of(m, k, n).scratch_bytes()
}

/// `c[m, n] = a[m, k] @ b[k, n]` of bf16 operands (elements at `p + i·rs + j·cs`, in
/// elements), `c` contiguous of type `result` (bf16, or f32: the sums unrounded), on the
/// kernel of this module; `scratch` holds
/// `scratch_bytes(m, k, n)` bytes (or is null: the product then allocates them).
///
/// # Safety
/// `native()`; the operands' elements in live memory; `c` valid for `m · n` values
/// overlapping neither operand nor the scratch.
pub(super) unsafe fn run(
    m: usize,
    k: usize,
    n: usize,
    a: Mat,
    b: Mat,
    (c, result): (*mut u8, crate::DType),
    scratch: *mut u8,
) {
    debug_assert!(native());
    let f32_out = match result {
        crate::DType::BF16 => false,
        crate::DType::F32 => true,
        d => unreachable!("a bf16 product gives bf16 or f32, not {d}"),
    };
    if m == 0 || n == 0 {
        return;
    }
    let g = Geometry::of(m, k, n);
    let mut own = Vec::new();
    let scratch = if scratch.is_null() {
        own.resize(g.scratch_bytes(), 0u8);
        own.as_mut_ptr()
    } else {
        scratch
    };
    let base = scratch.wrapping_add(scratch.align_offset(ALIGN));
    let (shared_bytes, panel_bytes) = g.regions();
    let shared = base as *mut u32;
    let (rows, cols) = g.panels();
    let ldc = n;
    // Pack the shared operand (its panels split over the tasks), then run each task's
    // range of the streamed operand's panels against all of it.
    let p = Ptrs {
        a,
        b,
        c,
        f32_out,
        shared,
        panels: base.wrapping_add(shared_bytes),
    };
    let (shared_panels, streamed) = match g.shared {
        Shared::Right => (cols, rows),
        Shared::Left => (rows, cols),
    };
    let pack_shared = move |t: usize| {
        let p = &p;
        for j in range(t, g.slots, shared_panels) {
            match g.shared {
                Shared::Right => {
                    pack_right(&g, p.b, j, p.shared.wrapping_add(j * g.panel_bytes(NR) / 4))
                }
                Shared::Left => {
                    pack_left(&g, p.a, j, p.shared.wrapping_add(j * g.panel_bytes(MR) / 4))
                }
            }
        }
    };
    let compute = move |t: usize| {
        let p = &p;
        let own = p.panels.wrapping_add(t * g.group * panel_bytes);
        let own = |q: usize| own.wrapping_add(q * panel_bytes) as *mut u32;
        // The task's panels a group at a time: each panel of the shared operand is read
        // from the outer cache once per group and reused from the inner one.
        let mine = range(t, g.slots, streamed);
        for first in mine.clone().step_by(g.group) {
            let group = first..(first + g.group).min(mine.end);
            for (q, i) in group.clone().enumerate() {
                match g.shared {
                    Shared::Right => pack_left(&g, p.a, i, own(q)),
                    Shared::Left => pack_right(&g, p.b, i, own(q)),
                }
            }
            for s in 0..shared_panels {
                for (q, i) in group.clone().enumerate() {
                    match g.shared {
                        Shared::Right => {
                            let bp = p.shared.wrapping_add(s * g.panel_bytes(NR) / 4);
                            tile_at(&g, own(q), bp, p, ldc, i, s);
                        }
                        Shared::Left => {
                            let ap = p.shared.wrapping_add(s * g.panel_bytes(MR) / 4);
                            tile_at(&g, ap, own(q), p, ldc, s, i);
                        }
                    }
                }
            }
        }
    };
    if g.slots == 1 {
        pack_shared(0);
        compute(0);
    } else {
        use rayon::prelude::*;
        (0..g.slots).into_par_iter().for_each(pack_shared);
        (0..g.slots).into_par_iter().for_each(compute);
    }
}

/// The pointers a task reads and writes (shared by the tasks: each writes its own tiles of
/// `c` and its own panel).
#[derive(Clone, Copy)]
struct Ptrs {
    a: Mat,
    b: Mat,
    c: *mut u8,
    /// Whether `c` holds f32 (else bf16).
    f32_out: bool,
    shared: *mut u32,
    /// The tasks' own panels, one after another.
    panels: *mut u8,
}

// SAFETY: the tasks write disjoint tiles of `c`, disjoint panels of the shared region
// (before any reads it) and each its own panel.
unsafe impl Send for Ptrs {}
unsafe impl Sync for Ptrs {}

/// Task `t`'s part of `0..len` split into `parts` contiguous ranges.
fn range(t: usize, parts: usize, len: usize) -> std::ops::Range<usize> {
    (t * len / parts)..((t + 1) * len / parts)
}

/// The tile of left panel `i` (packed at `ap`) and right panel `j` (at `bp`) into `c`.
///
/// # Safety
/// As `run`'s; the panels packed.
unsafe fn tile_at(
    g: &Geometry,
    ap: *const u32,
    bp: *const u32,
    p: &Ptrs,
    ldc: usize,
    i: usize,
    j: usize,
) {
    let (r0, c0) = (i * MR, j * NR);
    let rows = (g.m - r0).min(MR);
    let cols = (g.n - c0).min(NR);
    let at = r0 * ldc + c0;
    #[cfg(target_arch = "x86_64")]
    if p.f32_out {
        kernel::tile::<true>(g.kp, ap, bp, p.c.add(at * 4), ldc, rows, cols);
    } else {
        kernel::tile::<false>(g.kp, ap, bp, p.c.add(at * 2), ldc, rows, cols);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (ap, bp, p, ldc, rows, cols, at);
}

/// Packs left panel `i` (rows `i·MR ..`) at `dst`: for each pair `p`, the pairs of its `MR`
/// rows (zero past `m` and past `k`).
///
/// # Safety
/// As `run`'s; `dst` holds `kp · MR` values.
unsafe fn pack_left(g: &Geometry, a: Mat, i: usize, dst: *mut u32) {
    let r0 = i * MR;
    let lanes = (g.m - r0).min(MR);
    // Lane `r` of the panel is row `r0 + r`: along `k` the stride is `cs`, across lanes `rs`.
    let src = (a.p as *const u16).wrapping_offset(r0 as isize * a.rs);
    pack(src, a.cs, a.rs, g.k, lanes, MR, dst);
}

/// Packs right panel `j` (columns `j·NR ..`) at `dst`: for each pair `p`, the pairs of its
/// `NR` columns (zero past `n` and past `k`).
///
/// # Safety
/// As `run`'s; `dst` holds `kp · NR` values.
unsafe fn pack_right(g: &Geometry, b: Mat, j: usize, dst: *mut u32) {
    let c0 = j * NR;
    let lanes = (g.n - c0).min(NR);
    let src = (b.p as *const u16).wrapping_offset(c0 as isize * b.cs);
    pack(src, b.rs, b.cs, g.k, lanes, NR, dst);
}

/// `dst[p · width + l] = x[2p, l] | x[2p + 1, l] << 16` for the `lanes` of `width` (zero
/// beyond them and past `k`), where `x[q, l]` is at `src + q·ks + l·ls`.
///
/// # Safety
/// Every `x[q, l]` (`q < k`, `l < lanes`) readable; `dst` holds `ceil(k/2) · width` values.
unsafe fn pack(
    src: *const u16,
    ks: isize,
    ls: isize,
    k: usize,
    lanes: usize,
    width: usize,
    dst: *mut u32,
) {
    let kp = k.div_ceil(2);
    #[cfg(target_arch = "x86_64")]
    if ls == 1 && width == NR {
        // Each pair of `k` is two contiguous runs of lanes: interleaved 32 lanes at a time.
        kernel::pack_runs(src, ks, k, lanes, dst);
        return;
    }
    let x = |q: usize, l: usize| -> u32 {
        if q < k && l < lanes {
            *src.wrapping_offset(q as isize * ks + l as isize * ls) as u32
        } else {
            0
        }
    };
    if ks == 1 {
        // Each lane's pairs are contiguous: one lane at a time (reads in order).
        for l in 0..width {
            for p in 0..kp {
                *dst.add(p * width + l) = x(2 * p, l) | x(2 * p + 1, l) << 16;
            }
        }
        return;
    }
    for p in 0..kp {
        for l in 0..width {
            *dst.add(p * width + l) = x(2 * p, l) | x(2 * p + 1, l) << 16;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod kernel {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// `c[r, j] = bf16(Σ_p a[p, r] · b[p, j])` (the f32 sum itself where `F32_OUT`) for the
    /// `rows × cols` of a tile (`c`'s rows `ldc` elements apart), from a left panel `a`
    /// (`kp × MR` pairs) and a right one `b` (`kp × NR`).
    ///
    /// # Safety
    /// `native()`; the panels hold `kp` pairs; `c` valid for the tile.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    pub unsafe fn tile<const F32_OUT: bool>(
        kp: usize,
        a: *const u32,
        b: *const u32,
        c: *mut u8,
        ldc: usize,
        rows: usize,
        cols: usize,
    ) {
        let mut acc = [_mm512_setzero_ps(); 2 * MR];
        let (mut a, mut b) = (a, b);
        for _ in 0..kp {
            let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(b as *const _));
            let b1: __m512bh = std::mem::transmute(_mm512_loadu_si512(b.add(16) as *const _));
            for r in 0..MR {
                let x: __m512bh = std::mem::transmute(_mm512_set1_epi32(*a.add(r) as i32));
                acc[2 * r] = _mm512_dpbf16_ps(acc[2 * r], x, b0);
                acc[2 * r + 1] = _mm512_dpbf16_ps(acc[2 * r + 1], x, b1);
            }
            a = a.add(MR);
            b = b.add(NR);
        }
        let lo = lanes(cols.min(16));
        let hi = lanes(cols.saturating_sub(16));
        if F32_OUT {
            for r in 0..rows {
                let row = (c as *mut f32).add(r * ldc);
                _mm512_mask_storeu_ps(row, lo, acc[2 * r]);
                _mm512_mask_storeu_ps(row.add(16), hi, acc[2 * r + 1]);
            }
            return;
        }
        for r in 0..rows {
            let row = (c as *mut u16).add(r * ldc);
            let (x0, x1) = (
                _mm512_cvtneps_pbh(acc[2 * r]),
                _mm512_cvtneps_pbh(acc[2 * r + 1]),
            );
            _mm256_mask_storeu_epi16(
                row as *mut i16,
                lo,
                std::mem::transmute::<__m256bh, __m256i>(x0),
            );
            _mm256_mask_storeu_epi16(
                row.add(16) as *mut i16,
                hi,
                std::mem::transmute::<__m256bh, __m256i>(x1),
            );
        }
    }

    /// The mask of the first `n` of 16 lanes.
    fn lanes(n: usize) -> __mmask16 {
        ((1u32 << n) - 1) as __mmask16
    }

    /// A right panel packed from contiguous runs: `dst[p · NR + l] = x[2p, l] | x[2p+1, l] << 16`
    /// with `x[q, l]` at `src + q·ks + l` (zero for `l ≥ lanes` and `q ≥ k`).
    ///
    /// # Safety
    /// As `pack`'s.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    pub unsafe fn pack_runs(src: *const u16, ks: isize, k: usize, lanes: usize, dst: *mut u32) {
        let mask: __mmask32 = if lanes >= 32 { !0 } else { (1u32 << lanes) - 1 };
        // Word 2l of the result is lane l of the even run, word 2l+1 lane l of the odd run.
        let mut i0 = [0i16; 32];
        let mut i1 = [0i16; 32];
        for l in 0..16 {
            i0[2 * l] = l as i16;
            i0[2 * l + 1] = 32 + l as i16;
            i1[2 * l] = 16 + l as i16;
            i1[2 * l + 1] = 48 + l as i16;
        }
        let (i0, i1) = (
            _mm512_loadu_si512(i0.as_ptr() as *const _),
            _mm512_loadu_si512(i1.as_ptr() as *const _),
        );
        for p in 0..k.div_ceil(2) {
            let q = 2 * p;
            let even =
                _mm512_maskz_loadu_epi16(mask, src.wrapping_offset(q as isize * ks) as *const i16);
            let odd = if q + 1 < k {
                _mm512_maskz_loadu_epi16(
                    mask,
                    src.wrapping_offset((q + 1) as isize * ks) as *const i16,
                )
            } else {
                _mm512_setzero_si512()
            };
            let out = dst.add(p * NR);
            _mm512_storeu_si512(out as *mut _, _mm512_permutex2var_epi16(even, i0, odd));
            _mm512_storeu_si512(
                out.add(16) as *mut _,
                _mm512_permutex2var_epi16(even, i1, odd),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(x: f32) -> u16 {
        half::bf16::from_f32(x).to_bits()
    }

    /// Every split, shape edge, odd `k` and operand layout against f64 sums of the same
    /// bf16 values (within f32 accumulation's error and one bf16 rounding).
    #[test]
    fn products_match_f64_sums_on_every_layout() {
        if !native() {
            return;
        }
        for &(m, k, n) in &[
            (0, 3, 4),
            (3, 0, 4),
            (3, 4, 0),
            (1, 1, 1),
            (3, 5, 7),
            (14, 2, 32),
            (15, 33, 33),
            (29, 64, 100),
            (200, 97, 70),
            (64, 300, 500),
        ] {
            for lay in 0..4 {
                let (ta, tb) = (lay & 1 == 1, lay & 2 == 2);
                let av: Vec<u16> = (0..m * k)
                    .map(|i| bits(((i * 7919 % 61) as f32 - 30.0) / 16.0))
                    .collect();
                let bv: Vec<u16> = (0..k * n)
                    .map(|i| bits(((i * 104729 % 53) as f32 - 26.0) / 8.0))
                    .collect();
                // Stored transposed where `ta`/`tb`: element (i, j) at j·rows + i.
                let a = Mat {
                    p: av.as_ptr() as *mut u8,
                    rs: if ta { 1 } else { k as isize },
                    cs: if ta { m as isize } else { 1 },
                };
                let b = Mat {
                    p: bv.as_ptr() as *mut u8,
                    rs: if tb { 1 } else { n as isize },
                    cs: if tb { k as isize } else { 1 },
                };
                let mut c = vec![0x7fc0u16; m * n]; // NaN: every element must be written
                unsafe {
                    run(
                        m,
                        k,
                        n,
                        a,
                        b,
                        (c.as_mut_ptr() as *mut u8, crate::DType::BF16),
                        std::ptr::null_mut(),
                    )
                };
                let at = |i: usize, j: usize| {
                    half::bf16::from_bits(av[if ta { j * m + i } else { i * k + j }]).to_f64()
                };
                let bt = |i: usize, j: usize| {
                    half::bf16::from_bits(bv[if tb { j * k + i } else { i * n + j }]).to_f64()
                };
                for i in 0..m {
                    for j in 0..n {
                        let exact: f64 = (0..k).map(|q| at(i, q) * bt(q, j)).sum();
                        let got = half::bf16::from_bits(c[i * n + j]).to_f64();
                        assert!(
                            (got - exact).abs() <= exact.abs() / 128.0 + 1e-3,
                            "{m}x{k}x{n} layout {lay} at ({i}, {j}): {got} vs {exact}"
                        );
                    }
                }
            }
        }
    }
}
