//! One sweep of an x86 kernel on one vector (16 lanes AVX-512, 8 lanes AVX2): which values
//! it computes, loads and stores, where each is (`regs.rs`), and each op's instructions
//! (spelled by `Asm`'s helpers at the kernel's width; transcendentals by `inline.rs`).

mod accumulate;
mod inline;
mod regs;

pub(super) use accumulate::{identity_bits, AccSet};
use regs::Loc;
pub(super) use regs::{zk, Hoist, Hoisted, Regs, K, SCRATCH_K, TAIL, X, Y, Y_TAIL, Z};

use super::{Asm, Width, R, R_I};
use crate::codegen::lower::{max_min_needs_nan_fixup, Local, LocalId, LocalOp, LoopKernel, Tiling};
use crate::codegen::traced::Function;
use crate::ir::{BinaryOp, CmpOp, UnaryOp};
use crate::{DType, Literal};
use iced_x86::code_asm::*;
use std::collections::{HashMap, HashSet};

/// What a vector's code needs besides the pass: pointer registers, hoisted values, tiles.
pub(super) struct Ctx<'c> {
    pub ptrs: &'c [Option<AsmRegister64>],
    /// Reduction accumulators (`Dest::Acc`), row kernels only.
    pub accs: &'c [AccSet],
    pub hoisted: &'c Hoisted,
    /// Frame offset of the first tile, and bytes per tile.
    pub tiles: i32,
    pub tile_bytes: i32,
    /// Lines to prefetch in each unrolled group, one per vector: `(pointer, bytes ahead of the
    /// vectors just computed, written)`; the next row (row kernels' last pass) or a fixed
    /// distance ahead (loop kernels' long streams).
    pub prefetch: &'c [(AsmRegister64, i32, bool)],
    /// The frame slot (32 bytes) through which the tail vector reads and writes bool
    /// accesses (`bools.rs`); None where the pass has none.
    pub bool_tail: Option<i32>,
    /// The accesses whose whole vectors are stored non-temporally (`Emitter::streamed`;
    /// their pointers aligned to a vector), by access; empty for none.
    pub stream: &'c [bool],
}

/// A value the pass reads rather than computes.
#[derive(Clone, Copy)]
pub(super) enum Leaf {
    Const(Literal, DType),
    /// A tiled transcendental's tile.
    Tile(usize),
    /// Through an access (contiguous or broadcast along the run).
    Read(usize),
    /// A row-level f32 kept in the frame at this offset (row kernels), broadcast.
    Row(i32),
}

impl Leaf {
    /// How a read or a constant local is read (None: computed).
    pub fn of(l: &Local) -> Option<Leaf> {
        match l.op {
            LocalOp::Const(c) => Some(Leaf::Const(c, l.dtype)),
            LocalOp::Read(a) => Some(Leaf::Read(a)),
            _ => None,
        }
    }
}

/// Where a pass stores a value.
#[derive(Clone, Copy)]
pub(super) enum Dest {
    Access(usize),
    Tile(usize),
    /// Folded into reduction accumulator set `j` (row kernels).
    Acc(usize),
    /// Lane 0 to the frame at this offset (a row-level value).
    Frame(i32),
}

/// One pass over a run of elements: sweep `r` of a tiled kernel, the whole kernel, or a phase
/// of a row kernel.
pub(super) struct Sweep<'a> {
    locals: &'a [Local],
    /// Stride along the run (0 or 1) of each access.
    inner: Vec<i64>,
    /// How each value read but not computed is read.
    leaves: HashMap<LocalId, Leaf>,
    /// The locals computed, in order.
    nodes: Vec<LocalId>,
    /// Reads of each value in one vector (operands and stores).
    uses: HashMap<LocalId, usize>,
    stores: Vec<(LocalId, Dest)>,
    /// The position in `nodes` of the last node with an operand read through an access:
    /// stores to accesses wait for it (an output may share an input's buffer).
    last_read: Option<usize>,
    /// Accesses the pass touches.
    pub used: Vec<bool>,
    /// Accesses of bools (a byte per element, read and written as masks: `bools.rs`).
    pub bools: Vec<bool>,
    /// The 16-bit float type of each access of one (`half.rs`).
    pub halves: Vec<Option<DType>>,
}

