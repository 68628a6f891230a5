//! The transcendental functions and pow, defined once: generic code over a vector type `V`,
//! each operation an IEEE operation, an `fma`, a compare or select, or an integer op on the
//! lanes' bits, for f32 and f64 lanes (`math.rs` documents the methods and their measured
//! errors). Every backend computes the same bits from it:
//! - the micro-kernels (`micro.rs`): rustc compiles it for 16- and 8-lane f32 vectors;
//! - the x86 loop and row kernels (`x86/`): `trace` records it on a symbolic vector
//!   (`sym.rs`) as `SymOp`s, which the emitter spells instruction by instruction at the
//!   kernel's width and lane type;
//! - the Cranelift kernels (`vector.rs`): the same trace lowered to F32X4/F64X2 IR.
//!
//! sin/cos reduce lanes past the Cody–Waite range exactly, out of line (`SymOp::ExactR`): the
//! micro-kernels and Cranelift branch to it when a lane needs it; the x86 loop kernels stage
//! sin/cos through their micro-kernels.

use super::math::{
    ln2_parts_f32, ln2_parts_f64, pi_parts_f32, pi_parts_f64, ERF_LARGE_F32, ERF_LARGE_F64,
    ERF_SMALL_F32, ERF_SMALL_F64, EXP_F32, EXP_F64, LN_F32, LN_F64, LOG2E, SIN_F32, SIN_F64,
    TANH_F32_CLAMP, TANH_F32_P, TANH_F32_Q, TANH_F64,
};
#[cfg(target_arch = "x86_64")]
use super::trig::{cos_fix_f32, sin_fix_f32, F32_FAST};
use crate::ir::UnaryOp;
use crate::DType;

/// One operation of a traced micro-kernel function (`trace`), on earlier results by index.
/// Vector values are lanes of the traced function's type (f32 or f64); `Lt`/`Eq`/`Uge` give
/// masks that only `Sel` reads; constants, integer ops and shifts act at the lane's size. Each
/// is the instruction the `Z` implementation uses at that size (`maxps`/`minps` keep their
/// operand order: `Max(a, x)` is `vmaxps a, x`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SymOp {
    /// The function's argument of this index (pow: x is 0, y is 1).
    Arg(u8),
    /// A constant splat, by its bits (f32 bits in the low 32 for f32 lanes).
    Const(u64),
    Add(u32, u32),
    Sub(u32, u32),
    Mul(u32, u32),
    Div(u32, u32),
    /// a * b + c, one rounding.
    Fma(u32, u32, u32),
    Min(u32, u32),
    Max(u32, u32),
    /// Ordered `a < b` (LT_OQ), ordered `a == b` (EQ_OQ), unordered or `a >= b` (NLT_UQ).
    Lt(u32, u32),
    Eq(u32, u32),
    Uge(u32, u32),
    /// `m ? t : f`.
    Sel(u32, u32, u32),
    And(u32, u32),
    Or(u32, u32),
    Xor(u32, u32),
    /// Integer add and subtract on the lanes' bits (32- or 64-bit).
    Iadd(u32, u32),
    Isub(u32, u32),
    /// Logical shifts of the lanes' bits.
    Shl(u32, u32),
    Shr(u32, u32),
    /// sin/cos (`V::exact_reduction`): r of the exact reduction of x where |x| is past the
    /// Cody–Waite range, else `r` (operands x, r, n; cos). An out-of-line call in the slow
    /// case: the x86 emitter stages these functions instead of inlining them.
    ExactR(u32, u32, u32, bool),
    /// The n (sign word) of the `ExactR` at this index.
    ExactN(u32),
}

impl SymOp {
    /// Whether the operation calls out of line (`ExactR`).
    pub fn calls(&self) -> bool {
        matches!(self, SymOp::ExactR(..) | SymOp::ExactN(_))
    }

