//! nanoGPT's character-level model at its CPU size (4 layers, 4 heads,
//! width 128, block 64, batch 12, vocabulary 65, tied embedding, pre-norm
//! blocks, exact-erf GELU MLP 4x wide, no biases) written with today's ops,
//! and its AdamW training step with parameters and moments donated.

use jitfuse::prelude::*;

pub const VOCAB: usize = 65;
pub const BLOCK: usize = 64;
pub const WIDTH: usize = 128;
pub const HEADS: usize = 4;
pub const LAYERS: usize = 4;
pub const BATCH: usize = 12;

/// Per layer: ln1 gain, qkv [W, 3W], out projection [W, W], ln2 gain,
/// MLP in [W, 4W], MLP out [4W, W].
const PER_LAYER: usize = 6;

/// The parameters: `wte` [V, W], `wpe` [T, W], the layers, the final gain.
pub fn init(rng: &mut crate::common::Rng) -> Vec<Tensor> {
    let normal = |rng: &mut crate::common::Rng, shape: &[usize], std: f64| {
        crate::common::random_tensor(rng, shape, DType::F32, -std * 1.7, std * 1.7, false)
    };
    let ones = || Tensor::ones(&[WIDTH], DType::F32);
    let proj = 0.02 / (2.0 * LAYERS as f64).sqrt();
    let mut p = vec![
        normal(rng, &[VOCAB, WIDTH], 0.02),
        normal(rng, &[BLOCK, WIDTH], 0.02),
    ];
    for _ in 0..LAYERS {
        p.push(ones());
        p.push(normal(rng, &[WIDTH, 3 * WIDTH], 0.02));
        p.push(normal(rng, &[WIDTH, WIDTH], proj));
        p.push(ones());
        p.push(normal(rng, &[WIDTH, 4 * WIDTH], 0.02));
        p.push(normal(rng, &[4 * WIDTH, WIDTH], proj));
    }
    p.push(ones());
    p
}

fn norm(x: &Tensor, gain: &Tensor) -> Tensor {
    x.layer_norm(gain, &Tensor::zeros(&[WIDTH], DType::F32), 1e-5, -1)
}

/// `[B, T, W]` to `[B, H, T, W/H]`.
fn heads(x: &Tensor) -> Tensor {
    let hd = (WIDTH / HEADS) as isize;
    x.reshape(&[BATCH as isize, BLOCK as isize, HEADS as isize, hd])
        .transpose(&[0, 2, 1, 3])
}

/// Causal self-attention with the mask from `iota` comparisons.
fn attention(a: &Tensor, wqkv: &Tensor, wo: &Tensor) -> Tensor {
    let qkv = a.matmul(wqkv);
    let w = WIDTH as isize;
    let part = |k: isize| heads(&qkv.slice_axis(2, k * w, (k + 1) * w, 1));
    let (q, k, v) = (part(0), part(1), part(2));
    let scale = 1.0 / ((WIDTH / HEADS) as f64).sqrt();
    let scores = q.matmul(&k.transpose(&[0, 1, 3, 2])) * scale;
    let row = Tensor::iota(&[BLOCK, BLOCK], 0, DType::I32);
    let col = Tensor::iota(&[BLOCK, BLOCK], 1, DType::I32);
    let causal = col.le(&row);
    let att = jitfuse::where_(&causal, &scores, f32::NEG_INFINITY).softmax(-1);
    let y = att
        .matmul(&v)
        .transpose(&[0, 2, 1, 3])
        .reshape(&[BATCH as isize, BLOCK as isize, w]);
    y.matmul(wo)
}

/// Mean cross-entropy of the next character: `ids`, `targets` are i32 [B, T].
pub fn loss(p: &[Tensor], ids: &Tensor, targets: &Tensor) -> Tensor {
    let (wte, wpe) = (&p[0], &p[1]);
    let flat = ids.reshape(&[(BATCH * BLOCK) as isize]);
    let mut x = wte
        .take(&flat, 0)
        .reshape(&[BATCH as isize, BLOCK as isize, WIDTH as isize])
        + wpe;
    for l in p[2..2 + LAYERS * PER_LAYER].chunks(PER_LAYER) {
        x = &x + attention(&norm(&x, &l[0]), &l[1], &l[2]);
        let m = norm(&x, &l[3]);
        x = &x + m.matmul(&l[4]).gelu_erf().matmul(&l[5]);
    }
    let x = norm(&x, &p[p.len() - 1]);
    let logits = x
        .reshape(&[(BATCH * BLOCK) as isize, WIDTH as isize])
        .matmul(&wte.t());
    let labels = targets.reshape(&[(BATCH * BLOCK) as isize]).one_hot(VOCAB);
    jitfuse::softmax_cross_entropy(&logits, &labels)
}

/// One AdamW step (lr 1e-3, betas 0.9/0.99, weight decay 0.1 on matrices;
/// bias correction left out: a steady loop, not a recipe): the loss and the
/// new parameters and moments. Everything taken by value is donated.
#[jit]
pub fn train_step(
    params: Vec<Tensor>,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
    ids: &Tensor,
    targets: &Tensor,
) -> (Tensor, Vec<Tensor>, Vec<Tensor>, Vec<Tensor>) {
    let (l, g) = jitfuse::value_and_grad(|p: &Vec<Tensor>| loss(p, ids, targets), &params);
    let (mut p2, mut m2, mut v2) = (Vec::new(), Vec::new(), Vec::new());
    for (((p, m), v), g) in params.into_iter().zip(m).zip(v).zip(&g) {
        let m = 0.9 * m + 0.1 * g;
        let v = 0.99 * v + 0.01 * g * g;
        let decay = if p.ndim() == 2 { 0.1 * 1e-3 } else { 0.0 };
        let p = &p * (1.0 - decay) - 1e-3 * &m / (v.sqrt() + 1e-8);
        p2.push(p);
        m2.push(m);
        v2.push(v);
    }
    (l, p2, m2, v2)
}

/// A learnable batch: each sequence walks the vocabulary with its own step.
pub fn batch(step: usize) -> (Tensor, Tensor) {
    let seq = |b: usize, t: usize| ((b * 7 + step * 3 + t * (1 + b % 5)) % VOCAB) as i32;
    let ids: Vec<i32> = (0..BATCH * BLOCK)
        .map(|i| seq(i / BLOCK, i % BLOCK))
        .collect();
    let tgt: Vec<i32> = (0..BATCH * BLOCK)
        .map(|i| seq(i / BLOCK, i % BLOCK + 1))
        .collect();
    (
        Tensor::from_vec(ids, &[BATCH, BLOCK]).unwrap(),
        Tensor::from_vec(tgt, &[BATCH, BLOCK]).unwrap(),
    )
}
