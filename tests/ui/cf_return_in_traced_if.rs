use jitfuse::prelude::*;

// `return` out of a branch cannot be staged: the condition must be a bool.
#[jit]
fn f(x: &Tensor) -> Tensor {
    if x.sum_all().gt(0.0) {
        return x.exp();
    }
    x.clone()
}

fn main() {}
