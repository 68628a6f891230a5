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
                // A column sum the first dim moves along its rows (stride 0) must not be
                // split there: two threads would add into the same partials. One chunk.
                let rows_first = (p.accumulators.iter())
                    .any(|&j| p.accesses[p.outs[j]].strides[0] == 0 && p.dims[0] > 1);
                let align = match (rows_first, p.dims.len()) {
                    (true, _) => p.dims[0],
                    (false, 1) => 64,
                    _ => 1,
                };
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
