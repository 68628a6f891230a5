//! Convolutions: the interpreter against a patch-by-patch reference written here (every
//! option: strides, padding kinds and negative padding, input and kernel dilation, groups,
//! 1-D/2-D/3-D, both layouts), compiled programs of all three members of the family
//! (forward, input gradient, weight gradient) against the interpreter at f32 and f64 (f64
//! runs the portable tile that CPUs without AVX-512 run f32 on),
//! gradients against central differences in f64, the same bits under 1, 2, 3 and 8
//! threads, `conv_transpose` on hand-computed numbers, `vmap`, eager calls, and errors.

use crate::common::*;
use jitfuse::internals::exec::Executable;
use jitfuse::{conv, conv_transpose, grad, ConvLayout, ConvOptions, DType, Padding, Tensor};

/// A convolution case: input and kernel shapes (channels last) and options.
struct Case {
    x: Vec<usize>,
    w: Vec<usize>,
    o: ConvOptions,
}

fn case(x: &[usize], w: &[usize], o: ConvOptions) -> Case {
    Case {
        x: x.to_vec(),
        w: w.to_vec(),
        o,
    }
}

fn opts(strides: &[usize], padding: Padding) -> ConvOptions {
    ConvOptions {
        strides: strides.to_vec(),
        padding,
        ..Default::default()
    }
}

/// Every option on its own and mixed, on 1, 2 and 3 spatial axes, with sizes that cross
/// the tile edges (14 rows, 32 columns).
fn cases() -> Vec<Case> {
    use Padding::*;
    vec![
        case(&[2, 9, 3], &[3, 3, 4], opts(&[], Valid)),
        case(&[2, 9, 3], &[3, 3, 4], opts(&[2], Same)),
        case(&[1, 10, 2], &[4, 2, 3], opts(&[3], Explicit(vec![(2, -1)]))),
        // A stride past the window: the input gradient's pixels of one phase meet no output.
        case(&[2, 10, 3], &[2, 3, 4], opts(&[3], Valid)),
        case(&[2, 7, 6, 3], &[3, 3, 3, 5], opts(&[1, 1], Same)),
        case(
            &[2, 8, 7, 4],
            &[3, 2, 4, 33],
            opts(&[2, 1], Explicit(vec![(1, 2), (0, 1)])),
        ),
        case(
            &[1, 9, 8, 4],
            &[3, 3, 2, 6],
            ConvOptions {
                strides: vec![2, 1],
                padding: Same,
                rhs_dilation: vec![2, 1],
                groups: 2,
                ..Default::default()
            },
        ),
        case(
            &[2, 5, 4, 3],
            &[3, 2, 3, 4],
            ConvOptions {
                padding: Explicit(vec![(1, 1), (2, 0)]),
                lhs_dilation: vec![2, 3],
                ..Default::default()
            },
        ),
        // One input feature, dilated along the last axis only (found by the fuzzer).
        case(
            &[1, 33, 33, 1],
            &[2, 3, 1, 17],
            ConvOptions {
                padding: Explicit(vec![(0, 2), (1, 0)]),
                lhs_dilation: vec![1, 2],
                ..Default::default()
            },
        ),
        // Few input features in one group: the forward on the padded copy, one pointer per
        // window row (a dilated window's rows; strided; narrow and wide tiles), and with
        // the window dilated along the last axis (its runs are not contiguous: the
        // general path).
        case(
            &[2, 9, 8, 3],
            &[3, 3, 3, 7],
            ConvOptions {
                strides: vec![1, 2],
                padding: Same,
                rhs_dilation: vec![2, 1],
                ..Default::default()
            },
        ),
        case(&[3, 11, 10, 1], &[5, 5, 1, 40], opts(&[1, 1], Same)),
        case(
            &[2, 9, 8, 2],
            &[3, 3, 2, 5],
            ConvOptions {
                padding: Same,
                rhs_dilation: vec![1, 2],
                ..Default::default()
            },
        ),
        // Depthwise.
        case(
            &[2, 6, 6, 5],
            &[3, 3, 1, 10],
            ConvOptions {
                padding: Same,
                groups: 5,
                ..Default::default()
            },
        ),
        case(&[1, 4, 5, 4, 2], &[2, 3, 2, 2, 3], opts(&[1, 2, 1], Same)),
        // Many row panels, and more than one block of steps (blocks hold at most 256 KiB
        // of the kernel: 600 steps of 70 features), split over tasks, with groups.
        case(&[2, 12, 11, 40], &[7, 7, 40, 17], opts(&[1, 1], Same)),
        case(&[1, 5, 6, 100], &[3, 3, 100, 70], opts(&[1, 1], Same)),
        // Few output features (direct tiles of 28 rows by 16 columns) over two blocks of
        // steps (2,700 of at most 2,048).
        case(&[1, 6, 7, 300], &[3, 3, 300, 12], opts(&[1, 1], Same)),
        case(
            &[2, 5, 6, 200],
            &[3, 3, 100, 140],
            ConvOptions {
                padding: Same,
                groups: 2,
                ..Default::default()
            },
        ),
        // Enough images and features (wide tiles) for the rows to be grouped by the window
        // positions they read inside (`library/conv/classes.rs`): forward and input
        // gradient skip the padding's positions.
        case(&[16, 8, 8, 24], &[3, 3, 24, 40], opts(&[1, 1], Same)),
        // Weight gradients over more pixels than a pass (1024) and a chunk (4096): partial
        // sums added in chunk order (packed, then direct).
        case(&[6, 40, 40, 6], &[3, 3, 6, 20], opts(&[1, 1], Same)),
        // The same with enough input features for the weight gradient's direct tiles
        // (fewer gather `x` into packed panels: the case above).
        case(&[5, 40, 40, 8], &[3, 3, 8, 20], opts(&[1, 1], Same)),
        // The direct weight gradient's tile shapes: one vector of 16 input features per row
        // (16, 48; 33: a third panel of 1) or two (32 per group); panels of output features
        // balanced, the last ending at `Fg` over rows it does not store (29 = 15 + 14,
        // 64 = 3 × 22 − 2, 15 per group = 2 × 8 − 1).
        case(&[3, 24, 24, 16], &[3, 3, 16, 29], opts(&[1, 1], Same)),
        case(&[2, 5, 5, 48], &[3, 3, 48, 64], opts(&[1, 1], Same)),
        case(&[1, 5, 5, 33], &[2, 2, 33, 13], opts(&[1, 1], Valid)),
        case(
            &[2, 4, 4, 64],
            &[3, 3, 32, 30],
            ConvOptions {
                padding: Same,
                groups: 2,
                ..Default::default()
            },
        ),
    ]
}

