use jitfuse::prelude::*;

#[jit]
fn f<T: Into<f64>>(x: &Tensor, s: T) -> Tensor {
    x * s.into()
}

fn main() {}
