//! Products of 16-bit matrices read as they are: bf16 on `vdpbf16ps` (AVX-512 BF16,
//! `Kind::Dot`), f16 — and bf16 on AVX-512 CPUs without BF16 — on f32 FMAs over panels
//! converted to f32 as they are packed (`Kind::Fma`); every product accumulated in f32 over
//! the whole of `k`, the result rounded once to the operands' type (or kept in f32).
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
//! the work and the number of threads. `Kind::Fma` packs one f32 per lane and step of `k`
//! instead of a pair, and its tiles are the same 14 × 32 f32 accumulators on `vfmadd231ps`.
//!
//! No `k` blocking: a tile reads 184 bytes per 28 instructions, which the L2 and L3 caches
//! serve, and with the whole sum in registers no f32 partial result needs memory.
//! The operand of fewer packed bytes is packed whole once (shared by every task); each
//! task packs a group of panels of the other at a time (up to 4, within `GROUP_BYTES` and
//! `TASKS_BYTES`) and runs them against every shared panel, which so comes from the outer
//! cache once per group.
//! Both live in the program's scratch (`scratch_bytes`), planned in its arena and counted in
//! its memory report.
//!
//! Measured against the f32 GEMM by `benches/half_precision.rs` (docs/performance.md,
//! "bf16 products on `vdpbf16ps`").

use super::Mat;
use crate::DType;

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
/// The most bytes of the tasks' own panels (over all tasks), or a quarter of the operands'
/// packed size where that is more: groups cost memory, which a small product does not buy
/// back in speed.
const TASKS_BYTES: usize = 512 << 10;
/// Alignment of the scratch regions (a cache line).
const ALIGN: usize = 64;

/// The tile kernel a product runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// bf16 pairs on `vdpbf16ps` (AVX-512 BF16).
    Dot,
    /// f32 FMAs on panels converted from the 16-bit operands as they are packed (AVX-512 F):
    /// f16 products, and bf16 ones on CPUs without AVX-512 BF16.
    Fma,
}

