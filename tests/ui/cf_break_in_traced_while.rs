use jitfuse::prelude::*;

// A staged loop exits only through its condition.
#[jit]
fn f(x: &Tensor) -> Tensor {
    let mut y = x.clone();
    while y.sum_all().gt(1.0) {
        y = &y * 0.5;
        if y.sum_all().lt(0.1) {
            break;
        }
    }
    y
}

fn main() {}
