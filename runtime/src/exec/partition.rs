//! Splitting a graph into kernels: each kernel is one loop nest over an
//! iteration shape, computing a set of same-shaped elementwise nodes.
//!
//! This is the foundation's placeholder for the fusion pass: all elementwise
//! nodes of one shape go into one kernel, unless that would make a kernel
//! depend on a later one (then a new kernel starts). Broadcasts are not
//! computed: the consuming kernel reads the source with stride 0. Constants
//! are never materialised: a kernel splats them.
//!
//! Invariant: kernel k reads only parameters, captured tensors and outputs of
//! kernels < k, so running kernels in index order is a valid schedule.

use crate::error::type_str;
use crate::ir::{Graph, Op, ValueId};
use std::fmt::Write;

#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The iteration shape (the shape of every node computed here).
    pub shape: Vec<usize>,
    /// Nodes computed in the kernel, in topological order.
    pub nodes: Vec<ValueId>,
    /// Materialised values read (parameters, captured, other kernels' outputs).
    pub inputs: Vec<ValueId>,
    /// Values written to buffers: graph outputs and values other kernels read.
    pub outputs: Vec<ValueId>,
}

/// Whether a value lives in a buffer (as opposed to being splatted).
pub fn is_const_like(g: &Graph, v: ValueId) -> bool {
    let n = g.node(v);
    match n.op {
        Op::Const(_) => true,
        Op::Broadcast => matches!(g.node(n.inputs[0]).op, Op::Const(_)),
        _ => false,
    }
}

pub fn partition(g: &Graph) -> Vec<Kernel> {
    let mut kernel_of: Vec<Option<usize>> = vec![None; g.nodes.len()];
    let mut kernels: Vec<Kernel> = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let v = ValueId(i as u32);
        if !(n.op.is_elementwise() || n.op == Op::Broadcast) {
            continue;
        }
        // The kernels this node's operands come from, seen from kernel `k`.
        let producers: Vec<usize> = n.inputs.iter().filter_map(|x| kernel_of[x.index()]).collect();
        let candidate = kernels.iter().rposition(|k| k.shape == n.shape);
        let k = match candidate {
            Some(k) if producers.iter().all(|&p| p <= k) && !(n.op == Op::Broadcast && producers.contains(&k)) => k,
            _ => {
                kernels.push(Kernel { shape: n.shape.clone(), nodes: vec![], inputs: vec![], outputs: vec![] });
                kernels.len() - 1
            }
        };
        kernel_of[i] = Some(k);
        kernels[k].nodes.push(v);
    }
    for (k, kernel) in kernels.iter_mut().enumerate() {
        for &v in &kernel.nodes {
            let n = g.node(v);
            for &x in &n.inputs {
                let internal = kernel_of[x.index()] == Some(k) && n.op != Op::Broadcast;
                if !internal && !is_const_like(g, x) && !kernel.inputs.contains(&x) {
                    kernel.inputs.push(x);
                }
            }
        }
    }
    // Outputs: read by another kernel, or returned.
    let mut needed = vec![false; g.nodes.len()];
    for kernel in &kernels {
        for &x in &kernel.inputs {
            needed[x.index()] = true;
        }
    }
    for &o in &g.outputs {
        needed[o.index()] = true;
    }
    for kernel in kernels.iter_mut() {
        kernel.outputs = kernel.nodes.iter().copied().filter(|v| needed[v.index()]).collect();
    }
    kernels.retain(|k| !k.outputs.is_empty());
    kernels
}

/// Text of the kernel list, for `Lowered::as_text`.
pub fn kernels_text(g: &Graph, kernels: &[Kernel]) -> String {
    let mut s = String::new();
    for (i, k) in kernels.iter().enumerate() {
        let list = |vs: &[ValueId]| vs.iter().map(|v| format!("%{}", v.0)).collect::<Vec<_>>().join(", ");
        let dtype = g.node(k.nodes[0]).dtype;
        writeln!(
            s,
            "kernel k{i} over {} reads ({}) writes ({})",
            type_str(dtype, &k.shape).split_once('[').map(|(_, r)| format!("[{r}")).unwrap_or_default(),
            list(&k.inputs),
            list(&k.outputs)
        )
        .unwrap();
        for &v in &k.nodes {
            let n = g.node(v);
            let ins = n.inputs.iter().map(|x| format!("%{}", x.0)).collect::<Vec<_>>().join(", ");
            writeln!(s, "  %{} = {} {} : {}", v.0, n.op.name(), ins, type_str(n.dtype, &n.shape)).unwrap();
        }
    }
    s
}
