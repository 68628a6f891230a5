use jitfuse::prelude::*;

#[jit]
fn f(x: &Tensor, s: impl Into<f64>) -> Tensor {
    x * s.into()
}

fn main() {}
