//! The benchmark workloads of `../shared/anchors/README.md` (W1–W9), measured in
//! ONE process against the baselines a Rust user has, with interleaved samples
//! and medians.
//!
//! Run: `cargo bench --bench workloads` (about a minute). Prints a Markdown
//! table and writes it to `target/bench-results.md`, with an SVG bar chart of
//! the ratios in `target/bench-ratios.svg` (`$CARGO_TARGET_DIR` instead of
//! `target/` when that is set). `JITFUSE_BENCH_ROUNDS=n` changes the number of
//! samples per case (default 31).
//!
//! Per workload:
//! - **jitfuse**: the cached `#[jit]` call (outputs allocated by the call);
//! - **compile**: trace + compile of a fresh function (`clear_cache`, then the
//!   growth of `cache_stats().compile_time` over one call);
//! - **hand loop**: a plain Rust loop compiled by rustc for the level jitfuse compiles for
//!   (AVX-512F, else AVX2+FMA, chosen at run time; `JITFUSE_ISA` caps both), split over rayon's pool like jitfuse's kernels,
//!   with the same vectorisable tanh/exp approximations jitfuse and XLA use; for
//!   matmul the fastest GEMM crate on the CPU called directly (faer's `gemm`
//!   with AVX-512, else `matrixmultiply`: the libraries jitfuse calls);
//! - **f64 rows** (`W1f64`, `W3f64`, `W4f64`): gelu, softmax and layer norm's jitted
//!   functions on the same values in f64, against XLA with 64-bit types (no hand loop or
//!   ndarray row; checked against the f32 rows);
//! - **ndarray**: the eager code a Rust user writes today (one array per op,
//!   `mapv(f32::tanh)` for the transcendentals);
//! - **copy bandwidth**: a 256 MiB `copy_from_slice` in the same run (read + write
//!   counted, as the anchors' NumPy figure); each memory-bound workload (W1–W5)
//!   is reported as bytes-that-must-move / time and as a fraction of it;
//! - **XLA**: when Python has JAX, `benches/jax_compare.py --serve` runs as a
//!   worker process and takes one XLA sample right after each of ours
//!   (`workloads/xla.rs`; `JITFUSE_BENCH_JAX=0` leaves it out and shows the
//!   anchors' figures instead).
//!
//! Samples are taken round-robin over every case (one sample of each case per
//! round, a warm-up round discarded), so drift of the shared machine hits every
//! case alike; the table shows medians. A sample is the last of six
//! back-to-back runs (warm caches, as XLA is timed by its worker;
//! `JITFUSE_BENCH_WARM=n` runs n before the timed one);
//! `JITFUSE_BENCH_COLD=1` times single runs after the other cases instead.
//! `JITFUSE_BENCH_ONLY=W5,W9` keeps only those workloads, by the ids of
//! ../shared/anchors/ (the table names them): W1 gelu, W2 axpby chain, W3 softmax, W4 layer
//! norm, W5 row sums, W6 MLP forward, W7 MLP gradient, W8 residual-chain gradient, W9 matmul,
//! `dispatch`, `chain20`, and W1f64/W3f64/W4f64 the f64 forms of W1/W3/W4.
//!
//! `JITFUSE_BENCH_PROFILE=<W1|W2|W3|W4|W5|chain20>:<jit|hand|ratio>:<calls>` instead runs
//! one implementation `calls` times on an L2-sized input (16384 elements;
//! 16 rows of 1024 for W3/W4, 4 rows of 4096 for W5) and exits: run it under
//! `valgrind --tool=callgrind` with two call counts and divide the difference of
//! the instruction counts by the extra elements for a deterministic cost per
//! element (`benches/profile.sh` does that). `ratio` times both, interleaved,
//! on the same input (`calls` samples of 20 calls each); an optional fourth
//! field multiplies the input size (`:256` = the full 4M-element workloads).
//! `JITFUSE_BENCH_PROFILE=<W3|W4|W6|W7|W8>:compile:<n>` compiles that workload `n`
//! times from a cleared cache and prints the median (run it under `perf record`).

use jitfuse::prelude::*;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};
use rayon::prelude::*;
use std::fmt::Write as _;
use std::hint::black_box;
use std::mem::MaybeUninit;
use std::time::Instant;

// ---------------------------------------------------------------------------
// Reference figures: JAX 0.10.2 (`jax.jit`, XLA:CPU), measured on this kind of
// machine (2 cores of an AMD EPYC Zen 3), copied from ../shared/anchors/README.md,
// table "JAX (XLA:CPU) and NumPy — medians of 3 runs". Not measured by this bench:
// `benches/jax_compare.py` measures them again on the machine at hand.
// ---------------------------------------------------------------------------

/// (workload id, XLA compile ms, XLA run ms)
const XLA_ANCHORS: &[(&str, f64, f64)] = &[
    ("W1", 58.0, 2.55),
    ("W2", 59.0, 3.35), // "3.3–3.4 without page faults (11.8 with)"
    ("W3", 32.0, 3.90),
    ("W4", 36.0, 3.01),
    ("W5", 26.0, 4.47),
    ("W6", 171.0, 2.92),
    ("W7", 482.0, 5.79),
    ("W8", 304.0, 60.2), // W8a, plain
    ("W9", 26.0, 18.7),  // 114.7 GFLOP/s
];

/// Copy bandwidth of the anchors machine (NumPy, 256 MiB, read + write counted), GB/s.
const ANCHOR_COPY_GBS: f64 = 19.55;

/// (compile ms, run ms) of XLA for a row from the anchors (no JAX worker).
fn xla_anchor(id: &str) -> Option<(f64, f64)> {
    XLA_ANCHORS.iter().find(|r| r.0 == id).map(|r| (r.1, r.2))
}

#[path = "workloads/xla.rs"]
mod xla;

/// The JAX worker (`benches/jax_compare.py --serve`) unless
/// `JITFUSE_BENCH_JAX=0`; `None` when Python or JAX is missing (the anchors
/// are shown then).
fn start_xla() -> Option<xla::Shared> {
    if std::env::var("JITFUSE_BENCH_JAX").as_deref() == Ok("0") {
        return None;
    }
    eprintln!("starting the JAX worker, benches/jax_compare.py --serve (JITFUSE_BENCH_JAX=0 skips it) ...");
    xla::Worker::start(&format!(
        "{}/benches/jax_compare.py",
        env!("CARGO_MANIFEST_DIR")
    ))
}

// ---------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------

const N: usize = 4 * 1024 * 1024; // W1, W2, chain
const R3: usize = 4096; // W3, W4 rows
const C3: usize = 1024; // W3, W4 columns
const N5: usize = 4096; // W5 is [N5, N5]
                        // W6: batch, inputs, hidden units, classes
const B6: usize = 256;
const I6: usize = 784;
const H6: usize = 512;
const O6: usize = 10;
const N9: usize = 1024; // W9 is [N9, N9] @ [N9, N9]
const TINY: usize = 4;
const DISPATCH_CALLS: usize = 10_000;
const COPY_BYTES: usize = 256 << 20;
const MIB: f64 = 1024.0 * 1024.0;

// ---------------------------------------------------------------------------
// The jitted functions (bodies as in the anchors' table)
// ---------------------------------------------------------------------------

#[jit]
fn w1_gelu(x: &Tensor) -> Tensor {
    0.5 * x * (1.0 + (0.797_884_560_8 * (x + 0.044_715 * x * x * x)).tanh())
}

#[jit]
fn w2_axpby(a: &Tensor, b: &Tensor, c: &Tensor) -> Tensor {
    ((a * 2.0 + b) * c - a) / (1.0 + b * b)
}

#[jit]
fn w3_softmax(x: &Tensor) -> Tensor {
    let m = x.max_keepdims(-1);
    let e = (x - &m).exp();
    &e / e.sum_keepdims(-1)
}

#[jit]
fn w4_layernorm(x: &Tensor, gamma: &Tensor, beta: &Tensor) -> Tensor {
    let mean = x.mean_keepdims(-1);
    let d = x - &mean;
    let var = d.square().mean_keepdims(-1);
    d * (var + 1e-5).rsqrt() * gamma + beta
}

#[jit]
fn w5_sum_rows(x: &Tensor) -> Tensor {
    x.sum(1)
}

#[jit]
fn w6_mlp(x: &Tensor, w1: &Tensor, b1: &Tensor, w2: &Tensor, b2: &Tensor, y: &Tensor) -> Tensor {
    let h = (x.matmul(w1) + b1).relu();
    softmax_cross_entropy(&(h.matmul(w2) + b2), y)
}

