//! What a compiled program's own description holds on the heap: its graphs, schedule,
//! kernel descriptions, buffer plan and per-step tables (`MemoryAnalysis::program_bytes`).
//! A cache of programs holds this per program besides code and arenas: for a one-op eager
//! program it is most of what the program costs (~4 KiB against ~1 KiB of code).
//!
//! Counted from the vectors' capacities where the structure is plain (graphs, signature,
//! tables), each heap block rounded as glibc's allocator rounds it (16-byte granules, 32
//! at least, an 8-byte header); the nested vectors of a step's description and partition
//! entry by a per-step figure, and the per-value maps by a per-value one, both measured
//! (`tests/runtime/cache_memory.rs` checks resident growth against the sum).

use super::Executable;
use crate::ir::Graph;
use crate::units::heap_block as block;

/// Heap bytes of a step beyond the vectors counted here: its kernel description (loop
/// plan, reduce or row plan with their per-operand strides), its partition entry (node,
/// input and output lists), its read/write lists and operand maps. Measured with one-op
/// and small fused programs.
const STEP_BYTES: usize = 1024;
/// Heap bytes per graph value in the partition and plan beyond `place`: views' maps,
/// materialisation flags, interval records.
const VALUE_BYTES: usize = 96;

fn vec_bytes<T>(v: &Vec<T>) -> usize {
    block(v.capacity() * std::mem::size_of::<T>())
}

/// Heap bytes of a graph: its node table, each node's operand and shape lists, and the
/// side tables.
pub(crate) fn graph_bytes(g: &Graph) -> usize {
    vec_bytes(&g.nodes)
        + g.nodes
            .iter()
            .map(|n| vec_bytes(&n.inputs) + vec_bytes(&n.shape))
            .sum::<usize>()
        + vec_bytes(&g.outputs)
        + vec_bytes(&g.checkpoints)
        + vec_bytes(&g.names)
        + g.names
            .iter()
            .map(|(_, s)| block(s.capacity()))
            .sum::<usize>()
        + vec_bytes(&g.grad_ranges)
}

impl Executable {
    /// Heap bytes this program's description holds (not its code, arenas or
    /// constants, counted apart), its control-flow sub-programs' included.
    pub(crate) fn description_bytes(&self) -> usize {
        let steps = self.part.steps.len();
        let values = self.graph.nodes.len();
        let text: usize = self
            .compiled
            .clif
            .iter()
            .chain(&self.compiled.asm)
            .map(|s| block(s.capacity()))
            .sum();
        block(std::mem::size_of::<Executable>() + 16)
            + graph_bytes(&self.record.traced)
            + graph_bytes(&self.graph)
            + steps * STEP_BYTES
            + values * VALUE_BYTES
            + vec_bytes(&self.plan.place)
            + vec_bytes(&self.inputs.signature.args)
            + self
                .inputs
                .signature
                .args
                .iter()
                .map(|a| vec_bytes(&a.shape))
                .sum::<usize>()
            + vec_bytes(&self.steps)
            + text
            + self.compiled.code.held_bytes()
            + self
                .controls()
                .map(|(_, c)| c.description_bytes())
                .sum::<usize>()
    }
}
