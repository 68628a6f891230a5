//! Windowed reductions and pools: the interpreter against a window-by-window reference
//! written here (padding, strides, overlapping windows, windows on any axis, ties and NaN),
//! compiled programs of all five members of the family against the interpreter bit for
//! bit (f32, f64, bf16; strided operands), ties and NaN routed to the first maximum, the
//! gradients against central differences, the same bits under 1, 2, 3 and 8 threads,
//! `vmap`, eager calls and errors.

use crate::common::*;
use jitfuse::internals::exec::Executable;
use jitfuse::internals::interpret;
use jitfuse::{
    avg_pool, grad, max_pool, reduce_window, ConvLayout, DType, Padding, PoolOptions, Reducer,
    Tensor,
};

/// A window geometry over every axis of an input.
struct Case {
    x: Vec<usize>,
    window: Vec<usize>,
    strides: Vec<usize>,
    padding: Vec<(i64, i64)>,
}

fn case(x: &[usize], window: &[usize], strides: &[usize], padding: &[(i64, i64)]) -> Case {
    Case {
        x: x.to_vec(),
        window: window.to_vec(),
        strides: strides.to_vec(),
        padding: padding.to_vec(),
    }
}

/// Pools (a window of 1 on the batch and feature axes: the feature axis runs as a block)
/// and windows on every axis, overlapping, strided, padded, on 1 to 3 spatial axes.
fn cases() -> Vec<Case> {
    let z = (0, 0);
    vec![
        case(&[2, 6, 6, 3], &[1, 2, 2, 1], &[1, 2, 2, 1], &[z, z, z, z]),
        case(
            &[2, 7, 5, 4],
            &[1, 3, 3, 1],
            &[1, 2, 2, 1],
            &[z, (1, 1), (1, 1), z],
        ),
        case(&[1, 9, 3], &[1, 4, 1], &[1, 3, 1], &[z, (2, 3), z]),
        case(
            &[2, 5, 4, 3, 2],
            &[1, 2, 3, 2, 1],
            &[1, 1, 2, 1, 1],
            &[z, (1, 0), (0, 2), (1, 1), z],
        ),
        // Windows over the feature axis too (no block), and over the batch.
        case(
            &[3, 5, 6],
            &[2, 2, 3],
            &[1, 2, 2],
            &[(0, 1), (1, 1), (0, 0)],
        ),
        // Padding wider than the window: windows of padding only.
        case(&[1, 3, 2], &[1, 2, 1], &[1, 1, 1], &[z, (3, 2), z]),
        // Windows that share no input (the usual pools): leaving inputs out (7 by 3s,
        // strides past the window), and partly in the padding.
        case(&[1, 7, 8, 5], &[1, 3, 2, 1], &[1, 3, 3, 1], &[z, z, z, z]),
        case(
            &[2, 5, 5, 3],
            &[1, 2, 2, 1],
            &[1, 2, 2, 1],
            &[z, (0, 1), (1, 0), z],
        ),
        // Disjoint windows over more features than a vector (whole chunks and a tail),
        // partly in the padding.
        case(
            &[2, 5, 4, 37],
            &[1, 2, 2, 1],
            &[1, 2, 2, 1],
            &[z, (0, 1), z, z],
        ),
        // More features than a vector, a window larger than the stride.
        case(
            &[2, 8, 8, 37],
            &[1, 3, 3, 1],
            &[1, 2, 2, 1],
            &[z, (1, 1), (0, 1), z],
        ),
    ]
}

/// Values from a few levels (ties in most windows), with NaN and infinities sometimes.
fn tied(rng: &mut Rng, shape: &[usize], d: DType, specials: bool) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|_| {
            if specials && rng.chance(0.04) {
                [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][rng.below(3)]
            } else {
                rng.below(5) as f64 - 2.0
            }
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap().cast(d)
}

/// The reduction of each window of the explicitly padded input (padding −∞ or 0), with
/// NaN propagating through the maximum: the definition, not the interpreter's loop.
fn reference(x: &Tensor, c: &Case, reducer: Reducer) -> Tensor {
    let xv = x.cast(DType::F64).to_vec::<f64>().unwrap();
    let r = c.x.len();
    let padded: Vec<usize> = (0..r)
        .map(|d| (c.x[d] as i64 + c.padding[d].0 + c.padding[d].1) as usize)
        .collect();
    let fill = match reducer {
        Reducer::Max => f64::NEG_INFINITY,
        Reducer::Sum => 0.0,
    };
    let mut big = vec![fill; padded.iter().product()];
    for idx in multi_indices(&c.x) {
        let at: Vec<usize> = (0..r).map(|d| idx[d] + c.padding[d].0 as usize).collect();
        big[flat_index(&padded, &at)] = xv[flat_index(&c.x, &idx)];
    }
    let y: Vec<usize> = (0..r)
        .map(|d| (padded[d] - c.window[d]) / c.strides[d] + 1)
        .collect();
    let mut out = vec![];
    for o in multi_indices(&y) {
        let vals = multi_indices(&c.window).into_iter().map(|j| {
            let at: Vec<usize> = (0..r).map(|d| o[d] * c.strides[d] + j[d]).collect();
            big[flat_index(&padded, &at)]
        });
        out.push(match reducer {
            Reducer::Max => vals.fold(f64::NEG_INFINITY, |m, v| {
                if m.is_nan() || v.is_nan() {
                    f64::NAN
                } else {
                    m.max(v)
                }
            }),
            Reducer::Sum => vals.sum(),
        });
    }
    Tensor::from_vec(out, &y).unwrap()
}