/// W7: value and gradient of W6's loss w.r.t. (W1, b1, W2, b2).
#[jit]
fn w7_mlp_grad(
    x: &Tensor,
    w1: &Tensor,
    b1: &Tensor,
    w2: &Tensor,
    b2: &Tensor,
    y: &Tensor,
) -> (Tensor, (Tensor, Tensor, Tensor, Tensor)) {
    value_and_grad(
        |p: &(Tensor, Tensor, Tensor, Tensor)| {
            let h = (x.matmul(&p.0) + &p.1).relu();
            softmax_cross_entropy(&(h.matmul(&p.2) + &p.3), y)
        },
        &(w1.clone(), b1.clone(), w2.clone(), b2.clone()),
    )
}

/// W8a: gradient of sum(h²) after 16 residual tanh layers w.r.t. all weights
/// (plain; the checkpointed variants are measured in tests/runtime/autodiff.rs).
#[jit]
fn w8_chain_grad(ws: &Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
    grad(
        |ws: &Vec<Tensor>| {
            let mut h = x.clone();
            for w in ws {
                h = h.matmul(w).tanh() + &h;
            }
            h.square().sum_all()
        },
        ws,
    )
}

#[jit]
fn w9_matmul(a: &Tensor, b: &Tensor) -> Tensor {
    a.matmul(b)
}

#[jit]
fn tiny_add(x: &Tensor) -> Tensor {
    x + 1.0
}

/// 20 elementwise ops, no transcendentals (the same list in `chain_hand`, `chain_nd`).
#[jit]
fn chain20(x: &Tensor) -> Tensor {
    let y = x * 1.5; //  1
    let y = y + 0.25; //  2
    let y = y * x; //  3
    let y = y - 1.0; //  4
    let y = y.abs(); //  5
    let y = y + 1.0; //  6
    let y = y.sqrt(); //  7
    let y = y * 0.5; //  8
    let y = y - x; //  9
    let y = y.maximum(-2.0); // 10
    let y = y.minimum(2.0); // 11
    let y = y.square(); // 12
    let y = y + x; // 13
    let y = y * 0.125; // 14
    let y = -y; // 15
    let y = y + 3.0; // 16
    let y = y.recip(); // 17
    let y = y * x; // 18
    let y = y - 0.5; // 19
    y.abs() // 20
}

// ---------------------------------------------------------------------------
// Hand-written loops (rustc), split over rayon's pool
// ---------------------------------------------------------------------------

/// Elements per parallel chunk of the 1-D loops; rows per chunk of the row loops.
const CHUNK: usize = 1 << 16;
const ROW_CHUNK: usize = 64;

/// A fresh `Vec<f32>` of `n` elements (not zeroed, like jitfuse's outputs),
/// filled in parallel chunks of `chunk`: `fill(first index, chunk)` must write
/// every element of its chunk.
fn par_fill(
    n: usize,
    chunk: usize,
    fill: impl Fn(usize, &mut [MaybeUninit<f32>]) + Sync,
) -> Vec<f32> {
    let mut v = Vec::<f32>::with_capacity(n);
    v.spare_capacity_mut()[..n]
        .par_chunks_mut(chunk)
        .enumerate()
        .for_each(|(i, c)| fill(i * chunk, c));
    // SAFETY: every chunk was written by `fill`.
    unsafe { v.set_len(n) };
    v
}

/// A chunk after every element has been written.
///
/// # Safety
/// Every element must have been initialised.
unsafe fn assume_init(s: &mut [MaybeUninit<f32>]) -> &mut [f32] {
    unsafe { &mut *(s as *mut [MaybeUninit<f32>] as *mut [f32]) }
}

/// tanh as XLA/Eigen compute it: odd 13/6 rational, input clamped to ±7.905
/// (max abs error 4.3e-7 on [-10, 10], measured against f64 `tanh`).
#[inline(always)]
fn tanh_r(x: f32) -> f32 {
    let x = x.clamp(-7.905_311, 7.905_311);
    let x2 = x * x;
    let mut p = -2.760_768_5e-16f32;
    p = p * x2 + 2.000_187_9e-13;
    p = p * x2 + -8.604_671_5e-11;
    p = p * x2 + 5.122_297e-8;
    p = p * x2 + 1.485_722_4e-5;
    p = p * x2 + 6.372_619_3e-4;
    p = p * x2 + 4.893_524_6e-3;
    let mut q = 1.198_258_4e-6f32;
    q = q * x2 + 1.185_347_1e-4;
    q = q * x2 + 2.268_434_6e-3;
    q = q * x2 + 4.893_525e-3;
    x * p / q
}

/// e^x, Cephes-style: round to n·ln2 with the magic-number trick (vectorises
/// without SSE4.1), degree-6 polynomial, 2^n through the exponent bits.
/// Max relative error 8.1e-8 on the clamped range (measured against f64 `exp`).
#[inline(always)]
fn exp_r(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E + 12_582_912.0) - 12_582_912.0;
    let r = x - n * 0.693_359_4 + n * 2.121_944_4e-4;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 5.000_000_1e-1;
    let y = p * r * r + r + 1.0;
    // SAFETY: x is clamped, so n is an integer in [-126, 127]. (`n as i32`
    // would saturate, which rustc does not vectorise.)
    let n: i32 = unsafe { n.to_int_unchecked() };
    y * f32::from_bits(((n + 127) << 23) as u32)
}

/// Sum with 16 independent accumulators (vectorised by rustc).
#[inline(always)]
fn sum16(x: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0.0f32; 16];
    let chunks = x.chunks_exact(16);
    let rest: f32 = chunks.remainder().iter().map(|&v| f(v)).sum();
    for c in chunks {
        for j in 0..16 {
            acc[j] += f(c[j]);
        }
    }
    acc.iter().sum::<f32>() + rest
}

#[inline(always)]
fn max16(x: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 16];
    let chunks = x.chunks_exact(16);
    let rest = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |a, &v| if v > a { v } else { a });
    for c in chunks {
        for j in 0..16 {
            acc[j] = if c[j] > acc[j] { c[j] } else { acc[j] };
        }
    }
    acc.iter().fold(rest, |a, &v| if v > a { v } else { a })
}

