//! Row kernels (`fusion::row_groups`: softmax, layer norm, log-softmax, means) as x86 code
//! at the target's width (16-lane AVX-512 or 8-lane AVX2), with the Cranelift row kernels'
//! ABI and phase structure (`codegen/row.rs`): per row, the row-level values whose reductions
//! are done, then one pass over the row per set of ready reductions, then a pass storing the
//! element-level outputs, then the row-level outputs.
//!
//! Differences from the Cranelift kernel, all deliberate:
//! - the last pass over a row prefetches the next row's lines of the contiguous inputs and
//!   outputs (`next_row_lines`): a row of 1024 f32 is one page, where the hardware streamer
//!   stops, and the last pass (softmax's divide of the stashed exp, layer norm's scale) reads
//!   from L1 and computes, so the memory system is idle in it otherwise. Same run, interleaved, 2-core Xeon: W4
//!   1.34-1.87 -> 0.91-1.28 ms, W3 2.52-2.87 -> 1.86-2.60 ms. Not an output that holds a
//!   stashed value (below);
//! - a stashed value lives in an output's row where one can hold it (`RowBody::stash_homes`:
//!   softmax's exp in its output, divided there in place), not in a scratch on the frame, so
//!   the sweep computing it stores the row while it computes (2-core Zen 4, [4096, 1024]
//!   softmax, alternating builds: 0.36-0.40 -> 0.31-0.32 ns per element; the hand loop
//!   0.29-0.31).
//! - sums add 16 (8) lanes at a time (blocks of `BLOCK` in f32, f64 across blocks, as before),
//!   so their last bits may differ from the 4-lane kernel's. Max/min are exact; a NaN anywhere
//!   in the row makes the result NaN (a mask of NaN lanes, as `reduce::NanFlag`: a k register,
//!   or on AVX2 a vector of all-ones lanes).
//! - AVX2 has 15 value registers: a phase of more reductions than fit (four accumulators
//!   each) goes to Cranelift.
//!
//! Row-level values live in the frame (one f32 each) and are broadcast where read.

use super::body::{self, identity_bits, AccSet, Dest, Leaf, Regs, Sweep, X, Y, Z};
use super::{
    add_imm, add_strided, epilogue, first_row, mark, next_row, node_ok, prologue, run_loop, Asm,
    Code, Fail, Lane, Width, MAX_PREFETCH_BYTES, PTR_REGS, R, R_I, R_N, STREAM_MIN_BYTES,
};
use crate::codegen::lower::{LocalId, LocalOp, RowBody, BLOCK};
use crate::codegen::target::Target;
use crate::ir::ReduceOp;
use crate::DType;
use iced_x86::code_asm::*;
use std::collections::{HashMap, HashSet};

/// The row kernel `rk` as x86 code at the target's width, or None when this backend does not
/// take it.
pub fn build(rb: &RowBody, t: &Target) -> Option<Code> {
    let w = Width::of(t)?;
    let lane = supported(rb)?;
    // 16-bit accesses at AVX-512 only (`half.rs`).
    if w == Width::Y && rb.plan.accesses.iter().any(|a| a.dtype.is_half()) {
        return None;
    }
    for &hoist in body::Hoist::levels(w) {
        match Rows::new(rb, hoist, w, lane).and_then(|e| e.run()) {
            Ok((bytes, prefetched, held, homed)) => {
                return Some(Code {
                    width: w,
                    lane,
                    int: false,
                    kind: "row kernel",
                    bytes,
                    tiled: 0,
                    prefetched,
                    held,
                    homed,
                })
            }
            Err(Fail::Registers) => continue,
            Err(Fail::Asm(e)) => {
                debug_assert!(false, "{} row kernel: assembler error {e}", w.name());
                return None;
            }
        }
    }
    None
}

