use jitfuse::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Config {
    depth: usize,
}

#[jit]
fn f(x: &Tensor, cfg: &Config) -> Tensor {
    x * cfg.depth as f64
}

fn main() {}
