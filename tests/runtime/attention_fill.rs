//! Attention masked by a finite fill (`where_(mask, s, -1e9)`, as Hugging Face and Flax
//! models write it): recognised and fused with the composition's exact meaning (a masked
//! score equals the fill, so it keeps a weight, and a fully masked row is uniform), values
//! and gradients against the interpreter on the unfused graph, in f32 and f64, causal
//! (tiles past the diagonal in closed form) and bool masks, fills from `f32::MIN` to one
//! above the scores; no square temporary at sequence 4096.

use crate::attention::tol;
use crate::common::{assert_close, random_tensor, trace_fn, Rng, Tol};
use jitfuse::internals::{interpret, passes};
use jitfuse::prelude::*;
use jitfuse::{attention_with, AttnMask, AttnOptions};

/// The fills tried: what models write (`-1e30`, `-1e9`, `finfo(f32).min`) and fills mild
/// enough (scores are about ±1) that masked keys carry real weight, or most of it.
const FILLS: [f64; 5] = [-1e30, -1e9, f32::MIN as f64, -2.0, 3.0];

fn swap_last(x: &Tensor) -> Tensor {
    let r = x.ndim();
    let mut perm: Vec<usize> = (0..r).collect();
    perm.swap(r - 2, r - 1);
    x.transpose(&perm)
}

/// Ways of writing a filled mask over scores `s [.., sq, sk]`: a causal `iota` comparison
/// selecting the scores, its complement selecting the fill, a bool mask `m`, and `!m`
/// selecting the fill.
const SPELLINGS: [&str; 4] = [
    "where_(col <= row, s, fill)",
    "where_(col > row, fill, s)",
    "where_(m, s, fill)",
    "where_(!m, fill, s)",
];

fn filled(s: &Tensor, m: &Tensor, spelling: usize, fill: f64) -> Tensor {
    let r = s.ndim();
    let (sq, sk) = (s.shape()[r - 2], s.shape()[r - 1]);
    let row = Tensor::iota(&[sq, 1], 0, DType::I32);
    let col = Tensor::iota(&[1, sk], 1, DType::I32);
    match spelling {
        0 => jitfuse::where_(&col.le(&row), s, fill),
        1 => jitfuse::where_(&col.gt(&row), fill, s),
        2 => jitfuse::where_(m, s, fill),
        _ => jitfuse::where_(&!m, fill, s),
    }
}

/// `softmax(filled(q kᵀ · 0.25)) v`, as users write it.
fn composition(q: &Tensor, k: &Tensor, v: &Tensor, m: &Tensor, sp: usize, fill: f64) -> Tensor {
    let s = q.matmul(&swap_last(k)) * 0.25;
    filled(&s, m, sp, fill).softmax(-1).matmul(v)
}

fn loss(x: &[Tensor], m: &Tensor, w: &Tensor, sp: usize, fill: f64) -> Tensor {
    (composition(&x[0], &x[1], &x[2], m, sp, fill) * w).sum_all()
}

#[jit]
fn spelled(q: &Tensor, k: &Tensor, v: &Tensor, m: &Tensor, sp: usize, fill: usize) -> Tensor {
    composition(q, k, v, m, sp, FILLS[fill])
}

#[jit]
fn spelled_grad(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    m: &Tensor,
    w: &Tensor,
    sp: usize,
    fill: usize,
) -> Vec<Tensor> {
    jitfuse::grad(
        |x: &Vec<Tensor>| loss(x, m, w, sp, FILLS[fill]),
        &vec![q.clone(), k.clone(), v.clone()],
    )
}

/// The unfused graph of `f` (pattern fusion off while tracing, autodiff included), run
/// by the interpreter: the reference.
fn reference(args: &[Tensor], f: impl FnOnce(&[Tensor]) -> Vec<Tensor>) -> Vec<Tensor> {
    passes::set_pattern_fusion(false);
    let g = trace_fn(args, f);
    passes::set_pattern_fusion(true);
    assert!(
        !g.to_text().contains("attention"),
        "the reference is fused:\n{g}"
    );
    interpret::eval_graph(&g, args, &[]).unwrap()
}

/// Normwise: a gradient element can be a cancellation of larger terms.
fn norm_tol(d: DType, want: &Tensor) -> Tol {
    let scale = crate::common::to_f64s(want)
        .iter()
        .fold(1.0f64, |m, x| m.max(x.abs()));
    let rel = tol(d).rel;
    Tol {
        rel,
        abs: rel * scale,
    }
}

