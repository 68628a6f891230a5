//! Batch norm (training and evaluation), group norm, dropout and the `nn` layers: values
//! against formulas computed here in f64, gradients against central differences, the
//! running statistics' update, dropout's mask eagerly and jitted, a `#[jit]` training step
//! of a small conv net with batch norm and pooling, and errors.

use crate::common::*;
use jitfuse::nn::{BatchNorm, BatchStats, Conv, Dense, GroupNorm};
use jitfuse::prelude::*;
use jitfuse::{
    batch_norm_eval, batch_norm_train, dropout, group_norm, max_pool, ConvOptions, Padding,
};

fn f64s(t: &Tensor) -> Vec<f64> {
    t.cast(DType::F64).to_vec::<f64>().unwrap()
}

/// Per-feature mean and biased variance of channels-last `x` over every other axis.
fn stats(x: &[f64], c: usize) -> (Vec<f64>, Vec<f64>) {
    let n = x.len() / c;
    let mean: Vec<f64> = (0..c)
        .map(|f| (0..n).map(|i| x[i * c + f]).sum::<f64>() / n as f64)
        .collect();
    let var = (0..c)
        .map(|f| {
            (0..n)
                .map(|i| (x[i * c + f] - mean[f]).powi(2))
                .sum::<f64>()
                / n as f64
        })
        .collect();
    (mean, var)
}

#[test]
fn batch_norm_normalises_by_the_batch_and_updates_the_running_averages() {
    let mut rng = Rng::new(350);
    let c = 5;
    let x = random_tensor(&mut rng, &[4, 3, 2, c], DType::F64, -2.0, 3.0, false);
    let scale = random_tensor(&mut rng, &[c], DType::F64, 0.5, 1.5, false);
    let bias = random_tensor(&mut rng, &[c], DType::F64, -1.0, 1.0, false);
    let rm = random_tensor(&mut rng, &[c], DType::F64, -1.0, 1.0, false);
    let rv = random_tensor(&mut rng, &[c], DType::F64, 0.5, 2.0, false);
    let (y, m, v) = batch_norm_train(&x, &scale, &bias, (&rm, &rv), 0.9, 1e-5);
    let (xv, sv, bv) = (f64s(&x), f64s(&scale), f64s(&bias));
    let (mean, var) = stats(&xv, c);
    let want: Vec<f64> = xv
        .iter()
        .enumerate()
        .map(|(i, &e)| {
            let f = i % c;
            (e - mean[f]) / (var[f] + 1e-5).sqrt() * sv[f] + bv[f]
        })
        .collect();
    let tol = float_tol(DType::F64);
    assert_close(&y, &Tensor::from_vec(want, x.shape()).unwrap(), tol, "y");
    let upd = |run: &Tensor, batch: &[f64]| {
        let r = f64s(run);
        let v: Vec<f64> = (0..c).map(|f| 0.9 * r[f] + 0.1 * batch[f]).collect();
        Tensor::from_vec(v, &[c]).unwrap()
    };
    assert_close(&m, &upd(&rm, &mean), tol, "running mean");
    assert_close(&v, &upd(&rv, &var), tol, "running variance");
    // Evaluation: the same formula on the given statistics.
    let e = batch_norm_eval(&x, &scale, &bias, (&rm, &rv), 1e-3);
    let (rmv, rvv) = (f64s(&rm), f64s(&rv));
    let want: Vec<f64> = xv
        .iter()
        .enumerate()
        .map(|(i, &e)| {
            let f = i % c;
            (e - rmv[f]) / (rvv[f] + 1e-3).sqrt() * sv[f] + bv[f]
        })
        .collect();
    assert_close(&e, &Tensor::from_vec(want, x.shape()).unwrap(), tol, "eval");
}

