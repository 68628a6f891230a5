use jitfuse::prelude::*;

// `loop` stays plain Rust: its only exit is an `if` on a traced tensor.
#[jit]
fn f(x: &Tensor) -> Tensor {
    let mut y = x.clone();
    loop {
        y = &y * 0.5;
        if y.sum_all().lt(1.0) {
            break;
        }
    }
    y
}

fn main() {}