impl<'a> Sweep<'a> {
    pub fn new(lk: &'a LoopKernel, tiling: Option<&'a Tiling>, r: Option<usize>) -> Self {
        let tiled = tiling.zip(r);
        let cone = tiled.map(|(st, r)| st.cone(lk, r));
        let stores = match tiled {
            Some((st, r)) if r < st.last => (st.roots(lk, r).into_iter())
                .map(|(x, j)| (x, Dest::Tile(j.expect("a tile"))))
                .collect(),
            _ => (lk.outputs.iter())
                .map(|&(o, a)| (o, Dest::Access(a)))
                .collect(),
        };
        let leaf = |x: LocalId| -> Option<Leaf> {
            let tile = tiled.and_then(|(st, r)| st.done_before(x, r));
            tile.map(Leaf::Tile).or_else(|| Leaf::of(&lk.locals[x]))
        };
        let inner = (lk.accesses.iter())
            .map(|a| *a.strides.last().unwrap())
            .collect();
        let nodes: Vec<LocalId> = (0..lk.locals.len())
            .filter(|&v| cone.as_ref().is_none_or(|c| c[v]))
            .collect();
        let mut pass = Sweep::of(&lk.locals, inner, &nodes, &leaf, stores);
        pass.bools = (lk.accesses.iter())
            .map(|a| a.dtype == DType::Bool)
            .collect();
        pass.halves = (lk.accesses.iter())
            .map(|a| a.dtype.is_half().then_some(a.dtype))
            .collect();
        pass
    }

    /// A pass computing `candidates` (in order) except the leaves, then storing `stores`.
    pub fn of(
        locals: &'a [Local],
        inner: Vec<i64>,
        candidates: &[LocalId],
        leaf: &dyn Fn(LocalId) -> Option<Leaf>,
        stores: Vec<(LocalId, Dest)>,
    ) -> Self {
        // Only what a store needs: below a value read as a leaf (a row stashed by an earlier
        // pass, a value of the frame) nothing is computed again (softmax's last pass read
        // `x` and subtracted the max only to drop the difference for the stashed exp).
        let mut needed: HashSet<LocalId> = HashSet::new();
        let mut stack: Vec<LocalId> = stores.iter().map(|s| s.0).collect();
        while let Some(v) = stack.pop() {
            if leaf(v).is_none() && needed.insert(v) {
                stack.extend(locals[v].op.operands().iter().copied());
            }
        }
        let mut pass = Sweep {
            locals,
            used: vec![false; inner.len()],
            bools: vec![false; inner.len()],
            halves: vec![None; inner.len()],
            inner,
            leaves: HashMap::new(),
            nodes: Vec::new(),
            uses: HashMap::new(),
            stores,
            last_read: None,
        };
        let note = |pass: &mut Sweep, x: LocalId| {
            if let Some(l) = leaf(x) {
                if let Leaf::Read(a) = l {
                    pass.used[a] = true;
                }
                pass.leaves.insert(x, l);
            }
        };
        for &v in candidates {
            if leaf(v).is_some() || !needed.contains(&v) {
                continue;
            }
            pass.nodes.push(v);
            for &x in locals[v].op.operands().iter() {
                *pass.uses.entry(x).or_default() += 1;
                note(&mut pass, x);
                if matches!(leaf(x), Some(Leaf::Read(_))) {
                    pass.last_read = Some(pass.nodes.len() - 1);
                }
            }
        }
        for i in 0..pass.stores.len() {
            let (v, d) = pass.stores[i];
            *pass.uses.entry(v).or_default() += 1;
            note(&mut pass, v);
            if let Dest::Access(a) = d {
                pass.used[a] = true;
            }
        }
        pass
    }

    /// How `x` is read if it is not computed in the pass.
    fn leaf(&self, x: LocalId) -> Option<Leaf> {
        self.leaves.get(&x).copied()
    }

