//! Library steps: ops a program runs outside Cranelift, on materialised
//! inputs. For now these are the interpreter's implementations (correct, not
//! fast); matmul moves to a tuned GEMM and reductions to compiled kernels.

use crate::ir::Op;
use crate::{interp, DType, Error, Tensor};

pub fn run(op: &Op, ins: &[&Tensor], shape: &[usize], dtype: DType) -> Result<Tensor, Error> {
    interp::eval_op(op, ins, shape, dtype)
}
