//! Eager ops at compiled speed: outside `#[jit]`, every op but the control-flow ones runs
//! as a cached compiled one-op program, computing what the interpreter computes.

use crate::common::{assert_close, random_tensor, Rng, Tol};
use jitfuse::eager::{eager_cache_entries, interpreted};
use jitfuse::prelude::*;

/// Each op family eagerly (compiled) against the same op on the reference interpreter,
/// over random shapes and every dtype the op takes.
#[test]
fn eager_ops_compute_what_the_interpreter_computes() {
    let mut rng = Rng::new(17);
    type Case = (
        &'static str,
        fn(&[Tensor]) -> Tensor,
        usize,
        &'static [DType],
    );
    const FLOAT: &[DType] = &[DType::F32, DType::F64];
    const NUM: &[DType] = &[DType::F32, DType::F64, DType::I32, DType::I64];
    let cases: Vec<Case> = vec![
        ("exp", |t| t[0].exp(), 1, FLOAT),
        ("tanh", |t| t[0].tanh(), 1, FLOAT),
        ("sin", |t| t[0].sin(), 1, FLOAT),
        ("erf", |t| t[0].erf(), 1, FLOAT),
        ("sqrt of |x|", |t| t[0].abs().sqrt(), 1, FLOAT),
        ("neg", |t| -&t[0], 1, NUM),
        ("add", |t| &t[0] + &t[1], 2, NUM),
        ("mul", |t| &t[0] * &t[1], 2, NUM),
        ("div", |t| &t[0] / &t[1], 2, FLOAT),
        ("max", |t| t[0].maximum(&t[1]), 2, NUM),
        ("less", |t| t[0].lt(&t[1]).cast(DType::I32), 2, NUM),
        ("select", |t| select(&t[0].gt(&t[1]), &t[0], &t[1]), 2, NUM),
        ("cast", |t| t[0].cast(DType::F64), 1, NUM),
        ("sum over the last axis", |t| t[0].sum(-1), 1, NUM),
        ("max over the first axis", |t| t[0].max(0), 1, NUM),
        ("mean of all", |t| t[0].mean_all(), 1, FLOAT),
        ("matmul", |t| t[0].matmul(&t[1].t()), 2, FLOAT),
        ("transpose", |t| t[0].t(), 1, NUM),
        ("slice", |t| t[0].slice_axis(-1, 1, -1, 2), 1, NUM),
        ("concat", |t| jitfuse::concat(&[&t[0], &t[1]], 0), 2, NUM),
        ("pad", |t| t[0].pad(&[(1, 0), (0, 2)], 5), 1, NUM),
        ("argmax", |t| t[0].argmax(-1), 1, NUM),
        (
            "take",
            |t| {
                let idx = Tensor::from_vec(vec![0i64, -1, 2, 1], &[2, 2]).unwrap();
                t[0].take(&idx, -1)
            },
            1,
            NUM,
        ),
        (
            "attention",
            |t| {
                let q = t[0].reshape(&[1, t[0].shape()[0] as isize, t[0].shape()[1] as isize]);
                jitfuse::attention(&q, &q, &q, jitfuse::AttnMask::Causal)
            },
            1,
            FLOAT,
        ),
        (
            "broadcast_to",
            |t| t[0].broadcast_to(&[3, t[0].shape()[0], t[0].shape()[1]]),
            1,
            NUM,
        ),
        (
            "iota",
            |t| Tensor::iota(t[0].shape(), 1, t[0].dtype()),
            1,
            NUM,
        ),
        (
            "random normal and uniform",
            |t| {
                let key = Key::new(t[0].len() as u64);
                jitfuse::random::normal(&key, t[0].shape(), t[0].dtype())
                    + jitfuse::random::uniform(
                        &key.fold_in(3),
                        t[0].shape(),
                        t[0].dtype(),
                        -1.0,
                        2.0,
                    )
            },
            1,
            FLOAT,
        ),
        // The gradients of a slice and a take: a slice_scatter and a scatter_add.
        (
            "slice_scatter (gradient of a slice)",
            |t| {
                grad(
                    |x: &Tensor| (x.slice_axis(-1, 1, -1, 2) * 3.0).sum_all(),
                    &t[0],
                )
            },
            1,
            FLOAT,
        ),
        (
            "scatter_add (gradient of a take)",
            |t| {
                let idx = Tensor::from_vec(vec![0i64, -1, 0, 1, 0], &[5]).unwrap();
                grad(|x: &Tensor| x.take(&idx, 0).exp().sum_all(), &t[0])
            },
            1,
            FLOAT,
        ),
        (
            "attention_grad (its three results)",
            |t| {
                let (s, d) = (t[0].shape()[0] as isize, t[0].shape()[1] as isize);
                let q = t[0].reshape(&[1, s, d]);
                let k = (&t[0] * 0.5).reshape(&[1, s, d]);
                let v = t[1].reshape(&[1, s, d]);
                let g = grad(
                    |qkv: &Vec<Tensor>| {
                        let y = jitfuse::attention(
                            &qkv[0],
                            &qkv[1],
                            &qkv[2],
                            jitfuse::AttnMask::Causal,
                        );
                        (y.sin() * 2.0).sum_all()
                    },
                    &vec![q, k, v],
                );
                jitfuse::concat(&[&g[0], &g[1], &g[2]], 0)
            },
            2,
            FLOAT,
        ),
    ];
    // Ops that mix many elements into each result take finite operands: one NaN or
    // infinity among their inputs makes most of the result NaN on both sides, which
    // would compare equal whatever the program computed.
    let mixing = |name: &str| {
        ["matmul", "attention", "slice_scatter", "scatter_add"]
            .iter()
            .any(|m| name.starts_with(m))
    };
    for (name, f, arity, dtypes) in &cases {
        for trial in 0..4 {
            let d = dtypes[trial % dtypes.len()];
            let shape = [1 + rng.below(9), 1 + rng.below(40)];
            let specials = d.is_float() && !mixing(name);
            let args: Vec<Tensor> = (0..*arity)
                .map(|_| random_tensor(&mut rng, &shape, d, -3.0, 3.0, specials))
                .collect();
            let got = f(&args);
            let want = interpreted(|| f(&args));
            let tol = match want.dtype() {
                DType::F32 => Tol {
                    rel: 1e-5,
                    abs: 1e-5,
                },
                DType::F64 => Tol {
                    rel: 1e-12,
                    abs: 1e-12,
                },
                _ => crate::common::EXACT,
            };
            assert_close(&got, &want, tol, &format!("eager {name} {d} {shape:?}"));
        }
    }
    // The shape ops, gathers and attention ran as compiled programs (none fell back).
    let keys: Vec<String> = eager_cache_entries().into_iter().map(|e| e.0).collect();
    for op in [
        "Transpose",
        "Slice",
        "Concat",
        "Pad",
        "ArgMax",
        "Take",
        "Attention",
        "Broadcast",
        "Iota",
        "Random",
    ] {
        assert!(keys.iter().any(|k| k.starts_with(op)), "{op}: {keys:?}");
    }
    // The gradients (a slice's is a slice-scatter, a gather's a scatter-add, attention's its
    // gradient op) ran as one compiled program each, keyed by the traced function.
    for op in ["slice[", "take[", "attention["] {
        let whole = |k: &&String| k.starts_with("Fused(value_and_grad") && k.contains(op);
        assert!(keys.iter().any(|k| whole(&k)), "{op}: {keys:?}");
    }
}

