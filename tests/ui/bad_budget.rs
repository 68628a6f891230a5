use jitfuse::prelude::*;

#[jit(memory_budget = "64 parsecs")]
fn f(x: &Tensor) -> Tensor {
    x * 2.0
}

fn main() {}
