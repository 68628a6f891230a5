//! One fuzz case: a graph run by the interpreter and compiled at every
//! codegen level the machine has; each compiled program called with its
//! arguments kept shared (never donated) and with the donatable ones given
//! away. Results agree with the interpreter within the tolerances, donated
//! and shared calls agree bit for bit, and the caller's copies are intact.

use super::program::Mode;
use crate::common::panic_text;
use crate::common::{bits, to_f64s, Rng};
use jitfuse::internals::codegen::{Isa, Target};
use jitfuse::internals::exec::CompileOptions;
use jitfuse::internals::exec::Executable;
use jitfuse::internals::ir::{BinaryOp, Graph, Op, ReduceOp};
use jitfuse::jit::{ArgKind, CallArgs};
use jitfuse::{DType, Tensor};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The target of `level`: at AVX2, every loop kernel the x86 backend emits stores its outputs
/// non-temporally (`Target::streaming_min_bytes` 1: the generator's arrays are far smaller than
/// a cache), so the streamed loops and their fallback for rows off a vector boundary see random
/// programs too; the other levels store as programs of their size do.
fn at(level: Isa) -> Target {
    let t = Target::at(level);
    Target {
        streaming_min_bytes: if level == Isa::Avx2 {
            1
        } else {
            t.streaming_min_bytes
        },
        ..t
    }
}

/// The codegen levels to compare on this machine: the AVX-512 backend where
/// the CPU has it, and Cranelift alone (with and without the AVX2 micro-kernels).
pub fn levels(case: u64) -> Vec<Isa> {
    let top = Isa::detected();
    let second = if case % 2 == 0 || top < Isa::Avx2 {
        Isa::Portable
    } else {
        Isa::Avx2
    };
    let mut v = vec![top];
    if second != top {
        v.push(second);
    }
    if top == Isa::Avx512 && case % 5 == 0 {
        v.push(Isa::Avx2);
    }
    v.dedup();
    v
}

/// Whether an infinite argument could meet a computed value in a product: `inf · x` is NaN
/// where one backend's `x` is exactly 0 and inf where the other's is a tiny nonzero (both
/// within rounding: `1 + tanh(-8)` is 0 or 2.4e-7). A matmul of infinite outer products
/// by a GELU, NaN compiled against the interpreter's inf, was a false alarm of a long run.
fn products_of_values(g: &Graph) -> bool {
    g.nodes.iter().any(|n| {
        let product = matches!(
            n.op,
            Op::Matmul | Op::Binary(BinaryOp::Mul | BinaryOp::Pow) | Op::Reduce(ReduceOp::Prod, _)
        );
        // Control-flow bodies are graphs of their own: counted as having products.
        n.op.is_control()
            || product
                && n.inputs
                    .iter()
                    .all(|&x| !matches!(g.node(x).op, Op::Const(_)))
    })
}

/// Random arguments for the graph's parameters, parameter k's values from
/// stream `draws[k]` of `seed` (stream 0 is `Rng::new(seed ^ 0xA5A5)`). With
/// `specials`, 2 % of the values are NaN, ±0 or ±inf; infinities become NaN in
/// graphs where they could meet a computed value in a product
/// (`products_of_values`).
pub fn arguments(g: &Graph, seed: u64, draws: &[u64], specials: bool) -> Vec<Tensor> {
    assert_eq!(draws.len(), g.params().len(), "one draw per parameter");
    let infinities = !products_of_values(g);
    g.params()
        .iter()
        .zip(draws)
        .map(|(&p, &draw)| {
            let rng = &mut Rng::new(seed ^ 0xA5A5 ^ draw.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let n = g.node(p);
            let len: usize = n.shape.iter().product();
            let special = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0];
            let vals: Vec<f64> = (0..len)
                .map(|_| {
                    if specials && rng.chance(0.02) {
                        match special[rng.below(special.len())] {
                            v if v.is_infinite() && !infinities => f64::NAN,
                            v => v,
                        }
                    } else {
                        // Quarter steps in [-3, 3]: exact in f32, some ties for max/min.
                        if rng.chance(0.3) {
                            (rng.below(25) as f64 - 12.0) * 0.25
                        } else {
                            rng.uniform(-3.0, 3.0)
                        }
                    }
                })
                .collect();
            match n.dtype {
                DType::F32 => Tensor::from_vec(vals.iter().map(|&v| v as f32).collect(), &n.shape),
                DType::F64 => Tensor::from_vec(vals, &n.shape),
                DType::I32 => Tensor::from_vec(
                    vals.iter().map(|&v| (v * 3.0).round() as i32).collect(),
                    &n.shape,
                ),
                DType::I64 => Tensor::from_vec(
                    vals.iter().map(|&v| (v * 3.0).round() as i64).collect(),
                    &n.shape,
                ),
                DType::Bool => Tensor::from_vec(vals.iter().map(|&v| v > 0.0).collect(), &n.shape),
                DType::BF16 => Tensor::from_vec(
                    vals.iter().map(|&v| jitfuse::bf16::from_f64(v)).collect(),
                    &n.shape,
                ),
                DType::F16 => Tensor::from_vec(
                    vals.iter().map(|&v| jitfuse::f16::from_f64(v)).collect(),
                    &n.shape,
                ),
            }
            .unwrap()
        })
        .collect()
}

