//! Loop kernels as AVX-512 machine code (16 f32 lanes), emitted with an assembler.
//!
//! Cranelift 0.135 lowers nothing wider than 128 bits on x86-64, so its loop kernels compute
//! 4 lanes per instruction where XLA computes 16. Where the CPU has AVX-512F, a loop kernel
//! whose values are all f32 (bool masks inside) and whose innermost accesses are contiguous or
//! broadcast is instead emitted here, instruction by instruction, with the same ABI as the
//! Cranelift kernels (`extern "C" fn(ptrs, begin, end)`): the executor, the parallel split and
//! the buffer plan do not know which backend built a kernel.
//!
//! **Same results, bit for bit.** Every op is the instruction Cranelift's x64 backend selects
//! for the same IR (`vector.rs`), widened: IEEE add/sub/mul/div/sqrt, `maxps`/`minps` with the
//! operand order and NaN fix-up of `vector::nan_max_min`, sign masks for neg/abs, `roundps`
//! modes for floor, ordered/unordered predicates as `fcmp` lowers them. Transcendentals are
//! tiled exactly as `kernel.rs` stages them (tile by tile through the same rustc micro-kernels),
//! so the whole kernel matches the Cranelift path; tests compare both on random programs.
//!
//! **Shape of the code.** The collapsed iteration space of `describe::loops` is walked as rows:
//! an odometer over the outer dimensions (dim 0 over `begin..end`), each row a loop of four
//! 16-lane vectors, then single vectors, then one *masked* vector for the last 1..15 elements
//! (masked loads do not fault, so no padding copy is needed, and the lanes computed are the
//! body's code). All state that must survive a micro-kernel call lives in the stack frame.
//!
//! Integer kernels (`int.rs`: i32 and i64 in the lanes of their size) and bool accesses
//! (`bools.rs`: a byte per element, read and written as masks) are emitted too. Kernels this
//! backend does not take (mixed value types, strided inner reads, integer division, i64
//! products, more live values than registers) go to Cranelift.
//!
//! **AVX2.** Loop kernels are also emitted at 8 lanes (`Width::Y`) where the target's level
//! is AVX2: the same passes, register allocation, loop skeleton and traced transcendentals,
//! each instruction spelled at the kernel's width by `Asm`'s helpers (one
//! `body::Vector::compute`). A mask is a vector of all-ones or all-zeros lanes (`vcmpps`, `vblendvps`, bitwise and/or/not), the
//! tail is read and written with `vmaskmovps` under a lane mask loaded from a 16-dword table,
//! and 15 registers hold values (ymm15 is the tail's mask). Row kernels take the same width
//! (`row.rs`).

mod asm;
mod body;
mod bools;
mod frame;
mod half;
mod int;
mod listing;
pub mod row;

use asm::Asm;
use frame::{add_imm, add_strided, epilogue, first_row, mark, next_row, prologue};
pub use listing::listing;

use super::lower::{Local, LocalId, LocalOp, LoopKernel, Tiling};
use super::target::{Isa, Target};
use super::traced;
use crate::ir::{BinaryOp, UnaryOp};
use crate::DType;
use iced_x86::code_asm::*;
use iced_x86::IcedError;

/// The vector width of an emitted kernel: 16-lane zmm code with k-register masks (AVX-512F),
/// or 8-lane ymm code with masks in vector registers (AVX2+FMA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    Z,
    Y,
}

impl Width {
    /// f32 lanes per vector.
    pub(super) fn lanes(self) -> usize {
        match self {
            Width::Z => 16,
            Width::Y => 8,
        }
    }

    /// The width loop kernels are emitted at for `t`, if any.
    fn of(t: &Target) -> Option<Width> {
        match t.isa {
            Isa::Avx512 => Some(Width::Z),
            Isa::Avx2 => Some(Width::Y),
            Isa::Portable => None,
        }
    }

    /// The name listings give the code.
    pub(super) fn name(self) -> &'static str {
        match self {
            Width::Z => "AVX-512",
            Width::Y => "AVX2",
        }
    }
}