/// The lane type of a row kernel this backend emits, if it does: every access, reduction
/// and output of one float type.
fn supported(rb: &RowBody) -> Option<Lane> {
    let pl = rb.plan;
    let lane = Lane::uniform(pl.accesses.iter().map(|a| a.dtype))?;
    let f = lane.dtype();
    if (pl.accesses.iter()).any(|a| pl.n > 1 && a.i_stride != 0 && a.i_stride != 1) {
        return None;
    }
    if pl.o_dims.iter().any(|&d| d > i32::MAX as usize) || pl.n > i32::MAX as usize / 8 {
        return None;
    }
    let ok = (0..rb.locals.len()).all(|v| {
        let l = &rb.locals[v];
        match l.op {
            LocalOp::Reduce(op, _) => l.dtype == f && spells_reduction(op, f),
            LocalOp::Broadcast(_) => l.dtype == f,
            _ => node_ok(&rb.locals, v, lane, false),
        }
    }) && rb
        .outputs
        .iter()
        .all(|&(o, _)| rb.locals[o].dtype.compute() == f);
    ok.then_some(lane)
}

/// Whether this code spells reduction `op` on `f` values as `lower::reduction` defines it: it
/// folds blocks in the lane type, sums into an f64 total, max and min into a total of the
/// lane type with NaN lanes noted in a mask.
pub(super) fn spells_reduction(op: ReduceOp, f: DType) -> bool {
    use crate::codegen::lower::reduction::{acc_dtype, block_dtype, tracks_nan};
    let total = match op {
        ReduceOp::Sum => DType::F64,
        ReduceOp::Max | ReduceOp::Min => f,
        ReduceOp::Prod => return false,
    };
    block_dtype(op, f) == f
        && acc_dtype(op, f) == total
        && tracks_nan(op, f) == (op != ReduceOp::Sum)
}

/// Frame layout (byte offsets from the 64-byte aligned rsp).
const SAVED: i32 = 0;
const BEGIN: i32 = 8;
const END: i32 = 16;
/// Full blocks left in a reduction pass.
const BLOCKS: i32 = 24;
const IDX: i32 = 32;

struct Rows<'a> {
    asm: Asm,
    rb: &'a RowBody<'a>,
    pl: &'a crate::describe::row::RowDescription,
    hoist: body::Hoist,
    /// Frame offsets: each access's first element, each access at the current row.
    start: i32,
    row: i32,
    /// Each row-level value's f32 (reductions and row-level members; broadcasts and reshapes
    /// share their input's).
    slots: HashMap<LocalId, i32>,
    /// Each reduction's running total (f64 for sums, f32 for max/min).
    totals: HashMap<LocalId, i32>,
    size: i32,
    /// Stride along the row (0 or 1) of each access.
    inner: Vec<i64>,
    /// The reductions of the current phase (accumulator set j is reduction j).
    sweep_reductions: Vec<LocalId>,
    /// Element values stashed (`RowBody::stash`, softmax's `exp(x - max)`): stored into a
    /// row-sized scratch (`Leaf::Tile`/`Dest::Tile` j) by the first sweep computing them,
    /// read by the later ones. Frame offset of the first, bytes per scratch.
    stash: Vec<LocalId>,
    /// Stashed values kept in an output's row instead (`RowBody::stash_homes`): stored and
    /// read through that output's access.
    homed: Vec<(LocalId, usize)>,
    stash_at: i32,
    stash_bytes: i32,
    /// Stashed values already in their scratch.
    stash_ready: HashSet<LocalId>,
    /// Accesses whose next row the last pass prefetches.
    prefetched: usize,
}

