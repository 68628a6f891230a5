//! Exact reduction of large sin/cos arguments modulo pi (Payne–Hanek), the slow path of
//! `traced::sin`/`traced::cos` and of their micro-kernels.
//!
//! The vector code reduces x - j pi with a 3-part Cody–Waite pi, which is exact only while
//! j and the dropped tail of pi times j stay small: f32 loses accuracy from |x| ~ 1e5, f64
//! from ~ 1e14, and beyond 2^22 (f32) / 2^51 (f64) the rounding shifter cannot even hold j.
//! Vectors with a lane above `F32_FAST` / `F64_FAST` call the helpers here once (one compare
//! and a never-taken branch per vector otherwise); they overwrite the reduced argument and the
//! sign parity of those lanes only, and the common polynomial tail finishes every lane. The
//! Cranelift kernels and the rustc micro-kernels call the same helpers, so their results stay
//! bit-identical.
//!
//! The reduction: for finite |x| = m 2^e (m a 53-bit integer), x/pi mod 2 depends only on the
//! bits of 1/pi from position e on (earlier ones contribute even integers). A 192-bit window of
//! them times m gives x/pi mod 2 as a 1.127 fixed-point number with an absolute error below
//! 2^-126, whatever the size of x; the nearest integer j and the fraction f = x/pi - j follow,
//! and r = f pi is formed in double-double arithmetic and rounded once. The closest an f64 gets
//! to a multiple of pi is ~2^-62 relative (f32: far less close), so r keeps > 60 good bits.

/// Bits of 1/pi: word 0 holds the (zero) bits at positions -63..=0, word k >= 1 the bits
/// 64(k-1)+1 ..= 64k after the binary point (1/pi = 0.517cc1b7...). 1280 bits cover the
/// windows of every finite f64 (e <= 971, so bits up to 1162 are read).
const INV_PI: [u64; 21] = [
    0,
    0x517cc1b727220a94,
    0xfe13abe8fa9a6ee0,
    0x6db14acc9e21c820,
    0xff28b1d5ef5de2b0,
    0xdb92371d2126e970,
    0x0324977504e8c90e,
    0x7f0ef58e5894d39f,
    0x74411afa975da242,
    0x74ce38135a2fbf20,
    0x9cc8eb1cc1a99cfa,
    0x4e422fc5defc941d,
    0x8ffc4bffef02cc07,
    0xf79788c5ad05368f,
    0xb69b3f6793e584db,
    0xa7a31fb34f2ff516,
    0xba93dd63f5f2f8bd,
    0x9e839cfbc5294975,
    0x35fdafd88fc6ae84,
    0x2b0198237e3db5d5,
    0xf867de104d7a1b0e,
];

/// |x| above which f32 lanes take the exact reduction (the Cody–Waite path is within the
/// table's bound below it: every f32 up to here is tested).
pub(super) const F32_FAST: f64 = 65536.0;
/// |x| above which f64 lanes take the exact reduction.
pub(super) const F64_FAST: f64 = 1073741824.0; // 2^30

/// pi as a double-double.
const PI_HI: f64 = std::f64::consts::PI;
const PI_LO: f64 = 1.2246467991473532e-16;

/// For finite x with |x| >= 1: x/pi - (1/2 if `half`) = j + f with j an integer and
/// |f| <= 1/2. Returns r = f pi (rounded once to f64) and whether j is odd.
pub fn reduce_pi(x: f64, half: bool) -> (f64, bool) {
    debug_assert!(x.is_finite() && x.abs() >= 1.0);
    let bits = x.abs().to_bits();
    let m = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
    let e = (bits >> 52) as i64 - 1075; // |x| = m 2^e, e >= -52
                                        // The window: bits e ..= e + 191 of 1/pi (bit i is at position i + 63 of INV_PI).
    let p0 = (e + 63) as usize;
    let (q, s) = (p0 / 64, p0 % 64);
    let word = |k: usize| {
        if s == 0 {
            INV_PI[q + k]
        } else {
            (INV_PI[q + k] << s) | (INV_PI[q + k + 1] >> (64 - s))
        }
    };
    let (w0, w1, w2) = (word(0), word(1), word(2));
    // v = (|x| / pi) 2^127 mod 2^128 = (m W 2^-64) mod 2^128, W = w0 w1 w2 (192 bits).
    let m128 = m as u128;
    let mut v = ((m.wrapping_mul(w0) as u128) << 64)
        .wrapping_add(m128 * w1 as u128)
        .wrapping_add((m128 * w2 as u128) >> 64);
    let neg = x < 0.0;
    const HALF: u128 = 1 << 126;
    if half {
        // x/pi - 1/2 = -(|x|/pi + 1/2) for negative x: reduce that and negate f.
        v = if neg {
            v.wrapping_add(HALF)
        } else {
            v.wrapping_sub(HALF)
        };
    }
    let u = v.wrapping_add(HALF);
    let odd = (u >> 127) & 1 == 1;
    let f = (u & ((1u128 << 127) - 1)) as i128 - HALF as i128; // f 2^127, in [-2^126, 2^126)
    let f = if neg { -f } else { f };
    let scale = (2.0f64).powi(-127);
    let fh = f as f64;
    let fl = (f - fh as i128) as f64 * scale;
    let fh = fh * scale;
    // r = (fh + fl) pi: exact product of the high parts, the rest first order.
    let p = fh * PI_HI;
    let t = fh.mul_add(PI_HI, -p);
    let t = fh.mul_add(PI_LO, t);
    let t = fl.mul_add(PI_HI, t);
    (p + t, odd)
}

