//! Property tests: random shapes, axes and dtypes thrown at every op family.
//! Each case runs three ways: eagerly on concrete tensors, traced,
//! and (when the trace succeeds) compiled and compared with the interpreter.
//! The property: either every way gives the same correct result, or eager and
//! traced both fail with the same Shape/DType error naming the op and the
//! user's source line. Any other panic (index out of bounds, unwrap on None,
//! overflow...) is a bug in jitfuse.
//!
//! A small model of each op (written from the documented semantics, not from
//! the implementation) says which cases must succeed and with what type, and
//! a few value oracles encode the deliberate decisions (integer division by
//! zero is -1, out-of-range `take` indices clamp, `one_hot` of an
//! out-of-range index is a zero row).

use crate::common::{assert_close, Tol, EXACT};
use jitfuse::internals::exec::Executable;
use jitfuse::internals::ir::UnaryOp;
use jitfuse::internals::trace::{trace, ParamSpec};
use jitfuse::internals::{interpret, ir};
use jitfuse::{DType, ErrorKind, Slice, Tensor};
use proptest::collection::vec as pvec;
use proptest::prelude::*;
use proptest::sample::select as pick;
use proptest::test_runner::{Config, TestCaseError};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

const CASES: u32 = 48;

/// `PROPTEST_CASES=2000` for a deeper search.
fn cfg() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES);
    // CI runs a fixed seed, so a submission's result does not depend on the
    // draw; `PROPTEST_SEED=random` (or a number) explores further.
    let rng_seed = match std::env::var("PROPTEST_SEED").ok().as_deref() {
        Some("random") => proptest::test_runner::RngSeed::Random,
        Some(v) => proptest::test_runner::RngSeed::Fixed(v.parse().unwrap_or(20261130)),
        None => proptest::test_runner::RngSeed::Fixed(20261130),
    };
    Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4096,
        rng_seed,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------
// Running one case three ways

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Run `f` with this thread's panic messages silenced (the expected errors
/// of eager ops are panics; their payload is checked, not printed).
fn quietly<R>(f: impl FnOnce() -> R) -> R {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                prev(info)
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            QUIET.with(|q| q.set(false));
        }
    }
    let _reset = Reset;
    f()
}

fn payload_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "<non-string panic payload>".into())
}

/// The type of one output: shape and dtype.
type Ty = (Vec<usize>, DType);

fn ty(t: &Tensor) -> Ty {
    (t.shape().to_vec(), t.dtype())
}

/// Run `f` eagerly, traced, and compiled. `expect` is the model's verdict:
/// `Some(types)` (must succeed with these output types) or `None` (must fail
/// with an error naming one of `names`). Returns the eager outputs.
fn run_case(
    names: &[&str],
    inputs: &[Tensor],
    expect: Option<Vec<Ty>>,
    tol: Tol,
    f: &dyn Fn(&[Tensor]) -> Vec<Tensor>,
) -> Result<Option<Vec<Tensor>>, TestCaseError> {
    // The oracle: the ops evaluated by the reference interpreter.
    let eager = quietly(|| {
        catch_unwind(AssertUnwindSafe(|| {
            jitfuse::eager::interpreted(|| f(inputs))
        }))
    });
    let specs: Vec<ParamSpec> = inputs
        .iter()
        .map(|t| ParamSpec {
            shape: t.shape().to_vec(),
            dtype: t.dtype(),
            weak: false,
        })
        .collect();
    let traced = quietly(|| catch_unwind(AssertUnwindSafe(|| trace(&specs, |ts| f(ts)))));
    let traced = match traced {
        Ok(r) => r,
        Err(p) => {
            return Err(TestCaseError::fail(format!(
                "trace() itself panicked: {}",
                payload_text(&*p)
            )))
        }
    };
    match (eager, traced) {
        (Ok(outs), Ok(tr)) => {
            let got_types: Vec<Ty> = outs.iter().map(ty).collect();
            match &expect {
                Some(want) => prop_assert_eq!(&got_types, want, "eager output types"),
                None => prop_assert!(
                    false,
                    "the model expects an error, but eager gave {:?}",
                    got_types
                ),
            }
            let g = &tr.graph;
            ir::verify(g).map_err(|e| {
                TestCaseError::fail(format!("traced graph does not verify: {e}\n{g}"))
            })?;
            let graph_types: Vec<Ty> = g
                .outputs
                .iter()
                .map(|&o| (g.node(o).shape.clone(), g.node(o).dtype))
                .collect();
            prop_assert_eq!(&graph_types, &got_types, "traced output types\n{}", g);
            let want = interpret::eval_graph(g, inputs, &tr.captured)
                .map_err(|e| TestCaseError::fail(format!("interpreter: {e}\n{g}")))?;
            for (k, (e, w)) in outs.iter().zip(&want).enumerate() {
                assert_close(
                    e,
                    w,
                    EXACT,
                    &format!("eager vs interpreted graph, output {k}\n{g}"),
                );
            }
            let exe = Executable::from_graph(g.clone(), tr.captured.clone())
                .map_err(|e| TestCaseError::fail(format!("compile: {e}\n{g}")))?;
            let refs: Vec<&Tensor> = inputs.iter().collect();
            let got = exe
                .run_with(&refs)
                .map_err(|e| TestCaseError::fail(format!("run: {e}\n{g}")))?;
            prop_assert_eq!(got.len(), want.len());
            for (k, (c, w)) in got.iter().zip(&want).enumerate() {
                assert_close(
                    c,
                    w,
                    tol,
                    &format!(
                        "compiled vs interpreter, output {k}\n{g}\n{}",
                        exe.kernels_text()
                    ),
                );
            }
            check_downstream(inputs, tol, f)?;
            Ok(Some(outs))
        }
        (Err(p), Err(e)) => {
            let msg = payload_text(&*p);
            prop_assert!(
                expect.is_none(),
                "the model expects {:?}, but the op failed: {}",
                expect,
                msg
            );
            prop_assert!(
                matches!(e.kind, ErrorKind::Shape | ErrorKind::DType),
                "traced error of kind {:?} (not Shape/DType): {}",
                e.kind,
                e
            );
            prop_assert_eq!(&msg, &e.to_string(), "eager and traced errors differ");
            prop_assert!(
                names.iter().any(|n| msg.contains(&format!("`{n}`"))),
                "error does not name the op ({:?}): {}",
                names,
                msg
            );
            prop_assert!(
                msg.contains("proptests.rs:"),
                "error does not point at the user's line: {}",
                msg
            );
            let types: Vec<String> = inputs
                .iter()
                .map(|t| jitfuse::error::type_str(t.dtype(), t.shape()))
                .collect();
            prop_assert!(
                inputs.is_empty() || types.iter().any(|t| msg.contains(t.as_str())),
                "error names none of the operands {:?}: {}",
                types,
                msg
            );
            Ok(None)
        }
        (Ok(outs), Err(e)) => Err(TestCaseError::fail(format!(
            "eager succeeded with {:?} but tracing failed ({:?}): {e}",
            outs.iter().map(ty).collect::<Vec<_>>(),
            e.kind
        ))),
        (Err(p), Ok(_)) => Err(TestCaseError::fail(format!(
            "tracing succeeded but eager panicked: {}",
            payload_text(&*p)
        ))),
    }
}

