//! Integer lanes of x86 loop kernels: i32 in dword lanes, i64 in qword lanes (`Asm::int`).
//!
//! Loads, stores, broadcasts, blends and the tail are the moves of the float lane of the same
//! size (`Lane::F32` or `Lane::F64`): they move bits. Arithmetic and compares are the integer
//! instructions, with the interpreter's semantics (`ir::semantics::binary_i64`): add, sub, mul, neg,
//! abs and square wrap; compares are signed. What x86 has no instruction for at a level is
//! left to Cranelift by `node_ok`: division and remainder (no vector integer division), and
//! i64 multiplication (`vpmullq` is AVX-512DQ, AVX2 has none).

use super::body::{K, Y, Z};
use super::{Asm, Lane, Width, R};
use crate::ir::{BinaryOp, CmpOp, UnaryOp};

/// Whether integer lanes of `lane`'s size take unary op `u` / binary op `o` (see the module doc).
pub(super) fn unary_ok(u: UnaryOp) -> bool {
    // (relu and square are max and mul once lowered)
    matches!(u, UnaryOp::Neg | UnaryOp::Abs | UnaryOp::StopGradient)
}
pub(super) fn binary_ok(o: BinaryOp, lane: Lane) -> bool {
    match o {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Max | BinaryOp::Min => true,
        BinaryOp::Mul => lane == Lane::F32,
        _ => false,
    }
}

impl Asm {
    /// `d = x o y` on integer lanes (`d` distinct from `x` and `y` for max and min of i64 at
    /// AVX2, two instructions).
    pub(super) fn int_binary(&mut self, o: BinaryOp, d: u8, x: u8, y: u8) -> R<()> {
        let (di, xi, yi) = (d as usize, x as usize, y as usize);
        let a = &mut self.a;
        match (o, self.w, self.lane) {
            (BinaryOp::Add, Width::Z, Lane::F32) => a.vpaddd(Z[di], Z[xi], Z[yi])?,
            (BinaryOp::Add, Width::Z, Lane::F64) => a.vpaddq(Z[di], Z[xi], Z[yi])?,
            (BinaryOp::Add, Width::Y, Lane::F32) => a.vpaddd(Y[di], Y[xi], Y[yi])?,
            (BinaryOp::Add, Width::Y, Lane::F64) => a.vpaddq(Y[di], Y[xi], Y[yi])?,
            (BinaryOp::Sub, Width::Z, Lane::F32) => a.vpsubd(Z[di], Z[xi], Z[yi])?,
            (BinaryOp::Sub, Width::Z, Lane::F64) => a.vpsubq(Z[di], Z[xi], Z[yi])?,
            (BinaryOp::Sub, Width::Y, Lane::F32) => a.vpsubd(Y[di], Y[xi], Y[yi])?,
            (BinaryOp::Sub, Width::Y, Lane::F64) => a.vpsubq(Y[di], Y[xi], Y[yi])?,
            (BinaryOp::Mul, Width::Z, Lane::F32) => a.vpmulld(Z[di], Z[xi], Z[yi])?,
            (BinaryOp::Mul, Width::Y, Lane::F32) => a.vpmulld(Y[di], Y[xi], Y[yi])?,
            (BinaryOp::Max, Width::Z, Lane::F32) => a.vpmaxsd(Z[di], Z[xi], Z[yi])?,
            (BinaryOp::Max, Width::Z, Lane::F64) => a.vpmaxsq(Z[di], Z[xi], Z[yi])?,
            (BinaryOp::Max, Width::Y, Lane::F32) => a.vpmaxsd(Y[di], Y[xi], Y[yi])?,
            (BinaryOp::Min, Width::Z, Lane::F32) => a.vpminsd(Z[di], Z[xi], Z[yi])?,
            (BinaryOp::Min, Width::Z, Lane::F64) => a.vpminsq(Z[di], Z[xi], Z[yi])?,
            (BinaryOp::Min, Width::Y, Lane::F32) => a.vpminsd(Y[di], Y[xi], Y[yi])?,
            (BinaryOp::Max | BinaryOp::Min, Width::Y, Lane::F64) => {
                // AVX2 has no vpmaxsq: d = x > y, then the larger (smaller) by that mask.
                a.vpcmpgtq(Y[di], Y[xi], Y[yi])?;
                let (f, t) = if o == BinaryOp::Max {
                    (yi, xi)
                } else {
                    (xi, yi)
                };
                a.vblendvpd(Y[di], Y[f], Y[t], Y[di])?;
            }
            (o, w, lane) => unreachable!("{o:?} on {lane:?}-sized integers at {w:?}: node_ok"),
        }
        Ok(())
    }