/// The convolution of `x` and `w` (channels last, f64 values) computed here patch by
/// patch on the dilated, padded input: the definition, not the interpreter's loop.
fn reference(x: &Tensor, w: &Tensor, o: &ConvOptions) -> Tensor {
    let (xs, ws) = (x.shape().to_vec(), w.shape().to_vec());
    let r = xs.len() - 2;
    let one = |v: &Vec<usize>| if v.is_empty() { vec![1; r] } else { v.clone() };
    let (s, ld, rd) = (one(&o.strides), one(&o.lhs_dilation), one(&o.rhs_dilation));
    let Padding::Explicit(pad) = &o.padding else {
        panic!("the reference takes explicit padding")
    };
    let (xv, wv) = (
        x.cast(DType::F64).to_vec::<f64>().unwrap(),
        w.cast(DType::F64).to_vec::<f64>().unwrap(),
    );
    let (n, c, f, g) = (xs[0], xs[r + 1], ws[r + 1], o.groups);
    let (cg, fg) = (c / g, f / g);
    // The dilated, padded input as a dense array (cropped where the padding is negative).
    let dims: Vec<i64> = (0..r)
        .map(|d| ((xs[1 + d] as i64 - 1) * ld[d] as i64 + 1) + pad[d].0 + pad[d].1)
        .collect();
    let big = |idx: &[i64]| -> Option<Vec<usize>> {
        let mut at = vec![];
        for d in 0..r {
            let p = idx[d] - pad[d].0;
            if p < 0 || p % ld[d] as i64 != 0 || (p / ld[d] as i64) >= xs[1 + d] as i64 {
                return None;
            }
            at.push((p / ld[d] as i64) as usize);
        }
        Some(at)
    };
    let win: Vec<i64> = (0..r)
        .map(|d| (ws[d] as i64 - 1) * rd[d] as i64 + 1)
        .collect();
    let outs: Vec<usize> = (0..r)
        .map(|d| ((dims[d] - win[d]) / s[d] as i64 + 1) as usize)
        .collect();
    let mut yshape = vec![n];
    yshape.extend(&outs);
    yshape.push(f);
    let mut y = vec![0.0; yshape.iter().product()];
    for b in 0..n {
        for op in multi_indices(&outs) {
            for kp in multi_indices(&ws[..r]) {
                let idx: Vec<i64> = (0..r)
                    .map(|d| op[d] as i64 * s[d] as i64 + kp[d] as i64 * rd[d] as i64)
                    .collect();
                let Some(at) = big(&idx) else { continue };
                for fo in 0..f {
                    let grp = fo / fg;
                    for ci in 0..cg {
                        let mut xi = vec![b];
                        xi.extend(&at);
                        xi.push(grp * cg + ci);
                        let mut wi = kp.clone();
                        wi.extend([ci, fo]);
                        let mut yi = vec![b];
                        yi.extend(&op);
                        yi.push(fo);
                        y[flat_index(&yshape, &yi)] +=
                            xv[flat_index(&xs, &xi)] * wv[flat_index(&ws, &wi)];
                    }
                }
            }
        }
    }
    Tensor::from_vec(y, &yshape).unwrap()
}