/// The lane type of a kernel's vectors: f32 (dword lanes) or f64 (qword lanes, half as many).
/// Masks of either are k registers (bit i: lane i) or vector lanes of all ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    F32,
    F64,
}

impl Lane {
    /// The lane type of accesses of `dtypes`, if they are all f32 or all f64.
    fn uniform(dtypes: impl Iterator<Item = DType>) -> Option<Lane> {
        Lane::of_values(dtypes).and_then(|(lane, int)| (!int).then_some(lane))
    }

    /// The lanes of accesses of `dtypes` and whether they hold integers, if they all have one
    /// dtype of f32, f64, i32 (dword lanes) and i64 (qword lanes): see `int.rs`.
    fn of_values(mut dtypes: impl Iterator<Item = DType>) -> Option<(Lane, bool)> {
        let first = dtypes.next()?;
        let lanes = match first {
            DType::F32 => (Lane::F32, false),
            DType::F64 => (Lane::F64, false),
            DType::I32 => (Lane::F32, true),
            DType::I64 => (Lane::F64, true),
            // (16-bit floats are f32 lanes in registers: `half.rs`.)
            DType::BF16 | DType::F16 => (Lane::F32, false),
            DType::Bool => return None,
        };
        dtypes
            .all(|d| d.compute() == first.compute())
            .then_some(lanes)
    }

    pub(super) fn dtype(self) -> DType {
        match self {
            Lane::F32 => DType::F32,
            Lane::F64 => DType::F64,
        }
    }

    /// Bytes per lane (the scale of an element index in an address).
    pub(super) fn bytes(self) -> i32 {
        match self {
            Lane::F32 => 4,
            Lane::F64 => 8,
        }
    }

    /// `v` rounded to the lane type, as its bits.
    pub(super) fn bits(self, v: f64) -> u64 {
        match self {
            Lane::F32 => (v as f32).to_bits() as u64,
            Lane::F64 => v.to_bits(),
        }
    }

    /// The lane's sign bit, and all bits but it.
    pub(super) fn sign(self) -> u64 {
        match self {
            Lane::F32 => 0x8000_0000,
            Lane::F64 => 1 << 63,
        }
    }
    pub(super) fn abs(self) -> u64 {
        match self {
            Lane::F32 => 0x7fff_ffff,
            Lane::F64 => !(1 << 63),
        }
    }
}

/// Why emission stopped.
#[derive(Debug)]
enum Fail {
    /// More live values or accesses than registers (try again hoisting less, or leave the
    /// kernel to Cranelift).
    Registers,
    /// An assembler error: a bug here; the kernel goes to Cranelift (debug builds panic).
    Asm(IcedError),
}

impl From<IcedError> for Fail {
    fn from(e: IcedError) -> Self {
        Fail::Asm(e)
    }
}

type R<T> = Result<T, Fail>;

/// An x86 kernel (AVX-512 or AVX2): position-independent machine code without relocations.
pub struct Code {
    pub width: Width,
    pub lane: Lane,
    /// Whether the lanes hold integers (i32 or i64 of the lane's size).
    pub int: bool,
    /// What the kernel is ("loop kernel", "row kernel"), for listings.
    pub kind: &'static str,
    pub bytes: Vec<u8>,
    /// Transcendentals computed per tile by micro-kernel calls.
    pub tiled: usize,
    /// Accesses the kernel prefetches (ahead in the stream, or the next row).
    pub prefetched: usize,
    /// Constants, splats and row-level values kept in registers by the pass keeping most.
    pub held: usize,
    /// Stashed row values kept in an output's row (row kernels: `RowBody::stash_homes`).
    pub homed: usize,
}

