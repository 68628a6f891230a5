//! The `#[jit]` attribute: compile-time diagnostics (trybuild, one test) and
//! the generated API at run time, checked against the eager computation.

use jitfuse::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Barrier, RwLock};

/// `jitfuse::clear_caches()` clears every function's cache: the test calling
/// it takes this lock for writing, tests that count hits and misses for
/// reading.
static CACHES: RwLock<()> = RwLock::new(());

fn vec32(data: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(data, shape).unwrap()
}

fn ramp(n: usize, scale: f32) -> Tensor {
    let data: Vec<f32> = (0..n)
        .map(|i| (i as f32 - n as f32 / 2.0) * scale)
        .collect();
    vec32(&data, &[n])
}

fn assert_close(got: &Tensor, want: &Tensor) {
    assert_eq!(got.shape(), want.shape());
    assert_eq!(got.dtype(), want.dtype());
    match got.dtype() {
        DType::F64 => {
            for (g, w) in got
                .to_vec::<f64>()
                .unwrap()
                .iter()
                .zip(want.to_vec::<f64>().unwrap())
            {
                assert!((g - w).abs() <= 1e-9 * (1.0 + w.abs()), "{g} != {w}");
            }
        }
        _ => {
            for (g, w) in got
                .to_vec::<f32>()
                .unwrap()
                .iter()
                .zip(want.to_vec::<f32>().unwrap())
            {
                assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{g} != {w}");
            }
        }
    }
}

/// Defines `#[jit] fn $jit` and a plain `fn $eager` with the same signature
/// and body: the eager one runs the ops directly on concrete tensors.
macro_rules! twin {
    ($jit:ident / $eager:ident ($($p:ident: $t:ty),*) -> $r:ty { $($body:tt)* }) => {
        #[jit]
        fn $jit($($p: $t),*) -> $r { $($body)* }
        fn $eager($($p: $t),*) -> $r { $($body)* }
    };
}

twin!(gelu / gelu_eager (x: &Tensor) -> Tensor {
    0.5 * x * (1.0 + (0.797_884_56 * (x + 0.044_715 * x * x * x)).tanh())
});

twin!(rms / rms_eager (x: &Tensor) -> Tensor {
    x / (x * x + 1e-5).sqrt()
});

twin!(owned_affine / owned_affine_eager (x: Tensor, b: &Tensor) -> (Tensor, Tensor) {
    let y = x * 3.0 + b;
    let z = y.exp();
    (y, z)
});

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Act {
    Relu,
    Tanh,
}

twin!(act_n / act_n_eager (x: &Tensor, n: usize, act: Act, double: bool) -> Tensor {
    let mut y = x.clone();
    for _ in 0..n {
        y = match act {
            Act::Relu => y.relu() - 0.5,
            Act::Tanh => y.tanh(),
        };
    }
    if double { &y + &y } else { y }
});

// Traced scalars are `&Tensor`s in the body: the eager twin binds them the
// same way by hand.
#[jit]
fn sgd(w: &Tensor, dw: &Tensor, lr: f32) -> Tensor {
    w - lr * dw
}
fn sgd_eager(w: &Tensor, dw: &Tensor, lr: f32) -> Tensor {
    let lr = &Tensor::scalar(lr);
    w - lr * dw
}

#[jit]
fn axpy64(a: f64, x: &Tensor, y: &Tensor) -> Tensor {
    a * x + y
}

#[test]
fn results_equal_the_eager_computation() {
    let x = ramp(37, 0.25);
    let b = ramp(37, -0.1);
    assert_close(&gelu(&x), &gelu_eager(&x));
    assert_close(&rms(&x), &rms_eager(&x));
    let (y, z) = owned_affine(x.clone(), &b);
    let (ye, ze) = owned_affine_eager(x.clone(), &b);
    assert_close(&y, &ye);
    assert_close(&z, &ze);
    for (n, act, double) in [
        (0, Act::Relu, false),
        (2, Act::Relu, true),
        (3, Act::Tanh, false),
    ] {
        assert_close(&act_n(&x, n, act, double), &act_n_eager(&x, n, act, double));
    }
    assert_close(&sgd(&x, &b, 0.125), &sgd_eager(&x, &b, 0.125));
    let x64 = Tensor::from_vec(vec![1.0f64, 2.0, -3.0], &[3]).unwrap();
    let y64 = Tensor::from_vec(vec![0.5f64, 0.25, 0.125], &[3]).unwrap();
    let want = Tensor::from_vec(vec![1.5f64 + 0.5, 3.0 + 0.25, -4.5 + 0.125], &[3]).unwrap();
    assert_close(&axpy64(1.5, &x64, &y64), &want);
    // A 2-d input through the same function: a new signature.
    let m = vec32(&[0.5, -1.0, 2.0, 0.0, 1.0, -0.25], &[2, 3]);
    assert_close(&gelu(&m), &gelu_eager(&m));
}

#[jit]
fn shapes_fn(x: &Tensor) -> Tensor {
    x.exp() + 1.0
}

#[test]
fn new_shape_misses_same_shape_hits() {
    let _g = CACHES.read().unwrap();
    assert_eq!(shapes_fn::cache_stats(), jitfuse::CacheStats::default());
    shapes_fn(&ramp(4, 1.0));
    let s = shapes_fn::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (0, 1, 1));
    shapes_fn(&ramp(4, 2.0));
    let s = shapes_fn::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
    shapes_fn(&ramp(5, 1.0));
    let s = shapes_fn::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 2, 2));
    // Same length, other rank: a new signature.
    shapes_fn(&vec32(&[1.0, 2.0, 3.0, 4.0], &[2, 2]));
    let s = shapes_fn::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 3, 3));
    // Same shape, other dtype: a new signature.
    shapes_fn(&Tensor::from_vec(vec![1.0f64; 4], &[4]).unwrap());
    let s = shapes_fn::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 4, 4));
}

