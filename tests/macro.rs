//! The `#[jit]` attribute: compile-time diagnostics (trybuild, one test) and
//! the generated API at run time, checked against the eager computation.

use jitfuse::prelude::*;
use jitfuse::ErrorKind;
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

/// Compiled against eager, normwise: `|g - w| <= rel*|w| + abs*max|w|`. The floor scales
/// with the result (sums and `1 + tanh` cancel to elements far below their neighbours),
/// where an absolute 1e-5 passed small results such as exp(-14) whatever their value.
fn assert_close(got: &Tensor, want: &Tensor) {
    assert_eq!(got.shape(), want.shape());
    assert_eq!(got.dtype(), want.dtype());
    let (g, w, rel, abs): (Vec<f64>, Vec<f64>, f64, f64) = match got.dtype() {
        DType::F64 => (
            got.to_vec::<f64>().unwrap(),
            want.to_vec::<f64>().unwrap(),
            1e-12,
            1e-13,
        ),
        _ => (
            got.to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f64::from)
                .collect(),
            want.to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f64::from)
                .collect(),
            1e-5,
            1e-6,
        ),
    };
    let scale = w.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (i, (g, w)) in g.iter().zip(&w).enumerate() {
        assert!(
            (g - w).abs() <= rel * w.abs() + abs * scale,
            "element {i}: {g} != {w}"
        );
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
    // Every call's result too: a hit must run the cached program on the new values.
    let call = |x: &Tensor| assert_close(&shapes_fn(x), &(x.exp() + 1.0));
    call(&ramp(4, 1.0));
    let s = shapes_fn::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (0, 1, 1));
    call(&ramp(4, 2.0));
    let s = shapes_fn::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
    call(&ramp(5, 1.0));
    let s = shapes_fn::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 2, 2));
    // Same length, other rank: a new signature.
    call(&vec32(&[1.0, 2.0, 3.0, 4.0], &[2, 2]));
    let s = shapes_fn::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 3, 3));
    // Same shape, other dtype: a new signature.
    call(&Tensor::from_vec(vec![-1.5f64, 0.25, 1.0, 2.5], &[4]).unwrap());
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
    assert_close(&repeat_exp(&x, 1), &x.exp());
    assert_close(&repeat_exp(&x, 2), &x.exp().exp());
    assert_close(&repeat_exp(&x, 1), &x.exp());
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
    assert_close(&cleared_one(&x), &x.abs());
    cleared_one::clear_cache();
    let s = cleared_one::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (0, 1, 0));
    assert_close(&cleared_one(&x), &x.abs());
    let s = cleared_one::cache_stats();
    assert_eq!(
        (s.hits, s.misses, s.entries),
        (0, 2, 1),
        "the call after clear_cache recompiles"
    );

    assert_close(&cleared_all(&x), &x.square());
    jitfuse::clear_caches();
    assert_eq!(cleared_all::cache_stats().entries, 0);
    assert_eq!(cleared_one::cache_stats().entries, 0);
    assert_close(&cleared_all(&x), &x.square());
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
fn lowered_then_called(x: &Tensor) -> Tensor {
    x.exp() - 1.0
}

#[test]
fn lower_compile_fills_the_cache_and_a_call_then_hits() {
    let _g = CACHES.read().unwrap();
    let x = ramp(5, 0.5);
    let lowered = lowered_then_called::lower(&x).unwrap();
    assert!(lowered.as_text().contains("exp"));
    assert_eq!(
        lowered_then_called::cache_stats(),
        jitfuse::CacheStats::default(),
        "lower and as_text leave the cache alone"
    );
    let compiled = lowered.compile().unwrap();
    let s = lowered_then_called::cache_stats();
    assert_eq!(
        (s.hits, s.misses, s.entries),
        (0, 1, 1),
        "compile() caches the program"
    );
    assert_close(&lowered_then_called(&x), &(x.exp() - 1.0));
    let s = lowered_then_called::cache_stats();
    assert_eq!(
        (s.hits, s.misses, s.entries),
        (1, 1, 1),
        "the call does not compile again"
    );
    // Compiling again takes the cached program.
    let again = lowered.compile().unwrap();
    assert!(std::sync::Arc::ptr_eq(
        compiled.executable(),
        again.executable()
    ));
    let s = lowered_then_called::cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (2, 1, 1));
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
    // The accessors read the same fields.
    assert_eq!(err.kind(), ErrorKind::Shape);
    assert_eq!(err.message(), err.message);
    assert_eq!(
        err.location().map(|l| (l.file(), l.line())),
        Some((file!(), line))
    );
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