    /// `d = u(x)` on integer lanes (`u` in `unary_ok`), `d` distinct from `x`.
    pub(super) fn int_unary(&mut self, u: UnaryOp, d: u8, x: u8) -> R<()> {
        let (di, xi) = (d as usize, x as usize);
        match u {
            UnaryOp::Neg => {
                self.zero(d)?;
                self.int_binary(BinaryOp::Sub, d, d, x)?;
            }
            UnaryOp::Abs => match (self.w, self.lane) {
                (Width::Z, Lane::F32) => self.a.vpabsd(Z[di], Z[xi])?,
                (Width::Z, Lane::F64) => self.a.vpabsq(Z[di], Z[xi])?,
                (Width::Y, Lane::F32) => self.a.vpabsd(Y[di], Y[xi])?,
                (Width::Y, Lane::F64) => {
                    // AVX2 has no vpabsq: 0 - x where x's sign bit is set.
                    self.int_unary(UnaryOp::Neg, d, x)?;
                    self.a.vblendvpd(Y[di], Y[xi], Y[di], Y[xi])?;
                }
            },
            UnaryOp::StopGradient => self.vmov(d, x)?,
            other => unreachable!("{other:?} on integers: node_ok"),
        }
        Ok(())
    }

    /// Mask `k` = `a c b` on integer lanes (signed). AVX2 builds `ne`, `le` and `ge` as the
    /// complement of `eq`, `gt` and `lt`, with the all-ones vector in the scratch register
    /// `t` (taken by the caller where `int_cmp_scratch` says so).
    pub(super) fn int_cmp(&mut self, k: u8, c: CmpOp, a: u8, b: u8, t: Option<u8>) -> R<()> {
        let (ki, ai, bi) = (k as usize, a as usize, b as usize);
        if self.w == Width::Z {
            // vpcmp predicates: 0 eq, 1 lt, 2 le, 4 ne, 5 nlt, 6 nle.
            let imm = match c {
                CmpOp::Eq => 0,
                CmpOp::Lt => 1,
                CmpOp::Le => 2,
                CmpOp::Ne => 4,
                CmpOp::Ge => 5,
                CmpOp::Gt => 6,
            };
            match self.lane {
                Lane::F32 => self.a.vpcmpd(K[ki], Z[ai], Z[bi], imm)?,
                Lane::F64 => self.a.vpcmpq(K[ki], Z[ai], Z[bi], imm)?,
            }
            return Ok(());
        }
        let (eq, p, q) = match c {
            CmpOp::Eq | CmpOp::Ne => (true, ai, bi),
            CmpOp::Gt | CmpOp::Le => (false, ai, bi),
            CmpOp::Lt | CmpOp::Ge => (false, bi, ai),
        };
        let a = &mut self.a;
        match (eq, self.lane) {
            (true, Lane::F32) => a.vpcmpeqd(Y[ki], Y[p], Y[q])?,
            (true, Lane::F64) => a.vpcmpeqq(Y[ki], Y[p], Y[q])?,
            (false, Lane::F32) => a.vpcmpgtd(Y[ki], Y[p], Y[q])?,
            (false, Lane::F64) => a.vpcmpgtq(Y[ki], Y[p], Y[q])?,
        }
        if int_cmp_scratch(self.w, c) {
            let t = t.expect("a scratch register");
            self.ones(t)?;
            let ty = Y[t as usize];
            self.a.vpxor(Y[ki], Y[ki], ty)?;
        }
        Ok(())
    }
}

/// Whether `Asm::int_cmp` of `c` at width `w` needs a scratch register.
pub(super) fn int_cmp_scratch(w: Width, c: CmpOp) -> bool {
    w == Width::Y && matches!(c, CmpOp::Ne | CmpOp::Le | CmpOp::Ge)
}