/// The second call with the same op and types reuses the program; another shape compiles
/// its own; ops inside `interpreted` compile nothing.
#[test]
fn eager_programs_are_cached_by_op_and_types() {
    let x = Tensor::from_vec(
        (0..7 * 13 * 3).map(|i| i as f64 * 0.01).collect(),
        &[7, 13, 3],
    )
    .unwrap();
    let mine = |shape: &str| {
        eager_cache_entries()
            .into_iter()
            .filter(|(k, _)| k.starts_with("Unary(Expm1)") && k.contains(shape))
            .collect::<Vec<_>>()
    };
    let first = x.expm1();
    let entries = mine("f64[7, 13, 3]");
    assert_eq!(entries.len(), 1, "{entries:?}");
    let again = x.expm1();
    assert_eq!(
        first.to_vec::<f64>().unwrap(),
        again.to_vec::<f64>().unwrap()
    );
    assert_eq!(mine("f64[7, 13, 3]")[0].1, entries[0].1 + 1);
    let y = x.reshape(&[21, 13]);
    let _ = y.expm1();
    assert_eq!(mine("f64[21, 13]").len(), 1);
    let z = x.reshape(&[3, 91]);
    let _ = interpreted(|| z.expm1());
    assert!(mine("f64[3, 91]").is_empty());
}

