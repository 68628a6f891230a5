//! Shared helpers: a seeded generator, random tensors and shapes, and the
//! comparison of compiled results against the reference interpreter.

use jitfuse::internals::exec::Executable;
use jitfuse::internals::interpret;
use jitfuse::internals::ir::{self, Graph};
use jitfuse::{half, DType, Tensor};

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform(0.0, 1.0) < p
    }
}

/// Dims chosen to hit vector-width edges: 1, below 4, odd, multiples of 16.
const DIMS: [usize; 10] = [1, 2, 3, 4, 5, 7, 16, 17, 33, 64];

pub fn random_shape(rng: &mut Rng) -> Vec<usize> {
    let rank = rng.below(4);
    (0..rank)
        .map(|_| {
            if rng.chance(0.03) {
                0
            } else {
                DIMS[rng.below(DIMS.len())]
            }
        })
        .collect()
}

/// A shape that broadcasts with `s`: some dims set to 1, some leading dims dropped.
pub fn broadcast_partner(rng: &mut Rng, s: &[usize]) -> Vec<usize> {
    let drop = rng.below(s.len() + 1);
    s[drop..]
        .iter()
        .map(|&d| if rng.chance(0.3) { 1 } else { d })
        .collect()
}

/// Random values in `[lo, hi]`, with special values mixed in when `specials`.
pub fn random_tensor(
    rng: &mut Rng,
    shape: &[usize],
    dtype: DType,
    lo: f64,
    hi: f64,
    specials: bool,
) -> Tensor {
    let n: usize = shape.iter().product();
    let special = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1.0,
        -1.0,
    ];
    let vals: Vec<f64> = (0..n)
        .map(|_| {
            if specials && rng.chance(0.05) {
                special[rng.below(special.len())]
            } else {
                rng.uniform(lo, hi)
            }
        })
        .collect();
    match dtype {
        DType::F32 => Tensor::from_vec(vals.iter().map(|&v| v as f32).collect(), shape),
        DType::F64 => Tensor::from_vec(vals, shape),
        DType::I32 => Tensor::from_vec(vals.iter().map(|&v| v.round() as i32).collect(), shape),
        DType::I64 => Tensor::from_vec(vals.iter().map(|&v| v.round() as i64).collect(), shape),
        DType::Bool => Tensor::from_vec(vals.iter().map(|&v| v > (lo + hi) / 2.0).collect(), shape),
        DType::BF16 => Tensor::from_vec(
            vals.iter().map(|&v| half::bf16::from_f64(v)).collect(),
            shape,
        ),
        DType::F16 => Tensor::from_vec(
            vals.iter().map(|&v| half::f16::from_f64(v)).collect(),
            shape,
        ),
    }
    .unwrap()
}

/// Allowed difference between compiled and interpreted floats.
#[derive(Clone, Copy, Debug)]
pub struct Tol {
    pub rel: f64,
    pub abs: f64,
}

pub const EXACT: Tol = Tol { rel: 0.0, abs: 0.0 };

impl Tol {
    /// A relative bound for results of `d`: `rel` per element, and an absolute part only
    /// below the normal range of `d` (subnormal results carry fewer significant bits by
    /// design, so a relative bound means nothing there).
    pub fn rel(d: DType, rel: f64) -> Tol {
        let abs = match d {
            DType::F32 | DType::BF16 => f32::MIN_POSITIVE as f64,
            DType::F64 => f64::MIN_POSITIVE,
            DType::F16 => half::f16::MIN_POSITIVE.to_f64(),
            _ => 0.0,
        };
        Tol { rel, abs }
    }

    /// One unit in the last place of `d` (bf16, f16), relative to the result: an op computed
    /// in f32 and rounded to 16 bits is within one of the value computed exactly and
    /// rounded once (`Tol::rel` with that bound).
    pub fn half_ulp(d: DType) -> Tol {
        let rel = match d {
            DType::BF16 => 2f64.powi(-7),
            DType::F16 => 2f64.powi(-10),
            _ => unreachable!("{d} is not a 16-bit float"),
        };
        Tol::rel(d, rel)
    }

