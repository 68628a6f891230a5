//! The workloads of `../shared/anchors/` as jitted functions (bodies as in the anchors'
//! table) and their shapes: what `workloads.rs` times, and (the residual chain) what
//! `benches/memory.rs` measures in its four memory configurations.
#![allow(dead_code)]

use jitfuse::prelude::*;

pub const N: usize = 4 * 1024 * 1024; // W1, W2, chain
pub const R3: usize = 4096; // W3, W4 rows
pub const C3: usize = 1024; // W3, W4 columns
pub const N5: usize = 4096; // W5 is [N5, N5]
                            // W6: batch, inputs, hidden units, classes
pub const B6: usize = 256;
pub const I6: usize = 784;
pub const H6: usize = 512;
pub const O6: usize = 10;
pub const N9: usize = 1024; // W9 is [N9, N9] @ [N9, N9]
pub const TINY: usize = 4;
pub const DISPATCH_CALLS: usize = 10_000;
pub const COPY_BYTES: usize = 256 << 20;
pub const MIB: f64 = 1024.0 * 1024.0;

// ---------------------------------------------------------------------------
// The jitted functions (bodies as in the anchors' table)
// ---------------------------------------------------------------------------

// The bodies of W1-W5 as plain functions: called directly they run eagerly (each op a cached
// compiled program), which the bench's eager column times; the jitted forms trace them.

pub fn gelu(x: &Tensor) -> Tensor {
    0.5 * x * (1.0 + (0.797_884_560_8 * (x + 0.044_715 * x * x * x)).tanh())
}

pub fn axpby(a: &Tensor, b: &Tensor, c: &Tensor) -> Tensor {
    ((a * 2.0 + b) * c - a) / (1.0 + b * b)
}

pub fn softmax_rows(x: &Tensor) -> Tensor {
    let m = x.max_keepdims(-1);
    let e = (x - &m).exp();
    &e / e.sum_keepdims(-1)
}

pub fn layernorm_rows(x: &Tensor, gamma: &Tensor, beta: &Tensor) -> Tensor {
    let mean = x.mean_keepdims(-1);
    let d = x - &mean;
    let var = d.square().mean_keepdims(-1);
    d * (var + 1e-5).rsqrt() * gamma + beta
}

pub fn sum_rows(x: &Tensor) -> Tensor {
    x.sum(1)
}

#[jit]
pub fn w1_gelu(x: &Tensor) -> Tensor {
    gelu(x)
}

#[jit]
pub fn w2_axpby(a: &Tensor, b: &Tensor, c: &Tensor) -> Tensor {
    axpby(a, b, c)
}

#[jit]
pub fn w3_softmax(x: &Tensor) -> Tensor {
    softmax_rows(x)
}

#[jit]
pub fn w4_layernorm(x: &Tensor, gamma: &Tensor, beta: &Tensor) -> Tensor {
    layernorm_rows(x, gamma, beta)
}

#[jit]
pub fn w5_sum_rows(x: &Tensor) -> Tensor {
    sum_rows(x)
}

#[jit]
pub fn w6_mlp(
    x: &Tensor,
    w1: &Tensor,
    b1: &Tensor,
    w2: &Tensor,
    b2: &Tensor,
    y: &Tensor,
) -> Tensor {
    let h = (x.matmul(w1) + b1).relu();
    softmax_cross_entropy(&(h.matmul(w2) + b2), y)
}

/// W7: value and gradient of W6's loss w.r.t. (W1, b1, W2, b2).
#[jit]
pub fn w7_mlp_grad(
    x: &Tensor,
    w1: &Tensor,
    b1: &Tensor,
    w2: &Tensor,
    b2: &Tensor,
    y: &Tensor,
) -> (Tensor, (Tensor, Tensor, Tensor, Tensor)) {
    mlp_grad(x, w1, b1, w2, b2, y)
}

/// W7's body (called directly it runs eagerly: the bench's eager column).
pub fn mlp_grad(
    x: &Tensor,
    w1: &Tensor,
    b1: &Tensor,
    w2: &Tensor,
    b2: &Tensor,
    y: &Tensor,
) -> (Tensor, (Tensor, Tensor, Tensor, Tensor)) {
    value_and_grad(
        |p: &(Tensor, Tensor, Tensor, Tensor)| {
            let h = (x.matmul(&p.0) + &p.1).relu();
            softmax_cross_entropy(&(h.matmul(&p.2) + &p.3), y)
        },
        &(w1.clone(), b1.clone(), w2.clone(), b2.clone()),
    )
}