impl<'a> Rows<'a> {
    fn new(rb: &'a RowBody<'a>, hoist: body::Hoist, w: Width, lane: Lane) -> R<Self> {
        let pl = rb.plan;
        let na = pl.accesses.len() as i32;
        let nd = pl.o_dims.len() as i32;
        let start = IDX + 8 * nd;
        let row = start + 8 * na;
        let mut at = row + 8 * na;
        let mut slots = HashMap::new();
        let mut totals = HashMap::new();
        for (v, l) in rb.locals.iter().enumerate() {
            if l.op.is_leaf() || matches!(l.op, LocalOp::Broadcast(_)) || !rb.row_level[v] {
                continue;
            }
            slots.insert(v, at);
            at += 8;
            if matches!(l.op, LocalOp::Reduce(..)) {
                totals.insert(v, at);
                at += 8;
            }
        }
        // Stash: the one rule (no micro-kernels: transcendentals are computed inline at
        // this width), every scratch the same size (all values have the lane's type).
        let stashed: Vec<LocalId> = rb.stash(&|_| None).into_iter().map(|s| s.0).collect();
        let homes = rb.stash_homes(&stashed);
        let homed: Vec<(LocalId, usize)> = (stashed.iter().zip(&homes))
            .filter_map(|(&v, h)| Some((v, (*h)?)))
            .collect();
        let stash: Vec<LocalId> = (stashed.into_iter())
            .filter(|v| !homed.iter().any(|h| h.0 == *v))
            .collect();
        let stash_bytes = stash.first().map_or(0, |&v| rb.stash_bytes(v)) as i32;
        let stash_at = (at + 63) / 64 * 64;
        let at = stash_at + stash_bytes * stash.len() as i32;
        let size = (at + 63) / 64 * 64;
        let inner = pl
            .accesses
            .iter()
            .map(|a| if a.i_stride == 0 { 0 } else { 1 })
            .collect();
        Ok(Rows {
            asm: Asm::new(w, lane)?,
            rb,
            pl,
            hoist,
            start,
            row,
            slots,
            totals,
            size,
            inner,
            sweep_reductions: Vec::new(),
            stash,
            homed,
            stash_at,
            stash_bytes,
            stash_ready: HashSet::new(),
            prefetched: 0,
        })
    }

    /// The 16-bit float type of each access of one (`half.rs`).
    fn halves(&self) -> Vec<Option<DType>> {
        (self.pl.accesses.iter())
            .map(|a| a.dtype.is_half().then_some(a.dtype))
            .collect()
    }

    /// The frame slot of row-level value `v` (through broadcasts).
    fn slot(&self, mut v: LocalId) -> Option<i32> {
        loop {
            if let Some(&s) = self.slots.get(&v) {
                return Some(s);
            }
            match self.rb.locals[v].op {
                LocalOp::Broadcast(x) => v = x,
                _ => return None,
            }
        }
    }

    /// How a pass reads `x` when `avail` row-level values are in the frame.
    fn leaf(&self, x: LocalId, avail: &HashSet<LocalId>) -> Option<Leaf> {
        if let Some(l) = Leaf::of(&self.rb.locals[x]) {
            return Some(l);
        }
        if self.stash_ready.contains(&x) {
            return self.stashed_at(x).map(|(leaf, _)| leaf);
        }
        if matches!(self.rb.locals[x].op, LocalOp::Broadcast(_)) || avail.contains(&x) {
            return self.slot(x).map(Leaf::Row);
        }
        None
    }

    /// Where stashed value `x` lives, as a later sweep reads it and as the sweep computing it
    /// stores it: its scratch `j`, or the row of the output `a` holding it.
    fn stashed_at(&self, x: LocalId) -> Option<(Leaf, Dest)> {
        if let Some(&(_, a)) = self.homed.iter().find(|h| h.0 == x) {
            return Some((Leaf::Read(a), Dest::Access(a)));
        }
        let j = self.stash.iter().position(|&s| s == x)?;
        Some((Leaf::Tile(j), Dest::Tile(j)))
    }

