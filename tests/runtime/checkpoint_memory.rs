//! Checkpoint savings survive what follows the gradient: for an MLP, an unrolled recurrent
//! cell and a stack of transformer blocks, each layer (or time step) checkpointed, the
//! temporaries of a training step with an update (SGD or Adam), clipping by the global
//! norm, or a logged gradient norm stay within 1.2x of the gradient alone's (plus the
//! gradients themselves, which the step keeps as temporaries where the gradient alone
//! returns them).

use crate::common::Rng;
use jitfuse::optim::{self, Optimizer};
use jitfuse::prelude::*;
use jitfuse::{attention, AttnMask};

fn weights(shapes: &[&[usize]], seed: u64) -> Vec<Tensor> {
    let mut rng = Rng::new(seed);
    shapes
        .iter()
        .map(|s| {
            let n: usize = s.iter().product();
            Tensor::from_vec((0..n).map(|_| rng.uniform(-0.1, 0.1) as f32).collect(), s).unwrap()
        })
        .collect()
}

fn data(shape: &[usize], seed: u64) -> Tensor {
    let mut rng = Rng::new(seed);
    let n: usize = shape.iter().product();
    Tensor::from_vec(
        (0..n).map(|_| rng.uniform(-1.0, 1.0) as f32).collect(),
        shape,
    )
    .unwrap()
}

// An MLP of 12 layers of width 256 on a batch of 128, each layer checkpointed.
fn mlp_loss(p: &Vec<Tensor>, x: &Tensor) -> Tensor {
    let mut h = x.clone();
    for w in p {
        h = checkpoint(
            |(h, w): &(Tensor, Tensor)| h.matmul(w).tanh() + h,
            &(h, w.clone()),
        );
    }
    (&h * &h).mean_all()
}

// A recurrent cell with two gates unrolled over 64 steps, each step checkpointed.
fn rnn_loss(p: &Vec<Tensor>, xs: &Tensor) -> Tensor {
    let (steps, b, h_dim) = (xs.shape()[0], xs.shape()[1], xs.shape()[2]);
    let mut h = Tensor::zeros(&[b, h_dim], DType::F32);
    for t in 0..steps {
        let x = xs
            .slice_axis(0, t as isize, t as isize + 1, 1)
            .reshape(&[b as isize, h_dim as isize]);
        h = checkpoint(
            |(p, h, x): &(Vec<Tensor>, Tensor, Tensor)| {
                let z = (h.matmul(&p[0]) + x.matmul(&p[1])).sigmoid();
                let c = (h.matmul(&p[2]) + x.matmul(&p[3])).tanh();
                &z * h + (1.0 - &z) * c
            },
            &(p.clone(), h, x),
        );
    }
    (&h * &h).mean_all()
}

// Four pre-norm transformer blocks (4 heads of 32 over 256 positions, causal), each
// checkpointed; parameters per block: qkv, out, up, down.
fn block(p: &[Tensor], x: &Tensor) -> Tensor {
    let (t, w) = (x.shape()[0] as isize, x.shape()[1] as isize);
    let g = Tensor::ones(&[w as usize], DType::F32);
    let a = x.layer_norm(&g, None, 1e-5, -1);
    let qkv = a
        .matmul(&p[0])
        .reshape(&[t, 3, 4, w / 4])
        .transpose(&[1, 2, 0, 3]);
    let part = |i: isize| qkv.slice_axis(0, i, i + 1, 1).reshape(&[4, t, w / 4]);
    let o = attention(&part(0), &part(1), &part(2), AttnMask::Causal);
    let x = x + o.transpose(&[1, 0, 2]).reshape(&[t, w]).matmul(&p[1]);
    let m = x.layer_norm(&g, None, 1e-5, -1);
    &x + m.matmul(&p[2]).gelu().matmul(&p[3])
}

fn transformer_loss(p: &Vec<Tensor>, x: &Tensor) -> Tensor {
    let mut h = x.clone();
    for l in 0..p.len() / 4 {
        let ps: Vec<Tensor> = p[4 * l..4 * l + 4].to_vec();
        h = checkpoint(|(ps, h): &(Vec<Tensor>, Tensor)| block(ps, h), &(ps, h));
    }
    (&h * &h).mean_all()
}

// A residual chain of 48 layers with no checkpoint of its own: what `"auto"` cuts into
// segments, and what an explicit budget's recomputation search starts from.
fn chain_loss(p: &Vec<Tensor>, x: &Tensor) -> Tensor {
    let mut h = x.clone();
    for w in p {
        h = h.matmul(w).tanh() + &h;
    }
    (&h * &h).mean_all()
}

