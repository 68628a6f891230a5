//! Reductions: `sum`, `mean`, `max`, `min`, `prod`, `logsumexp`, `var`,
//! `std` over one or several axes (negative counts from the end), each with a
//! `_keepdims` and an `_all` form; `argmax` / `argmin`.

use super::ops::apply;
use super::shape_ops::norm_axis;
use super::Tensor;
use crate::error::type_str;
use crate::ir::{Op, ReduceOp};
use crate::trace::fail;
use crate::{DType, Error, SourceLoc};
use std::panic::Location;

/// Axes of a reduction: one `isize` (or `i32`), a slice, an array or a `Vec`.
pub trait Axes {
    /// The axes, negative ones counting from the end.
    fn axes(&self) -> Vec<isize>;
}
impl Axes for isize {
    fn axes(&self) -> Vec<isize> {
        vec![*self]
    }
}
impl Axes for i32 {
    fn axes(&self) -> Vec<isize> {
        vec![*self as isize]
    }
}
impl Axes for usize {
    fn axes(&self) -> Vec<isize> {
        vec![*self as isize]
    }
}
impl Axes for &[isize] {
    fn axes(&self) -> Vec<isize> {
        self.to_vec()
    }
}
impl<const N: usize> Axes for [isize; N] {
    fn axes(&self) -> Vec<isize> {
        self.to_vec()
    }
}
impl<const N: usize> Axes for [i32; N] {
    fn axes(&self) -> Vec<isize> {
        self.iter().map(|&a| a as isize).collect()
    }
}
impl Axes for Vec<isize> {
    fn axes(&self) -> Vec<isize> {
        self.clone()
    }
}

/// Sorted, distinct, normalised axes.
fn norm_axes(op: &str, t: &Tensor, axes: &dyn Axes, loc: SourceLoc) -> Vec<usize> {
    let mut v: Vec<usize> = axes
        .axes()
        .into_iter()
        .map(|a| norm_axis(op, t, a, t.ndim(), loc))
        .collect();
    v.sort();
    let n = v.len();
    v.dedup();
    if v.len() != n {
        fail(
            Error::shape(format!(
                "`{op}`: an axis is listed twice in {:?} for {}",
                axes.axes(),
                type_str(t.dtype, &t.shape)
            ))
            .at(loc),
        );
    }
    v
}

fn reduce_at(t: &Tensor, op: ReduceOp, axes: &[usize], keepdims: bool, loc: SourceLoc) -> Tensor {
    if t.dtype == DType::Bool {
        fail(
            Error::dtype(format!(
                "`{}` of a bool tensor {}: cast it to a number first",
                op.name().trim_start_matches("reduce_"),
                type_str(t.dtype, &t.shape)
            ))
            .at(loc),
        );
    }
    let out: Vec<usize> = (0..t.ndim())
        .filter(|a| !axes.contains(a))
        .map(|a| t.shape[a])
        .collect();
    let r = if axes.is_empty() {
        t.clone()
    } else {
        apply(Op::Reduce(op, axes.to_vec()), &[t], out, t.dtype, loc)
    };
    if keepdims {
        keep(t, &r, axes)
    } else {
        r
    }
}

/// Reinsert reduced axes with size 1.
fn keep(t: &Tensor, r: &Tensor, axes: &[usize]) -> Tensor {
    let s: Vec<isize> = (0..t.ndim())
        .map(|a| {
            if axes.contains(&a) {
                1
            } else {
                t.shape[a] as isize
            }
        })
        .collect();
    r.reshape(&s)
}

fn count(t: &Tensor, axes: &[usize]) -> usize {
    axes.iter().map(|&a| t.shape[a]).product()
}

fn float_only(op: &str, t: &Tensor, loc: SourceLoc) {
    if !t.dtype.is_float() {
        fail(
            Error::dtype(format!(
                "`{op}` needs a float tensor, found {}: cast it first",
                type_str(t.dtype, &t.shape)
            ))
            .at(loc),
        );
    }
}

