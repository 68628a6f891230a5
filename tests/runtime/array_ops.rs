//! The array language: shape ops, indexing, reductions, matmul and
//! composites, traced and compiled vs the interpreter on random shapes
//! (0-sized and size-1 axes included), plus fixed-value checks.

use crate::common::*;
use jitfuse::{DType, Slice, Tensor};

const FLOATS: [DType; 2] = [DType::F32, DType::F64];

fn tol(d: DType) -> Tol {
    float_tol(d)
}

/// `tol` as a relative bound only: for results that do not cancel (products, softmax,
/// silu), where an absolute floor of 2e-5 would pass any value of small elements.
fn rel(d: DType) -> Tol {
    Tol::rel(d, tol(d).rel)
}

/// A normwise bound on `want`: `tol`'s relative part and an absolute part of a few ulp of
/// its largest element, for results that cancel (sums, centred values, log-probabilities
/// near 0, `1 + tanh` in gelu).
fn norm(d: DType, want: &Tensor) -> Tol {
    float_norm_tol(d, want)
}

fn random_perm(rng: &mut Rng, n: usize) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        p.swap(i, rng.below(i + 1));
    }
    p
}

fn random_slice(rng: &mut Rng) -> Slice {
    let pick = |rng: &mut Rng| {
        if rng.chance(0.3) {
            None
        } else {
            Some(rng.below(9) as isize - 4)
        }
    };
    let step = [1, 1, 2, -1, -2, 3][rng.below(6)];
    Slice::new(pick(rng), pick(rng), step)
}

/// Views (transpose, slice, flip, reshape, broadcast, expand/squeeze) folded
/// into elementwise kernels and returned as outputs.
#[test]
fn layout_views_fold_into_kernels() {
    let mut rng = Rng::new(20);
    for trial in 0..60 {
        let d = [DType::F32, DType::F64, DType::I32, DType::Bool][rng.below(4)];
        let s: Vec<usize> = (0..1 + rng.below(3))
            .map(|_| [1, 2, 3, 5, 8][rng.below(5)])
            .collect();
        let x = random_tensor(&mut rng, &s, d, -9.0, 9.0, false);
        let perm = random_perm(&mut rng, s.len());
        let slices: Vec<Slice> = (0..s.len()).map(|_| random_slice(&mut rng)).collect();
        let flip_axis = rng.below(s.len()) as isize;
        let g = trace_fn(&[x.clone()], |ts| {
            let x = &ts[0];
            let t = x.transpose(&perm);
            let sl = t.slice(&slices);
            // The last axis and one more (an axis may be listed only once).
            let other = flip_axis.min(sl.ndim() as isize - 1);
            let f = if other == sl.ndim() as isize - 1 {
                sl.flip(&[-1])
            } else {
                sl.flip(&[-1, other])
            };
            let r = f.reshape(&[-1]);
            let e = x.expand_dims(0).squeeze(&[0]).t();
            let mut outs = vec![t.clone(), sl.clone(), f.clone(), r, e];
            if d != DType::Bool {
                // Elementwise on a view, and a view of an elementwise result.
                outs.push(&f + &f.flip(&[0]));
                outs.push((x * 2).transpose(&perm).slice(&slices));
                outs.push(&t + t.slice_axis(0, 0, 1, 1));
            }
            outs
        });
        check_graph(&g, &[x], EXACT, &format!("views {d} {s:?} trial {trial}"));
    }
}

#[test]
fn slicing_follows_python_rules() {
    let x = Tensor::arange(10, DType::I32);
    let v = |t: Tensor| t.to_vec::<i32>().unwrap();
    assert_eq!(v(x.slice(&[Slice::from(2..5)])), vec![2, 3, 4]);
    assert_eq!(v(x.slice(&[Slice::from(-3..)])), vec![7, 8, 9]);
    assert_eq!(v(x.slice(&[Slice::new(None, None, -3)])), vec![9, 6, 3, 0]);
    assert_eq!(v(x.slice(&[Slice::new(8, 2, -2)])), vec![8, 6, 4]);
    assert_eq!(v(x.slice(&[Slice::new(-100, 100, 4)])), vec![0, 4, 8]);
    assert_eq!(v(x.slice(&[Slice::from(5..2)])), Vec::<i32>::new());
    assert_eq!(v(x.flip(&[0])), (0..10).rev().collect::<Vec<_>>());
    let m = Tensor::arange(6, DType::I32).reshape(&[2, 3]);
    assert_eq!(v(m.t()), vec![0, 3, 1, 4, 2, 5]);
    assert_eq!(m.reshape(&[3, -1]).shape(), &[3, 2]);
    assert_eq!(m.expand_dims(-1).shape(), &[2, 3, 1]);
    assert_eq!(m.expand_dims(-1).squeeze(&[]).shape(), &[2, 3]);
}

