//! The eager Tensor API: construction, access, errors, printing.

use jitfuse::{DType, ErrorKind, Tensor};

#[test]
fn construction_and_access() {
    let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    assert_eq!(t.shape(), &[2, 3]);
    assert_eq!(t.dtype(), DType::F32);
    assert_eq!(t.len(), 6);
    assert_eq!(
        t.to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    let e = Tensor::from_vec(vec![1.0f32; 5], &[2, 3]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape);
    assert!(
        e.to_string()
            .contains("5 elements do not fill shape [2, 3]"),
        "{e}"
    );
    let e = t.to_vec::<f64>().unwrap_err();
    assert!(
        e.to_string()
            .contains("to_vec::<f64>() on a tensor of dtype f32"),
        "{e}"
    );
    assert_eq!(Tensor::scalar(2.5f64).item::<f64>().unwrap(), 2.5);
    assert!(t.item::<f32>().is_err());
    assert_eq!(
        Tensor::zeros(&[2], DType::I64).to_vec::<i64>().unwrap(),
        vec![0, 0]
    );
    assert_eq!(
        Tensor::ones(&[2], DType::Bool).to_vec::<bool>().unwrap(),
        vec![true, true]
    );
    assert_eq!(
        Tensor::full(&[3], 2.5, DType::F32).to_vec::<f32>().unwrap(),
        vec![2.5; 3]
    );
    assert_eq!(
        Tensor::arange(4, DType::I32).to_vec::<i32>().unwrap(),
        vec![0, 1, 2, 3]
    );
    assert_eq!(
        Tensor::arange_step(0.0, 1.0, 0.25, DType::F64)
            .unwrap()
            .to_vec::<f64>()
            .unwrap(),
        vec![0.0, 0.25, 0.5, 0.75]
    );
    let z = Tensor::zeros(&[0, 3], DType::F32);
    assert!(z.is_empty());
    assert_eq!((&z + 1.0).shape(), &[0, 3]);
}

#[test]
fn clones_share_storage() {
    let t = Tensor::from_vec(vec![1i32; 1000], &[1000]).unwrap();
    let u = t.clone();
    assert!(t.shares_buffer_with(&u));
    assert!(!t.shares_buffer_with(&(&t + 0)));
}

#[test]
fn eager_ops_broadcast_and_promote() {
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3, 1]).unwrap();
    let b = Tensor::vector(&[10.0f64, 20.0]);
    let c = &a + &b;
    assert_eq!(c.shape(), &[3, 2]);
    assert_eq!(c.dtype(), DType::F64);
    assert_eq!(
        c.to_vec::<f64>().unwrap(),
        vec![11.0, 21.0, 12.0, 22.0, 13.0, 23.0]
    );
    let i = Tensor::vector(&[1i32, 2]) + Tensor::vector(&[1i64, 1]);
    assert_eq!(i.dtype(), DType::I64);
    let f = Tensor::vector(&[1i32, 2]) * Tensor::vector(&[0.5f32, 0.5]);
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![0.5, 1.0]);
}

#[test]
fn eager_errors_name_op_shapes_and_line() {
    let a = Tensor::zeros(&[3], DType::F32);
    let b = Tensor::zeros(&[4], DType::F32);
    let line = line!() + 1;
    let r = std::panic::catch_unwind(|| &a + &b);
    let msg = *r.unwrap_err().downcast::<String>().unwrap();
    assert!(
        msg.contains("`add`") && msg.contains("f32[3]") && msg.contains("f32[4]"),
        "{msg}"
    );
    assert!(msg.contains(&format!("tensor_api.rs:{line}:")), "{msg}");
    let r = std::panic::catch_unwind(|| Tensor::vector(&[1i32]).exp());
    let msg = *r.unwrap_err().downcast::<String>().unwrap();
    assert!(
        msg.contains("`exp` does not accept a i32[1] tensor"),
        "{msg}"
    );
    let r = std::panic::catch_unwind(|| Tensor::vector(&[true]) + Tensor::vector(&[1.0f32]));
    let msg = *r.unwrap_err().downcast::<String>().unwrap();
    assert!(msg.contains("bool"), "{msg}");
}

