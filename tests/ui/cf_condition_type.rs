use jitfuse::prelude::*;

// Conditions are `bool` or a bool `Tensor`, never a number.
#[jit]
fn f(x: &Tensor, k: i32) -> Tensor {
    let mut y = x.clone();
    if k {
        y = y.exp();
    }
    let t = 0.5f32;
    while t {
        y = y.sin();
    }
    y
}

fn main() {}
