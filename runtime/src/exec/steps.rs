//! What a call runs: the compiled program's steps in their scheduled order, each carrying
//! what it needs to run, so that `Executable::run` is one loop over them.

use super::control::ControlProgram;
use super::parallel::Split;
use crate::codegen::{GemmSplit, KernelFn};
use crate::fusion::partition::Affine;
use crate::ir::ValueId;

/// One step of a call: the values whose buffers it reads and writes (in this order, the
/// pointers a compiled kernel takes) and how it runs.
pub(crate) struct RunStep {
    pub reads: Vec<ValueId>,
    pub writes: Vec<ValueId>,
    pub run: Run,
}

/// How a step runs.
pub(crate) enum Run {
    /// A compiled kernel (loop, row or reduction) over its range, split across threads;
    /// `zeroed`: the operands (index, bytes) it adds into, zeroed before it runs (a loop
    /// kernel's fused column sums).
    Kernel {
        f: KernelFn,
        split: Split,
        zeroed: Vec<(usize, usize)>,
    },
    /// The product `v` on the GEMM libraries, its two operands read through their maps, split
    /// as the target forces (`Target::gemm_split`) or by its shape.
    Matmul {
        v: ValueId,
        operands: Vec<Affine>,
        split: Option<GemmSplit>,
    },
    /// Another op `v` of the runtime library, its operands read through their maps (a
    /// constant read by it alone is one element read with zero strides); a collective is
    /// started here and waited for later (`Collective`).
    Library {
        v: ValueId,
        operands: Vec<Affine>,
        collective: Option<Collective>,
    },
    /// The control-flow node `v`, running its compiled sub-programs.
    Control { v: ValueId, program: ControlProgram },
}

/// Where a collective step stages its operand and when the call waits for it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Collective {
    /// Byte offset in the arena of its own staging region (no other step touches it, so it
    /// may stay in flight past later steps).
    pub stage: usize,
    /// The step before which the call waits for it: the first that reads its result, the
    /// end of the call for a program output, the next step for a result no one reads (its
    /// buffer may be another value's from then on).
    pub wait_before: usize,
}

impl Collective {
    /// Whether the collective of step `si` runs to its end at once: the next step waits for
    /// it, so nothing could overlap it (`ops::run_collective_now`).
    pub fn runs_at_once(&self, si: usize) -> bool {
        self.wait_before == si + 1
    }
}

impl RunStep {
    /// The control-flow node and its sub-programs, if the step runs one.
    pub fn control(&self) -> Option<(ValueId, &ControlProgram)> {
        match &self.run {
            Run::Control { v, program } => Some((*v, program)),
            _ => None,
        }
    }
}
