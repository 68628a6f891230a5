//! Softmax and layer norm over the last axis of a 4096×1024 f32 matrix,
//! eagerly and with `#[jit]`, as measured on this machine (`cargo bench --bench workloads`
//! compares both with JAX/XLA run beside them).
//!
//! The bodies are ordinary Rust functions of `&Tensor`. Called directly they
//! run eagerly (every op its own cached compiled program, one fresh array per
//! op); called from a `#[jit]` function they are traced once, compiled to
//! Cranelift kernels and cached.
//!
//! Run: `cargo run --release --example softmax_layernorm`

use jitfuse::prelude::*;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const ROWS: usize = 4096;
const COLS: usize = 1024;

/// Softmax over the last axis, written out (`x.softmax(-1)` is the same thing).
fn softmax_rows(x: &Tensor) -> Tensor {
    let m = x.max_keepdims(-1); // [4096, 1]
    let e = (x - &m).exp(); // subtract the row max so exp never overflows
    &e / e.sum_keepdims(-1)
}

/// Layer norm over the last axis (`x.layer_norm(gamma, beta, 1e-5, -1)`).
fn layernorm_rows(x: &Tensor, gamma: &Tensor, beta: &Tensor) -> Tensor {
    let mean = x.mean_keepdims(-1);
    let d = x - &mean;
    let var = d.square().mean_keepdims(-1);
    d * (var + 1e-5).rsqrt() * gamma + beta
}

#[jit]
fn softmax_jit(x: &Tensor) -> Tensor {
    softmax_rows(x)
}

#[jit]
fn layernorm_jit(x: &Tensor, gamma: &Tensor, beta: &Tensor) -> Tensor {
    layernorm_rows(x, gamma, beta)
}

/// Deterministic uniform floats in [lo, hi) (xorshift64).
fn uniform(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (s >> 40) as f32 / (1u64 << 24) as f32 * (hi - lo)
        })
        .collect()
}

/// Median wall time of `reps` calls.
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

/// Largest `|got - want| / (abs + rel * |want|)`: at most 1 means within tolerance.
fn worst(got: &Tensor, want: &Tensor, abs: f32, rel: f32) -> (f32, f32) {
    let (g, w) = (got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
    assert_eq!(g.len(), w.len());
    let mut max_err = 0.0f32;
    let mut max_ratio = 0.0f32;
    for (a, b) in g.iter().zip(&w) {
        let e = (a - b).abs();
        max_err = max_err.max(e);
        max_ratio = max_ratio.max(if e.is_nan() {
            f32::INFINITY
        } else {
            e / (abs + rel * b.abs())
        });
    }
    (max_err, max_ratio)
}

struct Report {
    name: &'static str,
    eager: Duration,
    first: Duration,
    compile: Duration,
    jitted: Duration,
}

impl Report {
    fn print(&self) {
        println!("{}", self.name);
        println!(
            "  eager (op by op, each compiled)    {:8.2} ms",
            ms(self.eager)
        );
        println!(
            "  #[jit] first call                  {:8.2} ms  (trace + compile {:.2} ms)",
            ms(self.first),
            ms(self.compile)
        );
        println!(
            "  #[jit] cached call (median)        {:8.2} ms",
            ms(self.jitted)
        );
        println!(
            "  speed-up over eager                {:8.1}x",
            self.eager.as_secs_f64() / self.jitted.as_secs_f64()
        );
    }
}

fn main() -> ExitCode {
    let x = Tensor::from_vec(
        uniform(ROWS * COLS, 0x2545_F491_4F6C_DD1D, -4.0, 4.0),
        &[ROWS, COLS],
    )
    .unwrap();
    let gamma = Tensor::from_vec(uniform(COLS, 0x9E37_79B9_7F4A_7C15, 0.5, 1.5), &[COLS]).unwrap();
    let beta = Tensor::from_vec(uniform(COLS, 0xD1B5_4A32_D192_ED03, -1.0, 1.0), &[COLS]).unwrap();
    println!(
        "x: f32[{ROWS}, {COLS}] ({} MiB), gamma, beta: f32[{COLS}]\n",
        x.size_bytes() >> 20
    );

    // Softmax.
    let t = Instant::now();
    let sm_jit = softmax_jit(&x);
    let first = t.elapsed();
    let softmax = Report {
        name: "softmax over the last axis",
        first,
        compile: softmax_jit::cache_stats().compile_time,
        jitted: median(|| drop(softmax_jit(&x)), 21),
        eager: median(|| drop(softmax_rows(&x)), 3),
    };
    let sm_eager = jitfuse::eager::interpreted(|| softmax_rows(&x));

    // Layer norm.
    let t = Instant::now();
    let ln_jit = layernorm_jit(&x, &gamma, &beta);
    let first = t.elapsed();
    let layernorm = Report {
        name: "layer norm over the last axis (eps 1e-5)",
        first,
        compile: layernorm_jit::cache_stats().compile_time,
        jitted: median(|| drop(layernorm_jit(&x, &gamma, &beta)), 21),
        eager: median(|| drop(layernorm_rows(&x, &gamma, &beta)), 3),
    };
    let ln_eager = jitfuse::eager::interpreted(|| layernorm_rows(&x, &gamma, &beta));

    softmax.print();
    println!();
    layernorm.print();
    println!();

    // The compiled exp is a vectorised approximation and the compiled row sums
    // group terms differently from the interpreter, so results agree to a few
    // float32 ulps, not bit for bit. Tolerance: |jit - eager| <= ABS + REL * |eager|.
    const ABS: f32 = 1e-6;
    const REL: f32 = 1e-5;
    let mut ok = true;
    for (what, got, want) in [
        ("softmax", &sm_jit, &sm_eager),
        ("layer norm", &ln_jit, &ln_eager),
    ] {
        let (err, ratio) = worst(got, want, ABS, REL);
        let pass = ratio <= 1.0;
        ok &= pass;
        println!(
            "{what:>10}: max |jit - eager| = {err:.2e}  ({} tolerance {ABS:.0e} + {REL:.0e}·|eager|)",
            if pass { "within" } else { "OUTSIDE" }
        );
    }
    // A property that does not depend on the interpreter: every softmax row sums to 1.
    let row_sums = sm_jit.sum(-1).to_vec::<f32>().unwrap();
    let off = row_sums
        .iter()
        .map(|s| (s - 1.0).abs())
        .fold(0.0f32, f32::max);
    ok &= off <= 1e-5;
    println!("   softmax: max |row sum - 1| = {off:.2e}  (tolerance 1e-5)");

    if ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("jitted results differ from the eager ones");
        ExitCode::FAILURE
    }
}
