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
mod data_parallel;
mod mask;
mod schedule;
mod sgd;
mod sharded;
mod sharded_checkpoint;

pub use adam::{adam, adamw, Adam, AdamState};
pub use clip::{chain, clip_by_global_norm, global_norm, Chain, ClipByGlobalNorm};
pub use data_parallel::{data_parallel, DataParallel};
pub use mask::{Mask, Selected};
pub use schedule::{constant, from_fn, warmup_cosine, Constant, FromFn, Schedule, WarmupCosine};
pub use sgd::{momentum, sgd, Momentum, MomentumState, Sgd, SgdState};
pub use sharded::{sharded, Blocks, Sharded};

use crate::error::type_str;
use crate::trace::fail;
use crate::{Error, ErrorKind, Tensor, Tree};
use std::panic::Location;

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
    /// state. Gradients or a state of another structure than `params`, or
    /// a leaf of another shape or dtype than its parameter, are an error
    /// naming the leaf (eagerly a panic with the message; inside `#[jit]`
    /// the call's `Err`), never a broadcast.
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

    /// Whether each element of the updates depends only on the same element of the
    /// gradients, the state and the parameters (and on the step count): then the update of
    /// any slice of the parameters can be computed from that slice alone, which
    /// [`sharded`] needs. False unless the optimiser says so (global-norm clipping reads
    /// every element; a weight-decay mask tells leaves apart).
    fn elementwise(&self) -> bool {
        false
    }

    /// The state with each of its parts shaped like the parameters (moments, velocities)
    /// passed through `f`, the rest (step counters) kept: how [`sharded`] turns the state of
    /// whole parameters into the state of one rank's blocks and back (its checkpoints). The
    /// optimisers of this module implement it; the default is an error naming the optimiser.
    fn map_state<P: Tree, Q: Tree>(
        &self,
        state: Self::State<P>,
        f: &mut dyn FnMut(P) -> Q,
    ) -> Result<Self::State<Q>, Error> {
        let _ = (state, f);
        Err(Error::argument(format!(
            "`{}` does not say how its state is laid out (`Optimizer::map_state`), so it cannot \
             be sharded or checkpointed across ranks",
            std::any::type_name::<Self>()
        )))
    }

    /// The updates of this rank's blocks of the packed parameters, under [`sharded`]:
    /// `grads`, `state` and `params` hold one flat block per bucket, and `blocks` says which
    /// parameter each part of a block belongs to and sums a value over every rank's blocks.
    /// An [`elementwise`](Optimizer::elementwise) optimiser's block updates are its updates.
    /// The optimisers of this module that are not elementwise implement it (global-norm
    /// clipping sums its squares over the ranks; AdamW's decay mask becomes a mask of each
    /// block's elements); for any other it is an error naming `optim::sharded`.
    #[track_caller]
    fn block_updates(
        &self,
        grads: &Vec<Tensor>,
        state: Self::State<Vec<Tensor>>,
        params: &Vec<Tensor>,
        blocks: &Blocks,
    ) -> (Vec<Tensor>, Self::State<Vec<Tensor>>) {
        let _ = blocks;
        if !self.elementwise() {
            fail(Error::argument(format!(
                "`optim::sharded`: {} does not compute each element of its update from that \
                 element alone and does not say how to update a rank's block of the \
                 parameters (`Optimizer::block_updates`); shard elementwise optimisers, \
                 global-norm clipping and AdamW, or use `data_parallel`",
                std::any::type_name::<Self>()
            )));
        }
        self.updates(grads, state, params)
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

/// `params + updates`, leaf by leaf. Updates of another structure, or a
/// leaf of another shape or dtype than its parameter, are an error (a
/// broadcast would silently change the parameter's shape).
#[track_caller]
pub fn apply_updates<P: Tree>(params: &P, updates: &P) -> P {
    check_like("`apply_updates`", "update", updates, params);
    params.zip_map(updates, |p, u| p + u)
}

/// Checks that `tree` (the gradients, updates or a moment of the state:
/// `what` names one leaf of it, "gradient") has the structure of `params`
/// and, leaf by leaf, the shape and dtype of its parameter. Arithmetic alone
/// would broadcast a gradient of `f32[2,3]` into a parameter of `f32[3]` and
/// return a parameter of `f32[2,3]`. The error names `op`, the leaf's path
/// (`Tree::leaf_names`), both types and the caller's line; tracing, it is
/// the `#[jit]` call's error.
#[track_caller]
fn check_like<P: Tree>(op: &str, what: &str, tree: &P, params: &P) {
    let loc = Location::caller();
    let (got, want) = (tree.leaves(), params.leaves());
    let (mut got_structure, mut want_structure) = (Vec::new(), Vec::new());
    tree.structure(&mut got_structure);
    params.structure(&mut want_structure);
    if got.len() != want.len() || got_structure != want_structure {
        let (got_names, want_names) = (tree.leaf_names(), params.leaf_names());
        let counts = format!("{} leaves, the parameters {}", got.len(), want.len());
        let at = (0..got_names.len().max(want_names.len()))
            .find(|&i| got_names.get(i) != want_names.get(i));
        let detail = match at.map(|i| (i, got_names.get(i), want_names.get(i))) {
            Some((i, Some(g), Some(w))) => {
                format!("its leaf {i} is `{g}` where the parameters' is `{w}` ({counts})")
            }
            Some((_, None, Some(w))) => format!("it has no leaf for parameter `{w}` ({counts})"),
            Some((_, Some(g), None)) => {
                format!("it has a leaf `{g}` the parameters do not ({counts})")
            }
            _ => format!("its `Vec` lengths or `Option`s differ ({counts})"),
        };
        fail(
            Error::argument(format!(
                "{op}: the {what} tree does not have the parameters' structure: {detail}"
            ))
            .at(loc),
        );
    }
    for (i, (g, p)) in got.iter().zip(&want).enumerate() {
        if g.shape() != p.shape() || g.dtype() != p.dtype() {
            let kind = if g.shape() != p.shape() {
                ErrorKind::Shape
            } else {
                ErrorKind::DType
            };
            let names = params.leaf_names();
            let of = match names.get(i).map(|n| n.as_str()) {
                Some("") => String::new(),
                Some(name) => format!(" of `{name}`"),
                None => format!(" of leaf {i}"),
            };
            fail(
                Error::new(
                    kind,
                    format!(
                        "{op}: the {what}{of} is {}, the parameter is {}",
                        type_str(g.dtype(), g.shape()),
                        type_str(p.dtype(), p.shape())
                    ),
                )
                .at(loc),
            );
        }
    }
}

/// Checks a state's step counter: an integer scalar (a loaded or hand-made
/// state could hold anything, and a counter of shape `[2]` would broadcast
/// the learning rate and so the whole update).
#[track_caller]
fn check_count(op: &str, count: &Tensor) {
    if count.ndim() != 0 || !count.dtype().is_int() {
        let kind = if count.ndim() != 0 {
            ErrorKind::Shape
        } else {
            ErrorKind::DType
        };
        fail(
            Error::new(
                kind,
                format!(
                    "{op}: the state's step counter `count` is {}, not an integer scalar",
                    type_str(count.dtype(), count.shape())
                ),
            )
            .at(Location::caller()),
        );
    }
}

/// Checks a learning rate from a schedule (a tensor or a function of the
/// step may give any shape): a scalar, or every parameter would be
/// broadcast against it.
#[track_caller]
fn check_rate(op: &str, lr: &Tensor) {
    if lr.ndim() != 0 {
        fail(
            Error::shape(format!(
                "{op}: the learning rate is {}, not a scalar",
                type_str(lr.dtype(), lr.shape())
            ))
            .at(Location::caller()),
        );
    }
}

/// The bytes of a tree's leaves (the gradients' or parameters' size, which picks their
/// buckets).
fn size_bytes(leaves: &[Tensor]) -> usize {
    leaves.iter().map(|t| t.size_bytes()).sum()
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