    /// The indices of the earlier results the operation reads.
    pub fn operands(&self) -> Vec<u32> {
        match *self {
            SymOp::Arg(_) | SymOp::Const(_) => vec![],
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
}

/// A traced function: its operations and the index of its result.
pub type Traced = (Vec<SymOp>, u32);

/// A function with a traced definition: a transcendental unary op, or pow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Function {
    Unary(UnaryOp),
    Pow,
}

impl From<UnaryOp> for Function {
    fn from(op: UnaryOp) -> Function {
        Function::Unary(op)
    }
}

/// The operations of function `f` on vectors of `dtype` (f32 or f64) lanes, as every backend
/// computes it (the generic code below, run on a symbolic vector type), and the index of its
/// result. None for unary ops that are not transcendental and for other dtypes. Each
/// function is recorded once per process (at most one per function and float type) and
/// shared: every kernel, vector and backend reads the same list.
pub fn trace(f: impl Into<Function>, dtype: DType) -> Option<&'static Traced> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Cache = Mutex<HashMap<(Function, DType), Option<&'static Traced>>>;
    let op = f.into();
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let f64 = match dtype {
        DType::F32 => false,
        DType::F64 => true,
        _ => return None,
    };
    let mut cache = (CACHE.get_or_init(Default::default).lock()).unwrap_or_else(|e| e.into_inner());
    *cache
        .entry((op, dtype))
        .or_insert_with(|| sym::trace(op, f64).map(|t| &*Box::leak(Box::new(t))))
}

/// One vector of `N` lanes, f32 or (where `D`) f64. The micro-kernels implement it with
/// intrinsics (every method `#[inline(always)]`, only called from `#[target_feature]`
/// kernels, so they inline), the tracer with symbols. Integer ops act on the lanes' bits, at
/// the lane's size.
pub(super) trait V: Copy {
    const N: usize;
    /// f64 lanes.
    const D: bool;
    type M: Copy;
    /// Every lane `c` rounded to the lane type.
    unsafe fn splat(c: f64) -> Self;
    /// Every lane these bits (the low 32 for f32 lanes).
    unsafe fn bits(c: u64) -> Self;
    unsafe fn load(p: *const f32) -> Self;
    unsafe fn store(self, p: *mut f32);
    unsafe fn add(self, o: Self) -> Self;
    unsafe fn sub(self, o: Self) -> Self;
    unsafe fn mul(self, o: Self) -> Self;
    unsafe fn div(self, o: Self) -> Self;
    /// self * b + c, one rounding.
    unsafe fn fma(self, b: Self, c: Self) -> Self;
    /// `self < x ? self : x` (minps: a NaN `x` passes).
    unsafe fn min(self, x: Self) -> Self;
    /// `x < self ? self : x` (maxps: a NaN `x` passes).
    unsafe fn max(self, x: Self) -> Self;
    /// Ordered `self < o`.
    unsafe fn lt(self, o: Self) -> Self::M;
    /// Ordered `self == o`.
    unsafe fn eq(self, o: Self) -> Self::M;
    /// Unordered or `self >= o`.
    unsafe fn uge(self, o: Self) -> Self::M;
    /// `m ? t : f`.
    unsafe fn sel(m: Self::M, t: Self, f: Self) -> Self;
    /// Whether any lane of `m` is set.
    unsafe fn any(m: Self::M) -> bool;
    /// sin/cos: (r, n) with the lanes where |x| is past the Cody–Waite range taken from the
    /// exact reduction (`trig::sin_fix_*`, `cos_fix_*`), the other lanes as they are.
    unsafe fn exact_reduction(x: Self, r: Self, n: Self, cos: bool) -> (Self, Self);
    unsafe fn and(self, o: Self) -> Self;
    unsafe fn or(self, o: Self) -> Self;
    unsafe fn xor(self, o: Self) -> Self;
    unsafe fn iadd(self, o: Self) -> Self;
    unsafe fn isub(self, o: Self) -> Self;
    /// Shifts by the mantissa's width (23, 52) and the sign's position (31, 63).
    unsafe fn shl_mant(self) -> Self;
    unsafe fn shl_sign(self) -> Self;
    unsafe fn shr_mant(self) -> Self;
}

// ---------------------------------------------------------------------------------------------
// The functions, as `math.rs` documents them.
// ---------------------------------------------------------------------------------------------