#[test]
fn group_norm_normalises_each_example_and_group() {
    let mut rng = Rng::new(351);
    let (n, s, c, g) = (2, 6, 6, 3);
    let x = random_tensor(&mut rng, &[n, 2, 3, c], DType::F64, -2.0, 3.0, false);
    let scale = random_tensor(&mut rng, &[c], DType::F64, 0.5, 1.5, false);
    let bias = random_tensor(&mut rng, &[c], DType::F64, -1.0, 1.0, false);
    let y = f64s(&group_norm(&x, g, &scale, &bias, 1e-5));
    let (xv, sv, bv) = (f64s(&x), f64s(&scale), f64s(&bias));
    let per = c / g;
    for b in 0..n {
        for k in 0..g {
            let idx: Vec<usize> = (0..s)
                .flat_map(|p| (0..per).map(move |f| b * s * c + p * c + k * per + f))
                .collect();
            let mean = idx.iter().map(|&i| xv[i]).sum::<f64>() / idx.len() as f64;
            let var = idx.iter().map(|&i| (xv[i] - mean).powi(2)).sum::<f64>() / idx.len() as f64;
            for &i in &idx {
                let f = i % c;
                let want = (xv[i] - mean) / (var + 1e-5).sqrt() * sv[f] + bv[f];
                assert!(
                    (y[i] - want).abs() < 1e-10,
                    "example {b} group {k}: {} vs {want}",
                    y[i]
                );
            }
        }
    }
}

/// Gradients of both norms with respect to the input and both parameters against central
/// differences in f64.
#[test]
fn norm_gradients_match_central_differences() {
    let mut rng = Rng::new(352);
    let c = 4;
    let x = random_tensor(&mut rng, &[3, 2, 3, c], DType::F64, -2.0, 2.0, false);
    let scale = random_tensor(&mut rng, &[c], DType::F64, 0.5, 1.5, false);
    let bias = random_tensor(&mut rng, &[c], DType::F64, -1.0, 1.0, false);
    let r = random_tensor(&mut rng, x.shape(), DType::F64, -1.0, 1.0, false);
    let (rm, rv) = (
        Tensor::zeros(&[c], DType::F64),
        Tensor::ones(&[c], DType::F64),
    );
    type Loss<'a> = Box<dyn Fn(&(Tensor, Tensor, Tensor)) -> Tensor + 'a>;
    let losses: Vec<(&str, Loss)> = vec![
        (
            "batch_norm_train",
            Box::new(|(x, s, b): &(Tensor, Tensor, Tensor)| {
                (batch_norm_train(x, s, b, (&rm, &rv), 0.9, 1e-5).0 * &r).sum_all()
            }),
        ),
        (
            "group_norm",
            Box::new(|(x, s, b): &(Tensor, Tensor, Tensor)| {
                (group_norm(x, 2, s, b, 1e-5) * &r).sum_all()
            }),
        ),
    ];
    for (name, loss) in &losses {
        let p = (x.clone(), scale.clone(), bias.clone());
        let g = grad(|p: &(Tensor, Tensor, Tensor)| loss(p), &p);
        let parts = [(&p.0, &g.0), (&p.1, &g.1), (&p.2, &g.2)];
        for (which, (t, gt)) in parts.into_iter().enumerate() {
            let (vals, gv) = (f64s(t), f64s(gt));
            for _ in 0..5 {
                let e = rng.below(vals.len());
                let at = |delta: f64| {
                    let mut v = vals.clone();
                    v[e] += delta;
                    let moved = Tensor::from_vec(v, t.shape()).unwrap();
                    let mut q = p.clone();
                    match which {
                        0 => q.0 = moved,
                        1 => q.1 = moved,
                        _ => q.2 = moved,
                    }
                    loss(&q).to_vec::<f64>().unwrap()[0]
                };
                let fd = (at(1e-5) - at(-1e-5)) / 2e-5;
                assert!(
                    (fd - gv[e]).abs() <= 1e-6 * (1.0 + fd.abs()),
                    "{name} operand {which} element {e}: {} vs {fd}",
                    gv[e]
                );
            }
        }
    }
}

#[jit]
fn jitted_dropout(key: &Key, x: &Tensor) -> Tensor {
    dropout(key, x, 0.25)
}

