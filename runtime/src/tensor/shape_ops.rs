//! Shape and layout ops, indexing and creation: reshape, transpose, slice,
//! concat, pad, take, one_hot, iota. Each checks its arguments (errors name
//! the op, the operand and the axis) and records or evaluates one IR node.

use super::ops::apply;
use super::Tensor;
use crate::error::type_str;
use crate::ir::Op;
use crate::trace::fail;
use crate::{shape, DType, Error, Literal, Scalar, SourceLoc};
use std::panic::Location;

/// Normalise a possibly negative axis among `rank` axes (the operand's
/// rank, or one more for ops that insert an axis).
pub(crate) fn norm_axis(op: &str, t: &Tensor, axis: isize, rank: usize, loc: SourceLoc) -> usize {
    let a = if axis < 0 { axis + rank as isize } else { axis };
    if a < 0 || a >= rank as isize {
        let valid = if rank == 0 {
            "it has no axes".to_string()
        } else {
            format!("valid axes: {}..={}", -(rank as isize), rank - 1)
        };
        fail(
            Error::shape(format!(
                "`{op}`: axis {axis} is out of range for {} ({valid})",
                type_str(t.dtype, &t.shape)
            ))
            .at(loc),
        );
    }
    a as usize
}

/// Normalised axes of `t`, each listed at most once (as NumPy, an axis
/// named twice, e.g. `[0, -2]` of a matrix, is an error, not a no-op).
pub(crate) fn distinct_axes(op: &str, t: &Tensor, axes: &[isize], loc: SourceLoc) -> Vec<usize> {
    let v: Vec<usize> = axes
        .iter()
        .map(|&a| norm_axis(op, t, a, t.ndim(), loc))
        .collect();
    for (i, a) in v.iter().enumerate() {
        if v[..i].contains(a) {
            fail(
                Error::shape(format!(
                    "`{op}`: axis {a} is listed twice in {axes:?} for {}",
                    type_str(t.dtype, &t.shape)
                ))
                .at(loc),
            );
        }
    }
    v
}

/// One axis of a `slice`: Python's `start:end:step` (open ends are `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// First index (negative: from the end; `None`: the start in the step's direction).
    pub start: Option<isize>,
    /// One past the last index (negative: from the end; `None`: the end in the step's direction).
    pub end: Option<isize>,
    /// Step between indices (not 0; negative walks backwards).
    pub step: isize,
}

impl Slice {
    /// `start:end:step`.
    pub fn new(
        start: impl Into<Option<isize>>,
        end: impl Into<Option<isize>>,
        step: isize,
    ) -> Slice {
        Slice {
            start: start.into(),
            end: end.into(),
            step,
        }
    }
    /// The whole axis.
    pub fn full() -> Slice {
        Slice {
            start: None,
            end: None,
            step: 1,
        }
    }
    /// The whole axis, backwards.
    pub fn rev() -> Slice {
        Slice {
            start: None,
            end: None,
            step: -1,
        }
    }
    /// `(first index, length)` on an axis of `n`, by Python's rules
    /// (`slice.indices`). In `i128`: steps and bounds are any `isize`
    /// (`isize::MIN` included), and no sum or difference of two of them
    /// overflows there.
    fn resolve(self, n: usize) -> (i64, usize) {
        let n = n as i128;
        let step = self.step as i128;
        let norm = |v: isize, lo: i128, hi: i128| {
            let v = v as i128;
            let v = if v < 0 { v + n } else { v };
            v.clamp(lo, hi)
        };
        let (start, end) = if step > 0 {
            (
                self.start.map_or(0, |s| norm(s, 0, n)),
                self.end.map_or(n, |e| norm(e, 0, n)),
            )
        } else {
            (
                self.start.map_or(n - 1, |s| norm(s, -1, n - 1)),
                self.end.map_or(-1, |e| norm(e, -1, n - 1)),
            )
        };
        // ceil(distance / |step|) elements when the range is not empty.
        let (distance, stride) = if step > 0 {
            (end - start, step)
        } else {
            (start - end, -step)
        };
        let len = if distance > 0 {
            (distance - 1) / stride + 1
        } else {
            0
        };
        // 0 <= len <= n and, when len > 0, 0 <= start < n: both fit.
        (start as i64, len as usize)
    }
}