/// An eager matmul's gradient multiplies by a transposed operand inside one program (the
/// whole gradient is one program, whose GEMMs read the operands with strides: no transpose
/// is copied first), in 2-D, batched and batch-broadcast shapes, and computes what the
/// interpreter does.
#[test]
fn eager_matmul_gradients_read_the_transposed_operand_in_one_program() {
    let mut rng = Rng::new(41);
    for (sa, sb) in [
        (vec![5, 7], vec![7, 3]),
        (vec![2, 4, 6], vec![6, 5]),
        (vec![3, 4, 6], vec![3, 6, 2]),
        (vec![1, 4, 6], vec![3, 6, 2]),
    ] {
        for d in [DType::F32, DType::F64] {
            let a = random_tensor(&mut rng, &sa, d, -2.0, 2.0, false);
            let b = random_tensor(&mut rng, &sb, d, -2.0, 2.0, false);
            let f = |ab: &Vec<Tensor>| (ab[0].matmul(&ab[1]).sin() * 3.0).sum_all();
            let got = grad(f, &vec![a.clone(), b.clone()]);
            let want = interpreted(|| grad(f, &vec![a.clone(), b.clone()]));
            let tol = if d == DType::F32 {
                Tol {
                    rel: 1e-5,
                    abs: 1e-5,
                }
            } else {
                Tol {
                    rel: 1e-12,
                    abs: 1e-12,
                }
            };
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_close(
                    g,
                    w,
                    tol,
                    &format!("d{} of {sa:?} @ {sb:?} {d}", ["a", "b"][k]),
                );
            }
        }
    }
    let keys: Vec<String> = eager_cache_entries().into_iter().map(|e| e.0).collect();
    for types in ["|f32[5, 7]|f32[7, 3]", "|f64[1, 4, 6]|f64[3, 6, 2]"] {
        let whole = |k: &&String| k.starts_with("Fused(value_and_grad") && k.ends_with(types);
        assert!(
            keys.iter().any(|k| whole(&k) && k.contains("matmul")),
            "{types}: {keys:?}"
        );
    }
}

/// A temporary given to an eager elementwise op (`a * 2.0` in `a * 2.0 + b`) that nobody
/// else holds becomes the result's buffer, as ndarray's `a + &b` reuses `a`; a tensor the
/// caller still holds (borrowed, cloned, or the source of a reshape) is never written, nor
/// one of another type than the result. Values are the interpreter's, in every dtype.
#[test]
fn eager_temporaries_given_away_hold_the_result() {
    let mut rng = Rng::new(29);
    for d in [DType::F32, DType::F64, DType::I32, DType::I64] {
        let seed = rng.below(1 << 30) as u64;
        let x = random_tensor(&mut Rng::new(seed), &[6, 9], d, -3.0, 3.0, d.is_float());
        let x_before = random_tensor(&mut Rng::new(seed), &[6, 9], d, -3.0, 3.0, d.is_float());
        let y = random_tensor(&mut rng, &[6, 9], d, -3.0, 3.0, d.is_float());
        let row = random_tensor(&mut rng, &[9], d, -3.0, 3.0, d.is_float());
        let want = interpreted(|| ((&x * 2 + &y) * &row - &x) - (1 + &y * &y));

        // A chain of temporaries: each op writes into the one before it.
        let t = &x * 2;
        let addr = t.storage_addr();
        let t = t + &y;
        assert_eq!(t.storage_addr(), addr, "{d}: `t + y` into t");
        let t = t * &row;
        assert_eq!(t.storage_addr(), addr, "{d}: `t * row` into t");
        let t = t - &x;
        assert_eq!(t.storage_addr(), addr, "{d}: `t - x` into t");
        let u = &y * &y;
        let u_addr = u.storage_addr();
        let u = 1 + u;
        assert_eq!(u.storage_addr(), u_addr, "{d}: `1 + u` into u");
        let got = t - u;
        assert_eq!(
            got.storage_addr(),
            addr,
            "{d}: `t - u` into t, the first given"
        );
        assert_close(&got, &want, crate::common::EXACT, &format!("chain {d}"));
        assert_close(
            &x,
            &x_before,
            crate::common::EXACT,
            &format!("{d}: x never written"),
        );

        // Held elsewhere: a clone, a reshape's source, a borrowed operand.
        let t = &x * 2;
        let kept = t.clone();
        let r = t + &y;
        assert_ne!(
            r.storage_addr(),
            kept.storage_addr(),
            "{d}: a clone is still held"
        );
        assert_close(&kept, &interpreted(|| &x * 2), crate::common::EXACT, "kept");
        let t = &x * 2;
        let flat = t.reshape(&[54]);
        let r = flat + 1;
        assert_ne!(
            r.storage_addr(),
            t.storage_addr(),
            "{d}: a reshape's source is held"
        );
        assert_close(
            &t,
            &interpreted(|| &x * 2),
            crate::common::EXACT,
            "reshaped",
        );
        // Not of the result's type: a row broadcast up, a cast.
        let r = (&row * 1) + &x;
        assert_eq!(r.shape(), &[6, 9]);
        let w = (&x * 1).cast(DType::F64) * 0.5;
        assert_close(
            &w,
            &interpreted(|| x.cast(DType::F64) * 0.5),
            crate::common::EXACT,
            &format!("cast {d}"),
        );
    }
    // The donating programs are cached apart from the others.
    let keys: Vec<String> = eager_cache_entries().into_iter().map(|e| e.0).collect();
    assert!(
        keys.iter()
            .any(|k| k.starts_with("Binary(Add)") && k.contains("[6, 9] donated")),
        "{keys:?}"
    );
}