#[test]
fn prints_like_numpy() {
    let t = Tensor::from_vec(vec![1.0f32, 2.5, -3.0, 4.0], &[2, 2]).unwrap();
    assert_eq!(t.to_string(), "[[ 1.   2.5]\n [-3.   4. ]]");
    assert_eq!(Tensor::vector(&[1i64, -20, 3]).to_string(), "[  1 -20   3]");
    assert_eq!(Tensor::vector(&[true, false]).to_string(), "[ True False]");
    assert_eq!(Tensor::scalar(3.0f64).to_string(), "3.");
    assert_eq!(Tensor::vector(&[1.0f32, 2.0]).to_string(), "[1. 2.]");
    assert_eq!(
        format!("{:?}", Tensor::vector(&[1i32, 2])),
        "Tensor([1 2], i32[2])"
    );
    let big = Tensor::arange(2000, DType::I32);
    assert_eq!(big.to_string(), "[   0    1    2 ... 1997 1998 1999]");
    // NumPy's text, digit for digit (f32 elements printed to the digits that identify them
    // as f32: their f64 values' eighth decimal, 1.00033331, is not NumPy's).
    let m = Tensor::arange(3000, DType::F32);
    assert_eq!(
        (m / 3000.0 + 1.0).to_string(),
        "[1.        1.0003333 1.0006666 ... 1.9990001 1.9993334 1.9996667]"
    );
    assert_eq!(Tensor::vector(&[1.1f32, 2.0]).to_string(), "[1.1 2. ]");
    assert_eq!(
        Tensor::vector(&[0.1f32, 1.0 / 3.0]).to_string(),
        "[0.1        0.33333334]"
    );
    assert_eq!(
        Tensor::vector(&[1.1f64, 2.0, -3.25]).to_string(),
        "[ 1.1   2.   -3.25]"
    );
    let sci = Tensor::vector(&[1e-8f64, 1.0]);
    assert_eq!(sci.to_string(), "[1.e-08 1.e+00]");
    assert_eq!(
        Tensor::vector(&[1e-8f32, 1.0]).to_string(),
        "[1.e-08 1.e+00]"
    );
    // In scientific form every mantissa has the longest one's digits.
    assert_eq!(
        Tensor::vector(&[1.5e-5f64, 3.0]).to_string(),
        "[1.5e-05 3.0e+00]"
    );
    assert_eq!(
        Tensor::vector(&[1e-5f32 / 3.0, 1.0]).to_string(),
        "[3.3333333e-06 1.0000000e+00]"
    );
    // At most 8 digits, rounded, then as few as show the rounded value.
    assert_eq!(
        Tensor::vector(&[1.23456789012e-5f64, 1.0]).to_string(),
        "[1.23456789e-05 1.00000000e+00]"
    );
    assert_eq!(
        Tensor::vector(&[1.2000000001e-5f64, 1.0]).to_string(),
        "[1.2e-05 1.0e+00]"
    );
}

#[test]
fn reading_a_traced_value_says_why_and_what_to_do() {
    let x = Tensor::zeros(&[3], DType::F32);
    let specs = [jitfuse::internals::trace::ParamSpec {
        shape: vec![3],
        dtype: DType::F32,
        weak: false,
    }];
    let mut seen = None;
    let r = jitfuse::internals::trace::trace(&specs, |ts| {
        seen = Some(ts[0].to_vec::<f32>().unwrap_err());
        vec![ts[0].clone()]
    });
    assert!(r.is_ok());
    let e = seen.unwrap();
    assert_eq!(e.kind, ErrorKind::TracedValue);
    assert!(
        e.to_string().contains("traced inside a #[jit] function"),
        "{e}"
    );
    assert!(
        e.to_string().contains("Return it from the jitted function"),
        "{e}"
    );
    assert!(x.to_vec::<f32>().is_ok());
}

#[test]
fn trace_errors_come_back_as_err_with_the_source_line() {
    let specs = [
        jitfuse::internals::trace::ParamSpec {
            shape: vec![3],
            dtype: DType::F32,
            weak: false,
        },
        jitfuse::internals::trace::ParamSpec {
            shape: vec![4],
            dtype: DType::F32,
            weak: false,
        },
    ];
    let line = line!() + 1;
    let e = jitfuse::internals::trace::trace(&specs, |ts| vec![(&ts[0] * 2.0) + &ts[1]])
        .err()
        .unwrap();
    assert_eq!(e.kind, ErrorKind::Shape);
    let msg = e.to_string();
    assert!(
        msg.contains("`add`") && msg.contains("f32[3]") && msg.contains("f32[4]"),
        "{msg}"
    );
    assert!(msg.contains(&format!("tensor_api.rs:{line}:")), "{msg}");
    // The trace stack is clean afterwards.
    assert!(!jitfuse::internals::trace::is_tracing());
}

