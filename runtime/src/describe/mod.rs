//! Kernel descriptions: what each compiled step computes and how it walks memory, built from
//! the partition before any code is emitted, so that the partition, the buffer plan, the
//! executor and every backend read one description rather than each re-deriving it.
//!
//! - `loops`: loop kernels (collapsed dims, each access's offset and strides).
//! - `reduce`: reduction steps (kept and reduced dims, row or column form).
//! - `row`: row kernels (collapsed row dims, accesses, reads per element and per row, phases).
//! - `describe`: the description of every step of a partition, built once for the backends;
//!   `check` proves that each stays inside its buffers and writes each output element once.
//! - `partition` / `partition_barriers`: the partition whose row groups all have a row kernel
//!   (groups the row kernel cannot address are left unfused), with chunked column sums fused
//!   into the loop kernels computing their operands (`columns`).

mod check;
pub mod columns;
pub mod loops;
pub mod reduce;
pub mod row;

pub use check::check;

use crate::fusion::find_row_groups;
use crate::fusion::partition::{partition_with, Partition, Step};
use crate::ir::{Graph, Op, ValueId};
use std::collections::HashSet;

/// What one step of a partition computes and how it walks memory.
pub enum Description {
    Loop(loops::LoopDescription),
    Reduce(reduce::ReduceDescription),
    Row(row::RowDescription),
    /// A library call (matmul, attention, ...): its op says everything.
    Library,
}

impl Description {
    /// How the step's `begin..end` range may be split: (extent of the first dim, elements in
    /// all, alignment of a split point); None for library calls.
    pub fn split(&self) -> Option<(usize, usize, usize)> {
        match self {
            Description::Loop(p) => {
                let align = if p.dims.len() == 1 { 64 } else { 1 };
                Some((p.dims[0], p.dims.iter().product(), align))
            }
            Description::Reduce(r) => Some(reduce::extent(r)),
            Description::Row(pl) => {
                Some((pl.o_dims[0], pl.o_dims.iter().product::<usize>() * pl.n, 1))
            }
            Description::Library => None,
        }
    }

    /// Whether step `s` (described by `self`) may write its output `o` over its input `x`: it
    /// reads `x` exactly where it writes `o`, and its code loads every input of a position
    /// before storing any output there (loop and row kernels).
    pub fn inplace_ok(&self, g: &Graph, s: &Step, x: ValueId, o: ValueId) -> bool {
        match (self, s) {
            (Description::Loop(p), Step::Kernel(k)) => loops::inplace_ok(p, k, x, o),
            (Description::Row(p), Step::Row(rk)) => row::inplace_ok(g, p, rk, x, o),
            _ => false,
        }
    }
}

/// The description of every step of `p`, in step order: built once per partition and read by
/// the buffer plan, the parallel split and every backend.
pub fn describe(g: &Graph, p: &Partition) -> Vec<Description> {
    p.steps
        .iter()
        .map(|s| match s {
            Step::Kernel(k) => Description::Loop(loops::describe(g, p, k)),
            Step::Reduce(v) => Description::Reduce(reduce::describe(g, p, *v)),
            Step::Row(rk) => Description::Row(
                row::describe(g, p, rk)
                    .expect("the partition checks every row kernel (`row::check`)"),
            ),
            Step::Library(_) => Description::Library,
        })
        .collect()
}

pub fn partition(g: &Graph) -> Partition {
    partition_barriers(g, false)
}

/// `partition`, with every checkpoint `barrier` a copy into a buffer of its
/// own when `copy_barriers` (the saved value may then die at the copy, early
/// enough to be hosted in an output written later; the planner keeps
/// whichever of the two has the lower peak).
pub fn partition_barriers(g: &Graph, copy_barriers: bool) -> Partition {
    let mut excluded = HashSet::new();
    loop {
        let groups = find_row_groups(g, &excluded);
        let p = partition_with(g, groups, copy_barriers);
        match row::check(g, &p) {
            Ok(()) => {
                let mut p = p;
                columns::fuse(g, &mut p);
                return p;
            }
            // A group the row kernel cannot address (its within-row dims do
            // not collapse to one run): leave its reductions unfused.
            // The value named need not be the group's seed: exclude every
            // reduction of the group that failed (progress on every round:
            // the loop ends with no row kernels at worst).
            Err(bad) => {
                let before = excluded.len();
                excluded.insert(bad);
                for s in &p.steps {
                    if let Step::Row(rk) = s {
                        if rk.group.members.contains(&bad) || row::check_one(g, &p, rk).is_err() {
                            excluded.extend(
                                rk.group
                                    .members
                                    .iter()
                                    .copied()
                                    .filter(|&m| matches!(g.node(m).op, Op::Reduce(..))),
                            );
                        }
                    }
                }
                if excluded.len() == before {
                    excluded.extend(
                        (0..g.nodes.len())
                            .map(|i| ValueId(i as u32))
                            .filter(|&v| matches!(g.node(v).op, Op::Reduce(..))),
                    );
                }
            }
        }
    }
}

