//! Convolutions at the shapes of the networks people train on CPUs, forward, input gradient
//! and weight gradient each, as rates against jitfuse's own f32 GEMM rate measured in the
//! same run, and against PyTorch (eager, channels last; and `torch.compile`) and JAX
//! (`lax.conv_general_dilated`, NHWC, jitted) measured by `benches/torch_conv.py` and
//! `benches/jax_conv.py` in the same run when they are installed (`JITFUSE_BENCH_TORCH=0`,
//! `JITFUSE_BENCH_JAX=0` skip them). `cargo bench --bench conv`.
//!
//! Rows: 3×3 stride-1 `Same` convolutions of ResNet-20 (16, 32, 64 features at 32², 16²,
//! 8², batch 128) and ResNet-18 (64 to 512 features at 56² to 7², batch 16), channels last.
//! `JITFUSE_BENCH_CONV=resnet20` keeps one family; `JITFUSE_BENCH_RUNS` sets the samples;
//! `JITFUSE_BENCH_BF16=1` adds each op on bf16 operands (its % of the f32 GEMM rate).

use jitfuse::prelude::*;
use jitfuse::{conv, ConvOptions, Padding};
use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

fn options() -> ConvOptions {
    ConvOptions {
        padding: Padding::Same,
        ..Default::default()
    }
}

#[jit]
fn forward(x: &Tensor, w: &Tensor) -> Tensor {
    conv(x, w, options())
}

#[jit]
fn input_grad(x: &Tensor, w: &Tensor, dy: &Tensor) -> Tensor {
    grad(|x: &Tensor| (conv(x, w, options()) * dy).sum_all(), x)
}

#[jit]
fn weight_grad(x: &Tensor, w: &Tensor, dy: &Tensor) -> Tensor {
    grad(|w: &Tensor| (conv(x, w, options()) * dy).sum_all(), w)
}

#[jit]
fn matmul(a: &Tensor, b: &Tensor) -> Tensor {
    a.matmul(b)
}

/// A convolution row: batch, side, input and output features (3×3 window).
#[derive(Clone, Copy)]
struct Shape {
    family: &'static str,
    n: usize,
    side: usize,
    c: usize,
    f: usize,
}

impl Shape {
    fn label(&self) -> String {
        format!("{}x{}²x{}→{}", self.n, self.side, self.c, self.f)
    }
    fn key(&self) -> String {
        format!("{}_{}_{}_{}", self.n, self.side, self.c, self.f)
    }
    fn flops(&self) -> f64 {
        2.0 * (self.n * self.side * self.side * self.f * 9 * self.c) as f64
    }
}

fn shapes() -> Vec<Shape> {
    let r20 = |side, c| Shape {
        family: "resnet20",
        n: 128,
        side,
        c,
        f: c,
    };
    let r18 = |side, c| Shape {
        family: "resnet18",
        n: 16,
        side,
        c,
        f: c,
    };
    vec![
        r20(32, 16),
        r20(16, 32),
        r20(8, 64),
        r18(56, 64),
        r18(28, 128),
        r18(14, 256),
        r18(7, 512),
    ]
}

fn filled(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut s = seed | 1;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// `(op, shape key) -> ms` from a peer's script, when the peer is installed.
fn peer(script: &str, skip: &str, keys: &[String]) -> HashMap<(String, String), f64> {
    let mut out = HashMap::new();
    if std::env::var(skip).as_deref() == Ok("0") {
        return out;
    }
    let path = format!("{}/benches/{script}", env!("CARGO_MANIFEST_DIR"));
    let Ok(o) = std::process::Command::new("python3")
        .args([path.as_str(), "--shapes", &keys.join(",")])
        .output()
    else {
        return out;
    };
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        println!(
            "({script} did not run: {})",
            err.lines().last().unwrap_or("")
        );
        return out;
    }
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if let [op, key, ms] = f[..] {
            if let Ok(ms) = ms.parse() {
                out.insert((op.to_string(), key.to_string()), ms);
            }
        }
    }
    out
}

