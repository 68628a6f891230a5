//! The inverse error function in f64, for `random::normal`.
//!
//! Start: M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011),
//! single-precision polynomials (relative error about 4e-7 over the range f32
//! arguments reach, `w = -ln(1 - y^2) < 16.5`). There two Halley steps on
//! `erf(x) = y` (on `erfc(x) = 1 - y` for `y > 1/2`, where `1 - y` is exact and `erf`
//! would cancel) cube the error twice. Beyond it (f64 arguments closer to ±1 than
//! 2^-24) the start is only a few digits good: Newton steps on `ln erfc(x) = ln(1 - y)`
//! (nearly linear there) converge first, then one Halley step on `erfc` settles the
//! last bits. The result is as accurate as `libm`'s erf and erfc (a few ulp,
//! tested against 40-digit values). Only `libm` (portable Rust) is called, so the
//! values are the same on every machine.

const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;

/// `erfinv(y)` for `y` in `[-1, 1]` (±1 give ±inf, anything else NaN).
pub fn erfinv(y: f64) -> f64 {
    let t = y.abs();
    if t >= 1.0 || t.is_nan() {
        return if t == 1.0 {
            f64::INFINITY.copysign(y)
        } else {
            f64::NAN
        };
    }
    if t == 0.0 {
        return y;
    }
    let w = -libm::log((1.0 - t) * (1.0 + t));
    let mut a = giles(t, w);
    if t <= 0.5 {
        for _ in 0..2 {
            a = halley(a, libm::erf(a) - t);
        }
        return a.copysign(y);
    }
    // 1 - t is exact for t >= 0.5 (Sterbenz).
    let q = 1.0 - t;
    let steps = if w < 16.5 {
        2
    } else {
        let lq = libm::log(q);
        for _ in 0..32 {
            // h(a) = ln erfc(a) - ln q, h' = -erfc'(a) / erfc(a): a -= h / h'.
            let e = libm::erfc(a);
            let step = (libm::log(e) - lq) * e / (TWO_OVER_SQRT_PI * libm::exp(-a * a));
            a += step;
            if step.abs() <= 1e-12 * a || step.is_nan() {
                break;
            }
        }
        1
    };
    for _ in 0..steps {
        // f(a) = erf(a) - t = q - erfc(a).
        a = halley(a, q - libm::erfc(a));
    }
    a.copysign(y)
}

/// One Halley step for `erf(a) - t = 0` given `f = erf(a) - t`: `f' = 2/sqrt(pi) e^(-a^2)`
/// and `f'' = -2a f'`, so `a - f / (f' - f f'' / 2f') = a - f / (f' + a f)`.
fn halley(a: f64, f: f64) -> f64 {
    let d = TWO_OVER_SQRT_PI * libm::exp(-a * a);
    a - f / (d + a * f)
}

/// Giles' single-precision approximation of `erfinv(t)`, `0 < t < 1`, given
/// `w = -ln((1 - t)(1 + t))`.
fn giles(t: f64, w: f64) -> f64 {
    let p = if w < 5.0 {
        let w = w - 2.5;
        let mut p = 2.810_226_36e-08;
        for c in [
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ] {
            p = c + p * w;
        }
        p
    } else {
        let w = libm::sqrt(w) - 3.0;
        let mut p = -0.000_200_214_257;
        for c in [
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ] {
            p = c + p * w;
        }
        p
    };
    p * t
}
