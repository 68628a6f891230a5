use jitfuse::prelude::*;

#[derive(Tree)]
enum Params {
    Small(Tensor),
    Large { w: Tensor, b: Tensor },
}

#[derive(Tree)]
union Bits {
    a: u32,
    b: f32,
}

fn main() {}
