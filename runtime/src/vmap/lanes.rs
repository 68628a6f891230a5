//! Batched values and the few tensor moves every batching rule uses. A
//! value inside `vmap` is either the same for every lane (unbatched: its
//! per-example shape) or batched with the batch axis first (`[B] + shape`).

use crate::ir::Op;
use crate::tensor::ops::apply;
use crate::{SourceLoc, Tensor};

/// The batch: its size and where `vmap` was called (the location of the
/// ops it records).
#[derive(Clone, Copy)]
pub(crate) struct Lanes {
    pub size: usize,
    pub loc: SourceLoc,
}

/// A value of the function being batched.
#[derive(Clone)]
pub(crate) struct BVal {
    pub t: Tensor,
    /// `t` is `[B] + shape` (else `t` is `shape`, shared by every lane).
    pub batched: bool,
}

impl BVal {
    pub fn shared(t: Tensor) -> BVal {
        BVal { t, batched: false }
    }
    pub fn batched(t: Tensor) -> BVal {
        BVal { t, batched: true }
    }
}

impl Lanes {
    /// `[B] + shape`.
    pub fn shape(&self, shape: &[usize]) -> Vec<usize> {
        let mut s = Vec::with_capacity(shape.len() + 1);
        s.push(self.size);
        s.extend_from_slice(shape);
        s
    }

    /// The value with a batch axis: a shared value is broadcast to every lane.
    pub fn materialize(&self, v: &BVal) -> Tensor {
        if v.batched {
            return v.t.clone();
        }
        let s = self.shape(v.t.shape());
        apply(Op::Broadcast, &[&v.t], s, v.t.dtype(), self.loc)
    }

    pub fn reshape(&self, t: &Tensor, shape: Vec<usize>) -> Tensor {
        if t.shape() == shape.as_slice() {
            return t.clone();
        }
        apply(Op::Reshape, &[t], shape, t.dtype(), self.loc)
    }

    pub fn transpose(&self, t: &Tensor, perm: Vec<usize>) -> Tensor {
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return t.clone();
        }
        let shape = perm.iter().map(|&p| t.shape()[p]).collect();
        apply(Op::Transpose(perm), &[t], shape, t.dtype(), self.loc)
    }

    /// Axis `from` of `t` moved to position `to`, the others in order.
    pub fn move_axis(&self, t: &Tensor, from: usize, to: usize) -> Tensor {
        let mut perm: Vec<usize> = (0..t.ndim()).filter(|&a| a != from).collect();
        perm.insert(to, from);
        self.transpose(t, perm)
    }

    /// A bool `[B]` (one predicate per lane) broadcast to a batched `shape`.
    pub fn spread(&self, pred: &Tensor, shape: &[usize]) -> Tensor {
        let mut s = vec![1; shape.len()];
        s[0] = self.size;
        let p = self.reshape(pred, s);
        apply(Op::Broadcast, &[&p], shape.to_vec(), p.dtype(), self.loc)
    }

    /// Zeros of `shape` (a constant node when tracing).
    pub fn zeros(&self, shape: &[usize], d: crate::DType) -> Tensor {
        crate::tensor::ops::constant(crate::Literal::Int(0), shape, d, self.loc)
    }

    /// Lane `lane` of a batched tensor (its batch axis removed).
    pub fn lane(&self, t: &Tensor, lane: usize) -> Tensor {
        let mut sl = vec![(0i64, 1i64); t.ndim()];
        sl[0] = (lane as i64, 1);
        let mut s = t.shape().to_vec();
        s[0] = 1;
        let one = apply(Op::Slice(sl), &[t], s, t.dtype(), self.loc);
        self.reshape(&one, t.shape()[1..].to_vec())
    }
}