#[test]
fn concat_stack_pad_take_one_hot() {
    let mut rng = Rng::new(21);
    for trial in 0..30 {
        let d = DType::ALL[rng.below(5)];
        let rank = 1 + rng.below(3);
        let s: Vec<usize> = (0..rank).map(|_| [0, 1, 2, 3, 5][rng.below(5)]).collect();
        let axis = rng.below(rank);
        let mut s2 = s.clone();
        s2[axis] = [0, 1, 4][rng.below(3)];
        let a = random_tensor(&mut rng, &s, d, -5.0, 5.0, false);
        let b = random_tensor(&mut rng, &s2, d, -5.0, 5.0, false);
        let pads: Vec<(usize, usize)> = (0..rank).map(|_| (rng.below(3), rng.below(3))).collect();
        let n = s[axis];
        let idx_shape: Vec<usize> = (0..rng.below(3)).map(|_| 1 + rng.below(4)).collect();
        let idx_vals: Vec<i64> = (0..idx_shape.iter().product::<usize>())
            .map(|_| rng.below(2 * n + 4) as i64 - n as i64 - 2)
            .collect();
        let idx = Tensor::from_vec(idx_vals, &idx_shape).unwrap();
        let g = trace_fn(&[a.clone(), b.clone(), idx.clone()], |ts| {
            let (a, b, idx) = (&ts[0], &ts[1], &ts[2]);
            let mut outs = vec![
                jitfuse::concat(&[a, b, a], axis as isize),
                jitfuse::stack(&[a, a], -1),
                a.pad(&pads, if d == DType::Bool { 0 } else { 7 }),
                idx.one_hot(5),
            ];
            if n > 0 {
                outs.push(a.take(idx, axis as isize));
            }
            outs
        });
        check_graph(
            &g,
            &[a, b, idx],
            EXACT,
            &format!("concat/pad/take {d} {s:?} axis {axis} trial {trial}"),
        );
    }
    // Fixed values: clamping and negative indices.
    let x = Tensor::vector(&[10.0f32, 20.0, 30.0]);
    let i = Tensor::vector(&[-1i32, 0, 5, -7]);
    assert_eq!(
        x.take(&i, 0).to_vec::<f32>().unwrap(),
        vec![30.0, 10.0, 30.0, 10.0]
    );
    let oh = Tensor::vector(&[1i64, 3, -1]).one_hot(3);
    assert_eq!(
        oh.to_vec::<f32>().unwrap(),
        vec![0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    );
    assert_eq!(
        x.pad(&[(1, 2)], 0).to_vec::<f32>().unwrap(),
        vec![0.0, 10.0, 20.0, 30.0, 0.0, 0.0]
    );
}

#[test]
fn reductions_match_interpreter_over_random_axes() {
    let mut rng = Rng::new(22);
    for trial in 0..60 {
        let d = [DType::F32, DType::F64, DType::I32, DType::I64][rng.below(4)];
        let rank = 1 + rng.below(3);
        let s: Vec<usize> = (0..rank)
            .map(|_| [0, 1, 2, 3, 7, 16][rng.below(6)])
            .collect();
        let x = random_tensor(&mut rng, &s, d, -3.0, 3.0, false);
        let mut axes: Vec<isize> = Vec::new();
        for a in 0..rank as isize {
            if rng.chance(0.5) {
                axes.push(if rng.chance(0.5) {
                    a - rank as isize
                } else {
                    a
                });
            }
        }
        let nonempty_axis = (0..rank).find(|&a| s[a] > 0);
        let g = trace_fn(&[x.clone()], |ts| {
            let x = &ts[0];
            let mut outs = vec![
                x.sum(axes.clone()),
                x.max_keepdims(axes.clone()),
                x.min(axes.clone()),
                x.prod_keepdims(axes.clone()),
                x.sum_all(),
            ];
            if d.is_float() {
                outs.extend([
                    x.mean(axes.clone()),
                    x.var_keepdims(axes.clone()),
                    x.std(axes.clone()),
                    x.logsumexp(axes.clone()),
                ]);
            }
            if let Some(a) = nonempty_axis {
                outs.extend([x.argmax(a as isize), x.argmin(a as isize - rank as isize)]);
            }
            outs
        });
        // Max and min pick an element: exact; products do not cancel: relative; the sums
        // and moments do: normwise.
        check_graph_with(
            &g,
            &[x],
            &format!("reductions {d} {s:?} axes {axes:?} trial {trial}"),
            |k, want| match k {
                1 | 2 => EXACT,
                3 => rel(d),
                _ => norm(d, want),
            },
        );
    }
}

#[test]
fn reduction_values_and_edge_cases() {
    let x = Tensor::from_vec(vec![1.0f32, 5.0, 3.0, 4.0, 2.0, 6.0], &[2, 3]).unwrap();
    assert_eq!(x.sum(-1).to_vec::<f32>().unwrap(), vec![9.0, 12.0]);
    assert_eq!(x.sum(0).to_vec::<f32>().unwrap(), vec![5.0, 7.0, 9.0]);
    assert_eq!(x.sum([0, 1]).item::<f32>().unwrap(), 21.0);
    assert_eq!(x.sum_keepdims(-1).shape(), &[2, 1]);
    assert_eq!(x.mean_all().item::<f32>().unwrap(), 3.5);
    assert_eq!(x.argmax(1).to_vec::<i64>().unwrap(), vec![1, 2]);
    assert_eq!(x.argmin(0).to_vec::<i64>().unwrap(), vec![0, 1, 0]);
    let e = Tensor::zeros(&[0, 3], DType::F32);
    assert_eq!(e.sum(0).to_vec::<f32>().unwrap(), vec![0.0; 3]);
    assert_eq!(
        e.max(0).to_vec::<f32>().unwrap(),
        vec![f32::NEG_INFINITY; 3]
    );
    let n = Tensor::vector(&[1.0f64, f64::NAN, 3.0]);
    assert!(n.max_all().item::<f64>().unwrap().is_nan());
    assert_eq!(n.argmax(0).item::<i64>().unwrap(), 1);
    let all_neg_inf = Tensor::vector(&[f32::NEG_INFINITY; 3]);
    assert_eq!(
        all_neg_inf.logsumexp(0).item::<f32>().unwrap(),
        f32::NEG_INFINITY
    );
    let big = Tensor::vector(&[1000.0f32, 1000.0]);
    // Within 2 ulp (6.1e-5 at 1000) of the rounded true value.
    let lse = big.logsumexp(0).item::<f32>().unwrap();
    assert!(
        (lse as f64 - (1000.0 + 2f64.ln())).abs() <= 1.25e-4,
        "logsumexp [1000, 1000] = {lse}"
    );
}

#[test]
fn matmul_shapes_and_values() {
    let mut rng = Rng::new(23);
    for trial in 0..30 {
        let d = FLOATS[rng.below(2)];
        let (m, k, n) = (1 + rng.below(9), rng.below(9), 1 + rng.below(9));
        let batch_a: Vec<usize> = (0..rng.below(3)).map(|_| [1, 2, 3][rng.below(3)]).collect();
        let batch_b: Vec<usize> = batch_a
            .iter()
            .map(|&x| if rng.chance(0.3) { 1 } else { x })
            .collect();
        let mut sa = batch_a.clone();
        sa.extend([m, k]);
        let mut sb = batch_b.clone();
        sb.extend([k, n]);
        let a = random_tensor(&mut rng, &sa, d, -2.0, 2.0, false);
        let b = random_tensor(&mut rng, &sb, d, -2.0, 2.0, false);
        let v = random_tensor(&mut rng, &[k], d, -2.0, 2.0, false);
        let g = trace_fn(&[a.clone(), b.clone(), v.clone()], |ts| {
            let (a, b, v) = (&ts[0], &ts[1], &ts[2]);
            vec![
                a.matmul(b),
                a.matmul(v),
                v.matmul(b),
                (a.matmul(b) + 1.0).relu(),
                // Views read in place by the GEMM: transposed, flipped, strided.
                a.t().t().matmul(&b.flip(&[-1])),
                b.t().matmul(&a.t()),
                a.slice_axis(-1, None, None, 2)
                    .matmul(&b.slice_axis(-2, None, None, 2)),
            ]
        });
        check_graph(
            &g,
            &[a, b, v],
            tol(d),
            &format!("matmul {d} {sa:?} @ {sb:?} trial {trial}"),
        );
    }
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let v = Tensor::vector(&[1.0f32, 1.0]);
    assert_eq!(
        a.matmul(&a).to_vec::<f32>().unwrap(),
        vec![7.0, 10.0, 15.0, 22.0]
    );
    assert_eq!(a.matmul(&v).to_vec::<f32>().unwrap(), vec![3.0, 7.0]);
    assert_eq!(v.matmul(&a).to_vec::<f32>().unwrap(), vec![4.0, 6.0]);
    assert_eq!(v.matmul(&v).shape(), &[] as &[usize]);
}

#[test]
fn composites_match_interpreter_and_known_values() {
    let mut rng = Rng::new(24);
    for d in FLOATS {
        let x = random_tensor(&mut rng, &[7, 33], d, -4.0, 4.0, false);
        let gamma = random_tensor(&mut rng, &[33], d, 0.5, 1.5, false);
        let beta = random_tensor(&mut rng, &[33], d, -1.0, 1.0, false);
        let labels = Tensor::from_vec((0..7).map(|i| (i * 5 % 33) as i32).collect(), &[7])
            .unwrap()
            .one_hot_as(33, d);
        let g = trace_fn(
            &[x.clone(), gamma.clone(), beta.clone(), labels.clone()],
            |ts| {
                let (x, g, b, y) = (&ts[0], &ts[1], &ts[2], &ts[3]);
                vec![
                    x.softmax(-1),
                    x.log_softmax(0),
                    x.layer_norm(g, b, 1e-5, -1),
                    jitfuse::softmax_cross_entropy(x, y),
                    x.gelu(),
                    x.gelu_erf(),
                    x.silu(),
                    x.softplus(),
                    x.clamp(-1.0, 2.5),
                ]
            },
        );
        // softmax of [-4, 4] over 33 columns has elements near 1e-5 (the absolute 2e-5 of
        // `tol` passed any value there): relative, as are silu and softplus; the
        // log-probabilities, the normalised rows and gelu's `1 + tanh` cancel: normwise;
        // clamp is exact.
        check_graph_with(
            &g,
            &[x.clone(), gamma, beta, labels],
            &format!("composites {d}"),
            |k, want| match k {
                0 | 6 | 7 => rel(d),
                8 => EXACT,
                _ => norm(d, want),
            },
        );
        let s = x.softmax(-1).sum(-1);
        assert_close(
            &s,
            &Tensor::full(&[7], 1.0, d),
            tol(d),
            "softmax rows sum to 1",
        );
    }
}

#[test]
fn float_sums_are_accurate_on_ten_million_elements() {
    let n = 10_000_000;
    let mut rng = Rng::new(25);
    let vals: Vec<f32> = (0..n).map(|_| rng.uniform(0.0, 1.0) as f32).collect();
    let exact: f64 = vals.iter().map(|&v| v as f64).sum();
    let x = Tensor::from_vec(vals, &[n]).unwrap();
    let g = trace_fn(&[x.clone()], |ts| vec![ts[0].sum_all()]);
    let exe = jitfuse::internals::exec::Executable::from_graph(g, vec![]).unwrap();
    let got = exe.run_with(&[&x]).unwrap()[0].item::<f32>().unwrap() as f64;
    let rel = (got - exact).abs() / exact;
    assert!(rel < 1e-6, "sum of 1e7 f32: {got} vs {exact} (rel {rel:e})");
}

#[test]
fn shape_errors_name_op_operands_and_axis() {
    let x = Tensor::zeros(&[2, 3], DType::F32);
    let cases: Vec<(Box<dyn Fn() -> Tensor + std::panic::RefUnwindSafe>, &str)> = vec![
        (
            Box::new(|| Tensor::zeros(&[2, 3], DType::F32).reshape(&[4, -1])),
            "`reshape` of f32[2,3] to [4, -1]",
        ),
        (
            Box::new(|| Tensor::zeros(&[2, 3], DType::F32).transpose(&[0, 0])),
            "`transpose`: [0, 0] is not a permutation",
        ),
        (
            Box::new(|| Tensor::zeros(&[2, 3], DType::F32).sum(2)),
            "`sum`: axis 2 is out of range for f32[2,3]",
        ),
        (
            Box::new(|| {
                Tensor::zeros(&[2, 3], DType::F32).matmul(&Tensor::zeros(&[2, 3], DType::F32))
            }),
            "inner dimensions 3 and 2",
        ),
        (
            Box::new(|| {
                jitfuse::concat(
                    &[
                        &Tensor::zeros(&[2, 3], DType::F32),
                        &Tensor::zeros(&[3, 3], DType::F32),
                    ],
                    1,
                )
            }),
            "`concat` along axis 1",
        ),
        (
            Box::new(|| {
                Tensor::zeros(&[2, 3], DType::F32).take(&Tensor::zeros(&[2], DType::F32), 0)
            }),
            "indices must be i32 or i64",
        ),
        (
            Box::new(|| Tensor::zeros(&[2, 0], DType::F32).argmax(1)),
            "`argmax` along axis 1 of f32[2,0]",
        ),
        (
            Box::new(|| Tensor::zeros(&[2], DType::Bool).sum(0)),
            "`sum` of a bool tensor",
        ),
        (
            Box::new(|| Tensor::zeros(&[2], DType::I32).mean(0)),
            "`mean` needs a float tensor",
        ),
        (
            Box::new(|| Tensor::zeros(&[2, 3], DType::F32).squeeze(&[0])),
            "`squeeze`: axis 0 of f32[2,3] has size 2",
        ),
    ];
    for (f, want) in cases {
        let msg = *std::panic::catch_unwind(|| f())
            .unwrap_err()
            .downcast::<String>()
            .unwrap();
        assert!(msg.contains(want), "{msg:?} should contain {want:?}");
        assert!(msg.contains("array_ops.rs:"), "source line in {msg:?}");
    }
    drop(x);
}

/// Reductions large enough to run in parallel, in row and column form, over
/// views, against the interpreter; and they compile to reduction kernels.
#[test]
fn large_reductions_in_row_and_column_form() {
    let mut rng = Rng::new(26);
    for (shape, axes) in [
        (vec![1000, 300], vec![1isize]),
        (vec![300, 1001], vec![0]),
        (vec![5, 70_001], vec![1]),
        (vec![64, 33, 40], vec![0, 2]),
        (vec![70_003], vec![0]),
    ] {
        for d in [DType::F32, DType::F64, DType::I32] {
            let x = random_tensor(&mut rng, &shape, d, -2.0, 2.0, false);
            let g = trace_fn(&[x.clone()], |ts| {
                let x = &ts[0];
                vec![
                    x.sum(axes.clone()),
                    x.max(axes.clone()),
                    x.t().min(axes.clone()),
                    x.flip(&[-1]).sum_keepdims(axes.clone()),
                ]
            });
            let exe = jitfuse::internals::exec::Executable::from_graph(g.clone(), vec![]).unwrap();
            assert_eq!(
                exe.kernel_count(),
                exe.step_count(),
                "all compiled, no library step:\n{}",
                exe.kernels_text()
            );
            assert!(
                exe.step_count() <= 4,
                "views folded, siblings fused:\n{}",
                exe.kernels_text()
            );
            // Max and min pick an element: exact. The f32 sums of up to 70001 terms
            // cancel: normwise.
            check_graph_with(
                &g,
                &[x],
                &format!("large reduction {d} {shape:?} {axes:?}"),
                |k, want| match (k, d) {
                    (1 | 2, _) => EXACT,
                    (_, DType::F32) => Tol {
                        rel: 1e-5,
                        abs: 4e-6,
                    }
                    .normwise(want),
                    _ => tol(d),
                },
            );
        }
    }
}

/// Float max/min reductions track NaN apart from their accumulators (one
/// unordered compare per pair of vectors, `codegen::reduce::acc_step`): a NaN
/// anywhere in a row (first vector of an unrolled pair, second, single-vector
/// loop, padded tail, a later block of 2048) makes the row's result NaN, in
/// reduction kernels, row kernels (softmax's max phase, sibling max and min)
/// and over views; rows without NaN (with infinities) are exact.
#[test]
fn max_and_min_reductions_propagate_nan_from_every_position() {
    let mut rng = Rng::new(31);
    for n in [1usize, 3, 4, 5, 8, 15, 16, 17, 31, 33, 100, 2051, 4100] {
        for d in FLOATS {
            let shape = [3, n];
            let x0 = random_tensor(&mut rng, &shape, d, -3.0, 3.0, false);
            let g = trace_fn(&[x0.clone()], |ts| {
                let x = &ts[0];
                vec![
                    x.max(-1),
                    x.min(-1),
                    x.max_keepdims(-1) - x.min_keepdims(-1),
                    (x - x.max_keepdims(-1)).exp().sum(-1),
                    x.flip(&[-1]).max(-1),
                    x.t().min(0),
                ]
            });
            let exe = jitfuse::internals::exec::Executable::from_graph(g.clone(), vec![]).unwrap();
            let base: Vec<f64> = match d {
                DType::F32 => x0
                    .to_vec::<f32>()
                    .unwrap()
                    .into_iter()
                    .map(|v| v as f64)
                    .collect(),
                _ => x0.to_vec::<f64>().unwrap(),
            };
            let mut positions: Vec<usize> = (0..n.min(40)).collect();
            positions.extend([n / 2, n.saturating_sub(2), n - 1, n.saturating_sub(5)]);
            if n > 2048 {
                positions.extend([2047, 2048, 2049, 2050]);
            }
            for p in positions {
                let mut v = base.clone();
                // Row 0: no NaN, an infinity; row 1: NaN at p; row 2: NaN at
                // p and at its mirror.
                v[(p * 7) % n] = f64::INFINITY;
                v[n + p] = f64::NAN;
                v[2 * n + p] = f64::NAN;
                v[2 * n + (n - 1 - p)] = -f64::NAN;
                let x = match d {
                    DType::F32 => Tensor::from_vec(v.iter().map(|&a| a as f32).collect(), &shape),
                    _ => Tensor::from_vec(v, &shape),
                }
                .unwrap();
                let want =
                    jitfuse::internals::interpret::eval_graph(&g, std::slice::from_ref(&x), &[])
                        .unwrap();
                let got = exe.run_with(&[&x]).unwrap();
                for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                    // Max and min (and their difference) pick elements: exact; only the
                    // sum of exponentials rounds.
                    let t = if k == 3 { tol(d) } else { EXACT };
                    assert_close(a, b, t, &format!("{d} n {n} NaN at {p}, output {k}\n{g}"));
                }
            }
        }
    }
}

