//! What the profiler shows of a program's steps (`diag::profile`): each step's kind, its ops
//! and result type, the bytes it reads and writes and its floating-point operations, built
//! once per program the first time it runs while profiling.

use super::steps::Run;
use super::Executable;
use crate::diag::profile::{ProgramInfo, StepInfo};
use crate::error::type_str;
use crate::fusion::partition::Step;
use crate::ir::{Graph, Op, ValueId};
use crate::shape;
use std::sync::Arc;

/// Ops a label names before it says how many more there are.
const LABEL_OPS: usize = 6;

impl Executable {
    /// This program's steps as the profiler shows them.
    pub(super) fn profile_info(&self) -> Arc<ProgramInfo> {
        self.record
            .profile
            .get_or_init(|| {
                Arc::new(ProgramInfo {
                    id: crate::diag::profile::program_id(),
                    steps: (0..self.steps.len()).map(|i| self.step_info(i)).collect(),
                })
            })
            .clone()
    }

    /// Step `i` as the profiler and the listings name it.
    pub(super) fn step_info(&self, i: usize) -> StepInfo {
        let g = &self.graph;
        let run = &self.steps[i];
        let (kind, nodes): (&'static str, Vec<ValueId>) = match (&self.part.steps[i], &run.run) {
            (Step::Kernel(k), _) => ("loop kernel", k.nodes.clone()),
            (Step::Row(rk), _) => ("row kernel", rk.group.members.clone()),
            (Step::Reduce(v), _) => ("reduce kernel", vec![*v]),
            (_, Run::Matmul { v, .. }) => ("matmul", vec![*v]),
            (Step::Library(v), _) => (g.node(*v).op.name(), vec![*v]),
        };
        let touched: std::collections::BTreeSet<ValueId> =
            run.reads.iter().chain(&run.writes).copied().collect();
        let bytes = touched.into_iter().map(|v| value_bytes(g, v)).sum();
        StepInfo {
            kind,
            label: label(g, &nodes, run.writes.first().copied()),
            bytes,
            flops: nodes.iter().map(|&v| flops(g, v)).sum(),
        }
    }
}

fn value_bytes(g: &Graph, v: ValueId) -> u64 {
    let n = g.node(v);
    (shape::numel(&n.shape) * n.dtype.size()) as u64
}

/// `mul×4, add, tanh, sum -> f32[256]`: the ops that compute (views left out), each once
/// in order of first appearance with its count, then the type of the first value written.
fn label(g: &Graph, nodes: &[ValueId], written: Option<ValueId>) -> String {
    let mut ops: Vec<(&str, usize)> = Vec::new();
    for op in nodes.iter().map(|&v| &g.node(v).op) {
        if op.is_view() || matches!(op, Op::Const(_) | Op::Reshape) {
            continue;
        }
        match ops.iter_mut().find(|(name, _)| *name == op.name()) {
            Some((_, n)) => *n += 1,
            None => ops.push((op.name(), 1)),
        }
    }
    let named: Vec<String> = ops
        .iter()
        .take(LABEL_OPS)
        .map(|&(name, n)| {
            if n > 1 {
                format!("{name}×{n}")
            } else {
                name.to_string()
            }
        })
        .collect();
    let mut s = named.join(", ");
    if ops.len() > LABEL_OPS {
        s.push_str(&format!(" (+{} kinds)", ops.len() - LABEL_OPS));
    }
    if let Some(w) = written.or(nodes.last().copied()) {
        let n = g.node(w);
        s.push_str(&format!(" -> {}", type_str(n.dtype, &n.shape)));
    }
    s
}

/// Floating-point operations of one node: a product's `2mkn`, attention's four products of
/// the scores (the gradient's ten: the scores recomputed and four more products), one per
/// element of arithmetic and reductions (what they read), a convolution's `2 · |y| · |window|
/// · C/groups` (each role: the forward's products, zeros of a dilation included), none for
/// views and integers.
fn flops(g: &Graph, v: ValueId) -> u64 {
    let n = g.node(v);
    if !n.dtype.is_float() && !matches!(n.op, Op::Compare(_)) {
        return 0;
    }
    let numel = |x: ValueId| shape::numel(&g.node(x).shape) as u64;
    match &n.op {
        Op::Matmul => {
            let a = &g.node(n.inputs[0]).shape;
            2 * numel(v) * a.last().copied().unwrap_or(1) as u64
        }
        Op::Attention(_) | Op::AttentionGrad(_) => {
            let k = &g.node(n.inputs[1]).shape;
            let keys = k[k.len().saturating_sub(2)] as u64;
            let per = if matches!(n.op, Op::Attention(_)) {
                4
            } else {
                10
            };
            per * numel(n.inputs[0]) * keys
        }
        Op::Conv(spec) => {
            let (a, b) = (&g.node(n.inputs[0]).shape, &g.node(n.inputs[1]).shape);
            match spec.shapes(a, b, &n.shape) {
                // w = [window.., C/groups, F]: per output element, |window| · C/groups products.
                Ok(s) => {
                    2 * shape::numel(&s.y) as u64 * shape::numel(&s.w) as u64
                        / s.w[s.w.len() - 1] as u64
                }
                Err(_) => 0,
            }
        }
        Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Select => numel(v),
        Op::Reduce(..) | Op::ArgMax(_) | Op::ArgMin(_) => numel(n.inputs[0]),
        _ => 0,
    }
}