    /// The constants the pass's ops need (operands and implicit masks), as lane bits.
    fn constants(&self, e: &Asm) -> Vec<u64> {
        let (f, lane) = (e.value_dtype(), e.lane);
        let mut out: Vec<u64> = Vec::new();
        let mut add = |b: u64| {
            if !out.contains(&b) {
                out.push(b);
            }
        };
        for &v in &self.nodes {
            let n = &self.locals[v];
            for &x in n.op.operands().iter() {
                if let Some(Leaf::Const(l, d)) = self.leaf(x) {
                    if d == f {
                        add(e.const_bits(l, f));
                    }
                }
            }
            match n.op {
                LocalOp::Unary(UnaryOp::Neg, _) if !e.int => add(lane.sign()),
                LocalOp::Unary(UnaryOp::Abs, _) if !e.int => add(lane.abs()),
                _ => {}
            }
        }
        out
    }

    /// Load the pass's constants, row-level values and stride-0 accesses into registers, as
    /// many of each as `caps` allows (the rest of the registers hold the vectors' values).
    pub fn hoist(
        &self,
        e: &mut Asm,
        ptrs: &[Option<AsmRegister64>],
        regs: &mut Regs,
        caps: Hoist,
    ) -> R<Hoisted> {
        let mut h = Hoisted::default();
        let (max_consts, max_splats, max_rows) = (caps.consts, caps.splats, caps.rows);
        for bits in self.constants(e).into_iter().take(max_consts) {
            let r = regs.z()?;
            let l = e.const_label(bits);
            e.broadcast(r, l)?;
            h.consts.insert(bits, r);
        }
        // (A row-level mask is read into a mask register where it is used.)
        let mut rows: Vec<i32> = self
            .leaves
            .iter()
            .filter_map(|(&v, l)| match l {
                Leaf::Row(off) if self.locals[v].dtype != DType::Bool => Some(*off),
                _ => None,
            })
            .collect();
        rows.sort();
        rows.dedup();
        for off in rows.into_iter().take(max_rows) {
            let r = regs.z()?;
            e.broadcast(r, rsp + off)?;
            h.rows.insert(off, r);
        }
        for (ai, used) in self.used.iter().enumerate() {
            let plain = !self.bools[ai] && self.halves[ai].is_none();
            if *used && self.inner[ai] == 0 && plain && h.splats.len() < max_splats {
                let r = regs.z()?;
                e.broadcast(r, ptrs[ai].unwrap())?;
                h.splats.insert(ai, r);
            }
        }
        e.held = e.held.max(h.consts.len() + h.splats.len() + h.rows.len());
        Ok(h)
    }

    /// Compute the pass on the vector `disp` elements past `R_I` (under the tail mask when
    /// `masked`) and store its results.
    pub fn vector(
        &self,
        e: &mut Asm,
        ctx: &Ctx,
        regs: &mut Regs,
        disp: i32,
        masked: bool,
    ) -> R<()> {
        let mut v = Vector {
            pass: self,
            ctx,
            regs,
            env: HashMap::new(),
            left: self.uses.clone(),
            disp: disp * e.lane.bytes(),
            elems: disp,
            masked,
            stored: false,
        };
        // An output may be written over an input of the kernel (in place, or a donated
        // argument's buffer): every input of this vector is loaded before any output of it
        // is stored. A value stored to an access is kept until the last node reading an
        // access is computed; outputs that are themselves reads are loaded first.
        let reads_done = |idx: usize| self.last_read.is_none_or(|l| idx >= l);
        let mut stored = vec![false; self.stores.len()];
        if self.last_read.is_none() {
            v.load_stored_reads(e)?;
        }
        for (idx, &n) in self.nodes.iter().enumerate() {
            let loc = v.compute(e, n)?;
            v.env.insert(n, loc);
            if self.last_read == Some(idx) {
                v.load_stored_reads(e)?;
            }
            for (i, &(val, dest)) in self.stores.iter().enumerate() {
                if val == n && (reads_done(idx) || !matches!(dest, Dest::Access(_))) {
                    v.store(e, val, dest)?;
                    stored[i] = true;
                }
            }
            if v.left.get(&n).copied().unwrap_or(0) == 0 {
                v.release_now(n);
            }
        }
        for (i, &(val, dest)) in self.stores.iter().enumerate() {
            if !stored[i] {
                v.store(e, val, dest)?;
            }
        }
        Ok(())
    }
}

