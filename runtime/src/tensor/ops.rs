//! Tensor operations: argument checking, dtype promotion and broadcasting,
//! then one `apply` that records a node (traced) or evaluates (concrete).

use super::Tensor;
use crate::array::Array;
use crate::error::type_str;
use crate::ir::{BinaryOp, CmpOp, Op, UnaryOp};
use crate::trace::{self, fail};
use crate::{eager, interp, shape, DType, Error, ErrorKind, Literal, Scalar, SourceLoc};
use std::borrow::Cow;
use std::panic::Location;

/// One side of a binary operation: a tensor or a weakly typed Rust scalar.
pub enum Operand<'a> {
    /// A tensor, borrowed or owned.
    Tensor(Cow<'a, Tensor>),
    /// A weakly typed scalar: it takes the other operand's dtype.
    Scalar(Literal),
}

/// Anything that can stand beside a tensor in an operation: `&Tensor`,
/// `Tensor`, or a Rust scalar (`f32`, `f64`, `i32`, `i64`).
pub trait IntoOperand<'a> {
    /// The value as an operand.
    fn into_operand(self) -> Operand<'a>;
}
impl<'a> IntoOperand<'a> for &'a Tensor {
    fn into_operand(self) -> Operand<'a> {
        Operand::Tensor(Cow::Borrowed(self))
    }
}
impl<'a> IntoOperand<'a> for Tensor {
    fn into_operand(self) -> Operand<'a> {
        Operand::Tensor(Cow::Owned(self))
    }
}
impl<'a> IntoOperand<'a> for &'a &'a Tensor {
    fn into_operand(self) -> Operand<'a> {
        Operand::Tensor(Cow::Borrowed(*self))
    }
}
impl<'a, S: Scalar> IntoOperand<'a> for S {
    fn into_operand(self) -> Operand<'a> {
        Operand::Scalar(self.literal())
    }
}

/// Identity whose gradient is zero (`crate::stop_gradient`).
#[track_caller]
pub(crate) fn stop_gradient(x: &Tensor) -> Tensor {
    apply(
        Op::Unary(UnaryOp::StopGradient),
        &[x],
        x.shape().to_vec(),
        x.dtype(),
        Location::caller(),
    )
}

/// Record or evaluate one op whose operands already have the right shapes
/// and dtypes.
pub(crate) fn apply(
    op: Op,
    inputs: &[&Tensor],
    shape: Vec<usize>,
    dtype: DType,
    loc: SourceLoc,
) -> Tensor {
    let weak = keeps_weak(&op, inputs);
    let r = apply_strong(op, inputs, shape, dtype, loc);
    if weak {
        r.into_weak()
    } else {
        r
    }
}

/// Whether the result of `op` on `inputs` is weakly typed, by JAX's standard rule: where
/// every operand its values come from is weak. So views, data movement and reductions keep
/// a weak value weak (a causal bias `where_(c, 0.0, -inf)` reshaped or broadcast before it
/// meets bf16 scores keeps them bf16); a cast, an iota or a product of matrices gives a
/// strong result, and unary, binary and select ops decide for themselves (`unary`,
/// `binary`, `select`).
fn keeps_weak(op: &Op, inputs: &[&Tensor]) -> bool {
    let values = match op {
        Op::Broadcast
        | Op::Reshape
        | Op::Transpose(_)
        | Op::Slice(_)
        | Op::Pad(..)
        | Op::Concat(_)
        | Op::Reduce(..) => inputs,
        // The gathered operand, not the indices.
        Op::Take(_) => &inputs[..1.min(inputs.len())],
        _ => return false,
    };
    !values.is_empty() && values.iter().all(|t| t.weak)
}

fn apply_strong(
    op: Op,
    inputs: &[&Tensor],
    shape: Vec<usize>,
    dtype: DType,
    loc: SourceLoc,
) -> Tensor {
    let _internal = crate::internal::Scope::enter();
    if inputs.iter().any(|t| t.is_traced()) {
        if trace::current_trace().is_none() {
            fail(
                Error::new(
                    ErrorKind::LeakedTracer,
                    format!(
                        "`{}`: a traced tensor was used after its #[jit] trace ended; return it from \
                         the jitted function instead of storing it",
                        op.name()
                    ),
                )
                .at(loc),
            );
        }
        return trace::push_node(op, inputs, shape, dtype, loc);
    }
    let result = crate::eager::run(&op, inputs, &shape, dtype).unwrap_or_else(|| {
        let arrays: Vec<Array> = inputs.iter().map(|t| t.array()).collect();
        let refs: Vec<&Array> = arrays.iter().collect();
        interp::eval_op(&op, &refs, &shape, dtype).map(Tensor::from_array)
    });
    match result {
        Ok(t) => t,
        Err(e) => fail(e.at(loc)),
    }
}

