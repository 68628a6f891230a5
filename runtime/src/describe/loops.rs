//! Loop kernels (elementwise steps): the collapsed iteration space and how each operand is
//! addressed in it. `begin..end` of a kernel's call ranges over the first collapsed dim.

use crate::fusion::partition::{const_value, Kernel, Partition};
use crate::ir::{Graph, Op, ValueId};
use crate::shape::restride;
use crate::{shape, DType};
use std::collections::HashMap;

/// How one operand is addressed in the loop nest.
pub struct Access {
    /// Index into `ptrs`.
    pub ptr: usize,
    pub dtype: DType,
    /// Element offset of the first iteration point.
    pub offset: i64,
    /// Stride in elements along each collapsed dimension (may be 0 or negative).
    pub strides: Vec<i64>,
}

pub struct LoopDescription {
    /// Collapsed iteration dims (at least one; `begin..end` ranges over the first).
    pub dims: Vec<usize>,
    pub accesses: Vec<Access>,
    /// Access of each value read from memory in the kernel: inputs read
    /// directly, folded views, and computed views (read through their map).
    pub reads: HashMap<ValueId, usize>,
    /// Access of each output, in output order.
    pub outs: Vec<usize>,
    /// The outputs (indices into `outs`) that are fused column sums: read, added to and
    /// stored through their access along the rows, so the executor zeroes them first.
    pub accumulators: Vec<usize>,
}

/// Each read's `(pointer, dtype, offset, strides over the kernel's shape)`, and the read of
/// each value.
type Reads = (Vec<(usize, DType, i64, Vec<i64>)>, HashMap<ValueId, usize>);

fn reads(g: &Graph, p: &Partition, k: &Kernel) -> Reads {
    let contiguous: Vec<i64> = shape::strides(&k.shape)
        .into_iter()
        .map(|x| x as i64)
        .collect();
    let mut raw: Vec<(usize, DType, i64, Vec<i64>)> = Vec::new();
    let mut reads = HashMap::new();
    let in_kernel: std::collections::HashSet<ValueId> = k.nodes.iter().copied().collect();
    let ptr_of = |x: ValueId| {
        k.inputs
            .iter()
            .position(|y| *y == x)
            .expect("read value is a kernel input")
    };
    let add_read = |x: ValueId,
                    raw: &mut Vec<(usize, DType, i64, Vec<i64>)>,
                    reads: &mut HashMap<ValueId, usize>| {
        if reads.contains_key(&x) || const_value(g, x).is_some() {
            return;
        }
        let entry = match p.views.get(&x) {
            Some(a)
                if !(in_kernel.contains(&x) && !g.node(x).op.is_view())
                    && !k.inputs.contains(&x) =>
            {
                (ptr_of(a.root), g.node(x).dtype, a.offset, a.strides.clone())
            }
            _ => (ptr_of(x), g.node(x).dtype, 0, contiguous.clone()),
        };
        raw.push(entry);
        reads.insert(x, raw.len() - 1);
    };
    for &v in &k.nodes {
        let n = g.node(v);
        if n.op.is_view() {
            add_read(v, &mut raw, &mut reads);
            continue;
        }
        if matches!(n.op, Op::Reduce(..)) {
            continue; // a fused column sum: reads its operand in the kernel (`columns`)
        }
        for &x in &n.inputs {
            if in_kernel.contains(&x) {
                continue;
            }
            add_read(x, &mut raw, &mut reads);
        }
    }
    (raw, reads)
}

/// The strides of each read of kernel `k` over its shape (`columns` asks whether they walk
/// another shape).
pub fn strides_over_shape(g: &Graph, p: &Partition, k: &Kernel) -> Vec<Vec<i64>> {
    reads(g, p, k).0.into_iter().map(|r| r.3).collect()
}

pub fn describe(g: &Graph, p: &Partition, k: &Kernel) -> LoopDescription {
    let (mut raw, reads) = reads(g, p, k);
    // The shape walked: the kernel's, or the `[chunks, rows, ..kept]` of its column sums.
    let s = k.columns.as_ref().unwrap_or(&k.shape);
    if k.columns.is_some() {
        for r in raw.iter_mut() {
            r.3 = restride(&k.shape, &r.3, s).expect("`columns::fuse` checked every access");
        }
    }
    let contiguous: Vec<i64> = shape::strides(s).into_iter().map(|x| x as i64).collect();
    let mut outs = Vec::new();
    let mut accumulators = Vec::new();
    for (j, &o) in k.outputs.iter().enumerate() {
        let strides = match g.node(o).op {
            // A column sum: one element per chunk and kept position, the same along the rows.
            // Over `[K, M, ..kept]` that is the walk's own strides with `M`'s taken by `K`.
            Op::Reduce(..) => {
                accumulators.push(j);
                let mut st = contiguous.clone();
                (st[0], st[1]) = (st[1], 0);
                st
            }
            _ => contiguous.clone(),
        };
        raw.push((k.inputs.len() + j, g.node(o).dtype, 0, strides));
        outs.push(raw.len() - 1);
    }
    // Collapse: drop size-1 dims, merge a dim into the previous one where
    // every access is linear across the pair.
    let raw_strides: Vec<Vec<i64>> = raw.iter().map(|r| r.3.clone()).collect();
    let (mut dims, mut st) = crate::describe::collapse(s, &raw_strides);
    if dims.is_empty() {
        dims.push(1);
        for s in st.iter_mut() {
            s.push(1);
        }
    }
    let accesses = raw
        .into_iter()
        .zip(st)
        .map(|((ptr, dtype, offset, _), strides)| Access {
            ptr,
            dtype,
            offset,
            strides,
        })
        .collect();
    LoopDescription {
        dims,
        accesses,
        reads,
        outs,
        accumulators,
    }
}

/// Whether the kernel (described by `pl`) may write `output` over `input`: every read of the
/// input is at exactly the position the output is written (same offset and strides), so each
/// element is read before it is overwritten.
pub fn inplace_ok(pl: &LoopDescription, k: &Kernel, input: ValueId, output: ValueId) -> bool {
    let (Some(pi), Some(j)) = (
        k.inputs.iter().position(|x| *x == input),
        k.outputs.iter().position(|x| *x == output),
    ) else {
        return false;
    };
    // A column sum is zeroed before the kernel runs and read as it goes: never over an input.
    if pl.accumulators.contains(&j) {
        return false;
    }
    let out = &pl.accesses[pl.outs[j]];
    pl.accesses
        .iter()
        .filter(|a| a.ptr == pi)
        .all(|a| a.offset == 0 && a.strides == out.strides && a.dtype.size() == out.dtype.size())
}
