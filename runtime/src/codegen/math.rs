//! The transcendental functions: their methods, coefficients and measured errors, and the
//! Cranelift IR (`F32X4`, `F64X2`) of the one without a traced form, pow (f32 computed in
//! f64). exp, ln, log1p, expm1, tanh, sigmoid, erf, sin and cos are defined once in
//! `traced.rs` (generic code every backend lowers: `lower_traced.rs` for Cranelift) with the
//! coefficients here. No libm calls: range reduction with integer bit tricks on the lanes,
//! Remez minimax polynomials evaluated with `fma`, special values fixed with compare +
//! `bitselect` (blendv); the one out-of-line call is sin/cos's exact reduction of lanes
//! beyond the Cody–Waite range (`trig.rs`).
//!
//! ## Measured maximum error (tests in `math_tests/`)
//! Errors in ulp of the correctly rounded result. f32 is compared with the f64 std function
//! (erf: a double-double reference), f64 with the same std f64 function (itself < 1 ulp), so
//! f64 figures include the reference's own error. "all f32 /97" = every 97th finite f32 bit
//! pattern, both signs. f64 samples: 400k uniform / log-uniform (±) per range.
//!
//! | fn | f32 max err | f32 ranges | f64 max err | f64 ranges |
//! |---|---|---|---|---|
//! | exp | 0.88 ulp | all f32 /97; dense [-104, 89], [-100, 100] | 1 ulp | [-746, 710], [-1, 1], ±[1e-300, 1e3] |
//! | ln | 1.50 ulp (1.2e-7 rel) | all f32 /97; (1e-30, 1e38], [0.5, 2], subnormals [1e-45, 1e-37] | 1 ulp | [1e-320, 1e308], [0.5, 2], [0.999, 1.001] |
//! | tanh | 4.57 ulp (2.7e-7 abs) near ±1; 2.39 ulp (1.7e-7 rel) for \|x\| <= 0.55 | all f32 /97; [-10, 10], [-1, 1]; small: [-0.55, 0.55], [-0.01, 0.01]; \|t\| <= 1 on all f32 in [1, 16) | 3 ulp | [-10, 10], [-1, 1], ±[1e-300, 50] |
//! | sigmoid | 2.34 ulp (1.8e-7 rel) | all f32 /97; [-10, 10], [-110, 30] | 2 ulp | [-10, 10], [-750, 40], ±[1e-300, 1e3] |
//! | sin | 2.23 ulp (1.8e-7 rel, 1.3e-7 abs) | whole range: all f32 /97; [-1e4, 1e4], [-10, 10], 65536 ± 2000, [1e5, 1e6]; 1M random to 3.4e38 (huge and small lanes mixed); the 6 f32 closest to a multiple of pi (<= 0.33 ulp there) | 2 ulp | [-10, 10], [-1e4, 1e4], [5e8, 3e9], ±[1e-300, 1e9], ±[1e9, 1e308], ±[1e13, 1e17]; f64::MAX, 2^1023, the double closest to a multiple of pi/2 |
//! | cos | 2.23 ulp (1.6e-7 rel, 1.3e-7 abs) | same as sin (closest to an odd multiple of pi/2: <= 0.49 ulp) | 2 ulp | same as sin |
//! | log1p | 1.52 ulp (1.3e-7 rel) | all f32 /97; [-0.999, 1], [-1e-3, 1e-3], [1, 1e6], [-1, -0.99]; 1e-30, 1e-8, -0.5, ... | 1 ulp | [-0.999, 1], [-1e-3, 1e-3], [-1, -0.99], ±[1e-300, 1e300] |
//! | expm1 | 1.40 ulp (1.2e-7 rel) | all f32 /97; [-30, 89], [-1e-3, 1e-3], [-1, 1]; 1e-30, 1e-8, -0.5, ... | 2 ulp | [-60, 710], [-1, 1], [-1e-3, 1e-3], ±[1e-300, 700] |
//! | pow | 0.50 ulp | x in [1e-3, 1e3] (1500 log-spaced) × y in [-30, 30] (1201); x<0 with integer y; random x in [1e-45, 3e38], y in [-3, 3]; over/underflow edges | 42 ulp (see below) | x in [1e-3,1e3] × y in [-30,30]; x in [1e-300,1e300] × y in [-2,2]; x<0 integer y; \|y ln x\| up to ~740 |
//! | erf | 2.51 ulp (1.7e-7 rel) | all f32 /97; [-5, 5], [-1.3, 1.3] | 2 ulp | [-7, 7], [-1.3, 1.3], ±[1e-300, 10] |
//!
//! Notes:
//! - exp: overflow gives +inf, underflow gives correctly scaled **subnormal** results (two-step
//!   2^k scaling) and then +0. ln handles subnormal inputs (pre-scaled by 2^23 / 2^52).
//! - sin/cos: x - j*pi with a 3-part Cody-Waite pi and `fma` (first step exact), j from the
//!   1.5*2^m shifter, for |x| <= 65536 (f32) / 2^30 (f64). A vector with a lane beyond calls
//!   `trig::sin_fix_*` once (one compare + an untaken branch otherwise): Payne–Hanek with a
//!   1280-bit 1/pi replaces r and the sign of those lanes, and the same polynomial finishes.
//!   (The Cody-Waite path alone failed from ~1e5 for f32 cos, ~1e6 f32 sin, ~1e14 f64:
//!   sin(3e9f32) gave -0.9996 for 0.98704.) ±inf and NaN give NaN.
//! - log1p: ln(u) of u = 1 + x with `ln`'s reduction and polynomial plus u's rounding error
//!   (x - (u - 1)) / u: one division. expm1: 2^k (p + 1 - 2^-k) with p = e^r - 1 from `exp`'s
//!   polynomial (r + r^2 P(r)), no cancellation near 0; both keep ±0 and tiny x exact.
//! - pow: C99/IEEE special cases as Rust's `powf` (checked exactly on a 22x22 grid of special
//!   values). f32 is computed in f64 (fvpromote_low / shuffle / fvdemote). f64 uses a
//!   double-double log without tables: the error grows with |y ln x| (<= ~2 ulp for
//!   |y ln x| < 20, 42 ulp measured near |y ln x| ~ 700, i.e. near overflow/underflow).
//! - tanh f32: x P(x^2) / Q(x^2) (degrees 6 / 3 in x^2, own rational minimax fit of the
//!   relative error, 7.8e-9 before rounding) on x clamped to ±9.1, result clamped to [-1, 1]:
//!   one division, no exp. The error is f32 rounding in P and Q (the numerator is formed as
//!   x + x^3 P1(x^2) so it rounds once near 0); near ±1 it is an absolute 2.7e-7 like XLA's /
//!   Eigen's rational tanh (2.9e-7, measured in shared/anchors/cranelift.md). tanh(-0) = -0.
//!   f64: |x| < 0.5493 odd polynomial, else 1 - 2/(e^{2|x|}+1) (1 division).
//! - sigmoid: e/(1+e) or 1/(1+e) with e = exp(-|x|): no overflow, relative accuracy down to
//!   subnormal results; the f64 reference (std exp + division) has ~1-2 ulp error itself.
//!   e is formed as e 2^64 (always normal: one 2^k factor instead of exp's two) and the
//!   quotient scaled back by 2^-64, rounding only when the result is subnormal.
//! - exp: the exponent bias is folded into the rounding shifter (no integer adds in the 2^k
//!   scaling).
//! - erf: |x| < 1.2 x P(x^2), else 1 - e^{-x^2} Q(|x| - c); erf(-0) = -0.
//!
//! Code size of a whole test kernel (loop + loads/stores + function), x86-64 AVX2+FMA:
//! exp 560/816 B (f32x4/f64x2), ln 1200/1248, tanh 480/1536, sigmoid 576/848, sin 512/688,
//! cos 592/832, pow 3664/2784, erf 1520/2768.

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{
    types, ConstantData, Endianness, InstBuilder, MemFlagsData, Type, Value,
};
use cranelift_frontend::FunctionBuilder;