/// Eager ops whose operands have other shapes than the result (scalars, rows, columns, a
/// lower rank), in every dtype they take: the interpreter's values exactly, and the compiled
/// programs take those operands at their own shapes (a scalar as `[]`), broadcasting them
/// inside, so nothing is filled at the result's shape first.
#[test]
fn eager_ops_broadcast_their_operands_inside_the_program() {
    let mut rng = Rng::new(71);
    for d in [DType::F32, DType::F64, DType::I32, DType::I64] {
        let m = random_tensor(&mut rng, &[5, 7], d, -3.0, 3.0, d.is_float());
        let row = random_tensor(&mut rng, &[7], d, -3.0, 3.0, d.is_float());
        let col = random_tensor(&mut rng, &[5, 1], d, -3.0, 3.0, d.is_float());
        let cases: Vec<(&str, Box<dyn Fn() -> Tensor>)> = vec![
            ("m + 3", Box::new(|| &m + 3)),
            ("2 - m", Box::new(|| 2 - &m)),
            ("m * row", Box::new(|| &m * &row)),
            ("col - m", Box::new(|| &col - &m)),
            ("max(row, col)", Box::new(|| row.maximum(&col))),
            ("m < 1", Box::new(|| m.lt(1).cast(d))),
            (
                "select(col > 0, m, 7)",
                Box::new(|| jitfuse::select(col.gt(0), &m, 7)),
            ),
            (
                "select(m > row, -1, col)",
                Box::new(|| jitfuse::select(m.gt(&row), -1, &col)),
            ),
        ];
        for (name, f) in &cases {
            let got = f();
            let want = interpreted(f);
            assert_eq!(got.shape(), want.shape(), "{name} {d}");
            assert_close(
                &got,
                &want,
                Tol { rel: 0.0, abs: 0.0 },
                &format!("{name} {d}"),
            );
        }
    }
    let keys: Vec<String> = eager_cache_entries().into_iter().map(|e| e.0).collect();
    let with = |part: &str| {
        keys.iter()
            .any(|k| k.starts_with("Binary(Add)") && k.contains(part))
    };
    assert!(
        with("|i64[]|i64[5, 7]->i64[5, 7]") || with("|i64[5, 7]|i64[]->"),
        "{keys:?}"
    );
    assert!(
        keys.iter()
            .any(|k| k.starts_with("Select") && k.contains("|bool[5, 1]|f32[5, 7]|f32[]")),
        "{keys:?}"
    );
}

#[jit]
fn eager_inside_jit(x: &Tensor) -> Tensor {
    (x * 2.0).exp()
}

