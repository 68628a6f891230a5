//! The symbolic vector the traced functions run on to record their operations.

use super::{Function, SymOp, V};
use crate::ir::UnaryOp;
use std::cell::RefCell;

thread_local! {
    static OPS: RefCell<Vec<SymOp>> = const { RefCell::new(Vec::new()) };
}

/// A symbolic vector of f32 lanes, or f64 lanes where `D`.
#[derive(Clone, Copy)]
pub struct S<const D: bool>(u32);

fn push<const D: bool>(op: SymOp) -> S<D> {
    OPS.with(|o| {
        let mut o = o.borrow_mut();
        o.push(op);
        S(o.len() as u32 - 1)
    })
}

impl<const D: bool> V for S<D> {
    const N: usize = if D { 8 } else { 16 };
    const D: bool = D;
    type M = S<D>;
    unsafe fn splat(c: f64) -> Self {
        push(SymOp::Const(if D {
            c.to_bits()
        } else {
            (c as f32).to_bits() as u64
        }))
    }
    unsafe fn bits(c: u64) -> Self {
        push(SymOp::Const(if D { c } else { c as u32 as u64 }))
    }
    unsafe fn load(_: *const f32) -> Self {
        unreachable!("the functions do not load")
    }
    unsafe fn store(self, _: *mut f32) {
        unreachable!("the functions do not store")
    }
    unsafe fn add(self, o: Self) -> Self {
        push(SymOp::Add(self.0, o.0))
    }
    unsafe fn sub(self, o: Self) -> Self {
        push(SymOp::Sub(self.0, o.0))
    }
    unsafe fn mul(self, o: Self) -> Self {
        push(SymOp::Mul(self.0, o.0))
    }
    unsafe fn div(self, o: Self) -> Self {
        push(SymOp::Div(self.0, o.0))
    }
    unsafe fn fma(self, b: Self, c: Self) -> Self {
        push(SymOp::Fma(self.0, b.0, c.0))
    }
    unsafe fn min(self, x: Self) -> Self {
        push(SymOp::Min(self.0, x.0))
    }
    unsafe fn max(self, x: Self) -> Self {
        push(SymOp::Max(self.0, x.0))
    }
    unsafe fn lt(self, o: Self) -> S<D> {
        push(SymOp::Lt(self.0, o.0))
    }
    unsafe fn eq(self, o: Self) -> S<D> {
        push(SymOp::Eq(self.0, o.0))
    }
    unsafe fn uge(self, o: Self) -> S<D> {
        push(SymOp::Uge(self.0, o.0))
    }
    unsafe fn sel(m: S<D>, t: Self, f: Self) -> Self {
        push(SymOp::Sel(m.0, t.0, f.0))
    }
    unsafe fn any(_: S<D>) -> bool {
        unreachable!("the traced functions do not branch on their data")
    }
    unsafe fn exact_reduction(x: Self, r: Self, n: Self, cos: bool) -> (Self, Self) {
        let fixed = push::<D>(SymOp::ExactR(x.0, r.0, n.0, cos));
        (fixed, push(SymOp::ExactN(fixed.0)))
    }
    unsafe fn and(self, o: Self) -> Self {
        push(SymOp::And(self.0, o.0))
    }
    unsafe fn or(self, o: Self) -> Self {
        push(SymOp::Or(self.0, o.0))
    }
    unsafe fn xor(self, o: Self) -> Self {
        push(SymOp::Xor(self.0, o.0))
    }
    unsafe fn iadd(self, o: Self) -> Self {
        push(SymOp::Iadd(self.0, o.0))
    }
    unsafe fn isub(self, o: Self) -> Self {
        push(SymOp::Isub(self.0, o.0))
    }
    unsafe fn shl_mant(self) -> Self {
        push(SymOp::Shl(self.0, if D { 52 } else { 23 }))
    }
    unsafe fn shl_sign(self) -> Self {
        push(SymOp::Shl(self.0, if D { 63 } else { 31 }))
    }
    unsafe fn shr_mant(self) -> Self {
        push(SymOp::Shr(self.0, if D { 52 } else { 23 }))
    }
}

/// `f` on f32 lanes, or f64 lanes where `f64`.
pub fn trace(f: Function, f64: bool) -> Option<(Vec<SymOp>, u32)> {
    if f64 {
        record::<true>(f)
    } else {
        record::<false>(f)
    }
}

fn record<const D: bool>(f: Function) -> Option<(Vec<SymOp>, u32)> {
    OPS.with(|o| o.borrow_mut().clear());
    let x = push::<D>(SymOp::Arg(0));
    // SAFETY: `S`'s operations only record; nothing is loaded or computed.
    let r = unsafe {
        match f {
            Function::Pow => super::pow(x, push::<D>(SymOp::Arg(1))),
            Function::Unary(UnaryOp::Exp) => super::exp(x),
            Function::Unary(UnaryOp::Ln) => super::ln(x),
            Function::Unary(UnaryOp::Tanh) => super::tanh(x),
            Function::Unary(UnaryOp::Sigmoid) => super::sigmoid(x),
            Function::Unary(UnaryOp::Erf) => super::erf(x),
            Function::Unary(UnaryOp::Log1p) => super::log1p(x),
            Function::Unary(UnaryOp::Expm1) => super::expm1(x),
            Function::Unary(UnaryOp::Sin) => super::sin(x),
            Function::Unary(UnaryOp::Cos) => super::cos(x),
            Function::Unary(_) => return None,
        }
    };
    let ops = OPS.with(|o| std::mem::take(&mut *o.borrow_mut()));
    Some((ops, r.0))
}
