//! `jitfuse::optim`: every optimiser against a hand-written f64 reference
//! over several steps (eagerly and jitted, with the state donated), the
//! weight-decay mask, clipping, schedules, and a whole jitted training step:
//! donated bit for bit like shared, no recompilation as the step counter
//! moves, the update fused in place (no full-size temporaries beyond the
//! gradients).

use crate::common::{bits, random_tensor, to_f64s, Rng};
use jitfuse::optim::{
    self, Adam, Chain, ClipByGlobalNorm, Mask, Momentum, Optimizer, Schedule, Sgd, StateOf,
    WarmupCosine,
};
use jitfuse::prelude::*;

#[derive(Tree, Clone, Debug)]
pub struct Layer {
    w: Tensor,
    b: Tensor,
}

#[derive(Tree, Clone, Debug)]
pub struct Net {
    layers: Vec<Layer>,
    gain: Tensor,
}

/// A net of `dims` (two layers and an output gain).
fn net(rng: &mut Rng, dims: &[usize], dtype: DType) -> Net {
    let mut r = |s: &[usize]| random_tensor(rng, s, dtype, -1.0, 1.0, false);
    Net {
        layers: dims
            .windows(2)
            .map(|d| Layer {
                w: r(&[d[0], d[1]]),
                b: r(&[d[1]]),
            })
            .collect(),
        gain: r(&[*dims.last().unwrap()]),
    }
}

fn forward(p: &Net, x: &Tensor) -> Tensor {
    let mut h = x.clone();
    for l in &p.layers {
        h = (h.matmul(&l.w) + &l.b).tanh();
    }
    h * &p.gain
}

fn loss(p: &Net, x: &Tensor, y: &Tensor) -> Tensor {
    (forward(p, x) - y).square().mean_all()
}

fn leaves64(t: &impl Tree) -> Vec<Vec<f64>> {
    t.leaves().iter().map(to_f64s).collect()
}

/// Every leaf of `got` within `rel` (relative to max(1, |want|)) of `want`.
fn assert_leaves_close(got: &impl Tree, want: &[Vec<f64>], rel: f64, what: &str) {
    let got = leaves64(got);
    assert_eq!(got.len(), want.len(), "{what}: leaf count");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            assert!(
                (a - b).abs() <= rel * b.abs().max(1.0),
                "{what}: leaf {k} [{i}]: {a} vs {b} (diff {:e})",
                (a - b).abs()
            );
        }
    }
}

/// The gradients of step `k`: fixed random trees, a different one each step.
fn grads_of(shape: &Net, steps: usize, seed: u64) -> Vec<Net> {
    let mut rng = Rng::new(seed);
    (0..steps)
        .map(|k| {
            shape.map(|t| {
                random_tensor(&mut rng, t.shape(), t.dtype(), -1.0, 1.0, false) * (1.0 + k as f64)
            })
        })
        .collect()
}

/// The hand-written f64 optimisers, on flat leaves.
#[derive(Clone)]
enum Reference {
    Sgd {
        lr: f64,
    },
    Momentum {
        lr: f64,
        beta: f64,
        nesterov: bool,
    },
    Adam {
        lr: fn(usize) -> f64,
        b1: f64,
        b2: f64,
        eps: f64,
        wd: f64,
        decay: Vec<bool>,
    },
}

struct RefState {
    step: usize,
    a: Vec<Vec<f64>>,
    b: Vec<Vec<f64>>,
}

impl Reference {
    fn init(&self, p: &[Vec<f64>]) -> RefState {
        let zeros: Vec<Vec<f64>> = p.iter().map(|l| vec![0.0; l.len()]).collect();
        RefState {
            step: 0,
            a: zeros.clone(),
            b: zeros,
        }
    }

    fn step(&self, p: &mut [Vec<f64>], g: &[Vec<f64>], s: &mut RefState) {
        for k in 0..p.len() {
            for i in 0..p[k].len() {
                let (gi, pi) = (g[k][i], p[k][i]);
                p[k][i] = match self {
                    Reference::Sgd { lr } => pi - lr * gi,
                    Reference::Momentum { lr, beta, nesterov } => {
                        let t = beta * s.a[k][i] + gi;
                        s.a[k][i] = t;
                        pi - lr * if *nesterov { gi + beta * t } else { t }
                    }
                    Reference::Adam {
                        lr,
                        b1,
                        b2,
                        eps,
                        wd,
                        decay,
                    } => {
                        let t = (s.step + 1) as i32;
                        let m = b1 * s.a[k][i] + (1.0 - b1) * gi;
                        let v = b2 * s.b[k][i] + (1.0 - b2) * gi * gi;
                        (s.a[k][i], s.b[k][i]) = (m, v);
                        let mut u =
                            (m / (1.0 - b1.powi(t))) / ((v / (1.0 - b2.powi(t))).sqrt() + eps);
                        if decay[k] {
                            u += wd * pi;
                        }
                        pi - lr(s.step) * u
                    }
                };
            }
        }
        s.step += 1;
    }
}