/// The padding `Same` and `Valid` stand for (`lax.padtype_to_pads`), for the reference.
fn explicit(c: &Case) -> ConvOptions {
    let r = c.x.len() - 2;
    let one = |v: &Vec<usize>| if v.is_empty() { vec![1; r] } else { v.clone() };
    let (s, rd) = (one(&c.o.strides), one(&c.o.rhs_dilation));
    let pad = match &c.o.padding {
        Padding::Explicit(p) => p.clone(),
        Padding::Valid => vec![(0, 0); r],
        Padding::Same => (0..r)
            .map(|d| {
                let len = c.x[1 + d];
                let k = (c.w[d] - 1) * rd[d] + 1;
                let out = len.div_ceil(s[d]);
                let total = ((out - 1) * s[d] + k).saturating_sub(len) as i64;
                (total / 2, total - total / 2)
            })
            .collect(),
    };
    ConvOptions {
        padding: Padding::Explicit(pad),
        ..c.o.clone()
    }
}

#[test]
fn the_interpreter_computes_each_window_of_the_dilated_padded_input() {
    let mut rng = Rng::new(330);
    for (i, c) in cases().iter().enumerate() {
        let x = random_tensor(&mut rng, &c.x, DType::F64, -1.0, 1.0, false);
        let w = random_tensor(&mut rng, &c.w, DType::F64, -1.0, 1.0, false);
        let want = reference(&x, &w, &explicit(c));
        let got = jitfuse::eager::interpreted(|| conv(&x, &w, c.o.clone()));
        assert_close(&got, &want, float_tol(DType::F64), &format!("case {i}"));
    }
}

/// The loss whose gradients are the other two members: `Σ conv(x, w) · r`.
fn forward_and_grads(c: &Case) -> impl Fn(&[Tensor]) -> Vec<Tensor> + '_ {
    move |ts: &[Tensor]| {
        let (x, w, r) = (&ts[0], &ts[1], &ts[2]);
        let y = conv(x, w, c.o.clone());
        let (gx, gw) = grad(
            |(x, w): &(Tensor, Tensor)| (conv(x, w, c.o.clone()) * r).sum_all(),
            &(x.clone(), w.clone()),
        );
        vec![y, gx, gw]
    }
}

fn operands(rng: &mut Rng, c: &Case, d: DType) -> Vec<Tensor> {
    let x = random_tensor(rng, &c.x, d, -1.0, 1.0, false);
    let w = random_tensor(rng, &c.w, d, -1.0, 1.0, false);
    let y = jitfuse::eager::interpreted(|| conv(&x, &w, c.o.clone()));
    let r = random_tensor(rng, y.shape(), d, -1.0, 1.0, false);
    vec![x, w, r]
}

