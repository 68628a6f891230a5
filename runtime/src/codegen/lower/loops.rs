//! Loop kernels lowered: the collapsed iteration space and accesses of their description
//! (`describe::loops`), the body as locals, the outputs, and the tiling of their
//! transcendentals through the micro-kernels.

use super::{locals_text, Builder, Local, LocalId, LocalOp};
use crate::codegen::micro::{self, MicroFn};
use crate::codegen::target::Target;
use crate::describe::loops::{Access, LoopDescription};
use crate::fusion::partition::Kernel;
use crate::ir::{BinaryOp, Graph, Op};
use std::collections::HashSet;

/// Shortest innermost run (elements) worth tiling: the micro-kernel call and the extra passes
/// cost a few dozen cycles per tile.
pub const MIN_TILED_RUN: usize = 128;

/// At most this many tiled locals per kernel (their tiles, 4 KiB each, are on the stack of
/// the calling thread); further transcendentals stay inline.
const MAX_TILED: usize = 16;

/// A loop kernel as every backend reads it.
pub struct LoopKernel<'p> {
    /// Collapsed iteration dims (at least one; `begin..end` ranges over the first).
    pub dims: &'p [usize],
    pub accesses: &'p [Access],
    /// The body, in dependency order.
    pub locals: Vec<Local>,
    /// Each output: its local and the access it is stored through, in output order.
    pub outputs: Vec<(LocalId, usize)>,
    /// The transcendentals computed tile by tile by micro-kernels, where that pays at this
    /// target (the x86 backend may also compute them inline).
    pub tiling: Option<Tiling>,
}

/// Lower loop kernel `k` (described by `p`) for target `t`.
pub fn lower<'p>(g: &Graph, k: &Kernel, p: &'p LoopDescription, t: &Target) -> LoopKernel<'p> {
    let mut b = Builder::new(g);
    let in_kernel: HashSet<_> = k.nodes.iter().copied().collect();
    for &v in &k.nodes {
        let n = g.node(v);
        if n.op.is_view() {
            // Read through its folded access (or a constant's view).
            b.leaf(v, false, || p.reads[&v]);
            continue;
        }
        if matches!(n.op, Op::Reduce(..)) {
            // A fused column sum (`describe::columns`): its partial so far, read through its
            // output's access, plus its operand here (an element of the kernel seen through
            // reshapes).
            let mut x = n.inputs[0];
            while !in_kernel.contains(&x) {
                x = g.node(x).inputs[0];
            }
            let j = k
                .outputs
                .iter()
                .position(|o| *o == v)
                .expect("a sum is an output");
            let partial = b.push(LocalOp::Read(p.outs[j]), n.dtype);
            let sum = b.push(
                LocalOp::Binary(BinaryOp::Add, partial, b.of[&(x, false)]),
                n.dtype,
            );
            b.of.insert((v, false), sum);
            continue;
        }
        let args: Vec<LocalId> = (n.inputs.iter())
            .map(|&x| match in_kernel.contains(&x) {
                true => b.of[&(x, false)],
                false => b.leaf(x, false, || p.reads[&x]),
            })
            .collect();
        let l = b.compute(v, &args);
        b.of.insert((v, false), l);
    }
    let outputs = (k.outputs.iter().enumerate())
        .map(|(j, o)| (b.stored(*o, b.of[&(*o, false)]), p.outs[j]))
        .collect();
    let mut lk = LoopKernel {
        dims: &p.dims,
        accesses: &p.accesses,
        locals: b.locals,
        outputs,
        tiling: None,
    };
    lk.tiling = tiling(&lk, t);
    lk
}

