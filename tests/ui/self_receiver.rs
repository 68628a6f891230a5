use jitfuse::prelude::*;

// `Self` is neither a tree of tensors (traced) nor a static value (cache key).
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