#[test]
fn compiled_convolutions_and_both_gradients_match_the_interpreter_for_every_option() {
    let mut rng = Rng::new(331);
    // (bf16: `conv` and its input gradient on pairs of features where the CPU has AVX-512
    // BF16 and a group's features are even, on f32 copies elsewhere; f16 on f32 copies.)
    for d in [DType::F32, DType::F64, DType::BF16, DType::F16] {
        for (i, c) in cases().iter().enumerate() {
            let args = operands(&mut rng, c, d);
            let g = trace_fn(&args, forward_and_grads(c));
            let text = g.to_string();
            for role in ["conv", "conv_input_grad", "conv_weight_grad"] {
                assert!(
                    text.contains(&format!("= {role}[")),
                    "case {i}: {role}\n{text}"
                );
            }
            // Every output is a sum of products of the operands, so on their absolute values
            // it is its Σ|terms|: an f32 sum in another order is about u·Σ|terms| off (1.2e-4
            // for one of 8,000 random terms; a wrong term is off by its size, about 0.25).
            let abs: Vec<Tensor> = args.iter().map(|t| t.abs()).collect();
            // (16-bit operands sum in f32.)
            let unit = if d == DType::F64 {
                f64::EPSILON / 2.0
            } else {
                f64::from(f32::EPSILON) / 2.0
            };
            let mags: Vec<f64> = jitfuse::eager::interpreted(|| forward_and_grads(c)(&abs))
                .iter()
                .map(|t| {
                    let v = t.cast(DType::F64).to_vec::<f64>().unwrap();
                    v.into_iter().fold(0.0, f64::max)
                })
                .collect();
            check_graph_with(&g, &args, &format!("{d} case {i}"), |o, want| {
                let tol = float_norm_tol(d, want);
                Tol {
                    abs: tol.abs.max(4.0 * unit * mags[o]),
                    ..tol
                }
            });
        }
    }
}

/// `∂/∂x` and `∂/∂w` of `Σ conv(x, w) · r` against central differences in f64, and a
/// second derivative (the gradient of the input gradient with respect to the kernel).
#[test]
fn gradients_match_central_differences() {
    let mut rng = Rng::new(333);
    for (i, c) in cases().iter().enumerate().take(9) {
        let args = operands(&mut rng, c, DType::F64);
        let (x, w, r) = (&args[0], &args[1], &args[2]);
        let loss = |x: &Tensor, w: &Tensor| {
            jitfuse::eager::interpreted(|| (conv(x, w, c.o.clone()) * r).sum_all())
                .to_vec::<f64>()
                .unwrap()[0]
        };
        let (gx, gw) = grad(
            |(x, w): &(Tensor, Tensor)| (conv(x, w, c.o.clone()) * r).sum_all(),
            &(x.clone(), w.clone()),
        );
        for (which, t, g) in [(0, x, &gx), (1, w, &gw)] {
            let vals = t.to_vec::<f64>().unwrap();
            let gv = g.to_vec::<f64>().unwrap();
            for _ in 0..4 {
                let e = rng.below(vals.len());
                let h = 1e-4;
                let at = |delta: f64| {
                    let mut v = vals.clone();
                    v[e] += delta;
                    let moved = Tensor::from_vec(v, t.shape()).unwrap();
                    if which == 0 {
                        loss(&moved, w)
                    } else {
                        loss(x, &moved)
                    }
                };
                let fd = (at(h) - at(-h)) / (2.0 * h);
                assert!(
                    (fd - gv[e]).abs() <= 1e-7 * (1.0 + fd.abs()),
                    "case {i}, operand {which}, element {e}: gradient {} vs difference {fd}",
                    gv[e]
                );
            }
        }
        // Second order: d/dw Σ (∂L/∂x) · q, the input gradient's own gradient.
        let q = random_tensor(&mut rng, x.shape(), DType::F64, -1.0, 1.0, false);
        let inner = |w: &Tensor| grad(|x: &Tensor| (conv(x, w, c.o.clone()) * r).sum_all(), x);
        let second = grad(|w: &Tensor| (inner(w) * &q).sum_all(), w);
        let wv = w.to_vec::<f64>().unwrap();
        let sv = second.to_vec::<f64>().unwrap();
        let e = rng.below(wv.len());
        let at = |delta: f64| {
            let mut v = wv.clone();
            v[e] += delta;
            let moved = Tensor::from_vec(v, w.shape()).unwrap();
            (inner(&moved) * &q).sum_all().to_vec::<f64>().unwrap()[0]
        };
        let fd = (at(1e-4) - at(-1e-4)) / 2e-4;
        assert!(
            (fd - sv[e]).abs() <= 1e-7 * (1.0 + fd.abs()),
            "case {i}: second derivative {} vs difference {fd}",
            sv[e]
        );
    }
}

