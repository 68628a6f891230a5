//! The library steps other than matmul, in native code: each writes its result straight
//! into the step's planned buffer and reads its operands through their strided maps
//! (folded views, broadcast constants of one element), so a call allocates nothing.
//!
//! The interpreter is the oracle: every function here computes bit for bit what
//! `interp::eval_op` computes (index clamping of `take`/`scatter_add`, `scatter_add`'s f64
//! accumulation in index order, `argmax`'s first extreme with NaN as the extreme, the
//! literal conversions of `pad` and `iota`); the random ops call the interpreter's own
//! function (`random::native`).

use super::collective::When;
use crate::ir::Op;
use crate::{shape, DType, Error, Literal};
use rayon::prelude::*;

/// An operand read in place: element `i` of `shape` is at
/// `ptr + Σ i_d * strides[d]` elements of `dtype`.
#[derive(Clone, Copy)]
pub struct Operand<'a> {
    pub ptr: *const u8,
    pub dtype: DType,
    pub shape: &'a [usize],
    pub strides: &'a [i64],
}

// SAFETY: an operand is only read, by the step that holds it, while its buffer lives.
unsafe impl Send for Operand<'_> {}
unsafe impl Sync for Operand<'_> {}

/// Bytes of scratch a step needs besides its output (planned once per executable, at the end
/// of the arena): `scatter_add`'s grouping of the indices by target row, attention's tiles
/// (one set per worker), a bf16 product's packed operands.
///
/// `dtype` is the step's result type, `operands` its first operand's (a product of bf16
/// operands may give f32).
pub fn scratch_bytes(
    op: &Op,
    in_shapes: &[&[usize]],
    operands: DType,
    out_shape: &[usize],
    dtype: DType,
) -> usize {
    match op {
        Op::ScatterAdd(axis) => scatter_scratch(out_shape[*axis], shape::numel(in_shapes[1])),
        Op::Matmul => super::matmul_scratch(in_shapes[0], out_shape, operands),
        Op::Conv(spec) => super::conv::scratch_bytes(spec, in_shapes, out_shape, operands, dtype),
        Op::Window(spec) => super::window::scratch_bytes(spec, in_shapes),
        // The operand gathered into one contiguous block, MPI's send buffer (and for a
        // gather, every rank's block as MPI leaves them, before they are laid out).
        Op::AllReduce(_) | Op::ReduceScatter(..) => shape::numel(in_shapes[0]) * dtype.size(),
        Op::AllGather(..) => (shape::numel(in_shapes[0]) + shape::numel(out_shape)) * dtype.size(),
        Op::Attention(_) | Op::AttentionGrad(_) => {
            let d = super::attention::Dims::of(in_shapes[0], in_shapes[2]);
            if matches!(op, Op::Attention(_)) {
                let Op::Attention(spec) = op else {
                    unreachable!()
                };
                super::attention::forward_scratch(spec, d, dtype)
            } else {
                super::attention::backward_scratch(d, dtype)
            }
        }
        _ => 0,
    }
}

