//! Quickstart: the tanh-GELU on 4 million floats, four ways.
//!
//! 1. eager jitfuse (no `#[jit]`: each op runs as its own cached compiled program, one
//!    fresh array per op), and the same on the reference interpreter
//!    (`JITFUSE_EAGER=interp`, how results are checked),
//! 2. a naive `Vec<f32>` chain that allocates every intermediate (what eager array
//!    code does),
//! 3. `#[jit]`: traced once, fused into one Cranelift SIMD kernel, cached.
//!
//! Run: `cargo run --release --example quickstart`

use jitfuse::prelude::*;
use std::time::{Duration, Instant};

const N: usize = 4 * 1024 * 1024;

/// The same body, without `#[jit]`: every op evaluates eagerly.
fn gelu_eager(x: &Tensor) -> Tensor {
    0.5 * x * (1.0 + (0.797_884_56 * (x + 0.044_715 * x * x * x)).tanh())
}

#[jit]
fn gelu(x: &Tensor) -> Tensor {
    0.5 * x * (1.0 + (0.797_884_56 * (x + 0.044_715 * x * x * x)).tanh())
}

/// What eager code does: one loop and one fresh allocation per operation.
fn gelu_vec_chain(x: &[f32]) -> Vec<f32> {
    let map = |a: &[f32], f: &dyn Fn(f32) -> f32| a.iter().map(|&v| f(v)).collect::<Vec<f32>>();
    let zip = |a: &[f32], b: &[f32], f: &dyn Fn(f32, f32) -> f32| {
        a.iter()
            .zip(b)
            .map(|(&u, &v)| f(u, v))
            .collect::<Vec<f32>>()
    };
    let x2 = zip(x, x, &|a, b| a * b);
    let x3 = zip(&x2, x, &|a, b| a * b);
    let c = map(&x3, &|a| 0.044_715 * a);
    let inner = zip(x, &c, &|a, b| a + b);
    let scaled = map(&inner, &|a| 0.797_884_56 * a);
    let t = map(&scaled, &|a| a.tanh());
    let one_plus = map(&t, &|a| 1.0 + a);
    let half_x = map(x, &|a| 0.5 * a);
    zip(&half_x, &one_plus, &|a, b| a * b)
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

fn ms(d: Duration) -> String {
    format!("{:8.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    // Deterministic inputs in [-5, 5].
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let data: Vec<f32> = (0..N)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 10.0 - 5.0
        })
        .collect();
    let x = Tensor::from_vec(data.clone(), &[N]).unwrap();

    let t0 = Instant::now();
    let first = gelu(&x);
    let first_call = t0.elapsed();
    let compile = gelu::cache_stats().compile_time;

    let jitted = median(|| drop(gelu(&x)), 21);
    let chain = median(|| drop(gelu_vec_chain(&data)), 5);
    let eager = median(|| drop(gelu_eager(&x)), 3);
    let interp = median(|| drop(jitfuse::eager::interpreted(|| gelu_eager(&x))), 3);

    // The three agree.
    let want = gelu_vec_chain(&data);
    let got = first.to_vec::<f32>().unwrap();
    let max_err = got
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    let eager_out = jitfuse::eager::interpreted(|| gelu_eager(&x))
        .to_vec::<f32>()
        .unwrap();
    let max_err_eager = got
        .iter()
        .zip(&eager_out)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);

    let mem = gelu::lower(&x)
        .unwrap()
        .compile()
        .unwrap()
        .memory_analysis();
    let mib = |b: usize| b as f64 / (1024.0 * 1024.0);

    println!(
        "gelu(x) on {N} f32 ({:.0} MiB in, {:.0} MiB out)\n",
        mib(N * 4),
        mib(N * 4)
    );
    println!("  eager jitfuse (op by op)         {}", ms(eager));
    println!("  eager on the interpreter         {}", ms(interp));
    println!("  naive Vec<f32> chain             {}", ms(chain));
    println!(
        "  #[jit] first call (trace+compile+run) {}  of which compile {}",
        ms(first_call).trim(),
        ms(compile).trim()
    );
    println!("  #[jit] cached call               {}", ms(jitted));
    println!();
    println!(
        "  speed-up vs naive chain   {:6.1}x",
        chain.as_secs_f64() / jitted.as_secs_f64()
    );
    println!(
        "  speed-up vs eager         {:6.1}x",
        eager.as_secs_f64() / jitted.as_secs_f64()
    );
    println!(
        "  intermediates: eager allocates {:.0} MiB, the jitted program {:.0} MiB ({:.0} MiB never allocated)",
        mib(mem.eager_bytes),
        mib(mem.temp_bytes),
        mib(mem.eager_bytes - mem.temp_bytes)
    );
    println!("  max |jit - naive| = {max_err:.2e}, max |jit - interpreter| = {max_err_eager:.2e}");
    assert!(max_err < 1e-5 && max_err_eager < 1e-5, "results disagree");
}