fn main() {
    let runs: usize = std::env::var("JITFUSE_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(11);
    let family = std::env::var("JITFUSE_BENCH_CONV").ok();
    // bf16 rows beside the f32 ones (the same values rounded; jitfuse only).
    let bf16 = std::env::var("JITFUSE_BENCH_BF16").as_deref() == Ok("1");
    let shapes: Vec<Shape> = shapes()
        .into_iter()
        .filter(|s| family.as_deref().is_none_or(|f| f == s.family))
        .collect();
    let keys: Vec<String> = shapes.iter().map(|s| s.key()).collect();
    let torch = peer("torch_conv.py", "JITFUSE_BENCH_TORCH", &keys);
    let jax = peer("jax_conv.py", "JITFUSE_BENCH_JAX", &keys);
    if torch.is_empty() {
        println!("(PyTorch columns empty: `pip install torch` to measure it in the same run)");
    }
    if jax.is_empty() {
        println!(
            "(JAX columns empty: `pip install \"jax[cpu]==0.10.2\"` to measure it in the same run)"
        );
    }
    // The GEMM rate of this run: 1024³ f32.
    let (a, b) = (filled(&[1024, 1024], 1), filled(&[1024, 1024], 2));
    let gemm = || {
        let t = Instant::now();
        drop(black_box(matmul(&a, &b)));
        t.elapsed().as_secs_f64()
    };
    gemm();
    let mut g: Vec<f64> = (0..runs).map(|_| gemm()).collect();
    let gemm_rate = 2.0 * 1024f64.powi(3) / median(&mut g) / 1e9;
    println!("f32 GEMM 1024³: {gemm_rate:.0} GFLOP/s (the rate the % column divides by)\n");
    println!(
        "| shape (N x side² x C→F, 3×3) | op | jitfuse ms | GFLOP/s | % GEMM | PyTorch eager ms | torch.compile ms | JAX ms | jitfuse / best PyTorch | jitfuse / JAX |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for s in &shapes {
        let x = filled(&[s.n, s.side, s.side, s.c], 3);
        let w = filled(&[3, 3, s.c, s.f], 4);
        let dy = filled(&[s.n, s.side, s.side, s.f], 5);
        let half = |t: &Tensor| t.cast(DType::BF16);
        let (xh, wh, dyh) = (half(&x), half(&w), half(&dy));
        let mut ops: Vec<(&str, Box<dyn Fn()>)> = vec![
            ("forward", Box::new(|| drop(black_box(forward(&x, &w))))),
            (
                "input grad",
                Box::new(|| drop(black_box(input_grad(&x, &w, &dy)))),
            ),
            (
                "weight grad",
                Box::new(|| drop(black_box(weight_grad(&x, &w, &dy)))),
            ),
        ];
        if bf16 {
            ops.extend::<[(&str, Box<dyn Fn()>); 3]>([
                (
                    "forward bf16",
                    Box::new(|| drop(black_box(forward(&xh, &wh)))),
                ),
                (
                    "input grad bf16",
                    Box::new(|| drop(black_box(input_grad(&xh, &wh, &dyh)))),
                ),
                (
                    "weight grad bf16",
                    Box::new(|| drop(black_box(weight_grad(&xh, &wh, &dyh)))),
                ),
            ]);
        }
        let mut samples = vec![vec![]; ops.len()];
        for (_, f) in &ops {
            f();
        }
        // Interleaved: each sample of each op in turn.
        for _ in 0..runs {
            for (k, (_, f)) in ops.iter().enumerate() {
                let t = Instant::now();
                f();
                samples[k].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        for (k, (op, _)) in ops.iter().enumerate() {
            let ms = median(&mut samples[k]);
            let rate = s.flops() / ms / 1e6;
            let get = |m: &HashMap<(String, String), f64>, mode: &str| {
                m.get(&(format!("{op} {mode}"), s.key()))
                    .copied()
                    .unwrap_or(f64::NAN)
            };
            let (eager, compiled, xla) = (
                get(&torch, "eager"),
                get(&torch, "compiled"),
                get(&jax, "jit"),
            );
            let best = eager.min(compiled);
            let cell = |v: f64| {
                if v.is_nan() {
                    "—".to_string()
                } else {
                    format!("{v:.2}")
                }
            };
            let ratio = |v: f64| {
                if v.is_nan() {
                    "—".to_string()
                } else {
                    format!("{:.2}", ms / v)
                }
            };
            println!(
                "| {} | {op} | {ms:.2} | {rate:.0} | {:.0} % | {} | {} | {} | {} | {} |",
                s.label(),
                100.0 * rate / gemm_rate,
                cell(eager),
                cell(compiled),
                cell(xla),
                ratio(best),
                ratio(xla),
            );
        }
    }
}