/// `steps` updates of `opt` from `p0` with the gradients `grads`: eagerly
/// (`update` on concrete trees) and through `jitted` (the state donated),
/// each step against the reference. Returns the jitted step's final state.
fn check_against_reference<O: Optimizer>(
    what: &str,
    opt: &O,
    reference: &Reference,
    p0: &Net,
    grads: &[Net],
    rel: f64,
    jitted: impl Fn(Net, StateOf<O, Net>, &Net) -> (Net, StateOf<O, Net>),
) -> StateOf<O, Net> {
    let mut want = leaves64(p0);
    let mut rs = reference.init(&want);
    let (mut pe, mut se) = (p0.clone(), opt.init(p0));
    let (mut pj, mut sj) = (p0.map(|t| t + 0.0), opt.init(p0));
    for (k, g) in grads.iter().enumerate() {
        reference.step(&mut want, &leaves64(g), &mut rs);
        (pe, se) = opt.update(g, se, pe);
        (pj, sj) = jitted(pj, sj, g);
        assert_leaves_close(&pe, &want, rel, &format!("{what}, eager, step {k}"));
        assert_leaves_close(&pj, &want, rel, &format!("{what}, jitted, step {k}"));
    }
    let _ = se;
    sj
}

fn sgd_opt() -> Sgd<f64> {
    optim::sgd(0.1)
}
fn momentum_opt() -> Momentum<f64> {
    optim::momentum(0.05, 0.9)
}
fn nesterov_opt() -> Momentum<f64> {
    optim::momentum(0.05, 0.9).nesterov(true)
}

const SCHED: WarmupCosine = WarmupCosine {
    peak: 0.01,
    warmup_steps: 2,
    total_steps: 5,
    end: 0.001,
};

/// `SCHED`'s formula, by hand.
fn sched_ref(s: usize) -> f64 {
    let (peak, w, t, end) = (0.01, 2.0, 5.0, 0.001);
    let s = s as f64;
    if s < w {
        peak * s / w
    } else if s < t {
        end + 0.5 * (peak - end) * (1.0 + (std::f64::consts::PI * (s - w) / (t - w)).cos())
    } else {
        end
    }
}

fn adam_opt() -> Adam<WarmupCosine> {
    optim::adam(SCHED, 0.9, 0.99, 1e-8)
}
fn adamw_opt() -> Adam<f64> {
    optim::adamw(0.01, 0.9, 0.95, 1e-6, 0.1).decay_mask(Mask::by_leaf(|t| t.ndim() >= 2))
}

#[jit]
fn sgd_step(p: Net, s: StateOf<Sgd<f64>, Net>, g: &Net) -> (Net, StateOf<Sgd<f64>, Net>) {
    sgd_opt().update(g, s, p)
}
#[jit]
fn momentum_step(
    p: Net,
    s: StateOf<Momentum<f64>, Net>,
    g: &Net,
    nesterov: bool,
) -> (Net, StateOf<Momentum<f64>, Net>) {
    if nesterov {
        nesterov_opt().update(g, s, p)
    } else {
        momentum_opt().update(g, s, p)
    }
}
#[jit]
fn adam_step(
    p: Net,
    s: StateOf<Adam<WarmupCosine>, Net>,
    g: &Net,
) -> (Net, StateOf<Adam<WarmupCosine>, Net>) {
    adam_opt().update(g, s, p)
}
#[jit]
fn adamw_step(p: Net, s: StateOf<Adam<f64>, Net>, g: &Net) -> (Net, StateOf<Adam<f64>, Net>) {
    adamw_opt().update(g, s, p)
}
/// `adamw_step` for the mismatch test alone: its bad signatures would be misses of
/// `adamw_step`, whose count another test asserts while tests run in parallel.
#[jit]
fn adamw_step_checked(
    p: Net,
    s: StateOf<Adam<f64>, Net>,
    g: &Net,
) -> (Net, StateOf<Adam<f64>, Net>) {
    adamw_opt().update(g, s, p)
}

/// f64 parameters: the compiled kernels agree with the reference to
/// rounding; f32: to f32 rounding.
fn cases() -> [(DType, f64); 2] {
    [(DType::F64, 1e-12), (DType::F32, 2e-5)]
}