fn operand_desc(o: &Operand) -> String {
    match o {
        Operand::Tensor(t) => type_str(t.dtype, &t.shape),
        Operand::Scalar(l) => format!("scalar {}", crate::ir::literal_text(*l)),
    }
}

/// Convert an operand to a tensor of `dtype` and `shape` (cast, broadcast or
/// materialise a constant as needed).
fn coerce(o: Operand, dtype: DType, shape: &[usize], loc: SourceLoc) -> Tensor {
    match o {
        Operand::Scalar(l) => constant(l, shape, dtype, loc),
        Operand::Tensor(t) => {
            let mut t = t.into_owned();
            if t.dtype != dtype {
                let s = t.shape.clone();
                t = apply(Op::Cast(dtype), &[&t], s, dtype, loc);
            }
            if t.shape != shape {
                t = apply(Op::Broadcast, &[&t], shape.to_vec(), dtype, loc);
            }
            t
        }
    }
}

/// `op` on `operands`, each converted to its dtype and broadcast to `shape`. Eagerly (nothing
/// traced) the compiled one-op program broadcasts them itself (`eager::run_operands`: a
/// scalar is a `[]` operand, a smaller tensor is read with stride 0), so no operand is
/// materialised at the full shape, and an operand given away (a temporary) that nobody else
/// holds becomes the result's buffer; traced, or where the interpreter runs the op, each is
/// coerced first.
fn broadcasting<const N: usize>(
    op: Op,
    operands: [(Operand, DType); N],
    shape: Vec<usize>,
    dtype: DType,
    loc: SourceLoc,
) -> Tensor {
    let traced = |o: &Operand| matches!(o, Operand::Tensor(t) if t.is_traced());
    if trace::current_trace().is_some() || operands.iter().any(|(o, _)| traced(o)) {
        let full: Vec<Tensor> = operands
            .into_iter()
            .map(|(o, d)| coerce(o, d, &shape, loc))
            .collect();
        let refs: Vec<&Tensor> = full.iter().collect();
        return apply(op, &refs, shape, dtype, loc);
    }
    let _internal = crate::internal::Scope::enter();
    let small: Vec<eager::Operand> = operands
        .into_iter()
        .map(|(o, d)| match o {
            Operand::Scalar(l) => eager::Operand::Owned(constant(l, &[], d, loc)),
            Operand::Tensor(t) if t.dtype != d => {
                let s = t.shape.clone();
                eager::Operand::Owned(apply(Op::Cast(d), &[&t], s, d, loc))
            }
            Operand::Tensor(Cow::Owned(t)) => eager::Operand::Owned(t),
            Operand::Tensor(Cow::Borrowed(t)) => eager::Operand::Borrowed(t),
        })
        .collect();
    match eager::run_operands(&op, small, &shape, dtype) {
        Ok(r) => r.unwrap_or_else(|e| fail(e.at(loc))),
        // The interpreter runs the op on operands broadcast to its shape.
        Err(small) => {
            let full: Vec<Tensor> = small
                .into_iter()
                .map(|o| {
                    let t = o.into_tensor();
                    if t.shape == shape {
                        t
                    } else {
                        apply(Op::Broadcast, &[&t], shape.clone(), t.dtype, loc)
                    }
                })
                .collect();
            let refs: Vec<&Tensor> = full.iter().collect();
            apply(op, &refs, shape, dtype, loc)
        }
    }
}

pub(crate) fn constant(l: Literal, shape: &[usize], dtype: DType, loc: SourceLoc) -> Tensor {
    if trace::current_trace().is_some() {
        trace::push_const(l, shape.to_vec(), dtype, loc)
    } else {
        Array::try_filled(l.cast(dtype), shape, dtype, "full")
            .map(Tensor::from_array)
            .unwrap_or_else(|e| fail(e.at(loc)))
    }
}

