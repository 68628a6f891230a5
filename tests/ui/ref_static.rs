use jitfuse::prelude::*;

#[jit]
fn f(x: &Tensor, n: &usize) -> Tensor {
    x * *n as f64
}

fn main() {}
