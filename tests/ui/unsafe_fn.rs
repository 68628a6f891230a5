use jitfuse::prelude::*;

#[jit]
unsafe fn f(x: &Tensor) -> Tensor {
    x.exp()
}

fn main() {}
