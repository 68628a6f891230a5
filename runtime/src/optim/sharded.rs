//! Sharded optimiser state (ZeRO stages 1 and 2): each rank keeps the optimiser's state for
//! one block of the parameters, updates that block from its block of the averaged gradients,
//! and the ranks gather the updates.

use super::{check_like, size_bytes, Mask, Optimizer, Selected, StateOf};
use crate::dist::buckets::{block, block_len, buckets, pack, unpack_tree};
use crate::dist::{self, Reduce};
use crate::error::Error;
use crate::trace::fail;
use crate::{Tensor, Tree};

/// An optimiser whose state is split over the ranks of `jitfuse::dist` (ZeRO stages 1 and 2,
/// PyTorch's `ZeroRedundancyOptimizer`).
#[derive(Clone, Debug)]
pub struct Sharded<O> {
    pub(super) inner: O,
    /// Set by `bucket_bytes`; otherwise `dist::bucket_bytes_for` the parameters.
    pub(super) bucket_bytes: Option<usize>,
}

/// `opt` with its state split over the ranks: the parameters are packed into buckets (as
/// `dist::all_reduce_tree` packs gradients) and each rank keeps `opt`'s state for its block
/// of every bucket only, `1 / size()` of it. A step reduce-scatters the gradients (each rank
/// receives the mean over the ranks of its block: the gradient of the whole batch, as
/// [`data_parallel`](super::data_parallel) averages it), updates its block, and all-gathers
/// the updates, so every rank ends with the same parameters, bit for bit. In a world of one
/// process the state is `opt`'s over the packed parameters and the steps are `opt`'s.
///
/// `opt` updates blocks through [`Optimizer::block_updates`]: any elementwise optimiser (SGD,
/// momentum, Adam), global-norm clipping (the sum of squares added over the ranks, so the
/// norm is the whole gradient's), AdamW with a decay mask (a mask of each block's elements),
/// and chains of them. Anything else is an error naming `optim::sharded`, when the step is
/// traced (eagerly, a panic).
pub fn sharded<O: Optimizer>(opt: O) -> Sharded<O> {
    Sharded {
        inner: opt,
        bucket_bytes: None,
    }
}

impl<O> Sharded<O> {
    /// At most `bytes` of parameters per bucket (a larger leaf is one of its own).
    pub fn bucket_bytes(mut self, bytes: usize) -> Self {
        self.bucket_bytes = Some(bytes.max(1));
        self
    }
}

impl<O: Optimizer> Sharded<O> {
    /// The bucket size for parameters `leaves`.
    pub(super) fn bytes(&self, leaves: &[Tensor]) -> usize {
        (self.bucket_bytes).unwrap_or_else(|| dist::bucket_bytes_for(size_bytes(leaves)))
    }

    /// This rank's block of each bucket of `tree` (shaped like the parameters).
    fn blocks<P: Tree>(&self, tree: &P, params: &P) -> Vec<Tensor> {
        let (leaves, like) = (tree.leaves(), params.leaves());
        (buckets(&like, self.bytes(&like)).iter())
            .map(|b| block(&pack(&leaves, b)))
            .collect()
    }

    /// The whole state, as `opt` keeps it for unsharded parameters (`O::State<P>`), on every
    /// rank: every rank's blocks gathered and unpacked.
    pub fn gather_state<P: Tree>(
        &self,
        state: StateOf<Self, P>,
        params: &P,
    ) -> Result<O::State<P>, Error> {
        let p = params.leaves();
        let bks = buckets(&p, self.bytes(&p));
        let mut failed = None;
        let full = self.inner.map_state(state, &mut |blocks: Vec<Tensor>| {
            let all: Result<Vec<Tensor>, Error> =
                blocks.iter().map(|x| dist::all_gather(x, 0)).collect();
            match all {
                Ok(all) => unpack_tree(params, &p, &bks, &all),
                // (Zeros in a state that is returned as an error.)
                Err(e) => {
                    failed.get_or_insert(e);
                    unpack_tree(params, &p, &[], &[])
                }
            }
        })?;
        failed.map_or(Ok(full), Err)
    }

    /// This rank's share of a whole state (`gather_state`'s, a checkpoint's, or an unsharded
    /// run's `opt` state).
    pub fn shard_state<P: Tree>(
        &self,
        full: O::State<P>,
        params: &P,
    ) -> Result<StateOf<Self, P>, Error> {
        self.inner
            .map_state(full, &mut |t: P| self.blocks(&t, params))
    }
}

impl<O: Optimizer> Optimizer for Sharded<O> {
    /// The inner state over this rank's blocks, one flat tensor per bucket.
    type State<P: Tree> = O::State<Vec<Tensor>>;

