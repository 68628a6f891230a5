//! Batching a traced graph: every node of the per-example graph is replayed
//! (recorded into the enclosing trace, or evaluated eagerly) by its batching
//! rule on values that carry a batch axis or are shared by every lane. A
//! node none of whose operands is batched is replayed as it is.

use super::lanes::{BVal, Lanes};
use super::{control, indexing};
use crate::autodiff::replay_node;
use crate::ir::{CheckpointRegion, Graph, Node, Op, ValueId};
use crate::tensor::ops::apply;
use crate::{trace, DType, Tensor};
use std::collections::HashMap;

/// The outputs of `g` batched: its parameters are `params`, its `captured k`
/// nodes `captured[k]` (shared). Checkpoint regions and value names of `g`
/// become regions and names of what was recorded for them.
pub(crate) fn batch_outputs(
    g: &Graph,
    params: &[BVal],
    captured: &[Tensor],
    lanes: &Lanes,
) -> Vec<BVal> {
    let mut vals: Vec<BVal> = Vec::with_capacity(g.nodes.len());
    let mut extra: HashMap<usize, Vec<BVal>> = HashMap::new();
    // The nodes of the enclosing trace recorded for each node of `g`.
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(g.nodes.len());
    for (i, n) in g.nodes.iter().enumerate() {
        let start = trace::graph_len();
        let v = match &n.op {
            Op::Param(k) => params[*k].clone(),
            Op::Captured(k) => BVal::shared(captured[*k].clone()),
            Op::Get(k) => extra[&n.inputs[0].index()][k - 1].clone(),
            _ => {
                let ins: Vec<BVal> = n.inputs.iter().map(|x| vals[x.index()].clone()).collect();
                let mut outs = batch_node(n, &ins, lanes);
                let first = outs.remove(0);
                if !outs.is_empty() {
                    extra.insert(i, outs);
                }
                first
            }
        };
        let end = trace::graph_len();
        spans.push((start.unwrap_or(0), end.unwrap_or(0)));
        vals.push(v);
    }
    if trace::graph_len().is_some() {
        for region in &g.checkpoints {
            let nodes: Vec<ValueId> = region
                .nodes
                .iter()
                .flat_map(|v| spans[v.index()].0..spans[v.index()].1)
                .map(|i| ValueId(i as u32))
                .collect();
            if !nodes.is_empty() {
                let policy = region.policy.clone();
                trace::with_graph(|tg| tg.checkpoints.push(CheckpointRegion { nodes, policy }));
            }
        }
        for (v, name) in &g.names {
            crate::autodiff::checkpoint_name(&vals[v.index()].t, name);
        }
    }
    g.outputs.iter().map(|o| vals[o.index()].clone()).collect()
}