#[test]
fn leaked_tracers_are_errors() {
    let specs = [jitfuse::internals::trace::ParamSpec {
        shape: vec![2],
        dtype: DType::F32,
        weak: false,
    }];
    let mut leaked = None;
    jitfuse::internals::trace::trace(&specs, |ts| {
        leaked = Some(ts[0].clone());
        vec![ts[0].clone()]
    })
    .unwrap();
    let leaked = leaked.unwrap();
    let r = std::panic::catch_unwind(|| leaked.exp());
    let msg = *r.unwrap_err().downcast::<String>().unwrap();
    assert!(msg.contains("after its #[jit] trace ended"), "{msg}");
    // Used inside a later trace, it is an error of that trace.
    let e = jitfuse::internals::trace::trace(&specs, |ts| vec![&ts[0] + &leaked])
        .err()
        .unwrap();
    assert_eq!(e.kind, ErrorKind::LeakedTracer);
}

/// Where `keeps_a_tracer` puts the tracer it should not keep.
static KEPT: std::sync::Mutex<Option<Tensor>> = std::sync::Mutex::new(None);

#[jitfuse::jit]
fn keeps_a_tracer(x: &Tensor) -> Tensor {
    *KEPT.lock().unwrap() = Some(x.exp());
    x * 2.0
}

#[jitfuse::jit]
fn takes_tensors(a: &Tensor, n: usize, b: Tensor, p: (Tensor, Tensor)) -> Tensor {
    a + &b * n as f64 + &p.0 + &p.1
}

#[jitfuse::jit]
fn reads_the_kept_tracer(x: &Tensor) -> Tensor {
    x + KEPT.lock().unwrap().as_ref().unwrap()
}

#[test]
fn a_tracer_kept_from_a_jit_body_is_a_leaked_tracer_everywhere() {
    let x = Tensor::vector(&[1.0f32, 2.0, 3.0]);
    keeps_a_tracer(&x);
    let leaked = KEPT.lock().unwrap().clone().unwrap();
    assert!(leaked.is_traced());
    let pair = || (x.clone(), x.clone());
    // An argument of a jitted call, by name; a tree's leaf by its index.
    let e = takes_tensors::try_call(&x, 1, leaked.clone(), pair()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeakedTracer, "{e}");
    for part in [
        "`takes_tensors`",
        "argument 2 (b)",
        "traced tensor f32[3]",
        "return it as an output",
    ] {
        assert!(e.message().contains(part), "`{part}` missing from: {e}");
    }
    let e = takes_tensors::try_call(&leaked, 1, x.clone(), pair()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeakedTracer, "{e}");
    assert!(e.message().contains("argument 0 (a)"), "{e}");
    let e = takes_tensors::try_call(&x, 1, x.clone(), (x.clone(), leaked.clone())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeakedTracer, "{e}");
    assert!(e.message().contains("argument 3 (p), leaf 1"), "{e}");
    // The plain call panics with that message.
    let m = panic_message(|| drop(takes_tensors(&x, 1, leaked.clone(), pair())));
    assert!(m.contains("argument 2 (b) is a traced tensor"), "{m}");
    // `lower` too.
    let e = takes_tensors::lower(&x, 1, leaked.clone(), pair())
        .err()
        .expect("lower fails");
    assert_eq!(e.kind(), ErrorKind::LeakedTracer, "{e}");
    // A compiled program run on it.
    let exe = takes_tensors::lower(&x, 1, x.clone(), pair())
        .unwrap()
        .compile()
        .unwrap();
    let e = exe
        .executable()
        .run_with(&[&x, &leaked, &x, &x])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeakedTracer, "{e}");
    assert!(
        e.message().contains("argument 1 is a traced tensor f32[3]"),
        "{e}"
    );
    // Read inside another function's trace.
    let e = reads_the_kept_tracer::try_call(&x).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeakedTracer, "{e}");
    // An eager op on it.
    let m = panic_message(|| drop(&leaked + &x));
    assert!(
        m.contains("`add`: a traced tensor was used after its #[jit] trace ended"),
        "{m}"
    );
}

