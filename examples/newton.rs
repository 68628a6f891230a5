//! Newton's method with a stopping condition decided by the data: Kepler's
//! equation `E - e sin E = M` for a million orbits at once.
//!
//! The `while` below loops on a traced condition (`step.abs().max_all().gt(tol)`):
//! `#[jit]` stages it as one `while` node, so the program is compiled once and
//! runs as many iterations as the data needs: a tighter tolerance runs more
//! iterations of the same machine code, and the code does not grow with the
//! iteration count. A `for` over a static range with a traced body is a `scan`
//! (also not unrolled); over a `usize` range it unrolls at trace time, and the
//! compile times below show the difference (JAX's unrolled loops compile
//! super-linearly: JAX #2777).
//!
//! Run: `cargo run --release --example newton`

use jitfuse::prelude::*;
use std::f64::consts::PI;
use std::time::Instant;

const N: usize = 1 << 20;

/// Eccentric anomaly E of mean anomaly `m` and eccentricity `e`, to `tol`.
#[jit]
fn kepler(m: &Tensor, e: &Tensor, tol: f64, max_iter: i32) -> (Tensor, Tensor) {
    let mut ecc = m.clone();
    let mut step = m.ones_like();
    let mut iters = Tensor::scalar(0i32);
    while step
        .abs()
        .max_all()
        .gt(tol)
        .logical_and(&iters.lt(max_iter))
    {
        let f = &ecc - e * ecc.sin() - m;
        let fp = 1.0 - e * ecc.cos();
        step = f / fp;
        ecc = ecc - &step;
        iters = iters + 1;
    }
    (ecc, iters)
}

/// `steps` damped fixed-point iterations with the loop unrolled at trace time
/// (`usize` bounds).
#[jit]
fn unrolled(m: &Tensor, e: &Tensor, steps: usize) -> Tensor {
    let mut ecc = m.clone();
    for _ in 0..steps {
        ecc = m + e * ecc.sin();
    }
    ecc
}

/// The same iterations as one staged counted loop (a `scan`: not unrolled).
#[jit]
fn staged(m: &Tensor, e: &Tensor, steps: usize) -> Tensor {
    fori_loop(0, steps, |_, ecc: Tensor| m + e * ecc.sin(), m.clone())
}

/// The plain Rust loop: per element, Newton to the same tolerance.
fn kepler_scalar(m: &[f64], e: &[f64], tol: f64) -> Vec<f64> {
    m.iter()
        .zip(e)
        .map(|(&m, &e)| {
            let mut x = m;
            for _ in 0..100 {
                let step = (x - e * x.sin() - m) / (1.0 - e * x.cos());
                x -= step;
                if step.abs() <= tol {
                    break;
                }
            }
            x
        })
        .collect()
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    // Deterministic inputs: M in [0, 2 pi), e in [0, 0.9].
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let mv: Vec<f64> = (0..N).map(|_| 2.0 * PI * next()).collect();
    let ev: Vec<f64> = (0..N).map(|_| 0.9 * next()).collect();
    let m = Tensor::from_slice(&mv, &[N]).unwrap();
    let e = Tensor::from_slice(&ev, &[N]).unwrap();

    println!("Kepler's equation E - e sin E = M for {N} orbits (f64), Newton's method\n");
    println!("| tolerance | iterations | max |residual| | time (ms; the first call includes trace + compile) | programs compiled |");
    println!("|---|---|---|---|---|");
    let mut code_bytes = Vec::new();
    for tol in [1e-3, 1e-8, 1e-14] {
        let t = Instant::now();
        let (ecc, iters) = kepler(&m, &e, tol, 50);
        let time = ms(t);
        let ev2 = ecc.to_vec::<f64>().unwrap();
        let resid = ev2
            .iter()
            .zip(&mv)
            .zip(&ev)
            .map(|((x, m), e)| (x - e * x.sin() - m).abs())
            .fold(0.0, f64::max);
        println!(
            "| {tol:e} | {} | {resid:.2e} | {time:.1} | {} |",
            iters.item::<i32>().unwrap(),
            kepler::cache_stats().misses
        );
        let c = kepler::lower(&m, &e, tol, 50).unwrap().compile().unwrap();
        code_bytes.push(c.memory_analysis().code_bytes);
    }
    println!(
        "\none program for every tolerance (the tolerance is a traced f64): {} compilation, \
         {} bytes of machine code each time: {:?}",
        kepler::cache_stats().misses,
        code_bytes[0],
        code_bytes
    );
    let t = Instant::now();
    let want = kepler_scalar(&mv, &ev, 1e-14);
    let scalar_ms = ms(t);
    let t = Instant::now();
    let (ecc, _) = kepler(&m, &e, 1e-14, 50);
    let jit_ms = ms(t);
    let diff = ecc
        .to_vec::<f64>()
        .unwrap()
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    println!(
        "plain Rust per-element loop: {scalar_ms:.1} ms; #[jit] cached call: {jit_ms:.1} ms; max |difference| {diff:.1e}\n"
    );

    println!("Compile time of a loop body run `steps` times (trace + compile, ms):\n");
    println!("| steps | unrolled at trace time | staged (scan) |");
    println!("|---|---|---|");
    let small = Tensor::from_slice(&mv[..1024], &[1024]).unwrap();
    let small_e = Tensor::from_slice(&ev[..1024], &[1024]).unwrap();
    let mut staged_ms = Vec::new();
    for steps in [10usize, 100, 1000] {
        let un = if steps <= 100 {
            unrolled::clear_cache();
            let t = Instant::now();
            unrolled::lower(&small, &small_e, steps)
                .unwrap()
                .compile()
                .unwrap();
            format!("{:.2}", ms(t))
        } else {
            "(skipped)".into()
        };
        staged::clear_cache();
        let t = Instant::now();
        staged::lower(&small, &small_e, steps)
            .unwrap()
            .compile()
            .unwrap();
        let st = ms(t);
        staged_ms.push(st);
        println!("| {steps} | {un} | {st:.2} |");
    }
    let a = unrolled(&small, &small_e, 100);
    let b = staged(&small, &small_e, 100);
    let d = (&a - &b).abs().max_all().item::<f64>().unwrap();
    println!(
        "\nstaged 1000 steps / 10 steps compile time: {:.2}x (same code); unrolled and staged agree to {d:.1e}",
        staged_ms[2] / staged_ms[0]
    );
}
