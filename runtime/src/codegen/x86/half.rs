//! 16-bit float accesses and roundings in AVX-512 loop kernels, spelling what
//! `codegen/half.rs` gives Cranelift, with the same bits: a bf16 or f16 value is an f32 lane
//! holding a value of its type; loads widen (`vpmovzxwd` and a shift for bf16, `vcvtph2ps`
//! for f16), stores narrow (`vpmovdw` of the high halves, `vcvtps2ph`), both under the tail
//! mask (masked AVX-512 loads do not fault). Rounding to bf16 is integer arithmetic
//! (`vcvtneps2bf16` treats subnormals as zero, which Cranelift's software rounding does
//! not); rounding to f16 is `vcvtps2ph` and back, which is exact IEEE rounding.
//!
//! AVX2 kernels with 16-bit accesses go to Cranelift (no masked 16-bit loads there).

use super::asm::Asm;
use super::body::{zk, K, SCRATCH_K, TAIL, X, Z};
use super::R;
use crate::DType;
use iced_x86::code_asm::*;

/// The ymm register of each of the 32 vector registers.
const YMM: [AsmRegisterYmm; 32] = [
    ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14,
    ymm15, ymm16, ymm17, ymm18, ymm19, ymm20, ymm21, ymm22, ymm23, ymm24, ymm25, ymm26, ymm27,
    ymm28, ymm29, ymm30, ymm31,
];

/// `vcvtps2ph` rounding: to nearest even (not MXCSR's).
const NEAREST: i32 = 0;

/// Register `r` = the 16 elements of `d` at `m` as f32 lanes (under the tail mask, zeroing,
/// where `masked`).
pub(super) fn load(e: &mut Asm, d: DType, r: u8, m: AsmMemoryOperand, masked: bool) -> R<()> {
    let z = Z[r as usize];
    let dst = if masked { zk(r, TAIL).z() } else { z };
    let m = ymmword_ptr(m);
    match d {
        DType::BF16 => {
            e.a.vpmovzxwd(dst, m)?;
            e.a.vpslld(z, z, 16)?;
        }
        _ => e.a.vcvtph2ps(dst, m)?,
    }
    Ok(())
}

/// Every lane of register `r` = the element of `d` at `p` (`rax` is scratch).
pub(super) fn splat(e: &mut Asm, d: DType, r: u8, p: AsmRegister64) -> R<()> {
    let (z, x) = (Z[r as usize], X[r as usize]);
    e.a.movzx(eax, word_ptr(p))?;
    match d {
        DType::BF16 => {
            e.a.shl(eax, 16)?;
            e.a.vmovd(x, eax)?;
            e.a.vpbroadcastd(z, x)?;
        }
        _ => {
            e.a.vmovd(x, eax)?;
            e.a.vcvtph2ps(z, YMM[r as usize])?;
            e.a.vbroadcastss(z, x)?;
        }
    }
    Ok(())
}

/// The 16 elements of `d` at `m` = register `r` (lanes holding values of `d`; under the tail
/// mask where `masked`), through scratch register `t`.
pub(super) fn store(
    e: &mut Asm,
    d: DType,
    m: AsmMemoryOperand,
    r: u8,
    t: u8,
    masked: bool,
) -> R<()> {
    let m = ymmword_ptr(m);
    let m = if masked { m.k1() } else { m };
    match d {
        DType::BF16 => {
            e.a.vpsrld(Z[t as usize], Z[r as usize], 16)?;
            e.a.vpmovdw(m, Z[t as usize])?;
        }
        _ => e.a.vcvtps2ph(m, Z[r as usize], NEAREST)?,
    }
    Ok(())
}

/// Register `dst` = the f32 lanes of `x` rounded to the nearest values of `d`, ties to even,
/// NaN made quiet (`t`: scratch; `dst` is not `x`).
pub(super) fn round(e: &mut Asm, d: DType, dst: u8, x: u8, t: u8) -> R<()> {
    let (zd, zx, zt) = (Z[dst as usize], Z[x as usize], Z[t as usize]);
    if d == DType::F16 {
        e.a.vcvtps2ph(YMM[t as usize], zx, NEAREST)?;
        e.a.vcvtph2ps(zd, YMM[t as usize])?;
        return Ok(());
    }
    let one = e.const_label(1);
    let half_ulp = e.const_label(0x7fff);
    let high = e.const_label(0xffff_0000);
    let quiet = e.const_label(0x0040_0000);
    // Add half an ulp less one, plus the kept lsb (ties to even), and cut.
    e.a.vpsrld(zt, zx, 16)?;
    e.a.vpandd(zt, zt, dword_bcst(one))?;
    e.a.vpaddd(zt, zt, dword_bcst(half_ulp))?;
    e.a.vpaddd(zd, zx, zt)?;
    e.a.vpandd(zd, zd, dword_bcst(high))?;
    // NaN: its high half with the quiet bit.
    let k = K[SCRATCH_K as usize];
    e.a.vcmpps(k, zx, zx, 3)?; // UNORD_Q
    e.a.vpord(zt, zx, dword_bcst(quiet))?;
    e.a.vpandd(zk(dst, SCRATCH_K), zt, dword_bcst(high))?;
    Ok(())
}