    /// The normwise bound `|a - b| <= rel*|b| + abs*max|b|` (the maximum over the finite
    /// elements of `want`): for outputs where a cancellation makes some elements (near)
    /// zero while their neighbours are not, so that the rounding of the terms, not of the
    /// result, sets the error there.
    pub fn normwise(self, want: &Tensor) -> Tol {
        let scale = to_f64s(want)
            .into_iter()
            .filter(|v| v.is_finite())
            .fold(0.0f64, |m, v| m.max(v.abs()));
        Tol {
            rel: self.rel,
            abs: self.abs * scale,
        }
    }
}

/// Elements as f64 (integers and bools exactly).
pub fn to_f64s(t: &Tensor) -> Vec<f64> {
    match t.dtype() {
        DType::F32 => t
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        DType::F64 => t.to_vec::<f64>().unwrap(),
        DType::I32 => t
            .to_vec::<i32>()
            .unwrap()
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        DType::I64 => t
            .to_vec::<i64>()
            .unwrap()
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        DType::Bool => t
            .to_vec::<bool>()
            .unwrap()
            .into_iter()
            .map(|v| v as u8 as f64)
            .collect(),
        DType::BF16 => t
            .to_vec::<half::bf16>()
            .unwrap()
            .into_iter()
            .map(|v| v.to_f64())
            .collect(),
        DType::F16 => t
            .to_vec::<half::f16>()
            .unwrap()
            .into_iter()
            .map(|v| v.to_f64())
            .collect(),
    }
}

/// Bits of every element, NaNs as one value.
pub fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::F32 => t
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| if v.is_nan() { 1 } else { v.to_bits() as u64 })
            .collect(),
        DType::F64 => t
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .map(|v| if v.is_nan() { 1 } else { v.to_bits() })
            .collect(),
        _ => to_f64s(t).iter().map(|v| v.to_bits()).collect(),
    }
}

/// Elementwise comparison; NaN matches NaN, and infinities must match exactly.
pub fn assert_close(got: &Tensor, want: &Tensor, tol: Tol, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    let (g, w) = (to_f64s(got), to_f64s(want));
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let ok = if b.is_nan() || a.is_nan() {
            a.is_nan() && b.is_nan()
        } else if b.is_infinite() || a.is_infinite() {
            // (A relative bound would pass +inf against -inf.)
            a == b
        } else {
            (a - b).abs() <= tol.abs + tol.rel * b.abs()
        };
        assert!(
            ok,
            "{what}: element {i}: compiled {a:e}, interpreter {b:e} (tol {tol:?})"
        );
    }
}

/// Compile `g`, run it, and compare every output with the interpreter.
pub fn check_graph(g: &Graph, args: &[Tensor], tol: Tol, what: &str) {
    check_graph_with(g, args, what, |_, _| tol)
}

/// `check_graph` with the tolerance of each output chosen by `tol_of(k, want)`, from the
/// output's index and the interpreter's result.
pub fn check_graph_with(
    g: &Graph,
    args: &[Tensor],
    what: &str,
    tol_of: impl Fn(usize, &Tensor) -> Tol,
) {
    ir::verify(g).unwrap_or_else(|e| panic!("{what}: {e}\n{g}"));
    let want = interpret::eval_graph(g, args, &[]).unwrap();
    let exe =
        Executable::from_graph(g.clone(), vec![]).unwrap_or_else(|e| panic!("{what}: {e}\n{g}"));
    let refs: Vec<&Tensor> = args.iter().collect();
    let got = exe.run_with(&refs).unwrap();
    assert_eq!(got.len(), want.len());
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        assert_close(a, b, tol_of(k, b), &format!("{what}, output {k}\n{g}"));
    }
}

/// Trace `f` on parameters shaped like `args`.
pub fn trace_fn(args: &[Tensor], f: impl FnOnce(&[Tensor]) -> Vec<Tensor>) -> Graph {
    let specs: Vec<jitfuse::internals::trace::ParamSpec> = args
        .iter()
        .map(|a| jitfuse::internals::trace::ParamSpec {
            shape: a.shape().to_vec(),
            dtype: a.dtype(),
            weak: false,
        })
        .collect();
    jitfuse::internals::trace::trace(&specs, f).unwrap().graph
}

