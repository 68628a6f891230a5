use jitfuse::prelude::*;

#[jit]
fn f(x: &Tensor, n: usize) -> Tensor {
    let mut y;
    for i in 0..n {
        y = x * i as f64;
    }
    y
}

fn main() {}