/// The loop kernel as x86 machine code at the target's width, or None when this backend does
/// not take it.
pub fn build(lk: &LoopKernel, t: &Target) -> Option<Code> {
    let w = Width::of(t)?;
    // 16-bit accesses at AVX-512 only (`half.rs`).
    if w == Width::Y && lk.accesses.iter().any(|a| a.dtype.is_half()) {
        return None;
    }
    let tiled = lk.tiling.as_ref();
    let (lane, int) = supported(lk, tiled)?;
    // Transcendentals inline first (one pass); tiled through the micro-kernels when their
    // values do not fit in registers; constants in registers first, then from memory. A
    // kernel with a function whose trace calls out (sin/cos: `SymOp::calls`) is tiled only.
    let inline_ok = (0..lk.locals.len()).all(|v| node_ok(&lk.locals, v, lane, int));
    let mut order = [None, tiled];
    if t.tiled_first || !inline_ok {
        order.reverse();
    }
    let tries = if inline_ok { &order[..] } else { &order[..1] };
    for &tiling in tries {
        for &hoist in body::Hoist::levels(w) {
            let e = Emitter::new(lk, tiling, hoist, t, w, lane, int);
            match e.and_then(|e| e.run()) {
                Ok((bytes, prefetched, held)) => {
                    return Some(Code {
                        width: w,
                        lane,
                        int,
                        kind: "loop kernel",
                        bytes,
                        tiled: tiling.map_or(0, |s| s.locals.len()),
                        prefetched,
                        held,
                        homed: 0,
                    })
                }
                Err(Fail::Registers) => continue,
                Err(Fail::Asm(e)) => {
                    debug_assert!(false, "{} kernel: assembler error {e}", w.name());
                    return None;
                }
            }
        }
        if tiled.is_none() || !inline_ok {
            break; // both orders are the inline one, or only the tiled one exists
        }
    }
    None
}

/// The lanes of a kernel this backend emits (see the module doc) and whether they hold
/// integers, if it does: every value of one type (f32, f64, i32 or i64) or a bool mask
/// (bool accesses: `bools.rs`; a kernel of bools only has f32-sized lanes); a function whose
/// trace calls out (sin/cos, f32) only where `tiling` computes it by its micro-kernel.
fn supported(lk: &LoopKernel, tiling: Option<&Tiling>) -> Option<(Lane, bool)> {
    let values = (lk.accesses.iter())
        .map(|a| a.dtype)
        .filter(|&d| d != DType::Bool);
    let (lane, int) = match values.clone().next() {
        Some(_) => Lane::of_values(values)?,
        None => (Lane::F32, false),
    };
    if (lk.accesses.iter()).any(|a| !matches!(a.strides.last(), Some(0) | Some(1))) {
        return None;
    }
    let tiled = |v: LocalId| tiling.is_some_and(|s| s.locals.iter().any(|n| n.0 == v));
    (0..lk.locals.len())
        .all(|v| node_ok(&lk.locals, v, lane, int) || tiled(v))
        .then_some((lane, int))
}

/// Whether this backend emits local `v` in a kernel of `lane` values, integers where `int`:
/// the capability table of the x86 emitter over the lowered ops and value types.
fn node_ok(locals: &[Local], v: LocalId, lane: Lane, int: bool) -> bool {
    let f = value_dtype(lane, int);
    let l = &locals[v];
    // A 16-bit float is an f32 lane (`half.rs`); a cast to one rounds.
    let arg = |i: usize| locals[l.op.operands()[i]].dtype.compute();
    match (l.op, l.dtype.compute()) {
        (LocalOp::Read(_) | LocalOp::Const(_), d) => d == f || d == DType::Bool,
        (LocalOp::Unary(u, _), d) if d == f && int => int::unary_ok(u),
        (LocalOp::Binary(o, ..), d) if d == f && int => int::binary_ok(o, lane),
        (LocalOp::Unary(u, _), d) if d == f => match u {
            UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sqrt
            | UnaryOp::Floor
            | UnaryOp::StopGradient => true,
            UnaryOp::Exp
            | UnaryOp::Ln
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Erf
            | UnaryOp::Log1p
            | UnaryOp::Expm1 => inlines(u.into(), f),
            // (relu, square, recip and rsqrt are binary ops once lowered)
            UnaryOp::Relu | UnaryOp::Square | UnaryOp::Recip | UnaryOp::Rsqrt | UnaryOp::Not => {
                false
            }
        },
        (LocalOp::Unary(UnaryOp::Not, _), DType::Bool) => true,
        (LocalOp::Binary(BinaryOp::Pow, ..), d) if d == f => inlines(traced::Function::Pow, f),
        (LocalOp::Binary(o, ..), d) if d == f => matches!(
            o,
            BinaryOp::Add
                | BinaryOp::Sub
                | BinaryOp::Mul
                | BinaryOp::Div
                | BinaryOp::Max
                | BinaryOp::Min
        ),
        (LocalOp::Binary(BinaryOp::And | BinaryOp::Or, ..), DType::Bool) => true,
        (LocalOp::Compare(..), DType::Bool) => arg(0) == f,
        (LocalOp::Select(..), d) => d == f && arg(0) == DType::Bool,
        // (casts from and to bool are a select and a compare once lowered)
        (LocalOp::Cast(_), to) => arg(0) == f && to == f,
        _ => false,
    }
}