// ---------------------------------------------------------------------------------------------
// Small IR helpers. `K` describes the lane format of the value being processed.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct K {
    /// F32X4 or F64X2.
    ty: Type,
    /// I32X4 or I64X2 (same lane count, for bit tricks).
    ity: Type,
    d: bool,
}

impl K {
    fn of(b: &FunctionBuilder, x: Value) -> K {
        let ty = b.func.dfg.value_type(x);
        match ty {
            types::F32X4 => K {
                ty,
                ity: types::I32X4,
                d: false,
            },
            types::F64X2 => K {
                ty,
                ity: types::I64X2,
                d: true,
            },
            _ => panic!("jitfuse math: expected F32X4 or F64X2, got {ty}"),
        }
    }
    /// Mantissa bits.
    fn mbits(self) -> i64 {
        if self.d {
            52
        } else {
            23
        }
    }
    fn bias(self) -> i64 {
        if self.d {
            1023
        } else {
            127
        }
    }
    fn sign_bit(self) -> i64 {
        if self.d {
            i64::MIN
        } else {
            0x8000_0000u32 as i32 as i64
        }
    }
    /// 1.5 * 2^mbits: adding it rounds to an integer and leaves that integer in the low bits.
    fn shifter(self) -> f64 {
        1.5 * (2.0f64).powi(self.mbits() as i32)
    }
}