/// Whether lane value `x` (as f64) takes the exact reduction: above `thr` and finite (the
/// vector path already gives NaN for ±inf). The vector code tests `thr < |x|` the same way.
#[inline]
fn big(x: f64, thr: f64) -> bool {
    x.abs() > thr && x.is_finite()
}

/// The slow path of f32 sin/cos for `len` lanes: where |x[i]| > `F32_FAST`, overwrite the
/// reduced argument r[i] and the sign word n[i] (only its low bit is used: the result is
/// negated when it is set). For cos, the bit is that of j + 1 (`traced::cos`).
///
/// # Safety
/// `x`, `r`, `n` valid for `len` elements.
unsafe fn fix_f32(x: *const f32, r: *mut f32, n: *mut u32, len: usize, cos: bool) {
    for i in 0..len {
        let xi = *x.add(i) as f64;
        if big(xi, F32_FAST) {
            let (ri, odd) = reduce_pi(xi, cos);
            *r.add(i) = ri as f32;
            *n.add(i) = (odd ^ cos) as u32;
        }
    }
}

/// As `fix_f32` for f64 lanes (threshold `F64_FAST`).
///
/// # Safety
/// `x`, `r`, `n` valid for `len` elements.
unsafe fn fix_f64(x: *const f64, r: *mut f64, n: *mut u64, len: usize, cos: bool) {
    for i in 0..len {
        let xi = *x.add(i);
        if big(xi, F64_FAST) {
            let (ri, odd) = reduce_pi(xi, cos);
            *r.add(i) = ri;
            *n.add(i) = (odd ^ cos) as u64;
        }
    }
}

/// `extern "C" fn(x, r, n, len)`: the helpers as the compiled code calls them.
pub(super) unsafe extern "C" fn sin_fix_f32(x: *const f32, r: *mut f32, n: *mut u32, len: usize) {
    fix_f32(x, r, n, len, false)
}
pub(super) unsafe extern "C" fn cos_fix_f32(x: *const f32, r: *mut f32, n: *mut u32, len: usize) {
    fix_f32(x, r, n, len, true)
}
pub(super) unsafe extern "C" fn sin_fix_f64(x: *const f64, r: *mut f64, n: *mut u64, len: usize) {
    fix_f64(x, r, n, len, false)
}
pub(super) unsafe extern "C" fn cos_fix_f64(x: *const f64, r: *mut f64, n: *mut u64, len: usize) {
    fix_f64(x, r, n, len, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against std (libm: its own exact reduction) on random f64 over the whole range, and
    /// the worst case of all doubles (closest to a multiple of pi/2).
    #[test]
    fn reduction_matches_libm() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut worst = 0.0f64;
        for i in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let x = f64::from_bits((s >> 1) % 0x7fef_ffff_ffff_ffff).max(1.0);
            let x = if i % 2 == 0 { x } else { -x };
            for half in [false, true] {
                let (r, odd) = reduce_pi(x, half);
                assert!(
                    r.abs() <= std::f64::consts::FRAC_PI_2 * (1.0 + 1e-15),
                    "{x:e}"
                );
                let sg = if odd ^ half { -1.0 } else { 1.0 };
                let (got, want) = if half {
                    (sg * r.sin(), x.cos())
                } else {
                    (sg * r.sin(), x.sin())
                };
                let err = (got - want).abs() / want.abs().max(1e-300);
                worst = worst.max(err);
                assert!(err < 5e-16, "x={x:e} half={half}: {got:e} vs {want:e}");
            }
        }
        // 6381956970095103 2^797, the double closest to an odd multiple of pi/2: cos(x) =
        // -4.6871659242546276e-19 (mpmath, 3000 bits; this libm's cos is 8 ulp off there).
        let x = 6381956970095103.0 * (2.0f64).powi(797);
        let (r, odd) = reduce_pi(x, true);
        let got = if odd { r.sin() } else { -r.sin() };
        let want = -4.6871659242546276e-19f64;
        assert!(
            (got - want).abs() <= f64::EPSILON * want.abs(),
            "{got:e} vs {want:e}"
        );
        let (r, odd) = reduce_pi(x, false);
        assert_eq!(if odd { -r.sin() } else { r.sin() }, 1.0);
        eprintln!("reduce_pi: max rel err {worst:.3e}");
    }
}
