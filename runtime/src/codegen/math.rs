//! The transcendental functions and pow: their methods, coefficients and measured errors.
//! exp, ln, log1p, expm1, tanh, sigmoid, erf, sin, cos and pow are defined once in `traced/`
//! (generic code every backend lowers: `lower_traced.rs` for Cranelift, `x86/body/inline.rs`
//! for the x86 kernels) with the coefficients here. No libm calls: range reduction with integer bit tricks on the lanes,
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
//! | pow | 0.77 ulp | x in [1e-3, 1e3] (1500 log-spaced) × y in [-30, 30] (1201); x<0 with integer y; random x in [1e-45, 3e38], y in [-3, 3]; over/underflow edges | 4 ulp (see below) | x in [1e-3,1e3] × y in [-30,30]; x in [1e-300,1e300] × y in [-2,2]; x<0 integer y; \|y ln x\| up to ~740 |
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
//!   values). On the lane type itself, without tables: ln |x| as a sum of two lane values
//!   (s = f/(2+f), s^2, s^3 and Q's constant term carried as sums), y ln |x| as another, e^t
//!   of that sum with r = t - k ln 2 kept as a sum and only the final 1 + (e^r - 1) rounded.
//!   f64's error grows with |y ln x| (the ln polynomial's own 2^-60, times y): 4 ulp measured
//!   near |y ln x| ~ 700, i.e. near overflow/underflow.
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
//! cos 592/832, erf 1520/2768 (pow is larger: about 220 operations).

pub(super) const LN2: f64 = std::f64::consts::LN_2;
/// ln 2 - (ln 2 rounded to f64).
const LN2_LO_F64: f64 = 2.319046813846299558e-17;
pub(super) const LOG2E: f64 = std::f64::consts::LOG2_E;
/// Cody-Waite split of pi: pi rounded to f64, the next part, the next. (The f32 parts are
/// computed from these and rounded; see `pi_parts_f32`.) All three parts are positive, so
/// that j = +0 keeps r = x = -0 exact.
const PI_F64: [f64; 3] = [
    3.141592653589793116,
    1.224646799147353e-16,
    2.165713347843828e-32,
];

/// ln 2 as f32 and the rest.
pub(super) fn ln2_parts_f32() -> (f64, f64) {
    let hi = LN2 as f32 as f64;
    (hi, LN2 - hi)
}

/// ln 2 as f64 and the rest.
pub(super) fn ln2_parts_f64() -> (f64, f64) {
    (LN2, LN2_LO_F64)
}

/// Exact pi as a double-double (PI_F64[0] + PI_F64[1]), split into f32 parts each rounded
/// toward zero, so all parts are positive (then j = +0 keeps r = x = -0).
pub(super) fn pi_parts_f32() -> [f64; 3] {
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

pub(super) fn pi_parts_f64() -> [f64; 3] {
    PI_F64
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