macro_rules! reductions {
    ($($name:ident, $keep:ident, $all:ident => $op:ident;)*) => {
        impl Tensor {
            $(
                #[doc = concat!("`", stringify!($op), "` over the given axes, which are removed.")]
                #[track_caller]
                pub fn $name(&self, axes: impl Axes) -> Tensor {
                    let loc = Location::caller();
                    let a = norm_axes(stringify!($name), self, &axes, loc);
                    reduce_at(self, ReduceOp::$op, &a, false, loc)
                }
                #[doc = concat!("`", stringify!($name), "` keeping the reduced axes with size 1.")]
                #[track_caller]
                pub fn $keep(&self, axes: impl Axes) -> Tensor {
                    let loc = Location::caller();
                    let a = norm_axes(stringify!($name), self, &axes, loc);
                    reduce_at(self, ReduceOp::$op, &a, true, loc)
                }
                #[doc = concat!("`", stringify!($name), "` over every axis: a scalar.")]
                #[track_caller]
                pub fn $all(&self) -> Tensor {
                    let a: Vec<usize> = (0..self.ndim()).collect();
                    reduce_at(self, ReduceOp::$op, &a, false, Location::caller())
                }
            )*
        }
    };
}

reductions! {
    sum, sum_keepdims, sum_all => Sum;
    max, max_keepdims, max_all => Max;
    min, min_keepdims, min_all => Min;
    prod, prod_keepdims, prod_all => Prod;
}

macro_rules! float_reductions {
    ($($name:ident, $keep:ident, $all:ident => $f:ident;)*) => {
        impl Tensor {
            $(
                #[doc = concat!("`", stringify!($name), "` over `axes` (removed from the shape).")]
                #[track_caller]
                pub fn $name(&self, axes: impl Axes) -> Tensor {
                    let loc = Location::caller();
                    let a = norm_axes(stringify!($name), self, &axes, loc);
                    $f(self, &a, false, loc)
                }
                #[doc = concat!("`", stringify!($name), "` over `axes`, kept as size-1 dims.")]
                #[track_caller]
                pub fn $keep(&self, axes: impl Axes) -> Tensor {
                    let loc = Location::caller();
                    let a = norm_axes(stringify!($name), self, &axes, loc);
                    $f(self, &a, true, loc)
                }
                #[doc = concat!("`", stringify!($name), "` of every element (a scalar tensor).")]
                #[track_caller]
                pub fn $all(&self) -> Tensor {
                    let a: Vec<usize> = (0..self.ndim()).collect();
                    $f(self, &a, false, Location::caller())
                }
            )*
        }
    };
}

float_reductions! {
    mean, mean_keepdims, mean_all => mean_at;
    var, var_keepdims, var_all => var_at;
    std, std_keepdims, std_all => std_at;
    logsumexp, logsumexp_keepdims, logsumexp_all => logsumexp_at;
}

/// The mean as `m + sum(x - m) / n` around the first estimate `m = sum(x) / n`: on a
/// constant row `x - m` is the estimate's own rounding error, summed without loss, so the
/// mean is exact; elsewhere the correction takes back most of the first sum's rounding
/// where the values sit far from 0 (the case where it is large against the mean). Both
/// sums read the row in one row kernel (two phases); the division is by `n`, exact in the
/// tensor's type, never by a rounded `1/n`.
///
/// `m + sum(x - m) / n` is `sum(x) / n` for any `m`, so the estimate carries no gradient:
/// the derivative is exactly `1/n` per element, where differentiating through `m` would add
/// its own `+1/n` and `-1/n` (a cancellation, and two more passes over the cotangent).
fn mean_at(t: &Tensor, axes: &[usize], keepdims: bool, loc: SourceLoc) -> Tensor {
    float_only("mean", t, loc);
    let n = count(t, axes) as f64;
    let m = super::ops::stop_gradient(&(reduce_at(t, ReduceOp::Sum, axes, true, loc) / n));
    let correction = reduce_at(&(t - &m), ReduceOp::Sum, axes, keepdims, loc) / n;
    let m = if keepdims { m } else { drop_kept(t, &m, axes) };
    m + correction
}

/// Population variance (ddof = 0, as NumPy and JAX default), two-pass around the
/// accurate mean with the deviations' own mean taken back (`mean(d²) - mean(d)²`, both
/// sums over one read: the mean's rounding, squared into every deviation, no longer
/// biases it). A constant row gives 0, never the square of a rounding error (which
/// overflowed to inf for values near 1e30).
///
/// `mean(d²) - mean(d)²` is the same for deviations from any shift, so the mean carries no
/// gradient: the derivative is `2 (x - mean(x)) / n` through `d` alone, where
/// differentiating through the mean would add terms that cancel (and their passes).
fn var_at(t: &Tensor, axes: &[usize], keepdims: bool, loc: SourceLoc) -> Tensor {
    float_only("var", t, loc);
    let n = count(t, axes) as f64;
    let d = t - &super::ops::stop_gradient(&mean_at(t, axes, true, loc));
    let squares = reduce_at(&d.square(), ReduceOp::Sum, axes, keepdims, loc) / n;
    let bias = reduce_at(&d, ReduceOp::Sum, axes, keepdims, loc) / n;
    (squares - bias.square()).maximum(0.0)
}