#[test]
fn sgd_matches_the_reference() {
    for (dtype, rel) in cases() {
        let p0 = net(&mut Rng::new(1), &[4, 8, 3], dtype);
        let grads = grads_of(&p0, 4, 2);
        let s = check_against_reference(
            "sgd",
            &sgd_opt(),
            &Reference::Sgd { lr: 0.1 },
            &p0,
            &grads,
            rel,
            sgd_step,
        );
        assert_eq!(s.count.item::<i32>().unwrap(), 4);
    }
}

#[test]
fn momentum_and_nesterov_match_the_reference() {
    for (dtype, rel) in cases() {
        for nesterov in [false, true] {
            let p0 = net(&mut Rng::new(3), &[4, 8, 3], dtype);
            let grads = grads_of(&p0, 5, 4);
            let opt = if nesterov {
                nesterov_opt()
            } else {
                momentum_opt()
            };
            let s = check_against_reference(
                &format!("momentum (nesterov {nesterov}, {dtype})"),
                &opt,
                &Reference::Momentum {
                    lr: 0.05,
                    beta: 0.9,
                    nesterov,
                },
                &p0,
                &grads,
                rel,
                |p, s, g| momentum_step(p, s, g, nesterov),
            );
            assert_eq!(s.count.item::<i32>().unwrap(), 5);
        }
    }
}

#[test]
fn adam_with_a_schedule_and_bias_correction_matches_the_reference() {
    for (dtype, rel) in cases() {
        let p0 = net(&mut Rng::new(5), &[4, 8, 3], dtype);
        // Past the schedule's end: warm-up, decay and the floor are all used.
        let grads = grads_of(&p0, 7, 6);
        let s = check_against_reference(
            &format!("adam ({dtype})"),
            &adam_opt(),
            &Reference::Adam {
                lr: sched_ref,
                b1: 0.9,
                b2: 0.99,
                eps: 1e-8,
                wd: 0.0,
                decay: vec![false; 5],
            },
            &p0,
            &grads,
            rel,
            adam_step,
        );
        assert_eq!(s.count.item::<i32>().unwrap(), 7);
        assert_eq!(s.mu.layers[1].w.shape(), &[8, 3]);
    }
}

#[test]
fn adamw_matches_the_reference_with_decay_on_matrices_only() {
    for (dtype, rel) in cases() {
        let p0 = net(&mut Rng::new(7), &[4, 8, 3], dtype);
        let grads = grads_of(&p0, 5, 8);
        // Leaves: layers.0.w, layers.0.b, layers.1.w, layers.1.b, gain.
        let decay = vec![true, false, true, false, false];
        assert_eq!(adamw_opt().mask.resolve(&p0), decay);
        check_against_reference(
            &format!("adamw ({dtype})"),
            &adamw_opt(),
            &Reference::Adam {
                lr: |_| 0.01,
                b1: 0.9,
                b2: 0.95,
                eps: 1e-6,
                wd: 0.1,
                decay,
            },
            &p0,
            &grads,
            rel,
            adamw_step,
        );
    }
    assert_eq!(adamw_step::cache_stats().misses, 2, "one program per dtype");
}

/// With zero gradients AdamW's only update is the decay: masked leaves
/// shrink by `1 - lr * wd`, the others stay bit for bit. Masks by leaf, by
/// name, from a mask tree and from flags choose the same leaves.
#[test]
fn the_weight_decay_mask_is_respected() {
    let p = net(&mut Rng::new(9), &[3, 5, 2], DType::F64);
    let zero = p.map(|t| t.zeros_like());
    let names = p.leaf_names();
    assert_eq!(
        names,
        [
            "layers.0.w",
            "layers.0.b",
            "layers.1.w",
            "layers.1.b",
            "gain"
        ]
    );
    let masks = [
        Mask::by_leaf(|t| t.ndim() >= 2),
        Mask::by_name(|n| n.ends_with(".w")),
        Mask::from_tree(&p.map(|t| Tensor::scalar(t.ndim() == 2))).unwrap(),
        Mask::from_flags(vec![true, false, true, false, false]),
    ];
    for mask in masks {
        let opt = optim::adamw(0.1, 0.9, 0.999, 1e-8, 0.5).decay_mask(mask.clone());
        let (q, _) = opt.update(&zero, opt.init(&p), p.clone());
        for (k, (a, b)) in q.leaves().iter().zip(p.leaves()).enumerate() {
            let (a, b) = (to_f64s(a), to_f64s(&b));
            if k == 0 || k == 2 {
                for (x, y) in a.iter().zip(&b) {
                    assert!(
                        (x - y * (1.0 - 0.1 * 0.5)).abs() <= 1e-15,
                        "{mask:?}: {x} vs {y}"
                    );
                }
            } else {
                assert_eq!(a, b, "{mask:?}: leaf {} is not decayed", names[k]);
            }
        }
    }
    assert!(Mask::from_tree(&p).is_err(), "a mask tree of floats");
    let err = std::panic::catch_unwind(|| Mask::from_flags(vec![true]).resolve(&p)).unwrap_err();
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(
        msg.contains("a mask of 1 flags for a tree of 5 leaves"),
        "{msg}"
    );
}