fn rw(x: &Tensor, c: &Case, reducer: Reducer) -> Tensor {
    reduce_window(x, reducer, &c.window, &c.strides, &c.padding)
}

#[test]
fn the_interpreter_reduces_each_window_of_the_padded_input() {
    let mut rng = Rng::new(340);
    for (i, c) in cases().iter().enumerate() {
        let x = tied(&mut rng, &c.x, DType::F64, true);
        for reducer in [Reducer::Max, Reducer::Sum] {
            let got = jitfuse::eager::interpreted(|| rw(&x, c, reducer));
            let want = reference(&x, c, reducer);
            assert_close(&got, &want, EXACT, &format!("case {i}, {reducer:?}"));
        }
    }
}

/// Both reductions, their gradients (`window_max_scatter`, `window_sum_transpose`) and
/// the gradients of those with respect to the cotangent (`window_max_gather`,
/// `window_sum`), the last two through a strided (transposed) view of the input.
fn the_family(c: &Case) -> impl Fn(&[Tensor]) -> Vec<Tensor> + '_ {
    move |ts: &[Tensor]| {
        let (x, r, q) = (&ts[0], &ts[1], &ts[2]);
        let max = rw(x, c, Reducer::Max);
        let sum = rw(x, c, Reducer::Sum);
        let gmax = |r: &Tensor| grad(|x: &Tensor| (rw(x, c, Reducer::Max) * r).sum_all(), x);
        let gsum = |r: &Tensor| grad(|x: &Tensor| (rw(x, c, Reducer::Sum) * r).sum_all(), x);
        let gather = grad(|r: &Tensor| (gmax(r) * q).sum_all(), r);
        let resum = grad(|r: &Tensor| (gsum(r) * q).sum_all(), r);
        // The input read through a transposed view (the block's lanes strided).
        let r2 = x.ndim();
        let mut p: Vec<usize> = (0..r2).collect();
        p.swap(r2 - 2, r2 - 1);
        let xt = (x * 1.5).transpose(&p).transpose(&p);
        vec![
            max,
            sum,
            gmax(r),
            gsum(r),
            gather,
            resum,
            rw(&xt, c, Reducer::Max),
        ]
    }
}

fn operands(rng: &mut Rng, c: &Case, d: DType, specials: bool) -> Vec<Tensor> {
    let x = tied(rng, &c.x, d, specials);
    let y = jitfuse::eager::interpreted(|| rw(&x, c, Reducer::Sum));
    let r = random_tensor(rng, y.shape(), d, -1.0, 1.0, false);
    let q = random_tensor(rng, &c.x, d, -1.0, 1.0, false);
    vec![x, r, q]
}

#[test]
fn compiled_window_ops_and_their_gradients_match_the_interpreter_bit_for_bit() {
    let mut rng = Rng::new(341);
    for d in [DType::F32, DType::F64, DType::BF16] {
        for (i, c) in cases().iter().enumerate() {
            let args = operands(&mut rng, c, d, true);
            let g = trace_fn(&args, the_family(c));
            let text = g.to_string();
            for role in [
                "window_max",
                "window_sum",
                "window_max_scatter",
                "window_sum_transpose",
                "window_max_gather",
            ] {
                assert!(
                    text.contains(&format!("= {role}[")),
                    "case {i}: {role}\n{text}"
                );
            }
            let parsed = jitfuse::internals::ir::parse(&text).unwrap();
            assert_eq!(parsed.to_string(), text, "case {i}: the text reads back");
            let want = interpret::eval_graph(&g, &args, &[]).unwrap();
            let exe = Executable::from_graph(g.clone(), vec![]).unwrap();
            let refs: Vec<&Tensor> = args.iter().collect();
            let got = exe.run_with(&refs).unwrap();
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!(
                    bits(a) == bits(b),
                    "{d} case {i} output {k}: {a} vs {b}\n{g}"
                );
            }
        }
    }
}

