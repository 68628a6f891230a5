//! The same jitted programs on f32 and on bf16 storage, timed interleaved in one run (the
//! machine is shared and noisy: only the ratios of one run count), with the temporaries
//! each compiled program reports. `cargo bench --bench half_precision`.
//!
//! Rows: streaming kernels (gelu, layer norm, softmax: bf16 moves half the bytes), and a
//! matmul (bf16 operands run the f32 GEMM on f32 copies for now: no speed-up expected).

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
        (
            "matmul 1024^3",
            Box::new(|d| {
                let (a, b) = (filled(&[1024, 1024], d, 6), filled(&[1024, 1024], d, 7));
                Box::new(move || drop(black_box(matmul(&a, &b))))
            }),
        ),
    ];
    println!("| workload | f32 ms | bf16 ms | bf16 / f32 |");
    println!("|---|---|---|---|");
    for (name, make) in &cases {
        let (f, h) = (make(DType::F32), make(DType::BF16));
        f();
        h();
        let (mut tf, mut th) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            for (run, times) in [(&f, &mut tf), (&h, &mut th)] {
                let t = Instant::now();
                run();
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        let (mf, mh) = (median(&mut tf), median(&mut th));
        println!("| {name} | {mf:.2} | {mh:.2} | {:.2} |", mh / mf);
    }
}
