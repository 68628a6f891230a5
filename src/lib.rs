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
//! Random numbers are values of a [`Key`] ([`random`]: Threefry-2x32 as in JAX, the same
//! bits eagerly and jitted); a key is a traced argument, so a new key does not recompile:
//!
//! ```
//! use jitfuse::prelude::*;
//!
//! fn dropout(key: &Key, x: &Tensor, rate: f64) -> Tensor {
//!     let keep = random::bernoulli(key, 1.0 - rate, x.shape());
//!     select(&keep, x / (1.0 - rate), 0.0)
//! }
//!
//! #[jit]
//! fn train_step(w: Tensor, x: &Tensor, key: &Key) -> (Tensor, Tensor) {
//!     let (l, g) = value_and_grad(
//!         |w: &Tensor| dropout(key, &x.matmul(w), 0.1).square().mean_all(),
//!         &w,
//!     );
//!     (w - 0.01 * g, l)
//! }
//!
//! let x = random::normal(&Key::new(1), &[8, 4], DType::F32);
//! let mut w = random::normal(&Key::new(2), &[4, 3], DType::F32);
//! let mut key = Key::new(0);
//! for _ in 0..3 {
//!     let ks = key.split(2);
//!     (w, _) = train_step(w, &x, &ks[1]);
//!     key = ks[0].clone();
//! }
//! assert_eq!(train_step::cache_stats().misses, 1);
//!
//! // Eagerly, the same values as inside a jitted function.
//! #[jit]
//! fn draw(key: &Key) -> Tensor {
//!     random::normal(key, &[5], DType::F64)
//! }
//! let k = Key::new(42);
//! assert_eq!(
//!     draw(&k).to_vec::<f64>().unwrap(),
//!     random::normal(&k, &[5], DType::F64).to_vec::<f64>().unwrap()
//! );
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

// The layers of `nn` derive `Tree`, whose expansion names `::jitfuse`.
extern crate self as jitfuse;

pub mod nn;

pub use jitfuse_macros::jit;
/// `#[derive(Tree)]` (the macro; the trait of the same name is
/// `jitfuse::Tree` too, in the type namespace, as serde's `Serialize`).
pub use jitfuse_macros::Tree;
pub use jitfuse_runtime::{
    attention, attention_with, avg_pool, batch_norm_eval, batch_norm_train, bf16, checkpoint,
    checkpoint_name, checkpoint_with, clear_caches, concat, cond, conv, conv_transpose, dropout,
    f16, fori_loop, grad, group_norm, half, human_bytes, jvp, load, max_pool, profile,
    reduce_window, save, scan, select, set_eager_mode, softmax_cross_entropy,
    softmax_cross_entropy_with_labels, stack, stop_gradient, try_vmap, value_and_grad,
    value_and_grad_with_aux, vjp, vmap, where_, while_loop, zip_axis, AttnMask, AttnOptions, Axes,
    AxisIter, BatchAxes, CacheStats, Compiled, ConvLayout, ConvOptions, DType, EagerMode, Element,
    Error, ErrorKind, IntoOperand, Key, Literal, Lowered, MatmulOptions, MemoryAnalysis,
    MemoryBudget, Padding, Policy, PoolOptions, Profile, Reducer, Scalar, Slice, SourceLoc, Tensor,
    Tree, ZipAxis, AUTO_MEMORY_BUDGET,
};
/// The user-facing modules: trees and transformations, staged control flow, dtypes, eager
/// mode, errors, checkpoints, the per-function cache and its reports, optimisers, random
/// numbers, memory reports, and the tensor API (`vmap`, the module beside the function, comes
/// with the function above).
pub use jitfuse_runtime::{
    autodiff, control, dist, dtype, eager, error, io, jit, optim, precision, random, report, tensor,
};

/// `ndarray`, with the `ndarray` feature (`From`/`TryFrom` between `Tensor` and its arrays).
/// (The runtime's feature decides: a dev-dependency turns it on for the tests alone, so the
/// module is empty, and its import unused, in other builds.)
#[allow(unused_imports)]
pub use jitfuse_runtime::interop::*;

/// What the macro's generated code calls; not an API.
#[doc(hidden)]
pub use jitfuse_runtime::__private;

/// The compiler's internals (the IR and its interpreter, tracing, passes, the partition, the
/// kernel descriptions, code generation, the buffer plan, the executor and its storage), for
/// this project's tests, benches and tools: not a stable API, and not documented as one.
#[doc(hidden)]
pub mod internals {
    pub use jitfuse_runtime::tensor::interpret;
    pub use jitfuse_runtime::{
        array, codegen, describe, exec, fusion, interp, ir, passes, plan, shape, storage, trace,
    };
}

/// Everything a user of jitfuse needs in scope.
pub mod prelude {
    pub use jitfuse_macros::{jit, Tree};
    pub use jitfuse_runtime::{
        checkpoint, checkpoint_name, checkpoint_with, concat, cond, fori_loop, grad, jvp, random,
        scan, select, softmax_cross_entropy, softmax_cross_entropy_with_labels, stack,
        stop_gradient, try_vmap, value_and_grad, value_and_grad_with_aux, vjp, vmap, where_,
        while_loop, zip_axis, BatchAxes, DType, Error, Key, Policy, Slice, Tensor, Tree,
    };
}
