//! Library steps: ops a program runs outside Cranelift, on materialised
//! inputs. Matmul calls a tuned GEMM (`matrixmultiply`) writing straight into
//! the output buffer; the other structural ops (concat, pad, take, iota,
//! arg-reductions) are byte-copying loops of the interpreter.

use crate::ir::Op;
use crate::{interp, shape, DType, Error, Tensor};

/// An operand read through an affine map: element `i` of `shape` is at
/// `ptr + Σ i_d * strides[d]` elements.
pub struct Strided {
    pub ptr: *mut u8,
    pub shape: Vec<usize>,
    pub strides: Vec<i64>,
}

/// `a[..., m, k] @ b[..., k, n]` over strided operands (transposed or sliced
/// views are read in place: the GEMM takes any row and column strides),
/// batch dims broadcast, written contiguously into `out`.
///
/// # Safety
/// The operands' maps must stay inside live buffers; `out` must be valid for
/// the result and overlap neither operand.
pub unsafe fn matmul_strided(
    a: &Strided,
    b: &Strided,
    out_shape: &[usize],
    dtype: DType,
    out: *mut u8,
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
    let mut idx = vec![0usize; batch.len()];
    for bi in 0..shape::numel(batch) {
        let ao: i64 = idx.iter().zip(&sa).map(|(&i, &s)| i as i64 * s).sum();
        let bo: i64 = idx.iter().zip(&sb).map(|(&i, &s)| i as i64 * s).sum();
        let pa = a.ptr.wrapping_offset(ao as isize * size);
        let pb = b.ptr.wrapping_offset(bo as isize * size);
        let pc = out.wrapping_offset((bi * m * n) as isize * size);
        match dtype {
            DType::F32 => matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                pa as *const f32,
                rsa,
                csa,
                pb as *const f32,
                rsb,
                csb,
                0.0,
                pc as *mut f32,
                n as isize,
                1,
            ),
            DType::F64 => matrixmultiply::dgemm(
                m,
                k,
                n,
                1.0,
                pa as *const f64,
                rsa,
                csa,
                pb as *const f64,
                rsb,
                csb,
                0.0,
                pc as *mut f64,
                n as isize,
                1,
            ),
            _ => unreachable!("matmul is float-only (checked at trace time)"),
        }
        for d in (0..batch.len()).rev() {
            idx[d] += 1;
            if idx[d] < batch[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Run `op` writing its result into `out` (`numel(out_shape) * size` bytes).
///
/// # Safety
/// `out` must be valid for writes of the result's size and not alias the inputs.
pub unsafe fn run_into(
    op: &Op,
    ins: &[&Tensor],
    out_shape: &[usize],
    dtype: DType,
    out: *mut u8,
) -> Result<(), Error> {
    match op {
        Op::Matmul => {
            matmul_into(ins[0], ins[1], out_shape, dtype, out);
            Ok(())
        }
        _ => {
            let t = interp::eval_op(op, ins, out_shape, dtype)?;
            let src = t.buffer().unwrap().bytes();
            std::ptr::copy_nonoverlapping(src.as_ptr(), out, src.len());
            Ok(())
        }
    }
}

/// `a[..., m, k] @ b[..., k, n]` with broadcast batch dims, one GEMM call per
/// batch element, written straight into `pc`.
///
/// # Safety
/// `pc` must be valid for the result's bytes and not alias the operands.
unsafe fn matmul_into(a: &Tensor, b: &Tensor, out_shape: &[usize], dtype: DType, pc: *mut u8) {
    let r = out_shape.len();
    let (m, n) = (out_shape[r - 2], out_shape[r - 1]);
    let k = a.shape()[a.ndim() - 1];
    let batch = &out_shape[..r - 2];
    let a_batch = shape::broadcast_strides(&a.shape()[..a.ndim() - 2], batch);
    let b_batch = shape::broadcast_strides(&b.shape()[..b.ndim() - 2], batch);
    let (pa, pb) = (a.buffer().unwrap().as_ptr(), b.buffer().unwrap().as_ptr());
    let mut idx = vec![0usize; batch.len()];
    for bi in 0..shape::numel(batch) {
        let ao = idx.iter().zip(&a_batch).map(|(i, s)| i * s).sum::<usize>() * m * k;
        let bo = idx.iter().zip(&b_batch).map(|(i, s)| i * s).sum::<usize>() * k * n;
        let co = bi * m * n;
        let (rs_a, rs_b, rs_c) = (k as isize, n as isize, n as isize);
        // SAFETY: offsets and strides stay inside the operands' buffers (their
        // shapes were checked at trace time and against the signature); the
        // output is the caller's; beta = 0 means C is not read.
        {
            match dtype {
                DType::F32 => matrixmultiply::sgemm(
                    m,
                    k,
                    n,
                    1.0,
                    (pa as *const f32).add(ao),
                    rs_a,
                    1,
                    (pb as *const f32).add(bo),
                    rs_b,
                    1,
                    0.0,
                    (pc as *mut f32).add(co),
                    rs_c,
                    1,
                ),
                DType::F64 => matrixmultiply::dgemm(
                    m,
                    k,
                    n,
                    1.0,
                    (pa as *const f64).add(ao),
                    rs_a,
                    1,
                    (pb as *const f64).add(bo),
                    rs_b,
                    1,
                    0.0,
                    (pc as *mut f64).add(co),
                    rs_c,
                    1,
                ),
                _ => unreachable!("matmul is float-only (checked at trace time)"),
            }
        }
        for d in (0..batch.len()).rev() {
            idx[d] += 1;
            if idx[d] < batch[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}
