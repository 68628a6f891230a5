//! Recomputation of a checkpoint region in the backward pass.

use crate::ir::{CheckpointRegion, Graph, Op, Policy, ValueId};
use crate::tensor::ops::apply;
use crate::{trace, Tensor};
use std::collections::{HashMap, HashSet};
use std::panic::Location;

/// Whether the policy saves (does not recompute) node `v`.
fn saved(g: &Graph, policy: &Policy, v: ValueId) -> bool {
    match policy {
        Policy::EverythingSaveable => true,
        Policy::NothingSaveable => false,
        // Attention is the fused form of two products; its result is the second's (the
        // score matrix is never a value, and its gradient recomputes it anyway).
        Policy::DotsSaveable => matches!(g.node(v).op, Op::Matmul | Op::Attention(_) | Op::Conv(_)),
        Policy::SaveOnlyTheseNames(names) => {
            g.names.iter().any(|(x, n)| *x == v && names.contains(n))
        }
    }
}

/// Replace the forward values of the region's unsaved nodes in `vals` by
/// recomputed ones, computed after (and depending on) a cotangent that flows
/// into the region, from inputs passed through barriers.
pub fn recompute_region(
    g: &Graph,
    reg: &CheckpointRegion,
    vals: &mut [Tensor],
    ct: &[Option<Tensor>],
) {
    let in_region: HashSet<ValueId> = reg.nodes.iter().copied().collect();
    // A cotangent already computed for a value of the region (its outputs
    // are used after it): the recomputation waits for it.
    let Some(dep) = reg.nodes.iter().rev().find_map(|v| ct[v.index()].clone()) else {
        return; // no gradient flows through the region
    };
    let recompute: Vec<ValueId> = reg
        .nodes
        .iter()
        .copied()
        .filter(|&v| {
            // Control-flow values are kept (their sub-graphs recompute
            // what they need in their own backward).
            let op = &g.node(v).op;
            !saved(g, &reg.policy, v)
                && !matches!(op, Op::Param(_) | Op::Captured(_) | Op::Get(_))
                && !op.is_multi_output()
        })
        .collect();
    let here = Location::caller();
    let tracing = trace::current_trace().is_some();
    let mut fresh: HashMap<ValueId, Tensor> = HashMap::new();
    let mut barred: HashMap<ValueId, Tensor> = HashMap::new();
    for &v in &recompute {
        let n = g.node(v);
        let loc = n.loc.unwrap_or(here);
        let t = match &n.op {
            Op::Const(l) if tracing => trace::push_const(*l, n.shape.clone(), n.dtype, loc),
            Op::Const(_) => vals[v.index()].clone(),
            op => {
                let ins: Vec<Tensor> = n
                    .inputs
                    .iter()
                    .map(|&x| {
                        if let Some(t) = fresh.get(&x) {
                            return t.clone();
                        }
                        if in_region.contains(&x) && recompute.contains(&x) {
                            unreachable!("recomputed in order");
                        }
                        // A saved value or a region input: through a barrier.
                        barred
                            .entry(x)
                            .or_insert_with(|| {
                                let xv = &vals[x.index()];
                                apply(
                                    Op::Barrier,
                                    &[xv, &dep],
                                    xv.shape().to_vec(),
                                    xv.dtype(),
                                    loc,
                                )
                            })
                            .clone()
                    })
                    .collect();
                let refs: Vec<&Tensor> = ins.iter().collect();
                apply(op.clone(), &refs, n.shape.clone(), n.dtype, loc)
            }
        };
        fresh.insert(v, t);
    }
    for (v, t) in fresh {
        vals[v.index()] = t;
    }
}
