use jitfuse::prelude::*;

#[derive(Tree)]
struct Mlp {
    w: Tensor,
    b: Tensor,
}

#[jit]
fn f(p: &mut Mlp, x: &Tensor) -> Tensor {
    x * &p.w + &p.b
}

fn main() {}