    fn init<P: Tree>(&self, params: &P) -> Self::State<P> {
        self.inner.init(&self.blocks(params, params))
    }

    /// (The state of the blocks does not depend on the parameters' type.)
    fn map_state<P: Tree, Q: Tree>(
        &self,
        state: Self::State<P>,
        _f: &mut dyn FnMut(P) -> Q,
    ) -> Result<Self::State<Q>, Error> {
        Ok(state)
    }

    #[track_caller]
    fn updates<P: Tree>(
        &self,
        grads: &P,
        state: Self::State<P>,
        params: &P,
    ) -> (P, Self::State<P>) {
        check_like("`sharded`", "gradient", grads, params);
        let (g, p) = (grads.leaves(), params.leaves());
        let bks = buckets(&p, self.bytes(&p));
        let mine: Result<Vec<Tensor>, Error> = (bks.iter())
            .map(|b| dist::reduce_scatter(&pack(&g, b), 0, Reduce::Mean))
            .collect();
        let mine = mine.unwrap_or_else(|e| fail(e));
        let blocks = Blocks::new(params, &bks);
        let (u, state) =
            (self.inner).block_updates(&mine, state, &self.blocks(params, params), &blocks);
        let all: Vec<Tensor> = (u.iter())
            .map(|u| dist::all_gather(u, 0).unwrap_or_else(|e| fail(e)))
            .collect();
        // (Empty leaves are in no bucket: their update is empty too.)
        (unpack_tree(params, &p, &bks, &all), state)
    }
}

/// Where the elements of this rank's blocks come from, for an optimiser updating blocks
/// alone ([`Optimizer::block_updates`]): which parameter each part of a block belongs to, and
/// sums over every rank's blocks.
pub struct Blocks {
    /// The parameters' leaves and their names (`Tree::leaf_names`), as a [`Mask`] sees them.
    leaves: Vec<Tensor>,
    names: Vec<String>,
    /// Per block: (leaf, first element in the block, elements) of each leaf it holds a part
    /// of, in the block's order; the rest of a block is padding.
    parts: Vec<Vec<(usize, usize, usize)>>,
    /// Elements per block.
    lens: Vec<usize>,
}

impl Blocks {
    /// The blocks of this rank of `params` packed into `bks` (as `pack` and `block` cut them).
    fn new<P: Tree>(params: &P, bks: &[Vec<usize>]) -> Blocks {
        let leaves = params.leaves();
        let (rank, ranks) = (dist::rank(), dist::size());
        let (mut parts, mut lens) = (Vec::new(), Vec::new());
        for b in bks {
            let per = block_len(&leaves, b, ranks);
            let (lo, hi) = (rank * per, (rank + 1) * per);
            let mut at = 0;
            let mut mine = Vec::new();
            for &i in b {
                let (start, end) = (at.max(lo), (at + leaves[i].len()).min(hi));
                if start < end {
                    mine.push((i, start - lo, end - start));
                }
                at += leaves[i].len();
            }
            parts.push(mine);
            lens.push(per);
        }
        Blocks {
            names: params.leaf_names(),
            leaves,
            parts,
            lens,
        }
    }

    /// The sum over every rank of `x` (a scalar computed from this rank's blocks), the same
    /// bits on every rank: the ranks' values gathered and added in rank order.
    #[track_caller]
    pub fn sum_over_ranks(&self, x: &Tensor) -> Tensor {
        let all = dist::all_gather(&x.reshape(&[1]), 0).unwrap_or_else(|e| fail(e));
        all.sum_all()
    }

    /// Per block, what `mask` selects of its elements: nothing, all, or a 0/1 vector of the
    /// block's dtype (padding is 0).
    #[track_caller]
    pub fn mask(&self, mask: &Mask) -> Vec<Selected> {
        let flags = mask.resolve_leaves(&self.names, &self.leaves);
        (self.parts.iter().zip(&self.lens))
            .map(|(parts, &len)| {
                let on: usize = parts.iter().filter(|p| flags[p.0]).map(|p| p.2).sum();
                if on == 0 || on == len {
                    return Selected::of(on == len);
                }
                let dtype = self.leaves[parts[0].0].dtype();
                let mut pieces = Vec::new();
                let mut at = 0;
                for &(i, start, n) in parts {
                    pieces.push(Tensor::full(&[n], flags[i] as i32, dtype));
                    at = start + n;
                }
                if at < len {
                    pieces.push(Tensor::zeros(&[len - at], dtype));
                }
                Selected::Elements(Tensor::concat(&pieces.iter().collect::<Vec<_>>(), 0))
            })
            .collect()
    }
}