/// Whether traced function `func` on `f` lanes can be spelled inline (sin and cos call out
/// of line: tiled only, where `supported` allows it).
fn inlines(func: traced::Function, f: DType) -> bool {
    traced::trace(func, f).is_some_and(|t| !t.0.iter().any(traced::SymOp::calls))
}

/// The dtype of values in `lane`s, integers where `int`.
fn value_dtype(lane: Lane, int: bool) -> DType {
    match (lane, int) {
        (Lane::F32, true) => DType::I32,
        (Lane::F64, true) => DType::I64,
        (lane, false) => lane.dtype(),
    }
}

/// General-purpose registers and their roles. Scratch: rax, rcx (mask and address arithmetic,
/// call target). The element index, the count and the last start of a full group are in
/// callee-saved registers; the access pointers get the rest.
const R_I: AsmRegister64 = rbx;
const R_N: AsmRegister64 = r15;
const R_LAST: AsmRegister64 = r14;
const PTR_REGS: [AsmRegister64; 10] = [rdx, rsi, rdi, r8, r9, r10, r11, r12, r13, rbp];

/// Vectors per iteration of the unrolled loop.
const UNROLL: usize = 4;

/// Stack frame layout (byte offsets from rsp, which is 64-byte aligned).
struct Frame {
    saved_rsp: i32,
    begin: i32,
    end: i32,
    /// Elements in the current row.
    n: i32,
    /// First element of the current tile (tiled kernels).
    t0: i32,
    /// Elements in the current tile.
    m: i32,
    /// First element of each access (`ptrs[ptr] + offset`).
    start: i32,
    /// Each access at the current row's first element.
    row: i32,
    /// Index along each outer dimension.
    idx: i32,
    /// The tail's copy of a bool access (32 bytes; kernels with bool accesses).
    bool_tail: i32,
    /// The tiled nodes' tiles (`Target::tile` f32 each).
    tiles: i32,
    size: i32,
}

struct Emitter<'a> {
    asm: Asm,
    p: &'a LoopKernel<'a>,
    tiling: Option<&'a Tiling>,
    /// How many constants and stride-0 accesses stay in registers for a whole pass.
    hoist: body::Hoist,
    frame: Frame,
    tile: usize,
    /// Accesses prefetched ahead (`stream_prefetch`), for the listing.
    prefetched: usize,
    /// Whether some pass stores non-temporally (the kernel ends with a store fence).
    streams: bool,
    /// `Target::streaming_min_bytes`.
    streaming_min_bytes: usize,
}

impl<'a> Emitter<'a> {
    fn new(
        p: &'a LoopKernel<'a>,
        tiling: Option<&'a Tiling>,
        hoist: body::Hoist,
        t: &Target,
        w: Width,
        lane: Lane,
        int: bool,
    ) -> R<Self> {
        let na = p.accesses.len() as i32;
        let nd = p.dims.len() as i32;
        let start = 48;
        let row = start + 8 * na;
        let idx = row + 8 * na;
        let bool_tail = idx + 8 * nd;
        let bools = p.accesses.iter().any(|a| a.dtype == DType::Bool);
        let tiles = (bool_tail + if bools { 32 } else { 0 } + 63) / 64 * 64;
        let tiled = tiling.map_or(0, |s| s.locals.len()) as i32;
        let size = tiles + tiled * (t.tile as i32) * 4;
        let size = (size + 63) / 64 * 64;
        let mut asm = Asm::new(w, lane)?;
        asm.int = int;
        Ok(Emitter {
            asm,
            p,
            tiling,
            hoist,
            frame: Frame {
                saved_rsp: 0,
                begin: 8,
                end: 16,
                n: 24,
                t0: 32,
                m: 40,
                start,
                row,
                idx,
                bool_tail,
                tiles,
                size,
            },
            tile: t.tile,
            prefetched: 0,
            streams: false,
            streaming_min_bytes: t.streaming_min_bytes,
        })
    }

