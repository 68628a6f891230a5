//! Each function's error bounds and tests (the harness is `mod.rs`).

use super::*;

// Bounds (ulp of the correctly rounded result; f32 against f64 references, f64 against std f64).
const EXP_F32_ULP: f64 = 1.0;
const EXP_F64_ULP: f64 = 2.0;
const LN_F32_ULP: f64 = 2.0;
const LN_F64_ULP: f64 = 2.0;
/// f32 tanh (one rational function): over all inputs, i.e. near +-1 where the result's ulp is
/// 6e-8, the bound amounts to an absolute error <= 2.8e-7 (as XLA's / Eigen's rational tanh).
const TANH_F32_ULP: f64 = 4.6;
/// f32 tanh for |x| <= TANH_F32_SMALL_RANGE (|tanh x| < 0.5): relative error.
const TANH_F32_SMALL_ULP: f64 = 2.5;
const TANH_F32_SMALL_RANGE: f64 = 0.55;
const TANH_F64_ULP: f64 = 3.0;
const SIGMOID_F32_ULP: f64 = 2.5;
const SIGMOID_F64_ULP: f64 = 2.0;
const SINCOS_F32_ULP: f64 = 2.5;
const SINCOS_F64_ULP: f64 = 2.0;
/// sin/cos: absolute error accepted instead of ulp (results near zero).
const SINCOS_F32_ABS: f64 = 3e-7;
const SINCOS_F64_ABS: f64 = 1e-16;
/// f32 inputs closest to a multiple of pi (sin) and of pi/2 + k pi (cos) among all f32 above
/// the Cody–Waite range (found by scanning every f32 with `trig::reduce_pi`: |r| ~ 1.6e-9 ..
/// 1.3e-8, where an inexact reduction loses every bit).
const SIN_F32_HARD: [u32; 6] = [
    0x6ff9be45, 0x5123e87f, 0x7079be45, 0x51a3e87f, 0x70f9be45, 0x6a9976f1,
];
const COS_F32_HARD: [u32; 6] = [
    0x6f79be45, 0x50a3e87f, 0x6a1976f1, 0x53b146a6, 0x65898498, 0x77584625,
];
const POW_F32_ULP: f64 = 1.0;
/// f64 pow: ln |x| is a double-double, but its polynomial's own error (about 2^-60 of ln |x|)
/// is multiplied by y: 4 ulp is the measured worst case near |y ln x| ~ 700.
const POW_F64_ULP: f64 = 5.0;
const ERF_F32_ULP: f64 = 3.0;
const ERF_F64_ULP: f64 = 2.0;

#[test]
fn exp_f32() {
    unary32(
        Fun::Exp,
        "exp",
        f64::exp,
        f32::exp,
        &[(-104.0, 89.0), (-100.0, 100.0)],
        EXP_F32_ULP,
        0.0,
        f64::INFINITY,
    );
}

#[test]
fn exp_f64() {
    unary64(
        Fun::Exp,
        "exp",
        f64::exp,
        &[
            (-746.0, 710.0, false),
            (-1.0, 1.0, false),
            (1e-300, 1e3, true),
        ],
        &[709.78, 709.79, -745.1, -745.2, -708.4, -740.0],
        EXP_F64_ULP,
        0.0,
    );
}

#[test]
fn ln_f32() {
    unary32(
        Fun::Ln,
        "ln",
        f64::ln,
        f32::ln,
        &[(1e-30, 1e38), (0.5, 2.0), (1e-45, 1e-37)],
        LN_F32_ULP,
        0.0,
        f64::INFINITY,
    );
}

#[test]
fn ln_f64() {
    unary64(
        Fun::Ln,
        "ln",
        f64::ln,
        &[
            (1e-320, 1e308, true),
            (0.5, 2.0, false),
            (0.999, 1.001, false),
        ],
        &[],
        LN_F64_ULP,
        0.0,
    );
}

#[test]
fn tanh_f32() {
    unary32(
        Fun::Tanh,
        "tanh",
        f64::tanh,
        f32::tanh,
        &[(-10.0, 10.0), (-1.0, 1.0)],
        TANH_F32_ULP,
        0.0,
        f64::INFINITY,
    );
    let r = TANH_F32_SMALL_RANGE;
    unary32(
        Fun::Tanh,
        "tanh (small)",
        f64::tanh,
        f32::tanh,
        &[(-r, r), (-0.01, 0.01)],
        TANH_F32_SMALL_ULP,
        0.0,
        r,
    );
    // |tanh| <= 1 for every f32 in [1, 16) (the rational is clamped where it saturates)
    let xs: Vec<f32> = (1.0f32.to_bits()..16.0f32.to_bits())
        .map(f32::from_bits)
        .flat_map(|x| [x, -x])
        .collect();
    let got = run32(Fun::Tanh, &xs, &xs);
    for (x, t) in xs.iter().zip(&got) {
        assert!(t.abs() <= 1.0, "tanh({x:e}) = {t:e}");
    }
}

