//! Rematerialisation under a memory budget (`#[jit(memory_budget = ..)]`).
//!
//! While the planned peak (arguments + outputs + arena - donated) exceeds
//! the budget: at the step where the most temporary bytes are live, take
//! the values that are live there without being read there, and for each
//! find the cheapest way to recompute it just before its next reader from
//! values that are alive then anyway (a cone of at most a few ops: a
//! residual `tanh(h @ w)` is recomputed from `h` and `w`). The cheapest
//! recomputation (in flops) is applied, and the plan remade. When no
//! candidate is left the error says by how much the budget is missed and
//! what the minimum reachable peak was.

use crate::error::CompileError;
use crate::fusion::partition::{const_value, Partition, Step};
use crate::ir::{Graph, Node, Op, ValueId};
use crate::plan::{step_io, BufferPlan};
use crate::shape;
use std::collections::HashMap;

/// Most ops a recomputed cone may hold.
const MAX_CONE: usize = 6;
/// Values smaller than this are not worth recomputing.
const MIN_BYTES: usize = 4096;

fn bytes(g: &Graph, v: ValueId) -> usize {
    shape::numel(&g.node(v).shape) * g.node(v).dtype.size()
}

/// Rough cost of recomputing one node, in flops.
fn flops(g: &Graph, v: ValueId) -> f64 {
    let n = g.node(v);
    let numel = shape::numel(&n.shape) as f64;
    match &n.op {
        Op::Matmul => {
            let a = g.node(n.inputs[0]);
            2.0 * numel * *a.shape.last().unwrap_or(&1) as f64
        }
        Op::Unary(u) if u.is_transcendental() => 20.0 * numel,
        Op::Reduce(..) => shape::numel(&g.node(n.inputs[0]).shape) as f64,
        _ => numel,
    }
}

fn recomputable(op: &Op) -> bool {
    op.is_elementwise() || op.is_view() || matches!(op, Op::Matmul | Op::Reduce(..))
}

/// The peak a partition and plan give.
pub fn peak(g: &Graph, plan: &BufferPlan) -> usize {
    let args = shape::sum_bytes(g.params().iter().map(|&p| bytes(g, p)));
    let outs = shape::sum_bytes(g.outputs.iter().map(|&o| bytes(g, o)));
    let alias = shape::sum_bytes(plan.donations.iter().map(|&(_, o)| bytes(g, o)));
    shape::sum_bytes([args, outs, plan.arena_bytes]).saturating_sub(alias)
}

/// Rounds without a new best peak after which the search gives up: each
/// round re-partitions and re-plans the whole graph, and a greedy search
/// that has stopped improving rarely starts again.
const STALL_ROUNDS: usize = 8;

/// What no recomputation can go below: every argument and output buffer
/// exists for the whole call (an output may reuse a donated argument's
/// buffer, so owned arguments count once).
pub fn floor(g: &Graph, owned: &[bool]) -> usize {
    let args: usize = g
        .params()
        .iter()
        .enumerate()
        .filter(|(k, _)| !owned.get(*k).copied().unwrap_or(false))
        .map(|(_, &p)| bytes(g, p))
        .sum();
    let owned_bytes: usize = g
        .params()
        .iter()
        .enumerate()
        .filter(|(k, _)| owned.get(*k).copied().unwrap_or(false))
        .map(|(_, &p)| bytes(g, p))
        .sum();
    let outs: usize = g.outputs.iter().map(|&o| bytes(g, o)).sum();
    args + outs.max(owned_bytes)
}

