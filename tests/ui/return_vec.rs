use jitfuse::prelude::*;

#[jit]
fn f(x: &Tensor) -> Vec<f32> {
    vec![x.item::<f32>().unwrap()]
}

fn main() {}

#[jit]
fn g(x: &Tensor) -> usize {
    x.len()
}
