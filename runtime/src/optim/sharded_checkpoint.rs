//! Checkpoints of a sharded optimiser's state: one file of the whole state (gathered, the
//! file of the unsharded optimiser), or a directory of one file per rank; either loads on any
//! number of ranks.

use super::sharded::Sharded;
use super::{Optimizer, StateOf};
use crate::dist;
use crate::dist::buckets::{block_len, buckets, unpack_tree};
use crate::{io, Error, ErrorKind, Tensor, Tree};
use std::path::{Path, PathBuf};

/// The file of a directory of `save_state_per_rank` that says how the blocks were cut.
const INDEX: &str = "index.safetensors";

fn rank_file(dir: &Path, rank: usize) -> PathBuf {
    dir.join(format!("rank-{rank}.safetensors"))
}

/// The rank count and bucket size of a directory of `save_state_per_rank`.
fn read_index(dir: &Path) -> Result<(usize, usize), Error> {
    let v = io::load(dir.join(INDEX), &Tensor::vector(&[0i64, 0]))?.to_vec::<i64>()?;
    match v[..] {
        [ranks, bytes] if ranks >= 1 && bytes >= 1 => Ok((ranks as usize, bytes as usize)),
        _ => Err(Error::new(
            ErrorKind::Checkpoint,
            format!(
                "`{}`: not the index of a sharded state ({v:?}: a rank count and a bucket size)",
                dir.join(INDEX).display()
            ),
        )),
    }
}

/// `result` on every rank where it is `Ok` on every rank; otherwise an error on every rank:
/// this rank's own, or one naming the ranks that failed (`what` of their list: "rank 1 could
/// not ..."). A rank failing alone would leave the others waiting in their next collective.
fn on_every_rank<T>(
    result: Result<T, Error>,
    kind: ErrorKind,
    what: impl FnOnce(&str) -> String,
) -> Result<T, Error> {
    let ok = Tensor::from_vec(vec![result.is_ok() as i32], &[1])?;
    let all = dist::all_gather(&ok, 0)?.to_vec::<i32>()?;
    let failed: Vec<String> = (all.iter().enumerate())
        .filter(|(_, ok)| **ok == 0)
        .map(|(r, _)| r.to_string())
        .collect();
    match (result, failed.is_empty()) {
        (Ok(v), true) => Ok(v),
        (Err(e), _) => Err(e),
        (Ok(_), false) => Err(Error::new(kind, what(&failed.join(", ")))),
    }
}

impl<O: Optimizer> Sharded<O> {
    /// Save the state as one safetensors file of the whole state (`gather_state`, written by
    /// rank 0 through `io::save`): the file of an unsharded `opt`, so it loads on any number
    /// of ranks, and into `opt` itself. Every rank returns an error if rank 0's write failed.
    pub fn save_state<P: Tree>(
        &self,
        state: &StateOf<Self, P>,
        params: &P,
        path: impl AsRef<Path>,
    ) -> Result<(), Error> {
        let full = self.gather_state(state.map(|t| t.clone()), params)?;
        let written = match dist::rank() {
            0 => io::save(&full, path.as_ref()),
            _ => Ok(()),
        };
        on_every_rank(written, ErrorKind::Io, |ranks| {
            format!(
                "`Sharded::save_state`: rank {ranks} could not write {}",
                path.as_ref().display()
            )
        })
    }

    /// This rank's share of a saved state, on any number of ranks: a file written by
    /// `save_state` (or by `io::save` of an unsharded `opt`'s state), which every rank reads
    /// (checked against `opt.init(params)`, as `io::load` checks) and keeps its blocks of; or
    /// a directory written by [`save_state_per_rank`](Sharded::save_state_per_rank).
    pub fn load_state<P: Tree>(
        &self,
        path: impl AsRef<Path>,
        params: &P,
    ) -> Result<StateOf<Self, P>, Error> {
        let path = path.as_ref();
        if path.is_dir() {
            return self.load_state_per_rank(path, params);
        }
        let full = io::load(path, &self.inner.init(params))?;
        self.shard_state(full, params)
    }

