//! The benchmark workloads of `../shared/anchors/README.md` (W1–W9), measured in
//! ONE process against the baselines a Rust user has, with interleaved samples
//! and medians.
//!
//! The workloads are defined once in `workloads/defs.rs` (which `benches/memory.rs` shares
//! for the residual chain), the baselines in `workloads/hand.rs` (rustc loops) and
//! `workloads/nd.rs` (ndarray), the peers' workers in `workloads/peer.rs`, the chart in
//! `workloads/svg.rs`; this file is the harness and the table.
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
//!   is reported as bytes-that-must-move / time and as a fraction of it, and as a fraction
//!   of the copy at its own working-set size (32 or 64 MiB, timed warm like the workloads,
//!   on every thread; one thread's figure beside it: `WORKING_SETS`);
//! - **XLA**: when Python has JAX, `benches/jax_compare.py --serve` runs as a
//!   worker process and takes one XLA sample right after each of ours
//!   (`workloads/peer.rs`; `JITFUSE_BENCH_JAX=0` leaves it out and shows the
//!   anchors' figures instead);
//! - **PyTorch**: when Python has torch, `benches/torch_compare.py --serve` takes one
//!   eager and one `torch.compile` sample right after each of ours
//!   (`JITFUSE_BENCH_TORCH=0` leaves it out).
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
//! `dispatch`, `chain20`, W1f64/W3f64/W4f64 the f64 forms of W1/W3/W4, and `nbody`, `nbody3`,
//! `nbodyf64`, `nbody3f64` (N-body forces over `[1024, 1024, 3]` and over three arrays).
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
use ndarray::{ArrayView1, ArrayView2};
use std::fmt::Write as _;
use std::hint::black_box;
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

/// A working-set size at which the bench measures the copy bandwidth (half read, half
/// written; on every thread and on one), and the ids of its two cases: each memory-bound
/// row is compared with the copy of the size nearest to the bytes it moves.
struct WorkingSet {
    bytes: usize,
    all: &'static str,
    one: &'static str,
}

const WORKING_SETS: [WorkingSet; 2] = [
    WorkingSet {
        bytes: 32 << 20,
        all: "copy 32 MiB",
        one: "copy 32 MiB, 1 thread",
    },
    WorkingSet {
        bytes: 64 << 20,
        all: "copy 64 MiB",
        one: "copy 64 MiB, 1 thread",
    },
];

#[path = "workloads/peer.rs"]
mod peer;

/// The worker of `peer` (`benches/<script> --serve`) unless `<skip>=0`; `None` when
/// Python or the peer (`install`: how to get it) is missing.
fn start_peer(skip: &str, script: &str, peer: &'static str, install: &str) -> Option<peer::Shared> {
    if std::env::var(skip).as_deref() == Ok("0") {
        return None;
    }
    eprintln!("starting the {peer} worker, benches/{script} --serve ({skip}=0 skips it) ...");
    peer::Worker::start(
        &format!("{}/benches/{script}", env!("CARGO_MANIFEST_DIR")),
        peer,
        install,
    )
}

/// The JAX worker (the anchors are shown without it).
fn start_xla() -> Option<peer::Shared> {
    start_peer(
        "JITFUSE_BENCH_JAX",
        "jax_compare.py",
        "JAX",
        "pip install \"jax[cpu]\" numpy",
    )
}

/// The PyTorch worker (eager and `torch.compile`; its columns stay empty without it).
fn start_torch() -> Option<peer::Shared> {
    start_peer(
        "JITFUSE_BENCH_TORCH",
        "torch_compare.py",
        "PyTorch",
        "pip install torch numpy",
    )
}

