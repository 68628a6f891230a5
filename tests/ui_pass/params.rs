// Every parameter kind: borrowed, owned (donated), f32 / f64 traced scalars,
// static usize / bool / derived enum; `mut` bindings; paths to `Tensor`.
#![deny(warnings)]
use jitfuse::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Act {
    Relu,
    Tanh,
}

#[jit]
fn borrowed(x: &Tensor, y: &jitfuse::Tensor) -> Tensor {
    x + y
}

#[jit]
fn owned(mut x: Tensor, y: &::jitfuse::Tensor) -> Tensor {
    x += y;
    x
}

#[jit]
fn sgd(w: &Tensor, dw: &Tensor, lr: f32) -> Tensor {
    w - lr * dw
}

#[jit]
fn scale64(x: &Tensor, s: f64) -> Tensor {
    x * s
}

#[jit]
fn statics(x: &Tensor, n: usize, twice: bool, act: Act) -> Tensor {
    let mut y = x.clone();
    for _ in 0..n {
        y = match act {
            Act::Relu => y.relu(),
            Act::Tanh => y.tanh(),
        };
    }
    if twice { &y + &y } else { y }
}

// `#[cfg]` applies to everything generated: a compiled-out function leaves
// nothing behind (its body would not even type-check here).
#[cfg(any())]
#[jit]
fn compiled_out(x: &Tensor) -> Tensor {
    x.no_such_method()
}

#[cfg(all())]
#[jit]
fn compiled_in(x: &Tensor) -> Tensor {
    x.exp()
}

// A raw identifier as the name.
#[jit]
fn r#loop(x: &Tensor) -> Tensor {
    x.exp()
}

fn main() {
    let x = Tensor::vector(&[1.0f32, -2.0]);
    let _: Tensor = borrowed(&x, &x);
    let _: Tensor = owned(x.clone(), &x);
    let _: Tensor = sgd(&x, &x, 0.1);
    let _: Tensor = scale64(&x, 2.0);
    let _: Tensor = statics(&x, 2, true, Act::Tanh);
    let _: Result<Tensor, Error> = statics::try_call(&x, 1, false, Act::Relu);
    let _ = compiled_in(&x);
    let _ = r#loop(&x);
    let _ = r#loop::cache_stats();
}