/// The state of one vector's code: where each value is and how many reads it has left.
struct Vector<'p, 'a, 'c> {
    pass: &'p Sweep<'a>,
    ctx: &'p Ctx<'c>,
    regs: &'p mut Regs,
    env: HashMap<LocalId, Loc>,
    left: HashMap<LocalId, usize>,
    /// Bytes past element `R_I`.
    disp: i32,
    /// Elements past element `R_I` (bytes of a bool access).
    elems: i32,
    masked: bool,
    /// Whether an output of this vector has been stored: no input may be loaded after that
    /// (the output's buffer may be the input's).
    stored: bool,
}

impl Vector<'_, '_, '_> {
    /// A full-width (or tail-masked, zeroing) load.
    fn load(&mut self, e: &mut Asm, r: u8, mem: AsmMemoryOperand) -> R<()> {
        e.load(r, mem, self.masked)
    }

    fn ptr(&self, a: usize) -> AsmRegister64 {
        self.ctx.ptrs[a].expect("a used access has a pointer register")
    }

    fn tile_mem(&self, e: &Asm, j: usize) -> AsmMemoryOperand {
        let at = self.ctx.tiles + j as i32 * self.ctx.tile_bytes + self.disp;
        e.vmem(rsp + R_I * e.lane.bytes() + at)
    }

    /// The location of `x`, loading it if it is a leaf not yet loaded.
    fn get(&mut self, e: &mut Asm, x: LocalId) -> R<Loc> {
        if let Some(&l) = self.env.get(&x) {
            return Ok(l);
        }
        let leaf = self.pass.leaf(x).expect("operands are computed before use");
        let loc = match leaf {
            Leaf::Const(l, DType::Bool) => {
                let k = self.regs.mask()?;
                e.mask_fill(k, l.as_i64(DType::Bool) != 0)?;
                Loc::K(k)
            }
            Leaf::Const(l, d) => {
                let bits = e.const_bits(l, d);
                match self.ctx.hoisted.consts.get(&bits) {
                    Some(&r) => Loc::Z(r),
                    None => {
                        let r = self.regs.z()?;
                        let l = e.const_label(bits);
                        e.broadcast(r, l)?;
                        Loc::Z(r)
                    }
                }
            }
            Leaf::Row(off) if self.pass.locals[x].dtype == DType::Bool => {
                // Every lane of a row-level value is the same: its 16 mask bits were stored
                // (AVX-512), or its lane 0 (AVX2: all ones or all zeros).
                let k = self.regs.mask()?;
                match e.w {
                    Width::Z => e.a.kmovw(K[k as usize], word_ptr(rsp + off))?,
                    Width::Y => e.broadcast(k, rsp + off)?,
                }
                Loc::K(k)
            }
            Leaf::Row(off) => match self.ctx.hoisted.rows.get(&off) {
                Some(&r) => Loc::Z(r),
                None => {
                    let r = self.regs.z()?;
                    e.broadcast(r, rsp + off)?;
                    Loc::Z(r)
                }
            },
            Leaf::Tile(j) => {
                let r = self.regs.z()?;
                let mem = self.tile_mem(e, j);
                self.load(e, r, mem)?;
                Loc::Z(r)
            }
            Leaf::Read(a) if self.pass.bools[a] => {
                let k = self.regs.mask()?;
                let p = self.ptr(a);
                if self.pass.inner[a] == 0 {
                    e.bool_broadcast(k, p + 0)?;
                } else {
                    let t = self.regs.z()?;
                    if self.masked {
                        let slot = self.ctx.bool_tail.expect("a slot for bool tails");
                        e.bool_tail_copy(p, self.elems, slot, true)?;
                        e.bool_load(k, rsp + slot, t)?;
                    } else {
                        e.bool_load(k, p + R_I + self.elems, t)?;
                    }
                    self.regs.free(Loc::Z(t));
                }
                Loc::K(k)
            }
            Leaf::Read(a) if self.pass.halves[a].is_some() => {
                let d = self.pass.halves[a].unwrap();
                let (r, p) = (self.regs.z()?, self.ptr(a));
                if self.pass.inner[a] == 0 {
                    super::half::splat(e, d, r, p)?;
                } else {
                    let mem = p + R_I * 2 + self.elems * 2;
                    super::half::load(e, d, r, mem, self.masked)?;
                }
                Loc::Z(r)
            }
            Leaf::Read(a) => {
                debug_assert!(
                    !self.stored,
                    "%{x} loaded after an output of the same vector was stored"
                );
                if self.pass.inner[a] == 0 {
                    match self.ctx.hoisted.splats.get(&a) {
                        Some(&r) => Loc::Z(r),
                        None => {
                            let r = self.regs.z()?;
                            e.broadcast(r, self.ptr(a))?;
                            Loc::Z(r)
                        }
                    }
                } else {
                    let r = self.regs.z()?;
                    let mem = e.vmem(self.ptr(a) + R_I * e.lane.bytes() + self.disp);
                    self.load(e, r, mem)?;
                    Loc::Z(r)
                }
            }
        };
        self.env.insert(x, loc);
        Ok(loc)
    }

    /// Load the stored values that are reads themselves (an output that is a view of an
    /// input), so that no store precedes their load.
    fn load_stored_reads(&mut self, e: &mut Asm) -> R<()> {
        for i in 0..self.pass.stores.len() {
            let (val, dest) = self.pass.stores[i];
            if matches!(dest, Dest::Access(_)) && matches!(self.pass.leaf(val), Some(Leaf::Read(_)))
            {
                self.get(e, val)?;
            }
        }
        Ok(())
    }

    /// One read of `x` done: its register is freed after its last read.
    fn release(&mut self, x: LocalId) {
        let left = self.left.get_mut(&x).expect("a counted read");
        *left -= 1;
        if *left == 0 {
            self.release_now(x);
        }
    }

    fn release_now(&mut self, x: LocalId) {
        if let Some(l) = self.env.remove(&x) {
            if let Loc::Z(r) = l {
                if self.ctx.hoisted.pinned(r) {
                    return;
                }
            }
            self.regs.free(l);
        }
    }

    /// A register holding the constant of lane bits `bits`, and whether it is a temporary to
    /// free.
    fn constant(&mut self, e: &mut Asm, bits: u64) -> R<(u8, bool)> {
        if let Some(&r) = self.ctx.hoisted.consts.get(&bits) {
            return Ok((r, false));
        }
        let r = self.regs.z()?;
        let l = e.const_label(bits);
        e.broadcast(r, l)?;
        Ok((r, true))
    }

    fn store(&mut self, e: &mut Asm, val: LocalId, dest: Dest) -> R<()> {
        if let (Dest::Frame(off), Loc::K(k)) = (dest, self.get(e, val)?) {
            // A row-level mask (logsumexp's "the row's max is finite"): all 16 bits (AVX-512),
            // lane 0 (AVX2).
            match e.w {
                Width::Z => e.a.kmovw(word_ptr(rsp + off), K[k as usize])?,
                Width::Y => e.scalar_store(rsp + off, k)?,
            }
            self.release(val);
            return Ok(());
        }
        if let Dest::Access(a) = dest {
            if self.pass.bools[a] {
                let k = self.get(e, val)?.k();
                let (p, elems) = (self.ptr(a), self.elems);
                if self.masked {
                    let slot = self.ctx.bool_tail.expect("a slot for bool tails");
                    e.bool_store(&|j| rsp + (slot + j), k)?;
                    e.bool_tail_copy(p, elems, slot, false)?;
                } else {
                    e.bool_store(&|j| p + R_I + (elems + j), k)?;
                }
                self.stored = true;
                self.release(val);
                return Ok(());
            }
        }
        let r = self.get(e, val)?.z();
        if let Some((a, d)) = match dest {
            Dest::Access(a) => self.pass.halves[a].map(|d| (a, d)),
            _ => None,
        } {
            let t = self.regs.z()?;
            let mem = self.ptr(a) + R_I * 2 + self.elems * 2;
            super::half::store(e, d, mem, r, t, self.masked)?;
            self.regs.free(Loc::Z(t));
            self.stored = true;
            self.release(val);
            return Ok(());
        }
        let mem = match dest {
            Dest::Access(a) => e.vmem(self.ptr(a) + R_I * e.lane.bytes() + self.disp),
            Dest::Tile(j) => self.tile_mem(e, j),
            Dest::Acc(j) => {
                self.accumulate(e, j, r)?;
                self.release(val);
                return Ok(());
            }
            Dest::Frame(off) => {
                e.scalar_store(rsp + off, r)?;
                self.release(val);
                return Ok(());
            }
        };
        match dest {
            Dest::Access(a) if !self.masked && self.ctx.stream.get(a) == Some(&true) => {
                e.store_streaming(mem, r)?
            }
            _ => e.store(mem, r, self.masked)?,
        }
        self.stored |= matches!(dest, Dest::Access(_));
        self.release(val);
        Ok(())
    }

    /// Emit node `v` (its operands are available); returns where its value is. Each op is
    /// spelled by `Asm`'s helpers at the kernel's width.
    fn compute(&mut self, e: &mut Asm, v: LocalId) -> R<Loc> {
        use crate::codegen::traced::SymOp as S;
        let locals = self.pass.locals;
        let n = &locals[v];
        let operands = n.op.operands();
        let mut args = Vec::with_capacity(operands.len());
        for &x in operands.iter() {
            args.push(self.get(e, x)?);
        }
        let r = |l: Loc| match l {
            Loc::Z(r) | Loc::K(r) => r,
        };
        let out = match (n.op, n.dtype) {
            (LocalOp::Unary(UnaryOp::Not, _), DType::Bool) => {
                let d = self.regs.mask()?;
                e.mask_not(d, r(args[0]))?;
                Loc::K(d)
            }
            (LocalOp::Unary(u, _), _) if e.int => {
                let d = self.regs.z()?;
                e.int_unary(u, d, args[0].z())?;
                Loc::Z(d)
            }
            (LocalOp::Binary(o, ..), d) if e.int && d != DType::Bool => {
                let d = self.regs.z()?;
                e.int_binary(o, d, args[0].z(), args[1].z())?;
                Loc::Z(d)
            }
            (LocalOp::Compare(c, ..), _) if e.int => {
                self.int_cmp(e, c, args[0].z(), args[1].z())?
            }
            (LocalOp::Unary(u, _), _) if u.is_transcendental() => {
                self.inline(e, u.into(), &[args[0].z()])?
            }
            (LocalOp::Binary(BinaryOp::Pow, ..), _) => {
                self.inline(e, Function::Pow, &[args[0].z(), args[1].z()])?
            }
            (LocalOp::Unary(u, _), _) => {
                let x = args[0].z();
                let d = self.regs.z()?;
                match u {
                    UnaryOp::Neg | UnaryOp::Abs => {
                        let bits = if u == UnaryOp::Neg {
                            e.lane.sign()
                        } else {
                            e.lane.abs()
                        };
                        let (c, tmp) = self.constant(e, bits)?;
                        let op = if u == UnaryOp::Neg {
                            S::Xor(0, 1)
                        } else {
                            S::And(0, 1)
                        };
                        e.sym_op(op, d, &|j| if j == 0 { x } else { c })?;
                        if tmp {
                            self.regs.free(Loc::Z(c));
                        }
                    }
                    UnaryOp::Sqrt => e.sqrt(d, x)?,
                    UnaryOp::Floor => e.floor(d, x)?,
                    UnaryOp::StopGradient => e.vmov(d, x)?,
                    other => unreachable!("{other:?} is emitted by `inline`"),
                }
                Loc::Z(d)
            }
            (LocalOp::Binary(o, ..), DType::Bool) => {
                let d = self.regs.mask()?;
                match o {
                    BinaryOp::And | BinaryOp::Or => {
                        e.mask_and_or(o == BinaryOp::Or, d, r(args[0]), r(args[1]))?
                    }
                    other => unreachable!("{other:?} on bool"),
                }
                Loc::K(d)
            }
            (LocalOp::Binary(o, ..), _) => {
                let d = self.regs.z()?;
                let (x, y) = (args[0].z(), args[1].z());
                let xy = |j: u32| if j == 0 { x } else { y };
                match o {
                    BinaryOp::Add => e.sym_op(S::Add(0, 1), d, &xy)?,
                    BinaryOp::Sub => e.sym_op(S::Sub(0, 1), d, &xy)?,
                    BinaryOp::Mul => e.sym_op(S::Mul(0, 1), d, &xy)?,
                    BinaryOp::Div => e.sym_op(S::Div(0, 1), d, &xy)?,
                    BinaryOp::Max | BinaryOp::Min => {
                        // `maxps x, y` returns y when either is NaN; the lowering decided
                        // whether a NaN `x` must be restored (max_min_needs_nan_fixup).
                        let op = if o == BinaryOp::Max {
                            S::Max(0, 1)
                        } else {
                            S::Min(0, 1)
                        };
                        e.sym_op(op, d, &xy)?;
                        if max_min_needs_nan_fixup(locals, n) {
                            let t = match e.w {
                                Width::Z => None,
                                Width::Y => Some(self.regs.z()?),
                            };
                            e.keep_nan(d, x, t)?;
                            if let Some(t) = t {
                                self.regs.free(Loc::Z(t));
                            }
                        }
                    }
                    other => unreachable!("{other:?} is rejected before emission"),
                }
                Loc::Z(d)
            }
            (LocalOp::Compare(c, ..), _) => {
                let d = self.regs.mask()?;
                // The predicates x64 lowers `fcmp` to: ordered except `ne`.
                let imm = match c {
                    CmpOp::Eq => 0x00, // EQ_OQ
                    CmpOp::Lt => 0x01, // LT_OS
                    CmpOp::Le => 0x02, // LE_OS
                    CmpOp::Ne => 0x04, // NEQ_UQ
                    CmpOp::Ge => 0x0d, // GE_OS
                    CmpOp::Gt => 0x0e, // GT_OS
                };
                e.cmp_mask(d, args[0].z(), args[1].z(), imm)?;
                Loc::K(d)
            }
            (LocalOp::Select(..), _) => {
                let d = self.regs.z()?;
                // d = cond ? a : b
                e.blend(d, args[0].k(), args[2].z(), args[1].z())?;
                Loc::Z(d)
            }
            (LocalOp::Cast(x), to) if to.is_half() && locals[x].dtype != to => {
                // To a 16-bit float: rounded (`half.rs`).
                let (d, t) = (self.regs.z()?, self.regs.z()?);
                super::half::round(e, to, d, args[0].z(), t)?;
                self.regs.free(Loc::Z(t));
                Loc::Z(d)
            }
            (LocalOp::Cast(_), _) => {
                // Between values of one lane type (bool casts are lowered to compare and select;
                // a 16-bit float is an f32 lane).
                let d = self.regs.z()?;
                e.vmov(d, args[0].z())?;
                Loc::Z(d)
            }
            (other, _) => unreachable!("{other:?} is rejected before emission"),
        };
        for &x in operands.iter() {
            self.release(x);
        }
        Ok(out)
    }
}

impl Vector<'_, '_, '_> {
    /// The mask `a c b` of integer lanes, in a register of its own (with the scratch register
    /// AVX2 needs for some predicates).
    fn int_cmp(&mut self, e: &mut Asm, c: CmpOp, a: u8, b: u8) -> R<Loc> {
        let d = self.regs.mask()?;
        let t = match super::int::int_cmp_scratch(e.w, c) {
            true => Some(self.regs.z()?),
            false => None,
        };
        e.int_cmp(d, c, a, b, t)?;
        if let Some(t) = t {
            self.regs.free(Loc::Z(t));
        }
        Ok(Loc::K(d))
    }
}
