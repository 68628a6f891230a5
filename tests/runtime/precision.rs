//! Mixed precision (`jitfuse::precision`): a policy's casts, f32 master weights trained
//! through a bf16 model alongside the f32 run, and dynamic loss scaling for f16 (skipped
//! steps, shrinking and growth by its rule), eagerly and jitted.

use crate::common::{random_tensor, to_f64s, Rng};
use jitfuse::precision::{all_finite, select_tree, LossScale, Policy};
use jitfuse::prelude::*;

#[derive(Tree, Clone, Debug)]
pub struct Model {
    w1: Tensor,
    w2: Tensor,
    steps: Tensor,
}

fn model(rng: &mut Rng) -> Model {
    Model {
        w1: random_tensor(rng, &[8, 16], DType::F32, -0.5, 0.5, false),
        w2: random_tensor(rng, &[16, 4], DType::F32, -0.5, 0.5, false),
        steps: Tensor::scalar(0i32),
    }
}

/// The loss of weights `w` on `(x, y)` computed in `policy.compute`, returned in
/// `policy.output`.
fn loss(policy: &Policy, w: &(Tensor, Tensor), x: &Tensor, y: &Tensor) -> Tensor {
    let ((w1, w2), x, y) = policy.cast_to_compute(&(w.clone(), x.clone(), y.clone()));
    let h = x.matmul(&w1).tanh();
    let err = h.matmul(&w2) - y;
    policy.cast_to_output(&err.square().mean_all())
}

fn weights(p: &Model) -> (Tensor, Tensor) {
    (p.w1.clone(), p.w2.clone())
}

#[test]
fn a_policy_casts_the_float_leaves_and_nothing_else() {
    let policy = Policy::new(DType::F32, DType::BF16, DType::F32);
    let p = model(&mut Rng::new(1));
    let c = policy.cast_to_compute(&p);
    assert_eq!(
        (c.w1.dtype(), c.w2.dtype(), c.steps.dtype()),
        (DType::BF16, DType::BF16, DType::I32)
    );
    let back = policy.cast_to_param(&c);
    assert_eq!(back.w1.dtype(), DType::F32);
    // Casting to the type a leaf has already adds nothing: the same buffer.
    let same = policy.cast_to_param(&p);
    assert_eq!(
        same.w1.to_vec::<f32>().unwrap(),
        p.w1.to_vec::<f32>().unwrap()
    );
    let err = std::panic::catch_unwind(|| Policy::new(DType::F32, DType::I32, DType::F32))
        .err()
        .map(|e| crate::common::panic_text(&*e))
        .unwrap();
    assert!(
        err.contains("Policy::new") && err.contains("compute") && err.contains("i32"),
        "{err}"
    );
}

#[jit]
fn mixed_step(p: Model, x: &Tensor, y: &Tensor, bf16: bool) -> (Model, Tensor) {
    let policy = match bf16 {
        true => Policy::new(DType::F32, DType::BF16, DType::F32),
        false => Policy::uniform(DType::F32),
    };
    let (l, g) = value_and_grad(|w: &(Tensor, Tensor)| loss(&policy, w, x, y), &weights(&p));
    let w1 = &p.w1 - 0.2 * &g.0;
    let w2 = &p.w2 - 0.2 * &g.1;
    let steps = &p.steps + 1;
    (Model { w1, w2, steps }, l)
}

#[test]
fn a_bf16_model_trains_f32_master_weights_along_the_f32_run() {
    let mut rng = Rng::new(2);
    let x = random_tensor(&mut rng, &[64, 8], DType::F32, -1.0, 1.0, false);
    let teacher = model(&mut Rng::new(3));
    let y = x.matmul(&teacher.w1).tanh().matmul(&teacher.w2);
    let p0 = model(&mut rng);
    let policy = Policy::new(DType::F32, DType::BF16, DType::F32);
    // The gradient of an f32 parameter through a bf16 model is f32.
    let g = grad(
        |w: &(Tensor, Tensor)| loss(&policy, w, &x, &y),
        &weights(&p0),
    );
    assert_eq!((g.0.dtype(), g.1.dtype()), (DType::F32, DType::F32));
    let (mut a, mut b) = (p0.clone(), p0);
    let (mut la, mut lb) = (Vec::new(), Vec::new());
    for _ in 0..300 {
        let (na, l) = mixed_step(a, &x, &y, true);
        a = na;
        la.push(v(&l));
        let (nb, l) = mixed_step(b, &x, &y, false);
        b = nb;
        lb.push(v(&l));
    }
    assert_eq!(a.w1.dtype(), DType::F32);
    let (first, last_a, last_b) = (lb[0], la[299], lb[299]);
    assert!(
        last_b < 0.3 * first,
        "the f32 run learns: {first} -> {last_b}"
    );
    // bf16 rounds each product to 8 bits: the runs part, but by little.
    assert!(
        (last_a - last_b).abs() < 0.1 * last_b + 2e-3,
        "bf16 {last_a}, f32 {last_b}"
    );
    assert!(la != lb, "the bf16 step computes in bf16");
}