/// Start the collective `op` of `ins[0]`: its operand staged in `stage`
/// (`scratch_bytes(op, ..)` of them) and MPI writing `out` (or `stage`, for a gather laid out
/// by the wait). The result is there once the returned collective is waited for; `when`
/// says whether it is waited for at once (an all-reduce may then run blocking).
///
/// # Safety
/// As `run`'s; besides, `stage` and `out` stay valid, `out` unread and `stage` untouched,
/// until the wait.
pub unsafe fn start_collective(
    op: &Op,
    ins: &[Operand],
    out_shape: &[usize],
    dtype: DType,
    out: *mut u8,
    stage: *mut u8,
    when: When,
) -> Result<super::collective::InFlight, Error> {
    let size = dtype.size();
    let out_numel = shape::numel(out_shape);
    let ost = contiguous(out_shape);
    let x = &ins[0];
    match op {
        Op::AllReduce(r) => {
            // Run at once, a contiguous operand is sent from where it is: no later step can
            // write it before the collective ends. In flight, it is staged.
            let send = if when == When::Now && x.strides == ost.as_slice() {
                x.ptr as *const u8
            } else {
                copy(size, x.shape, x.ptr, x.strides, stage, &ost);
                stage as *const u8
            };
            let bytes = out_numel * size;
            // SAFETY: `send` holds the operand's `bytes` (the operand itself, contiguous, or
            // its copy just staged), the output is valid for `bytes` and overlaps neither.
            let (send, recv) = unsafe {
                (
                    std::slice::from_raw_parts(send, bytes),
                    std::slice::from_raw_parts_mut(out, bytes),
                )
            };
            Ok(super::collective::all_reduce_step(
                *r, dtype, send, recv, when,
            ))
        }
        Op::BroadcastFrom(root) => {
            copy(size, x.shape, x.ptr, x.strides, out, &ost);
            // SAFETY: the output is valid for its bytes, just written, and overlaps no operand.
            let buf = unsafe { std::slice::from_raw_parts_mut(out, out_numel * size) };
            super::collective::broadcast_step(*root, buf)
        }
        Op::AllGather(axis, ranks) => super::collective::all_gather_step(
            (x.ptr, x.shape, x.strides),
            (*axis, *ranks),
            dtype,
            stage,
            out,
        ),
        Op::ReduceScatter(r, axis, ranks) => super::collective::reduce_scatter_step(
            (x.ptr, x.shape, x.strides),
            (*r, *axis, *ranks),
            dtype,
            stage,
            out,
        ),
        other => unreachable!("{other:?} is not a collective"),
    }
}

/// The collective `op` of `ins[0]` whose result the next step reads: nothing can overlap
/// it, so it runs to its end at once (`When::Now`: an all-reduce may take MPI's blocking
/// call, `collective::mpi::blocking`), its whole time counted as waiting; an all-reduce of a
/// contiguous operand sends it from where it is, with no staging copy.
///
/// # Safety
/// As `start_collective`'s, until it returns.
pub unsafe fn run_collective_now(
    op: &Op,
    ins: &[Operand],
    out_shape: &[usize],
    dtype: DType,
    out: *mut u8,
    stage: *mut u8,
) -> Result<(), Error> {
    let start = std::time::Instant::now();
    // SAFETY: as the caller promises; finished before returning.
    let c = unsafe { start_collective(op, ins, out_shape, dtype, out, stage, When::Now) }?;
    c.finish(start);
    Ok(())
}

