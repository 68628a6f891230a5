//! Batching control flow, as JAX does it:
//! - `cond` on a shared predicate stays one `cond` of batched branches; on a
//!   batched predicate both branches run and each lane selects its result;
//! - `while` with a shared condition stays one loop of a batched body; with
//!   a batched condition the loop runs while any lane's condition holds and a
//!   finished lane's state is frozen (the body's result is selected away);
//! - `scan` batches its carry and scans a batched `xs` along its own axis
//!   (the batch axis moved second).
//!
//! A loop's carried values are batched where their initial value is or where
//! the body makes them so (a fixed point over the body's batching).

use super::batch::batch_outputs;
use super::lanes::{BVal, Lanes};
use crate::control::subgraph::{close, push_control};
use crate::ir::{CmpOp, CondOp, Graph, Op, ReduceOp, ScanOp, WhileOp};
use crate::tensor::ops::{apply, constant};
use crate::trace::{self, fail, ParamSpec, Traced};
use crate::{DType, Literal, Tensor};
use std::sync::Arc;

/// The parameter types of a closed sub-graph batched where `flags` says.
fn specs(g: &Graph, flags: &[bool], lanes: &Lanes) -> Vec<ParamSpec> {
    g.params()
        .iter()
        .zip(flags)
        .map(|(p, &b)| {
            let n = g.node(*p);
            ParamSpec {
                shape: if b {
                    lanes.shape(&n.shape)
                } else {
                    n.shape.clone()
                },
                dtype: n.dtype,
                weak: false,
            }
        })
        .collect()
}

fn params(ps: &[Tensor], flags: &[bool]) -> Vec<BVal> {
    ps.iter()
        .zip(flags)
        .map(|(t, &batched)| BVal {
            t: t.clone(),
            batched,
        })
        .collect()
}

fn traced(specs: &[ParamSpec], body: impl FnOnce(&[Tensor]) -> Vec<Tensor>) -> Traced {
    trace::trace(specs, body).unwrap_or_else(|e| fail(e))
}

/// `g` traced batched where `flags` says, with the outputs `force` names
/// given a batch axis; and which outputs are batched.
fn batch_graph(g: &Graph, flags: &[bool], force: &[bool], lanes: &Lanes) -> (Traced, Vec<bool>) {
    let mut out_flags = Vec::new();
    let tr = traced(&specs(g, flags, lanes), |ps| {
        let outs = batch_outputs(g, &params(ps, flags), &[], lanes);
        outs.iter()
            .enumerate()
            .map(|(i, v)| {
                let batched = v.batched || force.get(i).copied().unwrap_or(false);
                out_flags.push(batched);
                if batched {
                    lanes.materialize(v)
                } else {
                    v.t.clone()
                }
            })
            .collect()
    });
    (tr, out_flags)
}

/// Which carried values of a loop are batched: those batched initially, and
/// those the body makes batched, until nothing changes.
fn carried_flags(body: &Graph, mut carried: Vec<bool>, rest: &[bool], lanes: &Lanes) -> Vec<bool> {
    loop {
        let mut flags = carried.clone();
        flags.extend_from_slice(rest);
        let (_, out) = batch_graph(body, &flags, &[], lanes);
        let next: Vec<bool> = carried.iter().zip(&out).map(|(a, b)| a | b).collect();
        if next == carried {
            return carried;
        }
        carried = next;
    }
}

fn operands(vals: &[BVal], flags: &[bool], lanes: &Lanes) -> Vec<Tensor> {
    vals.iter()
        .zip(flags)
        .map(|(v, &b)| if b { lanes.materialize(v) } else { v.t.clone() })
        .collect()
}

/// `select(pred, a, b)` lane by lane (`pred` is `[B]`).
fn select_lanes(pred: &Tensor, a: &BVal, b: &BVal, lanes: &Lanes) -> Tensor {
    let (a, b) = (lanes.materialize(a), lanes.materialize(b));
    let p = lanes.spread(pred, a.shape());
    let s = a.shape().to_vec();
    apply(Op::Select, &[&p, &a, &b], s, a.dtype(), lanes.loc)
}

pub(crate) fn cond(c: &CondOp, ins: &[BVal], lanes: &Lanes) -> Vec<BVal> {
    let (pred, ops) = (&ins[0], &ins[1..]);
    if pred.batched {
        let [else_, then] =
            [&c.branches[0], &c.branches[1]].map(|g| batch_outputs(g, ops, &[], lanes));
        return then
            .iter()
            .zip(&else_)
            .map(|(t, e)| BVal::batched(select_lanes(&pred.t, t, e, lanes)))
            .collect();
    }
    let flags: Vec<bool> = ops.iter().map(|v| v.batched).collect();
    let [(e, fe), (t, ft)] =
        [&c.branches[0], &c.branches[1]].map(|g| batch_graph(g, &flags, &[], lanes));
    let want: Vec<bool> = fe.iter().zip(&ft).map(|(a, b)| a | b).collect();
    let again = |tr: Traced, got: &[bool], g: &Graph| {
        if got == want.as_slice() {
            tr
        } else {
            batch_graph(g, &flags, &want, lanes).0
        }
    };
    let e = again(e, &fe, &c.branches[0]);
    let t = again(t, &ft, &c.branches[1]);
    let (mut graphs, captured) = close(vec![e, t], &specs(&c.branches[0], &flags, lanes));
    let then = graphs.pop().unwrap();
    let else_ = graphs.pop().unwrap();
    let mut operands: Vec<Tensor> = vec![pred.t.clone()];
    operands.extend(ops.iter().map(|v| v.t.clone()));
    operands.extend(captured);
    let op = Op::Cond(Arc::new(CondOp {
        branches: [else_, then],
    }));
    push_control(op, &operands, lanes.loc)
        .into_iter()
        .zip(want)
        .map(|(t, batched)| BVal { t, batched })
        .collect()
}