    /// The kernel's bytes, how many accesses it prefetches ahead, and the most values a pass
    /// holds in registers.
    fn run(mut self) -> R<(Vec<u8>, usize, usize)> {
        let f = &self.frame;
        let (size, saved, begin, end) = (f.size, f.saved_rsp, f.begin, f.end);
        prologue(&mut self.asm.a, size, saved, begin, end)?;
        for (i, acc) in self.p.accesses.iter().enumerate() {
            let scale = self.asm.elem_bytes(acc.dtype) as i64;
            let a = &mut self.asm.a;
            a.mov(rax, qword_ptr(rdi + (acc.ptr as i32) * 8))?;
            add_imm(a, rax, acc.offset * scale)?;
            a.mov(qword_ptr(rsp + (self.frame.start + 8 * i as i32)), rax)?;
        }
        let mut done = self.asm.a.create_label();
        let nd = self.p.dims.len();
        if self.p.dims.contains(&0) {
            // Nothing to compute (the odometer runs at least once per started range).
            self.asm.a.jmp(done)?;
        }
        if nd == 1 {
            let f = &self.frame;
            let a = &mut self.asm.a;
            a.mov(rax, qword_ptr(rsp + f.end))?;
            a.sub(rax, qword_ptr(rsp + f.begin))?;
            a.jle(done)?;
            a.mov(qword_ptr(rsp + f.n), rax)?;
            for (i, acc) in self.p.accesses.iter().enumerate() {
                let scale = self.asm.elem_bytes(acc.dtype);
                let a = &mut self.asm.a;
                a.mov(rcx, qword_ptr(rsp + (f.start + 8 * i as i32)))?;
                if acc.strides[0] == 1 {
                    a.mov(rax, qword_ptr(rsp + f.begin))?;
                    a.lea(rcx, qword_ptr(rcx + rax * scale))?;
                }
                a.mov(qword_ptr(rsp + (f.row + 8 * i as i32)), rcx)?;
            }
            self.row()?;
        } else {
            let f = &self.frame;
            let (fidx, fn_, fstart, frow, fend) = (f.idx, f.n, f.start, f.row, f.end);
            let a = &mut self.asm.a;
            first_row(a, fidx, nd - 1, f.begin, fend, done)?;
            a.mov(rax, *self.p.dims.last().unwrap() as u64)?;
            a.mov(qword_ptr(rsp + fn_), rax)?;
            let mut top = a.create_label();
            mark(a, &mut top)?;
            for (i, acc) in self.p.accesses.iter().enumerate() {
                let scale = self.asm.elem_bytes(acc.dtype);
                let a = &mut self.asm.a;
                a.mov(rcx, qword_ptr(rsp + (fstart + 8 * i as i32)))?;
                add_strided(a, rcx, fidx, &acc.strides[..nd - 1], scale, r8)?;
                a.mov(qword_ptr(rsp + (frow + 8 * i as i32)), rcx)?;
            }
            self.row()?;
            next_row(&mut self.asm.a, fidx, &self.p.dims[..nd - 1], fend, top)?;
        }
        let a = &mut self.asm.a;
        mark(a, &mut done)?;
        if self.streams {
            // Non-temporal stores are ordered by nothing else: visible before the kernel
            // returns (the caller's release of its chunk, a later kernel's reads).
            a.sfence()?;
        }
        epilogue(a, saved)?;
        let (prefetched, held) = (self.prefetched, self.asm.held);
        Ok((self.asm.finish()?, prefetched, held))
    }

