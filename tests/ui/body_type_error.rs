use jitfuse::prelude::*;

// Errors in the body point at the user's tokens, as without #[jit].
#[jit]
fn f(x: &Tensor) -> Tensor {
    let n: usize = x;
    x.exp() * n as f64
}

fn main() {}
