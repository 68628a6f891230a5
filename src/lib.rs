//! # jitfuse: `jax.jit` for Rust
//!
//! Put `#[jit]` on a function of tensors: on the first call for each input
//! signature it is traced into a graph, split into kernels and compiled to
//! SIMD machine code with Cranelift; later calls run the cached code.
//!
//! ```
//! use jitfuse::prelude::*;
//!
//! #[jit]
//! fn gelu(x: &Tensor) -> Tensor {
//!     0.5 * x * (1.0 + (0.797_884_56 * (x + 0.044_715 * x * x * x)).tanh())
//! }
//!
//! let x = Tensor::from_vec(vec![-1.0f32, 0.0, 1.0], &[3]).unwrap();
//! let y = gelu(&x);
//! assert_eq!(y.shape(), &[3]);
//! assert_eq!(gelu::cache_stats().misses, 1);
//! ```

pub use jitfuse_macros::jit;
/// `#[derive(Tree)]` (the macro; the trait of the same name is
/// `jitfuse::Tree` too, in the type namespace, as serde's `Serialize`).
pub use jitfuse_macros::Tree;
pub use jitfuse_runtime::*;

/// Everything a user of jitfuse needs in scope.
pub mod prelude {
    pub use jitfuse_macros::{jit, Tree};
    pub use jitfuse_runtime::{
        checkpoint, checkpoint_name, checkpoint_with, concat, cond, fori_loop, grad, jvp, random,
        scan, select, softmax_cross_entropy, stack, stop_gradient, value_and_grad, vjp, where_,
        while_loop, DType, Error, Key, Policy, Slice, Tensor, Tree,
    };
}