/// Run `op` on `ins`, writing its contiguous result of `out_shape` and `dtype` to `out`.
///
/// # Safety
/// The operands' maps must stay inside live buffers; `out` must be valid for the result's
/// bytes and overlap no operand; `scratch` must be valid for `scratch_bytes` bytes (8-byte
/// aligned).
pub unsafe fn run(
    op: &Op,
    ins: &[Operand],
    out_shape: &[usize],
    dtype: DType,
    out: *mut u8,
    scratch: *mut u8,
) -> Result<(), Error> {
    let out_numel = shape::numel(out_shape);
    if out_numel == 0 {
        return Ok(());
    }
    let size = dtype.size();
    let ost = contiguous(out_shape);
    match op {
        Op::Barrier => copy(size, ins[0].shape, ins[0].ptr, ins[0].strides, out, &ost),
        Op::AllReduce(_) | Op::BroadcastFrom(_) | Op::AllGather(..) | Op::ReduceScatter(..) => {
            start_collective(op, ins, out_shape, dtype, out, scratch, When::Now)?.wait()
        }
        Op::Concat(axis) => {
            let mut at = 0;
            for x in ins {
                let dst = out.wrapping_offset((at * ost[*axis]) as isize * size as isize);
                copy(size, x.shape, x.ptr, x.strides, dst, &ost);
                at += x.shape[*axis] as i64;
            }
        }
        Op::Pad(p, l) => {
            fill(size, literal_bits(l.cast(dtype), dtype), out, out_numel);
            let off: i64 = p.iter().zip(&ost).map(|(&(lo, _), &s)| lo as i64 * s).sum();
            let dst = out.wrapping_offset(off as isize * size as isize);
            copy(size, ins[0].shape, ins[0].ptr, ins[0].strides, dst, &ost);
        }
        Op::SliceScatter(sl) => {
            std::ptr::write_bytes(out, 0, out_numel * size);
            let off: i64 = sl.iter().zip(&ost).map(|(&(st, _), &s)| st * s).sum();
            let ds: Vec<i64> = sl
                .iter()
                .zip(&ost)
                .map(|(&(_, step), &s)| step * s)
                .collect();
            let dst = out.wrapping_offset(off as isize * size as isize);
            copy(size, ins[0].shape, ins[0].ptr, ins[0].strides, dst, &ds);
        }
        Op::Iota(axis) => match dtype {
            DType::F32 => iota(out_shape, *axis, out as *mut f32, |k| k as f64 as f32),
            DType::F64 => iota(out_shape, *axis, out as *mut f64, |k| k as f64),
            DType::I32 => iota(out_shape, *axis, out as *mut i32, |k| k as i32),
            DType::I64 => iota(out_shape, *axis, out as *mut i64, |k| k as i64),
            DType::BF16 => iota(out_shape, *axis, out as *mut half::bf16, |k| {
                crate::dtype::bf16_of(k as f64)
            }),
            DType::F16 => iota(out_shape, *axis, out as *mut half::f16, |k| {
                crate::dtype::f16_of(k as f64)
            }),
            DType::Bool => return Err(unsupported(op, dtype)),
        },
        Op::Take(axis) => take(size, &ins[0], &ins[1], *axis, out, out_numel),
        Op::Attention(a) => super::attention::run(a, ins, dtype, out, scratch),
        Op::Conv(spec) => super::conv::run(spec, ins, out_shape, dtype, out, scratch)?,
        Op::Window(spec) => super::window::run(spec, ins, out_shape, dtype, out, scratch)?,
        // Three outputs: the executor calls `attention::run_grad` with their buffers.
        Op::AttentionGrad(_) => return Err(unsupported(op, dtype)),
        Op::Random(r) => {
            use crate::library::random::native::{fill, key_words, Out};
            let at = |x: &Operand, k: i64| {
                let step = x.strides.first().copied().unwrap_or(0);
                *(x.ptr.wrapping_offset((k * step * 4) as isize) as *const i32)
            };
            let key = key_words(at(&ins[0], 0), at(&ins[0], 1));
            let data = ins.get(1).map_or(0, |d| at(d, 0) as u32);
            let n = out_numel;
            let out = match dtype {
                DType::F32 => Out::F32(std::slice::from_raw_parts_mut(out as *mut f32, n)),
                DType::F64 => Out::F64(std::slice::from_raw_parts_mut(out as *mut f64, n)),
                DType::I32 => Out::I32(std::slice::from_raw_parts_mut(out as *mut i32, n)),
                DType::I64 => Out::I64(std::slice::from_raw_parts_mut(out as *mut i64, n)),
                _ => return Err(unsupported(op, dtype)),
            };
            fill(*r, key, data, out).map_err(Error::verify)?;
        }
        Op::ScatterAdd(axis) => match dtype {
            DType::F32 => scatter_add::<f32>(&ins[0], &ins[1], *axis, out_shape, out, scratch),
            DType::F64 => scatter_add::<f64>(&ins[0], &ins[1], *axis, out_shape, out, scratch),
            _ => return Err(unsupported(op, dtype)),
        },
        Op::ArgMax(axis) | Op::ArgMin(axis) => {
            let max = matches!(op, Op::ArgMax(_));
            let x = &ins[0];
            let o = out as *mut i64;
            match x.dtype {
                DType::F32 => arg_extreme::<f32>(max, x, *axis, o),
                DType::F64 => arg_extreme::<f64>(max, x, *axis, o),
                DType::I32 => arg_extreme::<i32>(max, x, *axis, o),
                DType::I64 => arg_extreme::<i64>(max, x, *axis, o),
                DType::BF16 => arg_extreme::<half::bf16>(max, x, *axis, o),
                DType::F16 => arg_extreme::<half::f16>(max, x, *axis, o),
                DType::Bool => return Err(unsupported(op, x.dtype)),
            }
        }
        _ => return Err(unsupported(op, dtype)),
    }
    Ok(())
}

