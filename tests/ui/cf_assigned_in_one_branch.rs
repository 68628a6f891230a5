use jitfuse::prelude::*;

#[jit]
fn f(x: &Tensor, flag: bool) -> Tensor {
    let y;
    let z;
    if flag {
        y = x.exp();
        z = x.sin();
    } else {
        z = x.cos();
    }
    let w: Tensor;
    if x.sum_all().gt(0.0) {
        w = x.tanh();
    }
    y + z + w
}

fn main() {}