/// The common dtype of operands, by the promotion rules (weak scalars adapt).
pub(crate) fn common_dtype(name: &str, ops: &[&Operand], loc: SourceLoc) -> DType {
    let mut strong: Option<DType> = None;
    for (i, o) in ops.iter().enumerate() {
        if let Operand::Tensor(t) = o {
            if t.weak {
                continue;
            }
            strong = Some(match strong {
                None => t.dtype,
                Some(d) => match DType::promote(d, t.dtype) {
                    Some(p) => p,
                    None => fail(
                        Error::dtype(format!(
                            "`{name}`: cannot combine {} with {}: bool tensors take part in no arithmetic \
                             (cast first, e.g. `.cast(DType::F32)`)",
                            described(&ops[..i], |t| !t.weak),
                            type_str(t.dtype, &t.shape)
                        ))
                        .at(loc),
                    ),
                },
            });
        }
    }
    let weak_tensors: Vec<DType> = ops
        .iter()
        .filter_map(|o| {
            if let Operand::Tensor(t) = o {
                t.weak.then_some(t.dtype)
            } else {
                None
            }
        })
        .collect();
    let mut d = match strong {
        Some(d) => d,
        // Only weak tensors: their common dtype.
        None if !weak_tensors.is_empty() => weak_tensors
            .iter()
            .skip(1)
            .fold(weak_tensors[0], |a, &b| DType::promote(a, b).unwrap_or(a)),
        // Only scalars: the default dtype of their kind.
        None => match ops.iter().find_map(|o| {
            if let Operand::Scalar(l) = o {
                Some(*l)
            } else {
                None
            }
        }) {
            Some(Literal::Float(_)) => DType::F32,
            Some(Literal::Int(_)) => DType::I32,
            _ => DType::Bool,
        },
    };
    // Weak tensors adapt like scalars of their kind.
    for &w in &weak_tensors {
        let as_lit = if w.is_float() {
            Literal::Float(0.0)
        } else {
            Literal::Int(0)
        };
        if let Some(x) = as_lit.weak_dtype(d) {
            d = x;
        }
    }
    for o in ops {
        if let Operand::Scalar(l) = o {
            match l.weak_dtype(d) {
                Some(w) => d = w,
                None => fail(
                    Error::dtype(format!(
                        "`{name}`: a scalar {} cannot stand beside {}",
                        crate::ir::literal_text(*l),
                        ops.iter()
                            .filter_map(|o| match o {
                                Operand::Tensor(t) => Some(type_str(t.dtype, &t.shape)),
                                Operand::Scalar(_) => None,
                            })
                            .collect::<Vec<_>>()
                            .join(" and ")
                    ))
                    .at(loc),
                ),
            }
        }
    }
    d
}

/// The types of the tensor operands `keep` selects, joined by "and" (for messages only: built
/// when an error is reported, never on the way to a result).
fn described(ops: &[&Operand], keep: impl Fn(&Tensor) -> bool) -> String {
    let types: Vec<String> = (ops.iter())
        .filter_map(|o| match o {
            Operand::Tensor(t) if keep(t) => Some(type_str(t.dtype, &t.shape)),
            _ => None,
        })
        .collect();
    types.join(" and ")
}

fn common_shape(name: &str, ops: &[&Operand], loc: SourceLoc) -> Vec<usize> {
    let mut out: Vec<usize> = vec![];
    let labels = ["lhs", "rhs", "third operand"];
    for (i, o) in ops.iter().enumerate() {
        if let Operand::Tensor(t) = o {
            match shape::broadcast(&out, &t.shape) {
                Some(s) => out = s,
                None => fail(
                    Error::shape(format!(
                        "`{name}`: shapes do not broadcast: {} ({}) with {} ({})",
                        described(&ops[..i], |_| true),
                        if ops.len() == 3 {
                            "a and b so far"
                        } else {
                            labels[0]
                        },
                        type_str(t.dtype, &t.shape),
                        labels[i.min(2)]
                    ))
                    .at(loc),
                ),
            }
        }
    }
    // Two shapes that fit can broadcast to one that does not ([n, 1] with
    // [1, n]); the exact byte size is checked where the node is made.
    if shape::checked_bytes(name, &out, DType::Bool).is_err() {
        fail(
            Error::shape(format!(
                "`{name}`: {} broadcast to {out:?}, more elements than fit in memory addresses",
                described(ops, |_| true)
            ))
            .at(loc),
        );
    }
    out
}

pub(crate) fn binary(op: BinaryOp, name: &str, a: Operand, b: Operand, loc: SourceLoc) -> Tensor {
    let dtype = common_dtype(name, &[&a, &b], loc);
    if !op.accepts(dtype) {
        fail(
            Error::dtype(format!(
                "`{name}` does not accept {dtype} operands (lhs {}, rhs {}){}",
                operand_desc(&a),
                operand_desc(&b),
                if dtype.is_int() {
                    "; cast to a float dtype first"
                } else {
                    ""
                }
            ))
            .at(loc),
        );
    }
    let shape = common_shape(name, &[&a, &b], loc);
    let weak = [&a, &b].iter().all(|o| match o {
        Operand::Tensor(t) => t.weak,
        Operand::Scalar(_) => true,
    });
    let r = broadcasting(Op::Binary(op), [(a, dtype), (b, dtype)], shape, dtype, loc);
    if weak {
        r.into_weak()
    } else {
        r
    }
}

