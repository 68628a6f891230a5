// `pub fn` in a `pub mod`, used from outside; `pub(crate)`; a private fn
// used from a child module; signature types from the user's scope,
// including `self::` and `super::` paths.
#![deny(warnings)]

pub mod layers {
    use jitfuse::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    pub struct Config {
        pub depth: usize,
    }

    /// Documented: the companion module gets the docs too.
    #[jit]
    pub fn dense(x: &Tensor, cfg: self::Config) -> Tensor {
        let mut y = x.clone();
        for _ in 0..cfg.depth {
            y = y.relu();
        }
        y
    }

    #[jit]
    pub(crate) fn crate_only(x: &Tensor) -> Tensor {
        x.exp()
    }

    #[jit]
    fn private(x: &Tensor) -> Tensor {
        x.abs() + inner::for_parent(x) + inner::for_layers::try_call(x).unwrap()
    }

    pub mod inner {
        use jitfuse::prelude::*;

        #[jit]
        pub(super) fn for_parent(x: &Tensor) -> Tensor {
            x.exp()
        }

        #[jit]
        pub(in crate::layers) fn for_layers(x: &Tensor) -> Tensor {
            x.exp()
        }

        #[jit]
        pub fn uses_super(x: &Tensor, cfg: super::Config) -> Tensor {
            super::private(x) + super::private::try_call(x).unwrap() * cfg.depth as f64
        }
    }
}

fn main() {
    use jitfuse::Tensor;
    let x = Tensor::vector(&[1.0f32, -2.0]);
    let cfg = layers::Config { depth: 2 };
    let _ = layers::dense(&x, cfg.clone());
    let _ = layers::dense::try_call(&x, cfg.clone()).unwrap();
    let _ = layers::dense::lower(&x, cfg.clone()).unwrap();
    let _ = layers::dense::cache_stats();
    layers::dense::clear_cache();
    let _ = layers::crate_only(&x);
    let _ = layers::crate_only::cache_stats();
    let _ = layers::inner::uses_super(&x, cfg);
}
