//! Stochastic gradient descent, with and without momentum.

use super::{check_count, check_like, check_rate, state_tree, zero_count, Optimizer, Schedule};
use crate::{Tensor, Tree};

/// `p - lr(step) * g`.
#[derive(Clone, Debug)]
pub struct Sgd<S> {
    /// The learning rate: an `f64` or a schedule of the step.
    pub lr: S,
}

/// Plain gradient descent with learning rate `lr` (an `f64`, a schedule, or
/// a scalar tensor).
pub fn sgd<S: Schedule>(lr: S) -> Sgd<S> {
    Sgd { lr }
}

/// The state of [`Sgd`]: the step counter only.
#[derive(Clone, Debug)]
pub struct SgdState {
    /// Steps taken (`i32` scalar).
    pub count: Tensor,
}

impl Tree for SgdState {
    fn collect_leaves(&self, out: &mut Vec<Tensor>) {
        out.push(self.count.clone());
    }
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self {
        SgdState {
            count: self.count.rebuild(leaves),
        }
    }
    fn collect_names(&self, path: &str, out: &mut Vec<String>) {
        out.push(crate::autodiff::join_path(path, "count"));
    }
}

impl<S: Schedule> Optimizer for Sgd<S> {
    fn elementwise(&self) -> bool {
        true
    }

    type State<P: Tree> = SgdState;

    fn map_state<P: Tree, Q: Tree>(
        &self,
        state: SgdState,
        _f: &mut dyn FnMut(P) -> Q,
    ) -> Result<SgdState, crate::Error> {
        Ok(state)
    }

    fn init<P: Tree>(&self, _params: &P) -> SgdState {
        SgdState {
            count: zero_count(),
        }
    }

    #[track_caller]
    fn updates<P: Tree>(&self, grads: &P, state: SgdState, params: &P) -> (P, SgdState) {
        const OP: &str = "`sgd` update";
        check_like(OP, "gradient", grads, params);
        check_count(OP, &state.count);
        let lr = self.lr.at(&state.count);
        check_rate(OP, &lr);
        let neg_lr = -lr;
        let u = grads.map(|g| &neg_lr * g);
        let count = state.count + 1;
        (u, SgdState { count })
    }
}

/// Heavy-ball momentum (optax's `sgd(lr, momentum)`, PyTorch's SGD without
/// dampening): `t = beta * t + g`, `p - lr(step) * t`; Nesterov's variant
/// steps by `g + beta * t` instead.
#[derive(Clone, Debug)]
pub struct Momentum<S> {
    /// The learning rate: an `f64` or a schedule of the step.
    pub lr: S,
    /// The momentum's decay.
    pub beta: f64,
    /// Nesterov's variant.
    pub nesterov: bool,
}

/// Momentum `beta` (0.9 is usual) with learning rate `lr`.
pub fn momentum<S: Schedule>(lr: S, beta: f64) -> Momentum<S> {
    Momentum {
        lr,
        beta,
        nesterov: false,
    }
}

impl<S> Momentum<S> {
    /// Nesterov's accelerated variant.
    pub fn nesterov(mut self, on: bool) -> Self {
        self.nesterov = on;
        self
    }
}

/// The state of [`Momentum`]: the step counter and the velocity.
#[derive(Clone, Debug)]
pub struct MomentumState<P> {
    /// Steps taken (`i32` scalar).
    pub count: Tensor,
    /// The running velocity, shaped like the parameters.
    pub trace: P,
}

state_tree!(MomentumState { count, trace });

impl<S: Schedule> Optimizer for Momentum<S> {
    fn elementwise(&self) -> bool {
        true
    }

    type State<P: Tree> = MomentumState<P>;

    fn map_state<P: Tree, Q: Tree>(
        &self,
        s: MomentumState<P>,
        f: &mut dyn FnMut(P) -> Q,
    ) -> Result<MomentumState<Q>, crate::Error> {
        Ok(MomentumState {
            count: s.count,
            trace: f(s.trace),
        })
    }

    fn init<P: Tree>(&self, params: &P) -> MomentumState<P> {
        MomentumState {
            count: zero_count(),
            trace: params.map(|t| t.zeros_like()),
        }
    }

    #[track_caller]
    fn updates<P: Tree>(
        &self,
        grads: &P,
        state: MomentumState<P>,
        params: &P,
    ) -> (P, MomentumState<P>) {
        const OP: &str = "`momentum` update";
        check_like(OP, "gradient", grads, params);
        check_like(OP, "state's velocity (`trace`)", &state.trace, params);
        check_count(OP, &state.count);
        let lr = self.lr.at(&state.count);
        check_rate(OP, &lr);
        let neg_lr = -lr;
        let beta = self.beta;
        let [u, trace] = Tree::map_n_unzip(&[grads, &state.trace], |l| {
            let (g, t) = (&l[0], &l[1]);
            let t = beta * t + g;
            let step = if self.nesterov {
                g + beta * &t
            } else {
                t.clone()
            };
            [&neg_lr * &step, t]
        });
        let count = state.count + 1;
        (u, MomentumState { count, trace })
    }
}
