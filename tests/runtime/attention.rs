//! `attention`: compiled (tiled, no score matrix) against the interpreter's definition and
//! against the unfused composition users write, forward and gradient, every mask kind,
//! Sq ≠ Sk, broadcast batch and head axes, f32 and f64; finite differences in f64.

use crate::common::{assert_close, random_tensor, Rng, Tol};
use jitfuse::prelude::*;
use jitfuse::{attention, attention_with, AttnMask, AttnOptions};

/// `x` with its last two axes swapped.
fn swap_last(x: &Tensor) -> Tensor {
    let r = x.ndim();
    let mut perm: Vec<usize> = (0..r).collect();
    perm.swap(r - 2, r - 1);
    x.transpose(&perm)
}

/// The `[sq, sk]` lower triangle (key j visible to query i when j <= i).
fn tril(sq: usize, sk: usize) -> Tensor {
    let row = Tensor::iota(&[sq, sk], 0, DType::I32);
    let col = Tensor::iota(&[sq, sk], 1, DType::I32);
    col.le(&row)
}

/// The composition: `softmax(q kᵀ · scale + mask) v`.
fn composed(q: &Tensor, k: &Tensor, v: &Tensor, mask: AttnMask, scale: f64) -> Tensor {
    let s = q.matmul(&swap_last(k)) * scale;
    let (sq, sk) = (q.shape()[q.ndim() - 2], k.shape()[k.ndim() - 2]);
    let s = match mask {
        AttnMask::None => s,
        AttnMask::Causal => jitfuse::where_(&tril(sq, sk), &s, f64::NEG_INFINITY),
        AttnMask::Bool(m) => jitfuse::where_(m, &s, f64::NEG_INFINITY),
        AttnMask::Additive(m) => s + m,
    };
    s.softmax(-1).matmul(v)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    None,
    Causal,
    Bool,
    Additive,
}

fn mask_of(kind: Kind, m: &Tensor) -> AttnMask<'_> {
    match kind {
        Kind::None => AttnMask::None,
        Kind::Causal => AttnMask::Causal,
        Kind::Bool => AttnMask::Bool(m),
        Kind::Additive => AttnMask::Additive(m),
    }
}

#[jit]
fn fused(q: &Tensor, k: &Tensor, v: &Tensor, m: &Tensor, kind: usize) -> Tensor {
    let kind = [Kind::None, Kind::Causal, Kind::Bool, Kind::Additive][kind];
    attention_with(
        q,
        k,
        v,
        mask_of(kind, m),
        AttnOptions {
            scale: Some(0.3),
            ..Default::default()
        },
    )
}

/// `sum(attention(q, k, v) · w)` with mask kind `kind` (an index into `KINDS`), scale 0.3.
fn weighted_sum(x: &[Tensor], m: &Tensor, w: &Tensor, kind: usize) -> Tensor {
    let kind = [Kind::None, Kind::Causal, Kind::Bool, Kind::Additive][kind];
    let o = attention_with(
        &x[0],
        &x[1],
        &x[2],
        mask_of(kind, m),
        AttnOptions {
            scale: Some(0.3),
            ..Default::default()
        },
    );
    (o * w).sum_all()
}

#[jit]
fn fused_grad(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    m: &Tensor,
    w: &Tensor,
    kind: usize,
) -> Vec<Tensor> {
    jitfuse::grad(
        |x: &Vec<Tensor>| weighted_sum(x, m, w, kind),
        &vec![q.clone(), k.clone(), v.clone()],
    )
}

/// The same gradient with the loss returned too: the forward output is then computed
/// anyway, and the gradient reads it instead of recomputing it.
#[jit]
fn fused_value_and_grad(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    m: &Tensor,
    w: &Tensor,
    kind: usize,
) -> (Tensor, Vec<Tensor>) {
    jitfuse::value_and_grad(
        |x: &Vec<Tensor>| weighted_sum(x, m, w, kind),
        &vec![q.clone(), k.clone(), v.clone()],
    )
}

/// The composition's gradient, eagerly, with pattern fusion off (it would turn the
/// composition into the op).
fn composed_grad(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    m: &Tensor,
    w: &Tensor,
    kind: Kind,
) -> Vec<Tensor> {
    jitfuse::internals::passes::set_pattern_fusion(false);
    let g = jitfuse::grad(
        |x: &Vec<Tensor>| (composed(&x[0], &x[1], &x[2], mask_of(kind, m), 0.3) * w).sum_all(),
        &vec![q.clone(), k.clone(), v.clone()],
    );
    jitfuse::internals::passes::set_pattern_fusion(true);
    g
}

struct Case {
    q: Vec<usize>,
    k: Vec<usize>,
    v: Vec<usize>,
    mask: Vec<usize>,
}

fn cases() -> Vec<Case> {
    let c = |q: &[usize], k: &[usize], v: &[usize], mask: &[usize]| Case {
        q: q.to_vec(),
        k: k.to_vec(),
        v: v.to_vec(),
        mask: mask.to_vec(),
    };
    vec![
        // One head, tiles of 64 queries and 128 keys crossed on both sides.
        c(&[70, 16], &[200, 16], &[200, 24], &[70, 200]),
        // Batch and heads, Sq > Sk, k and v shared by the heads (broadcast).
        c(
            &[2, 3, 130, 8],
            &[2, 1, 65, 8],
            &[2, 1, 65, 8],
            &[1, 1, 130, 65],
        ),
        // A mask broadcast over the rows; one query row; one key.
        c(&[3, 1, 5], &[3, 9, 5], &[3, 9, 2], &[3, 1, 9]),
        c(&[4, 6], &[1, 6], &[1, 3], &[4, 1]),
    ]
}

/// Tolerance of attention against its composition (exp and sums reordered by the tiles).
pub(crate) fn tol(d: DType) -> Tol {
    match d {
        DType::F32 => Tol {
            rel: 2e-4,
            abs: 2e-5,
        },
        _ => Tol {
            rel: 1e-9,
            abs: 1e-11,
        },
    }
}

/// q, k, v, the mask (a placeholder without one) and the weights `w` of the loss
/// `sum(attention · w)`.
fn inputs(rng: &mut Rng, c: &Case, kind: Kind, d: DType) -> [Tensor; 5] {
    let t = |rng: &mut Rng, s: &[usize]| random_tensor(rng, s, d, -1.5, 1.5, false);
    let (q, k, v) = (t(rng, &c.q), t(rng, &c.k), t(rng, &c.v));
    let m = match kind {
        // Every row keeps key 0 (no row fully masked: that is its own test).
        Kind::Bool => {
            let r = random_tensor(rng, &c.mask, DType::F32, 0.0, 1.0, false);
            let first = Tensor::iota(&c.mask, c.mask.len() - 1, DType::I32).eq(0);
            r.gt(0.4).logical_or(&first)
        }
        Kind::Additive => t(rng, &c.mask),
        _ => Tensor::zeros(&[1], d),
    };
    let out = attention(&q, &k, &v, mask_of(kind, &m)).shape().to_vec();
    let w = random_tensor(rng, &out, d, -1.0, 1.0, false);
    [q, k, v, m, w]
}

const KINDS: [Kind; 4] = [Kind::None, Kind::Causal, Kind::Bool, Kind::Additive];

#[test]
fn compiled_attention_matches_the_composition_and_the_definition() {
    let mut rng = Rng::new(3);
    for d in [DType::F32, DType::F64] {
        for c in cases() {
            for (ki, &kind) in KINDS.iter().enumerate() {
                let [q, k, v, m, _] = inputs(&mut rng, &c, kind, d);
                let got = fused(&q, &k, &v, &m, ki);
                let what = format!("{kind:?} {d} q {:?} k {:?} v {:?}", c.q, c.k, c.v);
                // The eager op is the interpreter's definition (f64, score matrix and all).
                let def = attention_with(
                    &q,
                    &k,
                    &v,
                    mask_of(kind, &m),
                    AttnOptions {
                        scale: Some(0.3),
                        ..Default::default()
                    },
                );
                assert_close(
                    &got,
                    &def,
                    tol(d),
                    &format!("{what}: against the definition"),
                );
                let comp = composed(&q, &k, &v, mask_of(kind, &m), 0.3);
                assert_close(
                    &got,
                    &comp,
                    tol(d),
                    &format!("{what}: against the composition"),
                );
            }
        }
    }
}

