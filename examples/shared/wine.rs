//! The red-wine quality table and the MLP the examples train on it
//! (`train_mlp.rs`, `per_example_grads.rs`): 1599 wines x 11 measurements,
//! quality 3..8 as 6 classes, shipped inside the `linfa-datasets` crate (no
//! download at run time).

use jitfuse::prelude::*;

pub const HIDDEN: usize = 64;
pub const CLASSES: usize = 6;

#[derive(Tree, Clone)]
pub struct Mlp {
    pub w1: Tensor,
    pub b1: Tensor,
    pub w2: Tensor,
    pub b2: Tensor,
}

/// The logits of a batch of rows `[n, features]`, or of one row `[features]`.
pub fn logits(p: &Mlp, x: &Tensor) -> Tensor {
    (x.matmul(&p.w1) + &p.b1).relu().matmul(&p.w2) + &p.b2
}

/// Mean cross-entropy against one-hot labels (of one row: its own).
pub fn loss(p: &Mlp, x: &Tensor, y: &Tensor) -> Tensor {
    softmax_cross_entropy(&logits(p, x), y)
}

/// Standardised features `[n * f]` and classes 0..5, with `n` and `f`.
pub struct Wine {
    pub x: Vec<f32>,
    pub classes: Vec<i32>,
    pub n: usize,
    pub f: usize,
}

pub fn load() -> Wine {
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
    Wine { x, classes, n, f }
}

impl Wine {
    /// Rows `start..start + len` and their one-hot labels.
    pub fn batch(&self, start: usize, len: usize) -> (Tensor, Tensor) {
        let f = self.f;
        let xs =
            Tensor::from_vec(self.x[start * f..(start + len) * f].to_vec(), &[len, f]).unwrap();
        let ys = Tensor::from_vec(self.classes[start..start + len].to_vec(), &[len])
            .unwrap()
            .one_hot(CLASSES);
        (xs, ys)
    }
}

/// Deterministic normal-ish weights (xorshift, sum of uniforms).
pub fn init(rows: usize, cols: usize, seed: &mut u64) -> Tensor {
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

/// The model at its deterministic initialisation, for `f` features.
pub fn init_mlp(f: usize) -> Mlp {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    Mlp {
        w1: init(f, HIDDEN, &mut seed),
        b1: Tensor::zeros(&[HIDDEN], DType::F32),
        w2: init(HIDDEN, CLASSES, &mut seed),
        b2: Tensor::zeros(&[CLASSES], DType::F32),
    }
}