/// `(q, k, v, mask, w)`: sizes crossing the tiles (64 queries, 128 keys) unevenly, more
/// keys than queries (keys past every query: masked for all rows under causal), and a
/// random bool mask keeping about half the keys, with row 3 fully masked.
fn inputs(rng: &mut Rng, d: DType, (b, sq, sk): (usize, usize, usize)) -> [Tensor; 5] {
    let t = |rng: &mut Rng, s: &[usize]| random_tensor(rng, s, d, -1.5, 1.5, false);
    let (q, k, v) = (
        t(rng, &[b, sq, 16]),
        t(rng, &[b, sk, 16]),
        t(rng, &[b, sk, 8]),
    );
    let r = random_tensor(rng, &[b, sq, sk], DType::F32, 0.0, 1.0, false);
    let m = r
        .gt(0.5)
        .logical_and(&Tensor::iota(&[b, sq, sk], 1, DType::I32).ne(3));
    let w = t(rng, &[b, sq, 8]);
    [q, k, v, m, w]
}

const SIZES: [(usize, usize, usize); 3] = [(2, 150, 300), (1, 200, 130), (3, 7, 5)];

/// Each dtype and size runs half the fill and spelling pairs (alternating, so each pair
/// runs in both dtypes or in two sizes): a debug build compiles every case.
#[test]
fn attention_with_a_finite_fill_is_fused_and_matches_the_unfused_composition() {
    let mut rng = Rng::new(31);
    for (di, d) in [DType::F32, DType::F64].into_iter().enumerate() {
        for (si, size) in SIZES.into_iter().enumerate() {
            let args = inputs(&mut rng, d, size);
            let [q, k, v, m, w] = &args;
            for (fi, &fill) in FILLS.iter().enumerate() {
                for (sp, name) in SPELLINGS.iter().enumerate() {
                    if (fi + sp + 3 * di + si) % 2 == 1 {
                        continue;
                    }
                    let what = format!("{name} with fill {fill:e}, {d}, {size:?}");
                    let text = spelled::lower(q, k, v, m, sp, fi).unwrap().as_text();
                    let kind = if sp < 2 { "causal" } else { "bool" };
                    assert!(
                        text.contains(&format!("attention[{kind},")) && text.contains(",fill="),
                        "{what}: not fused with its fill:\n{text}"
                    );
                    let want = &reference(&args[..4], |x| {
                        vec![composition(&x[0], &x[1], &x[2], &x[3], sp, fill)]
                    })[0];
                    let got = spelled(q, k, v, m, sp, fi);
                    assert_close(&got, want, tol(d), &what);
                    let grads = spelled_grad(q, k, v, m, w, sp, fi);
                    let want = reference(&args, |x| {
                        jitfuse::grad(
                            |y: &Vec<Tensor>| loss(y, &x[3], &x[4], sp, fill),
                            &vec![x[0].clone(), x[1].clone(), x[2].clone()],
                        )
                    });
                    for (j, (a, b)) in grads.iter().zip(&want).enumerate() {
                        let what = format!("d{} of {what}", ["q", "k", "v"][j]);
                        assert_close(a, b, norm_tol(d, b), &what);
                    }
                }
            }
        }
    }
}

/// The eager op (the interpreter's definition) with `AttnOptions::fill` is the composition.
#[test]
fn the_fill_option_of_the_op_is_the_composition() {
    let mut rng = Rng::new(32);
    let args = inputs(&mut rng, DType::F64, (2, 70, 90));
    let [q, k, v, m, _] = &args;
    for fill in FILLS {
        for (sp, mask) in [(0, AttnMask::Causal), (2, AttnMask::Bool(m))] {
            let opts = AttnOptions {
                scale: Some(0.25),
                fill: Some(fill),
            };
            let got = attention_with(q, k, v, mask, opts);
            let want = &reference(&args[..4], |x| {
                vec![composition(&x[0], &x[1], &x[2], &x[3], sp, fill)]
            })[0];
            assert_close(&got, want, tol(DType::F64), &format!("{mask:?} {fill:e}"));
        }
    }
}

/// A row with every key masked is uniform under a finite fill: the mean of v over the
/// keys (NaN is the `-inf` mask's answer, not the composition's here).
#[test]
fn a_fully_masked_row_under_a_finite_fill_is_the_mean_of_v() {
    let mut rng = Rng::new(33);
    for d in [DType::F32, DType::F64] {
        let [q, k, v, m, _] = inputs(&mut rng, d, (1, 9, 140));
        let m = m.logical_and(&Tensor::iota(&[1, 9, 140], 1, DType::I32).ne(4));
        let got = spelled(&q, &k, &v, &m, 2, 1);
        let mean = v.mean(1);
        for (i, row) in [(3usize, "row 3"), (4, "row 4")] {
            let got_row = got
                .slice_axis(1, i as isize, i as isize + 1, 1)
                .reshape(&[1, 8]);
            assert_close(&got_row, &mean, tol(d), &format!("{d} {row}"));
        }
        let want = &reference(&[q.clone(), k.clone(), v.clone(), m.clone()], |x| {
            vec![composition(&x[0], &x[1], &x[2], &x[3], 2, -1e9)]
        })[0];
        assert_close(&got, want, tol(d), &format!("{d} against the composition"));
    }
}