/// Splatted float constant (rounded to the lane type).
fn fc(b: &mut FunctionBuilder, k: K, c: f64) -> Value {
    let s = if k.d {
        b.ins().f64const(c)
    } else {
        b.ins().f32const(c as f32)
    };
    b.ins().splat(k.ty, s)
}

/// Splatted integer constant (lane-sized).
fn ic(b: &mut FunctionBuilder, k: K, c: i64) -> Value {
    let s = if k.d {
        b.ins().iconst(types::I64, c)
    } else {
        b.ins().iconst(types::I32, c as i32 as u32 as i64)
    };
    b.ins().splat(k.ity, s)
}

fn to_i(b: &mut FunctionBuilder, k: K, x: Value) -> Value {
    b.ins().bitcast(k.ity, MemFlagsData::new(), x)
}

fn to_f(b: &mut FunctionBuilder, k: K, x: Value) -> Value {
    b.ins().bitcast(k.ty, MemFlagsData::new(), x)
}

/// Lane mask (all ones / zero, integer typed) of `x cc y`.
fn cmp(b: &mut FunctionBuilder, cc: FloatCC, x: Value, y: Value) -> Value {
    b.ins().fcmp(cc, x, y)
}

/// `m ? t : f` for an integer lane mask `m` (one blendv).
fn sel(b: &mut FunctionBuilder, k: K, m: Value, t: Value, f: Value) -> Value {
    let mf = to_f(b, k, m);
    b.ins().bitselect(mf, t, f)
}

/// `a < x ? a : x` (one minps/minpd; a NaN `x` is passed through).
fn min_keep_nan(b: &mut FunctionBuilder, k: K, a: Value, x: Value) -> Value {
    let m = cmp(b, FloatCC::LessThan, a, x);
    sel(b, k, m, a, x)
}

/// `a > x ? a : x` (one maxps/maxpd; a NaN `x` is passed through).
fn max_keep_nan(b: &mut FunctionBuilder, k: K, a: Value, x: Value) -> Value {
    let m = cmp(b, FloatCC::LessThan, x, a);
    sel(b, k, m, a, x)
}

/// Clamp to [lo, hi], NaN preserved.
fn clamp(b: &mut FunctionBuilder, k: K, x: Value, lo: f64, hi: f64) -> Value {
    let h = fc(b, k, hi);
    let x = min_keep_nan(b, k, h, x);
    let l = fc(b, k, lo);
    max_keep_nan(b, k, l, x)
}

/// Horner evaluation of c[0] + c[1] x + ... with fma.
fn horner(b: &mut FunctionBuilder, k: K, x: Value, c: &[f64]) -> Value {
    let mut acc = fc(b, k, *c.last().unwrap());
    for &ci in c.iter().rev().skip(1) {
        let cv = fc(b, k, ci);
        acc = b.ins().fma(acc, x, cv);
    }
    acc
}

/// |x| and the sign bits of x (integer typed).
fn abs_and_sign(b: &mut FunctionBuilder, k: K, x: Value) -> (Value, Value) {
    let xi = to_i(b, k, x);
    let sm = ic(b, k, k.sign_bit());
    let s = b.ins().band(xi, sm);
    let a = b.ins().bxor(xi, s);
    (to_f(b, k, a), s)
}

fn xor_bits(b: &mut FunctionBuilder, k: K, x: Value, bits: Value) -> Value {
    let xi = to_i(b, k, x);
    let r = b.ins().bxor(xi, bits);
    to_f(b, k, r)
}

// ---------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------

pub(super) const LN2: f64 = std::f64::consts::LN_2;
/// ln 2 - (ln 2 rounded to f64).
const LN2_LO_F64: f64 = 2.319046813846299558e-17;
pub(super) const LOG2E: f64 = std::f64::consts::LOG2_E;
/// Cody-Waite split of pi: PI_A is pi rounded to the lane type, PI_B the next part, PI_C the next.
/// (f32 parts are computed in f64 at build time and rounded; see `pi_parts`.)
/// All three parts are positive (PI_B rounded down), so that j = +0 keeps r = x = -0 exact.
const PI_F64: [f64; 3] = [
    3.141592653589793116,
    1.224646799147353e-16,
    2.165713347843828e-32,
];