#[test]
fn attention_gradients_match_the_composition() {
    let mut rng = Rng::new(4);
    for d in [DType::F32, DType::F64] {
        for c in cases() {
            for (ki, &kind) in KINDS.iter().enumerate() {
                let [q, k, v, m, w] = inputs(&mut rng, &c, kind, d);
                let got = fused_grad(&q, &k, &v, &m, &w, ki);
                let (_, saved) = fused_value_and_grad(&q, &k, &v, &m, &w, ki);
                let want = composed_grad(&q, &k, &v, &m, &w, kind);
                let both = got.iter().zip(&want).chain(saved.iter().zip(&want));
                for (j, (a, b)) in both.enumerate() {
                    let j = j % 3;
                    assert_eq!(a.shape(), b.shape());
                    // Normwise: a gradient element can be a cancellation of larger terms.
                    let scale = crate::common::to_f64s(b)
                        .iter()
                        .fold(1.0f64, |m, x| m.max(x.abs()));
                    let t = tol(d);
                    assert_close(
                        a,
                        b,
                        Tol {
                            rel: t.rel,
                            abs: t.rel * scale,
                        },
                        &format!(
                            "d{} of {kind:?} {d} q {:?} k {:?} v {:?}",
                            ["q", "k", "v"][j],
                            c.q,
                            c.k,
                            c.v
                        ),
                    );
                }
            }
        }
    }
}

/// Directional derivatives of the compiled f64 gradient against central differences of the
/// compiled forward.
#[test]
fn attention_gradients_match_finite_differences_in_f64() {
    let mut rng = Rng::new(5);
    for c in cases() {
        for (ki, &kind) in KINDS.iter().enumerate() {
            let [q, k, v, m, w] = inputs(&mut rng, &c, kind, DType::F64);
            let g = fused_grad(&q, &k, &v, &m, &w, ki);
            let f = |q: &Tensor, k: &Tensor, v: &Tensor| {
                (fused(q, k, v, &m, ki) * &w)
                    .sum_all()
                    .item::<f64>()
                    .unwrap()
            };
            let x = [&q, &k, &v];
            for j in 0..3 {
                let dir = random_tensor(&mut rng, x[j].shape(), DType::F64, -1.0, 1.0, false);
                let h = 1e-5;
                let shifted = |s: f64| {
                    let mut y = [q.clone(), k.clone(), v.clone()];
                    y[j] = x[j] + &dir * s;
                    f(&y[0], &y[1], &y[2])
                };
                let fd = (shifted(h) - shifted(-h)) / (2.0 * h);
                let an = (&g[j] * &dir).sum_all().item::<f64>().unwrap();
                assert!(
                    (fd - an).abs() <= 1e-6 * (1.0 + an.abs()),
                    "d{} of {kind:?} q {:?}: finite difference {fd}, gradient {an}",
                    ["q", "k", "v"][j],
                    c.q
                );
            }
        }
    }
}

#[jit]
fn masked_rows(q: &Tensor, k: &Tensor, v: &Tensor, m: &Tensor) -> Tensor {
    attention(q, k, v, AttnMask::Bool(m))
}

/// A query whose keys are all masked out is NaN, as the composition's softmax of -infs; the
/// other rows are unaffected. With no keys at all the output is an empty sum: zeros.
#[test]
fn fully_masked_rows_are_nan_and_no_keys_give_zeros() {
    let mut rng = Rng::new(6);
    let q = random_tensor(&mut rng, &[5, 4], DType::F32, -1.0, 1.0, false);
    let k = random_tensor(&mut rng, &[7, 4], DType::F32, -1.0, 1.0, false);
    let v = random_tensor(&mut rng, &[7, 3], DType::F32, -1.0, 1.0, false);
    let row = Tensor::iota(&[5, 7], 0, DType::I32);
    let m = row.ne(2);
    let got = masked_rows(&q, &k, &v, &m).to_vec::<f32>().unwrap();
    let want = composed(&q, &k, &v, AttnMask::Bool(&m), 0.5)
        .to_vec::<f32>()
        .unwrap();
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        if i / 3 == 2 {
            assert!(a.is_nan() && b.is_nan(), "row 2: {a} {b}");
        } else {
            assert!(
                (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                "element {i}: {a} vs {b}"
            );
        }
    }
    let k0 = Tensor::zeros(&[0, 4], DType::F32);
    let v0 = Tensor::zeros(&[0, 3], DType::F32);
    let none = Tensor::from_vec(Vec::<bool>::new(), &[5, 0]).unwrap();
    let z = masked_rows(&q, &k0, &v0, &none);
    assert_eq!(z.shape(), &[5, 3]);
    assert!(z.to_vec::<f32>().unwrap().iter().all(|&x| x == 0.0));
}

#[jit]
fn causal_long(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    attention(q, k, v, AttnMask::Causal)
}

#[jit]
fn weighted_long_grad(q: &Tensor, k: &Tensor, v: &Tensor, w: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(
        |x: &Vec<Tensor>| (attention(&x[0], &x[1], &x[2], AttnMask::Causal) * w).sum_all(),
        &vec![q.clone(), k.clone(), v.clone()],
    )
}

#[jit]
fn causal_long_grad(q: &Tensor, k: &Tensor, v: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(
        |x: &Vec<Tensor>| {
            attention(&x[0], &x[1], &x[2], AttnMask::Causal)
                .square()
                .sum_all()
        },
        &vec![q.clone(), k.clone(), v.clone()],
    )
}

/// The compiled step holds no score matrix: at 2 heads x 2048 x 2048 the composition's
/// scores alone are 32 MiB; the fused forward and gradient take a few tiles per core.
#[test]
fn compiled_attention_keeps_no_score_matrix() {
    let (h, s, d) = (2, 2048, 32);
    let mut rng = Rng::new(7);
    let t = |rng: &mut Rng| random_tensor(rng, &[h, s, d], DType::F32, -1.0, 1.0, false);
    let (q, k, v) = (t(&mut rng), t(&mut rng), t(&mut rng));
    let (lf, lb) = (
        causal_long::lower(&q, &k, &v).unwrap(),
        causal_long_grad::lower(&q, &k, &v).unwrap(),
    );
    assert!(
        lf.as_text().contains("attention[causal,"),
        "{}",
        lf.as_text()
    );
    assert!(
        lb.as_text().contains("attention_grad[causal,"),
        "{}",
        lb.as_text()
    );
    let (fwd, bwd) = (
        lf.compile().unwrap().memory_analysis(),
        lb.compile().unwrap().memory_analysis(),
    );
    println!("attention 2 x 2048 x 32: forward {fwd:?}\ngradient {bwd:?}");
    let scores = h * s * s * 4;
    assert!(
        fwd.temp_bytes < scores / 16,
        "forward temp {} bytes: {fwd:?}",
        fwd.temp_bytes
    );
    // The gradient of `sum(o²)` reads the forward output (dO = 2o), so it keeps it;
    // dq, dk and dv are written straight into the outputs.
    let o_bytes = h * s * d * 4;
    assert!(
        bwd.temp_bytes < o_bytes + scores / 16,
        "gradient temp {} bytes: {bwd:?}",
        bwd.temp_bytes
    );
    // The gradient of `sum(o · w)` needs no forward output: the forward step is gone, the
    // gradient recomputes o's tiles, and only its scratch (per-row log-sum-exp and D, the
    // tiles) is temporary.
    let w = t(&mut rng);
    let lb = weighted_long_grad::lower(&q, &k, &v, &w).unwrap();
    let text = lb.as_text();
    let optimized = &text[text.find("---- simplified").unwrap_or(0)..];
    assert!(!optimized.contains("= attention["), "{text}");
    assert!(optimized.contains("attention_grad[causal,"), "{text}");
    let alone = lb.compile().unwrap().memory_analysis();
    println!("gradient of sum(o * w): {alone:?}");
    assert!(
        alone.temp_bytes < scores / 64 && alone.temp_bytes < o_bytes,
        "gradient temp {} bytes: {alone:?}",
        alone.temp_bytes
    );
    assert_eq!(alone.output_bytes, 3 * o_bytes, "{alone:?}");
    // And it computes the same as the definition on a slice of the rows.
    let got = causal_long(&q, &k, &v);
    let q1 = q.slice_axis(1, 1900, 1964, 1);
    // Rows 1900.. of a causal attention see keys 0..=row: the composition over keys 0..1964
    // with the causal mask shifted by 1900.
    let shifted = {
        let row = Tensor::iota(&[64, 1964], 0, DType::I32) + 1900;
        let col = Tensor::iota(&[64, 1964], 1, DType::I32);
        col.le(&row)
    };
    let want_masked = composed(
        &q1,
        &k.slice_axis(1, 0, 1964, 1),
        &v.slice_axis(1, 0, 1964, 1),
        AttnMask::Bool(&shifted),
        1.0 / (d as f64).sqrt(),
    );
    assert_close(
        &got.slice_axis(1, 1900, 1964, 1),
        &want_masked,
        tol(DType::F32),
        "rows 1900..1964",
    );
}