/// `fn name(args) body` compiled three times: for AVX-512F, for AVX2+FMA and for the default
/// target, the widest the CPU has chosen at each call. rustc vectorises a plain loop only for
/// the target it compiles for (SSE2 by default on x86-64); the hand loops are meant to be the
/// best rustc does on this machine, at its vector width, like jitfuse's kernels and XLA's.
macro_rules! at_machine_width {
    (fn $name:ident($($a:ident : $t:ty),* $(,)?) $body:block) => {
        fn $name($($a: $t),*) {
            #[inline(always)]
            fn imp($($a: $t),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
                unsafe fn z($($a: $t),*) {
                    imp($($a),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn y($($a: $t),*) {
                    imp($($a),*)
                }
                if hand_width_is_avx512() {
                    // SAFETY: the CPU has the features `z` is compiled for.
                    return unsafe { z($($a),*) };
                }
                if hand_width_is_avx2() {
                    // SAFETY: as above, for `y`.
                    return unsafe { y($($a),*) };
                }
            }
            imp($($a),*)
        }
    };
}

at_machine_width! {
    fn w1_chunk(x: &[f32], out: &mut [MaybeUninit<f32>]) {
        for (o, &v) in out.iter_mut().zip(x) {
            o.write(0.5 * v * (1.0 + tanh_r(0.797_884_56 * (v + 0.044_715 * v * v * v))));
        }
    }
}

/// Whether `at_machine_width!` functions run their AVX-512F build: the level jitfuse compiles
/// for (the CPU's best, capped by `JITFUSE_ISA`), so that "ours/hand" compares one width.
fn hand_width_is_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        jitfuse::internals::codegen::Target::host().isa == jitfuse::internals::codegen::Isa::Avx512
            && is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether they run their AVX2+FMA build.
fn hand_width_is_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        !hand_width_is_avx512()
            && jitfuse::internals::codegen::Target::host().isa
                >= jitfuse::internals::codegen::Isa::Avx2
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn w1_hand(x: &[f32]) -> Vec<f32> {
    par_fill(x.len(), CHUNK, |s, out| w1_chunk(&x[s..], out))
}

at_machine_width! {
    fn w2_chunk(a: &[f32], b: &[f32], c: &[f32], out: &mut [MaybeUninit<f32>]) {
        for (o, ((&a, &b), &c)) in out.iter_mut().zip(a.iter().zip(b).zip(c)) {
            o.write(((a * 2.0 + b) * c - a) / (1.0 + b * b));
        }
    }
}

fn w2_hand(a: &[f32], b: &[f32], c: &[f32]) -> Vec<f32> {
    par_fill(a.len(), CHUNK, |s, out| {
        w2_chunk(&a[s..], &b[s..], &c[s..], out)
    })
}

at_machine_width! {
    fn w3_chunk(x: &[f32], out: &mut [MaybeUninit<f32>]) {
        for (orow, xrow) in out.chunks_mut(C3).zip(x.chunks(C3)) {
            let m = max16(xrow);
            for (o, &v) in orow.iter_mut().zip(xrow) {
                o.write(exp_r(v - m));
            }
            // SAFETY: the loop above wrote the whole row.
            let orow = unsafe { assume_init(orow) };
            let inv = 1.0 / sum16(orow, |v| v);
            orow.iter_mut().for_each(|v| *v *= inv);
        }
    }
}

fn w3_hand(x: &[f32]) -> Vec<f32> {
    par_fill(x.len(), C3 * ROW_CHUNK, |s, out| w3_chunk(&x[s..], out))
}

at_machine_width! {
    fn w4_chunk(x: &[f32], gamma: &[f32], beta: &[f32], out: &mut [MaybeUninit<f32>]) {
        for (orow, xrow) in out.chunks_mut(C3).zip(x.chunks(C3)) {
            let mean = sum16(xrow, |v| v) / C3 as f32;
            let var = sum16(xrow, |v| (v - mean) * (v - mean)) / C3 as f32;
            let rstd = 1.0 / (var + 1e-5).sqrt();
            for (o, ((&v, &g), &b)) in orow.iter_mut().zip(xrow.iter().zip(gamma).zip(beta)) {
                o.write((v - mean) * rstd * g + b);
            }
        }
    }
}

fn w4_hand(x: &[f32], gamma: &[f32], beta: &[f32]) -> Vec<f32> {
    par_fill(x.len(), C3 * ROW_CHUNK, |s, out| {
        w4_chunk(&x[s..], gamma, beta, out)
    })
}

at_machine_width! {
    fn w5_chunk(x: &[f32], out: &mut [MaybeUninit<f32>]) {
        for (i, o) in out.iter_mut().enumerate() {
            o.write(sum16(&x[i * N5..][..N5], |v| v));
        }
    }
}

fn w5_hand(x: &[f32]) -> Vec<f32> {
    par_fill(x.len() / N5, ROW_CHUNK, |s, out| {
        w5_chunk(&x[s * N5..], out)
    })
}

/// `a[m,k] @ b[k,n]` (row-major) into a fresh buffer by the fastest GEMM
/// library on this CPU, called directly: faer's `gemm` (AVX-512 kernels,
/// threaded on rayon's pool) where the CPU has AVX-512, `matrixmultiply`
/// (AVX2/FMA, threaded) otherwise (`benches/gemm_compare.rs` times both).
fn sgemm(m: usize, k: usize, n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    assert!(a.len() == m * k && b.len() == k * n);
    let mut c = Vec::<f32>::with_capacity(m * n);
    // SAFETY: sizes checked above; with beta = 0 (`read_dst` false for `gemm`)
    // C is written without being read.
    unsafe {
        if hand_gemm_is_faer() {
            gemm::gemm(
                m,
                n,
                k,
                c.as_mut_ptr(),
                1,
                n as isize,
                false,
                a.as_ptr(),
                1,
                k as isize,
                b.as_ptr(),
                1,
                n as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::Rayon(0),
            );
        } else {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                k as isize,
                1,
                b.as_ptr(),
                n as isize,
                1,
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            );
        }
        c.set_len(m * n);
    }
    c
}

/// Whether the hand baseline's GEMM is `gemm` (the CPU has AVX-512).
fn hand_gemm_is_faer() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

struct Mlp {
    x: Vec<f32>,
    w1: Vec<f32>,
    b1: Vec<f32>,
    w2: Vec<f32>,
    b2: Vec<f32>,
    y: Vec<f32>,
}

fn w6_hand(p: &Mlp) -> Vec<f32> {
    let mut h = sgemm(B6, I6, H6, &p.x, &p.w1);
    for row in h.chunks_mut(H6) {
        for (v, &b) in row.iter_mut().zip(&p.b1) {
            *v = (*v + b).max(0.0);
        }
    }
    let logits = sgemm(B6, H6, O6, &h, &p.w2);
    let mut total = 0.0f32;
    for (row, y) in logits.chunks(O6).zip(p.y.chunks(O6)) {
        let l: Vec<f32> = row.iter().zip(&p.b2).map(|(v, b)| v + b).collect();
        let m = l.iter().fold(f32::NEG_INFINITY, |a, &v| a.max(v));
        let lse = l.iter().map(|v| (v - m).exp()).sum::<f32>().ln() + m;
        total -= l.iter().zip(y).map(|(v, y)| y * (v - lse)).sum::<f32>();
    }
    vec![total / B6 as f32]
}

at_machine_width! {
    fn chain_chunk(x: &[f32], out: &mut [MaybeUninit<f32>]) {
        for (o, &x) in out.iter_mut().zip(x) {
            let y = ((x * 1.5 + 0.25) * x - 1.0).abs();
            let y = (y + 1.0).sqrt() * 0.5 - x;
            let y = y.max(-2.0).min(2.0);
            let y = -((y * y + x) * 0.125) + 3.0;
            o.write(((1.0 / y) * x - 0.5).abs());
        }
    }
}

fn chain_hand(x: &[f32]) -> Vec<f32> {
    par_fill(x.len(), CHUNK, |s, out| chain_chunk(&x[s..], out))
}

// ---------------------------------------------------------------------------
// ndarray: eager code as a Rust user writes it (NumPy style)
// ---------------------------------------------------------------------------

fn w1_nd(x: ArrayView1<f32>) -> Array1<f32> {
    0.5 * &x * (1.0 + ((&x + 0.044_715 * &x * &x * &x) * 0.797_884_56).mapv_into(f32::tanh))
}

fn w2_nd(a: ArrayView1<f32>, b: ArrayView1<f32>, c: ArrayView1<f32>) -> Array1<f32> {
    ((&a * 2.0 + &b) * &c - &a) / (1.0 + &b * &b)
}

fn w3_nd(x: ArrayView2<f32>) -> Array2<f32> {
    let m = x.map_axis(Axis(1), |r| r.fold(f32::NEG_INFINITY, |a, &v| a.max(v)));
    let e = (&x - &m.insert_axis(Axis(1))).mapv_into(f32::exp);
    let s = e.sum_axis(Axis(1)).insert_axis(Axis(1));
    e / s
}

fn w4_nd(x: ArrayView2<f32>, gamma: ArrayView1<f32>, beta: ArrayView1<f32>) -> Array2<f32> {
    let mean = x.mean_axis(Axis(1)).unwrap().insert_axis(Axis(1));
    let d = &x - &mean;
    let var = d
        .mapv(|v| v * v)
        .mean_axis(Axis(1))
        .unwrap()
        .insert_axis(Axis(1));
    d / (var + 1e-5).mapv_into(f32::sqrt) * gamma + beta
}

fn w5_nd(x: ArrayView2<f32>) -> Array1<f32> {
    x.sum_axis(Axis(1))
}

fn w6_nd(
    x: ArrayView2<f32>,
    w1: ArrayView2<f32>,
    b1: ArrayView1<f32>,
    w2: ArrayView2<f32>,
    b2: ArrayView1<f32>,
    y: ArrayView2<f32>,
) -> f32 {
    let h = (x.dot(&w1) + b1).mapv_into(|v| v.max(0.0));
    let logits = h.dot(&w2) + b2;
    let m = logits
        .map_axis(Axis(1), |r| r.fold(f32::NEG_INFINITY, |a, &v| a.max(v)))
        .insert_axis(Axis(1));
    let shifted = logits - m;
    let lse = shifted
        .mapv(f32::exp)
        .sum_axis(Axis(1))
        .mapv_into(f32::ln)
        .insert_axis(Axis(1));
    -(&y * (shifted - lse)).sum() / B6 as f32
}

fn chain_nd(x: ArrayView1<f32>) -> Array1<f32> {
    let y = &x * 1.5;
    let y = y + 0.25;
    let y = y * &x;
    let y = y - 1.0;
    let y = y.mapv_into(f32::abs);
    let y = y + 1.0;
    let y = y.mapv_into(f32::sqrt);
    let y = y * 0.5;
    let y = y - &x;
    let y = y.mapv_into(|v| v.max(-2.0));
    let y = y.mapv_into(|v| v.min(2.0));
    let y = y.mapv_into(|v| v * v);
    let y = y + &x;
    let y = y * 0.125;
    let y = -y;
    let y = y + 3.0;
    let y = y.mapv_into(f32::recip);
    let y = y * &x;
    let y = y - 0.5;
    y.mapv_into(f32::abs)
}

// ---------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------

/// Deterministic uniform floats in [lo, hi) (xorshift64).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn vec(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n)
            .map(|_| lo + (self.next() >> 40) as f32 / (1u64 << 24) as f32 * (hi - lo))
            .collect()
    }
}

