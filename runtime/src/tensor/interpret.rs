//! The reference interpreter on tensors: `interp` computes on concrete arrays, these take
//! and return concrete `Tensor`s (the differential tests' oracle, tools reading a graph).

use crate::array::Array;
use crate::ir::{Graph, Op};
use crate::{DType, Error, Tensor};

/// The arrays of concrete tensors (a traced one is an argument error naming `what`).
fn arrays<'t>(ts: impl IntoIterator<Item = &'t Tensor>, what: &str) -> Result<Vec<Array>, Error> {
    (ts.into_iter().enumerate())
        .map(|(i, t)| {
            t.to_array().ok_or_else(|| {
                Error::argument(format!(
                    "the interpreter computes on concrete tensors: {what} {i} is traced"
                ))
            })
        })
        .collect()
}

fn tensors(arrays: Vec<Array>) -> Vec<Tensor> {
    arrays.into_iter().map(Tensor::from_array).collect()
}

/// Evaluate a whole graph, node by node (`interp::eval_graph`).
pub fn eval_graph(g: &Graph, params: &[Tensor], captured: &[Tensor]) -> Result<Vec<Tensor>, Error> {
    let (params, captured) = (
        arrays(params, "parameter")?,
        arrays(captured, "captured tensor")?,
    );
    crate::interp::eval_graph(g, &params, &captured).map(tensors)
}

/// Evaluate one op on operands of its exact shapes and dtypes (`interp::eval_op`).
pub fn eval_op(op: &Op, ins: &[&Tensor], shape: &[usize], dtype: DType) -> Result<Tensor, Error> {
    let ins = arrays(ins.iter().copied(), "operand")?;
    let refs: Vec<&Array> = ins.iter().collect();
    crate::interp::eval_op(op, &refs, shape, dtype).map(Tensor::from_array)
}