#[test]
fn creation_inside_traces_records_nodes_not_buffers() {
    // Varied values: zeros would hide a sum that ignored the parameter.
    let x = random_tensor(&mut Rng::new(28), &[5], DType::F32, -4.0, 4.0, false);
    let t = jitfuse::internals::trace::trace(
        &[jitfuse::internals::trace::ParamSpec {
            shape: vec![5],
            dtype: DType::F32,
            weak: false,
        }],
        |ts| {
            vec![
                &ts[0] + Tensor::arange(5, DType::F32),
                ts[0].ones_like(),
                ts[0].full_like(2.5),
            ]
        },
    )
    .unwrap();
    assert!(t.captured.is_empty(), "no captured buffers:\n{}", t.graph);
    assert!(t.graph.to_text().contains("iota[0]"), "{}", t.graph);
    check_graph(&t.graph, &[x], EXACT, "creation");
}

#[test]
fn batched_matmul_with_single_row_operands() {
    // Found by the proptest suite: batches of m = 1 rows.
    let mut rng = Rng::new(27);
    let a = random_tensor(&mut rng, &[6, 1, 5], DType::F32, -3.0, 3.0, false);
    let b = random_tensor(&mut rng, &[6, 5, 2], DType::I32, -3.0, 3.0, false);
    let g = trace_fn(&[a.clone(), b.clone()], |ts| vec![ts[0].matmul(&ts[1])]);
    check_graph(&g, &[a, b], tol(DType::F32), "m = 1 batches");
}