#[test]
fn dropout_keeps_a_fraction_scaled_and_the_same_mask_eagerly_and_jitted() {
    let x = Tensor::ones(&[64, 1024], DType::F32);
    let key = Key::new(7);
    let y = dropout(&key, &x, 0.25);
    let v = y.to_vec::<f32>().unwrap();
    let kept = v.iter().filter(|&&e| e != 0.0).count();
    assert!(
        v.iter().all(|&e| e == 0.0 || e == 1.0 / 0.75),
        "kept values scaled by 1/(1 - rate)"
    );
    // 65,536 draws: the kept fraction is 0.75 within 5 standard deviations (0.0085).
    let frac = kept as f64 / v.len() as f64;
    assert!((frac - 0.75).abs() < 0.0085, "kept {frac}");
    assert_eq!(bits(&jitted_dropout(&key, &x)), bits(&y));
    // Another key, another mask; rate 0 is the identity.
    assert_ne!(bits(&dropout(&Key::new(8), &x, 0.25)), bits(&y));
    assert_eq!(bits(&dropout(&key, &x, 0.0)), bits(&x));
    let e =
        std::panic::catch_unwind(|| dropout(&Key::new(1), &Tensor::ones(&[2], DType::F32), 1.0))
            .err()
            .map(|e| panic_text(&*e))
            .unwrap_or_default();
    assert!(e.contains("`dropout`") && e.contains("[0, 1)"), "{e}");
}

#[test]
fn norms_refuse_parameters_of_the_wrong_shape() {
    let x = Tensor::ones(&[2, 4, 4, 6], DType::F32);
    let (s, b) = (
        Tensor::ones(&[6], DType::F32),
        Tensor::zeros(&[5], DType::F32),
    );
    let e = std::panic::catch_unwind(|| group_norm(&x, 2, &s, &b, 1e-5))
        .err()
        .map(|e| panic_text(&*e))
        .unwrap_or_default();
    assert!(
        e.contains("`group_norm`") && e.contains("f32[5]") && e.contains("f32[6]"),
        "{e}"
    );
    let e = std::panic::catch_unwind(|| group_norm(&x, 4, &s, &s, 1e-5))
        .err()
        .map(|e| panic_text(&*e))
        .unwrap_or_default();
    assert!(e.contains("4 groups do not divide the 6 features"), "{e}");
}

/// A small conv net: conv + batch norm + ReLU + max pool + dense.
#[derive(Tree, Clone, Debug)]
struct Net {
    conv: Conv,
    bn: BatchNorm,
    gn: GroupNorm,
    dense: Dense,
}

fn net_logits(p: &Net, stats: &BatchStats, x: &Tensor) -> (Tensor, BatchStats) {
    let same = ConvOptions {
        padding: Padding::Same,
        ..Default::default()
    };
    let h = p.conv.apply(x, same);
    let (h, stats) = p.bn.train(&h, stats);
    let h = max_pool(&p.gn.apply(&h.relu(), 2), &[2, 2], Default::default());
    let n = h.shape()[0] as isize;
    (p.dense.apply(&h.reshape(&[n, -1])), stats)
}

/// The loss's gradient and the updated statistics from one forward pass
/// (`value_and_grad_with_aux`).
#[jit]
fn net_step(p: Net, stats: &BatchStats, x: &Tensor, labels: &Tensor) -> (Net, BatchStats, Tensor) {
    let ((l, stats), g) = value_and_grad_with_aux(
        |p: &Net| {
            let (z, stats) = net_logits(p, stats, x);
            (softmax_cross_entropy_with_labels(&z, labels), stats)
        },
        &p,
    );
    (p.zip_map(&g, |w, dw| w - 0.1 * dw), stats, l)
}

