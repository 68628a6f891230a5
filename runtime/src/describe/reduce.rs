//! The description of a reduction step, independent of any backend: the kept and the reduced
//! dimensions of its input (merged where their strides allow), the input's offset, and whether
//! it runs in row form (the reduced run contiguous) or column form (the kept run contiguous).

use crate::fusion::partition::{read_map, Partition};
use crate::ir::{Graph, Op, ReduceOp, ValueId};
use crate::DType;

/// The column form needs a kept run of at least this many elements: one vector of the column
/// kernel (the Cranelift reduction kernels' 4 lanes; `codegen/reduce.rs` asserts it).
pub const COLUMN_LANES: usize = 4;

#[derive(Clone, Copy, Debug)]
pub struct Dim {
    pub size: usize,
    /// Input stride in elements.
    pub stride: i64,
}

#[derive(Debug)]
pub struct ReduceDescription {
    pub op: ReduceOp,
    pub dtype: DType,
    pub offset: i64,
    pub kept: Vec<Dim>,
    pub red: Vec<Dim>,
    pub column: bool,
}

fn merge(dims: Vec<Dim>) -> Vec<Dim> {
    let mut out: Vec<Dim> = Vec::new();
    for d in dims.into_iter().filter(|d| d.size != 1) {
        match out.last_mut() {
            Some(p) if p.stride == d.stride * d.size as i64 => {
                p.size *= d.size;
                p.stride = d.stride;
            }
            _ => out.push(d),
        }
    }
    out
}

/// The description of reduction step `v`.
pub fn describe(g: &Graph, p: &Partition, v: ValueId) -> ReduceDescription {
    let n = g.node(v);
    let Op::Reduce(op, axes) = &n.op else {
        unreachable!()
    };
    let x = g.node(n.inputs[0]);
    let a = read_map(g, p, n.inputs[0]);
    let mut kept = Vec::new();
    let mut red = Vec::new();
    for (d, &size) in x.shape.iter().enumerate() {
        let dim = Dim {
            size,
            stride: a.strides[d],
        };
        if axes.contains(&d) {
            red.push(dim);
        } else {
            kept.push(dim);
        }
    }
    // Kept dims merge only where the (contiguous) output is linear too, which
    // holds for adjacent kept dims; their input strides decide.
    let mut kept = merge(kept);
    let mut red = merge(red);
    if kept.is_empty() {
        kept.push(Dim { size: 1, stride: 0 });
    }
    if red.is_empty() {
        red.push(Dim { size: 1, stride: 1 });
    }
    let row_ok = red.last().unwrap().stride == 1;
    let column =
        !row_ok && kept.last().unwrap().stride == 1 && kept.last().unwrap().size >= COLUMN_LANES;
    ReduceDescription {
        op: *op,
        dtype: n.dtype,
        offset: a.offset,
        kept,
        red,
        column,
    }
}

/// `(outer extent, total input elements, chunk alignment)` of a reduction step.
pub fn extent(r: &ReduceDescription) -> (usize, usize, usize) {
    let align = if r.column && r.kept.len() == 1 { 64 } else { 1 };
    (
        r.kept[0].size,
        r.kept.iter().chain(&r.red).map(|d| d.size).product(),
        align,
    )
}