fn iota_causal_body(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    let s = q.matmul(&swap_last(k)) * 0.125;
    filled(&s, q, 0, -1e30).softmax(-1).matmul(v)
}

fn iota_causal_grad_body(q: &Tensor, k: &Tensor, v: &Tensor, w: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(
        |x: &Vec<Tensor>| {
            let s = x[0].matmul(&swap_last(&x[1])) * 0.125;
            (filled(&s, w, 0, -1e30).softmax(-1).matmul(&x[2]) * w).sum_all()
        },
        &vec![q.clone(), k.clone(), v.clone()],
    )
}

#[jit]
fn iota_causal(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    iota_causal_body(q, k, v)
}

#[jit]
fn iota_causal_grad(q: &Tensor, k: &Tensor, v: &Tensor, w: &Tensor) -> Vec<Tensor> {
    iota_causal_grad_body(q, k, v, w)
}

/// `iota_causal` and its gradient again, to be lowered with pattern fusion off (a cached
/// lowering would be the fused one).
#[jit]
fn iota_causal_unfused(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    iota_causal_body(q, k, v)
}

#[jit]
fn iota_causal_unfused_grad(q: &Tensor, k: &Tensor, v: &Tensor, w: &Tensor) -> Vec<Tensor> {
    iota_causal_grad_body(q, k, v, w)
}

#[jit]
fn causal_op(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    jitfuse::attention(q, k, v, AttnMask::Causal)
}

#[jit]
fn causal_op_grad(q: &Tensor, k: &Tensor, v: &Tensor, w: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(
        |x: &Vec<Tensor>| (jitfuse::attention(&x[0], &x[1], &x[2], AttnMask::Causal) * w).sum_all(),
        &vec![q.clone(), k.clone(), v.clone()],
    )
}

/// Causal attention masked by a `-1e30` fill of an `iota` comparison at sequence 4096
/// plans no square temporary, forward or backward (the composition planned 528 MiB
/// forward, 1552 MiB for the gradient at 8 heads): under 1 MiB forward (`AttnMask::Causal`'s
/// and the v-sums by key tile), and the gradient's scratch is exactly `Causal`'s (the
/// fill's tiles past the diagonal cost a count and a v-sum): under 1 MiB, but for a single
/// head at 4096, where the causal kernel splits the head's keys over two cores and the
/// second part's partial `dQ` alone is 1 MiB (1.5 MiB in all).
/// Lowered and compiled, not run (cheap in debug builds too).
#[test]
fn a_causal_fill_at_sequence_4096_keeps_no_square_temporary() {
    for (heads, seq) in [(1usize, 2048usize), (1, 4096), (8, 4096)] {
        let z = Tensor::zeros(&[heads, seq, 64], DType::F32);
        let f = iota_causal::lower(&z, &z, &z).unwrap();
        assert!(
            f.as_text()
                .contains("attention[causal,0.125,fill=-1.0000000150474662e30]"),
            "{}",
            f.as_text()
        );
        let g = iota_causal_grad::lower(&z, &z, &z, &z).unwrap();
        assert!(
            g.as_text()
                .contains("attention_grad[causal,0.125,fill=-1.0000000150474662e30]"),
            "{}",
            g.as_text()
        );
        let temp = |l: jitfuse::Lowered| l.compile().unwrap().memory_analysis().temp_bytes;
        let (fwd, bwd) = (temp(f), temp(g));
        let (cf, cb) = (
            temp(causal_op::lower(&z, &z, &z).unwrap()),
            temp(causal_op_grad::lower(&z, &z, &z, &z).unwrap()),
        );
        let what = format!("{heads} heads, sequence {seq}");
        if heads == 8 {
            // What the fill's fusion saves: the composition as XLA runs it.
            passes::set_pattern_fusion(false);
            let (uf, ub) = (
                temp(iota_causal_unfused::lower(&z, &z, &z).unwrap()),
                temp(iota_causal_unfused_grad::lower(&z, &z, &z, &z).unwrap()),
            );
            passes::set_pattern_fusion(true);
            eprintln!("{what}: fill {fwd} / {bwd}, unfused {uf} / {ub} bytes");
            assert!(
                uf > 256 << 20 && ub > 1 << 30,
                "{what}: unfused {uf} / {ub}"
            );
        }
        // The forward's scratch is Causal's and each head's v-sums by key tile.
        let suffixes = heads * seq.div_ceil(128) * 64 * 4;
        assert!(
            fwd < 1 << 20 && fwd == cf + suffixes,
            "{what} forward: {fwd} (causal {cf}) bytes"
        );
        assert_eq!(
            bwd, cb,
            "{what}: the gradient's temporaries against AttnMask::Causal's"
        );
        let split_head = heads == 1 && seq > 2048;
        assert!(
            bwd < 1 << 20 || (split_head && bwd < 3 << 19),
            "{what} gradient: {bwd} bytes"
        );
    }
}

