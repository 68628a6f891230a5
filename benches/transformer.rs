//! Causal attention, fused (`jitfuse::attention`: tiles, no score matrix), masked by a
//! finite fill as models write it (`where(tril, s, -1e30)`: fused too, the `fill` rows), and as the
//! composition users write (`softmax(where(tril, q kᵀ / √d, -inf)) v`, compiled by
//! jitfuse with its pattern fusion off: with it on, the composition is the fused op), forward and the gradient of its sum with respect to q, k, v, at batch 1,
//! 8 heads (`JITFUSE_BENCH_HEADS`), head dim 64, f32 — beside XLA measured in the same run by
//! `benches/jax_transformer.py` when Python has JAX (`pip install "jax[cpu]"`;
//! `JITFUSE_BENCH_JAX=0` skips it), and PyTorch (SDPA; the GPT step eager and under
//! `torch.compile`, in f32 and under CPU autocast to bf16) by `benches/torch_transformer.py`
//! when it has torch (`pip install torch`; `JITFUSE_BENCH_TORCH=0` skips it). The peers'
//! scripts run first, then jitfuse's rows.
//!
//! Then the GPT training step of `examples/gpt` at nanoGPT's CPU size and GPU default
//! (`JITFUSE_BENCH_GPT=cpu` for one, `=none` for neither), with checkpointed blocks (the
//! example's setting) and with every activation kept, beside the same model in JAX; and the
//! checkpointed step's body called without `#[jit]` (every op eager), against its jitted step;
//! and each step under the mixed-precision policy `Policy::new(F32, BF16, F32)` (bf16
//! compute, f32 parameters and AdamW state), timed interleaved with the f32 step.
//!
//! Run: `cargo bench --bench transformer` (seq 1024 and 4096; `JITFUSE_BENCH_SEQS=1024,4096,
//! 8192,16384` for more; the composition runs up to seq 4096, `JITFUSE_BENCH_UNFUSED_MAX`
//! changes that; XLA runs up to seq 8192, `JITFUSE_BENCH_XLA_MAX` changes that). Times are medians of `JITFUSE_BENCH_ROUNDS` (default 5) calls after one
//! warm-up; temp is `memory_analysis().temp_bytes` (XLA: `temp_size_in_bytes`).

// The GPT of examples/gpt, the same file.
#[allow(dead_code)]
#[path = "../examples/gpt/model.rs"]
mod model;

use jitfuse::optim::Optimizer;
use jitfuse::prelude::*;
use jitfuse::{attention, AttnMask};
use std::collections::HashMap;
use std::time::Instant;

fn tril(s: usize) -> Tensor {
    let row = Tensor::iota(&[s, s], 0, DType::I32);
    let col = Tensor::iota(&[s, s], 1, DType::I32);
    col.le(&row)
}

fn composed(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    let s = q.shape()[2];
    let scores = q.matmul(&k.transpose(&[0, 1, 3, 2])) * (1.0 / (q.shape()[3] as f64).sqrt());
    jitfuse::where_(&tril(s), &scores, f64::NEG_INFINITY)
        .softmax(-1)
        .matmul(v)
}

#[jit]
fn fused_fwd(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    attention(q, k, v, AttnMask::Causal)
}

#[jit]
fn fused_grad(q: &Tensor, k: &Tensor, v: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(
        |x: &Vec<Tensor>| attention(&x[0], &x[1], &x[2], AttnMask::Causal).sum_all(),
        &vec![q.clone(), k.clone(), v.clone()],
    )
}

/// The mask as Hugging Face and Flax models write it: a finite fill (`-1e30`) where the
/// `iota` comparison fails. Fused (pattern fusion on) with the fill's exact meaning: the
/// rows `fill forward` / `fill gradient` are to be read against `fused forward` /
/// `fused gradient` (`AttnMask::Causal`).
fn filled(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    let s = q.shape()[2];
    let scores = q.matmul(&k.transpose(&[0, 1, 3, 2])) * (1.0 / (q.shape()[3] as f64).sqrt());
    jitfuse::where_(&tril(s), &scores, -1e30)
        .softmax(-1)
        .matmul(v)
}

#[jit]
fn fill_fwd(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    filled(q, k, v)
}

