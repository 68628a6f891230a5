//! Row sums as x86 code (AVX-512 or AVX2): an f32 sum whose reduced positions are one
//! contiguous run per output element (`x.sum(-1)` and the like), the reduction kernels' common
//! case (W5).
//!
//! Same accuracy scheme as the Cranelift row form (`codegen/reduce.rs`): blocks of at most
//! `BLOCK` elements summed in f32 (four accumulators of 16 or 8 lanes), each block's sum added
//! into an f64 total, rounded to f32 once at the end. The order of the additions inside a
//! block differs (16 or 8 lanes, not 4), so the last bits may differ from the Cranelift
//! kernel's, as they differ between any two vector widths; both are compared with the
//! interpreter.

use super::body::{Y, Z};
use super::row::spells_reduction;
use super::{
    add_imm, add_strided, epilogue, first_row, mark, next_row, prologue, Asm, Code, Fail, Lane,
    Width, MAX_PREFETCH_BYTES, R, STREAM_MIN_BYTES,
};
use crate::codegen::lower::{Local, LocalOp, RowBody, BLOCK};
use crate::codegen::target::Target;
use crate::codegen::traced::SymOp as S;
use crate::describe::reduce as cr;
use crate::ir::ReduceOp;
use crate::{shape, DType};
use iced_x86::code_asm::*;

/// Vectors per unrolled iteration.
const UNROLL: i64 = 4;

/// One f32 row sum per output element: where the runs and the outputs are.
struct RowSum {
    /// Indices into `ptrs` and element offsets of the input and the output.
    input: (usize, i64),
    output: (usize, i64),
    /// Output dims (the first over `begin..end`), and the input's and output's strides
    /// (elements) along them.
    dims: Vec<usize>,
    in_strides: Vec<i64>,
    out_strides: Vec<i64>,
    /// Elements per run (contiguous).
    n: i64,
}

impl RowSum {
    /// Bytes from a run to the next one along the innermost output dim, when the sum should
    /// prefetch it: runs of at least a page (the hardware streamer stops at each page; reading
    /// the next run at the same time keeps a second stream going), in an input larger than
    /// L2. Same run, interleaved, on the 2-core Xeon: W5 ours/hand 0.88-0.96 -> 0.83-0.87.
    fn next_run_bytes(&self) -> Option<i32> {
        let step = *self.in_strides.last()? * 4;
        let total = self.dims.iter().product::<usize>() as i64 * self.n * 4;
        let long = self.n * 4 >= 4096 && total >= STREAM_MIN_BYTES as i64;
        (long && (64..MAX_PREFETCH_BYTES).contains(&step.abs())).then_some(step as i32)
    }
}

/// The reduction step `v` as x86 code at the target's width, or None when this backend does
/// not take it.
pub fn build(r: &cr::ReduceDescription, t: &Target) -> Option<Code> {
    let w = Width::of(t)?;
    let row = r.red.len() == 1 && r.red[0].stride == 1 && !r.column;
    if r.op != ReduceOp::Sum || r.dtype != DType::F32 || !row || !spells_reduction(r.op, r.dtype) {
        return None;
    }
    let dims: Vec<usize> = r.kept.iter().map(|d| d.size).collect();
    finish(
        w,
        RowSum {
            input: (0, r.offset),
            output: (1, 0),
            in_strides: r.kept.iter().map(|d| d.stride).collect(),
            out_strides: shape::strides(&dims)
                .into_iter()
                .map(|s| s as i64)
                .collect(),
            dims,
            n: r.red[0].size as i64,
        },
    )
}