/// Outputs used downstream: an elementwise op and reductions reading each
/// output (a view is then read through its index map inside a kernel, not
/// materialised), traced and compiled against the interpreter.
fn check_downstream(
    inputs: &[Tensor],
    tol: Tol,
    f: &dyn Fn(&[Tensor]) -> Vec<Tensor>,
) -> Result<(), TestCaseError> {
    let specs: Vec<ParamSpec> = inputs
        .iter()
        .map(|t| ParamSpec {
            shape: t.shape().to_vec(),
            dtype: t.dtype(),
            weak: false,
        })
        .collect();
    // With terms near 2^63 a float sum cancels catastrophically, and its
    // value depends on the order of summation (the compiled lanes and the
    // interpreter's sequential order legitimately differ): `min` then.
    let huge = inputs
        .iter()
        .any(|t| as_f64s(t).iter().any(|v| v.is_finite() && v.abs() > 1e6));
    // Which downstream outputs are sums (the rest double, transpose or take the max of an
    // output: exact given it, so they keep its tolerance).
    let mut sums = Vec::new();
    let tr = trace(&specs, |ts| {
        f(ts)
            .into_iter()
            .flat_map(|o| {
                if o.dtype() == DType::Bool {
                    sums.extend([false, false]);
                    return vec![o.logical_not(), o.logical_and(&o.flip(&[]))];
                }
                let mut v = vec![&o + &o, (&o * 2).t()];
                sums.extend([false, false]);
                if o.ndim() > 0 {
                    v.push(if huge { o.min(-1) } else { o.sum(-1) });
                    v.push(o.t().max_keepdims(0));
                    sums.extend([!huge, false]);
                }
                v
            })
            .collect()
    })
    .map_err(|e| TestCaseError::fail(format!("downstream trace: {e}")))?;
    let g = &tr.graph;
    let want = interpret::eval_graph(g, inputs, &tr.captured)
        .map_err(|e| TestCaseError::fail(format!("interpreter: {e}\n{g}")))?;
    let exe = Executable::from_graph(g.clone(), tr.captured.clone())
        .map_err(|e| TestCaseError::fail(format!("downstream compile: {e}\n{g}")))?;
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let got = exe
        .run_with(&refs)
        .map_err(|e| TestCaseError::fail(format!("downstream run: {e}\n{g}")))?;
    assert_eq!(sums.len(), got.len());
    for (k, (c, w)) in got.iter().zip(&want).enumerate() {
        let t = if !w.dtype().is_float() {
            EXACT
        } else if sums[k] {
            // A sum may cancel: an absolute floor (the terms are small integers and
            // fractions, or specials).
            Tol {
                rel: tol.rel.max(1e-5),
                abs: tol.abs.max(1e-5),
            }
        } else {
            // Twice an output's value, with twice its error. (An absolute 1e-5 here
            // passed any value of small outputs such as exp(-6).)
            Tol {
                rel: tol.rel,
                abs: 2.0 * tol.abs,
            }
        };
        assert_close(
            c,
            w,
            t,
            &format!(
                "downstream: compiled vs interpreter, output {k}\n{g}\n{}",
                exe.kernels_text()
            ),
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Strategies

fn dtype() -> impl Strategy<Value = DType> {
    pick(DType::ALL.to_vec())
}

fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![1 => Just(0usize), 2 => Just(1usize), 6 => 2usize..=6]
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    pvec(dim(), 0..=4)
}

/// A shape that broadcasts with `s`: leading dims dropped, some set to 1.
fn partner(s: Vec<usize>) -> impl Strategy<Value = Vec<usize>> {
    let n = s.len();
    (0..=n, pvec(any::<bool>(), n))
        .prop_map(move |(drop, ones)| (drop..n).map(|i| if ones[i] { 1 } else { s[i] }).collect())
}

/// A second shape: often unrelated (rarely broadcast-compatible), often a
/// broadcast partner.
fn shape_pair() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    shape().prop_flat_map(|a| {
        let p = partner(a.clone());
        (Just(a), prop_oneof![shape().boxed(), p.boxed()])
    })
}

/// Element values: small integers and fractions, the float specials, and
/// with `big` values beyond the i32 range (saturating casts, wrapping ints).
fn value(big: bool) -> BoxedStrategy<f64> {
    let small = prop_oneof![4 => (-6i32..=6).prop_map(|v| v as f64), 1 => (-48i32..48).prop_map(|v| v as f64 / 8.0)];
    let specials = pick(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0]);
    if big {
        let bigs = pick(vec![
            1e30,
            -1e30,
            3e9,
            -3e9,
            2147483647.0,
            -2147483648.0,
            9.3e18,
            -9.3e18,
        ]);
        prop_oneof![8 => small, 1 => specials, 1 => bigs].boxed()
    } else {
        prop_oneof![12 => small, 1 => specials].boxed()
    }
}

/// A tensor of `shape` whose elements cycle through `v` (one short list of
/// values for every shape: shapes and values shrink independently).
fn make(v: &[f64], shape: &[usize], d: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| v[i % v.len()]).collect();
    match d {
        DType::F32 => Tensor::from_vec(v.iter().map(|&x| x as f32).collect(), shape),
        DType::F64 => Tensor::from_vec(v, shape),
        DType::I32 => Tensor::from_vec(v.iter().map(|&x| x as i32).collect(), shape),
        DType::I64 => Tensor::from_vec(v.iter().map(|&x| x as i64).collect(), shape),
        DType::Bool => Tensor::from_vec(v.iter().map(|&x| x > 0.0).collect(), shape),
        DType::BF16 => Tensor::from_vec(
            v.iter().map(|&x| jitfuse::bf16::from_f64(x)).collect(),
            shape,
        ),
        DType::F16 => Tensor::from_vec(
            v.iter().map(|&x| jitfuse::f16::from_f64(x)).collect(),
            shape,
        ),
    }
    .unwrap()
}

fn values(big: bool) -> impl Strategy<Value = Vec<f64>> {
    pvec(value(big), 1..=24)
}

fn tensor_of(
    shape: impl Strategy<Value = Vec<usize>>,
    d: impl Strategy<Value = DType>,
    big: bool,
) -> impl Strategy<Value = Tensor> {
    (shape, d, values(big)).prop_map(|(s, d, v)| make(&v, &s, d))
}

fn any_tensor(big: bool) -> impl Strategy<Value = Tensor> {
    tensor_of(shape(), dtype(), big)
}

