//! nanoGPT's GPT (Karpathy's `model.py`) in jitfuse: pre-norm blocks of causal
//! self-attention and an exact-erf GELU MLP 4× wide, no biases, layer norms without
//! shift, learned positions, the token embedding tied to the unembedding; trained with
//! nanoGPT's recipe (AdamW, warm-up then cosine decay, weight decay on matrices,
//! clipping at global norm 1).
//!
//! The example `gpt` trains it; the test suite and `benches/transformer.rs` include this
//! file too, so the model that is measured is the model that is shown.

use jitfuse::dist::{self, Reduce};
use jitfuse::optim::{
    self, Adam, Chain, ClipByGlobalNorm, DataParallel, Mask, Optimizer, Sharded, StateOf,
    WarmupCosine,
};
use jitfuse::precision::Policy;
use jitfuse::prelude::*;
use jitfuse::{attention, AttnMask, MatmulOptions};

/// The sizes of a model and of its training batches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    pub vocab: usize,
    /// Context length (nanoGPT's `block_size`).
    pub block: usize,
    pub width: usize,
    pub heads: usize,
    pub layers: usize,
    pub batch: usize,
    /// Whether the training step checkpoints each block (keeping its matmul and attention
    /// results, recomputing the rest in the backward pass): 0.57x the temporaries of
    /// keeping everything for about 15 % more time at the CPU size.
    pub remat: bool,
}

impl Config {
    /// nanoGPT's character-level Shakespeare model with the CPU settings of its README:
    /// 4 layers, 4 heads, width 128, block 64, batch 12 (0.8 M parameters).
    pub const SHAKESPEARE_CPU: Config = Config {
        vocab: 65,
        block: 64,
        width: 128,
        heads: 4,
        layers: 4,
        batch: 12,
        remat: true,
    };

    /// nanoGPT's `train_shakespeare_char` default (its GPU size): 6 layers, 6 heads,
    /// width 384, block 256, batch 64 (10.7 M parameters).
    pub const SHAKESPEARE_GPU: Config = Config {
        vocab: 65,
        block: 256,
        width: 384,
        heads: 6,
        layers: 6,
        batch: 64,
        remat: true,
    };
}

/// One transformer block's weights (`[in, out]` matrices: `x.matmul(w)`).
#[derive(Tree, Clone, Debug)]
pub struct Block {
    /// Gain of the attention's layer norm, `[W]`.
    pub ln1: Tensor,
    /// The fused query, key and value projection, `[W, 3W]`.
    pub wqkv: Tensor,
    /// The attention's output projection, `[W, W]`.
    pub wo: Tensor,
    /// Gain of the MLP's layer norm, `[W]`.
    pub ln2: Tensor,
    /// The MLP's widening matrix, `[W, 4W]`.
    pub fc: Tensor,
    /// The MLP's output projection, `[4W, W]`.
    pub proj: Tensor,
}

/// The whole model.
#[derive(Tree, Clone, Debug)]
pub struct Gpt {
    /// Token embedding `[V, W]`, also the unembedding (`x.matmul(&wte.t())`).
    pub wte: Tensor,
    /// Position embedding `[block, W]`.
    pub wpe: Tensor,
    pub blocks: Vec<Block>,
    /// Gain of the final layer norm, `[W]`.
    pub ln_f: Tensor,
}

