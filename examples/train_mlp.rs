//! Train an MLP on the red-wine quality table (1599 wines x 11 measurements,
//! quality 3..8 as 6 classes), shipped inside the `linfa-datasets` crate: no
//! download at run time. The training step is one jitted function taking the
//! parameters by value (donated: the new parameters are written into the old
//! buffers) and returning the updated tree and the loss.
//!
//! Run: `cargo run --release --example train_mlp`

use jitfuse::prelude::*;
use std::time::{Duration, Instant};

const HIDDEN: usize = 64;
const CLASSES: usize = 6;
const BATCH: usize = 128;
const EPOCHS: usize = 30;

#[derive(Tree, Clone)]
struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

fn logits(p: &Mlp, x: &Tensor) -> Tensor {
    (x.matmul(&p.w1) + &p.b1).relu().matmul(&p.w2) + &p.b2
}

fn loss(p: &Mlp, x: &Tensor, y: &Tensor) -> Tensor {
    softmax_cross_entropy(&logits(p, x), y)
}

#[jit]
fn train_step(p: Mlp, x: &Tensor, y: &Tensor, lr: f32) -> (Mlp, Tensor) {
    let (l, g) = value_and_grad(|p: &Mlp| loss(p, x, y), &p);
    (p.zip_map(&g, |w, dw| w - lr * dw), l)
}

#[jit]
fn accuracy(p: &Mlp, x: &Tensor, labels: &Tensor) -> Tensor {
    logits(p, x)
        .argmax(-1)
        .eq(labels)
        .cast(DType::F32)
        .mean_all()
}

