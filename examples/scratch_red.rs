use jitfuse::prelude::*;
use std::time::Instant;
#[jit]
fn softmax(x: &Tensor) -> Tensor {
    x.softmax(-1)
}
#[jit]
fn layernorm(x: &Tensor, g: &Tensor, b: &Tensor) -> Tensor {
    x.layer_norm(g, b, 1e-5, -1)
}
#[jit]
fn sum_rows(x: &Tensor) -> Tensor {
    x.sum(1)
}
#[jit]
fn mm(a: &Tensor, b: &Tensor) -> Tensor {
    a.matmul(b)
}
#[jit]
fn gelu(x: &Tensor) -> Tensor {
    x.gelu()
}
fn med(mut f: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..21)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[10]
}
fn main() {
    let x = Tensor::full(&[4096, 1024], 0.5, DType::F32);
    let g = Tensor::full(&[1024], 1.0, DType::F32);
    let bb = Tensor::full(&[1024], 0.0, DType::F32);
    let big = Tensor::full(&[4096, 4096], 0.5, DType::F32);
    let a = Tensor::full(&[1024, 1024], 0.5, DType::F32);
    let v = Tensor::full(&[4194304], 0.5, DType::F32);
    softmax(&x);
    layernorm(&x, &g, &bb);
    sum_rows(&big);
    mm(&a, &a);
    gelu(&v);
    println!("W1 gelu {:.2} ms", med(|| drop(gelu(&v))));
    println!("W3 softmax {:.2} ms", med(|| drop(softmax(&x))));
    println!(
        "W4 layernorm {:.2} ms",
        med(|| drop(layernorm(&x, &g, &bb)))
    );
    println!("W5 sum_rows {:.2} ms", med(|| drop(sum_rows(&big))));
    println!("W9 matmul {:.2} ms", med(|| drop(mm(&a, &a))));
    println!(
        "{}",
        softmax::lower(&x)
            .unwrap()
            .as_text()
            .split("// ---- cranelift")
            .next()
            .unwrap()
            .split("// ---- kernels")
            .nth(1)
            .unwrap()
    );
    println!(
        "{}",
        layernorm::lower(&x, &g, &bb)
            .unwrap()
            .as_text()
            .split("// ---- cranelift")
            .next()
            .unwrap()
            .split("// ---- kernels")
            .nth(1)
            .unwrap()
    );
}
