use jitfuse::prelude::*;

#[derive(Tree)]
struct Layer {
    w: Tensor,
    width: usize,
    b: Option<Tensor>,
}

#[derive(Tree)]
struct Pair(Tensor, Vec<f32>);

fn main() {}
