use jitfuse::prelude::*;

struct Model {
    w: Tensor,
}

impl Model {
    #[jit]
    fn forward(&self, x: &Tensor) -> Tensor {
        x * &self.w
    }
}

fn main() {}