/// Convolutions large enough to split over tasks give the same bits under every pool.
#[test]
fn convolutions_give_the_same_bits_under_1_2_3_and_8_threads() {
    let mut rng = Rng::new(334);
    let wide = || {
        case(
            &[4, 16, 16, 24],
            &[3, 3, 24, 40],
            opts(&[1, 1], Padding::Same),
        )
    };
    for (c, d) in [
        (wide(), DType::F32),
        // A strided layer (its input gradient phase by phase, split over tasks).
        (
            case(
                &[8, 16, 16, 16],
                &[3, 3, 16, 32],
                opts(&[2, 2], Padding::Same),
            ),
            DType::F32,
        ),
        // A first layer on grey images (the forward on the padded copy, split over tasks).
        (
            case(
                &[8, 28, 28, 1],
                &[5, 5, 1, 32],
                opts(&[1, 1], Padding::Same),
            ),
            DType::F32,
        ),
        (cases().pop().unwrap(), DType::F32),
        // bf16 on pairs where the CPU has AVX-512 BF16: the grouped rows, the narrow tiles.
        (wide(), DType::BF16),
        (
            case(
                &[8, 16, 16, 16],
                &[3, 3, 16, 16],
                opts(&[1, 1], Padding::Same),
            ),
            DType::BF16,
        ),
    ] {
        same_bits_under_every_pool(&mut rng, &c, d);
    }
}

fn same_bits_under_every_pool(rng: &mut Rng, c: &Case, d: DType) {
    let args = operands(rng, c, d);
    let g = trace_fn(&args, forward_and_grads(c));
    let exe = Executable::from_graph(g, vec![]).unwrap();
    let refs: Vec<&Tensor> = args.iter().collect();
    same_bits(&format!("conv {:?} {:?}", c.x, c.w), || {
        exe.run_with(&refs).unwrap()
    });
}

#[test]
fn channels_first_is_channels_last_transposed() {
    let mut rng = Rng::new(335);
    let x = random_tensor(&mut rng, &[2, 3, 7, 6], DType::F32, -1.0, 1.0, false);
    let w = random_tensor(&mut rng, &[4, 3, 3, 2], DType::F32, -1.0, 1.0, false);
    let o = ConvOptions {
        strides: vec![2, 1],
        padding: Padding::Same,
        layout: ConvLayout::ChannelsFirst,
        ..Default::default()
    };
    let got = conv(&x, &w, o.clone());
    let last = conv(
        &x.transpose(&[0, 2, 3, 1]),
        &w.transpose(&[2, 3, 1, 0]),
        ConvOptions {
            layout: ConvLayout::ChannelsLast,
            ..o
        },
    );
    assert_eq!(got.shape(), &[2, 4, 4, 6]);
    assert_eq!(bits(&got), bits(&last.transpose(&[0, 3, 1, 2])));
}

