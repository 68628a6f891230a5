//! Reductions and a short trailing axis (2..=16 elements, e.g. the xyz of N-body
//! positions): the axis is split into its lanes before fusion, so that no kernel walks
//! rows of three elements and no `[.., 3]` temporary is written.
//!
//! - A reduction over the short axis alone becomes a chain of binary ops over its lanes,
//!   left to right (`((x0 + x1) + x2)`, the interpreter's order): elementwise ops that join
//!   the loop kernel computing its input's lanes and the one reading its result.
//! - A reduction over other axes that keeps the short axis last, of a computed input,
//!   becomes one reduction per lane, concatenated: each lane's reduction fuses with the
//!   lane's producers (a row kernel when the reduced axes are trailing) instead of reading
//!   a materialised `[.., k]` input.
//!
//! A lane `x[.., j]` is pushed through the ops that produced `x` where that costs no
//! memory (elementwise ops, broadcasts, constants, reshapes and transposes that keep the
//! last axis), so the lanes of `d = p[None] - p[:, None]` are `p[None, :, j] - p[:, None, j]`
//! read from `p` (`partition` copies such a strided lane once before broadcasting it). A
//! reduction is split only when every lane ends in a value much smaller than `x` (or a
//! constant): rows read from a buffer of `x`'s size stay a row kernel, whose loads along
//! the row are contiguous where a lane's would have stride `k`. Each element of `x` is
//! computed once either way (the lanes partition it). Runs after `simplify` (whose graph
//! carries no region metadata) and is followed by it, which merges the lanes' common
//! operands and drops what became dead.
//!
//! Both backends see only loop kernels, row kernels and reductions they already emit, so
//! the choice is made once here and neither needs a fallback.

use crate::ir::{BinaryOp, Graph, Node, Op, ReduceOp, ValueId};
use std::collections::HashMap;

/// Longest axis split into lanes: beyond it a row kernel's loop over the axis pays for
/// itself, and the unrolled chain would grow the kernel past `MAX_KERNEL_NODES`.
pub const MAX_LANES: usize = 16;

/// Most nodes the lanes of one value may copy (its producers, once per lane): a
/// reduction of a longer cone is left whole.
const COPY_BUDGET: usize = 512;

/// The split graph, or None when no reduction qualifies.
pub fn split(g: &Graph) -> Option<Graph> {
    if !g.nodes.iter().any(|n| kind(g, n).is_some()) {
        return None;
    }
    let mut out = Graph::new();
    let mut map: Vec<ValueId> = Vec::with_capacity(g.nodes.len());
    let mut lanes = Lanes::default();
    let mut changed = false;
    for n in &g.nodes {
        let node = Node {
            inputs: n.inputs.iter().map(|x| map[x.index()]).collect(),
            ..n.clone()
        };
        let v = match kind(g, n).filter(|_| worth_it(&out, node.inputs[0])) {
            Some(Kind::OverLanes(op)) => over_lanes(&mut out, &mut lanes, &node, op),
            Some(Kind::PerLane) => per_lane(&mut out, &mut lanes, &node),
            None => {
                map.push(out.push(node));
                continue;
            }
        };
        changed = true;
        map.push(v);
    }
    out.outputs = g.outputs.iter().map(|o| map[o.index()]).collect();
    changed.then_some(out)
}

/// Whether the lanes of `x` are computed from values smaller than `x` (broadcast up, as
/// the displacements `p[None] - p[:, None]` are from `p`): then no lane is read from a
/// buffer of `x`'s size with stride `k`. A reduction of rows read from memory (a
/// parameter, a product, a softmax's logits) stays a row kernel, whose loads along the row
/// are contiguous. Also false when the copies would pass `COPY_BUDGET`.
fn worth_it(g: &Graph, x: ValueId) -> bool {
    let k = *g.node(x).shape.last().unwrap();
    let size = crate::shape::numel(&g.node(x).shape);
    let cap = COPY_BUDGET / k + 1;
    let mut seen = std::collections::HashSet::from([x]);
    let mut stack = vec![x];
    while let Some(v) = stack.pop() {
        let n = g.node(v);
        if !pushes(g, n) {
            // Sliced where it is: a strided read of its lanes.
            if 4 * crate::shape::numel(&n.shape) > size {
                return false;
            }
            continue;
        }
        for &i in &n.inputs {
            // A source spread over the short axis is read as it is by every lane.
            if n.op == Op::Broadcast && g.node(i).shape.last().is_none_or(|&d| d == 1) {
                continue;
            }
            if seen.insert(i) {
                if seen.len() > cap {
                    return false;
                }
                stack.push(i);
            }
        }
    }
    true
}

enum Kind {
    /// A reduction over the short last axis alone: combined with this binary op.
    OverLanes(BinaryOp),
    /// A reduction keeping the short last axis, of an elementwise op's result.
    PerLane,
}

fn kind(g: &Graph, n: &Node) -> Option<Kind> {
    let Op::Reduce(op, axes) = &n.op else {
        return None;
    };
    let x = g.node(n.inputs[0]);
    let r = x.shape.len();
    let k = *x.shape.last()?;
    if !(2..=MAX_LANES).contains(&k) || x.shape.contains(&0) {
        return None;
    }
    if axes.as_slice() == [r - 1] {
        // (A 16-bit sum or product rounds once, not after each lane.)
        if x.dtype.is_half() && matches!(op, ReduceOp::Sum | ReduceOp::Prod) {
            return None;
        }
        let b = match op {
            ReduceOp::Sum => BinaryOp::Add,
            ReduceOp::Prod => BinaryOp::Mul,
            ReduceOp::Max => BinaryOp::Max,
            ReduceOp::Min => BinaryOp::Min,
        };
        return Some(Kind::OverLanes(b));
    }
    // Kept last: worth it only when the input would otherwise be materialised for the
    // reduction (a parameter or a view is read in place already).
    (!axes.is_empty() && !axes.contains(&(r - 1)) && x.op.is_elementwise()).then_some(Kind::PerLane)
}

