//! `take` and its adjoint `scatter_add` with batched operands. With shared
//! indices the batch axis just shifts the indexed one. With batched indices
//! each lane indexes its own slice: the batch and indexed axes are merged
//! into one, and each lane's indices offset by `lane * len` into it, so the
//! whole batch is one gather (or one scatter).

use super::lanes::{BVal, Lanes};
use crate::ir::{BinaryOp, CmpOp, Node, Op};
use crate::tensor::ops::{apply, constant};
use crate::{DType, Literal, Tensor};

/// `take(x, idx)` along `axis` (per-example), batched at axis 0.
pub(crate) fn take(axis: usize, n: &Node, x: &BVal, idx: &BVal, lanes: &Lanes) -> Tensor {
    let (loc, d) = (lanes.loc, n.dtype);
    let bs = lanes.shape(&n.shape);
    match (x.batched, idx.batched) {
        (true, false) => apply(Op::Take(axis + 1), &[&x.t, &idx.t], bs, d, loc),
        (false, _) => {
            // Shared data: the batch axis of the indices comes out where they go.
            let mut s = x.t.shape()[..axis].to_vec();
            s.extend_from_slice(idx.t.shape());
            s.extend_from_slice(&x.t.shape()[axis + 1..]);
            let t = apply(Op::Take(axis), &[&x.t, &idx.t], s, d, loc);
            lanes.move_axis(&t, axis, 0)
        }
        (true, true) => {
            let len = x.t.shape()[axis + 1];
            if len == 0 || bs.contains(&0) {
                return lanes.zeros(&bs, d);
            }
            // [B, pre.., len, post..] -> [B * len, pre.., post..]
            let moved = lanes.move_axis(&x.t, axis + 1, 1);
            let mut flat_shape = vec![lanes.size * len];
            flat_shape.extend_from_slice(&moved.shape()[2..]);
            let flat = lanes.reshape(&moved, flat_shape.clone());
            let ids = flat_indices(&idx.t, len, lanes);
            let mut got_shape = ids.shape().to_vec();
            got_shape.extend_from_slice(&flat_shape[1..]);
            let got = apply(Op::Take(0), &[&flat, &ids], got_shape, d, loc);
            // [B, I.., pre.., post..] -> [B, pre.., I.., post..]
            let ni = idx.t.ndim() - 1;
            let r = got.ndim();
            let perm: Vec<usize> = std::iter::once(0)
                .chain(1 + ni..1 + ni + axis)
                .chain(1..1 + ni)
                .chain(1 + ni + axis..r)
                .collect();
            lanes.transpose(&got, perm)
        }
    }
}

/// `scatter_add(values, idx)` along `axis` into the node's (per-example)
/// shape, batched at axis 0.
pub(crate) fn scatter_add(
    axis: usize,
    n: &Node,
    values: &BVal,
    idx: &BVal,
    lanes: &Lanes,
) -> Tensor {
    let (loc, d) = (lanes.loc, n.dtype);
    let bs = lanes.shape(&n.shape);
    if !idx.batched {
        return apply(Op::ScatterAdd(axis + 1), &[&values.t, &idx.t], bs, d, loc);
    }
    let len = n.shape[axis];
    if len == 0 || bs.contains(&0) {
        return lanes.zeros(&bs, d);
    }
    let v = lanes.materialize(values);
    // [B, pre.., I.., post..] -> [B, I.., pre.., post..]
    let ni = idx.t.ndim() - 1;
    let r = v.ndim();
    let perm: Vec<usize> = std::iter::once(0)
        .chain(1 + axis..1 + axis + ni)
        .chain(1..1 + axis)
        .chain(1 + axis + ni..r)
        .collect();
    let v = lanes.transpose(&v, perm);
    let ids = flat_indices(&idx.t, len, lanes);
    let (pre, post) = (&n.shape[..axis], &n.shape[axis + 1..]);
    let mut flat_out = vec![lanes.size * len];
    flat_out.extend_from_slice(pre);
    flat_out.extend_from_slice(post);
    let s = apply(Op::ScatterAdd(0), &[&v, &ids], flat_out, d, loc);
    // [B * len, pre.., post..] -> [B, len, pre.., post..] -> [B, pre.., len, post..]
    let mut split = vec![lanes.size, len];
    split.extend_from_slice(pre);
    split.extend_from_slice(post);
    let s = lanes.reshape(&s, split);
    lanes.move_axis(&s, 1, 1 + axis)
}

/// Batched indices `[B, I..]` into an axis of length `len` as indices into
/// the merged `[B * len]` axis: each made what `take` reads (negative ones
/// count from the end, then clamped into range) and offset by its lane.
fn flat_indices(idx: &Tensor, len: usize, lanes: &Lanes) -> Tensor {
    let loc = lanes.loc;
    let s = idx.shape().to_vec();
    let d = if lanes.size * len > i32::MAX as usize {
        DType::I64
    } else {
        idx.dtype()
    };
    let idx = if idx.dtype() == d {
        idx.clone()
    } else {
        apply(Op::Cast(d), &[idx], s.clone(), d, loc)
    };
    let int = |v: usize| constant(Literal::Int(v as i64), &s, d, loc);
    let bin = |op, a: &Tensor, b: &Tensor| apply(Op::Binary(op), &[a, b], s.clone(), d, loc);
    let zero = int(0);
    let negative = apply(
        Op::Compare(CmpOp::Lt),
        &[&idx, &zero],
        s.clone(),
        DType::Bool,
        loc,
    );
    let wrapped = bin(BinaryOp::Add, &idx, &int(len));
    let from_end = apply(Op::Select, &[&negative, &wrapped, &idx], s.clone(), d, loc);
    let clamped = bin(
        BinaryOp::Min,
        &bin(BinaryOp::Max, &from_end, &zero),
        &int(len - 1),
    );
    let lane = crate::tensor::shape_ops::iota_at(&s, 0, d, loc);
    bin(
        BinaryOp::Add,
        &clamped,
        &bin(BinaryOp::Mul, &lane, &int(len)),
    )
}
