//! Gradients against central finite differences in f64 on random inputs,
//! eagerly and inside #[jit].

use crate::common::*;
use jitfuse::prelude::*;
use jitfuse::Tree;

/// Central differences of a scalar function of several tensors.
fn numeric_grad(f: &dyn Fn(&[Tensor]) -> Tensor, xs: &[Tensor], eps: f64) -> Vec<Vec<f64>> {
    xs.iter()
        .enumerate()
        .map(|(k, x)| {
            let base = x.to_vec::<f64>().unwrap();
            (0..base.len())
                .map(|i| {
                    let at = |d: f64| {
                        let mut v = base.clone();
                        v[i] += d;
                        let mut args = xs.to_vec();
                        args[k] = Tensor::from_vec(v, x.shape()).unwrap();
                        f(&args).item::<f64>().unwrap()
                    };
                    (at(eps) - at(-eps)) / (2.0 * eps)
                })
                .collect()
        })
        .collect()
}

fn check_grad(name: &str, f: &dyn Fn(&[Tensor]) -> Tensor, xs: Vec<Tensor>) {
    let (value, grads) = jitfuse::value_and_grad(|t: &Vec<Tensor>| f(t), &xs);
    let direct = f(&xs).item::<f64>().unwrap();
    assert!(
        (value.item::<f64>().unwrap() - direct).abs() <= 1e-12 * (1.0 + direct.abs()),
        "{name}: value"
    );
    let num = numeric_grad(f, &xs, 1e-6);
    for (k, (g, n)) in grads.iter().zip(&num).enumerate() {
        assert_eq!(
            g.shape(),
            xs[k].shape(),
            "{name}: grad {k} has the operand's shape"
        );
        let g = g.to_vec::<f64>().unwrap();
        for (i, (a, b)) in g.iter().zip(n).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                "{name}: d/dx{k}[{i}] = {a}, finite differences {b}"
            );
        }
    }
}

fn rand(rng: &mut Rng, shape: &[usize], lo: f64, hi: f64) -> Tensor {
    random_tensor(rng, shape, DType::F64, lo, hi, false)
}

/// Random weights make every output element matter to the scalar.
fn weighted(t: &Tensor, seed: u64) -> Tensor {
    let mut rng = Rng::new(seed);
    let w = rand(&mut rng, t.shape(), 0.5, 1.5);
    (t * w).sum_all()
}

#[test]
fn unary_rules() {
    let mut rng = Rng::new(30);
    type F = fn(&Tensor) -> Tensor;
    let cases: [(&str, F, f64, f64); 14] = [
        ("neg", |x| -x, -2.0, 2.0),
        ("exp", |x| x.exp(), -2.0, 2.0),
        ("ln", |x| x.ln(), 0.5, 3.0),
        ("tanh", |x| x.tanh(), -2.0, 2.0),
        ("sqrt", |x| x.sqrt(), 0.5, 3.0),
        ("rsqrt", |x| x.rsqrt(), 0.5, 3.0),
        ("abs", |x| x.abs(), 0.2, 2.0),
        ("relu", |x| x.relu(), -2.0, 2.0),
        ("sigmoid", |x| x.sigmoid(), -3.0, 3.0),
        ("sin", |x| x.sin(), -3.0, 3.0),
        ("cos", |x| x.cos(), -3.0, 3.0),
        ("square", |x| x.square(), -2.0, 2.0),
        ("recip", |x| x.recip(), 0.5, 2.0),
        ("erf", |x| x.erf(), -2.0, 2.0),
    ];
    for (name, f, lo, hi) in cases {
        let mut x = rand(&mut rng, &[3, 5], lo, hi);
        if name == "relu" {
            // Keep away from the kink.
            x = jitfuse::select(x.abs().lt(0.05), 0.5, &x);
        }
        check_grad(name, &|t| weighted(&f(&t[0]), 1), vec![x]);
    }
}