    /// One row of `frame.n` elements from the pointers in `frame.row`.
    fn row(&mut self) -> R<()> {
        let Some(st) = self.tiling else {
            return self.sweep(None, self.frame.n, false);
        };
        let f = &self.frame;
        let (t0, m, n) = (f.t0, f.m, f.n);
        let tile = self.tile as i32;
        let a = &mut self.asm.a;
        a.mov(qword_ptr(rsp + t0), 0)?;
        let mut top = a.create_label();
        mark(a, &mut top)?;
        a.mov(rax, qword_ptr(rsp + n))?;
        a.sub(rax, qword_ptr(rsp + t0))?;
        a.mov(rcx, tile as u64)?;
        a.cmp(rax, rcx)?;
        a.cmovg(rax, rcx)?;
        a.mov(qword_ptr(rsp + m), rax)?;
        for r in 0..=st.last {
            self.sweep(Some(r), m, true)?;
            if r < st.last {
                for (j, &(_, sweep, f)) in st.locals.iter().enumerate() {
                    if sweep != r {
                        continue;
                    }
                    let at = self.frame.tiles + (j * self.tile * 4) as i32;
                    let a = &mut self.asm.a;
                    a.lea(rdi, qword_ptr(rsp + at))?;
                    a.mov(rsi, rdi)?;
                    a.mov(rdx, qword_ptr(rsp + m))?;
                    a.mov(rax, f as usize as u64)?;
                    a.call(rax)?;
                }
            }
        }
        let a = &mut self.asm.a;
        a.mov(rax, qword_ptr(rsp + t0))?;
        a.add(rax, tile)?;
        a.mov(qword_ptr(rsp + t0), rax)?;
        a.cmp(rax, qword_ptr(rsp + n))?;
        a.jl(top)?;
        Ok(())
    }

    /// One sweep over `[rsp + count]` elements: sweep `r` of a tiled kernel (its roots stored
    /// into tiles, or the outputs in the last sweep), or the whole kernel (`r` None). `in_tile`:
    /// the pointers start at the tile's first element.
    fn sweep(&mut self, r: Option<usize>, count: i32, in_tile: bool) -> R<()> {
        let sweep = body::Sweep::new(self.p, self.tiling, r);
        // Pointer registers for the accesses the sweep touches.
        let mut ptrs: Vec<Option<AsmRegister64>> = vec![None; self.p.accesses.len()];
        let mut next = 0;
        for (ai, used) in sweep.used.iter().enumerate() {
            if !*used {
                continue;
            }
            let reg = *PTR_REGS.get(next).ok_or(Fail::Registers)?;
            next += 1;
            ptrs[ai] = Some(reg);
            let scale = self.asm.elem_bytes(self.p.accesses[ai].dtype);
            let a = &mut self.asm.a;
            a.mov(reg, qword_ptr(rsp + (self.frame.row + 8 * ai as i32)))?;
            if in_tile && self.p.accesses[ai].strides.last() == Some(&1) {
                a.mov(rax, qword_ptr(rsp + self.frame.t0))?;
                a.lea(reg, qword_ptr(reg + rax * scale))?;
            }
        }
        let mut regs = body::Regs::new(self.asm.w);
        let hoisted = sweep.hoist(&mut self.asm, &ptrs, &mut regs, self.hoist)?;
        let prefetch = if in_tile {
            Vec::new()
        } else {
            self.stream_prefetch(&ptrs)
        };
        self.prefetched = self.prefetched.max(prefetch.len());
        let ctx = body::Ctx {
            ptrs: &ptrs,
            accs: &[],
            hoisted: &hoisted,
            tiles: self.frame.tiles,
            tile_bytes: (self.tile * 4) as i32,
            prefetch: &prefetch,
            bool_tail: Some(self.frame.bool_tail),
            stream: &[],
        };
        let a = &mut self.asm.a;
        a.mov(R_N, qword_ptr(rsp + count))?;
        a.xor(R_I, R_I)?;
        let stream = if in_tile {
            Vec::new()
        } else {
            self.streamed(&ptrs)
        };
        if !stream.iter().any(|&s| s) {
            return run_loop(&mut self.asm, &sweep, &ctx, &regs);
        }
        // Rows whose streamed outputs start on a vector boundary store them around the
        // caches (their prefetches for writing dropped: they would fetch the lines the
        // stores avoid reading); any other row, the same loop with ordinary stores.
        self.streams = true;
        let mask = self.asm.lanes() as i32 * self.asm.lane.bytes() - 1;
        let (mut ordinary, mut done) = (self.asm.a.create_label(), self.asm.a.create_label());
        for (ai, _) in stream.iter().enumerate().filter(|(_, &s)| s) {
            let reg = ptrs[ai].expect("a streamed access has a pointer");
            self.asm.a.test(reg, mask)?;
            self.asm.a.jnz(ordinary)?;
        }
        let kept: Vec<_> = prefetch
            .iter()
            .copied()
            .filter(|&(reg, _, _)| !(0..ptrs.len()).any(|ai| stream[ai] && ptrs[ai] == Some(reg)))
            .collect();
        let streaming = body::Ctx {
            prefetch: &kept,
            stream: &stream,
            ..ctx
        };
        run_loop(&mut self.asm, &sweep, &streaming, &regs)?;
        self.asm.a.jmp(done)?;
        mark(&mut self.asm.a, &mut ordinary)?;
        self.asm.a.xor(R_I, R_I)?;
        run_loop(&mut self.asm, &sweep, &ctx, &regs)?;
        mark(&mut self.asm.a, &mut done)?;
        Ok(())
    }

