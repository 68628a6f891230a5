//! Compile time against graph size: the first call (trace + passes +
//! codegen) of the gradient of a chain of n `y = sin(0.999 y)` layers on
//! x[1024] (its backward graph has ~4n nodes) at n = 100, 1,000, 10,000,
//! and of a forward chain of 100,000 ops (50,000 layers of a multiply and
//! a sine). Compile time should grow linearly with n. Last, how long an
//! impossible memory budget (a few KiB above what the arguments and outputs
//! take) on the gradient of a 4-layer transformer (width 128, 768 tokens,
//! thousands of nodes) takes to be reported.
//!
//! Run: `cargo bench --bench compile_time` (about half a minute). Each
//! case is compiled once (`JITFUSE_BENCH_ROUNDS=k` takes the median of k
//! compilations). With `JITFUSE_LOG=compiles` the log lines carry the
//! per-pass breakdown.

use jitfuse::prelude::*;
use std::time::Instant;

#[jit]
fn sin_chain_grad(x: &Tensor, n: usize) -> Tensor {
    jitfuse::grad(
        |x: &Tensor| {
            let mut y = x.clone();
            for _ in 0..n {
                y = (&y * 0.999).sin();
            }
            y.sum_all()
        },
        x,
    )
}

#[jit]
fn sin_chain(x: &Tensor, n: usize) -> Tensor {
    let mut y = x.clone();
    for _ in 0..n {
        y = (&y * 0.999).sin();
    }
    y
}

/// Pre-norm transformer layers: attention (softmax of `q kᵀ`), a GELU MLP.
fn transformer_loss(ws: &[Tensor], x: &Tensor) -> Tensor {
    let w = x.shape()[1];
    let (g, b) = (
        Tensor::ones(&[w], DType::F32),
        Tensor::zeros(&[w], DType::F32),
    );
    let mut h = x.clone();
    for l in ws.chunks(5) {
        let a = h.layer_norm(&g, &b, 1e-5, -1);
        let att = (a.matmul(&l[0]).matmul(&a.matmul(&l[1]).t()) * 0.1).softmax(-1);
        h = &h + att.matmul(&a.matmul(&l[2]));
        let m = h.layer_norm(&g, &b, 1e-5, -1);
        h = &h + m.matmul(&l[3]).gelu().matmul(&l[4]);
    }
    h.square().mean_all()
}

#[jit]
fn transformer_grad(ws: &Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(|ws: &Vec<Tensor>| transformer_loss(ws, x), ws)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("JITFUSE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    let sizes: Vec<usize> = std::env::var("JITFUSE_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|w| w.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100, 1_000, 10_000]);
    let x = Tensor::from_vec((0..1024).map(|i| (i as f32) / 1024.0).collect(), &[1024]).unwrap();
    type Call = fn(&Tensor, usize) -> Tensor;
    type Clear = fn();
    let mut cases: Vec<(String, Call, Clear, usize)> = sizes
        .iter()
        .map(|&n| {
            (
                format!("grad of the sin chain, n = {n}"),
                sin_chain_grad as Call,
                sin_chain_grad::clear_cache as Clear,
                n,
            )
        })
        .collect();
    cases.push((
        "forward chain of 100,000 ops".to_string(),
        sin_chain as Call,
        sin_chain::clear_cache as Clear,
        50_000,
    ));
    println!("| case | first call (s) |");
    println!("|---|---|");
    for (name, call, clear, n) in &cases {
        let mut samples = Vec::new();
        for _ in 0..rounds {
            clear();
            let t = Instant::now();
            std::hint::black_box(call(&x, *n));
            samples.push(t.elapsed().as_secs_f64());
        }
        println!("| {name} | {:.3} |", median(samples));
    }

    // An impossible budget: the error, and how long it took.
    let ramp = |shape: &[usize], k: usize| {
        let n: usize = shape.iter().product();
        let v = (0..n)
            .map(|i| ((i * 31 + k * 17) % 97) as f32 / 97.0 - 0.5)
            .collect();
        Tensor::from_vec(v, shape).unwrap()
    };
    let (d, t) = (128, 768);
    let x = ramp(&[t, d], 0);
    let ws: Vec<Tensor> = (0..4)
        .flat_map(|_| [[d, d], [d, d], [d, d], [d, 4 * d], [4 * d, d]])
        .enumerate()
        .map(|(k, s)| &ramp(&s, k + 1) * 0.1)
        .collect();
    let m = transformer_grad::lower(&ws, &x)
        .unwrap()
        .compile()
        .unwrap()
        .memory_analysis();
    let budget = m.argument_bytes + m.output_bytes + 4096;
    let mut samples = Vec::new();
    for _ in 0..rounds {
        transformer_grad::set_memory_budget(Some(budget));
        let t = Instant::now();
        let e = transformer_grad::try_call(&ws, &x)
            .err()
            .expect("an impossible budget");
        samples.push(t.elapsed().as_secs_f64());
        transformer_grad::set_memory_budget(None);
        if samples.len() == 1 {
            eprintln!("{e}");
        }
    }
    println!(
        "| impossible budget on a 4-layer transformer gradient (peak {} bytes) | {:.3} |",
        m.peak_bytes,
        median(samples)
    );
}
