//! Linear algebra and the composites people use (softmax, layer norm, gelu,
//! cross-entropy...), written in terms of the primitive ops so that later
//! fusion and autodiff see through them.

use super::ops::apply;
use super::Tensor;
use crate::error::type_str;
use crate::ir::Op;
use crate::trace::fail;
use crate::{shape, DType, Error, Scalar};

/// How [`Tensor::matmul_with`] sums and what it returns (JAX's `preferred_element_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatmulOptions {
    /// The type the products are summed in: f32 for f32, bf16 and f16 operands (what
    /// `matmul` does), or f64.
    pub accumulate: DType,
    /// The result's type: the sums rounded once to it.
    pub result: DType,
}
use std::panic::Location;

impl Tensor {
    /// Matrix product. 1-D operands are treated as a row (left) or column
    /// (right) vector and that axis is removed from the result; batch
    /// dimensions broadcast (NumPy's `matmul`).
    #[track_caller]
    pub fn matmul(&self, other: &Tensor) -> Tensor {
        self.product(other, None, Location::caller())
    }

    /// [`Tensor::matmul`] with the type its products are summed in and the type of its
    /// result (JAX's `preferred_element_type`): bf16 or f16 operands summed in f32 give an
    /// f32 result with `MatmulOptions { accumulate: F32, result: F32 }` (the sums not
    /// rounded to 16 bits: the logits of a bf16 model, a layer's f32 output); f32 operands
    /// summed in f64 (`accumulate: F64`) are products of their f64 values. The result type
    /// is any float type (a narrower one rounds the sums once).
    ///
    /// ```
    /// use jitfuse_runtime::{DType, MatmulOptions, Tensor};
    /// let a = Tensor::ones(&[2, 300], DType::BF16) * 1.01;
    /// let b = Tensor::ones(&[300, 3], DType::BF16);
    /// let f32_sums = a.matmul_with(&b, MatmulOptions { accumulate: DType::F32, result: DType::F32 });
    /// assert_eq!(f32_sums.dtype(), DType::F32);
    /// // 300 × bf16(1.01) = 300 × 1.0078125, exact in f32; in bf16 it rounds to 302.
    /// assert_eq!(f32_sums.to_vec::<f32>().unwrap()[0], 302.34375);
    /// assert_eq!(a.matmul(&b).to_vec::<jitfuse_runtime::bf16>().unwrap()[0].to_f32(), 302.0);
    /// ```
    #[track_caller]
    pub fn matmul_with(&self, other: &Tensor, options: MatmulOptions) -> Tensor {
        self.product(other, Some(options), Location::caller())
    }

    /// `matmul` (no options) or `matmul_with`.
    fn product(
        &self,
        other: &Tensor,
        options: Option<MatmulOptions>,
        loc: &'static Location<'static>,
    ) -> Tensor {
        let (a, b) = (self, other);
        if a.ndim() == 0 || b.ndim() == 0 {
            fail(
                Error::shape(format!(
                    "`matmul` of a scalar ({} @ {}): use `*`",
                    type_str(a.dtype, &a.shape),
                    type_str(b.dtype, &b.shape)
                ))
                .at(loc),
            );
        }
        let dtype = match crate::DType::promote(a.dtype, b.dtype) {
            Some(d) if d.is_float() => d,
            _ => fail(
                Error::dtype(format!(
                    "`matmul` takes float tensors, found {} and {}",
                    type_str(a.dtype, &a.shape),
                    type_str(b.dtype, &b.shape)
                ))
                .at(loc),
            ),
        };
        let a2 = if a.ndim() == 1 {
            a.expand_dims(0)
        } else {
            a.clone()
        };
        let b2 = if b.ndim() == 1 {
            b.expand_dims(1)
        } else {
            b.clone()
        };
        let (ra, rb) = (a2.ndim(), b2.ndim());
        let k = a2.shape[ra - 1];
        let batch = shape::broadcast(&a2.shape[..ra - 2], &b2.shape[..rb - 2]);
        if b2.shape[rb - 2] != k || batch.is_none() {
            fail(
                Error::shape(format!(
                    "`matmul`: {} @ {} — inner dimensions {} and {} {}",
                    type_str(a.dtype, &a.shape),
                    type_str(b.dtype, &b.shape),
                    k,
                    b2.shape[rb - 2],
                    if batch.is_none() {
                        "(and batch dimensions do not broadcast)"
                    } else {
                        "differ"
                    }
                ))
                .at(loc),
            );
        }
        let mut out = batch.unwrap();
        out.extend([a2.shape[ra - 2], b2.shape[rb - 1]]);
        let product = |d: DType, result: DType| {
            apply(
                Op::Matmul,
                &[&a2.cast(d), &b2.cast(d)],
                out.clone(),
                result,
                loc,
            )
        };
        let r = match options {
            None => product(dtype, dtype),
            Some(o) => {
                let what = || {
                    format!(
                        "`matmul_with` of {} @ {}",
                        type_str(a.dtype, &a.shape),
                        type_str(b.dtype, &b.shape)
                    )
                };
                if !o.result.is_float() {
                    fail(
                        Error::dtype(format!(
                            "{}: the result type {} is not a float type",
                            what(),
                            o.result
                        ))
                        .at(loc),
                    );
                }
                match (o.accumulate, dtype.compute()) {
                    // Sums in the type the operands compute in: the product itself, or for
                    // 16-bit operands the product with f32 sums.
                    (acc, own) if acc == own => {
                        if dtype.is_half() && o.result != dtype {
                            product(dtype, DType::F32).cast(o.result)
                        } else {
                            product(dtype, dtype).cast(o.result)
                        }
                    }
                    (DType::F64, _) => product(DType::F64, DType::F64).cast(o.result),
                    (acc, own) => fail(
                        Error::dtype(format!(
                            "{}: sums of {dtype} products are carried in {own} or f64, not {acc}",
                            what()
                        ))
                        .at(loc),
                    ),
                }
            }
        };
        let mut fin: Vec<isize> = out.iter().map(|&d| d as isize).collect();
        let n = fin.len();
        if b.ndim() == 1 {
            fin.remove(n - 1);
        }
        if a.ndim() == 1 {
            fin.remove(fin.len() - if b.ndim() == 1 { 1 } else { 2 });
        }
        if fin.len() != n {
            r.reshape(&fin)
        } else {
            r
        }
    }