impl From<std::ops::Range<isize>> for Slice {
    fn from(r: std::ops::Range<isize>) -> Slice {
        Slice::new(r.start, r.end, 1)
    }
}
impl From<std::ops::RangeFrom<isize>> for Slice {
    fn from(r: std::ops::RangeFrom<isize>) -> Slice {
        Slice::new(r.start, None, 1)
    }
}
impl From<std::ops::RangeTo<isize>> for Slice {
    fn from(r: std::ops::RangeTo<isize>) -> Slice {
        Slice::new(None, r.end, 1)
    }
}
impl From<std::ops::RangeFull> for Slice {
    fn from(_: std::ops::RangeFull) -> Slice {
        Slice::full()
    }
}

impl Tensor {
    /// Same elements, new shape; one dimension may be `-1` (inferred).
    #[track_caller]
    pub fn reshape(&self, shape: &[isize]) -> Tensor {
        let loc = Location::caller();
        let n = self.len();
        let bad = |why: String| -> ! {
            fail(
                Error::shape(format!(
                    "`reshape` of {} to {shape:?}: {why}",
                    type_str(self.dtype, &self.shape)
                ))
                .at(loc),
            )
        };
        let unknown: Vec<usize> = (0..shape.len()).filter(|&i| shape[i] == -1).collect();
        if unknown.len() > 1 || shape.iter().any(|&d| d < -1) {
            bad("at most one dimension may be -1, the others must be >= 0".into());
        }
        let known: Vec<usize> = shape
            .iter()
            .filter(|&&d| d >= 0)
            .map(|&d| d as usize)
            .collect();
        // Checked: dimensions whose product wraps could otherwise "fill"
        // any element count.
        let Some(known) = shape::checked_numel(&known) else {
            bad(format!(
                "the dimensions have more than 2^64 elements, {n} elements cannot fill them"
            ))
        };
        let mut out: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
        if let Some(&u) = unknown.first() {
            if known == 0 || n % known != 0 {
                bad(format!(
                    "{n} elements cannot fill the other dimensions ({known})"
                ));
            }
            out[u] = n / known;
        } else if known != n {
            bad(format!("{n} elements do not fill {known}"));
        }
        if out == self.shape {
            return self.clone();
        }
        apply(Op::Reshape, &[self], out, self.dtype, loc)
    }

