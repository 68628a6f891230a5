//! Operators `+ - * /`, unary `-` and `!` on tensors.
//!
//! Scalars on the right go through ONE generic impl (`S: Scalar`); on the
//! left only `f64` and `i32` have impls. With both `f32` and `f64` on the
//! left an unsuffixed literal (`0.797 * x`) would be ambiguous as soon as a
//! method is called on the result (`(0.797 * x).tanh()`, or
//! `let y = 0.5 * x; y.exp()`: E0282), and likewise an integer literal with
//! both `i32` and `i64` (`(2 * x).exp()`). An `f32` variable `s` goes on the
//! left as `f64::from(s)` (the same weak scalar: literals are kept in `f64`
//! until they meet a tensor), an `i64` one as `Tensor::scalar(n).into_weak()`.

use super::ops::{binary, IntoOperand};
use super::Tensor;
use crate::ir::{BinaryOp, UnaryOp};
use crate::Scalar;
use std::ops::{
    Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Not, Rem, RemAssign, Sub, SubAssign,
};
use std::panic::Location;

macro_rules! binary_operator {
    ($Trait:ident, $method:ident, $AssignTrait:ident, $assign:ident, $op:ident, $name:literal) => {
        impl $Trait<Tensor> for Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Tensor {
                binary(BinaryOp::$op, $name, self.into_operand(), rhs.into_operand(), Location::caller())
            }
        }
        impl $Trait<&Tensor> for Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Tensor {
                binary(BinaryOp::$op, $name, self.into_operand(), rhs.into_operand(), Location::caller())
            }
        }
        impl $Trait<Tensor> for &Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Tensor {
                binary(BinaryOp::$op, $name, self.into_operand(), rhs.into_operand(), Location::caller())
            }
        }
        impl $Trait<&Tensor> for &Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Tensor {
                binary(BinaryOp::$op, $name, self.into_operand(), rhs.into_operand(), Location::caller())
            }
        }
        impl<S: Scalar> $Trait<S> for Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: S) -> Tensor {
                binary(BinaryOp::$op, $name, self.into_operand(), rhs.into_operand(), Location::caller())
            }
        }
        impl<S: Scalar> $Trait<S> for &Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: S) -> Tensor {
                binary(BinaryOp::$op, $name, self.into_operand(), rhs.into_operand(), Location::caller())
            }
        }
        binary_operator!(@left $Trait, $method, $op, $name, f64);
        binary_operator!(@left $Trait, $method, $op, $name, i32);

        impl $AssignTrait<Tensor> for Tensor {
            #[track_caller]
            fn $assign(&mut self, rhs: Tensor) {
                *self = binary(BinaryOp::$op, $name, (&*self).into_operand(), rhs.into_operand(), Location::caller());
            }
        }
        impl $AssignTrait<&Tensor> for Tensor {
            #[track_caller]
            fn $assign(&mut self, rhs: &Tensor) {
                *self = binary(BinaryOp::$op, $name, (&*self).into_operand(), rhs.into_operand(), Location::caller());
            }
        }
        impl<S: Scalar> $AssignTrait<S> for Tensor {
            #[track_caller]
            fn $assign(&mut self, rhs: S) {
                *self = binary(BinaryOp::$op, $name, (&*self).into_operand(), rhs.into_operand(), Location::caller());
            }
        }
    };
    (@left $Trait:ident, $method:ident, $op:ident, $name:literal, $s:ty) => {
        impl $Trait<Tensor> for $s {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Tensor {
                binary(BinaryOp::$op, $name, self.into_operand(), rhs.into_operand(), Location::caller())
            }
        }
        impl $Trait<&Tensor> for $s {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Tensor {
                binary(BinaryOp::$op, $name, self.into_operand(), rhs.into_operand(), Location::caller())
            }
        }
    };
}

binary_operator!(Add, add, AddAssign, add_assign, Add, "add");
binary_operator!(Sub, sub, SubAssign, sub_assign, Sub, "sub");
binary_operator!(Mul, mul, MulAssign, mul_assign, Mul, "mul");
binary_operator!(Div, div, DivAssign, div_assign, Div, "div");
binary_operator!(Rem, rem, RemAssign, rem_assign, Rem, "rem");

impl Neg for Tensor {
    type Output = Tensor;
    #[track_caller]
    fn neg(self) -> Tensor {
        super::ops::unary(&self, UnaryOp::Neg, Location::caller())
    }
}
impl Neg for &Tensor {
    type Output = Tensor;
    #[track_caller]
    fn neg(self) -> Tensor {
        super::ops::unary(self, UnaryOp::Neg, Location::caller())
    }
}
impl Not for Tensor {
    type Output = Tensor;
    #[track_caller]
    fn not(self) -> Tensor {
        super::ops::unary(&self, UnaryOp::Not, Location::caller())
    }
}
impl Not for &Tensor {
    type Output = Tensor;
    #[track_caller]
    fn not(self) -> Tensor {
        super::ops::unary(self, UnaryOp::Not, Location::caller())
    }
}
