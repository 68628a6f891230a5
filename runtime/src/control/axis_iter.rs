//! `tensor.iter_axis(axis)`: the slices of a tensor along one axis, for a
//! `for` loop that becomes a `scan` when the tensor is traced.

use crate::Tensor;

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
        let loc = std::panic::Location::caller();
        let r = self.ndim() as isize;
        let a = if axis < 0 { axis + r } else { axis };
        if r == 0 || a < 0 || a >= r {
            crate::trace::fail(
                crate::Error::shape(format!(
                    "`iter_axis`: axis {axis} is out of range for {}",
                    crate::error::type_str(self.dtype(), self.shape())
                ))
                .at(loc),
            );
        }
        AxisIter {
            tensor: self.clone(),
            axis: a as usize,
        }
    }
}