    /// Save the state as a directory of files, one per rank (`rank-<r>.safetensors`: this
    /// rank's blocks, the state as it is kept here), and `index.safetensors` (rank 0's: the
    /// rank count and bucket size that cut the blocks). Nothing of the state passes between
    /// the ranks, and no rank holds more than its own share, unlike `save_state`. Every rank
    /// returns an error if any rank's write failed, naming the ranks.
    pub fn save_state_per_rank<P: Tree>(
        &self,
        state: &StateOf<Self, P>,
        params: &P,
        dir: impl AsRef<Path>,
    ) -> Result<(), Error> {
        let dir = dir.as_ref();
        let (rank, ranks) = (dist::rank(), dist::size());
        let written = std::fs::create_dir_all(dir)
            .map_err(|e| Error::new(ErrorKind::Io, format!("`{}`: {e}", dir.display())))
            .and_then(|()| io::save(state, rank_file(dir, rank)));
        let written = written.and_then(|()| match rank {
            0 => {
                let bytes = self.bytes(&params.leaves()) as i64;
                io::save(&Tensor::vector(&[ranks as i64, bytes]), dir.join(INDEX))
            }
            _ => Ok(()),
        });
        on_every_rank(written, ErrorKind::Io, |ranks| {
            format!(
                "`Sharded::save_state_per_rank`: rank {ranks} could not write its part of {}",
                dir.display()
            )
        })
    }

    /// This rank's share of a state saved by `save_state_per_rank`: on as many ranks with the
    /// same buckets, this rank's file; otherwise (another rank count, another bucket size)
    /// every rank reads every file, rebuilds the whole state and keeps its blocks. Where a
    /// rank cannot read its part, every rank returns an error naming it (the others would
    /// otherwise train on and wait for it in their next collective).
    fn load_state_per_rank<P: Tree>(
        &self,
        dir: &Path,
        params: &P,
    ) -> Result<StateOf<Self, P>, Error> {
        let loaded = read_index(dir).and_then(|(ranks, bytes)| {
            if ranks == dist::size() && bytes == self.bytes(&params.leaves()) {
                return io::load(rank_file(dir, dist::rank()), &self.init(params));
            }
            self.shard_state(self.whole_state_of_ranks(dir, params)?, params)
        });
        on_every_rank(loaded, ErrorKind::Checkpoint, |ranks| {
            format!(
                "`Sharded::load_state`: rank {ranks} could not read its part of {}",
                dir.display()
            )
        })
    }

    /// The whole state (`O::State<P>`, what `opt` keeps for unsharded parameters) of a
    /// directory written by `save_state_per_rank` on any number of ranks: every rank's
    /// blocks read and joined. `io::save` of it is the file `save_state` writes; one process
    /// can continue with `opt` itself from it.
    pub fn whole_state_of_ranks<P: Tree>(
        &self,
        dir: impl AsRef<Path>,
        params: &P,
    ) -> Result<O::State<P>, Error> {
        let dir = dir.as_ref();
        let (ranks, bytes) = read_index(dir)?;
        let p = params.leaves();
        let bks = buckets(&p, bytes);
        // The state of one rank's blocks, as that run cut them.
        let blocks: Vec<Tensor> = (bks.iter())
            .map(|b| Tensor::zeros(&[block_len(&p, b, ranks)], p[b[0]].dtype()))
            .collect();
        let template = self.inner.init(&blocks);
        let mut states = (0..ranks).map(|r| io::load(rank_file(dir, r), &template));
        let first = states.next().expect("a rank")?;
        // The parts shaped like the parameters (moments) of every other rank, in order.
        let mut others: Vec<Vec<Vec<Tensor>>> = Vec::new();
        for s in states {
            let mut parts = Vec::new();
            self.inner.map_state(s?, &mut |x: Vec<Tensor>| {
                parts.push(x.clone());
                x
            })?;
            others.push(parts);
        }
        let mut k = 0;
        self.inner.map_state(first, &mut |mine: Vec<Tensor>| {
            let packed: Vec<Tensor> = (0..bks.len())
                .map(|j| {
                    let mut rows = vec![&mine[j]];
                    rows.extend(others.iter().map(|o| &o[k][j]));
                    Tensor::concat(&rows, 0)
                })
                .collect();
            k += 1;
            unpack_tree(params, &p, &bks, &packed)
        })
    }
}