/// Clipping, jitted; the threshold in thousandths (static).
#[jit]
fn clip_step(g: &Net, max_milli: usize) -> (Net, Tensor) {
    let clip = optim::clip_by_global_norm(max_milli as f64 / 1000.0);
    let (u, ()) = clip.updates(g, (), g);
    (u, optim::global_norm(g))
}

#[test]
fn clipping_by_the_global_norm_matches_the_formula() {
    for dtype in [DType::F64, DType::F32] {
        let g = net(&mut Rng::new(11), &[4, 8, 3], dtype);
        let flat: Vec<f64> = leaves64(&g).concat();
        let norm = flat.iter().map(|x| x * x).sum::<f64>().sqrt();
        let tol = if dtype == DType::F64 { 1e-13 } else { 1e-6 };
        for max in [norm / 3.0, norm * 2.0] {
            let max = (max * 1000.0).round() / 1000.0;
            let clip = optim::clip_by_global_norm(max);
            let (eager, ()) = clip.updates(&g, clip.init(&g), &g);
            let (jitted, n) = clip_step(&g, (max * 1000.0).round() as usize);
            assert!(
                (n.item::<f64>().unwrap() - norm).abs() <= tol * norm,
                "the global norm"
            );
            let scale = if norm < max { 1.0 } else { max / norm };
            let want: Vec<Vec<f64>> = leaves64(&g)
                .iter()
                .map(|l| l.iter().map(|x| x * scale).collect())
                .collect();
            assert_leaves_close(&eager, &want, tol, &format!("clip {max} of {norm}, eager"));
            assert_leaves_close(
                &jitted,
                &want,
                tol,
                &format!("clip {max} of {norm}, jitted"),
            );
            let clipped = optim::global_norm(&jitted).item::<f64>().unwrap();
            if norm < max {
                for (a, b) in jitted.leaves().iter().zip(g.leaves()) {
                    assert_eq!(bits(a), bits(&b), "below the threshold: unchanged");
                }
            } else {
                assert!(
                    (clipped - max).abs() <= tol * 10.0 * max,
                    "{clipped} vs {max}"
                );
            }
        }
    }
}

/// `clip.then(sgd)`: SGD on the clipped gradient.
#[test]
fn clipping_chains_before_an_optimiser() {
    let p = net(&mut Rng::new(12), &[3, 4, 2], DType::F64);
    let g = grads_of(&p, 1, 13).pop().unwrap();
    let opt = optim::clip_by_global_norm(0.5).then(optim::sgd(0.1));
    let norm = optim::global_norm(&g).item::<f64>().unwrap();
    assert!(norm > 0.5);
    let ((), s) = opt.init(&p);
    let (q, ((), s)) = opt.update(&g, ((), s), p.clone());
    assert_eq!(s.count.item::<i32>().unwrap(), 1);
    let want: Vec<Vec<f64>> = leaves64(&p)
        .iter()
        .zip(leaves64(&g))
        .map(|(p, g)| {
            p.iter()
                .zip(&g)
                .map(|(p, g)| p - 0.1 * g * 0.5 / norm)
                .collect()
        })
        .collect();
    assert_leaves_close(&q, &want, 1e-14, "clip then sgd");
}

#[jit]
fn sched_at(step: &Tensor) -> Tensor {
    SCHED.at(step)
}

#[jit]
fn sched_at_no_warmup(step: &Tensor) -> Tensor {
    optim::warmup_cosine(1.0, 0, 10, 0.1).at(step)
}