/// Deterministic normal-ish weights (xorshift, sum of uniforms).
fn init(rows: usize, cols: usize, seed: &mut u64) -> Tensor {
    let scale = (2.0 / rows as f32).sqrt();
    let v: Vec<f32> = (0..rows * cols)
        .map(|_| {
            let mut s = 0.0;
            for _ in 0..4 {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                s += (*seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            }
            s * scale
        })
        .collect();
    Tensor::from_vec(v, &[rows, cols]).unwrap()
}

fn main() {
    // ---- the data: standardised features, quality 3..8 -> class 0..5 ----
    let ds = linfa_datasets::winequality();
    let n = ds.targets.len();
    let f = ds.records.ncols();
    let rec: Vec<f64> = ds.records.iter().copied().collect();
    let mut x = vec![0f32; n * f];
    for j in 0..f {
        let col: Vec<f64> = (0..n).map(|i| rec[i * f + j]).collect();
        let mean = col.iter().sum::<f64>() / n as f64;
        let std = (col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64)
            .sqrt()
            .max(1e-9);
        for i in 0..n {
            x[i * f + j] = ((col[i] - mean) / std) as f32;
        }
    }
    let classes: Vec<i32> = ds
        .targets
        .iter()
        .map(|&q| (q as i32 - 3).clamp(0, CLASSES as i32 - 1))
        .collect();
    let x_all = Tensor::from_vec(x.clone(), &[n, f]).unwrap();
    let labels_all = Tensor::from_vec(classes.clone(), &[n]).unwrap();
    let batches: Vec<(Tensor, Tensor)> = (0..n / BATCH)
        .map(|b| {
            let xs = Tensor::from_vec(x[b * BATCH * f..(b + 1) * BATCH * f].to_vec(), &[BATCH, f])
                .unwrap();
            let ys = Tensor::from_vec(classes[b * BATCH..(b + 1) * BATCH].to_vec(), &[BATCH])
                .unwrap()
                .one_hot(CLASSES);
            (xs, ys)
        })
        .collect();
    println!(
        "winequality-red: {n} wines, {f} features, {CLASSES} classes; {} batches of {BATCH}\n",
        batches.len()
    );

    // ---- the model ----
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut p = Mlp {
        w1: init(f, HIDDEN, &mut seed),
        b1: Tensor::zeros(&[HIDDEN], DType::F32),
        w2: init(HIDDEN, CLASSES, &mut seed),
        b2: Tensor::zeros(&[CLASSES], DType::F32),
    };
    let lr = 0.1f32;

    // ---- training ----
    let mut step_times: Vec<Duration> = Vec::new();
    let mut donated = 0;
    let mut first_loss = f32::NAN;
    let mut last_loss = f32::NAN;
    for epoch in 0..EPOCHS {
        let mut total = 0.0;
        for (xs, ys) in &batches {
            let before = p.w1.storage_addr();
            let t = Instant::now();
            let (next, l) = train_step(p, xs, ys, lr);
            step_times.push(t.elapsed());
            donated += (next.w1.storage_addr() == before) as usize;
            p = next;
            total += l.item::<f32>().unwrap();
        }
        let mean = total / batches.len() as f32;
        if epoch == 0 {
            first_loss = mean;
        }
        last_loss = mean;
        if epoch % 5 == 0 || epoch == EPOCHS - 1 {
            let acc = accuracy(&p, &x_all, &labels_all).item::<f32>().unwrap();
            println!(
                "epoch {epoch:2}: mean loss {mean:.4}, accuracy {:.1} %",
                100.0 * acc
            );
        }
    }
    step_times.sort();
    let median = step_times[step_times.len() / 2];
    println!(
        "\n{} steps, median {:.1} us per step (the first, with tracing and compilation: {:.1} ms); \
         parameters donated in {donated} of them",
        step_times.len(),
        median.as_secs_f64() * 1e6,
        step_times.last().unwrap().as_secs_f64() * 1e3
    );
    assert!(
        last_loss < first_loss,
        "the loss falls: {first_loss} -> {last_loss}"
    );

    // ---- memory: the step's report, free and under a budget ----
    let (xb, yb) = &batches[0];
    let free = train_step::lower(p.clone(), xb, yb, lr)
        .unwrap()
        .compile()
        .unwrap()
        .memory_analysis();
    println!("\nmemory of one step, no budget:\n{free}");
    // The automatic budget (checkpointed segments, Chen et al. 2016), a
    // budget just below the free peak, then budgets one hidden activation
    // apart further down, until one is missed (the message says by how much
    // and what the minimum reachable peak is). The free peak is at the
    // backward matmul producing the hidden cotangent dh while the hidden
    // activation h waits for the ReLU's backward: the budget pass recomputes
    // h (x @ w1 + b1, relu) after that matmul, which saves what else is live
    // there (the logits' cotangent). No budget a whole activation lower can
    // be met: the ReLU's backward reads h (or its mask) and dh at once, so
    // two [BATCH, HIDDEN] buffers are live at that step whatever is
    // recomputed.
    let step = BATCH * HIDDEN * 4;
    let budgets = [jitfuse::AUTO_MEMORY_BUDGET, free.peak_bytes - 1]
        .into_iter()
        .chain((1..).map(|k| free.peak_bytes.saturating_sub(k * step)));
    for budget in budgets {
        let name = if budget == jitfuse::AUTO_MEMORY_BUDGET {
            "automatic budget".to_string()
        } else {
            format!("budget of {budget} bytes")
        };
        train_step::set_memory_budget(Some(budget));
        match train_step::lower(p.clone(), xb, yb, lr).and_then(|l| l.compile()) {
            Ok(c) => {
                let (mut q, mut times) = (p.clone(), Vec::new());
                for (x, y) in batches.iter().take(50) {
                    let t = Instant::now();
                    let (next, _) = train_step(q, x, y, lr);
                    times.push(t.elapsed());
                    q = next;
                }
                times.sort();
                println!(
                    "{name} met, median {:.1} us per step:\n{}",
                    times[times.len() / 2].as_secs_f64() * 1e6,
                    c.memory_analysis()
                );
            }
            Err(e) => {
                println!("{name}: {e}");
                if budget != jitfuse::AUTO_MEMORY_BUDGET {
                    break;
                }
            }
        }
    }
    train_step::set_memory_budget(None);
}
