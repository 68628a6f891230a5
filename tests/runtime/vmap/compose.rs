//! `vmap` composed with the other transformations: `grad`, `value_and_grad`,
//! `vjp` and `jvp` inside it and around it, `checkpoint`, `#[jit]` both
//! ways, and `vmap` of `vmap`; each against loops of single calls.

use super::harness::{arg, property, reordered, Body};
use crate::common::{assert_close, random_tensor, Rng};
use jitfuse::prelude::*;

fn rows(t: &Tensor) -> Vec<Tensor> {
    (0..t.shape()[0] as isize)
        .map(|i| t.slice_axis(0, i, i + 1, 1).squeeze(&[0]))
        .collect()
}

fn rand(rng: &mut Rng, shape: &[usize]) -> Tensor {
    random_tensor(rng, shape, DType::F64, -1.0, 1.0, false)
}

/// A small MLP's loss on one example.
fn loss(p: &(Tensor, Tensor), x: &Tensor, y: &Tensor) -> Tensor {
    let h = x.matmul(&p.0).tanh();
    (h.matmul(&p.1) - y).square().sum_all()
}

#[test]
fn per_example_gradients_values_and_vjps_inside_vmap() {
    property("value_and_grad and vjp inside vmap", 24, |rng| {
        let (i, h, o) = (1 + rng.below(4), 1 + rng.below(4), 1 + rng.below(3));
        let d = DType::F64;
        let args = vec![arg(&[i], d), arg(&[o], d), arg(&[i, h], d), arg(&[h, o], d)];
        let body: Body = Box::new(|a| {
            let (x, y) = (a[0].clone(), a[1].clone());
            let p = (a[2].clone(), a[3].clone());
            let (l, (g1, g2)) = value_and_grad(|p: &(Tensor, Tensor)| loss(p, &x, &y), &p);
            let (out, back) = vjp(|x: &Tensor| x.matmul(&p.0).tanh(), &x);
            let cot = back(&out.sin());
            vec![l, g1, g2, out, cot]
        });
        (args, body)
    });
}

#[test]
fn jvp_inside_vmap_and_checkpoint_under_grad_inside_vmap() {
    property("jvp and checkpoint inside vmap", 24, |rng| {
        let n = 1 + rng.below(4);
        let d = DType::F64;
        let args = vec![arg(&[n], d), arg(&[n], d), arg(&[n, n], d)];
        let body: Body = Box::new(|a| {
            let w = a[2].clone();
            let f = |x: &Tensor| x.matmul(&w).sin() * x;
            let (y, t) = jvp(f, &a[0], &a[1]);
            let g = grad(
                |x: &Tensor| {
                    let h = checkpoint(|x: &Tensor| x.matmul(&w).tanh().exp(), x);
                    h.sum_all()
                },
                &a[0],
            );
            vec![y, t, g]
        });
        (args, body)
    });
}

#[test]
fn grad_of_a_vmapped_loss_is_the_sum_of_per_example_gradients() {
    let mut rng = Rng::new(11);
    let (b, i, h, o) = (5, 3, 4, 2);
    let xs = rand(&mut rng, &[b, i]);
    let ys = rand(&mut rng, &[b, o]);
    let p = (rand(&mut rng, &[i, h]), rand(&mut rng, &[h, o]));
    let total = |p: &(Tensor, Tensor)| {
        let per = vmap(
            |(x, y, p): &(Tensor, Tensor, (Tensor, Tensor))| loss(p, x, y),
            [Some(0), Some(0), None],
            0,
        );
        per(&(xs.clone(), ys.clone(), p.clone())).sum_all()
    };
    let (g1, g2) = grad(total, &p);
    let mut want = (
        Tensor::zeros(&[i, h], DType::F64),
        Tensor::zeros(&[h, o], DType::F64),
    );
    for (x, y) in rows(&xs).iter().zip(rows(&ys)) {
        let (a, c) = grad(|p: &(Tensor, Tensor)| loss(p, x, &y), &p);
        want = (want.0 + a, want.1 + c);
    }
    assert_close(&g1, &want.0, reordered(DType::F64, &want.0), "grad w1");
    assert_close(&g2, &want.1, reordered(DType::F64, &want.1), "grad w2");
    // jvp around vmap: the directional derivative of the batched loss.
    let v = (rand(&mut rng, &[i, h]), rand(&mut rng, &[h, o]));
    let (_, dl) = jvp(
        |p: &(Tensor, Tensor)| (total(p), Tensor::scalar(0f64)),
        &p,
        &v,
    )
    .clone();
    let want_dl = (&g1 * &v.0).sum_all() + (&g2 * &v.1).sum_all();
    assert_close(
        &dl.0,
        &want_dl,
        reordered(DType::F64, &want_dl),
        "jvp of vmap",
    );
}

#[jit]
fn batched_losses(xs: &Tensor, ys: &Tensor, w1: &Tensor, w2: &Tensor) -> Tensor {
    let per = vmap(
        |(x, y, w1, w2): &(Tensor, Tensor, Tensor, Tensor)| loss(&(w1.clone(), w2.clone()), x, y),
        [Some(0), Some(0), None, None],
        0,
    );
    per(&(xs.clone(), ys.clone(), w1.clone(), w2.clone()))
}