impl Gpt {
    /// nanoGPT's initialisation: every matrix and embedding normal with std 0.02, the
    /// residual projections (`wo`, `proj`) 0.02/√(2·layers), gains 1.
    pub fn init(cfg: &Config, key: &Key) -> Gpt {
        let keys = key.split(2 + 4 * cfg.layers);
        let w = cfg.width;
        let normal =
            |k: &Key, shape: &[usize], std: f64| random::normal(k, shape, DType::F32) * std;
        let residual = 0.02 / (2.0 * cfg.layers as f64).sqrt();
        let ones = || Tensor::ones(&[w], DType::F32);
        Gpt {
            wte: normal(&keys[0], &[cfg.vocab, w], 0.02),
            wpe: normal(&keys[1], &[cfg.block, w], 0.02),
            blocks: (0..cfg.layers)
                .map(|l| {
                    let k = &keys[2 + 4 * l..6 + 4 * l];
                    Block {
                        ln1: ones(),
                        wqkv: normal(&k[0], &[w, 3 * w], 0.02),
                        wo: normal(&k[1], &[w, w], residual),
                        ln2: ones(),
                        fc: normal(&k[2], &[w, 4 * w], 0.02),
                        proj: normal(&k[3], &[4 * w, w], residual),
                    }
                })
                .collect(),
            ln_f: ones(),
        }
    }

    /// The number of parameters (the tied embedding counted once).
    pub fn parameters(&self) -> usize {
        self.leaves().iter().map(|t| t.len()).sum()
    }
}

fn norm(x: &Tensor, gain: &Tensor) -> Tensor {
    x.layer_norm(gain, None, 1e-5, -1)
}

/// Causal self-attention of `x: [B, T, W]` with `heads` heads.
fn self_attention(x: &Tensor, b: &Block, heads: usize) -> Tensor {
    let (bt, t, w) = (
        x.shape()[0] as isize,
        x.shape()[1] as isize,
        x.shape()[2] as isize,
    );
    let h = heads as isize;
    let qkv = x.matmul(&b.wqkv);
    // [B, T, W] -> [B, H, T, W/H] for each third of the fused projection.
    let part = |i: isize| {
        qkv.slice_axis(2, i * w, (i + 1) * w, 1)
            .reshape(&[bt, t, h, w / h])
            .transpose(&[0, 2, 1, 3])
    };
    let y = attention(&part(0), &part(1), &part(2), AttnMask::Causal);
    y.transpose(&[0, 2, 1, 3])
        .reshape(&[bt, t, w])
        .matmul(&b.wo)
}

/// The next-token logits `[B, T, V]` of token ids `[B, T]` (i32, T <= block). With
/// `remat`, gradients recompute the cheap parts of each block (see [`Config::remat`]).
pub fn logits(p: &Gpt, ids: &Tensor, heads: usize, remat: bool) -> Tensor {
    let (b, t) = (ids.shape()[0], ids.shape()[1]);
    let w = p.wte.shape()[1];
    let flat = ids.reshape(&[(b * t) as isize]);
    let tok = p
        .wte
        .take(&flat, 0)
        .reshape(&[b as isize, t as isize, w as isize]);
    let mut x = tok + p.wpe.slice_axis(0, 0, t as isize, 1);
    for block in &p.blocks {
        let step = |x: &Tensor| {
            let x = x + self_attention(&norm(x, &block.ln1), block, heads);
            &x + norm(&x, &block.ln2)
                .matmul(&block.fc)
                .gelu_erf()
                .matmul(&block.proj)
        };
        x = if remat {
            // The backward pass keeps each block's matmul and attention results and
            // recomputes its layer norms and GELU (`jax.checkpoint` with `dots_saveable`).
            jitfuse::checkpoint_with(jitfuse::Policy::DotsSaveable, step, &x)
        } else {
            step(&x)
        };
    }
    // The logits as f32 sums even when the model computes in bf16 (`matmul_with`: the
    // cross-entropy reads them unrounded; in f32 this is `matmul`).
    let f32_sums = MatmulOptions {
        accumulate: DType::F32,
        result: DType::F32,
    };
    norm(&x, &p.ln_f).matmul_with(&p.wte.t(), f32_sums)
}

/// Mean cross-entropy of the next character: `ids`, `targets` are i32 `[B, T]`.
pub fn loss(p: &Gpt, ids: &Tensor, targets: &Tensor, heads: usize, remat: bool) -> Tensor {
    loss_in(&Policy::uniform(DType::F32), p, ids, targets, heads, remat)
}

