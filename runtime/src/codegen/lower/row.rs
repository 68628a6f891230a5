//! Row kernels lowered: the members of a row group as locals, each one value per element or
//! one per row, and the schedule of a row: the sweeps over it (each phase of reductions
//! whose operands are ready, then the sweep storing the element outputs), the row-level
//! values computed before each sweep, and which element values are stashed.

use super::{Builder, Local, LocalId, LocalOp};
use crate::codegen::micro::MicroFn;
use crate::describe::row::same_place;
use crate::describe::row::RowDescription;
use crate::fusion::partition::RowKernel;
use crate::ir::{Graph, Op};
use crate::DType;
use std::collections::HashSet;

/// Scratch budget for stashed rows, per thread (the stack).
pub const STASH_BYTES: usize = 128 * 1024;

/// A row kernel as every backend reads it.
pub struct RowBody<'p> {
    /// Collapsed row dims, row length, accesses (`describe::row`).
    pub plan: &'p RowDescription,
    /// The members and what they read, in dependency order.
    pub locals: Vec<Local>,
    /// Whether each local is one value per row (a reduction, a row-level value, a read of a
    /// row-level input) rather than one per element.
    pub row_level: Vec<bool>,
    /// Each output: its local and access, in output order.
    pub outputs: Vec<(LocalId, usize)>,
    /// The sweeps over each row, in order: the reduction phases, then the element outputs'.
    pub sweeps: Vec<Sweep>,
}

/// One sweep over a row.
pub struct Sweep {
    /// Row-level members computed before the sweep (all the reductions they need are done),
    /// broadcasts included.
    pub row_values: Vec<LocalId>,
    /// The reductions this sweep folds, together (empty in the last sweep, which stores the
    /// element outputs instead).
    pub reductions: Vec<LocalId>,
    /// The element-level members it evaluates (the cone of its reductions' operands, or of
    /// the element outputs, cut at row-level values), in order; broadcasts included.
    pub cone: Vec<LocalId>,
}

/// Lower row kernel `rk` (described by `pl`).
pub fn lower<'p>(g: &Graph, rk: &RowKernel, pl: &'p RowDescription) -> RowBody<'p> {
    let grp = &rk.group;
    let mut members = grp.members.clone();
    members.sort();
    let mut b = Builder::new(g);
    let mut row_level = Vec::new();
    for &m in &members {
        let n = g.node(m);
        let reduce = matches!(n.op, Op::Reduce(..));
        let at_row = !reduce && !grp.is_element_shape(&n.shape);
        // Operands: members, or read per element (a reduction's and element values'
        // operands) or per row (row values' operands) through the plan's access.
        let args: Vec<LocalId> = (n.inputs.iter())
            .map(|&x| match b.of.get(&(x, false)) {
                Some(&l) if pl.members.contains(&x) => l,
                _ => {
                    let reads = if at_row {
                        &pl.row_reads
                    } else {
                        &pl.elem_reads
                    };
                    let l = b.leaf(x, at_row, || reads[&x]);
                    row_level.resize(b.locals.len(), at_row);
                    l
                }
            })
            .collect();
        let first = b.locals.len();
        let l = b.compute(m, &args);
        b.of.insert((m, false), l);
        // The locals its lowering added (constants, rsqrt's square root, the f32 operand and
        // the rounding of a 16-bit sum) are at row level from the reduction on.
        let mut reduced = false;
        for v in first..b.locals.len() {
            reduced |= matches!(b.locals[v].op, LocalOp::Reduce(..));
            row_level.push(at_row || reduced);
        }
    }
    let outputs = (rk.outputs.iter().enumerate())
        .map(|(j, o)| {
            let l = b.of[&(*o, false)];
            let s = b.stored(*o, l);
            row_level.resize(b.locals.len(), row_level[l]);
            (s, pl.outs[j])
        })
        .collect();
    let mut body = RowBody {
        plan: pl,
        locals: b.locals,
        row_level,
        outputs,
        sweeps: Vec::new(),
    };
    body.sweeps = body.schedule();
    body
}

