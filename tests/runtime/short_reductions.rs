//! Reductions over a short trailing axis (`passes::short_axis`): split into lanes that fuse
//! with their producers and consumers, against the interpreter; the N-body program over
//! `[N, N, 3]` keeps no `[N, N, 3]` temporary.

use crate::common::*;
use jitfuse::internals::exec::Executable;
use jitfuse::prelude::*;
use jitfuse::{DType, Tensor};

fn tol(d: DType) -> Tol {
    float_tol(d)
}

/// Sums cancel: a few ulp of the largest element besides `tol`'s relative part.
fn norm(d: DType, want: &Tensor) -> Tol {
    float_norm_tol(d, want)
}

/// Every reduction over the last axis of length 1..=17, with an elementwise producer and
/// consumer, kept and dropped; and the reductions that keep the short axis (over the
/// leading axes) of a computed input. The inputs of the reductions are computed from
/// smaller values (`a[.., None] * b[k]`), which splits them into lanes; a reduction of
/// rows read from memory (`m`) stays a row kernel.
#[test]
fn short_axis_reductions_match_the_interpreter() {
    let mut rng = Rng::new(41);
    for k in 1..=17usize {
        for d in [DType::F32, DType::F64, DType::I32, DType::I64] {
            for lead in [vec![], vec![5], vec![2, 3]] {
                let mut s = lead.clone();
                s.push(k);
                let mut s1 = lead.clone();
                s1.push(1);
                let a = random_tensor(&mut rng, &s1, d, -2.0, 2.0, false);
                let b = random_tensor(&mut rng, &[k], d, -2.0, 2.0, false);
                let w = random_tensor(&mut rng, &lead, d, -2.0, 2.0, false);
                let m = random_tensor(&mut rng, &s, d, -2.0, 2.0, false);
                let float = d.is_float();
                let g = trace_fn(&[a.clone(), b.clone(), w.clone()], |ts| {
                    let (a, b, w) = (&ts[0], &ts[1], &ts[2]);
                    let x = a * b;
                    let y = a - b;
                    let p = &x * &y + &x;
                    // Max and min pick an element: exact; products do not cancel:
                    // relative; the rest sum: normwise.
                    let mut outs = vec![
                        p.max_keepdims(-1) - &x,
                        p.min(-1),
                        (&x - &y).prod_keepdims(-1),
                        p.sum(-1) * w + w,
                        x.sum(-1),
                    ];
                    if float {
                        outs.push(p.exp().mean(-1) * w);
                        outs.push(x.mean_keepdims(-1) + &y);
                    }
                    if !lead.is_empty() {
                        // The short axis kept: one reduction per lane.
                        outs.push((&p * &y).sum(0));
                        outs.push(p.max_keepdims(0) + &x);
                    }
                    outs
                });
                let what = format!("{d} {s:?}");
                let args = [a.clone(), b.clone(), w.clone()];
                check_graph_with(&g, &args, &what, |i, want| match i {
                    0 | 1 => EXACT,
                    2 => Tol::rel(d, tol(d).rel),
                    _ => norm(d, want),
                });
                if lead.len() == 2 && (2..=16).contains(&k) {
                    let text = Executable::from_graph(g, vec![]).unwrap().kernels_text();
                    assert!(
                        !text.contains(&format!("x [{k}] reads")),
                        "{what}: a row kernel over the short axis:\n{text}"
                    );
                }
                // Rows read from memory.
                let g = trace_fn(&[a.clone(), b.clone(), m.clone()], |ts| {
                    let (a, b, m) = (&ts[0], &ts[1], &ts[2]);
                    vec![m.sum(-1) + (a * b * m).max(-1), (m * b).min_keepdims(-1)]
                });
                check_graph_with(&g, &[a, b, m], &what, |i, want| match i {
                    0 => norm(d, want),
                    _ => EXACT,
                });
            }
        }
    }
}

/// NaN at any lane propagates through max and min, as in the interpreter (the lanes of
/// `a[:, None] + b`: split).
#[test]
fn short_axis_max_and_min_propagate_nan() {
    let mut rng = Rng::new(43);
    for k in 2..=16usize {
        for d in [DType::F32, DType::F64] {
            let g = trace_fn(&[Tensor::zeros(&[8, 1], d), Tensor::zeros(&[k], d)], |ts| {
                let x = &ts[0] + &ts[1];
                vec![(&x + 1.0).max(-1), (&x * 2.0).min_keepdims(-1), x.max(-1)]
            });
            let exe = Executable::from_graph(g.clone(), vec![]).unwrap();
            assert!(
                !exe.kernels_text().contains("row kernel"),
                "{}",
                exe.kernels_text()
            );
            for j in 0..k {
                let a = random_tensor(&mut rng, &[8, 1], DType::F64, -3.0, 3.0, false);
                let mut av = a.to_vec::<f64>().unwrap();
                av[3] = f64::INFINITY;
                av[5] = f64::NEG_INFINITY;
                let b = random_tensor(&mut rng, &[k], DType::F64, -3.0, 3.0, false);
                let mut bv = b.to_vec::<f64>().unwrap();
                bv[j] = if j % 2 == 0 { f64::NAN } else { -f64::NAN };
                let a = Tensor::from_vec(av, &[8, 1]).unwrap().cast(d);
                let b = Tensor::from_vec(bv, &[k]).unwrap().cast(d);
                let args = [a, b];
                let want = jitfuse::internals::interpret::eval_graph(&g, &args, &[]).unwrap();
                let got = exe.run_with(&[&args[0], &args[1]]).unwrap();
                for (i, (x, y)) in got.iter().zip(&want).enumerate() {
                    assert_close(x, y, EXACT, &format!("{d} k={k} NaN at {j}, output {i}"));
                }
            }
        }
    }
}

