//! The latency and bandwidth of the compiled collectives between the processes of `mpirun`:
//! a jitted `all_reduce` (sum) of f32 arrays from 4 bytes to 64 MiB, and the pair that a
//! gradient bucket is (`reduce_scatter` then `all_gather`), each the median of many calls.
//! Prints a row per size (microseconds per call, and the bus bandwidth `2 (N-1)/N bytes /
//! time`, the figure MPI benchmarks such as OSU's report), then the latency `a` (the
//! smallest arrays' time) and bandwidth `b` (the largest arrays') of the model
//! `t(bytes) = a + 2 (N-1)/N bytes / b` that docs/distributed.md extrapolates from.
//!
//! ```text
//! cargo build --release --features mpi --example dist_bandwidth
//! mpirun -np 2 target/release/examples/dist_bandwidth
//! ```
//! (in a world of one process a collective is its input: the times are the call's own.)

use jitfuse::dist::{self, Reduce};
use jitfuse::{jit, DType, Tensor};
use std::time::Instant;

/// The sum over the ranks, written over `x` (donated).
#[jit]
fn summed(x: Tensor) -> Tensor {
    dist::all_reduce(&x, Reduce::Sum).unwrap()
}

/// A bucket's round trip: this rank's block of the mean, then every rank's blocks.
#[jit]
fn bucket(x: Tensor) -> Tensor {
    let mine = dist::reduce_scatter(&x, 0, Reduce::Mean).unwrap();
    dist::all_gather(&mine, 0).unwrap()
}

/// The median time of `f` in microseconds over `calls` calls (after two not timed), the
/// same on every rank (rank 0's, sent to all).
fn median_us(calls: usize, mut f: impl FnMut()) -> f64 {
    f();
    f();
    let mut t: Vec<f64> = (0..calls)
        .map(|_| {
            dist::barrier();
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(|a, b| a.total_cmp(b));
    let m = Tensor::scalar(t[t.len() / 2]);
    dist::broadcast(&m, 0).unwrap().item::<f64>().unwrap()
}

fn main() {
    dist::init();
    let (rank, n) = (dist::rank(), dist::size());
    let factor = 2.0 * (n as f64 - 1.0).max(1.0) / n as f64;
    if rank == 0 {
        println!("{n} processes; f32 arrays; microseconds per call (median), bus bandwidth GB/s");
        println!(
            "| bytes | all_reduce µs | GB/s | bucket (reduce_scatter + all_gather) µs | GB/s |"
        );
        println!("|---|---|---|---|---|");
    }
    let mut rows = Vec::new();
    let mut elements = 1usize;
    while elements * 4 <= 64 << 20 {
        // Elements a multiple of the rank count (a bucket's block), at least one each.
        let len = elements.div_ceil(n) * n;
        let bytes = (len * 4) as f64;
        let calls = if bytes < 1e6 { 200 } else { 20 };
        let mut x = Tensor::ones(&[len], DType::F32);
        let reduce = median_us(calls, || {
            x = summed(std::mem::replace(&mut x, Tensor::scalar(0f32)))
        });
        let mut y = Tensor::ones(&[len], DType::F32);
        let pair = median_us(calls, || {
            y = bucket(std::mem::replace(&mut y, Tensor::scalar(0f32)))
        });
        let gbs = |us: f64| factor * bytes / us / 1e3;
        if rank == 0 {
            println!(
                "| {bytes:.0} | {reduce:.1} | {:.2} | {pair:.1} | {:.2} |",
                gbs(reduce),
                gbs(pair)
            );
        }
        rows.push((bytes, reduce, pair));
        elements *= 4;
    }
    if rank == 0 {
        let (small, large) = (rows[0], rows[rows.len() - 1]);
        println!(
            "\nmodel t(bytes) = a + {factor:.2} bytes / b: all_reduce a = {:.1} µs, b = {:.2} GB/s; \
             bucket a = {:.1} µs, b = {:.2} GB/s",
            small.1,
            factor * large.0 / (large.1 - small.1) / 1e3,
            small.2,
            factor * large.0 / (large.2 - small.2) / 1e3,
        );
    }
}
