//! `vmap`'s errors name the arguments whose batch sizes differ and their
//! sizes, the axis that is out of range, and the entry counts that do not
//! match.

use crate::common::panic_text;
use jitfuse::prelude::*;
use jitfuse::ErrorKind;
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

#[test]
fn try_vmap_returns_the_errors_vmap_panics_with() {
    // Each bad call: the `Err` of `try_vmap` has the message `vmap` panics with
    // (before the location, which is each one's own call).
    let same = |e: Result<Tensor, Error>, f: &dyn Fn()| {
        let e = e.expect_err("the call should fail");
        assert_eq!(e.kind(), ErrorKind::Shape, "{e}");
        assert_eq!(e.location().map(|l| l.file()), Some(file!()), "{e}");
        let m = message(|| f());
        assert!(m.starts_with(&format!("{} (at ", e.message())), "{e}\n{m}");
        e.message().to_string()
    };
    let pair = |a: &[usize], b: &[usize]| (t(a), t(b));
    let add = |(a, b): &(Tensor, Tensor)| a + b;

    let m = same(try_vmap(add, [0, 1], 0)(&pair(&[3, 2], &[2, 4])), &|| {
        vmap(add, [0, 1], 0)(&pair(&[3, 2], &[2, 4]));
    });
    assert!(m.contains("argument 0 (f32[3,2], axis 0) has 3"), "{m}");
    assert!(m.contains("argument 1 (f32[2,4], axis 1) has 4"), "{m}");

    let m = same(
        try_vmap(add, [Some(0), Some(-3)], 0)(&pair(&[2, 2], &[2, 2])),
        &|| {
            vmap(add, [Some(0), Some(-3)], 0)(&pair(&[2, 2], &[2, 2]));
        },
    );
    assert!(
        m.contains("in_axes gives argument 1 the axis -3, out of range for f32[2,2] (rank 2)"),
        "{m}"
    );

    let m = same(
        try_vmap(add, [Some(0), None, None], 0)(&pair(&[2], &[2])),
        &|| {
            vmap(add, [Some(0), None, None], 0)(&pair(&[2], &[2]));
        },
    );
    assert!(
        m.contains("in_axes has 3 entries; there are 2 arguments"),
        "{m}"
    );

    let m = same(try_vmap(add, None, 0)(&pair(&[2], &[2])), &|| {
        vmap(add, None, 0)(&pair(&[2], &[2]));
    });
    assert!(m.contains("no argument is batched"), "{m}");

    let m = same(try_vmap(add, 0, 1)(&pair(&[4], &[4])), &|| {
        vmap(add, 0, 1)(&pair(&[4], &[4]));
    });
    assert!(m.contains("out_axes gives output 0 the axis 1, out of range for its batched result f32[4] (rank 1)"), "{m}");

    let m = same(
        try_vmap(add, [Some(0), None], None)(&pair(&[2, 3], &[3])),
        &|| {
            vmap(add, [Some(0), None], None)(&pair(&[2, 3], &[3]));
        },
    );
    assert!(m.contains("output 0 depends on a batched argument"), "{m}");

    // An error of the function on one example's shapes.
    let mm = |(a, b): &(Tensor, Tensor)| a.matmul(b);
    let m = same(try_vmap(mm, 0, 0)(&pair(&[5, 2, 3], &[5, 4, 2])), &|| {
        vmap(mm, 0, 0)(&pair(&[5, 2, 3], &[5, 4, 2]));
    });
    assert!(
        m.contains("matmul") && m.contains("f32[2,3]") && m.contains("f32[4,2]"),
        "{m}"
    );

    // Good arguments: the values `vmap` gives.
    let x = Tensor::from_vec((0..6).map(|i| i as f32).collect(), &[2, 3]).unwrap();
    let w = Tensor::from_vec(vec![1f32, 2.0, 3.0], &[3]).unwrap();
    let dot = |(x, w): &(Tensor, Tensor)| (x * w).sum_all();
    let got = try_vmap(dot, [Some(0), None], 0)(&(x.clone(), w.clone())).unwrap();
    assert_eq!(got.to_vec::<f32>().unwrap(), vec![8.0, 26.0]);
}

/// The vmapped product, or (on an `Err`) the sum of `a`: a scalar.
#[jit]
fn try_vmap_in_jit(a: &Tensor, b: &Tensor) -> Tensor {
    match try_vmap(|(a, b): &(Tensor, Tensor)| a * b, 0, 0)(&(a.clone(), b.clone())) {
        Ok(y) => y,
        Err(_) => a.sum_all(),
    }
}

#[test]
fn try_vmap_inside_jit_returns_err_to_the_body() {
    let y = try_vmap_in_jit(&t(&[2, 3]), &t(&[2, 3]));
    assert_eq!(y.shape(), &[2, 3]);
    let y = try_vmap_in_jit::try_call(&t(&[2, 3]), &t(&[4, 3])).unwrap();
    assert_eq!(
        y.shape(),
        &[] as &[usize],
        "an Err to the body, not an aborted trace"
    );
}