/// A pair of tensors on `shape_pair` shapes; half the time of one dtype.
fn tensor_pair(big: bool) -> impl Strategy<Value = (Tensor, Tensor)> {
    (
        shape_pair(),
        dtype(),
        prop::option::of(dtype()),
        values(big),
        values(big),
    )
        .prop_map(|((sa, sb), da, db, va, vb)| {
            (make(&va, &sa, da), make(&vb, &sb, db.unwrap_or(da)))
        })
}

/// Integer-valued index tensors of rank 0-2, usually of an integer dtype.
fn indices(
    lo: i64,
    hi: i64,
    max_rank: usize,
    d: impl Strategy<Value = DType>,
) -> impl Strategy<Value = Tensor> {
    (pvec(0usize..=3, 0..=max_rank), d, pvec(lo..=hi, 1..=12))
        .prop_map(|(s, d, v)| make(&v.iter().map(|&i| i as f64).collect::<Vec<_>>(), &s, d))
}

/// An axis, mostly in range for ranks up to 4, sometimes not.
fn axis() -> impl Strategy<Value = isize> {
    -6isize..=6
}

// ---------------------------------------------------------------------------
// The model (NumPy/JAX semantics as documented)

fn bcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let get = |s: &[usize], i: usize| {
        if i + s.len() < n {
            1
        } else {
            s[i + s.len() - n]
        }
    };
    (0..n)
        .map(|i| match (get(a, i), get(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

fn promote(a: DType, b: DType) -> Option<DType> {
    use DType::*;
    match (a, b) {
        _ if a == b => Some(a),
        (Bool, _) | (_, Bool) => None,
        (F64, _) | (_, F64) => Some(F64),
        (F32, _) | (_, F32) | (BF16, F16) | (F16, BF16) => Some(F32),
        (BF16, _) | (_, BF16) => Some(BF16),
        (F16, _) | (_, F16) => Some(F16),
        _ => Some(I64),
    }
}

fn norm(axis: isize, rank: usize) -> Option<usize> {
    let a = if axis < 0 { axis + rank as isize } else { axis };
    (0..rank as isize).contains(&a).then_some(a as usize)
}

/// Normalised axes, or `None` when one is out of range or listed twice.
fn norm_all(axes: &[isize], rank: usize) -> Option<Vec<usize>> {
    let v: Vec<usize> = axes.iter().map(|&a| norm(a, rank)).collect::<Option<_>>()?;
    let mut s = v.clone();
    s.sort();
    s.dedup();
    (s.len() == v.len()).then_some(v)
}

fn is_num(d: DType) -> bool {
    d != DType::Bool
}

fn float_tol(d: DType) -> Tol {
    match d {
        DType::F32 => Tol {
            rel: 4e-6,
            abs: 2e-6,
        },
        DType::F64 => Tol {
            rel: 1e-13,
            abs: 1e-14,
        },
        DType::BF16 | DType::F16 => Tol {
            abs: Tol::half_ulp(d).rel,
            ..Tol::half_ulp(d)
        },
        _ => EXACT,
    }
}

/// `float_tol` as a relative bound only: for results that do not cancel (the transcendentals
/// are accurate to a few ulp of their result, products round each factor relatively), where
/// an absolute floor of 2e-6 passed small results such as exp(-6) = 2.5e-3 0.1% wrong.
fn float_rel(d: DType) -> Tol {
    if d.is_float() {
        Tol::rel(d, float_tol(d).rel)
    } else {
        EXACT
    }
}

fn sum_tol(d: DType) -> Tol {
    match d {
        DType::F32 => Tol {
            rel: 1e-4,
            abs: 1e-5,
        },
        DType::F64 => Tol {
            rel: 1e-12,
            abs: 1e-12,
        },
        // (Sums of 16-bit values are accumulated in f32 blocks and rounded once, the
        // interpreter's in f64: they may round to neighbours.)
        DType::BF16 | DType::F16 => Tol {
            rel: 2.0 * Tol::half_ulp(d).rel,
            abs: Tol::half_ulp(d).rel,
        },
        _ => EXACT,
    }
}

fn as_f64s(t: &Tensor) -> Vec<f64> {
    t.cast(DType::F64).to_vec::<f64>().unwrap()
}

// ---------------------------------------------------------------------------
// Elementwise

#[derive(Clone, Copy, Debug)]
enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Maximum,
    Minimum,
    Powf,
    And,
    Or,
}

impl Bin {
    fn name(self) -> &'static str {
        match self {
            Bin::Add => "add",
            Bin::Sub => "sub",
            Bin::Mul => "mul",
            Bin::Div => "div",
            Bin::Rem => "rem",
            Bin::Maximum => "maximum",
            Bin::Minimum => "minimum",
            Bin::Powf => "powf",
            Bin::And => "logical_and",
            Bin::Or => "logical_or",
        }
    }
    fn accepts(self, d: DType) -> bool {
        match self {
            Bin::Powf => d.is_float(),
            Bin::And | Bin::Or => d == DType::Bool,
            _ => is_num(d),
        }
    }
}

const BINS: [Bin; 10] = [
    Bin::Add,
    Bin::Sub,
    Bin::Mul,
    Bin::Div,
    Bin::Rem,
    Bin::Maximum,
    Bin::Minimum,
    Bin::Powf,
    Bin::And,
    Bin::Or,
];

/// The right operand of a binary op: a tensor or a weakly typed Rust scalar.
#[derive(Clone, Debug)]
enum Rhs {
    Tensor,
    F64(f64),
    I32(i32),
}

fn bin_apply(op: Bin, a: &Tensor, b: &Tensor) -> Tensor {
    match op {
        Bin::Add => a + b,
        Bin::Sub => a - b,
        Bin::Mul => a * b,
        Bin::Div => a / b,
        Bin::Rem => a % b,
        Bin::Maximum => a.maximum(b),
        Bin::Minimum => a.minimum(b),
        Bin::Powf => a.powf(b),
        Bin::And => a.logical_and(b),
        Bin::Or => a.logical_or(b),
    }
}

fn bin_apply_scalar<S: jitfuse::Scalar>(op: Bin, a: &Tensor, s: S) -> Tensor {
    match op {
        Bin::Add => a + s,
        Bin::Sub => a - s,
        Bin::Mul => a * s,
        Bin::Div => a / s,
        Bin::Rem => a % s,
        Bin::Maximum => a.maximum(s),
        Bin::Minimum => a.minimum(s),
        Bin::Powf => a.powf(s),
        Bin::And => a.logical_and(s),
        Bin::Or => a.logical_or(s),
    }
}

/// Integer semantics (XLA's): wrapping, `x / 0 = -1`, `x % 0 = x`.
fn int_oracle(op: Bin, a: i64, b: i64, d: DType) -> Option<i64> {
    let wrap = |v: i64| if d == DType::I32 { v as i32 as i64 } else { v };
    Some(match op {
        Bin::Add => wrap(a.wrapping_add(b)),
        Bin::Sub => wrap(a.wrapping_sub(b)),
        Bin::Mul => wrap(a.wrapping_mul(b)),
        Bin::Div if b == 0 => -1,
        Bin::Div => wrap(a.wrapping_div(b)),
        Bin::Rem if b == 0 => a,
        Bin::Rem => wrap(a.wrapping_rem(b)),
        Bin::Maximum => a.max(b),
        Bin::Minimum => a.min(b),
        _ => return None,
    })
}

fn rhs_strategy() -> impl Strategy<Value = Rhs> {
    prop_oneof![
        6 => Just(Rhs::Tensor),
        1 => pick(vec![0.0, -1.5, 2.0, f64::NAN]).prop_map(Rhs::F64),
        1 => pick(vec![0, -3, 2, i32::MAX]).prop_map(Rhs::I32),
    ]
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn binary_ops((a, b) in tensor_pair(true), op in pick(BINS.to_vec()), rhs in rhs_strategy()) {
        let (expect, inputs): (Option<Vec<Ty>>, Vec<Tensor>) = match rhs {
            Rhs::Tensor => {
                let d = promote(a.dtype(), b.dtype()).filter(|&d| op.accepts(d));
                let s = bcast(a.shape(), b.shape());
                (d.zip(s).map(|(d, s)| vec![(s, d)]), vec![a.clone(), b.clone()])
            }
            Rhs::F64(_) | Rhs::I32(_) => {
                let weak = match (a.dtype(), &rhs) {
                    (DType::Bool, _) => None,
                    (d, Rhs::F64(_)) if d.is_int() => Some(DType::F32),
                    (d, _) => Some(d),
                };
                (weak.filter(|&d| op.accepts(d)).map(|d| vec![(a.shape().to_vec(), d)]), vec![a.clone()])
            }
        };
        let tol = match &expect {
            Some(t) if matches!(op, Bin::Powf) => float_rel(t[0].1),
            _ => EXACT,
        };
        let rhs2 = rhs.clone();
        let outs = run_case(&[op.name()], &inputs, expect, tol, &move |ts: &[Tensor]| match rhs2 {
            Rhs::Tensor => vec![bin_apply(op, &ts[0], &ts[1])],
            Rhs::F64(s) => vec![bin_apply_scalar(op, &ts[0], s)],
            Rhs::I32(s) => vec![bin_apply_scalar(op, &ts[0], s)],
        })?;
        // The integer semantics are a decision: check them value by value.
        if let (Some(outs), Rhs::Tensor) = (outs, &rhs) {
            let d = outs[0].dtype();
            if d.is_int() {
                let s = outs[0].shape().to_vec();
                let ints = |t: &Tensor| t.broadcast_to(&s).cast(DType::I64).to_vec::<i64>().unwrap();
                let (x, y, r) = (ints(&a.cast(d)), ints(&b.cast(d)), ints(&outs[0]));
                for i in 0..r.len() {
                    if let Some(w) = int_oracle(op, x[i], y[i], d) {
                        prop_assert_eq!(r[i], w, "{:?} {} {} at {}", op, x[i], y[i], i);
                    }
                }
            }
        }
    }

    #[test]
    fn comparisons((a, b) in tensor_pair(true), k in 0usize..6) {
        let names = ["lt", "le", "gt", "ge", "eq", "ne"];
        let d = if a.dtype() == DType::Bool && b.dtype() == DType::Bool {
            Some(DType::Bool).filter(|_| k >= 4)
        } else {
            promote(a.dtype(), b.dtype())
        };
        let expect = d.zip(bcast(a.shape(), b.shape())).map(|(_, s)| vec![(s, DType::Bool)]);
        run_case(&[names[k]], &[a, b], expect, EXACT, &move |ts: &[Tensor]| {
            let (x, y) = (&ts[0], &ts[1]);
            vec![match k { 0 => x.lt(y), 1 => x.le(y), 2 => x.gt(y), 3 => x.ge(y), 4 => x.eq(y), _ => x.ne(y) }]
        })?;
    }

    #[test]
    fn select((c, a) in tensor_pair(false), b in any_tensor(false), cond_bool in any::<bool>()) {
        let c = if cond_bool { c.cast(DType::Bool) } else { c };
        let d = promote(a.dtype(), b.dtype()).filter(|_| c.dtype() == DType::Bool);
        let s = bcast(c.shape(), a.shape()).and_then(|s| bcast(&s, b.shape()));
        let expect = d.zip(s).map(|(d, s)| vec![(s, d)]);
        run_case(&["select"], &[c, a, b], expect, EXACT, &|ts: &[Tensor]| {
            vec![jitfuse::select(&ts[0], &ts[1], &ts[2])]
        })?;
    }

    #[test]
    fn unary_ops(x in any_tensor(false), op in pick(UnaryOp::ALL.to_vec())) {
        let d = x.dtype();
        let ok = match op {
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Square => is_num(d),
            UnaryOp::Not => d == DType::Bool,
            UnaryOp::StopGradient => true,
            _ => d.is_float(),
        };
        let expect = ok.then(|| vec![(x.shape().to_vec(), d)]);
        let exact = matches!(op, UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Square
            | UnaryOp::Not | UnaryOp::Floor | UnaryOp::Sqrt | UnaryOp::Recip | UnaryOp::StopGradient);
        let tol = if exact { EXACT } else { float_rel(d) };
        run_case(&[op.name()], &[x], expect, tol, &move |ts: &[Tensor]| {
            let t = &ts[0];
            vec![match op {
                UnaryOp::Neg => -t,
                UnaryOp::Exp => t.exp(),
                UnaryOp::Ln => t.ln(),
                UnaryOp::Tanh => t.tanh(),
                UnaryOp::Sqrt => t.sqrt(),
                UnaryOp::Rsqrt => t.rsqrt(),
                UnaryOp::Abs => t.abs(),
                UnaryOp::Relu => t.relu(),
                UnaryOp::Sigmoid => t.sigmoid(),
                UnaryOp::Sin => t.sin(),
                UnaryOp::Cos => t.cos(),
                UnaryOp::Square => t.square(),
                UnaryOp::Recip => t.recip(),
                UnaryOp::Not => t.logical_not(),
                UnaryOp::Erf => t.erf(),
                UnaryOp::Floor => t.floor(),
                UnaryOp::StopGradient => jitfuse::stop_gradient(t),
                UnaryOp::Log1p => t.log1p(),
                UnaryOp::Expm1 => t.expm1(),
            }]
        })?;
    }

    #[test]
    fn cast_between_all_dtypes(x in any_tensor(true), to in dtype()) {
        let expect = Some(vec![(x.shape().to_vec(), to)]);
        run_case(&["cast"], &[x], expect, EXACT, &move |ts: &[Tensor]| vec![ts[0].cast(to)])?;
    }
}

// ---------------------------------------------------------------------------
// Shape ops

/// A reshape target: random dims (with -1 and the invalid -2), or a valid
/// one made by merging adjacent dims of `s`, with one of them maybe -1.
fn reshape_target() -> impl Strategy<Value = (Vec<usize>, Vec<isize>)> {
    let random = pvec(
        prop_oneof![1 => Just(-1isize), 1 => Just(-2isize), 8 => 0isize..=6],
        0..=4,
    );
    (
        shape(),
        prop::option::weighted(0.5, random),
        pvec(any::<bool>(), 4),
        prop::option::of(any::<prop::sample::Index>()),
    )
        .prop_map(|(s, random, merge, infer)| {
            let t = random.unwrap_or_else(|| {
                let mut t: Vec<isize> = Vec::new();
                for (i, &d) in s.iter().enumerate() {
                    match t.last_mut() {
                        Some(last) if merge[i] => *last *= d as isize,
                        _ => t.push(d as isize),
                    }
                }
                if let (Some(i), false) = (infer, t.is_empty()) {
                    let k = i.index(t.len());
                    t[k] = -1;
                }
                t
            });
            (s, t)
        })
}

fn reshape_model(s: &[usize], target: &[isize]) -> Option<Vec<usize>> {
    let n: usize = s.iter().product();
    if target.iter().any(|&d| d < -1) || target.iter().filter(|&&d| d == -1).count() > 1 {
        return None;
    }
    let known: usize = target
        .iter()
        .filter(|&&d| d >= 0)
        .map(|&d| d as usize)
        .product();
    let mut out: Vec<usize> = target.iter().map(|&d| d.max(0) as usize).collect();
    match target.iter().position(|&d| d == -1) {
        Some(u) => {
            if known == 0 || n % known != 0 {
                return None;
            }
            out[u] = n / known;
        }
        None if known != n => return None,
        None => {}
    }
    Some(out)
}

/// Python's slice rule (CPython's `PySlice_AdjustIndices`): the length.
fn py_slice_len(n: usize, s: Slice) -> usize {
    let n = n as i64;
    let step = s.step as i64;
    let (lo, hi) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let fix = |v: Option<isize>, default: i64| match v {
        None => default,
        Some(v) => {
            let v = v as i64;
            if v < 0 {
                (v + n).max(lo)
            } else {
                v.min(hi)
            }
        }
    };
    let start = fix(s.start, if step > 0 { 0 } else { n - 1 });
    let end = fix(s.end, if step > 0 { n } else { -1 });
    let len = if step > 0 {
        if end > start {
            (end - start - 1) / step + 1
        } else {
            0
        }
    } else if start > end {
        (start - end - 1) / (-step) + 1
    } else {
        0
    };
    len as usize
}

fn slice_strategy() -> impl Strategy<Value = Slice> {
    let bound = prop::option::weighted(0.7, -8isize..=8);
    (bound.clone(), bound, -3isize..=3).prop_map(|(a, b, st)| Slice::new(a, b, st))
}

fn perm_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        pvec(0usize..5, 0..=5).boxed(),
        (0usize..=4)
            .prop_flat_map(|r| Just((0..r).collect::<Vec<_>>()).prop_shuffle())
            .boxed(),
    ]
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn reshape(
        (s, target) in reshape_target(), d in dtype(), v in values(false)
    ) {
        let x = make(&v, &s, d);
        let expect = reshape_model(x.shape(), &target).map(|s| vec![(s, x.dtype())]);
        run_case(&["reshape"], &[x], expect, EXACT, &move |ts: &[Tensor]| vec![ts[0].reshape(&target)])?;
    }

    #[test]
    fn transpose(x in any_tensor(false), perm in perm_strategy()) {
        let r = x.ndim();
        let mut seen = perm.clone();
        seen.sort();
        let expect = (seen == (0..r).collect::<Vec<_>>())
            .then(|| vec![(perm.iter().map(|&p| x.shape()[p]).collect(), x.dtype())]);
        run_case(&["transpose"], &[x], expect, EXACT, &move |ts: &[Tensor]| vec![ts[0].transpose(&perm)])?;
    }

    #[test]
    fn slice(x in any_tensor(false), slices in pvec(slice_strategy(), 0..=5)) {
        let s = x.shape().to_vec();
        let expect = (slices.len() <= s.len() && slices.iter().all(|sl| sl.step != 0)).then(|| {
            let out = (0..s.len()).map(|d| py_slice_len(s[d], slices.get(d).copied().unwrap_or(Slice::full()))).collect();
            vec![(out, x.dtype())]
        });
        run_case(&["slice"], &[x], expect, EXACT, &move |ts: &[Tensor]| vec![ts[0].slice(&slices)])?;
    }

    #[test]
    fn slice_axis(x in any_tensor(false), ax in axis(), sl in slice_strategy()) {
        let expect = norm(ax, x.ndim()).filter(|_| sl.step != 0).map(|a| {
            let mut out = x.shape().to_vec();
            out[a] = py_slice_len(out[a], sl);
            vec![(out, x.dtype())]
        });
        run_case(&["slice_axis", "slice"], &[x], expect, EXACT, &move |ts: &[Tensor]| {
            vec![ts[0].slice_axis(ax, sl.start, sl.end, sl.step)]
        })?;
    }

    #[test]
    fn flip(x in any_tensor(false), axes in pvec(axis(), 0..=3)) {
        let t = (x.shape().to_vec(), x.dtype());
        let expect = norm_all(&axes, x.ndim()).map(|_| vec![t.clone(), t]);
        let outs = run_case(&["flip"], &[x.clone()], expect, EXACT, &move |ts: &[Tensor]| {
            let f = ts[0].flip(&axes);
            let back = f.flip(&axes);
            vec![f, back]
        })?;
        // Flipping the same axes twice gives the input back.
        if let Some(outs) = outs {
            assert_close(&outs[1], &x, EXACT, "flip twice");
        }
    }

    #[test]
    fn expand_dims_and_squeeze(x in any_tensor(false), ax in axis(), sq in pvec(axis(), 0..=3)) {
        let r = x.ndim();
        let expect = norm(ax, r + 1).map(|a| {
            let mut s = x.shape().to_vec();
            s.insert(a, 1);
            vec![(s, x.dtype())]
        });
        run_case(&["expand_dims"], &[x.clone()], expect, EXACT, &move |ts: &[Tensor]| vec![ts[0].expand_dims(ax)])?;
        let s = x.shape().to_vec();
        let expect = if sq.is_empty() {
            Some(s.iter().copied().filter(|&d| d != 1).collect())
        } else {
            norm_all(&sq, r)
                .filter(|v| v.iter().all(|&a| s[a] == 1))
                .map(|v| (0..r).filter(|a| !v.contains(a)).map(|a| s[a]).collect())
        };
        let expect = expect.map(|s| vec![(s, x.dtype())]);
        run_case(&["squeeze"], &[x], expect, EXACT, &move |ts: &[Tensor]| vec![ts[0].squeeze(&sq)])?;
    }
}

