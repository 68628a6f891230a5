//! `tensor.iter_axis(axis)`: the slices of a tensor along one axis, for a
//! `for` loop that becomes a `scan` when the tensor is traced;
//! `zip_axis((&xs, &ys), axis)`: the slices of several tensors together.

use crate::Tensor;
use std::borrow::Borrow;
use std::marker::PhantomData;

/// The slices of a tensor along an axis (see [`Tensor::iter_axis`]). Not an
/// `Iterator`: inside `#[jit]` a `for` over it is staged as one `scan` node;
/// eagerly it visits the slices in order.
#[derive(Clone, Debug)]
pub struct AxisIter {
    pub(crate) tensor: Tensor,
    pub(crate) axis: usize,
}

impl AxisIter {
    /// The slices as a `Vec` (each without the iterated axis).
    #[track_caller]
    pub fn to_vec(&self) -> Vec<Tensor> {
        let n = self.tensor.shape()[self.axis];
        (0..n).map(|i| self.slice(i)).collect()
    }

    /// Slice `i` without the iterated axis.
    #[track_caller]
    pub(crate) fn slice(&self, i: usize) -> Tensor {
        let a = self.axis as isize;
        self.tensor
            .slice_axis(a, i as isize, i as isize + 1, 1)
            .squeeze(&[a])
    }

    /// How many slices the iteration yields (the axis's length).
    pub fn len(&self) -> usize {
        self.tensor.shape()[self.axis]
    }

    /// Whether the axis has length 0 (the loop body never runs).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Tensor {
    /// The slices of `self` along `axis` (negative counts from the end),
    /// each without that axis. `for row in x.iter_axis(0) { .. }` in a
    /// `#[jit]` function is a `scan` over the leading axis.
    #[track_caller]
    pub fn iter_axis(&self, axis: isize) -> AxisIter {
        axis_iter(self, axis, "`iter_axis`", std::panic::Location::caller())
    }
}

/// `t`'s slices along `axis`, or the error of `what` (`iter_axis`, or
/// `zip_axis` and the tensor's place) when the axis is out of range.
fn axis_iter(t: &Tensor, axis: isize, what: &str, loc: crate::SourceLoc) -> AxisIter {
    let r = t.ndim() as isize;
    let a = if axis < 0 { axis + r } else { axis };
    if r == 0 || a < 0 || a >= r {
        crate::trace::fail(
            crate::Error::shape(format!(
                "{what}: axis {axis} is out of range for {}",
                crate::error::type_str(t.dtype(), t.shape())
            ))
            .at(loc),
        );
    }
    AxisIter {
        tensor: t.clone(),
        axis: a as usize,
    }
}

/// The slices of several tensors along one axis, taken together (see
/// [`zip_axis`]): each iteration receives a tuple of slices, one per
/// tensor. Like [`AxisIter`], not an `Iterator`: inside `#[jit]` a `for`
/// over it is staged as one `scan` node; eagerly it visits the slices in
/// order.
#[derive(Clone, Debug)]
pub struct ZipAxis<I> {
    pub(crate) iters: Vec<AxisIter>,
    item: PhantomData<fn() -> I>,
}

impl<I: ZipItem> ZipAxis<I> {
    /// The slices as a `Vec` of tuples (each slice without the iterated
    /// axis).
    #[track_caller]
    pub fn to_vec(&self) -> Vec<I> {
        (0..self.len()).map(|i| self.item(i)).collect()
    }

    /// The tuple of slices `i`.
    #[track_caller]
    pub(crate) fn item(&self, i: usize) -> I {
        I::from_slices(self.iters.iter().map(|it| it.slice(i)).collect())
    }

    /// How many tuples the iteration yields (the common length of the
    /// tensors along the axis).
    pub fn len(&self) -> usize {
        self.iters[0].len()
    }

    /// Whether the axis has length 0 (the loop body never runs).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A tuple of tensors [`zip_axis`] iterates over: 2 to 6 elements, each a
/// `Tensor` or a `&Tensor`.
pub trait ZipTensors {
    /// What each iteration receives: a tuple of as many `Tensor`s.
    type Item: ZipItem;
    /// The tensors, in order.
    fn tensors(&self) -> Vec<&Tensor>;
}

/// A tuple of slices [`ZipAxis`] yields (a tuple of 2 to 6 `Tensor`s).
pub trait ZipItem: crate::Tree {
    /// The tuple of `slices`, in order (as many as the tuple has elements).
    fn from_slices(slices: Vec<Tensor>) -> Self;
}

macro_rules! zip_tuple {
    ($($t:ident $i:tt),*) => {
        impl<$($t: Borrow<Tensor>),*> ZipTensors for ($($t,)*) {
            type Item = ($(zip_tuple!(@tensor $t),)*);
            fn tensors(&self) -> Vec<&Tensor> {
                vec![$(self.$i.borrow()),*]
            }
        }
        impl ZipItem for ($(zip_tuple!(@tensor $t),)*) {
            fn from_slices(slices: Vec<Tensor>) -> Self {
                let mut it = slices.into_iter();
                ($(zip_tuple!(@next it $t),)*)
            }
        }
    };
    (@tensor $t:ident) => { Tensor };
    (@next $it:ident $t:ident) => { $it.next().expect("one slice per tensor") };
}
zip_tuple!(A 0, B 1);
zip_tuple!(A 0, B 1, C 2);
zip_tuple!(A 0, B 1, C 2, D 3);
zip_tuple!(A 0, B 1, C 2, D 3, E 4);
zip_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);

/// The slices of several tensors along `axis` (negative counts from the end
/// of each tensor's shape) taken together: `for (x, y) in zip_axis((&xs,
/// &ys), 0) { .. }` in a `#[jit]` function is one `scan` over the leading
/// axes of `xs` and `ys`, each iteration receiving row `i` of both. The
/// tensors must have the same length along the axis: a tuple whose lengths
/// differ is a shape error naming each tensor, its type and its length.
///
/// ```
/// use jitfuse_runtime::{zip_axis, Tensor};
/// let xs = Tensor::from_vec(vec![1f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// let ys = Tensor::from_vec(vec![10i32, 20], &[2]).unwrap();
/// let rows = zip_axis((&xs, &ys), 0).to_vec();
/// assert_eq!(rows[1].0.to_vec::<f32>().unwrap(), vec![3.0, 4.0]);
/// assert_eq!(rows[1].1.item::<i32>().unwrap(), 20);
/// ```
#[track_caller]
pub fn zip_axis<T: ZipTensors>(tensors: T, axis: isize) -> ZipAxis<T::Item> {
    let loc = std::panic::Location::caller();
    let ts = tensors.tensors();
    let iters: Vec<AxisIter> = ts
        .iter()
        .enumerate()
        .map(|(k, t)| axis_iter(t, axis, &format!("`zip_axis`: tensor {k}"), loc))
        .collect();
    if iters.iter().any(|it| it.len() != iters[0].len()) {
        let list: Vec<String> = iters
            .iter()
            .enumerate()
            .map(|(k, it)| {
                format!(
                    "tensor {k} {} has {}",
                    crate::error::type_str(it.tensor.dtype(), it.tensor.shape()),
                    it.len()
                )
            })
            .collect();
        crate::trace::fail(
            crate::Error::shape(format!(
                "`zip_axis`: the tensors have different lengths along axis {axis}: {}",
                list.join(", ")
            ))
            .at(loc),
        );
    }
    ZipAxis {
        iters,
        item: PhantomData,
    }
}
