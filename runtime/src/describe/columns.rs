//! Column sums fused into the loop kernel that computes their operand.
//!
//! A batch norm sums `x − mean` and its square over every row of `[N, H, W, C]` (its backward
//! `g` and `g·(x − mean)`); `passes::column_split` makes each sum a chunked
//! `x.reshape([K, M, C]).reduce_sum([1])` and a sum of the `K` partials. Unfused, the loop
//! kernel writes each operand to memory and a reduction step reads it back: two passes over
//! an activation-sized buffer per sum, and the buffer itself, that the sum alone needed.
//!
//! Here such a chunked sum joins the loop kernel computing its operand: the kernel walks its
//! elements in the sum's `[K, M, ..kept]` shape (the same elements in the same order:
//! `restride` re-expresses every access), and each sum is an output stored through strides
//! that are 0 along `M`: read, added to, written back, row after row. The executor zeroes it
//! first (`LoopDescription::accumulators`). Threads share out `K`, so each partial is summed
//! by one thread in row order whatever the thread count. An operand nothing else reads is no
//! longer written at all.
//!
//! A partial sums at most `MAX_ROWS` rows in the operand's type (f32), where the reduction
//! kernel would have summed them in f64: the chunks are short (`column_split` makes them
//! 256–512 rows where the shape allows) and the partials are summed in f64, so the error is
//! that of a sum of `M` terms, not of all the rows (docs/accuracy.md).

use super::reduce::COLUMN_LANES;
use crate::fusion::partition::{const_value, step_io, Kernel, Partition, Step};
use crate::ir::{Graph, Op, ReduceOp, ValueId};
use crate::shape::restride;
use crate::{shape, DType};
use std::collections::{HashMap, HashSet};

/// Most rows one partial sum of a fused kernel adds up in f32.
pub const MAX_ROWS: usize = 512;

/// Fuse every chunked column sum whose operand a loop kernel computes into that kernel.
pub fn fuse(g: &Graph, p: &mut Partition) {
    let mut kernel_of: HashMap<ValueId, usize> = HashMap::new();
    for (si, s) in p.steps.iter().enumerate() {
        if let Step::Kernel(k) = s {
            kernel_of.extend(k.nodes.iter().map(|&v| (v, si)));
        }
    }
    let mut fused = HashSet::new();
    for q in 0..p.steps.len() {
        let Step::Reduce(r) = p.steps[q] else {
            continue;
        };
        let Some((x, cols)) = chunked_sum(g, p, r) else {
            continue;
        };
        let Some(&ki) = kernel_of.get(&x) else {
            continue;
        };
        let Step::Kernel(k) = &p.steps[ki] else {
            unreachable!()
        };
        let same_walk = k.columns.as_ref().is_none_or(|c| *c == cols);
        if ki > q || !same_walk || g.node(x).shape != k.shape || !walks(g, p, k, &cols) {
            continue;
        }
        let Step::Kernel(k) = &mut p.steps[ki] else {
            unreachable!()
        };
        k.columns = Some(cols);
        k.nodes.push(r);
        k.outputs.push(r);
        fused.insert(q);
    }
    if fused.is_empty() {
        return;
    }
    let mut q = 0;
    p.steps.retain(|_| {
        q += 1;
        !fused.contains(&(q - 1))
    });
    drop_unread_outputs(g, p);
}

/// `(x, [K, M, ..kept])` where reduction `r` sums the chunks of a value `x` computed
/// elementwise: `reduce_sum[1]` of reshapes of `x` to `[K, M, ..kept]`, f32 or f64, with
/// `M` at most `MAX_ROWS`.
fn chunked_sum(g: &Graph, p: &Partition, r: ValueId) -> Option<(ValueId, Vec<usize>)> {
    let n = g.node(r);
    let Op::Reduce(ReduceOp::Sum, axes) = &n.op else {
        return None;
    };
    let cols = g.node(n.inputs[0]).shape.clone();
    let sum_type = matches!(n.dtype, DType::F32 | DType::F64);
    // The kept run is the innermost one the kernel walks, each lane its own partial: at
    // least a vector's worth of them (with one, every lane would add into the same element).
    let kept = shape::numel(cols.get(2..).unwrap_or(&[]));
    // Threads share out the chunks: one chunk would leave the kernel on one thread.
    let empty = shape::numel(&cols) == 0;
    let chunks = cols.first().is_some_and(|&k| k >= 2);
    if !sum_type || axes[..] != [1] || kept < COLUMN_LANES || cols[1] > MAX_ROWS || empty || !chunks
    {
        return None;
    }
    let mut x = n.inputs[0];
    while g.node(x).op == Op::Reshape && !p.materialised[x.index()] {
        x = g.node(x).inputs[0];
    }
    let computed = g.node(x).op.is_elementwise() && const_value(g, x).is_none();
    computed.then_some((x, cols))
}

/// Whether every access of kernel `k` can walk its elements in the shape `cols`.
fn walks(g: &Graph, p: &Partition, k: &Kernel, cols: &[usize]) -> bool {
    super::loops::strides_over_shape(g, p, k)
        .iter()
        .all(|s| restride(&k.shape, s, cols).is_some())
}

/// Outputs of fused kernels that no step reads any more (the operands only their sums read)
/// are not written: no buffer, no store.
fn drop_unread_outputs(g: &Graph, p: &mut Partition) {
    let mut read: HashSet<ValueId> = HashSet::new();
    for &o in &g.outputs {
        read.insert(p.aliases.get(&o).copied().unwrap_or(o));
    }
    for s in &p.steps {
        read.extend(step_io(g, p, s).0);
    }
    let mut dropped = Vec::new();
    for s in p.steps.iter_mut() {
        let Step::Kernel(k) = s else { continue };
        if k.columns.is_none() {
            continue;
        }
        k.outputs.retain(|o| {
            let keep = read.contains(o) || matches!(g.node(*o).op, Op::Reduce(..));
            if !keep {
                dropped.push(*o);
            }
            keep
        });
    }
    for o in dropped {
        p.materialised[o.index()] = false;
        p.views.retain(|_, a| a.root != o);
    }
}
