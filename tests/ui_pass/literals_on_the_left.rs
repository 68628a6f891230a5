// Unsuffixed literals on the left of a tensor infer (to `f64` and `i32`) even
// when the result's type is needed at once, in plain code as in #[jit] bodies.
#![deny(warnings)]
use jitfuse::prelude::*;

fn plain(x: &Tensor) -> Tensor {
    let a = 0.5 * x;
    let b = 2 * x;
    let c = 1.0 - x.clone();
    let d = 3 / x.clone();
    a.tanh() + b.exp() + (0.25 * x).sqrt() + (1 + x).abs() + c.exp() + d.square()
}

#[jit]
fn staged(x: &Tensor) -> Tensor {
    let a = 0.5 * x;
    let b = 2 * x;
    a.tanh() + b.exp() + (4 - x.clone()).abs()
}

fn main() {
    let x = Tensor::vector(&[1.0f32, 2.0]);
    let _ = plain(&x);
    let _ = staged(&x);
}
