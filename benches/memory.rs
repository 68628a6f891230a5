//! Memory against time: the four W8 configurations of
//! `../shared/anchors/README.md` (temp bytes and run time beside XLA's), and
//! the √n scaling of the automatic memory budget (Chen et al. 2016) on
//! residual chains of n = 16, 64, 256 layers, and the adjoint of a 200-step
//! heat equation (`fori_loop`) with every carry stored, under "auto" (√n
//! segments) and under a byte budget below that (loops cut deeper).
//!
//! Run: `cargo bench --bench memory` (about a minute). Times are medians of
//! interleaved samples (one sample of every case per round), so the shared
//! machine's drift hits every case alike: compare ratios within one run.

use jitfuse::prelude::*;
use std::hint::black_box;
use std::time::Instant;

#[path = "workloads/defs.rs"]
mod defs;
use defs::w8_loss;

#[jit]
fn w8a(ws: &Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(|ws: &Vec<Tensor>| w8_loss(ws, x, 0), ws)
}
#[jit]
fn w8b(ws: &Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(|ws: &Vec<Tensor>| w8_loss(ws, x, 1), ws)
}
#[jit]
fn w8c(ws: &Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(|ws: &Vec<Tensor>| w8_loss(ws, x, 2), ws)
}
#[jit]
fn w8d(ws: &Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(|ws: &Vec<Tensor>| w8_loss(ws, x, 3), ws)
}

#[jit]
fn chain_free(ws: &Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(|ws: &Vec<Tensor>| w8_loss(ws, x, 0), ws)
}
#[jit]
fn chain_auto(ws: &Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(|ws: &Vec<Tensor>| w8_loss(ws, x, 0), ws)
}

/// One explicit heat-equation step on a grid with a zero boundary.
fn heat_step(u: &Tensor) -> Tensor {
    let n = u.shape()[0] as isize;
    let p = u.pad(&[(1, 1), (1, 1)], 0.0);
    let at = |r: isize, c: isize| p.slice_axis(0, r, r + n, 1).slice_axis(1, c, c + n, 1);
    let lap = at(0, 1) + at(2, 1) + at(1, 0) + at(1, 2) - 4.0 * u;
    u + 0.1 * lap
}

fn heat_loss(u0: &Tensor, steps: usize) -> Tensor {
    let u = fori_loop(0, steps as i64, |_, u: Tensor| heat_step(&u), u0.clone());
    (&u * &u).sum_all()
}

#[jit]
fn heat_every(u0: &Tensor, steps: usize) -> Tensor {
    jitfuse::grad(|u: &Tensor| heat_loss(u, steps), u0)
}
#[jit(memory_budget = "auto")]
fn heat_auto(u0: &Tensor, steps: usize) -> Tensor {
    jitfuse::grad(|u: &Tensor| heat_loss(u, steps), u0)
}
#[jit]
fn heat_budget(u0: &Tensor, steps: usize) -> Tensor {
    jitfuse::grad(|u: &Tensor| heat_loss(u, steps), u0)
}