#[test]
fn programs_check_arguments_before_running() {
    let g = jitfuse::internals::ir::parse("%0 = param 0 : f32[4]\n%1 = exp %0 : f32[4]\nreturn %1")
        .unwrap();
    let exe = jitfuse::internals::exec::Executable::from_graph(g, vec![]).unwrap();
    let e = exe
        .run_with(&[&Tensor::zeros(&[5], DType::F32)])
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("argument 0: program compiled for f32[4], got f32[5]"),
        "{e}"
    );
    let e = exe
        .run_with(&[&Tensor::zeros(&[4], DType::F64)])
        .unwrap_err();
    assert!(e.to_string().contains("got f64[4]"), "{e}");
    assert!(exe.run_with(&[]).is_err());
}

#[test]
fn dropping_a_program_frees_its_code() {
    let g = jitfuse::internals::ir::parse("%0 = param 0 : f32[4]\n%1 = neg %0 : f32[4]\nreturn %1")
        .unwrap();
    let exes: Vec<_> = (0..5)
        .map(|_| jitfuse::internals::exec::Executable::from_graph(g.clone(), vec![]).unwrap())
        .collect();
    let ids: Vec<u64> = exes.iter().map(|e| e.code_id()).collect();
    assert!(ids
        .iter()
        .all(|&i| jitfuse::internals::codegen::is_code_live(i)));
    drop(exes);
    assert!(ids
        .iter()
        .all(|&i| !jitfuse::internals::codegen::is_code_live(i)));
}

#[test]
fn captured_tensors_are_held_not_copied() {
    let big = Tensor::from_vec((0..1000).map(|i| i as f32).collect(), &[1000]).unwrap();
    let specs = [jitfuse::internals::trace::ParamSpec {
        shape: vec![1000],
        dtype: DType::F32,
        weak: false,
    }];
    let t =
        jitfuse::internals::trace::trace(&specs, |ts| vec![&ts[0] + &big, &ts[0] * &big]).unwrap();
    assert_eq!(t.captured.len(), 1, "one capture for two uses");
    assert!(t.captured[0].shares_buffer_with(&big));
    let exe = jitfuse::internals::exec::Executable::from_graph(t.graph, t.captured).unwrap();
    // Every element, with an argument unlike the capture (ones would hide a swap of the
    // two operands of the product, or an element read from the wrong place).
    let xv: Vec<f32> = (0..1000).map(|i| 0.5 - (i % 7) as f32).collect();
    let x = Tensor::from_vec(xv.clone(), &[1000]).unwrap();
    let out = exe.run_with(&[&x]).unwrap();
    let sum: Vec<f32> = (0..1000).map(|i| xv[i] + i as f32).collect();
    let prod: Vec<f32> = (0..1000).map(|i| xv[i] * i as f32).collect();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), sum);
    assert_eq!(out[1].to_vec::<f32>().unwrap(), prod);
}

#[test]
fn weak_scalars_take_the_tensor_dtype() {
    use jitfuse::internals::trace::{trace, ParamSpec};
    let specs = [
        ParamSpec {
            shape: vec![],
            dtype: DType::F64,
            weak: true,
        },
        ParamSpec {
            shape: vec![3],
            dtype: DType::F32,
            weak: false,
        },
    ];
    let t = trace(&specs, |ts| {
        vec![&ts[0] * &ts[1], &ts[0] * 2.0, ts[0].exp()]
    })
    .unwrap();
    assert_eq!(
        output_dtypes(&t.graph),
        [DType::F32, DType::F64, DType::F64],
        "{}",
        t.graph
    );
    // Eagerly too.
    let w = Tensor::scalar(0.5f64).into_weak();
    assert!(w.is_weak());
    assert_eq!((&w * Tensor::vector(&[1.0f32, 2.0])).dtype(), DType::F32);
    assert_eq!((&w * Tensor::vector(&[1i32, 2])).dtype(), DType::F32);
    assert!((&w * 2.0).is_weak());
    assert!(!(&w * Tensor::vector(&[1.0f32])).is_weak());
    // A select of weak values is weak (JAX's `where(c, 0.0, -inf)`): a causal bias added
    // to bf16 scores keeps them bf16; one strong value makes it strong.
    let c = Tensor::vector(&[1.0f32, 2.0]).gt(1.5);
    let bias = jitfuse::where_(&c, 0.0, f64::NEG_INFINITY);
    assert!(bias.is_weak() && bias.dtype() == DType::F32);
    let scores = Tensor::vector(&[1.0f32, 2.0]).cast(DType::BF16);
    assert_eq!((&scores + &bias).dtype(), DType::BF16);
    assert!(jitfuse::where_(&c, &w, 1.0).is_weak());
    let strong = jitfuse::where_(&c, Tensor::vector(&[1.0f32, 2.0]), 0.0);
    assert!(!strong.is_weak());
    assert_eq!((&scores + &strong).dtype(), DType::F32);
}