/// Inside `#[jit]` the same ops are traced, not dispatched; a jitted function's result
/// and the eager one agree.
#[test]
fn traced_ops_are_not_dispatched_eagerly() {
    let x = Tensor::from_vec(vec![0.25f32, -1.0, 2.0], &[3]).unwrap();
    let before = eager_cache_entries()
        .iter()
        .filter(|(k, _)| k.contains("f32[3]") && k.starts_with("Unary(Exp)"))
        .count();
    let jitted = eager_inside_jit(&x);
    let after = eager_cache_entries()
        .iter()
        .filter(|(k, _)| k.contains("f32[3]") && k.starts_with("Unary(Exp)"))
        .count();
    assert_eq!(before, after);
    let eager = (&x * 2.0).exp();
    assert_close(
        &jitted,
        &eager,
        Tol {
            rel: 1e-6,
            abs: 0.0,
        },
        "jit vs eager",
    );
}

/// Errors of eager ops are the interpreter's: an integer division by zero is defined, a
/// shape mismatch names the op.
#[test]
fn eager_errors_name_the_op() {
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let b = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let e = std::panic::catch_unwind(|| &a + &b).unwrap_err();
    let msg = e
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_else(|| e.downcast_ref::<&str>().unwrap_or(&"").to_string());
    assert!(msg.contains("add"), "{msg}");
    let i = Tensor::from_vec(vec![7i32, -8], &[2]).unwrap();
    let z = Tensor::from_vec(vec![0i32, 0], &[2]).unwrap();
    assert_eq!(
        (&i / &z).to_vec::<i32>().unwrap(),
        interpreted(|| (&i / &z).to_vec::<i32>().unwrap())
    );
}

/// One of the fuzzer's random programs run eagerly, each op a compiled program, against
/// the same calls on the interpreter: `Ok(false)` when the program is not one the library
/// accepts (the generator's invalid cases).
fn eager_case(seed: u64) -> Result<bool, String> {
    use crate::fuzz::{check, floor, generate, noise, program, trace_program};
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let mut rng = Rng::new(seed);
    let p = generate::program(&mut rng);
    let Ok((g, captured)) = trace_program(&p) else {
        return Ok(false);
    };
    let draws: Vec<u64> = p.params.iter().map(|q| q.draw).collect();
    let args = check::arguments(&g, seed, &draws, seed % 3 == 0);
    let want = catch_unwind(AssertUnwindSafe(|| {
        interpreted(|| program::build(&p, &args))
    }));
    let got = catch_unwind(AssertUnwindSafe(|| program::build(&p, &args)));
    let text = |e: Box<dyn std::any::Any + Send>| crate::common::panic_text(&*e);
    let (got, want) = match (got, want) {
        (Ok(got), Ok(want)) => (got, want),
        // Refused alike (a data-dependent error such as an index out of range).
        (Err(_), Err(_)) => return Ok(true),
        (Err(e), Ok(_)) => return Err(format!("compiled eager panicked: {}", text(e))),
        (Ok(_), Err(e)) => {
            return Err(format!(
                "the interpreter refused ({}) what compiled eager ran",
                text(e)
            ))
        }
    };
    let values = noise::node_values(&g, &args, &captured).map_err(|e| format!("noise: {e}"))?;
    let noise = noise::analyse(&g, &values);
    let f32 = check::coarsest(&g);
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        let (scale, noisy_inf) = (noise.scales[k], noise.noisy_infinities[k]);
        check::compare_with(a, b, f32, floor(&p), scale, noisy_inf)
            .map_err(|e| format!("output {k}: {e}"))?;
    }
    Ok(true)
}

/// The fuzzer's random programs (every op family it generates, gradients, `cond`, loops
/// and random numbers included, a third of them with NaNs and infinities among the
/// arguments) run eagerly: each op's compiled program computes what the interpreter does.
/// `JITFUSE_EAGER_SEED` and `JITFUSE_EAGER_CASES` run other or more programs.
#[test]
fn eager_random_programs_match_the_interpreter() {
    crate::fuzz::run_seeds(
        "JITFUSE_EAGER_SEED",
        9000,
        "JITFUSE_EAGER_CASES",
        1000,
        eager_case,
    );
}

/// A GRU over a sequence with `scan` (a cell of two gates), the same body eagerly and jitted.
fn gru(p: &Vec<Tensor>, xs: &Tensor) -> Tensor {
    let h0 = Tensor::zeros(&[xs.shape()[1], p[0].shape()[0]], DType::F32);
    let (h, hs) = scan(
        |h: Tensor, x: Tensor| {
            let z = (h.matmul(&p[0]) + x.matmul(&p[1])).sigmoid();
            let c = (h.matmul(&p[2]) + x.matmul(&p[3])).tanh();
            let h = &z * &h + (1.0 - &z) * c;
            (h.clone(), h.sum_all())
        },
        h0,
        xs,
    );
    (&h * &h).mean_all() + hs.sum_all()
}

