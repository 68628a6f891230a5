//! Training steps of the convolutional networks of `examples/cnn` on batches of 128 images
//! of 28×28×1, against PyTorch (eager, channels last, and `torch.compile`) and JAX
//! (`jit(value_and_grad)`) measured by `benches/torch_cnn.py` and `benches/jax_cnn.py` in
//! the same run when they are installed (`JITFUSE_BENCH_TORCH=0`, `JITFUSE_BENCH_JAX=0` skip
//! them). `cargo bench --bench cnn_step`.
//!
//! Rows: the network of Fashion-MNIST's own benchmark (conv 5×5×32 Same + ReLU, max-pool 2,
//! conv 5×5×64 + ReLU, max-pool 2, dense 1024 + ReLU, dense 10) with Adam 1e-3; the
//! ResNet-20-shaped network (3×3 convolutions of 16, 32, 64 features with batch norm in
//! training mode, strided 1×1 projections, global average pool) with SGD and momentum 0.9,
//! also with its blocks checkpointed; both networks also under the bf16 compute policy (these
//! rows against the peers' plain f32 steps). Each step: the loss and gradients, the
//! optimiser's update, the new parameters, state and running statistics. Also the temporaries each compiled step
//! holds (jitfuse's `memory_analysis().temp_bytes`, XLA's `temp_size_in_bytes`).
//! `JITFUSE_BENCH_RUNS` sets the samples (median), taken before and after the peers' runs.

#[path = "../examples/cnn/model.rs"]
mod model;

use jitfuse::optim::{self, Optimizer, StateOf};
use jitfuse::prelude::*;
use model::{Cnn, ResNet, ResNetStats};
use std::collections::HashMap;
use std::time::Instant;

const BATCH: usize = 128;

type Adam = optim::Adam<optim::Constant>;
type Sgd = optim::Momentum<optim::Constant>;

fn adam() -> Adam {
    optim::adam(optim::constant(1e-3), 0.9, 0.999, 1e-8)
}

fn sgd() -> Sgd {
    optim::momentum(optim::constant(0.1), 0.9)
}

/// The mixed-precision policy of a step computing in `compute`: parameters, images and
/// running statistics cast to it inside the loss; f32 parameters, optimiser state, running
/// statistics and loss outside it (the identity for f32).
fn policy(compute: DType) -> jitfuse::precision::Policy {
    jitfuse::precision::Policy::new(DType::F32, compute, DType::F32)
}

#[jit]
fn cnn_step(
    p: Cnn,
    s: StateOf<Adam, Cnn>,
    x: &Tensor,
    y: &Tensor,
    compute: DType,
) -> (Cnn, StateOf<Adam, Cnn>, Tensor) {
    let policy = policy(compute);
    let (l, g) = value_and_grad(
        |p: &Cnn| {
            let (p, x) = policy.cast_to_compute(&(p.clone(), x.clone()));
            policy.cast_to_output(&softmax_cross_entropy_with_labels(&p.logits(&x), y))
        },
        &p,
    );
    let (p, s) = adam().update(&g, s, p);
    (p, s, l)
}

#[jit]
fn resnet_step(
    p: ResNet,
    s: StateOf<Sgd, ResNet>,
    stats: ResNetStats,
    x: &Tensor,
    y: &Tensor,
    remat: bool,
    compute: DType,
) -> (ResNet, StateOf<Sgd, ResNet>, ResNetStats, Tensor) {
    let policy = policy(compute);
    let ((l, stats), g) = value_and_grad_with_aux(
        |p: &ResNet| {
            let (p, x, stats) = policy.cast_to_compute(&(p.clone(), x.clone(), stats.clone()));
            let (z, stats) = p.logits(&x, &stats, true, remat);
            let l = softmax_cross_entropy_with_labels(&z, y);
            (policy.cast_to_output(&l), policy.cast_to_param(&stats))
        },
        &p,
    );
    let (p, s) = sgd().update(&g, s, p);
    (p, s, stats, l)
}

fn batch() -> (Tensor, Tensor) {
    let mut s = 0x9e3779b97f4a7c15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let x: Vec<f32> = (0..BATCH * 28 * 28)
        .map(|_| (next() >> 40) as f32 / (1u64 << 24) as f32)
        .collect();
    let y: Vec<i32> = (0..BATCH).map(|_| (next() % 10) as i32).collect();
    (
        Tensor::from_vec(x, &[BATCH, 28, 28, 1]).unwrap(),
        Tensor::from_vec(y, &[BATCH]).unwrap(),
    )
}

/// The ResNet row whose blocks are checkpointed (`Policy::DotsSaveable`).
const REMAT: &str = "resnet20, blocks checkpointed";
/// The rows under the bf16 compute policy (against the peers' f32 steps).
const BF16: &str = "resnet20, bf16 compute";
const CNN_BF16: &str = "fmnist_cnn, bf16 compute";