#[test]
fn attention_in_ir_text_round_trips() {
    let text = "%0 = param 0 : f32[2,5,4]\n%1 = param 1 : f32[2,7,4]\n%2 = param 2 : f32[2,7,3]\n%3 = attention[causal,0.125] %0, %1, %2 : f32[2,5,3]\nreturn %3\n";
    let g = jitfuse::internals::ir::parse(text).unwrap();
    jitfuse::internals::ir::verify(&g).unwrap();
    assert_eq!(g.to_text(), text);
    // A finite fill round-trips exactly (f32::MIN as f64 has 17 significant digits).
    // So does a causal mask added as a bias.
    for spec in [
        "fill=-1e30",
        "fill=-3.4028234663852886e38",
        "fill=-2.5",
        "bias",
    ] {
        let filled = text.replace("[causal,0.125]", &format!("[causal,0.125,{spec}]"));
        let g = jitfuse::internals::ir::parse(&filled).unwrap();
        jitfuse::internals::ir::verify(&g).unwrap();
        assert_eq!(g.to_text(), filled);
    }
    // A fill needs a causal or bool mask and must be finite.
    for bad in [
        "[none,0.125,fill=-1e9]",
        "[causal,0.125,fill=inf]",
        "[causal,0.125,-1e9]",
        "[bool,0.125,bias]",
        "[causal,0.125,fill=-1e9,bias]",
    ] {
        let e = jitfuse::internals::ir::parse(&text.replace("[causal,0.125]", bad)).unwrap_err();
        assert!(e.to_string().contains("fill"), "{bad}: {e}");
    }
    let bad = text.replace("f32[2,5,3]\nreturn", "f32[2,5,4]\nreturn");
    let e =
        jitfuse::internals::ir::verify(&jitfuse::internals::ir::parse(&bad).unwrap()).unwrap_err();
    assert!(e.to_string().contains("result should be f32[2,5,3]"), "{e}");
}

#[test]
fn attention_rejects_mismatched_operands_with_clear_errors() {
    let t = |s: &[usize]| Tensor::zeros(s, DType::F32);
    let err = |f: &dyn Fn() -> Tensor| {
        let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("an error");
        p.downcast_ref::<String>().cloned().unwrap_or_default()
    };
    let e = err(&|| attention(&t(&[4, 8]), &t(&[6, 5]), &t(&[6, 2]), AttnMask::None));
    assert!(
        e.contains("`attention`") && e.contains("f32[4,8]") && e.contains("f32[6,5]"),
        "{e}"
    );
    let e = err(&|| {
        attention(
            &t(&[2, 4, 8]),
            &t(&[3, 6, 8]),
            &t(&[3, 6, 2]),
            AttnMask::None,
        )
    });
    assert!(e.contains("do not broadcast"), "{e}");
    let m = Tensor::zeros(&[4, 5], DType::F32);
    let e = err(&|| attention(&t(&[4, 8]), &t(&[6, 8]), &t(&[6, 2]), AttnMask::Bool(&m)));
    assert!(e.contains("bool") && e.contains("f32[4,5]"), "{e}");
}

// ---- The pattern users write, recognised ----

/// Causal attention spelled out: `softmax(where(tril, q kᵀ / √d, -inf)) v`.
fn causal_composition(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    let s = q.matmul(&swap_last(k)) / (q.shape()[q.ndim() - 1] as f64).sqrt();
    let (sq, sk) = (q.shape()[q.ndim() - 2], k.shape()[k.ndim() - 2]);
    jitfuse::where_(&tril(sq, sk), &s, f64::NEG_INFINITY)
        .softmax(-1)
        .matmul(v)
}

#[jit]
fn spelled_causal(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    causal_composition(q, k, v)
}

#[jit]
fn spelled_bool(q: &Tensor, k: &Tensor, v: &Tensor, m: &Tensor) -> Tensor {
    // q scaled before the product.
    let s = (q * 0.3).matmul(&swap_last(k));
    jitfuse::where_(m, &s, f64::NEG_INFINITY)
        .softmax(-1)
        .matmul(v)
}

#[jit]
fn spelled_additive(q: &Tensor, kt: &Tensor, v: &Tensor, bias: &Tensor) -> Tensor {
    // kᵀ given as such (not a transpose of k); the bias added on the left.
    (bias + q.matmul(kt) * 0.3).softmax(-1).matmul(v)
}

#[jit]
fn spelled_plain_grad(q: &Tensor, k: &Tensor, v: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(
        |x: &Vec<Tensor>| {
            (x[0].matmul(&swap_last(&x[1])) * 0.3)
                .softmax(-1)
                .matmul(&x[2])
                .square()
                .sum_all()
        },
        &vec![q.clone(), k.clone(), v.clone()],
    )
}

#[jit]
fn weights_also_returned(q: &Tensor, k: &Tensor, v: &Tensor) -> (Tensor, Tensor) {
    let p = (q.matmul(&swap_last(k)) * 0.3).softmax(-1);
    let o = p.matmul(v);
    (o, p)
}

/// A finite causal bias: masked scores are `s - 1e9`, not a constant, so it stays an
/// additive operand (its square matrix kept), named as a near miss.
#[jit]
fn finite_bias(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    let s = q.matmul(&swap_last(k)) * 0.3;
    (s + jitfuse::where_(&tril(q.shape()[0], k.shape()[0]), 0.0, -1e9))
        .softmax(-1)
        .matmul(v)
}

/// A fill of +inf is no mask at all (the composition's rows are NaN).
#[jit]
fn infinite_fill(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    let s = q.matmul(&swap_last(k)) * 0.3;
    jitfuse::where_(&tril(q.shape()[0], k.shape()[0]), &s, f64::INFINITY)
        .softmax(-1)
        .matmul(v)
}