pub(super) fn ln2_parts_f32() -> (f64, f64) {
    ln2_parts(F32K)
}

pub(super) fn ln2_parts_f64() -> (f64, f64) {
    (LN2, LN2_LO_F64)
}

pub(super) fn pi_parts_f32() -> [f64; 3] {
    pi_parts(F32K)
}

pub(super) fn pi_parts_f64() -> [f64; 3] {
    PI_F64
}

const F32K: K = K {
    ty: types::F32X4,
    ity: types::I32X4,
    d: false,
};

fn ln2_parts(k: K) -> (f64, f64) {
    if k.d {
        (LN2, LN2_LO_F64)
    } else {
        let hi = LN2 as f32 as f64;
        (hi, LN2 - hi)
    }
}

fn pi_parts(k: K) -> [f64; 3] {
    if k.d {
        PI_F64
    } else {
        // Exact pi as a double-double (PI_F64[0] + PI_F64[1]), split into f32 parts each rounded
        // toward zero, so all parts are positive (then j = +0 keeps r = x = -0).
        let down = |v: f64| {
            let f = v as f32;
            (if f as f64 > v {
                f32::from_bits(f.to_bits() - 1)
            } else {
                f
            }) as f64
        };
        let a = down(PI_F64[0]);
        let r = (PI_F64[0] - a) + PI_F64[1];
        let bb = down(r);
        let c = ((PI_F64[0] - a) - bb) + PI_F64[1];
        [a, bb, c]
    }
}

// ---------------------------------------------------------------------------------------------
// exp
// ---------------------------------------------------------------------------------------------

/// Offset folded into the rounding shifter of `exp_reduce`, so that the low bits of `n` hold
/// k + offset and the scale factors need no integer add: one bias for a single 2^k factor, two
/// for the split scaling (k1 + bias and k - k1 + bias, see `exp_scale`).
fn exp_off(k: K, split: bool) -> f64 {
    k.bias() as f64 * if split { 2.0 } else { 1.0 }
}

/// Range reduction of e^x: returns n = shifter + off + k (as float), kf = k = round(x / ln2) and
/// r = x - k ln2 (|r| <= ln2/2, two-part ln2).
fn exp_reduce(b: &mut FunctionBuilder, k: K, x: Value, off: f64) -> (Value, Value, Value) {
    let s = fc(b, k, k.shifter() + off);
    let l2e = fc(b, k, LOG2E);
    let n = b.ins().fma(x, l2e, s); // S + off + round(x / ln2)
    let kf = b.ins().fsub(n, s);
    let (hi, lo) = ln2_parts(k);
    let nhi = fc(b, k, -hi);
    let nlo = fc(b, k, -lo);
    let r = b.ins().fma(kf, nhi, x); // exact
    let r = b.ins().fma(kf, nlo, r);
    (n, kf, r)
}

/// e^r = 1 + r + r^2 P(r) on |r| <= ln2/2.
fn exp_poly(b: &mut FunctionBuilder, k: K, r: Value) -> Value {
    let coeffs: &[f64] = if k.d { &EXP_F64 } else { &EXP_F32 };
    let mut c = vec![1.0, 1.0];
    c.extend_from_slice(coeffs);
    horner(b, k, r, &c)
}

/// p * 2^k where `n` = shifter + `exp_off(k, split)` + k (as float) and `kf` = k.
fn exp_scale(b: &mut FunctionBuilder, k: K, p: Value, n: Value, kf: Value, split: bool) -> Value {
    let ni = to_i(b, k, n);
    let mb = k.mbits();
    if !split {
        // low bits of ni = k + bias; the shift drops the shifter's bits
        let e = b.ins().ishl_imm_u(ni, mb);
        let sc = to_f(b, k, e);
        return b.ins().fmul(p, sc);
    }
    // k1 = round(k/2), k2 = k - k1; 2^k = 2^k1 * 2^k2, both factors normal.
    // n1 = S + bias + k1 and n = S + 2 bias + k have the same exponent, so n - n1 (as
    // integers) = k2 + bias.
    let s = fc(b, k, k.shifter() + k.bias() as f64);
    let half = fc(b, k, 0.5);
    let n1 = b.ins().fma(kf, half, s);
    let n1i = to_i(b, k, n1);
    let e1 = b.ins().ishl_imm_u(n1i, mb);
    let d = b.ins().isub(ni, n1i);
    let e2 = b.ins().ishl_imm_u(d, mb);
    let s1 = to_f(b, k, e1);
    let s2 = to_f(b, k, e2);
    let p = b.ins().fmul(p, s1);
    b.ins().fmul(p, s2)
}