#[test]
fn binary_rules_with_broadcasting() {
    let mut rng = Rng::new(31);
    type F = fn(&Tensor, &Tensor) -> Tensor;
    let cases: [(&str, F); 8] = [
        ("add", |a, b| a + b),
        ("sub", |a, b| a - b),
        ("mul", |a, b| a * b),
        ("div", |a, b| a / b),
        ("maximum", |a, b| a.maximum(b)),
        ("minimum", |a, b| a.minimum(b)),
        ("powf", |a, b| a.powf(b)),
        ("rem", |a, b| a % b),
    ];
    for (name, f) in cases {
        for (sa, sb) in [
            (vec![3, 4], vec![3, 4]),
            (vec![3, 4], vec![4]),
            (vec![3, 1], vec![1, 4]),
            (vec![2, 3, 4], vec![]),
        ] {
            let a = rand(&mut rng, &sa, 0.5, 2.0);
            let b = rand(&mut rng, &sb, 0.6, 2.5);
            check_grad(
                &format!("{name} {sa:?} {sb:?}"),
                &|t| weighted(&f(&t[0], &t[1]), 2),
                vec![a, b],
            );
        }
    }
}

#[test]
fn select_cast_and_layout_rules() {
    let mut rng = Rng::new(32);
    let x = rand(&mut rng, &[3, 4], -2.0, 2.0);
    let y = rand(&mut rng, &[3, 4], -2.0, 2.0);
    check_grad(
        "select",
        &|t| {
            weighted(
                &jitfuse::select(t[0].gt(&t[1]), &t[0] * 2.0, t[1].square()),
                3,
            )
        },
        vec![x.clone(), y.clone()],
    );
    // Through an f32 cast the gradient is the f64 one (finite differences are
    // too coarse there: compare with the identity's gradient instead).
    let through_f32 = jitfuse::grad(
        |t: &Tensor| weighted(&t.cast(DType::F32).cast(DType::F64), 3),
        &x,
    );
    let identity = jitfuse::grad(|t: &Tensor| weighted(t, 3), &x);
    assert_close(
        &through_f32,
        &identity,
        Tol {
            rel: 1e-7,
            abs: 0.0,
        },
        "cast",
    );
    check_grad(
        "transpose+reshape",
        &|t| weighted(&t[0].t().reshape(&[2, 6]).square(), 4),
        vec![x.clone()],
    );
    check_grad(
        "slice+flip",
        &|t| {
            weighted(
                &t[0]
                    .slice(&[Slice::new(2, 0, -1), Slice::new(1, None, 2)])
                    .exp(),
                5,
            )
        },
        vec![x.clone()],
    );
    check_grad(
        "concat+pad",
        &|t| {
            weighted(
                &jitfuse::concat(&[&t[0], &t[1].square()], 1).pad(&[(1, 0), (0, 2)], 3.0),
                6,
            )
        },
        vec![x.clone(), y.clone()],
    );
    check_grad(
        "broadcast_to",
        &|t| weighted(&t[0].sum_keepdims(0).broadcast_to(&[5, 3, 4]).sin(), 7),
        vec![x.clone()],
    );
    let idx = Tensor::vector(&[2i64, 0, 2, -1]);
    check_grad(
        "take",
        &|t| weighted(&t[0].take(&idx, 1).square(), 8),
        vec![x.clone()],
    );
}