#[test]
fn matmul_gemm_sized_strided_operands() {
    // Products large enough for the AVX-512 `gemm` path (m * k * n >= 8192)
    // and tiny ones (`matrixmultiply`), operands read through folded views:
    // stored transposed (A^T @ B and A @ B^T as the autodiff makes them),
    // flipped (negative strides), every other row or column, broadcast rows
    // (stride 0), with broadcast batch dims; f32 and f64 against the
    // interpreter's f64 triple loop.
    let mut rng = Rng::new(91);
    for trial in 0..40 {
        let d = FLOATS[trial % 2];
        let dim = |rng: &mut Rng| {
            if rng.chance(0.2) {
                1 + rng.below(4)
            } else {
                1 + rng.below(90)
            }
        };
        let (m, k, n) = (dim(&mut rng), dim(&mut rng), dim(&mut rng));
        let batch_a: Vec<usize> = (0..rng.below(3)).map(|_| 1 + rng.below(3)).collect();
        let drop = rng.below(batch_a.len() + 1);
        let batch_b: Vec<usize> = batch_a
            .iter()
            .map(|&x| if rng.chance(0.3) { 1 } else { x })
            .skip(drop)
            .collect();
        let with = |b: &[usize], x: usize, y: usize| {
            let mut s = b.to_vec();
            s.extend([x, y]);
            s
        };
        // a is [.., m, k], b [.., k, n]; at/bt hold them transposed; a2/b2
        // twice as long on the contracted axis (read every other element).
        let a = random_tensor(&mut rng, &with(&batch_a, m, k), d, -2.0, 2.0, false);
        let at = random_tensor(&mut rng, &with(&batch_a, k, m), d, -2.0, 2.0, false);
        let b = random_tensor(&mut rng, &with(&batch_b, k, n), d, -2.0, 2.0, false);
        let bt = random_tensor(&mut rng, &with(&batch_b, n, k), d, -2.0, 2.0, false);
        let a2 = random_tensor(&mut rng, &with(&batch_a, m, 2 * k), d, -2.0, 2.0, false);
        let row = random_tensor(&mut rng, &[1, k], d, -2.0, 2.0, false);
        let args = [a, at, b, bt, a2, row];
        let g = trace_fn(&args, |ts| {
            let (a, at, b, bt, a2, row) = (&ts[0], &ts[1], &ts[2], &ts[3], &ts[4], &ts[5]);
            let mut rows = batch_a.clone();
            rows.extend([m, k]);
            vec![
                a.matmul(b),
                at.t().matmul(b),
                a.matmul(&bt.t()),
                at.t().matmul(&bt.t()),
                a.flip(&[-1]).matmul(&b.flip(&[-2])),
                a2.slice_axis(-1, None, None, 2).matmul(b),
                row.broadcast_to(&rows).matmul(&bt.t()),
                (a.matmul(b) + 1.0).relu(),
            ]
        });
        let tol = if d == DType::F32 {
            Tol {
                rel: 1e-4,
                abs: 1e-3,
            }
        } else {
            tol(d)
        };
        check_graph(
            &g,
            &args,
            tol,
            &format!("gemm {d} {batch_a:?} {m}x{k}x{n} @ {batch_b:?} trial {trial}"),
        );
    }
}

