//! Accuracy and special-value tests for `codegen::math`: each function is JIT-compiled into a
//! vector loop and compared with Rust's f64 functions over wide sweeps.
//! Run with `--nocapture` to see the measured maxima (they feed the table in math.rs).
//!
//! This file is the harness (the functions compiled into a loop, the error statistics, the
//! inputs, the double-double references); `functions.rs` holds each function's bounds and
//! tests.

mod functions;

use super::lower_traced;
use super::traced::Function;
use crate::ir::UnaryOp as U;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, BlockArg, InstBuilder, MemFlagsData, Type};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Module};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fun {
    Exp,
    Ln,
    Tanh,
    Sigmoid,
    Sin,
    Cos,
    Pow,
    Erf,
    Log1p,
    Expm1,
}

/// Compiles `out[i] = f(x[i], y[i])` over vectors of `ty`; returns the entry point and the code size.
fn compile(f: Fun, ty: Type) -> (usize, usize) {
    let mut fb = settings::builder();
    fb.set("opt_level", "speed").unwrap();
    fb.set("is_pic", "false").unwrap();
    let isa = cranelift_native::builder()
        .unwrap()
        .finish(settings::Flags::new(fb))
        .unwrap();
    let jb = JITBuilder::with_isa(isa, default_libcall_names());
    let mut module = JITModule::new(jb);
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut sig = module.make_signature();
    for _ in 0..4 {
        sig.params.push(AbiParam::new(types::I64));
    }
    ctx.func.signature = sig.clone();
    let esize: i64 = if ty == types::F32X4 { 4 } else { 8 };
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let p = b.block_params(entry).to_vec();
        let (px, py, po, n) = (p[0], p[1], p[2], p[3]);
        let body = b.create_block();
        let done = b.create_block();
        let i = b.append_block_param(body, types::I64);
        let zero = b.ins().iconst(types::I64, 0);
        let go = b.ins().icmp_imm_s(IntCC::SignedGreaterThan, n, 0);
        b.ins().brif(go, body, &[BlockArg::Value(zero)], done, &[]);
        b.switch_to_block(body);
        let off = b.ins().imul_imm_s(i, esize);
        let ax = b.ins().iadd(px, off);
        let ay = b.ins().iadd(py, off);
        let ao = b.ins().iadd(po, off);
        let mf = MemFlagsData::new().with_notrap();
        let x = b.ins().load(ty, mf, ax, 0);
        let y = b.ins().load(ty, mf, ay, 0);
        let r = match f {
            Fun::Exp => lower_traced::call(&mut b, U::Exp, &[x]),
            Fun::Ln => lower_traced::call(&mut b, U::Ln, &[x]),
            Fun::Tanh => lower_traced::call(&mut b, U::Tanh, &[x]),
            Fun::Sigmoid => lower_traced::call(&mut b, U::Sigmoid, &[x]),
            Fun::Sin => lower_traced::call(&mut b, U::Sin, &[x]),
            Fun::Cos => lower_traced::call(&mut b, U::Cos, &[x]),
            Fun::Pow => lower_traced::call(&mut b, Function::Pow, &[x, y]),
            Fun::Erf => lower_traced::call(&mut b, U::Erf, &[x]),
            Fun::Log1p => lower_traced::call(&mut b, U::Log1p, &[x]),
            Fun::Expm1 => lower_traced::call(&mut b, U::Expm1, &[x]),
        };
        b.ins().store(mf, r, ao, 0);
        let lanes = 16 / esize;
        let i2 = b.ins().iadd_imm_s(i, lanes);
        let more = b.ins().icmp(IntCC::SignedLessThan, i2, n);
        b.ins().brif(more, body, &[i2.into()], done, &[]);
        b.switch_to_block(done);
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(module.target_config());
    }
    let id = module.declare_anonymous_function(&sig).unwrap();
    module.define_function(id, &mut ctx).unwrap();
    let size = ctx.compiled_code().unwrap().code_info().total_size as usize;
    module.clear_context(&mut ctx);
    module.finalize_definitions().unwrap();
    let ptr = module.get_finalized_function(id) as usize;
    // Keep the code alive for the whole test process.
    Box::leak(Box::new(module));
    (ptr, size)
}

fn run32(f: Fun, x: &[f32], y: &[f32]) -> Vec<f32> {
    let (ptr, _) = compile(f, types::F32X4);
    let k: extern "C" fn(*const f32, *const f32, *mut f32, i64) =
        unsafe { std::mem::transmute(ptr) };
    let n = x.len().div_ceil(4) * 4;
    let mut xp = x.to_vec();
    xp.resize(n, 1.0);
    let mut yp = y.to_vec();
    yp.resize(n, 1.0);
    let mut out = vec![0.0f32; n];
    k(xp.as_ptr(), yp.as_ptr(), out.as_mut_ptr(), n as i64);
    out.truncate(x.len());
    out
}

