//! Memory-efficient attention (FlashAttention-2 on the CPU) as native library steps.
//!
//! `attention(q, k, v)` = `softmax(scale · q kᵀ + mask) v` row by row, without the
//! `[Sq, Sk]` score matrix: each task takes a tile of `BR` query rows and walks the keys in
//! tiles of `BC`, keeping for each row the running maximum `m`, the running sum `l` of
//! `exp(s - m)` and the running output `acc` (rescaled by `exp(m_old - m_new)` when the
//! maximum grows). Tile products run on `gemm` (single-threaded; the tasks are split over
//! the cores). Under a causal mask the tiles wholly above the diagonal are skipped.
//!
//! The gradient recomputes each score tile from q, k and the row's softmax maximum and sum
//! (its first pass computes them and `D = rowsum(dO ∘ O)`), then per key tile accumulates
//! `dV += Pᵀ dO`, `dK += scale · dSᵀ Q` and adds `scale · dS K` into `dQ`, with
//! `dS = P ∘ (dO Vᵀ - D)`. One task per batch element (batch and head axes), so every
//! output element has one writer; with fewer batch elements than cores, one element's query
//! tiles (first pass) and key tiles (second pass) are split over the cores instead, each
//! adding `dQ` into a partial of its own, summed at the end. `dq`, `dk` and `dv` are written into their own buffers
//! (the node and its two `get`s); when the forward output was not saved, the first pass
//! recomputes it tile by tile, as the forward does.
//!
//! Semantics are the composition's: a row with every key masked is NaN (the softmax of
//! `-inf`s), uniform under a finite fill (`fill`: masked scores equal a constant, the keys
//! past a causal diagonal added in closed form), NaN inputs give NaN rows; with no keys at
//! all the output is zero (an empty sum). A batch element whose operands are not all finite
//! (or could overflow) runs every key tile, skipped ones included, so that a masked key's
//! `0 · inf` is the composition's NaN (`exact`). Scratch comes from the executable's arena, one
//! slot per task running at once (`SLOTS`; a function of the sizes, never of the thread
//! count).
//!
//! bf16 and f16 operands run the f32 code a tile at a time (`staged`): each tile of rows is
//! converted to f32 in the worker's slot as it is read, each result rounded once as it is
//! stored.

use super::ops::Operand;
use super::GemmElement;
use crate::codegen::{micro, Isa};
use crate::ir::{AttnSpec, MaskKind, UnaryOp};
use crate::{shape, DType};
use rayon::prelude::*;

mod exact;
mod fill;
mod staged;

use staged::Src;

/// Query rows per tile.
const BR: usize = 64;
/// Key columns per tile.
const BC: usize = 128;
/// Scratch slots are this aligned.
const SLOT_ALIGN: usize = 64;

/// The element types attention runs on.
pub(super) trait Float:
    GemmElement
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + Send
    + Sync
{
    const NEG_INF: Self;
    /// The largest finite value.
    const LARGEST: f64;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    /// The largest `|x|` of `row`, or +inf where an element is NaN or infinite: the
    /// maximum of the bits without the sign (NaNs' are the largest), which vectorises.
    fn largest_magnitude(row: &[Self]) -> Self;
    /// The value rounded to f32 (exact for f32: 16-bit results are stored from f32 sums).
    fn to_f32(self) -> f32;
    fn exp(self) -> Self;
    /// `x[i] = exp(x[i])` for the whole slice.
    fn exp_slice(x: &mut [Self]);
}

impl Float for f32 {
    const NEG_INF: Self = f32::NEG_INFINITY;
    const LARGEST: f64 = f32::MAX as f64;
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn largest_magnitude(row: &[f32]) -> f32 {
        /// The same with AVX2's 8-lane unsigned maximum (the build's baseline, SSE2, has
        /// none: emulated, the scan took 6 % of a forward step).
        #[inline(always)]
        fn portable(row: &[f32]) -> u32 {
            magnitude_bits(row, |x| x.to_bits() & !(1 << 31))
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn avx2(row: &[f32]) -> u32 {
            portable(row)
        }
        #[cfg(target_arch = "x86_64")]
        let bits = if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            unsafe { avx2(row) }
        } else {
            portable(row)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let bits = portable(row);
        if bits >= f32::INFINITY.to_bits() {
            f32::INFINITY
        } else {
            f32::from_bits(bits)
        }
    }
    fn to_f32(self) -> f32 {
        self
    }
    fn exp(self) -> Self {
        f32::exp(self)
    }
    fn exp_slice(x: &mut [f32]) {
        // The best micro-kernel this CPU runs, whatever level the program was compiled at:
        // every level's kernel computes the same bits (the one definition of `exp`), as the
        // products run the CPU's best GEMM kernels. Not the host target: that would read
        // `JITFUSE_ISA` while running, and at `portable` fall back to `f32::exp`, other bits.
        static KERNEL: once_cell::sync::Lazy<Option<micro::MicroFn>> =
            once_cell::sync::Lazy::new(|| micro::kernel_at(Isa::detected(), UnaryOp::Exp));
        match *KERNEL {
            // SAFETY: the micro-kernel reads and writes `len` elements (in place is allowed:
            // each vector is loaded before it is stored).
            Some(f) => unsafe { f(x.as_ptr(), x.as_mut_ptr(), x.len()) },
            None => x.iter_mut().for_each(|v| *v = v.exp()),
        }
    }
}

impl Float for f64 {
    const NEG_INF: Self = f64::NEG_INFINITY;
    const LARGEST: f64 = f64::MAX;
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn largest_magnitude(row: &[f64]) -> f64 {
        let bits = magnitude_bits(row, |x| x.to_bits() & !(1 << 63));
        if bits >= f64::INFINITY.to_bits() {
            f64::INFINITY
        } else {
            f64::from_bits(bits)
        }
    }
    fn to_f32(self) -> f32 {
        self as f32
    }
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn exp_slice(x: &mut [f64]) {
        x.iter_mut().for_each(|v| *v = v.exp());
    }
}

/// The largest of `bits(x)` over `row`, in `LANES` independent maxima (so it vectorises;
/// inlined into callers built for wider vectors).
#[inline(always)]
fn magnitude_bits<T: Copy, U: Ord + Copy + Default>(row: &[T], bits: impl Fn(T) -> U) -> U {
    let mut acc = [U::default(); LANES];
    let chunks = row.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for j in 0..LANES {
            acc[j] = acc[j].max(bits(c[j]));
        }
    }
    let tail = rest.iter().fold(U::default(), |m, &x| m.max(bits(x)));
    acc.into_iter().fold(tail, U::max)
}

/// The shapes of one attention step: batch elements, query rows, keys, head dims.
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub batch: usize,
    pub sq: usize,
    pub sk: usize,
    pub d: usize,
    pub dv: usize,
}

impl Dims {
    /// From `q [.., Sq, D]` and `v [.., Sk, Dv]`.
    pub fn of(q: &[usize], v: &[usize]) -> Dims {
        let r = q.len();
        Dims {
            batch: shape::numel(&q[..r - 2]),
            sq: q[r - 2],
            sk: v[r - 2],
            d: q[r - 1],
            dv: v[r - 1],
        }
    }
}

/// The most scratch slots a step plans, one per task running at once. Slot counts and the
/// split of the work are functions of the step's sizes only, never of the thread count: a
/// program compiled under one rayon pool runs under any other within the scratch it
/// planned, and its sums are added in the same order (the same bits with 1, 2, 3 or 8
/// threads). Rayon spreads the slots' tasks over whatever threads there are.
const SLOTS: usize = 8;