impl LoopKernel<'_> {
    /// The kernel as text (`Lowered::key`).
    pub fn key(&self) -> String {
        use std::fmt::Write;
        let mut s = locals_text(&self.locals);
        let _ = write!(s, "dims {:?};", self.dims);
        for a in self.accesses {
            let _ = write!(s, "a{} {:?} {} {:?};", a.ptr, a.dtype, a.offset, a.strides);
        }
        let _ = write!(s, "outs {:?}", self.outputs);
        s
    }

    /// Whether access `a` is an output's.
    pub fn is_output(&self, a: usize) -> bool {
        self.outputs.iter().any(|o| o.1 == a)
    }

    /// Whether access `a` is read (an input's, or a column sum's partial).
    pub fn is_read(&self, a: usize) -> bool {
        self.locals.iter().any(|l| l.op == LocalOp::Read(a))
    }

    /// The length of the innermost run.
    pub fn inner(&self) -> usize {
        *self.dims.last().expect("at least one dim")
    }
}

/// Which transcendentals of a kernel go to micro-kernels, and in which sweep.
///
/// The kernel's DAG is cut at those locals: sweep r computes (per tile) the arguments of the
/// tiled locals whose cone holds r earlier tiled locals on its longest path, stores each
/// into the local's tile, then calls the local's micro-kernel in place on the tile; the last
/// sweep (r = `last`) computes the outputs. A sweep computes its roots from the kernel's
/// leaves (reads, constants, and tiles of earlier sweeps): values other than tiled results
/// are recomputed, not carried across sweeps.
pub struct Tiling {
    /// (local, the sweep computing its argument, micro-kernel), in local order.
    pub locals: Vec<(LocalId, usize, MicroFn)>,
    /// The sweep storing the outputs (each tile at most one sweep before).
    pub last: usize,
}

impl Tiling {
    /// The tile index of `v` if it is a tiled local whose result exists in sweep `r`.
    pub fn done_before(&self, v: LocalId, r: usize) -> Option<usize> {
        (self.locals.iter()).position(|&(t, sweep, _)| t == v && sweep < r)
    }

    /// The roots of sweep `r` and where each goes: the arguments of sweep r's tiled locals
    /// (to tile j), or the outputs (to their accesses: `None`).
    pub fn roots(&self, lk: &LoopKernel, r: usize) -> Vec<(LocalId, Option<usize>)> {
        if r < self.last {
            (self.locals.iter().enumerate())
                .filter(|(_, s)| s.1 == r)
                .map(|(j, s)| (lk.locals[s.0].op.operands()[0], Some(j)))
                .collect()
        } else {
            lk.outputs.iter().map(|&(o, _)| (o, None)).collect()
        }
    }

    /// The locals sweep `r` computes or reads: the cone of its roots, cut at tiled locals of
    /// earlier sweeps (their tiles).
    pub fn cone(&self, lk: &LoopKernel, r: usize) -> Vec<bool> {
        let mut seen = vec![false; lk.locals.len()];
        let mut stack: Vec<LocalId> = self.roots(lk, r).into_iter().map(|x| x.0).collect();
        while let Some(v) = stack.pop() {
            if std::mem::replace(&mut seen[v], true) || self.done_before(v, r).is_some() {
                continue;
            }
            stack.extend(lk.locals[v].op.operands().iter().copied());
        }
        seen
    }
}

/// The tiling of a kernel, or None to keep the single sweep (no transcendental has a
/// micro-kernel at this CPU's level, or the innermost run is too short to win).
fn tiling(lk: &LoopKernel, t: &Target) -> Option<Tiling> {
    if lk.inner() < MIN_TILED_RUN {
        return None;
    }
    let mut level = vec![0usize; lk.locals.len()];
    let mut locals = Vec::new();
    for (v, l) in lk.locals.iter().enumerate() {
        let lin = (l.op.operands().iter())
            .map(|&x| level[x])
            .max()
            .unwrap_or(0);
        let micro = match l.op {
            LocalOp::Unary(u, _) if locals.len() < MAX_TILED => micro::kernel(t, u, l.dtype),
            _ => None,
        };
        level[v] = lin;
        if let Some(f) = micro {
            locals.push((v, lin, f));
            level[v] = lin + 1;
        }
    }
    let last = locals.iter().map(|n| n.1 + 1).max()?;
    Some(Tiling { locals, last })
}