fn run64(f: Fun, x: &[f64], y: &[f64]) -> Vec<f64> {
    let (ptr, _) = compile(f, types::F64X2);
    let k: extern "C" fn(*const f64, *const f64, *mut f64, i64) =
        unsafe { std::mem::transmute(ptr) };
    let n = x.len().div_ceil(2) * 2;
    let mut xp = x.to_vec();
    xp.resize(n, 1.0);
    let mut yp = y.to_vec();
    yp.resize(n, 1.0);
    let mut out = vec![0.0f64; n];
    k(xp.as_ptr(), yp.as_ptr(), out.as_mut_ptr(), n as i64);
    out.truncate(x.len());
    out
}

// ---------------------------------------------------------------------------------------------
// Error measurement
// ---------------------------------------------------------------------------------------------

/// ulp of the f32 grid at |r| (subnormal spacing below MIN_POSITIVE).
fn ulp32(r: f64) -> f64 {
    let a = r.abs().max(f32::MIN_POSITIVE as f64);
    let e = a.log2().floor();
    let mut u = (2.0f64).powf(e - 23.0);
    // log2 rounding near powers of two
    if (2.0f64).powf(e) > a {
        u *= 0.5;
    }
    u
}

fn ulp64(r: f64) -> f64 {
    let a = r.abs().max(f64::MIN_POSITIVE);
    let bits = a.to_bits() & 0x7ff0_0000_0000_0000;
    f64::from_bits(bits) * f64::EPSILON
}

/// Running maxima; `abs_ok` lets results whose absolute error is below it pass the ulp check
/// (used near zeros of tanh/sigmoid/sin/cos, where the bound is absolute).
#[derive(Default, Debug)]
struct Stats {
    /// max ulp error over all points (reported)
    max_ulp: f64,
    at_ulp: f64,
    /// max ulp error over points whose absolute error exceeds `abs_ok` (asserted)
    max_ulp_viol: f64,
    max_rel: f64,
    max_abs: f64,
    n: usize,
}

impl Stats {
    fn add(&mut self, x: f64, got: f64, want: f64, ulp: f64, abs_ok: f64) {
        self.n += 1;
        if want.is_nan() {
            assert!(got.is_nan(), "x={x:e}: got {got:e}, want NaN");
            return;
        }
        if want.is_infinite() || got.is_infinite() {
            assert_eq!(got, want, "x={x:e}: got {got:e}, want {want:e}");
            return;
        }
        assert!(got.is_finite(), "x={x:e}: got {got:e}, want {want:e}");
        let d = (got - want).abs();
        let u = d / ulp;
        if u > self.max_ulp {
            self.max_ulp = u;
            self.at_ulp = x;
        }
        if d > abs_ok {
            self.max_ulp_viol = self.max_ulp_viol.max(u);
        }
        if want != 0.0 {
            self.max_rel = self.max_rel.max(d / want.abs());
        }
        self.max_abs = self.max_abs.max(d);
    }
}

/// Compare f32 results with an f64 reference. The reference is rounded to f32 first when it
/// leaves the f32 range (so overflow must give inf and underflow 0/subnormals).
fn check32(name: &str, xs: &[f32], got: &[f32], abs_ok: f64, reff: impl Fn(usize) -> f64) -> Stats {
    let mut st = Stats::default();
    for (i, (&x, &g)) in xs.iter().zip(got).enumerate() {
        let w = reff(i);
        let w32 = w as f32;
        let w = if w32.is_infinite() || w.is_nan() {
            w32 as f64
        } else {
            w
        };
        st.add(x as f64, g as f64, w, ulp32(w), abs_ok);
    }
    eprintln!(
        "{name:>24}: n={:>9} max {:.3} ulp (at {:e}), max rel {:.3e}, max abs {:.3e}",
        st.n, st.max_ulp, st.at_ulp, st.max_rel, st.max_abs
    );
    st
}

fn check64(name: &str, xs: &[f64], got: &[f64], abs_ok: f64, reff: impl Fn(usize) -> f64) -> Stats {
    let mut st = Stats::default();
    for (i, (&x, &g)) in xs.iter().zip(got).enumerate() {
        let w = reff(i);
        st.add(x, g, w, ulp64(w), abs_ok);
    }
    eprintln!(
        "{name:>24}: n={:>9} max {:.3} ulp (at {:e}), max rel {:.3e}, max abs {:.3e}",
        st.n, st.max_ulp, st.at_ulp, st.max_rel, st.max_abs
    );
    st
}

