use jitfuse::prelude::*;

#[derive(Tree, Clone)]
struct P {
    w: Tensor,
}

impl P {
    // An associated function without a receiver: its companion has no place.
    #[jit]
    fn new_like(x: &Tensor) -> Self {
        P { w: x.clone() }
    }
}

fn main() {}