    /// The outputs this pass stores non-temporally: contiguous outputs of the lane's size
    /// (not bools, not 16-bit floats) of a kernel that moves at least the last-level cache
    /// (`Target::streaming_min_bytes`) along runs of at least a few vectors. Written through the
    /// caches, such an output evicts what the next call would read and costs a read of every
    /// line before its write: an axpby of 16 MiB arrays took 1.55–1.70 ms with ordinary
    /// stores and 1.10–1.18 ms streamed (C loop, both cores, AMD EPYC Zen 4, 32 MiB L3);
    /// arrays of 4 MiB (cache-resident) took 0.09 ms and 0.15 ms.
    fn streamed(&self, ptrs: &[Option<AsmRegister64>]) -> Vec<bool> {
        let lane = self.asm.lane.bytes() as usize;
        let run = self.p.dims.last().copied().unwrap_or(0);
        let elems: usize = self.p.dims.iter().product();
        let bytes: usize = (self.p.accesses.iter())
            .filter(|a| a.strides.last() == Some(&1))
            .map(|a| a.dtype.size() * elems)
            .sum();
        if bytes < self.streaming_min_bytes || run < 4 * self.asm.lanes() {
            return Vec::new();
        }
        (0..self.p.accesses.len())
            .map(|ai| {
                let a = &self.p.accesses[ai];
                // (Of the lane's size: neither a bool nor a 16-bit float.)
                self.p.is_output(ai)
                    && ptrs[ai].is_some()
                    && a.strides.last() == Some(&1)
                    && a.dtype.size() == lane
            })
            .collect()
    }

    /// The pass's contiguous accesses, to prefetch `PREFETCH_AHEAD` bytes ahead (`Ctx::prefetch`;
    /// outputs with write intent), when the kernel streams more than fits in L2 along runs of at
    /// least that length. The hardware streamer stops at each 4 KiB page and starts again;
    /// the software prefetches keep the lines coming across. Same run, interleaved, on the
    /// 2-core Xeon: W2 2.5-2.7 -> 1.9-2.35 ms (ours/hand 1.12 -> 0.83-0.90), chain20 -10 %;
    /// reads only or writes only gained about half of that each. 512 to 2048 bytes ahead
    /// measured alike; W1 (tanh: compute-bound) unchanged.
    fn stream_prefetch(&self, ptrs: &[Option<AsmRegister64>]) -> Vec<(AsmRegister64, i32, bool)> {
        let run = self.p.dims.last().copied().unwrap_or(0);
        let contiguous: Vec<usize> = (0..self.p.accesses.len())
            .filter(|&ai| self.p.accesses[ai].strides.last() == Some(&1))
            .filter(|&ai| self.p.accesses[ai].dtype.size() == self.asm.lane.bytes() as usize)
            .collect();
        let lane = self.asm.lane.bytes() as usize;
        let bytes = self.p.dims.iter().product::<usize>() * contiguous.len() * lane;
        if run * lane < PREFETCH_AHEAD as usize || bytes < STREAM_MIN_BYTES {
            return Vec::new();
        }
        contiguous
            .into_iter()
            .filter_map(|ai| Some((ptrs[ai]?, PREFETCH_AHEAD, self.p.is_output(ai))))
            .collect()
    }
}