fn tensor(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

/// The same values as an f64 tensor (the f64 rows).
fn tensor64(v: &[f32], shape: &[usize]) -> Tensor {
    let v: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    Tensor::from_vec(v, shape).unwrap()
}

fn view1(v: &[f32]) -> ArrayView1<'_, f32> {
    ArrayView1::from(v)
}

fn view2(v: &[f32], r: usize, c: usize) -> ArrayView2<'_, f32> {
    ArrayView2::from_shape((r, c), v).unwrap()
}

fn secs<T>(f: impl FnOnce() -> T) -> f64 {
    let t = Instant::now();
    black_box(f());
    t.elapsed().as_secs_f64()
}

/// Minor page faults of this process so far (Linux; 0 elsewhere).
fn minor_faults() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the parenthesised command name; minflt is field 10 (1-based).
            let rest = &s[s.rfind(')')? + 2..];
            rest.split_whitespace().nth(7)?.parse().ok()
        })
        .unwrap_or(0)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Jit,
    Compile,
    Hand,
    Ndarray,
    Copy,
    /// XLA, one sample taken by the JAX worker right after ours.
    Xla,
}

/// One thing to time: `run` returns the seconds of one sample (a compile
/// sample returns the compile time it caused, a dispatch sample the time per call).
struct Case<'a> {
    id: &'static str,
    kind: Kind,
    calls: u64,
    run: Box<dyn FnMut() -> f64 + 'a>,
    samples: Vec<f64>,
    faults: Vec<u64>,
}

impl Case<'_> {
    fn median(&self) -> f64 {
        median(&self.samples)
    }
}

fn add<'a>(
    cases: &mut Vec<Case<'a>>,
    id: &'static str,
    kind: Kind,
    calls: u64,
    run: Box<dyn FnMut() -> f64 + 'a>,
) {
    cases.push(Case {
        id,
        kind,
        calls,
        run,
        samples: Vec::new(),
        faults: Vec::new(),
    });
}

fn per_call(s: f64) -> f64 {
    s / DISPATCH_CALLS as f64
}

/// The median of the samples that are numbers (NaN: a failed XLA sample); NaN if none is.
fn median(v: &[f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// `f::clear_cache()`, one call, and the compile time it added.
macro_rules! compile_case {
    ($f:ident ( $($arg:expr),* )) => {
        Box::new(|| {
            $f::clear_cache();
            let before = $f::cache_stats().compile_time;
            black_box($f($($arg),*));
            ($f::cache_stats().compile_time - before).as_secs_f64()
        })
    };
}

/// Largest |a - b| / max(1, max |b|): a scale-aware difference for the checks.
fn max_diff(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len(), "output lengths");
    let scale = b.iter().fold(1.0f32, |m, v| m.max(v.abs())) as f64;
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() as f64)
        .fold(
            0.0,
            |m: f64, d| if d.is_nan() { f64::INFINITY } else { m.max(d) },
        )
        / scale
}

struct Row {
    id: &'static str,
    name: &'static str,
    /// Bytes that must move (inputs + outputs), for memory-bound workloads.
    bytes: Option<f64>,
    flops: Option<f64>,
    /// "ms" or "µs" (dispatch).
    unit_us: bool,
    pending: Option<&'static str>,
}