#[test]
fn warmup_cosine_matches_its_formula_eagerly_and_jitted() {
    // 0, inside the warm-up, its end, the middle of the decay, the end, after.
    for s in [0usize, 1, 2, 3, 4, 5, 9] {
        let want = sched_ref(s);
        for step in [Tensor::scalar(s as i32), Tensor::scalar(s as f32)] {
            let eager = SCHED.at(&step).item::<f64>().unwrap();
            let jitted = sched_at(&step).item::<f64>().unwrap();
            assert!(
                (eager - want).abs() <= 1e-15,
                "step {s}: eager {eager} vs {want}"
            );
            assert!(
                (jitted - want).abs() <= 1e-15,
                "step {s}: jitted {jitted} vs {want}"
            );
        }
    }
    assert_eq!(sched_at(&Tensor::scalar(0i32)).item::<f64>().unwrap(), 0.0);
    let peak = sched_at(&Tensor::scalar(2i32)).item::<f64>().unwrap();
    assert!((peak - 0.01).abs() <= 1e-17, "the peak: {peak}");
    assert_eq!(
        sched_at(&Tensor::scalar(5i32)).item::<f64>().unwrap(),
        0.001,
        "the end"
    );
    assert_eq!(
        sched_at(&Tensor::scalar(500i32)).item::<f64>().unwrap(),
        0.001
    );
    assert_eq!(
        sched_at::cache_stats().misses,
        2,
        "one program per step dtype, whatever the step"
    );
    // No warm-up: the peak at step 0, half way at the middle.
    let at = |s: i32| {
        sched_at_no_warmup(&Tensor::scalar(s))
            .item::<f64>()
            .unwrap()
    };
    assert_eq!(at(0), 1.0);
    assert!((at(5) - 0.55).abs() <= 1e-15, "{}", at(5));
    assert_eq!(at(10), 0.1);
    // Constant schedules, and a custom one.
    let step = Tensor::scalar(7i32);
    assert_eq!(optim::constant(0.3).at(&step).item::<f64>().unwrap(), 0.3);
    assert_eq!(0.25f64.at(&step).item::<f64>().unwrap(), 0.25);
    let halving = optim::from_fn(|s: &Tensor| 0.5 * (-(s.cast(DType::F64)) * 2f64.ln()).exp());
    assert!((halving.at(&step).item::<f64>().unwrap() - 0.5 / 128.0).abs() < 1e-15);
    // The value is weakly typed: it keeps f32 parameters f32.
    let w = Tensor::ones(&[2], DType::F32);
    assert_eq!((&w * SCHED.at(&step)).dtype(), DType::F32);
}

type TrainOpt = Chain<ClipByGlobalNorm, Adam<WarmupCosine>>;

/// nanoGPT's recipe: clipping at 1, AdamW with warm-up and cosine decay,
/// decay on matrices only.
fn train_opt() -> TrainOpt {
    optim::clip_by_global_norm(1.0).then(
        optim::adamw(SCHED, 0.9, 0.95, 1e-8, 0.1).decay_mask(Mask::by_leaf(|t| t.ndim() >= 2)),
    )
}

fn train_step_eager(
    p: Net,
    s: StateOf<TrainOpt, Net>,
    x: &Tensor,
    y: &Tensor,
) -> (Net, StateOf<TrainOpt, Net>, Tensor) {
    let (l, g) = value_and_grad(|p: &Net| loss(p, x, y), &p);
    let (p, s) = train_opt().update(&g, s, p);
    (p, s, l)
}

#[jit]
fn train_step(
    p: Net,
    s: StateOf<TrainOpt, Net>,
    x: &Tensor,
    y: &Tensor,
) -> (Net, StateOf<TrainOpt, Net>, Tensor) {
    let (l, g) = value_and_grad(|p: &Net| loss(p, x, y), &p);
    let (p, s) = train_opt().update(&g, s, p);
    (p, s, l)
}

/// The gradient alone, as outputs: what the step computes before updating.
#[jit]
fn grad_only(p: &Net, x: &Tensor, y: &Tensor) -> (Net, Tensor) {
    let (l, g) = value_and_grad(|p: &Net| loss(p, x, y), p);
    (g, l)
}

fn fresh(t: &impl Tree) -> Vec<Tensor> {
    t.leaves()
        .iter()
        .map(|l| {
            Tensor::from_vec(to_f64s(l).iter().map(|&v| v as f32).collect(), l.shape()).unwrap()
        })
        .collect()
}

fn batch(rng: &mut Rng, n: usize, dims: &[usize]) -> (Tensor, Tensor) {
    (
        random_tensor(rng, &[n, dims[0]], DType::F32, -1.0, 1.0, false),
        random_tensor(
            rng,
            &[n, *dims.last().unwrap()],
            DType::F32,
            -0.5,
            0.5,
            false,
        ),
    )
}