/// Views, data movement and reductions of weak values are weak (JAX's standard rule: weak
/// where every operand the values come from is weak), eagerly and traced: a causal bias
/// built from scalars, reshaped, broadcast or sliced before it meets bf16 scores, keeps them
/// bf16. A cast, an iota and one strong operand give strong results.
#[test]
fn views_and_reductions_of_weak_values_stay_weak() {
    use jitfuse::{Slice, Tensor};
    let rows = Tensor::iota(&[4, 4], 0, DType::I32);
    let cols = Tensor::iota(&[4, 4], 1, DType::I32);
    assert!(!rows.is_weak());
    let bias = jitfuse::where_(&cols.le(&rows), 0.0, f64::NEG_INFINITY);
    assert!(bias.is_weak());
    let scores = Tensor::from_vec((0..16).map(|i| i as f32).collect(), &[4, 4])
        .unwrap()
        .cast(DType::BF16);
    let weak = [
        ("reshape", bias.reshape(&[2, 8]).reshape(&[4, 4])),
        (
            "broadcast",
            bias.reshape(&[1, 4, 4]).broadcast_to(&[2, 4, 4]),
        ),
        ("transpose", bias.t()),
        ("slice", bias.slice(&[Slice::full(), Slice::rev()])),
        (
            "pad",
            bias.slice(&[Slice::full(), (1..).into()])
                .pad(&[(0, 0), (1, 0)], 0.0),
        ),
        (
            "concat",
            jitfuse::concat(
                &[&bias.slice(&[(..2).into()]), &bias.slice(&[(2..).into()])],
                0,
            ),
        ),
        ("take", bias.take(&Tensor::vector(&[3i32, 2, 1, 0]), 0)),
        ("sum", bias.sum_keepdims(1).broadcast_to(&[4, 4])),
        ("max", bias.max_keepdims(1).broadcast_to(&[4, 4])),
    ];
    for (what, b) in &weak {
        assert!(b.is_weak(), "{what}");
        assert_eq!(b.dtype(), DType::F32, "{what}");
        let added = &scores + b;
        assert_eq!(added.dtype(), DType::BF16, "{what}");
    }
    // The values are the ops' (a weak result is the same tensor, typed loosely).
    let flipped = weak[3].1.to_vec::<f32>().unwrap();
    assert_eq!(
        flipped[..4],
        [f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY, 0.0]
    );
    // Strong results.
    assert!(!bias.cast(DType::F32).is_weak());
    assert_eq!((&scores + &bias.cast(DType::F32)).dtype(), DType::F32);
    let strong = Tensor::vector(&[1.0f32; 4]).reshape(&[4, 1]);
    assert!(!jitfuse::concat(&[&bias, &strong.broadcast_to(&[4, 4])], 0).is_weak());
    // Beside a strong operand, a weak one takes its type (as in arithmetic).
    let mixed = jitfuse::concat(&[&bias, &scores], 0);
    assert!(!mixed.is_weak());
    assert_eq!(mixed.dtype(), DType::BF16);
    // Traced: a weak parameter reshaped and broadcast, added to bf16 scores.
    use jitfuse::internals::trace::{trace, ParamSpec};
    let specs = [
        ParamSpec {
            shape: vec![4],
            dtype: DType::F64,
            weak: true,
        },
        ParamSpec {
            shape: vec![4, 4],
            dtype: DType::BF16,
            weak: false,
        },
    ];
    let t = trace(&specs, |ts| {
        let b = ts[0].reshape(&[1, 4]).broadcast_to(&[4, 4]);
        vec![
            &ts[1] + &b,
            &ts[1] + &b.cast(DType::F32),
            &ts[1] + b.sum_all(),
        ]
    })
    .unwrap();
    assert_eq!(
        output_dtypes(&t.graph),
        [DType::BF16, DType::F32, DType::BF16],
        "{}",
        t.graph
    );
}