/// The interpreter's `attention` and `attention_grad` with a fill (`interp/attention.rs`) are
/// the unfused composition too, and the compiled fused graph agrees with them: the fused
/// graphs (pattern fusion on while tracing, so the gradient is `attention_grad`) run by the
/// interpreter and compiled, against the interpreter on the unfused graphs.
#[test]
fn the_interpreter_gives_a_fill_the_composition_meaning() {
    let mut rng = Rng::new(34);
    for d in [DType::F32, DType::F64] {
        let args = inputs(&mut rng, d, (2, 70, 140));
        for fill in [-1e9, -2.0, 3.0] {
            for sp in [0, 2] {
                let what = format!("{} with fill {fill:e}, {d}", SPELLINGS[sp]);
                let fwd = |x: &[Tensor]| vec![composition(&x[0], &x[1], &x[2], &x[3], sp, fill)];
                let bwd = |x: &[Tensor]| {
                    jitfuse::grad(
                        |y: &Vec<Tensor>| loss(y, &x[3], &x[4], sp, fill),
                        &vec![x[0].clone(), x[1].clone(), x[2].clone()],
                    )
                };
                let want = [reference(&args, fwd), reference(&args, bwd)];
                let fused = [
                    passes::fuse_attention(&trace_fn(&args, fwd)),
                    trace_fn(&args, bwd),
                ];
                for ((g, want), op) in fused
                    .iter()
                    .zip(&want)
                    .zip(["attention[", "attention_grad["])
                {
                    let text = g.to_text();
                    let fused = text.lines().any(|l| l.contains(op) && l.contains(",fill="));
                    assert!(fused, "{what}: no {op}..,fill=]:\n{text}");
                    let got = interpret::eval_graph(g, &args, &[]).unwrap();
                    for (a, b) in got.iter().zip(want) {
                        assert_close(a, b, norm_tol(d, b), &format!("{what}: interpreter"));
                    }
                    crate::common::check_graph_with(g, &args, &what, |_, w| norm_tol(d, w));
                }
            }
        }
    }
}

/// A padding mask (keys past each sequence's length masked, as Hugging Face models mask
/// them) with a finite fill: the key tiles it masks wholly are added in closed form, the
/// query tiles of a wholly padded batch element too; values and gradients are the
/// composition's, also with a fill mild enough that the padded keys carry weight.
#[test]
fn a_padding_mask_with_a_fill_adds_its_masked_tiles_in_closed_form() {
    let mut rng = Rng::new(35);
    for d in [DType::F32, DType::F64] {
        let [q, k, v, _, w] = inputs(&mut rng, d, (3, 150, 300));
        // Lengths 100, 300 and 0 (every key masked: every row uniform).
        let len = Tensor::from_vec(vec![100i32, 300, 0], &[3, 1, 1]).unwrap();
        let m = Tensor::iota(&[3, 150, 300], 2, DType::I32).lt(&len);
        let args = [q, k, v, m, w];
        let [q, k, v, m, w] = &args;
        for fi in [1, 3] {
            let fill = FILLS[fi];
            let what = format!("padding mask, fill {fill:e}, {d}");
            let want = reference(&args[..4], |x| {
                vec![composition(&x[0], &x[1], &x[2], &x[3], 2, fill)]
            });
            assert_close(&spelled(q, k, v, m, 2, fi), &want[0], tol(d), &what);
            let want = reference(&args, |x| {
                jitfuse::grad(
                    |y: &Vec<Tensor>| loss(y, &x[3], &x[4], 2, fill),
                    &vec![x[0].clone(), x[1].clone(), x[2].clone()],
                )
            });
            let got = spelled_grad(q, k, v, m, w, 2, fi);
            for (j, (a, b)) in got.iter().zip(&want).enumerate() {
                let what = format!("d{} of {what}", ["q", "k", "v"][j]);
                assert_close(a, b, norm_tol(d, b), &what);
            }
        }
    }
}
