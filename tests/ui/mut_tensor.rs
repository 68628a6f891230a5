use jitfuse::prelude::*;

#[jit]
fn step(w: &mut Tensor, dw: &Tensor) -> Tensor {
    *w = &*w - dw;
    w.clone()
}

fn main() {}
