//! The normalisations convolutional networks are made of, channels last (`[N, spatial.., C]`
//! or `[N, C]`): `batch_norm_train` (batch statistics, the running averages updated as
//! flax's `BatchNorm` does), `batch_norm_eval` and `group_norm`. Compositions of sums and
//! elementwise ops (`Moments`: the accuracy of `mean` and `var` in three sums), written so
//! that autodiff gives the gradients' two sums over the batch, and fusion reads each
//! input once per pass.

use super::ops::stop_gradient;
use super::reduce::Moments;
use super::Tensor;
use crate::error::type_str;
use crate::trace::fail;
use crate::Error;
use std::panic::Location;

/// The normalisation of `x` by its batch statistics per feature (the mean and biased
/// variance over every axis but the last), scaled by `scale [C]` and shifted by
/// `bias [C]`, and the running averages updated with the statistics:
/// `momentum · running + (1 − momentum) · batch` (flax's `BatchNorm`; PyTorch's
/// `momentum = 0.1` is `momentum = 0.9` here, and PyTorch keeps the unbiased variance).
/// Returns `(y, mean, var)`; the running averages carry no gradient.
#[track_caller]
pub fn batch_norm_train(
    x: &Tensor,
    scale: &Tensor,
    bias: &Tensor,
    (running_mean, running_var): (&Tensor, &Tensor),
    momentum: f64,
    eps: f64,
) -> (Tensor, Tensor, Tensor) {
    let loc = Location::caller();
    let c = check(
        "batch_norm_train",
        x,
        &[scale, bias, running_mean, running_var],
        loc,
    );
    let axes: Vec<usize> = (0..x.ndim() - 1).collect();
    let st = Moments::of(x, &axes, loc);
    // `y = (x - mean) · k + bias` with one multiplier `k` per feature, written as
    // `dev · k + (bias - shift · k)`: the gradient then takes two sums over the batch, `Σ g`
    // (the bias's, and the per-feature term's) and `Σ g · dev` (`k`'s), as PyTorch's and
    // XLA's batch-norm gradients do, where differentiating `(x - mean) · k` also summed
    // `g · k` for the mean's cotangent; and `dev` serves the statistics, the output and
    // the gradient.
    let k = (&st.var + eps).rsqrt() * scale;
    let y = &st.dev * &k + (bias - &st.shift * &k);
    let (mean, var) = (st.mean(), st.var);
    let update = |run: &Tensor, batch: &Tensor| {
        run * momentum + stop_gradient(&batch.reshape(&[c as isize])) * (1.0 - momentum)
    };
    let (m, v) = (update(running_mean, &mean), update(running_var, &var));
    (y, m, v)
}

/// The normalisation of `x` by fixed statistics (`mean [C]`, `var [C]`: the running
/// averages of training), scaled and shifted.
#[track_caller]
pub fn batch_norm_eval(
    x: &Tensor,
    scale: &Tensor,
    bias: &Tensor,
    (mean, var): (&Tensor, &Tensor),
    eps: f64,
) -> Tensor {
    let loc = Location::caller();
    check("batch_norm_eval", x, &[scale, bias, mean, var], loc);
    // One multiplier and one offset per feature: two elementwise ops on `x`.
    let k = (var + eps).rsqrt() * scale;
    let b = bias - mean * &k;
    x * k + b
}

/// The normalisation of each example of `x` by the mean and variance of each of `groups`
/// blocks of its features (over the spatial axes and the block's features), scaled by
/// `scale [C]` and shifted by `bias [C]` (flax's `GroupNorm`; `groups = 1` is a layer norm
/// over everything but the batch, `groups = C` an instance norm).
#[track_caller]
pub fn group_norm(x: &Tensor, groups: usize, scale: &Tensor, bias: &Tensor, eps: f64) -> Tensor {
    let loc = Location::caller();
    let c = check("group_norm", x, &[scale, bias], loc);
    if groups == 0 || c % groups != 0 {
        fail(
            Error::shape(format!(
                "`group_norm`: {groups} groups do not divide the {c} features of the input {}",
                type_str(x.dtype(), x.shape())
            ))
            .at(loc),
        );
    }
    let n = x.shape()[0] as isize;
    let g = x.reshape(&[n, -1, groups as isize, (c / groups) as isize]);
    let st = Moments::of(&g, &[1, 3], loc);
    let y = ((&st.dev - &st.shift) * (&st.var + eps).rsqrt())
        .reshape(&x.shape().iter().map(|&d| d as isize).collect::<Vec<_>>());
    y * scale + bias
}

/// Checks a normalisation's operands: `x` of rank at least 2 and one float type, each
/// parameter `[C]` of its type. Returns `C`.
fn check(name: &str, x: &Tensor, params: &[&Tensor], loc: &'static Location<'static>) -> usize {
    let desc = |t: &Tensor| type_str(t.dtype(), t.shape());
    if x.ndim() < 2 || !x.dtype().is_float() {
        fail(
            Error::shape(format!(
                "`{name}`: the input {} needs a float type and at least a batch and a feature axis",
                desc(x)
            ))
            .at(loc),
        );
    }
    let c = x.shape()[x.ndim() - 1];
    for p in params {
        if p.shape() != [c] || p.dtype() != x.dtype() {
            fail(
                Error::shape(format!(
                    "`{name}`: a parameter is {}; the input {} needs {}",
                    desc(p),
                    desc(x),
                    type_str(x.dtype(), &[c])
                ))
                .at(loc),
            );
        }
    }
    c
}