/// `JITFUSE_BENCH_PROFILE=<W3|W4|W6|W7|W8>:compile:<n>`: trace, lower and compile
/// the workload `n` times from a cleared cache, without running it (for
/// `perf record`: where compile time goes), printing the median.
fn profile_compile(id: &str, n: usize) {
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let mut t =
        |s: &[usize]| Tensor::from_vec(rng.vec(s.iter().product(), -0.04, 0.04), s).unwrap();
    let w6 = [
        t(&[256, 784]),
        t(&[784, 512]),
        t(&[512]),
        t(&[512, 10]),
        t(&[10]),
        t(&[256, 10]),
    ];
    let ws8: Vec<Tensor> = (0..16).map(|_| t(&[512, 512])).collect();
    let x8 = t(&[256, 512]);
    let (x3, g4, b4) = (t(&[4096, 1024]), t(&[1024]), t(&[1024]));
    let mut ms: Vec<f64> = (0..n)
        .map(|_| {
            let start = Instant::now();
            let kernels = match id {
                "W3" => {
                    w3_softmax::clear_cache();
                    w3_softmax::lower(&x3).and_then(|l| l.compile())
                }
                "W4" => {
                    w4_layernorm::clear_cache();
                    w4_layernorm::lower(&x3, &g4, &b4).and_then(|l| l.compile())
                }
                "W6" => {
                    w6_mlp::clear_cache();
                    w6_mlp::lower(&w6[0], &w6[1], &w6[2], &w6[3], &w6[4], &w6[5])
                        .and_then(|l| l.compile())
                }
                "W7" => {
                    w7_mlp_grad::clear_cache();
                    w7_mlp_grad::lower(&w6[0], &w6[1], &w6[2], &w6[3], &w6[4], &w6[5])
                        .and_then(|l| l.compile())
                }
                "W8" => {
                    w8_chain_grad::clear_cache();
                    w8_chain_grad::lower(&ws8, &x8).and_then(|l| l.compile())
                }
                _ => panic!("compile profile: W3, W4, W6, W7 or W8, got {id}"),
            }
            .expect("compiles")
            .kernel_count();
            black_box(kernels);
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    println!(
        "{id}: trace + lower + compile median {:.2} ms over {n}",
        ms[n / 2]
    );
}

/// `JITFUSE_BENCH_PROFILE` mode (see the module docs).
fn profile(spec: &str) {
    let parts: Vec<&str> = spec.split(':').collect();
    let (id, imp, calls, scale) = match parts[..] {
        [id, imp, calls] => (id, imp, calls, 1),
        [id, imp, calls, scale] => (id, imp, calls, scale.parse().expect("scale")),
        _ => panic!("JITFUSE_BENCH_PROFILE=<id>:<jit|hand|ratio>:<calls>[:<scale>], got {spec}"),
    };
    let calls: usize = calls.parse().expect("calls");
    if imp == "compile" {
        profile_compile(id, calls);
        return;
    }
    let jit = match imp {
        "jit" => true,
        "hand" | "ratio" => false,
        _ => panic!("implementation {imp}: jit, hand or ratio"),
    };
    let pn: usize = 16384 * scale;
    let pr: usize = pn / C3;
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let x = rng.vec(pn, -5.0, 5.0);
    let (a, b, c) = (
        rng.vec(pn, -1.0, 1.0),
        rng.vec(pn, -1.0, 1.0),
        rng.vec(pn, -1.0, 1.0),
    );
    let g = rng.vec(C3, 0.5, 1.5);
    let be = rng.vec(C3, -1.0, 1.0);
    let t1 = tensor(&x, &[pn]);
    let t3 = tensor(&x, &[pr, C3]);
    let t5 = tensor(&x, &[pn / N5, N5]);
    let (ta, tb, tc) = (tensor(&a, &[pn]), tensor(&b, &[pn]), tensor(&c, &[pn]));
    let (tg, tbe) = (tensor(&g, &[C3]), tensor(&be, &[C3]));
    let run = |jit: bool| -> f32 {
        match (id, jit) {
            ("W1", true) => black_box(w1_gelu(&t1)).len() as f32,
            ("W1", false) => black_box(w1_hand(&x)).len() as f32,
            ("W2", true) => black_box(w2_axpby(&ta, &tb, &tc)).len() as f32,
            ("W2", false) => black_box(w2_hand(&a, &b, &c)).len() as f32,
            ("W3", true) => black_box(w3_softmax(&t3)).len() as f32,
            ("W3", false) => black_box(w3_hand(&x)).len() as f32,
            ("W4", true) => black_box(w4_layernorm(&t3, &tg, &tbe)).len() as f32,
            ("W4", false) => black_box(w4_hand(&x, &g, &be)).len() as f32,
            ("W5", true) => black_box(w5_sum_rows(&t5)).len() as f32,
            ("W5", false) => black_box(w5_hand(&x)).len() as f32,
            ("chain20", true) => black_box(chain20(&t1)).len() as f32,
            ("chain20", false) => black_box(chain_hand(&x)).len() as f32,
            _ => panic!("unknown workload {id}"),
        }
    };
    if imp == "ratio" {
        // Interleaved timing of both (a noisy-machine figure, L2-resident).
        let (mut tj, mut th) = (Vec::new(), Vec::new());
        for _ in 0..calls {
            for (jit, v) in [(true, &mut tj), (false, &mut th)] {
                let t = Instant::now();
                for _ in 0..20 {
                    black_box(run(jit));
                }
                v.push(t.elapsed().as_secs_f64() / 20.0 / pn as f64 * 1e9);
            }
        }
        let (mj, mh) = (median(&tj), median(&th));
        println!(
            "{id}: jit {mj:.3} ns/elem, hand {mh:.3} ns/elem, ratio {:.3}",
            mj / mh
        );
        return;
    }
    let mut s = 0.0;
    for _ in 0..calls {
        s += black_box(run(jit));
    }
    println!("{id} {imp} x{calls}: {s}");
}

fn main() {
    if let Ok(spec) = std::env::var("JITFUSE_BENCH_PROFILE") {
        profile(&spec);
        return;
    }
    let xla_worker = start_xla();
    let rounds: usize = std::env::var("JITFUSE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(31);
    let wall = Instant::now();
    let threads = rayon::current_num_threads();

    // ---- inputs ----
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let x1 = rng.vec(N, -5.0, 5.0);
    let (a2, b2, c2) = (
        rng.vec(N, -1.0, 1.0),
        rng.vec(N, -1.0, 1.0),
        rng.vec(N, -1.0, 1.0),
    );
    let x3 = rng.vec(R3 * C3, -4.0, 4.0);
    let g4 = rng.vec(C3, 0.5, 1.5);
    let be4 = rng.vec(C3, -1.0, 1.0);
    let x5 = rng.vec(N5 * N5, -1.0, 1.0);
    let (s1, s2) = (1.0 / (I6 as f32).sqrt(), 1.0 / (H6 as f32).sqrt());
    let mlp = Mlp {
        x: rng.vec(B6 * I6, 0.0, 1.0),
        w1: rng.vec(I6 * H6, -s1, s1),
        b1: rng.vec(H6, -s1, s1),
        w2: rng.vec(H6 * O6, -s2, s2),
        b2: rng.vec(O6, -s2, s2),
        y: (0..B6)
            .flat_map(|_| {
                let k = (rng.next() % O6 as u64) as usize;
                (0..O6).map(move |j| if j == k { 1.0 } else { 0.0 })
            })
            .collect(),
    };
    let (a9, b9) = (rng.vec(N9 * N9, -1.0, 1.0), rng.vec(N9 * N9, -1.0, 1.0));
    let tiny = vec![1.0f32, 2.0, 3.0, 4.0];

    let t1 = tensor(&x1, &[N]);
    let (ta2, tb2, tc2) = (tensor(&a2, &[N]), tensor(&b2, &[N]), tensor(&c2, &[N]));
    let t3 = tensor(&x3, &[R3, C3]);
    let (tg4, tb4) = (tensor(&g4, &[C3]), tensor(&be4, &[C3]));
    let t5 = tensor(&x5, &[N5, N5]);
    let t6 = [
        tensor(&mlp.x, &[B6, I6]),
        tensor(&mlp.w1, &[I6, H6]),
        tensor(&mlp.b1, &[H6]),
        tensor(&mlp.w2, &[H6, O6]),
        tensor(&mlp.b2, &[O6]),
        tensor(&mlp.y, &[B6, O6]),
    ];
    let (ta9, tb9) = (tensor(&a9, &[N9, N9]), tensor(&b9, &[N9, N9]));
    let ttiny = tensor(&tiny, &[TINY]);
    // The f64 rows: W1, W3 and W4's jitted functions on the same values in f64.
    let t1d = tensor64(&x1, &[N]);
    let t3d = tensor64(&x3, &[R3, C3]);
    let (tg4d, tb4d) = (tensor64(&g4, &[C3]), tensor64(&be4, &[C3]));
    let copy_src = vec![1.0f32; COPY_BYTES / 4];
    let mut copy_dst = vec![0.0f32; COPY_BYTES / 4];

    // ---- check every implementation against jitfuse once ----
    let f = |t: Tensor| t.to_vec::<f32>().unwrap();
    let nd = |a: ndarray::ArrayD<f32>| a.iter().copied().collect::<Vec<f32>>();
    let checks: Vec<(&str, Vec<f32>, Vec<f32>, Vec<f32>)> = vec![
        (
            "W1",
            f(w1_gelu(&t1)),
            w1_hand(&x1),
            nd(w1_nd(view1(&x1)).into_dyn()),
        ),
        (
            "W2",
            f(w2_axpby(&ta2, &tb2, &tc2)),
            w2_hand(&a2, &b2, &c2),
            nd(w2_nd(view1(&a2), view1(&b2), view1(&c2)).into_dyn()),
        ),
        (
            "W3",
            f(w3_softmax(&t3)),
            w3_hand(&x3),
            nd(w3_nd(view2(&x3, R3, C3)).into_dyn()),
        ),
        (
            "W4",
            f(w4_layernorm(&t3, &tg4, &tb4)),
            w4_hand(&x3, &g4, &be4),
            nd(w4_nd(view2(&x3, R3, C3), view1(&g4), view1(&be4)).into_dyn()),
        ),
        (
            "W5",
            f(w5_sum_rows(&t5)),
            w5_hand(&x5),
            nd(w5_nd(view2(&x5, N5, N5)).into_dyn()),
        ),
        (
            "W6",
            f(w6_mlp(&t6[0], &t6[1], &t6[2], &t6[3], &t6[4], &t6[5])),
            w6_hand(&mlp),
            vec![w6_nd(
                view2(&mlp.x, B6, I6),
                view2(&mlp.w1, I6, H6),
                view1(&mlp.b1),
                view2(&mlp.w2, H6, O6),
                view1(&mlp.b2),
                view2(&mlp.y, B6, O6),
            )],
        ),
        (
            "W9",
            f(w9_matmul(&ta9, &tb9)),
            sgemm(N9, N9, N9, &a9, &b9),
            nd(view2(&a9, N9, N9).dot(&view2(&b9, N9, N9)).into_dyn()),
        ),
        (
            "chain20",
            f(chain20(&t1)),
            chain_hand(&x1),
            nd(chain_nd(view1(&x1)).into_dyn()),
        ),
    ];
    // Different approximations of tanh/exp and different summation orders:
    // agreement to 1e-4 of the output's scale is what "the same result" means here.
    const CHECK_TOL: f64 = 1e-4;
    let mut check_lines = Vec::new();
    for (id, ours, hand, nd) in &checks {
        let (dh, dn) = (max_diff(hand, ours), max_diff(nd, ours));
        let flag = if dh <= CHECK_TOL && dn <= CHECK_TOL {
            "ok"
        } else {
            "MISMATCH"
        };
        check_lines.push(format!("{id}: max |hand - jitfuse| {dh:.1e}, max |ndarray - jitfuse| {dn:.1e} (relative to max |out|, tolerance {CHECK_TOL:.0e}): {flag}"));
    }
    drop(checks);
    // The f64 rows against their f32 rows (the same functions and values).
    let f64s = |t: Tensor| -> Vec<f32> {
        t.to_vec::<f64>()
            .unwrap()
            .into_iter()
            .map(|v| v as f32)
            .collect()
    };
    for (id, ours64, ours32) in [
        ("W1f64", f64s(w1_gelu(&t1d)), f(w1_gelu(&t1))),
        ("W3f64", f64s(w3_softmax(&t3d)), f(w3_softmax(&t3))),
        (
            "W4f64",
            f64s(w4_layernorm(&t3d, &tg4d, &tb4d)),
            f(w4_layernorm(&t3, &tg4, &tb4)),
        ),
    ] {
        let d = max_diff(&ours64, &ours32);
        let flag = if d <= CHECK_TOL { "ok" } else { "MISMATCH" };
        check_lines.push(format!(
            "{id}: max |jitfuse f64 - jitfuse f32| {d:.1e} (relative to max |out|, tolerance {CHECK_TOL:.0e}): {flag}"
        ));
    }

    // ---- the cases ----
    let t6r = &t6;
    // W8: 16 weights [512,512] scaled to keep tanh out of saturation, x[256,512].
    let ws8: Vec<Tensor> = (0..16)
        .map(|_| Tensor::from_vec(rng.vec(512 * 512, -0.04, 0.04), &[512, 512]).unwrap())
        .collect();
    let x8 = Tensor::from_vec(rng.vec(256 * 512, -1.0, 1.0), &[256, 512]).unwrap();
    let mut cases: Vec<Case> = Vec::new();
    add(
        &mut cases,
        "copy",
        Kind::Copy,
        1,
        Box::new(|| secs(|| copy_dst.copy_from_slice(black_box(&copy_src)))),
    );

    add(
        &mut cases,
        "W1",
        Kind::Jit,
        1,
        Box::new(|| secs(|| w1_gelu(&t1))),
    );
    add(
        &mut cases,
        "W1",
        Kind::Compile,
        1,
        compile_case!(w1_gelu(&t1)),
    );
    add(
        &mut cases,
        "W1",
        Kind::Hand,
        1,
        Box::new(|| secs(|| w1_hand(&x1))),
    );
    add(
        &mut cases,
        "W1",
        Kind::Ndarray,
        1,
        Box::new(|| secs(|| w1_nd(view1(&x1)))),
    );

    add(
        &mut cases,
        "W2",
        Kind::Jit,
        1,
        Box::new(|| secs(|| w2_axpby(&ta2, &tb2, &tc2))),
    );
    add(
        &mut cases,
        "W2",
        Kind::Compile,
        1,
        compile_case!(w2_axpby(&ta2, &tb2, &tc2)),
    );
    add(
        &mut cases,
        "W2",
        Kind::Hand,
        1,
        Box::new(|| secs(|| w2_hand(&a2, &b2, &c2))),
    );
    add(
        &mut cases,
        "W2",
        Kind::Ndarray,
        1,
        Box::new(|| secs(|| w2_nd(view1(&a2), view1(&b2), view1(&c2)))),
    );

    add(
        &mut cases,
        "W3",
        Kind::Jit,
        1,
        Box::new(|| secs(|| w3_softmax(&t3))),
    );
    add(
        &mut cases,
        "W3",
        Kind::Compile,
        1,
        compile_case!(w3_softmax(&t3)),
    );
    add(
        &mut cases,
        "W3",
        Kind::Hand,
        1,
        Box::new(|| secs(|| w3_hand(&x3))),
    );
    add(
        &mut cases,
        "W3",
        Kind::Ndarray,
        1,
        Box::new(|| secs(|| w3_nd(view2(&x3, R3, C3)))),
    );

    add(
        &mut cases,
        "W4",
        Kind::Jit,
        1,
        Box::new(|| secs(|| w4_layernorm(&t3, &tg4, &tb4))),
    );
    add(
        &mut cases,
        "W4",
        Kind::Compile,
        1,
        compile_case!(w4_layernorm(&t3, &tg4, &tb4)),
    );
    add(
        &mut cases,
        "W4",
        Kind::Hand,
        1,
        Box::new(|| secs(|| w4_hand(&x3, &g4, &be4))),
    );
    add(
        &mut cases,
        "W4",
        Kind::Ndarray,
        1,
        Box::new(|| secs(|| w4_nd(view2(&x3, R3, C3), view1(&g4), view1(&be4)))),
    );

    add(
        &mut cases,
        "W5",
        Kind::Jit,
        1,
        Box::new(|| secs(|| w5_sum_rows(&t5))),
    );
    add(
        &mut cases,
        "W5",
        Kind::Compile,
        1,
        compile_case!(w5_sum_rows(&t5)),
    );
    add(
        &mut cases,
        "W5",
        Kind::Hand,
        1,
        Box::new(|| secs(|| w5_hand(&x5))),
    );
    add(
        &mut cases,
        "W5",
        Kind::Ndarray,
        1,
        Box::new(|| secs(|| w5_nd(view2(&x5, N5, N5)))),
    );

    add(
        &mut cases,
        "W6",
        Kind::Jit,
        1,
        Box::new(move || secs(|| w6_mlp(&t6r[0], &t6r[1], &t6r[2], &t6r[3], &t6r[4], &t6r[5]))),
    );
    add(
        &mut cases,
        "W6",
        Kind::Compile,
        1,
        compile_case!(w6_mlp(&t6r[0], &t6r[1], &t6r[2], &t6r[3], &t6r[4], &t6r[5])),
    );
    add(
        &mut cases,
        "W6",
        Kind::Hand,
        1,
        Box::new(|| secs(|| w6_hand(&mlp))),
    );
    add(
        &mut cases,
        "W6",
        Kind::Ndarray,
        1,
        Box::new(|| {
            secs(|| {
                w6_nd(
                    view2(&mlp.x, B6, I6),
                    view2(&mlp.w1, I6, H6),
                    view1(&mlp.b1),
                    view2(&mlp.w2, H6, O6),
                    view1(&mlp.b2),
                    view2(&mlp.y, B6, O6),
                )
            })
        }),
    );

    add(
        &mut cases,
        "W7",
        Kind::Jit,
        1,
        Box::new(move || {
            secs(|| w7_mlp_grad(&t6r[0], &t6r[1], &t6r[2], &t6r[3], &t6r[4], &t6r[5]))
        }),
    );
    add(
        &mut cases,
        "W7",
        Kind::Compile,
        1,
        compile_case!(w7_mlp_grad(
            &t6r[0], &t6r[1], &t6r[2], &t6r[3], &t6r[4], &t6r[5]
        )),
    );
    add(
        &mut cases,
        "W8",
        Kind::Jit,
        1,
        Box::new(|| secs(|| w8_chain_grad(&ws8, &x8))),
    );
    add(
        &mut cases,
        "W8",
        Kind::Compile,
        1,
        compile_case!(w8_chain_grad(&ws8, &x8)),
    );

    add(
        &mut cases,
        "W9",
        Kind::Jit,
        1,
        Box::new(|| secs(|| w9_matmul(&ta9, &tb9))),
    );
    add(
        &mut cases,
        "W9",
        Kind::Compile,
        1,
        compile_case!(w9_matmul(&ta9, &tb9)),
    );
    add(
        &mut cases,
        "W9",
        Kind::Hand,
        1,
        Box::new(|| secs(|| sgemm(N9, N9, N9, &a9, &b9))),
    );
    add(
        &mut cases,
        "W9",
        Kind::Ndarray,
        1,
        Box::new(|| secs(|| view2(&a9, N9, N9).dot(&view2(&b9, N9, N9)))),
    );

    add(
        &mut cases,
        "dispatch",
        Kind::Jit,
        DISPATCH_CALLS as u64,
        Box::new(|| {
            per_call(secs(|| {
                for _ in 0..DISPATCH_CALLS {
                    black_box(tiny_add(black_box(&ttiny)));
                }
            }))
        }),
    );
    add(
        &mut cases,
        "dispatch",
        Kind::Compile,
        1,
        compile_case!(tiny_add(&ttiny)),
    );
    add(
        &mut cases,
        "dispatch",
        Kind::Hand,
        DISPATCH_CALLS as u64,
        Box::new(|| {
            per_call(secs(|| {
                for _ in 0..DISPATCH_CALLS {
                    black_box(
                        black_box(&tiny)
                            .iter()
                            .map(|v| v + 1.0)
                            .collect::<Vec<f32>>(),
                    );
                }
            }))
        }),
    );
    add(
        &mut cases,
        "dispatch",
        Kind::Ndarray,
        DISPATCH_CALLS as u64,
        Box::new(|| {
            per_call(secs(|| {
                for _ in 0..DISPATCH_CALLS {
                    black_box(&view1(black_box(&tiny)) + 1.0);
                }
            }))
        }),
    );

    add(
        &mut cases,
        "chain20",
        Kind::Jit,
        1,
        Box::new(|| secs(|| chain20(&t1))),
    );
    add(
        &mut cases,
        "chain20",
        Kind::Compile,
        1,
        compile_case!(chain20(&t1)),
    );
    add(
        &mut cases,
        "chain20",
        Kind::Hand,
        1,
        Box::new(|| secs(|| chain_hand(&x1))),
    );
    add(
        &mut cases,
        "chain20",
        Kind::Ndarray,
        1,
        Box::new(|| secs(|| chain_nd(view1(&x1)))),
    );

    // f64: jitfuse and XLA only (no hand loop or ndarray row).
    add(
        &mut cases,
        "W1f64",
        Kind::Jit,
        1,
        Box::new(|| secs(|| w1_gelu(&t1d))),
    );
    add(
        &mut cases,
        "W1f64",
        Kind::Compile,
        1,
        compile_case!(w1_gelu(&t1d)),
    );
    add(
        &mut cases,
        "W3f64",
        Kind::Jit,
        1,
        Box::new(|| secs(|| w3_softmax(&t3d))),
    );
    add(
        &mut cases,
        "W3f64",
        Kind::Compile,
        1,
        compile_case!(w3_softmax(&t3d)),
    );
    add(
        &mut cases,
        "W4f64",
        Kind::Jit,
        1,
        Box::new(|| secs(|| w4_layernorm(&t3d, &tg4d, &tb4d))),
    );
    add(
        &mut cases,
        "W4f64",
        Kind::Compile,
        1,
        compile_case!(w4_layernorm(&t3d, &tg4d, &tb4d)),
    );

    // XLA's sample of each workload is taken right after ours, in the same round.
    if let Some(w) = &xla_worker {
        let mut with_xla = Vec::with_capacity(cases.len() * 2);
        for c in cases {
            let id = c.id;
            let jit = c.kind == Kind::Jit;
            with_xla.push(c);
            if jit {
                let w = w.clone();
                add(
                    &mut with_xla,
                    id,
                    Kind::Xla,
                    1,
                    Box::new(move || w.borrow_mut().sample(id)),
                );
            }
        }
        cases = with_xla;
    }
    // JITFUSE_BENCH_ONLY=W5,W9 keeps those workloads (and the copy) only.
    if let Ok(only) = std::env::var("JITFUSE_BENCH_ONLY") {
        let keep: Vec<&str> = only.split(',').collect();
        cases.retain(|c| c.id == "copy" || keep.contains(&c.id));
    }
    // ---- sample round-robin; round 0 is a warm-up ----
    // Each sample is the last of 1 + JITFUSE_BENCH_WARM (default 5)
    // back-to-back runs: caches warm, for ours and for XLA's (each of its
    // runs is one request to the worker, on the same buffers). On a CPU with a
    // large L3 (105 MiB here) the 16-64 MiB workloads then run from L3, and
    // it takes a few passes before the L3 keeps them (W5: 2.6 ms after one
    // pass, 1.3 after five). JITFUSE_BENCH_COLD=1 times single runs after the
    // other cases instead (inputs evicted: DRAM speed).
    let cold = std::env::var("JITFUSE_BENCH_COLD").as_deref() == Ok("1");
    let warm_runs: usize = std::env::var("JITFUSE_BENCH_WARM")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    for round in 0..=rounds {
        for c in cases.iter_mut() {
            for _ in 0..if cold { 0 } else { warm_runs } {
                black_box((c.run)());
            }
            let f0 = minor_faults();
            let s = (c.run)();
            let f1 = minor_faults();
            if round > 0 {
                c.samples.push(s);
                // XLA's faults happen in the worker, which counts them for the sample
                // (none for a failed one).
                match (&xla_worker, c.kind) {
                    (Some(w), Kind::Xla) if !s.is_nan() => c.faults.push(w.borrow().last_faults),
                    (_, Kind::Xla) => {}
                    _ => c.faults.push((f1 - f0) / c.calls),
                }
            }
        }
    }

    // ---- report ----
    let get = |id: &str, kind: Kind| cases.iter().find(|c| c.id == id && c.kind == kind);
    let med = |id: &str, kind: Kind| get(id, kind).map_or(f64::NAN, |c| c.median());
    let copy_s = med("copy", Kind::Copy);
    let copy_gbs = 2.0 * COPY_BYTES as f64 / copy_s / 1e9;

    let rows = [
        Row {
            id: "W1",
            name: "gelu (tanh form) x[4M]",
            bytes: Some(2.0 * N as f64 * 4.0),
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "W2",
            name: "axpby chain a,b,c[4M]",
            bytes: Some(4.0 * N as f64 * 4.0),
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "W3",
            name: "softmax of rows [4096,1024]",
            bytes: Some(2.0 * (R3 * C3) as f64 * 4.0),
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "W4",
            name: "layer norm of rows [4096,1024]",
            bytes: Some((2 * R3 * C3 + 2 * C3) as f64 * 4.0),
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "W5",
            name: "row sums [4096,4096]",
            bytes: Some((N5 * N5 + N5) as f64 * 4.0),
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "W6",
            name: "MLP forward 256×784×512×10",
            bytes: None,
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "W7",
            name: "MLP gradient 256×784×512×10",
            bytes: None,
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "W8",
            name: "gradient of 16 residual tanh layers (plain)",
            bytes: None,
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "W9",
            name: "matmul 1024³",
            bytes: None,
            flops: Some(2.0 * (N9 * N9 * N9) as f64),
            unit_us: false,
            pending: None,
        },
        Row {
            id: "dispatch",
            name: "dispatch: cached call, x[4] + 1 (µs)",
            bytes: None,
            flops: None,
            unit_us: true,
            pending: None,
        },
        Row {
            id: "chain20",
            name: "20 elementwise ops x[4M]",
            bytes: Some(2.0 * N as f64 * 4.0),
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "W1f64",
            name: "gelu (tanh form) f64 x[4M]",
            bytes: Some(2.0 * N as f64 * 8.0),
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "W3f64",
            name: "softmax of rows f64 [4096,1024]",
            bytes: Some(2.0 * (R3 * C3) as f64 * 8.0),
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "W4f64",
            name: "layer norm of rows f64 [4096,1024]",
            bytes: Some((2 * R3 * C3 + 2 * C3) as f64 * 8.0),
            flops: None,
            unit_us: false,
            pending: None,
        },
    ];

    let fmt_t = |s: f64, us: bool| {
        if s.is_nan() {
            "—".to_string()
        } else if us {
            format!("{:.2}", s * 1e6)
        } else if s * 1e3 >= 100.0 {
            format!("{:.0}", s * 1e3)
        } else {
            format!("{:.2}", s * 1e3)
        }
    };
    let ratio = |a: f64, b: f64| {
        if a.is_finite() && b.is_finite() && b > 0.0 {
            format!("{:.2}", a / b)
        } else {
            "—".to_string()
        }
    };

    let gemm_lib = if hand_gemm_is_faer() {
        "faer's `gemm` (AVX-512 kernels, rayon)"
    } else {
        "`matrixmultiply` (AVX2/FMA, its own threads)"
    };
    let mut md = String::new();
    writeln!(
        md,
        "## jitfuse benchmarks (medians of {rounds} interleaved samples, one process, {})\n",
        if cold {
            "cold: each sample one run after the other cases".to_string()
        } else {
            format!(
                "warm: each sample the last of {} back-to-back runs, as XLA is timed",
                warm_runs + 1
            )
        }
    )
    .unwrap();
    // (compile ms, run ms) of XLA: this run's samples, else the anchors.
    let xla = |id: &str| match &xla_worker {
        Some(w) => w
            .borrow()
            .compile_s(id)
            .map(|c| (c * 1e3, med(id, Kind::Xla) * 1e3)),
        None => xla_anchor(id),
    };
    let median_faults = |c: &Case| {
        let mut f = c.faults.clone();
        f.sort();
        f.get(f.len() / 2).copied()
    };
    let xla_faults = |id: &str| {
        get(id, Kind::Xla)
            .and_then(median_faults)
            .map_or(String::new(), |f| f.to_string())
    };
    let xla_source = match &xla_worker {
        Some(w) => format!(
            "{} (`jax.jit`, XLA:CPU) measured in this run by the `benches/jax_compare.py` worker, \
             one XLA sample right after each of ours",
            w.borrow().version
        ),
        _ => {
            "JAX 0.10.2 on this kind of machine, from `../shared/anchors/README.md` (not this run: \
              `pip install \"jax[cpu]\" numpy` to measure it)"
                .to_string()
        }
    };
    let hand_isa = if hand_width_is_avx512() {
        "AVX-512F"
    } else if hand_width_is_avx2() {
        "AVX2+FMA"
    } else {
        "SSE2"
    };
    writeln!(
        md,
        "Times in ms (dispatch row: µs per call). XLA columns: {xla_source}. Hand loops: rustc, {hand_isa}, \
         rayon over {threads} threads; matmul: {gemm_lib} called directly. ndarray: eager, NumPy-style code. \
         GB/s = bytes that must move (inputs + outputs) / jitfuse time; % = of the copy bandwidth below.\n"
    )
    .unwrap();
    writeln!(md, "| workload | jitfuse | compile | hand loop | ndarray | XLA † | XLA compile † | ours/XLA | ours/hand | ours/ndarray | compile ours/XLA | GB/s (% of copy) | steps | faults/call | XLA faults/call |").unwrap();
    writeln!(
        md,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    .unwrap();
    let mut svg_rows: Vec<(String, f64, f64)> = Vec::new();
    for r in &rows {
        let x = xla(r.id);
        if let Some(why) = r.pending {
            let (xc, xr) = x
                .or_else(|| xla_anchor(r.id))
                .unwrap_or((f64::NAN, f64::NAN));
            writeln!(
                md,
                "| {} | {why} | | | | {xr} | {xc} | | | | | | | | |",
                r.name
            )
            .unwrap();
            continue;
        }
        let ours = med(r.id, Kind::Jit);
        let comp = med(r.id, Kind::Compile);
        let hand = med(r.id, Kind::Hand);
        let ndm = med(r.id, Kind::Ndarray);
        let (xr, xc) = match x {
            Some((c, r)) => (r / 1e3, c / 1e3),
            None => (f64::NAN, f64::NAN),
        };
        let bw = match (r.bytes, r.flops) {
            (Some(b), _) => {
                let gbs = b / ours / 1e9;
                format!("{gbs:.1} ({:.0} %)", 100.0 * gbs / copy_gbs)
            }
            (_, Some(fl)) => format!(
                "{:.0} GFLOP/s (hand {:.0})",
                fl / ours / 1e9,
                fl / hand / 1e9
            ),
            _ => "".to_string(),
        };
        let steps = match r.id {
            "W1" => w1_gelu::lower(&t1)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "W2" => w2_axpby::lower(&ta2, &tb2, &tc2)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "W3" => w3_softmax::lower(&t3)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "W4" => w4_layernorm::lower(&t3, &tg4, &tb4)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "W5" => w5_sum_rows::lower(&t5)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "W6" => w6_mlp::lower(&t6[0], &t6[1], &t6[2], &t6[3], &t6[4], &t6[5])
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "W7" => w7_mlp_grad::lower(&t6[0], &t6[1], &t6[2], &t6[3], &t6[4], &t6[5])
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "W8" => w8_chain_grad::lower(&ws8, &x8)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "W9" => w9_matmul::lower(&ta9, &tb9)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "dispatch" => tiny_add::lower(&ttiny)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "chain20" => chain20::lower(&t1)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "W1f64" => w1_gelu::lower(&t1d)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "W3f64" => w3_softmax::lower(&t3d)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "W4f64" => w4_layernorm::lower(&t3d, &tg4d, &tb4d)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            _ => unreachable!(),
        }
        .map_or("?".to_string(), |(s, k)| format!("{s} ({k} k)"));
        let faults = get(r.id, Kind::Jit).and_then(median_faults).unwrap_or(0);
        writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {bw} | {steps} | {faults} | {} |",
            r.name,
            fmt_t(ours, r.unit_us),
            fmt_t(comp, false),
            fmt_t(hand, r.unit_us),
            fmt_t(ndm, r.unit_us),
            fmt_t(xr, r.unit_us),
            fmt_t(xc, false),
            ratio(ours, xr),
            ratio(ours, hand),
            ratio(ours, ndm),
            ratio(comp, xc),
            xla_faults(r.id),
        )
        .unwrap();
        if r.id != "dispatch" {
            svg_rows.push((r.name.to_string(), ours / xr, ours / hand));
        }
    }
    writeln!(
        md,
        "\nCopy bandwidth this run: **{copy_gbs:.2} GB/s** (256 MiB `copy_from_slice`, read + write counted; \
         the anchors measured {ANCHOR_COPY_GBS} with NumPy). A read-mostly kernel can pass 100 %: \
         a copy mixes reads and writes one for one, row sums only read. Stream limits this run: gelu, softmax, layer norm {:.2} ms; axpby chain, row sums {:.2} ms.",
        2.0 * 16.0 * MIB / (copy_gbs * 1e9) * 1e3,
        4.0 * 16.0 * MIB / (copy_gbs * 1e9) * 1e3
    )
    .unwrap();
    writeln!(
        md,
        "\n† XLA figures: see the XLA columns above. steps = compiled steps (Cranelift kernels \
         and library calls) of the program, (k) = of which kernels. faults/call = minor page faults during one \
         cached jitfuse call (median); XLA faults/call = the same for XLA, counted by the JAX worker in its process."
    )
    .unwrap();
    writeln!(md, "\nChecks (run once before timing):\n").unwrap();
    for l in &check_lines {
        writeln!(md, "- {l}").unwrap();
    }
    writeln!(
        md,
        "\nTotal bench time: {:.0} s.",
        wall.elapsed().as_secs_f64()
    )
    .unwrap();

    println!("{md}");
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    std::fs::create_dir_all(&dir).unwrap();
    let md_path = dir.join("bench-results.md");
    let svg_path = dir.join("bench-ratios.svg");
    std::fs::write(&md_path, &md).unwrap();
    std::fs::write(&svg_path, svg(&svg_rows)).unwrap();
    println!("wrote {} and {}", md_path.display(), svg_path.display());
}

// ---------------------------------------------------------------------------
// SVG bar chart of the ratios (log scale, 1 = parity), written by hand
// ---------------------------------------------------------------------------

fn svg(rows: &[(String, f64, f64)]) -> String {
    let (label_w, plot_w, bar_h, gap, top) = (250.0, 520.0, 12.0, 14.0, 60.0);
    let (lo, hi) = (0.125f64.log2(), 16f64.log2()); // axis from 1/8 to 16
    let x_of = |r: f64| label_w + (r.log2().clamp(lo, hi) - lo) / (hi - lo) * plot_w;
    let row_h = 2.0 * bar_h + gap;
    let height = top + rows.len() as f64 * row_h + 50.0;
    let width = label_w + plot_w + 40.0;
    let mut s = String::new();
    writeln!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#).unwrap();
    writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#).unwrap();
    writeln!(s, r#"<text x="10" y="18" font-size="14" font-weight="bold">jitfuse time ratios (lower is better; log scale; 1 = parity)</text>"#).unwrap();
    writeln!(s, r##"<rect x="10" y="28" width="12" height="10" fill="#3b6fb6"/><text x="26" y="37">ours / XLA (anchors)</text>"##).unwrap();
    writeln!(s, r##"<rect x="160" y="28" width="12" height="10" fill="#e08a2c"/><text x="176" y="37">ours / hand-written rustc loop</text>"##).unwrap();
    for k in -3..=4 {
        let r = 2f64.powi(k);
        let x = x_of(r);
        let (stroke, w) = if k == 0 { ("#000", 1.5) } else { ("#ccc", 0.7) };
        writeln!(s, r#"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="{stroke}" stroke-width="{w}"/>"#, top - 6.0, height - 40.0).unwrap();
        let lbl = if k < 0 {
            format!("1/{}", 1 << -k)
        } else {
            format!("{}", 1 << k)
        };
        writeln!(
            s,
            r#"<text x="{x:.1}" y="{}" text-anchor="middle">{lbl}</text>"#,
            height - 26.0
        )
        .unwrap();
    }
    for (i, (name, rx, rh)) in rows.iter().enumerate() {
        let y = top + i as f64 * row_h;
        writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            label_w - 8.0,
            y + bar_h + 4.0,
            xml(name)
        )
        .unwrap();
        for (j, (r, color)) in [(*rx, "#3b6fb6"), (*rh, "#e08a2c")].iter().enumerate() {
            let yb = y + j as f64 * bar_h;
            if !r.is_finite() {
                writeln!(
                    s,
                    r##"<text x="{}" y="{}" fill="#888">n/a</text>"##,
                    label_w + 4.0,
                    yb + bar_h - 2.0
                )
                .unwrap();
                continue;
            }
            let x0 = x_of(1.0);
            let x1 = x_of(*r);
            let (xa, w) = if x1 >= x0 {
                (x0, x1 - x0)
            } else {
                (x1, x0 - x1)
            };
            writeln!(
                s,
                r#"<rect x="{xa:.1}" y="{yb:.1}" width="{:.1}" height="{}" fill="{color}"/>"#,
                w.max(1.0),
                bar_h - 1.0
            )
            .unwrap();
            let tx = if x1 >= x0 { x1 + 3.0 } else { x1 - 3.0 };
            let anchor = if x1 >= x0 { "start" } else { "end" };
            writeln!(
                s,
                r#"<text x="{tx:.1}" y="{:.1}" text-anchor="{anchor}">{r:.2}</text>"#,
                yb + bar_h - 2.0
            )
            .unwrap();
        }
    }
    writeln!(s, "</svg>").unwrap();
    s
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
