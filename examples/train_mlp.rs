//! Train an MLP on the red-wine quality table (1599 wines x 11 measurements,
//! quality 3..8 as 6 classes), shipped inside the `linfa-datasets` crate: no
//! download at run time. The training step is one jitted function taking the
//! parameters by value (donated: the new parameters are written into the old
//! buffers) and returning the updated tree and the loss.
//!
//! Run: `cargo run --release --example train_mlp`

use jitfuse::prelude::*;
use std::time::{Duration, Instant};

const BATCH: usize = 128;
const EPOCHS: usize = 30;

#[path = "shared/wine.rs"]
mod wine;
use wine::{logits, loss, Mlp, CLASSES, HIDDEN};

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

fn main() {
    // ---- the data: standardised features, quality 3..8 -> class 0..5 ----
    let data = wine::load();
    let (n, f) = (data.n, data.f);
    let (x_all, _) = data.batch(0, n);
    let labels_all = Tensor::from_vec(data.classes.clone(), &[n]).unwrap();
    let batches: Vec<(Tensor, Tensor)> = (0..n / BATCH)
        .map(|b| data.batch(b * BATCH, BATCH))
        .collect();
    println!(
        "winequality-red: {n} wines, {f} features, {CLASSES} classes; {} batches of {BATCH}\n",
        batches.len()
    );

    // ---- the model ----
    let mut p = wine::init_mlp(f);
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