/// The dynamic rule as plain arithmetic: (scale, counter) after a step.
fn rule(scale: f64, counter: i32, finite: bool, period: i32) -> (f64, i32) {
    match finite {
        true if counter == period - 1 => (scale * 2.0, 0),
        true => (scale, counter + 1),
        false => ((scale / 2.0).max(1.0), 0),
    }
}

#[jit]
fn scaled_step(p: Model, s: LossScale, x: &Tensor, y: &Tensor) -> (Model, LossScale, Tensor) {
    let policy = Policy::new(DType::F32, DType::F16, DType::F32);
    let scaled = |w: &(Tensor, Tensor)| {
        let l = loss(&policy, w, x, y).cast(DType::F16);
        s.scale(&l).cast(DType::F32)
    };
    let g = s.unscale(&grad(scaled, &weights(&p)));
    let finite = all_finite(&g);
    let stepped = Model {
        w1: &p.w1 - 0.1 * &g.0,
        w2: &p.w2 - 0.1 * &g.1,
        steps: &p.steps + 1,
    };
    let p = select_tree(&finite, &stepped, &p);
    (p, s.adjust(&finite), finite)
}

#[test]
fn a_dynamic_loss_scale_skips_overflowing_steps_shrinks_and_grows_by_its_rule() {
    let mut rng = Rng::new(4);
    let x = random_tensor(&mut rng, &[16, 8], DType::F32, -1.0, 1.0, false);
    let y = random_tensor(&mut rng, &[16, 4], DType::F32, -1.0, 1.0, false);
    let p0 = model(&mut rng);
    // 2^24 times a loss near 1 overflows f16 (largest 65504): the first steps are skipped.
    let mut s = LossScale::dynamic(2f64.powi(24)).period(3);
    let mut p = p0.clone();
    let (mut scale, mut counter) = (2f64.powi(24), 0);
    let mut skipped = 0;
    for step in 0..16 {
        let before = p.w1.to_vec::<f32>().unwrap();
        let (np, ns, finite) = scaled_step(p, s, &x, &y);
        let finite = v(&finite) != 0.0;
        let after = np.w1.to_vec::<f32>().unwrap();
        assert_eq!(
            finite,
            before != after,
            "step {step}: a step is taken iff finite"
        );
        skipped += !finite as usize;
        (scale, counter) = rule(scale, counter, finite, 3);
        assert_eq!(v(&ns.scale), scale, "step {step}");
        assert_eq!(v(&ns.counter), counter as f64, "step {step}");
        (p, s) = (np, ns);
    }
    assert!(
        skipped >= 8,
        "2^24 -> below 2^16 takes 8 halvings: {skipped}"
    );
    assert!(v(&p.steps) as usize == 16 - skipped);
    // Eagerly the same rule gives the same scale.
    let e = LossScale::dynamic(8.0).period(2);
    let t = Tensor::scalar(true);
    let e = e.adjust(&t).adjust(&t);
    assert_eq!(v(&e.scale), 16.0);
    let e = e.adjust(&Tensor::scalar(false));
    assert_eq!((v(&e.scale), v(&e.counter)), (8.0, 0.0));
    // A fixed scale and none never change.
    let f = LossScale::fixed(128.0).adjust(&Tensor::scalar(false));
    assert_eq!(v(&f.scale), 128.0);
    let g = LossScale::none().unscale(&Tensor::scalar(3.0f32));
    assert_eq!(v(&g), 3.0);
}

/// The single element of a tensor as f64.
fn v(t: &Tensor) -> f64 {
    to_f64s(t)[0]
}

/// README's example, as written there.
#[jit]
fn readme_step(w: Tensor, scale: LossScale, x: &Tensor, y: &Tensor) -> (Tensor, LossScale) {
    let policy = Policy::new(DType::F32, DType::F16, DType::F32);
    let loss = |w: &Tensor| {
        let (w, x) = policy.cast_to_compute(&(w.clone(), x.clone()));
        let l = policy.cast_to_output(&(x.matmul(&w) - y).square().mean_all());
        scale.scale(&l)
    };
    let g = scale.unscale(&grad(loss, &w)); // f32: the gradient of an f32 parameter
    let finite = all_finite(&g);
    // A step whose f16 gradients overflowed is skipped, and the scale halves.
    (
        select_tree(&finite, &(&w - 0.1 * &g), &w),
        scale.adjust(&finite),
    )
}

#[test]
fn the_readme_example_steps_and_keeps_its_scale() {
    let mut rng = Rng::new(5);
    let x = random_tensor(&mut rng, &[8, 4], DType::F32, -1.0, 1.0, false);
    let y = random_tensor(&mut rng, &[8, 2], DType::F32, -1.0, 1.0, false);
    let w = random_tensor(&mut rng, &[4, 2], DType::F32, -1.0, 1.0, false);
    let (w2, scale) = readme_step(w.clone(), LossScale::dynamic(32768.0), &x, &y);
    assert_eq!(w2.dtype(), DType::F32);
    assert!(to_f64s(&w2) != to_f64s(&w), "a finite step is taken");
    assert_eq!(v(&scale.scale), 32768.0);
    assert_eq!(v(&scale.counter), 1.0);
}
