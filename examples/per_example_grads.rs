//! Per-example gradient norms of the MLP of `train_mlp.rs` (the red-wine
//! quality table), the first thing differentially private training and
//! data debugging need: the loss is written for one wine, `grad` takes its
//! gradient, and `vmap` maps that over a batch of 128 wines in one jitted
//! program. The same norms from a loop of 128 single-example gradients
//! (jitted too) check it, and the memory reports of both programs are
//! printed side by side; a third program clips each example's gradient and
//! averages them (DP-SGD's step), keeping every per-example gradient.
//!
//! Run: `cargo run --release --example per_example_grads`

use jitfuse::prelude::*;
use std::time::{Duration, Instant};

#[path = "shared/wine.rs"]
mod wine;
use wine::{loss, Mlp};

const BATCH: usize = 128;
const CLIP: f32 = 1.0;

/// The gradient of one wine's loss (`x` is `[features]`, `y` one-hot).
fn example_grad(p: &Mlp, x: &Tensor, y: &Tensor) -> Mlp {
    grad(|p: &Mlp| loss(p, x, y), p)
}

/// The 2-norm of a gradient, over all of its leaves.
fn norm(g: &Mlp) -> Tensor {
    g.leaves()
        .iter()
        .map(|w| w.square().sum_all())
        .reduce(|a, b| a + b)
        .unwrap()
        .sqrt()
}

/// `[BATCH]` norms: `vmap` of one example's gradient norm over the rows of
/// `xs` and `ys`, the parameters shared by the batch.
#[jit]
fn grad_norms(p: &Mlp, xs: &Tensor, ys: &Tensor) -> Tensor {
    let per_example = vmap(
        |(p, x, y): &(Mlp, Tensor, Tensor)| norm(&example_grad(p, x, y)),
        [None, Some(0), Some(0)],
        0,
    );
    per_example(&(p.clone(), xs.clone(), ys.clone()))
}

/// One example's gradient norm, for the loop.
#[jit]
fn grad_norm(p: &Mlp, x: &Tensor, y: &Tensor) -> Tensor {
    norm(&example_grad(p, x, y))
}

/// DP-SGD's gradient (without the noise): every example's gradient, stacked
/// along a leading batch axis of each leaf, clipped to norm `CLIP`, then
/// averaged.
#[jit]
fn clipped_mean_grad(p: &Mlp, xs: &Tensor, ys: &Tensor) -> Mlp {
    let per_example = vmap(
        |(p, x, y): &(Mlp, Tensor, Tensor)| example_grad(p, x, y),
        [None, Some(0), Some(0)],
        0,
    );
    let g = per_example(&(p.clone(), xs.clone(), ys.clone()));
    let squares = g
        .leaves()
        .iter()
        .map(|w| {
            let axes: Vec<isize> = (1..w.shape().len() as isize).collect();
            w.square().sum(axes.as_slice())
        })
        .reduce(|a, b| a + b)
        .unwrap();
    // [BATCH] scale factors min(1, CLIP / norm).
    let scale = (f64::from(CLIP) / (squares.sqrt() + 1e-12)).minimum(1.0);
    g.map(|w| {
        let mut shape = vec![BATCH as isize];
        shape.resize(w.shape().len(), 1);
        (w * scale.reshape(&shape)).mean(0)
    })
}

fn median(mut t: Vec<Duration>) -> f64 {
    t.sort();
    t[t.len() / 2].as_secs_f64() * 1e6
}

fn main() {
    let data = wine::load();
    let f = data.f;
    let p = wine::init_mlp(f);
    let (xs, ys) = data.batch(0, BATCH);
    let rows: Vec<(Tensor, Tensor)> = (0..BATCH)
        .map(|i| {
            let (x, y) = data.batch(i, 1);
            (
                x.reshape(&[f as isize]),
                y.reshape(&[wine::CLASSES as isize]),
            )
        })
        .collect();
    println!(
        "per-example gradient norms of the wine MLP ({f} -> {} -> {}), the first {BATCH} of {} wines\n",
        wine::HIDDEN,
        wine::CLASSES,
        data.n
    );

    // ---- the norms, vmapped and from a loop, and how long each takes ----
    let batched = grad_norms(&p, &xs, &ys).to_vec::<f32>().unwrap();
    let looped: Vec<f32> = rows
        .iter()
        .map(|(x, y)| grad_norm(&p, x, y).item::<f32>().unwrap())
        .collect();
    let worst = batched
        .iter()
        .zip(&looped)
        .map(|(a, b)| (a - b).abs() / b.abs().max(1e-6))
        .fold(0f32, f32::max);
    assert!(
        worst < 1e-4,
        "vmap and the loop agree: largest relative difference {worst}"
    );
    let (lo, hi) = batched
        .iter()
        .fold((f32::INFINITY, 0f32), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let mean = batched.iter().sum::<f32>() / BATCH as f32;
    println!(
        "norms: mean {mean:.4}, smallest {lo:.4}, largest {hi:.4}; \
         vmap and the loop agree to {worst:.1e} (relative)"
    );
    let runs = 200;
    let vmapped: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let _ = grad_norms(&p, &xs, &ys);
            t.elapsed()
        })
        .collect();
    let loop_times: Vec<Duration> = (0..runs / 10)
        .map(|_| {
            let t = Instant::now();
            for (x, y) in &rows {
                let _ = grad_norm(&p, x, y);
            }
            t.elapsed()
        })
        .collect();
    // Eagerly (no #[jit]): the batched ops run as cached compiled single ops.
    let eager_norms = vmap(
        |(p, x, y): &(Mlp, Tensor, Tensor)| norm(&example_grad(p, x, y)),
        [None, Some(0), Some(0)],
        0,
    );
    let args = (p.clone(), xs.clone(), ys.clone());
    let _ = eager_norms(&args);
    let eager: Vec<Duration> = (0..runs / 10)
        .map(|_| {
            let t = Instant::now();
            let _ = eager_norms(&args);
            t.elapsed()
        })
        .collect();
    let (v, l, e) = (median(vmapped), median(loop_times), median(eager));
    println!(
        "median time for the batch: vmap, jitted {v:.1} us; a loop of {BATCH} jitted \
         single-example calls {l:.1} us ({:.1}x); vmap eagerly {e:.1} us\n",
        l / v
    );

    // ---- what each program holds ----
    let batched_mem = grad_norms::lower(&p, &xs, &ys)
        .unwrap()
        .memory_analysis()
        .unwrap();
    let (x0, y0) = &rows[0];
    let single_mem = grad_norm::lower(&p, x0, y0)
        .unwrap()
        .memory_analysis()
        .unwrap();
    println!("memory of the vmapped norms (one call for the batch):\n{batched_mem}");
    println!("memory of one single-example norm (called {BATCH} times by the loop):\n{single_mem}");

    // ---- DP-SGD's clipped mean gradient keeps every example's gradient ----
    let clipped = clipped_mean_grad(&p, &xs, &ys);
    let clipped_norm = norm(&clipped).item::<f32>().unwrap();
    assert!(
        clipped_norm <= CLIP * 1.0001,
        "a mean of gradients clipped to {CLIP} has norm at most {CLIP}: {clipped_norm}"
    );
    let clip_mem = clipped_mean_grad::lower(&p, &xs, &ys)
        .unwrap()
        .memory_analysis()
        .unwrap();
    println!(
        "clipped mean gradient (norm {clipped_norm:.4} <= {CLIP}), which stacks all \
         {BATCH} per-example gradients:\n{clip_mem}"
    );
}