/// The batching rule of node `n` on `ins`: all its results.
fn batch_node(n: &Node, ins: &[BVal], lanes: &Lanes) -> Vec<BVal> {
    let loc = n.loc.unwrap_or(lanes.loc);
    if !ins.iter().any(|v| v.batched) {
        let ts: Vec<Tensor> = ins.iter().map(|v| v.t.clone()).collect();
        return replay_node(n, &ts, loc)
            .into_iter()
            .map(BVal::shared)
            .collect();
    }
    let lanes = &Lanes { loc, ..*lanes };
    let bs = lanes.shape(&n.shape);
    let d = n.dtype;
    let emit = |op: Op, ins: &[&Tensor]| vec![BVal::batched(apply(op, ins, bs.clone(), d, loc))];
    // Every operand with a batch axis (elementwise ops, concatenation,
    // attention: their operands' axes must line up).
    let all = || -> Vec<Tensor> { ins.iter().map(|v| lanes.materialize(v)).collect() };
    let x = &ins[0].t;
    let shifted = |axes: &[usize]| -> Vec<usize> { axes.iter().map(|a| a + 1).collect() };
    match &n.op {
        Op::Unary(_) | Op::Cast(_) | Op::Reshape | Op::AllReduce(_) | Op::BroadcastFrom(_) => {
            emit(n.op.clone(), &[x])
        }
        Op::Binary(_) | Op::Compare(_) | Op::Select => {
            let full = all();
            emit(n.op.clone(), &full.iter().collect::<Vec<_>>())
        }
        Op::Broadcast => {
            // NumPy aligns trailing axes: the per-example shape gains its new
            // leading axes after the batch axis.
            let r_in = x.ndim() - 1;
            let mut s = vec![lanes.size];
            s.extend(std::iter::repeat_n(1, n.shape.len() - r_in));
            s.extend_from_slice(&x.shape()[1..]);
            let x = lanes.reshape(x, s);
            emit(Op::Broadcast, &[&x])
        }
        Op::Transpose(perm) => {
            let p = std::iter::once(0).chain(shifted(perm)).collect();
            emit(Op::Transpose(p), &[x])
        }
        Op::Slice(sl) => {
            let s = std::iter::once((0, 1)).chain(sl.iter().copied()).collect();
            emit(Op::Slice(s), &[x])
        }
        Op::SliceScatter(sl) => {
            let s = std::iter::once((0, 1)).chain(sl.iter().copied()).collect();
            emit(Op::SliceScatter(s), &[x])
        }
        Op::Pad(p, l) => {
            let p = std::iter::once((0, 0)).chain(p.iter().copied()).collect();
            emit(Op::Pad(p, *l), &[x])
        }
        Op::Concat(axis) => {
            let full = all();
            emit(Op::Concat(axis + 1), &full.iter().collect::<Vec<_>>())
        }
        Op::Reduce(r, axes) => emit(Op::Reduce(*r, shifted(axes)), &[x]),
        Op::AllGather(a, ranks) => emit(Op::AllGather(a + 1, *ranks), &[x]),
        Op::ReduceScatter(r, a, ranks) => emit(Op::ReduceScatter(*r, a + 1, *ranks), &[x]),
        Op::ArgMax(a) => emit(Op::ArgMax(a + 1), &[x]),
        Op::ArgMin(a) => emit(Op::ArgMin(a + 1), &[x]),
        Op::Take(axis) => vec![BVal::batched(indexing::take(
            *axis, n, &ins[0], &ins[1], lanes,
        ))],
        Op::ScatterAdd(axis) => vec![BVal::batched(indexing::scatter_add(
            *axis, n, &ins[0], &ins[1], lanes,
        ))],
        Op::Matmul => vec![BVal::batched(matmul(&ins[0], &ins[1], &bs, d, lanes))],
        Op::Barrier => {
            // The value of operand 0, ordered after operand 1: batched as operand 0 is.
            let s = x.shape().to_vec();
            let t = apply(Op::Barrier, &[x, &ins[1].t], s, d, loc);
            vec![BVal {
                t,
                batched: ins[0].batched,
            }]
        }
        // Attention's operands share their batch axes: the batch axis is one more.
        Op::Attention(_) => {
            let full = all();
            emit(n.op.clone(), &full.iter().collect::<Vec<_>>())
        }
        Op::AttentionGrad(spec) => {
            let full = all();
            let refs: Vec<&Tensor> = full.iter().collect();
            crate::tensor::attention::attention_grad_parts(*spec, &refs, loc)
                .into_iter()
                .map(BVal::batched)
                .collect()
        }
        // The lanes of the operand that carries the batch (x, or dy) become more batch;
        // a batched kernel (or a weight gradient of two batched operands) runs per lane.
        Op::Conv(spec) => {
            let carries = spec.role != crate::ir::ConvRole::Weight;
            match carries {
                true if ins[0].batched && !ins[1].batched => {
                    let t = &ins[0].t;
                    let mut merged = vec![t.shape()[0] * t.shape()[1]];
                    merged.extend_from_slice(&t.shape()[2..]);
                    let t2 = lanes.reshape(t, merged);
                    let mut out = vec![lanes.size * n.shape[0]];
                    out.extend_from_slice(&n.shape[1..]);
                    let y = apply(n.op.clone(), &[&t2, &ins[1].t], out, d, loc);
                    vec![BVal::batched(lanes.reshape(&y, bs.clone()))]
                }
                _ => per_lane(n, ins, lanes),
            }
        }
        // Every operand batched; the batch axis gains a window of 1.
        Op::Window(spec) => {
            let full = all();
            let mut s = (**spec).clone();
            s.window.insert(0, 1);
            s.strides.insert(0, 1);
            s.padding.insert(0, (0, 0));
            emit(
                Op::Window(std::sync::Arc::new(s)),
                &full.iter().collect::<Vec<_>>(),
            )
        }
        Op::Cond(c) => control::cond(c, ins, lanes),
        Op::While(w) => control::while_loop(w, ins, lanes),
        Op::Scan(s) => control::scan(s, ins, lanes),
        // Random numbers from a batched key (or `fold_in` data): each lane
        // draws from its own key, as separate calls would.
        Op::Random(_) => per_lane(n, ins, lanes),
        Op::Param(_) | Op::Const(_) | Op::Captured(_) | Op::Iota(_) | Op::Get(_) => {
            unreachable!("{} has no batched operand", n.op.name())
        }
    }
}

