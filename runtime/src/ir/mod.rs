//! The graph IR: an SSA list of nodes in topological order, each with a static
//! shape and dtype. Parameters and constants are nodes too, so a `ValueId` is
//! simply the index of the node that defines it.
//!
//! Invariants (checked by [`verify`]): every input of a node is defined
//! earlier; elementwise ops have operands of exactly their own shape (the
//! tracer inserts explicit `broadcast` nodes); dtypes follow the op's rule;
//! `param k` nodes are numbered 0.. in order of appearance.

pub mod conv;
pub mod infer;
mod op;
pub use print::{attr_text, literal_text};
mod parse;
mod print;
pub mod semantics;
mod verify;
pub mod window;

pub use conv::{ConvRole, ConvShapes, ConvSpec};
pub use op::{
    AttnSpec, BinaryOp, CmpOp, CondOp, MaskKind, Op, RandomOp, ReduceOp, ScanOp, UnaryOp, WhileOp,
};
pub use parse::parse;
pub use verify::verify;
pub use window::{WindowRole, WindowSpec};

use crate::{DType, SourceLoc};

/// Index of the node that defines a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

impl ValueId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub op: Op,
    pub inputs: Vec<ValueId>,
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// The user's source line that created the node (not part of the text form).
    pub loc: Option<SourceLoc>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub outputs: Vec<ValueId>,
    /// Regions marked by `checkpoint` while tracing: autodiff recomputes
    /// them in the backward pass instead of saving their values. Consumed by
    /// autodiff; not part of the text form.
    pub checkpoints: Vec<CheckpointRegion>,
    /// Names given to values by `checkpoint_name` (for checkpoint policies).
    pub names: Vec<(ValueId, String)>,
    /// Node ranges `(forward start, backward start, end)` of each gradient
    /// taken while tracing: what the backward reads from before its start is
    /// a saved residual (`Lowered::saved_residuals`).
    pub grad_ranges: Vec<(usize, usize, usize)>,
    /// Nodes the memory-budget pass recomputes late: partitioning starts a
    /// new kernel at each (never merging it into an earlier kernel).
    pub late: Vec<ValueId>,
}

/// What a checkpoint region may keep from the forward pass.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Save every value (as if there were no checkpoint).
    EverythingSaveable,
    /// Recompute every value of the region from its inputs.
    NothingSaveable,
    /// Save the results of matmuls and of `attention` (two products fused: its output is
    /// the second's, as `dots_saveable` keeps `P @ V` of an unfused attention; its score
    /// matrix is never a value), recompute the rest.
    DotsSaveable,
    /// Save the values named by `checkpoint_name` with one of these names.
    SaveOnlyTheseNames(Vec<String>),
}

impl Policy {
    pub fn save_only_these_names(names: &[&str]) -> Policy {
        Policy::SaveOnlyTheseNames(names.iter().map(|s| s.to_string()).collect())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointRegion {
    /// The region's nodes, in order (a contiguous range of the trace).
    pub nodes: Vec<ValueId>,
    pub policy: Policy,
}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }

    pub fn node(&self, v: ValueId) -> &Node {
        &self.nodes[v.index()]
    }

    pub fn push(&mut self, node: Node) -> ValueId {
        self.nodes.push(node);
        ValueId(self.nodes.len() as u32 - 1)
    }

    /// The parameter nodes, in parameter order.
    pub fn params(&self) -> Vec<ValueId> {
        let mut ps: Vec<(usize, ValueId)> = self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| match n.op {
                Op::Param(k) => Some((k, ValueId(i as u32))),
                _ => None,
            })
            .collect();
        ps.sort();
        ps.into_iter().map(|(_, v)| v).collect()
    }

    /// Number of `captured k` slots the graph refers to.
    pub fn num_captured(&self) -> usize {
        self.nodes
            .iter()
            .filter_map(|n| match n.op {
                Op::Captured(k) => Some(k + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// How many nodes read each value (graph outputs count as readers).
    pub fn use_counts(&self) -> Vec<usize> {
        let mut uses = vec![0; self.nodes.len()];
        for n in &self.nodes {
            for i in &n.inputs {
                uses[i.index()] += 1;
            }
        }
        for o in &self.outputs {
            uses[o.index()] += 1;
        }
        uses
    }

    /// The text form (see `print.rs`); `parse` reads it back.
    pub fn to_text(&self) -> String {
        print::print(self)
    }
}

impl std::fmt::Display for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_text())
    }
}