/// Products of 4 M multiply-adds or more run as single-threaded `gemm`s on bands of output
/// rows (or of columns when n > m), one per core or, for sides of 1,536 and more, several per
/// core with a shorter last one: operands stored transposed, flipped and read every other
/// element, against the interpreter.
#[test]
fn matmul_mid_size_products_split_in_bands() {
    let mut rng = Rng::new(92);
    for (trial, &(m, k, n)) in [
        (200usize, 150usize, 170usize),
        (70, 300, 261),
        (130, 400, 97),
        (1700, 40, 65),
        (66, 36, 1800),
    ]
    .iter()
    .enumerate()
    {
        let d = FLOATS[trial % 2];
        let a = random_tensor(&mut rng, &[m, 2 * k], d, -2.0, 2.0, false);
        let at = random_tensor(&mut rng, &[k, m], d, -2.0, 2.0, false);
        let b = random_tensor(&mut rng, &[k, n], d, -2.0, 2.0, false);
        let bt = random_tensor(&mut rng, &[n, k], d, -2.0, 2.0, false);
        let args = [a, at, b, bt];
        let g = trace_fn(&args, |ts| {
            let (a2, at, b, bt) = (&ts[0], &ts[1], &ts[2], &ts[3]);
            let a = a2.slice_axis(1, 0, None, 2);
            vec![
                a.matmul(b),
                at.t().matmul(&bt.t()),
                a.flip(&[0]).matmul(&b.flip(&[1])),
            ]
        });
        // (f64 products were held to the f32 tolerance.)
        let t = if d == DType::F32 {
            Tol {
                rel: 1e-4,
                abs: 1e-3,
            }
        } else {
            tol(d)
        };
        check_graph(&g, &args, t, &format!("mid-size {m}x{k}x{n} {d}"));
    }
}

