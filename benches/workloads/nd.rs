//! The `ndarray` baselines: eager code as a Rust user writes it (NumPy style).

use super::defs::*;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};

pub fn w1_nd(x: ArrayView1<f32>) -> Array1<f32> {
    0.5 * &x * (1.0 + ((&x + 0.044_715 * &x * &x * &x) * 0.797_884_56).mapv_into(f32::tanh))
}

pub fn w2_nd(a: ArrayView1<f32>, b: ArrayView1<f32>, c: ArrayView1<f32>) -> Array1<f32> {
    ((&a * 2.0 + &b) * &c - &a) / (1.0 + &b * &b)
}

pub fn w3_nd(x: ArrayView2<f32>) -> Array2<f32> {
    let m = x.map_axis(Axis(1), |r| r.fold(f32::NEG_INFINITY, |a, &v| a.max(v)));
    let e = (&x - &m.insert_axis(Axis(1))).mapv_into(f32::exp);
    let s = e.sum_axis(Axis(1)).insert_axis(Axis(1));
    e / s
}

pub fn w4_nd(x: ArrayView2<f32>, gamma: ArrayView1<f32>, beta: ArrayView1<f32>) -> Array2<f32> {
    let mean = x.mean_axis(Axis(1)).unwrap().insert_axis(Axis(1));
    let d = &x - &mean;
    let var = d
        .mapv(|v| v * v)
        .mean_axis(Axis(1))
        .unwrap()
        .insert_axis(Axis(1));
    d / (var + 1e-5).mapv_into(f32::sqrt) * gamma + beta
}

pub fn w5_nd(x: ArrayView2<f32>) -> Array1<f32> {
    x.sum_axis(Axis(1))
}

pub fn w6_nd(
    x: ArrayView2<f32>,
    w1: ArrayView2<f32>,
    b1: ArrayView1<f32>,
    w2: ArrayView2<f32>,
    b2: ArrayView1<f32>,
    y: ArrayView2<f32>,
) -> f32 {
    let h = (x.dot(&w1) + b1).mapv_into(|v| v.max(0.0));
    let logits = h.dot(&w2) + b2;
    let m = logits
        .map_axis(Axis(1), |r| r.fold(f32::NEG_INFINITY, |a, &v| a.max(v)))
        .insert_axis(Axis(1));
    let shifted = logits - m;
    let lse = shifted
        .mapv(f32::exp)
        .sum_axis(Axis(1))
        .mapv_into(f32::ln)
        .insert_axis(Axis(1));
    -(&y * (shifted - lse)).sum() / B6 as f32
}

pub fn chain_nd(x: ArrayView1<f32>) -> Array1<f32> {
    let y = &x * 1.5;
    let y = y + 0.25;
    let y = y * &x;
    let y = y - 1.0;
    let y = y.mapv_into(f32::abs);
    let y = y + 1.0;
    let y = y.mapv_into(f32::sqrt);
    let y = y * 0.5;
    let y = y - &x;
    let y = y.mapv_into(|v| v.max(-2.0));
    let y = y.mapv_into(|v| v.min(2.0));
    let y = y.mapv_into(|v| v * v);
    let y = y + &x;
    let y = y * 0.125;
    let y = -y;
    let y = y + 3.0;
    let y = y.mapv_into(f32::recip);
    let y = y * &x;
    let y = y - 0.5;
    y.mapv_into(f32::abs)
}