/// The lane format's sign bit, mantissa width and exponent bias.
#[inline(always)]
fn sign<T: V>() -> u64 {
    if T::D {
        1 << 63
    } else {
        0x8000_0000
    }
}
#[inline(always)]
fn mbits<T: V>() -> i32 {
    if T::D {
        52
    } else {
        23
    }
}
#[inline(always)]
fn bias<T: V>() -> f64 {
    if T::D {
        1023.0
    } else {
        127.0
    }
}
/// 1.5 * 2^mbits (`K::shifter`).
#[inline(always)]
fn shifter<T: V>() -> f64 {
    1.5 * (2.0f64).powi(mbits::<T>())
}
#[inline(always)]
fn ln2_parts<T: V>() -> (f64, f64) {
    if T::D {
        ln2_parts_f64()
    } else {
        ln2_parts_f32()
    }
}
/// Input range of `exp`: below the first the result is 0, above the second +inf.
#[inline(always)]
fn exp_limits<T: V>() -> (f64, f64) {
    if T::D {
        (-746.0, 710.0)
    } else {
        (-104.0, 89.0)
    }
}

#[inline(always)]
unsafe fn c<T: V>(x: f64) -> T {
    T::splat(x)
}

/// min(hi, x) then max(lo, x), NaN kept.
#[inline(always)]
unsafe fn clamp<T: V>(x: T, lo: f64, hi: f64) -> T {
    let x = c::<T>(hi).min(x);
    c::<T>(lo).max(x)
}

#[inline(always)]
unsafe fn horner<T: V>(x: T, cs: &[f64]) -> T {
    let mut acc = c::<T>(cs[cs.len() - 1]);
    let mut i = cs.len() - 1;
    while i > 0 {
        i -= 1;
        acc = acc.fma(x, c::<T>(cs[i]));
    }
    acc
}

/// |x| and the sign bits of x.
#[inline(always)]
unsafe fn abs_and_sign<T: V>(x: T) -> (T, T) {
    let s = x.and(T::bits(sign::<T>()));
    (x.xor(s), s)
}

/// Range reduction of e^x: n = shifter + off + k (as a float), kf = k = round(x / ln 2) and
/// r = x - k ln 2 (|r| <= ln 2 / 2, two-part ln 2).
#[inline(always)]
unsafe fn exp_reduce<T: V>(x: T, off: f64) -> (T, T, T) {
    let s = c::<T>(shifter::<T>() + off);
    let n = x.fma(c::<T>(LOG2E), s);
    let kf = n.sub(s);
    let (hi, lo) = ln2_parts::<T>();
    let r = kf.fma(c::<T>(-hi), x);
    let r = kf.fma(c::<T>(-lo), r);
    (n, kf, r)
}

/// e^r = 1 + r + r^2 P(r) on |r| <= ln 2 / 2.
#[inline(always)]
unsafe fn exp_poly<T: V>(r: T) -> T {
    let mut cs = [0.0; 12];
    let p: &[f64] = if T::D { &EXP_F64 } else { &EXP_F32 };
    cs[0] = 1.0;
    cs[1] = 1.0;
    cs[2..2 + p.len()].copy_from_slice(p);
    horner(r, &cs[..2 + p.len()])
}

/// p 2^k, n = shifter + k + one bias (or two where `split`: 2^k as two normal factors
/// 2^k1 2^(k - k1), so that subnormal results round once) and kf = k.
#[inline(always)]
unsafe fn exp_scale<T: V>(p: T, n: T, kf: T, split: bool) -> T {
    if !split {
        return p.mul(n.shl_mant());
    }
    let s = c::<T>(shifter::<T>() + bias::<T>());
    let n1 = kf.fma(c::<T>(0.5), s);
    let e1 = n1.shl_mant();
    let e2 = n.isub(n1).shl_mant();
    p.mul(e1).mul(e2)
}

/// e^x for x within the exp limits.
#[inline(always)]
unsafe fn exp_core<T: V>(x: T, split: bool) -> T {
    let off = bias::<T>() * if split { 2.0 } else { 1.0 };
    let (n, kf, r) = exp_reduce(x, off);
    let p = exp_poly(r);
    exp_scale(p, n, kf, split)
}

#[inline(always)]
pub(super) unsafe fn exp<T: V>(x: T) -> T {
    let (lo, hi) = exp_limits::<T>();
    let x = clamp(x, lo, hi);
    exp_core(x, true)
}