#[test]
fn tanh_f64() {
    unary64(
        Fun::Tanh,
        "tanh",
        f64::tanh,
        &[
            (-10.0, 10.0, false),
            (-1.0, 1.0, false),
            (1e-300, 50.0, true),
        ],
        &[0.5493, 0.54929, 0.54931, 19.0, 20.0, 21.0],
        TANH_F64_ULP,
        0.0,
    );
}

fn sigmoid32(x: f32) -> f32 {
    sigmoid_ref(x as f64) as f32
}

#[test]
fn sigmoid_f32() {
    unary32(
        Fun::Sigmoid,
        "sigmoid",
        sigmoid_ref,
        sigmoid32,
        &[(-10.0, 10.0), (-110.0, 30.0)],
        SIGMOID_F32_ULP,
        0.0,
        f64::INFINITY,
    );
}

#[test]
fn sigmoid_f64() {
    unary64(
        Fun::Sigmoid,
        "sigmoid",
        sigmoid_ref,
        &[
            (-10.0, 10.0, false),
            (-750.0, 40.0, false),
            (1e-300, 1e3, true),
        ],
        &[],
        SIGMOID_F64_ULP,
        0.0,
    );
}

/// sin/cos f32 over the whole range: every 97th f32, dense sweeps across the Cody–Waite
/// threshold, random huge values (log-uniform to f32::MAX, mixed with small ones in a vector),
/// and the inputs closest to the zeros (`SIN_F32_HARD`), all within the ulp bound.
fn sincos32(f: Fun, name: &str, reff: fn(f64) -> f64, std32: fn(f32) -> f32, hard: &[u32]) {
    let thr = crate::codegen::trig::F32_FAST;
    unary32(
        f,
        name,
        reff,
        std32,
        &[
            (-1e4, 1e4),
            (-10.0, 10.0),
            (thr - 2000.0, thr + 2000.0),
            (1e5, 1e6),
        ],
        SINCOS_F32_ULP,
        SINCOS_F32_ABS,
        f64::INFINITY,
    );
    let mut rng = Rng(0x51_7cc1);
    let mut xs: Vec<f32> = (0..1_000_000)
        .map(|i| match i % 4 {
            0 => rng.range(-4.0, 4.0) as f32,
            1 => rng.logrange(1e5, f32::MAX as f64) as f32,
            2 => -rng.logrange(thr, 1e12) as f32,
            _ => rng.logrange(1e-3, 1e38) as f32,
        })
        .collect();
    for &h in hard {
        let x = f32::from_bits(h);
        // the hard case and its neighbours, both signs, in every lane position
        for d in -2i32..=2 {
            let y = f32::from_bits((h as i32 + d) as u32);
            xs.extend([y, -y, 1.0, y, 3.0, -y, y, 0.5]);
        }
        let got = run32(f, &[x, -x], &[x, -x]);
        let want = reff(x as f64);
        let err = (got[0] as f64 - want).abs() / ulp32(want);
        eprintln!(
            "{name:>24}: hard case {x:e}: {:.3} ulp (|result| {want:.3e})",
            err
        );
    }
    let got = run32(f, &xs, &xs);
    let st = check32(&format!("{name} f32 random+hard"), &xs, &got, 0.0, |i| {
        reff(xs[i] as f64)
    });
    assert!(
        st.max_ulp_viol <= SINCOS_F32_ULP,
        "{name} f32: {:.3} ulp at {:e}",
        st.max_ulp,
        st.at_ulp
    );
    // regression: the 3-part Cody–Waite reduction gave sin(3e9) = -0.9996 (true 0.98704)
    let got = run32(f, &[3e9, -3e9, 1.0, 2.0], &[0.0; 4]);
    assert!(
        (got[0] as f64 - reff(3e9)).abs() <= 2.0 * ulp32(reff(3e9)),
        "{name}(3e9) = {}",
        got[0]
    );
}

#[test]
fn sin_f32() {
    sincos32(Fun::Sin, "sin", f64::sin, f32::sin, &SIN_F32_HARD);
}

