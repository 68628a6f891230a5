//! Staged control flow: `cond`, `while_loop`, `fori_loop`, `scan`
//! and the macro's `staged_if`/`staged_while`/`staged_for` on traced
//! conditions: compiled results against eager evaluation and the reference
//! interpreter, the IR text, errors naming the variable, and gradients
//! against finite differences.

use crate::common::{assert_close, check_graph_with, random_tensor, trace_fn, Rng, Tol, EXACT};
use jitfuse::__private::{staged_for, staged_for_range, staged_if, staged_while};
use jitfuse::internals::ir;
use jitfuse::prelude::*;

const F32_TOL: Tol = Tol {
    rel: 1e-5,
    abs: 1e-5,
};

fn vec_f32(v: &[f32]) -> Tensor {
    Tensor::from_slice(v, &[v.len()]).unwrap()
}

// ---------- cond ----------

fn cond_body(x: &Tensor) -> Tensor {
    cond(
        &x.sum_all().gt(0.0),
        |x: Tensor| (&x * 2.0).exp(),
        |x: Tensor| x - 1.0,
        x.clone(),
    )
}

#[jit]
fn jit_cond(x: &Tensor) -> Tensor {
    cond_body(x)
}

#[test]
fn cond_takes_the_branch_of_the_predicate_at_run_time() {
    let pos = vec_f32(&[0.5, 1.0, -0.25]);
    let neg = vec_f32(&[-0.5, 1.0, -2.0]);
    jit_cond::clear_cache();
    for x in [&pos, &neg] {
        assert_close(&jit_cond(x), &cond_body(x), F32_TOL, "cond");
    }
    assert_eq!(
        jit_cond::cache_stats().misses,
        1,
        "one program serves both branches"
    );
    let text = jit_cond::lower(&pos).unwrap().as_text();
    assert!(text.contains("= cond "), "{text}");
}

#[test]
fn staged_if_names_the_variable_whose_shape_differs() {
    #[jit]
    fn bad(x: &Tensor) -> Tensor {
        let a = x.clone();
        let b = x.clone();
        let (v, a, b) = staged_if(
            &x.sum_all().gt(0.0),
            &["the value of this `if`", "a", "b"],
            (a, b),
            |then, (a, b): (Tensor, Tensor)| {
                if then {
                    ((), a + 1.0, b.sum_all())
                } else {
                    ((), a, b)
                }
            },
        );
        let () = v;
        a + b
    }
    let err = bad::try_call(&vec_f32(&[1.0, 2.0]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "`b` is f32[] after the then-branch of this `if` but f32[2] after the else-branch"
        ),
        "{err}"
    );
}

#[test]
fn staged_if_on_a_bool_runs_one_branch_on_any_types() {
    let mut count = 0usize;
    let (v, c) = staged_if(&true, &["v", "count"], (count,), |then, (mut count,)| {
        count += 1;
        (if then { "then" } else { "else" }, count)
    });
    count = c;
    assert_eq!((v, count), ("then", 1));
}

