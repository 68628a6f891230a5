//! What each elementwise op computes on one element, defined once: the reference
//! interpreter applies these to every element of its tensors, and constant folding applies
//! them to literals at compile time (the compiled kernels are tested against both).
//!
//! Floats are computed in f64 and rounded once to the result's dtype; integers wrap to
//! their width; float-to-integer casts saturate (NaN gives 0), as Rust's `as` does.

use super::{BinaryOp, CmpOp, Op, UnaryOp};
use crate::{DType, Literal};

/// The float semantics of each unary op, in f64.
pub fn unary_f64(op: UnaryOp, x: f64) -> f64 {
    match op {
        UnaryOp::Neg => -x,
        UnaryOp::Exp => x.exp(),
        UnaryOp::Ln => x.ln(),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Rsqrt => 1.0 / x.sqrt(),
        UnaryOp::Abs => x.abs(),
        // NaN stays NaN and -0 stays -0, as `x < 0 ? 0 : x`.
        UnaryOp::Relu => {
            if x < 0.0 {
                0.0
            } else {
                x
            }
        }
        UnaryOp::Sigmoid => {
            if x >= 0.0 {
                1.0 / (1.0 + (-x).exp())
            } else {
                let e = x.exp();
                e / (1.0 + e)
            }
        }
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Square => x * x,
        UnaryOp::Recip => 1.0 / x,
        UnaryOp::Erf => libm::erf(x),
        UnaryOp::StopGradient => x,
        UnaryOp::Floor => x.floor(),
        UnaryOp::Log1p => x.ln_1p(),
        UnaryOp::Expm1 => x.exp_m1(),
        UnaryOp::Not => unreachable!("not is a bool op"),
    }
}

/// `v` wrapped to the integer `dtype`'s width.
fn wrap(v: i64, dtype: DType) -> i64 {
    if dtype == DType::I32 {
        v as i32 as i64
    } else {
        v
    }
}

/// The integer semantics of each unary op (wrapping), in i64.
pub fn unary_i64(op: UnaryOp, x: i64, dtype: DType) -> i64 {
    match op {
        UnaryOp::Neg => wrap(x.wrapping_neg(), dtype),
        UnaryOp::Abs => wrap(x.wrapping_abs(), dtype),
        UnaryOp::Relu => x.max(0),
        UnaryOp::Square => wrap(x.wrapping_mul(x), dtype),
        other => unreachable!("{other:?} on integers"),
    }
}

pub fn binary_f64(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        // NaN propagates (as XLA's max/min do).
        BinaryOp::Max => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        }
        BinaryOp::Min => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.min(b)
            }
        }
        BinaryOp::Pow => a.powf(b),
        BinaryOp::Rem => a % b,
        BinaryOp::And | BinaryOp::Or => unreachable!("and/or are bool ops"),
    }
}

pub fn binary_i64(op: BinaryOp, a: i64, b: i64, dtype: DType) -> i64 {
    match op {
        BinaryOp::Add => wrap(a.wrapping_add(b), dtype),
        BinaryOp::Sub => wrap(a.wrapping_sub(b), dtype),
        BinaryOp::Mul => wrap(a.wrapping_mul(b), dtype),
        BinaryOp::Div => {
            if b == 0 {
                -1
            } else {
                wrap(a.wrapping_div(b), dtype)
            }
        }
        BinaryOp::Max => a.max(b),
        BinaryOp::Min => a.min(b),
        BinaryOp::Rem => {
            if b == 0 {
                a
            } else {
                wrap(a.wrapping_rem(b), dtype)
            }
        }
        other => unreachable!("{other:?} on integers"),
    }
}

pub fn compare<T: PartialOrd>(op: CmpOp, a: T, b: T) -> bool {
    match op {
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
    }
}

/// `x` of dtype `from` converted to `to`: floats to integers truncate and saturate (NaN
/// gives 0), integers wrap, i64 to f32 rounds once, anything to bool is `!= 0`.
pub fn cast(x: Literal, from: DType, to: DType) -> Literal {
    match (from, to) {
        (_, DType::Bool) => Literal::Bool(x.as_f64(from) != 0.0),
        (f, DType::I32) if f.is_float() => Literal::Int(x.as_f64(from) as i32 as i64),
        (f, DType::I64) if f.is_float() => Literal::Int(x.as_f64(from) as i64),
        (DType::I64, DType::F32) => Literal::Float(x.as_i64(from) as f32 as f64),
        // An i64 reaches a 16-bit float through f64 (exact below 2^53), then rounds once.
        (_, t @ (DType::F32 | DType::BF16 | DType::F16)) => {
            Literal::Float(t.round_f64(x.as_f64(from)))
        }
        (_, DType::F64) => Literal::Float(x.as_f64(from)),
        (_, DType::I32 | DType::I64) => Literal::Int(wrap(x.as_i64(from), to)),
    }
}

/// A float result rounded to its dtype (once: a bf16 or f16 result of an op computed in
/// f64 rounds straight to 16 bits).
fn float(v: f64, dtype: DType) -> Literal {
    Literal::Float(dtype.round_f64(v))
}

/// The elementwise `op` on one element of each input (`ins`: value and dtype), giving a
/// value of `dtype`; `None` for ops that are not elementwise.
pub fn eval(op: &Op, ins: &[(Literal, DType)], dtype: DType) -> Option<Literal> {
    let f = |k: usize| ins[k].0.as_f64(ins[k].1);
    let i = |k: usize| ins[k].0.as_i64(ins[k].1);
    let b = |k: usize| ins[k].0.as_f64(ins[k].1) != 0.0;
    Some(match op {
        Op::Cast(to) => cast(ins[0].0, ins[0].1, *to),
        Op::Unary(UnaryOp::Not) => Literal::Bool(!b(0)),
        Op::Unary(UnaryOp::StopGradient) => ins[0].0.cast(dtype),
        Op::Unary(u) if dtype.is_float() => float(unary_f64(*u, f(0)), dtype),
        Op::Unary(u) => Literal::Int(unary_i64(*u, i(0), dtype)),
        Op::Binary(BinaryOp::And) => Literal::Bool(b(0) && b(1)),
        Op::Binary(BinaryOp::Or) => Literal::Bool(b(0) || b(1)),
        Op::Binary(o) if dtype.is_float() => float(binary_f64(*o, f(0), f(1)), dtype),
        Op::Binary(o) => Literal::Int(binary_i64(*o, i(0), i(1), dtype)),
        Op::Compare(c) if ins[0].1.is_float() => Literal::Bool(compare(*c, f(0), f(1))),
        Op::Compare(c) => Literal::Bool(compare(*c, i(0), i(1))),
        Op::Select => {
            if b(0) {
                ins[1].0.cast(dtype)
            } else {
                ins[2].0.cast(dtype)
            }
        }
        _ => return None,
    })
}
