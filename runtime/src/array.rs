//! A concrete array: a shape, a dtype and a shared buffer. It is the value the compiler's
//! lower half computes with: the reference interpreter, the executor and the library steps
//! take and return arrays, and know nothing of tracing. `Tensor` (the user's value, concrete
//! or traced) holds the same three parts when concrete and converts both ways without
//! copying the elements.

use crate::storage::Buffer;
use crate::{shape, DType, Element, Error, Literal};
use std::sync::Arc;

/// A concrete, immutable array of `dtype` elements in row-major order.
#[derive(Clone)]
pub struct Array {
    pub(crate) shape: Vec<usize>,
    pub(crate) dtype: DType,
    pub(crate) buf: Arc<Buffer>,
}

/// An array borrowed from its owner (an `Array`, a concrete `Tensor`): what a call of a
/// compiled program reads its arguments through, so a call copies no shape and takes no
/// reference to a buffer (a buffer its caller gave away has one owner, and may be donated).
#[derive(Clone, Copy)]
pub struct ArrayRef<'a> {
    pub(crate) shape: &'a [usize],
    pub(crate) dtype: DType,
    pub(crate) buf: &'a Arc<Buffer>,
}

impl<'a> ArrayRef<'a> {
    /// The borrowed parts of an array.
    pub fn new(buf: &'a Arc<Buffer>, shape: &'a [usize], dtype: DType) -> ArrayRef<'a> {
        ArrayRef { shape, dtype, buf }
    }

    /// An array of its own sharing the buffer.
    pub fn to_array(self) -> Array {
        Array::new(self.buf.clone(), self.shape.to_vec(), self.dtype)
    }
}

/// The elements of an array as a typed slice.
pub enum View<'a> {
    /// `f32` elements.
    F32(&'a [f32]),
    /// `f64` elements.
    F64(&'a [f64]),
    /// `i32` elements.
    I32(&'a [i32]),
    /// `i64` elements.
    I64(&'a [i64]),
    /// `bool` elements.
    Bool(&'a [bool]),
    /// `bf16` elements.
    BF16(&'a [half::bf16]),
    /// `f16` elements.
    F16(&'a [half::f16]),
}

impl Array {
    /// The array of `shape` and `dtype` stored in `buf` (which holds exactly its bytes).
    pub fn new(buf: Arc<Buffer>, shape: Vec<usize>, dtype: DType) -> Array {
        debug_assert_eq!(buf.len_bytes(), shape::numel(&shape) * dtype.size());
        Array { shape, dtype, buf }
    }

    /// An array of `shape` holding a copy of `data` in row-major order; a shape error when
    /// the lengths differ (`op` names the caller), an out-of-memory error when the
    /// allocator refuses.
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize], op: &str) -> Result<Array, Error> {
        let bytes = shape::checked_bytes(op, shape, T::DTYPE)?;
        let n = bytes / T::DTYPE.size();
        if data.len() != n {
            return Err(Error::shape(format!(
                "{op}: {} elements do not fill shape {:?} ({} elements)",
                data.len(),
                shape,
                n
            )));
        }
        // SAFETY: Element types are plain data (bool is one byte 0/1).
        let bytes = unsafe {
            std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data))
        };
        let buf = Buffer::try_from_bytes(bytes, || {
            format!("`{op}` of {}", crate::error::type_str(T::DTYPE, shape))
        })?;
        Ok(Array::new(Arc::new(buf), shape.to_vec(), T::DTYPE))
    }

    /// An array with every element `l` (converted to `dtype`); a shape or out-of-memory
    /// error naming `op` when it cannot be allocated.
    pub fn try_filled(l: Literal, shape: &[usize], dtype: DType, op: &str) -> Result<Array, Error> {
        let bytes = shape::checked_bytes(op, shape, dtype)?;
        let mut buf = Buffer::try_zeroed(bytes, || {
            format!("`{op}` of {}", crate::error::type_str(dtype, shape))
        })?;
        fill(&mut buf, dtype, l);
        Ok(Array::new(Arc::new(buf), shape.to_vec(), dtype))
    }

    /// `try_filled` of a shape already checked (an IR value's); panics with the
    /// out-of-memory error when the allocator refuses.
    pub fn filled(l: Literal, shape: &[usize], dtype: DType) -> Array {
        Array::try_filled(l, shape, dtype, "const").unwrap_or_else(|e| panic!("{e}"))
    }

    /// The array borrowed.
    pub fn by_ref(&self) -> ArrayRef<'_> {
        ArrayRef::new(&self.buf, &self.shape, self.dtype)
    }

    /// The extent of each dimension.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The buffer holding the elements.
    pub fn buffer(&self) -> &Arc<Buffer> {
        &self.buf
    }

    /// The elements' bytes.
    pub fn bytes(&self) -> &[u8] {
        self.buf.bytes()
    }

    /// The elements as a typed slice.
    pub fn view(&self) -> View<'_> {
        let b = &self.buf;
        match self.dtype {
            DType::F32 => View::F32(b.typed()),
            DType::F64 => View::F64(b.typed()),
            DType::I32 => View::I32(b.typed()),
            DType::I64 => View::I64(b.typed()),
            DType::Bool => View::Bool(b.typed()),
            DType::BF16 => View::BF16(b.typed()),
            DType::F16 => View::F16(b.typed()),
        }
    }

    /// Element `i` as a literal of its own type.
    pub fn literal(&self, i: usize) -> Literal {
        match self.view() {
            View::F32(v) => Literal::Float(v[i] as f64),
            View::F64(v) => Literal::Float(v[i]),
            View::I32(v) => Literal::Int(v[i] as i64),
            View::I64(v) => Literal::Int(v[i]),
            View::Bool(v) => Literal::Bool(v[i]),
            View::BF16(v) => Literal::Float(v[i].to_f64()),
            View::F16(v) => Literal::Float(v[i].to_f64()),
        }
    }

    /// Element `i` as an `f64` (exact for every dtype but i64 beyond 2^53).
    pub fn f64_at(&self, i: usize) -> f64 {
        match self.view() {
            View::F32(v) => v[i] as f64,
            View::F64(v) => v[i],
            View::I32(v) => v[i] as f64,
            View::I64(v) => v[i] as f64,
            View::Bool(v) => v[i] as u8 as f64,
            View::BF16(v) => v[i].to_f64(),
            View::F16(v) => v[i].to_f64(),
        }
    }

    /// Whether element 0 of a bool array is true (a branch's predicate, a loop's condition).
    pub fn is_true(&self) -> Result<bool, Error> {
        match self.view() {
            View::Bool([b, ..]) => Ok(*b),
            _ => Err(Error::verify(format!(
                "a predicate must be a bool scalar, not {}",
                crate::error::type_str(self.dtype, &self.shape)
            ))),
        }
    }
}

