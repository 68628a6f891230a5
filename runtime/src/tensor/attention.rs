//! `attention(q, k, v, mask)`: scaled dot-product attention as one op, computed without
//! the `[.., Sq, Sk]` score matrix when compiled (`library::attention`), forward and
//! gradient.

use super::ops::apply;
use super::Tensor;
use crate::error::type_str;
use crate::ir::{AttnSpec, MaskKind, Op};
use crate::trace::fail;
use crate::{shape, DType, Error};
use std::panic::Location;

/// Which keys each query attends to.
#[derive(Clone, Copy, Debug)]
pub enum AttnMask<'a> {
    /// Every key.
    None,
    /// Key `j` for query `i` when `j <= i` (`tril` of the `[Sq, Sk]` scores).
    Causal,
    /// Where this `bool` tensor, broadcast to `[.., Sq, Sk]`, is true. A query whose keys
    /// are all masked out gives NaN, as the softmax of `-inf`s does.
    Bool(&'a Tensor),
    /// This tensor (of q's dtype, broadcast to `[.., Sq, Sk]`) added to the scores.
    Additive(&'a Tensor),
}

/// Options of [`attention_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct AttnOptions {
    /// The factor of `q kᵀ`; `1/√D` (D = q's last axis) when `None`.
    pub scale: Option<f64>,
    /// Under a `Causal` or `Bool` mask, the finite value a masked score takes instead of
    /// `-inf`: `where_(mask, s, fill)` as Hugging Face and Flax models write it
    /// (`finfo.min`, `-1e9`), with its exact meaning (a masked key keeps the weight
    /// `exp(fill - max) / sum`; a row with every key masked is uniform, not NaN). Rounded
    /// to q's dtype; ignored under `None` and `Additive` masks and when not finite.
    pub fill: Option<f64>,
}

/// `softmax(q kᵀ / √D + mask, -1) v` with `q: [.., Sq, D]`, `k: [.., Sk, D]`,
/// `v: [.., Sk, Dv]`; leading (batch, head) axes broadcast. The result is `[.., Sq, Dv]`.
#[track_caller]
pub fn attention(q: &Tensor, k: &Tensor, v: &Tensor, mask: AttnMask) -> Tensor {
    attention_at(q, k, v, mask, AttnOptions::default(), Location::caller())
}

/// [`attention`] with options (the scale).
#[track_caller]
pub fn attention_with(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: AttnMask,
    options: AttnOptions,
) -> Tensor {
    attention_at(q, k, v, mask, options, Location::caller())
}

