//! `softmax_cross_entropy_with_labels`: the loss from integer labels, against an f64
//! reference written here and against the one-hot form, eagerly and jitted, its
//! gradient, that the compiled gradient builds no one-hot matrix, and its errors.

use crate::common::{assert_close, random_tensor, to_f64s, Rng, Tol};
use jitfuse::prelude::*;

#[jit]
fn loss(logits: &Tensor, labels: &Tensor) -> Tensor {
    softmax_cross_entropy_with_labels(logits, labels)
}

#[jit]
fn loss_grad(logits: &Tensor, labels: &Tensor) -> (Tensor, Tensor) {
    value_and_grad(
        |x: &Tensor| softmax_cross_entropy_with_labels(x, labels),
        logits,
    )
}

/// The mean over rows of `logsumexp(x_r) - x_r[label_r]` and its gradient
/// `(softmax(x_r) - one_hot(label_r)) / rows`, in f64.
fn reference(x: &[f64], labels: &[i64], classes: usize) -> (f64, Vec<f64>) {
    let rows = labels.len();
    let mut total = 0.0;
    let mut grad = vec![0.0; x.len()];
    for (r, &l) in labels.iter().enumerate() {
        let row = &x[r * classes..(r + 1) * classes];
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = row.iter().map(|v| (v - m).exp()).sum();
        total += m + z.ln() - row[l as usize];
        for c in 0..classes {
            let p = (row[c] - m).exp() / z;
            grad[r * classes + c] = (p - if c == l as usize { 1.0 } else { 0.0 }) / rows as f64;
        }
    }
    (total / rows as f64, grad)
}

fn labels_for(rng: &mut Rng, shape: &[usize], classes: usize, dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<i64> = (0..n).map(|_| rng.below(classes) as i64).collect();
    Tensor::from_vec(v, shape).unwrap().cast(dtype)
}

#[test]
fn cross_entropy_from_labels_matches_the_reference_and_the_one_hot_form() {
    let mut rng = Rng::new(91);
    for (shape, classes) in [
        (vec![7], 33),
        (vec![2, 3], 5),
        (vec![1], 1),
        (vec![4, 2], 65),
    ] {
        for d in [DType::F32, DType::F64] {
            for ld in [DType::I32, DType::I64] {
                let mut xs = shape.clone();
                xs.push(classes);
                let x = random_tensor(&mut rng, &xs, d, -6.0, 6.0, false);
                let y = labels_for(&mut rng, &shape, classes, ld);
                let what = format!("{d} logits {xs:?}, {ld} labels");
                let (want, want_grad) = reference(
                    &to_f64s(&x),
                    &to_f64s(&y).iter().map(|&v| v as i64).collect::<Vec<_>>(),
                    classes,
                );
                let want = Tensor::scalar(want).cast(d);
                let want_grad = Tensor::from_vec(want_grad, &xs).unwrap().cast(d);
                let tol = Tol::rel(d, if d == DType::F32 { 2e-5 } else { 1e-12 });
                let grad_tol = Tol {
                    rel: tol.rel,
                    abs: tol.rel,
                }
                .normwise(&want_grad);
                assert_close(
                    &softmax_cross_entropy_with_labels(&x, &y),
                    &want,
                    tol,
                    &format!("eager {what}"),
                );
                assert_close(&loss(&x, &y), &want, tol, &format!("jitted {what}"));
                let one_hot = softmax_cross_entropy(&x, &y.one_hot_as(classes, d));
                assert_close(&one_hot, &want, tol, &format!("one-hot form {what}"));
                let (l, g) = loss_grad(&x, &y);
                assert_close(&l, &want, tol, &format!("value of the gradient {what}"));
                assert_close(&g, &want_grad, grad_tol, &format!("gradient {what}"));
                let eager_grad = grad(|x: &Tensor| softmax_cross_entropy_with_labels(x, &y), &x);
                assert_close(
                    &eager_grad,
                    &want_grad,
                    grad_tol,
                    &format!("eager gradient {what}"),
                );
            }
        }
    }
}