/// The gradient alone, and four training steps after it, of one loss.
macro_rules! steps {
    ($m:ident, $loss:ident) => {
        #[allow(dead_code)] // each model uses some of the steps
        mod $m {
            use super::*;
            #[jit]
            pub fn grad_only(p: &Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
                jitfuse::grad(|p: &Vec<Tensor>| $loss(p, x), p)
            }
            #[jit]
            pub fn sgd(p: Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
                let g = jitfuse::grad(|p: &Vec<Tensor>| $loss(p, x), &p);
                let opt = optim::sgd(0.01);
                opt.update(&g, opt.init(&p), p).0
            }
            #[jit]
            pub fn clipped_sgd(p: Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
                let g = jitfuse::grad(|p: &Vec<Tensor>| $loss(p, x), &p);
                let opt = optim::clip_by_global_norm(1.0).then(optim::sgd(0.01));
                opt.update(&g, opt.init(&p), p).0
            }
            #[jit]
            pub fn clipped_adam(p: Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
                let g = jitfuse::grad(|p: &Vec<Tensor>| $loss(p, x), &p);
                let opt = optim::clip_by_global_norm(1.0).then(optim::adam(1e-3, 0.9, 0.999, 1e-8));
                opt.update(&g, opt.init(&p), p).0
            }
            #[jit]
            pub fn logged_norm(p: Vec<Tensor>, x: &Tensor) -> (Vec<Tensor>, Tensor) {
                let g = jitfuse::grad(|p: &Vec<Tensor>| $loss(p, x), &p);
                let norm = optim::global_norm(&g);
                let opt = optim::sgd(0.01);
                (opt.update(&g, opt.init(&p), p).0, norm)
            }

            /// The clipped Adam step again, for the budget test alone (a budget is the
            /// function's, and tests run in parallel).
            #[jit]
            pub fn budgeted(p: Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
                let g = jitfuse::grad(|p: &Vec<Tensor>| $loss(p, x), &p);
                let opt = optim::clip_by_global_norm(1.0).then(optim::adam(1e-3, 0.9, 0.999, 1e-8));
                opt.update(&g, opt.init(&p), p).0
            }

            /// `(auto's peak, [(budget, Ok(peak) or the refusal)])` for budgets at auto's
            /// peak, 5 % above and half of it, each lowered, compiled and then called: the
            /// call must reuse the lowered program.
            pub fn budgets(
                p: &Vec<Tensor>,
                x: &Tensor,
            ) -> (usize, Vec<(usize, Result<usize, String>)>) {
                let peak = |b: Option<usize>| {
                    budgeted::set_memory_budget(b);
                    budgeted::lower(p.clone(), x)
                        .unwrap()
                        .compile()
                        .map(|c| c.memory_analysis().peak_bytes)
                        .map_err(|e| e.to_string())
                };
                let auto = peak(Some(jitfuse::AUTO_MEMORY_BUDGET)).unwrap();
                let mut rows = Vec::new();
                for b in [auto, auto + auto / 20, auto / 2] {
                    let got = peak(Some(b));
                    let misses = budgeted::cache_stats().misses;
                    if got.is_ok() {
                        let _ = budgeted(p.clone(), x);
                        assert_eq!(
                            budgeted::cache_stats().misses,
                            misses,
                            "the call runs the lowered program"
                        );
                    }
                    rows.push((b, got));
                }
                budgeted::set_memory_budget(None);
                (auto, rows)
            }

            pub fn temps(p: &Vec<Tensor>, x: &Tensor) -> Vec<(&'static str, usize)> {
                let t = |l: jitfuse::Lowered| l.compile().unwrap().memory_analysis().temp_bytes;
                vec![
                    ("gradient alone", t(grad_only::lower(p, x).unwrap())),
                    ("sgd", t(sgd::lower(p.clone(), x).unwrap())),
                    ("clip + sgd", t(clipped_sgd::lower(p.clone(), x).unwrap())),
                    ("clip + adam", t(clipped_adam::lower(p.clone(), x).unwrap())),
                    (
                        "sgd + logged norm",
                        t(logged_norm::lower(p.clone(), x).unwrap()),
                    ),
                ]
            }
        }
    };
}

steps!(mlp, mlp_loss);
steps!(rnn, rnn_loss);
steps!(transformer, transformer_loss);
steps!(chain, chain_loss);

fn check(model: &str, p: &[Tensor], temps: &[(&str, usize)]) {
    let grads: usize = p
        .iter()
        .map(|t| t.shape().iter().product::<usize>() * 4)
        .sum();
    let alone = temps[0].1;
    let bound = (1.2 * (alone + grads) as f64) as usize;
    eprintln!("{model}: {temps:?} (gradients {grads} bytes)");
    for &(what, bytes) in &temps[1..] {
        assert!(
            bytes <= bound,
            "{model}, {what}: {bytes} bytes of temporaries against {alone} for the gradient alone \
             (+ {grads} of gradients): {temps:?}"
        );
    }
}

