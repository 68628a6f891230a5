//! Result types of the structural ops (shape ops, reductions, indexing,
//! matmul): one place for the typing rules, used by the verifier and by the
//! tracer (which adds user-facing messages on top).

use super::{Op, ReduceOp};
use crate::{DType, Literal};

pub type Ty<'a> = (&'a [usize], DType);

/// The `(shape, dtype)` a structural op gives on these operand types, or why
/// it is ill-typed. `declared` is the node's own type, which some ops (reshape,
/// iota, slice lengths) take as given and only check.
pub fn infer(op: &Op, ins: &[Ty], declared: Ty) -> Result<(Vec<usize>, DType), String> {
    let arity = |n: usize| {
        if ins.len() == n {
            Ok(())
        } else {
            Err(format!("expects {n} operands, has {}", ins.len()))
        }
    };
    match op {
        Op::Reshape => {
            arity(1)?;
            let (n_in, n_out) = (
                crate::shape::checked_numel(ins[0].0),
                crate::shape::checked_numel(declared.0),
            );
            if n_in.is_none() || n_in != n_out {
                return Err(format!(
                    "reshape of {:?} elements to {:?}",
                    ins[0].0, declared.0
                ));
            }
            Ok((declared.0.to_vec(), ins[0].1))
        }
        Op::Transpose(perm) => {
            arity(1)?;
            let s = ins[0].0;
            let mut seen = vec![false; s.len()];
            if perm.len() != s.len()
                || perm
                    .iter()
                    .any(|&p| p >= s.len() || std::mem::replace(&mut seen[p], true))
            {
                return Err(format!("{perm:?} is not a permutation of {} axes", s.len()));
            }
            Ok((perm.iter().map(|&p| s[p]).collect(), ins[0].1))
        }
        Op::Slice(sl) => {
            arity(1)?;
            let s = ins[0].0;
            if sl.len() != s.len() || declared.0.len() != s.len() {
                return Err(format!(
                    "slice needs one start:step per axis ({} axes)",
                    s.len()
                ));
            }
            for (d, (&(start, step), &len)) in sl.iter().zip(declared.0).enumerate() {
                if step == 0 {
                    return Err(format!("axis {d}: step 0"));
                }
                // Larger steps select at most one element, and are stored as
                // 1 then (`Tensor::slice`): no step times stride overflows.
                if step.unsigned_abs() > s[d].max(1) as u64 {
                    return Err(format!(
                        "axis {d}: step {step} exceeds the axis of {}",
                        s[d]
                    ));
                }
                if len > 0 {
                    let (start, step) = (start as i128, step as i128);
                    let last = start + (len as i128 - 1) * step;
                    let n = s[d] as i128;
                    if start < 0 || start >= n || last < 0 || last >= n {
                        return Err(format!(
                            "axis {d}: {len} elements from {start} by {step} leave 0..{}",
                            s[d]
                        ));
                    }
                }
            }
            Ok((declared.0.to_vec(), ins[0].1))
        }
        Op::Concat(axis) => {
            if ins.is_empty() {
                return Err("concat of nothing".into());
            }
            let (s0, d0) = ins[0];
            if *axis >= s0.len() {
                return Err(format!("axis {axis} out of range for rank {}", s0.len()));
            }
            let mut out = s0.to_vec();
            out[*axis] = 0;
            for (s, d) in ins {
                if *d != d0
                    || s.len() != s0.len()
                    || (0..s.len()).any(|i| i != *axis && s[i] != s0[i])
                {
                    return Err(format!(
                        "operands {:?} {d} and {:?} {d0} differ off axis {axis}",
                        s, s0
                    ));
                }
                out[*axis] = out[*axis]
                    .checked_add(s[*axis])
                    .ok_or_else(|| format!("the lengths along axis {axis} overflow"))?;
            }
            Ok((out, d0))
        }
        Op::Pad(p, _) => {
            arity(1)?;
            let s = ins[0].0;
            if p.len() != s.len() {
                return Err(format!(
                    "pad needs before:after per axis ({} axes)",
                    s.len()
                ));
            }
            let out: Option<Vec<usize>> = s
                .iter()
                .zip(p)
                .map(|(d, (a, b))| d.checked_add(*a)?.checked_add(*b))
                .collect();
            match out {
                Some(out) => Ok((out, ins[0].1)),
                None => Err(format!("padding {s:?} by {p:?} overflows a dimension")),
            }
        }
        Op::Reduce(_, axes) => {
            arity(1)?;
            let s = ins[0].0;
            if axes.windows(2).any(|w| w[0] >= w[1]) || axes.iter().any(|&a| a >= s.len()) {
                return Err(format!(
                    "axes {axes:?} must be sorted, distinct and below rank {}",
                    s.len()
                ));
            }
            if ins[0].1 == DType::Bool {
                return Err("reductions take numeric tensors".into());
            }
            Ok((
                (0..s.len())
                    .filter(|a| !axes.contains(a))
                    .map(|a| s[a])
                    .collect(),
                ins[0].1,
            ))
        }
        Op::ArgMax(axis) | Op::ArgMin(axis) => {
            arity(1)?;
            let s = ins[0].0;
            if *axis >= s.len() || s[*axis] == 0 {
                return Err(format!("axis {axis} must exist and be non-empty in {s:?}"));
            }
            if ins[0].1 == DType::Bool {
                return Err("argmax/argmin take numeric tensors".into());
            }
            Ok((
                (0..s.len()).filter(|a| a != axis).map(|a| s[a]).collect(),
                DType::I64,
            ))
        }
        Op::Take(axis) => {
            arity(2)?;
            let (s, d) = ins[0];
            if *axis >= s.len() {
                return Err(format!("axis {axis} out of range for rank {}", s.len()));
            }
            if !ins[1].1.is_int() {
                return Err(format!("indices must be i32 or i64, not {}", ins[1].1));
            }
            let mut out = s[..*axis].to_vec();
            out.extend_from_slice(ins[1].0);
            out.extend_from_slice(&s[axis + 1..]);
            Ok((out, d))
        }
        Op::Iota(axis) => {
            arity(0)?;
            if *axis >= declared.0.len() || declared.1 == DType::Bool {
                return Err(format!(
                    "iota axis {axis} of a {} tensor of rank {}",
                    declared.1,
                    declared.0.len()
                ));
            }
            Ok((declared.0.to_vec(), declared.1))
        }
        Op::Matmul => {
            arity(2)?;
            let ((a, da), (b, db)) = (ins[0], ins[1]);
            if da != db || !da.is_float() {
                return Err(format!(
                    "matmul takes two operands of one float type, not {da} and {db}"
                ));
            }
            if a.len() < 2 || b.len() < 2 {
                return Err("matmul operands have rank >= 2 in the IR".into());
            }
            let (m, k) = (a[a.len() - 2], a[a.len() - 1]);
            let (k2, n) = (b[b.len() - 2], b[b.len() - 1]);
            if k != k2 {
                return Err(format!("contracting dimensions differ: {k} and {k2}"));
            }
            let mut out = crate::shape::broadcast(&a[..a.len() - 2], &b[..b.len() - 2])
                .ok_or_else(|| {
                    format!(
                        "batch dimensions {:?} and {:?} do not broadcast",
                        &a[..a.len() - 2],
                        &b[..b.len() - 2]
                    )
                })?;
            out.extend([m, n]);
            // 16-bit operands give their own type, or f32 where the node says so
            // (`Tensor::matmul_with`: the f32 sums are not rounded to 16 bits).
            let result = if da.is_half() && declared.1 == DType::F32 {
                DType::F32
            } else {
                da
            };
            Ok((out, result))
        }
        Op::SliceScatter(sl) => {
            arity(1)?;
            // The input must be what slicing the declared shape gives.
            let back = infer(&Op::Slice(sl.clone()), &[declared], (ins[0].0, ins[0].1))?;
            if back.0 != ins[0].0 || declared.1 != ins[0].1 {
                return Err(format!(
                    "slicing {:?} by {sl:?} does not give {:?}",
                    declared.0, ins[0].0
                ));
            }
            Ok((declared.0.to_vec(), ins[0].1))
        }
        Op::ScatterAdd(axis) => {
            arity(2)?;
            let (v, d) = ins[0];
            let idx = ins[1].0;
            if !d.is_float() {
                return Err(format!("scatter_add accumulates floats, not {d}"));
            }
            if !ins[1].1.is_int() {
                return Err(format!("indices must be i32 or i64, not {}", ins[1].1));
            }
            let out = declared.0;
            if *axis >= out.len() {
                return Err(format!("axis {axis} out of range for rank {}", out.len()));
            }
            let mut want = out[..*axis].to_vec();
            want.extend_from_slice(idx);
            want.extend_from_slice(&out[axis + 1..]);
            if want != v || declared.1 != d {
                return Err(format!(
                    "values {v:?} do not match taking {idx:?} from {out:?} along axis {axis}"
                ));
            }
            Ok((out.to_vec(), d))
        }
        Op::Barrier => {
            arity(2)?;
            Ok((ins[0].0.to_vec(), ins[0].1))
        }
        Op::AllGather(axis, ranks) | Op::ReduceScatter(_, axis, ranks) => {
            arity(1)?;
            let (mut s, d) = (ins[0].0.to_vec(), ins[0].1);
            if *axis >= s.len() || *ranks == 0 {
                return Err(format!(
                    "axis {axis} of {} ranks for rank-{} input",
                    ranks,
                    s.len()
                ));
            }
            if let Op::ReduceScatter(r, ..) = op {
                if d == DType::Bool && matches!(r, ReduceOp::Sum | ReduceOp::Prod) {
                    return Err(format!("{} of bool is not defined", op.name()));
                }
                if s[*axis] % ranks != 0 {
                    return Err(format!(
                        "axis {axis} of length {} in {ranks} equal blocks",
                        s[*axis]
                    ));
                }
                s[*axis] /= ranks;
            } else {
                s[*axis] *= ranks;
            }
            Ok((s, d))
        }
        Op::BroadcastFrom(_) => {
            arity(1)?;
            Ok((ins[0].0.to_vec(), ins[0].1))
        }
        Op::AllReduce(r) => {
            arity(1)?;
            let d = ins[0].1;
            if d == DType::Bool && matches!(r, ReduceOp::Sum | ReduceOp::Prod) {
                return Err(format!("{} of bool is not defined", op.name()));
            }
            Ok((ins[0].0.to_vec(), d))
        }
        Op::Conv(spec) => spec.infer(ins, declared),
        Op::Window(spec) => spec.infer(ins, declared),
        Op::Attention(spec) | Op::AttentionGrad(spec) => {
            let grad = matches!(op, Op::AttentionGrad(_));
            let layout = if grad {
                Some(spec.grad_operands(ins.len()).ok_or_else(|| {
                    format!(
                        "expects q, k, v, [o,] do{} ({} or {} operands), has {}",
                        if spec.mask.has_operand() {
                            ", mask"
                        } else {
                            ""
                        },
                        4 + spec.mask.has_operand() as usize,
                        5 + spec.mask.has_operand() as usize,
                        ins.len()
                    )
                })?)
            } else {
                arity(3 + spec.mask.has_operand() as usize)?;
                None
            };
            let base = layout.map_or(3, |l| l.dout + 1);
            let ((q, d), (k, dk), (v, dv)) = (ins[0], ins[1], ins[2]);
            if !d.is_float() || dk != d || dv != d {
                return Err(format!(
                    "attention takes q, k, v of one float dtype, not {d}, {dk}, {dv}"
                ));
            }
            let r = q.len();
            if r < 2 || k.len() != r || v.len() != r {
                return Err(format!(
                    "q, k, v need one rank >= 2 (batch axes, then rows and features): {q:?}, {k:?}, {v:?}"
                ));
            }
            let (batch, sq, sk) = (&q[..r - 2], q[r - 2], k[r - 2]);
            if &k[..r - 2] != batch || &v[..r - 2] != batch {
                return Err(format!(
                    "q, k, v need the same batch axes: {q:?}, {k:?}, {v:?}"
                ));
            }
            if k[r - 1] != q[r - 1] || v[r - 2] != sk {
                return Err(format!(
                    "k needs q's feature size and v k's length: q {q:?}, k {k:?}, v {v:?}"
                ));
            }
            let mut o = q.to_vec();
            o[r - 1] = v[r - 1];
            if let Some(l) = layout {
                let mut checked = vec![("do", ins[l.dout])];
                if let Some(at) = l.saved_output {
                    checked.push(("o", ins[at]));
                }
                for (what, x) in checked {
                    if x.0 != o.as_slice() || x.1 != d {
                        return Err(format!("{what} is {:?} {}, needs {o:?} {d}", x.0, x.1));
                    }
                }
            }
            if spec.mask.has_operand() {
                let (m, dm) = ins[base];
                let mut want = batch.to_vec();
                want.extend([sq, sk]);
                let dm_ok = if spec.mask == crate::ir::MaskKind::Bool {
                    dm == DType::Bool
                } else {
                    dm == d
                };
                if m != want.as_slice() || !dm_ok {
                    return Err(format!(
                        "a {} mask is {dm} {m:?}, needs {want:?} of {}",
                        spec.mask.name(),
                        if spec.mask == crate::ir::MaskKind::Bool {
                            DType::Bool
                        } else {
                            d
                        }
                    ));
                }
            }
            if !spec.scale.is_finite() {
                return Err(format!("scale {} is not finite", spec.scale));
            }
            if spec.bias && (spec.mask != crate::ir::MaskKind::Causal || spec.fill.is_some()) {
                return Err(format!(
                    "an added bias mask needs a causal mask without a fill, not {}",
                    spec.mask.name()
                ));
            }
            if let Some(f) = spec.fill {
                if *spec != crate::ir::AttnSpec::new(spec.mask, spec.scale, spec.fill) {
                    return Err(format!(
                        "a fill ({f:?}) must be finite and needs a causal or bool mask, not {}",
                        spec.mask.name()
                    ));
                }
            }
            if grad {
                // `dq`; `dk` and `dv` are its `get[1]` and `get[2]` (`verify`).
                Ok((q.to_vec(), d))
            } else {
                Ok((o, d))
            }
        }
        Op::Random(r) => {
            use super::RandomOp;
            arity(if *r == RandomOp::FoldIn { 2 } else { 1 })?;
            if ins[0] != (&[2][..], DType::I32) {
                return Err(format!(
                    "the key must be i32[2], is {}",
                    crate::error::type_str(ins[0].1, ins[0].0)
                ));
            }
            let (shape, dtype) = declared;
            let ok = match r {
                RandomOp::Bits => matches!(dtype, DType::I32 | DType::I64),
                RandomOp::Uniform { lo, hi } => {
                    if !lo.is_finite() || !hi.is_finite() {
                        return Err(format!("bounds {lo} and {hi} must be finite"));
                    }
                    dtype.is_float()
                }
                RandomOp::Normal => dtype.is_float(),
                RandomOp::Split => dtype == DType::I32 && shape.last() == Some(&2),
                RandomOp::FoldIn => {
                    if ins[1] != (&[][..], DType::I32) {
                        return Err(format!(
                            "the data must be i32[], is {}",
                            crate::error::type_str(ins[1].1, ins[1].0)
                        ));
                    }
                    dtype == DType::I32 && shape == [2]
                }
            };
            if !ok {
                return Err(format!(
                    "`{}` cannot give {}",
                    r.name(),
                    crate::error::type_str(dtype, shape)
                ));
            }
            Ok((shape.to_vec(), dtype))
        }
        _ => unreachable!("infer is for structural ops"),
    }
}

/// Whether a pad value can be stored in `d`.
pub fn pad_value_ok(l: Literal, d: DType) -> bool {
    l.weak_dtype(d).is_some() || d == DType::Bool && matches!(l, Literal::Bool(_))
}
