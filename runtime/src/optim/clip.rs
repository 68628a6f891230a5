//! Clipping by the global norm, and chaining transformations.

use super::{check_like, Blocks, Optimizer};
use crate::{where_, DType, Tensor, Tree};

/// The Euclidean norm of all the leaves of `tree` taken together, as an
/// `f64` scalar tensor (each leaf's sum of squares is computed in its own
/// dtype, then summed in `f64`).
#[track_caller]
pub fn global_norm<T: Tree>(tree: &T) -> Tensor {
    sum_of_squares(tree).sqrt()
}

/// The square of [`global_norm`].
fn sum_of_squares<T: Tree>(tree: &T) -> Tensor {
    let mut total = Tensor::scalar(0f64);
    for l in tree.leaves() {
        total = total + l.square().sum_all().cast(DType::F64);
    }
    total
}

/// Scales the updates by `max_norm / norm` when their [`global_norm`] is
/// `max_norm` or more (optax's `clip_by_global_norm`); unchanged below.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClipByGlobalNorm {
    /// The largest global norm the updates keep.
    pub max_norm: f64,
}

/// See [`ClipByGlobalNorm`]; put it before an optimiser with
/// [`Optimizer::then`] or [`chain`].
pub fn clip_by_global_norm(max_norm: f64) -> ClipByGlobalNorm {
    ClipByGlobalNorm { max_norm }
}

impl Optimizer for ClipByGlobalNorm {
    type State<P: Tree> = ();

    fn map_state<P: Tree, Q: Tree>(
        &self,
        _state: (),
        _f: &mut dyn FnMut(P) -> Q,
    ) -> Result<(), crate::Error> {
        Ok(())
    }

    fn init<P: Tree>(&self, _params: &P) {}

    #[track_caller]
    fn updates<P: Tree>(&self, grads: &P, _state: (), params: &P) -> (P, ()) {
        check_like("`clip_by_global_norm`", "gradient", grads, params);
        (self.scaled(grads, global_norm(grads)), ())
    }

    /// The norm is the whole gradient's: every rank's sum of squares, added.
    #[track_caller]
    fn block_updates(
        &self,
        grads: &Vec<Tensor>,
        _state: (),
        _params: &Vec<Tensor>,
        blocks: &Blocks,
    ) -> (Vec<Tensor>, ()) {
        let norm = blocks.sum_over_ranks(&sum_of_squares(grads)).sqrt();
        (self.scaled(grads, norm), ())
    }
}

impl ClipByGlobalNorm {
    /// `grads` scaled to norm `max_norm` if `norm` (theirs) is larger.
    fn scaled<P: Tree>(&self, grads: &P, norm: Tensor) -> P {
        let scale = where_(&norm.lt(self.max_norm), 1.0, &(self.max_norm / &norm)).into_weak();
        grads.map(|g| g * &scale)
    }
}

/// `A` then `B` on `A`'s updates; the state is the pair of states.
#[derive(Clone, Debug)]
pub struct Chain<A, B>(pub A, pub B);

/// `a` then `b` (optax's `chain`; `a.then(b)` reads the same). Longer
/// chains nest: `chain(a, chain(b, c))`, `a.then(b).then(c)`.
pub fn chain<A: Optimizer, B: Optimizer>(a: A, b: B) -> Chain<A, B> {
    Chain(a, b)
}

impl<A: Optimizer, B: Optimizer> Optimizer for Chain<A, B> {
    fn elementwise(&self) -> bool {
        self.0.elementwise() && self.1.elementwise()
    }

    fn map_state<P: Tree, Q: Tree>(
        &self,
        state: Self::State<P>,
        f: &mut dyn FnMut(P) -> Q,
    ) -> Result<Self::State<Q>, crate::Error> {
        Ok((self.0.map_state(state.0, f)?, self.1.map_state(state.1, f)?))
    }

    type State<P: Tree> = (A::State<P>, B::State<P>);

    fn init<P: Tree>(&self, params: &P) -> Self::State<P> {
        (self.0.init(params), self.1.init(params))
    }

    #[track_caller]
    fn updates<P: Tree>(
        &self,
        grads: &P,
        state: Self::State<P>,
        params: &P,
    ) -> (P, Self::State<P>) {
        let (u, a) = self.0.updates(grads, state.0, params);
        let (u, b) = self.1.updates(&u, state.1, params);
        (u, (a, b))
    }

    #[track_caller]
    fn block_updates(
        &self,
        grads: &Vec<Tensor>,
        state: Self::State<Vec<Tensor>>,
        params: &Vec<Tensor>,
        blocks: &Blocks,
    ) -> (Vec<Tensor>, Self::State<Vec<Tensor>>) {
        let (u, a) = self.0.block_updates(grads, state.0, params, blocks);
        let (u, b) = self.1.block_updates(&u, state.1, params, blocks);
        (u, (a, b))
    }
}
