//! Library steps: ops a program runs outside Cranelift, each writing straight
//! into its planned buffer and reading its operands in place through their
//! strided maps. Matmul calls a tuned GEMM (`gemm` on AVX-512 CPUs,
//! `matrixmultiply` elsewhere and for tiny products); the other structural ops
//! (concat, pad, take, iota, arg-reductions, scatters, barrier copies) are the
//! typed loops of `ops`.

pub mod attention;
pub mod collective;
pub mod conv;
pub mod gemm16;
pub mod ops;
pub mod random;
pub mod window;
pub mod workspace;

use crate::codegen::GemmSplit;
use crate::{shape, DType};

/// An operand read through an affine map: element `i` of `shape` is at
/// `ptr + Σ i_d * strides[d]` elements.
pub struct Strided {
    pub ptr: *mut u8,
    pub shape: Vec<usize>,
    pub strides: Vec<i64>,
}

/// `a[..., m, k] @ b[..., k, n]` over strided operands (transposed or sliced
/// views are read in place: the GEMM takes any row and column strides),
/// batch dims broadcast, written contiguously into `out`: operands of type `dtype`, the
/// result of type `result` (the same, or f32 for bf16 operands run on `gemm16`).
///
/// # Safety
/// The operands' maps must stay inside live buffers; `out` must be valid for
/// the result and overlap neither operand.
pub unsafe fn matmul_strided(
    a: &Strided,
    b: &Strided,
    out_shape: &[usize],
    (dtype, result): (DType, DType),
    out: *mut u8,
    split: Option<GemmSplit>,
    scratch: *mut u8,
) {
    matmul_strided_by(
        (None, split),
        a,
        b,
        out_shape,
        (dtype, result),
        out,
        scratch,
    );
}

/// Whether products of `dtype` run on `gemm16` (bf16 and f16 on a CPU with AVX-512, on
/// `vdpbf16ps` for bf16 where it has AVX-512 BF16; elsewhere 16-bit products run on f32
/// copies: `passes/widen.rs`).
pub fn runs_gemm16(dtype: DType) -> bool {
    gemm16::kind_for(dtype).is_some()
}

/// Whether the 16-bit step `n` of `g` reads its operands as they are (a `matmul` on
/// `gemm16`, a bf16 convolution on pairs of features or pixels: `conv/pairs.rs`), giving its
/// own type or its f32 sums; `passes/widen.rs` runs the others on f32 copies.
pub fn runs_natively(g: &crate::ir::Graph, n: &crate::ir::Node) -> bool {
    let operand = |i: usize| g.node(n.inputs[i]);
    match &n.op {
        crate::ir::Op::Matmul => runs_gemm16(operand(0).dtype),
        crate::ir::Op::Conv(spec) => conv::pairs::runs(
            spec,
            &[&operand(0).shape, &operand(1).shape],
            operand(0).dtype,
        ),
        _ => false,
    }
}

/// Scratch bytes of a product `[.., m, k] @ [.., k, n]` of operands of `dtype` giving
/// `out_shape` (`matmul_strided`'s `scratch`): a bf16 product's packed operands where the CPU runs
/// `gemm16` (the most of the product folded into one and of one matrix of the batch).
pub fn matmul_scratch(a_shape: &[usize], out_shape: &[usize], dtype: DType) -> usize {
    let Some(kind) = gemm16::kind_for(dtype) else {
        return 0;
    };
    let r = out_shape.len();
    let (m, n, k) = (
        out_shape[r - 2],
        out_shape[r - 1],
        a_shape[a_shape.len() - 1],
    );
    let rows = shape::numel(&out_shape[..r - 2]) * m;
    gemm16::scratch_bytes(m, k, n, kind).max(gemm16::scratch_bytes(rows, k, n, kind))
}