#[test]
fn reduction_matmul_and_composite_rules() {
    let mut rng = Rng::new(33);
    let x = rand(&mut rng, &[3, 5], -2.0, 2.0);
    let gamma = rand(&mut rng, &[5], 0.5, 1.5);
    let beta = rand(&mut rng, &[5], -1.0, 1.0);
    check_grad(
        "sum",
        &|t| weighted(&t[0].sum(1).square(), 9),
        vec![x.clone()],
    );
    check_grad("max", &|t| weighted(&t[0].max(0), 10), vec![x.clone()]);
    check_grad(
        "min",
        &|t| weighted(&t[0].min_keepdims(1), 11),
        vec![x.clone()],
    );
    check_grad("prod", &|t| weighted(&t[0].prod(1), 12), vec![x.clone()]);
    check_grad(
        "mean/var",
        &|t| weighted(&(t[0].var(1) + t[0].mean(0).sum_all()), 13),
        vec![x.clone()],
    );
    check_grad(
        "logsumexp",
        &|t| weighted(&t[0].logsumexp(1), 14),
        vec![x.clone()],
    );
    check_grad(
        "softmax",
        &|t| weighted(&t[0].softmax(-1), 15),
        vec![x.clone()],
    );
    check_grad(
        "layer_norm",
        &|t| weighted(&t[0].layer_norm(&t[1], &t[2], 1e-5, -1), 16),
        vec![x.clone(), gamma, beta],
    );
    let labels = Tensor::vector(&[1i32, 4, 0]).one_hot_as(5, DType::F64);
    check_grad(
        "cross-entropy",
        &|t| jitfuse::softmax_cross_entropy(&t[0], &labels),
        vec![x.clone()],
    );
    let a = rand(&mut rng, &[2, 3, 4], -1.0, 1.0);
    let b = rand(&mut rng, &[4, 5], -1.0, 1.0);
    let v = rand(&mut rng, &[4], -1.0, 1.0);
    check_grad(
        "batched matmul",
        &|t| weighted(&t[0].matmul(&t[1]).tanh(), 17),
        vec![a.clone(), b.clone()],
    );
    check_grad(
        "matrix-vector",
        &|t| weighted(&t[0].matmul(&t[1]), 18),
        vec![a.clone(), v],
    );
    // A weight shared by two batch axes, and by a transposed (strided) batch.
    let a4 = rand(&mut rng, &[2, 3, 4, 5], -1.0, 1.0);
    let w = rand(&mut rng, &[5, 3], -1.0, 1.0);
    check_grad(
        "4-d batch, shared weight",
        &|t| weighted(&t[0].matmul(&t[1]).tanh(), 19),
        vec![a4, w],
    );
    check_grad(
        "transposed batch, shared weight",
        &|t| weighted(&t[0].transpose(&[1, 0, 2]).matmul(&t[1]).sin(), 20),
        vec![a, b],
    );
}

/// The weight gradient of a batched product with a shared matrix is one product over all
/// the batch's rows (`[k, B·m] @ [B·m, n]`), not a product per batch element and a sum.
#[test]
fn a_shared_weight_gets_one_gradient_product() {
    let g = jitfuse::internals::trace::trace(
        &[
            jitfuse::internals::trace::ParamSpec {
                shape: vec![6, 8, 4],
                dtype: DType::F32,
                weak: false,
            },
            jitfuse::internals::trace::ParamSpec {
                shape: vec![4, 5],
                dtype: DType::F32,
                weak: false,
            },
        ],
        |t| {
            vec![jitfuse::grad(
                |w: &Tensor| t[0].matmul(w).tanh().sum_all(),
                &t[1],
            )]
        },
    )
    .unwrap()
    .graph
    .to_text();
    assert!(g.contains(": f32[4,48]") && g.contains("matmul"), "{g}");
    assert!(
        !g.lines()
            .any(|l| l.contains("matmul") && l.contains("f32[6,4,5]")),
        "{g}"
    );
}

#[test]
fn stop_gradient_and_errors() {
    let x = Tensor::vector(&[1.0f64, 2.0, 3.0]);
    let g = jitfuse::grad(|x: &Tensor| (x * jitfuse::stop_gradient(x)).sum_all(), &x);
    assert_eq!(g.to_vec::<f64>().unwrap(), vec![1.0, 2.0, 3.0]);
    let r = std::panic::catch_unwind(|| {
        jitfuse::grad(|x: &Tensor| x * 2.0, &Tensor::vector(&[1.0f32, 2.0]))
    });
    let msg = *r.unwrap_err().downcast::<String>().unwrap();
    assert!(
        msg.contains("must be a float scalar (shape []), found f32[2]"),
        "{msg}"
    );
    let r = std::panic::catch_unwind(|| {
        jitfuse::grad(
            |x: &Tensor| x.cast(DType::F32).sum_all(),
            &Tensor::vector(&[1i32]),
        )
    });
    let msg = *r.unwrap_err().downcast::<String>().unwrap();
    assert!(
        msg.contains("only float tensors can be differentiated"),
        "{msg}"
    );
}