#[jit]
fn gru_jitted(p: &Vec<Tensor>, xs: &Tensor) -> Tensor {
    gru(p, xs)
}

/// Eager control flow runs compiled: a `scan` called without `#[jit]` is one cached program
/// (its body traced, the node compiled with it; it was interpreted), reused by the next
/// call of the same body and types; a `cond` on a concrete predicate and a `fori_loop` with
/// Rust bounds run their chosen branch and each iteration's ops compiled. Each computes
/// what the jitted function and the interpreter compute.
#[test]
fn eager_control_flow_runs_compiled_and_cached() {
    let mut rng = Rng::new(77);
    let p: Vec<Tensor> = (0..4)
        .map(|_| random_tensor(&mut rng, &[16, 16], DType::F32, -0.3, 0.3, false))
        .collect();
    let xs = random_tensor(&mut rng, &[12, 4, 16], DType::F32, -1.0, 1.0, false);
    let scans = || {
        eager_cache_entries()
            .into_iter()
            .filter(|(k, _)| k.starts_with("Scan("))
            .map(|(_, hits)| hits)
            .collect::<Vec<_>>()
    };
    let eager = gru(&p, &xs);
    let again = gru(&p, &xs);
    assert!(
        scans().iter().any(|&hits| hits >= 1),
        "the scan is one cached program, reused: {:?}",
        scans()
    );
    assert_eq!(crate::common::bits(&eager), crate::common::bits(&again));
    let tol = Tol::rel(DType::F32, 1e-5);
    assert_close(
        &eager,
        &gru_jitted(&p, &xs),
        tol,
        "eager scan against jitted",
    );
    let interp = interpreted(|| gru(&p, &xs));
    assert_close(&eager, &interp, tol, "eager scan against the interpreter");

    let x = random_tensor(&mut rng, &[8], DType::F32, -1.0, 1.0, false);
    let branchy = |x: &Tensor| {
        let y = cond(
            &x.sum_all().gt(0.0),
            |x: Tensor| x.exp(),
            |x: Tensor| x.sin(),
            x.clone(),
        );
        fori_loop(0, 5, |_, y: Tensor| y.tanh() * 2.0, y)
    };
    let (a, b) = (branchy(&x), interpreted(|| branchy(&x)));
    assert_close(&a, &b, tol, "eager cond and fori_loop");
}

/// A gradient called eagerly runs its traced forward and backward as one cached compiled
/// program (fused as a jitted call would be), keyed by the traced graph: the second call
/// reuses it, a closure's captured data are operands of the program (new data, new
/// results, no new program), a function whose graph changes gets another program, and
/// results are the interpreter's (op by op). A program too large for the eager cache runs
/// its ops one by one instead, without being compiled again on the next call.
/// `vjp` called eagerly runs its forward as one cached program and its pullback as another
/// (the forward computed again there, so no intermediate value is kept between the calls),
/// computing what the interpreter computes; a second pullback reuses the program, and `jvp`
/// (a `vjp` of the pullback, which it traces) stays right.
#[test]
fn eager_vjp_runs_its_forward_and_its_pullback_as_one_program_each() {
    let mut rng = Rng::new(78);
    let x = random_tensor(&mut rng, &[5, 12], DType::F32, -2.0, 2.0, false);
    let w = random_tensor(&mut rng, &[12, 7], DType::F32, -1.0, 1.0, false);
    let f = |p: &Vec<Tensor>| {
        let h = p[0].matmul(&p[1]).softmax(-1);
        vec![(&h * 3.0).sin(), h.sum(-1)]
    };
    let tol = Tol {
        rel: 1e-5,
        abs: 1e-5,
    };
    let params = vec![x, w];
    let cts = [
        random_tensor(&mut rng, &[5, 7], DType::F32, -1.0, 1.0, false),
        random_tensor(&mut rng, &[5], DType::F32, -1.0, 1.0, false),
    ];
    // (Other tests run eager vjps in this process too: this function's programs only.)
    let programs = |prefix: &str| -> Vec<(String, u64)> {
        (eager_cache_entries().into_iter())
            .filter(|e| e.0.starts_with(prefix))
            .filter(|e| e.0.contains("sin") && e.0.contains("f32[12,7]"))
            .collect()
    };
    let (y, back) = vjp(f, &params);
    let (wy, wback) = interpreted(|| vjp(f, &params));
    for (k, (a, b)) in y.iter().zip(&wy).enumerate() {
        assert_close(a, b, tol, &format!("output {k}"));
    }
    let g = back(&cts.to_vec());
    let wg = interpreted(|| wback(&cts.to_vec()));
    for (k, (a, b)) in g.iter().zip(&wg).enumerate() {
        assert_close(a, b, tol, &format!("cotangent of leaf {k}"));
    }
    let forward = programs("Fused(vjp forward");
    assert_eq!(forward.len(), 1, "{forward:?}");
    let pullback = programs("Fused(vjp pullback");
    assert_eq!(pullback.len(), 1, "{pullback:?}");
    // Another cotangent: the same program, its own result.
    let other = [&cts[0] * -1.0, cts[1].clone()];
    let g2 = back(&other.to_vec());
    let wg2 = interpreted(|| wback(&other.to_vec()));
    assert_close(&g2[1], &wg2[1], tol, "second pullback");
    let again = programs("Fused(vjp pullback");
    assert!(again[0].1 > pullback[0].1, "{again:?} after {pullback:?}");
    // jvp: the pullback traced inside another vjp (op by op there), then fused again.
    let t = vec![params[0].ones_like(), params[1].zeros_like()];
    let (_, jt) = jvp(f, &params, &t);
    let (_, wjt) = interpreted(|| jvp(f, &params, &t));
    for (k, (a, b)) in jt.iter().zip(&wjt).enumerate() {
        assert_close(a, b, tol, &format!("tangent of output {k}"));
    }
}

