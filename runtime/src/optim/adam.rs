//! Adam and AdamW.

use super::{
    check_count, check_like, check_rate, state_tree, zero_count, Blocks, Mask, Optimizer, Schedule,
    Selected,
};
use crate::{DType, Tensor, Tree};

/// Adam with bias correction, and AdamW's decoupled weight decay on the
/// leaves of a [`Mask`] (optax's `adamw`, PyTorch's `AdamW`). With step
/// `t` (counted from 1):
///
/// ```text
/// m = b1 m + (1 - b1) g              v = b2 v + (1 - b2) g²
/// u = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)  [+ weight_decay p on masked leaves]
/// p = p - lr(t - 1) u
/// ```
#[derive(Clone, Debug)]
pub struct Adam<S> {
    /// The learning rate: an `f64` or a schedule of the step.
    pub lr: S,
    /// Decay of the first moment (0.9 in most models).
    pub b1: f64,
    /// Decay of the second moment (0.999; 0.95 in nanoGPT).
    pub b2: f64,
    /// Added to the second moment's root (1e-8).
    pub eps: f64,
    /// Decoupled weight decay (AdamW; 0 for Adam).
    pub weight_decay: f64,
    /// The leaves `weight_decay` applies to (every leaf by default).
    pub mask: Mask,
}

/// Adam: learning rate `lr` (an `f64`, a schedule or a scalar tensor),
/// moment decays `b1`, `b2` (0.9, 0.999 are usual), `eps` (1e-8).
pub fn adam<S: Schedule>(lr: S, b1: f64, b2: f64, eps: f64) -> Adam<S> {
    adamw(lr, b1, b2, eps, 0.0)
}

/// AdamW: Adam plus `weight_decay * p` in the update (scaled by the
/// learning rate), on every leaf unless restricted with
/// [`Adam::decay_mask`].
pub fn adamw<S: Schedule>(lr: S, b1: f64, b2: f64, eps: f64, weight_decay: f64) -> Adam<S> {
    Adam {
        lr,
        b1,
        b2,
        eps,
        weight_decay,
        mask: Mask::all(),
    }
}

impl<S> Adam<S> {
    /// Decay only the leaves of `mask` (`Mask::by_leaf(|t| t.ndim() >= 2)`:
    /// matrices, not gains and biases, as nanoGPT does).
    pub fn decay_mask(mut self, mask: Mask) -> Self {
        self.mask = mask;
        self
    }
}

/// The state of [`Adam`]: the step counter and both moments.
#[derive(Clone, Debug)]
pub struct AdamState<P> {
    /// Steps taken (`i32` scalar).
    pub count: Tensor,
    /// First moment (mean of the gradients), shaped like the parameters.
    pub mu: P,
    /// Second moment (mean of their squares).
    pub nu: P,
}

state_tree!(AdamState { count, mu, nu });

impl<S: Schedule> Optimizer for Adam<S> {
    fn elementwise(&self) -> bool {
        self.weight_decay == 0.0 || self.mask.is_all()
    }

    type State<P: Tree> = AdamState<P>;

    fn map_state<P: Tree, Q: Tree>(
        &self,
        s: AdamState<P>,
        f: &mut dyn FnMut(P) -> Q,
    ) -> Result<AdamState<Q>, crate::Error> {
        Ok(AdamState {
            count: s.count,
            mu: f(s.mu),
            nu: f(s.nu),
        })
    }

    fn init<P: Tree>(&self, params: &P) -> AdamState<P> {
        AdamState {
            count: zero_count(),
            mu: params.map(|t| t.zeros_like()),
            nu: params.map(|t| t.zeros_like()),
        }
    }

    #[track_caller]
    fn updates<P: Tree>(&self, grads: &P, state: AdamState<P>, params: &P) -> (P, AdamState<P>) {
        let decay = match self.weight_decay {
            0.0 => Vec::new(),
            _ => self
                .mask
                .resolve(params)
                .into_iter()
                .map(Selected::of)
                .collect(),
        };
        self.step(grads, state, params, decay)
    }

    /// The decay mask is each block's mask of the leaves it decays.
    #[track_caller]
    fn block_updates(
        &self,
        grads: &Vec<Tensor>,
        state: AdamState<Vec<Tensor>>,
        params: &Vec<Tensor>,
        blocks: &Blocks,
    ) -> (Vec<Tensor>, AdamState<Vec<Tensor>>) {
        let decay = match self.weight_decay {
            0.0 => Vec::new(),
            _ => blocks.mask(&self.mask),
        };
        self.step(grads, state, params, decay)
    }
}

impl<S: Schedule> Adam<S> {
    /// The update, with `weight_decay p` added to leaf `i`'s where `decay[i]` selects it (all
    /// of it, or the elements of a 0/1 mask), none where it selects nothing or is missing.
    #[track_caller]
    fn step<P: Tree>(
        &self,
        grads: &P,
        state: AdamState<P>,
        params: &P,
        decay: Vec<Selected>,
    ) -> (P, AdamState<P>) {
        let (b1, b2, eps, wd) = (self.b1, self.b2, self.eps, self.weight_decay);
        let op = if wd != 0.0 {
            "`adamw` update"
        } else {
            "`adam` update"
        };
        check_like(op, "gradient", grads, params);
        check_like(op, "state's first moment (`mu`)", &state.mu, params);
        check_like(op, "state's second moment (`nu`)", &state.nu, params);
        check_count(op, &state.count);
        let lr = self.lr.at(&state.count);
        check_rate(op, &lr);
        let neg_lr = -lr;
        let count = &state.count + 1;
        let t = count.cast(DType::F64);
        let bc1 = (1.0 - Tensor::scalar(b1).powf(&t)).into_weak();
        let bc2 = (1.0 - Tensor::scalar(b2).powf(&t)).into_weak();
        let mut leaf = 0;
        let [u, mu, nu] = Tree::map_n_unzip(&[grads, &state.mu, &state.nu, params], |l| {
            let (g, m, v, p) = (&l[0], &l[1], &l[2], &l[3]);
            let m = b1 * m + (1.0 - b1) * g;
            let v = b2 * v + (1.0 - b2) * g.square();
            let mut u = (&m / &bc1) / ((&v / &bc2).sqrt() + eps);
            match decay.get(leaf) {
                Some(Selected::All) => u = u + wd * p,
                Some(Selected::Elements(mask)) => u = u + wd * p * mask,
                Some(Selected::Nothing) | None => {}
            }
            leaf += 1;
            [&neg_lr * &u, m, v]
        });
        (u, AdamState { count, mu, nu })
    }
}
