//! What `#[jit]` expands to calls: argument collection, the per-function
//! cache, output conversion and lowering.

mod cache;
mod dump;
mod explain;
mod lowered;
mod outputs;
mod params;
pub(crate) use crate::diag::{log, phases};

pub use crate::exec::args::{assert_static_arg, ArgKind, ArgSig, ParamSlot, Signature, StaticArg};
#[allow(unused_imports)]
pub(crate) use crate::tensor::call::ArgTensor;
pub use crate::tensor::call::CallArgs;
pub use cache::{clear_caches, Body, CacheStats, FnCache, Structure};
pub use log::{set_log, set_log_sink, LogSink};
pub use lowered::{Compiled, Lowered};
pub use outputs::{FromOutputs, IntoOutputs};
pub use params::{
    borrowed_tree, flatten_output, rebuild_output, BorrowedTree, JitReturn, Probe, StaticParam,
    StaticSlot, TreeParam, TreeSlot, ViaStatic, ViaTree,
};
pub use phases::Phase;

/// The plain call of a jitted function panics with the error `try_call` gives.
#[track_caller]
pub fn fail(e: crate::Error) -> ! {
    panic!("{e}")
}