/// `matmul_strided` on the given library (`None`: `Gemm::pick` for each product) and split
/// (`None`: `FaerSplit::of` for each product).
///
/// # Safety
/// As `matmul_strided`'s.
unsafe fn matmul_strided_by(
    (lib, split): (Option<Gemm>, Option<GemmSplit>),
    a: &Strided,
    b: &Strided,
    out_shape: &[usize],
    (dtype, result): (DType, DType),
    out: *mut u8,
    scratch: *mut u8,
) {
    let r = out_shape.len();
    let (m, n) = (out_shape[r - 2], out_shape[r - 1]);
    let (ra, rb) = (a.shape.len(), b.shape.len());
    let k = a.shape[ra - 1];
    let batch = &out_shape[..r - 2];
    // Batch strides of each operand (0 where it broadcasts).
    let bstr = |s: &Strided, rank: usize| -> Vec<i64> {
        let own = &s.shape[..rank - 2];
        let off = batch.len() - own.len();
        (0..batch.len())
            .map(|d| {
                if d < off || own[d - off] == 1 {
                    0
                } else {
                    s.strides[d - off]
                }
            })
            .collect()
    };
    let (sa, sb) = (bstr(a, ra), bstr(b, rb));
    let (rsa, csa) = (a.strides[ra - 2] as isize, a.strides[ra - 1] as isize);
    let (rsb, csb) = (b.strides[rb - 2] as isize, b.strides[rb - 1] as isize);
    let size = dtype.size() as isize;
    let mat = |p: *mut u8, rs: isize, cs: isize| Mat { p, rs, cs };
    // One product of `mm` rows into `c`, on the library its types and shape pick.
    let product = |lib: Gemm, mm: usize, a: Mat, b: Mat, c: *mut u8| match (dtype, result) {
        (DType::F32, DType::F32) => lib.run::<f32>(mm, k, n, a, b, c as *mut f32, split),
        (DType::F64, DType::F64) => lib.run::<f64>(mm, k, n, a, b, c as *mut f64, split),
        (DType::BF16 | DType::F16, r) => {
            let kind = gemm16::kind_for(dtype).expect("passes/widen.rs: run on f32 copies");
            gemm16::run(mm, k, n, (a, b, dtype), (c, r), kind, scratch)
        }
        _ => unreachable!("matmul is f32, f64 or 16-bit on gemm16 here (passes/widen.rs)"),
    };
    if let Some(rows) = folded_rows(batch, &sa, &sb, m, rsa) {
        // One product of `rows` rows: a batch of `[m, k]` blocks stacked at row stride
        // times a shared `[k, n]` matrix (a layer's activations times its weight); `m`-row
        // products one by one ran at a third of the GEMM's speed for m = 64.
        let (a, b) = (mat(a.ptr, rsa, csa), mat(b.ptr, rsb, csb));
        product(
            lib.unwrap_or_else(|| Gemm::pick(rows, k, n)),
            rows,
            a,
            b,
            out,
        );
        return;
    }
    let lib = lib.unwrap_or_else(|| Gemm::pick(m, k, n));
    let mut idx = vec![0usize; batch.len()];
    for bi in 0..shape::numel(batch) {
        let ao: i64 = idx.iter().zip(&sa).map(|(&i, &s)| i as i64 * s).sum();
        let bo: i64 = idx.iter().zip(&sb).map(|(&i, &s)| i as i64 * s).sum();
        let pa = a.ptr.wrapping_offset(ao as isize * size);
        let pb = b.ptr.wrapping_offset(bo as isize * size);
        let pc = out.wrapping_offset((bi * m * n * result.size()) as isize);
        product(lib, m, mat(pa, rsa, csa), mat(pb, rsb, csb), pc);
        for d in (0..batch.len()).rev() {
            idx[d] += 1;
            if idx[d] < batch[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// The row count of the batched product as one product, when `b` is shared by the whole
/// batch (every batch stride 0) and `a`'s batch axes continue its rows (the stride of
/// each batch axis is the extent of the rows and axes inside it): the output, contiguous,
/// is then `[batch · m, n]` row for row. `None` otherwise, or for a batch of one.
fn folded_rows(batch: &[usize], sa: &[i64], sb: &[i64], m: usize, rsa: isize) -> Option<usize> {
    let count = shape::numel(batch);
    if count <= 1 || sb.iter().any(|&s| s != 0) {
        return None;
    }
    let mut next = m as i64 * rsa as i64;
    for (&len, &stride) in batch.iter().zip(sa).rev() {
        if len == 1 {
            continue;
        }
        if stride != next {
            return None;
        }
        next *= len as i64;
    }
    Some(count * m)
}

/// A matrix operand: element `(i, j)` at `p + i * rs + j * cs` elements.
#[derive(Clone, Copy)]
struct Mat {
    p: *mut u8,
    rs: isize,
    cs: isize,
}

/// Which GEMM runs a product (measured by `benches/gemm_compare.rs`, figures in
/// docs/performance.md, "GEMM library choice"): faer's `gemm` with its AVX-512 kernels where the CPU has
/// AVX-512 (1.2–2x `matrixmultiply` on the workloads' shapes, f32 and f64,
/// transposed operands included, up to 10x on matrix-vector shapes), threaded
/// on rayon's pool (it stays on the calling thread below its own work
/// threshold, and we keep products with a side of <= 16 there too); `matrixmultiply` elsewhere (its AVX2/FMA kernels are the tuned
/// path on such CPUs) and for tiny products, where `gemm`'s fixed cost (~0.5
/// us) dominates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Gemm {
    MatrixMultiply,
    Faer,
}

/// Below this many multiply-adds (`m * k * n`) `matrixmultiply` is faster.
const TINY_GEMM: usize = 8 * 1024;

impl Gemm {
    pub(crate) fn pick(m: usize, k: usize, n: usize) -> Gemm {
        if m.saturating_mul(k).saturating_mul(n) >= TINY_GEMM && avx512() {
            Gemm::Faer
        } else {
            Gemm::MatrixMultiply
        }
    }

    /// `c[m, n] = a[m, k] @ b[k, n]`, `c` contiguous.
    ///
    /// # Safety
    /// As `matmul_strided`'s, for one matrix.
    #[allow(clippy::too_many_arguments)]
    unsafe fn run<T: GemmElement>(
        self,
        m: usize,
        k: usize,
        n: usize,
        a: Mat,
        b: Mat,
        c: *mut T,
        split: Option<GemmSplit>,
    ) {
        match self {
            Gemm::MatrixMultiply => T::matrixmultiply(m, k, n, a, b, c),
            // dst = alpha * dst + beta * lhs @ rhs; with read_dst false the
            // destination is only written. Strides are passed column first.
            Gemm::Faer => match FaerSplit::of(m, k, n, split) {
                FaerSplit::Bands => faer_panels(m, k, n, a, b, c),
                FaerSplit::Gemm(par) => faer_gemm(m, k, n, a, b, (c, n), par),
            },
        }
    }
}

/// How a product on `gemm` splits its work: single-threaded calls on bands of the output
/// spread over rayon's pool (`faer_panels`), or one call with gemm's own split (rayon, or
/// none: the calling thread alone).
#[derive(Clone, Copy, Debug)]
pub(crate) enum FaerSplit {
    Bands,
    Gemm(gemm::Parallelism),
}

impl FaerSplit {
    /// The split of a product `[m, k] @ [k, n]`, `forced` or chosen by its shape.
    pub(crate) fn of(m: usize, k: usize, n: usize, forced: Option<GemmSplit>) -> FaerSplit {
        if split_panels(m, k, n, forced) {
            FaerSplit::Bands
        } else if m.min(n) <= 16 {
            // Products with a side of <= 16 (W6's logits h @ W2, W7's dz @ W2^T and
            // h^T @ dz) ran 10-35 % faster on one thread than on gemm's rayon split
            // (benches/gemm_compare.rs).
            FaerSplit::Gemm(gemm::Parallelism::None)
        } else {
            FaerSplit::Gemm(gemm::Parallelism::Rayon(0))
        }
    }
}

/// One `gemm` call: `c[m, n] = a @ b`, `c`'s rows `ldc` elements apart.
///
/// # Safety
/// As `Gemm::run`'s.
unsafe fn faer_gemm<T: GemmElement>(
    m: usize,
    k: usize,
    n: usize,
    a: Mat,
    b: Mat,
    (c, ldc): (*mut T, usize),
    par: gemm::Parallelism,
) {
    // dst = alpha * dst + beta * lhs @ rhs; with read_dst false the destination is only
    // written. Strides are passed column first.
    gemm::gemm(
        m,
        n,
        k,
        c,
        1,
        ldc as isize,
        false,
        a.p as *const T,
        a.cs,
        a.rs,
        b.p as *const T,
        b.cs,
        b.rs,
        T::ZERO,
        T::ONE,
        false,
        false,
        false,
        par,
    )
}

/// The bands `faer_panels` cuts a product into: `(by_rows, len, step)`, bands of `step`
/// rows (or columns when `n > m`) of the `len` the output has.
pub(crate) fn band_geometry(m: usize, n: usize) -> (bool, usize, usize) {
    let by_rows = m >= n;
    let len = if by_rows { m } else { n };
    let step = len.div_ceil(bands(len)).div_ceil(16) * 16;
    (by_rows, len, step)
}

/// The bytes a `gemm` call of this geometry and these operand strides writes in its packing
/// buffer and its thread's slab (the vendored `gemm-common` keeps both per thread), found by
/// running it dry.
pub(crate) fn faer_packing(
    m: usize,
    k: usize,
    n: usize,
    (a_rs, a_cs): (isize, isize),
    (b_rs, b_cs): (isize, isize),
    par: gemm::Parallelism,
    elem: usize,
) -> gemm_common::packing::Request {
    fn dry<T: GemmElement>(
        m: usize,
        k: usize,
        n: usize,
        a: Mat,
        b: Mat,
        par: gemm::Parallelism,
    ) -> gemm_common::packing::Request {
        let c = std::ptr::NonNull::<T>::dangling().as_ptr();
        // SAFETY: in a dry run gemm returns once it has chosen its blocking, before it
        // reads, writes or allocates anything.
        gemm_common::packing::packing_request(|| unsafe { faer_gemm(m, k, n, a, b, (c, n), par) })
    }
    let p = std::ptr::NonNull::<u8>::dangling().as_ptr();
    let a = Mat {
        p,
        rs: a_rs,
        cs: a_cs,
    };
    let b = Mat {
        p,
        rs: b_rs,
        cs: b_cs,
    };
    match elem {
        4 => dry::<f32>(m, k, n, a, b, par),
        _ => dry::<f64>(m, k, n, a, b, par),
    }
}

/// Whether a product runs as single-threaded `gemm`s on bands of the output (`faer_panels`)
/// rather than on gemm's own rayon split: products of 4 M multiply-adds or more with both
/// output sides >= 64, where gemm's split synchronises its threads per block of `k`.
/// Same run, interleaved, on the 2-core AVX-512 Xeon: W8 41-44 -> 38.2 ms, W7 2.5-2.8 -> 2.3-2.5,
/// W6 1.16-1.33 -> 1.12-1.19; 1024^3 (W9) even. The GPT training step at nanoGPT's GPU size
/// (products of up to 7 G multiply-adds, 16,384 rows), interleaved on the 2-core EPYC with
/// another job on one core: 8.37 -> 7.82 s checkpointed, 8.14 -> 8.04 s everything kept.
/// The target's `gemm_split` forces one (measurements, tests), for products with both output
/// sides > 16.
fn split_panels(m: usize, k: usize, n: usize, forced: Option<GemmSplit>) -> bool {
    let macs = m.saturating_mul(k).saturating_mul(n);
    match forced {
        Some(f) => f == GemmSplit::Bands && m.min(n) > 16,
        None => m.min(n) >= 64 && macs >= 1 << 22,
    }
}

/// How many bands `faer_panels` cuts a product's `len` output rows (or columns) into: a
/// function of the length alone, never of the thread count, since `gemm` chooses its
/// blocking of `k` (and so each element's order of summation) from the band's height: bands
/// cut per thread gave other bits under 8 threads than under 2 (a `[129, 257]` Gram matrix).
/// At least 2 (both cores of a 2-core machine), up to 16 for long sides so that a core slowed
/// by other work takes fewer of them; every band at least `MIN_BAND` long where it can be, as
/// each repacks the other operand (its cost against the band's multiply-adds is `1 / band`).
/// An even count, so two cores end together: three bands of GPT's `xᵀ · dy` (`[384, 16384]`
/// by `[16384, 1536]`) left one core idle a third of the time (127-136 ms against 97-108 ms
/// in four bands, alternating, 2-core EPYC). On machines of more than 16 threads the longest
/// products leave some idle (FIXME: a larger fixed count, measured there).
fn bands(len: usize) -> usize {
    const MIN_BAND: usize = 512;
    (len / MIN_BAND).clamp(2, 16).next_multiple_of(2)
}

/// `c = a @ b` as one single-threaded `gemm` per rayon thread, each on a band of rows (or of
/// columns when `n > m`) of the output.
///
/// # Safety
/// As `Gemm::run`'s.
unsafe fn faer_panels<T: GemmElement>(m: usize, k: usize, n: usize, a: Mat, b: Mat, c: *mut T) {
    #[derive(Clone, Copy)]
    struct P<T>(Mat, Mat, *mut T);
    unsafe impl<T> Send for P<T> {}
    unsafe impl<T> Sync for P<T> {}
    let p = P(a, b, c);
    let (by_rows, len, step) = band_geometry(m, n);
    let size = std::mem::size_of::<T>() as isize;
    use rayon::prelude::*;
    (0..len.div_ceil(step)).into_par_iter().for_each(move |i| {
        let p = p;
        let (s, e) = (i * step, ((i + 1) * step).min(len));
        let (mm, nn, pa, pb, pc) = if by_rows {
            (
                e - s,
                n,
                p.0.p.wrapping_offset(s as isize * p.0.rs * size),
                p.1.p,
                p.2.add(s * n),
            )
        } else {
            (
                m,
                e - s,
                p.0.p,
                p.1.p.wrapping_offset(s as isize * p.1.cs * size),
                p.2.add(s),
            )
        };
        let (a, b) = (Mat { p: pa, ..p.0 }, Mat { p: pb, ..p.1 });
        faer_gemm(mm, k, nn, a, b, (pc, n), gemm::Parallelism::None);
    });
}

/// Whether the CPU runs `gemm`'s AVX-512 kernels (it dispatches on the same
/// test at run time; without AVX-512 it would run AVX2/FMA kernels).
fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

trait GemmElement: Copy + 'static {
    const ZERO: Self;
    const ONE: Self;
    /// # Safety
    /// As `Gemm::run`'s.
    unsafe fn matrixmultiply(m: usize, k: usize, n: usize, a: Mat, b: Mat, c: *mut Self);
}

impl GemmElement for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    unsafe fn matrixmultiply(m: usize, k: usize, n: usize, a: Mat, b: Mat, c: *mut Self) {
        let (pa, pb) = (a.p as *const f32, b.p as *const f32);
        matrixmultiply::sgemm(
            m, k, n, 1.0, pa, a.rs, a.cs, pb, b.rs, b.cs, 0.0, c, n as isize, 1,
        )
    }
}

impl GemmElement for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    unsafe fn matrixmultiply(m: usize, k: usize, n: usize, a: Mat, b: Mat, c: *mut Self) {
        let (pa, pb) = (a.p as *const f64, b.p as *const f64);
        matrixmultiply::dgemm(
            m, k, n, 1.0, pa, a.rs, a.cs, pb, b.rs, b.cs, 0.0, c, n as isize, 1,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dry run asks for the packing buffer the product allocates, touching nothing (its
    /// operands dangle); run for real on a fresh thread, the product keeps a buffer of
    /// that size, and a second product of the same shape keeps the same one. On a thread
    /// that reserved the request first, the products pack into the reserved buffer.
    #[test]
    fn a_dry_product_asks_for_the_packing_a_real_one_keeps() {
        let (m, k, n) = (300, 200, 500);
        let mut kept_any = 0;
        for sa in [(k as isize, 1), (1, m as isize)] {
            for sb in [(n as isize, 1), (1, k as isize)] {
                // A product of ones through these strides, on one thread: every element k.
                let ones = move || {
                    let (a, b) = (vec![1.0f32; m * k], vec![1.0f32; k * n]);
                    let mut c = vec![0.0f32; m * n];
                    // SAFETY: the operands hold m*k and k*n elements, read through
                    // strides inside them; c is m*n.
                    unsafe {
                        let ma = Mat {
                            p: a.as_ptr() as *mut u8,
                            rs: sa.0,
                            cs: sa.1,
                        };
                        let mb = Mat {
                            p: b.as_ptr() as *mut u8,
                            rs: sb.0,
                            cs: sb.1,
                        };
                        faer_gemm(
                            m,
                            k,
                            n,
                            ma,
                            mb,
                            (c.as_mut_ptr(), n),
                            gemm::Parallelism::None,
                        );
                    }
                    assert!(c.iter().all(|&x| x == k as f32));
                };
                kept_any += std::thread::spawn(move || {
                    let r = faer_packing(m, k, n, sa, sb, gemm::Parallelism::None, 4);
                    assert_eq!(gemm_common::packing::thread_packing_bytes(), 0);
                    ones();
                    let kept = gemm_common::packing::thread_packing_bytes();
                    assert_eq!(r.packing, kept, "{sa:?} {sb:?}: asked {r:?}, kept {kept}");
                    ones();
                    assert_eq!(gemm_common::packing::thread_packing_bytes(), kept);
                    kept
                })
                .join()
                .unwrap();
                std::thread::spawn(move || {
                    let r = faer_packing(m, k, n, sa, sb, gemm::Parallelism::None, 4);
                    gemm_common::packing::reserve(r);
                    assert_eq!(gemm_common::packing::thread_packing_bytes(), r.packing);
                    let allocated = gemm_common::packing::thread_packing_allocations();
                    ones();
                    assert_eq!(gemm_common::packing::thread_packing_bytes(), r.packing);
                    // The reserved buffer served the product: this thread allocated none
                    // (counted per thread: other tests' threads allocate concurrently).
                    assert_eq!(
                        gemm_common::packing::thread_packing_allocations(),
                        allocated,
                        "{sa:?} {sb:?}"
                    );
                })
                .join()
                .unwrap();
            }
        }
        assert!(kept_any > 0);
    }

    /// Both libraries, on random strided operands (transposed, negative and
    /// zero strides, gaps) with broadcast batch dims, against a triple loop.
    #[test]
    fn both_gemms_match_a_triple_loop() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for trial in 0..60 {
            let dtype = [DType::F32, DType::F64][trial % 2];
            let (m, k, n) = (1 + rnd(70), rnd(70), 1 + rnd(70));
            let batch = rnd(3);
            // Operand element (i, j) of batch b at base + b*bs + i*rs + j*cs.
            let mut layout = |rows: usize, cols: usize| -> (Vec<i64>, i64, usize) {
                let (mut rs, mut cs) = match rnd(3) {
                    0 => (cols as i64, 1),
                    1 => (1, rows as i64),
                    _ => (2 * cols as i64 + 1, 2),
                };
                if rnd(6) == 0 {
                    rs = 0;
                }
                if rnd(6) == 0 {
                    cs = 0;
                }
                let span = |s: i64, d: usize| s.unsigned_abs() as usize * d.saturating_sub(1);
                let mut base = 0;
                if rnd(4) == 0 {
                    base += span(rs, rows);
                    rs = -rs;
                }
                if rnd(4) == 0 {
                    base += span(cs, cols);
                    cs = -cs;
                }
                let mat = span(rs, rows) + span(cs, cols) + 1;
                let bs = if batch > 0 && rnd(3) == 0 { 0 } else { mat };
                (vec![bs as i64, rs, cs], base as i64, mat + bs * 2)
            };
            let (sa, base_a, len_a) = layout(m, k);
            let (sb, base_b, len_b) = layout(k, n);
            let va: Vec<f64> = (0..len_a)
                .map(|i| ((i * 7 % 13) as f64 - 6.0) / 4.0)
                .collect();
            let vb: Vec<f64> = (0..len_b)
                .map(|i| ((i * 5 % 11) as f64 - 5.0) / 4.0)
                .collect();
            let want: Vec<f64> = (0..batch.max(1) * m * n)
                .map(|e| {
                    let (bi, i, j) = (e / (m * n), e / n % m, e % n);
                    (0..k)
                        .map(|p| {
                            let ia =
                                base_a + bi as i64 * sa[0] + i as i64 * sa[1] + p as i64 * sa[2];
                            let ib =
                                base_b + bi as i64 * sb[0] + p as i64 * sb[1] + j as i64 * sb[2];
                            va[ia as usize] * vb[ib as usize]
                        })
                        .sum()
                })
                .collect();
            let shape = |r: usize, c: usize| {
                if batch > 0 {
                    vec![batch, r, c]
                } else {
                    vec![r, c]
                }
            };
            let strides = |s: &[i64]| {
                if batch > 0 {
                    s.to_vec()
                } else {
                    s[1..].to_vec()
                }
            };
            for lib in [Gemm::MatrixMultiply, Gemm::Faer] {
                let what = format!("{lib:?} {dtype} batch {batch} {m}x{k}x{n} a {sa:?} b {sb:?}");
                let out_shape = shape(m, n);
                macro_rules! run {
                    ($t:ty) => {{
                        let a: Vec<$t> = va.iter().map(|&v| v as $t).collect();
                        let b: Vec<$t> = vb.iter().map(|&v| v as $t).collect();
                        let mut c: Vec<$t> = vec![<$t>::NAN; want.len()];
                        let op = |p: &Vec<$t>, base: i64, r, cc, s: &[i64]| Strided {
                            ptr: (p.as_ptr() as *mut $t).wrapping_offset(base as isize) as *mut u8,
                            shape: shape(r, cc),
                            strides: strides(s),
                        };
                        // SAFETY: the layouts address only the vectors' elements.
                        unsafe {
                            matmul_strided_by(
                                (Some(lib), None),
                                &op(&a, base_a, m, k, &sa),
                                &op(&b, base_b, k, n, &sb),
                                &out_shape,
                                (dtype, dtype),
                                c.as_mut_ptr() as *mut u8,
                                std::ptr::null_mut(),
                            )
                        };
                        c.iter().map(|&v| v as f64).collect::<Vec<f64>>()
                    }};
                }
                let got = match dtype {
                    DType::F32 => run!(f32),
                    _ => run!(f64),
                };
                for (e, (g, w)) in got.iter().zip(&want).enumerate() {
                    let tol = if dtype == DType::F32 { 1e-4 } else { 1e-12 } * (1.0 + k as f64);
                    assert!((g - w).abs() <= tol, "{what}: element {e}: {g} vs {w}");
                }
            }
        }
    }

    /// A batch of row blocks times one shared matrix runs as one product of all the rows
    /// (`folded_rows`), on both libraries, and matches a triple loop; a batch whose blocks
    /// do not continue each other's rows, or a batched right operand, does not fold.
    #[test]
    fn a_batch_sharing_its_right_operand_is_one_product() {
        let (batch, m, k, n) = ([2usize, 3], 5usize, 7usize, 9usize);
        let rows = 6 * m;
        assert_eq!(
            folded_rows(&batch, &[3 * 35, 35], &[0, 0], m, k as isize),
            Some(rows)
        );
        assert_eq!(
            folded_rows(&batch, &[3 * 40, 40], &[0, 0], m, k as isize),
            None
        );
        assert_eq!(
            folded_rows(&batch, &[3 * 35, 35], &[0, 63], m, k as isize),
            None
        );
        assert_eq!(
            folded_rows(&[1, 6], &[0, 35], &[0, 0], m, k as isize),
            Some(rows)
        );
        assert_eq!(folded_rows(&[6], &[0], &[0], m, k as isize), None);
        let a: Vec<f32> = (0..rows * k)
            .map(|i| ((i * 7 % 13) as f32 - 6.0) / 4.0)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 5 % 11) as f32 - 5.0) / 4.0)
            .collect();
        let want: Vec<f32> = (0..rows * n)
            .map(|e| (0..k).map(|p| a[e / n * k + p] * b[p * n + e % n]).sum())
            .collect();
        for lib in [Gemm::MatrixMultiply, Gemm::Faer] {
            let mut c = vec![f32::NAN; rows * n];
            let sa = Strided {
                ptr: a.as_ptr() as *mut u8,
                shape: vec![2, 3, m, k],
                strides: vec![(3 * m * k) as i64, (m * k) as i64, k as i64, 1],
            };
            let sb = Strided {
                ptr: b.as_ptr() as *mut u8,
                shape: vec![k, n],
                strides: vec![n as i64, 1],
            };
            // SAFETY: the maps address only the vectors' elements.
            unsafe {
                matmul_strided_by(
                    (Some(lib), None),
                    &sa,
                    &sb,
                    &[2, 3, m, n],
                    (DType::F32, DType::F32),
                    c.as_mut_ptr() as *mut u8,
                    std::ptr::null_mut(),
                )
            };
            for (e, (g, w)) in c.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                    "{lib:?} {e}: {g} vs {w}"
                );
            }
        }
    }

    /// Bands come in even counts (two cores end together), at least 2 and at most 16, and
    /// the split runs that many bands (never more; as many wherever a band is 64 or more
    /// long, the rounding of its length to 16 losing none).
    #[test]
    fn bands_come_in_even_counts_and_the_split_runs_them() {
        for len in [
            1, 64, 511, 1024, 1536, 1700, 1800, 2600, 3136, 4096, 16384, 100_000,
        ] {
            let count = super::bands(len);
            assert!(
                count % 2 == 0 && (2..=16).contains(&count),
                "{len}: {count}"
            );
            let (_, l, step) = super::band_geometry(len, 1);
            assert_eq!(l, len);
            let run = len.div_ceil(step);
            assert!(run <= count, "{len}: {run} bands of {step} for {count}");
            if len >= 64 * count {
                assert_eq!(run, count, "{len}: {run} bands of {step} for {count}");
            }
        }
        assert_eq!(super::bands(1536), 4);
    }
}
