//! pow, on the lane type itself (f32 lanes in f32): ln |x| as an unevaluated sum of two lane
//! values (a double-f32 or double-f64), y ln |x| as another, and e^t of that sum, so that
//! |y ln x| up to the overflow limit keeps its bits. The C99 / IEEE special cases are
//! selected at the end, as Rust's `powf` gives them.

use super::{
    abs_and_sign, bias, c, clamp, exp_limits, exp_scale, horner, ln2_parts, ln_reduce, mbits,
    shifter, sign, V,
};
use crate::codegen::math::{EXP_F32, EXP_F64, LN_F64, LOG2E};

/// -x.
#[inline(always)]
unsafe fn neg<T: V>(x: T) -> T {
    x.xor(T::bits(sign::<T>()))
}

/// (s, e) with s = a + b rounded and a + b = s + e exactly (Knuth's two-sum).
#[inline(always)]
unsafe fn two_sum<T: V>(a: T, b: T) -> (T, T) {
    let s = a.add(b);
    let bb = s.sub(a);
    let e = a.sub(s.sub(bb)).add(b.sub(bb));
    (s, e)
}

/// `two_sum` where |a| >= |b| or a = 0 (Dekker's fast two-sum).
#[inline(always)]
unsafe fn fast_two_sum<T: V>(a: T, b: T) -> (T, T) {
    let s = a.add(b);
    (s, b.sub(s.sub(a)))
}

/// (p, e) with p = a * b rounded and a * b = p + e exactly.
#[inline(always)]
unsafe fn two_prod<T: V>(a: T, b: T) -> (T, T) {
    let p = a.mul(b);
    (p, a.fma(b, neg(p)))
}

/// `c` as the sum of two constants of the lane type.
fn split<T: V>(c: f64) -> (f64, f64) {
    if T::D {
        (c, 0.0)
    } else {
        let hi = c as f32 as f64;
        (hi, c - hi)
    }
}

/// ln x as an unevaluated sum hi + lo, accurate to about 2^-10 of the lane type's precision
/// past its own, for finite x > 0 (finite garbage otherwise). With x = 2^e m (`ln_reduce`),
/// f = m - 1 and s = f / (2 + f): ln m = 2 atanh s = 2s + s^3 Q(s^2), Q the polynomial of
/// `LN_F64`. s, s^2, s^3 and Q's constant term are carried as sums of two values, the rest
/// of Q (at most 2^-6 of its value) in one.
#[inline(always)]
unsafe fn ln_sum<T: V>(x: T) -> (T, T) {
    let (e, f) = ln_reduce(x);
    let two = c::<T>(2.0);
    // u + ul = 2 + f exactly; s + sl = f / (2 + f), with 1 / (2 + f) = (1 - s) / 2.
    let u = two.add(f);
    let ul = f.sub(u.sub(two));
    let s = f.div(u);
    let rr = neg(s).fma(u, f);
    let rr = neg(s).fma(ul, rr);
    let sl = rr.mul(s.fma(c::<T>(-0.5), c::<T>(0.5)));
    // z + zl = s^2, s3 + s3l = s^3.
    let (z, zl) = two_prod(s, s);
    let zl = s.add(s).fma(sl, zl);
    let (s3, s3l) = two_prod(s, z);
    let s3l = s.fma(zl, sl.fma(z, s3l));
    // q + ql = Q(z).
    let (q0, q0l) = split::<T>(LN_F64[0]);
    let w = z.mul(horner(z, &LN_F64[1..]));
    let w = if q0l == 0.0 { w } else { w.add(c::<T>(q0l)) };
    let (q, ql) = fast_two_sum(c::<T>(q0), w);
    // t + tl = s^3 Q(z).
    let (t, tl) = two_prod(s3, q);
    let tl = s3.fma(ql, s3l.fma(q, tl));
    // e ln 2 = p + pl (ln 2 as two parts; e has at most 11 bits).
    let (l2, l2l) = ln2_parts::<T>();
    let (p, pl) = two_prod(e, c::<T>(l2));
    let pl = e.fma(c::<T>(l2l), pl);
    // ln x = p + 2s + t + (the small parts): |p| >= |2s| >= |t| (or p = 0).
    let s2 = s.add(s);
    let (a, al) = fast_two_sum(p, s2);
    let (h, hl) = fast_two_sum(a, t);
    let lo = al.add(hl).add(pl).add(sl.add(sl)).add(tl);
    fast_two_sum(h, lo)
}