#[test]
fn trees_of_parameters_and_vjp() {
    let mut rng = Rng::new(34);
    let p = (
        rand(&mut rng, &[4, 3], -1.0, 1.0),
        vec![rand(&mut rng, &[3], -1.0, 1.0)],
        Some(rand(&mut rng, &[], -1.0, 1.0)),
    );
    let x = rand(&mut rng, &[2, 4], -1.0, 1.0);
    type P = (Tensor, Vec<Tensor>, Option<Tensor>);
    let loss = |p: &P| ((x.matmul(&p.0) + &p.1[0]).tanh() * p.2.as_ref().unwrap()).sum_all();
    let (l, g) = jitfuse::value_and_grad(loss, &p);
    assert_eq!(g.0.shape(), &[4, 3]);
    assert_eq!(g.1[0].shape(), &[3]);
    // Same as differentiating the flat list.
    let flat = |t: &[Tensor]| loss(&(t[0].clone(), vec![t[1].clone()], Some(t[2].clone())));
    let leaves = p.leaves();
    let num = numeric_grad(&flat, &leaves, 1e-6);
    for (gk, nk) in g.leaves().iter().zip(&num) {
        for (a, b) in gk.to_vec::<f64>().unwrap().iter().zip(nk) {
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()));
        }
    }
    assert!((l.item::<f64>().unwrap() - loss(&p).item::<f64>().unwrap()).abs() < 1e-12);
    // An optimiser step is one line: each leaf moves by its own gradient.
    let stepped = p.zip_map(&g, |w, dw| w - 0.1 * dw);
    let (sl, pl, gl) = (stepped.leaves(), p.leaves(), g.leaves());
    assert_eq!(sl.len(), 3);
    for k in 0..3 {
        let (s, w, d) = (
            sl[k].to_vec::<f64>().unwrap(),
            pl[k].to_vec::<f64>().unwrap(),
            gl[k].to_vec::<f64>().unwrap(),
        );
        assert_eq!(sl[k].shape(), pl[k].shape(), "leaf {k}");
        for i in 0..s.len() {
            assert_eq!(s[i], w[i] - 0.1 * d[i], "leaf {k} element {i}");
        }
    }
    // vjp with a vector output; cotangents of varied values (constant ones would not
    // show a cotangent element applied to the wrong primal element).
    let f = |x: &Tensor| (x.exp(), x.sin());
    let xv = rand(&mut rng, &[3], -1.0, 1.0);
    let (y, back) = jitfuse::vjp(f, &xv);
    assert_eq!(y.0.shape(), &[3]);
    let (c0, c1) = ([0.5, -1.25, 2.0], [3.0, 0.75, -1.5]);
    let ct = (
        Tensor::from_vec(c0.to_vec(), &[3]).unwrap(),
        Tensor::from_vec(c1.to_vec(), &[3]).unwrap(),
    );
    let gx = back(&ct).to_vec::<f64>().unwrap();
    let want: Vec<f64> = xv
        .to_vec::<f64>()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, v)| c0[i] * v.exp() + c1[i] * v.cos())
        .collect();
    for (a, b) in gx.iter().zip(&want) {
        assert!((a - b).abs() <= 1e-14 * (1.0 + b.abs()), "vjp {a} vs {b}");
    }
}

#[jit]
fn mlp_step(w1: Tensor, w2: Tensor, x: &Tensor, y: &Tensor, lr: f64) -> (Tensor, Tensor, Tensor) {
    let (l, g) = jitfuse::value_and_grad(
        |p: &(Tensor, Tensor)| {
            jitfuse::softmax_cross_entropy(&x.matmul(&p.0).relu().matmul(&p.1), y)
        },
        &(w1.clone(), w2.clone()),
    );
    (w1 - lr * &g.0, w2 - lr * &g.1, l)
}