/// Key parts of a gradient whose keys are split (`splits_keys`): part `p` takes key tiles
/// `p, p + parts, ..` and adds their `dQ` into a partial of its own (part 0 into `dq`), the
/// partials summed in part order. Each part costs a partial `dQ` of scratch: two keep one
/// head's gradient within the memory of its output. FIXME: a single head uses at most two
/// cores in the key pass on machines with more.
const KEY_PARTS: usize = 2;

/// Tasks of the forward step (query tiles of every batch element) running at once.
fn forward_slots(d: Dims) -> usize {
    (d.batch * d.sq.div_ceil(BR)).clamp(1, SLOTS)
}

/// Tasks of the gradient running at once: the key parts when the keys are split, else
/// batch elements, as many as `GRAD_SLOTS_BYTES` holds (at least 2). A slot holds its
/// batch element's row statistics (`3 · sq` and more), so long sequences take fewer:
/// 4 at sequence 4096, 2 from about 16,384. Each batch element's sums are the same in
/// any slot, so the count changes no bit.
fn backward_slots(d: Dims) -> usize {
    if splits_keys(d) {
        key_parts(d)
    } else {
        let fit = GRAD_SLOTS_BYTES / slot_bytes(backward_elems(d, false), 4);
        d.batch.clamp(1, SLOTS).min(fit.max(2))
    }
}

/// Scratch the gradient's slots may take together (counted at 4-byte elements): 8 heads
/// at sequence 4096 planned 1.67 MiB in 8 slots; 4 hold them in 832 KiB. FIXME: machines
/// of more than 4 cores would want more slots at long sequences (measured there).
const GRAD_SLOTS_BYTES: usize = 1 << 20;

fn key_parts(d: Dims) -> usize {
    d.sk.div_ceil(BC).clamp(1, KEY_PARTS)
}

fn slot_bytes(elems: usize, size: usize) -> usize {
    (elems * size).div_ceil(SLOT_ALIGN) * SLOT_ALIGN
}

/// Elements of a forward slot: the score tile, the running output, `m` and `l`, and the
/// `v` sum of the keys a finite fill masks past the diagonal; for 16-bit operands
/// (`half`), their f32 tiles: q's, k's and v's.
fn forward_elems(d: Dims, half: bool) -> usize {
    let tiles = if half {
        BR * d.d + BC * (d.d + d.dv)
    } else {
        0
    };
    BR * BC + BR * d.dv + 2 * BR + d.dv + tiles + whole_kv_elems(d, half)
}

/// The most bytes of a batch element's k and v in f32 that a forward slot holds whole.
const WHOLE_KV_BYTES: usize = 256 << 10;

/// f32 elements of a forward slot's copy of a whole batch element's k and v (16-bit
/// operands, at least as many batch elements as workers, and within `WHOLE_KV_BYTES`): each
/// worker then takes whole batch elements and converts their k and v once, not once per
/// query tile (at a GPT's sequence of 256, 2.5 times as many rows).
fn whole_kv_elems(d: Dims, half: bool) -> usize {
    let elems = d.sk * (d.d + d.dv);
    if half && d.batch >= forward_slots(d) && elems * 4 <= WHOLE_KV_BYTES {
        elems
    } else {
        0
    }
}

/// Scratch bytes of the forward step on `dtype`: the slots, then under a causal finite fill
/// every batch element's suffix sums of `v` by key tile (`fill::tile_suffixes`).
pub fn forward_scratch(spec: &AttnSpec, d: Dims, dtype: DType) -> usize {
    let size = dtype.compute().size();
    forward_slots(d) * slot_bytes(forward_elems(d, dtype.is_half()), size)
        + suffixes_bytes(spec, d, size)
        + flags_bytes(spec, d)
}

/// The forward's flag per batch element, after the suffix sums: whether it runs every key
/// (`exact`; none when the step skips nothing).
fn flags_bytes(spec: &AttnSpec, d: Dims) -> usize {
    if exact::skips(spec) {
        slot_bytes(d.batch, 1)
    } else {
        0
    }
}

/// The forward's suffix sums of `v` (`fill::tile_suffixes`; none without a causal fill).
fn suffixes_bytes(spec: &AttnSpec, d: Dims, size: usize) -> usize {
    if fill::closed_form(spec) {
        slot_bytes(d.batch * d.sk.div_ceil(BC) * d.dv, size)
    } else {
        0
    }
}

/// Scratch bytes of the gradient step on `dtype` (with room to recompute a tile of the
/// output when it was not saved).
pub fn backward_scratch(d: Dims, dtype: DType) -> usize {
    let size = dtype.compute().size();
    backward_slots(d) * slot_bytes(backward_elems(d, dtype.is_half()), size)
        + partials_bytes(d, size, dtype.is_half())
        + shared_stats_bytes(d, size)
}

/// With the keys split (`splits_keys`), the partial `dQ` of every key part but the first
/// (which adds into `dq` itself; of every part when dq is 16-bit), after the slots.
fn partials_bytes(d: Dims, size: usize, half: bool) -> usize {
    if splits_keys(d) {
        // (Part 0's too when dq is 16-bit: it is summed in f32.)
        (key_parts(d) - usize::from(!half)) * slot_bytes(d.sq * d.d, size)
    } else {
        0
    }
}

/// With the keys split (`splits_keys`), the row statistics (`Stats`) after the partials:
/// written by all workers in the first pass, read by all in the second.
fn shared_stats_bytes(d: Dims, size: usize) -> usize {
    if splits_keys(d) {
        slot_bytes(stats_elems(d), size)
    } else {
        0
    }
}

/// Elements of one batch element's row statistics (`Stats`).
fn stats_elems(d: Dims) -> usize {
    3 * d.sq + d.sq.div_ceil(BR) * d.dv
}

/// The row statistics of one batch element's gradient, from its first pass to its second:
/// per row the softmax's shift `m` (its maximum; 0 when every score is -inf) and `1/l`
/// (a weight is `exp(s - m) / l`), then per row `D = rowsum(dO ∘ O)`, then per query tile
/// `Σ_r exp(fill - m_r) / l_r · dO_r` (`fill::weighted_dout`; unused without a fill).
/// Not the log-sum-exp `m + ln l`: under a fill of -1e30 a fully masked row has
/// `m = -1e30`, and `ln l` vanishes in that sum.
#[derive(Clone, Copy)]
struct Stats<T> {
    base: *mut T,
    sq: usize,
    dv: usize,
}

// SAFETY: rows are written by one worker in the first pass, read by all in the second.
unsafe impl<T> Send for Stats<T> {}
unsafe impl<T> Sync for Stats<T> {}

impl<T: Copy> Stats<T> {
    fn new(base: *mut T, d: Dims) -> Stats<T> {
        Stats {
            base,
            sq: d.sq,
            dv: d.dv,
        }
    }

    /// `(m, 1/l)` of row `i`.
    unsafe fn softmax(self, i: usize) -> *mut T {
        self.base.add(2 * i)
    }

    unsafe fn dvec(self, i: usize) -> *mut T {
        self.base.add(2 * self.sq + i)
    }

