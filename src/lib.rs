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
//!
//! A training step with an optimiser of [`optim`] (parameters and state
//! donated, the step counter traced):
//!
//! ```
//! use jitfuse::optim::{self, Optimizer, StateOf};
//! use jitfuse::prelude::*;
//!
//! #[derive(Tree, Clone)]
//! struct Linear { w: Tensor, b: Tensor }
//!
//! type Opt = optim::Chain<optim::ClipByGlobalNorm, optim::Adam<optim::WarmupCosine>>;
//! fn opt() -> Opt {
//!     optim::clip_by_global_norm(1.0).then(
//!         optim::adamw(optim::warmup_cosine(1e-2, 10, 100, 1e-3), 0.9, 0.95, 1e-8, 0.1)
//!             .decay_mask(optim::Mask::by_leaf(|t| t.ndim() >= 2)),
//!     )
//! }
//!
//! #[jit]
//! fn step(p: Linear, s: StateOf<Opt, Linear>, x: &Tensor, y: &Tensor)
//!     -> (Linear, StateOf<Opt, Linear>, Tensor) {
//!     let (l, g) = value_and_grad(|p: &Linear| (x.matmul(&p.w) + &p.b - y).square().mean_all(), &p);
//!     let (p, s) = opt().update(&g, s, p);
//!     (p, s, l)
//! }
//!
//! let p = Linear { w: Tensor::zeros(&[3, 2], DType::F32), b: Tensor::zeros(&[2], DType::F32) };
//! let s = opt().init(&p);
//! let (x, y) = (Tensor::ones(&[4, 3], DType::F32), Tensor::ones(&[4, 2], DType::F32));
//! let (p, s, _loss) = step(p, s, &x, &y);
//! let (_p, s, _loss) = step(p, s, &x, &y);   // the step counter is traced: no recompilation
//! assert_eq!(s.1.count.item::<i32>().unwrap(), 2);
//! assert_eq!(step::cache_stats().misses, 1);
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
        checkpoint, checkpoint_name, checkpoint_with, concat, cond, fori_loop, grad, jvp, scan,
        select, softmax_cross_entropy, stack, stop_gradient, value_and_grad, vjp, where_,
        while_loop, DType, Error, Policy, Slice, Tensor, Tree,
    };
}