pub(crate) fn compare(op: CmpOp, a: Operand, b: Operand, loc: SourceLoc) -> Tensor {
    let name = op.name();
    let dtype = match (&a, &b) {
        (Operand::Tensor(x), Operand::Tensor(y))
            if x.dtype == DType::Bool && y.dtype == DType::Bool =>
        {
            DType::Bool
        }
        _ => common_dtype(name, &[&a, &b], loc),
    };
    if !op.accepts(dtype) {
        fail(
            Error::dtype(format!(
                "`{name}` does not order bool tensors (lhs {}, rhs {}); compare with eq/ne",
                operand_desc(&a),
                operand_desc(&b)
            ))
            .at(loc),
        );
    }
    let shape = common_shape(name, &[&a, &b], loc);
    broadcasting(
        Op::Compare(op),
        [(a, dtype), (b, dtype)],
        shape,
        DType::Bool,
        loc,
    )
}

pub(crate) fn unary(t: &Tensor, op: UnaryOp, loc: SourceLoc) -> Tensor {
    if !op.accepts(t.dtype) {
        let hint = if t.dtype.is_int() {
            ": cast it to a float dtype first (`.cast(DType::F32)`)"
        } else {
            ""
        };
        fail(
            Error::dtype(format!(
                "`{}` does not accept a {} tensor{hint}",
                op.name(),
                type_str(t.dtype, &t.shape)
            ))
            .at(loc),
        );
    }
    let r = apply(Op::Unary(op), &[t], t.shape.clone(), t.dtype, loc);
    if t.weak {
        r.into_weak()
    } else {
        r
    }
}

/// `select(cond, a, b)`: elements of `a` where `cond` is true, else of `b`
/// (NumPy's `where`). `cond` must be `bool`; all three broadcast.
#[track_caller]
pub fn select<'a, 'b, 'c>(
    cond: impl IntoOperand<'a>,
    a: impl IntoOperand<'b>,
    b: impl IntoOperand<'c>,
) -> Tensor {
    let loc = Location::caller();
    let cond = cond.into_operand();
    let (a, b) = (a.into_operand(), b.into_operand());
    let c_ok = match &cond {
        Operand::Tensor(t) => t.dtype == DType::Bool,
        Operand::Scalar(l) => matches!(l, Literal::Bool(_)),
    };
    if !c_ok {
        fail(
            Error::dtype(format!(
                "`select`: the condition must be a bool tensor, found {} (compare first, e.g. `x.gt(0.0)`)",
                operand_desc(&cond)
            ))
            .at(loc),
        );
    }
    let dtype = common_dtype("select", &[&a, &b], loc);
    let shape = common_shape("select", &[&cond, &a, &b], loc);
    // Weakly typed when both values are (as JAX's `where(c, 0.0, -inf)`): the result then
    // takes the type of what it meets, a bf16 score matrix's as a scalar would.
    let weak = [&a, &b].iter().all(|o| match o {
        Operand::Tensor(t) => t.weak,
        Operand::Scalar(_) => true,
    });
    let operands = [(cond, DType::Bool), (a, dtype), (b, dtype)];
    let r = broadcasting(Op::Select, operands, shape, dtype, loc);
    if weak {
        r.into_weak()
    } else {
        r
    }
}