/// `a @ b` with a batch axis on either or both, of result type `d` (the node's).
fn matmul(a: &BVal, b: &BVal, bs: &[usize], d: DType, lanes: &Lanes) -> Tensor {
    let (sa, sb) = (a.t.shape(), b.t.shape());
    let k = sa[sa.len() - 1];
    if a.batched && !b.batched && sb.len() == 2 && k > 0 {
        // A shared matrix on the right: every row of every lane is one row
        // of a single product (one GEMM, not one per lane).
        let rows = sa.iter().product::<usize>() / k;
        let a2 = lanes.reshape(&a.t, vec![rows, k]);
        let out = apply(Op::Matmul, &[&a2, &b.t], vec![rows, sb[1]], d, lanes.loc);
        return lanes.reshape(&out, bs.to_vec());
    }
    // Batch dimensions broadcast from the right: a batched operand with
    // fewer per-example batch axes gains unit axes after the batch axis, so
    // the batch axis lines up with the other's.
    let rank = |v: &BVal| v.t.ndim() - v.batched as usize;
    let r = rank(a).max(rank(b));
    let lift = |v: &BVal| {
        if !v.batched || rank(v) == r {
            return v.t.clone();
        }
        let mut s = vec![lanes.size];
        s.extend(std::iter::repeat_n(1, r - rank(v)));
        s.extend_from_slice(&v.t.shape()[1..]);
        lanes.reshape(&v.t, s)
    };
    let (a2, b2) = (lift(a), lift(b));
    apply(Op::Matmul, &[&a2, &b2], bs.to_vec(), d, lanes.loc)
}

/// The op applied lane by lane and the results stacked: for ops with no
/// batched form (random numbers from per-lane keys).
fn per_lane(n: &Node, ins: &[BVal], lanes: &Lanes) -> Vec<BVal> {
    let loc = lanes.loc;
    let mut pieces: Vec<Vec<Tensor>> = Vec::with_capacity(lanes.size);
    for lane in 0..lanes.size {
        let ts: Vec<Tensor> = ins
            .iter()
            .map(|v| {
                if v.batched {
                    lanes.lane(&v.t, lane)
                } else {
                    v.t.clone()
                }
            })
            .collect();
        pieces.push(replay_node(n, &ts, loc));
    }
    let outs = n.op.control_outputs();
    let types = if outs.is_empty() {
        vec![(n.shape.clone(), n.dtype)]
    } else {
        outs
    };
    types
        .iter()
        .enumerate()
        .map(|(k, (s, d))| {
            let bs = lanes.shape(s);
            if pieces.is_empty() {
                return BVal::batched(lanes.zeros(&bs, *d));
            }
            let mut one = vec![1];
            one.extend_from_slice(s);
            let parts: Vec<Tensor> = pieces
                .iter()
                .map(|p| lanes.reshape(&p[k], one.clone()))
                .collect();
            let refs: Vec<&Tensor> = parts.iter().collect();
            BVal::batched(apply(Op::Concat(0), &refs, bs, *d, loc))
        })
        .collect()
}