#[jit]
fn fill_grad(q: &Tensor, k: &Tensor, v: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(
        |x: &Vec<Tensor>| filled(&x[0], &x[1], &x[2]).sum_all(),
        &vec![q.clone(), k.clone(), v.clone()],
    )
}

#[jit]
fn unfused_fwd(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    composed(q, k, v)
}

#[jit]
fn unfused_grad(q: &Tensor, k: &Tensor, v: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(
        |x: &Vec<Tensor>| composed(&x[0], &x[1], &x[2]).sum_all(),
        &vec![q.clone(), k.clone(), v.clone()],
    )
}

fn uniform(seed: &mut u64, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (*seed >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .ok()
        .map(|s| s.split(',').filter_map(|w| w.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// `(name, size) -> (ms, temp bytes)` from the JAX script, when it runs (GPT sizes are
/// keyed 0 for "cpu" and 1 for "gpu").
/// Heads of the attention rows (`JITFUSE_BENCH_HEADS`, default 8).
fn heads() -> usize {
    env_list("JITFUSE_BENCH_HEADS", &[8])[0].max(1)
}

fn xla(seqs: &[usize], gpt: &[&str]) -> Reference {
    peer("jax_transformer.py", "JITFUSE_BENCH_JAX", seqs, gpt)
}

/// `(name, size) -> (ms, temp bytes)` from PyTorch's script (`benches/torch_transformer.py`:
/// SDPA, the GPT step eager and compiled, f32 and autocast bf16), when torch is installed.
fn torch(seqs: &[usize], gpt: &[&str]) -> Reference {
    peer("torch_transformer.py", "JITFUSE_BENCH_TORCH", seqs, gpt)
}

type Reference = HashMap<(String, usize), (f64, f64)>;

/// The figures of a peer's script in `benches/` (skipped where `skip` is set to 0, or where
/// the script fails: the peer is not installed), each line `name, size, ms, temp`.
fn peer(script: &str, skip: &str, seqs: &[usize], gpt: &[&str]) -> Reference {
    let mut out = HashMap::new();
    if std::env::var(skip).as_deref() == Ok("0") {
        eprintln!("({skip}=0: {script} skipped)");
        return out;
    }
    let script = format!("{}/benches/{script}", env!("CARGO_MANIFEST_DIR"));
    let list: Vec<String> = seqs.iter().map(|s| s.to_string()).collect();
    eprintln!("measuring a peer with {script} ...");
    let Ok(o) = std::process::Command::new("python3")
        .args([
            script.as_str(),
            "--seqs",
            &list.join(","),
            "--gpt",
            &gpt.join(","),
            "--reps",
            &env_list("JITFUSE_BENCH_ROUNDS", &[5])[0].to_string(),
            "--heads",
            &heads().to_string(),
        ])
        .output()
    else {
        return out;
    };
    if !o.status.success() {
        eprintln!(
            "(no figures from {script}: {})",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
        return out;
    }
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if let (Some(n), Some(s), Some(ms), Some(t)) = (f.first(), f.get(1), f.get(2), f.get(3)) {
            let size = match *s {
                "cpu" => Ok(0),
                "gpu" => Ok(1),
                s => s.parse(),
            };
            if let (Ok(s), Ok(ms), Ok(t)) = (size, ms.parse(), t.parse()) {
                out.insert((n.to_string(), s), (ms, t));
            }
        }
    }
    out
}

/// `a / b` for the table, "—" without a reference.
fn ratio(a: f64, b: f64) -> String {
    if b.is_nan() || b == 0.0 {
        "—".to_string()
    } else {
        format!("{:.2}", a / b)
    }
}

fn mib(b: f64) -> String {
    if b.is_nan() {
        "—".into()
    } else {
        format!("{:.1} MiB", b / (1 << 20) as f64)
    }
}

type Call = fn(&Tensor, &Tensor, &Tensor) -> usize;

fn main() {
    let rounds = env_list("JITFUSE_BENCH_ROUNDS", &[5])[0].max(1);
    let seqs = env_list("JITFUSE_BENCH_SEQS", &[1024, 4096]);
    let unfused_max = env_list("JITFUSE_BENCH_UNFUSED_MAX", &[4096])[0];
    let gpt_env = std::env::var("JITFUSE_BENCH_GPT").unwrap_or_else(|_| "cpu,gpu".into());
    let gpt: Vec<&str> = gpt_env
        .split(',')
        .filter(|w| *w == "cpu" || *w == "gpu")
        .collect();
    // XLA materialises the score matrix: at seq 16,384 its gradient would need 26 GB.
    let xla_max = env_list("JITFUSE_BENCH_XLA_MAX", &[8192])[0];
    let xla_seqs: Vec<usize> = seqs.iter().copied().filter(|&s| s <= xla_max).collect();
    let reference = xla(&xla_seqs, &gpt);
    let pytorch = torch(&seqs, &gpt);
    if pytorch.is_empty() {
        println!("(PyTorch columns empty: `pip install torch` to measure it in the same run)");
    }
    println!(
        "| case | seq | jitfuse ms | jitfuse temp | XLA ms | XLA temp | time ratio | temp ratio | PyTorch eager ms | torch.compile ms | jitfuse / best PyTorch |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut seed = 7u64;
    for &s in &seqs {
        let shape = [1, heads(), s, 64];
        let (q, k, v) = (
            uniform(&mut seed, &shape),
            uniform(&mut seed, &shape),
            uniform(&mut seed, &shape),
        );
        let mut cases: Vec<(&str, &str, Call, Box<dyn Fn() -> jitfuse::MemoryAnalysis>)> = vec![
            (
                "fused forward",
                "attention fwd",
                |q, k, v| fused_fwd(q, k, v).len(),
                Box::new(|| {
                    fused_fwd::lower(&q, &k, &v)
                        .unwrap()
                        .compile()
                        .unwrap()
                        .memory_analysis()
                }),
            ),
            (
                "fused gradient",
                "attention grad",
                |q, k, v| fused_grad(q, k, v).len(),
                Box::new(|| {
                    fused_grad::lower(&q, &k, &v)
                        .unwrap()
                        .compile()
                        .unwrap()
                        .memory_analysis()
                }),
            ),
            (
                "fill forward",
                "attention fwd",
                |q, k, v| fill_fwd(q, k, v).len(),
                Box::new(|| {
                    fill_fwd::lower(&q, &k, &v)
                        .unwrap()
                        .compile()
                        .unwrap()
                        .memory_analysis()
                }),
            ),
            (
                "fill gradient",
                "attention grad",
                |q, k, v| fill_grad(q, k, v).len(),
                Box::new(|| {
                    fill_grad::lower(&q, &k, &v)
                        .unwrap()
                        .compile()
                        .unwrap()
                        .memory_analysis()
                }),
            ),
        ];
        if s <= unfused_max {
            cases.push((
                "composition forward",
                "attention fwd",
                |q, k, v| unfused_fwd(q, k, v).len(),
                Box::new(|| {
                    unfused_fwd::lower(&q, &k, &v)
                        .unwrap()
                        .compile()
                        .unwrap()
                        .memory_analysis()
                }),
            ));
            cases.push((
                "composition gradient",
                "attention grad",
                |q, k, v| unfused_grad(q, k, v).len(),
                Box::new(|| {
                    unfused_grad::lower(&q, &k, &v)
                        .unwrap()
                        .compile()
                        .unwrap()
                        .memory_analysis()
                }),
            ));
        }
        for (name, xla_name, call, mem) in &cases {
            // The composition as it compiles without the attention rewrite (with it, it is
            // the fused op).
            jitfuse::internals::passes::set_pattern_fusion(!name.starts_with("composition"));
            let temp = mem().temp_bytes as f64;
            std::hint::black_box(call(&q, &k, &v));
            let mut samples = Vec::new();
            for _ in 0..rounds {
                let t = Instant::now();
                std::hint::black_box(call(&q, &k, &v));
                samples.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let ms = median(samples);
            let (xms, xtemp) = reference
                .get(&(xla_name.to_string(), s))
                .copied()
                .unwrap_or((f64::NAN, f64::NAN));
            let sdpa = if xla_name.ends_with("fwd") {
                "sdpa fwd"
            } else {
                "sdpa grad"
            };
            println!(
                "| {name} | {s} | {ms:.1} | {} | {} | {} | {} | {} | {} |",
                mib(temp),
                if xms.is_nan() {
                    "—".into()
                } else {
                    format!("{xms:.1}")
                },
                mib(xtemp),
                ratio(ms, xms),
                ratio(temp, xtemp),
                torch_columns(&pytorch, sdpa, "", s, ms),
            );
        }
    }
    for size in &gpt {
        gpt_rows(size, rounds, &reference, &pytorch);
    }
}

/// PyTorch's eager and compiled times of case `name` (with `suffix`: " bf16" for autocast)
/// at `size`, and `ms` over the faster of them.
fn torch_columns(pytorch: &Reference, name: &str, suffix: &str, size: usize, ms: f64) -> String {
    let get = |mode: &str| {
        (pytorch.get(&(format!("{name} {mode}{suffix}"), size))).map_or(f64::NAN, |&(t, _)| t)
    };
    let (eager, compiled) = (get("eager"), get("compiled"));
    let show = |t: f64| {
        if t.is_nan() {
            "—".to_string()
        } else {
            format!("{t:.1}")
        }
    };
    let best = eager.min(compiled);
    format!("{} | {} | {}", show(eager), show(compiled), ratio(ms, best))
}

/// The GPT training step (loss, gradient, clipping, AdamW; parameters and optimiser state
/// donated) at nanoGPT's CPU size or GPU default, with and without checkpointed blocks.
fn gpt_rows(size: &str, rounds: usize, reference: &Reference, pytorch: &Reference) {
    let (key, base) = match size {
        "cpu" => (0, model::Config::SHAKESPEARE_CPU),
        _ => (1, model::Config::SHAKESPEARE_GPU),
    };
    let rounds = if key == 1 {
        rounds.min(3)
    } else {
        rounds.max(20)
    };
    for remat in [true, false] {
        let cfg = model::Config { remat, ..base };
        let mut p = model::Gpt::init(&cfg, &Key::new(1337));
        let mut s = model::opt(2000).init(&p);
        let mut seed = 3u64;
        let mut ids = || {
            let v: Vec<i32> = (0..cfg.batch * cfg.block)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((seed >> 33) % cfg.vocab as u64) as i32
                })
                .collect();
            Tensor::from_vec(v, &[cfg.batch, cfg.block]).unwrap()
        };
        let (x, y) = (ids(), ids());
        let t = Instant::now();
        let m = model::train_step::lower(p.clone(), s.clone(), &x, &y, cfg.heads, remat, 2000)
            .and_then(|l| l.compile())
            .unwrap()
            .memory_analysis();
        let compile_ms = t.elapsed().as_secs_f64() * 1e3;
        // The same step under the mixed policy (bf16 compute, f32 parameters and state),
        // timed interleaved with the f32 one.
        let policy = jitfuse::precision::Policy::new(DType::F32, DType::BF16, DType::F32);
        let mixed = model::mixed_train_step::lower(
            p.clone(),
            s.clone(),
            &x,
            &y,
            cfg.heads,
            remat,
            2000,
            policy,
        )
        .and_then(|l| l.compile())
        .unwrap()
        .memory_analysis();
        let (mut q, mut qs) = (p.clone(), s.clone());
        let (mut samples, mut mixed_samples) = (Vec::new(), Vec::new());
        for i in 0..=rounds {
            let t = Instant::now();
            let (p2, s2, l) = model::train_step(p, s, &x, &y, cfg.heads, remat, 2000);
            std::hint::black_box(l.item::<f32>().unwrap());
            if i > 0 {
                samples.push(t.elapsed().as_secs_f64() * 1e3);
            }
            (p, s) = (p2, s2);
            let t = Instant::now();
            let (q2, qs2, l) =
                model::mixed_train_step(q, qs, &x, &y, cfg.heads, remat, 2000, policy);
            std::hint::black_box(l.item::<f32>().unwrap());
            if i > 0 {
                mixed_samples.push(t.elapsed().as_secs_f64() * 1e3);
            }
            (q, qs) = (q2, qs2);
        }
        let ms = median(samples);
        let mixed_ms = median(mixed_samples);
        let (xms, xtemp) = reference
            .get(&("gpt step".to_string(), key))
            .copied()
            .unwrap_or((f64::NAN, f64::NAN));
        let kept = if remat {
            ", checkpointed blocks"
        } else {
            ", everything kept"
        };
        println!(
            "| GPT step, {size} size{kept} | {} | {ms:.1} | {} | {} | {} | {} | {} | {} |",
            cfg.block,
            mib(m.temp_bytes as f64),
            if xms.is_nan() {
                "—".into()
            } else {
                format!("{xms:.1}")
            },
            mib(xtemp),
            ratio(ms, xms),
            ratio(m.temp_bytes as f64, xtemp),
            torch_columns(pytorch, "gpt step", "", key, ms),
        );
        println!(
            "| GPT step, {size} size{kept}, bf16 compute ({}× the f32 step's time, {}× its temp; PyTorch under CPU autocast) | {} | {mixed_ms:.1} | {} | — | — | — | — | {} |",
            ratio(mixed_ms, ms),
            ratio(mixed.temp_bytes as f64, m.temp_bytes as f64),
            cfg.block,
            mib(mixed.temp_bytes as f64),
            torch_columns(pytorch, "gpt step", " bf16", key, mixed_ms),
        );
        eprintln!("(GPT {size}, remat {remat}: first compile {compile_ms:.0} ms; memory:\n{m})");
        // Eagerly, every intermediate the gradient reads is a buffer of its own: at the GPU
        // size that is more than this kind of machine has (the step's `eager_bytes`).
        let fits = m.eager_bytes < free_memory() / 2;
        if remat && fits {
            let torch_eager =
                (pytorch.get(&("gpt step eager".to_string(), key))).map_or(f64::NAN, |&(t, _)| t);
            eager_gpt_row(size, &cfg, p, s, &x, &y, rounds.min(11), (xms, torch_eager));
        } else if remat {
            println!(
                "| GPT step, {size} size, eager: not run (its intermediates, {}, exceed half the free memory) | {} | — | — | — | — | — | — | — | — | — |",
                mib(m.eager_bytes as f64),
                cfg.block
            );
        }
    }
}

/// Bytes of memory free for the bench (`MemAvailable`; all of it where that is unknown).
fn free_memory() -> usize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(usize::MAX)
}

/// The same step's body called without `#[jit]`: every op eager (a cached compiled
/// program each), the first call warming the eager cache; timed alternating with the jitted
/// step (on a copy of the model and state), so that the ratio of the two is of one machine
/// state (separate runs of each differed by a third on a loaded machine).
#[allow(clippy::too_many_arguments)]
fn eager_gpt_row(
    size: &str,
    cfg: &model::Config,
    mut p: model::Gpt,
    mut s: jitfuse::optim::StateOf<model::Opt, model::Gpt>,
    x: &Tensor,
    y: &Tensor,
    rounds: usize,
    (xla_ms, torch_eager_ms): (f64, f64),
) {
    let (mut q, mut qs) = (p.clone(), s.clone());
    let (mut samples, mut jitted) = (Vec::new(), Vec::new());
    for i in 0..=rounds {
        let t = Instant::now();
        let (p2, s2, l) = model::step_body(p, s, x, y, cfg.heads, cfg.remat, 2000);
        std::hint::black_box(l.item::<f32>().unwrap());
        if i > 0 {
            samples.push(t.elapsed().as_secs_f64() * 1e3);
        }
        (p, s) = (p2, s2);
        let t = Instant::now();
        let (q2, qs2, l) = model::train_step(q, qs, x, y, cfg.heads, cfg.remat, 2000);
        std::hint::black_box(l.item::<f32>().unwrap());
        if i > 0 {
            jitted.push(t.elapsed().as_secs_f64() * 1e3);
        }
        (q, qs) = (q2, qs2);
    }
    let ms = median(samples);
    let jitted_ms = median(jitted);
    println!(
        "| GPT step, {size} size, checkpointed blocks, eager ({}× the jitted step's {jitted_ms:.1} ms, alternating; PyTorch eager) | {} | {ms:.1} | — | {} | — | {} | — | {} |",
        ratio(ms, jitted_ms),
        cfg.block,
        if xla_ms.is_nan() {
            "—".into()
        } else {
            format!("{xla_ms:.1}")
        },
        ratio(ms, xla_ms),
        if torch_eager_ms.is_nan() {
            "— | — | —".to_string()
        } else {
            format!("{torch_eager_ms:.1} | — | {}", ratio(ms, torch_eager_ms))
        },
    );
}