/// Ties go to the first maximum in the window's row-major order; NaN is the maximum.
#[test]
fn the_max_gradient_goes_to_the_first_maximum_and_nan_wins() {
    let x = Tensor::from_vec(
        vec![
            1.0f32,
            3.0,
            3.0,
            0.0, //
            3.0,
            2.0,
            f32::NAN,
            5.0, //
            -1.0,
            -1.0,
            7.0,
            7.0, //
            -1.0,
            -1.0,
            7.0,
            7.0,
        ],
        &[1, 4, 4, 1],
    )
    .unwrap();
    let gx = grad(
        |x: &Tensor| max_pool(x, &[2, 2], Default::default()).sum_all(),
        &x,
    );
    assert_eq!(
        gx.to_vec::<f32>().unwrap(),
        [
            0.0, 1.0, 0.0, 0.0, //
            0.0, 0.0, 1.0, 0.0, //
            1.0, 0.0, 1.0, 0.0, //
            0.0, 0.0, 0.0, 0.0
        ]
    );
    let y = max_pool(&x, &[2, 2], Default::default())
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(y[0], 3.0);
    assert!(y[1].is_nan());
    assert_eq!(&y[2..], [-1.0, 7.0]);
    // Overlapping windows (3 at stride 1) add their cotangents at a shared winner.
    let x = Tensor::from_vec(vec![0.0f64, 9.0, 1.0, 2.0, 0.0], &[1, 5, 1]).unwrap();
    let gx = grad(
        |x: &Tensor| {
            let o = PoolOptions {
                strides: vec![1],
                ..Default::default()
            };
            let w = Tensor::from_vec(vec![1.0f64, 10.0, 100.0], &[1, 3, 1]).unwrap();
            (max_pool(x, &[3], o) * &w).sum_all()
        },
        &x,
    );
    assert_eq!(gx.to_vec::<f64>().unwrap(), [0.0, 11.0, 0.0, 100.0, 0.0]);
}

/// `avg_pool` divides by the whole window, or by its real positions.
#[test]
fn avg_pool_divides_by_the_window_or_by_its_real_positions() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], &[1, 5, 1]).unwrap();
    let o = |count_include_pad| PoolOptions {
        strides: vec![2],
        padding: Padding::Explicit(vec![(1, 1)]),
        count_include_pad,
        ..Default::default()
    };
    // Windows [pad 1 2] [2 3 4] [4 5 pad].
    let with = avg_pool(&x, &[3], o(true)).to_vec::<f32>().unwrap();
    assert_eq!(with, [1.0, 3.0, 3.0]);
    let without = avg_pool(&x, &[3], o(false)).to_vec::<f32>().unwrap();
    assert_eq!(without, [1.5, 3.0, 4.5]);
    // `Same` at stride 2 on 5: 3 outputs, padding 1 before and 1 after.
    let same = PoolOptions {
        padding: Padding::Same,
        ..o(true)
    };
    assert_eq!(avg_pool(&x, &[3], same).to_vec::<f32>().unwrap(), with);
    // Channels first: the window moves over the trailing axes.
    let x = Tensor::from_vec((0..16).map(|v| v as f32).collect(), &[1, 1, 4, 4]).unwrap();
    let first = PoolOptions {
        layout: ConvLayout::ChannelsFirst,
        ..Default::default()
    };
    let y = max_pool(&x, &[2, 2], first.clone());
    assert_eq!(y.shape(), &[1, 1, 2, 2]);
    assert_eq!(y.to_vec::<f32>().unwrap(), [5.0, 7.0, 13.0, 15.0]);
    assert_eq!(
        avg_pool(&x, &[2, 2], first).to_vec::<f32>().unwrap(),
        [2.5, 4.5, 10.5, 12.5]
    );
}

/// Gradients of both pools against central differences in f64 (values apart, so no
/// window has a tie a small step could break).
#[test]
fn pool_gradients_match_central_differences() {
    let mut rng = Rng::new(343);
    for (i, c) in cases().iter().enumerate() {
        let n: usize = c.x.iter().product();
        let mut vals: Vec<f64> = (0..n).map(|k| k as f64 * 0.01).collect();
        for k in (1..n).rev() {
            vals.swap(k, rng.below(k + 1));
        }
        let x = Tensor::from_vec(vals.clone(), &c.x).unwrap();
        let y = rw(&x, c, Reducer::Sum);
        let r = random_tensor(&mut rng, y.shape(), DType::F64, -1.0, 1.0, false);
        for reducer in [Reducer::Max, Reducer::Sum] {
            let loss = |x: &Tensor| (rw(x, c, reducer) * &r).sum_all();
            let g = grad(loss, &x).to_vec::<f64>().unwrap();
            for _ in 0..6 {
                let e = rng.below(n);
                let at = |delta: f64| {
                    let mut v = vals.clone();
                    v[e] += delta;
                    let moved = Tensor::from_vec(v, &c.x).unwrap();
                    let l = jitfuse::eager::interpreted(|| loss(&moved));
                    // A window of padding only gives −∞ to a max: no element's business.
                    l.to_vec::<f64>().unwrap()[0]
                };
                let h = 1e-5;
                let fd = (at(h) - at(-h)) / (2.0 * h);
                if fd.is_nan() {
                    continue;
                }
                assert!(
                    (fd - g[e]).abs() <= 1e-6 * (1.0 + fd.abs()),
                    "case {i} {reducer:?} element {e}: gradient {} vs difference {fd}",
                    g[e]
                );
            }
        }
    }
}