/// The moments of `x` over `axes` (kept as size 1), from the deviations from a first
/// estimate of the mean, `first = Σx / n`: `dev = x - first`, `shift = Σdev / n`, the mean
/// `first + shift` (what `mean` computes) and the biased variance `Σdev² / n - shift²`
/// (`var`'s bias-corrected form, around `first` rather than the corrected mean: the
/// correction takes back the estimate's rounding either way). Three sums over one pass of
/// deviations, where `mean` then `var` take four over two (the variance's deviations are
/// from the corrected mean). The estimate carries no gradient (neither the mean nor the
/// variance depends on it), so a normalisation written on `dev` and `shift` shares `dev`
/// between its statistics, its output and its gradient (`layer_norm`, `batch_norm_train`,
/// `group_norm`).
pub(crate) struct Moments {
    pub first: Tensor,
    pub dev: Tensor,
    pub shift: Tensor,
    pub var: Tensor,
}

impl Moments {
    /// The moments over `axes` (normalised).
    pub fn of(x: &Tensor, axes: &[usize], loc: SourceLoc) -> Moments {
        let n = count(x, axes) as f64;
        let sum = |t: &Tensor| reduce_at(t, ReduceOp::Sum, axes, true, loc);
        let first = super::ops::stop_gradient(&(sum(x) / n));
        let dev = x - &first;
        let shift = sum(&dev) / n;
        let var = (sum(&dev.square()) / n - shift.square()).maximum(0.0);
        Moments {
            first,
            dev,
            shift,
            var,
        }
    }

    pub fn mean(&self) -> Tensor {
        &self.first + &self.shift
    }
}

fn std_at(t: &Tensor, axes: &[usize], keepdims: bool, loc: SourceLoc) -> Tensor {
    float_only("std", t, loc);
    var_at(t, axes, keepdims, loc).sqrt()
}

/// A reduction's result with its kept size-1 axes removed again.
fn drop_kept(t: &Tensor, r: &Tensor, axes: &[usize]) -> Tensor {
    let kept: Vec<isize> = (0..t.ndim())
        .filter(|a| !axes.contains(a))
        .map(|a| t.shape[a] as isize)
        .collect();
    r.reshape(&kept)
}

/// `log(sum(exp(x)))` computed stably: the max is subtracted first (and a
/// row of all -inf gives -inf, not NaN). The result is the same for any
/// shift, so the shift carries no gradient (the gradient is exactly
/// `softmax(x)`, with no argmax mask).
fn logsumexp_at(t: &Tensor, axes: &[usize], keepdims: bool, loc: SourceLoc) -> Tensor {
    float_only("logsumexp", t, loc);
    let m = super::ops::stop_gradient(&reduce_at(t, ReduceOp::Max, axes, true, loc));
    let finite = m.abs().lt(f64::INFINITY);
    let m = crate::select(&finite, &m, 0.0);
    let s = reduce_at(&(t - &m).exp(), ReduceOp::Sum, axes, true, loc).ln() + &m;
    if keepdims {
        s
    } else {
        drop_kept(t, &s, axes)
    }
}

impl Tensor {
    /// Index (i64) of the first maximum along `axis`; NaN counts as the maximum.
    #[track_caller]
    pub fn argmax(&self, axis: isize) -> Tensor {
        arg_at(self, axis, true, Location::caller())
    }

    /// Index (i64) of the first minimum along `axis`; NaN counts as the minimum.
    #[track_caller]
    pub fn argmin(&self, axis: isize) -> Tensor {
        arg_at(self, axis, false, Location::caller())
    }
}

fn arg_at(t: &Tensor, axis: isize, max: bool, loc: SourceLoc) -> Tensor {
    let name = if max { "argmax" } else { "argmin" };
    let a = norm_axis(name, t, axis, t.ndim(), loc);
    if t.dtype == DType::Bool || t.shape[a] == 0 {
        fail(
            Error::shape(format!(
                "`{name}` along axis {a} of {}: needs a numeric tensor with a non-empty axis",
                type_str(t.dtype, &t.shape)
            ))
            .at(loc),
        );
    }
    let out: Vec<usize> = (0..t.ndim())
        .filter(|&d| d != a)
        .map(|d| t.shape[d])
        .collect();
    apply(
        if max { Op::ArgMax(a) } else { Op::ArgMin(a) },
        &[t],
        out,
        DType::I64,
        loc,
    )
}