#[test]
fn cos_f32() {
    sincos32(Fun::Cos, "cos", f64::cos, f32::cos, &COS_F32_HARD);
}

fn sincos64(f: Fun, name: &str, reff: fn(f64) -> f64) {
    unary64(
        f,
        name,
        reff,
        &[
            (-10.0, 10.0, false),
            (-1e4, 1e4, false),
            (1e-300, 1e9, true),
            (5e8, 3e9, false),
            (1e9, 1e308, true),
            (1e13, 1e17, true),
        ],
        &[
            1e22,
            3.14159265358979,
            1.5707963267948966,
            // the double closest to a multiple of pi/2
            6381956970095103.0 * (2.0f64).powi(797),
            f64::MAX,
            -f64::MAX,
            (2.0f64).powi(1023),
            1e14,
            1e15,
            4503599627370496.0,
            crate::codegen::trig::F64_FAST,
            -crate::codegen::trig::F64_FAST,
            crate::codegen::trig::F64_FAST * (1.0 + f64::EPSILON),
        ],
        SINCOS_F64_ULP,
        SINCOS_F64_ABS,
    );
}

#[test]
fn sin_f64() {
    sincos64(Fun::Sin, "sin", f64::sin);
}

#[test]
fn cos_f64() {
    sincos64(Fun::Cos, "cos", f64::cos);
}

#[test]
fn erf_f32() {
    unary32(
        Fun::Erf,
        "erf",
        erf_ref,
        |x| erf_ref(x as f64) as f32,
        &[(-5.0, 5.0), (-1.3, 1.3)],
        ERF_F32_ULP,
        0.0,
        f64::INFINITY,
    );
}

#[test]
fn erf_f64() {
    unary64(
        Fun::Erf,
        "erf",
        erf_ref,
        &[(-7.0, 7.0, false), (-1.3, 1.3, false), (1e-300, 10.0, true)],
        &[1.2, 1.1999999, 1.2000001, 5.93, 5.92, 6.0],
        ERF_F64_ULP,
        0.0,
    );
}

const LOG1P_F32_ULP: f64 = 2.0;
const LOG1P_F64_ULP: f64 = 1.5;
const EXPM1_F32_ULP: f64 = 1.5;
const EXPM1_F64_ULP: f64 = 2.0;

/// Inputs where `ln(1 + x)` / `exp(x) - 1` lose digits, and the edges of the ranges.
const NEAR_ZERO: [f64; 16] = [
    1e-30, -1e-30, 1e-8, -1e-8, 1e-4, -1e-4, -0.5, 0.5, -0.25, 0.34, -0.35, 1e-20, -0.999, 20.0,
    -20.0, 3e-39,
];

#[test]
fn log1p_f32() {
    unary32(
        Fun::Log1p,
        "log1p",
        f64::ln_1p,
        f32::ln_1p,
        &[(-0.999, 1.0), (-1e-3, 1e-3), (1.0, 1e6), (-1.0, -0.99)],
        LOG1P_F32_ULP,
        0.0,
        f64::INFINITY,
    );
    let xs: Vec<f32> = NEAR_ZERO.iter().map(|&x| x as f32).collect();
    let got = run32(Fun::Log1p, &xs, &xs);
    let st = check32("log1p f32 near 0", &xs, &got, 0.0, |i| {
        (xs[i] as f64).ln_1p()
    });
    assert!(st.max_ulp <= LOG1P_F32_ULP, "{st:?}");
}

#[test]
fn log1p_f64() {
    unary64(
        Fun::Log1p,
        "log1p",
        f64::ln_1p,
        &[
            (-0.999, 1.0, false),
            (-1e-3, 1e-3, false),
            (1e-300, 1e300, true),
            (-1.0, -0.99, false),
        ],
        &NEAR_ZERO,
        LOG1P_F64_ULP,
        0.0,
    );
}

#[test]
fn expm1_f32() {
    unary32(
        Fun::Expm1,
        "expm1",
        f64::exp_m1,
        f32::exp_m1,
        &[(-30.0, 89.0), (-1e-3, 1e-3), (-1.0, 1.0)],
        EXPM1_F32_ULP,
        0.0,
        f64::INFINITY,
    );
    let xs: Vec<f32> = NEAR_ZERO.iter().map(|&x| x as f32).collect();
    let got = run32(Fun::Expm1, &xs, &xs);
    let st = check32("expm1 f32 near 0", &xs, &got, 0.0, |i| {
        (xs[i] as f64).exp_m1()
    });
    assert!(st.max_ulp <= EXPM1_F32_ULP, "{st:?}");
}