/// The simplified graph of a lowering.
fn simplified(text: String) -> String {
    text.split("// ---- simplified graph ----")
        .nth(1)
        .unwrap()
        .split("// ---- kernels")
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn the_spelled_out_pattern_compiles_to_the_fused_op() {
    let mut rng = Rng::new(8);
    let t = |rng: &mut Rng, s: &[usize]| random_tensor(rng, s, DType::F32, -1.5, 1.5, false);
    let (q, k, v) = (
        t(&mut rng, &[2, 70, 16]),
        t(&mut rng, &[2, 90, 16]),
        t(&mut rng, &[2, 90, 8]),
    );
    let m = random_tensor(&mut rng, &[2, 70, 90], DType::F32, 0.0, 1.0, false)
        .gt(0.3)
        .logical_or(&Tensor::iota(&[2, 70, 90], 2, DType::I32).eq(0));
    let bias = t(&mut rng, &[70, 90]);
    let kt = swap_last(&k);
    let tol = Tol {
        rel: 2e-4,
        abs: 2e-5,
    };
    let check = |name: &str, text: String, kind: &str| {
        let s = simplified(text);
        assert!(
            s.contains(&format!("attention[{kind},")),
            "{name}: not fused:\n{s}"
        );
        assert!(
            !s.contains("reduce_max"),
            "{name}: the softmax is still there:\n{s}"
        );
    };
    check(
        "causal",
        spelled_causal::lower(&q, &k, &v).unwrap().as_text(),
        "causal",
    );
    let want = attention(&q, &k, &v, AttnMask::Causal);
    assert_close(
        &spelled_causal(&q, &k, &v),
        &want,
        tol,
        "causal spelled out",
    );
    check(
        "bool",
        spelled_bool::lower(&q, &k, &v, &m).unwrap().as_text(),
        "bool",
    );
    let want = attention_with(
        &q,
        &k,
        &v,
        AttnMask::Bool(&m),
        AttnOptions {
            scale: Some(0.3),
            ..Default::default()
        },
    );
    assert_close(
        &spelled_bool(&q, &k, &v, &m),
        &want,
        tol,
        "bool spelled out",
    );
    check(
        "additive",
        spelled_additive::lower(&q, &kt, &v, &bias)
            .unwrap()
            .as_text(),
        "additive",
    );
    let want = attention_with(
        &q,
        &k,
        &v,
        AttnMask::Additive(&bias),
        AttnOptions {
            scale: Some(0.3),
            ..Default::default()
        },
    );
    assert_close(
        &spelled_additive(&q, &kt, &v, &bias),
        &want,
        tol,
        "additive spelled out",
    );
    // The gradient of the spelled-out pattern is the fused gradient.
    let text = spelled_plain_grad::lower(&q, &k, &v).unwrap().as_text();
    assert!(
        simplified(text.clone()).contains("attention_grad[none,"),
        "{text}"
    );
    let got = spelled_plain_grad(&q, &k, &v);
    jitfuse::internals::passes::set_pattern_fusion(false);
    let want = jitfuse::grad(
        |x: &Vec<Tensor>| {
            (x[0].matmul(&swap_last(&x[1])) * 0.3)
                .softmax(-1)
                .matmul(&x[2])
                .square()
                .sum_all()
        },
        &vec![q.clone(), k.clone(), v.clone()],
    );
    jitfuse::internals::passes::set_pattern_fusion(true);
    for (a, b) in got.iter().zip(&want) {
        let scale = crate::common::to_f64s(b)
            .iter()
            .fold(1.0f64, |m, x| m.max(x.abs()));
        assert_close(
            a,
            b,
            Tol {
                rel: 2e-4,
                abs: 2e-4 * scale,
            },
            "gradient of the spelled-out pattern",
        );
    }
}

#[test]
fn near_misses_keep_the_composition_and_say_why() {
    let mut rng = Rng::new(9);
    let t = |rng: &mut Rng, s: &[usize]| random_tensor(rng, s, DType::F32, -1.0, 1.0, false);
    let (q, k, v) = (
        t(&mut rng, &[12, 8]),
        t(&mut rng, &[12, 8]),
        t(&mut rng, &[12, 4]),
    );
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    jitfuse::jit::set_log(Some("fusion"));
    let old = jitfuse::jit::set_log_sink(Some(std::sync::Arc::new(move |l: &str| {
        sink.lock().unwrap().push(l.to_string())
    })));
    let text = weights_also_returned::lower(&q, &k, &v).unwrap().as_text();
    let bias = finite_bias::lower(&q, &k, &v).unwrap().as_text();
    let inf = infinite_fill::lower(&q, &k, &v).unwrap().as_text();
    jitfuse::jit::set_log_sink(old);
    jitfuse::jit::set_log(None);
    assert!(
        !simplified(text).contains("attention["),
        "returned weights: fused anyway"
    );
    assert!(
        simplified(bias).contains("attention[additive,"),
        "a finite bias is an additive operand"
    );
    assert!(
        !simplified(inf).contains("attention["),
        "a fill of +inf is not a mask"
    );
    let lines = lines.lock().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("left unfused") && l.contains("also read outside the pattern")),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("fused, but")
            && l.contains("bias as an operand")
            && l.contains("-1e9")),
        "a finite causal bias is named as a near miss: {lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("left unfused") && l.contains("neither -inf nor finite")),
        "an infinite fill is named as a near miss: {lines:?}"
    );
    // Both still compute the composition.
    let (o, p) = weights_also_returned(&q, &k, &v);
    let want_p = (q.matmul(&swap_last(&k)) * 0.3).softmax(-1);
    assert_close(
        &p,
        &want_p,
        Tol {
            rel: 2e-4,
            abs: 2e-6,
        },
        "weights",
    );
    assert_close(
        &o,
        &want_p.matmul(&v),
        Tol {
            rel: 2e-4,
            abs: 2e-5,
        },
        "output",
    );
}

// ---- What else a transformer needs ----

#[jit]
fn triangles(x: &Tensor, k: isize) -> (Tensor, Tensor) {
    (x.tril(k), x.triu(k))
}

#[test]
fn tril_and_triu_follow_numpy() {
    let (b, r, c) = (2, 3, 5);
    let x = Tensor::from_vec((0..b * r * c).map(|i| i as f32 + 1.0).collect(), &[b, r, c]).unwrap();
    for k in [-2isize, -1, 0, 1, 3, 7] {
        let (lo, up) = triangles(&x, k);
        let (lo, up) = (lo.to_vec::<f32>().unwrap(), up.to_vec::<f32>().unwrap());
        for i in 0..b * r * c {
            let (row, col) = ((i / c % r) as isize, (i % c) as isize);
            let v = i as f32 + 1.0;
            assert_eq!(
                lo[i],
                if col <= row + k { v } else { 0.0 },
                "tril({k}) at {i}"
            );
            assert_eq!(
                up[i],
                if col >= row + k { v } else { 0.0 },
                "triu({k}) at {i}"
            );
        }
        // Eager agrees.
        assert_eq!(x.tril(k).to_vec::<f32>().unwrap(), lo);
    }
    let p =
        std::panic::catch_unwind(|| Tensor::vector(&[1.0f32, 2.0]).tril(0)).expect_err("rank 1");
    let msg = p.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("`tril` needs rank >= 2") && msg.contains("f32[2]"),
        "{msg}"
    );
}

#[jit]
fn norm_without_shift(x: &Tensor, g: &Tensor) -> Tensor {
    x.layer_norm(g, None, 1e-5, -1)
}

#[test]
fn layer_norm_without_a_shift() {
    let mut rng = Rng::new(10);
    let x = random_tensor(&mut rng, &[6, 33], DType::F32, -2.0, 2.0, false);
    let g = random_tensor(&mut rng, &[33], DType::F32, 0.5, 1.5, false);
    let b = random_tensor(&mut rng, &[33], DType::F32, -1.0, 1.0, false);
    let got = norm_without_shift(&x, &g);
    let with_shift = x.layer_norm(&g, &b, 1e-5, -1);
    assert_close(
        &(got.clone() + &b),
        &with_shift,
        Tol {
            rel: 1e-5,
            abs: 1e-5,
        },
        "no shift + b",
    );
    // By hand in f64.
    let (xv, gv, gotv) = (
        x.to_vec::<f32>().unwrap(),
        g.to_vec::<f32>().unwrap(),
        got.to_vec::<f32>().unwrap(),
    );
    for r in 0..6 {
        let row: Vec<f64> = xv[r * 33..(r + 1) * 33].iter().map(|&v| v as f64).collect();
        let mean = row.iter().sum::<f64>() / 33.0;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 33.0;
        for c in 0..33 {
            let want = (row[c] - mean) / (var + 1e-5).sqrt() * gv[c] as f64;
            let a = gotv[r * 33 + c] as f64;
            assert!(
                (a - want).abs() <= 1e-5 * (1.0 + want.abs()),
                "[{r}, {c}]: {a} vs {want}"
            );
        }
    }
}

