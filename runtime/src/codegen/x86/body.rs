//! One pass of an x86 loop kernel on one vector (16 lanes AVX-512, 8 lanes AVX2): which values
//! it computes, loads and stores, register allocation (zmm0-31 and k2-k6, or ymm0-14), and
//! each op's instructions (spelled by `Asm`'s helpers at the kernel's width).

use super::{Asm, Fail, Lane, Width, R, R_I};
use crate::codegen::lower::{Local, LocalId, LocalOp, LoopKernel, Tiling};
use crate::codegen::traced::SymOp;
use crate::ir::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::{DType, Literal};
use iced_x86::code_asm::*;
use std::collections::HashMap;

pub(super) const Z: [AsmRegisterZmm; 32] = [
    zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13, zmm14,
    zmm15, zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27,
    zmm28, zmm29, zmm30, zmm31,
];
pub(super) const X: [AsmRegisterXmm; 32] = [
    xmm0, xmm1, xmm2, xmm3, xmm4, xmm5, xmm6, xmm7, xmm8, xmm9, xmm10, xmm11, xmm12, xmm13, xmm14,
    xmm15, xmm16, xmm17, xmm18, xmm19, xmm20, xmm21, xmm22, xmm23, xmm24, xmm25, xmm26, xmm27,
    xmm28, xmm29, xmm30, xmm31,
];
pub(super) const K: [AsmRegisterK; 8] = [k0, k1, k2, k3, k4, k5, k6, k7];
/// The 16 ymm registers of AVX2 kernels; `Y_TAIL` holds the tail's lane mask.
pub(super) const Y: [AsmRegisterYmm; 16] = [
    ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14,
    ymm15,
];
pub(super) const Y_TAIL: u8 = 15;
/// The tail mask of the masked last vector.
pub(super) const TAIL: u8 = 1;
/// Scratch mask inside one op (max/min NaN fix-up).
pub(super) const SCRATCH_K: u8 = 7;

/// `z{k}`: a destination written under mask `k` (merging).
pub(super) fn zk(z: u8, k: u8) -> AsmRegisterZmm {
    let r = Z[z as usize];
    match k {
        1 => r.k1(),
        2 => r.k2(),
        3 => r.k3(),
        4 => r.k4(),
        5 => r.k5(),
        6 => r.k6(),
        7 => r.k7(),
        _ => r,
    }
}

/// Where a value is: a vector register or (bool) a mask: a k register (AVX-512) or a vector
/// register of all-ones and all-zeros lanes (AVX2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    Z(u8),
    K(u8),
}

impl Loc {
    fn z(self) -> u8 {
        match self {
            Loc::Z(r) => r,
            Loc::K(_) => unreachable!("a mask where a vector was expected"),
        }
    }
    fn k(self) -> u8 {
        match self {
            Loc::K(r) => r,
            Loc::Z(_) => unreachable!("a vector where a mask was expected"),
        }
    }
}

/// Free registers (per vector: each vector of a loop starts from the pass's state).
#[derive(Clone)]
pub(super) struct Regs {
    z: Vec<u8>,
    k: Vec<u8>,
    w: Width,
}

impl Regs {
    pub fn z(&mut self) -> R<u8> {
        self.z.pop().ok_or(Fail::Registers)
    }
    pub fn k(&mut self) -> R<u8> {
        self.k.pop().ok_or(Fail::Registers)
    }
    pub fn new(w: Width) -> Self {
        match w {
            Width::Z => Regs {
                z: (0..32).rev().collect(),
                k: vec![6, 5, 4, 3, 2],
                w,
            },
            Width::Y => Regs {
                z: (0..Y_TAIL).rev().collect(),
                k: Vec::new(),
                w,
            },
        }
    }
    /// A register for a mask.
    pub fn mask(&mut self) -> R<u8> {
        match self.w {
            Width::Z => self.k(),
            Width::Y => self.z(),
        }
    }
    fn free(&mut self, l: Loc) {
        match (l, self.w) {
            (Loc::Z(r), _) | (Loc::K(r), Width::Y) => self.z.push(r),
            (Loc::K(r), Width::Z) => self.k.push(r),
        }
    }
}