/// What this CPU has: (AVX-512 F, BW and VL; and BF16).
fn features() -> (bool, bool) {
    #[cfg(target_arch = "x86_64")]
    {
        static FEATURES: std::sync::OnceLock<(bool, bool)> = std::sync::OnceLock::new();
        *FEATURES.get_or_init(|| {
            let f = std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vl");
            (f, f && std::arch::is_x86_feature_detected!("avx512bf16"))
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (false, false)
    }
}

/// The kernel products of 16-bit operands of type `d` run on here, if this module runs them:
/// bf16 on `vdpbf16ps` where the CPU has it, bf16 and f16 on f32 FMAs where it has AVX-512.
pub fn kind_for(d: DType) -> Option<Kind> {
    let (avx512, bf16) = features();
    match d {
        DType::BF16 if bf16 => Some(Kind::Dot),
        DType::BF16 | DType::F16 if avx512 => Some(Kind::Fma),
        _ => None,
    }
}

/// Whether this CPU runs the f32 tiles (`kernel::tile_fma`): AVX-512 F, BW and VL.
pub fn fma_tiles() -> bool {
    features().0
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
    /// Steps along `k` of the packed panels: pairs of `k` for `Kind::Dot` (the last one
    /// padded with a zero where `k` is odd), `k` itself for `Kind::Fma`; 4 bytes per lane
    /// each.
    kp: usize,
    kind: Kind,
    shared: Shared,
    /// Tasks, each with a contiguous range of the streamed operand's panels.
    slots: usize,
    /// Panels of the streamed operand a task packs at once (`GROUP_BYTES` at most).
    group: usize,
}

impl Geometry {
    fn of(m: usize, k: usize, n: usize, kind: Kind) -> Geometry {
        let kp = match kind {
            Kind::Dot => k.div_ceil(2),
            Kind::Fma => k,
        };
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
            kind,
            shared,
            slots,
            group: 1,
        };
        let (_, panel) = g.regions();
        // (`k = 0`: empty panels; the tiles still write their zeros.)
        let panel = panel.max(1);
        let operands = rows * g.panel_bytes(MR) + cols * g.panel_bytes(NR);
        let tasks = TASKS_BYTES.max(operands / 4) / (slots * panel);
        g.group = (GROUP_BYTES / panel).min(tasks).clamp(1, GROUP);
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

/// Scratch bytes of a product `[m, k] @ [k, n]` on `kind` (`run`'s `scratch`).
pub fn scratch_bytes(m: usize, k: usize, n: usize, kind: Kind) -> usize {
    Geometry::of(m, k, n, kind).scratch_bytes()
}

/// `c[m, n] = a[m, k] @ b[k, n]` of 16-bit operands of type `src` (elements at
/// `p + i·rs + j·cs`, in elements), `c` contiguous of type `result` (`src`, or f32: the
/// sums unrounded), on `kind` (`kind_for(src)`); `scratch` holds `scratch_bytes(m, k, n,
/// kind)` bytes (or is null: the product then allocates them).
///
/// # Safety
/// `kind` runs on this CPU; the operands' elements in live memory; `c` valid for `m · n`
/// values overlapping neither operand nor the scratch.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn run(
    m: usize,
    k: usize,
    n: usize,
    (a, b, src): (Mat, Mat, DType),
    (c, result): (*mut u8, DType),
    kind: Kind,
    scratch: *mut u8,
) {
    debug_assert!(kind_for(src).is_some() && (kind == Kind::Fma || src == DType::BF16));
    debug_assert!(
        result == src || result == DType::F32,
        "{src} product giving {result}"
    );
    if m == 0 || n == 0 {
        return;
    }
    let g = Geometry::of(m, k, n, kind);
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
        src,
        c,
        result,
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
                Shared::Right => pack_right(
                    &g,
                    (p.b, p.src),
                    j,
                    p.shared.wrapping_add(j * g.panel_bytes(NR) / 4),
                ),
                Shared::Left => pack_left(
                    &g,
                    (p.a, p.src),
                    j,
                    p.shared.wrapping_add(j * g.panel_bytes(MR) / 4),
                ),
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
                    Shared::Right => pack_left(&g, (p.a, p.src), i, own(q)),
                    Shared::Left => pack_right(&g, (p.b, p.src), i, own(q)),
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
    /// The operands' type.
    src: DType,
    c: *mut u8,
    /// `c`'s type.
    result: DType,
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
    let c = p.c.add((r0 * ldc + c0) * p.result.size());
    #[cfg(target_arch = "x86_64")]
    match (g.kind, p.result) {
        (Kind::Dot, DType::F32) => kernel::tile::<true>(g.kp, ap, bp, c, ldc, rows, cols),
        (Kind::Dot, _) => kernel::tile::<false>(g.kp, ap, bp, c, ldc, rows, cols),
        (Kind::Fma, DType::F32) => {
            kernel::tile_fma::<{ kernel::F32 }, false>(g.kp, ap, bp, c, ldc, rows, cols)
        }
        (Kind::Fma, DType::BF16) => {
            kernel::tile_fma::<{ kernel::BF16 }, false>(g.kp, ap, bp, c, ldc, rows, cols)
        }
        (Kind::Fma, _) => {
            kernel::tile_fma::<{ kernel::F16 }, false>(g.kp, ap, bp, c, ldc, rows, cols)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (ap, bp, c, ldc, rows, cols);
}

/// Packs left panel `i` (rows `i·MR ..`: lane `r` is row `i·MR + r`, along `k` the
/// column stride) at `dst`.
///
/// # Safety
/// As `pack_panel`'s.
unsafe fn pack_left(g: &Geometry, (a, d): (Mat, DType), i: usize, dst: *mut u32) {
    pack_panel(g, (a.p, d), (a.cs, a.rs), (i * MR, g.m, MR), dst);
}

/// Packs right panel `j` (columns `j·NR ..`: lane `c` is column `j·NR + c`, along `k` the
/// row stride) at `dst`.
///
/// # Safety
/// As `pack_panel`'s.
unsafe fn pack_right(g: &Geometry, (b, d): (Mat, DType), j: usize, dst: *mut u32) {
    pack_panel(g, (b.p, d), (b.rs, b.cs), (j * NR, g.n, NR), dst);
}

/// Packs the panel of `width` lanes from lane `first` of an operand seen as `k` steps of
/// `extent` lanes (element `(q, l)` of type `d` at `p + q·ks + l·ls` elements) at `dst`: pairs
/// of steps for `Kind::Dot`, f32 values for `Kind::Fma`, zero past `extent` and past `k`.
///
/// # Safety
/// As `run`'s; `dst` holds `kp · width` values.
unsafe fn pack_panel(
    g: &Geometry,
    (p, d): (*mut u8, DType),
    (ks, ls): (isize, isize),
    (first, extent, width): (usize, usize, usize),
    dst: *mut u32,
) {
    let lanes = (extent - first).min(width);
    let src = (p as *const u16).wrapping_offset(first as isize * ls);
    match g.kind {
        Kind::Dot => pack(src, ks, ls, g.k, lanes, width, dst),
        Kind::Fma => pack_f32(src, d, ks, ls, (g.k, lanes, width), dst as *mut f32),
    }
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

/// `dst[q · width + l] = f32(x[q, l])` for the `lanes` of `width` (zero beyond them), where
/// `x[q, l]`, of 16-bit type `d`, is at `src + q·ks + l·ls` (the panels of `Kind::Fma`).
///
/// # Safety
/// Every `x[q, l]` (`q < k`, `l < lanes`) readable; `dst` holds `k · width` values.
pub(super) unsafe fn pack_f32(
    src: *const u16,
    d: DType,
    ks: isize,
    ls: isize,
    (k, lanes, width): (usize, usize, usize),
    dst: *mut f32,
) {
    #[cfg(target_arch = "x86_64")]
    if ls == 1 && fma_tiles() {
        // Each step of `k` is a contiguous run of lanes: converted 16 at a time.
        kernel::convert_runs(src, d == DType::F16, ks, (k, lanes, width), dst);
        return;
    }
    for l in 0..width {
        for q in 0..k {
            *dst.add(q * width + l) = if l < lanes {
                widen(d, *src.wrapping_offset(q as isize * ks + l as isize * ls))
            } else {
                0.0
            };
        }
    }
}

/// The 16-bit value `bits` of type `d` (f16, else bf16) as an f32 (exact).
pub(super) fn widen(d: DType, bits: u16) -> f32 {
    match d {
        DType::F16 => half::f16::from_bits(bits).to_f32(),
        _ => half::bf16::from_bits(bits).to_f32(),
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod kernel {
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

    /// `tile_fma`'s result types.
    pub const F32: u8 = 0;
    pub const BF16: u8 = 1;
    pub const F16: u8 = 2;

    /// `c[r, j] = Σ_q a[q, r] · b[q, j]` (f32 FMAs in order of `q`) for the `rows × cols` of
    /// a tile (`c`'s rows `ldc` elements apart), rounded once to `OUT` (`F32`: stored as
    /// they are), from f32 panels `a` (`kp × MR`) and `b` (`kp × NR`). With `ACC` (f32
    /// only) the sums start from `c`'s values instead of 0, so a sum over `k` run in
    /// consecutive pieces gives the bits of the whole sum (`library::conv`'s blocks of `k`).
    ///
    /// # Safety
    /// AVX-512 F, BW and VL; the panels hold `kp` steps; `c` valid for the tile.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn tile_fma<const OUT: u8, const ACC: bool>(
        kp: usize,
        a: *const u32,
        b: *const u32,
        c: *mut u8,
        ldc: usize,
        rows: usize,
        cols: usize,
    ) {
        let (mut a, mut b) = (a as *const f32, b as *const f32);
        let mut acc = [_mm512_setzero_ps(); 2 * MR];
        if ACC {
            debug_assert_eq!(OUT, F32);
            acc = load_tile(c as *const f32, ldc, rows, cols);
        }
        for _ in 0..kp {
            let b0 = _mm512_loadu_ps(b);
            let b1 = _mm512_loadu_ps(b.add(16));
            for r in 0..MR {
                let x = _mm512_set1_ps(*a.add(r));
                acc[2 * r] = _mm512_fmadd_ps(x, b0, acc[2 * r]);
                acc[2 * r + 1] = _mm512_fmadd_ps(x, b1, acc[2 * r + 1]);
            }
            a = a.add(MR);
            b = b.add(NR);
        }
        let lo = lanes(cols.min(16));
        let hi = lanes(cols.saturating_sub(16));
        for r in 0..rows {
            for (half, mask) in [(0, lo), (1, hi)] {
                let v = acc[2 * r + half];
                let at = r * ldc + 16 * half;
                match OUT {
                    F32 => _mm512_mask_storeu_ps((c as *mut f32).add(at), mask, v),
                    _ => {
                        let h = if OUT == BF16 {
                            round_bf16(v)
                        } else {
                            round_f16(v)
                        };
                        _mm256_mask_storeu_epi16((c as *mut i16).add(at), mask, h);
                    }
                }
            }
        }
    }

    /// f32 lanes rounded to bf16 to nearest even (NaN kept NaN, quiet), in integer
    /// arithmetic: the CPUs this path serves have no `vcvtneps2bf16`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn round_bf16(v: __m512) -> __m256i {
        let bits = _mm512_castps_si512(v);
        let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(bits), _mm512_set1_epi32(1));
        let rounded = _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
        let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        let quiet = _mm512_or_si512(bits, _mm512_set1_epi32(0x0040_0000));
        let out = _mm512_mask_blend_epi32(nan, rounded, quiet);
        _mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(out))
    }

    /// f32 lanes rounded to f16 to nearest even (`vcvtps2ph`: overflow to infinity, NaN kept).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn round_f16(v: __m512) -> __m256i {
        _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v)
    }

    /// `dst[q · width + l] = f32(x[q, l])` with `x[q, l]` (f16 where `f16`, else bf16) at
    /// `src + q·ks + l`: 16 lanes at a time (zero for `l ≥ count`, up to `width`).
    ///
    /// # Safety
    /// As `pack_f32`'s.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn convert_runs(
        src: *const u16,
        f16: bool,
        ks: isize,
        (k, count, width): (usize, usize, usize),
        dst: *mut f32,
    ) {
        for q in 0..k {
            let row = src.wrapping_offset(q as isize * ks);
            for l0 in (0..width).step_by(16) {
                let valid = count.saturating_sub(l0).min(16);
                let h = _mm256_maskz_loadu_epi16(lanes(valid), row.wrapping_add(l0) as *const i16);
                let v = if f16 {
                    _mm512_cvtph_ps(h)
                } else {
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
                };
                _mm512_mask_storeu_ps(dst.add(q * width + l0), lanes((width - l0).min(16)), v);
            }
        }
    }

    /// The mask of the first `n` of 16 lanes.
    pub fn lanes(n: usize) -> __mmask16 {
        ((1u32 << n) - 1) as __mmask16
    }

    /// The `rows × cols` of an f32 tile at `c` (rows `ldc` apart) as the accumulators of a
    /// tile kernel (zero elsewhere): where a sum over `k` continues.
    ///
    /// # Safety
    /// AVX-512 F; `c` valid for the tile.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn load_tile(c: *const f32, ldc: usize, rows: usize, cols: usize) -> [__m512; 2 * MR] {
        let (lo, hi) = (lanes(cols.min(16)), lanes(cols.saturating_sub(16)));
        let mut acc = [_mm512_setzero_ps(); 2 * MR];
        for r in 0..rows {
            let row = c.add(r * ldc);
            acc[2 * r] = _mm512_maskz_loadu_ps(lo, row);
            acc[2 * r + 1] = _mm512_maskz_loadu_ps(hi, row.add(16));
        }
        acc
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

    /// The bits of `x` in `d` and back as f64.
    fn to_bits(d: DType, x: f32) -> u16 {
        match d {
            DType::F16 => half::f16::from_f32(x).to_bits(),
            _ => half::bf16::from_f32(x).to_bits(),
        }
    }

    fn from_bits(d: DType, b: u16) -> f64 {
        match d {
            DType::F16 => half::f16::from_bits(b).to_f64(),
            _ => half::bf16::from_bits(b).to_f64(),
        }
    }

    /// Every kernel this CPU runs, operand type and result type, on every split, shape edge,
    /// odd `k` and operand layout, against f64 sums of the same 16-bit values: within f32
    /// accumulation's error (`k · 2⁻²⁴ · Σ|a||b|`) and one rounding to the result's type.
    #[test]
    fn products_match_f64_sums_on_every_kernel_and_layout() {
        let (avx512, bf16) = features();
        let mut runs = vec![];
        if avx512 {
            runs.extend([(Kind::Fma, DType::BF16), (Kind::Fma, DType::F16)]);
        }
        if bf16 {
            runs.push((Kind::Dot, DType::BF16));
        }
        for (kind, src) in runs {
            for result in [src, DType::F32] {
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
                        check(kind, src, result, (m, k, n), lay);
                    }
                }
            }
        }
    }

    fn check(kind: Kind, src: DType, result: DType, (m, k, n): (usize, usize, usize), lay: usize) {
        let (ta, tb) = (lay & 1 == 1, lay & 2 == 2);
        let av: Vec<u16> = (0..m * k)
            .map(|i| to_bits(src, ((i * 7919 % 61) as f32 - 30.0) / 16.0))
            .collect();
        let bv: Vec<u16> = (0..k * n)
            .map(|i| to_bits(src, ((i * 104729 % 53) as f32 - 26.0) / 8.0))
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
        // NaN: every element must be written.
        let mut c = vec![0xffu8; m * n * result.size()];
        unsafe {
            run(
                m,
                k,
                n,
                (a, b, src),
                (c.as_mut_ptr(), result),
                kind,
                std::ptr::null_mut(),
            )
        };
        let at = |i: usize, j: usize| from_bits(src, av[if ta { j * m + i } else { i * k + j }]);
        let bt = |i: usize, j: usize| from_bits(src, bv[if tb { j * k + i } else { i * n + j }]);
        let ulp = match result {
            DType::F32 => 0.0,
            DType::F16 => 2f64.powi(-11),
            _ => 2f64.powi(-8),
        };
        for i in 0..m {
            for j in 0..n {
                let exact: f64 = (0..k).map(|q| at(i, q) * bt(q, j)).sum();
                let size: f64 = (0..k).map(|q| (at(i, q) * bt(q, j)).abs()).sum();
                let e = i * n + j;
                let got = match result {
                    DType::F32 => {
                        f32::from_le_bytes(c[4 * e..4 * e + 4].try_into().unwrap()) as f64
                    }
                    _ => from_bits(result, u16::from_le_bytes([c[2 * e], c[2 * e + 1]])),
                };
                let bound = exact.abs() * ulp + 1.01 * k as f64 * 2f64.powi(-24) * size;
                assert!(
                    (got - exact).abs() <= bound,
                    "{kind:?} {src} -> {result} {m}x{k}x{n} layout {lay} at ({i}, {j}): {got} vs {exact}"
                );
            }
        }
    }
}
