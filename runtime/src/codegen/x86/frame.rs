//! A kernel function's frame and row odometer, shared by the loop, row and row-sum kernels:
//! the prologue and epilogue of the calling convention, labels, and the walk over the outer
//! dimensions of a range of rows.

use super::*;

/// `reg += imm` for any i64.
pub(super) fn add_imm(a: &mut CodeAssembler, reg: AsmRegister64, imm: i64) -> R<()> {
    if imm == 0 {
        return Ok(());
    }
    match i32::try_from(imm) {
        Ok(i) => a.add(reg, i)?,
        Err(_) => {
            a.mov(rcx, imm)?;
            a.add(reg, rcx)?;
        }
    }
    Ok(())
}

/// Place `l` here. A zero-size instruction carries it, so that two labels may share an address
/// (the assembler allows one label per instruction).
pub(super) fn mark(a: &mut CodeAssembler, l: &mut CodeLabel) -> R<()> {
    a.set_label(l)?;
    a.zero_bytes()?;
    Ok(())
}

/// Save the callee-saved registers, align rsp to 64 and reserve `size` bytes (touching each
/// page in order: the guard page must be hit first), keep the old rsp at `saved` and the
/// range arguments (rsi, rdx) at `begin` and `end`. rdi (`ptrs`) is left as it was.
pub(super) fn prologue(
    a: &mut CodeAssembler,
    size: i32,
    saved: i32,
    begin: i32,
    end: i32,
) -> R<()> {
    for r in [rbx, rbp, r12, r13, r14, r15] {
        a.push(r)?;
    }
    a.mov(rax, rsp)?;
    a.and(rsp, -64)?;
    for _ in 0..size / 4096 {
        a.sub(rsp, 4096)?;
        a.or(qword_ptr(rsp), 0)?;
    }
    if size % 4096 != 0 {
        a.sub(rsp, size % 4096)?;
    }
    a.mov(qword_ptr(rsp + saved), rax)?;
    a.mov(qword_ptr(rsp + begin), rsi)?;
    a.mov(qword_ptr(rsp + end), rdx)?;
    Ok(())
}

/// Undo `prologue` and return (upper vector state cleared for the SSE code of the caller).
pub(super) fn epilogue(a: &mut CodeAssembler, saved: i32) -> R<()> {
    a.mov(rsp, qword_ptr(rsp + saved))?;
    for r in [r15, r14, r13, r12, rbp, rbx] {
        a.pop(r)?;
    }
    a.vzeroupper()?;
    a.ret()?;
    Ok(())
}

/// `reg += idx[d] * strides[d] * scale` over the outer dims (indices in the frame at
/// `idx + 8d`; `scale` bytes per element); `scratch` holds strides too large for an immediate.
pub(super) fn add_strided(
    a: &mut CodeAssembler,
    reg: AsmRegister64,
    idx: i32,
    strides: &[i64],
    scale: i32,
    scratch: AsmRegister64,
) -> R<()> {
    for (d, &st) in strides.iter().enumerate() {
        let bytes = st * scale as i64;
        if bytes == 0 {
            continue;
        }
        a.mov(rax, qword_ptr(rsp + (idx + 8 * d as i32)))?;
        match i32::try_from(bytes) {
            Ok(b) => a.imul_3(rax, rax, b)?,
            Err(_) => {
                a.mov(scratch, bytes)?;
                a.imul_2(rax, scratch)?;
            }
        }
        a.add(reg, rax)?;
    }
    Ok(())
}

/// The row odometer's start: to `done` when the range `[rsp + begin]..[rsp + end]` is empty,
/// else the first outer index at `begin` and the other `outer - 1` at 0.
pub(super) fn first_row(
    a: &mut CodeAssembler,
    idx: i32,
    outer: usize,
    begin: i32,
    end: i32,
    done: CodeLabel,
) -> R<()> {
    a.mov(rax, qword_ptr(rsp + begin))?;
    a.cmp(rax, qword_ptr(rsp + end))?;
    a.jge(done)?;
    a.mov(qword_ptr(rsp + idx), rax)?;
    for d in 1..outer {
        a.mov(qword_ptr(rsp + (idx + 8 * d as i32)), 0)?;
    }
    Ok(())
}

/// The row odometer's step: the last outer index counts up to its dim and carries into the
/// one before; the first counts up to `[rsp + end]` (the range's end). Jumps to `top` while
/// rows remain.
pub(super) fn next_row(
    a: &mut CodeAssembler,
    idx: i32,
    dims: &[usize],
    end: i32,
    top: CodeLabel,
) -> R<()> {
    for d in (1..dims.len()).rev() {
        let at = idx + 8 * d as i32;
        a.mov(rax, qword_ptr(rsp + at))?;
        a.add(rax, 1)?;
        a.mov(qword_ptr(rsp + at), rax)?;
        a.cmp(rax, dims[d] as i32)?;
        a.jl(top)?;
        a.mov(qword_ptr(rsp + at), 0)?;
    }
    a.mov(rax, qword_ptr(rsp + idx))?;
    a.add(rax, 1)?;
    a.mov(qword_ptr(rsp + idx), rax)?;
    a.cmp(rax, qword_ptr(rsp + end))?;
    a.jl(top)?;
    Ok(())
}
