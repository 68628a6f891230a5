//! The GPT of `examples/gpt` (the same file): its loss against the composition written
//! with one-hot labels and an `iota` causal mask (`nanogpt.rs`), its training step
//! against the same step taken eagerly, donation, and its memory report.

#[allow(dead_code)]
#[path = "../../examples/gpt/model.rs"]
mod model;

use crate::common::{assert_close, Tol};
use crate::nanogpt;
use jitfuse::optim::Optimizer;
use jitfuse::optim::StateOf;
use jitfuse::prelude::*;
use model::{eval_loss, opt, train_step, Config, Gpt, Opt};

fn cpu() -> Config {
    Config::SHAKESPEARE_CPU
}

/// nanoGPT's model with the fused attention op and integer labels computes what the
/// hand-written composition computes (whose attention the pattern pass fuses, and whose
/// cross-entropy builds a one-hot matrix), eagerly and jitted, with its gradient.
#[test]
fn the_gpt_loss_and_gradient_match_the_composition() {
    let cfg = cpu();
    let p = Gpt::init(&cfg, &Key::new(5));
    assert_eq!(
        p.parameters(),
        65 * 128 + 64 * 128 + 4 * 12 * 128 * 128 + 4 * 2 * 128 + 128
    );
    let (ids, tgt) = nanogpt::batch(3);
    let leaves = p.leaves();
    let want = nanogpt::loss(&leaves, &ids, &tgt);
    let tol = Tol::rel(DType::F32, 1e-5);
    assert_close(
        &model::loss(&p, &ids, &tgt, cfg.heads, false),
        &want,
        tol,
        "eager loss",
    );
    assert_close(
        &eval_loss(&p, &ids, &tgt, cfg.heads),
        &want,
        tol,
        "jitted loss",
    );
    // ln(65) at initialisation, as nanoGPT starts.
    let l0 = want.item::<f32>().unwrap();
    assert!((l0 - 65f32.ln()).abs() < 0.15, "{l0}");

    let g = grad(|p: &Gpt| model::loss(p, &ids, &tgt, cfg.heads, false), &p);
    let g_want = grad(|p: &Vec<Tensor>| nanogpt::loss(p, &ids, &tgt), &leaves);
    // Checkpointed blocks recompute what they do not keep: the same gradient.
    let g_remat = grad(|p: &Gpt| model::loss(p, &ids, &tgt, cfg.heads, true), &p);
    for (((a, r), b), name) in g
        .leaves()
        .iter()
        .zip(g_remat.leaves())
        .zip(&g_want)
        .zip(p.leaf_names())
    {
        assert_close(
            a,
            b,
            Tol {
                rel: 1e-4,
                abs: 1e-4,
            }
            .normwise(b),
            &format!("gradient of {name}"),
        );
        assert_close(
            &r,
            b,
            Tol {
                rel: 1e-4,
                abs: 1e-4,
            }
            .normwise(b),
            &format!("checkpointed gradient of {name}"),
        );
    }
}

/// The example's step with this test's settings, as a function of its own (so that its
/// cache counts only this test's calls; a jitted function called while tracing is traced
/// into the caller).
#[jit]
fn four_steps(
    p: Gpt,
    s: StateOf<Opt, Gpt>,
    ids: &Tensor,
    tgt: &Tensor,
) -> (Gpt, StateOf<Opt, Gpt>, Tensor) {
    train_step(p, s, ids, tgt, Config::SHAKESPEARE_CPU.heads, true, 4)
}

/// Four jitted steps, parameters and state donated, against the same steps taken
/// eagerly; the step compiles once, and every parameter is updated in place.
#[test]
fn the_gpt_train_step_matches_eager_steps_donates_and_compiles_once() {
    let cfg = cpu();
    let total = 4;
    assert!(cfg.remat);
    let init = Gpt::init(&cfg, &Key::new(6));
    let (mut p, mut s) = (init.clone(), opt(total).init(&init));
    // Fresh buffers (no clone of `init` shares them), so donation can happen.
    p = p.map(|t| Tensor::from_vec(t.to_vec::<f32>().unwrap(), t.shape()).unwrap());
    let (mut pe, mut se) = (init.clone(), opt(total).init(&init));
    let mut losses = Vec::new();
    for step in 0..total {
        let (ids, tgt) = nanogpt::batch(step % 2);
        let before: Vec<_> = p.leaves().iter().map(|t| t.storage_addr()).collect();
        let (p2, s2, l) = four_steps(p, s, &ids, &tgt);
        let after: Vec<_> = p2.leaves().iter().map(|t| t.storage_addr()).collect();
        assert_eq!(
            before, after,
            "step {step}: every parameter written in place"
        );
        (p, s) = (p2, s2);

        let (l_e, g) = value_and_grad(|p: &Gpt| model::loss(p, &ids, &tgt, cfg.heads, false), &pe);
        (pe, se) = opt(total).update(&g, se, pe);
        assert_close(
            &l,
            &l_e,
            Tol::rel(DType::F32, 1e-4),
            &format!("loss at step {step}"),
        );
        losses.push(l.item::<f32>().unwrap());
    }
    for ((a, b), name) in p.leaves().iter().zip(pe.leaves()).zip(init.leaf_names()) {
        assert_close(
            a,
            &b,
            Tol {
                rel: 1e-3,
                abs: 1e-3,
            }
            .normwise(&b),
            &format!("{name} after {total} steps"),
        );
    }
    // (The warm-up keeps the first steps' learning rate small: the loss barely moves, but
    // every parameter does.)
    for ((a, b), name) in p.leaves().iter().zip(init.leaves()).zip(init.leaf_names()) {
        assert!(
            a.to_vec::<f32>().unwrap() != b.to_vec::<f32>().unwrap(),
            "{name} never updated"
        );
    }
    assert!(
        losses.iter().all(|l| (l - 65f32.ln()).abs() < 0.15),
        "{losses:?}"
    );
    assert_eq!(
        four_steps::cache_stats().misses,
        1,
        "one compilation for every step"
    );
}