fn unsupported(op: &Op, dtype: DType) -> Error {
    Error::verify(format!(
        "`{}` on {dtype} is not a native library step (bug in the partition)",
        op.name()
    ))
}

pub(crate) fn contiguous(s: &[usize]) -> Vec<i64> {
    shape::strides(s).into_iter().map(|x| x as i64).collect()
}

/// The bytes `interp::write_literal` stores for `l` in an element of `dtype`.
fn literal_bits(l: Literal, dtype: DType) -> u64 {
    match dtype {
        DType::F32 => (l.as_f64(dtype) as f32).to_bits() as u64,
        DType::F64 => l.as_f64(dtype).to_bits(),
        DType::I32 => l.as_i64(dtype) as i32 as u32 as u64,
        DType::I64 => l.as_i64(dtype) as u64,
        DType::Bool => (l.as_i64(dtype) != 0) as u64,
        DType::BF16 => crate::dtype::bf16_of(l.as_f64(dtype)).to_bits() as u64,
        DType::F16 => crate::dtype::f16_of(l.as_f64(dtype)).to_bits() as u64,
    }
}

/// A pointer shared by the chunks of a parallel loop (they touch disjoint elements).
#[derive(Clone, Copy)]
struct Shared(*mut u8);
// SAFETY: the loops below write disjoint ranges through it and only read elsewhere.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

/// Bytes moved below which a step runs on the calling thread (a parallel dispatch costs a
/// few microseconds).
const PARALLEL_MIN_BYTES: usize = 1 << 20;

/// `f(begin, end)` over `0..count`, split across rayon's pool when `work_bytes` is large.
pub(super) fn par_for(count: usize, work_bytes: usize, f: impl Fn(usize, usize) + Sync) {
    let threads = rayon::current_num_threads();
    if work_bytes < PARALLEL_MIN_BYTES || count < 2 || threads < 2 {
        f(0, count);
        return;
    }
    let chunks = (threads * 2).min(count);
    let per = count.div_ceil(chunks);
    (0..chunks).into_par_iter().for_each(|c| {
        let (lo, hi) = (c * per, ((c + 1) * per).min(count));
        if lo < hi {
            f(lo, hi)
        }
    });
}

/// The element offset of flat (row-major) index `i` of `shape` under `strides`.
fn offset_of(mut i: usize, shape: &[usize], strides: &[i64]) -> i64 {
    let mut off = 0;
    for d in (0..shape.len()).rev() {
        let n = shape[d];
        off += (i % n) as i64 * strides[d];
        i /= n;
    }
    off
}

/// `(extents, a strides, b strides)` with extent-1 dims dropped and dims merged where both
/// maps are contiguous across them: the fewest loops that walk both maps.
fn collapse(shape: &[usize], a: &[i64], b: &[i64]) -> (Vec<usize>, Vec<i64>, Vec<i64>) {
    let (mut n, mut sa, mut sb) = (Vec::new(), Vec::new(), Vec::new());
    for d in 0..shape.len() {
        if shape[d] == 1 {
            continue;
        }
        match (n.last_mut(), sa.last(), sb.last()) {
            (Some(m), Some(&pa), Some(&pb))
                if pa == a[d] * shape[d] as i64 && pb == b[d] * shape[d] as i64 =>
            {
                *m *= shape[d];
                *sa.last_mut().unwrap() = a[d];
                *sb.last_mut().unwrap() = b[d];
            }
            _ => {
                n.push(shape[d]);
                sa.push(a[d]);
                sb.push(b[d]);
            }
        }
    }
    (n, sa, sb)
}

