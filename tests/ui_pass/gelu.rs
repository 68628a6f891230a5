// Unsuffixed literals must infer on both sides of a tensor.
#![deny(warnings)]
use jitfuse::prelude::*;

/// GELU, tanh approximation.
#[jit]
#[inline]
pub fn gelu(x: &Tensor) -> Tensor {
    0.5 * x * (1.0 + (0.797_884_56 * (x + 0.044_715 * x * x * x)).tanh())
}

#[jit]
fn rms(x: &Tensor) -> Tensor {
    x / (x * x + 1e-5).sqrt()
}

fn main() {
    let x = Tensor::vector(&[1.0f32, 2.0]);
    let _ = gelu(&x);
    let _ = rms(&x);
}
