use jitfuse::prelude::*;

#[jit]
fn f((a, b): (usize, usize), x: &Tensor) -> Tensor {
    x * (a + b) as f64
}

fn main() {}