/// `conv_transpose` of `[1, 2]` with the window `[1, 1, 1]` at stride 2: each input spreads
/// its window at twice its index, `[1, 1, 1 + 2, 2, 2]` (`Valid`: `len·s + k − s` long) and
/// its first 4 elements under `Same` (`len·s`), as `lax.conv_transpose` gives.
#[test]
fn conv_transpose_spreads_each_input_over_its_window() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2, 1]).unwrap();
    let w = Tensor::from_vec(vec![1.0f32; 3], &[3, 1, 1]).unwrap();
    let valid = conv_transpose(&x, &w, opts(&[2], Padding::Valid));
    assert_eq!(valid.to_vec::<f32>().unwrap(), [1.0, 1.0, 3.0, 2.0, 2.0]);
    let same = conv_transpose(&x, &w, opts(&[2], Padding::Same));
    assert_eq!(same.to_vec::<f32>().unwrap(), [1.0, 1.0, 3.0, 2.0]);
    // 2-D, 3 x 3 at stride 2: 4 x 5 -> 8 x 10 (Same) and 9 x 11 (Valid).
    let x = Tensor::ones(&[1, 4, 5, 2], DType::F32);
    let w = Tensor::ones(&[3, 3, 2, 3], DType::F32);
    assert_eq!(
        conv_transpose(&x, &w, opts(&[2, 2], Padding::Same)).shape(),
        &[1, 8, 10, 3]
    );
    assert_eq!(
        conv_transpose(&x, &w, opts(&[2, 2], Padding::Valid)).shape(),
        &[1, 9, 11, 3]
    );
}

/// A batch of inputs under `vmap` is one convolution over a larger batch; a batch of
/// kernels runs kernel by kernel. Both as the calls one by one.
#[test]
fn vmap_of_conv_matches_the_calls_one_by_one() {
    let mut rng = Rng::new(336);
    let xs = random_tensor(&mut rng, &[3, 2, 6, 5, 2], DType::F64, -1.0, 1.0, false);
    let ws = random_tensor(&mut rng, &[3, 3, 3, 2, 4], DType::F64, -1.0, 1.0, false);
    let o = opts(&[1, 2], Padding::Same);
    let w0 = lane(&ws, 0);
    let by_x = jitfuse::vmap(
        |(x, w): &(Tensor, Tensor)| conv(x, w, o.clone()),
        [Some(0), None],
        0,
    )(&(xs.clone(), w0));
    let by_both = jitfuse::vmap(
        |(x, w): &(Tensor, Tensor)| conv(x, w, o.clone()),
        [Some(0), Some(0)],
        0,
    )(&(xs.clone(), ws.clone()));
    for i in 0..3 {
        let one = conv(&lane(&xs, i), &lane(&ws, 0), o.clone());
        assert_close(&lane(&by_x, i), &one, float_tol(DType::F64), "vmap over x");
        let own = conv(&lane(&xs, i), &lane(&ws, i), o.clone());
        assert_close(
            &lane(&by_both, i),
            &own,
            float_tol(DType::F64),
            "vmap over x and w",
        );
    }
}

#[test]
fn bad_convolutions_are_errors_naming_the_op_and_shapes() {
    let refused = |x: &[usize], w: &[usize], o: ConvOptions| -> String {
        let (x, w) = (Tensor::ones(x, DType::F32), Tensor::ones(w, DType::F32));
        std::panic::catch_unwind(move || conv(&x, &w, o))
            .err()
            .map(|e| panic_text(&*e))
            .unwrap_or_default()
    };
    let e = refused(&[1, 5, 5, 3], &[3, 3, 4, 8], Default::default());
    assert!(
        e.contains("`conv`") && e.contains("[1,5,5,3]") && e.contains("groups"),
        "{e}"
    );
    let e = refused(&[1, 5, 3], &[3, 3, 3, 8], Default::default());
    assert!(e.contains("rank"), "{e}");
    let e = refused(&[1, 2, 2, 3], &[3, 3, 3, 8], Default::default());
    assert!(e.contains("window") && e.contains("does not fit"), "{e}");
    let e = refused(
        &[1, 5, 5, 4],
        &[3, 3, 2, 3],
        ConvOptions {
            groups: 2,
            ..Default::default()
        },
    );
    assert!(e.contains("divisible"), "{e}");
    let e = refused(&[1, 5, 5, 3], &[3, 3, 3, 8], opts(&[0, 1], Padding::Valid));
    assert!(e.contains("strides") && e.contains("at least 1"), "{e}");
    let e = refused(&[1, 5, 5, 3], &[3, 3, 3, 8], opts(&[1], Padding::Valid));
    assert!(
        e.contains("strides has 1 entries for 2 spatial axes"),
        "{e}"
    );
    let (x, w) = (
        Tensor::ones(&[1, 5, 3], DType::F32),
        Tensor::ones(&[3, 3, 2], DType::F64),
    );
    let e = std::panic::catch_unwind(move || conv(&x, &w, Default::default()))
        .err()
        .map(|e| panic_text(&*e))
        .unwrap_or_default();
    assert!(
        e.contains("one float dtype") && e.contains("f64[3,3,2]"),
        "{e}"
    );
}