/// The compiled gradient holds nothing of the `[rows, classes]` one-hot shape but the
/// logits and their gradient: no boolean or integer matrix, no class iota.
#[test]
fn the_compiled_gradient_builds_no_one_hot_matrix() {
    let (rows, classes) = (768, 65);
    let mut rng = Rng::new(92);
    let x = random_tensor(&mut rng, &[rows, classes], DType::F32, -3.0, 3.0, false);
    let y = labels_for(&mut rng, &[rows], classes, DType::I32);
    let text = loss_grad::lower(&x, &y).unwrap().as_text();
    let matrix = format!("[{rows},{classes}]");
    for line in text
        .lines()
        .filter(|l| l.contains(&matrix) && !l.starts_with("//"))
    {
        assert!(
            line.contains("f32")
                && !line.contains("i32")
                && !line.contains("bool")
                && !line.contains("iota"),
            "one-hot sized non-float value in the gradient: {line}\n{text}"
        );
    }
    assert!(text.contains("scatter_add"), "{text}");
    let exe = loss_grad::lower(&x, &y).unwrap().compile().unwrap();
    let m = exe.memory_analysis();
    // Temporaries: the exponentials (scaled in place into the softmax part of the
    // gradient), the scatter-add's `[rows * classes]` result, and its grouping scratch:
    // the `rows` indices sorted, 16 bytes each (not a counting sort over every logit).
    let matrix_bytes = rows * classes * 4;
    let scratch = rows * 16;
    assert!(m.temp_bytes <= 2 * matrix_bytes + scratch, "{m:?}");
}

#[test]
fn out_of_range_labels_are_an_error_eagerly_and_nan_when_traced() {
    let x = Tensor::zeros(&[3, 4], DType::F32);
    let bad = Tensor::from_vec(vec![0i32, 4, 1], &[3]).unwrap();
    let err = |f: &dyn Fn() -> Tensor| {
        let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("an error");
        p.downcast_ref::<String>().cloned().unwrap_or_default()
    };
    let e = err(&|| softmax_cross_entropy_with_labels(&x, &bad));
    assert!(
        e.contains("`softmax_cross_entropy_with_labels`")
            && e.contains("label 4 of row 1")
            && e.contains("0..4"),
        "{e}"
    );
    let neg = Tensor::from_vec(vec![0i32, 1, -1], &[3]).unwrap();
    assert!(err(&|| softmax_cross_entropy_with_labels(&x, &neg)).contains("label -1 of row 2"));
    // Traced, the values are not known: the loss is NaN, never a number from a clamped label.
    assert!(loss(&x, &bad).to_vec::<f32>().unwrap()[0].is_nan());
    let good = Tensor::from_vec(vec![0i32, 3, 1], &[3]).unwrap();
    let l = loss(&x, &good).to_vec::<f32>().unwrap()[0];
    assert!((l - 4f32.ln()).abs() < 1e-6, "{l}");

    let e = err(&|| softmax_cross_entropy_with_labels(&x, &Tensor::zeros(&[4], DType::I32)));
    assert!(
        e.contains("f32[3,4]") && e.contains("i32[4]") && e.contains("without its last"),
        "{e}"
    );
    let e = err(&|| softmax_cross_entropy_with_labels(&x, &Tensor::zeros(&[3], DType::F32)));
    assert!(
        e.contains("labels i32 or i64") && e.contains("f32[3]"),
        "{e}"
    );
    let e = err(&|| softmax_cross_entropy_with_labels(&Tensor::zeros(&[3, 0], DType::F32), &good));
    assert!(e.contains("no classes"), "{e}");
}