    /// `exp(x - max) / sum(exp(x - max))` along `axis`. The shift by the max changes
    /// nothing but the rounding, so no gradient flows through it (`stop_gradient`, as
    /// JAX's `softmax`): the backward pass builds no argmax mask.
    #[track_caller]
    pub fn softmax(&self, axis: isize) -> Tensor {
        if let Some(r) = eager_composite(
            || format!("softmax[{axis}]"),
            &[self],
            Some(axis),
            |t| t[0].softmax(axis),
        ) {
            return r;
        }
        let m = super::ops::stop_gradient(&self.max_keepdims(axis));
        let e = (self - &m).exp();
        &e / e.sum_keepdims(axis)
    }

    /// `x - logsumexp(x)` along `axis` (the max shift carries no gradient, as in
    /// `softmax`).
    #[track_caller]
    pub fn log_softmax(&self, axis: isize) -> Tensor {
        let key = || format!("log_softmax[{axis}]");
        if let Some(r) = eager_composite(key, &[self], Some(axis), |t| t[0].log_softmax(axis)) {
            return r;
        }
        let m = super::ops::stop_gradient(&self.max_keepdims(axis));
        let shifted = self - &m;
        &shifted - shifted.exp().sum_keepdims(axis).ln()
    }

    /// `(x - mean) / sqrt(var + eps) * gamma + beta` over `axis`; `beta` may be `None`
    /// (no shift, as in models without biases).
    #[track_caller]
    pub fn layer_norm<'b>(
        &self,
        gamma: &Tensor,
        beta: impl Into<Option<&'b Tensor>>,
        eps: f64,
        axis: isize,
    ) -> Tensor {
        // Deviations from a first estimate of the mean, corrected by their own mean
        // (`Moments`): the two sums of the second pass share one read of the row (as one
        // sum of squares did), and a constant row gives exactly 0 (its deviations are one
        // rounding error, summed exactly), where `x - mean(x)` gave that rounding error
        // times `1/sqrt(eps)`.
        let beta = beta.into();
        let mut inputs = vec![self, gamma];
        inputs.extend(beta);
        let key = || format!("layer_norm[{axis},{eps:?},{}]", beta.is_some());
        if let Some(r) = eager_composite(key, &inputs, Some(axis), |t| {
            t[0].layer_norm(&t[1], t.get(2), eps, axis)
        }) {
            return r;
        }
        let loc = Location::caller();
        let axis = super::shape_ops::norm_axis("layer_norm", self, axis, self.ndim(), loc);
        let st = super::reduce::Moments::of(self, &[axis], loc);
        let y = (st.dev - st.shift) * (st.var + eps).rsqrt() * gamma;
        match beta {
            Some(b) => y + b,
            None => y,
        }
    }

    /// The lower triangle over the last two axes: elements with `col <= row + k` kept, the
    /// others zero (NumPy's `tril`; `k` > 0 keeps diagonals above the main one).
    #[track_caller]
    pub fn tril(&self, k: isize) -> Tensor {
        self.triangle(k, true)
    }

    /// The upper triangle over the last two axes: elements with `col >= row + k` kept, the
    /// others zero (NumPy's `triu`).
    #[track_caller]
    pub fn triu(&self, k: isize) -> Tensor {
        self.triangle(k, false)
    }

    #[track_caller]
    fn triangle(&self, k: isize, lower: bool) -> Tensor {
        let r = self.shape.len();
        if r < 2 {
            fail(
                Error::shape(format!(
                    "`{}` needs rank >= 2 (rows and columns), not {}",
                    if lower { "tril" } else { "triu" },
                    type_str(self.dtype, &self.shape)
                ))
                .at(Location::caller()),
            );
        }
        // A column of row indices and a row of column indices, compared through
        // broadcasts: the fused kernel reads two vectors, where `[rows, cols]` iotas were
        // two i64 matrices in memory (64 MiB for a 2048² mask).
        let (rows, cols) = (self.shape[r - 2], self.shape[r - 1]);
        let row = Tensor::iota(&[rows, 1], 0, crate::DType::I64) + k as i64;
        let col = Tensor::iota(&[1, cols], 1, crate::DType::I64);
        let keep = if lower { col.le(&row) } else { col.ge(&row) };
        crate::select(&keep, self, Tensor::zeros(&[], self.dtype))
    }

    /// GELU, tanh approximation.
    #[track_caller]
    pub fn gelu(&self) -> Tensor {
        if let Some(r) = eager_composite(|| "gelu".into(), &[self], None, |t| t[0].gelu()) {
            return r;
        }
        0.5 * self
            * (1.0 + (0.797_884_560_802_865_4 * (self + 0.044_715 * self * self * self)).tanh())
    }

    /// GELU, exact form with `erf`.
    #[track_caller]
    pub fn gelu_erf(&self) -> Tensor {
        if let Some(r) = eager_composite(|| "gelu_erf".into(), &[self], None, |t| t[0].gelu_erf()) {
            return r;
        }
        0.5 * self * (1.0 + (self * std::f64::consts::FRAC_1_SQRT_2).erf())
    }

    /// `x * sigmoid(x)`.
    #[track_caller]
    pub fn silu(&self) -> Tensor {
        if let Some(r) = eager_composite(|| "silu".into(), &[self], None, |t| t[0].silu()) {
            return r;
        }
        self * self.sigmoid()
    }

    /// `ln(1 + exp(x))` as `max(x, 0) + log1p(exp(-|x|))`: no overflow for large x, full
    /// relative accuracy for very negative x (`softplus(-23.06)` = 9.6e-11, where
    /// `ln(1 + e)` rounds to 0). `-|x|` is `x` at 0, so the gradient there is 1/2.
    #[track_caller]
    pub fn softplus(&self) -> Tensor {
        if let Some(r) = eager_composite(|| "softplus".into(), &[self], None, |t| t[0].softplus()) {
            return r;
        }
        let pos = self.gt(0.0);
        let neg_abs = crate::select(&pos, -self, self);
        crate::select(&pos, self, 0.0) + neg_abs.exp().log1p()
    }

    /// Clamp into `[lo, hi]`.
    #[track_caller]
    pub fn clamp<A: Scalar, B: Scalar>(&self, lo: A, hi: B) -> Tensor {
        self.maximum(lo).minimum(hi)
    }
}