/// Eager convolutions (compiled one-op programs) and a `#[jit]`-style trace agree.
#[test]
fn eager_convolutions_match_the_interpreter() {
    let mut rng = Rng::new(337);
    let c = &cases()[4];
    let args = operands(&mut rng, c, DType::F32);
    let got = forward_and_grads(c)(&args);
    let want = jitfuse::eager::interpreted(|| forward_and_grads(c)(&args));
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_close(g, w, float_norm_tol(DType::F32, w), &format!("output {k}"));
    }
}

/// A term whose input element lies in the padding (or between dilated elements) multiplies
/// a zero, as `lax` convolves the padded input: a NaN in the kernel reaches every output of
/// its feature, windows of padding only included, in the interpreter and the kernels of
/// every member of the family (the interpreter once skipped those terms: 0 against NaN).
#[test]
fn terms_in_the_padding_multiply_zeros_so_a_nan_kernel_reaches_every_output() {
    let mut rng = Rng::new(338);
    for d in [DType::F32, DType::F64] {
        for c in [
            case(
                &[2, 5, 3],
                &[1, 3, 4],
                opts(&[1], Padding::Explicit(vec![(2, 0)])),
            ),
            case(
                &[3, 4, 17],
                &[1, 17, 17],
                opts(&[2], Padding::Explicit(vec![(2, 1)])),
            ),
            case(
                &[1, 4, 6, 3],
                &[2, 2, 3, 5],
                opts(&[1, 1], Padding::Explicit(vec![(3, 0), (0, 3)])),
            ),
            case(
                &[2, 40, 40, 8],
                &[1, 1, 8, 20],
                opts(&[1, 1], Padding::Explicit(vec![(2, 2), (0, 0)])),
            ),
            // Rows the finite kernel would group by the positions they read inside: the
            // NaN makes every position run.
            case(
                &[16, 8, 8, 24],
                &[3, 3, 24, 20],
                opts(&[1, 1], Padding::Same),
            ),
        ] {
            let mut args = operands(&mut rng, &c, d);
            let mut w = args[1].cast(DType::F64).to_vec::<f64>().unwrap();
            w[0] = f64::NAN;
            args[1] = Tensor::from_vec(w, &c.w).unwrap().cast(d);
            let g = trace_fn(&args, forward_and_grads(&c));
            // (The last case's weight gradient sums 3,520 f32 terms in another order.)
            let sums = Tol {
                rel: 1e-4,
                abs: 1e-4,
            };
            check_graph_with(&g, &args, &format!("{d} {:?}", c.x), |_, want| {
                if d == DType::F32 {
                    sums
                } else {
                    float_norm_tol(d, want)
                }
            });
            let y = conv(&args[0], &args[1], c.o.clone());
            let f = *c.w.last().unwrap();
            let y = y.cast(DType::F64).to_vec::<f64>().unwrap();
            assert!(
                y.iter().step_by(f).all(|v| v.is_nan()),
                "{d} {:?}: every output of feature 0 is NaN",
                c.x
            );
        }
    }
}