/// The step's memory: no `[B, H, T, T]` score matrix, no one-hot `[B·T, V]` labels
/// beside the logits, and the new parameters and both moments aliased to the donated
/// ones.
#[test]
fn the_gpt_train_step_memory_report() {
    let cfg = cpu();
    let p = Gpt::init(&cfg, &Key::new(7));
    let s = opt(100).init(&p);
    let (ids, tgt) = nanogpt::batch(0);
    let lowered =
        train_step::lower(p.clone(), s.clone(), &ids, &tgt, cfg.heads, cfg.remat, 100).unwrap();
    let text = lowered.as_text();
    assert!(
        text.contains("attention[causal,") && text.contains("attention_grad[causal,"),
        "{text}"
    );
    let scores = format!("[{},{},{},{}]", cfg.batch, cfg.heads, cfg.block, cfg.block);
    assert!(
        !text.contains(&scores),
        "a score matrix {scores} in the step:\n{text}"
    );
    let m = lowered.compile().unwrap().memory_analysis();
    let param_bytes = p.parameters() * 4;
    // Parameters and the two moments are written over the donated ones.
    assert!(m.alias_bytes >= 3 * param_bytes, "{m:?}");
    println!("GPT train step (CPU size): {m:?}");
    // nanoGPT's JAX step needs 54,777,988 bytes of temporaries on this model (XLA's
    // `memory_analysis`); checkpointed blocks keep their matmul results and the gradients.
    assert!(m.temp_bytes <= 54_777_988 / 2, "{m:?}");
    // Without the checkpoints the step keeps every activation the backward pass reads.
    let full = train_step::lower(p.clone(), s, &ids, &tgt, cfg.heads, false, 100)
        .unwrap()
        .memory_analysis()
        .unwrap();
    println!("without checkpoints: {full:?}");
    assert!(
        full.temp_bytes > m.temp_bytes * 3 / 2 && full.temp_bytes < 54_777_988,
        "{full:?}"
    );
}

/// The example's step under the mixed policy (`--dtype bf16`): f32 parameters and state
/// updated in place, each step's loss within bf16's reach of the f32 step's on the same
/// parameters (one step from the same start: the same data, the same recipe), and fewer
/// temporaries than the f32 step.
#[test]
fn the_gpt_mixed_precision_step_tracks_the_f32_step_in_less_memory() {
    use jitfuse::precision::Policy;
    let cfg = cpu();
    let policy = Policy::new(DType::F32, DType::BF16, DType::F32);
    let init = Gpt::init(&cfg, &Key::new(8));
    let fresh =
        |p: &Gpt| p.map(|t| Tensor::from_vec(t.to_vec::<f32>().unwrap(), t.shape()).unwrap());
    let (mut p, mut s) = (fresh(&init), opt(4).init(&init));
    for step in 0..3 {
        let (ids, tgt) = nanogpt::batch(step % 2);
        let (pf, sf) = (fresh(&p), s.clone());
        let (_, _, want) = train_step(pf, sf, &ids, &tgt, cfg.heads, cfg.remat, 4);
        let before: Vec<_> = p.leaves().iter().map(|t| t.storage_addr()).collect();
        let (p2, s2, l) =
            model::mixed_train_step(p, s, &ids, &tgt, cfg.heads, cfg.remat, 4, policy);
        assert_eq!(l.dtype(), DType::F32);
        assert!(p2.leaves().iter().all(|t| t.dtype() == DType::F32));
        let after: Vec<_> = p2.leaves().iter().map(|t| t.storage_addr()).collect();
        assert_eq!(before, after, "step {step}: parameters written in place");
        let (l, want) = (l.item::<f32>().unwrap(), want.item::<f32>().unwrap());
        // bf16 activations: a relative 2⁻⁸ per value, averaged over the batch's losses.
        assert!(
            (l - want).abs() < 0.02 * want.abs(),
            "step {step}: {l} vs f32 {want}"
        );
        (p, s) = (p2, s2);
    }
    let (ids, tgt) = nanogpt::batch(0);
    let temp = |mixed: bool| {
        let (p, s) = (init.clone(), opt(4).init(&init));
        let lowered = if mixed {
            model::mixed_train_step::lower(p, s, &ids, &tgt, cfg.heads, cfg.remat, 4, policy)
        } else {
            train_step::lower(p, s, &ids, &tgt, cfg.heads, cfg.remat, 4)
        };
        lowered
            .and_then(|l| l.compile())
            .unwrap()
            .memory_analysis()
            .temp_bytes
    };
    let (mixed, f32) = (temp(true), temp(false));
    assert!(
        (mixed as f64) < 0.75 * f32 as f64,
        "temporaries: bf16 compute {mixed} bytes, f32 {f32}"
    );
}