/// Rewrite `g` until `measure(g)` fits `budget`. `owned` says which
/// parameters are donated (for the lower bound, [`floor`]); `fixed` is
/// memory no rewrite of `g` changes, added to every peak (the arenas of its
/// loops' and branches' sub-programs).
pub fn fit(
    g: &Graph,
    budget: usize,
    owned: &[bool],
    fixed: usize,
    measure: &dyn Fn(&Graph) -> (Partition, BufferPlan),
) -> Result<Graph, CompileError> {
    let peak = |g: &Graph, plan: &BufferPlan| peak(g, plan).saturating_add(fixed);
    let least = floor(g, owned).saturating_add(fixed);
    if budget < least {
        return Err(CompileError::budget(
            budget,
            least,
            format!(
                "memory budget of {budget} bytes cannot be met: the arguments and outputs alone take \
                 {least} bytes{} ({} bytes over the budget), and recomputation cannot lower that",
                if fixed > 0 {
                    format!(" with the {fixed} bytes of its loops' and branches' sub-programs")
                } else {
                    String::new()
                },
                least - budget
            ),
        ));
    }
    let mut g = g.clone();
    let start = peak(&g, &measure(&g).1);
    let mut best = start;
    let over = |now: usize, best: usize| {
        CompileError::budget(
            budget,
            best,
            format!(
                "memory budget of {budget} bytes cannot be met: the peak is {start} bytes, and recomputation \
                 brings it down to {best} at best ({} bytes over the budget; {now} at the last attempt)",
                best - budget
            ),
        )
    };
    let mut stalled = 0;
    for _ in 0..256 {
        let (part, plan) = measure(&g);
        let now = peak(&g, &plan);
        if now < best {
            stalled = 0;
        } else {
            stalled += 1;
        }
        best = best.min(now);
        if now <= budget {
            return Ok(g);
        }
        if stalled > STALL_ROUNDS {
            return Err(over(now, best));
        }
        match best_candidate(&g, &part, &plan) {
            Some((r, cone, at)) => g = rewrite(&g, r, &cone, at),
            None => return Err(over(now, best)),
        }
    }
    let now = peak(&g, &measure(&g).1);
    Err(over(now, best.min(now)))
}

/// `(value, cone to recompute in order, node index to insert before)`.
fn best_candidate(
    g: &Graph,
    part: &Partition,
    plan: &BufferPlan,
) -> Option<(ValueId, Vec<ValueId>, usize)> {
    let nsteps = part.steps.len();
    let reads: Vec<Vec<ValueId>> = part.steps.iter().map(|s| step_io(g, part, s).0).collect();
    // Arena bytes live per step; an in-place pair (same offset, the input
    // dying where the output is born) is one buffer, not two.
    let mut regions: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nsteps];
    for iv in &plan.temps {
        for s in iv.def..=iv.last.min(nsteps.saturating_sub(1)) {
            regions[s].push((iv.offset, iv.size));
        }
    }
    let live: Vec<usize> = regions
        .iter_mut()
        .map(|r| {
            r.sort();
            r.dedup_by_key(|x| x.0);
            shape::sum_bytes(r.iter().map(|x| x.1))
        })
        .collect();
    let peak_step = (0..nsteps).max_by_key(|&s| live[s])?;
    let span: HashMap<ValueId, (usize, usize)> = plan
        .temps
        .iter()
        .chain(plan.hosted.iter().map(|h| &h.iv))
        .map(|iv| (iv.value, (iv.def, iv.last)))
        .collect();
    let alive_at = |x: ValueId, s: usize| -> bool {
        let n = g.node(x);
        matches!(n.op, Op::Param(_) | Op::Captured(_))
            || const_value(g, x).is_some()
            || span.get(&x).is_some_and(|&(d, l)| d <= s && s <= l)
            || (g.outputs.contains(&x) && span.get(&x).is_none_or(|&(d, _)| d <= s))
    };
    let mut best: Option<(f64, ValueId, Vec<ValueId>, usize)> = None;
    for iv in &plan.temps {
        let r = iv.value;
        if iv.def >= peak_step
            || iv.last <= peak_step
            || reads[peak_step].contains(&r)
            || iv.size < MIN_BYTES
        {
            continue;
        }
        let Some(next) = (peak_step + 1..nsteps).find(|&s| reads[s].contains(&r)) else {
            continue;
        };
        // Grow the cone from r back to values alive at `next`.
        let mut cone: Vec<ValueId> = vec![r];
        let mut ok = recomputable(&g.node(r).op);
        let mut i = 0;
        while ok && i < cone.len() {
            for &x in &g.node(cone[i]).inputs {
                if cone.contains(&x) || alive_at(x, next) {
                    continue;
                }
                if recomputable(&g.node(x).op) && cone.len() < MAX_CONE {
                    cone.push(x);
                } else {
                    ok = false;
                }
            }
            i += 1;
        }
        if !ok {
            continue;
        }
        cone.sort();
        // The copy goes before the reader: every value it reads must exist by then.
        let cost: f64 = cone.iter().map(|&v| flops(g, v)).sum::<f64>() / iv.size as f64;
        // Insert before the first node the next reader reads r through:
        // one of its own nodes, or a folded view of r it reads (a weight
        // gradient reads `h` as `transpose h`): that view must read the copy.
        let nodes: Vec<ValueId> = match &part.steps[next] {
            Step::Kernel(k) => k.nodes.clone(),
            Step::Row(rk) => rk.group.members.clone(),
            Step::Reduce(v) | Step::Library(v) => vec![*v],
        };
        let at = nodes
            .iter()
            .filter_map(|&v| reader_index(g, part, v, r))
            .min();
        let Some(at) = at else { continue };
        let leaves_before = cone
            .iter()
            .flat_map(|&c| g.node(c).inputs.iter().copied())
            .all(|x| cone.contains(&x) || x.index() < at);
        if !leaves_before || cone.iter().any(|c| c.index() >= at) {
            continue;
        }
        if best.as_ref().is_none_or(|b| cost < b.0) {
            best = Some((cost, r, cone, at));
        }
    }
    best.map(|(_, r, cone, at)| (r, cone, at))
}