#[path = "workloads/defs.rs"]
mod defs;
#[path = "workloads/hand.rs"]
mod hand;
#[path = "workloads/nd.rs"]
mod nd;
#[path = "workloads/svg.rs"]
mod svg;
use defs::*;
use hand::*;
use nd::*;
use svg::svg;

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
    /// The same body called without `#[jit]` (eager: each op a cached compiled program);
    /// gelu, softmax and layer norm as the composites a user calls eagerly (`x.gelu()`,
    /// `x.softmax(-1)`, `x.layer_norm(..)`: one cached program each), as PyTorch's eager
    /// rows call theirs.
    Eager,
    Compile,
    Hand,
    Ndarray,
    Copy,
    /// XLA, one sample taken by the JAX worker right after ours.
    Xla,
    /// PyTorch eager and `torch.compile`, one sample each taken by the PyTorch worker
    /// right after ours (and XLA's).
    TorchEager,
    TorchCompiled,
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
    let torch_worker = start_torch();
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
    // N-body: positions [NB, 3], and the same coordinates as three arrays [NB].
    let pnb = rng.vec(NB * 3, -1.0, 1.0);
    let coords: Vec<Vec<f32>> = (0..3)
        .map(|c| pnb.iter().skip(c).step_by(3).copied().collect())
        .collect();
    let tnb = tensor(&pnb, &[NB, 3]);
    let tnb3: Vec<Tensor> = coords.iter().map(|c| tensor(c, &[NB])).collect();
    let tnbd = tensor64(&pnb, &[NB, 3]);
    let tnb3d: Vec<Tensor> = coords.iter().map(|c| tensor64(c, &[NB])).collect();
    let copy_src = vec![1.0f32; COPY_BYTES / 4];
    let mut copy_dst = vec![0.0f32; COPY_BYTES / 4];
    // The copy at each working-set size, on every thread and on one (`WORKING_SETS`).
    let mut ws_bufs: Vec<(Vec<f32>, Vec<f32>)> = WORKING_SETS
        .iter()
        .map(|w| (vec![1.0f32; w.bytes / 8], vec![0.0f32; w.bytes / 8]))
        .collect();

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

    // N-body: the [NB, NB, 3] form against the plain loop and the three-array form.
    {
        let ours = f(nbody(&tnb));
        let xyz: Vec<Vec<f32>> = nbody_xyz(&tnb3[0], &tnb3[1], &tnb3[2])
            .into_iter()
            .map(f)
            .collect();
        let interleaved: Vec<f32> = (0..NB * 3).map(|e| xyz[e % 3][e / 3]).collect();
        let ours64 = f64s(nbody(&tnbd));
        for (id, what, d) in [
            ("nbody", "hand", max_diff(&nbody_hand(&pnb), &ours)),
            ("nbody", "three arrays", max_diff(&interleaved, &ours)),
            ("nbodyf64", "f32", max_diff(&ours, &ours64)),
        ] {
            let flag = if d <= CHECK_TOL { "ok" } else { "MISMATCH" };
            check_lines.push(format!(
                "{id}: max |{what} - jitfuse| {d:.1e} (relative to max |out|, tolerance {CHECK_TOL:.0e}): {flag}"
            ));
        }
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
    for (w, (src, dst)) in WORKING_SETS.iter().zip(ws_bufs.iter_mut()) {
        let src = &*src;
        let dst = std::cell::RefCell::new(dst);
        let chunk = (src.len() / (4 * rayon::current_num_threads())).max(1 << 14);
        let all = std::rc::Rc::new(dst);
        let one = all.clone();
        add(
            &mut cases,
            w.all,
            Kind::Copy,
            1,
            Box::new(move || {
                let mut d = all.borrow_mut();
                secs(|| {
                    use rayon::prelude::*;
                    d.par_chunks_mut(chunk)
                        .zip(black_box(src).par_chunks(chunk))
                        .for_each(|(d, s)| d.copy_from_slice(s))
                })
            }),
        );
        add(
            &mut cases,
            w.one,
            Kind::Copy,
            1,
            Box::new(move || {
                let mut d = one.borrow_mut();
                secs(|| d.copy_from_slice(black_box(src)))
            }),
        );
    }

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
        Kind::Eager,
        1,
        Box::new(|| secs(|| t1.gelu())),
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
        Kind::Eager,
        1,
        Box::new(|| secs(|| axpby(&ta2, &tb2, &tc2))),
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
        Kind::Eager,
        1,
        Box::new(|| secs(|| t3.softmax(-1))),
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
        Kind::Eager,
        1,
        Box::new(|| secs(|| t3.layer_norm(&tg4, &tb4, 1e-5, -1))),
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
        Kind::Eager,
        1,
        Box::new(|| secs(|| sum_rows(&t5))),
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
        Kind::Eager,
        1,
        Box::new(move || secs(|| mlp_grad(&t6r[0], &t6r[1], &t6r[2], &t6r[3], &t6r[4], &t6r[5]))),
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
        Kind::Eager,
        DISPATCH_CALLS as u64,
        Box::new(|| {
            per_call(secs(|| {
                for _ in 0..DISPATCH_CALLS {
                    black_box(black_box(&ttiny) + 1.0);
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

    // N-body over [NB, NB, 3] and over three [NB, NB] arrays (the ratio of the two is
    // reported below the table); f64 jitfuse only.
    add(
        &mut cases,
        "nbody",
        Kind::Jit,
        1,
        Box::new(|| secs(|| nbody(&tnb))),
    );
    add(
        &mut cases,
        "nbody",
        Kind::Compile,
        1,
        compile_case!(nbody(&tnb)),
    );
    add(
        &mut cases,
        "nbody",
        Kind::Hand,
        1,
        Box::new(|| secs(|| nbody_hand(&pnb))),
    );
    add(
        &mut cases,
        "nbody3",
        Kind::Jit,
        1,
        Box::new(|| secs(|| nbody_xyz(&tnb3[0], &tnb3[1], &tnb3[2]))),
    );
    add(
        &mut cases,
        "nbodyf64",
        Kind::Jit,
        1,
        Box::new(|| secs(|| nbody(&tnbd))),
    );
    add(
        &mut cases,
        "nbody3f64",
        Kind::Jit,
        1,
        Box::new(|| secs(|| nbody_xyz(&tnb3d[0], &tnb3d[1], &tnb3d[2]))),
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

    // The peers' samples of each workload are taken right after ours, in the same round.
    let peers: Vec<(&peer::Shared, Kind, &str)> = [
        xla_worker.as_ref().map(|w| (w, Kind::Xla, "")),
        torch_worker
            .as_ref()
            .map(|w| (w, Kind::TorchEager, ":eager")),
        torch_worker
            .as_ref()
            .map(|w| (w, Kind::TorchCompiled, ":compiled")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut with_peers = Vec::with_capacity(cases.len() * (1 + peers.len()));
    for c in cases {
        let id = c.id;
        let jit = c.kind == Kind::Jit;
        with_peers.push(c);
        for &(w, kind, mode) in peers.iter().filter(|_| jit) {
            let w = w.clone();
            let request = format!("{id}{mode}");
            add(
                &mut with_peers,
                id,
                kind,
                1,
                Box::new(move || w.borrow_mut().sample(&request)),
            );
        }
    }
    cases = with_peers;
    // JITFUSE_BENCH_ONLY=W5,W9 keeps those workloads (and the copy) only.
    if let Ok(only) = std::env::var("JITFUSE_BENCH_ONLY") {
        let keep: Vec<&str> = only.split(',').collect();
        cases.retain(|c| c.kind == Kind::Copy || keep.contains(&c.id));
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
            id: "nbody",
            name: "N-body forces, p[1024,3] via [1024,1024,3]",
            bytes: None,
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "nbody3",
            name: "N-body forces, three [1024] arrays",
            bytes: None,
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "nbodyf64",
            name: "N-body forces f64 via [1024,1024,3]",
            bytes: None,
            flops: None,
            unit_us: false,
            pending: None,
        },
        Row {
            id: "nbody3f64",
            name: "N-body forces f64, three [1024] arrays",
            bytes: None,
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
    let torch_source = match &torch_worker {
        Some(w) => format!(
            "{} on the CPU, eager and `torch.compile`, measured in this run by the \
             `benches/torch_compare.py` worker, one sample of each right after each of ours",
            w.borrow().version
        ),
        None => "not measured (`pip install torch` to measure them)".to_string(),
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
        "Times in ms (dispatch row: µs per call). XLA columns: {xla_source}. PyTorch columns: {torch_source}. \
         Hand loops: rustc, {hand_isa}, \
         rayon over {threads} threads; matmul: {gemm_lib} called directly. ndarray: eager, NumPy-style code. \
         GB/s = bytes that must move (inputs + outputs) / jitfuse time; % = of the copy bandwidth below.\n"
    )
    .unwrap();
    writeln!(md, "| workload | jitfuse | compile | hand loop | ndarray | eager | XLA † | XLA compile † | PyTorch eager | torch.compile | ours/XLA | ours/best PyTorch | ours/hand | ours/ndarray | eager/ndarray | eager/PyTorch eager | compile ours/XLA | GB/s (% of copy) | % of the copy at its size (GB/s) | steps | faults/call | XLA faults/call |").unwrap();
    writeln!(
        md,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
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
                "| {} | {why} | | | | | {xr} | {xc} | | | | | | | | | | | | | | |",
                r.name
            )
            .unwrap();
            continue;
        }
        let ours = med(r.id, Kind::Jit);
        let comp = med(r.id, Kind::Compile);
        let hand = med(r.id, Kind::Hand);
        let ndm = med(r.id, Kind::Ndarray);
        let eager = med(r.id, Kind::Eager);
        let (xr, xc) = match x {
            Some((c, r)) => (r / 1e3, c / 1e3),
            None => (f64::NAN, f64::NAN),
        };
        let at_size = |b: f64| {
            let w = (WORKING_SETS.iter())
                .min_by(|x, y| {
                    (x.bytes as f64 - b)
                        .abs()
                        .total_cmp(&(y.bytes as f64 - b).abs())
                })
                .expect("a working set");
            let gbs = |id: &str| w.bytes as f64 / med(id, Kind::Copy) / 1e9;
            (gbs(w.all), gbs(w.one))
        };
        let limit = match r.bytes {
            Some(b) => {
                let (all, one) = at_size(b);
                format!(
                    "{:.0} % ({all:.1}; 1 thread {one:.1})",
                    100.0 * b / ours / 1e9 / all
                )
            }
            None => String::new(),
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
            "nbody" => nbody::lower(&tnb)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "nbody3" => nbody_xyz::lower(&tnb3[0], &tnb3[1], &tnb3[2])
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "nbodyf64" => nbody::lower(&tnbd)
                .and_then(|l| l.compile())
                .map(|c| (c.step_count(), c.kernel_count())),
            "nbody3f64" => nbody_xyz::lower(&tnb3d[0], &tnb3d[1], &tnb3d[2])
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
        let (te, tc) = (med(r.id, Kind::TorchEager), med(r.id, Kind::TorchCompiled));
        let best_torch = if te.is_nan() || tc < te { tc } else { te };
        writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {bw} | {limit} | {steps} | {faults} | {} |",
            r.name,
            fmt_t(ours, r.unit_us),
            fmt_t(comp, false),
            fmt_t(hand, r.unit_us),
            fmt_t(ndm, r.unit_us),
            fmt_t(eager, r.unit_us),
            fmt_t(xr, r.unit_us),
            fmt_t(xc, false),
            fmt_t(te, r.unit_us),
            fmt_t(tc, r.unit_us),
            ratio(ours, xr),
            ratio(ours, best_torch),
            ratio(ours, hand),
            ratio(ours, ndm),
            ratio(eager, ndm),
            ratio(eager, te),
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
    let sizes: Vec<String> = WORKING_SETS
        .iter()
        .map(|w| {
            let gbs = |id: &str| w.bytes as f64 / med(id, Kind::Copy) / 1e9;
            format!(
                "{} MiB {:.1} GB/s (1 thread {:.1})",
                w.bytes >> 20,
                gbs(w.all),
                gbs(w.one)
            )
        })
        .collect();
    writeln!(
        md,
        "\nCopies at the workloads' working-set sizes (half read, half written, warm as the workloads are \
         timed; a row is compared with the size nearest to the bytes it moves, in the column \
         `% of the copy at its size`): {}.",
        sizes.join("; ")
    )
    .unwrap();
    writeln!(
        md,
        "\nN-body over [1024,1024,3] / over three arrays (reductions over the short axis split \
         into lanes, `passes::short_axis`): **{}** (f32), **{}** (f64).",
        ratio(med("nbody", Kind::Jit), med("nbody3", Kind::Jit)),
        ratio(med("nbodyf64", Kind::Jit), med("nbody3f64", Kind::Jit)),
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
