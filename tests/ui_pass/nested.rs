// A #[jit] function calling another one (inlined while tracing); a
// parameter named like generated locals would be; names that shadow.
#![deny(warnings)]
use jitfuse::prelude::*;

#[jit]
fn inner(x: &Tensor) -> Tensor {
    x.tanh()
}

#[jit]
fn outer(x: &Tensor, args: &Tensor, body: f32, k: usize) -> Tensor {
    let value = inner(x) + inner::try_call(args).unwrap();
    let try_call = value * body;
    try_call * k as f64
}

fn main() {
    let x = Tensor::vector(&[1.0f32, 2.0]);
    let _ = outer(&x, &x, 1.5, 3);
}