macro_rules! unary_methods {
    ($($(#[$m:meta])* $name:ident => $op:ident;)*) => {
        $( $(#[$m])* #[track_caller] pub fn $name(&self) -> Tensor { unary(self, UnaryOp::$op, Location::caller()) } )*
    };
}

macro_rules! cmp_methods {
    ($($name:ident => $op:ident;)*) => {
        $(
            /// Elementwise comparison, a `bool` tensor (operands broadcast).
            #[track_caller]
            pub fn $name<'a>(&self, other: impl IntoOperand<'a>) -> Tensor {
                compare(CmpOp::$op, self.into_operand(), other.into_operand(), Location::caller())
            }
        )*
    };
}

impl Tensor {
    unary_methods! {
        /// `e^x` (vectorised approximation when compiled; see docs/accuracy.md).
        exp => Exp;
        /// Natural logarithm.
        ln => Ln;
        /// Natural logarithm (alias of `ln`).
        log => Ln;
        /// Hyperbolic tangent.
        tanh => Tanh;
        /// Square root (NaN below 0).
        sqrt => Sqrt;
        /// `1 / sqrt(x)`.
        rsqrt => Rsqrt;
        /// Absolute value (integers wrap at their minimum).
        abs => Abs;
        /// `max(x, 0)`.
        relu => Relu;
        /// `1 / (1 + e^-x)`.
        sigmoid => Sigmoid;
        /// Sine (radians; exact reduction for large arguments).
        sin => Sin;
        /// Cosine (radians; exact reduction for large arguments).
        cos => Cos;
        /// `x * x`.
        square => Square;
        /// `1 / x`.
        recip => Recip;
        /// Logical not of a bool tensor.
        logical_not => Not;
        /// The error function.
        erf => Erf;
        /// Largest integer not above x (float tensors).
        floor => Floor;
        /// `ln(1 + x)`, accurate for x near 0 (where `(x + 1.0).ln()` loses every digit).
        log1p => Log1p;
        /// `e^x - 1`, accurate for x near 0 (where `x.exp() - 1.0` loses every digit).
        expm1 => Expm1;
    }

    cmp_methods! { lt => Lt; le => Le; gt => Gt; ge => Ge; eq => Eq; ne => Ne; }

    /// `x^p` elementwise (float tensors), with `p` a scalar or a tensor.
    #[track_caller]
    pub fn powf<'a>(&self, p: impl IntoOperand<'a>) -> Tensor {
        binary(
            BinaryOp::Pow,
            "powf",
            self.into_operand(),
            p.into_operand(),
            Location::caller(),
        )
    }

    /// Elementwise maximum (operands broadcast).
    #[track_caller]
    pub fn maximum<'a>(&self, other: impl IntoOperand<'a>) -> Tensor {
        binary(
            BinaryOp::Max,
            "maximum",
            self.into_operand(),
            other.into_operand(),
            Location::caller(),
        )
    }

    /// Elementwise minimum (operands broadcast).
    #[track_caller]
    pub fn minimum<'a>(&self, other: impl IntoOperand<'a>) -> Tensor {
        binary(
            BinaryOp::Min,
            "minimum",
            self.into_operand(),
            other.into_operand(),
            Location::caller(),
        )
    }

    /// Logical and of bool tensors.
    #[track_caller]
    pub fn logical_and<'a>(&self, other: impl IntoOperand<'a>) -> Tensor {
        binary(
            BinaryOp::And,
            "logical_and",
            self.into_operand(),
            other.into_operand(),
            Location::caller(),
        )
    }

    /// Logical or of bool tensors.
    #[track_caller]
    pub fn logical_or<'a>(&self, other: impl IntoOperand<'a>) -> Tensor {
        binary(
            BinaryOp::Or,
            "logical_or",
            self.into_operand(),
            other.into_operand(),
            Location::caller(),
        )
    }

    /// `select(cond, a, b)` as an associated function (NumPy's `where`).
    #[track_caller]
    pub fn select<'a, 'b, 'c>(
        cond: impl IntoOperand<'a>,
        a: impl IntoOperand<'b>,
        b: impl IntoOperand<'c>,
    ) -> Tensor {
        select(cond, a, b)
    }

    /// Convert every element to `dtype` (float to int saturates and maps NaN
    /// to 0, like Rust's `as`; anything to bool is `!= 0`). The result is strongly typed,
    /// as JAX's `astype`: casting a weak value to its own dtype fixes its type.
    #[track_caller]
    pub fn cast(&self, dtype: DType) -> Tensor {
        if dtype == self.dtype {
            let mut t = self.clone();
            t.weak = false;
            return t;
        }
        apply(
            Op::Cast(dtype),
            &[self],
            self.shape.clone(),
            dtype,
            Location::caller(),
        )
    }

    /// Broadcast to `shape` by NumPy's rules.
    #[track_caller]
    pub fn broadcast_to(&self, shape: &[usize]) -> Tensor {
        let loc = Location::caller();
        if let Err(e) = shape::checked_bytes("broadcast_to", shape, self.dtype) {
            fail(e.at(loc));
        }
        if !shape::broadcasts_to(&self.shape, shape) {
            fail(
                Error::shape(format!(
                    "`broadcast_to`: {} does not broadcast to {:?}",
                    type_str(self.dtype, &self.shape),
                    shape
                ))
                .at(loc),
            );
        }
        if shape == self.shape.as_slice() {
            return self.clone();
        }
        apply(Op::Broadcast, &[self], shape.to_vec(), self.dtype, loc)
    }
}

/// `where(cond, a, b)`, NumPy's name for [`select`].
#[track_caller]
pub fn where_<'a, 'b, 'c>(
    cond: impl IntoOperand<'a>,
    a: impl IntoOperand<'b>,
    b: impl IntoOperand<'c>,
) -> Tensor {
    select(cond, a, b)
}
