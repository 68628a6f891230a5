//! Conversions between a jitted function's return type and the flat list of
//! output tensors of its program.

use crate::{Error, Tensor};

/// A return type of a `#[jit]` function: `Tensor` or a tuple of them.
pub trait IntoOutputs {
    /// The tensors, in order.
    fn into_outputs(self) -> Vec<Tensor>;
}

/// Rebuilds the return value from the program's outputs.
pub trait FromOutputs: Sized {
    /// How many tensors the type holds.
    const COUNT: usize;
    /// The value of `outs` (exactly `COUNT` tensors).
    fn from_outputs(outs: Vec<Tensor>) -> Result<Self, Error>;
}

impl IntoOutputs for Tensor {
    fn into_outputs(self) -> Vec<Tensor> {
        vec![self]
    }
}

impl FromOutputs for Tensor {
    const COUNT: usize = 1;
    fn from_outputs(mut outs: Vec<Tensor>) -> Result<Self, Error> {
        check(outs.len(), 1)?;
        Ok(outs.pop().unwrap())
    }
}

fn check(got: usize, want: usize) -> Result<(), Error> {
    if got != want {
        return Err(Error::argument(format!(
            "program returned {got} outputs, the function {want}"
        )));
    }
    Ok(())
}

macro_rules! tensor_ty {
    ($v:ident) => {
        Tensor
    };
}

macro_rules! tuple_outputs {
    ($n:literal: $($v:ident),*) => {
        impl IntoOutputs for ($(tensor_ty!($v),)*) {
            fn into_outputs(self) -> Vec<Tensor> {
                let ($($v,)*) = self;
                vec![$($v),*]
            }
        }
        impl FromOutputs for ($(tensor_ty!($v),)*) {
            const COUNT: usize = $n;
            fn from_outputs(outs: Vec<Tensor>) -> Result<Self, Error> {
                check(outs.len(), $n)?;
                let mut it = outs.into_iter();
                $(let $v = it.next().unwrap();)*
                Ok(($($v,)*))
            }
        }
    };
}

tuple_outputs!(1: a);
tuple_outputs!(2: a, b);
tuple_outputs!(3: a, b, c);
tuple_outputs!(4: a, b, c, d);
tuple_outputs!(5: a, b, c, d, e);
tuple_outputs!(6: a, b, c, d, e, f);
tuple_outputs!(7: a, b, c, d, e, f, g);
tuple_outputs!(8: a, b, c, d, e, f, g, h);
