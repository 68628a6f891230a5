//! What a reduction computes, for every backend: the binary op it folds with, its identity,
//! the dtype its blocks and its running total are kept in, and whether NaN is tracked apart
//! from the accumulators. The Cranelift kernels (`reduce.rs`, `row.rs`) build from these;
//! the x86 kernels spell them (and take only the reductions whose rules they spell).

use crate::ir::{BinaryOp, ReduceOp};
use crate::{DType, Literal};

/// The binary op a reduction folds with.
pub fn binop(op: ReduceOp) -> BinaryOp {
    match op {
        ReduceOp::Sum => BinaryOp::Add,
        ReduceOp::Prod => BinaryOp::Mul,
        ReduceOp::Max => BinaryOp::Max,
        ReduceOp::Min => BinaryOp::Min,
    }
}

/// The value a reduction over nothing gives.
pub fn identity(op: ReduceOp, d: DType) -> Literal {
    match (op, d.is_float()) {
        (ReduceOp::Sum, _) => Literal::Int(0),
        (ReduceOp::Prod, _) => Literal::Int(1),
        (ReduceOp::Max, true) => Literal::Float(f64::NEG_INFINITY),
        (ReduceOp::Min, true) => Literal::Float(f64::INFINITY),
        (ReduceOp::Max, false) => Literal::Int(if d == DType::I32 {
            i32::MIN as i64
        } else {
            i64::MIN
        }),
        (ReduceOp::Min, false) => Literal::Int(if d == DType::I32 {
            i32::MAX as i64
        } else {
            i64::MAX
        }),
    }
}

/// The dtype accumulators are kept in: f64 for f32 sums and products (and for the 16-bit
/// floats, which compute in f32), the compute dtype otherwise.
pub fn acc_dtype(op: ReduceOp, d: DType) -> DType {
    let d = d.compute();
    if d == DType::F32 && matches!(op, ReduceOp::Sum | ReduceOp::Prod) {
        DType::F64
    } else {
        d
    }
}

/// The dtype a block of a row reduction is folded in: f64 lanes for f32
/// products, the input dtype otherwise. A product leaves the f32 range after
/// a few dozen factors where the f64 product the interpreter keeps does not
/// (a block product of inf then meeting a 0 gave NaN where the interpreter
/// gives 0, and the lanes' partial products depend on the vector width); f32
/// sums only leave the range from values near f32::MAX, so they keep f32
/// blocks for speed. The 16-bit floats fold as f32.
pub fn block_dtype(op: ReduceOp, d: DType) -> DType {
    let d = d.compute();
    if d == DType::F32 && op == ReduceOp::Prod {
        DType::F64
    } else {
        d
    }
}

/// Whether a reduction tracks NaN apart from its accumulators (float max
/// and min: see `acc_step`).
pub fn tracks_nan(op: ReduceOp, d: DType) -> bool {
    d.is_float() && matches!(op, ReduceOp::Max | ReduceOp::Min)
}
