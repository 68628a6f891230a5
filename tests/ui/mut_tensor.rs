use jitfuse::prelude::*;

#[jit]
fn step(w: &mut Tensor, dw: &Tensor) -> Tensor {
    w - dw
}

fn main() {}