// ---------------------------------------------------------------------------
// Joining, padding, indexing

/// Up to three tensors, usually shaped like the first except along one axis.
fn joinable() -> impl Strategy<Value = Vec<Tensor>> {
    let one = (
        prop::option::weighted(0.25, shape()),
        any::<prop::sample::Index>(),
        dim(),
        prop::option::weighted(0.2, dtype()),
        values(false),
    );
    (shape(), dtype(), pvec(one, 0..=3)).prop_map(|(s, d, ts)| {
        ts.into_iter()
            .map(|(other, i, len, own_d, v)| {
                let mut t = other.unwrap_or_else(|| s.clone());
                if !t.is_empty() && i.index(4) < 3 {
                    let k = i.index(t.len());
                    t[k] = len;
                }
                make(&v, &t, own_d.unwrap_or(d))
            })
            .collect()
    })
}

fn concat_model(ts: &[Tensor], axis: isize) -> Option<Vec<Ty>> {
    let first = ts.first()?;
    let a = norm(axis, first.ndim())?;
    let d = ts
        .iter()
        .try_fold(first.dtype(), |d, t| promote(d, t.dtype()))?;
    if ts.iter().any(|t| {
        t.ndim() != first.ndim()
            || (0..t.ndim()).any(|k| k != a && t.shape()[k] != first.shape()[k])
    }) {
        return None;
    }
    let mut out = first.shape().to_vec();
    out[a] = ts.iter().map(|t| t.shape()[a]).sum();
    Some(vec![(out, d)])
}