/// The dtypes of a graph's outputs.
fn output_dtypes(g: &jitfuse::internals::ir::Graph) -> Vec<DType> {
    g.outputs.iter().map(|&o| g.node(o).dtype).collect()
}

/// `f64` and `i32` scalars go on the left of an operator (an unsuffixed
/// literal infers to them); an `f32` or `i64` variable goes through
/// `f64::from(s)` or a weak scalar tensor, as `arith.rs` says: the same
/// dtype and values as the scalar on the right.
#[test]
fn scalars_on_the_left_match_the_right_hand_form() {
    let xf = Tensor::vector(&[1.5f32, -2.0, 0.1]);
    let xi = Tensor::vector(&[3i32, -4, 7]);
    let s = 0.1f32;
    let n = 5i64;
    // f32 scalar: f64::from(s) on the left is the weak `s` on the right.
    for x in [&xf, &xi] {
        let left = f64::from(s) - x;
        let right = -(x - s);
        assert_eq!(left.dtype(), right.dtype());
        assert_eq!(
            left.to_vec::<f32>().unwrap(),
            right.to_vec::<f32>().unwrap()
        );
        let left = f64::from(s) * x.clone();
        assert_eq!(left.dtype(), (x * s).dtype());
        assert_eq!(
            left.to_vec::<f32>().unwrap(),
            (x * s).to_vec::<f32>().unwrap()
        );
    }
    assert_eq!((2.0 * &xf).dtype(), DType::F32);
    assert_eq!((2.0 * &xi).dtype(), DType::F32);
    // i64 scalar: a weak scalar tensor on the left.
    let left = Tensor::scalar(n).into_weak() - &xi;
    assert_eq!(left.dtype(), DType::I32);
    assert_eq!(left.to_vec::<i32>().unwrap(), vec![2, 9, -2]);
    assert_eq!(left.dtype(), (3 - &xi).dtype());
    let left = Tensor::scalar(n).into_weak() / &xf;
    assert_eq!(left.dtype(), (&xf / n).dtype());
    assert_eq!(
        left.to_vec::<f32>().unwrap(),
        vec![5.0 / 1.5f32, 5.0 / -2.0, 5.0 / 0.1]
    );
}

#[test]
fn reading_a_traced_value_points_at_the_users_line() {
    let specs = [jitfuse::internals::trace::ParamSpec {
        shape: vec![3],
        dtype: DType::F32,
        weak: false,
    }];
    let mut err = None;
    let line = line!() + 2;
    jitfuse::internals::trace::trace(&specs, |ts| {
        err = ts[0].to_vec::<f32>().err();
        vec![ts[0].clone()]
    })
    .unwrap();
    let loc = err.unwrap().location.unwrap();
    assert_eq!(
        (loc.file(), loc.line()),
        ("tests/runtime/tensor_api.rs", line)
    );
}

#[test]
fn a_panic_in_the_traced_body_is_an_error() {
    let specs = [jitfuse::internals::trace::ParamSpec {
        shape: vec![3],
        dtype: DType::F32,
        weak: false,
    }];
    let e = jitfuse::internals::trace::trace(&specs, |ts| {
        let v = ts[0].to_vec::<f32>().unwrap();
        vec![Tensor::vector(&v)]
    })
    .err()
    .unwrap();
    assert_eq!(e.kind, ErrorKind::Panic);
    assert!(
        e.to_string().contains("the traced body panicked")
            && e.to_string().contains("traced inside a #[jit] function"),
        "{e}"
    );
    assert!(!jitfuse::internals::trace::is_tracing());
}

