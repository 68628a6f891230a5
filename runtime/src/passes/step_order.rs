//! A memory-aware schedule of the steps ("a schedule of kernels
//! chosen to keep peak memory low").
//!
//! Partitioning emits steps in trace order, which can keep large values
//! alive for long: two independent chains traced side by side hold both
//! their intermediates at once; a residual waits for a backward consumer
//! that could run as soon as its inputs exist. `schedule` reorders the
//! steps of a partition (never what a step computes: fusion decisions stay
//! as they are) along the dependences between them, as XLA's memory
//! scheduler does: it builds candidate orders and keeps the one the caller's
//! `cost` (the planned peak) likes best, trace order winning ties, so the
//! schedule is never worse than trace order. The candidates:
//! - trace order;
//! - a list scheduler: among the ready steps, run the one that frees the
//!   most temporary bytes net of what it allocates (a temporary is freed
//!   by its last reader; program outputs cost nothing, their buffers exist
//!   for the whole call), earliest in trace order on ties;
//! - a depth-first post-order from the outputs, the operand needing the
//!   most bytes first (Sethi–Ullman style).
//!
//! The one entry point is [`schedule`]; [`steps_deps`] and [`is_valid`]
//! are what it and the tests check orders with.

use crate::fusion::partition::Partition;
use crate::ir::{Graph, ValueId};
use crate::plan::step_io;
use crate::shape;
use std::collections::HashMap;

fn bytes(g: &Graph, v: ValueId) -> usize {
    shape::numel(&g.node(v).shape) * g.node(v).dtype.size()
}

/// Per step, the earlier steps (in partition order) whose values it reads.
pub fn steps_deps(g: &Graph, part: &Partition) -> Vec<Vec<usize>> {
    let io: Vec<_> = part.steps.iter().map(|s| step_io(g, part, s)).collect();
    let mut writer: HashMap<ValueId, usize> = HashMap::new();
    for (si, (_, w)) in io.iter().enumerate() {
        for &v in w {
            writer.insert(v, si);
        }
    }
    io.iter()
        .enumerate()
        .map(|(si, (r, _))| {
            let mut d: Vec<usize> = r
                .iter()
                .filter_map(|x| writer.get(x).copied())
                .filter(|&w| w != si)
                .collect();
            d.sort();
            d.dedup();
            d
        })
        .collect()
}

/// Whether `order` (a permutation of the steps) runs every step after the
/// steps it reads from.
pub fn is_valid(deps: &[Vec<usize>], order: &[usize]) -> bool {
    let mut pos = vec![usize::MAX; deps.len()];
    for (i, &s) in order.iter().enumerate() {
        if s >= deps.len() || pos[s] != usize::MAX {
            return false;
        }
        pos[s] = i;
    }
    order.len() == deps.len() && (0..deps.len()).all(|s| deps[s].iter().all(|&d| pos[d] < pos[s]))
}

/// Reorder the steps of `part` to lower `cost` (the planned peak of a
/// partition); trace order when nothing does better. `cost` and the result
/// carry the order too: step `i` of a candidate is step `order[i]` of `part`
/// (so the caller reuses what it derived per step, such as its description).
pub fn schedule(
    g: &Graph,
    part: Partition,
    cost: &dyn Fn(&Partition, &[usize]) -> usize,
) -> (Partition, Vec<usize>) {
    let n = part.steps.len();
    let trace: Vec<usize> = (0..n).collect();
    if n < 3 {
        return (part, trace);
    }
    let real = steps_deps(g, &part);
    let deps = collectives_in_trace_order(g, &part, real.clone());
    let model = Model::new(g, &part, &deps);
    let mut best: Option<(usize, Vec<usize>)> = None;
    for order in [model.list_order(), model.dfs_order()] {
        debug_assert!(is_valid(&deps, &order), "schedule broke a dependence");
        if order == trace || best.as_ref().is_some_and(|b| b.1 == order) {
            continue;
        }
        let c = cost(&reordered(&part, &order), &order);
        if best.as_ref().is_none_or(|b| c < b.0) {
            best = Some((c, order));
        }
    }
    let chosen = match best {
        Some((c, order)) if c < cost(&part, &trace) => order,
        _ => trace.clone(),
    };
    let order = hoist_collectives(g, &part, &real, chosen);
    debug_assert!(is_valid(&deps, &order), "hoisting broke a dependence");
    if order == trace {
        return (part, trace);
    }
    (reordered(&part, &order), order)
}

/// The library steps of `part` that are collectives, in the order they were traced.
fn collectives(g: &Graph, part: &Partition) -> Vec<usize> {
    use crate::fusion::partition::Step;
    let mut c: Vec<(ValueId, usize)> = (part.steps.iter().enumerate())
        .filter_map(|(i, s)| match s {
            Step::Library(v) if g.node(*v).op.is_collective() => Some((*v, i)),
            _ => None,
        })
        .collect();
    c.sort();
    c.into_iter().map(|(_, i)| i).collect()
}