#[test]
fn checkpoint_savings_survive_updates_clipping_and_norms() {
    let p = weights(&[&[256usize, 256][..]; 12], 1);
    check("mlp", &p, &mlp::temps(&p, &data(&[128, 256], 2)));
    let p = weights(&[&[64usize, 64][..]; 4], 3);
    check("rnn", &p, &rnn::temps(&p, &data(&[64, 32, 64], 4)));
    let shapes: Vec<&[usize]> = (0..4)
        .flat_map(|_| [&[128usize, 384][..], &[128, 128], &[128, 512], &[512, 128]])
        .collect();
    let p = weights(&shapes, 5);
    check(
        "transformer",
        &p,
        &transformer::temps(&p, &data(&[256, 128], 6)),
    );
}

/// The clipped, checkpointed recurrent step computes what it computes unfused: the
/// gradient's norm clips the update as written out eagerly.
#[test]
fn the_clipped_checkpointed_recurrent_step_matches_eager() {
    let p = weights(&[&[64usize, 64][..]; 4], 3);
    let xs = data(&[16, 8, 64], 4);
    let got = rnn::clipped_sgd(p.clone(), &xs);
    let g = jitfuse::grad(|p: &Vec<Tensor>| rnn_loss(p, &xs), &p);
    let opt = optim::clip_by_global_norm(1.0).then(optim::sgd(0.01));
    let want = opt.update(&g, opt.init(&p), p.clone()).0;
    for (a, b) in got.iter().zip(&want) {
        crate::common::assert_close(
            a,
            b,
            crate::common::Tol::rel(DType::F32, 1e-4),
            "clipped step",
        );
    }
}

/// One budget strategy on every path: a budget at or above what `"auto"` reaches is met by
/// `lower(..).compile()` exactly as by a call (which then runs that program), and a budget
/// below it is refused with an "at best" never above `"auto"`'s peak.
#[test]
fn budgets_at_or_above_auto_are_met_on_every_path() {
    let models: Vec<(&str, Vec<Tensor>, Tensor)> = vec![
        (
            "mlp",
            weights(&[&[256usize, 256][..]; 6], 1),
            data(&[128, 256], 2),
        ),
        (
            "rnn",
            weights(&[&[64usize, 64][..]; 4], 3),
            data(&[32, 16, 64], 4),
        ),
        (
            "chain",
            weights(&[&[64usize, 64][..]; 48], 7),
            data(&[256, 64], 8),
        ),
        (
            "transformer",
            weights(
                &[&[64usize, 192][..], &[64, 64], &[64, 256], &[256, 64]].repeat(2),
                9,
            ),
            data(&[128, 64], 10),
        ),
    ];
    for (name, p, x) in models {
        let (auto, rows) = match name {
            "mlp" => mlp::budgets(&p, &x),
            "rnn" => rnn::budgets(&p, &x),
            "transformer" => transformer::budgets(&p, &x),
            _ => chain::budgets(&p, &x),
        };
        for (b, got) in &rows {
            match got {
                Ok(peak) => assert!(peak <= b, "{name}: budget {b}, peak {peak}"),
                Err(e) if *b >= auto => {
                    panic!("{name}: budget {b} >= auto's peak {auto} refused: {e}")
                }
                Err(e) => {
                    let best: usize = e
                        .split("brings it down to ")
                        .nth(1)
                        .map(|r| {
                            r.chars()
                                .take_while(|c| c.is_ascii_digit())
                                .collect::<String>()
                        })
                        .and_then(|n| n.parse().ok())
                        .unwrap_or_else(|| panic!("{name}: {e}"));
                    assert!(
                        best <= auto,
                        "{name}: at best {best} above auto's {auto}: {e}"
                    );
                }
            }
        }
    }
}

/// A residual conv net (ResNet's basic blocks: conv, batch norm, ReLU, conv, batch norm,
/// the shortcut added, ReLU), each block optionally a checkpoint region that saves only its
/// convolutions' outputs (`Policy::DotsSaveable`).
mod residual {
    use jitfuse::nn::{BatchNorm, BatchStats, Conv, Dense};
    use jitfuse::prelude::*;
    use jitfuse::{avg_pool, checkpoint_with, ConvOptions, Padding};

    #[derive(Tree, Clone, Debug)]
    pub struct Block {
        conv1: Conv,
        bn1: BatchNorm,
        conv2: Conv,
        bn2: BatchNorm,
    }

    #[derive(Tree, Clone, Debug)]
    pub struct Net {
        stem: Conv,
        blocks: Vec<Block>,
        head: Dense,
    }

    pub const FEATURES: usize = 8;