#[test]
fn two_shapes_of_one_buffer_are_two_captures() {
    let flat = Tensor::arange(6, DType::F32);
    let square = flat.reshape(&[2, 3]); // eager reshape: may share the buffer
    let specs = [jitfuse::internals::trace::ParamSpec {
        shape: vec![2, 3],
        dtype: DType::F32,
        weak: false,
    }];
    let t = jitfuse::internals::trace::trace(&specs, |ts| {
        vec![&ts[0] + &square, (&ts[0] * 2.0).reshape(&[6]) + &flat]
    })
    .unwrap();
    // An argument of distinct values (ones would not show its elements out of place).
    let x = Tensor::from_vec(vec![10.0f32, 20.0, 30.0, 40.0, 50.0, 60.0], &[2, 3]).unwrap();
    let sum = vec![10.0, 21.0, 32.0, 43.0, 54.0, 65.0];
    let doubled = vec![20.0, 41.0, 62.0, 83.0, 104.0, 125.0];
    let want =
        jitfuse::internals::interpret::eval_graph(&t.graph, &[x.clone()], &t.captured).unwrap();
    assert_eq!(want[0].to_vec::<f32>().unwrap(), sum);
    assert_eq!(want[1].to_vec::<f32>().unwrap(), doubled);
    let exe = jitfuse::internals::exec::Executable::from_graph(t.graph, t.captured).unwrap();
    let got = exe.run_with(&[&x]).unwrap();
    assert_eq!(got[0].to_vec::<f32>().unwrap(), sum);
    assert_eq!(got[1].to_vec::<f32>().unwrap(), doubled);
}

/// The message of what `f` panicked with (it must panic).
fn panic_message(f: impl FnOnce()) -> String {
    let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("it panics");
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn sizes_beyond_memory_addresses_are_shape_errors() {
    // 2^64 elements: the product wraps to 0, which an empty Vec "fills".
    let e = Tensor::from_vec(Vec::<f32>::new(), &[1 << 32, 1 << 32]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape);
    assert!(
        e.message
            .contains("`from_vec`: shape [4294967296, 4294967296] has 2^64.0 elements of f32"),
        "{e}"
    );
    // Fits in usize, but 2^63 bytes is one more than any allocation spans.
    let e = Tensor::try_zeros(&[1 << 60], DType::F64).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape);
    assert!(
        e.message
            .contains("`zeros`: shape [1152921504606846976] has 1152921504606846976 (2^60) elements of f64, more than fit in memory addresses"),
        "{e}"
    );
    // Empty, but (as in NumPy) the non-zero dimensions must fit too: their
    // products are strides and row lengths.
    let e = Tensor::try_zeros(&[0, usize::MAX], DType::F32).unwrap_err();
    assert!(
        e.message
            .contains("its non-zero dimensions have 18446744073709551615 elements of f32"),
        "{e}"
    );
    let e = Tensor::try_zeros(&[1 << 32, 1 << 32, 0], DType::F32).unwrap_err();
    assert!(
        e.message
            .contains("non-zero dimensions have 2^64.0 elements"),
        "{e}"
    );
    assert_eq!(Tensor::zeros(&[1 << 30, 1 << 30, 0], DType::F32).len(), 0);
    let e = Tensor::try_full(&[1 << 40, 1 << 40], 1.0, DType::F32).unwrap_err();
    assert!(e.message.contains("`full`: shape"), "{e}");
    let m = panic_message(|| drop(Tensor::zeros(&[usize::MAX, 2], DType::F32)));
    assert!(
        m.contains("`zeros`: shape [18446744073709551615, 2]"),
        "{m}"
    );
    // arange: 1e300 / 1e-300 elements is infinite (`as usize` saturates).
    let e = Tensor::arange_step(0.0, 1e300, 1e-300, DType::F32).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape);
    assert!(
        e.message
            .contains("`arange`: 0.0..1e300 step 1e-300 has inf elements"),
        "{e}"
    );
    let e = Tensor::arange_step(0.0, 1e19, 1.0, DType::F32).unwrap_err();
    assert!(e.message.contains("`arange`"), "{e}");
    assert_eq!(
        Tensor::arange_step(0.0, 1.0, 0.25, DType::F32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![0.0, 0.25, 0.5, 0.75]
    );
}