    /// Query tile `t`'s fill-weighted `dO` sum (`dv` elements).
    unsafe fn wdo(self, t: usize) -> *mut T {
        self.base.add(3 * self.sq + t * self.dv)
    }
}

/// Elements of a gradient slot; for 16-bit operands (`half`) then their f32 tiles (`Tiles`)
/// and the f32 sum of a batch element's `dQ`.
fn backward_elems(d: Dims, half: bool) -> usize {
    let staged = if half { tiles_elems(d) + d.sq * d.d } else { 0 };
    stats_elems(d) + 2 * BR * BC + BC * d.d + BC * d.dv + BR * d.dv + d.dv + staged
}

/// Elements of a gradient slot's f32 tiles of 16-bit operands (`Tiles`).
fn tiles_elems(d: Dims) -> usize {
    BR * d.d + BC * (d.d + d.dv) + 2 * BR * d.dv
}

/// One operand of a step as a batch of matrices: element `(b, i, j)` at
/// `ptr + off(b) + i * rs + j * cs` elements.
#[derive(Clone, Copy)]
struct Mats<'a, T> {
    ptr: *const T,
    batch: Batch<'a>,
    rs: isize,
    cs: isize,
}

/// Where a batch element's matrix starts.
#[derive(Clone, Copy)]
enum Batch<'a> {
    /// In the operand's buffer, through its batch axes' strides.
    Strided {
        shape: &'a [usize],
        strides: &'a [i64],
    },
    /// A tile of batch element `b`'s rows converted to f32 in a worker's slot
    /// (`staged::Src::rows`): `ptr` is where its row 0 would be.
    Tile { b: usize },
}

// SAFETY: only read, by the step that holds the operand, while its buffer lives.
unsafe impl<T> Send for Mats<'_, T> {}
unsafe impl<T> Sync for Mats<'_, T> {}

impl<'a, T> Mats<'a, T> {
    fn new(x: &Operand<'a>) -> Mats<'a, T> {
        let r = x.shape.len();
        Mats {
            ptr: x.ptr as *const T,
            batch: Batch::Strided {
                shape: &x.shape[..r - 2],
                strides: &x.strides[..r - 2],
            },
            rs: x.strides[r - 2] as isize,
            cs: x.strides[r - 1] as isize,
        }
    }

    /// The offset (elements) of matrix `b`'s row `i`.
    fn offset(&self, b: usize, i: usize) -> isize {
        let start = match self.batch {
            Batch::Strided { shape, strides } => {
                let mut rest = b;
                let mut off = 0i64;
                for (&n, &s) in shape.iter().zip(strides).rev() {
                    off += (rest % n) as i64 * s;
                    rest /= n;
                }
                off as isize
            }
            Batch::Tile { b: tile } => {
                debug_assert_eq!(b, tile, "a staged tile read for another batch element");
                0
            }
        };
        start + i as isize * self.rs
    }

    /// The first element of matrix `b`'s row `i`.
    fn row(&self, b: usize, i: usize) -> *const T {
        self.ptr.wrapping_offset(self.offset(b, i))
    }
}

/// `dst[m, n] (= or +=) beta · lhs[m, k] @ rhs[k, n]`, strides in elements (row, column).
#[allow(clippy::too_many_arguments)]
unsafe fn mm<T: Float>(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    dst_rs: isize,
    accumulate: bool,
    lhs: *const T,
    lhs_rs: isize,
    lhs_cs: isize,
    rhs: *const T,
    rhs_rs: isize,
    rhs_cs: isize,
    beta: T,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                for j in 0..n {
                    *dst.offset(i as isize * dst_rs + j as isize) = T::ZERO;
                }
            }
        }
        return;
    }
    // dst = alpha · dst + beta · lhs @ rhs (column strides first); with read_dst false the
    // destination is only written.
    gemm::gemm(
        m,
        n,
        k,
        dst,
        1,
        dst_rs,
        accumulate,
        lhs,
        lhs_cs,
        lhs_rs,
        rhs,
        rhs_cs,
        rhs_rs,
        T::ONE,
        beta,
        false,
        false,
        false,
        gemm::Parallelism::None,
    );
}

/// The score tile `s[r, c] = scale · q[i0 + r] · k[j0 + c]` with the mask applied (masked
/// scores are -inf, or the spec's finite fill), in `s` with row stride `BC`.
#[allow(clippy::too_many_arguments)]
unsafe fn scores<T: Float>(
    spec: &AttnSpec,
    q: &Mats<T>,
    k: &Mats<T>,
    mask: Option<&Operand>,
    b: usize,
    d: usize,
    (i0, rows): (usize, usize),
    (j0, cols): (usize, usize),
    s: &mut [T],
) {
    let (qp, kp) = (q.row(b, i0), k.row(b, j0));
    mm(
        rows,
        cols,
        d,
        s.as_mut_ptr(),
        BC as isize,
        false,
        qp,
        q.rs,
        q.cs,
        kp,
        k.cs,
        k.rs,
        T::from_f64(spec.scale),
    );
    let masked = fill::value::<T>(spec);
    match spec.mask {
        MaskKind::None => {}
        MaskKind::Causal => {
            if j0 + cols > i0 + 1 {
                for r in 0..rows {
                    let first_masked = (i0 + r + 1).saturating_sub(j0);
                    for c in first_masked..cols {
                        let x = &mut s[r * BC + c];
                        // Added as a bias: `s - inf`, NaN for a NaN or +inf score.
                        *x = if spec.bias { *x + T::NEG_INF } else { masked };
                    }
                }
            }
        }
        MaskKind::Bool | MaskKind::Additive => {
            let m = mask.expect("a mask operand");
            let at: Mats<u8> = Mats::new(m);
            let size = m.dtype.size() as isize;
            for r in 0..rows {
                let first = at.offset(b, i0 + r) + j0 as isize * at.cs;
                for c in 0..cols {
                    let e = m.ptr.wrapping_offset((first + c as isize * at.cs) * size);
                    let x = &mut s[r * BC + c];
                    if spec.mask == MaskKind::Bool {
                        if *e == 0 {
                            *x = masked;
                        }
                    } else {
                        *x = *x + staged::read::<T>(e, m.dtype);
                    }
                }
            }
        }
    }
}

/// The key columns query rows `i0..i0 + rows` may see: `0..end` (under a causal mask with
/// a finite fill the keys `end..` are masked for every row, added in closed form).
fn key_end(spec: &AttnSpec, sk: usize, i0: usize, rows: usize) -> usize {
    match spec.mask {
        MaskKind::Causal => sk.min(i0 + rows),
        _ => sk,
    }
}

/// Online-softmax update of rows `0..rows` with score tile `s` (`cols` columns): the new
/// maxima in `m`, `s` turned into `exp(s - m_new)`, the running sums `l` rescaled and
/// extended, and per row the factor `exp(m_old - m_new)` (in `alpha`) the running output
/// is rescaled by.
fn online<T: Float>(
    s: &mut [T],
    rows: usize,
    cols: usize,
    m: &mut [T],
    l: &mut [T],
    alpha: &mut [T],
) {
    for r in 0..rows {
        let row = &mut s[r * BC..r * BC + cols];
        let mx = row_max(row, m[r]);
        // While every score so far is -inf, subtract 0: exp(-inf) = 0, not NaN.
        let sub = if mx == T::NEG_INF { T::ZERO } else { mx };
        alpha[r] = (m[r] - sub).exp();
        m[r] = mx;
        for x in row.iter_mut() {
            *x = *x - sub;
        }
        T::exp_slice(row);
        l[r] = l[r] * alpha[r] + row_sum(row);
    }
}