/// How many values of each kind a pass may keep in registers for the whole pass (`Sweep::hoist`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Hoist {
    consts: usize,
    splats: usize,
    rows: usize,
}

impl Hoist {
    /// The hoisting levels a kernel is emitted with at width `w`, most first: the first whose
    /// code fits in the registers is kept. AVX-512: at most 12 constants, 4 splats and 8
    /// row-level values of 32 registers. AVX2: up to 12, 3 and 3 of its 15 where they fit (rustc
    /// keeps all 10 constants of the 20-op chain in registers; reloading 5 of them per vector
    /// cost 15 %), else 5, 2 and 2.
    pub fn levels(w: Width) -> &'static [Hoist] {
        const OFF: Hoist = Hoist {
            consts: 0,
            splats: 0,
            rows: 0,
        };
        match w {
            Width::Z => &[
                Hoist {
                    consts: 12,
                    splats: 4,
                    rows: 8,
                },
                OFF,
            ],
            Width::Y => &[
                Hoist {
                    consts: 12,
                    splats: 3,
                    rows: 3,
                },
                Hoist {
                    consts: 5,
                    splats: 2,
                    rows: 2,
                },
                OFF,
            ],
        }
    }
}

/// Values kept in registers for a whole pass: constants (by their lane bits) and stride-0
/// accesses.
#[derive(Default)]
pub(super) struct Hoisted {
    consts: HashMap<u64, u8>,
    splats: HashMap<usize, u8>,
    rows: HashMap<i32, u8>,
    /// Registers owned by the caller for the whole pass (reduction accumulators).
    pub fixed: Vec<u8>,
}

impl Hoisted {
    fn pinned(&self, r: u8) -> bool {
        self.consts
            .values()
            .chain(self.splats.values())
            .chain(self.rows.values())
            .chain(&self.fixed)
            .any(|&x| x == r)
    }
}

/// The accumulators of one reduction in a row kernel's phase: one register per vector of the
/// unrolled group, and for max/min the mask register collecting NaN lanes.
pub(super) struct AccSet {
    pub op: ReduceOp,
    pub regs: [u8; 4],
    pub nan: Option<u8>,
}

/// The bits of a reduction's identity in `lane`.
pub(super) fn identity_bits(op: ReduceOp, lane: Lane) -> u64 {
    lane.bits(match op {
        ReduceOp::Sum => 0.0,
        ReduceOp::Max => f64::NEG_INFINITY,
        ReduceOp::Min => f64::INFINITY,
        ReduceOp::Prod => 1.0,
    })
}

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
}