/// Eight steps through the warm-up, the decay and past the end: donated
/// (every leaf unshared) and shared (the caller keeps clones) agree bit for
/// bit, the shared copies are untouched, the eager step agrees to rounding,
/// the loss falls, and the step counter never causes a recompilation.
#[test]
fn a_jitted_donated_training_step_matches_the_shared_one_and_compiles_once() {
    let dims = [6, 16, 4];
    let mut rng = Rng::new(21);
    let p0 = net(&mut rng, &dims, DType::F32);
    let s0 = train_opt().init(&p0);
    let batches: Vec<(Tensor, Tensor)> = (0..8).map(|_| batch(&mut rng, 32, &dims)).collect();
    let rebuild = |template: &Net| template.rebuild(&mut fresh(template).into_iter());
    let (mut pd, mut sd) = (rebuild(&p0), s0.clone());
    let (mut ps, mut ss) = (p0.clone(), s0.clone());
    let (mut pe, mut se) = (p0.clone(), s0);
    let mut losses = Vec::new();
    for (k, (x, y)) in batches.iter().enumerate() {
        let addrs = |p: &Net, s: &StateOf<TrainOpt, Net>| -> std::collections::BTreeSet<usize> {
            p.leaves()
                .iter()
                .chain(&s.leaves())
                .map(|t| t.storage_addr().unwrap())
                .collect()
        };
        let given = addrs(&pd, &sd);
        let l;
        (pd, sd, l) = train_step(pd, sd, x, y);
        losses.push(l.item::<f32>().unwrap());
        if k > 0 {
            // Every new parameter and moment written over an old one (the
            // state of step 0 is shared with the other runs: not donated).
            assert_eq!(addrs(&pd, &sd), given, "step {k}: updated in place");
        }
        let (keep_p, keep_s) = (ps.clone(), ss.clone());
        let before = (leaves64(&keep_p), leaves64(&keep_s));
        let ls;
        (ps, ss, ls) = train_step(ps, ss, x, y);
        assert_eq!(
            (leaves64(&keep_p), leaves64(&keep_s)),
            before,
            "step {k}: the caller's copies were written"
        );
        assert_eq!(bits(&l), bits(&ls), "step {k}: loss");
        for (i, (a, b)) in pd.leaves().iter().zip(ps.leaves()).enumerate() {
            assert_eq!(
                bits(a),
                bits(&b),
                "step {k}: parameter {i}: donated vs shared"
            );
        }
        for (i, (a, b)) in sd.leaves().iter().zip(ss.leaves()).enumerate() {
            assert_eq!(
                bits(a),
                bits(&b),
                "step {k}: state leaf {i}: donated vs shared"
            );
        }
        (pe, se, _) = train_step_eager(pe, se, x, y);
        assert_leaves_close(
            &pd,
            &leaves64(&pe),
            1e-4,
            &format!("step {k}: jitted vs eager"),
        );
    }
    assert_eq!(sd.1.count.item::<i32>().unwrap(), 8);
    let stats = train_step::cache_stats();
    assert_eq!(stats.misses, 1, "the step counter is traced: {stats:?}");
    assert_eq!(stats.hits, 15, "{stats:?}");
    assert!(losses[7] < losses[0], "the loss falls: {losses:?}");
}

/// The update adds no full-size temporary: the step's arena is at most the
/// gradient computation's plus the gradients themselves (outputs there,
/// temporaries here) and a few scalars; every new parameter and moment is
/// written into its donated buffer.
#[test]
fn the_fused_update_adds_no_full_size_temporaries() {
    let dims = [64, 256, 256, 32];
    let mut rng = Rng::new(31);
    let p = net(&mut rng, &dims, DType::F32);
    let s = train_opt().init(&p);
    let (x, y) = batch(&mut rng, 16, &dims);
    let param_bytes: usize = p.leaves().iter().map(|t| t.size_bytes()).sum();
    let step = train_step::lower(p.clone(), s, &x, &y)
        .unwrap()
        .compile()
        .unwrap();
    let grad = grad_only::lower(&p, &x, &y).unwrap().compile().unwrap();
    let (ms, mg) = (step.memory_analysis(), grad.memory_analysis());
    println!(
        "training step {ms:?}
gradient only {mg:?}
parameters {param_bytes} bytes"
    );
    let small = 4096;
    assert!(
        ms.temp_bytes <= mg.temp_bytes + param_bytes + small,
        "the update allocates full-size temporaries: step {ms:?}, gradient {mg:?}
{}",
        step.kernels_text()
    );
    assert!(
        ms.alias_bytes >= 3 * param_bytes,
        "parameters and both moments written in place: {ms:?} ({param_bytes} bytes of parameters)
{}",
        step.kernels_text()
    );
}

/// The jitted update of any optimiser on given gradients (`try_call`: an
/// error comes back with its kind and line).
#[jit]
fn chain_step(p: Net, s: StateOf<TrainOpt, Net>, g: &Net) -> (Net, StateOf<TrainOpt, Net>) {
    train_opt().update(g, s, p)
}

type Jitted<'a, O> =
    &'a dyn Fn(Net, StateOf<O, Net>, &Net) -> Result<(Net, StateOf<O, Net>), jitfuse::Error>;

/// What `f` panicked with (it must panic): eagerly, errors are panics whose
/// message ends with the user's line.
fn eager_panic(f: impl FnOnce()) -> String {
    let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("an error");
    crate::common::panic_text(&*p)
}