#[jit]
fn one_loss(x: &Tensor, y: &Tensor, w1: &Tensor, w2: &Tensor) -> Tensor {
    loss(&(w1.clone(), w2.clone()), x, y)
}

#[jit]
fn per_example_grad_norms(xs: &Tensor, ys: &Tensor, w1: &Tensor, w2: &Tensor) -> Tensor {
    let per = vmap(
        |(x, y, w1, w2): &(Tensor, Tensor, Tensor, Tensor)| {
            let (a, b) = grad(
                |p: &(Tensor, Tensor)| loss(p, x, y),
                &(w1.clone(), w2.clone()),
            );
            (a.square().sum_all() + b.square().sum_all()).sqrt()
        },
        [Some(0), Some(0), None, None],
        0,
    );
    per(&(xs.clone(), ys.clone(), w1.clone(), w2.clone()))
}

#[test]
fn vmap_inside_jit_and_a_jitted_function_vmapped() {
    let mut rng = Rng::new(5);
    let (b, i, h, o) = (4, 3, 5, 2);
    let xs = rand(&mut rng, &[b, i]);
    let ys = rand(&mut rng, &[b, o]);
    let (w1, w2) = (rand(&mut rng, &[i, h]), rand(&mut rng, &[h, o]));
    let want_loss: Vec<Tensor> = rows(&xs)
        .iter()
        .zip(rows(&ys))
        .map(|(x, y)| loss(&(w1.clone(), w2.clone()), x, &y))
        .collect();
    let want_loss = stack(&want_loss.iter().collect::<Vec<_>>(), 0);
    let tol = reordered(DType::F64, &want_loss);
    assert_close(
        &batched_losses(&xs, &ys, &w1, &w2),
        &want_loss,
        tol,
        "vmap inside #[jit]",
    );
    // The jitted function called per example by vmap (traced, not run).
    let per = vmap(
        |(x, y): &(Tensor, Tensor)| one_loss(x, y, &w1, &w2),
        [Some(0), Some(0)],
        0,
    );
    assert_close(
        &per(&(xs.clone(), ys.clone())),
        &want_loss,
        tol,
        "vmap of a #[jit] fn",
    );
    // Per-example gradient norms, jitted, against a loop of grads.
    let norms: Vec<Tensor> = rows(&xs)
        .iter()
        .zip(rows(&ys))
        .map(|(x, y)| {
            let (a, c) = grad(
                |p: &(Tensor, Tensor)| loss(p, x, &y),
                &(w1.clone(), w2.clone()),
            );
            (a.square().sum_all() + c.square().sum_all()).sqrt()
        })
        .collect();
    let norms = stack(&norms.iter().collect::<Vec<_>>(), 0);
    let got = per_example_grad_norms(&xs, &ys, &w1, &w2);
    assert_close(
        &got,
        &norms,
        reordered(DType::F64, &norms),
        "per-example grad norms",
    );
}

#[test]
fn nested_vmap_is_a_double_loop() {
    // Pairwise distances: the inner vmap over y, the outer over x.
    property("nested vmap", 20, |rng| {
        let (n, m, d) = (1 + rng.below(4), 1 + rng.below(4), 1 + rng.below(3));
        let args = vec![arg(&[n, d], DType::F64), arg(&[m, d], DType::F64)];
        let inner_axis = rng.below(2) as isize;
        let body: Body = Box::new(move |a| {
            let ys = if inner_axis == 0 {
                a[1].clone()
            } else {
                a[1].t()
            };
            let dist = vmap(
                |(x, y): &(Tensor, Tensor)| (x - y).square().sum_all(),
                [None, Some(inner_axis)],
                0,
            );
            let pair = vmap(
                |(x, ys): &(Tensor, Tensor)| dist(&(x.clone(), ys.clone())),
                [Some(0), None],
                -1,
            );
            vec![pair(&(a[0].clone(), ys))]
        });
        (args, body)
    });
}

#[test]
fn vmap_of_jvp_over_tangents_is_the_jacobian() {
    // jvp vmapped over the basis tangents gives the Jacobian's columns; vjp
    // vmapped over basis cotangents its rows.
    let mut rng = Rng::new(3);
    let (n, m) = (4, 3);
    let w = rand(&mut rng, &[n, m]);
    let x = rand(&mut rng, &[n]);
    let f = |x: &Tensor| x.matmul(&w).tanh();
    let eye_n = Tensor::iota(&[n, n], 0, DType::I32)
        .eq(&Tensor::iota(&[n, n], 1, DType::I32))
        .cast(DType::F64);
    let eye_m = Tensor::iota(&[m, m], 0, DType::I32)
        .eq(&Tensor::iota(&[m, m], 1, DType::I32))
        .cast(DType::F64);
    let cols = vmap(|v: &Tensor| jvp(f, &x, v).1, 0, 1)(&eye_n);
    let rows = vmap(|u: &Tensor| vjp(f, &x).1(u), 0, 1)(&eye_m);
    // d tanh(xW)_j / dx_i = (1 - y_j^2) W_ij: [m, n] as the Jacobian.
    let y = f(&x);
    let want = (w * (1.0 - y.square())).t();
    let tol = reordered(DType::F64, &want);
    assert_close(&cols, &want, tol, "jacobian by jvp");
    assert_close(&rows.t(), &want, tol, "jacobian by vjp");
}