#[test]
fn gradients_inside_jit_match_eager_ones() {
    let mut rng = Rng::new(35);
    let w1 = random_tensor(&mut rng, &[8, 16], DType::F32, -0.5, 0.5, false);
    let w2 = random_tensor(&mut rng, &[16, 4], DType::F32, -0.5, 0.5, false);
    let x = random_tensor(&mut rng, &[32, 8], DType::F32, -1.0, 1.0, false);
    let y = Tensor::from_vec((0..32).map(|i| (i % 4) as i32).collect(), &[32])
        .unwrap()
        .one_hot(4);
    let loss = |p: &(Tensor, Tensor)| {
        jitfuse::softmax_cross_entropy(&x.matmul(&p.0).relu().matmul(&p.1), &y)
    };
    let (l_eager, g_eager) = jitfuse::value_and_grad(loss, &(w1.clone(), w2.clone()));
    let text = mlp_step::lower(w1.clone(), w2.clone(), &x, &y, 0.1)
        .unwrap()
        .as_text();
    // Forward and backward are one traced graph: 2 forward matmuls and 3
    // backward ones (no gradient flows to x).
    let traced = text.split("// ---- simplified graph").next().unwrap();
    assert!(traced.matches("= matmul").count() >= 5, "{traced}");
    let (n1, n2, l) = mlp_step(w1.clone(), w2.clone(), &x, &y, 0.1);
    let (l, le) = (l.item::<f32>().unwrap(), l_eager.item::<f32>().unwrap());
    assert!((l - le).abs() <= 1e-5 * le.abs(), "loss {l} vs {le}");
    // The steps taken (w - new w) against the eager ones, lr * gradient: the weights are
    // ~100x larger than a step, so an absolute 1e-5 on them passed a gradient 1% wrong.
    // Normwise on the gradient's scale, plus the rounding of the new weights (half an ulp
    // of 0.5 each, in the jitted and the eager step).
    for (k, (new, w, g)) in [(&n1, &w1, &g_eager.0), (&n2, &w2, &g_eager.1)]
        .into_iter()
        .enumerate()
    {
        let (new, w) = (new.to_vec::<f32>().unwrap(), w.to_vec::<f32>().unwrap());
        let want: Vec<f64> = (0.1 * g)
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|&v| v as f64)
            .collect();
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for i in 0..new.len() {
            let step = w[i] as f64 - new[i] as f64;
            let bound = 1e-4 * want[i].abs() + 1e-5 * scale + 6e-8;
            assert!(
                (step - want[i]).abs() <= bound,
                "w{} element {i}: step {step:e}, eager {:e}",
                k + 1,
                want[i]
            );
        }
    }
}

fn deep_layer(h: &Tensor, w: &Tensor) -> Tensor {
    h.matmul(w).tanh() + h
}

/// W8's loss with the four checkpointing variants.
fn deep_loss(ws: &[Tensor], x: &Tensor, mode: usize) -> Tensor {
    let mut h = x.clone();
    for w in ws {
        let pair = (h.clone(), w.clone());
        let f = |a: &(Tensor, Tensor)| deep_layer(&a.0, &a.1);
        h = match mode {
            0 => deep_layer(&h, w),
            1 => jitfuse::checkpoint(f, &pair),
            2 => jitfuse::checkpoint_with(Policy::DotsSaveable, f, &pair),
            3 => jitfuse::checkpoint_with(Policy::NothingSaveable, f, &pair),
            _ => jitfuse::checkpoint_with(
                Policy::save_only_these_names(&["pre"]),
                |a: &(Tensor, Tensor)| {
                    jitfuse::checkpoint_name(&a.0.matmul(&a.1), "pre").tanh() + &a.0
                },
                &pair,
            ),
        };
    }
    h.square().sum_all()
}

/// The gradient program of W8 (all weights), compiled.
fn deep_grad_program(
    n: usize,
    d: usize,
    batch: usize,
    mode: usize,
) -> jitfuse::internals::exec::Executable {
    let mut specs: Vec<jitfuse::internals::trace::ParamSpec> = (0..n)
        .map(|_| jitfuse::internals::trace::ParamSpec {
            shape: vec![d, d],
            dtype: DType::F32,
            weak: false,
        })
        .collect();
    specs.push(jitfuse::internals::trace::ParamSpec {
        shape: vec![batch, d],
        dtype: DType::F32,
        weak: false,
    });
    let t = jitfuse::internals::trace::trace(&specs, |ts| {
        let ws = ts[..n].to_vec();
        let x = ts[n].clone();
        jitfuse::grad(|ws: &Vec<Tensor>| deep_loss(ws, &x, mode), &ws)
    })
    .unwrap();
    jitfuse::internals::exec::Executable::from_graph(t.graph, t.captured).unwrap()
}

