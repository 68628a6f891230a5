use jitfuse::prelude::*;

#[jit]
fn f(xs: Vec<&Tensor>, pair: &(Tensor, &Tensor)) -> Tensor {
    xs[0].exp() + &pair.0
}

fn main() {}
