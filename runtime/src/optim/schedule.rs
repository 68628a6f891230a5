//! Learning-rate schedules: functions of the step counter computed with
//! tensor operations, so that inside `#[jit]` the step is a traced value and
//! a new step number runs the same compiled program.

use crate::{where_, DType, Tensor};

/// A learning rate as a function of the step (optax's schedules).
pub trait Schedule {
    /// The value at `step` (a scalar tensor of any numeric dtype, traced or
    /// concrete): a weakly typed scalar, computed in `f64`, which takes the
    /// dtype of the parameters it multiplies.
    fn at(&self, step: &Tensor) -> Tensor;
}

/// The same value at every step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constant(pub f64);

/// `value` at every step (a plain `f64` is a schedule too: `sgd(0.1)`).
pub fn constant(value: f64) -> Constant {
    Constant(value)
}

impl Schedule for Constant {
    fn at(&self, _step: &Tensor) -> Tensor {
        Tensor::scalar(self.0).into_weak()
    }
}

impl Schedule for f64 {
    fn at(&self, step: &Tensor) -> Tensor {
        Constant(*self).at(step)
    }
}

/// A scalar tensor is a constant schedule: a traced `lr: f32` parameter of
/// a `#[jit]` step (`sgd(lr)`) changes the rate without recompiling.
impl Schedule for Tensor {
    fn at(&self, _step: &Tensor) -> Tensor {
        self.clone().into_weak()
    }
}

impl<S: Schedule + ?Sized> Schedule for &S {
    fn at(&self, step: &Tensor) -> Tensor {
        (**self).at(step)
    }
}

/// Linear warm-up from 0 to `peak` over `warmup_steps`, then cosine decay
/// to `end` at `total_steps`, and `end` after it (optax's
/// `warmup_cosine_decay_schedule` with `init_value = 0`; nanoGPT's `get_lr`
/// is the same curve shifted by one step in the warm-up).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WarmupCosine {
    /// The rate at the end of the warm-up.
    pub peak: f64,
    /// Steps of the linear warm-up.
    pub warmup_steps: usize,
    /// The step at which the cosine reaches `end`.
    pub total_steps: usize,
    /// The rate from `total_steps` on.
    pub end: f64,
}

/// See [`WarmupCosine`]: `peak * s / warmup_steps` for `s < warmup_steps`,
/// `end + (peak - end) * (1 + cos(pi * (s - warmup_steps) / (total_steps -
/// warmup_steps))) / 2` up to `total_steps`, `end` from there on.
pub fn warmup_cosine(peak: f64, warmup_steps: usize, total_steps: usize, end: f64) -> WarmupCosine {
    WarmupCosine {
        peak,
        warmup_steps,
        total_steps,
        end,
    }
}

impl Schedule for WarmupCosine {
    #[track_caller]
    fn at(&self, step: &Tensor) -> Tensor {
        let s = step.cast(DType::F64);
        let (w, t) = (self.warmup_steps as f64, self.total_steps as f64);
        let (peak, end) = (self.peak, self.end);
        let decay = if t > w {
            let ratio = ((&s - w) / (t - w)).clamp(0.0, 1.0);
            let cosine = end + 0.5 * (peak - end) * (1.0 + (std::f64::consts::PI * ratio).cos());
            where_(&s.ge(t), end, &cosine)
        } else {
            s.full_like(end)
        };
        let lr = if w > 0.0 {
            where_(&s.lt(w), &(peak * &s / w), &decay)
        } else {
            decay
        };
        lr.into_weak()
    }
}

/// A schedule from a function of the step tensor (`f64` operations on
/// `step.cast(DType::F64)`).
#[derive(Clone, Copy, Debug)]
pub struct FromFn<F>(pub F);

/// A schedule computed by `f` from the step (see [`FromFn`]).
pub fn from_fn<F: Fn(&Tensor) -> Tensor>(f: F) -> FromFn<F> {
    FromFn(f)
}

impl<F: Fn(&Tensor) -> Tensor> Schedule for FromFn<F> {
    fn at(&self, step: &Tensor) -> Tensor {
        (self.0)(step).into_weak()
    }
}