/// `attention_grad`'s three results in IR text (the node is dq, `get[1]` dk, `get[2]` dv),
/// checked by the verifier, and the pass that drops a saved output only gradients read.
#[test]
fn attention_grad_results_and_the_recompute_pass_as_text() {
    let text = "%0 = param 0 : f32[2,8,4]
%1 = param 1 : f32[2,6,4]
%2 = param 2 : f32[2,6,3]
%3 = param 3 : f32[2,8,3]
%4 = attention[none,0.5] %0, %1, %2 : f32[2,8,3]
%5 = attention_grad[none,0.5] %0, %1, %2, %4, %3 : f32[2,8,4]
%6 = get[1] %5 : f32[2,6,4]
%7 = get[2] %5 : f32[2,6,3]
return %5, %6, %7
";
    let g = jitfuse::internals::ir::parse(text).unwrap();
    jitfuse::internals::ir::verify(&g).unwrap();
    assert_eq!(g.to_text(), text);
    let bad = |from: &str, to: &str, want: &str| {
        let e = jitfuse::internals::ir::verify(
            &jitfuse::internals::ir::parse(&text.replace(from, to)).unwrap(),
        )
        .unwrap_err();
        assert!(e.to_string().contains(want), "{e}");
    };
    bad(
        "%6 = get[1] %5 : f32[2,6,4]",
        "%6 = get[1] %5 : f32[2,6,3]",
        "output 1 of attention_grad is f32[2,6,4], declared f32[2,6,3]",
    );
    bad("%7 = get[2]", "%7 = get[3]", "outputs 1 and 2");
    bad(
        "%5 = attention_grad[none,0.5] %0, %1, %2, %4, %3 : f32[2,8,4]",
        "%5 = attention_grad[none,0.5] %0, %1, %2, %4, %3 : f32[2,8,3]",
        "result should be f32[2,8,4]",
    );

    // Only the gradient reads %4: it is dropped, and simplify removes the forward step.
    let out = jitfuse::internals::passes::attention::recompute_outputs(&g)
        .expect("a saved output to drop");
    let out = jitfuse::internals::passes::simplify(&out);
    jitfuse::internals::ir::verify(&out).unwrap();
    let t = out.to_text();
    assert!(!t.contains("= attention["), "{t}");
    assert!(
        t.contains("attention_grad[none,0.5] %0, %1, %2, %3 : f32[2,8,4]"),
        "{t}"
    );
    // Both compute the same (the interpreter's definition needs no o).
    let mut rng = Rng::new(12);
    let args: Vec<Tensor> = [[2, 8, 4], [2, 6, 4], [2, 6, 3], [2, 8, 3]]
        .iter()
        .map(|s| random_tensor(&mut rng, s, DType::F32, -1.0, 1.0, false))
        .collect();
    let a = jitfuse::internals::interpret::eval_graph(&g, &args, &[]).unwrap();
    let b = jitfuse::internals::interpret::eval_graph(&out, &args, &[]).unwrap();
    for (x, y) in a.iter().zip(&b) {
        assert_close(
            x,
            y,
            Tol { rel: 0.0, abs: 0.0 },
            "recomputed-output gradient",
        );
    }
    // Returned (or read by anything else), the output stays saved.
    let kept = text.replace("return %5, %6, %7", "return %5, %6, %7, %4");
    assert!(jitfuse::internals::passes::attention::recompute_outputs(
        &jitfuse::internals::ir::parse(&kept).unwrap()
    )
    .is_none());
}

/// A second derivative through any of the gradient's results is a clear error (not a
/// silent zero through `dk` or `dv`, which reach the gradient node only by its `get`s).
#[test]
fn second_derivatives_of_attention_are_refused() {
    let mut rng = Rng::new(13);
    let t = |rng: &mut Rng| random_tensor(rng, &[4, 3], DType::F64, -1.0, 1.0, false);
    let (q, k, v) = (t(&mut rng), t(&mut rng), t(&mut rng));
    for part in 0..3 {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            jitfuse::grad(
                |q: &Tensor| {
                    let g = jitfuse::grad(
                        |x: &Vec<Tensor>| attention(&x[0], &x[1], &x[2], AttnMask::None).sum_all(),
                        &vec![q.clone(), k.clone(), v.clone()],
                    );
                    g[part].square().sum_all()
                },
                &q,
            )
        }));
        let e = r.expect_err("an error");
        let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("second derivatives of attention are not supported"),
            "d{part}: {msg}"
        );
    }
}

#[jit]
fn checkpointed_attention_grad(q: &Tensor, k: &Tensor, v: &Tensor) -> Vec<Tensor> {
    let (_, g) = jitfuse::value_and_grad(
        |t: &Vec<Tensor>| {
            let block =
                |t: &Vec<Tensor>| attention(&t[0].sin(), &t[1], &t[2], AttnMask::Causal).tanh();
            jitfuse::checkpoint_with(jitfuse::Policy::DotsSaveable, block, t).sum_all()
        },
        &vec![q.clone(), k.clone(), v.clone()],
    );
    g
}

/// Under `dots_saveable` an attention result is kept like a product's: the gradient runs
/// one forward attention (not a second one to recompute it) and the cheap `sin` again,
/// and matches the unfused composition's gradient.
#[test]
fn dots_saveable_keeps_the_attention_result() {
    let mut rng = Rng::new(71);
    let x = |rng: &mut Rng| random_tensor(rng, &[2, 3, 40, 16], DType::F64, -1.0, 1.0, false);
    let (q, k, v) = (x(&mut rng), x(&mut rng), x(&mut rng));
    let text = checkpointed_attention_grad::lower(&q, &k, &v)
        .unwrap()
        .as_text();
    let traced = text.split("// ---- simplified graph").next().unwrap();
    assert_eq!(traced.matches("= attention[").count(), 1, "{traced}");
    assert_eq!(traced.matches("= sin ").count(), 2, "{traced}");
    let got = checkpointed_attention_grad(&q, &k, &v);
    let (_, want) = jitfuse::value_and_grad(
        |t: &Vec<Tensor>| {
            composed(&t[0].sin(), &t[1], &t[2], AttnMask::Causal, 0.25)
                .tanh()
                .sum_all()
        },
        &vec![q.clone(), k.clone(), v.clone()],
    );
    for (g, w) in got.iter().zip(&want) {
        assert_close(g, w, tol(DType::F64), "checkpointed attention gradient");
    }
}

