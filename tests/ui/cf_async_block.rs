use jitfuse::prelude::*;

#[jit]
fn f(x: &Tensor) -> Tensor {
    let fut = async { 1 };
    drop(fut);
    x.exp()
}

fn main() {}
