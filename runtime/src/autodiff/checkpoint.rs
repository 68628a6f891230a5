//! `checkpoint`: a region whose intermediates the backward pass recomputes
//! instead of saving (JAX's `jax.checkpoint` / `remat`), with policies.
//!
//! While tracing, `checkpoint(f, &x)` records the range of nodes `f` added
//! as a region of the trace's graph. When `backward` reaches a region it
//! replays the region's unsaved nodes from their inputs, each input passing
//! through a `barrier` that depends on the cotangent flowing into the
//! region: the recomputation is scheduled in the backward pass, and CSE can
//! never merge it back into the forward original (the trap XLA falls into
//! here, per ../shared/anchors). The forward values then die early.

use super::Tree;
use crate::ir::{CheckpointRegion, Policy, ValueId};
use crate::trace;
use crate::Tensor;

/// Run `f(x)` as a checkpointed region with `Policy::NothingSaveable`.
#[track_caller]
pub fn checkpoint<T: Tree, U: Tree>(f: impl Fn(&T) -> U, x: &T) -> U {
    checkpoint_with(Policy::NothingSaveable, f, x)
}

/// Run `f(x)` as a checkpointed region: in the backward pass its values are
/// recomputed, except those the policy saves.
#[track_caller]
pub fn checkpoint_with<T: Tree, U: Tree>(policy: Policy, f: impl Fn(&T) -> U, x: &T) -> U {
    let Some(start) = trace::graph_len() else {
        // Eagerly (no trace, no gradient): nothing to save or recompute.
        return f(x);
    };
    let out = f(x);
    let end = trace::graph_len().unwrap_or(start);
    if end > start && policy != Policy::EverythingSaveable {
        let nodes = (start..end).map(|i| ValueId(i as u32)).collect();
        trace::with_graph(|g| g.checkpoints.push(CheckpointRegion { nodes, policy }));
    }
    out
}

/// Name a value for `Policy::save_only_these_names`.
pub fn checkpoint_name(x: &Tensor, name: &str) -> Tensor {
    if let Some(v) = trace::own_value(x) {
        trace::with_graph(|g| g.names.push((v, name.to_string())));
    }
    x.clone()
}