/// A deterministic uniform tensor in [lo, hi).
fn uniform(seed: &mut u64, shape: &[usize], lo: f32, hi: f32) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((*seed >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Medians (ms) of interleaved samples of each case.
fn interleaved(cases: &mut [Box<dyn FnMut() + '_>], rounds: usize) -> Vec<f64> {
    let mut samples = vec![Vec::new(); cases.len()];
    for round in 0..=rounds {
        for (k, c) in cases.iter_mut().enumerate() {
            let t = Instant::now();
            c();
            if round > 0 {
                samples[k].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    samples.into_iter().map(median).collect()
}

/// The process's resident memory now and its high-water mark (`VmRSS`, `VmHWM`; Linux).
fn resident() -> (usize, usize) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |key: &str| {
        s.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<usize>().ok())
            .map_or(0, |k| k * 1024)
    };
    (kb("VmRSS:"), kb("VmHWM:"))
}

/// An embedding table's training step: `take` forward, `scatter_add` backward, a split
/// (slices forward, `slice_scatter` backward) and a `concat`.
#[jit]
fn embed_step(table: &Tensor, ids: &Tensor) -> (Tensor, Tensor) {
    jitfuse::value_and_grad(
        |t: &Tensor| {
            let e = t.take(ids, 0);
            let (l, r) = (e.slice_axis(1, 0, 384, 1), e.slice_axis(1, 384, 768, 1));
            jitfuse::concat(&[&r.tanh(), &l], 1).square().sum_all()
        },
        table,
    )
}

fn mib(b: usize) -> String {
    format!("{:.2} MiB", b as f64 / (1 << 20) as f64)
}

fn main() {
    let rounds: usize = std::env::var("JITFUSE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(11);
    let mut seed = 7u64;

    // W8: 16 weights [512,512], x[256,512].
    let ws: Vec<Tensor> = (0..16)
        .map(|_| uniform(&mut seed, &[512, 512], -0.04, 0.04))
        .collect();
    let x = uniform(&mut seed, &[256, 512], -1.0, 1.0);
    type Lower = fn(&Vec<Tensor>, &Tensor) -> Result<jitfuse::Lowered, jitfuse::Error>;
    type Call = fn(&Vec<Tensor>, &Tensor) -> Vec<Tensor>;
    let w8: [(&str, Lower, Call, f64, f64); 4] = [
        ("W8a plain", w8a::lower, w8a, 9_437_184.0, 60.2),
        (
            "W8b checkpoint per layer",
            w8b::lower,
            w8b,
            9_437_184.0,
            62.5,
        ),
        ("W8c dots_saveable", w8c::lower, w8c, 9_437_184.0, 61.2),
        ("W8d nothing_saveable", w8d::lower, w8d, 9_437_184.0, 63.2),
    ];
    let reference = w8a(&ws, &x);
    let mut mem = Vec::new();
    for (name, lower, call, _, _) in &w8 {
        mem.push(lower(&ws, &x).unwrap().compile().unwrap().memory_analysis());
        let got = call(&ws, &x);
        let err = got
            .iter()
            .zip(&reference)
            .flat_map(|(a, b)| {
                let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
                a.into_iter()
                    .zip(b)
                    .map(|(p, q)| (p - q).abs() / (1.0 + q.abs()))
            })
            .fold(0f32, f32::max);
        assert!(err < 1e-3, "{name}: gradients differ from plain by {err}");
    }
    let mut cases: Vec<Box<dyn FnMut() + '_>> = w8
        .iter()
        .map(|(_, _, call, _, _)| {
            let (ws, x) = (&ws, &x);
            Box::new(move || {
                black_box(call(ws, x));
            }) as Box<dyn FnMut() + '_>
        })
        .collect();
    let times = interleaved(&mut cases, rounds);
    drop(cases);
    println!("| W8 configuration | temp bytes | XLA temp | peak | run ms | XLA run ms |");
    println!("|---|---|---|---|---|---|");
    for (k, (name, _, _, xla_temp, xla_ms)) in w8.iter().enumerate() {
        println!(
            "| {name} | {} | {} | {} | {:.1} | {xla_ms} |",
            mem[k].temp_bytes,
            *xla_temp as usize,
            mib(mem[k].peak_bytes),
            times[k]
        );
    }

    let (rss, hwm) = resident();
    println!(
        "\nprocess resident after W8: {} (high water {}); largest peak_bytes above {}",
        mib(rss),
        mib(hwm),
        mib(mem.iter().map(|m| m.peak_bytes).max().unwrap_or(0))
    );

    // Library steps in a steady loop: resident memory against the reported peak.
    let table = uniform(&mut seed, &[8192, 768], -0.1, 0.1);
    let ids = Tensor::from_vec(
        (0..4096).map(|k| (k * 7919 % 8192) as i32).collect(),
        &[4096],
    )
    .unwrap();
    let m = embed_step::lower(&table, &ids)
        .unwrap()
        .compile()
        .unwrap()
        .memory_analysis();
    black_box(embed_step(&table, &ids));
    let (before, _) = resident();
    let pool_before = jitfuse::internals::storage::pool::held_bytes();
    let t0 = Instant::now();
    for _ in 0..200 {
        black_box(embed_step(&table, &ids));
    }
    let ms = t0.elapsed().as_secs_f64() * 1e3 / 200.0;
    let (after, hwm) = resident();
    println!(
        "\n| embedding step (take/scatter_add/slice_scatter/concat), 200 calls | peak_bytes | \
         resident before | resident after | high water | pool before | pool after | ms |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    println!(
        "| table [8192, 768], 4096 ids | {} | {} | {} | {} | {} | {} | {ms:.2} |",
        mib(m.peak_bytes),
        mib(before),
        mib(after),
        mib(hwm),
        mib(pool_before),
        mib(jitfuse::internals::storage::pool::held_bytes())
    );

    // Scaling: h [256,64], W [64,64] (activations 4x the weights' gradients,
    // so residuals do not fit in the outputs' buffers).
    chain_auto::set_memory_budget(Some(jitfuse::AUTO_MEMORY_BUDGET));
    let x = uniform(&mut seed, &[256, 64], -1.0, 1.0);
    println!();
    println!("| n | temp no budget | temp auto | ratio | peak no budget | peak auto | ms no budget | ms auto | time ratio |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for n in [16usize, 64, 256] {
        let ws: Vec<Tensor> = (0..n)
            .map(|_| uniform(&mut seed, &[64, 64], -0.1, 0.1))
            .collect();
        let free = chain_free::lower(&ws, &x)
            .unwrap()
            .compile()
            .unwrap()
            .memory_analysis();
        let auto = chain_auto::lower(&ws, &x)
            .unwrap()
            .compile()
            .unwrap()
            .memory_analysis();
        let mut cases: Vec<Box<dyn FnMut() + '_>> = vec![
            Box::new(|| {
                black_box(chain_free(&ws, &x));
            }),
            Box::new(|| {
                black_box(chain_auto(&ws, &x));
            }),
        ];
        let t = interleaved(&mut cases, rounds);
        println!(
            "| {n} | {} | {} | {:.2} | {} | {} | {:.2} | {:.2} | {:.2} |",
            free.temp_bytes,
            auto.temp_bytes,
            free.temp_bytes as f64 / auto.temp_bytes as f64,
            mib(free.peak_bytes),
            mib(auto.peak_bytes),
            t[0],
            t[1],
            t[1] / t[0]
        );
    }
    // The heat adjoint: 200 steps on a 256² f64 grid (a carry is 512 KiB).
    let (n, steps) = (256usize, 200usize);
    let u0 = Tensor::from_vec(
        uniform(&mut seed, &[n, n], -1.0, 1.0)
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect(),
        &[n, n],
    )
    .unwrap();
    let carry = n * n * 8;
    // A budget one byte below what √n segments take: met by cutting the loop deeper, or
    // refused (then the table says so).
    let auto_peak = heat_auto::lower(&u0, steps)
        .unwrap()
        .compile()
        .unwrap()
        .memory_analysis()
        .peak_bytes;
    heat_budget::set_memory_budget(Some(auto_peak - 1));
    if let Err(e) = heat_budget::try_call(&u0, steps) {
        println!("\nheat adjoint under {} bytes: {e}", auto_peak - 1);
        heat_budget::set_memory_budget(None);
    }
    let every = heat_every(&u0, steps).to_vec::<f64>().unwrap();
    for (name, got) in [
        ("auto", heat_auto(&u0, steps)),
        ("budget", heat_budget(&u0, steps)),
    ] {
        let err = got
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .zip(&every)
            .map(|(a, b)| (a - b).abs() / (1e-300 + b.abs()))
            .fold(0f64, f64::max);
        assert!(
            err < 1e-9,
            "heat adjoint {name}: {err} from every carry stored"
        );
    }
    type HeatLower = fn(&Tensor, usize) -> Result<jitfuse::Lowered, jitfuse::Error>;
    let lowers: [(&str, HeatLower); 3] = [
        ("every carry", heat_every::lower),
        ("\"auto\"", heat_auto::lower),
        ("budget below \"auto\"", heat_budget::lower),
    ];
    let mems: Vec<jitfuse::MemoryAnalysis> = lowers
        .iter()
        .map(|(_, l)| l(&u0, steps).unwrap().compile().unwrap().memory_analysis())
        .collect();
    let mut cases: Vec<Box<dyn FnMut() + '_>> = vec![
        Box::new(|| {
            black_box(heat_every(&u0, steps));
        }),
        Box::new(|| {
            black_box(heat_auto(&u0, steps));
        }),
        Box::new(|| {
            black_box(heat_budget(&u0, steps));
        }),
    ];
    let t = interleaved(&mut cases, rounds.min(5));
    drop(cases);
    println!("\n| heat adjoint, 200 steps, 256² f64 | temp | carries (temp / 512 KiB) | stacked by loops | peak | ms | time ratio |");
    println!("|---|---|---|---|---|---|---|");
    for (k, (name, _)) in lowers.iter().enumerate() {
        println!(
            "| {name} | {} | {:.1} | {} | {} | {:.1} | {:.2} |",
            mib(mems[k].temp_bytes),
            mems[k].temp_bytes as f64 / carry as f64,
            mib(mems[k].loop_stack_bytes),
            mib(mems[k].peak_bytes),
            t[k],
            t[k] / t[0]
        );
    }

    let (rss, hwm) = resident();
    println!(
        "\nprocess resident at the end: {} (high water {})",
        mib(rss),
        mib(hwm)
    );
}
