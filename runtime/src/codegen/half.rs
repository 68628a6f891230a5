//! The 16-bit floats (`bf16`, `f16`) in Cranelift lane vectors. In registers a 16-bit value
//! is an F32X4 lane (the lowering computes 16-bit ops in f32 and rounds where a value is
//! stored, compared or cast: `lower::Builder::stored`); what is 16-bit is memory and
//! rounding:
//! - `widen`: 16-bit patterns (the low halves of I32X4 lanes) to their f32 values (exact);
//! - `narrow`: f32 lanes holding 16-bit values to their patterns (exact for such lanes);
//! - `round`: any f32 lanes to the nearest 16-bit value, ties to even, NaN kept NaN (made
//!   quiet, as the x86 conversions do), f16 overflow to infinity, subnormals kept (x86's
//!   `vcvtneps2bf16` flushes them, which is why no backend uses it to round);
//! - `round_f64`: f64 pairs to the nearest 16-bit value, rounded once (f64 to f32 rounds to
//!   odd first, which makes the second rounding exact).
//!
//! The bit-level rules are IEEE's (the interpreter's, `dtype::bf16_of`); the tests compare
//! every level against an oracle of their definition.

use crate::DType;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, Endianness, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;

/// Bitcasts between vector types name their lane order (the verifier requires it where the
/// lane count changes).
fn le() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

fn bits(b: &mut FunctionBuilder, x: Value) -> Value {
    b.ins().bitcast(types::I32X4, le(), x)
}

fn float(b: &mut FunctionBuilder, x: Value) -> Value {
    b.ins().bitcast(types::F32X4, le(), x)
}

fn splat(b: &mut FunctionBuilder, v: u32) -> Value {
    let s = b.ins().iconst(types::I32, v as i32 as i64);
    b.ins().splat(types::I32X4, s)
}

fn and(b: &mut FunctionBuilder, x: Value, v: u32) -> Value {
    let m = splat(b, v);
    b.ins().band(x, m)
}

fn or(b: &mut FunctionBuilder, x: Value, v: u32) -> Value {
    let m = splat(b, v);
    b.ins().bor(x, m)
}

fn shl(b: &mut FunctionBuilder, x: Value, n: i64) -> Value {
    let n = b.ins().iconst(types::I32, n);
    b.ins().ishl(x, n)
}

fn shr(b: &mut FunctionBuilder, x: Value, n: i64) -> Value {
    let n = b.ins().iconst(types::I32, n);
    b.ins().ushr(x, n)
}

fn add(b: &mut FunctionBuilder, x: Value, v: u32) -> Value {
    let m = splat(b, v);
    b.ins().iadd(x, m)
}

/// Lanes where `x` (I32X4) compares `cc` with the constant `v`, as a mask.
fn cmp(b: &mut FunctionBuilder, cc: IntCC, x: Value, v: u32) -> Value {
    let m = splat(b, v);
    b.ins().icmp(cc, x, m)
}

/// The f32 values (F32X4) of the 16-bit patterns of `d` in the low halves of I32X4 `h`.
pub fn widen(b: &mut FunctionBuilder, d: DType, h: Value) -> Value {
    if d == DType::BF16 {
        let x = shl(b, h, 16);
        return float(b, x);
    }
    // f16: shift exponent and mantissa into place and rebias the exponent (+112); an
    // exponent of all ones (inf, NaN) gets the rest of f32's (+112 again), a zero exponent
    // (zero, subnormal) is normalised by a float subtraction of 2^-14.
    let sh = and(b, h, 0x7fff);
    let o = shl(b, sh, 13);
    let e = and(b, o, 0x0f80_0000);
    let normal = add(b, o, 0x3800_0000);
    let special = add(b, o, 0x7000_0000);
    let mant = and(b, o, 0x007f_e000);
    let nan = cmp(b, IntCC::NotEqual, mant, 0);
    let quiet = and(b, nan, 0x0040_0000);
    let special = b.ins().bor(special, quiet);
    let sub = add(b, o, 0x3880_0000);
    let sub = float(b, sub);
    let magic = splat(b, 0x3880_0000);
    let magic = float(b, magic);
    let sub = b.ins().fsub(sub, magic);
    let sub = bits(b, sub);
    let is_special = cmp(b, IntCC::Equal, e, 0x0f80_0000);
    let is_sub = cmp(b, IntCC::Equal, e, 0);
    let r = b.ins().bitselect(is_special, special, normal);
    let r = b.ins().bitselect(is_sub, sub, r);
    let sign = and(b, h, 0x8000);
    let sign = shl(b, sign, 16);
    let r = b.ins().bor(r, sign);
    float(b, r)
}