#[jit]
fn scaled(x: &Tensor, s: f32) -> Tensor {
    x * s
}

#[test]
fn a_new_scalar_value_does_not_recompile() {
    let _g = CACHES.read().unwrap();
    let x = vec32(&[1.0, 2.0, 3.0], &[3]);
    assert_eq!(
        scaled(&x, 2.0).to_vec::<f32>().unwrap(),
        vec![2.0, 4.0, 6.0]
    );
    assert_eq!(
        scaled(&x, -0.5).to_vec::<f32>().unwrap(),
        vec![-0.5, -1.0, -1.5]
    );
    let s = scaled::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
}

#[jit]
fn repeat_exp(x: &Tensor, n: usize) -> Tensor {
    let mut y = x.clone();
    for _ in 0..n {
        y = y.exp();
    }
    y
}

#[test]
fn a_new_static_value_recompiles() {
    let _g = CACHES.read().unwrap();
    let x = vec32(&[0.0, 0.5], &[2]);
    repeat_exp(&x, 1);
    repeat_exp(&x, 2);
    repeat_exp(&x, 1);
    let s = repeat_exp::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 2, 2));
    assert_close(&repeat_exp(&x, 2), &x.exp().exp());
}

#[jit]
fn cleared_one(x: &Tensor) -> Tensor {
    x.abs()
}

#[jit]
fn cleared_all(x: &Tensor) -> Tensor {
    x.square()
}

#[test]
fn clear_cache_and_clear_caches() {
    let _g = CACHES.write().unwrap();
    let x = ramp(6, 1.0);
    cleared_one(&x);
    cleared_one::clear_cache();
    let s = cleared_one::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (0, 1, 0));
    cleared_one(&x);
    let s = cleared_one::cache_stats();
    assert_eq!(
        (s.hits, s.misses, s.entries),
        (0, 2, 1),
        "the call after clear_cache recompiles"
    );

    cleared_all(&x);
    jitfuse::clear_caches();
    assert_eq!(cleared_all::cache_stats().entries, 0);
    assert_eq!(cleared_one::cache_stats().entries, 0);
    cleared_all(&x);
    let s = cleared_all::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (0, 2, 1));
}

#[test]
fn lower_shows_the_traced_ops() {
    let text = gelu::lower(&ramp(8, 0.5)).unwrap().as_text();
    assert!(text.contains("tanh"), "{text}");
    assert!(text.contains("kernel"), "{text}");
    assert!(text.contains("gelu"), "{text}");
}

#[jit]
fn concurrent(x: &Tensor) -> Tensor {
    (x * 2.0).sigmoid()
}

#[test]
fn concurrent_first_calls_compile_once() {
    let _g = CACHES.read().unwrap();
    const THREADS: usize = 8;
    let x = ramp(64, 0.1);
    let want = concurrent_eager_reference(&x);
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                assert_close(&concurrent(&x), &want);
            });
        }
    });
    let s = concurrent::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (THREADS as u64 - 1, 1, 1));
}

fn concurrent_eager_reference(x: &Tensor) -> Tensor {
    (x * 2.0).sigmoid()
}

/// Set by the body, from `line!()` on the line of the offending `+`.
static MISMATCH_LINE: AtomicU32 = AtomicU32::new(0);

#[rustfmt::skip]
#[jit]
fn mismatch(a: &Tensor, b: &Tensor) -> Tensor {
    let c = a.exp();
    MISMATCH_LINE.store(line!(), Ordering::Relaxed); let bad = &c + b;
    bad.tanh()
}

#[test]
fn a_shape_error_names_op_shapes_and_user_line() {
    let a = vec32(&[1.0, 2.0, 3.0], &[3]);
    let b = vec32(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let err = mismatch::try_call(&a, &b).unwrap_err();
    let msg = err.to_string();
    let line = MISMATCH_LINE.load(Ordering::Relaxed);
    assert_ne!(line, 0);
    for part in ["add", "f32[3]", "f32[4]", file!(), &format!(":{line}:")] {
        assert!(msg.contains(part), "`{part}` missing from: {msg}");
    }
    assert_eq!(err.location.map(|l| l.line()), Some(line));
    let panic = catch_unwind(AssertUnwindSafe(|| mismatch(&a, &b))).unwrap_err();
    let text = panic
        .downcast_ref::<String>()
        .expect("a formatted panic message");
    assert_eq!(text, &msg);
}

#[jit]
fn inlined_inner(x: &Tensor) -> Tensor {
    x.sin() * 2.0
}

#[jit]
fn inlining_outer(x: &Tensor) -> Tensor {
    inlined_inner(x).cos()
}

#[test]
fn a_jit_call_inside_a_trace_is_inlined() {
    let _g = CACHES.read().unwrap();
    let x = ramp(10, 0.3);
    let text = inlining_outer::lower(&x).unwrap().graph_text();
    assert!(text.contains("sin") && text.contains("cos"), "{text}");
    assert_close(&inlining_outer(&x), &(x.sin() * 2.0).cos());
    assert_eq!(inlined_inner::cache_stats(), jitfuse::CacheStats::default());
    let s = inlining_outer::cache_stats();
    assert_eq!((s.hits, s.misses), (0, 1));
}

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui_pass/*.rs");
    t.compile_fail("tests/ui/*.rs");
}