/// Lanes of the row reductions: independent accumulators, so the loops vectorise (one
/// sequential accumulator was a scalar dependency chain: a tenth of a small GPT step).
const LANES: usize = 16;

/// The largest of `init` and the row's values (NaN is never the maximum, as `x > mx`).
fn row_max<T: Float>(row: &[T], init: T) -> T {
    let mut acc = [init; LANES];
    let chunks = row.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for j in 0..LANES {
            if c[j] > acc[j] {
                acc[j] = c[j];
            }
        }
    }
    let mut mx = init;
    for &x in acc.iter().chain(rest) {
        if x > mx {
            mx = x;
        }
    }
    mx
}

/// The row's sum, in `LANES` partial sums.
fn row_sum<T: Float>(row: &[T]) -> T {
    let mut acc = [T::ZERO; LANES];
    let chunks = row.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for j in 0..LANES {
            acc[j] = acc[j] + c[j];
        }
    }
    let mut sum = rest.iter().fold(T::ZERO, |a, &x| a + x);
    for x in acc {
        sum = sum + x;
    }
    sum
}

/// The online softmax's output update for one key tile: `acc = alpha ∘ acc + P V[j0..]`,
/// with `P` the tile's `rows × cols` weights (row stride `BC`) and `acc` `rows × dv`.
///
/// # Safety
/// `v`'s rows `j0..j0 + cols` of batch element `b` are inside its live buffer.
unsafe fn rescale_accumulate<T: Float>(
    acc: &mut [T],
    alpha: &[T],
    p: &[T],
    (rows, cols, dv): (usize, usize, usize),
    v: &Mats<T>,
    b: usize,
    j0: usize,
) {
    for r in 0..rows {
        acc[r * dv..(r + 1) * dv]
            .iter_mut()
            .for_each(|x| *x = *x * alpha[r]);
    }
    mm(
        rows,
        dv,
        cols,
        acc.as_mut_ptr(),
        dv as isize,
        true,
        p.as_ptr(),
        BC as isize,
        1,
        v.row(b, j0),
        v.rs,
        v.cs,
        T::ONE,
    );
}

/// The output and the scratch, handed to every worker (each writes its own rows and slot).
#[derive(Clone, Copy)]
struct Shared<T>(*mut T, *mut u8);
// SAFETY: the workers write disjoint output rows and their own scratch slots.
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

/// The gradient's three outputs and the scratch, shared by the workers.
#[derive(Clone, Copy)]
struct Shared3<T>([*mut T; 3], *mut u8);
// SAFETY: each worker writes the rows of its own batch elements and its own scratch slot.
unsafe impl<T> Send for Shared3<T> {}
unsafe impl<T> Sync for Shared3<T> {}

/// A worker's scratch slot as `n` elements.
unsafe fn slot<'s, T>(scratch: *mut u8, w: usize, bytes: usize, n: usize) -> &'s mut [T] {
    std::slice::from_raw_parts_mut(scratch.add(w * bytes) as *mut T, n)
}

/// The forward step: `o [.., Sq, Dv]` (contiguous, of `out_type`) from
/// `ins = [q, k, v, (mask)]`, computed in `T` (f32 for 16-bit operands, read a tile at a
/// time: `staged`).
///
/// # Safety
/// The operands' maps stay inside live buffers; `out` is valid for the output and overlaps
/// no operand; `scratch` is valid for `forward_scratch` bytes.
unsafe fn forward<T: Float>(
    spec: &AttnSpec,
    ins: &[Operand],
    (out, out_type): (*mut u8, DType),
    scratch: *mut u8,
) {
    let dims = Dims::of(ins[0].shape, ins[2].shape);
    let (q, k, v) = (
        Src::<T>::new(&ins[0]),
        Src::<T>::new(&ins[1]),
        Src::<T>::new(&ins[2]),
    );
    let mask = ins.get(3);
    let Dims {
        batch,
        sq,
        sk,
        d,
        dv,
    } = dims;
    let q_tiles = sq.div_ceil(BR);
    let tasks = batch * q_tiles;
    let size = std::mem::size_of::<T>();
    let half = ins[0].dtype.is_half();
    let elems = forward_elems(dims, half);
    let bytes = slot_bytes(elems, size);
    let n_workers = forward_slots(dims);
    let p = Shared(out as *mut T, scratch);
    // A worker's slot: the score tile, the running output, m, l, the v sum of filled keys,
    // then (16-bit operands) its f32 tiles of q, k and v, and its f32 copy of a whole batch
    // element's k and v where it takes whole batch elements.
    let whole = whole_kv_elems(dims, half);
    let split = move |w: usize| {
        let p = p;
        let buf: &mut [T] = slot(p.1, w, bytes, elems);
        let (s, rest) = buf.split_at_mut(BR * BC);
        let (acc, rest) = rest.split_at_mut(BR * dv);
        let (m, rest) = rest.split_at_mut(BR);
        let (l, rest) = rest.split_at_mut(BR);
        let (vsum, rest) = rest.split_at_mut(dv);
        let (qb, rest) = rest.split_at_mut(if half { BR * d } else { 0 });
        let (kb, rest) = rest.split_at_mut(if half { BC * d } else { 0 });
        let (vb, rest) = rest.split_at_mut(if half { BC * dv } else { 0 });
        let (kw, vw) = rest[..whole].split_at_mut(whole.min(sk * d));
        (s, acc, m, l, vsum, (qb, kb, vb), (kw, vw))
    };
    // The v-sums from each key tile on, read by every query tile's keys past the diagonal.
    let k_tiles = sk.div_ceil(BC);
    let suffixes = Ptr(scratch.add(n_workers * bytes) as *mut T);
    // Whether batch element b runs every key (`exact`), after the suffix sums.
    let every = Ptr(scratch.add(n_workers * bytes + suffixes_bytes(spec, dims, size)));
    // (A closed form is a skip: `exact::skips` covers it.)
    if exact::skips(spec) {
        (0..n_workers).into_par_iter().for_each(|w| {
            let (suffixes, every) = (suffixes, every);
            let (.., (qb, kb, vb), _) = split(w);
            for b in (w..batch).step_by(n_workers) {
                let m = exact::of_qkv((&q, &k, &v), b, dims, (&mut *qb, &mut *kb, &mut *vb));
                let all = exact::every_key(spec, dims, m, T::LARGEST);
                *every.0.add(b) = u8::from(all);
                if fill::closed_form(spec) && !all {
                    let at = suffixes.0.add(b * k_tiles * dv);
                    let mine = std::slice::from_raw_parts_mut(at, k_tiles * dv);
                    fill::tile_suffixes(&v, b, sk, vb, mine);
                }
            }
        });
    }
    let every = move |b: usize| {
        let every = every;
        exact::skips(spec) && *every.0.add(b) != 0
    };
    (0..n_workers).into_par_iter().for_each(|w| {
        let (suffixes, p) = (suffixes, p);
        let (s, acc, m, l, vsum, (qb, kb, vb), (kw, vw)) = split(w);
        let mut alpha = [T::ZERO; BR];
        // Query rows i0.. of batch element b, reading k and v from `kv` where given (the
        // batch element's, whole) or a tile at a time.
        let mut task = |b: usize, i0: usize, kv: Option<(Mats<T>, Mats<T>)>| {
            let rows = BR.min(sq - i0);
            m[..rows].fill(T::NEG_INF);
            l[..rows].fill(T::ZERO);
            acc[..rows * dv].fill(T::ZERO);
            let qt = q.rows(b, (i0, rows), d, qb);
            // Every key as the composition multiplies them (`exact`), or the keys past a
            // causal diagonal skipped and wholly masked tiles summed in closed form.
            let all = every(b);
            let end = if all { sk } else { key_end(spec, sk, i0, rows) };
            for j0 in (0..end).step_by(BC) {
                let cols = BC.min(end - j0);
                let vt = match kv {
                    Some((_, vt)) => vt,
                    None => v.rows(b, (j0, cols), dv, vb),
                };
                if !all && fill::masked_tile(spec, mask, b, (i0, rows), (j0, cols)) {
                    fill::sum_rows(&vt, b, (j0, j0 + cols), vsum);
                    let f = fill::value::<T>(spec);
                    fill::add_filled_keys(f, cols, vsum, rows, (m, l), Some(acc));
                    continue;
                }
                let kt = match kv {
                    Some((kt, _)) => kt,
                    None => k.rows(b, (j0, cols), d, kb),
                };
                scores(spec, &qt, &kt, mask, b, d, (i0, rows), (j0, cols), s);
                online(s, rows, cols, m, l, &mut alpha);
                rescale_accumulate(acc, &alpha, s, (rows, cols, dv), &vt, b, j0);
            }
            if fill::closed_form(spec) && end < sk {
                let mine =
                    std::slice::from_raw_parts(suffixes.0.add(b * k_tiles * dv), k_tiles * dv);
                fill::sum_from(&v, b, (end, sk), mine, vb, vsum);
                let f = fill::value::<T>(spec);
                fill::add_filled_keys(f, sk - end, vsum, rows, (m, l), Some(acc));
            }
            for r in 0..rows {
                let row = &mut acc[r * dv..(r + 1) * dv];
                // With no keys at all the output is an empty sum: 0. A row whose keys are
                // all masked has l = 0 and acc = 0: 0/0 = NaN, the composition's.
                for x in row.iter_mut() {
                    *x = if sk == 0 { T::ZERO } else { *x / l[r] };
                }
                staged::store(out_type, p.0 as *mut u8, (b * sq + i0 + r) * dv, row);
            }
        };
        if whole > 0 {
            for b in (w..batch).step_by(n_workers) {
                let kv = (k.rows(b, (0, sk), d, kw), v.rows(b, (0, sk), dv, vw));
                for i0 in (0..sq).step_by(BR) {
                    task(b, i0, Some(kv));
                }
            }
        } else {
            for t in (w..tasks).step_by(n_workers) {
                task(t / q_tiles, (t % q_tiles) * BR, None);
            }
        }
    });
}