// ---- trees: #[derive(Tree)], tree parameters and returns ----

#[derive(Tree, Clone, Debug)]
struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

#[derive(Tree, Clone)]
struct Pair(Tensor, (Tensor, Option<Tensor>));

#[derive(Tree, Clone)]
struct Layer<T: Tree> {
    main: T,
    extra: Vec<T>,
}

#[derive(Tree, Clone)]
struct Nothing;

fn values(t: &impl Tree) -> Vec<Vec<f32>> {
    t.leaves()
        .iter()
        .map(|l| l.to_vec::<f32>().unwrap())
        .collect()
}

fn s(v: f32) -> Tensor {
    Tensor::scalar(v)
}

#[test]
fn derived_trees_visit_fields_in_declaration_order() {
    let m = Mlp {
        w1: s(1.0),
        b1: s(2.0),
        w2: s(3.0),
        b2: s(4.0),
    };
    assert_eq!(values(&m), [[1.0], [2.0], [3.0], [4.0]]);
    let p = Pair(s(1.0), (s(2.0), Some(s(3.0))));
    assert_eq!(values(&p), [[1.0], [2.0], [3.0]]);
    let q = Pair(s(1.0), (s(2.0), None));
    assert_eq!(values(&q), [[1.0], [2.0]]);
    let l = Layer {
        main: m.clone(),
        extra: vec![m.map(|t| t * 10.0)],
    };
    assert_eq!(
        values(&l),
        [[1.0], [2.0], [3.0], [4.0], [10.0], [20.0], [30.0], [40.0]]
    );
    let lt = Layer {
        main: s(5.0),
        extra: vec![s(6.0), s(7.0)],
    };
    assert_eq!(values(&lt), [[5.0], [6.0], [7.0]]);
    assert!(Nothing.leaves().is_empty());
    // The structure (cache key) tells `Some` from `None` and Vec lengths.
    let structure = |t: &dyn Fn(&mut Vec<usize>)| {
        let mut v = Vec::new();
        t(&mut v);
        v
    };
    assert_eq!(structure(&|v| p.structure(v)), [1]);
    assert_eq!(structure(&|v| q.structure(v)), [0]);
    assert_eq!(structure(&|v| lt.structure(v)), [2]);
    assert_eq!(structure(&|v| l.structure(v)), [1]);
}

#[test]
fn derived_trees_map_zip_map_and_rebuild() {
    let m = Mlp {
        w1: s(1.0),
        b1: s(2.0),
        w2: s(3.0),
        b2: s(4.0),
    };
    let doubled = m.map(|t| t * 2.0);
    assert_eq!(values(&doubled), [[2.0], [4.0], [6.0], [8.0]]);
    let diff = m.zip_map(&doubled, |a, b| b - a);
    assert_eq!(values(&diff), [[1.0], [2.0], [3.0], [4.0]]);
    assert_eq!(diff.w2.to_vec::<f32>().unwrap(), [3.0]);
    let rebuilt = m.rebuild(&mut vec![s(9.0), s(8.0), s(7.0), s(6.0)].into_iter());
    assert_eq!(values(&rebuilt), [[9.0], [8.0], [7.0], [6.0]]);
    assert_eq!(rebuilt.b1.to_vec::<f32>().unwrap(), [8.0]);
    let p = Pair(s(1.0), (s(2.0), Some(s(3.0))));
    let p2 = p.rebuild(&mut vec![s(4.0), s(5.0), s(6.0)].into_iter());
    assert_eq!(p2.1 .1.unwrap().to_vec::<f32>().unwrap(), [6.0]);
    let l = Layer {
        main: s(1.0),
        extra: vec![s(2.0), s(3.0)],
    };
    let l2 = l.zip_map(&l.map(|t| t * 3.0), |a, b| a + b);
    assert_eq!(values(&l2), [[4.0], [8.0], [12.0]]);
}