/// The coarsest float type any value of `g` has (bf16, f16, f32, then f64; f64 for a
/// program of integers).
pub fn coarsest(g: &jitfuse::internals::ir::Graph) -> DType {
    [DType::BF16, DType::F16, DType::F32]
        .into_iter()
        .find(|&d| g.nodes.iter().any(|n| n.dtype == d))
        .unwrap_or(DType::F64)
}

/// Compiled `got` against the interpreter's `want`: integers and bools
/// exactly; floats elementwise within `rel * |want| + abs * scale`, where
/// the scale is the largest finite magnitude of the interpreter's tensor,
/// at least `floor` and at least `noise`, the output's rounding-noise scale
/// (`noise::analyse`: the size of the terms that cancelled in it). A normwise
/// bound: sums may round differently, but an element read from the wrong
/// place or never written is far off. The floor covers results that are
/// rounding noise of a cancellation the noise scale does not follow (through
/// a nonlinear op): 1 for gradients, whose terms are of the inputs' size, 0.1
/// otherwise. NaN only where the interpreter has NaN, infinities exactly.
/// `coarse` is the coarsest float type of the program (`coarsest`): an output of a finer
/// type may carry its rounding.
pub fn compare(
    got: &Tensor,
    want: &Tensor,
    coarse: DType,
    floor: f64,
    noise: f64,
) -> Result<(), String> {
    compare_with(got, want, coarse, floor, noise, false)
}

/// `compare`, where `noisy_infinities` (`noise::Noise::noisy_infinities`) lets a non-finite
/// element be another non-finite value (NaN for `-inf`: an infinity times a cancelled sum).
pub fn compare_with(
    got: &Tensor,
    want: &Tensor,
    coarse: DType,
    floor: f64,
    noise: f64,
    noisy_infinities: bool,
) -> Result<(), String> {
    if got.shape() != want.shape() || got.dtype() != want.dtype() {
        return Err(format!(
            "type {:?} {:?}, interpreter {:?} {:?}",
            got.dtype(),
            got.shape(),
            want.dtype(),
            want.shape()
        ));
    }
    let (g, w) = (to_f64s(got), to_f64s(want));
    // An output carries the rounding of the coarsest float type the program computed in.
    let rank = |d: DType| {
        [DType::F64, DType::F32, DType::F16, DType::BF16]
            .iter()
            .position(|&x| x == d)
    };
    let d = match (rank(got.dtype()), rank(coarse)) {
        (Some(a), Some(b)) if b > a => coarse,
        _ => got.dtype(),
    };
    let (rel, abs) = match d {
        DType::F32 => (2e-4, 2e-5),
        DType::F64 => (1e-9, 1e-11),
        // Four units in the last place, of the element and of the output's scale: the
        // interpreter rounds every op to 16 bits, a kernel keeps f32 inside and rounds where
        // it stores (chains of ops near the scale, such as a sigmoid's `1 - s`, differ by a
        // few roundings of the scale).
        DType::BF16 => (4.0 * 2f64.powi(-7), 4.0 * 2f64.powi(-7)),
        DType::F16 => (4.0 * 2f64.powi(-10), 4.0 * 2f64.powi(-10)),
        _ => (0.0, 0.0),
    };
    // (16-bit programs: at least 1, the size of the values the generator draws: a loop's
    // `x·0.75 + 0.5` cancels to a result far below the terms it rounded.)
    let floor = if d.is_half() { floor.max(1.0) } else { floor };
    let scale = w
        .iter()
        .filter(|v| v.is_finite())
        .fold(floor.max(noise), |m, v| m.max(v.abs()));
    for (i, (&a, &b)) in g.iter().zip(&w).enumerate() {
        // f16 overflows at 65504: where the interpreter (rounding every op) overflowed, a
        // kernel keeping f32 inside may not, and the reverse at the edge of the range.
        let f16_overflow =
            coarse == DType::F16 && (!b.is_finite() || (a.is_infinite() && b.abs() >= 32768.0));
        // bf16 overflows where f32 does, but a value rounded to bf16 on its way there moves
        // by up to 2⁻⁹ of itself: `exp` of the interpreter's 89.0 (88.6 kept in f32 inside a
        // kernel) is inf, the kernel's 3.1e38. Within the top binade either may overflow.
        let top = 2f64.powi(127);
        let bf16_overflow = coarse == DType::BF16
            && ((b.is_infinite() && a.abs() >= top) || (a.is_infinite() && b.abs() >= top));
        let ok = if (noisy_infinities && !a.is_finite() && !b.is_finite())
            || f16_overflow
            || bf16_overflow
        {
            true
        } else if a.is_nan() || b.is_nan() {
            a.is_nan() && b.is_nan()
        } else if a.is_infinite() || b.is_infinite() {
            a == b
        } else {
            (a - b).abs() <= rel * b.abs() + abs * scale
        };
        if !ok {
            return Err(format!(
                "element {i}: compiled {a:e}, interpreter {b:e} (scale {scale:e})"
            ));
        }
    }
    Ok(())
}