/// `deps` with each collective depending on the one traced before it. MPI matches the
/// collectives of the ranks by the order they start in, and the ranks' programs may differ
/// (a sharded optimiser's block of a decay mask is a constant of its own on each rank), so
/// that one rank's memory-aware schedule could start two collectives in the other order
/// than another rank's: the messages then meet the wrong receives. The order they were
/// traced in is the order the program calls them, the same on every rank.
fn collectives_in_trace_order(
    g: &Graph,
    part: &Partition,
    mut deps: Vec<Vec<usize>>,
) -> Vec<Vec<usize>> {
    for pair in collectives(g, part).windows(2) {
        if !deps[pair[1]].contains(&pair[0]) {
            deps[pair[1]].push(pair[0]);
            deps[pair[1]].sort();
        }
    }
    deps
}

/// `order` with each collective (and the steps that only feed it: a bucket's packing) moved
/// to just after the last step it depends on otherwise, so that it starts as early as its
/// operand exists and is in flight during the steps that follow (a call waits for it at its
/// first reader: `exec`). A collective whose operand comes from another collective stays
/// where it is: moved up against that one, the call would wait for the first at once. Moving
/// a step earlier keeps every dependence (its operands are before the new place; its readers,
/// in the moved chain or after the collective, are after it); the buffers of the moved steps
/// live longer, which is the price of the overlap. No collective moves ahead of one traced
/// before it (`collectives_in_trace_order`): `order` keeps them in trace order, and so does
/// this.
pub fn hoist_collectives(
    g: &Graph,
    part: &Partition,
    deps: &[Vec<usize>],
    mut order: Vec<usize>,
) -> Vec<usize> {
    use crate::fusion::partition::Step;
    let n = part.steps.len();
    let collective: Vec<bool> = (part.steps.iter())
        .map(|s| matches!(s, Step::Library(v) if g.node(*v).op.is_collective()))
        .collect();
    if !collective.contains(&true) {
        return order;
    }
    let mut users = vec![Vec::new(); n];
    for (s, ds) in deps.iter().enumerate() {
        for &d in ds {
            users[d].push(s);
        }
    }
    let traced = collectives(g, part);
    debug_assert!(
        traced
            == order
                .iter()
                .copied()
                .filter(|&s| collective[s])
                .collect::<Vec<_>>(),
        "collectives out of trace order"
    );
    for (k, &c) in traced.iter().enumerate() {
        // The chain: `c` and the steps whose every reader is in the chain.
        let mut chain = vec![c];
        loop {
            let more: Vec<usize> = (chain.iter().flat_map(|&s| deps[s].iter().copied()))
                .filter(|d| !chain.contains(d) && !collective[*d])
                .filter(|d| users[*d].iter().all(|u| chain.contains(u)))
                .collect();
            if more.is_empty() {
                break;
            }
            for d in more {
                if !chain.contains(&d) {
                    chain.push(d);
                }
            }
        }
        if chain
            .iter()
            .any(|&s| deps[s].iter().any(|&d| collective[d]))
        {
            continue;
        }
        let mut pos = vec![0; n];
        for (i, &s) in order.iter().enumerate() {
            pos[s] = i;
        }
        let previous = k.checked_sub(1).map_or(0, |p| pos[traced[p]] + 1);
        let after = (chain.iter().flat_map(|&s| deps[s].iter()))
            .filter(|d| !chain.contains(d))
            .map(|&d| pos[d] + 1)
            .max()
            .unwrap_or(0)
            .max(previous);
        // (Chain steps already before that place stay there.)
        let (moved, rest): (Vec<usize>, Vec<usize>) =
            order[after..].iter().partition(|s| chain.contains(s));
        order.truncate(after);
        order.extend(moved);
        order.extend(rest);
    }
    order
}

/// `part` with its steps in `order`.
fn reordered(part: &Partition, order: &[usize]) -> Partition {
    Partition {
        steps: order.iter().map(|&s| part.steps[s].clone()).collect(),
        views: part.views.clone(),
        materialised: part.materialised.clone(),
        aliases: part.aliases.clone(),
    }
}

/// What the heuristics know of each step: the temporaries it writes and
/// reads (with their sizes) and who reads each.
struct Model {
    deps: Vec<Vec<usize>>,
    users: Vec<Vec<usize>>,
    /// Per step: `(temporary, bytes)` written; temporaries read.
    writes: Vec<Vec<(usize, usize)>>,
    reads: Vec<Vec<usize>>,
    /// Per temporary (dense index): bytes, number of reading steps.
    size: Vec<usize>,
    readers: Vec<usize>,
}