/// A deterministic pseudo-random tensor in [-scale, scale).
fn noise(shape: &[usize], seed: u64, scale: f32) -> Tensor {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect();
    vec32(&data, shape)
}

fn init_mlp(d_in: usize, hidden: usize, d_out: usize) -> Mlp {
    Mlp {
        w1: noise(&[d_in, hidden], 1, 0.5),
        b1: noise(&[hidden], 2, 0.1),
        w2: noise(&[hidden, d_out], 3, 0.5),
        b2: noise(&[d_out], 4, 0.1),
    }
}

/// Inputs and one-hot labels of a small classification problem.
fn batch(n: usize, d_in: usize, d_out: usize) -> (Tensor, Tensor) {
    let x = noise(&[n, d_in], 5, 1.0);
    let xs = x.to_vec::<f32>().unwrap();
    let mut y = vec![0.0f32; n * d_out];
    for i in 0..n {
        let class = (xs[i * d_in].abs() * 7.0) as usize % d_out;
        y[i * d_out + class] = 1.0;
    }
    (x, vec32(&y, &[n, d_out]))
}

fn loss(p: &Mlp, x: &Tensor, y: &Tensor) -> Tensor {
    let h = (x.matmul(&p.w1) + &p.b1).relu();
    softmax_cross_entropy(&(h.matmul(&p.w2) + &p.b2), y)
}

// The design guide's example, as written there.
#[jit]
fn train_step(p: Mlp, x: &Tensor, y: &Tensor, lr: f32) -> (Mlp, Tensor) {
    let (l, g) = value_and_grad(|p: &Mlp| loss(p, x, y), &p);
    (p.zip_map(&g, |w, dw| w - lr * dw), l)
}

fn train_step_eager(p: Mlp, x: &Tensor, y: &Tensor, lr: f32) -> (Mlp, Tensor) {
    let lr = &Tensor::scalar(lr);
    let (l, g) = value_and_grad(|p: &Mlp| loss(p, x, y), &p);
    (p.zip_map(&g, |w, dw| w - lr * dw), l)
}

#[test]
fn train_step_decreases_the_loss_and_equals_the_eager_step() {
    let (x, y) = batch(16, 4, 3);
    let mut p = init_mlp(4, 8, 3);
    let mut pe = p.clone();
    let mut losses = Vec::new();
    for _ in 0..8 {
        let (np, l) = train_step(p, &x, &y, 0.5);
        let (npe, le) = train_step_eager(pe, &x, &y, 0.5);
        assert_close(&l, &le);
        for (a, b) in np.leaves().iter().zip(npe.leaves()) {
            assert_close(a, &b);
        }
        assert_eq!(l.shape(), &[] as &[usize]);
        losses.push(l.to_vec::<f32>().unwrap()[0]);
        (p, pe) = (np, npe);
    }
    assert!(
        losses.windows(2).all(|w| w[1] < w[0]),
        "loss does not decrease: {losses:?}"
    );
    assert!(losses[7] < 0.9 * losses[0], "{losses:?}");
    let s = train_step::cache_stats();
    assert_eq!((s.misses, s.entries), (1, 1), "one signature for all steps");
}

#[jit]
fn sgd_tree(p: Mlp, g: &Mlp, lr: f32) -> Mlp {
    p.zip_map(g, |w, dw| w - lr * dw)
}

fn addrs(t: &impl Tree) -> Vec<usize> {
    t.leaves()
        .iter()
        .map(|l| l.storage_addr().unwrap())
        .collect()
}