/// tanh: f32 one rational function; f64 an odd polynomial below 0.5493, else
/// sign(x) (1 - 2 / (e^{2|x|} + 1)).
#[inline(always)]
pub(super) unsafe fn tanh<T: V>(x: T) -> T {
    if !T::D {
        let x = clamp(x, -TANH_F32_CLAMP, TANH_F32_CLAMP);
        let z = x.mul(x);
        let p1 = horner(z, &TANH_F32_P[1..]);
        let x3 = x.mul(z);
        let num = x3.fma(p1, x);
        let q = horner(z, &TANH_F32_Q);
        let t = num.div(q);
        return clamp(t, -1.0, 1.0);
    }
    let (ax, sign) = abs_and_sign(x);
    let z = x.mul(x);
    let q = horner(z, &TANH_F64);
    let one = c::<T>(1.0);
    let q = z.fma(q, one);
    let small = x.mul(q);
    let two = c::<T>(2.0);
    let a2 = ax.mul(two);
    let a2 = c::<T>(40.0).min(a2);
    let e = exp_core(a2, false);
    let ep1 = e.add(one);
    let q = two.div(ep1);
    let t = one.sub(q);
    let large = t.or(sign);
    let m = ax.lt(c::<T>(0.5493));
    T::sel(m, small, large)
}

#[inline(always)]
pub(super) unsafe fn sigmoid<T: V>(x: T) -> T {
    let nax = x.or(T::bits(sign::<T>()));
    let nax = c::<T>(exp_limits::<T>().0).max(nax);
    let (n, _, r) = exp_reduce(nax, bias::<T>() + 64.0);
    let p = exp_poly(r);
    let es = exp_scale(p, n, n, false);
    let one = c::<T>(1.0);
    let down = c::<T>((2.0f64).powi(-64));
    let den = es.fma(down, one);
    let neg = x.lt(c::<T>(0.0));
    let num = T::sel(neg, es, c::<T>((2.0f64).powi(64)));
    num.div(den).mul(down)
}

/// x = 2^e m, m in [sqrt(1/2), sqrt(2)); (e, f = m - 1) as floats,
/// subnormal x pre-scaled by 2^mbits.
#[inline(always)]
unsafe fn ln_reduce<T: V>(x: T) -> (T, T) {
    let mb = mbits::<T>();
    let minpos = if T::D {
        f64::MIN_POSITIVE
    } else {
        f32::MIN_POSITIVE as f64
    };
    let tiny = x.lt(c::<T>(minpos));
    let xs = x.mul(c::<T>((2.0f64).powi(mb)));
    let x = T::sel(tiny, xs, x);
    let (one_bits, sqrt_half_bits, two_mb_bits): (u64, u64, u64) = if T::D {
        (
            0x3ff0_0000_0000_0000,
            0x3fe6_a09e_667f_3bcd,
            0x4330_0000_0000_0000,
        )
    } else {
        (0x3f80_0000, 0x3f35_04f3, 0x4b00_0000)
    };
    let ix = x.iadd(T::bits(one_bits - sqrt_half_bits));
    let ef = ix.shr_mant().or(T::bits(two_mb_bits));
    let e = ef.sub(c::<T>((2.0f64).powi(mb) + bias::<T>()));
    let mbf = c::<T>(mb as f64);
    let corr = T::sel(tiny, mbf, T::bits(0));
    let e = e.sub(corr);
    let mi = ix
        .and(T::bits((1u64 << mb) - 1))
        .iadd(T::bits(sqrt_half_bits));
    let f = mi.sub(c::<T>(1.0));
    (e, f)
}

/// log1p(f) = f - (hfsq - s (hfsq + z Q(z))), s = f/(2+f); returns
/// (s, hfsq, hfsq + z Q(z)).
#[inline(always)]
unsafe fn ln_poly_f64<T: V>(f: T) -> (T, T, T) {
    let u = c::<T>(2.0).add(f);
    let s = f.div(u);
    let z = s.mul(s);
    let q = horner(z, &LN_F64);
    let r = z.mul(q);
    let hfsq = f.mul(c::<T>(0.5)).mul(f);
    let t = hfsq.add(r);
    (s, hfsq, t)
}

/// The f32 polynomial of log1p(f): 1 - f/2 + f^2 P(f).
const LN_F32_POLY: [f64; 10] = [
    1.0, -0.5, LN_F32[0], LN_F32[1], LN_F32[2], LN_F32[3], LN_F32[4], LN_F32[5], LN_F32[6],
    LN_F32[7],
];

