//! The automatic memory budget (`MemoryBudget::Auto`): gradients taken
//! while tracing a `#[jit]` function whose budget is automatic cut the
//! differentiated function into about √N checkpointed segments (N = its
//! computed, non-view values of at least `MIN_BYTES`), as Chen et al. 2016
//! ("Training deep nets with sublinear memory cost"): only values crossing
//! segment boundaries are kept from the forward pass, and each segment is
//! recomputed once in the backward pass, just before its cotangents are
//! computed. The last segment is not recomputed (the backward pass starts
//! there, so its values are read at once). Memory ~ 2√N values instead of
//! N; cost: at most one extra forward pass. Functions that already mark
//! checkpoints are left as they are.

use crate::ir::{CheckpointRegion, Graph, Op, Policy, ValueId};
use crate::shape;
use std::cell::Cell;

/// Values smaller than this do not count as segment weight.
const MIN_BYTES: usize = 4096;

/// Loop checkpointing depth of factors of 2 (`scan_vjp::loop_factors`):
/// O(log n) stored carries for O(n log n) recomputed steps.
pub const BINARY: u32 = u32::MAX;

/// The loop checkpointing depths a missed byte budget tries in turn: the
/// automatic one (√n), cube roots, fourth roots, then factors of 2. Each
/// level also holds about two carries of its own (the cotangent carried
/// and the next one), so a deeper cut is not always smaller: the budget
/// takes the first depth that fits.
pub const LOOP_LADDER: [u32; 4] = [1, 2, 3, BINARY];

thread_local! {
    /// `None`: no automatic checkpointing; `Some(levels)`: √N segments of
    /// the differentiated functions, loops cut `levels` deep.
    static AUTO: Cell<Option<u32>> = const { Cell::new(None) };
    /// Loops whose gradients were cut into segments, counted while tracing.
    static SEGMENTED: Cell<usize> = const { Cell::new(0) };
}

/// Run `f` (a trace) with automatic checkpointing of the gradients it takes.
pub fn with_auto_checkpoint<R>(on: bool, f: impl FnOnce() -> R) -> R {
    with_checkpoint_levels(on.then_some(1), f)
}

/// Run `f` (a trace) with automatic checkpointing whose loop gradients are
/// cut `levels` deep (`None`: no automatic checkpointing). Returns what `f`
/// returns.
pub fn with_checkpoint_levels<R>(levels: Option<u32>, f: impl FnOnce() -> R) -> R {
    struct Reset(Option<u32>);
    impl Drop for Reset {
        fn drop(&mut self) {
            AUTO.with(|a| a.set(self.0));
        }
    }
    let _reset = Reset(AUTO.with(|a| a.replace(levels)));
    f()
}

pub(crate) fn auto_checkpoint_on() -> bool {
    AUTO.with(|a| a.get()).is_some()
}

/// How deep the gradients of loops traced now are cut (0: every carry kept).
pub(crate) fn loop_levels() -> u32 {
    AUTO.with(|a| a.get()).unwrap_or(0)
}

pub(crate) fn note_segmented_loop() {
    SEGMENTED.with(|c| c.set(c.get() + 1));
}

/// How many loop gradients were cut into segments on this thread so far (a
/// trace that cut none gives the same graph at every depth).
pub fn segmented_loops() -> usize {
    SEGMENTED.with(|c| c.get())
}

/// The segment regions for a differentiated function's graph: contiguous
/// node ranges, each ending after an equal share of the weighty values; all
/// but the last become `NothingSaveable` checkpoint regions.
pub fn segment(g: &Graph) -> Vec<CheckpointRegion> {
    let weighty: Vec<usize> = g
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| {
            !n.op.is_view()
                && !matches!(n.op, Op::Param(_) | Op::Const(_) | Op::Captured(_))
                && shape::numel(&n.shape) * n.dtype.size() >= MIN_BYTES
        })
        .map(|(i, _)| i)
        .collect();
    let n = weighty.len();
    let m = (n as f64).sqrt().ceil() as usize;
    if m < 2 {
        return Vec::new();
    }
    let first = g
        .nodes
        .iter()
        .position(|n| !matches!(n.op, Op::Param(_)))
        .unwrap_or(g.nodes.len());
    // Bytes kept across the cut before node p: computed values defined
    // before p and read at or after it.
    let nn = g.nodes.len();
    let mut last = vec![0usize; nn];
    for (i, node) in g.nodes.iter().enumerate() {
        for x in &node.inputs {
            last[x.index()] = last[x.index()].max(i);
        }
    }
    for o in &g.outputs {
        last[o.index()] = nn;
    }
    let mut diff = vec![0i64; nn + 2];
    for (i, node) in g.nodes.iter().enumerate() {
        let kept =
            !node.op.is_view() && !matches!(node.op, Op::Param(_) | Op::Const(_) | Op::Captured(_));
        if kept && last[i] > i {
            let b = (shape::numel(&node.shape) * node.dtype.size()) as i64;
            diff[i + 1] += b;
            diff[last[i] + 1] -= b;
        }
    }
    let mut crossing = vec![0i64; nn + 1];
    let mut acc = 0;
    for p in 0..=nn {
        acc += diff[p];
        crossing[p] = acc;
    }
    let mut regions = Vec::new();
    let mut start = first;
    let half = (n / m / 2).max(1);
    for k in 1..m {
        // Aim at an equal share of the weighty values per segment; within
        // half a segment of it, cut where the fewest bytes cross.
        let target = k * n / m;
        let lo = target.saturating_sub(half).max(1);
        let hi = (target + half).min(n - 1);
        let Some(end) = (lo..=hi)
            .map(|j| weighty[j - 1] + 1)
            .filter(|&e| e > start)
            .min_by_key(|&e| (crossing[e], e.abs_diff(weighty[target - 1] + 1)))
        else {
            continue;
        };
        regions.push(CheckpointRegion {
            nodes: (start..end).map(|i| ValueId(i as u32)).collect(),
            policy: Policy::NothingSaveable,
        });
        start = end;
    }
    regions
}
