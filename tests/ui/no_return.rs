use jitfuse::prelude::*;

#[jit]
fn f(x: &Tensor) {
    let _ = x.exp();
}

fn main() {}