#[test]
fn owned_tree_parameters_are_donated_when_unshared() {
    let p = init_mlp(4, 8, 3);
    let g = init_mlp(4, 8, 3).map(|t| t * 0.5);
    let want = p.zip_map(&g, |w, dw| w - 0.25 * dw);
    let before = addrs(&p);
    let out = sgd_tree(p, &g, 0.25);
    for (a, b) in out.leaves().iter().zip(want.leaves()) {
        assert_close(a, &b);
    }
    let after = addrs(&out);
    assert!(
        after.iter().any(|a| before.contains(a)),
        "no output reuses a parameter leaf: {before:?} {after:?}"
    );
    // The caller keeps a copy: its buffers are shared, so never written.
    let p = init_mlp(4, 8, 3);
    let kept = p.clone();
    let kept_values = values(&kept);
    let out = sgd_tree(p, &g, 0.25);
    assert!(addrs(&out).iter().all(|a| !addrs(&kept).contains(a)));
    assert_eq!(values(&kept), kept_values);
    // Borrowed trees are never written either.
    let out2 = sgd_tree(kept.clone(), &g, 0.25);
    assert_eq!(values(&g), values(&init_mlp(4, 8, 3).map(|t| t * 0.5)));
    assert_eq!(values(&out2), values(&out));
}

#[jit]
fn tree_sum(p: &(Tensor, Vec<Tensor>), o: Option<Tensor>, scale: [Tensor; 2]) -> Tensor {
    let mut acc = &p.0 * &scale[0];
    for t in &p.1 {
        acc = acc + t;
    }
    match o {
        Some(t) => acc * t * &scale[1],
        None => acc,
    }
}

#[test]
fn a_new_tree_structure_or_leaf_shape_recompiles() {
    let _g = CACHES.read().unwrap();
    // Leaves of distinct values (one tensor in every leaf would not show a leaf read in
    // place of another), and the expected sums computed element by element.
    let leaf = |n: usize, k: f32| ramp(n, k);
    let sc = || [s(2.0), s(10.0)];
    let call = |p: &(Tensor, Vec<Tensor>), o: Option<Tensor>| {
        let r = tree_sum(p, o, sc());
        let st = tree_sum::cache_stats();
        (r.to_vec::<f32>().unwrap(), st.hits, st.misses)
    };
    let want = |p: &(Tensor, Vec<Tensor>), o: Option<f32>| -> Vec<f32> {
        let v = |t: &Tensor| t.to_vec::<f32>().unwrap();
        let mut acc: Vec<f32> = v(&p.0).iter().map(|x| x * 2.0).collect();
        for t in &p.1 {
            for (a, x) in acc.iter_mut().zip(v(t)) {
                *a += x;
            }
        }
        match o {
            Some(o) => acc.iter().map(|a| a * o * 10.0).collect(),
            None => acc,
        }
    };
    let p2 = (leaf(3, 1.0), vec![leaf(3, -0.5), leaf(3, 0.25)]);
    let p3 = (
        leaf(3, 1.0),
        vec![leaf(3, -0.5), leaf(3, 0.25), leaf(3, 4.0)],
    );
    assert_eq!(call(&p2, None), (want(&p2, None), 0, 1));
    let r = call(&p2, None);
    assert_eq!((r.1, r.2), (1, 1), "same structure and shapes hit");
    // A longer Vec: new structure.
    assert_eq!(call(&p3, None), (want(&p3, None), 1, 2));
    // `Some` instead of `None`: new structure.
    let r = call(&p2, Some(s(0.5)));
    assert_eq!((r.1, r.2), (1, 3));
    assert_eq!(r.0, want(&p2, Some(0.5)));
    // A leaf of a new shape.
    let p2b = (leaf(4, 1.0), vec![leaf(4, 2.0), leaf(4, -3.0)]);
    let r = call(&p2b, None);
    assert_eq!((r.1, r.2), (1, 4));
    assert_eq!(r.0, want(&p2b, None));
    // Back to known signatures: hits, with their own results.
    let (r3, r2) = (call(&p3, None), call(&p2, Some(s(0.5))));
    assert_eq!((r3.1, r2.1), (2, 3));
    assert_eq!((r3.0, r2.0), (want(&p3, None), want(&p2, Some(0.5))));
    assert_eq!(tree_sum::cache_stats().entries, 4);
}

#[jit]
fn split(x: &Tensor, n: usize) -> Vec<Tensor> {
    (0..n).map(|i| x * (i as f64 + 1.0)).collect()
}