/// Copy the elements of `shape` (elements of `size` bytes) from `src` under `ss` to `dst`
/// under `ds` (strides in elements), split over the outermost loop when large.
///
/// # Safety
/// Both maps stay inside live buffers; they do not overlap.
pub(crate) unsafe fn copy(
    size: usize,
    shape: &[usize],
    src: *const u8,
    ss: &[i64],
    dst: *mut u8,
    ds: &[i64],
) {
    let numel = shape::numel(shape);
    if numel == 0 {
        return;
    }
    let (n, a, b) = collapse(shape, ss, ds);
    if n.len() < 2 {
        copy_dims(size, &n, &a, &b, src, dst);
        return;
    }
    let (s, d) = (Shared(src as *mut u8), Shared(dst));
    let sz = size as isize;
    par_for(n[0], numel * size, |lo, hi| {
        let (s, d) = (s, d);
        for i in lo..hi {
            let (src, dst) = (
                s.0.wrapping_offset(i as isize * a[0] as isize * sz),
                d.0.wrapping_offset(i as isize * b[0] as isize * sz),
            );
            // SAFETY: row i of both maps, inside them.
            unsafe { copy_dims(size, &n[1..], &a[1..], &b[1..], src, dst) };
        }
    });
}

/// One copy over collapsed dims, recursively (no allocation); the innermost dim is one
/// `memcpy` when both sides are contiguous there.
///
/// # Safety
/// As `copy`'s.
unsafe fn copy_dims(size: usize, n: &[usize], a: &[i64], b: &[i64], src: *const u8, dst: *mut u8) {
    let sz = size as isize;
    match n.len() {
        0 => std::ptr::copy_nonoverlapping(src, dst, size),
        1 if a[0] == 1 && b[0] == 1 => std::ptr::copy_nonoverlapping(src, dst, n[0] * size),
        1 => {
            let (sa, sb) = (a[0] as isize, b[0] as isize);
            macro_rules! run {
                ($t:ty) => {{
                    let (s, d) = (src as *const $t, dst as *mut $t);
                    for i in 0..n[0] as isize {
                        *d.wrapping_offset(i * sb) = *s.wrapping_offset(i * sa);
                    }
                }};
            }
            match size {
                1 => run!(u8),
                2 => run!(u16),
                4 => run!(u32),
                8 => run!(u64),
                _ => {
                    for i in 0..n[0] as isize {
                        std::ptr::copy_nonoverlapping(
                            src.wrapping_offset(i * sa * sz),
                            dst.wrapping_offset(i * sb * sz),
                            size,
                        );
                    }
                }
            }
        }
        _ => {
            for i in 0..n[0] as isize {
                copy_dims(
                    size,
                    &n[1..],
                    &a[1..],
                    &b[1..],
                    src.wrapping_offset(i * a[0] as isize * sz),
                    dst.wrapping_offset(i * b[0] as isize * sz),
                );
            }
        }
    }
}

/// Every element of a contiguous buffer set to the element whose bytes are `bits`.
///
/// # Safety
/// `out` is valid for `numel` elements of `size` bytes.
unsafe fn fill(size: usize, bits: u64, out: *mut u8, numel: usize) {
    match size {
        1 => std::ptr::write_bytes(out, bits as u8, numel),
        2 => std::slice::from_raw_parts_mut(out as *mut u16, numel).fill(bits as u16),
        4 => std::slice::from_raw_parts_mut(out as *mut u32, numel).fill(bits as u32),
        8 => std::slice::from_raw_parts_mut(out as *mut u64, numel).fill(bits),
        _ => unreachable!("element sizes are 1, 2, 4 or 8"),
    }
}

/// `out[.., k, ..] = k` along `axis`.
///
/// # Safety
/// `out` is valid for the elements of `s`.
unsafe fn iota<T: Copy>(s: &[usize], axis: usize, out: *mut T, of: impl Fn(usize) -> T) {
    let (outer, n) = (s[..axis].iter().product::<usize>(), s[axis]);
    let inner: usize = s[axis + 1..].iter().product();
    let o = std::slice::from_raw_parts_mut(out, outer * n * inner);
    for (r, row) in o.chunks_exact_mut(inner).enumerate() {
        row.fill(of(r % n));
    }
}