/// ln's special values: 0 -> -inf, < 0 -> NaN, +inf -> +inf, NaN -> NaN.
#[inline(always)]
unsafe fn ln_specials<T: V>(x: T, res: T) -> T {
    let inf = c::<T>(f64::INFINITY);
    let res = T::sel(x.uge(inf), x, res);
    let zero = c::<T>(0.0);
    let res = T::sel(x.lt(zero), c::<T>(f64::NAN), res);
    T::sel(x.eq(zero), c::<T>(f64::NEG_INFINITY), res)
}

#[inline(always)]
pub(super) unsafe fn ln<T: V>(x: T) -> T {
    let (e, f) = ln_reduce(x);
    let (hi, lo) = ln2_parts::<T>();
    let res = if T::D {
        let (s, hfsq, t) = ln_poly_f64(f);
        let a = e.mul(c::<T>(lo));
        let a = s.fma(t, a);
        let a = a.sub(hfsq).add(f);
        e.fma(c::<T>(hi), a)
    } else {
        let p = horner(f, &LN_F32_POLY).mul(f);
        let p = e.fma(c::<T>(lo), p);
        e.fma(c::<T>(hi), p)
    };
    ln_specials(x, res)
}

/// log1p: ln u of u = 1 + x rounded, plus u's rounding error c / u,
/// c = x - (u - 1); ±0 kept.
#[inline(always)]
pub(super) unsafe fn log1p<T: V>(x: T) -> T {
    let one = c::<T>(1.0);
    let u = x.add(one);
    let um1 = u.sub(one);
    let cu = x.sub(um1).div(u);
    let (e, f) = ln_reduce(u);
    let (hi, lo) = ln2_parts::<T>();
    let res = if T::D {
        let (s, hfsq, t) = ln_poly_f64(f);
        let a = e.fma(c::<T>(lo), cu);
        let a = s.fma(t, a);
        let a = a.sub(hfsq).add(f);
        e.fma(c::<T>(hi), a)
    } else {
        let p = horner(f, &LN_F32_POLY);
        let p = p.fma(f, cu);
        let p = e.fma(c::<T>(lo), p);
        e.fma(c::<T>(hi), p)
    };
    let res = ln_specials(u, res);
    T::sel(x.eq(c::<T>(0.0)), x, res)
}

/// expm1: 2^k (p + 1 - 2^-k), p = e^r - 1 = r + r^2 P(r), k capped in 2^-k where
/// 1 - 2^-k rounds to 1; ±0 kept.
#[inline(always)]
pub(super) unsafe fn expm1<T: V>(x: T) -> T {
    let (lo, hi, cap) = if T::D {
        (-60.0, 710.0, 60.0)
    } else {
        (-30.0, 89.0, 30.0)
    };
    let xc = clamp(x, lo, hi);
    let (n, kf, r) = exp_reduce(xc, 2.0 * bias::<T>());
    let pp = horner(r, if T::D { &EXP_F64[..] } else { &EXP_F32[..] });
    let z = r.mul(r);
    let p = z.fma(pp, r);
    let kc = c::<T>(cap).min(kf);
    let nk = c::<T>(shifter::<T>() + bias::<T>()).sub(kc);
    let pw = nk.shl_mant();
    let t = c::<T>(1.0).sub(pw);
    let q = p.add(t);
    let res = exp_scale(q, n, kf, true);
    T::sel(x.eq(c::<T>(0.0)), x, res)
}

/// `math`'s sin/cos tail: r = x - q pi/2 (three-part pi), the exact reduction of lanes past
/// the Cody–Waite range (`V::exact_reduction`), the odd polynomial, the sign from n's bit.
#[inline(always)]
unsafe fn sincos_tail<T: V>(x: T, jf: T, n: T, pscale: f64, cos: bool) -> T {
    let mut r = x;
    for part in if T::D { pi_parts_f64() } else { pi_parts_f32() } {
        r = jf.fma(c::<T>(-part * pscale), r);
    }
    let (r, n) = T::exact_reduction(x, r, n, cos);
    let r = clamp(r, -1.6, 1.6);
    let z = r.mul(r);
    let q = horner(z, if T::D { &SIN_F64[..] } else { &SIN_F32[..] });
    let q = z.fma(q, c::<T>(1.0));
    let s = r.mul(q);
    let s = clamp(s, -1.0, 1.0);
    s.xor(n.shl_sign())
}