#[test]
fn window_ops_give_the_same_bits_under_1_2_3_and_8_threads() {
    let mut rng = Rng::new(344);
    let z = (0, 0);
    let c = case(
        &[8, 32, 32, 64],
        &[1, 3, 3, 1],
        &[1, 2, 2, 1],
        &[z, (1, 1), (1, 1), z],
    );
    let args = operands(&mut rng, &c, DType::F32, false);
    let g = trace_fn(&args, the_family(&c));
    let exe = Executable::from_graph(g, vec![]).unwrap();
    let refs: Vec<&Tensor> = args.iter().collect();
    same_bits("window ops", || exe.run_with(&refs).unwrap());
}

#[test]
fn vmap_of_pools_and_their_gradients_matches_the_calls_one_by_one() {
    let mut rng = Rng::new(345);
    let xs = tied(&mut rng, &[3, 2, 5, 6, 2], DType::F64, false);
    let o = || PoolOptions {
        strides: vec![1, 2],
        padding: Padding::Same,
        ..Default::default()
    };
    let f = |x: &Tensor| {
        let g = grad(|x: &Tensor| (max_pool(x, &[2, 3], o()) * 2.0).sum_all(), x);
        vec![max_pool(x, &[2, 3], o()), avg_pool(x, &[3, 2], o()), g]
    };
    let batched = jitfuse::vmap(|x: &Tensor| f(x), [Some(0)], 0)(&xs);
    for i in 0..3 {
        for (k, want) in f(&lane(&xs, i)).iter().enumerate() {
            assert_close(
                &lane(&batched[k], i),
                want,
                EXACT,
                &format!("lane {i} output {k}"),
            );
        }
    }
}

#[test]
fn bad_windows_are_errors_naming_the_op_and_shapes() {
    let refused = |f: Box<dyn FnOnce() -> Tensor + std::panic::UnwindSafe>| -> String {
        std::panic::catch_unwind(f)
            .err()
            .map(|e| panic_text(&*e))
            .unwrap_or_default()
    };
    let x = || Tensor::ones(&[1, 5, 5, 3], DType::F32);
    let e = refused(Box::new(move || max_pool(&x(), &[2], Default::default())));
    assert!(
        e.contains("`max_pool`") && e.contains("[1,5,5,3]") && e.contains("spatial"),
        "{e}"
    );
    let e = refused(Box::new(move || {
        max_pool(&x(), &[6, 2], Default::default())
    }));
    assert!(e.contains("does not fit"), "{e}");
    let e = refused(Box::new(move || {
        avg_pool(
            &x(),
            &[2, 2],
            PoolOptions {
                strides: vec![0, 1],
                ..Default::default()
            },
        )
    }));
    assert!(e.contains("at least 1"), "{e}");
    let e = refused(Box::new(move || {
        reduce_window(&x(), Reducer::Sum, &[1, 2, 2], &[1, 1, 1], &[(0, 0); 3])
    }));
    assert!(e.contains("`reduce_window`") && e.contains("rank 4"), "{e}");
    let e = refused(Box::new(move || {
        reduce_window(
            &x(),
            Reducer::Max,
            &[1, 2, 2, 1],
            &[1; 4],
            &[(0, 0), (-1, 0), (0, 0), (0, 0)],
        )
    }));
    assert!(e.contains("negative"), "{e}");
    let e = refused(Box::new(move || {
        max_pool(
            &Tensor::ones(&[1, 4, 4, 2], DType::I32),
            &[2, 2],
            Default::default(),
        )
    }));
    assert!(e.contains("float") && e.contains("i32[1,4,4,2]"), "{e}");
}

/// Eager pools (compiled one-op programs) and their gradients agree with the interpreter.
#[test]
fn eager_pools_match_the_interpreter() {
    let mut rng = Rng::new(347);
    let c = &cases()[1];
    let args = operands(&mut rng, c, DType::F32, true);
    let got = the_family(c)(&args);
    let want = jitfuse::eager::interpreted(|| the_family(c)(&args));
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(bits(g) == bits(w), "output {k}");
    }
}
