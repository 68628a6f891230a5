//! Replaying a graph through the Tensor API: inside a trace this appends the
//! graph's nodes to that trace (inlining it); eagerly it evaluates them.

use crate::ir::{Graph, Node, Op};
use crate::tensor::ops::apply;
use crate::{trace, SourceLoc, Tensor};
use std::panic::Location;

/// The value of every node of `g` given its parameters and captured tensors.
#[track_caller]
pub fn replay(g: &Graph, params: &[Tensor], captured: &[Tensor]) -> Vec<Tensor> {
    let here = Location::caller();
    let mut vals: Vec<Tensor> = Vec::with_capacity(g.nodes.len());
    // Outputs of multi-output nodes beyond the first (read by `get`).
    let mut extra: std::collections::HashMap<usize, Vec<Tensor>> = Default::default();
    for (i, n) in g.nodes.iter().enumerate() {
        let t = match &n.op {
            Op::Get(k) => extra[&n.inputs[0].index()][k - 1].clone(),
            Op::Param(k) => params[*k].clone(),
            Op::Captured(k) => captured[*k].clone(),
            _ => {
                let ins: Vec<Tensor> = n.inputs.iter().map(|x| vals[x.index()].clone()).collect();
                let mut outs = replay_node(n, &ins, n.loc.unwrap_or(here));
                let first = outs.remove(0);
                if !outs.is_empty() {
                    extra.insert(i, outs);
                }
                first
            }
        };
        vals.push(t);
    }
    vals
}

/// Node `n` (not a `param`, `captured` or `get`) applied to `ins`: all its
/// results (one, or every output of a multi-output node).
pub(crate) fn replay_node(n: &Node, ins: &[Tensor], loc: SourceLoc) -> Vec<Tensor> {
    let tracing = trace::current_trace().is_some();
    let refs: Vec<&Tensor> = ins.iter().collect();
    match &n.op {
        op if op.is_control() => crate::control::subgraph::push_control(op.clone(), ins, loc),
        Op::AttentionGrad(spec) => {
            crate::tensor::attention::attention_grad_parts(*spec, &refs, loc).to_vec()
        }
        // Constants and iotas stay nodes when tracing (never a filled
        // buffer captured into the trace).
        Op::Const(l) if tracing => vec![trace::push_const(*l, n.shape.clone(), n.dtype, loc)],
        Op::Const(l) => vec![Tensor::from_array(crate::array::Array::filled(
            l.cast(n.dtype),
            &n.shape,
            n.dtype,
        ))],
        op if n.inputs.is_empty() && tracing => {
            vec![trace::push_node(
                op.clone(),
                &[],
                n.shape.clone(),
                n.dtype,
                loc,
            )]
        }
        op => vec![apply(op.clone(), &refs, n.shape.clone(), n.dtype, loc)],
    }
}