/// Input range of `exp`: below `lo` the result is 0, above `hi` it is +inf.
fn exp_limits(k: K) -> (f64, f64) {
    if k.d {
        (-746.0, 710.0)
    } else {
        (-104.0, 89.0)
    }
}

// ---------------------------------------------------------------------------------------------
// ln (pow's double-double logarithm)
// ---------------------------------------------------------------------------------------------

/// Reduction x = 2^e * m, m in [sqrt(1/2), sqrt(2)). Returns (e as float, f = m - 1).
/// Handles subnormal x; garbage (finite) for x <= 0, inf, NaN.
fn ln_reduce(b: &mut FunctionBuilder, k: K, x: Value) -> (Value, Value) {
    let mb = k.mbits();
    // Subnormals: scale by 2^mbits and correct the exponent.
    let minpos = fc(
        b,
        k,
        if k.d {
            f64::MIN_POSITIVE
        } else {
            f32::MIN_POSITIVE as f64
        },
    );
    let tiny = cmp(b, FloatCC::LessThan, x, minpos);
    let scale = fc(b, k, (2.0f64).powi(mb as i32));
    let xs = b.ins().fmul(x, scale);
    let x = sel(b, k, tiny, xs, x);
    let (one_bits, sqrt_half_bits): (i64, i64) = if k.d {
        (0x3ff0_0000_0000_0000, 0x3fe6_a09e_667f_3bcd)
    } else {
        (0x3f80_0000, 0x3f35_04f3)
    };
    let xi = to_i(b, k, x);
    let adj = ic(b, k, one_bits - sqrt_half_bits);
    let ix = b.ins().iadd(xi, adj);
    // exponent as float: (ix >> mb) | bits(2^mb)  ->  2^mb + e_biased
    let eb = b.ins().ushr_imm_u(ix, mb);
    let two_mb_bits = if k.d {
        0x4330_0000_0000_0000i64
    } else {
        0x4b00_0000
    };
    let tb = ic(b, k, two_mb_bits);
    let ef = b.ins().bor(eb, tb);
    let ef = to_f(b, k, ef);
    let off = fc(b, k, (2.0f64).powi(mb as i32) + k.bias() as f64);
    let e = b.ins().fsub(ef, off);
    // subtract mbits for the scaled subnormals: mask & bits(mbits as float)
    let mbf = fc(b, k, mb as f64);
    let mbi = to_i(b, k, mbf);
    let corr = b.ins().band(tiny, mbi);
    let corr = to_f(b, k, corr);
    let e = b.ins().fsub(e, corr);
    // mantissa
    let mm = ic(b, k, (1i64 << mb) - 1);
    let mi = b.ins().band(ix, mm);
    let sh = ic(b, k, sqrt_half_bits);
    let mi = b.ins().iadd(mi, sh);
    let m = to_f(b, k, mi);
    let one = fc(b, k, 1.0);
    let f = b.ins().fsub(m, one);
    (e, f)
}

// ---------------------------------------------------------------------------------------------
// pow
// ---------------------------------------------------------------------------------------------

/// musl's split of ln 2: the high part has 32 significant bits, so e * LN2_HI is exact.
const LN2_HI_MUSL: f64 = 6.93147180369123816490e-01;
const LN2_LO_MUSL: f64 = 1.90821492927058770002e-10;