/// Every common spelling of a causal mask is recognised as `attention[causal]`: the `iota`
/// comparison both ways round, `tril` of bool ones (as a mask, negated, and as an additive
/// `0 / -inf` bias), the complement `col > row` selecting `-inf`; each computes what the
/// unfused composition computes.
#[test]
fn causal_masks_in_every_common_spelling_are_recognised() {
    let (sq, d) = (24usize, 8usize);
    let mut rng = Rng::new(21);
    let t = |rng: &mut Rng, s: &[usize]| random_tensor(rng, s, DType::F32, -1.0, 1.0, false);
    let (q, k, v) = (
        t(&mut rng, &[2, sq, d]),
        t(&mut rng, &[2, sq, d]),
        t(&mut rng, &[2, sq, d]),
    );
    let inf = f64::NEG_INFINITY;
    type Spell = fn(&Tensor, usize) -> Tensor;
    let spellings: [(&str, Spell); 6] = [
        ("where_(tril(ones), s, -inf)", |s, n| {
            jitfuse::where_(
                &Tensor::ones(&[n, n], DType::Bool).tril(0),
                s,
                f64::NEG_INFINITY,
            )
        }),
        ("where_(!triu(ones, 1), s, -inf)", |s, n| {
            jitfuse::where_(
                &!Tensor::ones(&[n, n], DType::Bool).triu(1),
                s,
                f64::NEG_INFINITY,
            )
        }),
        ("where_(!tril(ones), -inf, s)", |s, n| {
            jitfuse::where_(
                &!Tensor::ones(&[n, n], DType::Bool).tril(0),
                f64::NEG_INFINITY,
                s,
            )
        }),
        ("s + where_(tril(ones), 0, -inf)", |s, n| {
            s + jitfuse::where_(
                &Tensor::ones(&[n, n], DType::Bool).tril(0),
                0.0,
                f64::NEG_INFINITY,
            )
        }),
        ("where_(col > row, -inf, s)", |s, n| {
            let row = Tensor::iota(&[n, n], 0, DType::I64);
            let col = Tensor::iota(&[n, n], 1, DType::I64);
            jitfuse::where_(&col.gt(&row), f64::NEG_INFINITY, s)
        }),
        (
            "where_(row >= col, s, -inf) of broadcast vectors",
            |s, n| {
                let row = Tensor::iota(&[n, 1], 0, DType::I64);
                let col = Tensor::iota(&[1, n], 1, DType::I64);
                jitfuse::where_(&row.ge(&col), s, f64::NEG_INFINITY)
            },
        ),
    ];
    let want = attention(&q, &k, &v, AttnMask::Causal);
    for (name, spell) in spellings {
        let f = |q: &Tensor, k: &Tensor, v: &Tensor| {
            spell(
                &(q.matmul(&swap_last(k)) * (1.0 / (d as f64).sqrt())),
                q.shape()[1],
            )
            .softmax(-1)
            .matmul(v)
        };
        let spec = |t: &Tensor| jitfuse::internals::trace::ParamSpec {
            shape: t.shape().to_vec(),
            dtype: t.dtype(),
            weak: false,
        };
        let traced =
            jitfuse::internals::trace::trace(&[spec(&q), spec(&k), spec(&v)], |ts: &[Tensor]| {
                vec![f(&ts[0], &ts[1], &ts[2])]
            })
            .unwrap();
        let text = jitfuse::internals::passes::fuse_attention(&traced.graph).to_text();
        assert!(
            text.contains("attention[causal"),
            "{name}: not causal:\n{text}"
        );
        assert_close(
            &f(&q, &k, &v),
            &want,
            Tol {
                rel: 1e-4,
                abs: 1e-5,
            },
            name,
        );
    }
    let _ = inf;
}

#[jit]
fn tril_ones_attention(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    let n = q.shape()[1];
    let s = q.matmul(&swap_last(k)) * 0.125;
    jitfuse::where_(
        &Tensor::ones(&[n, n], DType::Bool).tril(0),
        &s,
        f64::NEG_INFINITY,
    )
    .softmax(-1)
    .matmul(v)
}

#[jit]
fn tril_ones_attention_grad(q: &Tensor, k: &Tensor, v: &Tensor, w: &Tensor) -> Vec<Tensor> {
    jitfuse::grad(
        |x: &Vec<Tensor>| {
            let n = x[0].shape()[1];
            let s = x[0].matmul(&swap_last(&x[1])) * 0.125;
            (jitfuse::where_(
                &Tensor::ones(&[n, n], DType::Bool).tril(0),
                &s,
                f64::NEG_INFINITY,
            )
            .softmax(-1)
            .matmul(&x[2])
                * w)
                .sum_all()
        },
        &vec![q.clone(), k.clone(), v.clone()],
    )
}

/// A mask spelled `tril(ones)` costs nothing at sequence 2048: it is fused as causal, and
/// no `[S, S]` mask, iota or score matrix is planned, forward or backward (64 MiB of i64
/// iotas and a 4 MiB mask were).
#[test]
fn a_tril_of_ones_mask_keeps_no_square_temporary() {
    let z = |s: &[usize]| Tensor::zeros(s, DType::F32);
    let (q, k, v) = (z(&[1, 2048, 64]), z(&[1, 2048, 64]), z(&[1, 2048, 64]));
    let f = tril_ones_attention::lower(&q, &k, &v).unwrap();
    assert!(
        simplified(f.as_text()).contains("attention[causal"),
        "{}",
        f.as_text()
    );
    let g = tril_ones_attention_grad::lower(&q, &k, &v, &v).unwrap();
    assert!(
        simplified(g.as_text()).contains("attention_grad[causal"),
        "{}",
        g.as_text()
    );
    for (what, l) in [("forward", f), ("gradient", g)] {
        let m = l.compile().unwrap().memory_analysis();
        assert!(m.temp_bytes < 1 << 20, "{what}: {m}");
    }
}

/// Attention and its gradient give the same bits at every level this CPU runs: its library
/// step computes `exp` with the one definition every level's kernels share, not with a
/// level-dependent fallback (a program compiled at `portable` once ran `f32::exp`).
#[test]
fn attention_and_its_gradient_are_the_same_bits_at_every_level() {
    use crate::common::{compile_at, trace_fn};
    use jitfuse::internals::codegen::{Isa, Target};
    let mut rng = Rng::new(41);
    let (q, k, v) = (
        random_tensor(&mut rng, &[2, 37, 16], DType::F32, -2.0, 2.0, false),
        random_tensor(&mut rng, &[2, 70, 16], DType::F32, -2.0, 2.0, false),
        random_tensor(&mut rng, &[2, 70, 8], DType::F32, -2.0, 2.0, false),
    );
    let g = trace_fn(&[q.clone(), k.clone(), v.clone()], |t: &[Tensor]| {
        let loss = |p: &Vec<Tensor>| {
            attention(&p[0], &p[1], &p[2], AttnMask::Causal)
                .square()
                .sum_all()
        };
        let (value, grads) = value_and_grad(loss, &t.to_vec());
        let mut out = vec![value];
        out.extend(grads);
        out
    });
    let text = jitfuse::internals::passes::fuse_attention(&g).to_text();
    assert!(
        text.contains("attention_grad"),
        "no fused gradient:\n{text}"
    );
    let mut first: Option<Vec<Vec<u32>>> = None;
    for level in [Isa::Portable, Isa::Avx2, Isa::Avx512] {
        if level > Isa::detected() {
            continue;
        }
        let exe = compile_at(g.clone(), &Target::at(level)).unwrap();
        let outs = exe.run_with(&[&q, &k, &v]).unwrap();
        let bits: Vec<Vec<u32>> = (outs.iter())
            .map(|t| {
                t.to_vec::<f32>()
                    .unwrap()
                    .iter()
                    .map(|x| x.to_bits())
                    .collect()
            })
            .collect();
        match &first {
            None => first = Some(bits),
            Some(f) => assert!(f == &bits, "{level}: other bits than the portable level"),
        }
    }
}

/// `x` as f32 where it is a 16-bit float (the mask placeholder or a bool mask stays).
fn widened(x: &[Tensor]) -> Vec<Tensor> {
    x.iter()
        .map(|t| {
            if t.dtype().is_half() {
                t.cast(DType::F32)
            } else {
                t.clone()
            }
        })
        .collect()
}

fn assert_same_bits(got: &Tensor, want: &Tensor, what: &str) {
    assert_eq!(got.dtype(), want.dtype(), "{what}");
    let (g, w) = (crate::common::bits(got), crate::common::bits(want));
    let differ = g.iter().zip(&w).filter(|(a, b)| a != b).count();
    assert_eq!(differ, 0, "{what}: {differ} of {} elements differ", w.len());
}