/// Exact-match check of special values: same NaN-ness, same value, same sign (also for zeros).
fn same32(what: &str, x: f32, y: f32, got: f32, want: f32) {
    let ok = if want.is_nan() {
        got.is_nan()
    } else {
        got == want && got.is_sign_negative() == want.is_sign_negative()
    };
    assert!(ok, "{what}({x:e}, {y:e}): got {got:e}, want {want:e}");
}

fn same64(what: &str, x: f64, y: f64, got: f64, want: f64) {
    let ok = if want.is_nan() {
        got.is_nan()
    } else {
        got == want && got.is_sign_negative() == want.is_sign_negative()
    };
    assert!(ok, "{what}({x:e}, {y:e}): got {got:e}, want {want:e}");
}

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

/// Every `stride`-th finite f32 bit pattern, both signs.
fn all_f32(stride: usize) -> Vec<f32> {
    let mut v = Vec::new();
    for b in (0u32..0x7f80_0000).step_by(stride) {
        v.push(f32::from_bits(b));
        v.push(-f32::from_bits(b));
    }
    v
}

fn linspace32(a: f64, b: f64, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (a + (b - a) * i as f64 / (n - 1) as f64) as f32)
        .collect()
}

/// Deterministic xorshift for pseudo-random f64 samples.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.unit()
    }
    /// log-uniform magnitude in [lo, hi]
    fn logrange(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + (hi.ln() - lo.ln()) * self.unit()).exp()
    }
}

fn specials32() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::from_bits(0x0012_3456),
        -f32::from_bits(0x0012_3456),
        f32::MAX,
        f32::MIN,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
    ];
    v.resize(v.len().div_ceil(4) * 4, 1.0);
    v
}

fn specials64() -> Vec<f64> {
    vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        f64::from_bits(1),
        -f64::from_bits(1),
        f64::from_bits(0x0001_2345_6789_abcd),
        -f64::from_bits(0x0001_2345_6789_abcd),
        f64::MAX,
        f64::MIN,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
    ]
}

// ---------------------------------------------------------------------------------------------
// Reference erf (no erf in std): Taylor series in double-double for |x| <= 3, continued fraction
// for erfc beyond. Accurate to well below one f64 ulp on the tested ranges.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct Dd(f64, f64);
fn two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    let bb = s - a;
    Dd(s, (a - (s - bb)) + (b - bb))
}
fn dd_add(a: Dd, b: Dd) -> Dd {
    let s = two_sum(a.0, b.0);
    let t = s.1 + a.1 + b.1;
    two_sum(s.0, t)
}
fn dd_mul(a: Dd, b: Dd) -> Dd {
    let p = a.0 * b.0;
    let e = a.0.mul_add(b.0, -p) + (a.0 * b.1 + a.1 * b.0);
    two_sum(p, e)
}
fn dd_div_f(a: Dd, d: f64) -> Dd {
    let q = a.0 / d;
    let r = dd_add(a, dd_mul(Dd(q, 0.0), Dd(-d, 0.0)));
    two_sum(q, r.0 / d)
}

fn erf_ref(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a <= 3.0 {
        // erf(a) = 2/sqrt(pi) sum_n (-1)^n a^(2n+1) / (n! (2n+1))
        let z = dd_mul(Dd(a, 0.0), Dd(a, 0.0));
        let mut term = Dd(a, 0.0); // a^(2n+1)/n!
        let mut sum = Dd(0.0, 0.0);
        let mut n = 0.0f64;
        loop {
            let t = dd_div_f(term, 2.0 * n + 1.0);
            let t = if (n as u64) % 2 == 1 {
                Dd(-t.0, -t.1)
            } else {
                t
            };
            sum = dd_add(sum, t);
            if t.0.abs() < 1e-36 {
                break;
            }
            n += 1.0;
            term = dd_div_f(dd_mul(term, z), n);
        }
        // 2/sqrt(pi) as double-double
        let c = Dd(1.1283791670955126, 1.533545961316588e-17);
        let p = dd_mul(sum, c);
        p.0 + p.1
    } else if a < 27.0 {
        // erfc(a) = exp(-a^2)/sqrt(pi) * 1/(a + 1/2/(a + 1/(a + 3/2/(a + 2/(a + ...)))))
        let mut f = a;
        for k in (1..200).rev() {
            f = a + (k as f64 / 2.0) / f;
        }
        let hi = a * a;
        let lo = a.mul_add(a, -hi);
        let e = (-hi).exp() * (1.0 - lo);
        1.0 - e / (f * std::f64::consts::PI.sqrt())
    } else {
        1.0
    };
    if x.is_sign_negative() {
        -r
    } else {
        r
    }
}