    /// The kernel's bytes, how many accesses it prefetches the next row of, the most values
    /// a pass holds in registers, and how many stashed values it keeps in outputs' rows.
    fn run(mut self) -> R<(Vec<u8>, usize, usize, usize)> {
        let size = self.size;
        prologue(&mut self.asm.a, size, SAVED, BEGIN, END)?;
        for (i, acc) in self.pl.accesses.iter().enumerate() {
            let bytes = self.asm.elem_bytes(acc.dtype) as i64;
            let a = &mut self.asm.a;
            a.mov(rax, qword_ptr(rdi + (acc.ptr as i32) * 8))?;
            add_imm(a, rax, acc.offset * bytes)?;
            a.mov(qword_ptr(rsp + (self.start + 8 * i as i32)), rax)?;
        }
        let nd = self.pl.o_dims.len();
        let a = &mut self.asm.a;
        let mut done = a.create_label();
        if self.pl.o_dims.contains(&0) {
            a.jmp(done)?;
        }
        first_row(a, IDX, nd, BEGIN, END, done)?;
        let mut top = a.create_label();
        mark(a, &mut top)?;
        for (i, acc) in self.pl.accesses.iter().enumerate() {
            let scale = self.asm.elem_bytes(acc.dtype);
            let a = &mut self.asm.a;
            a.mov(rcx, qword_ptr(rsp + (self.start + 8 * i as i32)))?;
            add_strided(a, rcx, IDX, &acc.o_strides, scale, rdx)?;
            a.mov(qword_ptr(rsp + (self.row + 8 * i as i32)), rcx)?;
        }
        self.one_row()?;
        let a = &mut self.asm.a;
        next_row(a, IDX, &self.pl.o_dims, END, top)?;
        mark(a, &mut done)?;
        epilogue(a, SAVED)?;
        let (prefetched, held, homed) = (self.prefetched, self.asm.held, self.homed.len());
        Ok((self.asm.finish()?, prefetched, held, homed))
    }