#[test]
fn eager_gradients_run_as_one_cached_program() {
    use jitfuse::eager::eager_stats;
    let mut rng = Rng::new(77);
    let x = random_tensor(&mut rng, &[6, 16], DType::F32, -2.0, 2.0, false);
    let w = random_tensor(&mut rng, &[16, 5], DType::F32, -1.0, 1.0, false);
    let data = random_tensor(&mut rng, &[6, 5], DType::F32, -1.0, 1.0, false);
    let loss = |d: &Tensor| {
        let d = d.clone();
        move |p: &Vec<Tensor>| {
            let h = p[0].matmul(&p[1]).tanh();
            ((h - &d).square().sum_all() + p[0].softmax(-1).max_all()) * 0.5
        }
    };
    let tol = Tol {
        rel: 1e-5,
        abs: 1e-5,
    };
    let params = vec![x.clone(), w.clone()];
    let check = |d: &Tensor, what: &str| {
        let (v, g) = value_and_grad(loss(d), &params);
        let (wv, wg) = interpreted(|| value_and_grad(loss(d), &params));
        assert_close(&v, &wv, tol, &format!("{what}: value"));
        for (k, (a, b)) in g.iter().zip(&wg).enumerate() {
            assert_close(a, b, tol, &format!("{what}: gradient {k}"));
        }
    };
    let programs = |prefix: &str| {
        eager_cache_entries()
            .into_iter()
            .filter(|e| e.0.starts_with(prefix))
            .collect::<Vec<_>>()
    };
    check(&data, "first call");
    let whole: Vec<_> = programs("Fused(value_and_grad")
        .into_iter()
        .filter(|e| e.0.contains("f32[6,16]") && e.0.contains("tanh"))
        .collect();
    assert_eq!(whole.len(), 1, "{whole:?}");
    // New captured data: the same program, the new data's results.
    let other = random_tensor(&mut rng, &[6, 5], DType::F32, -1.0, 1.0, false);
    check(&other, "other data");
    let again: Vec<_> = programs(&whole[0].0[..whole[0].0.len().min(200)]);
    assert!(
        again.iter().any(|e| e.0 == whole[0].0 && e.1 >= 1),
        "the second call reuses the program"
    );
    // Another graph (a different function) is another program.
    let f2 = |p: &Vec<Tensor>| (p[0].matmul(&p[1]).sin()).sum_all();
    let g2 = grad(f2, &params);
    let w2 = interpreted(|| grad(f2, &params));
    for (a, b) in g2.iter().zip(&w2) {
        assert_close(a, b, tol, "another function");
    }
    assert!(programs("Fused(value_and_grad")
        .iter()
        .any(|e| e.0.contains("sin")));
    // Temporaries too large for the cache (over a quarter of its bound: the concatenation,
    // 72 MiB): op by op, and not compiled again on the next call.
    let big = Tensor::ones(&[9 << 20], DType::F32);
    let f3 = |p: &Vec<Tensor>| {
        let c = Tensor::concat(&[&p[0], &p[0].sin()], 0);
        (c.exp() * &c).sum_all()
    };
    let refused = eager_stats().refused;
    let g3 = grad(f3, &vec![big.clone()]);
    assert_eq!(
        eager_stats().refused,
        refused + 1,
        "the whole program refused"
    );
    let g3b = grad(f3, &vec![big.clone()]);
    assert_eq!(eager_stats().refused, refused + 1, "and not compiled again");
    assert_eq!(g3[0].shape(), &[9 << 20]);
    assert_eq!(
        crate::common::bits(&g3[0]),
        crate::common::bits(&g3b[0]),
        "the same gradient op by op"
    );
    assert!(!programs("Fused(value_and_grad")
        .iter()
        .any(|e| e.0.contains("f32[9437184]")));
}