#[test]
fn checkpointing_recomputes_and_saves_memory() {
    // Full W8 shapes: 16 weights [512,512], x[256,512]. XLA: 9,437,184 temp
    // bytes for every variant (its CSE undoes the recomputation). Residuals
    // of layer i live in the buffer of a gradient written after they die.
    let temps: Vec<usize> = (0..4)
        .map(|mode| {
            deep_grad_program(16, 512, 256, mode)
                .memory_analysis()
                .temp_bytes
        })
        .collect();
    let (plain, per_layer, dots, nothing) = (temps[0], temps[1], temps[2], temps[3]);
    eprintln!("W8 temp bytes: plain {plain}, checkpoint per layer {per_layer}, dots_saveable {dots}, nothing_saveable {nothing}");
    for t in &temps {
        assert!(*t <= 9_437_184, "W8 temp above XLA's: {temps:?}");
    }
    // Narrow weights (small gradients, large activations): the residuals
    // do not fit in the outputs, and checkpointing shows.
    let temps: Vec<usize> = (0..4)
        .map(|mode| {
            deep_grad_program(16, 64, 256, mode)
                .memory_analysis()
                .temp_bytes
        })
        .collect();
    let (plain, per_layer, dots, nothing) = (temps[0], temps[1], temps[2], temps[3]);
    eprintln!("narrow chain temp bytes: plain {plain}, checkpoint per layer {per_layer}, dots_saveable {dots}, nothing_saveable {nothing}");
    assert!(
        per_layer < plain * 3 / 4,
        "checkpointing per layer must save memory: {temps:?}"
    );
    assert!(nothing <= dots, "{temps:?}");
    // (The memory-aware schedule finds an order one activation [256,64]
    // lower for the plain gradient than for dots_saveable's.)
    assert!(dots <= plain + 256 * 64 * 4, "{temps:?}");
    // The recomputation is visible in the program: barriers feed it.
    let exe = deep_grad_program(2, 8, 4, 1);
    assert!(
        exe.optimized_text().contains("barrier"),
        "{}",
        exe.optimized_text()
    );
    // Same gradients for every variant, eagerly and compiled.
    let mut rng = Rng::new(36);
    let ws: Vec<Tensor> = (0..3)
        .map(|_| random_tensor(&mut rng, &[6, 6], DType::F64, -0.4, 0.4, false))
        .collect();
    let x = random_tensor(&mut rng, &[4, 6], DType::F64, -1.0, 1.0, false);
    let want = jitfuse::grad(|ws: &Vec<Tensor>| deep_loss(ws, &x, 0), &ws);
    for mode in 1..5 {
        let got = jitfuse::grad(|ws: &Vec<Tensor>| deep_loss(ws, &x, mode), &ws);
        for (a, b) in got.iter().zip(&want) {
            assert_close(
                a,
                b,
                Tol {
                    rel: 1e-12,
                    abs: 1e-12,
                },
                &format!("eager mode {mode}"),
            );
        }
        let mut specs: Vec<jitfuse::internals::trace::ParamSpec> = ws
            .iter()
            .map(|w| jitfuse::internals::trace::ParamSpec {
                shape: w.shape().to_vec(),
                dtype: DType::F64,
                weak: false,
            })
            .collect();
        specs.push(jitfuse::internals::trace::ParamSpec {
            shape: vec![4, 6],
            dtype: DType::F64,
            weak: false,
        });
        let t = jitfuse::internals::trace::trace(&specs, |ts| {
            let wt = ts[..3].to_vec();
            let xt = ts[3].clone();
            jitfuse::grad(|ws: &Vec<Tensor>| deep_loss(ws, &xt, mode), &wt)
        })
        .unwrap();
        let mut args = ws.clone();
        args.push(x.clone());
        check_graph(
            &t.graph,
            &args,
            Tol {
                rel: 1e-12,
                abs: 1e-12,
            },
            &format!("compiled mode {mode}"),
        );
    }
}