fn stack_model(ts: &[Tensor], axis: isize) -> Option<Vec<Ty>> {
    let first = ts.first()?;
    let a = norm(axis, first.ndim() + 1)?;
    let d = ts
        .iter()
        .try_fold(first.dtype(), |d, t| promote(d, t.dtype()))?;
    if ts.iter().any(|t| t.shape() != first.shape()) {
        return None;
    }
    let mut out = first.shape().to_vec();
    out.insert(a, ts.len());
    Some(vec![(out, d)])
}

#[derive(Clone, Copy, Debug)]
enum PadValue {
    I32(i32),
    F64(f64),
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn concat(ts in joinable(), ax in axis()) {
        let expect = concat_model(&ts, ax);
        run_case(&["concat"], &ts, expect, EXACT, &move |ts: &[Tensor]| {
            vec![jitfuse::concat(&ts.iter().collect::<Vec<_>>(), ax)]
        })?;
    }

    #[test]
    fn stack(ts in joinable(), ax in axis()) {
        let expect = stack_model(&ts, ax);
        run_case(&["stack"], &ts, expect, EXACT, &move |ts: &[Tensor]| {
            vec![jitfuse::stack(&ts.iter().collect::<Vec<_>>(), ax)]
        })?;
    }

    #[test]
    fn pad(
        x in any_tensor(false),
        pads in pvec((0usize..3, 0usize..3), 0..=5),
        value in prop_oneof![pick(vec![0, 1, 7, -2]).prop_map(PadValue::I32), pick(vec![0.0, 1.5]).prop_map(PadValue::F64)],
    ) {
        let d = x.dtype();
        let value_ok = match (d, value) {
            (DType::Bool, PadValue::I32(v)) => v == 0 || v == 1,
            (DType::Bool, PadValue::F64(_)) => false,
            (d, PadValue::F64(_)) => d.is_float(),
            _ => true,
        };
        let expect = (pads.len() == x.ndim() && value_ok).then(|| {
            vec![(x.shape().iter().zip(&pads).map(|(s, (a, b))| s + a + b).collect(), d)]
        });
        run_case(&["pad"], &[x], expect, EXACT, &move |ts: &[Tensor]| match value {
            PadValue::I32(v) => vec![ts[0].pad(&pads, v)],
            PadValue::F64(v) => vec![ts[0].pad(&pads, v)],
        })?;
    }

