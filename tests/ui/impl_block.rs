use jitfuse::prelude::*;

struct Model;

#[jit]
impl Model {
    fn forward(&self, x: &Tensor) -> Tensor {
        x.relu()
    }
}

fn main() {}