/// `jvp` (forward mode, as the transpose of the vjp) against central finite
/// differences of `f` along the tangent.
#[test]
fn jvp_matches_directional_finite_differences() {
    let mut rng = Rng::new(71);
    type F = fn(&Vec<Tensor>) -> Tensor;
    let cases: [(&str, F); 5] = [
        ("tanh * x", |a| a[0].tanh() * &a[1]),
        ("matmul", |a| {
            a[0].reshape(&[2, 3]).matmul(&a[1].reshape(&[3, 2]))
        }),
        ("softmax", |a| (&a[0] * &a[1]).softmax(-1)),
        ("layer norm", |a| {
            a[0].reshape(&[2, 3]).layer_norm(
                &a[1].slice_axis(0, 0, 3, 1),
                &a[1].slice_axis(0, 3, 6, 1),
                1e-5,
                -1,
            )
        }),
        ("gather + reduce", |a| {
            let idx = Tensor::from_vec(vec![2i64, 0, 5, 5], &[4]).unwrap();
            a[0].take(&idx, 0).exp().sum_all() * a[1].max_all()
        }),
    ];
    for (name, f) in cases {
        let x = vec![
            rand(&mut rng, &[6], -1.0, 1.0),
            rand(&mut rng, &[6], 0.5, 1.5),
        ];
        let v = vec![
            rand(&mut rng, &[6], -1.0, 1.0),
            rand(&mut rng, &[6], -1.0, 1.0),
        ];
        let (y, t) = jitfuse::jvp(f, &x, &v);
        assert_close(&y, &f(&x), EXACT, name);
        let h = 1e-6;
        let at = |s: f64| -> Vec<Tensor> { x.iter().zip(&v).map(|(a, b)| a + b * s).collect() };
        let num = (f(&at(h)) - f(&at(-h))) / (2.0 * h);
        assert_close(
            &t,
            &num,
            Tol {
                rel: 1e-6,
                abs: 1e-7,
            },
            name,
        );
    }
    // Inside #[jit], the same numbers.
    #[jit]
    fn tangent(x: &Tensor, v: &Tensor) -> Tensor {
        jitfuse::jvp(|x: &Tensor| (x.sin() * x).sum(0), x, v).1
    }
    let x = rand(&mut rng, &[3, 4], -1.0, 1.0);
    let v = rand(&mut rng, &[3, 4], -1.0, 1.0);
    let want = (&v * (x.cos() * &x + x.sin())).sum(0);
    assert_close(
        &tangent(&x, &v),
        &want,
        Tol {
            rel: 1e-12,
            abs: 1e-12,
        },
        "jit jvp",
    );
    let err = std::panic::catch_unwind(|| jitfuse::jvp(|x: &Tensor| x.exp(), &x, &x.sum(0)))
        .err()
        .and_then(|e| e.downcast_ref::<String>().cloned())
        .unwrap();
    assert!(
        err.contains("`jvp`: the tangent must have the primal's leaves"),
        "{err}"
    );
}