/// `lanes[0] op lanes[1] op ...`, left to right.
fn over_lanes(out: &mut Graph, lanes: &mut Lanes, n: &Node, op: BinaryOp) -> ValueId {
    let x = n.inputs[0];
    let k = *out.node(x).shape.last().unwrap();
    let ls = lanes.all(out, x, k);
    let mut acc = ls[0];
    for &l in &ls[1..] {
        acc = out.push(Node {
            op: Op::Binary(op),
            inputs: vec![acc, l],
            ..n.clone()
        });
    }
    acc
}

/// `concat(reduce(lane 0)[.., None], reduce(lane 1)[.., None], ...)` along the last axis.
fn per_lane(out: &mut Graph, lanes: &mut Lanes, n: &Node) -> ValueId {
    let x = n.inputs[0];
    let k = *out.node(x).shape.last().unwrap();
    let short = &n.shape[..n.shape.len() - 1];
    let mut column = n.shape.clone();
    *column.last_mut().unwrap() = 1;
    let parts = lanes
        .all(out, x, k)
        .into_iter()
        .map(|l| {
            let r = out.push(Node {
                inputs: vec![l],
                shape: short.to_vec(),
                ..n.clone()
            });
            out.push(Node {
                op: Op::Reshape,
                inputs: vec![r],
                shape: column.clone(),
                ..n.clone()
            })
        })
        .collect();
    out.push(Node {
        op: Op::Concat(n.shape.len() - 1),
        inputs: parts,
        ..n.clone()
    })
}

/// Lanes made so far (`(value, j)` → `value[.., j]`), shared by every split of a graph.
#[derive(Default)]
struct Lanes(HashMap<(ValueId, usize), ValueId>);

impl Lanes {
    /// The `k` lanes of `x`, pushed through its producers.
    fn all(&mut self, out: &mut Graph, x: ValueId, k: usize) -> Vec<ValueId> {
        (0..k).map(|j| self.lane(out, x, j)).collect()
    }

    /// `v[.., j]` (the last axis dropped).
    fn lane(&mut self, out: &mut Graph, v: ValueId, j: usize) -> ValueId {
        if let Some(&l) = self.0.get(&(v, j)) {
            return l;
        }
        let n = out.node(v).clone();
        let r = n.shape.len();
        let short = n.shape[..r - 1].to_vec();
        let with = |op: Op, inputs: Vec<ValueId>, shape: Vec<usize>| Node {
            op,
            inputs,
            shape,
            dtype: n.dtype,
            loc: n.loc,
        };
        let l = if !pushes(out, &n) {
            slice_lane(out, &n, v, j)
        } else {
            match &n.op {
                Op::Const(_) => out.push(with(n.op.clone(), vec![], short)),
                op if op.is_elementwise() => {
                    let ins = n.inputs.iter().map(|&x| self.lane(out, x, j)).collect();
                    out.push(Node {
                        inputs: ins,
                        shape: short,
                        ..n.clone()
                    })
                }
                Op::Transpose(perm) => {
                    let src = self.lane(out, n.inputs[0], j);
                    out.push(with(
                        Op::Transpose(perm[..r - 1].to_vec()),
                        vec![src],
                        short,
                    ))
                }
                Op::Reshape => {
                    let src = self.lane(out, n.inputs[0], j);
                    out.push(with(Op::Reshape, vec![src], short))
                }
                Op::Broadcast => {
                    let s = n.inputs[0];
                    let ss = out.node(s).shape.clone();
                    // NumPy aligns trailing axes: the source's last axis is the short
                    // one (taken at `j`) or of length 1 (spread over it: dropped).
                    let src = match ss.last() {
                        None => s,
                        Some(&1) => {
                            out.push(with(Op::Reshape, vec![s], ss[..ss.len() - 1].to_vec()))
                        }
                        Some(_) => self.lane(out, s, j),
                    };
                    out.push(with(Op::Broadcast, vec![src], short))
                }
                _ => unreachable!("`pushes` admits only these"),
            }
        };
        self.0.insert((v, j), l);
        l
    }
}

/// Whether a lane of `n`'s result is taken from its operands' lanes (for free).
fn pushes(g: &Graph, n: &Node) -> bool {
    let r = n.shape.len();
    match &n.op {
        Op::Const(_) => true,
        op if op.is_elementwise() => true,
        Op::Broadcast => true,
        Op::Transpose(perm) => perm.last() == Some(&(r - 1)),
        // The last axis is the source's last axis: the lane of row-major row `i` of the
        // result is that of row `i` of the source.
        Op::Reshape => g.node(n.inputs[0]).shape.last() == n.shape.last(),
        _ => false,
    }
}

/// `v[.., j]` as views: a slice of the last axis, then a reshape dropping it.
fn slice_lane(out: &mut Graph, n: &Node, v: ValueId, j: usize) -> ValueId {
    let r = n.shape.len();
    let mut starts = vec![(0i64, 1i64); r];
    starts[r - 1].0 = j as i64;
    let mut one = n.shape.clone();
    one[r - 1] = 1;
    let s = out.push(Node {
        op: Op::Slice(starts),
        inputs: vec![v],
        shape: one,
        dtype: n.dtype,
        loc: n.loc,
    });
    out.push(Node {
        op: Op::Reshape,
        inputs: vec![s],
        shape: n.shape[..r - 1].to_vec(),
        dtype: n.dtype,
        loc: n.loc,
    })
}