/// A copy with a buffer of its own (unshared).
fn fresh(t: &Tensor) -> Tensor {
    match t.dtype() {
        DType::F32 => Tensor::from_vec(t.to_vec::<f32>().unwrap(), t.shape()),
        DType::F64 => Tensor::from_vec(t.to_vec::<f64>().unwrap(), t.shape()),
        DType::I32 => Tensor::from_vec(t.to_vec::<i32>().unwrap(), t.shape()),
        DType::I64 => Tensor::from_vec(t.to_vec::<i64>().unwrap(), t.shape()),
        DType::Bool => Tensor::from_vec(t.to_vec::<bool>().unwrap(), t.shape()),
        DType::BF16 => Tensor::from_vec(t.to_vec::<jitfuse::bf16>().unwrap(), t.shape()),
        DType::F16 => Tensor::from_vec(t.to_vec::<jitfuse::f16>().unwrap(), t.shape()),
    }
    .unwrap()
}

/// Run `exe` once: `donate` gives the `Donated` arguments away (fresh
/// unshared copies); otherwise every owned argument stays shared. Returns
/// the outputs and the caller's copies of shared arguments, with the
/// originals they must still equal.
fn call(
    exe: &Executable,
    args: &[Tensor],
    modes: &[Mode],
    donate: bool,
) -> Result<(Vec<Tensor>, Vec<(Tensor, usize)>), String> {
    let mut kept: Vec<(Tensor, usize)> = Vec::new();
    let owned: Vec<Tensor> = args.iter().map(fresh).collect();
    let mut call = CallArgs::new();
    for (k, (a, m)) in owned.iter().zip(modes).enumerate() {
        match (m, donate) {
            (Mode::Borrowed, _) => call.borrowed(a),
            (Mode::Donated, true) => call.owned(fresh(a)),
            (_, _) => {
                kept.push((a.clone(), k));
                call.owned(a.clone())
            }
        }
    }
    // What the call allocates at once never passes what its report says a call may:
    // outputs (not those written into donated arguments) and temporaries.
    let (outs, made) = jitfuse::internals::storage::tracking::peak_of(|| exe.run(call));
    let outs = outs.map_err(|e| format!("run: {e}"))?;
    if MEASURE.with(|m| m.get()) {
        let m = exe.memory_analysis();
        // Outputs go into donated buffers only when every owned argument was given away
        // (the report's `alias_bytes` assumes so), and the temporaries the plan hosts in
        // dead donated arguments need buffers of their own when the arguments are kept.
        let donated = donate && modes.iter().all(|m| !matches!(m, Mode::Shared));
        let may = if donated {
            m.output_bytes + m.temp_bytes - m.alias_bytes
        } else {
            m.output_bytes + m.temp_bytes + m.kept_argument_bytes
        };
        if made > may {
            return Err(format!(
                "the call allocated {made} bytes at once, its report allows {may}{}:\n{m}",
                if donated { " (donated)" } else { "" }
            ));
        }
    }
    Ok((outs, kept))
}

/// `call` with every argument donated, on a thread of a shared pool: what the call
/// allocates is not measured there, since a pool thread waiting for its share of the work
/// may run another test's call meanwhile (the bytes of both would count).
fn call_unmeasured(
    exe: &Executable,
    args: &[Tensor],
    modes: &[Mode],
) -> Result<(Vec<Tensor>, Vec<(Tensor, usize)>), String> {
    // Restored, not set: a call nested on this thread (stolen while waiting) ends first.
    let before = MEASURE.with(|m| m.replace(false));
    let r = call(exe, args, modes, true);
    MEASURE.with(|m| m.set(before));
    r
}