/// Element `j` of an index operand (i32 or i64), row-major.
///
/// # Safety
/// `j` is below the operand's element count.
unsafe fn read_index(idx: &Operand, j: usize) -> i64 {
    let off = offset_of(j, idx.shape, idx.strides) as isize;
    match idx.dtype {
        DType::I32 => *(idx.ptr as *const i32).wrapping_offset(off) as i64,
        _ => *(idx.ptr as *const i64).wrapping_offset(off),
    }
}

/// `take(x, idx)` along `axis`: row `(o, j)` of the output is `x[o, clamp(idx[j]), ..]`
/// (`shape::clamp_index`); an empty axis gives zeros.
///
/// # Safety
/// As `run`'s.
unsafe fn take(size: usize, x: &Operand, idx: &Operand, axis: usize, out: *mut u8, numel: usize) {
    let n = x.shape[axis];
    if n == 0 {
        std::ptr::write_bytes(out, 0, numel * size);
        return;
    }
    let (outer_shape, inner_shape) = (&x.shape[..axis], &x.shape[axis + 1..]);
    let (outer_st, inner_st) = (&x.strides[..axis], &x.strides[axis + 1..]);
    let m = shape::numel(idx.shape);
    let inner = shape::numel(inner_shape);
    let (dims, sa, sb) = collapse(inner_shape, inner_st, &contiguous(inner_shape));
    let (s, d) = (Shared(x.ptr as *mut u8), Shared(out));
    let sz = size as isize;
    let rows = shape::numel(outer_shape) * m;
    par_for(rows, numel * size, |lo, hi| {
        let (s, d) = (s, d);
        for r in lo..hi {
            let (o, j) = (r / m, r % m);
            // SAFETY: j < m; the row read is inside x, the row written inside out.
            unsafe {
                let k = crate::shape::clamp_index(read_index(idx, j), n) as i64;
                let off = offset_of(o, outer_shape, outer_st) + k * x.strides[axis];
                copy_dims(
                    size,
                    &dims,
                    &sa,
                    &sb,
                    s.0.wrapping_offset(off as isize * sz),
                    d.0.wrapping_offset((r * inner) as isize * sz),
                );
            }
        }
    });
}

