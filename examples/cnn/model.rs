//! The two networks of the example, channels last on `[N, 28, 28, 1]` images.
//!
//! - [`Cnn`]: the network of Fashion-MNIST's own benchmark: conv 5×5, 32 features, `Same`
//!   + ReLU, max-pool 2; conv 5×5, 64 features + ReLU, max-pool 2; dense 1024 + ReLU;
//!   dense 10.
//! - [`ResNet`]: ResNet-20's shape (He et al. 2016, the CIFAR variant): a 3×3 stem of 16
//!   features, three stages of three basic blocks (16, 32, 64 features; the first block
//!   of the second and third stage strided by 2 with a 1×1 projection), batch norm after
//!   every convolution, global average pool, dense 10.

use jitfuse::nn::{BatchNorm, BatchStats, Conv, Dense};
use jitfuse::prelude::*;
use jitfuse::{avg_pool, checkpoint_with, max_pool, ConvOptions, Padding, Policy};

fn same(stride: usize) -> ConvOptions {
    ConvOptions {
        strides: vec![stride, stride],
        padding: Padding::Same,
        ..Default::default()
    }
}

#[derive(Tree, Clone, Debug)]
pub struct Cnn {
    pub conv1: Conv,
    pub conv2: Conv,
    pub fc1: Dense,
    pub fc2: Dense,
}

impl Cnn {
    pub fn init(key: &Key) -> Cnn {
        let k = key.split(4);
        Cnn {
            conv1: Conv::init(&k[0], &[5, 5], 1, 32),
            conv2: Conv::init(&k[1], &[5, 5], 32, 64),
            fc1: Dense::init(&k[2], 7 * 7 * 64, 1024),
            fc2: Dense::init(&k[3], 1024, 10),
        }
    }

    pub fn logits(&self, x: &Tensor) -> Tensor {
        let pool = |h: &Tensor| max_pool(h, &[2, 2], Default::default());
        let h = pool(&self.conv1.apply(x, same(1)).relu());
        let h = pool(&self.conv2.apply(&h, same(1)).relu());
        let n = h.shape()[0] as isize;
        self.fc2.apply(&self.fc1.apply(&h.reshape(&[n, -1])).relu())
    }
}

/// A basic block: two 3×3 convolutions with batch norm, and the shortcut (a strided 1×1
/// projection with batch norm where the block changes the features).
#[derive(Tree, Clone, Debug)]
pub struct Block {
    pub conv1: Conv,
    pub bn1: BatchNorm,
    pub conv2: Conv,
    pub bn2: BatchNorm,
    pub proj: Option<(Conv, BatchNorm)>,
}

#[derive(Tree, Clone, Debug)]
pub struct BlockStats {
    pub bn1: BatchStats,
    pub bn2: BatchStats,
    pub proj: Option<BatchStats>,
}

#[derive(Tree, Clone, Debug)]
pub struct ResNet {
    pub stem: Conv,
    pub stem_bn: BatchNorm,
    pub blocks: Vec<Block>,
    pub head: Dense,
}

/// Batch norm's running statistics of every layer of a [`ResNet`].
#[derive(Tree, Clone, Debug)]
pub struct ResNetStats {
    pub stem: BatchStats,
    pub blocks: Vec<BlockStats>,
}

/// How a batch norm runs: on the batch's statistics (training, updating the running ones)
/// or on the running ones.
fn norm(bn: &BatchNorm, x: &Tensor, s: &BatchStats, train: bool) -> (Tensor, BatchStats) {
    if train {
        bn.train(x, s)
    } else {
        (bn.eval(x, s), s.clone())
    }
}

impl ResNet {
    pub fn init(key: &Key) -> (ResNet, ResNetStats) {
        let keys = key.split(2 + 9 * 3);
        let (stem_bn, stem_stats) = BatchNorm::init(16);
        let (mut blocks, mut stats) = (vec![], vec![]);
        let mut features = 16;
        for (i, k) in keys[2..].chunks(3).enumerate() {
            let out = 16 << (i / 3);
            let (bn1, s1) = BatchNorm::init(out);
            let (bn2, s2) = BatchNorm::init(out);
            let (proj, sp) = if out != features {
                let (bn, s) = BatchNorm::init(out);
                (
                    Some((Conv::init_without_bias(&k[2], &[1, 1], features, out), bn)),
                    Some(s),
                )
            } else {
                (None, None)
            };
            blocks.push(Block {
                conv1: Conv::init_without_bias(&k[0], &[3, 3], features, out),
                bn1,
                conv2: Conv::init_without_bias(&k[1], &[3, 3], out, out),
                bn2,
                proj,
            });
            stats.push(BlockStats {
                bn1: s1,
                bn2: s2,
                proj: sp,
            });
            features = out;
        }
        (
            ResNet {
                stem: Conv::init_without_bias(&keys[0], &[3, 3], 1, 16),
                stem_bn,
                blocks,
                head: Dense::init(&keys[1], 64, 10),
            },
            ResNetStats {
                stem: stem_stats,
                blocks: stats,
            },
        )
    }

    /// The logits and the running statistics (updated when `train`). With `remat`, each
    /// block is a checkpoint region that saves only its convolutions' outputs
    /// (`Policy::DotsSaveable`): the gradient recomputes its batch norms and ReLUs from them
    /// instead of keeping their results.
    pub fn logits(
        &self,
        x: &Tensor,
        s: &ResNetStats,
        train: bool,
        remat: bool,
    ) -> (Tensor, ResNetStats) {
        let h = self.stem.apply(x, same(1));
        let (mut h, stem) = norm(&self.stem_bn, &h, &s.stem, train);
        h = h.relu();
        let mut blocks = vec![];
        for (b, bs) in self.blocks.iter().zip(&s.blocks) {
            let (next, stats) = if remat {
                checkpoint_with(Policy::DotsSaveable, |h: &Tensor| b.apply(h, bs, train), &h)
            } else {
                b.apply(&h, bs, train)
            };
            h = next;
            blocks.push(stats);
        }
        // Global average pool over the 7 x 7 positions.
        let (side, c) = (h.shape()[1], h.shape()[3]);
        let pooled = avg_pool(&h, &[side, side], Default::default()).reshape(&[-1, c as isize]);
        (self.head.apply(&pooled), ResNetStats { stem, blocks })
    }
}

impl Block {
    /// The block's output and its batch norms' running statistics.
    fn apply(&self, h: &Tensor, s: &BlockStats, train: bool) -> (Tensor, BlockStats) {
        // A block with a projection halves the resolution.
        let stride = if self.proj.is_some() { 2 } else { 1 };
        let (y, s1) = norm(&self.bn1, &self.conv1.apply(h, same(stride)), &s.bn1, train);
        let (y, s2) = norm(
            &self.bn2,
            &self.conv2.apply(&y.relu(), same(1)),
            &s.bn2,
            train,
        );
        let (shortcut, sp) = match (&self.proj, &s.proj) {
            (Some((conv, bn)), Some(ps)) => {
                let (t, s) = norm(bn, &conv.apply(h, same(2)), ps, train);
                (t, Some(s))
            }
            _ => (h.clone(), None),
        };
        let stats = BlockStats {
            bn1: s1,
            bn2: s2,
            proj: sp,
        };
        ((y + shortcut).relu(), stats)
    }
}