/// Gradients and states that do not match the parameters, given to `opt`
/// eagerly and through `jitted`: each an error of the right kind naming the
/// optimiser, the leaf by its path, both types and the line of the update,
/// never a broadcast into the parameters (gradients `f32[2,3]` for a
/// parameter `f32[3]` used to give back a parameter `f32[2,3]`).
fn check_mismatches<O: Optimizer>(name: &str, opt: &O, jitted: Jitted<O>) {
    let mut rng = Rng::new(41);
    let p = net(&mut rng, &[2, 4, 3], DType::F32);
    let g = p.map(|t| t.ones_like());
    let mut wide = g.clone();
    wide.layers[1].b = Tensor::ones(&[2, 3], DType::F32);
    let mut typed = g.clone();
    typed.gain = Tensor::ones(&[3], DType::F64);
    let mut deeper = g.clone();
    deeper.layers.push(deeper.layers[1].clone());
    let mut fewer = g.clone();
    fewer.layers.pop();
    use jitfuse::ErrorKind::{Argument, DType as Dt, Shape};
    let cases: Vec<(&str, Net, jitfuse::ErrorKind, String)> = vec![
        (
            "a broadcastable gradient",
            wide.clone(),
            Shape,
            "the gradient of `layers.1.b` is f32[2,3], the parameter is f32[3]".into(),
        ),
        (
            "an f64 gradient",
            typed,
            Dt,
            "the gradient of `gain` is f64[3], the parameter is f32[3]".into(),
        ),
        (
            "an extra layer",
            deeper,
            Argument,
            "the gradient tree does not have the parameters' structure: its leaf 4 is \
             `layers.2.w` where the parameters' is `gain` (7 leaves, the parameters 5)"
                .into(),
        ),
        (
            "a missing layer",
            fewer,
            Argument,
            "the gradient tree does not have the parameters' structure".into(),
        ),
    ];
    for (what, grads, kind, want) in cases {
        let line = line!() + 1;
        let msg = eager_panic(|| drop(opt.update(&grads, opt.init(&p), p.clone())));
        assert!(
            msg.contains(name) && msg.contains(&want),
            "{name}, {what}, eager: {msg}"
        );
        assert!(
            msg.contains(&format!("(at tests/runtime/optim.rs:{line}:")) && msg.ends_with(')'),
            "{name}, {what}, eager: the line of the update: {msg}"
        );
        let e = jitted(p.clone(), opt.init(&p), &grads).err().unwrap();
        assert_eq!(e.kind, kind, "{name}, {what}, jitted: {e}");
        assert!(
            e.message.contains(name) && e.message.contains(&want),
            "{name}, {what}, jitted: {e}"
        );
        assert_eq!(
            e.location.map(|l| l.file()),
            Some("tests/runtime/optim.rs"),
            "{name}, {what}, jitted: {e}"
        );
    }
    // A state made for other parameters (moments of another shape; in a
    // chain, the optimiser holding them reports it).
    let mut other = p.clone();
    other.layers[1].b = Tensor::zeros(&[2, 3], DType::F32);
    if opt.init(&p).leaves().len() > 1 {
        let want = "of `layers.1.b` is f32[2,3], the parameter is f32[3]";
        let msg = eager_panic(|| drop(opt.update(&g, opt.init(&other), p.clone())));
        assert!(
            msg.contains("update: the state's") && msg.contains(want),
            "{name}, a state for other parameters: {msg}"
        );
        let e = jitted(p.clone(), opt.init(&other), &g).err().unwrap();
        assert_eq!(e.kind, Shape, "{e}");
        assert!(
            e.message.contains("update: the state's") && e.message.contains(want),
            "{e}"
        );
    }
    // Matching, it steps.
    let (q, _) = jitted(p.clone(), opt.init(&p), &g).unwrap();
    assert_eq!(q.layers[1].b.shape(), &[3]);
}

#[test]
fn every_optimiser_checks_gradients_and_state_against_the_parameters() {
    check_mismatches("`sgd` update", &sgd_opt(), &|p, s, g| {
        sgd_step::try_call(p, s, g)
    });
    check_mismatches("`momentum` update", &momentum_opt(), &|p, s, g| {
        momentum_step::try_call(p, s, g, false)
    });
    check_mismatches("`momentum` update", &nesterov_opt(), &|p, s, g| {
        momentum_step::try_call(p, s, g, true)
    });
    check_mismatches("`adam` update", &adam_opt(), &|p, s, g| {
        adam_step::try_call(p, s, g)
    });
    // With a weight-decay mask by leaf.
    check_mismatches("`adamw` update", &adamw_opt(), &|p, s, g| {
        adamw_step_checked::try_call(p, s, g)
    });
    // Chained: clipping sees the gradients first.
    check_mismatches("`clip_by_global_norm`", &train_opt(), &|p, s, g| {
        chain_step::try_call(p, s, g)
    });
}