/// bf16 convolutions read their operands as they are where the CPU has AVX-512 BF16 (`conv`
/// and its input gradient on pairs of features: `library/conv/pairs.rs`), giving f32 sums
/// rounded once to bf16: each result within half a bf16 unit of the exact sum of the same
/// values plus what an f32 sum of its terms may lose; the program keeps no f32 copy of the
/// activations (less memory than on f32 copies); and the paths that do not read pairs (odd
/// features, channels-first operands read through strides, the weight gradient) give the
/// same bounds.
#[test]
fn bf16_convolutions_read_pairs_of_features_and_round_their_f32_sums_once() {
    use jitfuse::internals::codegen::Target;
    use jitfuse::internals::passes::widen::widen;
    let mut rng = Rng::new(336);
    let nchw = |c: Case| Case {
        o: ConvOptions {
            layout: ConvLayout::ChannelsFirst,
            ..c.o
        },
        x: vec![c.x[0], c.x[3], c.x[1], c.x[2]],
        w: vec![c.w[3], c.w[2], c.w[0], c.w[1]],
    };
    let grouped = ConvOptions {
        padding: Padding::Same,
        groups: 2,
        ..Default::default()
    };
    let cases = [
        // Wide tiles with grouped rows; the narrow tiles; a group's features even; a
        // strided layer; odd features (widened panels); channels first (strided operands).
        (
            case(
                &[3, 9, 10, 32],
                &[3, 3, 32, 40],
                opts(&[1, 1], Padding::Same),
            ),
            true,
        ),
        (
            case(
                &[4, 8, 8, 16],
                &[3, 3, 16, 16],
                opts(&[1, 1], Padding::Same),
            ),
            true,
        ),
        (case(&[2, 6, 7, 12], &[3, 3, 6, 20], grouped), true),
        (
            case(&[2, 9, 9, 8], &[3, 3, 8, 34], opts(&[2, 2], Padding::Same)),
            true,
        ),
        (
            case(&[2, 6, 6, 5], &[3, 3, 5, 7], opts(&[1, 1], Padding::Same)),
            false,
        ),
        (
            nchw(case(
                &[2, 6, 7, 8],
                &[3, 3, 8, 10],
                opts(&[1, 1], Padding::Same),
            )),
            false,
        ),
    ];
    for (i, (c, pairs)) in cases.iter().enumerate() {
        let args = operands(&mut rng, c, DType::BF16);
        let g = trace_fn(&args, forward_and_grads(c));
        let wide: Vec<Tensor> = args.iter().map(|t| t.cast(DType::F64)).collect();
        let exact = jitfuse::eager::interpreted(|| forward_and_grads(c)(&wide));
        let abs: Vec<Tensor> = wide.iter().map(|t| t.abs()).collect();
        let size = jitfuse::eager::interpreted(|| forward_and_grads(c)(&abs));
        // The most terms of one sum: the weight gradient's, over every output pixel.
        let terms = exact[0].shape()[..exact[0].shape().len() - 1]
            .iter()
            .product::<usize>()
            .max(c.w.iter().product());
        let exe = compile_at(g.clone(), Target::host()).unwrap();
        let got = exe.run_with(&args.iter().collect::<Vec<_>>()).unwrap();
        for (o, name) in ["y", "dx", "dw"].iter().enumerate() {
            assert_eq!(got[o].dtype(), DType::BF16, "case {i} {name}");
            let (g, x, m) = (to_f64s(&got[o]), to_f64s(&exact[o]), to_f64s(&size[o]));
            for e in 0..g.len() {
                let bound =
                    x[e].abs() * 2f64.powi(-8) + 1.01 * terms as f64 * 2f64.powi(-24) * m[e];
                assert!(
                    (g[e] - x[e]).abs() <= bound,
                    "case {i} {name}[{e}]: {} vs {}",
                    g[e],
                    x[e]
                );
            }
        }
        // On pairs: less memory than the program on f32 copies of the operands.
        let native =
            cfg!(target_arch = "x86_64") && std::arch::is_x86_feature_detected!("avx512bf16");
        let copies = compile_at(widen(&g, &|_, _| false).unwrap(), Target::host()).unwrap();
        let (temp, copied) = (
            exe.memory_analysis().temp_bytes,
            copies.memory_analysis().temp_bytes,
        );
        if native && *pairs {
            // The convolution reads the bf16 parameters and gives its f32 sums.
            let text = exe.optimized_text();
            let line = text.lines().find(|l| l.contains("= conv[")).unwrap();
            assert!(line.contains("] %0, %1 : f32["), "case {i}:\n{text}");
            assert!(
                temp < copied,
                "case {i}: {temp} bytes, {copied} on f32 copies"
            );
        }
    }
}