#[test]
fn expm1_f64() {
    unary64(
        Fun::Expm1,
        "expm1",
        f64::exp_m1,
        &[
            (-60.0, 710.0, false),
            (-1.0, 1.0, false),
            (1e-300, 700.0, true),
            (-1e-3, 1e-3, false),
        ],
        &NEAR_ZERO,
        EXPM1_F64_ULP,
        0.0,
    );
}

/// pow special cases, checked exactly against std.
fn pow_special_inputs() -> Vec<(f64, f64)> {
    let vals = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        1.5,
        -1.5,
        0.25,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e-40,
        -1e-40,
        1e30,
        -1e30,
        4.0,
        -8.0,
    ];
    let mut v = Vec::new();
    for &x in &vals {
        for &y in &vals {
            v.push((x, y));
        }
    }
    v
}

#[test]
fn pow_f32() {
    // grid x in (0, 1e3] (log-spaced) and y in [-30, 30], plus negative x with integer y
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for i in 0..1500 {
        let x = (1e-3f64.ln() + (1e3f64.ln() - 1e-3f64.ln()) * i as f64 / 1499.0).exp() as f32;
        for j in 0..1201 {
            xs.push(x);
            ys.push((-30.0 + 60.0 * j as f64 / 1200.0) as f32);
        }
    }
    let mut rng = Rng(99);
    for _ in 0..400_000 {
        xs.push(-(rng.range(0.0, 20.0) as f32));
        ys.push((rng.range(-40.0, 40.0)).round() as f32);
        xs.push(rng.logrange(1e-45, 3e38) as f32);
        ys.push(rng.range(-3.0, 3.0) as f32);
    }
    // results in the subnormal / overflow boundary
    for i in 0..200_000 {
        xs.push(0.5 + i as f32 * 1e-6);
        ys.push(130.0 + (i % 100) as f32);
        xs.push(2.0 - i as f32 * 1e-6);
        ys.push(120.0 + (i % 10) as f32);
    }
    let got = run32(Fun::Pow, &xs, &ys);
    let st = check32("pow f32 grid+random", &xs, &got, 0.0, |i| {
        (xs[i] as f64).powf(ys[i] as f64)
    });
    assert!(st.max_ulp_viol <= POW_F32_ULP, "{st:?}");
    let sp = pow_special_inputs();
    let (x, y): (Vec<f32>, Vec<f32>) = sp.iter().map(|&(a, b)| (a as f32, b as f32)).unzip();
    let got = run32(Fun::Pow, &x, &y);
    for i in 0..x.len() {
        let w = x[i].powf(y[i]);
        if w.is_finite() && w != 0.0 {
            assert!(
                ((got[i] - w) as f64).abs() <= POW_F32_ULP * ulp32(w as f64),
                "pow({:e}, {:e}) = {:e}, want {w:e}",
                x[i],
                y[i],
                got[i]
            );
        } else {
            same32("pow", x[i], y[i], got[i], w);
        }
    }
}

#[test]
fn pow_f64() {
    let mut rng = Rng(1234);
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for _ in 0..500_000 {
        xs.push(rng.logrange(1e-3, 1e3));
        ys.push(rng.range(-30.0, 30.0));
        xs.push(rng.logrange(1e-300, 1e300));
        ys.push(rng.range(-2.0, 2.0));
    }
    for _ in 0..200_000 {
        xs.push(-rng.range(0.0, 20.0));
        ys.push(rng.range(-200.0, 200.0).round());
        // large |y ln x|: results near overflow/underflow
        let x = rng.logrange(0.5, 2.0);
        xs.push(x);
        ys.push(rng.range(-1.0, 1.0).signum() * 700.0 / x.ln().abs() * rng.range(0.9, 1.06));
    }
    let got = run64(Fun::Pow, &xs, &ys);
    let st = check64("pow f64 random", &xs, &got, 0.0, |i| xs[i].powf(ys[i]));
    let worst = (0..xs.len())
        .filter(|&i| got[i].is_finite())
        .max_by(|&i, &j| {
            let e = |k: usize| (got[k] - xs[k].powf(ys[k])).abs() / ulp64(xs[k].powf(ys[k]));
            e(i).total_cmp(&e(j))
        });
    if let Some(i) = worst {
        eprintln!(
            "pow f64 worst: x={:e} y={:e} got {:e} want {:e}",
            xs[i],
            ys[i],
            got[i],
            xs[i].powf(ys[i])
        );
    }
    assert!(st.max_ulp_viol <= POW_F64_ULP, "{st:?}");
    let sp = pow_special_inputs();
    let (x, y): (Vec<f64>, Vec<f64>) = sp.into_iter().unzip();
    let got = run64(Fun::Pow, &x, &y);
    for i in 0..x.len() {
        let w = x[i].powf(y[i]);
        if w.is_finite() && w != 0.0 {
            assert!(
                ((got[i] - w) as f64).abs() <= POW_F64_ULP * ulp64(w as f64),
                "pow({:e}, {:e}) = {:e}, want {w:e}",
                x[i],
                y[i],
                got[i]
            );
        } else {
            same64("pow", x[i], y[i], got[i], w);
        }
    }
}

