use jitfuse::prelude::*;

#[jit]
fn f(x: &Tensor, n: usize) -> Tensor {
    let k = unsafe { std::ptr::read(&n) };
    x * k as f64
}

fn main() {}
