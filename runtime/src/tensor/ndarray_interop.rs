//! Conversions between `Tensor` and `ndarray` arrays (feature `ndarray`, off by default).
//!
//! A concrete tensor is one contiguous row-major block, so it reads as an `ArrayViewD`
//! without a copy (`ArrayViewD::try_from(&t)`). The other way copies: jitfuse's buffers are
//! 64-byte aligned for its vector kernels and recycled through its own pool, which an
//! array's `Vec` is not; a standard-layout array is one block copy, any other layout
//! (transposed, sliced, negative strides) is read in its logical row-major order.

use super::Tensor;
use crate::{Element, Error};
use ndarray::{ArrayBase, ArrayD, ArrayViewD, Data, Dimension, IxDyn};

impl Tensor {
    /// A tensor holding a copy of `a`'s elements in its logical (row-major) order; an
    /// out-of-memory error when the copy cannot be allocated.
    pub fn from_ndarray<T: Element, S: Data<Elem = T>, D: Dimension>(
        a: &ArrayBase<S, D>,
    ) -> Result<Tensor, Error> {
        match a.as_slice() {
            Some(block) => Tensor::from_slice(block, a.shape()),
            None => Tensor::from_vec(a.iter().copied().collect(), a.shape()),
        }
    }
}

/// A copy of the array (as `Tensor::from_ndarray`; panics only where allocating the copy
/// fails, as `Vec`'s conversions do).
impl<T: Element, S: Data<Elem = T>, D: Dimension> From<&ArrayBase<S, D>> for Tensor {
    fn from(a: &ArrayBase<S, D>) -> Tensor {
        Tensor::from_ndarray(a).unwrap_or_else(|e| panic!("Tensor::from(&array): {e}"))
    }
}

/// A copy of the array (as `Tensor::from_ndarray`).
impl<T: Element, D: Dimension> From<ndarray::Array<T, D>> for Tensor {
    fn from(a: ndarray::Array<T, D>) -> Tensor {
        Tensor::from(&a)
    }
}

/// The tensor's elements without a copy. Errors when `T` is not its dtype or the tensor is
/// traced (inside `#[jit]`), as `as_slice`.
impl<'a, T: Element> TryFrom<&'a Tensor> for ArrayViewD<'a, T> {
    type Error = Error;
    #[track_caller]
    fn try_from(t: &'a Tensor) -> Result<Self, Error> {
        let data = t.as_slice::<T>()?;
        Ok(ArrayViewD::from_shape(IxDyn(t.shape()), data)
            .expect("a concrete tensor is a row-major block of its shape"))
    }
}

/// A copy of the tensor's elements, errors as for the view.
impl<T: Element> TryFrom<&Tensor> for ArrayD<T> {
    type Error = Error;
    #[track_caller]
    fn try_from(t: &Tensor) -> Result<Self, Error> {
        Ok(ArrayViewD::<T>::try_from(t)?.to_owned())
    }
}

/// A copy of the tensor's elements, errors as for the view.
impl<T: Element> TryFrom<Tensor> for ArrayD<T> {
    type Error = Error;
    #[track_caller]
    fn try_from(t: Tensor) -> Result<Self, Error> {
        ArrayD::try_from(&t)
    }
}
