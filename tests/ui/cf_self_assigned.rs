use jitfuse::prelude::*;

#[derive(Tree, Clone)]
struct P {
    w: Tensor,
}

impl P {
    #[jit]
    fn step(mut self, n: usize) -> P {
        for _ in 0..n {
            self.w = self.w.exp();
        }
        self
    }
}

fn main() {}
