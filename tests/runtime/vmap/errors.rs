//! `vmap`'s errors name the arguments whose batch sizes differ and their
//! sizes, the axis that is out of range, and the entry counts that do not
//! match.

use crate::common::panic_text;
use jitfuse::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn message(f: impl FnOnce()) -> String {
    let e = catch_unwind(AssertUnwindSafe(f)).expect_err("the call should fail");
    panic_text(&*e)
}

fn t(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape, DType::F32)
}

#[test]
fn differing_batch_sizes_name_each_argument_and_its_size() {
    let f = vmap(|(a, b): &(Tensor, Tensor)| a + b, [0, 1], 0);
    let m = message(|| {
        f(&(t(&[3, 2]), t(&[2, 4])));
    });
    assert!(m.contains("different sizes along their batch axes"), "{m}");
    assert!(m.contains("argument 0 (f32[3,2], axis 0) has 3"), "{m}");
    assert!(m.contains("argument 1 (f32[2,4], axis 1) has 4"), "{m}");
    assert!(m.contains("vmap"), "{m}");
}

#[test]
fn an_axis_out_of_range_is_named_with_its_argument() {
    let f = vmap(|(a, b): &(Tensor, Tensor)| a * b, [Some(0), Some(-3)], 0);
    let m = message(|| {
        f(&(t(&[2, 2]), t(&[2, 2])));
    });
    assert!(
        m.contains("in_axes gives argument 1 the axis -3, out of range for f32[2,2] (rank 2)"),
        "{m}"
    );
    let g = vmap(|a: &Tensor| a.sum_all(), 0, 1);
    let m = message(|| {
        g(&t(&[4, 2]));
    });
    assert!(m.contains("out_axes gives output 0 the axis 1, out of range for its batched result f32[4] (rank 1)"), "{m}");
}

#[test]
fn leaves_of_a_tree_argument_are_named() {
    let f = vmap(|(p, x): &((Tensor, Tensor), Tensor)| &p.0 + &p.1 + x, 0, 0);
    let m = message(|| {
        f(&((t(&[2]), t(&[3])), t(&[2])));
    });
    assert!(
        m.contains("argument 0 (leaf 1) (f32[3], axis 0) has 3"),
        "{m}"
    );
}

#[test]
fn a_batched_output_with_no_out_axis_and_wrong_entry_counts_are_errors() {
    let f = vmap(
        |(a, b): &(Tensor, Tensor)| (a * 2.0, b.clone()),
        [Some(0), None],
        [None, None],
    );
    let m = message(|| {
        f(&(t(&[2, 3]), t(&[3])));
    });
    assert!(
        m.contains("output 0 depends on a batched argument, but its out_axes entry is None"),
        "{m}"
    );
    // A shared output with None is its unbatched value.
    let g = vmap(
        |(a, b): &(Tensor, Tensor)| (a * 2.0, b.clone()),
        [Some(0), None],
        [Some(0), None],
    );
    let (x, y) = g(&(t(&[2, 3]), Tensor::ones(&[3], DType::F32)));
    assert_eq!((x.shape(), y.shape()), (&[2usize, 3][..], &[3usize][..]));
    let h = vmap(
        |(a, b, c): &(Tensor, Tensor, Tensor)| a + b + c,
        [Some(0), None],
        0,
    );
    let m = message(|| {
        h(&(t(&[2]), t(&[2]), t(&[2])));
    });
    assert!(
        m.contains("in_axes has 2 entries; there are 3 arguments (3 leaves)"),
        "{m}"
    );
    let k = vmap(|a: &Tensor| a.clone(), None, 0);
    let m = message(|| {
        k(&t(&[2]));
    });
    assert!(m.contains("no argument is batched"), "{m}");
}

#[test]
fn errors_inside_the_function_name_the_op_and_the_example_shapes() {
    // The function is traced on one example: an op's error shows the
    // example's shapes, not the batched ones.
    let f = vmap(|(a, b): &(Tensor, Tensor)| a.matmul(b), [0, 0], 0);
    let m = message(|| {
        f(&(t(&[5, 2, 3]), t(&[5, 4, 2])));
    });
    assert!(m.contains("matmul"), "{m}");
    assert!(m.contains("f32[2,3]") && m.contains("f32[4,2]"), "{m}");
}