/// A float the accumulation of `scatter_add` reads and writes (in f64, as the interpreter).
trait Float: Copy + Send + Sync {
    fn widen(self) -> f64;
    fn from_f64(v: f64) -> Self;
}
impl Float for f32 {
    fn widen(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}
impl Float for f64 {
    fn widen(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
}

/// Elements of an output row `scatter_add` accumulates at once (an f64 block on the stack).
const BLOCK: usize = 64;

/// Whether `scatter_add` groups its `m` indices by sorting them (16 bytes of scratch per
/// index) rather than by a counting sort over the `n` target rows (8 bytes per row and per
/// index): when the targets far outnumber the indices, as the flat `[rows · classes]`
/// one-hot part of a cross-entropy gradient does (a counting sort there took 8 bytes per
/// logit: 3 GB for 8,192 rows of a 50,257-token vocabulary).
fn scatter_sorts(n: usize, m: usize) -> bool {
    n > 2 * m + 16
}

/// `scatter_add`'s scratch bytes for `n` target rows and `m` indices.
fn scatter_scratch(n: usize, m: usize) -> usize {
    if scatter_sorts(n, m) {
        m * 16
    } else {
        (n + 1 + m) * std::mem::size_of::<i64>()
    }
}

/// `scatter_add(vals, idx)` along `axis`: zeros of `out_shape` with row `j` of `vals` added
/// at row `clamp(idx[j])`, summed in f64 in the order of `j` and rounded once, as the
/// interpreter sums. The indices are grouped by target row first, into `scratch` (a stable
/// counting sort, or a sort of `(row, j)` pairs when the rows far outnumber the indices:
/// `scatter_sorts`), so each output row is written once, by one thread.
///
/// # Safety
/// As `run`'s.
unsafe fn scatter_add<T: Float>(
    vals: &Operand,
    idx: &Operand,
    axis: usize,
    out_shape: &[usize],
    out: *mut u8,
    scratch: *mut u8,
) {
    let n = out_shape[axis];
    let m = shape::numel(idx.shape);
    let ri = idx.shape.len();
    let outer_shape = &out_shape[..axis];
    let inner_shape = &out_shape[axis + 1..];
    let inner = shape::numel(inner_shape);
    let outer = shape::numel(outer_shape);
    let inner_st = &vals.strides[axis + ri..];
    let (dims, st, _) = collapse(inner_shape, inner_st, inner_st);
    let rows = Rows {
        outer_shape,
        outer_st: &vals.strides[..axis],
        inner_shape,
        inner_st,
        inner,
        single: dims.len() <= 1,
        step: st.first().copied().unwrap_or(0),
    };
    let idx_st = &vals.strides[axis..axis + ri];
    let (v, d) = (Shared(vals.ptr as *mut u8), Shared(out));
    let work = (m * outer + outer * n) * inner * 8;
    if scatter_sorts(n, m) {
        let pairs = std::slice::from_raw_parts_mut(scratch as *mut [u64; 2], m);
        for (j, p) in pairs.iter_mut().enumerate() {
            *p = [
                crate::shape::clamp_index(read_index(idx, j), n) as u64,
                j as u64,
            ];
        }
        // (row, position): a total order, so each row's indices stay in index order.
        pairs.sort_unstable();
        let pairs = &*pairs;
        // Rows no index lands on are zero.
        fill(std::mem::size_of::<T>(), 0, out, outer * n * inner);
        par_for(m, work, |lo, hi| {
            let (v, d) = (v, d);
            // The groups that start in lo..hi.
            let mut p = lo;
            while p < hi && p > 0 && pairs[p][0] == pairs[p - 1][0] {
                p += 1;
            }
            while p < hi {
                let k = pairs[p][0];
                let e = p + pairs[p..].iter().take_while(|q| q[0] == k).count();
                let group = pairs[p..e]
                    .iter()
                    .map(|q| offset_of(q[1] as usize, idx.shape, idx_st));
                for o in 0..outer {
                    rows.sum_into::<T>(
                        v.0 as *const T,
                        d.0 as *mut T,
                        o,
                        k as usize,
                        n,
                        group.clone(),
                    );
                }
                p = e;
            }
        });
        return;
    }
    // starts[k]..starts[k + 1]: the positions in `order` of the indices landing on row k;
    // order holds the element offset in `vals` of each index's row, in index order.
    let starts = std::slice::from_raw_parts_mut(scratch as *mut usize, n + 1);
    let order = std::slice::from_raw_parts_mut((scratch as *mut i64).add(n + 1), m);
    starts.fill(0);
    for j in 0..m {
        starts[crate::shape::clamp_index(read_index(idx, j), n) + 1] += 1;
    }
    for k in 0..n {
        starts[k + 1] += starts[k];
    }
    // Place each index at its row's cursor (starts[k], moving on); then starts[k] is the
    // end of row k and the start of row k + 1, so the starts shift by one.
    for j in 0..m {
        let k = crate::shape::clamp_index(read_index(idx, j), n);
        order[starts[k]] = offset_of(j, idx.shape, idx_st);
        starts[k] += 1;
    }
    for k in (0..n).rev() {
        starts[k + 1] = starts[k];
    }
    starts[0] = 0;
    let (starts, order) = (&*starts, &*order);
    par_for(outer * n, work, |lo, hi| {
        let (v, d) = (v, d);
        for r in lo..hi {
            let (o, k) = (r / n, r % n);
            let group = order[starts[k]..starts[k + 1]].iter().copied();
            rows.sum_into::<T>(v.0 as *const T, d.0 as *mut T, o, k, n, group);
        }
    });
}

/// How `scatter_add` reads a row of `vals` and writes a row of its output.
struct Rows<'a> {
    outer_shape: &'a [usize],
    outer_st: &'a [i64],
    inner_shape: &'a [usize],
    inner_st: &'a [i64],
    inner: usize,
    /// Whether the inner dims of `vals` collapse to one strided run, of this stride.
    single: bool,
    step: i64,
}

impl Rows<'_> {
    /// Output row `(o, k)` (of `n` rows per outer index) = the sum of the rows of `vals`
    /// at the offsets of `group` (in that order, in f64, rounded once).
    ///
    /// # Safety
    /// The offsets address rows of `vals`; `out` is the contiguous output.
    unsafe fn sum_into<T: Float>(
        &self,
        v: *const T,
        out: *mut T,
        o: usize,
        k: usize,
        n: usize,
        group: impl Iterator<Item = i64> + Clone,
    ) {
        let (single, step) = (self.single, self.step);
        let base = offset_of(o, self.outer_shape, self.outer_st);
        let r = o * n + k;
        let mut rel = [0i64; BLOCK];
        let mut acc = [0f64; BLOCK];
        let mut e0 = 0;
        while e0 < self.inner {
            let len = BLOCK.min(self.inner - e0);
            for (e, r) in rel[..len].iter_mut().enumerate() {
                *r = if single {
                    (e0 + e) as i64 * step
                } else {
                    offset_of(e0 + e, self.inner_shape, self.inner_st)
                };
            }
            acc[..len].fill(0.0);
            for g in group.clone() {
                let row = v.wrapping_offset((base + g) as isize);
                for (a, &o) in acc[..len].iter_mut().zip(&rel[..len]) {
                    // SAFETY: an element of `vals` (its map covers these indices).
                    *a += unsafe { *row.wrapping_offset(o as isize) }.widen();
                }
            }
            for (e, &a) in acc[..len].iter().enumerate() {
                // SAFETY: element (r, e0 + e) of the contiguous output.
                unsafe { *out.add(r * self.inner + e0 + e) = T::from_f64(a) };
            }
            e0 += len;
        }
    }
}