fn sigmoid_ref(x: f64) -> f64 {
    if x < 0.0 {
        let e = x.exp();
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + (-x).exp())
    }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

/// One f32 unary function: strided sweep over all finite f32, dense sweeps, special values;
/// only inputs with |x| <= `limit` are compared (a bound claimed on a sub-range).
fn unary32(
    f: Fun,
    name: &str,
    reff: fn(f64) -> f64,
    std32: fn(f32) -> f32,
    dense: &[(f64, f64)],
    max_ulp: f64,
    abs_ok: f64,
    limit: f64,
) -> Stats {
    let mut worst = Stats::default();
    let mut sweeps: Vec<(String, Vec<f32>)> = vec![("all f32 /97".into(), all_f32(97))];
    for &(a, b) in dense {
        sweeps.push((format!("[{a:e},{b:e}]"), linspace32(a, b, 1_000_003)));
    }
    for (label, xs) in sweeps {
        let xs: Vec<f32> = xs
            .into_iter()
            .filter(|x| x.is_nan() || (x.abs() as f64) <= limit)
            .collect();
        let got = run32(f, &xs, &xs);
        let st = check32(&format!("{name} f32 {label}"), &xs, &got, abs_ok, |i| {
            reff(xs[i] as f64)
        });
        assert!(
            st.max_ulp_viol <= max_ulp,
            "{name} f32 {label}: {:.3} ulp at {:e} > {max_ulp}",
            st.max_ulp,
            st.at_ulp
        );
        if st.max_ulp > worst.max_ulp {
            worst.max_ulp = st.max_ulp;
            worst.at_ulp = st.at_ulp;
        }
        worst.max_rel = worst.max_rel.max(st.max_rel);
        worst.max_abs = worst.max_abs.max(st.max_abs);
    }
    let sp = specials32();
    let got = run32(f, &sp, &sp);
    for (&x, &g) in sp.iter().zip(&got).filter(|p| (p.0.abs() as f64) <= limit) {
        let w = std32(x);
        if w.is_nan() || w.is_infinite() || w == 0.0 || x.is_infinite() || x == 0.0 {
            same32(name, x, x, g, w);
        } else {
            let d = (g as f64 - reff(x as f64)).abs();
            assert!(
                d <= max_ulp * ulp32(reff(x as f64)) || d <= abs_ok,
                "{name}({x:e}) = {g:e}, want {w:e}"
            );
        }
    }
    worst
}

fn unary64(
    f: Fun,
    name: &str,
    reff: fn(f64) -> f64,
    ranges: &[(f64, f64, bool)],
    extra: &[f64],
    max_ulp: f64,
    abs_ok: f64,
) -> Stats {
    let mut worst = Stats::default();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for &(a, b, log) in ranges {
        let xs: Vec<f64> = (0..400_000)
            .map(|i| {
                if log {
                    let m = rng.logrange(a, b);
                    if i % 2 == 0 {
                        m
                    } else {
                        -m
                    }
                } else {
                    rng.range(a, b)
                }
            })
            .collect();
        let got = run64(f, &xs, &xs);
        let st = check64(
            &format!("{name} f64 [{a:e},{b:e}]{}", if log { " log±" } else { "" }),
            &xs,
            &got,
            abs_ok,
            |i| reff(xs[i]),
        );
        assert!(
            st.max_ulp_viol <= max_ulp,
            "{name} f64: {:.3} ulp at {:e} > {max_ulp}",
            st.max_ulp,
            st.at_ulp
        );
        if st.max_ulp > worst.max_ulp {
            worst.max_ulp = st.max_ulp;
            worst.at_ulp = st.at_ulp;
        }
        worst.max_rel = worst.max_rel.max(st.max_rel);
    }
    let mut sp = specials64();
    sp.extend_from_slice(extra);
    let got = run64(f, &sp, &sp);
    for (&x, &g) in sp.iter().zip(&got) {
        let w = reff(x);
        if w.is_nan() || w.is_infinite() || w == 0.0 || x.is_infinite() || x == 0.0 {
            same64(name, x, x, g, w);
        } else {
            let d = (g - w).abs();
            assert!(
                d <= max_ulp * ulp64(w) || d <= abs_ok,
                "{name}({x:e}) = {g:e}, want {w:e}"
            );
        }
    }
    worst
}