/// What every part of the gradient reads: the operands and the step's sizes.
#[derive(Clone, Copy)]
struct Grad<'a, T> {
    spec: &'a AttnSpec,
    q: Src<'a, T>,
    k: Src<'a, T>,
    v: Src<'a, T>,
    /// The forward output when it was saved (else recomputed tile by tile).
    o: Option<Src<'a, T>>,
    dout: Src<'a, T>,
    mask: Option<&'a Operand<'a>>,
    dims: Dims,
    scale: T,
    /// The type of `dK` and `dV` as stored (`T`, or 16 bits rounded from `T`).
    out_type: DType,
}

// SAFETY: only read, by the step that holds the operands, while their buffers live.
unsafe impl<T> Send for Grad<'_, T> {}
unsafe impl<T> Sync for Grad<'_, T> {}

/// Whether the gradient also splits the key tiles of one batch element into parts: when
/// there are fewer batch elements (batch and head axes) than key parts and more than one
/// key tile. Each part then adds its share of `dQ` into a partial of its own (`sq · d`
/// elements after the slots; part 0's is `dq`), summed at the end in part order.
fn splits_keys(d: Dims) -> bool {
    d.batch < KEY_PARTS && d.sk > BC
}

/// A gradient slot's f32 tiles of 16-bit operands (`staged::Src::rows`; empty for f32 and
/// f64 operands, read in place).
struct Tiles<'s, T> {
    q: &'s mut [T],
    k: &'s mut [T],
    v: &'s mut [T],
    o: &'s mut [T],
    dout: &'s mut [T],
}