/// `dots_saveable` over a whole chain: the backward recomputes the adds
/// whose transposes feed the weight gradients' matmuls (a folded view read
/// by a library step: the add must stay materialised, not be sunk into
/// later kernels).
#[test]
fn dots_saveable_over_a_whole_chain_compiles() {
    let mut rng = Rng::new(37);
    let ws: Vec<Tensor> = (0..2)
        .map(|_| random_tensor(&mut rng, &[8, 8], DType::F64, -0.3, 0.3, false))
        .collect();
    let x = random_tensor(&mut rng, &[4, 8], DType::F64, -1.0, 1.0, false);
    let specs: Vec<jitfuse::internals::trace::ParamSpec> = [vec![8, 8], vec![8, 8], vec![4, 8]]
        .into_iter()
        .map(|shape| jitfuse::internals::trace::ParamSpec {
            shape,
            dtype: DType::F64,
            weak: false,
        })
        .collect();
    let t = jitfuse::internals::trace::trace(&specs, |ts| {
        let xt = ts[2].clone();
        jitfuse::grad(
            |ws: &Vec<Tensor>| {
                let body = |ws: &Vec<Tensor>| {
                    let mut h = xt.clone();
                    for w in ws {
                        h = deep_layer(&h, w);
                    }
                    h.square().sum_all()
                };
                jitfuse::checkpoint_with(Policy::DotsSaveable, body, ws)
            },
            &ts[..2].to_vec(),
        )
    })
    .unwrap();
    let mut args = ws.clone();
    args.push(x);
    check_graph(
        &t.graph,
        &args,
        Tol {
            rel: 1e-12,
            abs: 1e-12,
        },
        "whole-chain dots_saveable",
    );
}

#[jit]
fn prod_rows_grad(x: &Tensor) -> Tensor {
    jitfuse::grad(
        |x: &Tensor| (x.prod(-1) * Tensor::vector(&[1.0f64, 2.0, 3.0]).cast(x.dtype())).sum_all(),
        x,
    )
}

/// The gradient of a product is the product of the other factors, also at a zero factor
/// (`prod / x` gave 0 / 0 = NaN there): no zero, one zero, two zeros per row; eagerly and
/// jitted, f32 and f64, exactly.
#[test]
fn prod_gradient_at_zero_factors_is_the_product_of_the_others() {
    for d in [DType::F32, DType::F64] {
        let x = Tensor::from_vec(
            vec![1.0f64, 2.0, 3.0, 0.0, 2.0, 3.0, 0.0, 0.0, 5.0],
            &[3, 3],
        )
        .unwrap()
        .cast(d);
        // Row weights 1, 2, 3 from the loss.
        let want = Tensor::from_vec(
            vec![6.0f64, 3.0, 2.0, 12.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            &[3, 3],
        )
        .unwrap()
        .cast(d);
        let eager = jitfuse::grad(
            |x: &Tensor| (x.prod(-1) * Tensor::vector(&[1.0f64, 2.0, 3.0]).cast(d)).sum_all(),
            &x,
        );
        assert_close(&eager, &want, EXACT, &format!("eager {d}"));
        assert_close(&prod_rows_grad(&x), &want, EXACT, &format!("jitted {d}"));
    }
}

/// With a zero factor, the product of the others is `0 · rest` wherever it holds a NaN or an
/// infinity too: NaN, as multiplying them out gives (it was a literal 0, so a value rounding
/// to exactly 0 on one backend and to a tiny nonzero on another turned the row's NaN gradient
/// into zeros: a fuzz case on `gelu(2x)` whose tanh rounded to -1). Eagerly and jitted, f32
/// and f64.
#[test]
fn prod_gradient_with_a_zero_keeps_the_nan_of_the_other_factors() {
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    for d in [DType::F32, DType::F64] {
        let x = Tensor::from_vec(
            vec![0.0f64, nan, 2.0, 0.0, inf, 2.0, 0.0, 0.0, nan],
            &[3, 3],
        )
        .unwrap()
        .cast(d);
        // Row 0: every position NaN. Row 1: at the zero 2·inf·2 = inf, elsewhere 0·inf.
        // Row 2: two zeros and a NaN.
        let want = [nan, nan, nan, inf, nan, nan, nan, nan, nan];
        let eager = jitfuse::grad(
            |x: &Tensor| (x.prod(-1) * Tensor::vector(&[1.0f64, 2.0, 3.0]).cast(d)).sum_all(),
            &x,
        );
        for (how, got) in [("eager", eager), ("jitted", prod_rows_grad(&x))] {
            let got = got.cast(DType::F64).to_vec::<f64>().unwrap();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    g.is_nan() && w.is_nan() || g == w,
                    "{how} {d}: element {i} is {g}, want {w}: {got:?}"
                );
            }
        }
    }
}