/// A row kernel that is one f32 sum over a contiguous run (`x.sum(-1)` of an argument or a
/// view of it: W5), as x86 code with the row kernels' ABI; None otherwise.
pub fn build_row(rb: &RowBody, t: &Target) -> Option<Code> {
    let w = Width::of(t)?;
    let pl = rb.plan;
    // One member: the sum of the one read.
    let members: Vec<&Local> = rb.locals.iter().filter(|l| !l.op.is_leaf()).collect();
    if !matches!(
        members[..],
        [Local {
            op: LocalOp::Reduce(ReduceOp::Sum, _),
            ..
        }]
    ) {
        return None;
    }
    if pl.accesses.len() != 2 || pl.outs != [1] {
        return None;
    }
    let (i, o) = (&pl.accesses[0], &pl.accesses[1]);
    if i.dtype != DType::F32 || o.dtype != DType::F32 || (i.i_stride != 1 && pl.n > 1) {
        return None;
    }
    finish(
        w,
        RowSum {
            input: (i.ptr, i.offset),
            output: (o.ptr, o.offset),
            dims: pl.o_dims.clone(),
            in_strides: i.o_strides.clone(),
            out_strides: o.o_strides.clone(),
            n: pl.n as i64,
        },
    )
}

fn finish(w: Width, r: RowSum) -> Option<Code> {
    if r.dims.iter().any(|&d| d > i32::MAX as usize) {
        return None;
    }
    let next = r.next_run_bytes();
    match emit(w, &r, next) {
        Ok(bytes) => Some(Code {
            width: w,
            lane: Lane::F32,
            int: false,
            kind: "row sum",
            bytes,
            tiled: 0,
            prefetched: next.map_or(0, |_| 1),
            held: 0,
        }),
        Err(Fail::Registers) => None,
        Err(Fail::Asm(e)) => {
            debug_assert!(false, "{} row sum: assembler error {e}", w.name());
            None
        }
    }
}

/// The kernel; `next`: bytes to the next run, prefetched while summing (`next_run_bytes`).
fn emit(w: Width, r: &RowSum, next: Option<i32>) -> R<Vec<u8>> {
    let mut asm = Asm::new(w, Lane::F32)?;
    let a = &mut asm.a;
    let (saved, begin, end, idx) = (0, 8, 16, 24);
    let nk = r.dims.len();
    let size = (idx + 8 * nk as i32 + 63) / 64 * 64;
    prologue(a, size, saved, begin, end)?;
    // r12: the input's first element; r13: the output's.
    for (reg, (ptr, off)) in [(r12, r.input), (r13, r.output)] {
        a.mov(reg, qword_ptr(rdi + 8 * ptr as i32))?;
        add_imm(a, reg, off * 4)?;
    }
    let mut done = a.create_label();
    if r.dims.contains(&0) {
        // No output element (the odometer below runs at least once per started range).
        a.jmp(done)?;
    }
    first_row(a, idx, nk, begin, end, done)?;
    let mut top = a.create_label();
    mark(a, &mut top)?;
    // rsi: this output's input run; rdi: its output element.
    a.mov(rsi, r12)?;
    a.mov(rdi, r13)?;
    add_strided(a, rsi, idx, &r.in_strides, 4, rcx)?;
    add_strided(a, rdi, idx, &r.out_strides, 4, rcx)?;
    row_sum(&mut asm, r.n, next)?;
    let a = &mut asm.a;
    a.vmovss(dword_ptr(rdi), xmm0)?;
    next_row(a, idx, &r.dims, end, top)?;
    mark(a, &mut done)?;
    epilogue(a, saved)?;
    asm.finish()
}

/// The sum of the `n` f32 at rsi into xmm0 (f32), prefetching the lines `next` bytes further
/// on. Uses rdx (element index), r8, r9 (counters), rax, vector registers 0-5 (zmm or ymm),
/// xmm8 (the f64 total), k1.
fn row_sum(e: &mut Asm, n: i64, next: Option<i32>) -> R<()> {
    let a = &mut e.a;
    a.vxorpd(xmm8, xmm8, xmm8)?;
    a.xor(edx, edx)?;
    let full = n / BLOCK;
    if full > 0 {
        a.mov(r8, full)?;
        let mut blk = a.create_label();
        mark(a, &mut blk)?;
        block(e, BLOCK, next)?;
        let a = &mut e.a;
        a.sub(r8, 1)?;
        a.jnz(blk)?;
    }
    if n % BLOCK != 0 {
        block(e, n % BLOCK, next)?;
    }
    e.a.vcvtsd2ss(xmm0, xmm8, xmm8)?;
    Ok(())
}