impl<T: Float> Grad<'_, T> {
    /// Whether batch element `b` runs every key tile, and whether its `D` is summed over
    /// every key (`exact`), reading its operands through the slot's tiles.
    unsafe fn exact(&self, b: usize, tiles: &mut Tiles<T>) -> (bool, bool) {
        let dims = self.dims;
        let mut m = if exact::skips(self.spec) {
            let qkv = (&self.q, &self.k, &self.v);
            let bufs = (&mut *tiles.q, &mut *tiles.k, &mut *tiles.v);
            exact::of_qkv(qkv, b, dims, bufs)
        } else {
            let v = exact::magnitude(&self.v, b, (dims.sk, dims.dv), BC, tiles.v);
            exact::Magnitudes {
                q: 0.0,
                k: 0.0,
                v,
                dout: None,
            }
        };
        let shape = (dims.sq, dims.dv);
        m.dout = Some(exact::magnitude(&self.dout, b, shape, BR, tiles.dout));
        (
            exact::every_key(self.spec, dims, m, T::LARGEST),
            exact::sums_every_dp(dims, m, T::LARGEST),
        )
    }

    /// Pass 1 for query rows `i0..i0 + rows` of batch element `b`: each row's `m`, `1/l`
    /// and `D = rowsum(dO ∘ O)` into `stats`, `O` recomputed (as the forward does it, in
    /// `acc`) when it was not saved; under a causal finite fill, the tile's fill-weighted
    /// `dO` sum.
    #[allow(clippy::too_many_arguments)]
    unsafe fn row_stats(
        &self,
        (b, (all, every_dp)): (usize, (bool, bool)),
        (i0, rows): (usize, usize),
        stats: Stats<T>,
        (s, dp): (&mut [T], &mut [T]),
        (acc, vsum): (&mut [T], &mut [T]),
        tiles: &mut Tiles<T>,
    ) {
        let Dims { sk, d, dv, .. } = self.dims;
        let mut alpha = [T::ZERO; BR];
        let mut m = [T::NEG_INF; BR];
        let mut l = [T::ZERO; BR];
        // Without the saved output, O is recomputed from v's tiles.
        let o_acc = self.o.is_none();
        if o_acc {
            acc[..rows * dv].fill(T::ZERO);
        }
        let qt = self.q.rows(b, (i0, rows), d, tiles.q);
        // As the forward reads them (`all`: every key, `exact`).
        let end = if all {
            sk
        } else {
            key_end(self.spec, sk, i0, rows)
        };
        for j0 in (0..end).step_by(BC) {
            let cols = BC.min(end - j0);
            let vt = o_acc.then(|| self.v.rows(b, (j0, cols), dv, tiles.v));
            if !all && fill::masked_tile(self.spec, self.mask, b, (i0, rows), (j0, cols)) {
                // As the forward adds it.
                let f = fill::value::<T>(self.spec);
                if let Some(vt) = &vt {
                    fill::sum_rows(vt, b, (j0, j0 + cols), vsum);
                }
                let acc = o_acc.then_some(&mut *acc);
                fill::add_filled_keys(f, cols, vsum, rows, (&mut m, &mut l), acc);
                continue;
            }
            let kt = self.k.rows(b, (j0, cols), d, tiles.k);
            scores(
                self.spec,
                &qt,
                &kt,
                self.mask,
                b,
                d,
                (i0, rows),
                (j0, cols),
                s,
            );
            online(s, rows, cols, &mut m, &mut l, &mut alpha);
            if let Some(vt) = &vt {
                rescale_accumulate(acc, &alpha, s, (rows, cols, dv), vt, b, j0);
            }
        }
        let closed = fill::closed_form(self.spec);
        if closed && end < sk {
            // The keys past the diagonal, as the forward adds them.
            let f = fill::value::<T>(self.spec);
            if o_acc {
                fill::sum_src_rows(&self.v, b, (end, sk), tiles.v, vsum);
            }
            let acc = o_acc.then_some(&mut *acc);
            fill::add_filled_keys(f, sk - end, vsum, rows, (&mut m, &mut l), acc);
        }
        let dt = self.dout.rows(b, (i0, rows), dv, tiles.dout);
        let ot = self.o.map(|o| o.rows(b, (i0, rows), dv, tiles.o));
        for r in 0..rows {
            let sub = if m[r] == T::NEG_INF { T::ZERO } else { m[r] };
            // A row masked by -inf: 1/0 = inf, and exp(-inf) · inf = NaN below, as the
            // composition's softmax gives.
            let at = stats.softmax(i0 + r);
            *at = sub;
            *at.add(1) = T::ONE / l[r];
            let drow = dt.row(b, i0 + r);
            let mut dot = T::ZERO;
            for c in 0..dv {
                let oc = match &ot {
                    Some(o) => *o.row(b, i0 + r).offset(c as isize * o.cs),
                    None => acc[r * dv + c] / l[r],
                };
                dot = dot + oc * *drow.offset(c as isize * dt.cs);
            }
            *stats.dvec(i0 + r) = dot;
        }
        if every_dp {
            self.exact_dvec((b, i0, rows), stats, (&qt, &dt), (s, dp), tiles);
        }
        if self.spec.fill.is_some() {
            let out = std::slice::from_raw_parts_mut(stats.wdo(i0 / BR), dv);
            let rows_stats = std::slice::from_raw_parts(stats.softmax(i0), 2 * rows);
            let f = fill::value(self.spec);
            fill::weighted_dout(f, rows_stats, &dt, (b, i0), out);
        }
    }

    /// `D` of rows `i0..i0 + rows` as the composition sums it, `Σ_j p_ij dP_ij` over every
    /// key, masked ones included (`0 · dP`: NaN where `dP` is not finite), into `stats`,
    /// whose `(m, 1/l)` are written: for a batch element whose `dO` or `v` is not finite or
    /// whose `dP` may overflow (`exact::sums_every_dp`), where `rowsum(dO ∘ O)` would miss
    /// those NaNs. (Two more tile products per tile.)
    unsafe fn exact_dvec(
        &self,
        (b, i0, rows): (usize, usize, usize),
        stats: Stats<T>,
        (qt, dt): (&Mats<T>, &Mats<T>),
        (s, dp): (&mut [T], &mut [T]),
        tiles: &mut Tiles<T>,
    ) {
        let Dims { sk, d, dv, .. } = self.dims;
        let mut sums = [T::ZERO; BR];
        for j0 in (0..sk).step_by(BC) {
            let cols = BC.min(sk - j0);
            let kt = self.k.rows(b, (j0, cols), d, tiles.k);
            let (tile, mask) = ((i0, rows), (j0, cols));
            scores(self.spec, qt, &kt, self.mask, b, d, tile, mask, s);
            let vt = self.v.rows(b, (j0, cols), dv, tiles.v);
            dout_vt(dp, (dt, &vt), b, (i0, rows), (j0, cols), dv);
            weights(s, stats, (i0, rows), cols);
            for (r, sum) in sums[..rows].iter_mut().enumerate() {
                for c in 0..cols {
                    *sum = *sum + s[r * BC + c] * dp[r * BC + c];
                }
            }
        }
        for (r, &sum) in sums[..rows].iter().enumerate() {
            *stats.dvec(i0 + r) = sum;
        }
    }

    /// Pass 2 for the key tile at `j0` of batch element `b`: its rows of `dK` and `dV`
    /// stored (where wanted: `dk`, `dvo` are batch element `b`'s matrices), `scale · dS K`
    /// added into `dq` (the `sq × d` rows of `b`, in `T`), over the query tiles that see the
    /// keys.
    #[allow(clippy::too_many_arguments)]
    unsafe fn key_tile(
        &self,
        (b, all): (usize, bool),
        j0: usize,
        stats: Stats<T>,
        dq: *mut T,
        (dk, dvo): (Option<*mut u8>, Option<*mut u8>),
        (s, dp): (&mut [T], &mut [T]),
        (dk_acc, dv_acc): (&mut [T], &mut [T]),
        tiles: &mut Tiles<T>,
    ) {
        let Dims { sq, sk, d, dv, .. } = self.dims;
        let cols = BC.min(sk - j0);
        let kt = self.k.rows(b, (j0, cols), d, tiles.k);
        let vt = self.v.rows(b, (j0, cols), dv, tiles.v);
        dk_acc[..cols * d].fill(T::ZERO);
        dv_acc[..cols * dv].fill(T::ZERO);
        // The query tiles that see the keys (`all`: every one, `exact`).
        let first = match self.spec.mask {
            MaskKind::Causal if !all => (j0 / BR) * BR,
            _ => 0,
        };
        if fill::closed_form(self.spec) && first > 0 && dvo.is_some() {
            // Every key of the tile is masked for the query tiles before `first`: each
            // gets their fill-weighted dO, one vector (zeros when exp(fill - m) is 0).
            let row0 = &mut dv_acc[..dv];
            // (Keys past the last query: every query tile.)
            for t in 0..(first / BR).min(sq.div_ceil(BR)) {
                let x = std::slice::from_raw_parts(stats.wdo(t), dv);
                row0.iter_mut().zip(x).for_each(|(a, &x)| *a = *a + x);
            }
            for c in 1..cols {
                dv_acc.copy_within(..dv, c * dv);
            }
        }
        for i0 in (first..sq).step_by(BR) {
            let rows = BR.min(sq - i0);
            if !all && fill::masked_tile(self.spec, self.mask, b, (i0, rows), (j0, cols)) {
                // Filled scores are constants (no dS); each key gets the tile's
                // fill-weighted dO.
                if dvo.is_some() {
                    let x = std::slice::from_raw_parts(stats.wdo(i0 / BR), dv);
                    for c in 0..cols {
                        let row = &mut dv_acc[c * dv..(c + 1) * dv];
                        row.iter_mut().zip(x).for_each(|(a, &x)| *a = *a + x);
                    }
                }
                continue;
            }
            let qt = self.q.rows(b, (i0, rows), d, tiles.q);
            let dt = self.dout.rows(b, (i0, rows), dv, tiles.dout);
            scores(
                self.spec,
                &qt,
                &kt,
                self.mask,
                b,
                d,
                (i0, rows),
                (j0, cols),
                s,
            );
            weights(s, stats, (i0, rows), cols);
            // dV += Pᵀ dO
            if dvo.is_some() {
                mm(
                    cols,
                    dv,
                    rows,
                    dv_acc.as_mut_ptr(),
                    dv as isize,
                    true,
                    s.as_ptr(),
                    1,
                    BC as isize,
                    dt.row(b, i0),
                    dt.rs,
                    dt.cs,
                    T::ONE,
                );
            }
            // dP = dO Vᵀ, then dS = P ∘ (dP - D) in its place.
            dout_vt(dp, (&dt, &vt), b, (i0, rows), (j0, cols), dv);
            for r in 0..rows {
                let x = *stats.dvec(i0 + r);
                for c in 0..cols {
                    let at = r * BC + c;
                    dp[at] = s[at] * (dp[at] - x);
                }
            }
            if self.spec.selects() {
                // A selected score is a constant: its dS is 0 even where dP - D is not
                // finite (the composition's select passes no cotangent to it).
                fill::zero_masked(self.spec, self.mask, b, (i0, rows), (j0, cols), dp);
            }
            // dQ += scale · dS K
            mm(
                rows,
                d,
                cols,
                dq.add(i0 * d),
                d as isize,
                true,
                dp.as_ptr(),
                BC as isize,
                1,
                kt.row(b, j0),
                kt.rs,
                kt.cs,
                self.scale,
            );
            // dK += scale · dSᵀ Q
            if dk.is_none() {
                continue;
            }
            mm(
                cols,
                d,
                rows,
                dk_acc.as_mut_ptr(),
                d as isize,
                true,
                dp.as_ptr(),
                1,
                BC as isize,
                qt.row(b, i0),
                qt.rs,
                qt.cs,
                self.scale,
            );
        }
        if let Some(dk) = dk {
            staged::store(self.out_type, dk, j0 * d, &dk_acc[..cols * d]);
        }
        if let Some(dvo) = dvo {
            staged::store(self.out_type, dvo, j0 * dv, &dv_acc[..cols * dv]);
        }
    }
}

