use jitfuse::prelude::*;

// Every problem is reported at once, each at its own tokens.
#[jit]
const unsafe fn f<T>(&self, w: &mut Tensor, (a, b): (f32, f32), v: Vec<Tensor>, n: &usize) -> Option<Tensor> {
    None
}

fn main() {}