#[jit]
fn pair_of_trees(p: &Mlp, x: &Tensor) -> ((Tensor, Mlp), Option<Tensor>) {
    ((x.matmul(&p.w1), p.map(|t| t * -1.0)), Some(x.sum_all()))
}

#[test]
fn tree_returns_are_rebuilt_on_hits() {
    let _g = CACHES.read().unwrap();
    let x = ramp(3, 1.0);
    for _ in 0..2 {
        for n in [2, 3] {
            let ys = split(&x, n);
            assert_eq!(ys.len(), n);
            for (i, y) in ys.iter().enumerate() {
                assert_close(y, &(&x * (i + 1) as f64));
            }
        }
    }
    let st = split::cache_stats();
    assert_eq!((st.hits, st.misses), (2, 2));
    let p = init_mlp(3, 5, 2);
    let x = noise(&[2, 3], 9, 1.0);
    for _ in 0..2 {
        let ((h, neg), sum) = pair_of_trees(&p, &x);
        assert_close(&h, &x.matmul(&p.w1));
        for (a, b) in neg.leaves().iter().zip(p.leaves()) {
            assert_close(a, &(&b * -1.0));
        }
        assert_close(&sum.unwrap(), &x.sum_all());
    }
    assert_eq!(pair_of_trees::cache_stats().hits, 1);
}

#[jit]
fn forward(p: &Mlp, x: &Tensor) -> Tensor {
    (x.matmul(&p.w1) + &p.b1).relu().matmul(&p.w2) + &p.b2
}

#[jit]
fn forward_twice(p: &Mlp, x: &Tensor) -> Tensor {
    forward(p, x) + forward(p, x)
}

#[test]
fn a_jit_with_tree_parameters_inlines_into_another_trace() {
    let _g = CACHES.read().unwrap();
    let p = init_mlp(4, 8, 3);
    let (x, _) = batch(5, 4, 3);
    let want = {
        let h = (x.matmul(&p.w1) + &p.b1).relu().matmul(&p.w2) + &p.b2;
        &h + &h
    };
    assert_close(&forward_twice(&p, &x), &want);
    assert_eq!(forward::cache_stats(), jitfuse::CacheStats::default());
}

// ---- control flow: `if`/`while`/`for` on static values run at trace time ----

/// Lines of the traced graph that apply `op`.
fn count_op(graph: &str, op: &str) -> usize {
    graph
        .lines()
        .filter(|l| l.contains(&format!("= {op} ")))
        .count()
}

twin!(branchy / branchy_eager (x: &Tensor, neg: bool, mode: usize) -> Tensor {
    let y;
    if mode == 0 {
        y = x.exp();
    } else if mode == 1 {
        y = x.tanh();
    } else {
        y = x * 2.0;
    }
    let z = if neg { -&y } else { y.clone() };
    z + 1.0
});

#[test]
fn a_static_bool_chooses_the_traced_branch() {
    let _g = CACHES.read().unwrap();
    let x = ramp(9, 0.3);
    for neg in [false, true] {
        for mode in 0..3 {
            assert_close(&branchy(&x, neg, mode), &branchy_eager(&x, neg, mode));
        }
    }
    let s = branchy::cache_stats();
    assert_eq!(
        (s.misses, s.entries),
        (6, 6),
        "each static value compiles once"
    );
    // Only the taken branch is traced.
    let g = branchy::lower(&x, false, 0).unwrap().graph_text();
    assert_eq!((count_op(&g, "exp"), count_op(&g, "tanh")), (1, 0), "{g}");
    assert_eq!(count_op(&g, "neg"), 0, "{g}");
    let g = branchy::lower(&x, true, 1).unwrap().graph_text();
    assert_eq!((count_op(&g, "exp"), count_op(&g, "tanh")), (0, 1), "{g}");
}

twin!(unrolled / unrolled_eager (x: &Tensor, n: usize) -> Tensor {
    let mut acc = x.clone();
    for i in 0..n {
        acc = acc.sin() + i as f64;
    }
    acc
});