/// Python's `range(*slice(start, end, step).indices(n))`, in i128 (no
/// overflow for any isize): the reference the slice tests compare with.
fn python_slice(n: usize, s: Slice) -> Vec<i128> {
    let (n, step) = (n as i128, s.step as i128);
    let norm = |v: isize, lo: i128, hi: i128| {
        let v = v as i128;
        (if v < 0 { v + n } else { v }).clamp(lo, hi)
    };
    let (mut i, end) = if step > 0 {
        (
            s.start.map_or(0, |v| norm(v, 0, n)),
            s.end.map_or(n, |v| norm(v, 0, n)),
        )
    } else {
        (
            s.start.map_or(n - 1, |v| norm(v, -1, n - 1)),
            s.end.map_or(-1, |v| norm(v, -1, n - 1)),
        )
    };
    let mut out = vec![];
    while (step > 0 && i < end) || (step < 0 && i > end) {
        out.push(i);
        i += step;
    }
    out
}

#[test]
fn slice_steps_follow_numpy_at_the_extremes() {
    const MAX: isize = isize::MAX;
    const MIN: isize = isize::MIN;
    let x = Tensor::arange(10, DType::I32);
    let v = |t: Tensor| t.to_vec::<i32>().unwrap();
    // x[0:10:MAX] is [0] in NumPy (the step once overflowed to an empty slice).
    assert_eq!(v(x.slice(&[Slice::new(0, 10, MAX)])), vec![0]);
    assert_eq!(v(x.slice(&[Slice::new(None, None, MIN)])), vec![9]);
    assert_eq!(v(x.slice(&[Slice::new(MIN, MAX, MAX)])), vec![0]);
    assert_eq!(v(x.slice(&[Slice::new(MAX, MIN, MIN)])), vec![9]);
    assert_eq!(v(x.slice(&[Slice::new(5, None, 11)])), vec![5]);
    assert_eq!(v(x.slice(&[Slice::new(5, None, -11)])), vec![5]);
    assert_eq!(v(x.slice(&[Slice::new(MIN, MIN, 1)])), Vec::<i32>::new());
    // Every combination of extreme bounds and steps on short axes, eager
    // against the reference.
    let bounds = |n: isize| {
        [
            MIN,
            MIN + 1,
            -n - 1,
            -n,
            -1,
            0,
            1,
            n - 1,
            n,
            n + 1,
            MAX - 1,
            MAX,
        ]
        .map(Some)
        .into_iter()
        .chain([None])
    };
    let steps = |n: isize| {
        [
            MIN,
            MIN + 1,
            -n - 1,
            -n,
            -2,
            -1,
            1,
            2,
            n,
            n + 1,
            MAX - 1,
            MAX,
        ]
        .into_iter()
        .filter(|&s| s != 0)
    };
    let mut cases = vec![];
    for n in 0..5usize {
        let t = Tensor::arange(n, DType::I64);
        for start in bounds(n as isize) {
            for end in bounds(n as isize) {
                for step in steps(n as isize) {
                    let s = Slice { start, end, step };
                    let want: Vec<i64> = python_slice(n, s).iter().map(|&i| i as i64).collect();
                    let got = t.slice(&[s]);
                    assert_eq!(got.to_vec::<i64>().unwrap(), want, "arange({n})[{s:?}]");
                    if want.len() <= 1 && n == 4 {
                        cases.push(s);
                    }
                }
            }
        }
    }
    // Compiled: a matrix sliced on both axes by extreme steps (the step
    // times the row stride is what overflowed), against the interpreter.
    let m = Tensor::arange(12, DType::F32).reshape(&[3, 4]);
    for (k, s) in cases.iter().step_by(97).enumerate() {
        let s = *s;
        let g = trace_fn(&[m.clone()], |a| {
            vec![
                a[0].slice(&[Slice::new(None, None, MIN), s]),
                (&a[0] * 2.0).slice(&[s, Slice::new(1, None, MAX)]),
            ]
        });
        // Slices move elements and doubling is exact: any difference is a wrong element.
        check_graph(
            &g,
            std::slice::from_ref(&m),
            EXACT,
            &format!("case {k}: {s:?}"),
        );
    }
}