    /// Permute the axes: `out.shape[d] = self.shape[perm[d]]`.
    #[track_caller]
    pub fn transpose(&self, perm: &[usize]) -> Tensor {
        let loc = Location::caller();
        let r = self.ndim();
        let mut seen = vec![false; r];
        if perm.len() != r
            || perm
                .iter()
                .any(|&p| p >= r || std::mem::replace(&mut seen[p], true))
        {
            fail(
                Error::shape(format!(
                    "`transpose`: {perm:?} is not a permutation of the {r} axes of {}",
                    type_str(self.dtype, &self.shape)
                ))
                .at(loc),
            );
        }
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return self.clone();
        }
        let out = perm.iter().map(|&p| self.shape[p]).collect();
        apply(Op::Transpose(perm.to_vec()), &[self], out, self.dtype, loc)
    }

    /// Swap the last two axes (identity for rank < 2).
    #[track_caller]
    pub fn t(&self) -> Tensor {
        let r = self.ndim();
        if r < 2 {
            return self.clone();
        }
        let mut perm: Vec<usize> = (0..r).collect();
        perm.swap(r - 2, r - 1);
        self.transpose(&perm)
    }

    /// Insert an axis of size 1 at `axis` (negative counts from the end of
    /// the result).
    #[track_caller]
    pub fn expand_dims(&self, axis: isize) -> Tensor {
        let loc = Location::caller();
        let a = norm_axis("expand_dims", self, axis, self.ndim() + 1, loc);
        let mut s: Vec<isize> = self.shape.iter().map(|&d| d as isize).collect();
        s.insert(a, 1);
        self.reshape(&s)
    }

    /// Alias of `expand_dims`.
    #[track_caller]
    pub fn unsqueeze(&self, axis: isize) -> Tensor {
        self.expand_dims(axis)
    }

    /// Remove the listed axes, which must have size 1 (`&[]`: every size-1 axis).
    #[track_caller]
    pub fn squeeze(&self, axes: &[isize]) -> Tensor {
        let loc = Location::caller();
        let r = self.ndim();
        let drop: Vec<usize> = if axes.is_empty() {
            (0..r).filter(|&a| self.shape[a] == 1).collect()
        } else {
            distinct_axes("squeeze", self, axes, loc)
        };
        for &a in &drop {
            if self.shape[a] != 1 {
                fail(
                    Error::shape(format!(
                        "`squeeze`: axis {a} of {} has size {}, not 1",
                        type_str(self.dtype, &self.shape),
                        self.shape[a]
                    ))
                    .at(loc),
                );
            }
        }
        let s: Vec<isize> = (0..r)
            .filter(|a| !drop.contains(a))
            .map(|a| self.shape[a] as isize)
            .collect();
        self.reshape(&s)
    }

    /// Python-style slicing, one `Slice` per leading axis (the rest are
    /// whole): negative indices count from the end, out-of-range bounds clamp,
    /// a negative step walks backwards.
    #[track_caller]
    pub fn slice(&self, axes: &[Slice]) -> Tensor {
        let loc = Location::caller();
        if axes.len() > self.ndim() {
            fail(
                Error::shape(format!(
                    "`slice`: {} slices for {} (rank {})",
                    axes.len(),
                    type_str(self.dtype, &self.shape),
                    self.ndim()
                ))
                .at(loc),
            );
        }
        let mut starts = Vec::new();
        let mut out = Vec::new();
        for d in 0..self.ndim() {
            let s = axes.get(d).copied().unwrap_or_else(Slice::full);
            if s.step == 0 {
                fail(
                    Error::shape(format!(
                        "`slice`: step 0 on axis {d} of {}",
                        type_str(self.dtype, &self.shape)
                    ))
                    .at(loc),
                );
            }
            let (start, len) = s.resolve(self.shape[d]);
            // With at most one element the step selects nothing more: it is
            // stored as 1, so no stride times step (`isize::MAX` times the
            // axis' stride) is ever computed. With two or more elements the
            // step is below the axis' size.
            let step = if len <= 1 { 1 } else { s.step as i64 };
            starts.push((if len == 0 { 0 } else { start }, step));
            out.push(len);
        }
        if starts
            .iter()
            .zip(&self.shape)
            .all(|(&(st, step), _)| st == 0 && step == 1)
            && out == self.shape
        {
            return self.clone();
        }
        apply(Op::Slice(starts), &[self], out, self.dtype, loc)
    }

    /// `start..end` by `step` on one axis.
    #[track_caller]
    pub fn slice_axis(
        &self,
        axis: isize,
        start: impl Into<Option<isize>>,
        end: impl Into<Option<isize>>,
        step: isize,
    ) -> Tensor {
        let loc = Location::caller();
        let a = norm_axis("slice_axis", self, axis, self.ndim(), loc);
        let mut v = vec![Slice::full(); a + 1];
        v[a] = Slice::new(start, end, step);
        self.slice(&v)
    }

    /// Reverse the listed axes.
    #[track_caller]
    pub fn flip(&self, axes: &[isize]) -> Tensor {
        let loc = Location::caller();
        let mut v = vec![Slice::full(); self.ndim()];
        for a in distinct_axes("flip", self, axes, loc) {
            v[a] = Slice::rev();
        }
        self.slice(&v)
    }

    /// Constant padding: `(before, after)` for each axis.
    #[track_caller]
    pub fn pad<S: Scalar>(&self, pads: &[(usize, usize)], value: S) -> Tensor {
        let loc = Location::caller();
        if pads.len() != self.ndim() {
            fail(
                Error::shape(format!(
                    "`pad`: {} (before, after) pairs for {} (rank {})",
                    pads.len(),
                    type_str(self.dtype, &self.shape),
                    self.ndim()
                ))
                .at(loc),
            );
        }
        let l = value.literal();
        let bool_ok = self.dtype == DType::Bool && matches!(l, Literal::Int(0 | 1));
        if !bool_ok
            && (l.weak_dtype(self.dtype).is_none()
                || (self.dtype.is_int() && matches!(l, Literal::Float(_))))
        {
            fail(
                Error::dtype(format!(
                    "`pad`: the value {} cannot fill {}",
                    crate::ir::literal_text(l),
                    type_str(self.dtype, &self.shape)
                ))
                .at(loc),
            );
        }
        let mut out = Vec::with_capacity(pads.len());
        for (axis, (&d, &(a, b))) in self.shape.iter().zip(pads).enumerate() {
            let padded = d
                .checked_add(a)
                .and_then(|x| x.checked_add(b))
                .unwrap_or_else(|| {
                    fail(
                        Error::shape(format!(
                            "`pad`: axis {axis} of {} padded by ({a}, {b}) has more than \
                             usize::MAX elements",
                            type_str(self.dtype, &self.shape)
                        ))
                        .at(loc),
                    )
                });
            out.push(padded);
        }
        apply(
            Op::Pad(pads.to_vec(), l.cast(self.dtype)),
            &[self],
            out,
            self.dtype,
            loc,
        )
    }

    /// Elements at integer indices along `axis`:
    /// `out.shape = self.shape[..axis] + idx.shape + self.shape[axis+1..]`.
    /// Negative indices count from the end; indices still out of range are
    /// clamped to the axis (XLA's rule), never read out of bounds.
    #[track_caller]
    pub fn take(&self, idx: &Tensor, axis: isize) -> Tensor {
        let loc = Location::caller();
        let a = norm_axis("take", self, axis, self.ndim(), loc);
        if !idx.dtype.is_int() {
            fail(
                Error::dtype(format!(
                    "`take` from {}: indices must be i32 or i64, found {}",
                    type_str(self.dtype, &self.shape),
                    type_str(idx.dtype, &idx.shape)
                ))
                .at(loc),
            );
        }
        if self.shape[a] == 0 && !idx.is_empty() {
            fail(
                Error::shape(format!(
                    "`take`: axis {a} of {} is empty",
                    type_str(self.dtype, &self.shape)
                ))
                .at(loc),
            );
        }
        let mut out = self.shape[..a].to_vec();
        out.extend_from_slice(&idx.shape);
        out.extend_from_slice(&self.shape[a + 1..]);
        apply(Op::Take(a), &[self, idx], out, self.dtype, loc)
    }

    /// Alias of `take`.
    #[track_caller]
    pub fn gather(&self, idx: &Tensor, axis: isize) -> Tensor {
        self.take(idx, axis)
    }

    /// One-hot encoding of integer indices as `f32`: a new last axis of `n`;
    /// out-of-range indices give all-zero rows (as in JAX).
    #[track_caller]
    pub fn one_hot(&self, n: usize) -> Tensor {
        self.one_hot_as(n, DType::F32)
    }

    /// `one_hot` with outputs of `dtype`.
    #[track_caller]
    pub fn one_hot_as(&self, n: usize, dtype: DType) -> Tensor {
        let loc = Location::caller();
        if !self.dtype.is_int() {
            fail(
                Error::dtype(format!(
                    "`one_hot`: indices must be i32 or i64, found {}",
                    type_str(self.dtype, &self.shape)
                ))
                .at(loc),
            );
        }
        let mut shape = self.shape.clone();
        shape.push(n);
        // Checked here, so that the error names `one_hot` (not its `iota`).
        for d in [dtype, self.dtype] {
            if let Err(e) = shape::checked_bytes("one_hot", &shape, d) {
                fail(e.at(loc));
            }
        }
        let classes = iota_at(&shape, shape.len() - 1, self.dtype, loc);
        let idx = self.expand_dims(-1);
        classes.eq(&idx).cast(dtype)
    }

    /// A tensor of zeros (ones, `value`) with this tensor's shape and dtype.
    #[track_caller]
    pub fn zeros_like(&self) -> Tensor {
        self.full_like(0)
    }
    /// Ones with this tensor's shape and dtype.
    #[track_caller]
    pub fn ones_like(&self) -> Tensor {
        self.full_like(1)
    }
    /// `value` (rounded to this dtype) with this tensor's shape and dtype.
    #[track_caller]
    pub fn full_like<S: Scalar>(&self, value: S) -> Tensor {
        super::ops::constant(value.literal(), &self.shape, self.dtype, Location::caller())
    }

    /// `iota(shape, axis, dtype)`: each element is its index along `axis`.
    #[track_caller]
    pub fn iota(shape: &[usize], axis: usize, dtype: DType) -> Tensor {
        let loc = Location::caller();
        if axis >= shape.len() || dtype == DType::Bool {
            fail(
                Error::shape(format!("`iota`: axis {axis} of shape {shape:?} as {dtype}")).at(loc),
            );
        }
        iota_at(shape, axis, dtype, loc)
    }

    /// Concatenate along `axis` (all other dimensions equal).
    #[track_caller]
    pub fn concat(ts: &[&Tensor], axis: isize) -> Tensor {
        concat_at(ts, axis, Location::caller())
    }

    /// Stack along a new `axis`.
    #[track_caller]
    pub fn stack(ts: &[&Tensor], axis: isize) -> Tensor {
        let loc = Location::caller();
        if ts.is_empty() {
            fail(Error::shape("`stack` of no tensors").at(loc));
        }
        // Checked here, so that errors name `stack` and the user's line
        // (not the `expand_dims`/`concat` it is made of).
        let first = ts[0];
        for (i, t) in ts.iter().enumerate() {
            if t.shape != first.shape {
                fail(
                    Error::shape(format!(
                        "`stack`: operand {i} is {}, operand 0 is {} (all shapes must be equal)",
                        type_str(t.dtype, &t.shape),
                        type_str(first.dtype, &first.shape)
                    ))
                    .at(loc),
                );
            }
            if DType::promote(first.dtype, t.dtype).is_none() {
                fail(
                    Error::dtype(format!(
                        "`stack`: cannot combine {} with {}",
                        type_str(first.dtype, &first.shape),
                        type_str(t.dtype, &t.shape)
                    ))
                    .at(loc),
                );
            }
        }
        let a = norm_axis("stack", first, axis, first.ndim() + 1, loc);
        let mut s = first.shape.clone();
        s.insert(a, 1);
        let expanded: Vec<Tensor> = ts
            .iter()
            .map(|t| apply(Op::Reshape, &[t], s.clone(), t.dtype, loc))
            .collect();
        let refs: Vec<&Tensor> = expanded.iter().collect();
        concat_at(&refs, a as isize, loc)
    }
}

