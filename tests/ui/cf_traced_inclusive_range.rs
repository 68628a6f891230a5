use jitfuse::prelude::*;

// Only `a..b` stages a counted loop on tensor bounds.
#[jit]
fn f(x: &Tensor, n: &Tensor) -> Tensor {
    let mut y = x.clone();
    for _ in Tensor::scalar(0i32)..=n.clone() {
        y = y.exp();
    }
    y
}

fn main() {}