    pub fn init(blocks: usize) -> (Net, Vec<(BatchStats, BatchStats)>) {
        let k = Key::new(5).split(2 + 2 * blocks);
        let mut stats = vec![];
        let blocks = (0..blocks)
            .map(|i| {
                let ((bn1, s1), (bn2, s2)) = (BatchNorm::init(FEATURES), BatchNorm::init(FEATURES));
                stats.push((s1, s2));
                Block {
                    conv1: Conv::init_without_bias(&k[2 + 2 * i], &[3, 3], FEATURES, FEATURES),
                    bn1,
                    conv2: Conv::init_without_bias(&k[3 + 2 * i], &[3, 3], FEATURES, FEATURES),
                    bn2,
                }
            })
            .collect();
        let net = Net {
            stem: Conv::init(&k[0], &[3, 3], 1, FEATURES),
            blocks,
            head: Dense::init(&k[1], FEATURES, 10),
        };
        (net, stats)
    }

    fn same() -> ConvOptions {
        ConvOptions {
            padding: Padding::Same,
            ..Default::default()
        }
    }

    fn block(b: &Block, h: &Tensor, s: &(BatchStats, BatchStats)) -> (Tensor, Vec<BatchStats>) {
        let (y, s1) = b.bn1.train(&b.conv1.apply(h, same()), &s.0);
        let (y, s2) = b.bn2.train(&b.conv2.apply(&y.relu(), same()), &s.1);
        ((y + h).relu(), vec![s1, s2])
    }

    fn loss(
        p: &Net,
        s: &[(BatchStats, BatchStats)],
        x: &Tensor,
        y: &Tensor,
        remat: bool,
    ) -> (Tensor, Vec<BatchStats>) {
        let mut h = p.stem.apply(x, same()).relu();
        let mut out = vec![];
        for (b, bs) in p.blocks.iter().zip(s) {
            let (next, st) = if remat {
                checkpoint_with(Policy::DotsSaveable, |h: &Tensor| block(b, h, bs), &h)
            } else {
                block(b, &h, bs)
            };
            h = next;
            out.extend(st);
        }
        let side = h.shape()[1];
        let pooled =
            avg_pool(&h, &[side, side], Default::default()).reshape(&[-1, FEATURES as isize]);
        (
            softmax_cross_entropy_with_labels(&p.head.apply(&pooled), y),
            out,
        )
    }

    /// The loss, the gradient and the batch norms' updated statistics.
    #[jit]
    pub fn grads(
        p: &Net,
        s: &Vec<(BatchStats, BatchStats)>,
        x: &Tensor,
        y: &Tensor,
        remat: bool,
    ) -> (Tensor, Net, Vec<BatchStats>) {
        let ((l, st), g) = value_and_grad_with_aux(|p: &Net| loss(p, s, x, y, remat), p);
        (l, g, st)
    }
}

/// Checkpointing each residual block with `Policy::DotsSaveable` keeps only what its
/// convolutions computed: the batch norms and ReLUs are recomputed from those in the
/// gradient, which is the same (loss, gradient and running statistics), in temporaries
/// smaller by an activation per block but one.
#[test]
fn residual_blocks_that_keep_only_their_convolutions_outputs() {
    use crate::common::{assert_close, float_norm_tol, float_tol};
    let blocks = 3;
    let (p, s) = residual::init(blocks);
    let (n, side) = (32, 28);
    let x = data(&[n, side, side, 1], 6);
    let y = Tensor::from_vec((0..n as i32).map(|i| i % 10).collect(), &[n]).unwrap();
    let kept = residual::grads(&p, &s, &x, &y, false);
    let remat = residual::grads(&p, &s, &x, &y, true);
    assert_close(&remat.0, &kept.0, float_tol(DType::F32), "loss");
    for (a, b) in remat.1.leaves().iter().zip(kept.1.leaves()) {
        assert_close(a, &b, float_norm_tol(DType::F32, &b), "gradient");
    }
    for (a, b) in remat.2.leaves().iter().zip(kept.2.leaves()) {
        assert_close(a, &b, float_tol(DType::F32), "running statistics");
    }
    let temp = |remat: bool| {
        residual::grads::lower(&p, &s, &x, &y, remat)
            .and_then(|l| l.compile())
            .unwrap()
            .memory_analysis()
            .temp_bytes
    };
    let (t_kept, t_remat) = (temp(false), temp(true));
    let activation = n * side * side * residual::FEATURES * 4;
    // Kept, a block saves its input, both convolutions' outputs and the ReLU of the first
    // batch norm (the second convolution's input; the compiler recomputes the masks and the
    // normalised values from the convolutions' outputs either way). Checkpointed, that ReLU
    // is recomputed when the gradient reaches the block: one activation less per block but
    // the last, whose recomputed ReLU is live at the peak.
    assert!(
        t_kept >= t_remat + (blocks - 1) * activation,
        "kept {t_kept} bytes, checkpointed {t_remat}, an activation {activation}"
    );
}