#[test]
fn a_for_over_a_static_range_unrolls() {
    let _g = CACHES.read().unwrap();
    let x = ramp(7, 0.4);
    for n in [0, 1, 4] {
        assert_close(&unrolled(&x, n), &unrolled_eager(&x, n));
        let g = unrolled::lower(&x, n).unwrap().graph_text();
        assert_eq!(count_op(&g, "sin"), n, "{n} copies of the body: {g}");
    }
}

twin!(halvings / halvings_eager (x: &Tensor, n: usize) -> (Tensor, Tensor) {
    let mut k = n;
    let mut y = x.clone();
    let mut steps = 0usize;
    while k > 1 {
        k /= 2;
        y = &y * 0.5;
        steps += 1;
    }
    (y, x * steps as f64)
});

#[test]
fn a_while_on_a_usize_runs_at_trace_time() {
    let x = ramp(5, 1.0);
    for n in [0, 1, 2, 9, 64] {
        let (y, s) = halvings(&x, n);
        let (ye, se) = halvings_eager(&x, n);
        assert_close(&y, &ye);
        assert_close(&s, &se);
    }
    let g = halvings::lower(&x, 64).unwrap().graph_text();
    assert_eq!(count_op(&g, "mul"), 7, "6 halvings and one scale: {g}");
}

// Nested: `if` in `while` in `for`, a usize counter under a bool condition,
// shadowing, a closure with its own loop, early exits on static conditions.
twin!(nested_cf / nested_cf_eager (x: &Tensor, n: usize, limit: usize, flip: bool) -> (Tensor, Tensor) {
    let mut acc = x.clone();
    let mut other = x * 0.5;
    let mut count = 0usize;
    let twice = |t: &Tensor| {
        let mut u = t.clone();
        for _ in 0..2 {
            u = &u + t;
        }
        u
    };
    for i in 0..n {
        let mut j = 0;
        while j < i {
            if (j % 2 == 0) != flip && count < limit {
                acc = twice(&acc) * 0.25;
                count += 1;
            } else {
                let acc = acc.exp();
                other = &other + acc.sum_all() * 0.01;
            }
            j += 1;
        }
        if i == 3 {
            continue;
        }
        if i > 4 {
            break;
        }
        other = other.tanh();
    }
    (acc * count as f64, other)
});

#[test]
fn nested_static_control_flow_equals_plain_rust() {
    let x = ramp(6, 0.2);
    for (n, limit, flip) in [(0, 0, false), (3, 1, false), (5, 2, true), (8, 10, false)] {
        let (a, b) = nested_cf(&x, n, limit, flip);
        let (ae, be) = nested_cf_eager(&x, n, limit, flip);
        assert_close(&a, &ae);
        assert_close(&b, &be);
    }
}

// ---- #[jit] on methods ----

impl Mlp {
    /// A borrowed tree receiver: traced, never written.
    #[jit]
    fn predict(&self, x: &Tensor) -> Tensor {
        (x.matmul(&self.w1) + &self.b1).relu().matmul(&self.w2) + &self.b2
    }

