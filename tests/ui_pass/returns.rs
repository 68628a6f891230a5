// Tuple returns, `lower`, `cache_stats`, `clear_cache`, `try_call`.
#![deny(warnings)]
use jitfuse::prelude::*;

#[jit]
fn one(x: &Tensor) -> (Tensor,) {
    (x.exp(),)
}

#[jit]
fn two(x: &Tensor) -> (Tensor, jitfuse::Tensor) {
    (x.exp(), x.ln())
}

#[jit]
fn eight(x: &Tensor) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) {
    (x + 1.0, x + 2.0, x + 3.0, x + 4.0, x + 5.0, x + 6.0, x + 7.0, x + 8.0)
}

fn main() {
    let x = Tensor::vector(&[1.0f32, 2.0]);
    let (_a,): (Tensor,) = one(&x);
    let (_a, _b): (Tensor, Tensor) = two(&x);
    let (_a, _b, _c, _d, _e, _f, _g, _h) = eight(&x);
    let r: Result<(Tensor, Tensor), Error> = two::try_call(&x);
    let _ = r;
    let l: Result<jitfuse::Lowered, Error> = two::lower(&x);
    let _ = l;
    let s: jitfuse::CacheStats = two::cache_stats();
    let _ = s;
    two::clear_cache();
}