thread_local! {
    /// Whether `call` checks what a call allocates against its report.
    static MEASURE: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// A pool of 1, 3 or 8 threads (by the graph's size): the default pool has 2 on the
/// machines this runs on.
fn other_pool(g: &Graph) -> &'static rayon::ThreadPool {
    static POOLS: std::sync::OnceLock<Vec<rayon::ThreadPool>> = std::sync::OnceLock::new();
    let pools = POOLS.get_or_init(|| {
        [1, 3, 8]
            .iter()
            .map(|&t| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .expect("a thread pool")
            })
            .collect()
    });
    &pools[g.nodes.len() % pools.len()]
}

/// Check one graph; `Err` says what differed.
pub fn check_graph(
    g: &Graph,
    captured: &[Tensor],
    args: &[Tensor],
    modes: &[Mode],
    levels: &[Isa],
    floor: f64,
) -> Result<(), String> {
    check_graph_against(g, captured, (g, captured), args, modes, levels, floor)
}

/// `check_graph` with the interpreter's values and the noise scales taken from `oracle`
/// (its graph and captured tensors): the same function traced otherwise, as a gradient
/// program whose attention was left as its composition (the noise model follows a
/// composition's rounding, and restarts at an `attention_grad` node).
pub fn check_graph_against(
    g: &Graph,
    captured: &[Tensor],
    (oracle, oracle_captured): (&Graph, &[Tensor]),
    args: &[Tensor],
    modes: &[Mode],
    levels: &[Isa],
    floor: f64,
) -> Result<(), String> {
    // One interpretation gives the outputs and every value the noise scales read.
    let values = super::noise::node_values(oracle, args, oracle_captured)
        .map_err(|e| format!("interpreter: {e}"))?;
    let want: Vec<Tensor> = oracle
        .outputs
        .iter()
        .map(|o| values[o.index()].clone())
        .collect();
    let super::noise::Noise {
        scales: noise,
        noisy_infinities: noisy_inf,
    } = super::noise::analyse(oracle, &values);
    let f32 = coarsest(g);
    let kinds: Vec<ArgKind> = modes
        .iter()
        .map(|m| match m {
            Mode::Borrowed => ArgKind::Borrowed,
            _ => ArgKind::Owned,
        })
        .collect();
    for &level in levels {
        let r = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
            let exe = Executable::from_graph_with(
                g.clone(),
                captured.to_vec(),
                Some(&kinds),
                // The IR verified after every pass in release builds too.
                &CompileOptions {
                    verify: true,
                    ..CompileOptions::at(&at(level))
                },
            );
            let exe = exe.map_err(|e| format!("compile: {e}"))?;
            exe.check_plan().map_err(|e| format!("plan: {e}"))?;
            let (shared, kept) = call(&exe, args, modes, false)?;
            if shared.len() != want.len() {
                return Err(format!(
                    "{} outputs, interpreter {}",
                    shared.len(),
                    want.len()
                ));
            }
            for (k, (a, b)) in shared.iter().zip(&want).enumerate() {
                compare_with(a, b, f32, floor, noise[k], noisy_inf[k])
                    .map_err(|e| format!("output {k}: {e}"))?;
            }
            for (t, k) in &kept {
                if bits(t) != bits(&args[*k]) {
                    return Err(format!("argument {k}, kept by the caller, was written"));
                }
            }
            // Twice donated: the second call runs in a reused arena, under a pool of
            // another thread count (results never depend on it).
            for round in 0..2 {
                let (donated, kept) = if round == 0 {
                    call(&exe, args, modes, true)?
                } else {
                    other_pool(g).install(|| call_unmeasured(&exe, args, modes))?
                };
                for (k, (a, b)) in donated.iter().zip(&shared).enumerate() {
                    if bits(a) != bits(b) {
                        let e = compare_with(a, b, f32, floor, noise[k], noisy_inf[k])
                            .err()
                            .unwrap_or_default();
                        return Err(format!(
                            "output {k}: donated call {round} differs from the shared call{} ({e})",
                            if round == 1 {
                                format!(
                                    " (run with {} threads)",
                                    other_pool(g).current_num_threads()
                                )
                            } else {
                                String::new()
                            }
                        ));
                    }
                }
                for (t, k) in &kept {
                    if bits(t) != bits(&args[*k]) {
                        return Err(format!("argument {k}, kept by the caller, was written"));
                    }
                }
            }
            Ok(())
        }));
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("level {level:?}: {e}")),
            Err(p) => return Err(format!("level {level:?}: panic: {}", panic_text(&*p))),
        }
    }
    Ok(())
}
