//! Optimisers over any [`Tree`] of parameters, as optax does them: values
//! with `init(&params) -> State` and `update(&grads, state, params) ->
//! (params, state)`, where the state is a tree too. A whole training step
//! (loss, gradient, clipping, update) is then one `#[jit]` function taking
//! the parameters and the state by value: both are donated, and the fused
//! kernels write every new parameter and moment over the old one.
//!
//! ```text
//! #[jit]
//! fn step(p: Linear, s: StateOf<Opt, Linear>, x: &Tensor, y: &Tensor)
//!     -> (Linear, StateOf<Opt, Linear>, Tensor) {
//!     let (l, g) = value_and_grad(|p: &Linear| loss(p, x, y), &p);
//!     let (p, s) = opt().update(&g, s, p);
//!     (p, s, l)
//! }
//! ```
//!
//! (The crate `jitfuse`'s documentation has this example in full, tested.)
//!
//! Learning rates are [`Schedule`]s of the step counter kept in the state
//! (an `i32` scalar tensor), computed inside the program: a new step number
//! is a new argument value, never a new compilation.

mod adam;
mod clip;
mod mask;
mod schedule;
mod sgd;

pub use adam::{adam, adamw, Adam, AdamState};
pub use clip::{chain, clip_by_global_norm, global_norm, Chain, ClipByGlobalNorm};
pub use mask::Mask;
pub use schedule::{constant, from_fn, warmup_cosine, Constant, FromFn, Schedule, WarmupCosine};
pub use sgd::{momentum, sgd, Momentum, MomentumState, Sgd, SgdState};

use crate::{Tensor, Tree};

/// A gradient transformation (optax's `GradientTransformation`): an
/// optimiser, a clipping step, or a [`Chain`] of them.
pub trait Optimizer {
    /// The state kept between steps for parameters of type `P`: a tree, so
    /// a `#[jit]` step traces it (and donates it when taken by value).
    type State<P: Tree>: Tree;

    /// The state before the first step.
    fn init<P: Tree>(&self, params: &P) -> Self::State<P>;

    /// The updates to add to the parameters (see [`apply_updates`]) for
    /// `grads` (or the updates of an earlier transformation), and the new
    /// state.
    fn updates<P: Tree>(&self, grads: &P, state: Self::State<P>, params: &P)
        -> (P, Self::State<P>);

    /// One step: the new parameters and the new state. Inside `#[jit]` the
    /// updates are never materialised: each new parameter is computed by the
    /// same fused kernel as its moments.
    #[track_caller]
    fn update<P: Tree>(&self, grads: &P, state: Self::State<P>, params: P) -> (P, Self::State<P>) {
        let (u, state) = self.updates(grads, state, &params);
        (apply_updates(&params, &u), state)
    }

    /// `self`, then `next` on its updates (optax's `chain`):
    /// `clip_by_global_norm(1.0).then(adam(..))`.
    fn then<B: Optimizer>(self, next: B) -> Chain<Self, B>
    where
        Self: Sized,
    {
        chain(self, next)
    }
}

/// The state type of optimiser `O` for parameters `P`, for signatures:
/// `fn step(p: Mlp, s: StateOf<Opt, Mlp>, ..) -> (Mlp, StateOf<Opt, Mlp>)`.
pub type StateOf<O, P> = <O as Optimizer>::State<P>;

/// `params + updates`, leaf by leaf.
#[track_caller]
pub fn apply_updates<P: Tree>(params: &P, updates: &P) -> P {
    params.zip_map(updates, |p, u| p + u)
}

/// The step counter of a fresh state: an `i32` scalar 0.
fn zero_count() -> Tensor {
    Tensor::scalar(0i32)
}

/// Implements `Tree` for an optimiser state struct: a step counter, then
/// trees of the parameters' structure.
macro_rules! state_tree {
    ($name:ident { count $(, $field:ident)* }) => {
        impl<P: crate::Tree> crate::Tree for $name<P> {
            fn collect_leaves(&self, out: &mut Vec<crate::Tensor>) {
                out.push(self.count.clone());
                $(self.$field.collect_leaves(out);)*
            }
            fn rebuild(&self, leaves: &mut dyn Iterator<Item = crate::Tensor>) -> Self {
                $name {
                    count: self.count.rebuild(leaves),
                    $($field: self.$field.rebuild(leaves),)*
                }
            }
            fn structure(&self, out: &mut Vec<usize>) {
                $(self.$field.structure(out);)*
                let _ = out;
            }
            fn collect_names(&self, path: &str, out: &mut Vec<String>) {
                out.push(crate::autodiff::join_path(path, "count"));
                $(self.$field.collect_names(&crate::autodiff::join_path(path, stringify!($field)), out);)*
            }
        }
    };
}
use state_tree;