/// `runs` timed calls of `step` (each call's outputs the next one's state; the loss read
/// back, so the call has finished), after one untimed call.
fn timed<S>(runs: usize, state: S, mut step: impl FnMut(S) -> (S, Tensor)) -> Vec<f64> {
    let (mut state, _) = step(state);
    let mut t = vec![];
    for _ in 0..runs {
        let start = Instant::now();
        let (next, l) = step(state);
        l.item::<f32>().unwrap();
        t.push(start.elapsed().as_secs_f64() * 1e3);
        state = next;
    }
    t
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// `(network, mode) -> (ms, temp bytes)` from a peer's script, when the peer is installed.
fn peer(script: &str, skip: &str, runs: usize) -> HashMap<(String, String), (f64, f64)> {
    let mut out = HashMap::new();
    if std::env::var(skip).as_deref() == Ok("0") {
        println!("({script} skipped: {skip}=0)");
        return out;
    }
    let path = format!("{}/benches/{script}", env!("CARGO_MANIFEST_DIR"));
    let o = std::process::Command::new("python3")
        .args([path.as_str(), "--reps", &runs.to_string()])
        .output();
    let o = match o {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            println!(
                "({script} did not run: {})",
                err.lines().last().unwrap_or("")
            );
            return out;
        }
        Err(e) => {
            println!("({script} did not run: {e})");
            return out;
        }
    };
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if let [net, mode, ms, temp] = f[..] {
            if let (Ok(ms), Ok(temp)) = (ms.parse(), temp.parse()) {
                out.insert((net.to_string(), mode.to_string()), (ms, temp));
            }
        }
    }
    out
}

/// Each network's step times (ms) and its temporaries: `runs` calls after a first one. The
/// ResNet twice: everything kept, and each block checkpointed keeping its convolutions'
/// outputs (`--remat` in the example; measured against the peers' plain step).
fn jitfuse_rows(runs: usize, x: &Tensor, y: &Tensor) -> Vec<(&'static str, Vec<f64>, usize)> {
    let key = Key::new(0);
    let mut rows = vec![];
    let temp = |l: Result<jitfuse::jit::Lowered, jitfuse::Error>| {
        l.and_then(|l| l.compile())
            .unwrap()
            .memory_analysis()
            .temp_bytes
    };
    // Each step's parameters and state are donated and returned: the steady state of
    // training (the first call traces and compiles).
    for (net, compute) in [("fmnist_cnn", DType::F32), (CNN_BF16, DType::BF16)] {
        let p = Cnn::init(&key);
        let s = adam().init(&p);
        let bytes = temp(cnn_step::lower(p.clone(), s.clone(), x, y, compute));
        let t = timed(runs, (p, s), |(p, s)| {
            let (p, s, l) = cnn_step(p, s, x, y, compute);
            ((p, s), l)
        });
        rows.push((net, t, bytes));
    }
    for (net, remat, compute) in [
        ("resnet20", false, DType::F32),
        (REMAT, true, DType::F32),
        (BF16, false, DType::BF16),
    ] {
        let (p, stats) = ResNet::init(&key);
        let s = sgd().init(&p);
        let lowered = resnet_step::lower(p.clone(), s.clone(), stats.clone(), x, y, remat, compute);
        let bytes = temp(lowered);
        let t = timed(runs, (p, s, stats), |(p, s, stats)| {
            let (p, s, stats, l) = resnet_step(p, s, stats, x, y, remat, compute);
            ((p, s, stats), l)
        });
        rows.push((net, t, bytes));
    }
    rows
}

fn main() {
    let runs: usize = std::env::var("JITFUSE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11);
    let (x, y) = batch();
    // jitfuse before and after the peers: its median is over both rounds, so that a change
    // of the machine's load during the peers' runs shows on both sides.
    let before = jitfuse_rows(runs, &x, &y);
    let torch = peer("torch_cnn.py", "JITFUSE_BENCH_TORCH", runs);
    let jax = peer("jax_cnn.py", "JITFUSE_BENCH_JAX", runs);
    let after = jitfuse_rows(runs, &x, &y);
    let rows: Vec<(&str, f64, usize)> = (before.into_iter().zip(after))
        .map(|((net, mut t, temp), (_, t2, _))| {
            t.extend(t2);
            (net, median(t), temp)
        })
        .collect();
    let mib = |b: f64| b / (1u64 << 20) as f64;
    let cell = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.1}"));
    let ratio = |a: f64, b: Option<f64>| b.map_or("—".to_string(), |b| format!("{:.2}", a / b));
    println!(
        "\n| network (batch {BATCH}) | jitfuse ms | PyTorch eager ms | channels-last ms | torch.compile ms | JAX ms | jitfuse / best PyTorch | jitfuse / JAX | jitfuse temp MiB | XLA temp MiB | temp ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (net, ms, temp) in rows {
        // (The checkpointed and bf16 rows against the peers' plain f32 steps.)
        let peer_net = match net {
            REMAT | BF16 => "resnet20",
            CNN_BF16 => "fmnist_cnn",
            _ => net,
        };
        let t = |mode: &str| {
            torch
                .get(&(peer_net.to_string(), mode.to_string()))
                .map(|v| v.0)
        };
        let (eager, cl, comp) = (t("eager"), t("channels_last"), t("compiled"));
        let best = [eager, cl, comp].into_iter().flatten().reduce(f64::min);
        let j = jax.get(&(peer_net.to_string(), "jit".to_string())).copied();
        println!(
            "| {net} | {ms:.1} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {} |",
            cell(eager),
            cell(cl),
            cell(comp),
            cell(j.map(|v| v.0)),
            ratio(ms, best),
            ratio(ms, j.map(|v| v.0)),
            mib(temp as f64),
            cell(j.map(|v| mib(v.1))),
            ratio(temp as f64, j.map(|v| v.1)),
        );
    }
}