/// ln x as an unevaluated sum hi + lo (f64 lanes, x > 0 finite; garbage otherwise).
/// log1p(f) = 2 atanh(s) = 2 s + s^3 Q(s^2), s = f/(2+f) kept as a double-double.
fn ln_dd_f64(b: &mut FunctionBuilder, k: K, x: Value) -> (Value, Value) {
    let (e, f) = ln_reduce(b, k, x);
    let two = fc(b, k, 2.0);
    let u = b.ins().fadd(two, f);
    let u2 = b.ins().fsub(u, two);
    let ulo = b.ins().fsub(f, u2); // u + ulo = 2 + f exactly
    let s = b.ins().fdiv(f, u);
    let ns = b.ins().fneg(s);
    let rr = b.ins().fma(ns, u, f);
    let rr = b.ins().fma(ns, ulo, rr);
    // 1/(2+f) = (1 - s)/2
    let mh = fc(b, k, -0.5);
    let half = fc(b, k, 0.5);
    let inv = b.ins().fma(s, mh, half);
    let slo = b.ins().fmul(rr, inv);
    let z = b.ins().fmul(s, s);
    let q = horner(b, k, z, &LN_F64);
    let sz = b.ins().fmul(s, z);
    let tail = b.ins().fmul(sz, q);
    let lhi = fc(b, k, LN2_HI_MUSL);
    let a = b.ins().fmul(e, lhi); // exact
    let s2 = b.ins().fadd(s, s);
    let h = b.ins().fadd(a, s2);
    let d = b.ins().fsub(a, h);
    let l0 = b.ins().fadd(d, s2); // Fast2Sum error (|a| >= |2s| or a == 0)
    let llo = fc(b, k, LN2_LO_MUSL);
    let t = b.ins().fma(e, llo, l0);
    let t = b.ins().fma(slo, two, t);
    let t = b.ins().fadd(t, tail);
    // normalise (Fast2Sum, |h| >= |t|) so that y * t stays below an ulp of y * h
    let hn = b.ins().fadd(h, t);
    let dh = b.ins().fsub(h, hn);
    let tn = b.ins().fadd(dh, t);
    (hn, tn)
}

/// |x|^y for f64 lanes, ax = |x|. Correct for finite ax > 0 and any y (|x| == 1 or y == 0 give 1,
/// NaN propagates); ax = 0 / inf are fixed up by the caller. With `for_f32` the result only needs
/// to be right after demotion to f32 (no subnormal f64 results).
fn pow_mag_f64(b: &mut FunctionBuilder, ax: Value, y: Value, for_f32: bool) -> Value {
    let k = K {
        ty: types::F64X2,
        ity: types::I64X2,
        d: true,
    };
    let yc = clamp(b, k, y, -1.8446744073709552e19, 1.8446744073709552e19);
    let (h, t) = ln_dd_f64(b, k, ax);
    let th = b.ins().fmul(yc, h);
    let nth = b.ins().fneg(th);
    let terr = b.ins().fma(yc, h, nth);
    let tl = b.ins().fma(yc, t, terr);
    let zero = fc(b, k, 0.0);
    let m1 = cmp(b, FloatCC::Equal, h, zero);
    let m2 = cmp(b, FloatCC::Equal, y, zero);
    let m = b.ins().bor(m1, m2);
    let th = sel(b, k, m, zero, th);
    let tl = sel(b, k, m, zero, tl);
    let (lo, hi) = if for_f32 {
        (-110.0, 100.0)
    } else {
        exp_limits(k)
    };
    let th = clamp(b, k, th, lo, hi);
    // |tl| <= ulp(th) unless th was clamped (then the result is 0 or inf anyway)
    let tl = clamp(b, k, tl, -1e-3, 1e-3);
    // exp(th + tl)
    let split = !for_f32;
    let (n, kf, r) = exp_reduce(b, k, th, exp_off(k, split));
    let r = b.ins().fadd(r, tl);
    let p = exp_poly(b, k, r);
    exp_scale(b, k, p, n, kf, split)
}

fn shuffle_bytes(b: &mut FunctionBuilder, x: Value, y: Value, mask: [u8; 16]) -> Value {
    let le = MemFlagsData::new().with_endianness(Endianness::Little);
    let ty = b.func.dfg.value_type(x);
    let xb = b.ins().bitcast(types::I8X16, le, x);
    let yb = b.ins().bitcast(types::I8X16, le, y);
    let imm = b
        .func
        .dfg
        .immediates
        .push(ConstantData::from(mask.to_vec()));
    let r = b.ins().shuffle(xb, yb, imm);
    b.ins().bitcast(ty, le, r)
}

const HIGH_TO_LOW: [u8; 16] = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];
const CONCAT_LOW: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];

