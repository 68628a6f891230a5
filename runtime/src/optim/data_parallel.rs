//! Data-parallel training: every rank computes the gradient of its own shard of the batch,
//! the gradients are averaged over the ranks, and every rank applies the same update, so
//! every rank holds the same parameters (bit for bit) after every step.

use super::{check_like, size_bytes, Optimizer};
use crate::dist::{self, Reduce};
use crate::trace::fail;
use crate::Tree;

/// An optimiser whose gradients are first averaged over the ranks of `jitfuse::dist`
/// (PyTorch's `DistributedDataParallel`, JAX's `pmean` before `optax.update`).
#[derive(Clone, Debug)]
pub struct DataParallel<O> {
    inner: O,
    /// Set by `bucket_bytes`; otherwise `dist::bucket_bytes_for` the gradients.
    bucket_bytes: Option<usize>,
}

/// `opt` on the gradients averaged over the ranks (`dist::all_reduce_tree` with
/// `Reduce::Mean`, in buckets of an eighth of the gradients between 512 KiB and 25 MiB,
/// `dist::bucket_bytes_for`, unless [`DataParallel::bucket_bytes`] says otherwise). Each rank passes the gradient of the mean loss over its shard of the batch
/// (`dist::shard`, shards of one size): the mean over the ranks is the gradient of the whole
/// batch's mean loss. In a world of one process it is `opt` itself, with no extra work.
///
/// Wrap the whole chain, so that clipping sees the averaged gradient:
/// `data_parallel(clip_by_global_norm(1.0).then(adam(..)))`.
pub fn data_parallel<O: Optimizer>(opt: O) -> DataParallel<O> {
    DataParallel {
        inner: opt,
        bucket_bytes: None,
    }
}

impl<O> DataParallel<O> {
    /// At most `bytes` of gradients per collective (a larger leaf is one of its own): smaller
    /// buckets start earlier, larger ones pay the per-call latency fewer times.
    pub fn bucket_bytes(mut self, bytes: usize) -> Self {
        self.bucket_bytes = Some(bytes.max(1));
        self
    }
}

impl<O: Optimizer> Optimizer for DataParallel<O> {
    type State<P: Tree> = O::State<P>;

    fn init<P: Tree>(&self, params: &P) -> Self::State<P> {
        self.inner.init(params)
    }

    fn map_state<P: Tree, Q: Tree>(
        &self,
        state: Self::State<P>,
        f: &mut dyn FnMut(P) -> Q,
    ) -> Result<Self::State<Q>, crate::Error> {
        self.inner.map_state(state, f)
    }

    #[track_caller]
    fn updates<P: Tree>(
        &self,
        grads: &P,
        state: Self::State<P>,
        params: &P,
    ) -> (P, Self::State<P>) {
        if dist::size() == 1 {
            return self.inner.updates(grads, state, params);
        }
        check_like("`data_parallel`", "gradient", grads, params);
        let bytes = (self.bucket_bytes)
            .unwrap_or_else(|| dist::bucket_bytes_for(size_bytes(&grads.leaves())));
        let mean = dist::all_reduce_tree(grads, Reduce::Mean, bytes).unwrap_or_else(|e| fail(e));
        self.inner.updates(&mean, state, params)
    }
}