/// Every element of a zeroed buffer of `dtype` elements set to `l` (converted to `dtype`):
/// one conversion and a slice fill, nothing written where `l` is all zero bits (the buffer
/// stays untouched, as the allocator gave it).
fn fill(buf: &mut Buffer, dtype: DType, l: Literal) {
    match dtype {
        DType::F32 => {
            let v = l.as_f64(dtype) as f32;
            if v.to_bits() != 0 {
                buf.typed_mut::<f32>().fill(v)
            }
        }
        DType::F64 => {
            let v = l.as_f64(dtype);
            if v.to_bits() != 0 {
                buf.typed_mut::<f64>().fill(v)
            }
        }
        DType::I32 => {
            let v = l.as_i64(dtype) as i32;
            if v != 0 {
                buf.typed_mut::<i32>().fill(v)
            }
        }
        DType::I64 => {
            let v = l.as_i64(dtype);
            if v != 0 {
                buf.typed_mut::<i64>().fill(v)
            }
        }
        DType::Bool => {
            if l.as_i64(dtype) != 0 {
                buf.typed_mut::<bool>().fill(true)
            }
        }
        DType::BF16 => {
            let v = crate::dtype::bf16_of(l.as_f64(dtype));
            if v.to_bits() != 0 {
                buf.typed_mut::<half::bf16>().fill(v)
            }
        }
        DType::F16 => {
            let v = crate::dtype::f16_of(l.as_f64(dtype));
            if v.to_bits() != 0 {
                buf.typed_mut::<half::f16>().fill(v)
            }
        }
    }
}

/// Store `l`, converted to `dtype`, as element `i` of a buffer of `dtype` elements.
pub fn write_literal(buf: &mut Buffer, dtype: DType, i: usize, l: Literal) {
    match dtype {
        DType::F32 => buf.typed_mut::<f32>()[i] = l.as_f64(dtype) as f32,
        DType::F64 => buf.typed_mut::<f64>()[i] = l.as_f64(dtype),
        DType::I32 => buf.typed_mut::<i32>()[i] = l.as_i64(dtype) as i32,
        DType::I64 => buf.typed_mut::<i64>()[i] = l.as_i64(dtype),
        DType::Bool => buf.typed_mut::<bool>()[i] = l.as_i64(dtype) != 0,
        DType::BF16 => buf.typed_mut::<half::bf16>()[i] = crate::dtype::bf16_of(l.as_f64(dtype)),
        DType::F16 => buf.typed_mut::<half::f16>()[i] = crate::dtype::f16_of(l.as_f64(dtype)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_array_holds_the_literal_converted_in_every_element() {
        let cases = [
            (Literal::Float(0.0), DType::F32),
            (Literal::Float(-0.0), DType::F32),
            (Literal::Float(f64::NAN), DType::F32),
            (Literal::Float(0.1), DType::F32),
            (Literal::Float(-0.0), DType::F64),
            (Literal::Float(2.5), DType::F64),
            (Literal::Int(0), DType::I32),
            (Literal::Int(-7), DType::I32),
            (Literal::Int(1 << 40), DType::I64),
            (Literal::Bool(true), DType::Bool),
            (Literal::Bool(false), DType::Bool),
            (Literal::Float(0.1), DType::BF16),
            (Literal::Float(-0.0), DType::BF16),
            (Literal::Float(1e6), DType::F16),
            (Literal::Float(f64::NAN), DType::F16),
            (Literal::Int(-3), DType::F16),
        ];
        for (l, d) in cases {
            let a = Array::filled(l, &[3, 5], d);
            let want = Array::filled(l, &[1], d).literal(0);
            for i in 0..15 {
                let got = a.literal(i);
                let same = match (got, l) {
                    (Literal::Float(g), _) => g.to_bits() == l.as_f64(d).to_bits(),
                    (Literal::Int(g), _) => g == l.as_i64(d),
                    (Literal::Bool(g), _) => g == (l.as_i64(d) != 0),
                };
                assert!(
                    same && format!("{got:?}") == format!("{want:?}"),
                    "{l:?} {d}: {got:?}"
                );
            }
        }
    }
}