#[test]
fn cond_predicate_must_be_a_bool_scalar() {
    #[jit]
    fn vector_pred(x: &Tensor) -> Tensor {
        cond(&x.gt(0.0), |x: Tensor| x, |x: Tensor| -x, x.clone())
    }
    let err = vector_pred::try_call(&vec_f32(&[1.0, 2.0]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("must be a bool tensor of shape [], found bool[2]") && err.contains("select"),
        "{err}"
    );
}

// ---------- while ----------

/// Halve until at most 1, counting the steps (a traced stopping condition).
fn halvings(x: &Tensor) -> (Tensor, Tensor) {
    while_loop(
        |s: &(Tensor, Tensor)| s.0.max_all().gt(1.0),
        |(x, n)| (x / 2.0, n + 1),
        (x.clone(), Tensor::scalar(0i32)),
    )
}

#[jit]
fn jit_halvings(x: &Tensor) -> (Tensor, Tensor) {
    halvings(x)
}

#[test]
fn while_loop_runs_a_data_dependent_number_of_iterations() {
    for (v, steps) in [(1000.0f32, 10), (3.0, 2), (0.5, 0)] {
        let x = vec_f32(&[v, 0.25]);
        let (y, n) = jit_halvings(&x);
        let (ey, en) = halvings(&x);
        assert_eq!(n.item::<i32>().unwrap(), steps, "x = {v}");
        assert_eq!(en.item::<i32>().unwrap(), steps, "eager, x = {v}");
        // Halving is exact (the absolute 1e-5 passed 0.25 / 1024 4% wrong).
        assert_close(&y, &ey, EXACT, "while");
    }
    assert_eq!(jit_halvings::cache_stats().misses, 1);
}

#[test]
fn staged_while_checks_that_the_body_keeps_shapes() {
    #[jit]
    fn grows(x: &Tensor) -> Tensor {
        let (x,) = staged_while(
            &["x"],
            (x.clone(),),
            |(x,): (Tensor,)| (x.sum_all().lt(100.0), (x,)),
            |(x,)| (jitfuse::concat(&[&x, &x], 0),),
        );
        x
    }
    let err = grows::try_call(&vec_f32(&[1.0])).unwrap_err().to_string();
    assert!(
        err.contains("`x` is f32[1] before this `while` but f32[2] after its body"),
        "{err}"
    );
}

/// Each staged loop form of a `#[jit]` body, growing `h` (and keeping `k`).
#[jit]
fn grows_in_a_loop(x: &Tensor, m: &Tensor, form: usize) -> (Tensor, Tensor) {
    let mut k = x.sum_all();
    let mut h = x.clone();
    let (lo, hi) = (Tensor::scalar(0i32), Tensor::scalar(2i32));
    if form == 0 {
        for row in m.iter_axis(0) {
            k = &k + row.sum_all();
            h = jitfuse::concat(&[&h, &row], 0);
        }
    } else if form == 1 {
        for _ in &lo..&hi {
            k = &k + 1.0;
            h = jitfuse::concat(&[&h, &h], 0);
        }
    } else {
        while k.lt(100.0) {
            k = &k + 1.0;
            h = jitfuse::concat(&[&h, &h], 0);
        }
    }
    (h, k)
}

#[test]
fn every_staged_loop_names_the_variable_whose_shape_changes() {
    let x = vec_f32(&[1.0, 2.0]);
    let m = Tensor::ones(&[3, 2], DType::F32);
    for (form, grown, what) in [
        (0, "f32[4]", "for"),
        (1, "f32[4]", "for"),
        (2, "f32[4]", "while"),
    ] {
        let err = grows_in_a_loop::try_call(&x, &m, form)
            .unwrap_err()
            .to_string();
        let want = format!("`h` is f32[2] before this `{what}` but {grown} after its body");
        assert!(
            err.contains(&want),
            "form {form}: `{want}` missing from {err}"
        );
        assert!(!err.contains("carry"), "form {form}: {err}");
    }
}

// ---------- counted loops ----------

fn power_sum(x: &Tensor, n: usize) -> Tensor {
    // sum_{i<n} (i+1) * x, through a static-bound fori_loop (a scan)
    fori_loop(
        0,
        n,
        |i, acc: Tensor| acc + x * (i.cast(DType::F32) + 1.0),
        x.zeros_like(),
    )
}

#[jit]
fn jit_power_sum(x: &Tensor, n: usize) -> Tensor {
    power_sum(x, n)
}

#[test]
fn fori_loop_with_static_bounds_is_one_scan_whose_code_does_not_grow() {
    let x = vec_f32(&[1.0, -2.0, 0.5]);
    for n in [0usize, 1, 10, 1000] {
        let want = (n * (n + 1) / 2) as f32;
        let got = jit_power_sum(&x, n);
        assert_close(
            &got,
            &(&x * want),
            Tol {
                rel: 1e-6,
                abs: 1e-6,
            },
            "fori",
        );
    }
    let c10 = jit_power_sum::lower(&x, 10).unwrap().compile().unwrap();
    let c1000 = jit_power_sum::lower(&x, 1000).unwrap().compile().unwrap();
    assert_eq!(c10.kernel_count(), c1000.kernel_count());
    assert_eq!(
        c10.memory_analysis().code_bytes,
        c1000.memory_analysis().code_bytes,
        "a 1000-step loop compiles to the same code as a 10-step one"
    );
    let text = jit_power_sum::lower(&x, 1000).unwrap().as_text();
    assert!(text.contains("= scan[1000,1,1,0]"), "{text}");
}

#[jit]
fn traced_bounds(x: &Tensor, lo: &Tensor, hi: &Tensor) -> Tensor {
    let (acc,) = staged_for_range(&["acc"], lo..hi, (x.zeros_like(),), |i, (acc,)| {
        (acc + x * i.cast(DType::F32),)
    });
    acc
}

#[test]
fn a_range_with_tensor_bounds_is_a_counted_loop() {
    let x = vec_f32(&[1.0, 2.0]);
    for (lo, hi) in [(0i32, 4i32), (2, 3), (5, 5), (3, 1)] {
        let got = traced_bounds(&x, &Tensor::scalar(lo), &Tensor::scalar(hi));
        let s: i32 = (lo..hi).sum();
        assert_close(&got, &(&x * s as f32), F32_TOL, "counted loop");
    }
    assert_eq!(traced_bounds::cache_stats().misses, 1, "bounds are data");
}

// ---------- scan ----------

fn cumsum(xs: &Tensor) -> (Tensor, Tensor) {
    scan(
        |c: Tensor, x: Tensor| {
            let c = c + x;
            (c.clone(), c)
        },
        xs.slice_axis(0, 0, 1, 1).squeeze(&[0]).zeros_like(),
        xs,
    )
}

#[jit]
fn jit_cumsum(xs: &Tensor) -> (Tensor, Tensor) {
    cumsum(xs)
}

#[test]
fn scan_carries_and_stacks() {
    let mut rng = Rng::new(61);
    for shape in [vec![1, 3], vec![7, 5], vec![33, 2, 3]] {
        let xs = random_tensor(&mut rng, &shape, DType::F32, -1.0, 1.0, false);
        let (c, ys) = jit_cumsum(&xs);
        let (ec, eys) = cumsum(&xs);
        // The same f32 additions in the same order, compiled and eager.
        assert_close(&c, &ec, EXACT, "scan carry");
        assert_close(&ys, &eys, EXACT, "scan ys");
        // Against a sum in another order: the terms are at most 1, so the absolute 1e-5 is a
        // few hundred ulp of a term, for sums that cancel.
        assert_close(
            &c,
            &xs.sum(0),
            Tol {
                rel: 1e-5,
                abs: 1e-5,
            },
            "carry = sum",
        );
    }
}

#[jit]
fn for_over_rows(m: &Tensor) -> Tensor {
    let acc = m.slice_axis(0, 0, 1, 1).squeeze(&[0]).zeros_like();
    let (acc,) = staged_for(&["acc"], m.iter_axis(0), (acc,), |row, (acc,)| {
        (acc.maximum(&row),)
    });
    acc
}

#[test]
fn for_over_iter_axis_is_a_scan() {
    let m = Tensor::from_vec(vec![1.0f32, 5.0, 3.0, 2.0, 4.0, 0.0], &[3, 2]).unwrap();
    assert_eq!(for_over_rows(&m).to_vec::<f32>().unwrap(), vec![4.0, 5.0]);
    let text = for_over_rows::lower(&m).unwrap().as_text();
    assert!(text.contains("= scan[3,1,1,0]"), "{text}");
}

/// Squared error of a linear model, row by row over `xs` and `ys` together;
/// and, over three tensors along axis 1 (one of them owned), a running sum.
#[jit]
fn zip_loss(w: &Tensor, xs: &Tensor, ys: &Tensor, m: &Tensor) -> (Tensor, Tensor) {
    let mut loss = Tensor::scalar(0.0f32);
    for (x, y) in jitfuse::zip_axis((xs, ys), 0) {
        loss = loss + ((&x * w).sum_all() - &y).square();
    }
    let mut acc = m.slice_axis(1, 0, 1, 1).squeeze(&[1]).zeros_like();
    for (a, b, c) in jitfuse::zip_axis((m, m.exp(), &(m * 2.0)), -1) {
        acc = acc + &a * &b - &c;
    }
    (loss, acc)
}

fn row(t: &Tensor, axis: isize, i: usize) -> Tensor {
    t.slice_axis(axis, i as isize, i as isize + 1, 1)
        .squeeze(&[axis])
}

fn zip_loss_ref(w: &Tensor, xs: &Tensor, ys: &Tensor, m: &Tensor) -> (Tensor, Tensor) {
    let mut loss = Tensor::scalar(0.0f32);
    for i in 0..xs.shape()[0] {
        loss = loss + ((&row(xs, 0, i) * w).sum_all() - row(ys, 0, i)).square();
    }
    let mut acc = row(m, 1, 0).zeros_like();
    for j in 0..m.shape()[1] {
        let a = row(m, 1, j);
        acc = acc + &a * a.exp() - &a * 2.0;
    }
    (loss, acc)
}

#[jit]
fn zip_grad(w: &Tensor, xs: &Tensor, ys: &Tensor) -> Tensor {
    jitfuse::grad(
        |w: &Tensor| {
            let mut loss = Tensor::scalar(0.0f32);
            for (x, y) in jitfuse::zip_axis((xs, ys), 0) {
                loss = loss + ((&x * w).sum_all() - &y).square();
            }
            loss
        },
        w,
    )
}

#[jit]
fn zip_axis_out_of_range(xs: &Tensor, ys: &Tensor) -> Tensor {
    let mut s = Tensor::scalar(0.0f32);
    for (x, y) in jitfuse::zip_axis((xs, ys), 1) {
        s = s + x.sum_all() + y.sum_all();
    }
    s
}

#[test]
fn zip_axis_iterates_several_tensors_together() {
    let mut rng = Rng::new(91);
    let w = random_tensor(&mut rng, &[3], DType::F32, -1.0, 1.0, false);
    let xs = random_tensor(&mut rng, &[5, 3], DType::F32, -1.0, 1.0, false);
    let ys = random_tensor(&mut rng, &[5], DType::F32, -1.0, 1.0, false);
    let m = random_tensor(&mut rng, &[2, 4], DType::F32, -1.0, 1.0, false);
    let (loss, acc) = zip_loss(&w, &xs, &ys, &m);
    let (want_loss, want_acc) = zip_loss_ref(&w, &xs, &ys, &m);
    assert_close(&loss, &want_loss, F32_TOL, "loss over (xs, ys)");
    assert_close(
        &acc,
        &want_acc,
        F32_TOL,
        "sum over three tensors along axis -1",
    );
    // One scan per loop, over two and three tensors.
    let text = zip_loss::lower(&w, &xs, &ys, &m).unwrap().graph_text();
    assert!(text.contains("= scan[5,1,2,0]"), "{text}");
    assert!(text.contains("= scan[4,1,3,0]"), "{text}");
    // Eagerly (no trace) the same loop visits the rows in order.
    let (eager,) = staged_for(
        &["loss"],
        jitfuse::zip_axis((&xs, ys.clone()), 0),
        (Tensor::scalar(0.0f32),),
        |(x, y), (loss,)| (loss + ((&x * &w).sum_all() - &y).square(),),
    );
    assert_close(&eager, &want_loss, F32_TOL, "eager zip_axis");
    let rows = jitfuse::zip_axis((&xs, &ys), 0);
    assert_eq!((rows.len(), rows.is_empty()), (5, false));
    let v = rows.to_vec();
    assert_eq!(
        v[2].0.to_vec::<f32>().unwrap(),
        row(&xs, 0, 2).to_vec::<f32>().unwrap()
    );
    assert_eq!(
        v[2].1.to_vec::<f32>().unwrap(),
        row(&ys, 0, 2).to_vec::<f32>().unwrap()
    );
    // The gradient through the scan over both.
    let g = zip_grad(&w, &xs, &ys);
    let want_g = jitfuse::grad(
        |w: &Tensor| {
            let mut loss = Tensor::scalar(0.0f32);
            for i in 0..5 {
                loss = loss + ((&row(&xs, 0, i) * w).sum_all() - row(&ys, 0, i)).square();
            }
            loss
        },
        &w,
    );
    assert_close(&g, &want_g, F32_TOL, "gradient through zip_axis");
}

#[test]
fn zip_axis_lengths_and_axes_are_checked() {
    let xs = Tensor::zeros(&[4, 3], DType::F32);
    let ys = Tensor::zeros(&[5], DType::F32);
    let w = Tensor::zeros(&[3], DType::F32);
    let m = Tensor::zeros(&[2, 2], DType::F32);
    let e = zip_loss::try_call(&w, &xs, &ys, &m).unwrap_err();
    assert_eq!(e.kind(), jitfuse::ErrorKind::Shape, "{e}");
    assert!(
        e.message().contains(
            "`zip_axis`: the tensors have different lengths along axis 0: tensor 0 f32[4,3] has 4, tensor 1 f32[5] has 5"
        ),
        "{e}"
    );
    assert_eq!(e.location().map(|l| l.file()), Some(file!()), "{e}");
    let e = zip_axis_out_of_range::try_call(&xs, &Tensor::zeros(&[4], DType::F32)).unwrap_err();
    assert!(
        e.message()
            .contains("`zip_axis`: tensor 1: axis 1 is out of range for f32[4]"),
        "{e}"
    );
    // Eagerly: the same message, as a panic.
    let p = std::panic::catch_unwind(|| jitfuse::zip_axis((&xs, &ys), 0).len()).unwrap_err();
    let m = crate::common::panic_text(&*p);
    assert!(
        m.contains("tensor 0 f32[4,3] has 4, tensor 1 f32[5] has 5"),
        "{m}"
    );
}

// ---------- the interpreter, the text form, the verifier ----------

#[test]
fn compiled_control_flow_matches_the_interpreter_and_round_trips_as_text() {
    let mut rng = Rng::new(62);
    let xs = random_tensor(&mut rng, &[6, 4], DType::F32, -1.0, 1.0, false);
    let x = random_tensor(&mut rng, &[4], DType::F32, -1.0, 1.0, false);
    let g = trace_fn(&[xs.clone(), x.clone()], |a| {
        let (c, ys) = cumsum(&a[0]);
        let y = cond_body(&(&c + &a[1]));
        let (h, n) = halvings(&(&y * 100.0));
        vec![ys, y, h, n.cast(DType::F32)]
    });
    ir::verify(&g).unwrap();
    let text = g.to_text();
    assert_eq!(
        ir::parse(&text).unwrap().to_text(),
        text,
        "print(parse(print(g))) == print(g)"
    );
    for op in ["= scan[", "= cond ", "= while[", "= get[1]"] {
        assert!(text.contains(op), "{op} in\n{text}");
    }
    // The running sums cancel: normwise; the branch results (exp, x - 1), their halvings
    // (small elements among large ones) and the count do not: relative.
    check_graph_with(&g, &[xs, x], "control flow", |k, want| match k {
        0 => F32_TOL.normwise(want),
        _ => Tol::rel(DType::F32, F32_TOL.rel),
    });
}

#[test]
fn the_verifier_rejects_mismatched_branches() {
    let text = "%0 = param 0 : f32[2]\n%1 = param 1 : bool[]\n%2 = cond %1, %0 : f32[2]\n  {\n    %0 = param 0 : f32[2]\n    return %0\n  }\n  {\n    %0 = param 0 : f32[2]\n    %1 = reduce_sum[0] %0 : f32[]\n    return %1\n  }\nreturn %2\n";
    let g = ir::parse(text).unwrap();
    let err = ir::verify(&g).unwrap_err().to_string();
    assert!(err.contains("branches give (f32[]) and (f32[2])"), "{err}");
}

// ---------- gradients ----------

fn numeric_check(name: &str, f: &dyn Fn(&Tensor) -> Tensor, x: &Tensor) {
    let g = jitfuse::grad(|t: &Tensor| f(t), x).to_vec::<f64>().unwrap();
    let xv = x.to_vec::<f64>().unwrap();
    for i in 0..xv.len() {
        let at = |d: f64| {
            let mut v = xv.clone();
            v[i] += d;
            f(&Tensor::from_vec(v, x.shape()).unwrap())
                .item::<f64>()
                .unwrap()
        };
        let h = 1e-6;
        let num = (at(h) - at(-h)) / (2.0 * h);
        assert!(
            (g[i] - num).abs() <= 1e-5 * (1.0 + num.abs()),
            "{name}: d/dx[{i}] = {}, finite differences {num}",
            g[i]
        );
    }
}

#[test]
fn gradients_through_cond_and_scan_match_finite_differences() {
    let mut rng = Rng::new(63);
    let w = random_tensor(&mut rng, &[3], DType::F64, 0.5, 1.5, false);
    for sign in [1.0, -1.0] {
        let x = random_tensor(&mut rng, &[3], DType::F64, 0.2, 1.0, false) * sign;
        numeric_check(
            "cond",
            &|x| {
                cond(
                    &x.sum_all().gt(0.0),
                    |x: Tensor| (&x * &w).tanh(),
                    |x: Tensor| x.square() * 3.0,
                    x.clone(),
                )
                .sum_all()
            },
            &x,
        );
    }
    let x = random_tensor(&mut rng, &[5, 3], DType::F64, -1.0, 1.0, false);
    numeric_check(
        "scan",
        &|xs| {
            let (c, ys) = scan(
                |c: Tensor, x: Tensor| {
                    let c = (c * &w + x).tanh();
                    (c.clone(), c.square())
                },
                w.zeros_like(),
                xs,
            );
            c.sum_all() + ys.sum_all()
        },
        &x,
    );
    // Through a static fori_loop, differentiating a closed-over weight.
    numeric_check(
        "fori_loop",
        &|w| fori_loop(0, 4, |_, h: Tensor| (&h * w).sin() + &h, w.ones_like()).sum_all(),
        &w,
    );
}

#[test]
fn gradients_through_control_flow_inside_jit() {
    #[jit]
    fn loss_and_grad(w: &Tensor, xs: &Tensor) -> (Tensor, Tensor) {
        value_and_grad(
            |w: &Tensor| {
                let (c, _) = scan(
                    |c: Tensor, x: Tensor| {
                        let c = cond(
                            &x.sum_all().gt(0.0),
                            |c: Tensor| (&c * w).tanh(),
                            |c: Tensor| &c * 0.5,
                            c,
                        ) + &x;
                        (c, ())
                    },
                    w.zeros_like(),
                    xs,
                );
                c.square().sum_all()
            },
            w,
        )
    }
    let mut rng = Rng::new(64);
    let w = random_tensor(&mut rng, &[4], DType::F64, 0.5, 1.5, false);
    let xs = random_tensor(&mut rng, &[6, 4], DType::F64, -1.0, 1.0, false);
    let (l, g) = loss_and_grad(&w, &xs);
    let eager = jitfuse::value_and_grad(
        |w: &Tensor| {
            let (c, _) = scan(
                |c: Tensor, x: Tensor| {
                    let c = cond(
                        &x.sum_all().gt(0.0),
                        |c: Tensor| (&c * w).tanh(),
                        |c: Tensor| &c * 0.5,
                        c,
                    ) + &x;
                    (c, ())
                },
                w.zeros_like(),
                &xs,
            );
            c.square().sum_all()
        },
        &w,
    );
    let tol = Tol {
        rel: 1e-12,
        abs: 1e-12,
    };
    assert_close(&l, &eager.0, tol, "value");
    assert_close(&g, &eager.1, tol, "gradient");
}

#[test]
fn while_loops_are_not_reverse_differentiable() {
    #[jit]
    fn g(x: &Tensor) -> Tensor {
        jitfuse::grad(|x: &Tensor| halvings(x).0.sum_all(), x)
    }
    let err = g::try_call(&vec_f32(&[4.0])).unwrap_err().to_string();
    assert!(err.contains("not reverse-differentiable"), "{err}");
}

/// Nested control flow on random shapes: a `while` whose body holds a `cond`
/// whose then-branch holds a `scan`, compiled against the interpreter.
#[test]
fn nested_control_flow_on_random_shapes_matches_the_interpreter() {
    let mut rng = Rng::new(65);
    for case in 0..12 {
        let rows = 1 + rng.below(9);
        let cols = [1, 3, 4, 5, 17, 33][rng.below(6)];
        let dtype = if case % 2 == 0 {
            DType::F32
        } else {
            DType::F64
        };
        let xs = random_tensor(&mut rng, &[rows, cols], dtype, -1.0, 1.0, false);
        let x = random_tensor(&mut rng, &[cols], dtype, -2.0, 2.0, false);
        let g = trace_fn(&[xs.clone(), x.clone()], |a| {
            let (xs, x) = (a[0].clone(), a[1].clone());
            let (y, n) = while_loop(
                |s: &(Tensor, Tensor)| s.0.abs().max_all().gt(0.05).logical_and(&s.1.lt(12)),
                |(y, n)| {
                    let y = cond(
                        &y.sum_all().gt(0.0),
                        |y: Tensor| {
                            let (c, _) = scan(
                                |c: Tensor, r: Tensor| ((&c * 0.5 + r * 0.01).tanh(), ()),
                                y,
                                &xs,
                            );
                            c
                        },
                        |y: Tensor| &y * -0.4,
                        y,
                    );
                    (y, n + 1)
                },
                (x, Tensor::scalar(0i64)),
            );
            let (_, ys) = cumsum(&xs);
            vec![y, n, ys]
        });
        ir::verify(&g).unwrap();
        // The loop ends once every |y| is at most 0.05: an absolute floor of 2e-5 was 4e-4 of
        // its scale. Normwise (tanh of sums that cancel), on each output's own scale.
        let tol = if dtype == DType::F32 {
            Tol {
                rel: 2e-5,
                abs: 2e-6,
            }
        } else {
            Tol {
                rel: 1e-12,
                abs: 1e-13,
            }
        };
        check_graph_with(&g, &[xs, x], &format!("nested case {case}"), |_, want| {
            tol.normwise(want)
        });
    }
}

#[test]
fn control_flow_inside_a_checkpoint_region_differentiates() {
    let mut rng = Rng::new(66);
    let w = random_tensor(&mut rng, &[3], DType::F64, 0.5, 1.5, false);
    let x = random_tensor(&mut rng, &[4, 3], DType::F64, -1.0, 1.0, false);
    let f = |x: &Tensor| {
        jitfuse::checkpoint_with(
            Policy::NothingSaveable,
            |x: &Tensor| {
                let (c, ys) = scan(
                    |c: Tensor, r: Tensor| {
                        let c = (c * &w + r).sin();
                        (c.clone(), c.exp())
                    },
                    w.zeros_like(),
                    x,
                );
                c.sum_all() + ys.square().sum_all()
            },
            x,
        )
    };
    numeric_check("checkpointed scan", &f, &x);
    #[jit]
    fn jitted(x: &Tensor, w: &Tensor) -> Tensor {
        jitfuse::grad(
            |x: &Tensor| {
                jitfuse::checkpoint(
                    |x: &Tensor| {
                        let (c, _) = scan(
                            |c: Tensor, r: Tensor| ((c * w + r).sin(), ()),
                            w.zeros_like(),
                            x,
                        );
                        c.sum_all()
                    },
                    x,
                )
            },
            x,
        )
    }
    let g = jitted(&x, &w);
    let want = jitfuse::grad(
        |x: &Tensor| {
            let (c, _) = scan(
                |c: Tensor, r: Tensor| ((c * &w + r).sin(), ()),
                w.zeros_like(),
                x,
            );
            c.sum_all()
        },
        &x,
    );
    assert_close(
        &g,
        &want,
        Tol {
            rel: 1e-12,
            abs: 1e-12,
        },
        "jitted checkpointed scan",
    );
}

// ---------- the macro's rewriting of ordinary Rust control flow ----------

#[jit]
fn piecewise(x: &Tensor) -> Tensor {
    let s = x.sum_all();
    let y;
    if s.gt(1.0) {
        y = x * 2.0;
    } else if s.lt(-1.0) {
        y = x.exp();
    } else {
        y = x - 1.0;
    }
    y
}

fn piecewise_ref(x: &Tensor) -> Tensor {
    let s = x.sum_all().item::<f64>().unwrap();
    if s > 1.0 {
        x * 2.0
    } else if s < -1.0 {
        x.exp()
    } else {
        x - 1.0
    }
}

#[jit]
fn nested_rust(x: &Tensor, m: &Tensor) -> (Tensor, Tensor) {
    let mut h = x.clone();
    let mut k = Tensor::scalar(0i32);
    while h.abs().max_all().gt(0.1).logical_and(&k.lt(20)) {
        for row in m.iter_axis(0) {
            if row.sum_all().gt(0.0) {
                h = (&h * &row).tanh();
            } else {
                h = &h * 0.5;
            }
        }
        k = k + 1;
    }
    (h, k)
}

fn nested_ref(x: &Tensor, m: &Tensor) -> (Tensor, i32) {
    let mut h = x.clone();
    let mut k = 0;
    while h.abs().max_all().item::<f64>().unwrap() > 0.1 && k < 20 {
        for i in 0..m.shape()[0] {
            let row = m.slice_axis(0, i as isize, i as isize + 1, 1).squeeze(&[0]);
            if row.sum_all().item::<f64>().unwrap() > 0.0 {
                h = (&h * &row).tanh();
            } else {
                h = &h * 0.5;
            }
        }
        k += 1;
    }
    (h, k)
}

#[test]
fn rust_if_while_for_on_traced_conditions_match_plain_rust() {
    let mut rng = Rng::new(67);
    for case in 0..16 {
        let n = [1, 3, 4, 9, 33][case % 5];
        let x = random_tensor(&mut rng, &[n], DType::F64, -1.5, 1.5, false);
        assert_close(
            &piecewise(&x),
            &piecewise_ref(&x),
            Tol {
                rel: 1e-15,
                abs: 1e-15,
            },
            "if / else if / else",
        );
        let rows = 1 + rng.below(4);
        let m = random_tensor(&mut rng, &[rows, n], DType::F64, -1.2, 1.2, false);
        let (h, k) = nested_rust(&x, &m);
        let (eh, ek) = nested_ref(&x, &m);
        assert_eq!(k.item::<i32>().unwrap(), ek, "case {case}: iterations");
        assert_close(
            &h,
            &eh,
            Tol {
                rel: 1e-12,
                abs: 1e-12,
            },
            "nested while/for/if",
        );
    }
    assert_eq!(piecewise::cache_stats().misses, 5, "one program per shape");
    let text = nested_rust::lower(&vec_f32(&[1.0]), &Tensor::ones(&[2, 1], DType::F32))
        .unwrap()
        .as_text();
    for op in ["= while[", "= scan[", "= cond "] {
        assert!(text.contains(op), "{op} in\n{text}");
    }
}

#[jit]
fn staged_grad(w: &Tensor, xs: &Tensor) -> Tensor {
    jitfuse::grad(
        |w: &Tensor| {
            let mut h = w.zeros_like();
            for x in xs.iter_axis(0) {
                if x.sum_all().gt(0.0) {
                    h = (&h * w + &x).tanh();
                } else {
                    h = &h - &x * w;
                }
            }
            h.square().sum_all()
        },
        w,
    )
}

#[test]
fn gradients_through_rust_if_and_for_match_finite_differences() {
    let mut rng = Rng::new(68);
    let w = random_tensor(&mut rng, &[3], DType::F64, 0.5, 1.5, false);
    let xs = random_tensor(&mut rng, &[5, 3], DType::F64, -1.0, 1.0, false);
    let f = |w: &Tensor| {
        let mut h = w.zeros_like();
        for i in 0..5 {
            let x = xs.slice_axis(0, i, i + 1, 1).squeeze(&[0]);
            h = if x.sum_all().item::<f64>().unwrap() > 0.0 {
                (&h * w + &x).tanh()
            } else {
                &h - &x * w
            };
        }
        h.square().sum_all()
    };
    let g = staged_grad(&w, &xs);
    let want = jitfuse::grad(|w: &Tensor| f(w), &w);
    assert_close(
        &g,
        &want,
        Tol {
            rel: 1e-12,
            abs: 1e-12,
        },
        "staged gradient",
    );
    numeric_check("rust if/for", &f, &w);
}

#[jit]
fn rust_for_ranges(x: &Tensor, lo: &Tensor, hi: &Tensor, n: usize) -> Tensor {
    let mut acc = x.zeros_like();
    for i in lo..hi {
        acc = acc + x * i.cast(DType::F32);
    }
    for i in lo..=hi {
        acc = acc + i.cast(DType::F32);
    }
    for k in 0..n {
        acc = acc * 0.5 + k as f64;
    }
    acc
}

#[test]
fn rust_for_over_tensor_ranges_and_usize_ranges() {
    let x = vec_f32(&[1.0, -2.0]);
    for (lo, hi) in [(0i32, 3i32), (2, 2), (4, 1)] {
        let got = rust_for_ranges(&x, &Tensor::scalar(lo), &Tensor::scalar(hi), 3);
        let mut want = vec![0.0f32; 2];
        for (w, xv) in want.iter_mut().zip([1.0f32, -2.0]) {
            for i in lo..hi {
                *w += xv * i as f32;
            }
            for i in lo..=hi {
                *w += i as f32;
            }
            for k in 0..3 {
                *w = *w * 0.5 + k as f32;
            }
        }
        assert_eq!(got.to_vec::<f32>().unwrap(), want, "{lo}..{hi}");
    }
    let text = rust_for_ranges::lower(&x, &Tensor::scalar(0i32), &Tensor::scalar(1i32), 3)
        .unwrap()
        .as_text();
    let traced = text.split("// ----").nth(1).unwrap();
    assert!(traced.starts_with(" traced graph"), "{text}");
    assert_eq!(traced.matches("= while[").count(), 2, "{text}");
}

/// Loop-carried buffers are reused across iterations: the body of a `while`
/// and of a `scan` writes the new state into the old state's buffer (its
/// carried parameters are donated from the second iteration on).
#[jit]
fn halvings_for_plans(x: &Tensor) -> (Tensor, Tensor) {
    halvings(x)
}

#[jit]
fn cumsum_for_plans(xs: &Tensor) -> (Tensor, Tensor) {
    cumsum(xs)
}

#[test]
fn loop_bodies_write_the_new_state_over_the_old() {
    // Varied values: a body writing its new state over the old one before it has read all
    // of it would give wrong elements, which a constant input cannot show.
    let x = Tensor::from_vec(
        (0..4096).map(|i| 0.25 + (i % 97) as f32 * 0.75).collect(),
        &[4096],
    )
    .unwrap();
    let c = halvings_for_plans::lower(&x).unwrap().compile().unwrap();
    let subs = c.executable().sub_programs();
    assert_eq!(subs.len(), 2, "condition and body");
    let donated: Vec<usize> = subs[1]
        .buffer_plan()
        .donations
        .iter()
        .map(|d| d.0)
        .collect();
    assert!(donated.contains(&0), "x / 2 is written over x: {donated:?}");
    assert!(donated.contains(&1), "n + 1 is written over n: {donated:?}");
    // And the program so planned computes what the eager loop does.
    let (y, n) = halvings_for_plans(&x);
    let (ey, en) = halvings(&x);
    assert_eq!(
        n.item::<i32>().unwrap(),
        7,
        "72.25 halves to 0.56 in 7 steps"
    );
    assert_eq!(en.item::<i32>().unwrap(), 7);
    assert_close(&y, &ey, EXACT, "halvings over donated buffers");
    let mut rng = Rng::new(69);
    let xs = random_tensor(&mut rng, &[8, 4096], DType::F32, -1.0, 1.0, false);
    let c = cumsum_for_plans::lower(&xs).unwrap().compile().unwrap();
    let body = c.executable().sub_programs()[0];
    let donated: Vec<usize> = body.buffer_plan().donations.iter().map(|d| d.0).collect();
    assert_eq!(donated, vec![0], "the carry c + x is written over c");
    let (carry, ys) = cumsum_for_plans(&xs);
    let (ec, eys) = cumsum(&xs);
    assert_close(&carry, &ec, EXACT, "cumsum carry over donated buffers");
    assert_close(&ys, &eys, EXACT, "cumsum rows over donated buffers");
    // Two loops' worth of state plus the body's arena is what the program
    // reports beyond its own arena.
    let m = c.memory_analysis();
    assert!(m.temp_bytes >= 2 * 4096 * 4, "{m:?}");
}
