//! The proof that a partition's descriptions address only their buffers: every access of a
//! loop kernel, row kernel or reduction stays inside the buffer it names for every point of
//! the iteration space, and each kernel output is written exactly once per element (its access
//! covers the output's buffer one to one). Debug builds check every compiled program;
//! `tests/runtime/passes.rs` shows it rejects broken descriptions.

use super::Description;
use crate::fusion::partition::{read_map, Partition, Step};
use crate::ir::{Graph, Op, ValueId};

/// Check every step's description against its buffers.
pub fn check(g: &Graph, p: &Partition, described: &[Description]) -> Result<(), String> {
    if described.len() != p.steps.len() {
        return Err(format!(
            "{} descriptions for {} steps",
            described.len(),
            p.steps.len()
        ));
    }
    for (si, (s, d)) in p.steps.iter().zip(described).enumerate() {
        let at = |what: String| format!("step {si}: {what}");
        match (s, d) {
            (Step::Kernel(k), Description::Loop(pl)) => {
                let buffers: Vec<ValueId> = k.inputs.iter().chain(&k.outputs).copied().collect();
                let dims: Vec<usize> = pl.dims.clone();
                for (ai, a) in pl.accesses.iter().enumerate() {
                    let buf = buffer(&buffers, a.ptr, ai).map_err(at)?;
                    let axes: Vec<(usize, i64)> =
                        dims.iter().copied().zip(a.strides.clone()).collect();
                    inside(g, buf, a.offset, &axes).map_err(|e| at(format!("access {ai}: {e}")))?;
                }
                for (j, &ai) in pl.outs.iter().enumerate() {
                    let a = &pl.accesses[ai];
                    // A column sum is written once per chunk and kept position: its dims
                    // along the rows (stride 0) add to the same elements.
                    let sums = pl.accumulators.contains(&j);
                    let axes: Vec<(usize, i64)> = (dims.iter().copied().zip(a.strides.clone()))
                        .filter(|&(_, st)| !(sums && st == 0))
                        .collect();
                    if sums && !matches!(g.node(k.outputs[j]).op, Op::Reduce(..)) {
                        return Err(at(format!("loop kernel output {j} accumulates")));
                    }
                    // The lanes of a vector walk the innermost dim: each must add into an
                    // element of its own.
                    if sums && a.strides.last() == Some(&0) && dims.last() > Some(&1) {
                        return Err(at(format!(
                            "column sum {j}: every lane adds into one element"
                        )));
                    }
                    one_to_one(g, k.outputs[j], a.offset, &axes)
                        .map_err(|e| at(format!("loop kernel output {j}: {e}")))?;
                }
            }
            (Step::Row(rk), Description::Row(pl)) => {
                let buffers: Vec<ValueId> = rk.inputs.iter().chain(&rk.outputs).copied().collect();
                let axes_of = |o_strides: &[i64], i_stride: i64| -> Vec<(usize, i64)> {
                    let mut axes: Vec<(usize, i64)> = pl
                        .o_dims
                        .iter()
                        .copied()
                        .zip(o_strides.iter().copied())
                        .collect();
                    axes.push((pl.n, i_stride));
                    axes
                };
                for (ai, a) in pl.accesses.iter().enumerate() {
                    let buf = buffer(&buffers, a.ptr, ai).map_err(at)?;
                    inside(g, buf, a.offset, &axes_of(&a.o_strides, a.i_stride))
                        .map_err(|e| at(format!("row access {ai}: {e}")))?;
                }
                for (j, &ai) in pl.outs.iter().enumerate() {
                    let a = &pl.accesses[ai];
                    let out = rk.outputs[j];
                    let n = g.node(out);
                    // A row-level output (a reduction) is written once per row.
                    let row_level =
                        matches!(n.op, Op::Reduce(..)) || !rk.group.is_element_shape(&n.shape);
                    let mut axes = axes_of(&a.o_strides, a.i_stride);
                    if row_level {
                        if a.i_stride != 0 && pl.n > 1 {
                            return Err(at(format!("row-level output {j} moves along the row")));
                        }
                        axes.pop();
                    }
                    one_to_one(g, out, a.offset, &axes)
                        .map_err(|e| at(format!("row kernel output {j}: {e}")))?;
                }
            }
            (Step::Reduce(v), Description::Reduce(r)) => {
                let input = g.node(*v).inputs[0];
                let root = read_map(g, p, input).root;
                let axes: Vec<(usize, i64)> = r
                    .kept
                    .iter()
                    .chain(&r.red)
                    .map(|d| (d.size, d.stride))
                    .collect();
                inside(g, root, r.offset, &axes)
                    .map_err(|e| at(format!("reduction input: {e}")))?;
            }
            (Step::Library(_), Description::Library) => {}
            _ => return Err(at("a description of another kind of step".into())),
        }
    }
    Ok(())
}

/// The buffer access `ai` names by its pointer index `ptr`.
fn buffer(buffers: &[ValueId], ptr: usize, ai: usize) -> Result<ValueId, String> {
    let n = buffers.len();
    (buffers.get(ptr).copied()).ok_or_else(|| format!("access {ai} names buffer {ptr} of {n}"))
}

/// Elements of buffer `v`.
fn len(g: &Graph, v: ValueId) -> i64 {
    g.node(v).shape.iter().product::<usize>() as i64
}

/// Every point of `axes` (size, stride) from `offset` is an element of `buf`.
fn inside(g: &Graph, buf: ValueId, offset: i64, axes: &[(usize, i64)]) -> Result<(), String> {
    if axes.iter().any(|a| a.0 == 0) {
        return Ok(()); // no point
    }
    let (mut lo, mut hi) = (offset, offset);
    for &(size, stride) in axes {
        let span = (size as i64 - 1) * stride;
        lo += span.min(0);
        hi += span.max(0);
    }
    let n = len(g, buf);
    if lo < 0 || hi >= n {
        return Err(format!(
            "elements {lo}..={hi} of %{} ({n} elements; offset {offset}, dims and strides {axes:?})",
            buf.0
        ));
    }
    Ok(())
}

/// `axes` from `offset` visit every element of `out` exactly once: offset 0, and the strides,
/// smallest first, those of a dense layout of the sizes.
fn one_to_one(g: &Graph, out: ValueId, offset: i64, axes: &[(usize, i64)]) -> Result<(), String> {
    let mut live: Vec<(usize, i64)> = axes.iter().copied().filter(|a| a.0 != 1).collect();
    let points: i64 = axes.iter().map(|a| a.0 as i64).product();
    if points != len(g, out) || (points > 0 && offset != 0) {
        return Err(format!(
            "{points} points from offset {offset} for %{} of {} elements",
            out.0,
            len(g, out)
        ));
    }
    if points == 0 {
        return Ok(());
    }
    live.sort_by_key(|a| a.1.unsigned_abs());
    let mut dense = 1i64;
    for &(size, stride) in &live {
        if stride != dense {
            return Err(format!(
                "strides {axes:?} are not a dense layout of %{} (stride {stride} where {dense})",
                out.0
            ));
        }
        dense *= size as i64;
    }
    Ok(())
}