pub(crate) fn iota_at(shape: &[usize], axis: usize, dtype: DType, loc: SourceLoc) -> Tensor {
    if crate::trace::current_trace().is_some() {
        crate::trace::push_node(Op::Iota(axis), &[], shape.to_vec(), dtype, loc)
    } else {
        apply(Op::Iota(axis), &[], shape.to_vec(), dtype, loc)
    }
}

fn concat_at(ts: &[&Tensor], axis: isize, loc: SourceLoc) -> Tensor {
    if ts.is_empty() {
        fail(Error::shape("`concat` of no tensors").at(loc));
    }
    let first = ts[0];
    let a = norm_axis("concat", first, axis, first.ndim(), loc);
    // Any two types combine (nothing is computed, unlike arithmetic's bools)...
    ts.iter()
        .enumerate()
        .skip(1)
        .fold(first.dtype, |d, (i, t)| {
            DType::promote(d, t.dtype).unwrap_or_else(|| {
                fail(
                    Error::dtype(format!(
                        "`concat`: cannot combine operand {i} {} with {} (operand 0 is {})",
                        type_str(t.dtype, &t.shape),
                        d,
                        type_str(first.dtype, &first.shape)
                    ))
                    .at(loc),
                )
            })
        });
    // ...into the binary ops' common type: weak operands take the strong ones' (a weak f32
    // bias beside bf16 scores gives bf16), and a concat of weak operands is weak.
    let operands: Vec<super::ops::Operand> = ts
        .iter()
        .map(|t| super::ops::Operand::Tensor(std::borrow::Cow::Borrowed(*t)))
        .collect();
    let refs: Vec<&super::ops::Operand> = operands.iter().collect();
    let dtype = super::ops::common_dtype("concat", &refs, loc);
    // The operands in `dtype`, keeping their weak type (`cast` would fix it).
    let to = |t: &Tensor| -> Tensor {
        if t.dtype == dtype {
            t.clone()
        } else {
            let c = apply(Op::Cast(dtype), &[t], t.shape.clone(), dtype, loc);
            if t.weak {
                c.into_weak()
            } else {
                c
            }
        }
    };
    for (i, t) in ts.iter().enumerate() {
        if t.ndim() != first.ndim() || (0..t.ndim()).any(|d| d != a && t.shape[d] != first.shape[d])
        {
            fail(
                Error::shape(format!(
                    "`concat` along axis {a}: operand {i} is {}, operand 0 is {}",
                    type_str(t.dtype, &t.shape),
                    type_str(first.dtype, &first.shape)
                ))
                .at(loc),
            );
        }
    }
    if ts.len() == 1 {
        return to(first);
    }
    let cast: Vec<Tensor> = ts.iter().map(|t| to(t)).collect();
    let refs: Vec<&Tensor> = cast.iter().collect();
    let mut out = first.shape.clone();
    out[a] = ts
        .iter()
        .try_fold(0usize, |n, t| n.checked_add(t.shape[a]))
        .unwrap_or_else(|| {
            fail(
                Error::shape(format!(
                    "`concat` along axis {a}: the {} operands' lengths add up to more than \
                     usize::MAX (operand 0 is {})",
                    ts.len(),
                    type_str(first.dtype, &first.shape)
                ))
                .at(loc),
            )
        });
    apply(Op::Concat(a), &refs, out, dtype, loc)
}

/// Concatenate along `axis`.
#[track_caller]
pub fn concat(ts: &[&Tensor], axis: isize) -> Tensor {
    concat_at(ts, axis, Location::caller())
}

/// Stack along a new `axis`.
#[track_caller]
pub fn stack(ts: &[&Tensor], axis: isize) -> Tensor {
    Tensor::stack(ts, axis)
}
