//! A whole tree of tensors reduced over the ranks in a few large collectives (the gradients
//! of a data-parallel step, `optim::data_parallel`): one MPI call per bucket of leaves rather
//! than one per leaf, each call long enough to run at the network's bandwidth.

use super::{all_gather, reduce_scatter, size, Reduce};
use crate::{Error, Tensor, Tree};

/// The largest bucket `optim::data_parallel` and `optim::sharded` choose: PyTorch DDP's
/// bucket size (25 MiB).
pub const DEFAULT_BUCKET_BYTES: usize = 25 << 20;

/// The smallest bucket they choose: below it a bucket's fixed cost (an MPI call, its latency,
/// the program's step) outweighs what starting earlier hides.
pub const MIN_BUCKET_BYTES: usize = 512 << 10;

/// The bucket size of `optim::data_parallel` and `optim::sharded` unless set, for `total`
/// bytes of gradients: an eighth of them, within [`MIN_BUCKET_BYTES`] and
/// [`DEFAULT_BUCKET_BYTES`]. The last bucket can only start once the backward pass has
/// finished its gradients, so its communication is exposed; with eight the others start
/// while the backward pass goes on (docs/distributed.md gives the model behind it).
pub fn bucket_bytes_for(total: usize) -> usize {
    (total / 8).clamp(MIN_BUCKET_BYTES, DEFAULT_BUCKET_BYTES)
}

/// Every leaf of `tree` reduced elementwise with `op` over the ranks, as `all_reduce` of each
/// leaf gives it, in buckets of at most `bucket_bytes`.
///
/// The leaves are packed last leaf first (the order a backward pass finishes the gradients
/// of a model whose parameters are listed input to output) into buckets of one dtype; a leaf
/// larger than `bucket_bytes` is a bucket of its own. A bucket is one flat array, padded to a
/// multiple of the rank count, reduced by a `reduce_scatter` (each rank reduces one block)
/// and rebuilt by an `all_gather`: every element is reduced on one rank only and copied to
/// the others, so every rank ends with the same bits whatever order MPI adds in. Inside
/// `#[jit]` the packing, the two collectives and the unpacking are steps of the program.
///
/// Every rank passes a tree of the same leaves (dtypes and shapes): where they differ, the
/// first bucket that differs is an error on every rank, naming both.
pub fn all_reduce_tree<T: Tree>(tree: &T, op: Reduce, bucket_bytes: usize) -> Result<T, Error> {
    let leaves = tree.leaves();
    let bks = buckets(&leaves, bucket_bytes);
    // Every reduce-scatter before the first all-gather: collectives start in the order they
    // are called (the same on every rank) and a gather only once its scatter is done, so a
    // gather called between two scatters would hold the next scatter back until the first
    // had completed. (Called one bucket later instead, the gathers waited for their scatters
    // inside the backward pass: on 2 ranks of one machine, where MPI copies through shared
    // memory on the ranks' own cores, no faster.)
    let mine: Vec<Tensor> = (bks.iter())
        .map(|b| reduce_scatter(&pack(&leaves, b), 0, op))
        .collect::<Result<_, _>>()?;
    let all: Vec<Tensor> = mine
        .iter()
        .map(|m| all_gather(m, 0))
        .collect::<Result<_, _>>()?;
    Ok(unpack_tree(tree, &leaves, &bks, &all))
}

/// The leaves of each bucket (indices into `leaves`), in the order they are filled: last leaf
/// first, a new bucket where the dtype changes or the next leaf would pass `bucket_bytes`.
/// Empty leaves are in none.
pub fn buckets(leaves: &[Tensor], bucket_bytes: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut bytes = 0;
    for (i, x) in leaves.iter().enumerate().rev() {
        let b = x.size_bytes();
        if b == 0 {
            continue;
        }
        let fits = out
            .last()
            .is_some_and(|last| leaves[last[0]].dtype() == x.dtype() && bytes + b <= bucket_bytes);
        if fits {
            out.last_mut().unwrap().push(i);
            bytes += b;
        } else {
            out.push(vec![i]);
            bytes = b;
        }
    }
    out
}

/// A bucket's leaves flattened into one array, last leaf first as the bucket lists them,
/// padded with zeros to a multiple of the rank count.
pub(crate) fn pack(leaves: &[Tensor], bucket: &[usize]) -> Tensor {
    let flat: Vec<Tensor> = bucket.iter().map(|&i| leaves[i].reshape(&[-1])).collect();
    let packed = match &flat[..] {
        [one] => one.clone(),
        _ => Tensor::concat(&flat.iter().collect::<Vec<_>>(), 0),
    };
    let n = size();
    match packed.len() % n {
        0 => packed,
        r => packed.pad(&[(0, n - r)], 0),
    }
}

/// Elements of each rank's block of `bucket` packed for `ranks` ranks (`pack` pads the bucket
/// to `ranks` such blocks).
pub(crate) fn block_len(leaves: &[Tensor], bucket: &[usize], ranks: usize) -> usize {
    bucket
        .iter()
        .map(|&i| leaves[i].len())
        .sum::<usize>()
        .div_ceil(ranks)
}

/// A tree shaped like `like` (whose leaves are `leaves`, cut into `bks`) from each bucket
/// packed whole (`packed[j]` for bucket `j`, padding at its end ignored); a leaf in no bucket
/// (an empty one) is zeros.
pub(crate) fn unpack_tree<P: Tree>(
    like: &P,
    leaves: &[Tensor],
    bks: &[Vec<usize>],
    packed: &[Tensor],
) -> P {
    let mut out: Vec<Option<Tensor>> = vec![None; leaves.len()];
    for (b, all) in bks.iter().zip(packed) {
        for (&i, t) in b.iter().zip(unpack(all, leaves, b)) {
            out[i] = Some(t);
        }
    }
    let mut out = (out.into_iter().zip(leaves)).map(|(l, x)| l.unwrap_or_else(|| x.zeros_like()));
    like.rebuild(&mut out)
}

/// This rank's block of a packed bucket (`pack`): what `reduce_scatter` of it leaves here.
pub(crate) fn block(packed: &Tensor) -> Tensor {
    let per = (packed.len() / size()) as isize;
    let r = super::rank() as isize;
    packed.slice_axis(0, r * per, (r + 1) * per, 1)
}

/// The leaves of a packed bucket (`pack`), each of its leaf's shape, in the bucket's order.
pub(crate) fn unpack(packed: &Tensor, leaves: &[Tensor], bucket: &[usize]) -> Vec<Tensor> {
    let mut at = 0;
    (bucket.iter())
        .map(|&i| {
            let x = &leaves[i];
            let part = packed.slice_axis(0, at as isize, (at + x.len()) as isize, 1);
            at += x.len();
            let shape: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
            part.reshape(&shape)
        })
        .collect()
}