/// The composites users call eagerly run as one cached compiled program each (a row kernel
/// for `softmax` where op by op it was five programs and four temporaries): after a call,
/// the eager cache holds one program of the composite, keyed by its arguments, and the
/// results are the interpreter's (op by op) within f32 rounding. An axis out of range is
/// still the op's error.
#[test]
fn eager_composites_run_as_one_cached_program_each() {
    let mut rng = Rng::new(5);
    let x = random_tensor(&mut rng, &[7, 33], DType::F32, -3.0, 3.0, false);
    let gamma = random_tensor(&mut rng, &[33], DType::F32, 0.5, 1.5, false);
    let beta = random_tensor(&mut rng, &[33], DType::F32, -1.0, 1.0, false);
    let labels =
        Tensor::from_vec((0..7).map(|i| (i * 5) % 33).collect::<Vec<i32>>(), &[7]).unwrap();
    let one_hot = labels.one_hot_as(33, DType::F32);
    type Case<'a> = (&'a str, Box<dyn Fn() -> Tensor + 'a>);
    let cases: Vec<Case> = vec![
        ("softmax[-1]", Box::new(|| x.softmax(-1))),
        ("softmax[0]", Box::new(|| x.softmax(0))),
        ("log_softmax[1]", Box::new(|| x.log_softmax(1))),
        (
            "layer_norm[-1,1e-5,true]",
            Box::new(|| x.layer_norm(&gamma, &beta, 1e-5, -1)),
        ),
        (
            "layer_norm[-1,1e-5,false]",
            Box::new(|| x.layer_norm(&gamma, None, 1e-5, -1)),
        ),
        ("gelu", Box::new(|| x.gelu())),
        ("gelu_erf", Box::new(|| x.gelu_erf())),
        ("silu", Box::new(|| x.silu())),
        ("softplus", Box::new(|| x.softplus())),
        (
            "softmax_cross_entropy",
            Box::new(|| softmax_cross_entropy(&x, &one_hot)),
        ),
        (
            "softmax_cross_entropy_with_labels",
            Box::new(|| softmax_cross_entropy_with_labels(&x, &labels)),
        ),
    ];
    let tol = Tol {
        rel: 2e-6,
        abs: 1e-6,
    };
    for (name, f) in &cases {
        let got = f();
        let want = interpreted(f);
        assert_close(&got, &want, tol, name);
        // The composite's key and its inputs' types (another test may run it on others).
        let types = match *name {
            "layer_norm[-1,1e-5,true]" => "|f32[7, 33]|f32[33]|f32[33]",
            "layer_norm[-1,1e-5,false]" => "|f32[7, 33]|f32[33]",
            "softmax_cross_entropy" => "|f32[7, 33]|f32[7, 33]",
            "softmax_cross_entropy_with_labels" => "|f32[7, 33]|i32[7]",
            _ => "|f32[7, 33]",
        };
        let key = format!("Fused({name}){types}");
        let entries: Vec<_> = (eager_cache_entries().into_iter())
            .filter(|e| e.0 == key)
            .collect();
        assert_eq!(entries.len(), 1, "{name}: {entries:?}");
    }
    let bad = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| x.softmax(2)));
    let msg = crate::common::panic_text(&*bad.unwrap_err());
    assert!(msg.contains("axis 2"), "{msg}");
}
