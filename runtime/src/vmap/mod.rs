//! `vmap`: a function of one example as a function of a batch (JAX's
//! `jax.vmap`).
//!
//! `vmap(f, in_axes, out_axes)` traces `f` once on one example's shapes,
//! then replays the traced graph with a batching rule per op
//! (`batch.rs`): a matmul becomes a batched matmul (or one larger GEMM when
//! the right operand is shared), reductions and shape ops shift their axes,
//! `take`/`scatter_add` with per-lane indices become one gather or scatter
//! (`indexing.rs`), and control flow batches as JAX batches it
//! (`control.rs`). Inside a trace (`#[jit]`, `grad`, another `vmap`) the
//! batched ops are recorded there, so `vmap` composes with every other
//! transformation; eagerly they run as compiled single ops.

mod batch;
mod control;
mod indexing;
mod lanes;

use crate::error::type_str;
use crate::trace::{self, fail, ParamSpec};
use crate::{Error, SourceLoc, Tensor, Tree};
use lanes::{BVal, Lanes};
use std::cell::RefCell;
use std::panic::Location;

/// Which axis of each argument (or output) of a vmapped function is the
/// batch axis: `None` for an argument shared by the whole batch (an output
/// with `None` must not depend on a batched argument). Negative axes count
/// from the end.
///
/// Built from one axis for everything (`0`, `Some(1)`, `None`) or from a
/// list (`[Some(0), None]`, `vec![..]`, `&[..]`) with one entry per
/// argument (the elements of a tuple argument; any other tree is one
/// argument), or one entry per leaf. An argument's entry applies to all of
/// its leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchAxes(pub Vec<Option<isize>>);

impl From<isize> for BatchAxes {
    fn from(a: isize) -> Self {
        BatchAxes(vec![Some(a)])
    }
}
impl From<Option<isize>> for BatchAxes {
    fn from(a: Option<isize>) -> Self {
        BatchAxes(vec![a])
    }
}
impl<const N: usize> From<[Option<isize>; N]> for BatchAxes {
    fn from(a: [Option<isize>; N]) -> Self {
        BatchAxes(a.to_vec())
    }
}
impl<const N: usize> From<[isize; N]> for BatchAxes {
    fn from(a: [isize; N]) -> Self {
        BatchAxes(a.iter().map(|&x| Some(x)).collect())
    }
}
impl From<Vec<Option<isize>>> for BatchAxes {
    fn from(a: Vec<Option<isize>>) -> Self {
        BatchAxes(a)
    }
}
impl From<&[Option<isize>]> for BatchAxes {
    fn from(a: &[Option<isize>]) -> Self {
        BatchAxes(a.to_vec())
    }
}

/// `f` mapped over a batch: the returned function takes arguments with a
/// batch axis (where `in_axes` says) and returns `f`'s outputs stacked along
/// `out_axes`, computing what calling `f` on each example and stacking the
/// results would, in one batched program. See [`BatchAxes`] for how axes are
/// given; `f`'s arguments are the elements of a tuple `T` (or `T` itself).
///
/// ```
/// use jitfuse_runtime::{vmap, Tensor};
/// let x = Tensor::from_vec((0..6).map(|i| i as f32).collect(), &[2, 3]).unwrap();
/// let w = Tensor::from_vec(vec![1f32, 2.0, 3.0], &[3]).unwrap();
/// // A dot product of one example, mapped over the rows of `x` (`w` shared).
/// let dots = vmap(|(x, w): &(Tensor, Tensor)| (x * w).sum_all(), [Some(0), None], 0);
/// assert_eq!(dots(&(x, w)).to_vec::<f32>().unwrap(), vec![8.0, 26.0]);
/// ```
#[track_caller]
pub fn vmap<T: Tree, U: Tree>(
    f: impl Fn(&T) -> U,
    in_axes: impl Into<BatchAxes>,
    out_axes: impl Into<BatchAxes>,
) -> impl Fn(&T) -> U {
    let loc = Location::caller();
    let (in_axes, out_axes) = (in_axes.into(), out_axes.into());
    move |x: &T| call(&f, &in_axes, &out_axes, x, loc).unwrap_or_else(|e| fail(e))
}

