use jitfuse::prelude::*;

#[derive(Tree, Clone)]
struct P {
    w: Tensor,
}

impl P {
    #[jit]
    fn step(&mut self, x: &Tensor) -> Tensor {
        x * &self.w
    }
}

fn main() {}