/// The score tile `s` (rows `i0..i0 + rows`, `cols` keys, row stride `BC`) turned into the
/// softmax weights `exp(s - m) / l`, from the rows' `(m, 1/l)` in `stats`.
///
/// # Safety
/// `stats` holds those rows.
unsafe fn weights<T: Float>(s: &mut [T], stats: Stats<T>, (i0, rows): (usize, usize), cols: usize) {
    for r in 0..rows {
        let row = &mut s[r * BC..r * BC + cols];
        let at = stats.softmax(i0 + r);
        let (x, rl) = (*at, *at.add(1));
        row.iter_mut().for_each(|v| *v = *v - x);
        T::exp_slice(row);
        row.iter_mut().for_each(|v| *v = *v * rl);
    }
}

/// `dp = dO Vᵀ` for query rows `i0..i0 + rows` and keys `j0..j0 + cols` of batch element
/// `b` (row stride `BC`).
///
/// # Safety
/// Those rows of `dt` and `vt` are inside their live buffers.
unsafe fn dout_vt<T: Float>(
    dp: &mut [T],
    (dt, vt): (&Mats<T>, &Mats<T>),
    b: usize,
    (i0, rows): (usize, usize),
    (j0, cols): (usize, usize),
    dv: usize,
) {
    mm(
        rows,
        cols,
        dv,
        dp.as_mut_ptr(),
        BC as isize,
        false,
        dt.row(b, i0),
        dt.rs,
        dt.cs,
        vt.row(b, j0),
        vt.cs,
        vt.rs,
        T::ONE,
    );
}

/// A worker's scratch slot split into its parts: the row statistics (`Stats`), the score and
/// cotangent tiles, the `dK`/`dV` tile accumulators, the recomputed output tile, and for
/// 16-bit operands their f32 tiles and the f32 sum of a batch element's `dQ`.
struct Slot<'s, T> {
    stats: &'s mut [T],
    s: &'s mut [T],
    dp: &'s mut [T],
    dk_acc: &'s mut [T],
    dv_acc: &'s mut [T],
    acc: &'s mut [T],
    vsum: &'s mut [T],
    tiles: Tiles<'s, T>,
    dq: &'s mut [T],
}

fn split_slot<T>(buf: &mut [T], d: Dims, half: bool) -> Slot<'_, T> {
    let (stats, rest) = buf.split_at_mut(stats_elems(d));
    let (s, rest) = rest.split_at_mut(BR * BC);
    let (dp, rest) = rest.split_at_mut(BR * BC);
    let (dk_acc, rest) = rest.split_at_mut(BC * d.d);
    let (dv_acc, rest) = rest.split_at_mut(BC * d.dv);
    let (acc, rest) = rest.split_at_mut(BR * d.dv);
    let (vsum, rest) = rest.split_at_mut(d.dv);
    let n = |elems: usize| if half { elems } else { 0 };
    let (q, rest) = rest.split_at_mut(n(BR * d.d));
    let (k, rest) = rest.split_at_mut(n(BC * d.d));
    let (v, rest) = rest.split_at_mut(n(BC * d.dv));
    let (o, rest) = rest.split_at_mut(n(BR * d.dv));
    let (dout, rest) = rest.split_at_mut(n(BR * d.dv));
    let dq = &mut rest[..n(d.sq * d.d)];
    Slot {
        stats,
        s,
        dp,
        dk_acc,
        dv_acc,
        acc,
        vsum,
        tiles: Tiles { q, k, v, o, dout },
        dq,
    }
}

