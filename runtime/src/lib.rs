//! The runtime of jitfuse: tensors, tracing, the graph IR, the reference
//! interpreter, Cranelift code generation and the per-function cache.
//! See ARCHITECTURE.md at the repository root for the map, and docs/ for the details.

pub mod array;
mod diag;
#[deny(missing_docs)]
pub mod dtype;
#[deny(missing_docs)]
pub mod eager;
#[deny(missing_docs)]
pub mod error;
mod internal;
pub mod interp;
#[deny(missing_docs)]
pub mod io;
pub mod ir;
pub mod shape;
pub mod storage;
#[deny(missing_docs)]
pub mod tensor;
pub mod trace;

pub use dtype::{DType, Element, Literal, Scalar};
pub use error::{Error, ErrorKind, SourceLoc};
/// The 16-bit float element types (`DType::BF16`, `DType::F16`), from the `half` crate.
pub use half::{self, bf16, f16};
pub use tensor::Tensor;
#[deny(missing_docs)]
pub mod autodiff;
pub mod codegen;
#[deny(missing_docs)]
pub mod control;
pub mod describe;
pub mod dist;
pub mod exec;
pub mod fusion;
#[deny(missing_docs)]
pub mod jit;
mod library;
#[deny(missing_docs)]
pub mod optim;
pub mod passes;
pub mod plan;
#[deny(missing_docs)]
pub mod precision;
#[deny(missing_docs)]
pub mod random;
mod release;
#[deny(missing_docs)]
pub mod report;
pub mod units;
#[deny(missing_docs)]
pub mod vmap;

pub use autodiff::{
    checkpoint, checkpoint_name, checkpoint_with, grad, jvp, stop_gradient, value_and_grad,
    value_and_grad_with_aux, vjp, Policy, Tree,
};
pub use control::{cond, fori_loop, scan, while_loop, zip_axis, AxisIter, ZipAxis};
pub use diag::profile::{profile, Profile};
pub use eager::{set_eager_mode, EagerMode};
pub use exec::{MemoryAnalysis, MemoryBudget, AUTO_MEMORY_BUDGET};
pub use io::{load, save};
pub use jit::{clear_caches, CacheStats, Compiled, Lowered};
/// The `ndarray` crate the conversions are written against (feature `ndarray`).
#[cfg(feature = "ndarray")]
pub use ndarray;
/// The interop crates re-exported (`ndarray` with the `ndarray` feature), for the facade to
/// re-export whichever are enabled.
#[doc(hidden)]
pub mod interop {
    #[cfg(feature = "ndarray")]
    pub use ndarray;
}
pub use random::dropout;
pub use random::Key;
pub use tensor::attention::{attention, attention_with, AttnMask, AttnOptions};
pub use tensor::composite::{
    softmax_cross_entropy, softmax_cross_entropy_with_labels, MatmulOptions,
};
pub use tensor::conv::{conv, conv_transpose, ConvLayout, ConvOptions, Padding};
pub use tensor::norm::{batch_norm_eval, batch_norm_train, group_norm};
pub use tensor::ops::{select, where_, IntoOperand};
pub use tensor::reduce::Axes;
pub use tensor::shape_ops::{concat, stack, Slice};
pub use tensor::window::{avg_pool, max_pool, reduce_window, PoolOptions, Reducer};
pub use units::human_bytes;
pub use vmap::{try_vmap, vmap, BatchAxes};

/// What `#[jit]`-generated code calls. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::autodiff::join_path;
    pub use crate::control::staging::{
        staged_for, staged_for_range, staged_for_range_inclusive, staged_if, staged_while,
        static_if_cond, static_iter, static_while_cond,
    };
    pub use crate::internal::inject_panic;
    pub use crate::jit::{
        assert_static_arg, borrowed_tree, fail, flatten_output, rebuild_output, BorrowedTree,
        CallArgs, FnCache, FromOutputs, IntoOutputs, JitReturn, Probe, StaticArg, StaticParam,
        StaticSlot, Structure, TreeParam, TreeSlot, ViaStatic, ViaTree,
    };
    pub use crate::trace::is_tracing;
}