/// Operand layouts a library step reads in place: a plain parameter, a
/// transposed one, a strided or reversed slice, a broadcast, a constant.
fn library_operand(
    g: &mut jitfuse::internals::ir::Graph,
    args: &mut Vec<Tensor>,
    rng: &mut Rng,
    s: &[usize],
    d: DType,
    (lo, hi): (f64, f64),
) -> jitfuse::internals::ir::ValueId {
    use jitfuse::internals::ir::Op;
    use jitfuse::Literal;
    let mut param = |g: &mut jitfuse::internals::ir::Graph, rng: &mut Rng, shape: Vec<usize>| {
        args.push(random_tensor(rng, &shape, d, lo, hi, true));
        push(g, Op::Param(args.len() - 1), vec![], shape, d)
    };
    match rng.below(5) {
        0 => param(g, rng, s.to_vec()),
        1 => {
            let perm = random_perm(rng, s.len());
            let mut ps = vec![0; s.len()];
            for (k, &p) in perm.iter().enumerate() {
                ps[p] = s[k];
            }
            let p = param(g, rng, ps);
            push(g, Op::Transpose(perm), vec![p], s.to_vec(), d)
        }
        2 => {
            let mut ps = Vec::new();
            let mut sl = Vec::new();
            for &n in s {
                let step: i64 = [1, 2, -1, -2][rng.below(4)];
                let span = n.saturating_sub(1) * step.unsigned_abs() as usize;
                let len = if n == 0 {
                    rng.below(3)
                } else {
                    span + 1 + rng.below(2)
                };
                // (The IR holds no step longer than its axis.)
                let step = if step.unsigned_abs() as usize > len.max(1) {
                    step.signum()
                } else {
                    step
                };
                let free = if n == 0 { 0 } else { len - 1 - span };
                let start = if n == 0 {
                    0
                } else if step > 0 {
                    rng.below(free + 1)
                } else {
                    (len - 1).saturating_sub(rng.below(free + 1))
                };
                ps.push(len);
                sl.push((start as i64, step));
            }
            let p = param(g, rng, ps);
            push(g, Op::Slice(sl), vec![p], s.to_vec(), d)
        }
        3 => {
            let drop = rng.below(s.len() + 1);
            let ps: Vec<usize> = s[drop..]
                .iter()
                .map(|&n| if rng.chance(0.5) { 1 } else { n })
                .collect();
            let p = param(g, rng, ps);
            push(g, Op::Broadcast, vec![p], s.to_vec(), d)
        }
        _ => {
            let l = match d {
                DType::Bool => Literal::Bool(true),
                DType::I32 | DType::I64 => Literal::Int(-1),
                _ => Literal::Float(2.5),
            };
            push(g, Op::Const(l), vec![], s.to_vec(), d)
        }
    }
}

fn push(
    g: &mut jitfuse::internals::ir::Graph,
    op: jitfuse::internals::ir::Op,
    inputs: Vec<jitfuse::internals::ir::ValueId>,
    shape: Vec<usize>,
    dtype: DType,
) -> jitfuse::internals::ir::ValueId {
    g.push(jitfuse::internals::ir::Node {
        op,
        inputs,
        shape,
        dtype,
        loc: None,
    })
}

