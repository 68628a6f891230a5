//! Reverse-mode rules of control flow, written with the control-flow ops
//! themselves (so the backward of a staged `if` is a staged `if`, and the
//! backward of a `scan` is a reverse `scan`):
//!
//! - `cond`: a `cond` on the same predicate whose branches replay their
//!   forward branch and run its backward (the branch's values are
//!   recomputed in the backward branch, never saved);
//! - `scan`: one forward `scan` that stacks the carry entering each step
//!   (one extra forward pass: residuals are the carries only, like a scan
//!   with a checkpointed body), then a reverse `scan` running the body's
//!   backward at each step, accumulating the invariants' cotangents;
//! - `while`: not reverse-differentiable (its trip count is not known before
//!   it runs), as in JAX: the error says to use a `for` over a range / scan.

use super::{backward, replay};
use crate::control::subgraph::{push_control, scan_tree_dir};
use crate::ir::{Graph, Op};
use crate::trace::fail;
use crate::{Error, SourceLoc, Tensor};

/// Cotangents of all the graph's parameters, given seeds for its outputs
/// (missing seeds are zero).
fn graph_vjp(g: &Graph, params: &[Tensor], seeds: &[Option<Tensor>]) -> Vec<Tensor> {
    let vals = replay(g, params, &[]);
    let seeds: Vec<_> = g
        .outputs
        .iter()
        .zip(seeds)
        .filter_map(|(o, s)| s.clone().map(|s| (*o, s)))
        .collect();
    let cts = backward(g, &vals, &seeds);
    g.params()
        .iter()
        .zip(params)
        .map(|(p, x)| cts[p.index()].clone().unwrap_or_else(|| x.zeros_like()))
        .collect()
}

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
            let (nc, nx) = (sc.carried, sc.xs);
            let types = op.control_outputs();
            let cts = zeros_of(outs, &types);
            let carry0 = ins[..nc].to_vec();
            let xs = ins[nc..nc + nx].to_vec();
            let inv = ins[nc + nx..].to_vec();
            let body = &sc.body;
            // Forward again, in the forward's direction, keeping the carry that enters
            // each step: `carries[i]` is the carry entering the step that reads row i.
            let (_, carries) = scan_tree_dir(
                |c: Vec<Tensor>, x: Vec<Tensor>| {
                    let mut args = c.clone();
                    args.extend(x);
                    args.extend(inv.iter().cloned());
                    let vals = replay(body, &args, &[]);
                    let next: Vec<Tensor> =
                        body.outputs[..nc].iter().map(|o| vals[o.index()].clone()).collect();
                    (next, c)
                },
                carry0.clone(),
                &xs,
                sc.reverse,
                loc,
            );
            // Backward: the same rows in the opposite direction, read in place (no
            // reversed copy of the stacked carries); the xs' cotangents line up with xs.
            let ys_ct: Vec<Tensor> = cts[nc..].to_vec();
            let scanned: (Vec<Tensor>, Vec<Tensor>, Vec<Tensor>) = (carries, xs, ys_ct);
            let inv_ct0: Vec<Tensor> = inv.iter().map(|t| t.zeros_like()).collect();
            let ((c_ct, inv_ct), x_cts) = scan_tree_dir(
                |(c_ct, inv_ct): (Vec<Tensor>, Vec<Tensor>), (c, x, y_ct): (Vec<Tensor>, Vec<Tensor>, Vec<Tensor>)| {
                    let mut args = c;
                    args.extend(x);
                    args.extend(inv.iter().cloned());
                    let mut seeds: Vec<Option<Tensor>> = c_ct.into_iter().map(Some).collect();
                    seeds.extend(y_ct.into_iter().map(Some));
                    let g = graph_vjp(body, &args, &seeds);
                    let new_c = g[..nc].to_vec();
                    let x_ct = g[nc..nc + nx].to_vec();
                    let inv_ct: Vec<Tensor> = inv_ct
                        .iter()
                        .zip(&g[nc + nx..])
                        .map(|(a, b)| if a.dtype().is_float() { a + b } else { a.clone() })
                        .collect();
                    ((new_c, inv_ct), x_ct)
                },
                (cts[..nc].to_vec(), inv_ct0),
                &scanned,
                !sc.reverse,
                loc,
            );
            let mut res: Vec<Option<Tensor>> = c_ct.into_iter().map(Some).collect();
            res.extend(x_cts.into_iter().map(Some));
            res.extend(inv_ct.into_iter().map(Some));
            res
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