/// Gradients through short-axis sums, products, maxima and means (of `a[:, None] * b`:
/// the gradient of `b` sums over the leading axis, keeping the short one).
#[test]
fn short_axis_reduction_gradients_match_the_interpreter() {
    let mut rng = Rng::new(47);
    for k in [2usize, 3, 4, 7, 16, 17] {
        for d in [DType::F32, DType::F64] {
            let a = random_tensor(&mut rng, &[6, 1], d, -2.0, 2.0, false);
            let b = random_tensor(&mut rng, &[k], d, -2.0, 2.0, false);
            let g = trace_fn(&[a.clone(), b.clone()], |ts| {
                jitfuse::grad(
                    |v: &Vec<Tensor>| {
                        let x = &v[0] * &v[1] + &v[1];
                        let r2 = (&x * &x).sum_keepdims(-1) + 0.5;
                        (&x / r2.sqrt()).sum(0).square().sum_all()
                            + x.tanh().prod(-1).sum_all()
                            + x.max(-1).sum_all()
                            + x.exp().mean(-1).sum_all()
                    },
                    &vec![ts[0].clone(), ts[1].clone()],
                )
            });
            check_graph_with(&g, &[a, b], &format!("gradient {d} k={k}"), |_, want| {
                let t = tol(d);
                Tol {
                    rel: t.rel * 10.0,
                    abs: t.abs,
                }
                .normwise(want)
            });
        }
    }
}

/// Forces of N-body over positions `[N, 3]`: the displacements `[N, N, 3]`, their squared
/// lengths summed over the short axis, the force summed over the second axis.
#[jit]
fn nbody_forces(p: &Tensor) -> Tensor {
    let d = p.unsqueeze(0) - p.unsqueeze(1);
    let r2 = (&d * &d).sum(-1) + 1e-2;
    let inv = r2.rsqrt();
    let inv_r3 = &inv * &inv * &inv;
    (&d * inv_r3.unsqueeze(-1)).sum(1)
}

/// The same forces over three `[N]` coordinate arrays.
#[jit]
fn nbody_forces_xyz(x: &Tensor, y: &Tensor, z: &Tensor) -> Vec<Tensor> {
    let (dx, dy, dz) = (
        x.unsqueeze(0) - x.unsqueeze(1),
        y.unsqueeze(0) - y.unsqueeze(1),
        z.unsqueeze(0) - z.unsqueeze(1),
    );
    let r2 = &dx * &dx + &dy * &dy + &dz * &dz + 1e-2;
    let inv = r2.rsqrt();
    let inv_r3 = &inv * &inv * &inv;
    vec![
        (dx * &inv_r3).sum(1),
        (dy * &inv_r3).sum(1),
        (dz * &inv_r3).sum(1),
    ]
}

#[test]
fn nbody_over_a_short_axis_keeps_no_temporary() {
    let n = 256;
    let mut rng = Rng::new(53);
    for d in [DType::F32, DType::F64] {
        let p = random_tensor(&mut rng, &[n, 3], d, -1.0, 1.0, false);
        let lowered = nbody_forces::lower(&p).unwrap();
        let exe = lowered.compile().unwrap();
        let m = exe.memory_analysis();
        let big = n * n * 3 * d.size();
        assert!(
            m.temp_bytes < big / 4,
            "{d}: {} temporary bytes ({m:?}):\n{}",
            m.temp_bytes,
            exe.kernels_text()
        );
        // The lanes of `p` copied contiguous (one small kernel), then one row kernel.
        assert!(
            exe.kernel_count() <= 2,
            "{d}: {} kernels:\n{}",
            exe.kernel_count(),
            exe.kernels_text()
        );
        // Against the interpreter and the three-array form.
        let got = nbody_forces(&p);
        let g = trace_fn(std::slice::from_ref(&p), |ts| vec![nbody_forces(&ts[0])]);
        let want = jitfuse::internals::interpret::eval_graph(&g, std::slice::from_ref(&p), &[])
            .unwrap()
            .remove(0);
        let t = tol(d);
        let t = Tol {
            rel: t.rel * 10.0,
            abs: t.abs,
        }
        .normwise(&want);
        assert_close(&got, &want, t, &format!("nbody {d}"));
        let cols: Vec<Tensor> = (0..3)
            .map(|j| p.slice_axis(1, j as isize, j as isize + 1, 1).squeeze(&[1]))
            .collect();
        let xyz = nbody_forces_xyz(&cols[0], &cols[1], &cols[2]);
        for j in 0..3 {
            let col = got
                .slice_axis(1, j as isize, j as isize + 1, 1)
                .squeeze(&[1]);
            assert_close(
                &col,
                &xyz[j],
                t,
                &format!("nbody {d} axis {j} vs three arrays"),
            );
        }
    }
}