/// The gradient step: `dq`, `dk`, `dv` into `out` (of `out_type`; `dk`, `dv` may be null:
/// not needed) from `ins = [q, k, v, (o,) do, (mask)]`, computed in `T` (f32 for 16-bit
/// operands, read a tile at a time: `staged`). Without the forward output `o` the first
/// pass recomputes each tile of it (the forward's work again) for `D = rowsum(dO ∘ O)`.
///
/// With at least `KEY_PARTS` batch elements, each task takes whole batch elements. With
/// fewer (one head of a long sequence), each batch element is split: its query tiles over
/// the parts for the first pass, its key tiles for the second, each part adding `dQ` into
/// a partial of its own, then the partials summed in part order. The parts are a function
/// of the sizes, not of the cores, so the sum is the same with any thread count.
///
/// # Safety
/// As `forward`'s, with `backward_scratch` bytes of scratch; each non-null output is valid
/// for its operand's size and overlaps no operand or other output.
unsafe fn backward<T: Float>(
    spec: &AttnSpec,
    ins: &[Operand],
    (out, out_type): ([*mut u8; 3], DType),
    scratch: *mut u8,
) {
    let dims = Dims::of(ins[0].shape, ins[2].shape);
    let layout = spec
        .grad_operands(ins.len())
        .expect("attention_grad operands checked by the verifier");
    let half = ins[0].dtype.is_half();
    let g = Grad {
        spec,
        q: Src::<T>::new(&ins[0]),
        k: Src::<T>::new(&ins[1]),
        v: Src::<T>::new(&ins[2]),
        o: layout.saved_output.map(|at| Src::<T>::new(&ins[at])),
        dout: Src::<T>::new(&ins[layout.dout]),
        mask: layout.mask.map(|at| &ins[at]),
        dims,
        scale: T::from_f64(spec.scale),
        out_type,
    };
    let Dims {
        batch,
        sq,
        sk,
        d,
        dv,
    } = dims;
    let size = std::mem::size_of::<T>();
    let elems = backward_elems(dims, half);
    let bytes = slot_bytes(elems, size);
    let p = Shared3(out.map(|x| x as *mut T), scratch);
    let esize = out_type.size();
    // Batch element b's dq, dk and dv (null: not needed), by byte.
    let outputs = move |b: usize| {
        let p = p;
        (
            (p.0[0] as *mut u8).add(b * sq * d * esize),
            (!p.0[1].is_null()).then(|| (p.0[1] as *mut u8).add(b * sk * d * esize)),
            (!p.0[2].is_null()).then(|| (p.0[2] as *mut u8).add(b * sk * dv * esize)),
        )
    };
    if splits_keys(dims) {
        let n = key_parts(dims);
        let (q_tiles, k_tiles) = (sq.div_ceil(BR), sk.div_ceil(BC));
        // The partial dQ of the parts after the slots (part 0 adds into dq itself, unless
        // dq is 16-bit), then every row's statistics: written by all in pass 1 (disjoint
        // rows), read by all in pass 2; no worker holds a reference into them.
        let in_place = usize::from(!half);
        let partial_bytes = slot_bytes(sq * d, size);
        let partials = Ptr(scratch.add(n * bytes) as *mut T);
        let shared = Stats::new(
            scratch.add(n * bytes + (n - in_place) * partial_bytes) as *mut T,
            dims,
        );
        let partial = move |dq: *mut T, w: usize| -> *mut T {
            let partials = partials;
            if w < in_place {
                dq
            } else {
                (partials.0 as *mut u8).add((w - in_place) * partial_bytes) as *mut T
            }
        };
        for b in 0..batch {
            let (dq_out, dk, dvo) = outputs(b);
            let (all, every_dp) = {
                let mut mine = split_slot(slot::<T>(p.1, 0, bytes, elems), dims, half);
                g.exact(b, &mut mine.tiles)
            };
            (0..n).into_par_iter().for_each(|w| {
                let (p, sh) = (p, shared);
                let mut mine = split_slot(slot::<T>(p.1, w, bytes, elems), dims, half);
                for t in (w..q_tiles).step_by(n) {
                    let i0 = t * BR;
                    let rows = BR.min(sq - i0);
                    let tail = (&mut *mine.acc, &mut *mine.vsum);
                    let sdp = (&mut *mine.s, &mut *mine.dp);
                    g.row_stats(
                        (b, (all, every_dp)),
                        (i0, rows),
                        sh,
                        sdp,
                        tail,
                        &mut mine.tiles,
                    );
                }
            });
            let (dk, dvo, dq) = (dk.map(Ptr), dvo.map(Ptr), Ptr(dq_out as *mut T));
            (0..n).into_par_iter().for_each(|w| {
                let (p, sh, dk, dvo, dq) = (p, shared, dk, dvo, dq);
                let mut mine = split_slot(slot::<T>(p.1, w, bytes, elems), dims, half);
                let part = partial(dq.0, w);
                std::slice::from_raw_parts_mut(part, sq * d).fill(T::ZERO);
                for t in (w..k_tiles).step_by(n) {
                    g.key_tile(
                        (b, all),
                        t * BC,
                        sh,
                        part,
                        (dk.map(|x| x.0), dvo.map(|x| x.0)),
                        (&mut *mine.s, &mut *mine.dp),
                        (&mut *mine.dk_acc, &mut *mine.dv_acc),
                        &mut mine.tiles,
                    );
                }
            });
            // dQ = the partials' sum, in part order, each task over a band of it, stored
            // (rounded where dq is 16-bit) from part 0's.
            let total = sq * d;
            let band = total.div_ceil(n).max(1);
            (0..n).into_par_iter().for_each(|w| {
                let dq = dq;
                let (lo, hi) = ((w * band).min(total), ((w + 1) * band).min(total));
                let sum = std::slice::from_raw_parts_mut(partial(dq.0, 0).add(lo), hi - lo);
                for part in 1..n {
                    // Read only: the partials are no worker's any more.
                    let at = partial(dq.0, part) as *const T;
                    let src = std::slice::from_raw_parts(at.add(lo), hi - lo);
                    sum.iter_mut().zip(src).for_each(|(o, x)| *o = *o + *x);
                }
                if half {
                    staged::store(out_type, dq.0 as *mut u8, lo, sum);
                }
            });
        }
        return;
    }
    let n_workers = backward_slots(dims);
    (0..n_workers).into_par_iter().for_each(|w| {
        let p = p;
        let mut mine = split_slot(slot::<T>(p.1, w, bytes, elems), dims, half);
        for b in (w..batch).step_by(n_workers) {
            let (dq_out, dk, dvo) = outputs(b);
            // dQ is summed in place, or (16-bit) in f32 in the slot.
            let dq = if half {
                mine.dq.as_mut_ptr()
            } else {
                dq_out as *mut T
            };
            std::slice::from_raw_parts_mut(dq, sq * d).fill(T::ZERO);
            if sk > 0 {
                let (all, every_dp) = g.exact(b, &mut mine.tiles);
                let stats = Stats::new(mine.stats.as_mut_ptr(), dims);
                for i0 in (0..sq).step_by(BR) {
                    let tail = (&mut *mine.acc, &mut *mine.vsum);
                    let rows = BR.min(sq - i0);
                    let sdp = (&mut *mine.s, &mut *mine.dp);
                    g.row_stats(
                        (b, (all, every_dp)),
                        (i0, rows),
                        stats,
                        sdp,
                        tail,
                        &mut mine.tiles,
                    );
                }
                for j0 in (0..sk).step_by(BC) {
                    g.key_tile(
                        (b, all),
                        j0,
                        stats,
                        dq,
                        (dk, dvo),
                        (&mut *mine.s, &mut *mine.dp),
                        (&mut *mine.dk_acc, &mut *mine.dv_acc),
                        &mut mine.tiles,
                    );
                }
            }
            // (No keys: dQ is an empty sum, and dK and dV have no elements.)
            if half {
                staged::store(out_type, dq_out, 0, std::slice::from_raw_parts(dq, sq * d));
            }
        }
    });
}

/// A pointer handed to the workers (each writes its own part of what it points to).
#[derive(Clone, Copy)]
struct Ptr<T>(*mut T);
// SAFETY: as `Shared`'s.
unsafe impl<T> Send for Ptr<T> {}
unsafe impl<T> Sync for Ptr<T> {}

/// Run the forward step on `dtype` into `out`: f32 and f64 as they are, bf16 and f16 in f32
/// (`staged`).
///
/// # Safety
/// As `forward`'s.
pub unsafe fn run(spec: &AttnSpec, ins: &[Operand], dtype: DType, out: *mut u8, scratch: *mut u8) {
    match dtype {
        DType::F64 => forward::<f64>(spec, ins, (out, dtype), scratch),
        _ => forward::<f32>(spec, ins, (out, dtype), scratch),
    }
}

/// Run the gradient step on `dtype` into `out = [dq, dk, dv]` (`dk`, `dv` may be null), as
/// `run` computes the forward.
///
/// # Safety
/// As `backward`'s.
pub unsafe fn run_grad(
    spec: &AttnSpec,
    ins: &[Operand],
    dtype: DType,
    out: [*mut u8; 3],
    scratch: *mut u8,
) {
    match dtype {
        DType::F64 => backward::<f64>(spec, ins, (out, dtype), scratch),
        _ => backward::<f32>(spec, ins, (out, dtype), scratch),
    }
}
