//! Bool accesses of x86 loop kernels: a bool tensor holds one byte per element (0 or 1; any
//! nonzero byte reads as true, as the Cranelift kernels read it), a kernel's bool values are
//! masks (k registers, or vector lanes of all ones at AVX2). A mask is read by zero-extending
//! the vector's bytes to its lanes and testing them; written by taking its lane bits to a
//! general register and spreading each 4 bits to 4 bytes (one multiply, one and).
//!
//! The last vector of a row reads and writes only the bytes of its lanes: they are copied byte
//! by byte between memory and a 16-byte slot of the frame (`Ctx::bool_tail`), which the
//! vector then reads or writes whole. No access touches a byte past its buffer.

use super::body::{K, X, Y, Z};
use super::{Asm, Lane, Width, R, R_I, R_N};
use iced_x86::code_asm::*;

/// Multiplying 4 bits `b3 b2 b1 b0` by this puts `b_j` at bit `8 j` (the shifted copies do not
/// overlap, so no carry disturbs them); `& SPREAD_BYTES` keeps those bits.
const SPREAD_4: i32 = 0x0020_4081;
const SPREAD_BYTES: i32 = 0x0101_0101;

impl Asm {
    /// Mask `k` = the bools at `m`, one per lane (nonzero is true); `t` a scratch vector
    /// register.
    pub(super) fn bool_load(&mut self, k: u8, m: AsmMemoryOperand, t: u8) -> R<()> {
        let (ki, ti) = (k as usize, t as usize);
        match (self.w, self.lane) {
            (Width::Z, Lane::F32) => {
                self.a.vpmovzxbd(Z[ti], xmmword_ptr(m))?;
                self.a.vptestmd(K[ki], Z[ti], Z[ti])?;
            }
            (Width::Z, Lane::F64) => {
                self.a.vpmovzxbq(Z[ti], qword_ptr(m))?;
                self.a.vptestmq(K[ki], Z[ti], Z[ti])?;
            }
            (Width::Y, lane) => {
                match lane {
                    Lane::F32 => self.a.vpmovzxbd(Y[ki], qword_ptr(m))?,
                    Lane::F64 => self.a.vpmovzxbq(Y[ki], dword_ptr(m))?,
                }
                // Bytes are unsigned: nonzero is greater than 0.
                self.zero(t)?;
                match lane {
                    Lane::F32 => self.a.vpcmpgtd(Y[ki], Y[ki], Y[ti])?,
                    Lane::F64 => self.a.vpcmpgtq(Y[ki], Y[ki], Y[ti])?,
                }
            }
        }
        Ok(())
    }

    /// Mask `k` = the bool at `m` in every lane (through eax).
    pub(super) fn bool_broadcast(&mut self, k: u8, m: AsmMemoryOperand) -> R<()> {
        let a = &mut self.a;
        a.cmp(byte_ptr(m), 0)?;
        a.setne(al)?;
        a.movzx(eax, al)?;
        a.neg(eax)?;
        match self.w {
            Width::Z => a.kmovw(K[k as usize], eax)?,
            Width::Y => {
                a.vmovd(X[k as usize], eax)?;
                a.vpbroadcastd(Y[k as usize], X[k as usize])?;
            }
        }
        Ok(())
    }

    /// The bools of mask `k`, one byte (0 or 1) per lane, to the bytes from `at(0)` on (`at(j)`:
    /// `j` bytes further); through eax and ecx.
    pub(super) fn bool_store(&mut self, at: &dyn Fn(i32) -> AsmMemoryOperand, k: u8) -> R<()> {
        let groups = (self.lanes() / 4) as i32;
        let a = &mut self.a;
        match (self.w, self.lane) {
            (Width::Z, _) => a.kmovw(eax, K[k as usize])?,
            (Width::Y, Lane::F32) => a.vmovmskps(eax, Y[k as usize])?,
            (Width::Y, Lane::F64) => a.vmovmskpd(eax, Y[k as usize])?,
        }
        for g in 0..groups {
            a.mov(ecx, eax)?;
            if g > 0 {
                a.shr(ecx, 4 * g as u32)?;
            }
            a.and(ecx, 15)?;
            a.imul_3(ecx, ecx, SPREAD_4)?;
            a.and(ecx, SPREAD_BYTES)?;
            a.mov(dword_ptr(at(4 * g)), ecx)?;
        }
        Ok(())
    }

    /// Copy the bytes of the tail vector starting `elems` elements past `R_I` (up to `R_N`)
    /// between `ptr` and the frame slot at `slot`: into the slot (`into_slot`) or out of it.
    /// rdx is kept in the frame at `slot + 16` meanwhile (the copy needs a third register).
    pub(super) fn bool_tail_copy(
        &mut self,
        ptr: AsmRegister64,
        elems: i32,
        slot: i32,
        into_slot: bool,
    ) -> R<()> {
        let a = &mut self.a;
        a.lea(rax, qword_ptr(ptr + R_I + elems))?;
        a.mov(qword_ptr(rsp + (slot + 16)), rdx)?;
        a.mov(rcx, R_N)?;
        a.sub(rcx, R_I)?;
        if elems != 0 {
            a.sub(rcx, elems)?;
        }
        let mut top = a.create_label();
        let mut done = a.create_label();
        a.set_label(&mut top)?;
        a.sub(rcx, 1)?;
        a.jl(done)?;
        if into_slot {
            a.movzx(edx, byte_ptr(rax + rcx))?;
            a.mov(byte_ptr(rsp + rcx + slot), dl)?;
        } else {
            a.movzx(edx, byte_ptr(rsp + rcx + slot))?;
            a.mov(byte_ptr(rax + rcx), dl)?;
        }
        a.jmp(top)?;
        a.set_label(&mut done)?;
        a.mov(rdx, qword_ptr(rsp + (slot + 16)))?;
        Ok(())
    }
}