impl<'a> Sweep<'a> {
    pub fn new(lk: &'a LoopKernel, tiling: Option<&'a Tiling>, r: Option<usize>) -> Self {
        let tiled = tiling.zip(r);
        let cone = tiled.map(|(st, r)| st.cone(lk, r));
        let stores = match tiled {
            Some((st, r)) if r < st.last => (st.roots(lk, r).into_iter())
                .map(|(x, j)| (x, Dest::Tile(j.expect("a tile"))))
                .collect(),
            _ => (lk.outputs.iter()).map(|&(o, a)| (o, Dest::Access(a))).collect(),
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
        pass.bools = (lk.accesses.iter()).map(|a| a.dtype == DType::Bool).collect();
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
        let mut pass = Sweep {
            locals,
            used: vec![false; inner.len()],
            bools: vec![false; inner.len()],
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
            if leaf(v).is_some() {
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
        let (f, one, lane) = (e.value_dtype(), e.one(), e.lane);
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
                LocalOp::Unary(UnaryOp::Rsqrt | UnaryOp::Recip, _) => add(one),
                LocalOp::Cast(x) if n.dtype == f && self.locals[x].dtype == DType::Bool => {
                    add(one)
                }
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
            if *used && self.inner[ai] == 0 && !self.bools[ai] && h.splats.len() < max_splats {
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
        e.store(mem, r, self.masked)?;
        self.stored |= matches!(dest, Dest::Access(_));
        self.release(val);
        Ok(())
    }

    /// Fold the vector in `x` into accumulator set `j` (the register of this vector's place
    /// in its group). Lanes past the tail take the reduction's identity; max/min keep a NaN
    /// accumulator (`maxps x, acc` returns `acc` when either is NaN) and note NaN lanes of `x`
    /// in the set's mask.
    fn accumulate(&mut self, e: &mut Asm, j: usize, x: u8) -> R<()> {
        use crate::codegen::traced::SymOp as S;
        let set = &self.ctx.accs[j];
        let (op, nan) = (set.op, set.nan);
        let acc = set.regs[(self.disp as usize) / (e.lane.bytes() as usize * e.lanes())];
        let mut t = None;
        let mut x = x;
        if self.masked {
            // The lanes past the tail: the identity.
            let r = self.regs.z()?;
            let (c, tmp) = self.constant(e, identity_bits(op, e.lane))?;
            match e.w {
                Width::Z => {
                    e.vmov(r, c)?;
                    e.masked_move(zk(r, TAIL), x)?;
                }
                Width::Y => e.blend(r, Y_TAIL, c, x)?,
            }
            if tmp {
                self.regs.free(Loc::Z(c));
            }
            x = r;
            t = Some(r);
        }
        let regs = [acc, x];
        let r = |j: u32| regs[j as usize];
        match op {
            ReduceOp::Sum => e.sym_op(S::Add(0, 1), acc, &r)?,
            ReduceOp::Max | ReduceOp::Min => {
                if let Some(k) = nan {
                    // NaN lanes of `x` into the set's mask (AVX2: through a scratch vector).
                    let s = match e.w {
                        Width::Z => SCRATCH_K,
                        Width::Y => self.regs.z()?,
                    };
                    e.cmp_mask(s, x, x, 3)?;
                    e.mask_and_or(true, k, k, s)?;
                    if e.w == Width::Y {
                        self.regs.free(Loc::Z(s));
                    }
                }
                // `x` first: the accumulator wins where either is NaN.
                if op == ReduceOp::Max {
                    e.sym_op(S::Max(1, 0), acc, &r)?;
                } else {
                    e.sym_op(S::Min(1, 0), acc, &r)?;
                }
            }
            ReduceOp::Prod => e.sym_op(S::Mul(0, 1), acc, &r)?,
        }
        if let Some(r) = t {
            self.regs.free(Loc::Z(r));
        }
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
                self.inline(e, u, args[0].z())?
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
                    UnaryOp::Rsqrt | UnaryOp::Recip => {
                        if u == UnaryOp::Rsqrt {
                            e.sqrt(d, x)?;
                        } else {
                            e.vmov(d, x)?;
                        }
                        let (c, tmp) = self.constant(e, e.lane.bits(1.0))?;
                        e.sym_op(S::Div(0, 1), d, &|j| if j == 0 { c } else { d })?;
                        if tmp {
                            self.regs.free(Loc::Z(c));
                        }
                    }
                    UnaryOp::Square => e.sym_op(S::Mul(0, 0), d, &|_| x)?,
                    UnaryOp::Relu => {
                        // x < 0 ? 0 : x == maxps(0, x) (NaN and -0 pass through).
                        let t = self.regs.z()?;
                        e.zero(t)?;
                        e.sym_op(S::Max(0, 1), d, &|j| if j == 0 { t } else { x })?;
                        self.regs.free(Loc::Z(t));
                    }
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
            (LocalOp::Binary(o, a, b), _) => {
                let d = self.regs.z()?;
                let (x, y) = (args[0].z(), args[1].z());
                let xy = |j: u32| if j == 0 { x } else { y };
                match o {
                    BinaryOp::Add => e.sym_op(S::Add(0, 1), d, &xy)?,
                    BinaryOp::Sub => e.sym_op(S::Sub(0, 1), d, &xy)?,
                    BinaryOp::Mul => e.sym_op(S::Mul(0, 1), d, &xy)?,
                    BinaryOp::Div => e.sym_op(S::Div(0, 1), d, &xy)?,
                    BinaryOp::Max | BinaryOp::Min => {
                        // vector::nan_max_min: a non-NaN constant goes first and the
                        // blend alone propagates NaN; otherwise a NaN `x` is restored.
                        let (p, q, safe) = if locals[a].non_nan_const() {
                            (x, y, true)
                        } else if locals[b].non_nan_const() {
                            (y, x, true)
                        } else {
                            (x, y, false)
                        };
                        let op = if o == BinaryOp::Max {
                            S::Max(0, 1)
                        } else {
                            S::Min(0, 1)
                        };
                        e.sym_op(op, d, &|j| if j == 0 { p } else { q })?;
                        if !safe {
                            let t = match e.w {
                                Width::Z => None,
                                Width::Y => Some(self.regs.z()?),
                            };
                            e.keep_nan(d, p, t)?;
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
            (LocalOp::Cast(x), to) => {
                let from = locals[x].dtype;
                match (from, to) {
                    (DType::Bool, _) => {
                        let d = self.regs.z()?;
                        let (c, tmp) = self.constant(e, e.one())?;
                        e.mask_select(d, args[0].k(), c)?;
                        if tmp {
                            self.regs.free(Loc::Z(c));
                        }
                        Loc::Z(d)
                    }
                    (_, DType::Bool) if e.int => {
                        let t = self.regs.z()?;
                        e.zero(t)?;
                        let d = self.int_cmp(e, CmpOp::Ne, args[0].z(), t)?;
                        self.regs.free(Loc::Z(t));
                        d
                    }
                    (_, DType::Bool) => {
                        let d = self.regs.mask()?;
                        let t = self.regs.z()?;
                        e.zero(t)?;
                        e.cmp_mask(d, args[0].z(), t, 0x04)?;
                        self.regs.free(Loc::Z(t));
                        Loc::K(d)
                    }
                    _ => {
                        let d = self.regs.z()?;
                        e.vmov(d, args[0].z())?;
                        Loc::Z(d)
                    }
                }
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

    /// The function `u` of the value in `x` (f32 or f64 lanes), inline: the operations of its micro-kernel
    /// (`traced::trace`), each as the instruction the micro-kernel uses, so the bits are the
    /// micro-kernel's (and the Cranelift path's). Returns the result's register (owned).
    fn inline(&mut self, e: &mut Asm, u: UnaryOp, x: u8) -> R<Loc> {
        let traced = e.traced(u);
        let (ops, res) = (&traced.0, traced.1 as usize);
        let mut last = vec![usize::MAX; ops.len()];
        for (i, op) in ops.iter().enumerate() {
            for j in sym_operands(op) {
                last[j as usize] = i;
            }
        }
        // Register of each result, and whether this function owns it (frees it).
        let mut loc: Vec<Option<Loc>> = vec![None; ops.len()];
        let mut owned = vec![false; ops.len()];
        for (i, op) in ops.iter().enumerate() {
            let r = |j: u32| loc[j as usize].expect("operand computed").z();
            let dies = |j: u32, owned: &[bool]| owned[j as usize] && last[j as usize] == i;
            let out = match *op {
                SymOp::Arg => {
                    loc[i] = Some(Loc::Z(x));
                    continue;
                }
                SymOp::Const(bits) => {
                    let (r, tmp) = self.constant(e, bits)?;
                    owned[i] = tmp;
                    loc[i] = Some(Loc::Z(r));
                    continue;
                }
                SymOp::Fma(a, b, c) => {
                    // Write over an operand that dies here (no copy).
                    let (d, form) = if dies(a, &owned) {
                        owned[a as usize] = false;
                        (loc[a as usize].unwrap().z(), (b, c, 213))
                    } else if dies(c, &owned) {
                        owned[c as usize] = false;
                        (loc[c as usize].unwrap().z(), (a, b, 231))
                    } else if dies(b, &owned) && b != a && b != c {
                        owned[b as usize] = false;
                        (loc[b as usize].unwrap().z(), (a, c, 213))
                    } else {
                        let d = self.regs.z()?;
                        e.vmov(d, r(a))?;
                        (d, (b, c, 213))
                    };
                    e.fma(form.2 == 213, d, r(form.0), r(form.1))?;
                    Loc::Z(d)
                }
                SymOp::Lt(a, b) | SymOp::Eq(a, b) | SymOp::Uge(a, b) => {
                    let k = self.regs.mask()?;
                    let imm = match *op {
                        SymOp::Lt(..) => 0x11, // LT_OQ
                        SymOp::Eq(..) => 0x00, // EQ_OQ
                        _ => 0x05,             // NLT_UQ
                    };
                    e.cmp_mask(k, r(a), r(b), imm)?;
                    Loc::K(k)
                }
                SymOp::Sel(m, t, f) => {
                    let d = self.regs.z()?;
                    let mk = loc[m as usize].unwrap().k();
                    e.blend(d, mk, r(f), r(t))?;
                    Loc::Z(d)
                }
                SymOp::ExactR(..) | SymOp::ExactN(_) => {
                    unreachable!("functions that call out are tiled (`node_ok`)")
                }
                SymOp::Shl(..)
                | SymOp::Shr(..)
                | SymOp::Add(..)
                | SymOp::Sub(..)
                | SymOp::Mul(..)
                | SymOp::Div(..)
                | SymOp::Min(..)
                | SymOp::Max(..)
                | SymOp::And(..)
                | SymOp::Or(..)
                | SymOp::Xor(..)
                | SymOp::Iadd(..)
                | SymOp::Isub(..) => {
                    let d = self.regs.z()?;
                    e.sym_op(*op, d, &|j| r(j))?;
                    Loc::Z(d)
                }
            };
            loc[i] = Some(out);
            owned[i] = true;
            // Operands read for the last time are freed (each once).
            let mut seen: Vec<u32> = Vec::new();
            for j in sym_operands(op) {
                if !seen.contains(&j) && dies(j, &owned) {
                    seen.push(j);
                    owned[j as usize] = false;
                    self.regs.free(loc[j as usize].unwrap());
                }
            }
            if last[i] == usize::MAX && i != res {
                owned[i] = false;
                self.regs.free(out);
            }
        }
        if owned[res] {
            return Ok(loc[res].unwrap());
        }
        // The result is the argument or a pinned constant: copy it.
        let d = self.regs.z()?;
        e.vmov(d, loc[res].unwrap().z())?;
        Ok(Loc::Z(d))
    }
}

/// The operand indices of a traced operation.
fn sym_operands(op: &SymOp) -> Vec<u32> {
    match *op {
        SymOp::Arg | SymOp::Const(_) => vec![],
        SymOp::Shl(a, _) | SymOp::Shr(a, _) => vec![a],
        SymOp::Fma(a, b, c) | SymOp::Sel(a, b, c) | SymOp::ExactR(a, b, c, _) => vec![a, b, c],
        SymOp::ExactN(a) => vec![a],
        SymOp::Add(a, b)
        | SymOp::Sub(a, b)
        | SymOp::Mul(a, b)
        | SymOp::Div(a, b)
        | SymOp::Min(a, b)
        | SymOp::Max(a, b)
        | SymOp::Lt(a, b)
        | SymOp::Eq(a, b)
        | SymOp::Uge(a, b)
        | SymOp::And(a, b)
        | SymOp::Or(a, b)
        | SymOp::Xor(a, b)
        | SymOp::Iadd(a, b)
        | SymOp::Isub(a, b) => vec![a, b],
    }
}