/// A row whose label is out of range (only possible traced: concrete labels are checked)
/// has a NaN loss, and so a NaN gradient in that row, like its loss: it was 0 there (the
/// NaN was selected in after the row's loss, so no cotangent reached its logits), which
/// reads as "this row is already perfect". The other rows keep their exact gradient (an
/// out-of-range label must not reach into a neighbouring row's logits either). Compiled
/// (`#[jit]` and the traced graph compiled), in the interpreter, and replayed eagerly op
/// by op (compiled and interpreted); f32 and f64, i32 and i64 labels.
#[test]
fn an_out_of_range_label_makes_its_rows_gradient_nan_like_its_loss() {
    use jitfuse::internals::{exec::Executable, interpret, trace};
    let (rows, classes) = (5, 4);
    let mut rng = Rng::new(93);
    // Rows 1 and 3 out of range (above and below), the others in range; and all in range.
    for (labels, bad_rows) in [
        (vec![0i64, 4, 3, -1, 2], vec![1, 3]),
        (vec![9, 0, 1, 2, 3], vec![0]),
        (vec![0, 1, 2, 3, 1], vec![]),
    ] {
        for d in [DType::F32, DType::F64] {
            for ld in [DType::I32, DType::I64] {
                let x = random_tensor(&mut rng, &[rows, classes], d, -3.0, 3.0, false);
                let y = Tensor::from_vec(labels.clone(), &[rows]).unwrap().cast(ld);
                let what = format!("{d} logits, {ld} labels {labels:?}");
                // The reference over the valid rows, divided by all the rows.
                let xs = to_f64s(&x);
                let mut want = vec![f64::NAN; rows * classes];
                for r in (0..rows).filter(|r| !bad_rows.contains(r)) {
                    let one = &xs[r * classes..(r + 1) * classes];
                    let (_, g) = reference(one, &[labels[r]], classes);
                    for c in 0..classes {
                        want[r * classes + c] = g[c] / rows as f64;
                    }
                }
                let specs: Vec<trace::ParamSpec> = [&x, &y]
                    .iter()
                    .map(|t| trace::ParamSpec {
                        shape: t.shape().to_vec(),
                        dtype: t.dtype(),
                        weak: false,
                    })
                    .collect();
                let traced = trace::trace(&specs, |ts| {
                    let (l, g) = value_and_grad(
                        |x: &Tensor| softmax_cross_entropy_with_labels(x, &ts[1]),
                        &ts[0],
                    );
                    vec![l, g]
                })
                .unwrap();
                let args = [x.clone(), y.clone()];
                let g = &traced.graph;
                let exe =
                    Executable::from_graph(traced.graph.clone(), traced.captured.clone()).unwrap();
                let results = [
                    ("jitted", {
                        let (l, g) = loss_grad(&x, &y);
                        vec![l, g]
                    }),
                    ("compiled graph", exe.run_with(&[&x, &y]).unwrap()),
                    (
                        "interpreter",
                        interpret::eval_graph(g, &args, &traced.captured).unwrap(),
                    ),
                    ("eager replay", {
                        let v = jitfuse::autodiff::replay(g, &args, &traced.captured);
                        g.outputs.iter().map(|o| v[o.index()].clone()).collect()
                    }),
                    ("interpreted replay", {
                        let v = jitfuse::eager::interpreted(|| {
                            jitfuse::autodiff::replay(g, &args, &traced.captured)
                        });
                        g.outputs.iter().map(|o| v[o.index()].clone()).collect()
                    }),
                ];
                for (how, out) in results {
                    let loss = to_f64s(&out[0])[0];
                    assert_eq!(
                        loss.is_nan(),
                        !bad_rows.is_empty(),
                        "{how}, {what}: loss {loss}"
                    );
                    let got = to_f64s(&out[1]);
                    let tol = if d == DType::F32 { 1e-6 } else { 1e-14 };
                    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (a.is_nan() && b.is_nan()) || (a - b).abs() <= tol,
                            "{how}, {what}: gradient [{}, {}] is {a}, want {b}\n{got:?}",
                            i / classes,
                            i % classes
                        );
                    }
                }
            }
        }
    }
}