/// [`vmap`] whose mapped function returns its errors instead of panicking:
/// `in_axes` or `out_axes` with the wrong number of entries or an axis out
/// of range, batched arguments whose sizes differ, no batched argument, a
/// batched output whose `out_axes` entry is `None`, and errors of `f` itself
/// on one example's shapes are `Err`, naming the argument (or output) and
/// its shape.
///
/// ```
/// use jitfuse_runtime::{try_vmap, DType, ErrorKind, Tensor};
/// let add = try_vmap(|(a, b): &(Tensor, Tensor)| a + b, 0, 0);
/// let a = Tensor::zeros(&[3, 2], DType::F32);
/// let b = Tensor::zeros(&[4, 2], DType::F32);
/// let e = add(&(a, b)).unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::Shape);
/// assert!(e.message().contains("argument 1 (f32[4,2], axis 0) has 4"));
/// ```
#[track_caller]
pub fn try_vmap<T: Tree, U: Tree>(
    f: impl Fn(&T) -> U,
    in_axes: impl Into<BatchAxes>,
    out_axes: impl Into<BatchAxes>,
) -> impl Fn(&T) -> Result<U, Error> {
    let loc = Location::caller();
    let (in_axes, out_axes) = (in_axes.into(), out_axes.into());
    move |x: &T| call(&f, &in_axes, &out_axes, x, loc)
}

/// Which argument (and leaf of it) leaf `i` is, for messages.
fn describe(args: &[usize], i: usize, what: &str) -> String {
    let mut start = 0;
    for (k, &n) in args.iter().enumerate() {
        if i < start + n {
            return if n == 1 {
                format!("{what} {k}")
            } else {
                format!("{what} {k} (leaf {})", i - start)
            };
        }
        start += n;
    }
    format!("{what} leaf {i}")
}

/// One axis entry per leaf, from entries given for everything, per argument
/// or per leaf.
fn per_leaf(
    what: &str,
    axes: &BatchAxes,
    args: &[usize],
    leaves: usize,
    loc: SourceLoc,
) -> Result<Vec<Option<isize>>, Error> {
    let e = &axes.0;
    if e.len() == 1 {
        Ok(vec![e[0]; leaves])
    } else if e.len() == args.len() {
        Ok(e.iter()
            .zip(args)
            .flat_map(|(a, &n)| std::iter::repeat_n(*a, n))
            .collect())
    } else if e.len() == leaves {
        Ok(e.clone())
    } else {
        let noun = if what == "in_axes" {
            "arguments"
        } else {
            "outputs"
        };
        Err(Error::shape(format!(
            "`vmap`: {what} has {} entries; there are {} {noun} ({leaves} leaves): give one entry, one per {} or one per leaf",
            e.len(),
            args.len(),
            &noun[..noun.len() - 1]
        ))
        .at(loc))
    }
}

/// `axis` of a tensor of rank `rank` counted from the front.
fn normalize(axis: isize, rank: usize) -> Option<usize> {
    let r = rank as isize;
    let a = if axis < 0 { axis + r } else { axis };
    (0..r).contains(&a).then_some(a as usize)
}