    #[test]
    fn take(
        x in any_tensor(false),
        idx in indices(-8, 8, 2, prop_oneof![4 => pick(vec![DType::I32, DType::I64]), 1 => dtype()]),
        ax in -5isize..=5,
        captured in any::<bool>(),
    ) {
        let expect = norm(ax, x.ndim()).filter(|&a| idx.dtype().is_int() && (x.shape()[a] > 0 || idx.is_empty())).map(|a| {
            let mut out = x.shape()[..a].to_vec();
            out.extend_from_slice(idx.shape());
            out.extend_from_slice(&x.shape()[a + 1..]);
            vec![(out, x.dtype())]
        });
        // The indices as a traced parameter, or closed over (captured).
        let (inputs, held) = if captured { (vec![x.clone()], Some(idx.clone())) } else { (vec![x.clone(), idx.clone()], None) };
        let outs = run_case(&["take"], &inputs, expect, EXACT, &move |ts: &[Tensor]| {
            vec![ts[0].take(held.as_ref().unwrap_or_else(|| &ts[1]), ax)]
        })?;
        // Decision: negative indices count from the end, then clamp (XLA).
        if let Some(outs) = outs {
            let a = norm(ax, x.ndim()).unwrap();
            let (s, n) = (x.shape().to_vec(), x.shape()[a] as i64);
            let outer: usize = s[..a].iter().product();
            let inner: usize = s[a + 1..].iter().product();
            let (xv, iv, ov) = (as_f64s(&x), as_f64s(&idx), as_f64s(&outs[0]));
            let mut want = Vec::new();
            for o in 0..outer {
                for &i in &iv {
                    let i = i as i64;
                    let k = (if i < 0 { i + n } else { i }).clamp(0, n - 1) as usize;
                    want.extend_from_slice(&xv[(o * n as usize + k) * inner..(o * n as usize + k + 1) * inner]);
                }
            }
            prop_assert_eq!(ov.len(), want.len());
            for (g, w) in ov.iter().zip(&want) {
                prop_assert!(g == w || (g.is_nan() && w.is_nan()), "take: {:?} vs {:?}", ov, want);
            }
        }
    }

    #[test]
    fn one_hot(
        idx in indices(-3, 7, 3, dtype()),
        n in 0usize..=6,
        to in dtype(),
    ) {
        let expect = idx.dtype().is_int().then(|| {
            let mut s = idx.shape().to_vec();
            s.push(n);
            vec![(s, to)]
        });
        let outs = run_case(&["one_hot"], &[idx.clone()], expect, EXACT, &move |ts: &[Tensor]| vec![ts[0].one_hot_as(n, to)])?;
        // Decision: an index outside 0..n gives a row of zeros.
        if let Some(outs) = outs {
            let iv = as_f64s(&idx);
            let want: Vec<f64> = iv.iter().flat_map(|&i| (0..n).map(move |c| (i == c as f64) as u8 as f64)).collect();
            prop_assert_eq!(as_f64s(&outs[0]), want);
        }
    }
}

