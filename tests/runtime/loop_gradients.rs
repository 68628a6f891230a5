//! Gradients of loops in bounded memory: the backward of `scan`/`fori_loop` reads the
//! stacked carries in place (one stored carry per step, never a reversed copy), with values
//! checked against the loop unrolled.

use crate::common::{assert_close, Rng, Tol};
use jitfuse::prelude::*;

/// One explicit step of the heat equation on a periodic-free grid (zero boundary).
fn heat_step(u: &Tensor) -> Tensor {
    let n = u.shape()[0] as isize;
    let p = u.pad(&[(1, 1), (1, 1)], 0.0);
    let at = |r: isize, c: isize| p.slice_axis(0, r, r + n, 1).slice_axis(1, c, c + n, 1);
    let lap = at(0, 1) + at(2, 1) + at(1, 0) + at(1, 2) - 4.0 * u;
    u + 0.1 * lap
}

fn heat_loss(u0: &Tensor, steps: usize) -> Tensor {
    let u = fori_loop(0, steps as i64, |_, u: Tensor| heat_step(&u), u0.clone());
    (&u * &u).sum_all()
}

#[jit]
fn heat_adjoint(u0: &Tensor, steps: usize) -> Tensor {
    jitfuse::grad(|u: &Tensor| heat_loss(u, steps), u0)
}

#[jit]
fn heat_adjoint_reversed_scan(u0: &Tensor, xs: &Tensor) -> (Tensor, Tensor) {
    // A scan whose rows are read last first (through `Slice::rev()` on xs) and whose ys
    // are stacked: the gradient's xs cotangents line up with xs.
    jitfuse::grad(
        |(u, xs): &(Tensor, Tensor)| {
            let (u, ys) = scan(
                |u: Tensor, x: Tensor| {
                    let next = heat_step(&u) * (1.0 + 0.01 * &x);
                    let y = next.sum_all();
                    (next, y)
                },
                u.clone(),
                &xs.slice(&[Slice::rev()]),
            );
            (&u * &u).sum_all() + (ys * 0.5).sum_all()
        },
        &(u0.clone(), xs.clone()),
    )
}

fn grid(n: usize, seed: u64) -> Tensor {
    let mut rng = Rng::new(seed);
    Tensor::from_vec(
        (0..n * n).map(|_| rng.uniform(-1.0, 1.0)).collect(),
        &[n, n],
    )
    .unwrap()
}

/// The adjoint of 200 heat steps on a 64² f64 grid: its value is the unrolled loop's
/// gradient, and its temporaries hold one carry per step (plus a few for the step itself),
/// where the stacked carries were copied into a reversed buffer (2.04 carries per step).
#[test]
fn a_loop_gradient_stores_one_carry_per_step() {
    let (n, steps) = (64usize, 200usize);
    let u0 = grid(n, 3);
    let got = heat_adjoint(&u0, steps);
    let unrolled = jitfuse::grad(
        |u: &Tensor| {
            let mut u = u.clone();
            for _ in 0..steps {
                u = heat_step(&u);
            }
            (&u * &u).sum_all()
        },
        &u0,
    );
    assert_close(&got, &unrolled, Tol::rel(DType::F64, 1e-9), "heat adjoint");
    let report = heat_adjoint::lower(&u0, steps)
        .unwrap()
        .memory_analysis()
        .unwrap();
    let carry = n * n * 8;
    let per_step = report.temp_bytes as f64 / (steps * carry) as f64;
    assert!(
        per_step <= 1.1,
        "{per_step:.2} carries per step stored:\n{report}"
    );
}

/// A reversed scan with stacked ys: the same values as the loop written out, and the xs'
/// cotangents in xs' order.
#[test]
fn the_gradient_of_a_reversed_scan_lines_up_with_its_xs() {
    let (n, steps) = (8usize, 13usize);
    let u0 = grid(n, 4);
    let mut rng = Rng::new(5);
    let xs = Tensor::from_vec(
        (0..steps * n * n).map(|_| rng.uniform(-1.0, 1.0)).collect(),
        &[steps, n, n],
    )
    .unwrap();
    let (gu, gx) = heat_adjoint_reversed_scan(&u0, &xs);
    let (eu, ex) = jitfuse::grad(
        |(u, xs): &(Tensor, Tensor)| {
            let mut u = u.clone();
            let mut total = Tensor::scalar(0.0f64);
            for i in (0..steps).rev() {
                let x = xs
                    .slice_axis(0, i as isize, i as isize + 1, 1)
                    .reshape(&[n as isize, n as isize]);
                u = heat_step(&u) * (1.0 + 0.01 * &x);
                total = total + u.sum_all() * 0.5;
            }
            (&u * &u).sum_all() + total
        },
        &(u0.clone(), xs.clone()),
    );
    assert_close(&gu, &eu, Tol::rel(DType::F64, 1e-9), "d u0");
    assert_close(&gx, &ex, Tol::rel(DType::F64, 1e-9), "d xs");
}

#[jit(memory_budget = "auto")]
fn heat_adjoint_auto(u0: &Tensor, steps: usize) -> Tensor {
    jitfuse::grad(|u: &Tensor| heat_loss(u, steps), u0)
}

#[jit]
fn heat_adjoint_budgeted(u0: &Tensor, steps: usize) -> Tensor {
    jitfuse::grad(|u: &Tensor| heat_loss(u, steps), u0)
}

