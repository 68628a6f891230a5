use jitfuse::prelude::*;

#[jit]
#[rustfmt::skip]
fn f(x: &Tensor) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) {
    let y = x.exp();
    (y.clone(), y.clone(), y.clone(), y.clone(), y.clone(), y.clone(), y.clone(), y.clone(), y.clone(), y.clone(), y.clone(), y.clone(), y)
}

fn main() {}