    /// An owned tree receiver: donated.
    #[jit]
    fn shrink(self, factor: f32) -> Mlp {
        self.map(|t| t * factor)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Stack {
    depth: usize,
    act: Act,
}

impl Stack {
    /// A static receiver: part of the cache key.
    #[jit]
    fn apply(&self, x: &Tensor) -> Tensor {
        let mut y = x.clone();
        for _ in 0..self.depth {
            y = match self.act {
                Act::Relu => y.relu() - 0.5,
                Act::Tanh => y.tanh(),
            };
        }
        y
    }
}

#[test]
fn methods_trace_tree_receivers_and_key_static_ones() {
    let _g = CACHES.read().unwrap();
    let p = init_mlp(4, 8, 3);
    let (x, _) = batch(5, 4, 3);
    let want = (x.matmul(&p.w1) + &p.b1).relu().matmul(&p.w2) + &p.b2;
    assert_close(&p.predict(&x), &want);
    assert_close(&p.predict_try_call(&x).unwrap(), &want);
    // Another receiver with the same shapes: a hit, with its own values.
    let q = p.map(|t| t * 2.0);
    let want_q = (x.matmul(&q.w1) + &q.b1).relu().matmul(&q.w2) + &q.b2;
    assert_close(&q.predict(&x), &want_q);
    let s = Mlp::predict_cache_stats();
    assert_eq!((s.hits, s.misses), (2, 1));
    assert!(p.predict_lower(&x).unwrap().graph_text().contains("matmul"));

    let before = addrs(&p);
    let shrunk = p.clone().shrink(0.5);
    assert_eq!(values(&shrunk), values(&p.map(|t| t * 0.5)));
    assert!(
        addrs(&shrunk).iter().all(|a| !before.contains(a)),
        "shared leaves are not written"
    );

    let x = ramp(6, 0.5);
    for (depth, act) in [(2, Act::Tanh), (3, Act::Relu), (2, Act::Tanh)] {
        let st = Stack { depth, act };
        let mut want = x.clone();
        for _ in 0..depth {
            want = match act {
                Act::Relu => want.relu() - 0.5,
                Act::Tanh => want.tanh(),
            };
        }
        assert_close(&st.apply(&x), &want);
    }
    let s = Stack::apply_cache_stats();
    assert_eq!(
        (s.hits, s.misses, s.entries),
        (1, 2, 2),
        "the receiver is in the cache key"
    );
    Stack::apply_clear_cache();
    assert_eq!(Stack::apply_cache_stats().entries, 0);
}

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui_pass/*.rs");
    t.compile_fail("tests/ui/*.rs");
}

/// The message a closure panicked with (it must panic).
fn panic_text(f: impl FnOnce()) -> String {
    let p = catch_unwind(AssertUnwindSafe(f)).expect_err("it panics");
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[jit]
fn broadcast_beyond_memory(x: &Tensor) -> Tensor {
    x.broadcast_to(&[usize::MAX, 2])
}

#[jit]
fn outer_beyond_memory(a: &Tensor, b: &Tensor) -> Tensor {
    let a = a.broadcast_to(&[1 << 40, 1]);
    let b = b.broadcast_to(&[1, 1 << 40]);
    &a * &b
}

#[jit]
fn shape_ops_beyond_memory(x: &Tensor, which: usize) -> Tensor {
    match which {
        0 => x.pad(&[(usize::MAX, 1)], 0.0),
        1 => x.reshape(&[1 << 32, 1 << 32, 0, -1]),
        2 => Tensor::iota(&[1 << 40, 1 << 40], 0, DType::F32) + x.sum_all(),
        _ => x + Tensor::zeros(&[1 << 45], DType::F32),
    }
}

#[test]
fn sizes_beyond_memory_are_shape_errors_inside_jit() {
    let x = vec32(&[1.0, 2.0], &[2]);
    let e = broadcast_beyond_memory::try_call(&x).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape);
    assert!(
        e.message
            .contains("`broadcast_to`: shape [18446744073709551615, 2] has 2^65.0 elements of f32"),
        "{e}"
    );
    let m = panic_text(|| drop(broadcast_beyond_memory(&x)));
    assert!(
        m.contains("`broadcast_to`: shape [18446744073709551615, 2]"),
        "{m}"
    );
    let one = vec32(&[1.0], &[1]);
    let e = outer_beyond_memory::try_call(&one, &one).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape);
    assert!(
        e.message.contains(
            "`mul`: f32[1099511627776,1] and f32[1,1099511627776] broadcast to [1099511627776, 1099511627776]"
        ),
        "{e}"
    );
    for (which, kind, part) in [
        (
            0,
            ErrorKind::Shape,
            "`pad`: axis 0 of f32[2] padded by (18446744073709551615, 1)",
        ),
        (
            1,
            ErrorKind::Shape,
            "`reshape` of f32[2] to [4294967296, 4294967296, 0, -1]",
        ),
        (
            2,
            ErrorKind::Shape,
            "`iota`: shape [1099511627776, 1099511627776] has 2^80.0 elements",
        ),
        // A constructor in the body is a constant node (nothing allocated): the op
        // reading it reports the shapes.
        (
            3,
            ErrorKind::Shape,
            "`add`: shapes do not broadcast: f32[2] (lhs) with f32[35184372088832] (rhs)",
        ),
    ] {
        let e = shape_ops_beyond_memory::try_call(&x, which).unwrap_err();
        assert_eq!(e.kind, kind, "{e}");
        assert!(e.message.contains(part), "{which}: {e}");
    }
}

#[jit]
fn huge_output(x: &Tensor) -> Tensor {
    x.broadcast_to(&[1 << 45]) + 1.0
}

#[jit]
fn huge_temporary(x: &Tensor) -> Tensor {
    let a = (x.broadcast_to(&[1 << 44]) + 1.0).exp();
    let b = x.broadcast_to(&[1 << 44]) * 3.0;
    concat(&[&a, &b], 0).sum_all()
}

#[test]
fn programs_whose_buffers_cannot_be_allocated_return_out_of_memory() {
    let x = vec32(&[1.0], &[1]);
    let e = huge_output::try_call(&x).unwrap_err();
    assert_eq!(e.kind, ErrorKind::OutOfMemory);
    assert!(
        e.message.contains("running huge_output(x: &f32[1]): out of memory: cannot allocate 140737488355328 bytes (128.00 TiB) for output"),
        "{e}"
    );
    let m = panic_text(|| drop(huge_output(&x)));
    assert!(m.contains("cannot allocate 140737488355328 bytes"), "{m}");
    let e = huge_temporary::try_call(&x).unwrap_err();
    assert_eq!(e.kind, ErrorKind::OutOfMemory, "{e}");
    assert!(
        e.message
            .contains("running huge_temporary(x: &f32[1]): out of memory")
            && e.message.contains("the arena of the program's temporaries"),
        "{e}"
    );
    let mem = huge_temporary::lower(&x)
        .unwrap()
        .compile()
        .unwrap()
        .memory_analysis();
    assert!(mem.temp_bytes >= 1 << 47, "{mem:?}");
    // The program stays cached and fails the same way; nothing poisoned.
    assert_eq!(
        huge_temporary::try_call(&x).unwrap_err().kind,
        ErrorKind::OutOfMemory
    );
    assert_eq!(huge_temporary::cache_stats().entries, 1);
}

#[jit]
fn injected(x: &Tensor) -> Tensor {
    x.exp() * 2.0
}

#[jit]
fn user_panics(x: &Tensor, when: usize) -> Tensor {
    let y = x.exp();
    if when == 1 {
        panic!("the user's own panic");
    }
    y
}

#[test]
fn internal_failures_are_errors_and_user_panics_stay_panics() {
    let x = vec32(&[0.0, 1.0, 2.0, 3.0], &[4]);
    let want = x.exp() * 2.0;
    for stage in ["trace", "simplify", "codegen", "run"] {
        // Compiled from scratch (a cached program neither traces nor compiles).
        injected::clear_cache();
        jitfuse::__private::inject_panic(Some(stage));
        let e = injected::try_call(&x).unwrap_err();
        let m = panic_text(|| drop(injected(&x)));
        jitfuse::__private::inject_panic(None);
        assert_eq!(e.kind, ErrorKind::Internal, "{stage}: {e}");
        let doing = if stage == "run" {
            "running"
        } else if stage == "trace" {
            "tracing"
        } else {
            "compiling"
        };
        for part in [
            "internal error in jitfuse",
            &format!("{doing} injected(x: &f32[4])"),
            &format!("injected internal failure in `{stage}`"),
        ] {
            assert!(
                e.message.contains(part),
                "{stage}: `{part}` missing from {e}"
            );
        }
        assert!(
            m.contains(&format!("injected internal failure in `{stage}`")),
            "{m}"
        );
        // Not cached, not poisoned: the next call compiles (or runs) and
        // computes the right values.
        assert_close(&injected::try_call(&x).unwrap(), &want);
        assert_close(&injected(&x), &want);
    }
    assert_close(&user_panics::try_call(&x, 0).unwrap(), &x.exp());
    let e = user_panics::try_call(&x, 1).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Panic, "{e}");
    assert!(
        e.message
            .contains("the traced body panicked: the user's own panic"),
        "{e}"
    );
}