#[test]
fn shape_ops_check_their_sizes() {
    let x = Tensor::zeros(&[2, 3], DType::F32);
    let e = panic_message(|| drop(x.broadcast_to(&[usize::MAX, 2, 3])));
    assert!(
        e.contains("`broadcast_to`: shape [18446744073709551615, 2, 3] has 2^66.6 elements of f32"),
        "{e}"
    );
    let e = panic_message(|| drop(x.reshape(&[1 << 32, 1 << 32, 0, -1])));
    assert!(
        e.contains("`reshape` of f32[2,3] to [4294967296, 4294967296, 0, -1]"),
        "{e}"
    );
    // [0] reshapes to anything with no elements...
    let empty = Tensor::zeros(&[0], DType::F32);
    assert_eq!(empty.reshape(&[1 << 40, 0]).shape(), &[1 << 40, 0]);
    // ...but not to dimensions whose product wraps to 0.
    let e = panic_message(|| drop(empty.reshape(&[1 << 32, 1 << 32])));
    assert!(e.contains("more than 2^64 elements"), "{e}");
    let e = panic_message(|| drop(x.pad(&[(usize::MAX, 1), (0, 0)], 0.0)));
    assert!(
        e.contains("`pad`: axis 0 of f32[2,3] padded by (18446744073709551615, 1)"),
        "{e}"
    );
    let e = panic_message(|| drop(x.pad(&[(1 << 62, 0), (0, 0)], 0.0)));
    assert!(e.contains("`pad`: shape [4611686018427387906, 3]"), "{e}");
    let e = panic_message(|| drop(Tensor::iota(&[1 << 40, 1 << 40], 1, DType::I32)));
    assert!(
        e.contains("`iota`: shape [1099511627776, 1099511627776] has 2^80.0 elements of i32"),
        "{e}"
    );
    let e = panic_message(|| drop(Tensor::arange(1 << 62, DType::I64)));
    assert!(e.contains("`arange`: shape [4611686018427387904]"), "{e}");
    let i = Tensor::zeros(&[2], DType::I64);
    let e = panic_message(|| drop(i.one_hot(1 << 62)));
    assert!(
        e.contains("`one_hot`: shape [2, 4611686018427387904]"),
        "{e}"
    );
    // Empty: any number of classes.
    let i = Tensor::zeros(&[1 << 20, 0], DType::I64);
    assert_eq!(i.one_hot(1 << 30).shape(), &[1 << 20, 0, 1 << 30]);
}

#[test]
fn allocation_failures_are_out_of_memory_errors() {
    // 2^45 f32 are 2^47 bytes (128 TiB): beyond the 47-bit user address
    // space of x86-64, so the allocator refuses whatever the overcommit.
    let e = Tensor::try_zeros(&[1 << 45], DType::F32).unwrap_err();
    assert_eq!(e.kind, ErrorKind::OutOfMemory);
    assert!(
        e.message.contains(
            "out of memory: cannot allocate 140737488355328 bytes (128.00 TiB) for `zeros` of f32[35184372088832]"
        ),
        "{e}"
    );
    let m = panic_message(|| drop(Tensor::zeros(&[1 << 45], DType::F32)));
    assert!(m.contains("cannot allocate 140737488355328 bytes"), "{m}");
    let e = Tensor::try_full(&[1 << 20, 1 << 26], 2, DType::I64).unwrap_err();
    assert_eq!(e.kind, ErrorKind::OutOfMemory);
    assert!(
        e.message
            .contains("(512.00 TiB) for `full` of i64[1048576,67108864]"),
        "{e}"
    );
    let e = Tensor::arange_step(0.0, (1u64 << 50) as f64, 1.0, DType::F32).unwrap_err();
    assert_eq!(e.kind, ErrorKind::OutOfMemory);
    assert!(
        e.message
            .contains("range 0.0..1125899906842624.0 step 1.0: out of memory"),
        "{e}"
    );
    // An eager op whose result cannot be allocated panics with the error
    // (its `Result` form is `try_call` of a jitted function).
    let x = Tensor::zeros(&[1], DType::F32);
    let m = panic_message(|| drop(x.broadcast_to(&[1 << 46]) + 1.0));
    assert!(
        m.contains("out of memory: cannot allocate 281474976710656 bytes (256.00 TiB) for the result of `broadcast` (f32[70368744177664])"),
        "{m}"
    );
    let m = panic_message(|| drop(x.pad(&[(1 << 46, 0)], 0.0)));
    assert!(m.contains("for the result of `pad`"), "{m}");
    // Nothing was leaked or poisoned: ordinary allocations still work.
    assert_eq!(
        Tensor::zeros(&[3], DType::F32).to_vec::<f32>().unwrap(),
        vec![0.0; 3]
    );
}