/// The jitted step equals the eager step (the same ops, compiled as one program), and the
/// loss falls on a fixed batch.
#[test]
fn a_conv_net_step_with_batch_norm_trains_and_matches_its_eager_self() {
    let key = Key::new(3);
    let k = key.split(4);
    let (bn, stats) = BatchNorm::init(4);
    let p = Net {
        conv: Conv::init_without_bias(&k[0], &[3, 3], 2, 4),
        bn,
        gn: GroupNorm::init(4),
        dense: Dense::init(&k[1], 4 * 4 * 4, 3),
    };
    assert_eq!(p.conv.w.shape(), &[3, 3, 2, 4]);
    let bound = 1.0 / (18.0f32).sqrt();
    assert!(p
        .conv
        .w
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|v| v.abs() <= bound));
    let x = random::normal(&k[2], &[6, 8, 8, 2], DType::F32);
    let labels = Tensor::from_vec(vec![0i32, 1, 2, 0, 1, 2], &[6]).unwrap();
    let eager = {
        let (l, g) = value_and_grad(
            |p: &Net| softmax_cross_entropy_with_labels(&net_logits(p, &stats, &x).0, &labels),
            &p,
        );
        (p.zip_map(&g, |w, dw| w - 0.1 * dw), l)
    };
    let (mut q, mut s, l0) = net_step(p.clone(), &stats, &x, &labels);
    assert_close(&l0, &eager.1, float_tol(DType::F32), "loss");
    for (a, b) in q.leaves().iter().zip(eager.0.leaves()) {
        assert_close(a, &b, float_norm_tol(DType::F32, &b), "updated parameter");
    }
    // The auxiliary statistics are the forward pass's: as a separate eager forward gives.
    let (_, want) = net_logits(&p, &stats, &x);
    assert_close(&s.mean, &want.mean, float_tol(DType::F32), "running mean");
    assert_close(&s.var, &want.var, float_tol(DType::F32), "running variance");
    assert!(f64s(&s.mean).iter().any(|&m| m != 0.0));
    let mut last = f32::INFINITY;
    for _ in 0..20 {
        let (q2, s2, l) = net_step(q, &s, &x, &labels);
        (q, s) = (q2, s2);
        last = l.item::<f32>().unwrap();
    }
    assert!(
        last < 0.5 * l0.item::<f32>().unwrap(),
        "loss {l0} -> {last}"
    );
    assert_eq!(net_step::cache_stats().misses, 1);
}

/// The gradient of a training batch norm sums over the batch twice, `Σ g` and
/// `Σ g · (x - mean)`, as PyTorch's and XLA's hand-written gradients do (the mean's
/// cotangent `-k · Σ g` reuses the bias's sum), and the forward three times: `Σ x` for a
/// first estimate of the mean, then the deviations' `Σ d` and `Σ d²` (one pass). And it
/// still matches the interpreter.
#[test]
fn batch_norm_sums_over_the_batch_three_times_forward_and_twice_backward() {
    let mut rng = Rng::new(353);
    let c = 8;
    let x = random_tensor(&mut rng, &[4, 5, 5, c], DType::F32, -2.0, 3.0, false);
    let scale = random_tensor(&mut rng, &[c], DType::F32, 0.5, 1.5, false);
    let bias = random_tensor(&mut rng, &[c], DType::F32, -1.0, 1.0, false);
    let r = random_tensor(&mut rng, x.shape(), DType::F32, -1.0, 1.0, false);
    let args = [x, scale, bias, r];
    let g = trace_fn(&args, |ts| {
        let r = ts[3].clone();
        let (rm, rv) = (
            Tensor::zeros(&[c], DType::F32),
            Tensor::ones(&[c], DType::F32),
        );
        let loss = move |(x, s, b): &(Tensor, Tensor, Tensor)| {
            (batch_norm_train(x, s, b, (&rm, &rv), 0.9, 1e-5).0 * &r).sum_all()
        };
        let (gx, gs, gb) = grad(loss, &(ts[0].clone(), ts[1].clone(), ts[2].clone()));
        vec![gx, gs, gb]
    });
    check_graph_with(&g, &args, "batch norm gradient", |_, want| {
        float_norm_tol(DType::F32, want)
    });
    let s = jitfuse::internals::passes::simplify(&g);
    let batch_sums = (s.nodes.iter())
        .filter(|n| matches!(n.op, jitfuse::internals::ir::Op::Reduce(..)))
        .filter(|n| s.node(n.inputs[0]).shape == args[0].shape())
        .count();
    assert_eq!(batch_sums, 5, "{s}");
}