// ---------------------------------------------------------------------------
// Reductions and matmul

#[derive(Clone, Copy, Debug)]
enum Red {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
    Var,
    Std,
    Logsumexp,
}

const REDS: [Red; 8] = [
    Red::Sum,
    Red::Mean,
    Red::Max,
    Red::Min,
    Red::Prod,
    Red::Var,
    Red::Std,
    Red::Logsumexp,
];

impl Red {
    fn name(self) -> &'static str {
        match self {
            Red::Sum => "sum",
            Red::Mean => "mean",
            Red::Max => "max",
            Red::Min => "min",
            Red::Prod => "prod",
            Red::Var => "var",
            Red::Std => "std",
            Red::Logsumexp => "logsumexp",
        }
    }
    fn float_only(self) -> bool {
        matches!(self, Red::Mean | Red::Var | Red::Std | Red::Logsumexp)
    }
}

fn reduce_apply(op: Red, keep: bool, t: &Tensor, axes: Vec<isize>) -> Tensor {
    match (op, keep) {
        (Red::Sum, false) => t.sum(axes),
        (Red::Sum, true) => t.sum_keepdims(axes),
        (Red::Mean, false) => t.mean(axes),
        (Red::Mean, true) => t.mean_keepdims(axes),
        (Red::Max, false) => t.max(axes),
        (Red::Max, true) => t.max_keepdims(axes),
        (Red::Min, false) => t.min(axes),
        (Red::Min, true) => t.min_keepdims(axes),
        (Red::Prod, false) => t.prod(axes),
        (Red::Prod, true) => t.prod_keepdims(axes),
        (Red::Var, false) => t.var(axes),
        (Red::Var, true) => t.var_keepdims(axes),
        (Red::Std, false) => t.std(axes),
        (Red::Std, true) => t.std_keepdims(axes),
        (Red::Logsumexp, false) => t.logsumexp(axes),
        (Red::Logsumexp, true) => t.logsumexp_keepdims(axes),
    }
}

/// Matmul operands: ranks 0-4, inner dims usually equal, batch dims
/// usually broadcastable.
fn matmul_pair() -> impl Strategy<Value = (Tensor, Tensor)> {
    let ranks = (0usize..=4, 0usize..=4);
    let inner = (dim(), prop::option::weighted(0.2, dim()), dim(), dim());
    let batch = (shape(), prop::option::weighted(0.2, shape()));
    let dtypes = (dtype(), prop::option::of(dtype()));
    (ranks, inner, batch, dtypes, values(false), values(false)).prop_map(
        |((ra, rb), (k, k2, m, n), (ba, bb), (da, db), va, vb)| {
            let bb = bb.unwrap_or_else(|| ba.clone());
            let suffix = |b: &[usize], r: usize| b[b.len().saturating_sub(r - 2)..].to_vec();
            let sa: Vec<usize> = match ra {
                0 => vec![],
                1 => vec![k],
                r => suffix(&ba, r).into_iter().chain([m, k]).collect(),
            };
            let kb = k2.unwrap_or(k);
            let sb: Vec<usize> = match rb {
                0 => vec![],
                1 => vec![kb],
                r => suffix(&bb, r).into_iter().chain([kb, n]).collect(),
            };
            (make(&va, &sa, da), make(&vb, &sb, db.unwrap_or(da)))
        },
    )
}

fn matmul_model(a: &[usize], b: &[usize], da: DType, db: DType) -> Option<Vec<Ty>> {
    let d = promote(da, db).filter(|d| d.is_float())?;
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let a2: Vec<usize> = if a.len() == 1 {
        vec![1, a[0]]
    } else {
        a.to_vec()
    };
    let b2: Vec<usize> = if b.len() == 1 {
        vec![b[0], 1]
    } else {
        b.to_vec()
    };
    let (ra, rb) = (a2.len(), b2.len());
    if a2[ra - 1] != b2[rb - 2] {
        return None;
    }
    let mut out = bcast(&a2[..ra - 2], &b2[..rb - 2])?;
    if a.len() > 1 {
        out.push(a2[ra - 2]);
    }
    if b.len() > 1 {
        out.push(b2[rb - 1]);
    }
    Some(vec![(out, d)])
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn reductions(x in any_tensor(false), op in pick(REDS.to_vec()), keep in any::<bool>(), axes in pvec(axis(), 0..=4)) {
        let d = x.dtype();
        let r = x.ndim();
        let ok = is_num(d) && (!op.float_only() || d.is_float());
        let expect = norm_all(&axes, r).filter(|_| ok).map(|v| {
            let s: Vec<usize> = (0..r)
                .filter_map(|a| if v.contains(&a) { keep.then_some(1) } else { Some(x.shape()[a]) })
                .collect();
            vec![(s, d)]
        });
        // Products do not cancel: relative (sum_tol's absolute floor passed small
        // products, such as 0.125^6, whatever their value).
        let tol = match op {
            Red::Prod => Tol::rel(d, sum_tol(d).rel),
            Red::Logsumexp | Red::Std | Red::Var | Red::Mean | Red::Sum => sum_tol(d),
            Red::Max | Red::Min => EXACT,
        };
        run_case(&[op.name()], &[x], expect, tol, &move |ts: &[Tensor]| vec![reduce_apply(op, keep, &ts[0], axes.clone())])?;
    }

    #[test]
    fn argmax_argmin(x in any_tensor(false), ax in axis(), max in any::<bool>()) {
        let expect = norm(ax, x.ndim()).filter(|&a| x.dtype() != DType::Bool && x.shape()[a] > 0).map(|a| {
            let s: Vec<usize> = (0..x.ndim()).filter(|&k| k != a).map(|k| x.shape()[k]).collect();
            vec![(s, DType::I64)]
        });
        let name = if max { "argmax" } else { "argmin" };
        run_case(&[name], &[x], expect, EXACT, &move |ts: &[Tensor]| {
            vec![if max { ts[0].argmax(ax) } else { ts[0].argmin(ax) }]
        })?;
    }

    #[test]
    fn matmul((a, b) in matmul_pair()) {
        let expect = matmul_model(a.shape(), b.shape(), a.dtype(), b.dtype());
        let mut tol = sum_tol(expect.as_ref().map_or(DType::F64, |e| e[0].1));
        // f32 GEMM rounding is relative to the products' magnitudes, not to
        // the (possibly cancelled) result: [-5*2^31 - 1 + 5*2^31] is 0 in
        // f32 and -1 in the f64 interpreter.
        let mag = |t: &Tensor| -> f64 {
            let v: Vec<f64> = match t.dtype() {
                DType::F32 => t.to_vec::<f32>().unwrap().into_iter().map(f64::from).collect(),
                DType::F64 => t.to_vec::<f64>().unwrap(),
                DType::I32 => t.to_vec::<i32>().unwrap().into_iter().map(f64::from).collect(),
                DType::I64 => t.to_vec::<i64>().unwrap().into_iter().map(|x| x as f64).collect(),
                DType::Bool => vec![1.0],
                DType::BF16 | DType::F16 => crate::common::to_f64s(t),
            };
            v.into_iter().filter(|x| x.is_finite()).fold(0.0, |m, x| m.max(x.abs()))
        };
        let k = a.shape().last().copied().unwrap_or(1).max(1) as f64;
        tol.abs = tol.abs.max(tol.rel * mag(&a) * mag(&b) * k);
        run_case(&["matmul"], &[a, b], expect, tol, &|ts: &[Tensor]| vec![ts[0].matmul(&ts[1])])?;
    }
}

