//! Diagnostics every stage of the pipeline reports to: the `JITFUSE_LOG` categories and their
//! sink (`log`), per-phase compile time (`phases`), and the time of every step of every call
//! (`profile`). A leaf: it imports no other module of
//! the crate, so passes and code generation report without importing the jit layer above them.

pub(crate) mod log;
pub(crate) mod phases;
pub mod profile;
