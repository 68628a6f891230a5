//! The interpreter's attention: the definition, in f64, score matrix and all.
//!
//! For each batch element and query row `i`: `s_j = scale · q_i · k_j`, plus the additive
//! mask, or -inf where the key is masked (`j > i` under `Causal`, false under `Bool`), or
//! the spec's finite fill when it has one; `p = exp(s - max s) / Σ exp(s - max s)`;
//! `o_i = Σ_j p_j v_j`. A row whose keys are all masked is NaN (as the composition's
//! softmax of -infs), uniform with a finite fill; no keys at all give 0. A masked score is
//! a constant (the fill, or -inf), so its gradient is zero whatever its weight, except
//! under a causal mask added as a bias (`AttnSpec::bias`): its masked score is `s - inf`
//! (NaN for a NaN or +inf `s`) and its gradient flows as an unmasked one's.

use crate::array::Array;
use crate::interp::{as_f64s, from_f64s};
use crate::ir::{AttnSpec, MaskKind};
use crate::shape;

struct Dims {
    batch: usize,
    sq: usize,
    sk: usize,
    d: usize,
    dv: usize,
}

fn dims(q: &Array, v: &Array) -> Dims {
    let r = q.shape.len();
    Dims {
        batch: shape::numel(&q.shape[..r - 2]),
        sq: q.shape[r - 2],
        sk: v.shape[r - 2],
        d: q.shape[r - 1],
        dv: v.shape[r - 1],
    }
}

/// Whether key `j` is masked for query `i` of batch element `b`.
fn masked(
    spec: &AttnSpec,
    mask: Option<&[f64]>,
    n: &Dims,
    (b, i, j): (usize, usize, usize),
) -> bool {
    match spec.mask {
        MaskKind::Causal => j > i,
        MaskKind::Bool => mask.unwrap()[(b * n.sq + i) * n.sk + j] == 0.0,
        _ => false,
    }
}

/// The softmax weights `p[b][i][j]` (f64, flattened).
fn weights(spec: &AttnSpec, q: &[f64], k: &[f64], mask: Option<&[f64]>, n: &Dims) -> Vec<f64> {
    let mut p = vec![0.0; n.batch * n.sq * n.sk];
    for b in 0..n.batch {
        for i in 0..n.sq {
            let row = &mut p[(b * n.sq + i) * n.sk..(b * n.sq + i + 1) * n.sk];
            for (j, s) in row.iter_mut().enumerate() {
                let qi = &q[(b * n.sq + i) * n.d..(b * n.sq + i + 1) * n.d];
                let kj = &k[(b * n.sk + j) * n.d..(b * n.sk + j + 1) * n.d];
                let dot: f64 = qi.iter().zip(kj).map(|(a, b)| a * b).sum();
                let m = mask.map(|m| m[(b * n.sq + i) * n.sk + j]);
                *s = if masked(spec, mask, n, (b, i, j)) && spec.bias {
                    spec.scale * dot + f64::NEG_INFINITY
                } else if masked(spec, mask, n, (b, i, j)) {
                    spec.fill.unwrap_or(f64::NEG_INFINITY)
                } else if spec.mask == MaskKind::Additive {
                    spec.scale * dot + m.unwrap()
                } else {
                    spec.scale * dot
                };
            }
            // NaN propagates through the maximum, as the reduction's does.
            let mx = row.iter().fold(f64::NEG_INFINITY, |a, &x| {
                if a.is_nan() || x.is_nan() {
                    f64::NAN
                } else {
                    a.max(x)
                }
            });
            row.iter_mut().for_each(|s| *s = (*s - mx).exp());
            let sum: f64 = row.iter().sum();
            row.iter_mut().for_each(|s| *s /= sum);
        }
    }
    p
}

/// `attention(q, k, v (, mask))`.
pub fn attention(spec: &AttnSpec, ins: &[&Array], out_shape: &[usize]) -> Array {
    let n = dims(ins[0], ins[2]);
    let (q, k, v) = (as_f64s(ins[0]), as_f64s(ins[1]), as_f64s(ins[2]));
    let mask = ins.get(3).map(|m| as_f64s(m));
    let p = weights(spec, &q, &k, mask.as_deref(), &n);
    let mut o = vec![0.0; n.batch * n.sq * n.dv];
    for b in 0..n.batch {
        for i in 0..n.sq {
            for j in 0..n.sk {
                let w = p[(b * n.sq + i) * n.sk + j];
                for c in 0..n.dv {
                    o[(b * n.sq + i) * n.dv + c] += w * v[(b * n.sk + j) * n.dv + c];
                }
            }
        }
    }
    from_f64s(o, out_shape, ins[0].dtype)
}

/// `attention_grad(q, k, v, [o,] do (, mask))`: `[dq, dk, dv]` (the output `o` is not
/// needed: the weights are recomputed here).
pub fn attention_grad(spec: &AttnSpec, ins: &[&Array]) -> Vec<Array> {
    let n = dims(ins[0], ins[2]);
    let (q, k, v) = (as_f64s(ins[0]), as_f64s(ins[1]), as_f64s(ins[2]));
    let layout = spec
        .grad_operands(ins.len())
        .expect("attention_grad operands checked by the verifier");
    let dout = as_f64s(ins[layout.dout]);
    let mask = layout.mask.map(|at| as_f64s(ins[at]));
    let p = weights(spec, &q, &k, mask.as_deref(), &n);
    let (nq, nk, nv) = (
        n.batch * n.sq * n.d,
        n.batch * n.sk * n.d,
        n.batch * n.sk * n.dv,
    );
    let mut g = vec![0.0; nq + nk + nv];
    let (dq, rest) = g.split_at_mut(nq);
    let (dk, dv) = rest.split_at_mut(nk);
    for b in 0..n.batch {
        for i in 0..n.sq {
            let row = (b * n.sq + i) * n.sk;
            let doi = &dout[(b * n.sq + i) * n.dv..(b * n.sq + i + 1) * n.dv];
            // dp_j = do_i · v_j; ds_j = p_j (dp_j - Σ_l p_l dp_l).
            let dp: Vec<f64> = (0..n.sk)
                .map(|j| {
                    let vj = &v[(b * n.sk + j) * n.dv..(b * n.sk + j + 1) * n.dv];
                    doi.iter().zip(vj).map(|(a, b)| a * b).sum()
                })
                .collect();
            let dot: f64 = (0..n.sk).map(|j| p[row + j] * dp[j]).sum();
            for j in 0..n.sk {
                let pj = p[row + j];
                // A selected score is a constant: no gradient flows to q or k through it
                // (not even the NaN of a weight 0 times an infinite dp).
                let selected = spec.selects() && masked(spec, mask.as_deref(), &n, (b, i, j));
                let ds = if selected {
                    0.0
                } else {
                    pj * (dp[j] - dot) * spec.scale
                };
                for c in 0..n.dv {
                    dv[(b * n.sk + j) * n.dv + c] += pj * doi[c];
                }
                for c in 0..n.d {
                    dq[(b * n.sq + i) * n.d + c] += ds * k[(b * n.sk + j) * n.d + c];
                    dk[(b * n.sk + j) * n.d + c] += ds * q[(b * n.sq + i) * n.d + c];
                }
            }
        }
    }
    let d = ins[0].dtype;
    vec![
        from_f64s(dq.to_vec(), &ins[0].shape, d),
        from_f64s(dk.to_vec(), &ins[1].shape, d),
        from_f64s(dv.to_vec(), &ins[2].shape, d),
    ]
}