/// One residual tanh layer of W8.
pub fn layer(h: &Tensor, w: &Tensor) -> Tensor {
    h.matmul(w).tanh() + h
}

/// W8's loss, sum(h²) after the residual tanh layers `ws`: 0 plain, 1 checkpoint per layer,
/// 2 dots_saveable (whole loss), 3 nothing_saveable (whole loss), as `benches/jax_compare.py`.
pub fn w8_loss(ws: &[Tensor], x: &Tensor, mode: usize) -> Tensor {
    let body = |ws: &Vec<Tensor>| {
        let mut h = x.clone();
        for w in ws {
            h = if mode == 1 {
                checkpoint(|a: &(Tensor, Tensor)| layer(&a.0, &a.1), &(h, w.clone()))
            } else {
                layer(&h, w)
            };
        }
        h.square().sum_all()
    };
    let ws = ws.to_vec();
    match mode {
        2 => checkpoint_with(Policy::DotsSaveable, body, &ws),
        3 => checkpoint_with(Policy::NothingSaveable, body, &ws),
        _ => body(&ws),
    }
}

/// W8a: the gradient of `w8_loss` w.r.t. all weights, plain (the checkpointed variants are
/// measured by `benches/memory.rs` and tests/runtime/autodiff.rs).
#[jit]
pub fn w8_chain_grad(ws: &Vec<Tensor>, x: &Tensor) -> Vec<Tensor> {
    grad(|ws: &Vec<Tensor>| w8_loss(ws, x, 0), ws)
}

#[jit]
pub fn w9_matmul(a: &Tensor, b: &Tensor) -> Tensor {
    a.matmul(b)
}

#[jit]
pub fn tiny_add(x: &Tensor) -> Tensor {
    x + 1.0
}

/// 20 elementwise ops, no transcendentals (the same list in `chain_hand`, `chain_nd`).
#[jit]
pub fn chain20(x: &Tensor) -> Tensor {
    let y = x * 1.5; //  1
    let y = y + 0.25; //  2
    let y = y * x; //  3
    let y = y - 1.0; //  4
    let y = y.abs(); //  5
    let y = y + 1.0; //  6
    let y = y.sqrt(); //  7
    let y = y * 0.5; //  8
    let y = y - x; //  9
    let y = y.maximum(-2.0); // 10
    let y = y.minimum(2.0); // 11
    let y = y.square(); // 12
    let y = y + x; // 13
    let y = y * 0.125; // 14
    let y = -y; // 15
    let y = y + 3.0; // 16
    let y = y.recip(); // 17
    let y = y * x; // 18
    let y = y - 0.5; // 19
    y.abs() // 20
}

/// N-body: bodies, and the softening added to every squared distance.
pub const NB: usize = 1024;
pub const NB_EPS: f32 = 1e-2;

/// N-body forces over positions `[NB, 3]`: displacements `[NB, NB, 3]`, squared distances
/// summed over the short axis, forces summed over the second axis.
#[jit]
pub fn nbody(p: &Tensor) -> Tensor {
    let d = p.unsqueeze(0) - p.unsqueeze(1);
    let r2 = (&d * &d).sum(-1) + NB_EPS as f64;
    let inv = r2.rsqrt();
    let inv_r3 = &inv * &inv * &inv;
    (&d * inv_r3.unsqueeze(-1)).sum(1)
}

/// The same forces over three coordinate arrays `[NB]` (the form to match).
#[jit]
pub fn nbody_xyz(x: &Tensor, y: &Tensor, z: &Tensor) -> Vec<Tensor> {
    let (dx, dy, dz) = (
        x.unsqueeze(0) - x.unsqueeze(1),
        y.unsqueeze(0) - y.unsqueeze(1),
        z.unsqueeze(0) - z.unsqueeze(1),
    );
    let r2 = &dx * &dx + &dy * &dy + &dz * &dz + NB_EPS as f64;
    let inv = r2.rsqrt();
    let inv_r3 = &inv * &inv * &inv;
    vec![
        (dx * &inv_r3).sum(1),
        (dy * &inv_r3).sum(1),
        (dz * &inv_r3).sum(1),
    ]
}
