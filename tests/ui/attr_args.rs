use jitfuse::prelude::*;

#[jit(static_argnums = 1)]
fn f(x: &Tensor, n: usize) -> Tensor {
    x * n as f64
}

fn main() {}