/// `V::exact_reduction` of 16 or 8 f32 lanes through a buffer: lanes above `trig::F32_FAST`
/// get r and n from `trig`'s Payne–Hanek reduction (the helper the Cranelift code calls),
/// called only when some lane needs it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) unsafe fn exact_reduction_f32<T: V>(x: T, r: T, n: T, cos: bool) -> (T, T) {
    let ax = abs_and_sign(x).0;
    let big = c::<T>(F32_FAST).lt(ax);
    if !T::any(big) {
        return (r, n);
    }
    let mut buf = [[0.0f32; 16]; 3];
    x.store(buf[0].as_mut_ptr());
    r.store(buf[1].as_mut_ptr());
    n.store(buf[2].as_mut_ptr());
    let fix = if cos { cos_fix_f32 } else { sin_fix_f32 };
    let [bx, br, bn] = &mut buf;
    fix(
        bx.as_ptr(),
        br.as_mut_ptr(),
        bn.as_mut_ptr().cast::<u32>(),
        T::N,
    );
    (T::load(buf[1].as_ptr()), T::load(buf[2].as_ptr()))
}

#[inline(always)]
pub(super) unsafe fn sin<T: V>(x: T) -> T {
    let s = c::<T>(shifter::<T>());
    let n = x.fma(c::<T>(std::f64::consts::FRAC_1_PI), s);
    let jf = n.sub(s);
    sincos_tail(x, jf, n, 1.0, false)
}

#[inline(always)]
pub(super) unsafe fn cos<T: V>(x: T) -> T {
    let t = x.fma(c::<T>(std::f64::consts::FRAC_1_PI), c::<T>(-0.5));
    let s1 = c::<T>(shifter::<T>() + 1.0);
    let n = t.add(s1);
    let jf = n.sub(s1);
    let qf = jf.fma(c::<T>(2.0), c::<T>(1.0));
    sincos_tail(x, qf, n, 0.5, true)
}

#[inline(always)]
pub(super) unsafe fn erf<T: V>(x: T) -> T {
    let (ax, sign) = abs_and_sign(x);
    let z = x.mul(x);
    let (ps, ql): (&[f64], &[f64]) = if T::D {
        (&ERF_SMALL_F64, &ERF_LARGE_F64)
    } else {
        (&ERF_SMALL_F32, &ERF_LARGE_F32)
    };
    let small = x.mul(horner(z, ps));
    let top = if T::D { 5.93 } else { 3.92 };
    let center = (1.2 + top) / 2.0;
    let a = c::<T>(top).min(ax);
    let na2 = a.mul(a).xor(T::bits(self::sign::<T>()));
    let e = exp_core(na2, false);
    let u = a.sub(c::<T>(center));
    let q = horner(u, ql);
    let ne = e.xor(T::bits(self::sign::<T>()));
    let large = ne.fma(q, c::<T>(1.0)).or(sign);
    let m = ax.lt(c::<T>(1.2));
    T::sel(m, small, large)
}

mod pow;
mod sym;

pub(super) use pow::pow;

#[cfg(test)]
mod tests {
    use super::*;

    /// The most values of a trace alive at once: each from the operation that computes it to
    /// its last read (where the result and the operands that die there are alive together).
    fn peak_live(ops: &[SymOp], res: u32) -> usize {
        let mut last = vec![0usize; ops.len()];
        for (i, op) in ops.iter().enumerate() {
            for j in op.operands() {
                last[j as usize] = i;
            }
        }
        last[res as usize] = ops.len();
        (0..ops.len())
            .map(|i| (0..=i).filter(|&j| last[j] >= i).count())
            .max()
            .unwrap_or(0)
    }

    /// The x86 kernels spell a trace inline with a register per live value, and take a
    /// kernel only where they fit (else Cranelift's kernel runs): at AVX2 width 15 registers,
    /// so every function keeps at most 12 values alive (the rest for the kernel's own).
    #[test]
    fn every_traced_function_fits_in_the_avx2_registers() {
        use UnaryOp::*;
        let mut functions = vec![Function::Pow];
        functions.extend([Exp, Ln, Tanh, Sigmoid, Erf, Log1p, Expm1, Sin, Cos].map(Function::from));
        for f in functions {
            for d in [DType::F32, DType::F64] {
                let (ops, res) = trace(f, d).unwrap();
                let peak = peak_live(ops, *res);
                assert!(peak <= 12, "{f:?} {d}: {peak} values alive at once");
            }
        }
    }
}