/// x^y with C99 / IEEE-754 pow special cases (as Rust's `powf`/`powi`-free `f32::powf`, `f64::powf`).
/// f32 lanes are computed in f64 (one double-double-ln path per half) and rounded once.
pub fn pow(b: &mut FunctionBuilder, x: Value, y: Value) -> Value {
    let k = K::of(b, x);
    let (ax, sx) = abs_and_sign(b, k, x);
    let mag = if k.d {
        pow_mag_f64(b, ax, y, false)
    } else {
        let ax_hi = shuffle_bytes(b, ax, ax, HIGH_TO_LOW);
        let y_hi = shuffle_bytes(b, y, y, HIGH_TO_LOW);
        let ax0 = b.ins().fvpromote_low(ax);
        let y0 = b.ins().fvpromote_low(y);
        let ax1 = b.ins().fvpromote_low(ax_hi);
        let y1 = b.ins().fvpromote_low(y_hi);
        let m0 = pow_mag_f64(b, ax0, y0, true);
        let m1 = pow_mag_f64(b, ax1, y1, true);
        let d0 = b.ins().fvdemote(m0);
        let d1 = b.ins().fvdemote(m1);
        shuffle_bytes(b, d0, d1, CONCAT_LOW)
    };
    // |x| = 0 or inf, y != 0 and not NaN: the magnitude is 0 or inf.
    let zero = fc(b, k, 0.0);
    let inf = fc(b, k, f64::INFINITY);
    let xz = cmp(b, FloatCC::Equal, ax, zero);
    let xi = cmp(b, FloatCC::Equal, ax, inf);
    let x0i = b.ins().bor(xz, xi);
    let (ay, _) = abs_and_sign(b, k, y);
    let ynz = cmp(b, FloatCC::GreaterThan, ay, zero);
    let c = b.ins().band(x0i, ynz);
    let yneg = cmp(b, FloatCC::LessThan, y, zero);
    let big = b.ins().bxor(xi, yneg);
    let spv = sel(b, k, big, inf, zero);
    let mag = sel(b, k, c, spv, mag);
    // Sign: negative x (incl. -0, -inf) and odd integer y.
    let ty = b.ins().trunc(y);
    let yint = cmp(b, FloatCC::Equal, ty, y);
    let half = fc(b, k, 0.5);
    let hy = b.ins().fmul(y, half);
    let thy = b.ins().trunc(hy);
    let hodd = cmp(b, FloatCC::NotEqual, thy, hy);
    let yodd = b.ins().band(yint, hodd);
    let sg = b.ins().band(sx, yodd);
    let res = xor_bits(b, k, mag, sg);
    // NaN: finite x < 0 and non-integer y.
    let xneg = cmp(b, FloatCC::LessThan, x, zero);
    let ninf = fc(b, k, f64::NEG_INFINITY);
    let xfin = cmp(b, FloatCC::GreaterThan, x, ninf);
    let nf = b.ins().band(xneg, xfin);
    let nanm = b.ins().band_not(nf, yint);
    // NaN x with y != 0 (the log path does not see NaN x).
    let xnan = cmp(b, FloatCC::Unordered, x, x);
    let yz = cmp(b, FloatCC::Equal, y, zero);
    let xn = b.ins().band_not(xnan, yz);
    let nanm = b.ins().bor(nanm, xn);
    let nan = fc(b, k, f64::NAN);
    sel(b, k, nanm, nan, res)
}

// ---------------------------------------------------------------------------------------------
// Polynomial coefficients (generated by a Remez exchange in mpmath, 50 digits; see the table
// above for the ranges; rounded to the lane type when emitted).
// ---------------------------------------------------------------------------------------------