fn unrolled_heat_adjoint(u0: &Tensor, steps: usize) -> Tensor {
    jitfuse::grad(
        |u: &Tensor| {
            let mut u = u.clone();
            for _ in 0..steps {
                u = heat_step(&u);
            }
            (&u * &u).sum_all()
        },
        u0,
    )
}

/// Under `memory_budget = "auto"` the 200-step adjoint keeps about 2·√n carries (segments
/// of √n steps, each recomputed from the carry entering it), not one per step.
#[test]
fn the_automatic_budget_checkpoints_a_loop_gradient_in_sqrt_n_carries() {
    let (n, steps) = (64usize, 200usize);
    let u0 = grid(n, 6);
    let got = heat_adjoint_auto(&u0, steps);
    let want = unrolled_heat_adjoint(&u0, steps);
    assert_close(
        &got,
        &want,
        Tol::rel(DType::F64, 1e-9),
        "heat adjoint, auto",
    );
    let report = heat_adjoint_auto::lower(&u0, steps)
        .unwrap()
        .memory_analysis()
        .unwrap();
    let carry = (n * n * 8) as f64;
    let bound = 3.0 * (steps as f64).sqrt();
    let stacked = report.loop_stack_bytes as f64 / carry;
    assert!(
        stacked > 0.0 && stacked <= bound,
        "{stacked:.1} carries stacked under \"auto\" (bound 3·√n = {bound:.1}):\n{report}"
    );
    // Besides the stacked carries: the step's own forward and backward temporaries (one
    // sub-program each, shared by every loop that runs it: about 14 carries in all).
    let carries = report.temp_bytes as f64 / carry;
    assert!(
        carries <= bound + 6.0,
        "{carries:.1} carries of temporaries under \"auto\":\n{report}"
    );
}

/// A byte budget below what √n segments reach (`"auto"`'s peak) is met by cutting the loop
/// deeper (cube and fourth roots, factors of 2), with the same gradient; a budget no depth
/// meets is refused.
#[test]
fn a_byte_budget_below_sqrt_n_cuts_the_loop_gradient_deeper() {
    let (n, steps) = (16usize, 1000usize);
    let u0 = grid(n, 7);
    let want = heat_adjoint(&u0, steps);
    let auto = heat_adjoint_auto::lower(&u0, steps)
        .unwrap()
        .memory_analysis()
        .unwrap();
    let budget = auto.peak_bytes - 1;
    heat_adjoint_budgeted::set_memory_budget(Some(budget));
    let got = heat_adjoint_budgeted(&u0, steps);
    assert_close(
        &got,
        &want,
        Tol::rel(DType::F64, 1e-9),
        "heat adjoint, budget",
    );
    let report = heat_adjoint_budgeted::lower(&u0, steps)
        .unwrap()
        .memory_analysis()
        .unwrap();
    assert!(
        report.peak_bytes <= budget && report.loop_stack_bytes < auto.loop_stack_bytes,
        "under {budget} bytes (\"auto\": {auto}):\n{report}"
    );
    // A budget no depth meets is refused, naming the budget.
    let carry = n * n * 8;
    heat_adjoint_budgeted::set_memory_budget(Some(4 * carry));
    let e = heat_adjoint_budgeted::try_call(&u0, steps).unwrap_err();
    assert_eq!(e.kind(), jitfuse::ErrorKind::Argument, "{e}");
    assert!(e.message().contains("memory budget"), "{e}");
    heat_adjoint_budgeted::set_memory_budget(None);
}

/// A scan with stacked ys, invariants and a reversed direction, differentiated eagerly at
/// every checkpointing depth and trip counts the segments do not divide: the same
/// gradients as storing every carry.
#[test]
fn loop_gradients_agree_at_every_checkpointing_depth() {
    let n = 4usize;
    let w = grid(n, 8);
    for steps in [1usize, 2, 7, 8, 9, 13, 37, 64] {
        let mut rng = Rng::new(steps as u64);
        let xs = Tensor::from_vec(
            (0..steps * n).map(|_| rng.uniform(-1.0, 1.0)).collect(),
            &[steps, n],
        )
        .unwrap();
        for reverse in [false, true] {
            let loss = |(u, w, xs): &(Tensor, Tensor, Tensor)| {
                let xs = if reverse {
                    xs.slice(&[Slice::rev()])
                } else {
                    xs.clone()
                };
                let (u, ys) = scan(
                    |u: Tensor, x: Tensor| {
                        let next = (u.matmul(w) * 0.5 + &x).tanh();
                        let y = (&next * &next).sum_all();
                        (next, y)
                    },
                    u.clone(),
                    &xs,
                );
                (&u * &u).sum_all() + ys.sum_all() * 0.25
            };
            let u0 = Tensor::from_vec((0..n).map(|i| 0.1 * i as f64).collect(), &[1, n]).unwrap();
            let args = (u0, w.clone(), xs.clone());
            let every =
                jitfuse::autodiff::with_checkpoint_levels(Some(0), || jitfuse::grad(loss, &args));
            for levels in [1, 2, 3, jitfuse::autodiff::BINARY] {
                let got = jitfuse::autodiff::with_checkpoint_levels(Some(levels), || {
                    jitfuse::grad(loss, &args)
                });
                let what = format!("{steps} steps, reverse {reverse}, levels {levels}");
                assert_close(&got.0, &every.0, Tol::rel(DType::F64, 1e-12), &what);
                assert_close(&got.1, &every.1, Tol::rel(DType::F64, 1e-12), &what);
                assert_close(&got.2, &every.2, Tol::rel(DType::F64, 1e-12), &what);
            }
        }
    }
}
