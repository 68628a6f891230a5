use jitfuse::prelude::*;

#[jit]
fn f(x: &Tensor) -> Vec<Tensor> {
    vec![x.exp()]
}

fn main() {}
