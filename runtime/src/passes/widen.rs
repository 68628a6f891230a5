//! The library steps that compute in f32 on 16-bit floats: a `matmul`, `attention`, its
//! gradient, a `scatter_add` or a collective whose result is `bf16` or `f16` becomes the f32
//! step on its operands cast to f32, its result cast back (rounded once). The casts are
//! elementwise:
//! fusion puts them in the kernels around the step (a producer's kernel writes the f32
//! operand, the consumer's reads the f32 result), and the step runs the f32 code, whose
//! accumulation in f32 is what the 16-bit op means (`DType::BF16`).
//!
//! FIXME: the f32 operands are whole temporaries; a GEMM reading 16-bit panels
//! (`vdpbf16ps` where the CPU has it) would need neither them nor their memory.

use crate::ir::{Graph, Node, Op, ValueId};
use crate::DType;
use std::collections::HashMap;

/// Whether `op` on 16-bit floats runs as the f32 library step.
fn widened(op: &Op) -> bool {
    // (Collectives too: MPI has no 16-bit float type; a sum accumulates in f32.)
    matches!(
        op,
        Op::Matmul
            | Op::Attention(_)
            | Op::AttentionGrad(_)
            | Op::ScatterAdd(_)
            | Op::AllReduce(_)
            | Op::AllGather(..)
            | Op::ReduceScatter(..)
            | Op::BroadcastFrom(_)
    )
}

/// The rewritten graph, or None when no step computes on 16-bit floats.
pub fn widen(g: &Graph) -> Option<Graph> {
    if !g.nodes.iter().any(|n| n.dtype.is_half() && widened(&n.op)) {
        return None;
    }
    let mut out = Graph::new();
    // The value each old node stands for, and, for a widened multi-output step, its f32
    // node (its `get`s read that one).
    let mut map: Vec<ValueId> = Vec::with_capacity(g.nodes.len());
    let mut raw: HashMap<ValueId, ValueId> = HashMap::new();
    let mut wide: HashMap<ValueId, ValueId> = HashMap::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let old = ValueId(i as u32);
        let inputs: Vec<ValueId> = n.inputs.iter().map(|x| map[x.index()]).collect();
        let v = if n.dtype.is_half() && widened(&n.op) {
            let inputs = (inputs.iter())
                .map(|&x| {
                    let d = out.node(x).dtype;
                    if !d.is_half() {
                        return x;
                    }
                    *wide.entry(x).or_insert_with(|| {
                        let shape = out.node(x).shape.clone();
                        out.push(cast(x, shape, DType::F32, n))
                    })
                })
                .collect();
            let f = out.push(Node {
                inputs,
                dtype: DType::F32,
                ..n.clone()
            });
            raw.insert(old, f);
            out.push(cast(f, n.shape.clone(), n.dtype, n))
        } else if let (Op::Get(_), Some(&f)) = (&n.op, n.inputs.first().and_then(|x| raw.get(x))) {
            let got = out.push(Node {
                inputs: vec![f],
                dtype: DType::F32,
                ..n.clone()
            });
            out.push(cast(got, n.shape.clone(), n.dtype, n))
        } else {
            out.push(Node {
                inputs,
                ..n.clone()
            })
        };
        map.push(v);
    }
    out.outputs = g.outputs.iter().map(|o| map[o.index()]).collect();
    Some(out)
}

/// `x` (of `shape`) cast to `to`, attributed to `n`'s source line.
fn cast(x: ValueId, shape: Vec<usize>, to: DType, n: &Node) -> Node {
    Node {
        op: Op::Cast(to),
        inputs: vec![x],
        shape,
        dtype: to,
        loc: n.loc,
    }
}