impl RowBody<'_> {
    /// The kernel as text (`Lowered::key`).
    pub fn key(&self) -> String {
        use std::fmt::Write;
        // The locals, each one per row marked so.
        let mut s = String::new();
        let text = super::locals_text(&self.locals);
        for (line, &row) in text.lines().zip(&self.row_level) {
            let _ = writeln!(s, "{line}{}", if row { " per row" } else { "" });
        }
        let pl = self.plan;
        let _ = write!(s, "dims {:?} n {};", pl.o_dims, pl.n);
        for a in &pl.accesses {
            let (ptr, d, off) = (a.ptr, a.dtype, a.offset);
            let _ = write!(s, "a{ptr} {d:?} {off} {:?} {};", a.o_strides, a.i_stride);
        }
        let _ = write!(s, "outs {:?}", self.outputs);
        s
    }

    fn is_member(&self, v: LocalId) -> bool {
        !self.locals[v].op.is_leaf()
    }

    fn is_reduction(&self, v: LocalId) -> bool {
        matches!(self.locals[v].op, LocalOp::Reduce(..))
    }

    /// The outputs one value per element (stored by the last sweep).
    pub fn element_outputs(&self) -> impl Iterator<Item = (LocalId, usize)> + '_ {
        (self.outputs.iter().copied()).filter(|&(o, _)| !self.row_level[o])
    }

    /// The outputs one value per row (stored after the last sweep).
    pub fn row_outputs(&self) -> impl Iterator<Item = (LocalId, usize)> + '_ {
        (self.outputs.iter().copied()).filter(|&(o, _)| self.row_level[o])
    }

    /// The sweeps: before each, the row-level values whose reductions are done; then every
    /// reduction whose operands are ready, folded in one sweep (sibling fusion: mean and
    /// mean of squares together); the last sweep stores the element outputs.
    fn schedule(&self) -> Vec<Sweep> {
        let n = self.locals.len();
        // The reductions each member depends on through members.
        let mut deps: Vec<HashSet<LocalId>> = vec![HashSet::new(); n];
        for v in 0..n {
            let mut d = HashSet::new();
            for &x in self.locals[v].op.operands().iter() {
                d.extend(deps[x].iter().copied());
                if self.is_reduction(x) {
                    d.insert(x);
                }
            }
            deps[v] = d;
        }
        let reductions: Vec<LocalId> = (0..n).filter(|&v| self.is_reduction(v)).collect();
        let row_values: Vec<LocalId> = (0..n)
            .filter(|&v| self.is_member(v) && self.row_level[v] && !self.is_reduction(v))
            .collect();
        let mut done: HashSet<LocalId> = HashSet::new();
        let mut computed: HashSet<LocalId> = HashSet::new();
        let mut sweeps = Vec::new();
        loop {
            let ready_row: Vec<LocalId> = (row_values.iter().copied())
                .filter(|v| !computed.contains(v) && deps[*v].is_subset(&done))
                .collect();
            computed.extend(ready_row.iter().copied());
            let ready: Vec<LocalId> = (reductions.iter().copied())
                .filter(|r| !done.contains(r) && deps[*r].is_subset(&done))
                .collect();
            if ready.is_empty() {
                let outs: Vec<LocalId> = self.element_outputs().map(|o| o.0).collect();
                sweeps.push(Sweep {
                    row_values: ready_row,
                    reductions: Vec::new(),
                    cone: self.cone(&outs),
                });
                return sweeps;
            }
            let operands: Vec<LocalId> = ready
                .iter()
                .map(|&r| self.locals[r].op.operands()[0])
                .collect();
            sweeps.push(Sweep {
                row_values: ready_row,
                cone: self.cone(&operands),
                reductions: ready.clone(),
            });
            done.extend(ready);
        }
    }

    /// The element-level members `targets` need, cut at row-level values and broadcasts
    /// (whose row value is ready), in order.
    fn cone(&self, targets: &[LocalId]) -> Vec<LocalId> {
        let mut seen = vec![false; self.locals.len()];
        let mut stack = targets.to_vec();
        while let Some(v) = stack.pop() {
            if !self.is_member(v) || self.row_level[v] || std::mem::replace(&mut seen[v], true) {
                continue;
            }
            if !matches!(self.locals[v].op, LocalOp::Broadcast(_)) {
                stack.extend(self.locals[v].op.operands().iter().copied());
            }
        }
        (0..self.locals.len()).filter(|&v| seen[v]).collect()
    }

    /// Bytes of one stashed row of `v` (padded for the widest vector's tail, whole lines).
    pub fn stash_bytes(&self, v: LocalId) -> usize {
        ((self.plan.n + 16) * self.locals[v].dtype.size()).div_ceil(64) * 64
    }

    /// Where each of `stash` can be kept instead of a scratch: the row of an element output
    /// of its own float type that the last sweep writes anyway (softmax's exp in its output,
    /// divided there in place, as PyTorch's CPU kernel does). The sweep computing the value
    /// then stores its row while it computes, where the stores to memory overlap the work,
    /// instead of all in the last sweep. One value per output, and only where no input the
    /// output may be written over (`describe::row::same_place`) is read by a later sweep:
    /// each sweep reads an element before it writes the same element, so the output's row
    /// may hold the value while the input is still read at that sweep, not after it.
    pub fn stash_homes(&self, stash: &[LocalId]) -> Vec<Option<usize>> {
        let pl = self.plan;
        let last = self.sweeps.len().saturating_sub(1);
        // The sweep first computing each stashed value; a later one reads it from its row.
        let firsts: Vec<Option<usize>> = (stash.iter())
            .map(|&v| self.sweeps.iter().position(|s| s.cone.contains(&v)))
            .collect();
        // The accesses each sweep reads: its row values' operands, and below what it stores
        // (its reductions' operands, the stashed values it computes first, the element
        // outputs in the last) down to row-level values and values stashed before it.
        let reads: Vec<HashSet<usize>> = (self.sweeps.iter().enumerate())
            .map(|(i, s)| {
                let stashed_before = |v: LocalId| {
                    (stash.iter().zip(&firsts)).any(|(&x, f)| x == v && f.is_some_and(|f| f < i))
                };
                let mut stack: Vec<LocalId> = s.row_values.clone();
                stack.extend(
                    s.reductions
                        .iter()
                        .map(|&r| self.locals[r].op.operands()[0]),
                );
                stack.extend(
                    (stash.iter().zip(&firsts))
                        .filter(|p| *p.1 == Some(i))
                        .map(|p| *p.0),
                );
                if s.reductions.is_empty() {
                    stack.extend(self.element_outputs().map(|o| o.0));
                }
                let mut seen = HashSet::new();
                let mut out = HashSet::new();
                while let Some(v) = stack.pop() {
                    if !seen.insert(v) {
                        continue;
                    }
                    match self.locals[v].op {
                        LocalOp::Read(a) => {
                            out.insert(a);
                        }
                        _ if stashed_before(v) => {}
                        _ if self.row_level[v] && !s.row_values.contains(&v) => {}
                        _ => stack.extend(self.locals[v].op.operands().iter().copied()),
                    }
                }
                out
            })
            .collect();
        let mut taken: HashSet<usize> = HashSet::new();
        (stash.iter().zip(&firsts))
            .map(|(&v, &first)| {
                let first = first?;
                if first >= last {
                    return None;
                }
                let dtype = self.locals[v].dtype;
                let home = self.element_outputs().map(|(_, a)| a).find(|&a| {
                    let out = &pl.accesses[a];
                    let overwritten = (0..pl.accesses.len())
                        .filter(|i| !pl.outs.contains(i))
                        .filter(|&i| same_place(&pl.accesses[i], out))
                        .any(|i| reads[first + 1..].iter().any(|r| r.contains(&i)));
                    !taken.contains(&a)
                        && out.dtype == dtype
                        && matches!(dtype, DType::F32 | DType::F64)
                        && out.i_stride == 1
                        && !overwritten
                })?;
                taken.insert(home);
                Some(home)
            })
            .collect()
    }

    /// The element values kept in a row-sized scratch, the one rule of every backend: an
    /// expensive value (a transcendental, a division) evaluated by two sweeps or more, and a
    /// transcendental the backend computes by a micro-kernel (`micro` gives it; the scratch
    /// is where the micro-kernel works), in order while they fit in `STASH_BYTES`.
    pub fn stash(
        &self,
        micro: &dyn Fn(&Local) -> Option<MicroFn>,
    ) -> Vec<(LocalId, Option<MicroFn>)> {
        let mut out = Vec::new();
        let mut budget = STASH_BYTES;
        for v in 0..self.locals.len() {
            let uses = self.sweeps.iter().filter(|s| s.cone.contains(&v)).count();
            let f = micro(&self.locals[v]);
            let wanted = (uses >= 2 && self.locals[v].is_expensive()) || (uses >= 1 && f.is_some());
            let bytes = self.stash_bytes(v);
            if wanted && bytes <= budget {
                budget -= bytes;
                out.push((v, f));
            }
        }
        out
    }
}
