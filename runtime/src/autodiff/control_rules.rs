//! Reverse-mode rules of control flow, written with the control-flow ops
//! themselves (so the backward of a staged `if` is a staged `if`, and the
//! backward of a `scan` is a reverse `scan`):
//!
//! - `cond`: a `cond` on the same predicate whose branches replay their
//!   forward branch and run its backward (the branch's values are
//!   recomputed in the backward branch, never saved);
//! - `scan`: a forward `scan` that stacks the carry entering each step (or,
//!   under a budget, each segment: `scan_vjp.rs`), then a reverse `scan`
//!   running the body's backward at each step, accumulating the
//!   invariants' cotangents;
//! - `while`: not reverse-differentiable (its trip count is not known before
//!   it runs), as in JAX: the error says to use a `for` over a range / scan.

use super::scan_vjp::graph_vjp;
use crate::control::subgraph::push_control;
use crate::ir::Op;
use crate::trace::fail;
use crate::{Error, SourceLoc, Tensor};

fn zeros_of(outs: &[Option<Tensor>], types: &[(Vec<usize>, crate::DType)]) -> Vec<Tensor> {
    outs.iter()
        .zip(types)
        .map(|(c, (s, d))| c.clone().unwrap_or_else(|| Tensor::zeros(s, *d)))
        .collect()
}

/// Cotangents of a control-flow node's operands.
pub(crate) fn control_vjp(
    op: &Op,
    ins: &[Tensor],
    outs: &[Option<Tensor>],
    needs: &[bool],
    loc: SourceLoc,
) -> Vec<Option<Tensor>> {
    let _ = needs;
    match op {
        Op::Cond(c) => {
            let types = op.control_outputs();
            let cts = zeros_of(outs, &types);
            let operands = ins[1..].to_vec();
            let branch = move |then: bool, (xs, cts): (Vec<Tensor>, Vec<Tensor>)| {
                let g = &c.branches[then as usize];
                let seeds: Vec<Option<Tensor>> = cts.into_iter().map(Some).collect();
                (graph_vjp(g, &xs, &seeds),)
            };
            let (grads,) = crate::control::cond::staged_cond(
                &ins[0],
                &["the gradient"],
                (operands, cts),
                branch,
                loc,
            );
            let mut res = vec![None];
            res.extend(grads.into_iter().map(Some));
            res
        }
        Op::Scan(sc) => {
            let types = op.control_outputs();
            super::scan_vjp::scan_vjp(sc, ins, zeros_of(outs, &types), loc)
        }
        Op::While(_) => fail(
            Error::new(
                crate::ErrorKind::Argument,
                "a `while` loop is not reverse-differentiable (its trip count is not known before it runs); loop over a range with static bounds (`fori_loop`, `for i in 0..n` on tensors, or `scan`) to differentiate",
            )
            .at(loc),
        ),
        _ => {
            let _ = push_control;
            unreachable!("not a control-flow op")
        }
    }
}
