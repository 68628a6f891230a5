//! The same jitted programs on f32 and on bf16 storage, timed interleaved in one run (the
//! machine is shared and noisy: only the ratios of one run count), with the temporaries
//! each compiled program reports. `cargo bench --bench half_precision`.
//!
//! Rows: streaming kernels (gelu, layer norm, softmax: bf16 moves half the bytes), and
//! products at 1024³, 2048³ and the shapes of nanoGPT's GPU-size training step (16,384
//! rows of width 384; the weight gradient's `xᵀ · dy` sums over those rows), with their
//! rates, in f32, bf16 and f16: 16-bit products run on `library/gemm16.rs` (bf16 on
//! `vdpbf16ps` where the CPU has AVX-512 BF16, f16 and other bf16 on f32 FMAs over panels
//! converted as they are packed), on f32 copies without AVX-512.

use jitfuse::prelude::*;
use std::hint::black_box;
use std::time::Instant;

#[jit]
fn gelu(x: &Tensor) -> Tensor {
    x.gelu()
}

#[jit]
fn layer_norm(x: &Tensor, g: &Tensor, b: &Tensor) -> Tensor {
    x.layer_norm(g, b, 1e-5, -1)
}

#[jit]
fn softmax(x: &Tensor) -> Tensor {
    x.softmax(-1)
}

#[jit]
fn matmul(a: &Tensor, b: &Tensor) -> Tensor {
    a.matmul(b)
}

#[jit]
fn matmul_tn(a: &Tensor, b: &Tensor) -> Tensor {
    a.t().matmul(b)
}

/// A product row: `[m, k] @ [k, n]` (`a` stored as `[k, m]` and read transposed where
/// `tn`), with its multiply-adds.
fn product(m: usize, k: usize, n: usize, tn: bool) -> (usize, Box<dyn Fn(DType) -> Box<dyn Fn()>>) {
    let make = move |d| -> Box<dyn Fn()> {
        let b = filled(&[k, n], d, 7);
        if tn {
            let a = filled(&[k, m], d, 6);
            Box::new(move || drop(black_box(matmul_tn(&a, &b))))
        } else {
            let a = filled(&[m, k], d, 6);
            Box::new(move || drop(black_box(matmul(&a, &b))))
        }
    };
    (m * k * n, Box::new(make))
}

fn filled(shape: &[usize], dtype: DType, seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut s = seed | 1;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap().cast(dtype)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::var("JITFUSE_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    type Case = (&'static str, Box<dyn Fn(DType) -> Box<dyn Fn()>>);
    let cases: Vec<Case> = vec![
        (
            "gelu x[4M]",
            Box::new(|d| {
                let x = filled(&[1 << 22], d, 1);
                Box::new(move || drop(black_box(gelu(&x))))
            }),
        ),
        (
            "layer norm [4096,1024]",
            Box::new(|d| {
                let x = filled(&[4096, 1024], d, 2);
                let (g, b) = (filled(&[1024], d, 3), filled(&[1024], d, 4));
                Box::new(move || drop(black_box(layer_norm(&x, &g, &b))))
            }),
        ),
        (
            "softmax [4096,1024]",
            Box::new(|d| {
                let x = filled(&[4096, 1024], d, 5);
                Box::new(move || drop(black_box(softmax(&x))))
            }),
        ),
    ];
    let products: Vec<(&str, (usize, Box<dyn Fn(DType) -> Box<dyn Fn()>>))> = vec![
        ("matmul 1024^3", product(1024, 1024, 1024, false)),
        ("matmul 2048^3", product(2048, 2048, 2048, false)),
        (
            "GPT x @ W_qkv [16384,384]x[384,1152]",
            product(16384, 384, 1152, false),
        ),
        (
            "GPT h @ W_down [16384,1536]x[1536,384]",
            product(16384, 1536, 384, false),
        ),
        (
            "GPT x^T @ dy [384,16384]x[16384,1536]",
            product(384, 16384, 1536, true),
        ),
    ];
    let cases = (cases.into_iter())
        .map(|(name, make)| (name, 0, make))
        .chain(
            products
                .into_iter()
                .map(|(name, (macs, make))| (name, macs, make)),
        );
    println!(
        "| workload | f32 ms | bf16 ms | f16 ms | bf16 / f32 | f16 / f32 | f32 GFLOP/s | bf16 GFLOP/s | f16 GFLOP/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, macs, make) in cases {
        let runs_of: Vec<Box<dyn Fn()>> = [DType::F32, DType::BF16, DType::F16]
            .into_iter()
            .map(|d| make(d))
            .collect();
        runs_of.iter().for_each(|f| f());
        let mut times = vec![Vec::new(); runs_of.len()];
        // The large products fewer times (about 2 s of each type).
        let runs = if macs > 0 {
            runs.min((1e10 / macs as f64).ceil() as usize).max(5)
        } else {
            runs
        };
        for _ in 0..runs {
            for (run, t) in runs_of.iter().zip(times.iter_mut()) {
                let start = Instant::now();
                run();
                t.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
        let ms: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
        let rate = |ms: f64| {
            if macs > 0 {
                format!("{:.0}", 2.0 * macs as f64 / ms / 1e6)
            } else {
                String::new()
            }
        };
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} | {} |",
            ms[0],
            ms[1],
            ms[2],
            ms[1] / ms[0],
            ms[2] / ms[0],
            rate(ms[0]),
            rate(ms[1]),
            rate(ms[2])
        );
    }
}
