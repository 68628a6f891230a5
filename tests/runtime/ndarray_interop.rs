//! `Tensor` <-> `ndarray` (the `ndarray` feature, which the tests enable).

use jitfuse::ndarray::{arr2, Array, ArrayD, ArrayViewD, Axis, IxDyn};
use jitfuse::prelude::*;

#[test]
fn arrays_become_tensors_in_logical_order_whatever_their_layout() {
    let a = arr2(&[[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    let t = Tensor::from(&a);
    assert_eq!(t.shape(), &[2, 3]);
    assert_eq!(t.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // Transposed, reversed and sliced views are read as they look, not as stored.
    let at = Tensor::from(&a.t());
    assert_eq!(at.shape(), &[3, 2]);
    assert_eq!(at.to_vec::<f32>().unwrap(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    let mut rev = a.clone();
    rev.invert_axis(Axis(1));
    assert_eq!(
        Tensor::from(&rev).to_vec::<f32>().unwrap(),
        [3.0, 2.0, 1.0, 6.0, 5.0, 4.0]
    );
    let col = a.slice(jitfuse::ndarray::s![.., 1]);
    assert_eq!(Tensor::from(&col).to_vec::<f32>().unwrap(), [2.0, 5.0]);
    // Owned arrays of every element type, 0-d and empty ones.
    let ints = Array::from_shape_vec((2, 2), vec![1i64, -2, 3, i64::MAX]).unwrap();
    assert_eq!(
        Tensor::from(ints).to_vec::<i64>().unwrap(),
        [1, -2, 3, i64::MAX]
    );
    let flags = Array::from_vec(vec![true, false, true]);
    assert_eq!(Tensor::from(flags).dtype(), DType::Bool);
    let scalar = Tensor::from(jitfuse::ndarray::arr0(2.5f64));
    assert_eq!(
        (scalar.shape(), scalar.item::<f64>().unwrap()),
        (&[][..], 2.5)
    );
    let empty = Tensor::from(Array::<i32, _>::zeros((3, 0)));
    assert_eq!((empty.shape(), empty.len()), (&[3, 0][..], 0));
}

#[test]
fn tensors_are_viewed_as_arrays_without_a_copy() {
    let t = Tensor::from_vec((0..24).map(|i| i as f32).collect(), &[2, 3, 4]).unwrap();
    let v = ArrayViewD::<f32>::try_from(&t).unwrap();
    assert_eq!(v.shape(), &[2, 3, 4]);
    assert_eq!(v[[1, 2, 3]], 23.0);
    assert_eq!(v[IxDyn(&[0, 1, 2])], 6.0);
    assert!(std::ptr::eq(
        v.as_ptr(),
        t.as_slice::<f32>().unwrap().as_ptr()
    ));
    // A copy that outlives the tensor, and the round trip.
    let owned: ArrayD<f32> = t.clone().try_into().unwrap();
    drop(t);
    assert_eq!(
        Tensor::from(&owned).to_vec::<f32>().unwrap(),
        owned.as_slice().unwrap()
    );
    let scalar = Tensor::from_vec(vec![7i32], &[]).unwrap();
    assert_eq!(ArrayD::<i32>::try_from(&scalar).unwrap().ndim(), 0);
}

#[test]
fn viewing_a_tensor_as_another_dtype_is_an_error_naming_both() {
    let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let e = ArrayViewD::<f64>::try_from(&t).unwrap_err().to_string();
    assert!(
        e.contains("as_slice::<f64>()") && e.contains("dtype f32"),
        "{e}"
    );
    let e = t.as_slice::<i32>().unwrap_err().to_string();
    assert!(e.contains("use as_slice::<f32>() or cast first"), "{e}");
    assert_eq!(t.as_slice::<f32>().unwrap(), [1.0, 2.0]);
}

#[jit]
fn interop_traced(x: &Tensor) -> Tensor {
    // Inside `#[jit]` the tensor has no value yet: the view is an error, not a panic.
    let e = ArrayViewD::<f32>::try_from(x).unwrap_err().to_string();
    assert!(e.contains("as_slice") && e.contains("traced"), "{e}");
    x * 2.0
}

#[test]
fn a_traced_tensor_has_no_array_view() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    assert_eq!(interop_traced(&x).to_vec::<f32>().unwrap(), [2.0, 4.0]);
}
