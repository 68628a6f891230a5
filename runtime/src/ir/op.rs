//! The operations of the IR and their typing rules.

use crate::{DType, Literal};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Exp,
    Ln,
    Tanh,
    Sqrt,
    Rsqrt,
    Abs,
    Relu,
    Sigmoid,
    Sin,
    Cos,
    Square,
    Recip,
    /// Logical not of a `bool` tensor.
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    /// Float division; on integers truncating division with `x / 0 = -1`
    /// and `MIN / -1 = MIN` (wrapping), as XLA defines it.
    Div,
    Max,
    Min,
    /// IEEE `pow` (floats only).
    Pow,
    /// Logical and / or of `bool` tensors.
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// The k-th argument of the traced function.
    Param(usize),
    /// A tensor filled with one value (its shape is the node's shape).
    Const(Literal),
    /// The k-th concrete tensor the traced body closed over; the executable
    /// holds it by reference (`Arc`), never copied into code.
    Captured(usize),
    Unary(UnaryOp),
    Binary(BinaryOp),
    Compare(CmpOp),
    /// `select(cond, a, b)`: `a` where `cond`, else `b`.
    Select,
    Cast(DType),
    /// NumPy broadcast of the input to the node's shape.
    Broadcast,
}

impl UnaryOp {
    pub const ALL: [UnaryOp; 14] = [
        UnaryOp::Neg,
        UnaryOp::Exp,
        UnaryOp::Ln,
        UnaryOp::Tanh,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Abs,
        UnaryOp::Relu,
        UnaryOp::Sigmoid,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Square,
        UnaryOp::Recip,
        UnaryOp::Not,
    ];

    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Exp => "exp",
            UnaryOp::Ln => "ln",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Abs => "abs",
            UnaryOp::Relu => "relu",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Square => "square",
            UnaryOp::Recip => "recip",
            UnaryOp::Not => "not",
        }
    }

    /// Which operand dtypes the op accepts.
    pub fn accepts(self, d: DType) -> bool {
        match self {
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Square => d.is_float() || d.is_int(),
            UnaryOp::Not => d == DType::Bool,
            _ => d.is_float(),
        }
    }
}

impl BinaryOp {
    pub const ALL: [BinaryOp; 9] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Max,
        BinaryOp::Min,
        BinaryOp::Pow,
        BinaryOp::And,
        BinaryOp::Or,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::Pow => "pow",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
        }
    }

    pub fn accepts(self, d: DType) -> bool {
        match self {
            BinaryOp::Pow => d.is_float(),
            BinaryOp::And | BinaryOp::Or => d == DType::Bool,
            _ => d.is_float() || d.is_int(),
        }
    }
}

impl CmpOp {
    pub const ALL: [CmpOp; 6] = [CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge, CmpOp::Eq, CmpOp::Ne];

    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
        }
    }

    pub fn accepts(self, d: DType) -> bool {
        matches!(self, CmpOp::Eq | CmpOp::Ne) || d != DType::Bool
    }
}

impl Op {
    /// The op's name as written in the IR text.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Param(_) => "param",
            Op::Const(_) => "const",
            Op::Captured(_) => "captured",
            Op::Unary(u) => u.name(),
            Op::Binary(b) => b.name(),
            Op::Compare(c) => c.name(),
            Op::Select => "select",
            Op::Cast(_) => "cast",
            Op::Broadcast => "broadcast",
        }
    }

    /// Ops computed element by element (fusible into one loop).
    pub fn is_elementwise(&self) -> bool {
        matches!(self, Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Select | Op::Cast(_))
    }
}