/// Add the `len` elements at rsi + rdx*4 into the f64 total xmm8; rdx advances past them.
fn block(e: &mut Asm, len: i64, next: Option<i32>) -> R<()> {
    let lanes = e.w.lanes() as i64;
    let vec_bytes = 4 * lanes as i32;
    let group = UNROLL * lanes;
    for r in 0..UNROLL as u8 {
        e.zero(r)?;
    }
    // acc u += the vector u vectors past rsi + rdx*4.
    let add = |e: &mut Asm, u: u8| -> R<()> {
        let mem = e.vmem(rsi + rdx * 4 + vec_bytes * u as i32);
        match e.w {
            Width::Z => e.a.vaddps(Z[u as usize], Z[u as usize], mem)?,
            Width::Y => e.a.vaddps(Y[u as usize], Y[u as usize], mem)?,
        }
        Ok(())
    };
    let groups = len / group;
    if groups > 0 {
        e.a.mov(r9, groups)?;
        let mut top = e.a.create_label();
        mark(&mut e.a, &mut top)?;
        for u in 0..UNROLL as u8 {
            add(e, u)?;
        }
        if let Some(next) = next {
            for u in 0..(group * 4 / 64) as i32 {
                e.a.prefetcht0(byte_ptr(rsi + rdx * 4 + (next + 64 * u)))?;
            }
        }
        let a = &mut e.a;
        a.add(rdx, group as i32)?;
        a.sub(r9, 1)?;
        a.jnz(top)?;
    }
    let rest = len % group;
    let (vecs, tail) = (rest / lanes, rest % lanes);
    for u in 0..vecs as u8 {
        add(e, u)?;
    }
    if tail > 0 {
        let mem = e.vmem(rsi + rdx * 4 + vec_bytes * vecs as i32);
        match e.w {
            Width::Z => {
                let a = &mut e.a;
                a.mov(eax, ((1u32 << tail) - 1) as i32)?;
                a.kmovw(k1, eax)?;
                a.vmovups(zmm4.k1().z(), mem)?;
                a.vaddps(zmm0, zmm0, zmm4)?;
            }
            Width::Y => {
                // The first `tail` lanes' mask from the tail table.
                let table = e.tail_table();
                let a = &mut e.a;
                a.lea(rax, qword_ptr(table))?;
                a.vmovdqu(ymm5, ymmword_ptr(rax + 4 * (8 - tail as i32)))?;
                a.vmaskmovps(ymm4, ymm5, mem)?;
                a.vaddps(ymm0, ymm0, ymm4)?;
            }
        }
    }
    if rest > 0 {
        e.a.add(rdx, rest as i32)?;
    }
    // (a0 + a1) + (a2 + a3), then the lanes pairwise (a zmm's halves first), into f64.
    for (d, x, y) in [(0, 0, 1), (2, 2, 3), (0, 0, 2)] {
        e.sym_op(S::Add(0, 1), d, &|j| if j == 0 { x } else { y })?;
    }
    let a = &mut e.a;
    if e.w == Width::Z {
        a.vextractf64x4(ymm1, zmm0, 1)?;
        a.vaddps(ymm0, ymm0, ymm1)?;
    }
    a.vextractf128(xmm1, ymm0, 1)?;
    a.vaddps(xmm0, xmm0, xmm1)?;
    a.vmovhlps(xmm1, xmm0, xmm0)?;
    a.vaddps(xmm0, xmm0, xmm1)?;
    a.vmovshdup(xmm1, xmm0)?;
    a.vaddss(xmm0, xmm0, xmm1)?;
    a.vcvtss2sd(xmm0, xmm0, xmm0)?;
    a.vaddsd(xmm8, xmm8, xmm0)?;
    Ok(())
}
