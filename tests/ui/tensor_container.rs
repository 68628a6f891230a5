use jitfuse::prelude::*;

#[jit]
fn f(xs: Vec<Tensor>) -> Tensor {
    xs[0].exp()
}

fn main() {}