/// An element `argmax`/`argmin` compares: floats with NaN as the extreme (the first NaN
/// wins), integers by value; the first extreme wins ties.
trait Key: Copy + Send + Sync {
    fn better(max: bool, a: Self, best: Self) -> bool;
}
macro_rules! float_key {
    ($t:ty) => {
        impl Key for $t {
            fn better(max: bool, a: Self, b: Self) -> bool {
                !b.is_nan() && (a.is_nan() || if max { a > b } else { a < b })
            }
        }
    };
}
float_key!(f32);
float_key!(f64);
float_key!(half::bf16);
float_key!(half::f16);
macro_rules! int_key {
    ($t:ty) => {
        impl Key for $t {
            fn better(max: bool, a: Self, b: Self) -> bool {
                if max {
                    a > b
                } else {
                    a < b
                }
            }
        }
    };
}
int_key!(i32);
int_key!(i64);

/// Index of the first maximum (or minimum) along `axis` of `x`, for every other position.
///
/// # Safety
/// As `run`'s (`out` holds `numel(x) / x.shape[axis]` i64s).
unsafe fn arg_extreme<T: Key>(max: bool, x: &Operand, axis: usize, out: *mut i64) {
    let n = x.shape[axis];
    let sk = x.strides[axis] as isize;
    let mut rest_shape = x.shape.to_vec();
    let mut rest_st = x.strides.to_vec();
    rest_shape.remove(axis);
    rest_st.remove(axis);
    let count = shape::numel(&rest_shape);
    let (s, d) = (Shared(x.ptr as *mut u8), Shared(out as *mut u8));
    let size = std::mem::size_of::<T>();
    par_for(count, count * n * size, |lo, hi| {
        let (s, d) = (s, d);
        let (x, out) = (s.0 as *const T, d.0 as *mut i64);
        for i in lo..hi {
            let p = x.wrapping_offset(offset_of(i, &rest_shape, &rest_st) as isize);
            // SAFETY: the n elements along the axis at position i are inside x.
            unsafe {
                let mut best = 0usize;
                let mut bv = *p;
                for k in 1..n {
                    let v = *p.wrapping_offset(k as isize * sk);
                    if T::better(max, v, bv) {
                        best = k;
                        bv = v;
                    }
                }
                *out.add(i) = best as i64;
            }
        }
    });
}