/// Mean over the batch of `-sum(labels * log_softmax(logits), -1)`: a scalar.
#[track_caller]
pub fn softmax_cross_entropy(logits: &Tensor, labels_one_hot: &Tensor) -> Tensor {
    let loc = Location::caller();
    if logits.shape != labels_one_hot.shape {
        fail(
            Error::shape(format!(
                "`softmax_cross_entropy`: logits {} and labels {} must have the same shape",
                type_str(logits.dtype, &logits.shape),
                type_str(labels_one_hot.dtype, &labels_one_hot.shape)
            ))
            .at(loc),
        );
    }
    let key = || "softmax_cross_entropy".into();
    let inputs = [logits, labels_one_hot];
    if let Some(r) = eager_composite(key, &inputs, Some(-1), |t| {
        softmax_cross_entropy(&t[0], &t[1])
    }) {
        return r;
    }
    let per_row = -(labels_one_hot * logits.log_softmax(-1)).sum(-1);
    per_row.mean_all()
}

/// Mean over the rows of the cross-entropy of `logits` (`[.., C]`, float)
/// against integer class labels (`[..]`, i32 or i64, one per row):
/// `logsumexp(logits[r]) - logits[r, labels[r]]`, without building a one-hot
/// matrix (optax's `softmax_cross_entropy_with_integer_labels`, averaged).
/// Its gradient is `softmax(logits) - one_hot(labels)`, written by a compiled
/// scatter-add.
///
/// A label outside `0..C` is an error when the labels are concrete; inside
/// `#[jit]`, where their values are not known while tracing, its row's loss
/// (and so the mean) is NaN rather than a silently wrong number, and so is
/// the gradient of its row's logits (the other rows' are unaffected).
#[track_caller]
pub fn softmax_cross_entropy_with_labels(logits: &Tensor, labels: &Tensor) -> Tensor {
    let loc = Location::caller();
    let what = || {
        format!(
            "`softmax_cross_entropy_with_labels`: logits {}, labels {}",
            type_str(logits.dtype, &logits.shape),
            type_str(labels.dtype, &labels.shape)
        )
    };
    if !logits.dtype.is_float() || !labels.dtype.is_int() {
        fail(
            Error::dtype(format!(
                "{}: logits must be float and labels i32 or i64",
                what()
            ))
            .at(loc),
        );
    }
    if logits.ndim() == 0 || labels.shape[..] != logits.shape[..logits.ndim() - 1] {
        fail(
            Error::shape(format!(
                "{}: labels must have the logits' shape without its last (class) axis",
                what()
            ))
            .at(loc),
        );
    }
    let classes = logits.shape[logits.ndim() - 1];
    let rows = labels.len();
    if classes == 0 || rows == 0 {
        fail(Error::shape(format!("{}: no classes or no rows to average over", what())).at(loc));
    }
    if !labels.is_traced() {
        let values: Vec<i64> = labels
            .cast(crate::DType::I64)
            .to_vec()
            .unwrap_or_else(|e| fail(e.at(loc)));
        if let Some((r, l)) = values
            .iter()
            .enumerate()
            .find(|(_, &l)| l < 0 || l >= classes as i64)
        {
            fail(
                Error::argument(format!(
                    "{}: label {l} of row {r} is not a class in 0..{classes}",
                    what()
                ))
                .at(loc),
            );
        }
    }
    let key = || "softmax_cross_entropy_with_labels".into();
    if let Some(r) = eager_composite(key, &[logits, labels], None, |t| {
        softmax_cross_entropy_with_labels(&t[0], &t[1])
    }) {
        return r;
    }
    // Flat positions `r * C + label`, in i64 once they pass i32's range.
    let index_dtype = if rows.saturating_mul(classes) > i32::MAX as usize {
        crate::DType::I64
    } else {
        crate::DType::I32
    };
    let label = labels.reshape(&[rows as isize]).cast(index_dtype);
    let valid = label.ge(0).logical_and(&label.lt(classes as i64));
    // An out-of-range label picks its own row's first logit, never a
    // neighbouring row's (`r * C + C` is the next row's first): the NaN
    // cotangent of its row must reach that row only.
    let label = crate::select(&valid, &label, 0);
    let start = Tensor::iota(&[rows], 0, index_dtype) * classes as i64;
    let flat = logits.reshape(&[(rows * classes) as isize]);
    let picked = flat.take(&(start + &label), 0);
    let lse = logits
        .reshape(&[rows as isize, classes as isize])
        .logsumexp(-1);
    let per_row = lse - picked;
    // NaN on a row with an out-of-range label, multiplied in rather than
    // selected: a select would send the row's cotangent to the NaN constant
    // and leave its logits a gradient of 0 ("nothing to learn here"), where
    // the product makes the row's gradient NaN like its loss.
    let poison = crate::select(&valid, per_row.full_like(1.0), f64::NAN);
    (per_row * poison).mean_all()
}

/// `body` of `inputs`, run eagerly as one cached compiled program (`eager::fused`, keyed by
/// `key` (the composite and its other arguments) and the inputs' types), where PyTorch's
/// eager mode runs one kernel per op: `softmax` is one row kernel rather than five programs
/// and four temporaries. `None` where this does not apply, and the composite then runs op by
/// op: inside a trace (its ops join the traced program), under the interpreter, with a
/// first input that is not float or an `axis` out of its range (the ops report the error at
/// the caller's line), or a body that does not trace.
fn eager_composite(
    key: impl FnOnce() -> String,
    inputs: &[&Tensor],
    axis: Option<isize>,
    body: impl FnOnce(&[Tensor]) -> Tensor,
) -> Option<Tensor> {
    let x = inputs[0];
    let rank = x.ndim() as isize;
    let axis_ok = axis.is_none_or(|a| (-rank..rank).contains(&a));
    if crate::trace::current_trace().is_some()
        || inputs.iter().any(|t| t.is_traced())
        || !x.dtype.is_float()
        || !axis_ok
    {
        return None;
    }
    crate::eager::fused(&key(), inputs, |t| vec![body(t)]).map(|mut r| r.remove(0))
}