/// e^(t + tl) for |tl| <= ulp(t) (clamped: the caller's t may be clamped to the exp limits),
/// with subnormal results scaled in two steps as `exp` does. r + rl = t + tl - k ln 2 is kept
/// as a sum, and e^r = 1 + r + r^2 P(r) summed so that only the last addition rounds.
#[inline(always)]
unsafe fn exp_sum<T: V>(t: T, tl: T) -> T {
    let s = c::<T>(shifter::<T>() + 2.0 * bias::<T>());
    let n = t.fma(c::<T>(LOG2E), s);
    let kf = n.sub(s);
    let (hi, lo) = ln2_parts::<T>();
    let r0 = kf.fma(c::<T>(-hi), t); // exact
    let tl = clamp(tl, -1e-3, 1e-3);
    let small = kf.fma(c::<T>(-lo), tl);
    let (r, rl) = two_sum(r0, small);
    // e^(r + rl) - 1 = r + v, v = r^2 P(r) + rl (1 + r).
    let pp = horner(r, if T::D { &EXP_F64[..] } else { &EXP_F32[..] });
    let v = r.mul(r).fma(pp, rl.fma(r, rl));
    let (q, ql) = fast_two_sum(r, v);
    let (one, onel) = fast_two_sum(c::<T>(1.0), q);
    let p = one.add(onel.add(ql));
    exp_scale(p, n, kf, true)
}

/// Whether each lane of a >= 0 holds an integer (+inf counts as one, NaN does not):
/// a = min(a, 2^mbits) rounded to an integer by adding and subtracting 2^mbits.
#[inline(always)]
unsafe fn is_integer<T: V>(a: T) -> T::M {
    let big = c::<T>((2.0f64).powi(mbits::<T>()));
    let a = big.min(a);
    a.eq(a.add(big).sub(big))
}

/// x^y with the special cases of C99 / IEEE 754 pow (as Rust's `powf`). Constants are made
/// where they are read, and |x| and the sign of x again for the special cases, so that few
/// values stay alive across the computation (the x86 kernels hold them in registers).
#[inline(always)]
pub(in crate::codegen) unsafe fn pow<T: V>(x: T, y: T) -> T {
    // |x|^y for finite |x| > 0: e^(y ln|x|) with y ln|x| as a sum. y is clamped to 2^64
    // (|ln x| >= 2^-53 unless x = 1, so the product still passes the exp limits) and the
    // product set to 0 where y = 0 or x = 1, so that no inf - inf or 0 * inf arises.
    let (l, ll) = ln_sum(abs_and_sign(x).0);
    let yc = clamp(y, -1.8446744073709552e19, 1.8446744073709552e19);
    let (t, tl) = two_prod(yc, l);
    let tl = yc.fma(ll, tl);
    let trivial = T::sel(y.eq(c::<T>(0.0)), c::<T>(0.0), l).eq(c::<T>(0.0));
    let t = T::sel(trivial, c::<T>(0.0), t);
    let tl = T::sel(trivial, c::<T>(0.0), tl);
    let (lo, hi) = exp_limits::<T>();
    let res = exp_sum(clamp(t, lo, hi), tl);
    // |x| = 0 or inf: 0 or inf by the sign of y.
    let (ax, sx) = abs_and_sign(x);
    let (zero, inf) = (c::<T>(0.0), c::<T>(f64::INFINITY));
    let yneg = y.lt(zero);
    let res = T::sel(ax.eq(zero), T::sel(yneg, inf, zero), res);
    let res = T::sel(ax.eq(inf), T::sel(yneg, zero, inf), res);
    // Negative x (-0 and -inf too): the sign of x for odd integer y; NaN for finite x and
    // y not an integer.
    let (ay, _) = abs_and_sign(y);
    let yint = is_integer(ay);
    let half_int = is_integer(ay.mul(c::<T>(0.5)));
    let odd_sign = T::sel(yint, T::sel(half_int, zero, sx), zero);
    let res = res.xor(odd_sign);
    let nan = c::<T>(f64::NAN);
    let finite_neg = T::sel(c::<T>(f64::NEG_INFINITY).lt(x), T::sel(yint, res, nan), res);
    let res = T::sel(x.lt(zero), finite_neg, res);
    // NaN in, NaN out; but y = 0 or x = 1 give 1 whatever the other is.
    let res = T::sel(y.eq(y), res, nan);
    let res = T::sel(x.eq(x), res, nan);
    let one = c::<T>(1.0);
    let res = T::sel(y.eq(zero), one, res);
    T::sel(x.eq(one), one, res)
}
