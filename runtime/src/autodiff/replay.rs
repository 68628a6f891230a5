//! Replaying a graph through the Tensor API: inside a trace this appends the
//! graph's nodes to that trace (inlining it); eagerly it evaluates them.

use crate::ir::{Graph, Op};
use crate::tensor::ops::apply;
use crate::{trace, Tensor};
use std::panic::Location;

/// The value of every node of `g` given its parameters and captured tensors.
#[track_caller]
pub fn replay(g: &Graph, params: &[Tensor], captured: &[Tensor]) -> Vec<Tensor> {
    let here = Location::caller();
    let tracing = trace::current_trace().is_some();
    let mut vals: Vec<Tensor> = Vec::with_capacity(g.nodes.len());
    // Outputs of control-flow nodes beyond the first (read by `get`).
    let mut extra: std::collections::HashMap<usize, Vec<Tensor>> = Default::default();
    for (i, n) in g.nodes.iter().enumerate() {
        let loc = n.loc.unwrap_or(here);
        let t = match &n.op {
            op if op.is_control() => {
                let ins: Vec<Tensor> = n.inputs.iter().map(|x| vals[x.index()].clone()).collect();
                let mut outs = crate::control::subgraph::push_control(op.clone(), &ins, loc);
                let first = outs.remove(0);
                extra.insert(i, outs);
                first
            }
            Op::AttentionGrad(spec) => {
                let ins: Vec<&Tensor> = n.inputs.iter().map(|x| &vals[x.index()]).collect();
                let [dq, dk, dv] = crate::tensor::attention::attention_grad_parts(*spec, &ins, loc);
                extra.insert(i, vec![dk, dv]);
                dq
            }
            Op::Get(k) => extra[&n.inputs[0].index()][k - 1].clone(),
            Op::Param(k) => params[*k].clone(),
            Op::Captured(k) => captured[*k].clone(),
            // Constants and iotas stay nodes when tracing (never a filled
            // buffer captured into the trace).
            Op::Const(l) if tracing => trace::push_const(*l, n.shape.clone(), n.dtype, loc),
            Op::Const(l) => crate::interp::filled(l.cast(n.dtype), &n.shape, n.dtype),
            op if n.inputs.is_empty() && tracing => {
                trace::push_node(op.clone(), &[], n.shape.clone(), n.dtype, loc)
            }
            op => {
                let ins: Vec<&Tensor> = n.inputs.iter().map(|x| &vals[x.index()]).collect();
                apply(op.clone(), &ins, n.shape.clone(), n.dtype, loc)
            }
        };
        vals.push(t);
    }
    vals
}
