//! `f::lower(args)`: a compiled program with the text of every stage.

use super::args::Signature;
use crate::exec::Executable;
use std::sync::Arc;

pub struct Lowered {
    name: &'static str,
    signature: String,
    exe: Arc<Executable>,
}

impl Lowered {
    pub(crate) fn new(name: &'static str, sig: &Signature, exe: Arc<Executable>) -> Lowered {
        Lowered { name, signature: sig.to_string(), exe }
    }

    /// Every stage as text: the traced graph, the kernels it was split into,
    /// and the Cranelift IR of each kernel.
    pub fn as_text(&self) -> String {
        format!(
            "// jitfuse: {} {}\n// ---- traced graph ----\n{}// ---- simplified graph ----\n{}// ---- kernels ----\n{}// ---- cranelift ----\n{}",
            self.name,
            self.signature,
            self.exe.traced_text(),
            self.exe.optimized_text(),
            self.exe.kernels_text(),
            self.exe.clif_text()
        )
    }

    /// The traced graph in the IR text form (parseable by `ir::parse`).
    pub fn graph_text(&self) -> String {
        self.exe.traced_text()
    }

    /// Number of compiled kernels.
    pub fn kernel_count(&self) -> usize {
        self.exe.kernel_count()
    }

    pub fn memory_analysis(&self) -> crate::exec::MemoryAnalysis {
        self.exe.memory_analysis()
    }

    pub fn executable(&self) -> &Arc<Executable> {
        &self.exe
    }
}

impl std::fmt::Display for Lowered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_text())
    }
}