/// The index of the node through which `v` reads `r`: `v` itself when `r`
/// is one of its inputs, or the first of a chain of folded (not
/// materialised) views from `r` to one of its inputs.
fn reader_index(g: &Graph, part: &Partition, v: ValueId, r: ValueId) -> Option<usize> {
    g.node(v)
        .inputs
        .iter()
        .filter_map(|&x| {
            let (mut first, mut y) = (v, x);
            loop {
                if y == r {
                    return Some(first.index());
                }
                let n = g.node(y);
                if n.op.is_view() && !part.materialised[y.index()] {
                    first = y;
                    y = n.inputs[0];
                } else {
                    return None;
                }
            }
        })
        .min()
}

/// Insert a copy of `cone` (computing `r`) before node `at`; nodes from `at`
/// on read the copy instead of `r`.
fn rewrite(g: &Graph, r: ValueId, cone: &[ValueId], at: usize) -> Graph {
    let mut out = Graph::new();
    let mut map: Vec<ValueId> = Vec::with_capacity(g.nodes.len());
    let mut late: Vec<ValueId> = Vec::new();
    let mut fresh_r = None;
    for (i, n) in g.nodes.iter().enumerate() {
        if i == at {
            let mut local: HashMap<ValueId, ValueId> = HashMap::new();
            for &c in cone {
                let cn = g.node(c);
                let inputs = cn
                    .inputs
                    .iter()
                    .map(|x| local.get(x).copied().unwrap_or(map[x.index()]))
                    .collect();
                let v = out.push(Node {
                    op: cn.op.clone(),
                    inputs,
                    shape: cn.shape.clone(),
                    dtype: cn.dtype,
                    loc: cn.loc,
                });
                local.insert(c, v);
                late.push(v);
            }
            fresh_r = local.get(&r).copied();
        }
        let inputs = n
            .inputs
            .iter()
            .map(|x| match fresh_r {
                Some(f) if *x == r => f,
                _ => map[x.index()],
            })
            .collect();
        map.push(out.push(Node {
            op: n.op.clone(),
            inputs,
            shape: n.shape.clone(),
            dtype: n.dtype,
            loc: n.loc,
        }));
    }
    out.outputs = g.outputs.iter().map(|o| map[o.index()]).collect();
    late.extend(g.late.iter().map(|v| map[v.index()]));
    out.late = late;
    out
}