// ---------------------------------------------------------------------------
// Regressions: the minimal cases the properties shrank to

/// The eager error message of `f`, checked to be a jitfuse error at this file.
fn eager_error(f: impl FnOnce() -> Tensor) -> String {
    let p = quietly(|| catch_unwind(AssertUnwindSafe(f))).expect_err("the op should fail");
    let msg = payload_text(&*p);
    assert!(
        msg.contains("proptests.rs:"),
        "not at the user's line: {msg}"
    );
    msg
}

#[test]
fn stack_errors_name_stack_and_the_users_line() {
    let s = Tensor::scalar(0.0f32);
    let msg = eager_error(|| jitfuse::stack(&[&s], 1));
    assert!(
        msg.contains("`stack`: axis 1 is out of range for f32[]"),
        "{msg}"
    );
    let (a, b) = (
        Tensor::zeros(&[1, 3], DType::I32),
        Tensor::zeros(&[3], DType::I32),
    );
    let msg = eager_error(|| jitfuse::stack(&[&a, &b], 0));
    assert!(
        msg.contains("`stack`: operand 1 is i32[3], operand 0 is i32[1,3]"),
        "{msg}"
    );
    let c = Tensor::zeros(&[1, 3], DType::Bool);
    let msg = eager_error(|| jitfuse::stack(&[&a, &c], -1));
    assert!(
        msg.contains("`stack`: cannot combine i32[1,3] with bool[1,3]"),
        "{msg}"
    );
    assert_eq!(jitfuse::stack(&[&a, &a], -1).shape(), &[1, 3, 2]);
}

#[test]
fn axis_errors_give_the_valid_range_not_a_wrong_rank() {
    let x = Tensor::zeros(&[1, 3], DType::I32);
    // expand_dims used to say "(rank 3)" of an i32[1,3].
    let msg = eager_error(|| x.expand_dims(4));
    assert!(
        msg.contains("`expand_dims`: axis 4 is out of range for i32[1,3] (valid axes: -3..=2)"),
        "{msg}"
    );
    let msg = eager_error(|| x.sum(-3));
    assert!(
        msg.contains("`sum`: axis -3 is out of range for i32[1,3] (valid axes: -2..=1)"),
        "{msg}"
    );
    let msg = eager_error(|| Tensor::scalar(1i64).argmax(0));
    assert!(
        msg.contains("`argmax`: axis 0 is out of range for i64[] (it has no axes)"),
        "{msg}"
    );
}

#[test]
fn flip_and_squeeze_reject_an_axis_listed_twice() {
    // Both used to ignore the repetition: flip(&[0, 0]) flipped once (not
    // twice), squeeze(&[-2, -2]) of f32[1,0] removed one axis.
    let x = Tensor::zeros(&[0], DType::F32);
    let msg = eager_error(|| x.flip(&[0, 0]));
    assert!(
        msg.contains("`flip`: axis 0 is listed twice in [0, 0] for f32[0]"),
        "{msg}"
    );
    let m = Tensor::zeros(&[2, 3], DType::F32);
    let msg = eager_error(|| m.flip(&[1, -2, 0]));
    assert!(
        msg.contains("`flip`: axis 0 is listed twice in [1, -2, 0]"),
        "{msg}"
    );
    let y = Tensor::zeros(&[1, 0], DType::F32);
    let msg = eager_error(|| y.squeeze(&[-2, -2]));
    assert!(
        msg.contains("`squeeze`: axis 0 is listed twice in [-2, -2] for f32[1,0]"),
        "{msg}"
    );
    assert_eq!(y.squeeze(&[-2]).shape(), &[0]);
    assert_eq!(m.flip(&[1, 0]).shape(), &[2, 3]);
}

#[test]
fn std_of_an_integer_tensor_names_std() {
    // Used to say "`var` needs a float tensor".
    let msg = eager_error(|| Tensor::scalar(0i32).std_all());
    assert!(
        msg.contains("`std` needs a float tensor, found i32[]"),
        "{msg}"
    );
}

#[test]
fn dtype_and_step_errors_name_the_operands() {
    // These messages used to give dtypes without shapes, or no operand at all.
    let (f, b) = (
        Tensor::zeros(&[2], DType::F32),
        Tensor::zeros(&[3, 1], DType::Bool),
    );
    let cases: Vec<(Box<dyn Fn() -> Tensor>, &str)> = vec![
        (
            Box::new(|| &f + &b),
            "`add`: cannot combine f32[2] with bool[3,1]",
        ),
        (
            Box::new(|| b.lt(&b)),
            "`lt` does not order bool tensors (lhs bool[3,1], rhs bool[3,1])",
        ),
        (
            Box::new(|| jitfuse::select(&b, &f, &b)),
            "`select`: cannot combine f32[2] with bool[3,1]",
        ),
        (
            Box::new(|| &b + 0.0),
            "`add`: a scalar 0.0 cannot stand beside bool[3,1]",
        ),
        (
            Box::new(|| jitfuse::concat(&[&f, &b], 0)),
            "`concat`: cannot combine operand 1 bool[3,1] with f32 (operand 0 is f32[2])",
        ),
        (
            Box::new(|| f.slice(&[Slice::new(None, None, 0)])),
            "`slice`: step 0 on axis 0 of f32[2]",
        ),
        (
            Box::new(|| Tensor::zeros(&[2], DType::I32).pad(&[(1, 1)], 0.5)),
            "`pad`: the value 0.5 cannot fill i32[2]",
        ),
        (
            Box::new(|| f.take(&f, 0)),
            "`take` from f32[2]: indices must be i32 or i64, found f32[2]",
        ),
        (
            Box::new(|| b.cast(DType::F32).sum([0, -2])),
            "`sum`: an axis is listed twice in [0, -2] for f32[3,1]",
        ),
        (
            Box::new(|| Tensor::scalar(1.0f32).matmul(&f)),
            "`matmul` of a scalar (f32[] @ f32[2])",
        ),
    ];
    for (op, want) in cases {
        let msg = eager_error(op);
        assert!(msg.contains(want), "{msg:?} should contain {want:?}");
    }
}