/// bf16 and f16 attention reads its 16-bit operands itself: it computes in f32 what the
/// f32 step computes on the operands widened, and rounds each result once, so its bits are
/// those of the f32 step's results cast to 16 bits: forward and gradient, with the output
/// saved or recomputed, every mask kind, one head with its keys split over the parts, and
/// batch elements staged in more than one group (`library/attention/staged.rs`).
#[test]
fn sixteen_bit_attention_is_the_f32_step_rounded_once() {
    let mut rng = Rng::new(16);
    let mut all = cases();
    // Three batch elements of 1.5 MiB of f32 q, k and v each: staged two, then one.
    all.push(Case {
        q: vec![3, 2000, 64],
        k: vec![3, 2000, 64],
        v: vec![3, 2000, 64],
        mask: vec![3, 2000, 2000],
    });
    for d in [DType::BF16, DType::F16] {
        for (ci, c) in all.iter().enumerate() {
            for (ki, &kind) in KINDS.iter().enumerate() {
                if ci == 4 && kind != Kind::Causal {
                    continue; // the large case once, under the mask models train with
                }
                let x = inputs(&mut rng, c, kind, d);
                let w = widened(&x);
                let what = format!("{kind:?} {d} q {:?} k {:?} v {:?}", c.q, c.k, c.v);
                let got = fused(&x[0], &x[1], &x[2], &x[3], ki);
                let want = fused(&w[0], &w[1], &w[2], &w[3], ki).cast(d);
                assert_same_bits(&got, &want, &format!("{what}: output"));
                let broadcast = c.k[..c.k.len() - 2] != c.q[..c.q.len() - 2]
                    || (matches!(kind, Kind::Bool | Kind::Additive)
                        && c.mask != {
                            let mut s = c.q[..c.q.len() - 1].to_vec();
                            s.push(c.k[c.k.len() - 2]);
                            s
                        });
                if !broadcast {
                    // (A broadcast operand's gradient is a sum over its copies' 16-bit
                    // gradients, which the f32 program sums in f32.)
                    let got = fused_grad(&x[0], &x[1], &x[2], &x[3], &x[4], ki);
                    let want = fused_grad(&w[0], &w[1], &w[2], &w[3], &w[4], ki);
                    for (i, (g, f)) in got.iter().zip(&want).enumerate() {
                        assert_same_bits(g, &f.cast(d), &format!("{what}: gradient {i}"));
                    }
                }
                // The steps themselves; the gradient with and without the saved (rounded)
                // output.
                let full = |t: &Tensor, last: [usize; 2]| {
                    let mut s = c.q[..c.q.len() - 2].to_vec();
                    s.extend(last);
                    t.broadcast_to(&s)
                };
                let (sq, sk) = (c.q[c.q.len() - 2], c.k[c.k.len() - 2]);
                let (kk, vv) = (
                    full(&x[1], [sk, c.k[c.k.len() - 1]]),
                    full(&x[2], [sk, c.v[c.v.len() - 1]]),
                );
                let (spec, mask) = match kind {
                    Kind::None => ("none", None),
                    Kind::Causal => ("causal", None),
                    Kind::Bool => ("bool", Some(full(&x[3], [sq, sk]))),
                    Kind::Additive => ("additive", Some(full(&x[3], [sq, sk]))),
                };
                // Under a finite fill too (keys masked for whole tiles added in closed form).
                let fills: &[&str] = match kind {
                    Kind::Causal | Kind::Bool => &["", ",fill=-2.5"],
                    _ => &[""],
                };
                for fill in fills {
                    let spec = format!("{spec},0.3{fill}");
                    let mut args = vec![x[0].clone(), kk.clone(), vv.clone()];
                    args.extend(mask.clone());
                    let o = step("attention", &spec, &args).remove(0);
                    let want = step("attention", &spec, &widened(&args)).remove(0);
                    assert_same_bits(&o, &want.cast(d), &format!("{what} [{spec}]: output step"));
                    for saved in [false, true] {
                        let mut args = vec![x[0].clone(), kk.clone(), vv.clone()];
                        if saved {
                            args.push(o.clone());
                        }
                        args.push(x[4].clone());
                        args.extend(mask.clone());
                        let got = step("attention_grad", &spec, &args);
                        let want = step("attention_grad", &spec, &widened(&args));
                        for (i, (g, f)) in got.iter().zip(&want).enumerate() {
                            let what = format!(
                                "{what} [{spec}]: gradient step {i}, output saved: {saved}"
                            );
                            assert_same_bits(g, &f.cast(d), &what);
                        }
                    }
                }
            }
        }
    }
}

/// `attention[spec] q, k, v (, mask)` (its output) or `attention_grad[spec] q, k, v, [o,]
/// do (, mask)` (dq, dk, dv) compiled from IR text.
fn step(op: &str, spec: &str, args: &[Tensor]) -> Vec<Tensor> {
    use crate::common::compile_at;
    use jitfuse::internals::codegen::Target;
    let ty = |t: &Tensor| format!("{}{:?}", t.dtype(), t.shape()).replace(' ', "");
    let mut text = String::new();
    for (i, a) in args.iter().enumerate() {
        text += &format!("%{i} = param {i} : {}\n", ty(a));
    }
    let operands: Vec<String> = (0..args.len()).map(|i| format!("%{i}")).collect();
    let n = args.len();
    if op == "attention" {
        let mut o = args[0].shape().to_vec();
        *o.last_mut().unwrap() = *args[2].shape().last().unwrap();
        let o = format!("{}{:?}", args[0].dtype(), o).replace(' ', "");
        text += &format!(
            "%{n} = attention[{spec}] {} : {o}\nreturn %{n}\n",
            operands.join(", ")
        );
    } else {
        text += &format!(
            "%{n} = attention_grad[{spec}] {} : {}\n%{} = get[1] %{n} : {}\n%{} = get[2] %{n} : {}\nreturn %{n}, %{}, %{}\n",
            operands.join(", "),
            ty(&args[0]),
            n + 1,
            ty(&args[1]),
            n + 2,
            ty(&args[2]),
            n + 1,
            n + 2,
        );
    }
    let g = jitfuse::internals::ir::parse(&text).unwrap();
    let exe = compile_at(g, Target::host()).unwrap();
    exe.run_with(&args.iter().collect::<Vec<_>>()).unwrap()
}

/// The compiled 16-bit attention and its gradient cast nothing to f32: their temporaries
/// (each worker's tiles, and for the gradient an f32 `dQ` sum) stay under the f32 copies of
/// their operands that a step on widened operands reads (q, k, v, and dO for the gradient).
#[test]
fn sixteen_bit_attention_needs_no_f32_copy_of_its_operands() {
    use crate::common::{compile_at, trace_fn};
    use jitfuse::internals::codegen::Target;
    let mut rng = Rng::new(17);
    let shape = [16, 256, 64];
    let t = |rng: &mut Rng| random_tensor(rng, &shape, DType::BF16, -1.5, 1.5, false);
    let (q, k, v, w) = (t(&mut rng), t(&mut rng), t(&mut rng), t(&mut rng));
    let f32_copy = 16 * 256 * 64 * 4;
    let forward = trace_fn(&[q.clone(), k.clone(), v.clone()], |x| {
        vec![attention(&x[0], &x[1], &x[2], AttnMask::Causal)]
    });
    let gradient = trace_fn(&[q, k, v, w], |x| {
        jitfuse::grad(
            |y: &Vec<Tensor>| (attention(&y[0], &y[1], &y[2], AttnMask::Causal) * &x[3]).sum_all(),
            &vec![x[0].clone(), x[1].clone(), x[2].clone()],
        )
    });
    for (what, g, copies) in [("forward", forward, 3), ("gradient", gradient, 4)] {
        let exe = compile_at(g, Target::host()).unwrap();
        let text = exe.optimized_text();
        assert!(text.contains("attention"), "{what}:\n{text}");
        assert!(!text.contains("cast"), "{what}:\n{text}");
        let temp = exe.memory_analysis().temp_bytes;
        assert!(
            temp < copies * f32_copy,
            "{what}: temp {temp} bytes:\n{text}"
        );
    }
}

/// A mask spelled around the scores as users write it: selected (`where_`) with -inf or a
/// finite fill, causal or from a bool operand; a causal `-inf` bias added; a float bias
/// added; none.
const SPELLINGS: [&str; 7] = [
    "causal select",
    "causal fill",
    "causal bias",
    "bool select",
    "bool fill",
    "additive",
    "none",
];

/// `softmax(mask(0.3 · q kᵀ)) v` spelled as `form` says (`m` a bool mask, `bias` a float
/// one).
fn spelled(form: &str, x: &[Tensor], m: &Tensor, bias: &Tensor) -> Tensor {
    let (q, k, v) = (&x[0], &x[1], &x[2]);
    let s = q.matmul(&swap_last(k)) * 0.3;
    let causal = tril(q.shape()[q.ndim() - 2], k.shape()[k.ndim() - 2]);
    let s = match form {
        "causal select" => jitfuse::where_(&causal, &s, f64::NEG_INFINITY),
        "causal fill" => jitfuse::where_(&causal, &s, -1e9),
        "causal bias" => s + jitfuse::where_(&causal, 0.0, f64::NEG_INFINITY),
        "bool select" => jitfuse::where_(m, &s, f64::NEG_INFINITY),
        "bool fill" => jitfuse::where_(m, &s, -1e9),
        "additive" => s + bias,
        _ => s,
    };
    s.softmax(-1).matmul(v)
}