impl Model {
    fn new(g: &Graph, part: &Partition, deps: &[Vec<usize>]) -> Model {
        let n = part.steps.len();
        let mut is_output = vec![false; g.nodes.len()];
        for &o in &g.outputs {
            is_output[part.aliases.get(&o).copied().unwrap_or(o).index()] = true;
        }
        let mut index: HashMap<ValueId, usize> = HashMap::new();
        let mut size = Vec::new();
        let mut writes = vec![Vec::new(); n];
        let mut reads = vec![Vec::new(); n];
        let io: Vec<_> = part.steps.iter().map(|s| step_io(g, part, s)).collect();
        for (si, (_, w)) in io.iter().enumerate() {
            for &v in w {
                if !is_output[v.index()] {
                    index.insert(v, size.len());
                    writes[si].push((size.len(), bytes(g, v)));
                    size.push(bytes(g, v));
                }
            }
        }
        let mut readers = vec![0; size.len()];
        for (si, (r, _)) in io.iter().enumerate() {
            let mut rs: Vec<usize> = r.iter().filter_map(|x| index.get(x).copied()).collect();
            rs.sort();
            rs.dedup();
            rs.retain(|&t| !writes[si].iter().any(|w| w.0 == t));
            for &t in &rs {
                readers[t] += 1;
            }
            reads[si] = rs;
        }
        let mut users = vec![Vec::new(); n];
        for (s, ds) in deps.iter().enumerate() {
            for &d in ds {
                users[d].push(s);
            }
        }
        Model {
            deps: deps.to_vec(),
            users,
            writes,
            reads,
            size,
            readers,
        }
    }

    /// Greedy list scheduling: the ready step freeing the most bytes net of
    /// what it allocates, earliest in trace order on ties.
    fn list_order(&self) -> Vec<usize> {
        let n = self.deps.len();
        let mut waiting: Vec<usize> = self.deps.iter().map(|d| d.len()).collect();
        let mut left = self.readers.clone();
        let mut ready: Vec<usize> = (0..n).filter(|&s| waiting[s] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while !ready.is_empty() {
            let gain = |s: usize| -> i128 {
                let freed = shape::sum_bytes(
                    self.reads[s]
                        .iter()
                        .filter(|&&t| left[t] == 1)
                        .map(|&t| self.size[t]),
                );
                let alloc = shape::sum_bytes(self.writes[s].iter().map(|w| w.1));
                freed as i128 - alloc as i128
            };
            let (k, _) = ready
                .iter()
                .enumerate()
                .max_by(|a, b| gain(*a.1).cmp(&gain(*b.1)).then(b.1.cmp(a.1)))
                .unwrap();
            let s = ready.swap_remove(k);
            order.push(s);
            for &t in &self.reads[s] {
                left[t] -= 1;
            }
            for &u in &self.users[s] {
                waiting[u] -= 1;
                if waiting[u] == 0 {
                    ready.push(u);
                }
            }
        }
        order
    }

    /// Depth-first post-order from the last step back, visiting the
    /// dependence that needs the most bytes first; steps no later step
    /// reads (the outputs' writers) are roots, in trace order.
    fn dfs_order(&self) -> Vec<usize> {
        let n = self.deps.len();
        // Bytes a step's cone allocates (shared cones counted per path,
        // capped: only an ordering key).
        let mut need = vec![0usize; n];
        for s in 0..n {
            let own = shape::sum_bytes(self.writes[s].iter().map(|w| w.1));
            let below = self.deps[s].iter().map(|&d| need[d]).max().unwrap_or(0);
            need[s] = own.saturating_add(below);
        }
        let mut done = vec![false; n];
        let mut order = Vec::with_capacity(n);
        let roots: Vec<usize> = (0..n).filter(|&s| self.users[s].is_empty()).collect();
        for r in roots.into_iter().chain(0..n) {
            if done[r] {
                continue;
            }
            done[r] = true;
            // Iterative post-order (deep graphs must not overflow the stack).
            let mut stack: Vec<(usize, usize)> = vec![(r, 0)];
            let mut kids: HashMap<usize, Vec<usize>> = HashMap::new();
            while let Some(&mut (s, ref mut i)) = stack.last_mut() {
                let ks = kids.entry(s).or_insert_with(|| {
                    let mut k = self.deps[s].clone();
                    k.sort_by(|a, b| need[*b].cmp(&need[*a]).then(a.cmp(b)));
                    k
                });
                if *i < ks.len() {
                    let d = ks[*i];
                    *i += 1;
                    if !done[d] {
                        done[d] = true;
                        stack.push((d, 0));
                    }
                } else {
                    stack.pop();
                    done[s] = true;
                    order.push(s);
                }
            }
        }
        order
    }
}
