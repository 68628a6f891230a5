//! Column reductions of many rows split in two, so that every thread sums some of them.
//!
//! A reduction kernel's threads share out its outermost kept dimension
//! (`describe::reduce::extent`), and a column reduction (leading axes reduced, a short run
//! of trailing ones kept: a batch norm's statistics `x[N, H, W, C] → [C]`) keeps fewer than
//! one chunk of them: one thread read all of `x`. Here `x` reduced over its leading axes,
//! `R` rows of `C` kept elements, becomes `x.reshape([K, R/K, ..kept]).reduce(1).reduce(0)`:
//! the first reduction keeps `K` chunks of rows, split over the threads, the second combines
//! `K` partial results. `K` is a function of the shape alone, so the bits do not depend on
//! the thread count. Chunks are as short as `MIN_CHUNK_ROWS` allows: a loop kernel that
//! computes `x` then sums each chunk as it goes (`describe::columns`), in f32, and the
//! partials' f64 sum keeps the error of a chunk's length, not of all the rows.
//!
//! Sums of f32 and f64 take one more rounding per partial (the error stays within two
//! roundings of `Σ|x|`). A 16-bit sum sums its chunks of `x` cast to f32 (the cast is read
//! in the chunks' kernel), so its partials are f32 and the result is rounded once to the
//! 16-bit type from their f32 total: a partial rounded to 8 bits of mantissa would lose what
//! the f32 accumulation keeps. Products are left whole; max, min and integer sums are exact
//! in any order.

use crate::ir::{Graph, Node, Op, ReduceOp, ValueId};
use crate::DType;

/// Most kept elements a split reduction has: from 256 on, the kernel's chunks of 64 kept
/// elements already give every thread of a small machine work.
pub const MAX_KEPT: usize = 256;

/// Fewest rows in a chunk: below it the chunks' partial results cost more than the split
/// wins.
pub const MIN_CHUNK_ROWS: usize = 256;

/// Most chunks (partial results per kept element).
pub const MAX_CHUNKS: usize = 1024;

/// The split graph, or None when no reduction qualifies.
pub fn split(g: &Graph) -> Option<Graph> {
    let mut out = Graph::new();
    let mut map: Vec<ValueId> = Vec::with_capacity(g.nodes.len());
    let mut changed = false;
    for n in &g.nodes {
        let node = Node {
            inputs: n.inputs.iter().map(|x| map[x.index()]).collect(),
            ..n.clone()
        };
        match chunks(g, n) {
            Some((lead, k)) => {
                changed = true;
                map.push(split_one(&mut out, node, lead, k));
            }
            None => map.push(out.push(node)),
        }
    }
    out.outputs = g.outputs.iter().map(|o| map[o.index()]).collect();
    changed.then_some(out)
}

/// `(leading reduced axes, chunks)` where node `n` is a column reduction worth splitting.
fn chunks(g: &Graph, n: &Node) -> Option<(usize, usize)> {
    let Op::Reduce(op, axes) = &n.op else {
        return None;
    };
    let x = g.node(n.inputs[0]);
    let exact = matches!(op, ReduceOp::Max | ReduceOp::Min) || n.dtype.is_int();
    let sum = *op == ReduceOp::Sum && n.dtype.is_float();
    // A view's reshape may not fold into the read (a transposed input would be copied).
    if !(exact || sum) || x.op.is_view() {
        return None;
    }
    let lead = axes.len();
    if lead == 0 || lead == x.shape.len() || !axes.iter().enumerate().all(|(i, &a)| a == i) {
        return None;
    }
    let rows: usize = x.shape[..lead].iter().product();
    let kept: usize = x.shape[lead..].iter().product();
    if !(crate::describe::reduce::COLUMN_LANES..MAX_KEPT).contains(&kept) {
        return None;
    }
    let k = (2..=MAX_CHUNKS)
        .rev()
        .find(|&k| rows % k == 0 && rows / k >= MIN_CHUNK_ROWS)?;
    Some((lead, k))
}

/// `n` (reducing the first `lead` axes of its input) as a reduction of `k` chunks of rows
/// and one of the chunks' results.
fn split_one(out: &mut Graph, n: Node, lead: usize, k: usize) -> ValueId {
    let Op::Reduce(op, _) = n.op else {
        unreachable!()
    };
    let x = out.node(n.inputs[0]);
    let rows: usize = x.shape[..lead].iter().product();
    let kept = x.shape[lead..].to_vec();
    // A 16-bit sum's partials and total in f32, rounded once at the end (the cast before
    // the reshape: fusion reads a reshaped value of its kernel, not a cast of a reshape).
    let (input, dtype) = if n.dtype.is_half() {
        let wide = out.push(Node {
            op: Op::Cast(DType::F32),
            inputs: n.inputs.clone(),
            shape: x.shape.clone(),
            dtype: DType::F32,
            loc: n.loc,
        });
        (wide, DType::F32)
    } else {
        (n.inputs[0], n.dtype)
    };
    let chunked = out.push(Node {
        op: Op::Reshape,
        inputs: vec![input],
        shape: [vec![k, rows / k], kept.clone()].concat(),
        dtype,
        ..n.clone()
    });
    let partial = out.push(Node {
        op: Op::Reduce(op, vec![1]),
        inputs: vec![chunked],
        shape: [vec![k], kept].concat(),
        dtype,
        ..n.clone()
    });
    let total = out.push(Node {
        op: Op::Reduce(op, vec![0]),
        inputs: vec![partial],
        dtype,
        ..n.clone()
    });
    if dtype == n.dtype {
        return total;
    }
    out.push(Node {
        op: Op::Cast(n.dtype),
        inputs: vec![total],
        ..n
    })
}