/// Whether any lane's predicate holds (`[B]` bool to a bool scalar).
fn any(pred: &Tensor, lanes: &Lanes) -> Tensor {
    let loc = lanes.loc;
    let s = pred.shape().to_vec();
    let ints = apply(Op::Cast(DType::I32), &[pred], s, DType::I32, loc);
    let most = apply(
        Op::Reduce(ReduceOp::Max, vec![0]),
        &[&ints],
        vec![],
        DType::I32,
        loc,
    );
    let zero = constant(Literal::Int(0), &[], DType::I32, loc);
    apply(
        Op::Compare(CmpOp::Gt),
        &[&most, &zero],
        vec![],
        DType::Bool,
        loc,
    )
}

pub(crate) fn while_loop(w: &WhileOp, ins: &[BVal], lanes: &Lanes) -> Vec<BVal> {
    let nc = w.carried;
    let rest: Vec<bool> = ins[nc..].iter().map(|v| v.batched).collect();
    let init: Vec<bool> = ins[..nc].iter().map(|v| v.batched).collect();
    let mut carried = carried_flags(&w.body, init, &rest, lanes);
    let with_rest = |c: &[bool]| -> Vec<bool> { c.iter().chain(&rest).copied().collect() };
    let (_, pf) = batch_graph(&w.cond, &with_rest(&carried), &[], lanes);
    let per_lane = pf[0];
    if per_lane {
        // Every lane's state is selected between its old and new value.
        carried = vec![true; nc];
    }
    let flags = with_rest(&carried);
    let sp = specs(&w.body, &flags, lanes);
    let (cond_tr, body_tr) = if !per_lane {
        (
            batch_graph(&w.cond, &flags, &[], lanes).0,
            batch_graph(&w.body, &flags, &carried, lanes).0,
        )
    } else {
        let cond_tr = traced(&sp, |ps| {
            let p = batch_outputs(&w.cond, &params(ps, &flags), &[], lanes);
            vec![any(&lanes.materialize(&p[0]), lanes)]
        });
        let body_tr = traced(&sp, |ps| {
            let vals = params(ps, &flags);
            let p = lanes.materialize(&batch_outputs(&w.cond, &vals, &[], lanes)[0]);
            let new = batch_outputs(&w.body, &vals, &[], lanes);
            new.iter()
                .zip(&vals[..nc])
                .map(|(n, old)| select_lanes(&p, n, old, lanes))
                .collect()
        });
        (cond_tr, body_tr)
    };
    let (mut graphs, captured) = close(vec![cond_tr, body_tr], &sp);
    let body = graphs.pop().unwrap();
    let cond = graphs.pop().unwrap();
    let mut ops = operands(ins, &flags, lanes);
    ops.extend(captured);
    let op = Op::While(Arc::new(WhileOp {
        cond,
        body,
        carried: nc,
    }));
    push_control(op, &ops, lanes.loc)
        .into_iter()
        .zip(carried)
        .map(|(t, batched)| BVal { t, batched })
        .collect()
}

pub(crate) fn scan(s: &ScanOp, ins: &[BVal], lanes: &Lanes) -> Vec<BVal> {
    let (nc, nx) = (s.carried, s.xs);
    // A batched `xs` leaf `[B, L, ..]` is scanned as `[L, B, ..]`: each of
    // its slices is batched at axis 0.
    let mut ins = ins.to_vec();
    for v in &mut ins[nc..nc + nx] {
        if v.batched {
            v.t = lanes.move_axis(&v.t, 0, 1);
        }
    }
    let rest: Vec<bool> = ins[nc..].iter().map(|v| v.batched).collect();
    let init: Vec<bool> = ins[..nc].iter().map(|v| v.batched).collect();
    let carried = carried_flags(&s.body, init, &rest, lanes);
    let flags: Vec<bool> = carried.iter().chain(&rest).copied().collect();
    let (tr, out_flags) = batch_graph(&s.body, &flags, &carried, lanes);
    let (mut graphs, captured) = close(vec![tr], &specs(&s.body, &flags, lanes));
    let mut ops = operands(&ins[..nc], &carried, lanes);
    ops.extend(ins[nc..].iter().map(|v| v.t.clone()));
    ops.extend(captured);
    let op = Op::Scan(Arc::new(ScanOp {
        body: graphs.pop().unwrap(),
        length: s.length,
        carried: nc,
        xs: nx,
        reverse: s.reverse,
    }));
    push_control(op, &ops, lanes.loc)
        .into_iter()
        .zip(out_flags)
        .enumerate()
        .map(|(i, (t, batched))| {
            // Stacked ys come out `[L, B, ..]`.
            if batched && i >= nc {
                BVal::batched(lanes.move_axis(&t, 1, 0))
            } else {
                BVal { t, batched }
            }
        })
        .collect()
}
