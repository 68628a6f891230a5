// `#[jit]` inside a block (as in every doctest): the body and the signature
// see the block's items and imports.
#![deny(warnings)]

fn main() {
    use jitfuse::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    enum Mode {
        Exp,
        Abs,
    }

    fn helper(x: &Tensor) -> Tensor {
        x * 2.0
    }

    /// Local and documented.
    #[jit]
    fn local(x: &Tensor, mode: Mode) -> Tensor {
        match mode {
            Mode::Exp => helper(x).exp(),
            Mode::Abs => helper(x).abs(),
        }
    }

    let x = Tensor::vector(&[1.0f32, -2.0]);
    let _ = local(&x, Mode::Exp);
    let _ = local::try_call(&x, Mode::Abs).unwrap();
    assert_eq!(local::cache_stats().misses, 2);
}
