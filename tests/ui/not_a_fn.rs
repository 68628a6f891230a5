use jitfuse::prelude::*;

#[jit]
struct Model {
    w: Tensor,
}

fn main() {}