fn attention_at(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: AttnMask,
    options: AttnOptions,
    loc: &'static Location<'static>,
) -> Tensor {
    let bad = |msg: String| -> ! { fail(Error::shape(format!("`attention`: {msg}")).at(loc)) };
    let desc = |t: &Tensor| type_str(t.dtype, &t.shape);
    if !q.dtype.is_float() || k.dtype != q.dtype || v.dtype != q.dtype {
        fail(
            Error::dtype(format!(
                "`attention`: q, k and v must share one float dtype: q {}, k {}, v {}",
                desc(q),
                desc(k),
                desc(v)
            ))
            .at(loc),
        );
    }
    if q.shape.len() < 2 || k.shape.len() < 2 || v.shape.len() < 2 {
        bad(format!(
            "q, k and v need rank >= 2 ([.., rows, features]): q {}, k {}, v {}",
            desc(q),
            desc(k),
            desc(v)
        ));
    }
    let tail = |t: &Tensor| (t.shape[t.shape.len() - 2], t.shape[t.shape.len() - 1]);
    let ((sq, d), (sk, dk), (skv, dv)) = (tail(q), tail(k), tail(v));
    if dk != d || skv != sk {
        bad(format!(
            "k needs q's feature size and v k's length: q {}, k {}, v {}",
            desc(q),
            desc(k),
            desc(v)
        ));
    }
    let lead = |t: &Tensor| t.shape[..t.shape.len() - 2].to_vec();
    let mut batch = shape::broadcast(&lead(q), &lead(k))
        .and_then(|b| shape::broadcast(&b, &lead(v)))
        .unwrap_or_else(|| {
            bad(format!(
                "the batch axes of q {}, k {} and v {} do not broadcast",
                desc(q),
                desc(k),
                desc(v)
            ))
        });
    let (kind, mask_t) = match mask {
        AttnMask::None => (MaskKind::None, None),
        AttnMask::Causal => (MaskKind::Causal, None),
        AttnMask::Bool(m) => (MaskKind::Bool, Some(m)),
        AttnMask::Additive(m) => (MaskKind::Additive, Some(m)),
    };
    if let Some(m) = mask_t {
        let want = if kind == MaskKind::Bool {
            DType::Bool
        } else {
            q.dtype
        };
        if m.dtype != want || m.shape.len() < 2 {
            fail(
                Error::dtype(format!(
                    "`attention`: a {} mask must be {want} of rank >= 2 ([.., Sq, Sk]), not {}",
                    kind.name(),
                    desc(m)
                ))
                .at(loc),
            );
        }
        let (mq, mk) = tail(m);
        let fits = |n: usize, want: usize| n == want || n == 1;
        batch = match shape::broadcast(&batch, &lead(m)) {
            Some(b) if fits(mq, sq) && fits(mk, sk) => b,
            _ => bad(format!(
                "the mask {} does not broadcast to the scores [.., {sq}, {sk}] of q {}, k {}",
                desc(m),
                desc(q),
                desc(k)
            )),
        };
    }
    let full = |t: &Tensor, rows: usize, cols: usize| {
        let mut s = batch.clone();
        s.extend([rows, cols]);
        if t.shape == s {
            t.clone()
        } else {
            t.broadcast_to(&s)
        }
    };
    let (q2, k2, v2) = (full(q, sq, d), full(k, sk, d), full(v, sk, dv));
    let scale = options.scale.unwrap_or(1.0 / (d.max(1) as f64).sqrt());
    if !scale.is_finite() {
        bad(format!("the scale {scale} is not finite"));
    }
    let fill = options.fill.map(|f| {
        if q.dtype == DType::F32 {
            f as f32 as f64
        } else {
            f
        }
    });
    let spec = AttnSpec::new(kind, scale, fill);
    let mut out = batch.clone();
    out.extend([sq, dv]);
    match mask_t {
        Some(m) => {
            let m2 = full(m, sq, sk);
            apply(
                Op::Attention(spec),
                &[&q2, &k2, &v2, &m2],
                out,
                q.dtype,
                loc,
            )
        }
        None => apply(Op::Attention(spec), &[&q2, &k2, &v2], out, q.dtype, loc),
    }
}

/// The gradient `[dq, dk, dv]` of attention for the operands of `attention_grad`
/// (`q, k, v, [o,] do (, mask)`): traced, one `attention_grad` node (`dq`) and its
/// `get[1]`, `get[2]` (`dk`, `dv`), which the compiled step writes directly; eagerly,
/// the interpreter's definition.
pub(crate) fn attention_grad_parts(
    spec: AttnSpec,
    ins: &[&Tensor],
    loc: &'static Location<'static>,
) -> [Tensor; 3] {
    let (q, k, v) = (ins[0], ins[1], ins[2]);
    if ins.iter().any(|t| t.is_traced()) {
        let dq = apply(Op::AttentionGrad(spec), ins, q.shape.clone(), q.dtype, loc);
        let dk = apply(Op::Get(1), &[&dq], k.shape.clone(), k.dtype, loc);
        let dv = apply(Op::Get(2), &[&dq], v.shape.clone(), v.dtype, loc);
        return [dq, dk, dv];
    }
    let _internal = crate::internal::Scope::enter();
    let op = Op::AttentionGrad(spec);
    let outs = [q, k, v].map(|t| (&t.shape[..], t.dtype));
    let grads = match crate::eager::run_all(&op, ins, &outs) {
        Some(r) => r.unwrap_or_else(|e| fail(e.at(loc))),
        None => {
            let arrays: Vec<crate::array::Array> = ins.iter().map(|t| t.array()).collect();
            let refs: Vec<&crate::array::Array> = arrays.iter().collect();
            let grads = crate::interp::attention_grad(&spec, &refs);
            grads.into_iter().map(Tensor::from_array).collect()
        }
    };
    let [dq, dk, dv]: [Tensor; 3] = grads
        .try_into()
        .unwrap_or_else(|_| unreachable!("three gradients"));
    [dq, dk, dv]
}
