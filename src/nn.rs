//! Layers as parameter trees: each is a `#[derive(Tree)]` struct of tensors (so
//! `value_and_grad`, the optimisers, `save`/`load` and `#[jit]` take it as it is) with an
//! initialiser and an `apply`. State that is not trained (batch norm's running averages) is
//! a tree of its own, passed in and returned, as flax's `batch_stats` collection.
//!
//! The initialisers are PyTorch's defaults (`nn.Linear`, `nn.Conv2d`: weights and biases
//! uniform in `±1/√fan_in`; batch and group norm scale 1, bias 0), so a model here and
//! the same model in PyTorch start from the same distribution.

use crate::{
    batch_norm_eval, batch_norm_train, conv, group_norm, random, ConvOptions, DType, Key, Tensor,
    Tree,
};

pub use crate::random::dropout;

/// `U(−1/√fan_in, 1/√fan_in)` of `shape` in f32.
fn fan_in_uniform(key: &Key, shape: &[usize], fan_in: usize) -> Tensor {
    let b = 1.0 / (fan_in.max(1) as f64).sqrt();
    random::uniform(key, shape, DType::F32, -b, b)
}

/// A fully connected layer: `x @ w + b`, `w [in, out]`, `b [out]`.
#[derive(Tree, Clone, Debug)]
pub struct Dense {
    pub w: Tensor,
    pub b: Tensor,
}

impl Dense {
    pub fn init(key: &Key, inputs: usize, outputs: usize) -> Dense {
        let k = key.split(2);
        Dense {
            w: fan_in_uniform(&k[0], &[inputs, outputs], inputs),
            b: fan_in_uniform(&k[1], &[outputs], inputs),
        }
    }

    #[track_caller]
    pub fn apply(&self, x: &Tensor) -> Tensor {
        x.matmul(&self.w) + &self.b
    }
}

/// A convolution with an optional bias (channels last: `w [window.., in, out]`, `b [out]`).
#[derive(Tree, Clone, Debug)]
pub struct Conv {
    pub w: Tensor,
    pub b: Option<Tensor>,
}

impl Conv {
    /// A kernel of `window` (one entry per spatial axis) from `inputs` to `outputs`
    /// features, with a bias.
    pub fn init(key: &Key, window: &[usize], inputs: usize, outputs: usize) -> Conv {
        let k = key.split(2);
        let fan_in = inputs * window.iter().product::<usize>();
        Conv {
            b: Some(fan_in_uniform(&k[1], &[outputs], fan_in)),
            ..Conv::init_without_bias(&k[0], window, inputs, outputs)
        }
    }

    /// The same without a bias (before a batch norm, whose shift replaces it).
    pub fn init_without_bias(key: &Key, window: &[usize], inputs: usize, outputs: usize) -> Conv {
        let mut shape = window.to_vec();
        shape.extend([inputs, outputs]);
        let fan_in = inputs * window.iter().product::<usize>();
        Conv {
            w: fan_in_uniform(key, &shape, fan_in),
            b: None,
        }
    }

    #[track_caller]
    pub fn apply(&self, x: &Tensor, options: ConvOptions) -> Tensor {
        let y = conv(x, &self.w, options);
        match &self.b {
            Some(b) => y + b,
            None => y,
        }
    }
}

/// Batch normalisation's trained scale and shift, `[C]` each.
#[derive(Tree, Clone, Debug)]
pub struct BatchNorm {
    pub scale: Tensor,
    pub bias: Tensor,
}

/// Batch normalisation's running averages of the batch mean and variance, `[C]` each.
#[derive(Tree, Clone, Debug)]
pub struct BatchStats {
    pub mean: Tensor,
    pub var: Tensor,
}

impl BatchNorm {
    /// The running averages' decay (PyTorch's `momentum = 0.1`).
    pub const MOMENTUM: f64 = 0.9;
    pub const EPS: f64 = 1e-5;

    /// Scale 1 and shift 0, running mean 0 and variance 1.
    pub fn init(features: usize) -> (BatchNorm, BatchStats) {
        let (zeros, ones) = (
            Tensor::zeros(&[features], DType::F32),
            Tensor::ones(&[features], DType::F32),
        );
        (
            BatchNorm {
                scale: ones.clone(),
                bias: zeros.clone(),
            },
            BatchStats {
                mean: zeros,
                var: ones,
            },
        )
    }

    /// Training mode: normalised by the batch's statistics, which update the running ones.
    #[track_caller]
    pub fn train(&self, x: &Tensor, stats: &BatchStats) -> (Tensor, BatchStats) {
        let (y, mean, var) = batch_norm_train(
            x,
            &self.scale,
            &self.bias,
            (&stats.mean, &stats.var),
            Self::MOMENTUM,
            Self::EPS,
        );
        (y, BatchStats { mean, var })
    }

    /// Evaluation mode: normalised by the running statistics.
    #[track_caller]
    pub fn eval(&self, x: &Tensor, stats: &BatchStats) -> Tensor {
        batch_norm_eval(
            x,
            &self.scale,
            &self.bias,
            (&stats.mean, &stats.var),
            Self::EPS,
        )
    }
}

/// Group normalisation's scale and shift, `[C]` each.
#[derive(Tree, Clone, Debug)]
pub struct GroupNorm {
    pub scale: Tensor,
    pub bias: Tensor,
}

impl GroupNorm {
    pub fn init(features: usize) -> GroupNorm {
        GroupNorm {
            scale: Tensor::ones(&[features], DType::F32),
            bias: Tensor::zeros(&[features], DType::F32),
        }
    }

    #[track_caller]
    pub fn apply(&self, x: &Tensor, groups: usize) -> Tensor {
        group_norm(x, groups, &self.scale, &self.bias, 1e-5)
    }
}