/// [`loss`] under a mixed-precision policy (JAX's `jmp`): the parameters cast to
/// `policy.compute` inside the differentiated function (so their gradients come back in
/// the parameters' type), the model run on values of that type (16-bit activations,
/// residuals and products), the logits cast to `policy.output` for the cross-entropy.
pub fn loss_in(
    policy: &Policy,
    p: &Gpt,
    ids: &Tensor,
    targets: &Tensor,
    heads: usize,
    remat: bool,
) -> Tensor {
    let v = p.wte.shape()[0] as isize;
    let l = logits(&policy.cast_to_compute(p), ids, heads, remat);
    let l = policy.cast_to_output(&l);
    softmax_cross_entropy_with_labels(&l.reshape(&[-1, v]), &targets.reshape(&[-1]))
}

/// nanoGPT's optimiser: clipping at global norm 1, then AdamW (betas 0.9/0.99, eps
/// 1e-8, weight decay 0.1 on matrices and embeddings, not on gains) with a learning
/// rate warming up over 100 steps to 1e-3, then decaying along a cosine to 1e-4 at
/// `total_steps`.
pub type Opt = Chain<ClipByGlobalNorm, Adam<WarmupCosine>>;

pub fn opt(total_steps: usize) -> Opt {
    optim::clip_by_global_norm(1.0).then(
        optim::adamw(
            optim::warmup_cosine(1e-3, 100, total_steps, 1e-4),
            0.9,
            0.99,
            1e-8,
            0.1,
        )
        .decay_mask(Mask::by_leaf(|t| t.ndim() >= 2)),
    )
}

/// [`opt`] on the gradients averaged over the ranks of `jitfuse::dist`.
pub type DpOpt = DataParallel<Opt>;

/// (`bucket_bytes` 0: `data_parallel`'s own choice.)
pub fn dp_opt(total_steps: usize, bucket_bytes: usize) -> DpOpt {
    match bucket_bytes {
        0 => optim::data_parallel(opt(total_steps)),
        b => optim::data_parallel(opt(total_steps)).bucket_bytes(b),
    }
}

/// [`opt`] with its state split over the ranks (ZeRO stages 1 and 2): each rank keeps the
/// moments of its block of the parameters (`optim::sharded`).
pub type ShardedOpt = Sharded<Opt>;

pub fn sharded_opt(total_steps: usize, bucket_bytes: usize) -> ShardedOpt {
    match bucket_bytes {
        0 => optim::sharded(opt(total_steps)),
        b => optim::sharded(opt(total_steps)).bucket_bytes(b),
    }
}

/// [`train_step`] on several processes: each rank passes its rows of the batch, the
/// gradients are averaged over the ranks before clipping and AdamW (so every rank makes the
/// update of the whole batch), and the loss returned is the whole batch's (the mean of the
/// ranks' means). The state is [`Opt`]'s; the model computes under `policy`
/// (`Policy::uniform(F32)`, or mixed as [`mixed_train_step`]'s).
#[jit]
#[allow(clippy::too_many_arguments)]
pub fn dp_train_step(
    p: Gpt,
    s: StateOf<DpOpt, Gpt>,
    ids: &Tensor,
    targets: &Tensor,
    heads: usize,
    remat: bool,
    total_steps: usize,
    policy: Policy,
    bucket_bytes: usize,
) -> (Gpt, StateOf<DpOpt, Gpt>, Tensor) {
    let o = dp_opt(total_steps, bucket_bytes);
    ranks_step(&o, &policy, p, s, (ids, targets), heads, remat)
}

/// [`dp_train_step`] with the optimiser state split over the ranks ([`ShardedOpt`]): the
/// gradients are reduce-scattered, each rank clips (by the global norm over every rank's
/// block) and updates its block, and the updates are gathered.
#[jit]
#[allow(clippy::too_many_arguments)]
pub fn sharded_train_step(
    p: Gpt,
    s: StateOf<ShardedOpt, Gpt>,
    ids: &Tensor,
    targets: &Tensor,
    heads: usize,
    remat: bool,
    total_steps: usize,
    policy: Policy,
    bucket_bytes: usize,
) -> (Gpt, StateOf<ShardedOpt, Gpt>, Tensor) {
    let o = sharded_opt(total_steps, bucket_bytes);
    ranks_step(&o, &policy, p, s, (ids, targets), heads, remat)
}