fn call<T: Tree, U: Tree>(
    f: &dyn Fn(&T) -> U,
    in_axes: &BatchAxes,
    out_axes: &BatchAxes,
    x: &T,
    loc: SourceLoc,
) -> Result<U, Error> {
    let leaves = x.leaves();
    let args = x.argument_leaves();
    let axes = per_leaf("in_axes", in_axes, &args, leaves.len(), loc)?;
    // Each batched leaf's axis, and the batch size they agree on.
    let mut axis_of: Vec<Option<usize>> = Vec::with_capacity(leaves.len());
    let mut sizes: Vec<(usize, usize)> = Vec::new();
    for (i, (l, a)) in leaves.iter().zip(&axes).enumerate() {
        let Some(a) = *a else {
            axis_of.push(None);
            continue;
        };
        let Some(ax) = normalize(a, l.ndim()) else {
            return Err(Error::shape(format!(
                "`vmap`: in_axes gives {} the axis {a}, out of range for {} (rank {})",
                describe(&args, i, "argument"),
                type_str(l.dtype(), l.shape()),
                l.ndim()
            ))
            .at(loc));
        };
        axis_of.push(Some(ax));
        sizes.push((i, ax));
    }
    let Some(&(first, first_axis)) = sizes.first() else {
        return Err(Error::shape(
            "`vmap`: no argument is batched (every in_axes entry is None); give at least one a batch axis",
        )
        .at(loc));
    };
    let size = leaves[first].shape()[first_axis];
    if sizes.iter().any(|&(i, a)| leaves[i].shape()[a] != size) {
        let list: Vec<String> = sizes
            .iter()
            .map(|&(i, a)| {
                format!(
                    "{} ({}, axis {a}) has {}",
                    describe(&args, i, "argument"),
                    type_str(leaves[i].dtype(), leaves[i].shape()),
                    leaves[i].shape()[a]
                )
            })
            .collect();
        return Err(Error::shape(format!(
            "`vmap`: the batched arguments have different sizes along their batch axes: {}",
            list.join(", ")
        ))
        .at(loc));
    }
    let lanes = Lanes { size, loc };
    // One example's types: the batch axis removed.
    let specs: Vec<ParamSpec> = leaves
        .iter()
        .zip(&axis_of)
        .map(|(l, a)| {
            let mut shape = l.shape().to_vec();
            if let Some(a) = a {
                shape.remove(*a);
            }
            ParamSpec {
                shape,
                dtype: l.dtype(),
                weak: a.is_none() && l.is_weak(),
            }
        })
        .collect();
    let structure: RefCell<Option<U>> = RefCell::new(None);
    let traced = trace::trace(&specs, |ts| {
        let u = f(&x.rebuild(&mut ts.iter().cloned()));
        let out = u.leaves();
        *structure.borrow_mut() = Some(u);
        out
    })?;
    let params: Vec<BVal> = leaves
        .iter()
        .zip(&axis_of)
        .map(|(l, a)| match a {
            Some(a) => BVal::batched(lanes.move_axis(l, *a, 0)),
            None => BVal::shared(l.clone()),
        })
        .collect();
    let outs = batch::batch_outputs(&traced.graph, &params, &traced.captured, &lanes);
    let u = structure.into_inner().expect("traced");
    let out_args = u.argument_leaves();
    let oaxes = per_leaf("out_axes", out_axes, &out_args, outs.len(), loc)?;
    let results = outs
        .iter()
        .zip(&oaxes)
        .enumerate()
        .map(|(i, (v, a))| match a {
            None if v.batched => Err(Error::shape(format!(
                "`vmap`: {} depends on a batched argument, but its out_axes entry is None",
                describe(&out_args, i, "output")
            ))
            .at(loc)),
            None => Ok(v.t.clone()),
            Some(a) => {
                let t = lanes.materialize(v);
                let Some(ax) = normalize(*a, t.ndim()) else {
                    return Err(Error::shape(format!(
                        "`vmap`: out_axes gives {} the axis {a}, out of range for its batched result {} (rank {})",
                        describe(&out_args, i, "output"),
                        type_str(t.dtype(), t.shape()),
                        t.ndim()
                    ))
                    .at(loc));
                };
                Ok(lanes.move_axis(&t, 0, ax))
            }
        })
        .collect::<Result<Vec<Tensor>, Error>>()?;
    Ok(u.rebuild(&mut results.into_iter()))
}