    /// The sweeps of one row (pointers in the frame).
    fn one_row(&mut self) -> R<()> {
        let rb = self.rb;
        let mut avail: HashSet<LocalId> = HashSet::new();
        // The last pass over the row prefetches the next one: the element outputs' pass, or
        // with none (a lone `x.sum(-1)`) the last reduction pass.
        let last_reductions = match rb.element_outputs().next() {
            None => rb.sweeps.iter().rposition(|s| !s.reductions.is_empty()),
            Some(_) => None,
        };
        for (i, sweep) in rb.sweeps.iter().enumerate() {
            // (Broadcasts read their input's slot: nothing to compute.)
            let values: Vec<LocalId> = (sweep.row_values.iter().copied())
                .filter(|&v| !matches!(rb.locals[v].op, LocalOp::Broadcast(_)))
                .collect();
            self.row_level(&values, &mut avail)?;
            if !sweep.reductions.is_empty() {
                let last = last_reductions == Some(i);
                self.reduce_sweep(&sweep.reductions, &sweep.cone, &avail, last)?;
                avail.extend(sweep.reductions.iter().copied());
                continue;
            }
            // The last sweep: element-level outputs.
            let stores: Vec<(LocalId, Dest)> = rb
                .element_outputs()
                .map(|(o, a)| (o, Dest::Access(a)))
                .collect();
            if !stores.is_empty() {
                let leaf = |x: LocalId| self.leaf(x, &avail);
                let mut pass =
                    Sweep::of(&rb.locals, self.inner.clone(), &sweep.cone, &leaf, stores);
                pass.halves = self.halves();
                // The last pass over the row (softmax's divide of the stashed exp) works from
                // L1: it prefetches the next row, which the first pass then finds in cache.
                // Rows of 4 KiB are each a page, where the hardware's streamer stops and
                // starts again.
                self.loop_pass(&pass, &[], true)?;
            }
        }
        // Row-level outputs: one element per row.
        for (o, a) in rb.row_outputs() {
            {
                let slot = self.slot(o).expect("a row-level output has a slot");
                let out = qword_ptr(rsp + (self.row + 8 * a as i32));
                let d = self.pl.accesses[a].dtype;
                let a = &mut self.asm.a;
                a.mov(rax, out)?;
                match self.asm.lane {
                    // (The slot holds the value rounded to its 16-bit type: its high half for
                    // bf16, converted exactly for f16.)
                    Lane::F32 if d == DType::BF16 => {
                        a.mov(ecx, dword_ptr(rsp + slot))?;
                        a.shr(ecx, 16)?;
                        a.mov(word_ptr(rax), cx)?;
                    }
                    Lane::F32 if d == DType::F16 => {
                        a.vmovss(xmm0, dword_ptr(rsp + slot))?;
                        a.vcvtps2ph(xmm0, xmm0, 0)?;
                        a.vpextrw(word_ptr(rax), xmm0, 0)?;
                    }
                    Lane::F32 => {
                        a.vmovss(xmm0, dword_ptr(rsp + slot))?;
                        a.vmovss(dword_ptr(rax), xmm0)?;
                    }
                    Lane::F64 => {
                        a.vmovsd(xmm0, qword_ptr(rsp + slot))?;
                        a.vmovsd(qword_ptr(rax), xmm0)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Pointer registers of the accesses a pass uses, loaded from the frame.
    fn pointers(&mut self, pass: &Sweep) -> R<Vec<Option<AsmRegister64>>> {
        let mut ptrs = vec![None; self.pl.accesses.len()];
        let mut next = 0;
        for (ai, used) in pass.used.iter().enumerate() {
            if *used {
                let reg = *PTR_REGS.get(next).ok_or(Fail::Registers)?;
                next += 1;
                ptrs[ai] = Some(reg);
                self.asm
                    .a
                    .mov(reg, qword_ptr(rsp + (self.row + 8 * ai as i32)))?;
            }
        }
        Ok(ptrs)
    }

    /// The row-level members whose reductions are done, not computed yet: one vector of code
    /// (every lane the same), each stored to its slot.
    fn row_level(&mut self, cands: &[LocalId], avail: &mut HashSet<LocalId>) -> R<()> {
        if cands.is_empty() {
            return Ok(());
        }
        let stores = cands
            .iter()
            .map(|&m| (m, Dest::Frame(self.slots[&m])))
            .collect();
        let before = avail.clone();
        let leaf = |x: LocalId| self.leaf(x, &before);
        let mut pass = Sweep::of(&self.rb.locals, self.inner.clone(), cands, &leaf, stores);
        pass.halves = self.halves();
        let ptrs = self.pointers(&pass)?;
        // Nothing hoisted: a value stored by this pass may be read by a later node of it.
        let hoisted = body::Hoisted::default();
        let ctx = body::Ctx {
            ptrs: &ptrs,
            accs: &[],
            hoisted: &hoisted,
            tiles: 0,
            tile_bytes: 0,
            prefetch: &[],
            bool_tail: None,
            stream: &[],
        };
        self.asm.a.xor(R_I, R_I)?;
        let mut regs = Regs::new(self.asm.w);
        pass.vector(&mut self.asm, &ctx, &mut regs, 0, false)?;
        avail.extend(cands.iter().copied());
        Ok(())
    }

    /// One pass over the row computing the reductions `ready` together (their inputs' cone
    /// is `cone`), each result to its slot.
    fn reduce_sweep(
        &mut self,
        ready: &[LocalId],
        cone: &[LocalId],
        avail: &HashSet<LocalId>,
        prefetch_next: bool,
    ) -> R<()> {
        let locals = &self.rb.locals;
        self.sweep_reductions = ready.to_vec();
        let mut ops = Vec::new();
        for &r in ready {
            let LocalOp::Reduce(op, _) = locals[r].op else {
                unreachable!("a reduction")
            };
            let total = self.totals[&r];
            let bits = identity_bits(op, self.asm.lane);
            let a = &mut self.asm.a;
            match (op, self.asm.lane) {
                (ReduceOp::Sum, _) => a.mov(qword_ptr(rsp + total), 0)?,
                (_, Lane::F32) => a.mov(dword_ptr(rsp + total), bits as u32 as i32)?,
                (_, Lane::F64) => {
                    a.mov(rax, bits)?;
                    a.mov(qword_ptr(rsp + total), rax)?;
                }
            }
            ops.push(op);
        }
        let mut stores: Vec<(LocalId, Dest)> = (ready.iter().enumerate())
            .map(|(j, &r)| (locals[r].op.operands()[0], Dest::Acc(j)))
            .collect();
        // Stashed values this phase computes first go to their scratch or output row.
        let mut stored = Vec::new();
        let stashed = self.stash.iter().chain(self.homed.iter().map(|h| &h.0));
        for &m in stashed {
            if cone.contains(&m) && !self.stash_ready.contains(&m) {
                let (_, dest) = self.stashed_at(m).expect("stashed");
                stores.push((m, dest));
                stored.push(m);
            }
        }
        let leaf = |x: LocalId| self.leaf(x, avail);
        let mut pass = Sweep::of(locals, self.inner.clone(), cone, &leaf, stores);
        pass.halves = self.halves();
        let accs = self.loop_pass(&pass, &ops, prefetch_next)?;
        self.stash_ready.extend(stored);
        let lane = self.asm.lane;
        for (j, &r) in ready.iter().enumerate() {
            let (slot, total) = (self.slots[&r], self.totals[&r]);
            let a = &mut self.asm.a;
            match (ops[j], lane) {
                (ReduceOp::Sum, Lane::F32) => {
                    a.vcvtsd2ss(xmm0, xmm0, qword_ptr(rsp + total))?;
                    a.vmovss(dword_ptr(rsp + slot), xmm0)?;
                }
                (ReduceOp::Sum, Lane::F64) => self.copy_lane(rsp + slot, rsp + total)?,
                _ => {
                    self.copy_lane(rsp + slot, rsp + total)?;
                    if let Some(k) = accs[j].nan {
                        let mut skip = self.asm.a.create_label();
                        self.asm.mask_test(k)?;
                        let a = &mut self.asm.a;
                        a.jz(skip)?;
                        match lane {
                            Lane::F32 => a.mov(dword_ptr(rsp + slot), f32::NAN.to_bits() as i32)?,
                            Lane::F64 => {
                                a.mov(rax, f64::NAN.to_bits())?;
                                a.mov(qword_ptr(rsp + slot), rax)?;
                            }
                        }
                        mark(a, &mut skip)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// A pass over the row (elements 0 to n) with the pass's pointers and hoisted values; with
    /// reductions `ops` (accumulator set j folds `Dest::Acc(j)`), in blocks of `BLOCK` elements
    /// whose accumulators fold into the running totals. Returns the accumulator sets.
    fn loop_pass(&mut self, pass: &Sweep, ops: &[ReduceOp], prefetch_next: bool) -> R<Vec<AccSet>> {
        let ptrs = self.pointers(pass)?;
        let prefetch = if prefetch_next {
            self.next_row_lines(&ptrs)?
        } else {
            Vec::new()
        };
        self.prefetched = self.prefetched.max(prefetch.len());
        let mut regs = Regs::new(self.asm.w);
        let mut accs = Vec::new();
        let mut fixed = Vec::new();
        for &op in ops {
            let rs = [regs.z()?, regs.z()?, regs.z()?, regs.z()?];
            fixed.extend(rs);
            let nan = match op {
                ReduceOp::Max | ReduceOp::Min => {
                    let k = regs.mask()?;
                    self.asm.mask_fill(k, false)?;
                    Some(k)
                }
                _ => None,
            };
            accs.push(AccSet { op, regs: rs, nan });
        }
        let mut hoisted = pass.hoist(&mut self.asm, &ptrs, &mut regs, self.hoist)?;
        hoisted.fixed = fixed;
        let ctx = body::Ctx {
            ptrs: &ptrs,
            accs: &accs,
            hoisted: &hoisted,
            tiles: self.stash_at,
            tile_bytes: self.stash_bytes,
            prefetch: &prefetch,
            bool_tail: None,
            stream: &[],
        };
        let n = self.pl.n as i64;
        let block = if accs.is_empty() { n.max(1) } else { BLOCK };
        let (full, rest) = (n / block, n % block);
        self.asm.a.xor(R_I, R_I)?;
        let mut blocks = Vec::new();
        if full > 0 {
            blocks.push((full, block));
        }
        if rest > 0 {
            blocks.push((1, rest));
        }
        for (count, len) in blocks {
            let mut top = self.asm.a.create_label();
            if count > 1 {
                self.asm.a.mov(qword_ptr(rsp + BLOCKS), count as i32)?;
            }
            mark(&mut self.asm.a, &mut top)?;
            self.init_accs(&accs)?;
            self.asm.a.lea(R_N, qword_ptr(R_I + len as i32))?;
            run_loop(&mut self.asm, pass, &ctx, &regs)?;
            self.fold_accs(&accs, &regs)?;
            if count > 1 {
                let a = &mut self.asm.a;
                a.sub(qword_ptr(rsp + BLOCKS), 1)?;
                a.jnz(top)?;
            }
        }
        Ok(accs)
    }

    /// The kernel's contiguous f32 accesses that move to a new place with the next row (inputs
    /// and outputs; not the row-invariant ones such as layer norm's gamma), with a register
    /// holding each one's row pointer: what `run_loop` prefetches (`Ctx::prefetch`). All of
    /// them, not only those the pass reads: the next row's first pass reads them (softmax's
    /// last pass reads its exp from the stash); those the pass does not use get a free pointer
    /// register here (none left: not prefetched). The next row is taken one step along the
    /// innermost row dimension; past the end of that dimension the lines are wasted, never
    /// wrong (a prefetch does not fault).
    fn next_row_lines(
        &mut self,
        ptrs: &[Option<AsmRegister64>],
    ) -> R<Vec<(AsmRegister64, i32, bool)>> {
        let lane = self.asm.lane.bytes() as i64;
        let moving: Vec<(usize, i64)> = (self.pl.accesses.iter().enumerate())
            .filter_map(|(ai, acc)| {
                let step = acc.o_strides.last()? * self.asm.elem_bytes(acc.dtype) as i64;
                let run = acc.i_stride == 1;
                // An output holding a stashed value is first written by an earlier sweep,
                // whose stores stream while it computes: prefetching its next row here only
                // holds this short pass up (softmax 0.40 → 0.32 ns per element).
                let home = self.homed.iter().any(|h| h.1 == ai);
                (run && !home && (64..MAX_PREFETCH_BYTES).contains(&step.abs()))
                    .then_some((ai, step))
            })
            .collect();
        // Small kernels run from cache: the prefetches would only cost instructions. Rows
        // shorter than a page share pages with their neighbours, which the streamer follows.
        let rows: usize = self.pl.o_dims.iter().product();
        let row_bytes = self.pl.n * lane as usize;
        if rows * row_bytes * moving.len() < STREAM_MIN_BYTES || row_bytes < 4096 {
            return Ok(Vec::new());
        }
        let mut free = PTR_REGS.iter().filter(|r| !ptrs.contains(&Some(**r)));
        let mut lines = Vec::new();
        for (ai, step) in moving {
            let reg = match ptrs[ai] {
                Some(reg) => reg,
                None => {
                    let Some(&reg) = free.next() else { continue };
                    let at = self.row + 8 * ai as i32;
                    self.asm.a.mov(reg, qword_ptr(rsp + at))?;
                    reg
                }
            };
            lines.push((reg, step as i32, self.rb.outputs.iter().any(|o| o.1 == ai)));
        }
        Ok(lines)
    }

    /// The lane at `dst` = the lane at `src` (through rax).
    fn copy_lane(&mut self, dst: AsmMemoryOperand, src: AsmMemoryOperand) -> R<()> {
        let a = &mut self.asm.a;
        match self.asm.lane {
            Lane::F32 => {
                a.mov(eax, dword_ptr(src))?;
                a.mov(dword_ptr(dst), eax)?;
            }
            Lane::F64 => {
                a.mov(rax, qword_ptr(src))?;
                a.mov(qword_ptr(dst), rax)?;
            }
        }
        Ok(())
    }

    /// Accumulators to their reduction's identity.
    fn init_accs(&mut self, accs: &[AccSet]) -> R<()> {
        for set in accs {
            let bits = identity_bits(set.op, self.asm.lane);
            for &r in &set.regs {
                if bits == 0 {
                    self.asm.zero(r)?;
                } else {
                    let l = self.asm.const_label(bits);
                    self.asm.broadcast(r, l)?;
                }
            }
        }
        Ok(())
    }

    /// Each set's four accumulators, then its lanes, into its running total.
    fn fold_accs(&mut self, accs: &[AccSet], regs: &Regs) -> R<()> {
        use crate::codegen::traced::SymOp as S;
        let mut regs = regs.clone();
        let t = regs.z()?;
        let totals: Vec<i32> = (0..accs.len())
            .map(|j| self.totals[&self.reduction_of(j)])
            .collect();
        let e = &mut self.asm;
        for (j, set) in accs.iter().enumerate() {
            let total = totals[j];
            let [r0, r1, r2, r3] = set.regs;
            let op = |e: &mut Asm, d: u8, x: u8, y: u8| -> R<()> {
                let regs = [x, y];
                let r = |j: u32| regs[j as usize];
                let sym = match set.op {
                    ReduceOp::Sum => S::Add(0, 1),
                    ReduceOp::Max => S::Max(0, 1),
                    _ => S::Min(0, 1),
                };
                e.sym_op(sym, d, &r)
            };
            op(e, r0, r0, r1)?;
            op(e, r2, r2, r3)?;
            op(e, r0, r0, r2)?;
            // Lanes folded with full-width shuffles, every lane ending with the result: halves
            // and quarters of a zmm (AVX-512F on all 32 registers; the VEX 256/128-bit forms
            // reach only the first 16), the halves of a ymm; then pairs, neighbours.
            // f64 lanes: the 128-bit blocks alike, then the two doubles of each swapped.
            let (blocks, pd): (&[u32], u32) = match e.w {
                Width::Z => (&[0x4e, 0xb1], 0x55),
                Width::Y => (&[0x01], 0x5),
            };
            let within: &[u32] = match e.lane {
                Lane::F32 => &[0x4e, 0xb1],
                Lane::F64 => &[pd],
            };
            let (z, y) = (|r: u8| Z[r as usize], |r: u8| Y[r as usize]);
            for (i, &imm) in blocks.iter().chain(within).enumerate() {
                match (e.w, i < blocks.len(), e.lane) {
                    (Width::Z, true, _) => e.a.vshuff32x4(z(t), z(r0), z(r0), imm)?,
                    (Width::Y, true, _) => e.a.vperm2f128(y(t), y(r0), y(r0), imm)?,
                    (Width::Z, false, Lane::F32) => e.a.vpermilps(z(t), z(r0), imm)?,
                    (Width::Y, false, Lane::F32) => e.a.vpermilps(y(t), y(r0), imm)?,
                    (Width::Z, false, Lane::F64) => e.a.vpermilpd(z(t), z(r0), imm)?,
                    (Width::Y, false, Lane::F64) => e.a.vpermilpd(y(t), y(r0), imm)?,
                }
                op(e, r0, r0, t)?;
            }
            // The lane into the running total. AVX-512: scalar EVEX forms (the accumulators
            // may be xmm16-31); AVX2: VEX.
            let x0 = X[r0 as usize];
            let a = &mut e.a;
            let (q, d) = (qword_ptr(rsp + total), dword_ptr(rsp + total));
            macro_rules! scalar {
                ($a:expr) => {{
                    match (set.op, e.lane) {
                        (ReduceOp::Sum, Lane::F32) => {
                            $a.vcvtss2sd(x0, x0, x0)?;
                            $a.vaddsd(x0, x0, q)?
                        }
                        (ReduceOp::Sum, Lane::F64) => $a.vaddsd(x0, x0, q)?,
                        (ReduceOp::Max, Lane::F32) => $a.vmaxss(x0, x0, d)?,
                        (ReduceOp::Max, Lane::F64) => $a.vmaxsd(x0, x0, q)?,
                        (_, Lane::F32) => $a.vminss(x0, x0, d)?,
                        (_, Lane::F64) => $a.vminsd(x0, x0, q)?,
                    }
                    match (set.op, e.lane) {
                        (ReduceOp::Max | ReduceOp::Min, Lane::F32) => $a.vmovss(d, x0)?,
                        _ => $a.vmovsd(q, x0)?,
                    }
                }};
            }
            match e.w {
                Width::Z => scalar!(a.evex()),
                Width::Y => scalar!(a),
            };
        }
        Ok(())
    }

    /// The reduction accumulated by set `j` of the current phase.
    fn reduction_of(&self, j: usize) -> LocalId {
        self.sweep_reductions[j]
    }
}
