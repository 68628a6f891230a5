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
//! operands itself. Nor is a bf16 convolution on a CPU with AVX-512 BF16 whose features the
//! library reads in pairs (`library/conv/pairs.rs`): it becomes the convolution of the bf16 operands giving its
//! f32 sums, cast to bf16 (so rounded once, in the kernel that reads it). FIXME: on other
//! CPUs the f32 operands are whole temporaries (an AVX2 tile kernel for `gemm16` would need
//! neither).

use crate::ir::{Graph, Node, Op, ValueId};
use crate::DType;
use std::collections::HashMap;

/// Whether `n` runs as an f32 step: it computes on 16-bit floats (its own type, or for a
/// product asked for an f32 result by `Tensor::matmul_with`, its operands') and its step does
/// not read them as they are (`native`). (Collectives too: MPI has no 16-bit float type; a
/// sum accumulates in f32.)
fn widened_node(g: &Graph, n: &Node, native: &dyn Fn(&Graph, &Node) -> bool) -> bool {
    let d = match n.op {
        Op::Matmul => g.node(n.inputs[0]).dtype,
        _ => n.dtype,
    };
    let library = matches!(
        n.op,
        Op::Matmul
            | Op::Conv(_)
            | Op::ScatterAdd(_)
            | Op::AllReduce(_)
            | Op::AllGather(..)
            | Op::ReduceScatter(..)
            | Op::BroadcastFrom(_)
    );
    d.is_half() && library && !native(g, n)
}

/// Whether `n` is a convolution of 16-bit operands its step reads as they are: it gives
/// its f32 sums, cast to its type.
fn summed_in_f32(g: &Graph, n: &Node, native: &dyn Fn(&Graph, &Node) -> bool) -> bool {
    matches!(n.op, Op::Conv(_)) && n.dtype.is_half() && native(g, n)
}

/// The rewritten graph, or None when no step computes on 16-bit floats. The steps `native`
/// accepts read their 16-bit operands (the executor's test: `library::runs_natively`).
pub fn widen(g: &Graph, native: &dyn Fn(&Graph, &Node) -> bool) -> Option<Graph> {
    let rewritten = |n: &Node| widened_node(g, n, native) || summed_in_f32(g, n, native);
    if !g.nodes.iter().any(rewritten) {
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
        let v = if summed_in_f32(g, n, native) {
            let f = out.push(Node {
                inputs,
                dtype: DType::F32,
                ..n.clone()
            });
            out.push(cast(f, n.shape.clone(), n.dtype, n))
        } else if widened_node(g, n, native) {
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