/// [`step_with`] on this rank's rows, with the loss of the whole batch.
fn ranks_step<O: Optimizer>(
    o: &O,
    policy: &Policy,
    p: Gpt,
    s: StateOf<O, Gpt>,
    batch: (&Tensor, &Tensor),
    heads: usize,
    remat: bool,
) -> (Gpt, StateOf<O, Gpt>, Tensor) {
    let (p, s, l) = step_with(o, policy, p, s, batch, heads, remat);
    (p, s, dist::all_reduce(&l, Reduce::Mean).unwrap())
}

/// One training step. The model and the optimiser state are taken by value: they are
/// donated, and the step's kernels write the new parameters and moments in place.
#[jit]
pub fn train_step(
    p: Gpt,
    s: StateOf<Opt, Gpt>,
    ids: &Tensor,
    targets: &Tensor,
    heads: usize,
    remat: bool,
    total_steps: usize,
) -> (Gpt, StateOf<Opt, Gpt>, Tensor) {
    step_body(p, s, ids, targets, heads, remat, total_steps)
}

/// The body of [`train_step`]: called directly (without `#[jit]`) it runs eagerly, each
/// op a cached compiled program, which is how the step is debugged.
pub fn step_body(
    p: Gpt,
    s: StateOf<Opt, Gpt>,
    ids: &Tensor,
    targets: &Tensor,
    heads: usize,
    remat: bool,
    total_steps: usize,
) -> (Gpt, StateOf<Opt, Gpt>, Tensor) {
    let f32 = Policy::uniform(DType::F32);
    step_with(&opt(total_steps), &f32, p, s, (ids, targets), heads, remat)
}

/// [`train_step`] under a mixed-precision policy (`Policy::new(F32, BF16, F32)`: f32
/// parameters and optimiser state, the model computed on bf16 values, the loss in f32).
#[jit]
#[allow(clippy::too_many_arguments)]
pub fn mixed_train_step(
    p: Gpt,
    s: StateOf<Opt, Gpt>,
    ids: &Tensor,
    targets: &Tensor,
    heads: usize,
    remat: bool,
    total_steps: usize,
    policy: Policy,
) -> (Gpt, StateOf<Opt, Gpt>, Tensor) {
    step_with(
        &opt(total_steps),
        &policy,
        p,
        s,
        (ids, targets),
        heads,
        remat,
    )
}

/// The loss and gradient of a batch under `policy`, and `o`'s update (on the parameters'
/// own type: f32 master weights and moments).
fn step_with<O: Optimizer>(
    o: &O,
    policy: &Policy,
    p: Gpt,
    s: StateOf<O, Gpt>,
    (ids, targets): (&Tensor, &Tensor),
    heads: usize,
    remat: bool,
) -> (Gpt, StateOf<O, Gpt>, Tensor) {
    let (l, g) = value_and_grad(|p: &Gpt| loss_in(policy, p, ids, targets, heads, remat), &p);
    let (p, s) = o.update(&g, s, p);
    (p, s, l)
}

/// The loss alone (evaluation).
#[jit]
pub fn eval_loss(p: &Gpt, ids: &Tensor, targets: &Tensor, heads: usize) -> Tensor {
    loss(p, ids, targets, heads, false)
}

/// The logits of every position of one context `[1, T]`: a causal model's position
/// `i` sees only tokens `0..=i`, so a short context padded on the right gives its
/// next-token logits at its last real position, with one compiled shape for all.
#[jit]
pub fn context_logits(p: &Gpt, ids: &Tensor, heads: usize) -> Tensor {
    logits(p, ids, heads, false)
}