/// Remez minimax fit, max weighted error 3.137e-9.
pub(super) const EXP_F32: [f64; 5] = [
    0.49999993368929947566,
    0.16666520149403904123,
    0.041668389304664306242,
    0.0083687848009009077649,
    0.0013815250962154599661,
];
/// Remez minimax fit, max weighted error 3.664e-18.
pub(super) const EXP_F64: [f64; 10] = [
    0.5000000000000010721,
    0.16666666666666410232,
    0.041666666666529188262,
    0.0083333333334956256052,
    0.0013888888943922743829,
    0.00019841269504760930885,
    0.000024801492762677011926,
    2.7557587346617829285e-6,
    2.763037866505286543e-7,
    2.4999963811855767455e-8,
];
/// Remez minimax fit, max weighted error 5.889e-9.
pub(super) const LN_F32: [f64; 8] = [
    0.3333333168193819641,
    -0.25000826766685379319,
    0.20001235886556384378,
    -0.16623144526979266213,
    0.14201368421113419676,
    -0.13162003344399741771,
    0.12765429286098890952,
    -0.076343916421278192384,
];
/// Remez minimax fit, max weighted error 2.217e-18.
pub(super) const LN_F64: [f64; 8] = [
    0.66666666666666666445,
    0.40000000000000951215,
    0.28571428570759092322,
    0.22222222401629593829,
    0.18181794596888879677,
    0.15386295667336023465,
    0.1326729300602569555,
    0.13101928595100962458,
];
/// tanh f32 = x P(x^2) / Q(x^2) on |x| <= TANH_F32_CLAMP: rational minimax fit of the relative
/// error (Lawson iteration in mpmath, 50 digits), max relative error 7.8e-9 before rounding.
pub(super) const TANH_F32_CLAMP: f64 = 9.1;
pub(super) const TANH_F32_P: [f64; 7] = [
    1.0,
    0.13081525008981182443,
    0.0031011313731695123837,
    0.000011123373054920927745,
    -2.0091225439200232955e-8,
    5.208814709648324547e-11,
    -8.2996780819856366538e-14,
];
pub(super) const TANH_F32_Q: [f64; 4] = [
    1.0,
    0.46414853709964016519,
    0.024484063771867907506,
    0.00025419504622055542702,
];
/// Remez minimax fit, max weighted error 5.723e-19.
pub(super) const TANH_F64: [f64; 11] = [
    -0.33333333333333298612,
    0.1333333333332665501,
    -0.053968253963781069828,
    0.021869488386458951791,
    -0.0088632326116110833306,
    0.0035920921360792504442,
    -0.0014555435448010649281,
    0.00058844743967706294294,
    -0.00023338927660729792556,
    0.000083327780777233381299,
    -0.000019501856606703820752,
];
/// Remez minimax fit, max weighted error 7.332e-9.
pub(super) const SIN_F32: [f64; 4] = [
    -0.1666665838820468892,
    0.0083330344450809311549,
    -0.00019807158726043088983,
    2.6001707460712475247e-6,
];
/// Remez minimax fit, max weighted error 3.876e-19.
pub(super) const SIN_F64: [f64; 8] = [
    -0.16666666666666665185,
    0.0083333333333331525903,
    -0.00019841269841193969569,
    2.7557319208502064797e-6,
    -2.505210662994543399e-8,
    1.6058927438554197133e-10,
    -7.6426711389143513712e-13,
    2.7177943671247763422e-15,
];
/// Remez minimax fit, max weighted error 1.365e-8.
pub(super) const ERF_SMALL_F32: [f64; 7] = [
    1.1283791516907807457,
    -0.37612537629627330971,
    0.11282685481218524646,
    -0.0268201707741806152,
    0.0051312738101129109628,
    -0.00075621925755287937786,
    0.000065273964697024405773,
];
/// Remez minimax fit, max weighted error 1.285e-17.
pub(super) const ERF_SMALL_F64: [f64; 13] = [
    1.1283791670955125594,
    -0.37612638903183420557,
    0.11283791670942468779,
    -0.026866170643226692187,
    0.0052239776104958320235,
    -0.00085483263229234508467,
    0.00012055311829697023521,
    -0.000014925220602453414722,
    1.6456105825072416919e-6,
    -1.6307716870202291226e-7,
    1.4422553502978458393e-8,
    -1.0606635058877284785e-9,
    4.8636703667188465104e-11,
];
/// Remez minimax fit, max weighted error 3.288e-9.
pub(super) const ERF_LARGE_F32: [f64; 8] = [
    0.20643263250527469399,
    -0.071428903615679353261,
    0.023635096233939576352,
    -0.0072834568854788191791,
    0.0021847108909795479965,
    -0.0011373395375560563375,
    -0.00032253565670715978169,
    -0.00025566572459190907396,
];
/// Remez minimax fit, max weighted error 2.487e-19.
pub(super) const ERF_LARGE_F64: [f64; 22] = [
    0.15265194371756861112,
    -0.039970808388292214237,
    0.01015601181613863767,
    -0.0025097508583752224552,
    0.00060437490994125856294,
    -0.00014206183246571402535,
    0.000032641745684010967571,
    -7.3403008456085155628e-6,
    1.6190373559929094274e-6,
    -3.4926111718861547817e-7,
    7.3043656753686032039e-8,
    -1.7178533182747301166e-8,
    2.4755079106905354934e-9,
    -1.9687576844650889146e-10,
    8.0596967458123343008e-10,
    2.8996135645466048734e-10,
    1.2067577715687640998e-11,
    -6.6210097526852031517e-11,
    -3.6238475237330174023e-11,
    -1.0107632171014691532e-11,
    -1.5074628453587759191e-12,
    -1.0227835477541096146e-13,
];