/// How far ahead loop kernels prefetch their streams (bytes).
const PREFETCH_AHEAD: i32 = 1024;
/// Kernels prefetch when their contiguous accesses move at least this much (L2 size).
pub(super) const STREAM_MIN_BYTES: usize = 1 << 20;
/// Prefetch distances are below this, so that the last line's displacement fits an i32.
pub(super) const MAX_PREFETCH_BYTES: i64 = 1 << 30;

/// The vectors of a pass from element `R_I` up to `R_N`: groups of UNROLL vectors, single
/// vectors, then the last 1..lanes-1 elements under the tail mask (k1, or ymm15 on AVX2). `regs`: the registers free in each
/// vector (the pass's hoisted values taken).
fn run_loop(asm: &mut Asm, sweep: &body::Sweep, ctx: &body::Ctx, regs: &body::Regs) -> R<()> {
    let lanes = asm.lanes();
    let scale = asm.lane.bytes();
    let a = &mut asm.a;
    let group = (UNROLL * lanes) as i32;
    let mut skip = a.create_label();
    a.lea(R_LAST, qword_ptr(R_N - group))?;
    a.cmp(R_I, R_LAST)?;
    a.jg(skip)?;
    let mut top = a.create_label();
    mark(a, &mut top)?;
    for u in 0..UNROLL {
        sweep.vector(asm, ctx, &mut regs.clone(), (u * lanes) as i32, false)?;
    }
    let a = &mut asm.a;
    for &(ptr, next, written) in ctx.prefetch {
        // One line per 64 bytes of the group.
        for u in 0..group * scale / 64 {
            let line = byte_ptr(ptr + R_I * scale + (next + u * 64));
            if written {
                a.prefetchw(line)?;
            } else {
                a.prefetcht0(line)?;
            }
        }
    }
    a.add(R_I, group)?;
    a.cmp(R_I, R_LAST)?;
    a.jle(top)?;
    mark(a, &mut skip)?;
    let mut skip = a.create_label();
    a.lea(R_LAST, qword_ptr(R_N - lanes as i32))?;
    a.cmp(R_I, R_LAST)?;
    a.jg(skip)?;
    let mut top = a.create_label();
    mark(a, &mut top)?;
    sweep.vector(asm, ctx, &mut regs.clone(), 0, false)?;
    let a = &mut asm.a;
    a.add(R_I, lanes as i32)?;
    a.cmp(R_I, R_LAST)?;
    a.jle(top)?;
    mark(a, &mut skip)?;
    let mut end = a.create_label();
    a.cmp(R_I, R_N)?;
    a.jge(end)?;
    a.mov(rcx, R_N)?;
    a.sub(rcx, R_I)?;
    match asm.w {
        Width::Z => {
            a.mov(eax, 1)?;
            a.shl(eax, cl)?;
            a.sub(eax, 1)?;
            a.kmovw(k1, eax)?;
        }
        Width::Y => {
            // The first rcx lanes: the 8 dwords of the tail table at 8 - rcx (f32) or
            // 8 - 2 rcx (f64).
            let table = asm.tail_table();
            let a = &mut asm.a;
            a.lea(rax, qword_ptr(table))?;
            a.neg(rcx)?;
            a.vmovdqu(
                body::Y[body::Y_TAIL as usize],
                ymmword_ptr(rax + rcx * scale + 32),
            )?;
        }
    }
    sweep.vector(asm, ctx, &mut regs.clone(), 0, true)?;
    mark(&mut asm.a, &mut end)?;
    Ok(())
}