/// Code size of each f32 / f64 kernel (loop included), printed for the doc table.
#[test]
fn code_sizes() {
    for f in [
        Fun::Exp,
        Fun::Ln,
        Fun::Tanh,
        Fun::Sigmoid,
        Fun::Sin,
        Fun::Cos,
        Fun::Pow,
        Fun::Erf,
    ] {
        let (_, s32) = compile(f, types::F32X4);
        let (_, s64) = compile(f, types::F64X2);
        eprintln!("{f:?}: f32x4 kernel {s32} B, f64x2 kernel {s64} B");
    }
}

// ---------------------------------------------------------------------------------------------
// Micro-kernels (micro.rs): bit-identical to the inline Cranelift functions
// ---------------------------------------------------------------------------------------------

fn micro_pairs() -> [(Fun, crate::ir::UnaryOp); 9] {
    use crate::ir::UnaryOp as U;
    [
        (Fun::Exp, U::Exp),
        (Fun::Ln, U::Ln),
        (Fun::Tanh, U::Tanh),
        (Fun::Sigmoid, U::Sigmoid),
        (Fun::Sin, U::Sin),
        (Fun::Cos, U::Cos),
        (Fun::Erf, U::Erf),
        (Fun::Log1p, U::Log1p),
        (Fun::Expm1, U::Expm1),
    ]
}

fn same_bits(f: Fun, x: f32, got: f32, want: f32) {
    assert!(
        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
        "{f:?}({x:e} = {:#x}): micro {got:e}, inline {want:e}",
        x.to_bits()
    );
}

/// Every micro-kernel (at every level this CPU has) gives the inline function's bits on every
/// 97th f32, the special values and dense sweeps; so the error table of `math.rs` holds for it.
#[test]
fn micro_kernels_match_inline() {
    use crate::codegen::micro::{self, Isa as Level};
    let mut xs = all_f32(97);
    xs.extend(specials32());
    xs.extend(linspace32(-12.0, 12.0, 200_003));
    xs.extend(linspace32(-110.0, 100.0, 100_003));
    xs.extend(linspace32(-1e5, 1e5, 100_003));
    // vectors mixing huge lanes (exact reduction) and small ones, at every lane position
    let mut rng = Rng(3);
    xs.extend((0..100_003).map(|i| {
        if i % 5 == 0 {
            rng.logrange(1e4, 3e38) as f32
        } else {
            rng.range(-100.0, 100.0) as f32
        }
    }));
    let mut tested = 0;
    for (f, op) in micro_pairs() {
        let want = run32(f, &xs, &xs);
        for level in [Level::Avx2, Level::Avx512] {
            let Some(k) = micro::kernel_at(level, op) else {
                continue;
            };
            tested += 1;
            let mut got = vec![0.0f32; xs.len()];
            unsafe { k(xs.as_ptr(), got.as_mut_ptr(), xs.len()) };
            for i in 0..xs.len() {
                same_bits(f, xs[i], got[i], want[i]);
            }
            // Every length up to 3 vectors, in place, at an unaligned start.
            for n in 0..50 {
                let mut buf: Vec<f32> = xs[1000..1001 + n].to_vec();
                unsafe { k(buf.as_ptr().add(1), buf.as_mut_ptr().add(1), n) };
                for i in 0..n {
                    same_bits(f, xs[1001 + i], buf[1 + i], want[1001 + i]);
                }
                assert_eq!(buf[0].to_bits(), xs[1000].to_bits());
            }
        }
    }
    eprintln!(
        "micro-kernels checked: {tested} (detected {:?}, in use {:?})",
        Level::detected(),
        crate::codegen::Target::host().isa
    );
    if Level::detected() >= Level::Avx2 {
        assert!(tested >= 9);
    }
}
