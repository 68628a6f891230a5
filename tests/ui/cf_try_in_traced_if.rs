use jitfuse::prelude::*;

fn maybe(t: &Tensor) -> Option<Tensor> {
    Some(t.clone())
}

// `?` inside a branch leaves the `if` (here the closure it is in).
#[jit]
fn f(x: &Tensor) -> Tensor {
    let g = |t: &Tensor| -> Option<Tensor> {
        let mut y = t.clone();
        if t.sum_all().gt(0.0) {
            y = maybe(t)?;
        }
        Some(y)
    };
    g(x).unwrap()
}

fn main() {}
