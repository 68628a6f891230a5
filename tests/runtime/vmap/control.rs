//! Control flow under `vmap`, as JAX batches it: `cond` with a batched
//! predicate runs both branches and selects, `while_loop` with a batched
//! condition runs until every lane is done with the finished lanes frozen,
//! `scan` batches its carry and its sequence.

use super::harness::{arg, ints, property, Body};
use jitfuse::prelude::*;

#[test]
fn cond_with_a_batched_or_shared_predicate() {
    property("cond", 30, |rng| {
        let n = 1 + rng.below(4);
        let d = if rng.chance(0.5) {
            DType::F32
        } else {
            DType::F64
        };
        // Argument 1 decides the predicate: batched, each lane takes its own
        // branch; shared, the batch takes one.
        let args = vec![arg(&[n], d), arg(&[], d)];
        let body: Body = Box::new(|x| {
            let (y, z) = cond(
                &x[1].gt(0.0),
                |(a, b): (Tensor, Tensor)| ((&a * 2.0).exp(), b.clone()),
                |(a, b): (Tensor, Tensor)| (a - 1.0, b * 3.0),
                (x[0].clone(), x[1].clone()),
            );
            vec![y, z]
        });
        (args, body)
    });
}

#[test]
fn while_loop_runs_until_every_lane_is_done_and_freezes_the_finished() {
    // Each lane doubles its value until it passes its own limit: the lanes
    // need different numbers of iterations.
    property("while_loop", 30, |rng| {
        let n = 1 + rng.below(3);
        let args = vec![
            arg(&[n], DType::F32).range(0.1, 1.0),
            arg(&[], DType::F32).range(1.0, 40.0),
        ];
        let body: Body = Box::new(|x| {
            let limit = x[1].clone();
            let (v, steps) = while_loop(
                |(v, _): &(Tensor, Tensor)| v.sum_all().lt(&limit),
                |(v, s): (Tensor, Tensor)| (v * 2.0, s + 1),
                (x[0].clone(), Tensor::scalar(0i32)),
            );
            vec![v, steps]
        });
        (args, body)
    });
}

#[test]
fn fori_loop_with_a_batched_state_and_a_per_lane_bound() {
    property("fori_loop", 20, |rng| {
        let n = 1 + rng.below(4);
        let args = vec![arg(&[n], DType::F64), ints(&[], 0, 5)];
        let body: Body = Box::new(|x| {
            let upper = x[1].clone();
            let r = fori_loop(
                Tensor::scalar(0i32),
                upper,
                |i: &Tensor, acc: Tensor| &acc * 0.5 + i.cast(DType::F64),
                x[0].clone(),
            );
            vec![r]
        });
        (args, body)
    });
}

#[test]
fn scan_batches_its_carry_and_its_sequence() {
    property("scan", 30, |rng| {
        let (len, n) = (1 + rng.below(4), 1 + rng.below(3));
        let args = vec![
            arg(&[n], DType::F32),
            arg(&[len, n], DType::F32),
            arg(&[n], DType::F32),
        ];
        let body: Body = Box::new(|x| {
            let w = x[2].clone();
            let (c, ys) = scan(
                |c: Tensor, xt: Tensor| {
                    let c2 = (&c * &w + &xt).tanh();
                    (c2.clone(), c2.sum_all())
                },
                x[0].clone(),
                &x[1],
            );
            vec![c, ys]
        });
        (args, body)
    });
}

#[test]
fn gradients_through_a_batched_loop() {
    // Per-example gradients of a recurrence (`grad` of `scan` under `vmap`).
    property("grad of scan", 16, |rng| {
        let (len, n) = (1 + rng.below(4), 1 + rng.below(3));
        let args = vec![arg(&[n], DType::F64), arg(&[len, n], DType::F64)];
        let body: Body = Box::new(|x| {
            let xs = x[1].clone();
            let g = grad(
                |w: &Tensor| {
                    let (c, _) = scan(
                        |c: Tensor, xt: Tensor| ((&c * w + &xt).tanh(), Tensor::scalar(0f64)),
                        Tensor::zeros_like(w),
                        &xs,
                    );
                    c.square().sum_all()
                },
                &x[0],
            );
            vec![g]
        });
        (args, body)
    });
}
