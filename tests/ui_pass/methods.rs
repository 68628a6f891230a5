// #[jit] on methods: `&self`/`self` of a tree is traced, of a static type is
// part of the cache key; companions are associated fns named after the method.
#![deny(warnings)]
use jitfuse::prelude::*;

#[derive(Tree, Clone)]
struct Mlp {
    w: Tensor,
    b: Tensor,
}

impl Mlp {
    /// Documented, borrowed tree receiver.
    #[jit]
    pub fn forward(&self, x: &Tensor) -> Tensor {
        (x.matmul(&self.w) + &self.b).relu()
    }

    // Owned receiver: donated; control flow in a method (`self` itself
    // cannot be loop state: rebind it).
    #[jit]
    fn step(self, g: &Mlp, lr: f32, n: usize) -> Mlp {
        let mut p = self;
        for _ in 0..n {
            p = p.zip_map(g, |w, dw| w - lr * dw);
        }
        p
    }

    #[jit]
    fn step_mut(mut self, g: &Mlp) -> Mlp {
        self.w = &self.w - &g.w;
        self
    }

    #[jit]
    fn scaled(self, s: f64) -> Mlp {
        self.map(|t| t * s)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Config {
    depth: usize,
    double: bool,
}

impl Config {
    // A static receiver: part of the cache key.
    #[jit]
    pub(crate) fn apply(&self, x: &Tensor) -> Tensor {
        let mut y = x.clone();
        for _ in 0..self.depth {
            y = y.tanh();
        }
        if self.double {
            &y + &y
        } else {
            y
        }
    }

    #[jit]
    fn consume(self, x: Tensor) -> Tensor {
        x * self.depth as f64
    }
}

fn main() {
    let m = Mlp {
        w: Tensor::from_vec(vec![1.0f32, 0.0, 0.0, 1.0], &[2, 2]).unwrap(),
        b: Tensor::vector(&[0.5f32, -0.5]),
    };
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2]).unwrap();
    let _ = m.forward(&x);
    let _ = m.forward_try_call(&x).unwrap();
    let _ = m.forward_lower(&x).unwrap();
    let _ = Mlp::forward_cache_stats();
    Mlp::forward_clear_cache();
    Mlp::forward_set_memory_budget(None);
    let _ = m.clone().step(&m, 0.1, 2);
    let _ = m.clone().scaled(2.0);
    let _ = m.clone().step_mut(&m);
    let c = Config {
        depth: 2,
        double: true,
    };
    let _ = c.apply(&x);
    let _ = c.clone().consume(x.clone());
    let _ = Config::apply_cache_stats();
}
