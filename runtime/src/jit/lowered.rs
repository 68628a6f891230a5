//! `f::lower(args)` and `Lowered::compile()`: the traced program for one
//! signature, and the compiled program a call with those arguments runs.

use super::cache::{FnCache, Structure};
use crate::exec::args::{ParamSlot, Signature};
use crate::exec::{Executable, MemoryAnalysis};
use crate::trace::Traced;
use crate::Error;
use std::sync::Arc;

/// A traced program for one signature of a jitted function.
pub struct Lowered {
    cache: &'static FnCache,
    signature: Signature,
    slots: Vec<ParamSlot>,
    traced: Traced,
    structure: Structure,
    /// Under an explicit memory budget, the traces with automatic checkpointing (loops
    /// cut deeper at each) that a call falls back to, in turn, while the budget is not met.
    auto: Vec<(Traced, Structure)>,
}

impl Lowered {
    pub(crate) fn new(
        cache: &'static FnCache,
        signature: Signature,
        slots: Vec<ParamSlot>,
        (traced, structure): (Traced, Structure),
        auto: Vec<(Traced, Structure)>,
    ) -> Lowered {
        Lowered {
            cache,
            signature,
            slots,
            traced,
            structure,
            auto,
        }
    }

    /// The compiled program: the same one (from the function's cache) that a
    /// call with these arguments runs. It goes through the cache as a call
    /// does: when the signature is not cached it is compiled and cached (a
    /// miss in `cache_stats()`), so a later call with these arguments is a
    /// hit and does not compile again; when it is cached, that program is
    /// returned (a hit). `as_text()` compiles a copy of its own and leaves
    /// the cache alone. Under an explicit memory budget the budget is met as a
    /// call meets it: from this trace, else from the trace with automatic
    /// checkpointing.
    pub fn compile(&self) -> Result<Compiled, Error> {
        let exe = self.cache.compile_traced(
            &self.signature,
            &self.slots,
            &(self.traced.clone(), self.structure.clone()),
            &self.auto,
        )?;
        Ok(Compiled { exe })
    }

    /// Every stage as text: the traced graph, the simplified graph, the kernels it was split
    /// into, the memory report, and the Cranelift IR of each kernel, of the program
    /// `compile()` runs (under an explicit budget, the trace that meets it, found as a call
    /// finds it), compiled anew with its text kept; the cache is left alone.
    pub fn as_text(&self) -> String {
        let opts = crate::exec::CompileOptions {
            budget: self.cache.budget(),
            ..Default::default()
        };
        let traces: Vec<&Traced> = std::iter::once(&self.traced)
            .chain(self.auto.iter().map(|(t, _)| t))
            .collect();
        let exe = super::cache::meet_budget(opts.budget, |step| {
            traces
                .get(step)
                .map(|t| (*t).clone().compile(&self.signature, &opts))
                .transpose()
        });
        match exe {
            Ok(exe) => format!(
                "// jitfuse: {} {}\n// ---- traced graph ----\n{}// ---- simplified graph ----\n{}// ---- kernels ----\n{}// ---- memory ----\n{}\n// ---- cranelift ----\n{}",
                self.cache.name(),
                self.signature,
                exe.traced_text(),
                exe.optimized_text(),
                exe.kernels_text(),
                exe.memory_analysis(),
                exe.clif_text()
            ),
            Err(e) => format!("// jitfuse: {} {}\n// ---- traced graph ----\n{}// compile error: {e}\n", self.cache.name(), self.signature, self.traced.graph),
        }
    }

    /// The traced graph in the IR text form (parseable by `ir::parse`).
    pub fn graph_text(&self) -> String {
        self.traced.graph.to_text()
    }

    /// What the backward passes of gradients taken in this function keep
    /// from their forward passes (before fusion and rematerialisation:
    /// checkpointed values appear as the region inputs they are recomputed
    /// from), with shapes, bytes and the backward ops that read them.
    pub fn saved_residuals(&self) -> Vec<crate::autodiff::Residual> {
        crate::autodiff::saved_residuals(&self.traced.graph)
    }

    /// Shorthand for `compile()?.memory_analysis()` (so it fills the cache
    /// as `compile()` does).
    pub fn memory_analysis(&self) -> Result<MemoryAnalysis, Error> {
        Ok(self.compile()?.memory_analysis())
    }

    /// Shorthand for `compile()?.kernel_count()` (so it fills the cache as
    /// `compile()` does).
    pub fn kernel_count(&self) -> Result<usize, Error> {
        Ok(self.compile()?.kernel_count())
    }
}

impl std::fmt::Display for Lowered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_text())
    }
}

/// A compiled program, shared with the function's cache.
#[derive(Clone)]
pub struct Compiled {
    exe: Arc<Executable>,
}

impl Compiled {
    /// The program's memory: arguments, outputs, arena and generated code.
    pub fn memory_analysis(&self) -> MemoryAnalysis {
        self.exe.memory_analysis()
    }

    /// Number of compiled (Cranelift) kernels.
    pub fn kernel_count(&self) -> usize {
        self.exe.kernel_count()
    }

    /// Number of steps: compiled kernels plus library calls (matmul, ...).
    pub fn step_count(&self) -> usize {
        self.exe.step_count()
    }

    /// The buffer plan as an SVG timeline (x = step, y = arena offset).
    pub fn memory_svg(&self) -> String {
        self.exe.memory_svg()
    }

    /// The kernels and library steps, one per line (with their nodes).
    pub fn kernels_text(&self) -> String {
        self.exe.kernels_text()
    }

    /// The compiled program itself.
    pub fn executable(&self) -> &Arc<Executable> {
        &self.exe
    }
}
