use jitfuse::prelude::*;

// A usize counter cannot be an output of a staged `if`: it is no tensor.
#[jit]
fn f(x: &Tensor) -> Tensor {
    let mut y = x.clone();
    let mut count = 0usize;
    if x.sum_all().gt(0.0) {
        y = y.exp();
        count += 1;
    }
    y * count as f64
}

fn main() {}
