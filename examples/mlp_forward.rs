//! The forward pass and loss of a two-layer MLP on an MNIST-sized batch,
//! eagerly and with `#[jit]`, as measured on this machine (`cargo bench --bench workloads`
//! compares the same model with JAX/XLA run beside it).
//!
//! `loss = softmax_cross_entropy(relu(x @ W1 + b1) @ W2 + b2, y)`, with
//! x[256,784], W1[784,512], b1[512], W2[512,10], b2[10] and one-hot labels y[256,10].
//! Compiled, the two matmuls call a tuned GEMM and the bias adds, relu and the
//! cross-entropy run in Cranelift kernels.
//!
//! Run: `cargo run --release --example mlp_forward`

use jitfuse::prelude::*;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const BATCH: usize = 256;
const IN: usize = 784;
const HIDDEN: usize = 512;
const CLASSES: usize = 10;

/// The model, as an ordinary function of tensors: called directly it runs eagerly.
fn mlp_loss(x: &Tensor, w1: &Tensor, b1: &Tensor, w2: &Tensor, b2: &Tensor, y: &Tensor) -> Tensor {
    let h = (x.matmul(w1) + b1).relu(); // [256, 512]
    let logits = h.matmul(w2) + b2; // [256, 10]
    softmax_cross_entropy(&logits, y) // mean over the batch: a scalar
}

#[jit]
fn mlp_loss_jit(
    x: &Tensor,
    w1: &Tensor,
    b1: &Tensor,
    w2: &Tensor,
    b2: &Tensor,
    y: &Tensor,
) -> Tensor {
    mlp_loss(x, w1, b1, w2, b2, y)
}

/// A deterministic xorshift64 stream.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in [lo, hi).
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (self.next() >> 40) as f32 / (1u64 << 24) as f32 * (hi - lo)
    }
    fn tensor(&mut self, shape: &[usize], lo: f32, hi: f32) -> Tensor {
        let n = shape.iter().product();
        Tensor::from_vec((0..n).map(|_| self.uniform(lo, hi)).collect(), shape).unwrap()
    }
}

fn median(mut f: impl FnMut(), reps: usize) -> Duration {
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[reps / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> ExitCode {
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    // Pixels in [0, 1); weights uniform in ±1/sqrt(fan_in) (PyTorch's default init).
    let x = rng.tensor(&[BATCH, IN], 0.0, 1.0);
    let s1 = 1.0 / (IN as f32).sqrt();
    let s2 = 1.0 / (HIDDEN as f32).sqrt();
    let w1 = rng.tensor(&[IN, HIDDEN], -s1, s1);
    let b1 = rng.tensor(&[HIDDEN], -s1, s1);
    let w2 = rng.tensor(&[HIDDEN, CLASSES], -s2, s2);
    let b2 = rng.tensor(&[CLASSES], -s2, s2);
    let labels: Vec<i32> = (0..BATCH)
        .map(|_| (rng.next() % CLASSES as u64) as i32)
        .collect();
    let y = Tensor::vector(&labels).one_hot_as(CLASSES, DType::F32); // f32[256, 10]

    let t = Instant::now();
    let loss_jit = mlp_loss_jit(&x, &w1, &b1, &w2, &b2, &y);
    let first = t.elapsed();
    let compile = mlp_loss_jit::cache_stats().compile_time;
    let jitted = median(|| drop(mlp_loss_jit(&x, &w1, &b1, &w2, &b2, &y)), 51);
    let eager = median(|| drop(mlp_loss(&x, &w1, &b1, &w2, &b2, &y)), 5);
    // The reference: the same function on the interpreter.
    let loss_eager = jitfuse::eager::interpreted(|| mlp_loss(&x, &w1, &b1, &w2, &b2, &y));

    println!("MLP forward + loss: x[{BATCH},{IN}] @ W1[{IN},{HIDDEN}] -> relu -> @ W2[{HIDDEN},{CLASSES}] -> cross-entropy\n");
    println!("  eager (op by op, each compiled)    {:8.2} ms", ms(eager));
    println!(
        "  #[jit] first call                  {:8.2} ms  (trace + compile {:.2} ms)",
        ms(first),
        ms(compile)
    );
    println!("  #[jit] cached call (median)        {:8.2} ms", ms(jitted));
    println!(
        "  speed-up over eager                {:8.1}x",
        eager.as_secs_f64() / jitted.as_secs_f64()
    );
    println!();

    // The compiled GEMM and the interpreter's matmul sum 784 products in a
    // different order, and the compiled exp/ln are approximations: compare the
    // scalar loss with a relative tolerance.
    const REL: f32 = 1e-5;
    let (got, want) = (
        loss_jit.item::<f32>().unwrap(),
        loss_eager.item::<f32>().unwrap(),
    );
    let rel = (got - want).abs() / want.abs();
    println!("  loss: jit {got:.7}, eager {want:.7}, relative difference {rel:.2e} (tolerance {REL:.0e})");
    // With small random weights the prediction is near uniform: loss ≈ ln(10).
    println!(
        "  (ln 10 = {:.4}: an untrained model's loss is close to it)",
        (CLASSES as f32).ln()
    );
    if rel <= REL && got.is_finite() {
        ExitCode::SUCCESS
    } else {
        eprintln!("jitted loss differs from the eager one");
        ExitCode::FAILURE
    }
}
