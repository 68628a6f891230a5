use jitfuse::prelude::*;

#[jit]
async fn f(x: &Tensor) -> Tensor {
    x.exp()
}

fn main() {}