/// Every library step (concat, pad, take, argmax/argmin, iota, slice_scatter,
/// scatter_add, barrier copies) compiled against the interpreter, bit for bit,
/// on random shapes with empty and size-1 axes, every dtype each op takes,
/// and operands read in place through transposed, strided, reversed and
/// broadcast views and one-element constants; indices out of range both ways.
#[test]
fn library_steps_on_strided_operands_match_the_interpreter() {
    use jitfuse::internals::ir::{Graph, Op};
    use jitfuse::Literal;
    let mut rng = Rng::new(23);
    let dims = [0, 1, 2, 3, 5, 17];
    for trial in 0..160 {
        let d = DType::ALL[trial % 5];
        let rank = 1 + rng.below(3);
        let s: Vec<usize> = (0..rank)
            .map(|_| {
                if rng.chance(0.1) {
                    0
                } else {
                    dims[1 + rng.below(5)]
                }
            })
            .collect();
        let axis = rng.below(rank);
        let vals = (-9.0, 9.0);
        let mut g = Graph::new();
        let mut args = Vec::new();
        let mut outs = Vec::new();
        let a = library_operand(&mut g, &mut args, &mut rng, &s, d, vals);
        let mut s2 = s.clone();
        s2[axis] = dims[rng.below(4)];
        let b = library_operand(&mut g, &mut args, &mut rng, &s2, d, vals);
        let mut cat = s.clone();
        cat[axis] = 2 * s[axis] + s2[axis];
        outs.push(push(&mut g, Op::Concat(axis), vec![a, b, a], cat, d));
        let pads: Vec<(usize, usize)> = (0..rank).map(|_| (rng.below(3), rng.below(3))).collect();
        let padded = s.iter().zip(&pads).map(|(n, p)| n + p.0 + p.1).collect();
        let l = match d {
            DType::Bool => Literal::Bool(true),
            DType::I32 | DType::I64 => Literal::Int(7),
            _ => Literal::Float(-1.5),
        };
        outs.push(push(&mut g, Op::Pad(pads, l), vec![a], padded, d));
        // take along `axis`, from an empty axis too (zeros).
        let n = s[axis] as f64;
        let ishape: Vec<usize> = (0..rng.below(3)).map(|_| rng.below(5)).collect();
        let id = [DType::I32, DType::I64][rng.below(2)];
        let idx = library_operand(
            &mut g,
            &mut args,
            &mut rng,
            &ishape,
            id,
            (-n - 3.0, n + 3.0),
        );
        let mut ts = s[..axis].to_vec();
        ts.extend(&ishape);
        ts.extend(&s[axis + 1..]);
        outs.push(push(&mut g, Op::Take(axis), vec![a, idx], ts, d));
        if d != DType::Bool {
            if s[axis] > 0 {
                let mut r = s.clone();
                r.remove(axis);
                for op in [Op::ArgMax(axis), Op::ArgMin(axis)] {
                    outs.push(push(&mut g, op, vec![a], r.clone(), DType::I64));
                }
            }
            outs.push(push(&mut g, Op::Iota(axis), vec![], s.clone(), d));
        }
        // slice_scatter: `a` written into zeros at start + i*step per axis.
        let mut to = Vec::new();
        let mut sl = Vec::new();
        for &k in &s {
            let step: i64 = [1, 2, -1, -3][rng.below(4)];
            let span = (k.saturating_sub(1) * step.unsigned_abs() as usize) as i64;
            let extra = rng.below(3) as i64;
            let (start, len) = match (k, step > 0) {
                (0, _) => (0, rng.below(3) as i64),
                (_, true) => (extra, extra + span + 1 + rng.below(2) as i64),
                (_, false) => (span + extra, span + extra + 1 + rng.below(2) as i64),
            };
            // (The IR holds no step longer than its axis.)
            let step = if step.unsigned_abs() > (len as u64).max(1) {
                step.signum()
            } else {
                step
            };
            to.push(len as usize);
            sl.push((start, step));
        }
        outs.push(push(&mut g, Op::SliceScatter(sl), vec![a], to, d));
        if d.is_float() {
            // scatter_add into rows 0..m along `axis` (m = 0 too: no rows).
            let mut out = s.clone();
            out[axis] = [0, 1, 3, 5][rng.below(4)];
            let m = out[axis] as f64;
            let ishape: Vec<usize> = (0..rng.below(3)).map(|_| rng.below(5)).collect();
            let mut vs = out[..axis].to_vec();
            vs.extend(&ishape);
            vs.extend(&out[axis + 1..]);
            let v = library_operand(&mut g, &mut args, &mut rng, &vs, d, vals);
            let idx = library_operand(
                &mut g,
                &mut args,
                &mut rng,
                &ishape,
                id,
                (-m - 3.0, m + 3.0),
            );
            outs.push(push(&mut g, Op::ScatterAdd(axis), vec![v, idx], out, d));
        }
        // A barrier returned by the program is a copying library step.
        outs.push(push(&mut g, Op::Barrier, vec![a, b], s.clone(), d));
        g.outputs = outs;
        check_graph(
            &g,
            &args,
            EXACT,
            &format!("library steps {d} {s:?} axis {axis} trial {trial}"),
        );
    }
}

/// `scatter_add` sums in f64 in index order and rounds once, as the
/// interpreter: many f32 values of mixed magnitudes landing on a few rows
/// (large enough to split across threads) give the interpreter's bits.
#[test]
fn scatter_add_accumulates_as_the_interpreter() {
    use jitfuse::internals::ir::{Graph, Op};
    let mut rng = Rng::new(24);
    // Counting-sorted (rows <= 2m + 16) and sorted groups (a few indices on many rows:
    // the flat one-hot part of a cross-entropy gradient), one and several threads.
    for (rows, m, inner) in [
        (3, 4000, 80),
        (1000, 300, 256),
        (7, 5, 1),
        (200_000, 3000, 1),
        (40, 3, 7),
    ] {
        let mut g = Graph::new();
        let vals = random_tensor(&mut rng, &[m, inner], DType::F32, -1e4, 1e4, false);
        let ids: Vec<i32> = (0..m).map(|_| rng.below(rows + 4) as i32 - 2).collect();
        let idx = Tensor::from_vec(ids, &[m]).unwrap();
        let v = push(&mut g, Op::Param(0), vec![], vec![m, inner], DType::F32);
        let i = push(&mut g, Op::Param(1), vec![], vec![m], DType::I32);
        let out = push(
            &mut g,
            Op::ScatterAdd(0),
            vec![v, i],
            vec![rows, inner],
            DType::F32,
        );
        g.outputs = vec![out];
        check_graph(
            &g,
            &[vals, idx],
            EXACT,
            &format!("scatter_add {rows}x{inner} from {m}"),
        );
    }
    // Along a middle axis (outer rows too), sorted groups.
    let (outer, rows, m, inner) = (3, 500, 40, 5);
    let mut g = Graph::new();
    let vals = random_tensor(&mut rng, &[outer, m, inner], DType::F64, -1e4, 1e4, false);
    let ids: Vec<i64> = (0..m).map(|_| rng.below(rows + 4) as i64 - 2).collect();
    let idx = Tensor::from_vec(ids, &[m]).unwrap();
    let v = push(
        &mut g,
        Op::Param(0),
        vec![],
        vec![outer, m, inner],
        DType::F64,
    );
    let i = push(&mut g, Op::Param(1), vec![], vec![m], DType::I64);
    let out = push(
        &mut g,
        Op::ScatterAdd(1),
        vec![v, i],
        vec![outer, rows, inner],
        DType::F64,
    );
    g.outputs = vec![out];
    check_graph(
        &g,
        &[vals, idx],
        EXACT,
        "scatter_add along axis 1, sorted groups",
    );
}