/// The message of a caught panic.
pub fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into())
}

/// Resident memory of this process in bytes (`VmRSS`; Linux only).
pub fn resident_bytes() -> Option<usize> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Set in the child process `measure_alone` starts.
const CHILD: &str = "JITFUSE_TEST_ALONE";

/// Run the test `path` (`module::name`) alone in a child process: resident memory and the
/// pool are process-wide, and other tests run beside it in threads. Returns true in the
/// child, which then does the measuring.
pub fn measure_alone(path: &str) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    measure_alone_with(path, &[]);
    false
}

/// In the parent: run the test `path` in a child process with the environment variables
/// `env` added, and check that it passed.
pub fn measure_alone_with(path: &str, env: &[(&str, &str)]) {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([path, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{path} in a child process:\n{text}");
    assert!(
        text.contains("1 passed"),
        "{path} did not run in the child:\n{text}"
    );
}

/// Tolerances of results that do not cancel much: a few ulp of f32 or f64 (relative and
/// absolute), exact for integers (their sums and products wrap alike).
pub fn float_tol(d: DType) -> Tol {
    match d {
        DType::F32 => Tol {
            rel: 2e-5,
            abs: 2e-5,
        },
        DType::F64 => Tol {
            rel: 1e-12,
            abs: 1e-12,
        },
        DType::BF16 | DType::F16 => Tol {
            abs: Tol::half_ulp(d).rel,
            ..Tol::half_ulp(d)
        },
        _ => EXACT,
    }
}

/// A normwise bound on `want`: `float_tol`'s relative part and an absolute part of a few
/// ulp of its largest element, for results that cancel (sums, centred values,
/// log-probabilities near 0, `1 + tanh` in gelu).
pub fn float_norm_tol(d: DType, want: &Tensor) -> Tol {
    let abs = match d {
        DType::F32 => 1e-6,
        DType::F64 => 1e-13,
        DType::BF16 | DType::F16 => Tol::half_ulp(d).rel,
        _ => 0.0,
    };
    Tol {
        rel: float_tol(d).rel,
        abs,
    }
    .normwise(want)
}

/// Compile a hand-built graph (every parameter borrowed) for `target`.
pub fn compile_at(
    g: jitfuse::internals::ir::Graph,
    target: &jitfuse::internals::codegen::Target,
) -> Result<jitfuse::internals::exec::Executable, jitfuse::Error> {
    use jitfuse::internals::exec::{CompileOptions, Executable};
    Executable::from_graph_with(g, vec![], None, &CompileOptions::at(target))
}

/// Every multi-index of `shape`, in row-major order.
pub fn multi_indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    for &len in shape {
        all = all
            .into_iter()
            .flat_map(|p: Vec<usize>| {
                (0..len).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    all
}

/// The row-major flat index of multi-index `idx` of `shape`.
pub fn flat_index(shape: &[usize], idx: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |a, (&i, &s)| a * s + i)
}

/// Lane `i` of a stacked tensor (its slice `i` along axis 0).
pub fn lane(t: &Tensor, i: usize) -> Tensor {
    t.slice_axis(0, i as isize, i as isize + 1, 1).squeeze(&[0])
}

/// The thread counts results must not depend on.
pub const THREADS: [usize; 4] = [1, 2, 3, 8];

/// A rayon pool of `threads` threads.
pub fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// `f` under every pool gives the bits it gives under one thread.
pub fn same_bits(what: &str, f: impl Fn() -> Vec<Tensor> + Sync) {
    let want: Vec<Vec<u64>> = pool(1).install(|| f().iter().map(bits).collect());
    for &t in &THREADS[1..] {
        let got: Vec<Vec<u64>> = pool(t).install(|| f().iter().map(bits).collect());
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let differ = g.iter().zip(w).filter(|(a, b)| a != b).count();
            assert_eq!(
                differ,
                0,
                "{what}: result {k} differs in {differ} of {} elements with {t} threads",
                w.len()
            );
        }
    }
}