/// Collapse `dims` (with each access's strides) dropping size-1 dims and
/// merging linear neighbours. Returns the dims and per-access strides. The one collapse of
/// every kernel kind (loop kernels: `loops::describe`; row kernels: `row::describe`).
pub fn collapse(dims: &[usize], strides: &[Vec<i64>]) -> (Vec<usize>, Vec<Vec<i64>>) {
    let mut out: Vec<usize> = Vec::new();
    let mut st: Vec<Vec<i64>> = vec![Vec::new(); strides.len()];
    for d in 0..dims.len() {
        if dims[d] == 1 {
            continue;
        }
        let merge = !out.is_empty()
            && strides
                .iter()
                .enumerate()
                .all(|(a, s)| *st[a].last().unwrap() == s[d] * dims[d] as i64);
        if merge {
            *out.last_mut().unwrap() *= dims[d];
            for (a, s) in strides.iter().enumerate() {
                *st[a].last_mut().unwrap() = s[d];
            }
        } else {
            out.push(dims[d]);
            for (a, s) in strides.iter().enumerate() {
                st[a].push(s[d]);
            }
        }
    }
    (out, st)
}

/// The strides over `to` of the access that `strides` make over `from` (the same number of
/// elements, visited in the same row-major order), where one affine map does it: each group
/// of `from`'s dims that `to` splits or merges differently must be linear across itself
/// (numpy's reshape without a copy). A fused column sum walks its kernel's elements in the
/// `[chunks, rows, ..kept]` shape of its operand (`columns`).
pub fn restride(from: &[usize], strides: &[i64], to: &[usize]) -> Option<Vec<i64>> {
    let (od, os): (Vec<usize>, Vec<i64>) = (from.iter().zip(strides))
        .filter(|(&d, _)| d != 1)
        .map(|(&d, &s)| (d, s))
        .unzip();
    if from.iter().product::<usize>() != to.iter().product::<usize>() || to.contains(&0) {
        return None;
    }
    let mut out = vec![0i64; to.len()];
    let (mut oi, mut ni) = (0, 0);
    while oi < od.len() {
        // The smallest groups `od[oi..oj]` and `to[ni..nj]` of equal size.
        let (mut oj, mut nj) = (oi + 1, ni);
        let (mut op, mut np) = (od[oi], 1usize);
        while np < op || nj == ni {
            np *= to[nj];
            nj += 1;
            while op < np {
                op *= od[oj];
                oj += 1;
            }
        }
        if (oi..oj - 1).any(|k| os[k] != od[k + 1] as i64 * os[k + 1]) {
            return None;
        }
        let mut s = os[oj - 1];
        for k in (ni..nj).rev() {
            out[k] = s;
            s *= to[k] as i64;
        }
        (oi, ni) = (oj, nj);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::restride;

    /// Every element the strides reach over `from` is the one they reach over `to` at the
    /// same row-major position (or there is no map).
    fn same_elements(from: &[usize], strides: &[i64], to: &[usize]) -> Option<Vec<i64>> {
        let got = restride(from, strides, to)?;
        let at = |shape: &[usize], st: &[i64], mut i: usize| -> i64 {
            let mut off = 0;
            for (&d, &s) in shape.iter().zip(st).rev() {
                off += (i % d) as i64 * s;
                i /= d;
            }
            off
        };
        let n: usize = from.iter().product();
        for i in 0..n {
            assert_eq!(at(from, strides, i), at(to, &got, i), "element {i}");
        }
        Some(got)
    }

    #[test]
    fn restride_splits_and_merges_linear_groups_only() {
        // Contiguous: any regrouping.
        assert_eq!(
            same_elements(&[8, 6, 4], &[24, 4, 1], &[4, 12, 4]),
            Some(vec![48, 4, 1])
        );
        // A broadcast channel vector, rows split across a dim boundary.
        assert_eq!(
            same_elements(&[4, 6, 6, 16], &[0, 0, 0, 1], &[9, 16, 16]),
            Some(vec![0, 0, 1])
        );
        // Size-1 dims on either side (a new one takes any stride).
        assert_eq!(
            same_elements(&[1, 4, 1, 8], &[5, 8, 7, 1], &[2, 1, 16]),
            Some(vec![16, 16, 1])
        );
        // A transposed view regrouped within its linear runs.
        assert_eq!(
            same_elements(&[4, 3, 2], &[1, 8, 4], &[4, 6]),
            Some(vec![1, 4])
        );
        // Broadcast along the first dim only: its rows cannot be regrouped across it.
        assert_eq!(same_elements(&[4, 6, 16], &[0, 16, 1], &[8, 3, 16]), None);
        // A transpose split across its non-linear boundary.
        assert_eq!(same_elements(&[4, 3, 2], &[1, 8, 4], &[2, 12]), None);
        // Different sizes.
        assert_eq!(restride(&[4, 4], &[4, 1], &[15]), None);
    }
}