/// The 16-bit patterns of `d` (in the low halves of I32X4 lanes) of F32X4 `x`, whose lanes
/// hold values of `d` (exact: the result of `widen` or `round`).
pub fn narrow(b: &mut FunctionBuilder, d: DType, x: Value) -> Value {
    let xb = bits(b, x);
    if d == DType::BF16 {
        return shr(b, xb, 16);
    }
    // f16: the exponent rebiased (-112) and shifted back; f16 subnormals are f32 values
    // below 2^-14, whose patterns are their value in units of 2^-24 (an exact f32 add of
    // 0.5 puts them in the low mantissa bits); inf and NaN keep an exponent of all ones.
    let sign = shr(b, xb, 16);
    let sign = and(b, sign, 0x8000);
    let a = and(b, xb, 0x7fff_ffff);
    let normal = add(b, a, 0xc800_0000); // - (112 << 23)
    let normal = shr(b, normal, 13);
    let af = float(b, a);
    let half = b.ins().f32const(0.5);
    let half = b.ins().splat(types::F32X4, half);
    let sub = b.ins().fadd(af, half);
    let sub = bits(b, sub);
    let sub = and(b, sub, 0x3ff);
    let special = shr(b, a, 13);
    let special = and(b, special, 0x3ff);
    let special = or(b, special, 0x7c00);
    let is_sub = cmp(b, IntCC::UnsignedLessThan, a, 0x3880_0000);
    let is_special = cmp(b, IntCC::UnsignedGreaterThanOrEqual, a, 0x7f80_0000);
    let r = b.ins().bitselect(is_sub, sub, normal);
    let r = b.ins().bitselect(is_special, special, r);
    b.ins().bor(r, sign)
}

/// F32X4 `x` rounded to the nearest values of `d`, kept as f32 lanes.
pub fn round(b: &mut FunctionBuilder, d: DType, x: Value) -> Value {
    let xb = bits(b, x);
    let nan = b.ins().fcmp(FloatCC::Unordered, x, x);
    let nan = b.ins().bitcast(types::I32X4, le(), nan);
    if d == DType::BF16 {
        // Add half an ulp less one, plus the kept lsb (ties to even), and cut.
        let lsb = shr(b, xb, 16);
        let lsb = and(b, lsb, 1);
        let r = add(b, xb, 0x7fff);
        let r = b.ins().iadd(r, lsb);
        let r = and(b, r, 0xffff_0000);
        let q = or(b, xb, 0x0040_0000);
        let q = and(b, q, 0xffff_0000);
        let r = b.ins().bitselect(nan, q, r);
        return float(b, r);
    }
    // f16: the same cut at 13 bits where f16 is normal; below 2^-14 its spacing is 2^-24,
    // the ulp of 0.5 in f32: (|x| + 0.5) - 0.5 rounds there; above 65504 infinity.
    let sign = and(b, xb, 0x8000_0000);
    let a = and(b, xb, 0x7fff_ffff);
    let lsb = shr(b, a, 13);
    let lsb = and(b, lsb, 1);
    let r = add(b, a, 0x0fff);
    let r = b.ins().iadd(r, lsb);
    let r = and(b, r, 0xffff_e000);
    let over = cmp(b, IntCC::UnsignedGreaterThan, r, 0x477f_e000);
    let inf = splat(b, 0x7f80_0000);
    let r = b.ins().bitselect(over, inf, r);
    let af = float(b, a);
    let half = b.ins().f32const(0.5);
    let half = b.ins().splat(types::F32X4, half);
    let sub = b.ins().fadd(af, half);
    let sub = b.ins().fsub(sub, half);
    let sub = bits(b, sub);
    let is_sub = cmp(b, IntCC::UnsignedLessThan, a, 0x3880_0000);
    let r = b.ins().bitselect(is_sub, sub, r);
    let q = or(b, a, 0x0040_0000);
    let q = and(b, q, 0xffff_e000);
    let r = b.ins().bitselect(nan, q, r);
    let r = b.ins().bor(r, sign);
    float(b, r)
}

/// Two F64X2 (lanes 0-1, 2-3) rounded once to `d`, as one F32X4 of its values: each f64 is
/// rounded to f32 toward zero with the lowest bit set when inexact ("round to odd"), which
/// keeps the information a second rounding to fewer bits needs.
pub fn round_f64(b: &mut FunctionBuilder, d: DType, lo: Value, hi: Value) -> Value {
    let t: Vec<Value> = [lo, hi]
        .iter()
        .map(|&x| {
            let t = b.ins().fvdemote(x);
            let back = b.ins().fvpromote_low(t);
            let inexact = b.ins().fcmp(FloatCC::NotEqual, back, x);
            let ab = b.ins().fabs(back);
            let ax = b.ins().fabs(x);
            let over = b.ins().fcmp(FloatCC::GreaterThan, ab, ax);
            // The two f64 masks narrowed to lanes 0-1 of an I32X4.
            let pick = |b: &mut FunctionBuilder, m: Value| {
                let m = b.ins().bitcast(types::I32X4, le(), m);
                let (l0, l1) = (b.ins().extractlane(m, 0), b.ins().extractlane(m, 2));
                let v = b.ins().splat(types::I32X4, l0);
                b.ins().insertlane(v, l1, 1)
            };
            let inexact = pick(b, inexact);
            let over = pick(b, over);
            let tb = bits(b, t);
            let tb = b.ins().iadd(tb, over); // -1 where rounding went away from zero
            let odd = and(b, inexact, 1);
            b.ins().bor(tb, odd)
        })
        .collect();
    // Lanes 0-1 of each half into one vector.
    let l: Vec<Value> = (0..4)
        .map(|i| b.ins().extractlane(t[i / 2], (i % 2) as u8))
        .collect();
    let mut v = b.ins().splat(types::I32X4, l[0]);
    for (i, &x) in l.iter().enumerate().skip(1) {
        v = b.ins().insertlane(v, x, i as u8);
    }
    let v = float(b, v);
    round(b, d, v)
}