#[jit]
fn zipped(a: &Vec<Tensor>, b: &Vec<Tensor>) -> Vec<Tensor> {
    a.zip_map(b, |x, y| x + y)
}

/// The other ways in: `apply_updates`, a state's step counter, a learning
/// rate that is not a scalar, and `Tree`'s own leaf-by-leaf combinators
/// (a different leaf count was a bare assertion, reported inside `#[jit]` as
/// the user's body panicking, without its line).
#[test]
fn updates_counters_rates_and_tree_combinators_are_checked() {
    let mut rng = Rng::new(42);
    let p = net(&mut rng, &[2, 4, 3], DType::F32);
    let mut u = p.map(|t| t.zeros_like());
    u.layers[0].w = Tensor::zeros(&[3, 2, 4], DType::F32);
    let msg = eager_panic(|| drop(optim::apply_updates(&p, &u)));
    assert!(
        msg.contains(
            "`apply_updates`: the update of `layers.0.w` is f32[3,2,4], the parameter is f32[2,4]"
        ),
        "{msg}"
    );
    // A lone tensor has no leaf name.
    let w = Tensor::ones(&[3], DType::F32);
    let msg = eager_panic(|| {
        drop(optim::sgd(0.1).update(
            &Tensor::ones(&[2, 3], DType::F32),
            optim::sgd(0.1).init(&w),
            w.clone(),
        ))
    });
    assert!(
        msg.contains("`sgd` update: the gradient is f32[2,3], the parameter is f32[3]"),
        "{msg}"
    );

    let g = p.map(|t| t.ones_like());
    let bad_count = optim::SgdState {
        count: Tensor::zeros(&[2], DType::I32),
    };
    let e = sgd_step::try_call(p.clone(), bad_count.clone(), &g)
        .err()
        .unwrap();
    assert_eq!(e.kind, jitfuse::ErrorKind::Shape, "{e}");
    assert!(
        e.message.contains(
            "`sgd` update: the state's step counter `count` is i32[2], not an integer scalar"
        ),
        "{e}"
    );
    let msg = eager_panic(|| drop(sgd_opt().update(&g, bad_count, p.clone())));
    assert!(msg.contains("`count` is i32[2]"), "{msg}");
    let mut s = adam_opt().init(&p);
    s.count = Tensor::scalar(0f32);
    let e = adam_step::try_call(p.clone(), s, &g).err().unwrap();
    assert_eq!(e.kind, jitfuse::ErrorKind::DType, "{e}");
    assert!(e.message.contains("`count` is f32[]"), "{e}");

    for lr in [
        Tensor::vector(&[0.1f32, 0.2, 0.3]),
        Tensor::zeros(&[1], DType::F64),
    ] {
        let ty = format!("{}{:?}", lr.dtype(), lr.shape()).replace(' ', "");
        let opt = optim::sgd(lr);
        let msg = eager_panic(|| drop(opt.update(&g, opt.init(&p), p.clone())));
        assert!(
            msg.contains("`sgd` update: the learning rate is") && msg.contains("not a scalar"),
            "{ty}: {msg}"
        );
        let opt = optim::adam(
            optim::from_fn(|s: &Tensor| s.cast(DType::F64).reshape(&[1])),
            0.9,
            0.99,
            1e-8,
        );
        let msg = eager_panic(|| drop(opt.update(&g, opt.init(&p), p.clone())));
        assert!(
            msg.contains("the learning rate is f64[1], not a scalar"),
            "{msg}"
        );
    }

    let (a, b) = (vec![Tensor::scalar(1f32); 2], vec![Tensor::scalar(1f32); 3]);
    let line = line!() + 1;
    let msg = eager_panic(|| drop(a.zip_map(&b, |x, y| x + y)));
    assert!(
        msg.contains("`Tree::zip_map` of trees with different leaf counts: tree 0 has 2 leaves, tree 1 has 3")
            && msg.contains(&format!("optim.rs:{line}:")),
        "{msg}"
    );
    let e = zipped::try_call(&a, &b).err().unwrap();
    assert_eq!(e.kind, jitfuse::ErrorKind::Argument, "{e}");
    assert_eq!(
        e.location.map(|l| l.file()),
        Some("tests/runtime/optim.rs"),
        "{e}"
    );
    let msg = eager_panic(|| drop(Tree::map_n(&[&a, &b], |l| &l[0] + &l[1])));
    assert!(
        msg.contains("`Tree::map_n` of trees with different leaf counts"),
        "{msg}"
    );
}