/// The non-finite and overflowing operands that reach the composition through the keys a
/// mask hides: each writes into batch element 1 of `[q, k, v, w]` (`w` the cotangent's
/// weights), leaving element 0 finite.
fn poison(what: &str, args: &mut [Vec<f32>; 4], (s, d): (usize, usize)) {
    let last = args[0].len() / (s * d) - 1;
    let at = |row: usize, col: usize| (last * s + row) * d + col; // the last batch element
    match what {
        // Keys 150 (past the diagonal of queries 0..150) and 5.
        "inf v" => args[2][at(150, 3)] = f32::INFINITY,
        "nan v" => args[2][at(150, 3)] = f32::NAN,
        "-inf v early" => args[2][at(5, 1)] = f32::NEG_INFINITY,
        "inf k" => args[1][at(150, 2)] = f32::INFINITY,
        "nan q" => args[0][at(10, 0)] = f32::NAN,
        // Finite, but q · k past f32's range for query 20 and keys 180 (+inf) and 181
        // (-inf), which it does not see: column 0 is zero elsewhere, so no other score is
        // huge (a saturated softmax would make the gradients' rounding ill-conditioned).
        "huge q k" => {
            (0..s).for_each(|r| (args[0][at(r, 0)], args[1][at(r, 0)]) = (0.0, 0.0));
            args[0][at(20, 0)] = 1e20;
            args[1][at(180, 0)] = 1e20;
            args[1][at(181, 0)] = -1e20;
        }
        "inf do" => args[3][at(30, 1)] = f32::INFINITY,
        _ => {}
    }
}

/// Every mask spelling, forward and gradient, with infinite, NaN and overflowing operands
/// where a mask hides them: the fused step (which skips the keys past a causal diagonal and
/// sums the regions a finite fill masks in closed form) and the interpreter's attention
/// give what the spelled-out composition gives, NaN for NaN and infinity for infinity, and
/// the finite batch element beside the poisoned one keeps its values.
#[test]
fn masked_keys_with_non_finite_or_overflowing_operands_give_the_compositions_values() {
    // Two batch elements (a task each) and one (its keys split between two parts), in f32
    // and in bf16 (read a tile at a time).
    // And q read through a transpose (its rows strided); in bf16 with as many batch elements
    // as forward tasks, each task converts its elements' whole k and v once.
    for (batch, dtype, q_t) in [
        (2, DType::F32, false),
        (1, DType::F32, false),
        (2, DType::BF16, false),
        (8, DType::BF16, false),
        (2, DType::F32, true),
    ] {
        poisoned_masked_keys(batch, dtype, q_t);
    }
}

fn poisoned_masked_keys(batch: usize, dtype: DType, q_transposed: bool) {
    // f32: the same values; bf16 (whose composition rounds every intermediate): NaN, an
    // infinity or a finite value in the same places.
    let same_values = |got: &Tensor, want: &Tensor, what: &str| {
        if dtype == DType::F32 {
            return assert_close(got, want, tol(dtype), what);
        }
        let (g, w) = (crate::common::to_f64s(got), crate::common::to_f64s(want));
        for (e, (a, b)) in g.iter().zip(&w).enumerate() {
            let class = |x: &f64| (x.is_nan(), x.is_infinite());
            assert_eq!(
                class(a),
                class(b),
                "{what}: element {e}: {a:e} against {b:e}"
            );
        }
    };
    use crate::common::{compile_at, trace_fn};
    use jitfuse::internals::codegen::Target;
    use jitfuse::internals::interpret::eval_graph;
    let (s, d) = (200, 8);
    let shape = [batch, s, d];
    let mut rng = Rng::new(18);
    let base: Vec<Vec<f32>> = (0..4)
        .map(|_| {
            random_tensor(&mut rng, &shape, DType::F32, -1.5, 1.5, false)
                .to_vec()
                .unwrap()
        })
        .collect();
    let keep = random_tensor(&mut rng, &[batch, s, s], DType::F32, 0.0, 1.0, false);
    // Every row keeps its own key; key tiles 128.. are masked for the first query tile.
    let own = Tensor::iota(&[batch, s, s], 1, DType::I32).eq(&Tensor::iota(
        &[batch, s, s],
        2,
        DType::I32,
    ));
    let early = Tensor::iota(&[batch, s, s], 1, DType::I32).lt(64);
    let late = Tensor::iota(&[batch, s, s], 2, DType::I32).ge(128);
    let m = keep
        .gt(0.3)
        .logical_and(&early.logical_and(&late).logical_not())
        .logical_or(&own);
    let bias = jitfuse::where_(
        &m,
        &random_tensor(&mut rng, &[batch, s, s], DType::F32, -1.0, 1.0, false),
        f64::NEG_INFINITY,
    )
    .cast(dtype);
    let cases = [
        "finite",
        "inf v",
        "nan v",
        "-inf v early",
        "inf k",
        "nan q",
        "huge q k",
        "inf do",
    ];
    for form in SPELLINGS {
        if batch > 2 && !form.starts_with("causal") {
            continue; // (the whole-k-and-v path differs only in what it skips)
        }
        for what in cases {
            let mut args: [Vec<f32>; 4] = [0, 1, 2, 3].map(|i| base[i].clone());
            poison(what, &mut args, (s, d));
            let t: Vec<Tensor> = args
                .iter()
                .map(|a| Tensor::from_vec(a.clone(), &shape).unwrap().cast(dtype))
                .collect();
            // q as a parameter [batch, d, s], transposed back in the program.
            let q_param = if q_transposed {
                t[0].transpose(&[0, 2, 1])
            } else {
                t[0].clone()
            };
            let inputs = vec![
                q_param,
                t[1].clone(),
                t[2].clone(),
                t[3].clone(),
                m.clone(),
                bias.clone(),
            ];
            // The output, then dq, dk and dv of sum(output · w).
            let program = |x: &[Tensor]| {
                let (m, bias, w) = (&x[4], &x[5], &x[3]);
                let q = if q_transposed {
                    x[0].transpose(&[0, 2, 1])
                } else {
                    x[0].clone()
                };
                let x = &[q, x[1].clone(), x[2].clone()];
                let out = spelled(form, x, m, bias);
                let mut all = vec![out];
                all.extend(jitfuse::grad(
                    |y: &Vec<Tensor>| (spelled(form, y, m, bias) * w).sum_all(),
                    &vec![x[0].clone(), x[1].clone(), x[2].clone()],
                ));
                all
            };
            let refs: Vec<&Tensor> = inputs.iter().collect();
            jitfuse::internals::passes::set_pattern_fusion(false);
            let composed = trace_fn(&inputs, program);
            let want = compile_at(composed, Target::host())
                .unwrap()
                .run_with(&refs)
                .unwrap();
            jitfuse::internals::passes::set_pattern_fusion(true);
            let g = trace_fn(&inputs, program);
            let fused = jitfuse::internals::passes::fuse_attention(&g);
            let text = fused.to_string();
            assert!(text.contains("attention_grad"), "{form}: not fused\n{text}");
            assert_eq!(
                text.contains(",bias]"),
                form == "causal bias",
                "{form}\n{text}"
            );
            let got = compile_at(g, Target::host())
                .unwrap()
                .run_with(&refs)
                .unwrap();
            let defined = eval_graph(&fused, &inputs, &[]).unwrap();
            let names = ["output", "dq", "dk", "dv"];
            for (i, name) in names.iter().enumerate() {
                let how = format!("{form}, {what}, {dtype}, batch {batch}: {name}");
                same_values(&got[i], &want[i], &format!("{how}, fused step"));
                // (The interpreter computes in f64, where 1e20 · 1e20 does not overflow.)
                if what != "huge q k" {
                    same_values(&defined[i], &want[i], &format!("{how}, interpreter"));
                }
            }
        }
    }
}
