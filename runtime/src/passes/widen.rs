//! The library steps that compute in f32 on 16-bit floats: a `matmul`, a convolution, a
//! `scatter_add` or a collective whose result is `bf16` or `f16` becomes the f32 step on
//! its operands cast to f32, its result cast back (rounded once). (`attention` and its
//! gradient read 16-bit operands themselves: `library/attention/staged.rs`.) The casts are
//! elementwise:
//! fusion puts them in the kernels around the step (a producer's kernel writes the f32
//! operand, the consumer's reads the f32 result), and the step runs the f32 code, whose
//! accumulation in f32 is what the 16-bit op means (`DType::BF16`).
//!
//! A 16-bit `matmul` on a CPU with AVX-512 is not widened: `library/gemm16.rs` reads its
//! operands itself. FIXME: on other CPUs the f32 operands are whole temporaries (an AVX2
//! tile kernel for `gemm16` would need neither).

use crate::ir::{Graph, Node, Op, ValueId};
use crate::DType;
use std::collections::HashMap;

/// Whether `op` on 16-bit floats of type `d` runs as the f32 library step, where products
/// of the types `native` accepts run as they are.
fn widened(op: &Op, d: DType, native: &dyn Fn(DType) -> bool) -> bool {
    if *op == Op::Matmul && native(d) {
        return false;
    }
    // (Collectives too: MPI has no 16-bit float type; a sum accumulates in f32.)
    matches!(
        op,
        Op::Matmul
            | Op::Conv(_)
            | Op::ScatterAdd(_)
            | Op::AllReduce(_)
            | Op::AllGather(..)
            | Op::ReduceScatter(..)
            | Op::BroadcastFrom(_)
    )
}

/// Whether `n` runs as the f32 step: it computes on 16-bit floats (its own type, or for a
/// product asked for an f32 result by `Tensor::matmul_with`, its operands') that its step
/// does not take as they are.
fn widened_node(g: &Graph, n: &Node, native: &dyn Fn(DType) -> bool) -> bool {
    let d = match n.op {
        Op::Matmul => g.node(n.inputs[0]).dtype,
        _ => n.dtype,
    };
    d.is_half() && widened(&n.op, d, native)
}

/// The rewritten graph, or None when no step computes on 16-bit floats. Products of the
/// 16-bit types `native` accepts are kept (the executor's test of its GEMMs:
/// `library::runs_gemm16`).
pub fn widen(g: &Graph, native: &dyn Fn(DType) -> bool) -> Option<Graph> {
    if !g.nodes.iter().any(|n| widened_node(g, n, native)) {
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
        let v = if widened_node(g, n, native) {
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
            if n.dtype == DType::F32 {
                f // (a product asked for its f32 sums)
            } else {
                out.push(cast(f, n.shape.clone(), n.dtype, n))
            }
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
