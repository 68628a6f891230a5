//! Kernel descriptions: what each compiled step computes and how it walks memory, built from
//! the partition before any code is emitted, so that the partition, the buffer plan, the
//! executor and every backend read one description rather than each re-deriving it.
//!
//! - `reduce`: reduction steps (kept and reduced dims, row or column form).
//! - `row`: row kernels (collapsed row dims, accesses, reads per element and per row, phases).
//! - `partition` / `partition_barriers`: the partition whose row groups all have a row kernel
//!   (groups the row kernel cannot address are left unfused).

pub mod reduce;
pub mod row;

use crate::fusion::find_row_groups;
use crate::fusion::partition::{partition_with, Partition, Step};
use crate::ir::{Graph, Op, ValueId};
use std::collections::HashSet;

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
            Ok(()) => return p,
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
/// every kernel kind (loop kernels: `codegen::kernel::plan`; row kernels: `row::plan`).
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
