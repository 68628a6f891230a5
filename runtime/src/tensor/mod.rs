//! `Tensor`: one type for concrete arrays and traced graph values.
//!
//! A concrete tensor owns (shares) an aligned row-major buffer; a traced one
//! names a node of the trace on this thread. Every operation works on both:
//! with a traced operand it records a node, otherwise it computes eagerly
//! through the reference interpreter.

mod arith;
pub mod attention;
pub mod call;
pub mod composite;
pub mod conv;
mod display;
pub mod interpret;
#[cfg(feature = "ndarray")]
mod ndarray_interop;
pub mod norm;
pub mod ops;
pub mod reduce;
pub mod shape_ops;
pub mod window;

use crate::array::{Array, ArrayRef};
use crate::ir::ValueId;
use crate::storage::Buffer;
use crate::trace::fail;
use crate::{shape, DType, Element, Error, ErrorKind, Literal, Scalar};
use std::panic::Location;
use std::sync::Arc;

/// An n-dimensional array of one dtype: concrete (its elements in memory, computed eagerly)
/// or traced (a value of the program being traced by `#[jit]`, `grad` and the control-flow
/// functions). The same methods work on both; cloning shares the data.
#[derive(Clone)]
pub struct Tensor {
    pub(crate) shape: Vec<usize>,
    pub(crate) dtype: DType,
    pub(crate) data: Data,
    /// Weakly typed, as JAX's Python scalars: a traced `f32`/`f64` parameter
    /// of a `#[jit]` function takes the dtype of the tensors it meets.
    pub(crate) weak: bool,
}

#[derive(Clone)]
pub(crate) enum Data {
    Concrete(Arc<Buffer>),
    Traced { trace: u64, id: ValueId },
}

impl Tensor {
    pub(crate) fn traced(trace: u64, id: ValueId, shape: Vec<usize>, dtype: DType) -> Tensor {
        Tensor {
            shape,
            dtype,
            data: Data::Traced { trace, id },
            weak: false,
        }
    }

    pub(crate) fn from_buffer(buf: Arc<Buffer>, shape: Vec<usize>, dtype: DType) -> Tensor {
        debug_assert_eq!(buf.len_bytes(), shape::numel(&shape) * dtype.size());
        Tensor {
            shape,
            dtype,
            data: Data::Concrete(buf),
            weak: false,
        }
    }

    /// The concrete tensor holding `a` (sharing its buffer).
    pub fn from_array(a: Array) -> Tensor {
        Tensor::from_buffer(a.buf, a.shape, a.dtype)
    }

    /// A concrete tensor's array (sharing its buffer); `None` for a traced tensor.
    pub fn to_array(&self) -> Option<Array> {
        self.buffer()
            .map(|b| Array::new(b.clone(), self.shape.clone(), self.dtype))
    }

    /// A concrete tensor borrowed as an array; `None` for a traced tensor.
    pub fn array_ref(&self) -> Option<ArrayRef<'_>> {
        self.buffer()
            .map(|b| ArrayRef::new(b, &self.shape, self.dtype))
    }

    /// `to_array`, taking the tensor (its buffer keeps its owners: a tensor given away
    /// gives its array away, so a compiled program may donate the buffer).
    pub fn into_array(self) -> Option<Array> {
        match self.data {
            Data::Concrete(buf) => Some(Array::new(buf, self.shape, self.dtype)),
            Data::Traced { .. } => None,
        }
    }

    /// The array of a tensor known to be concrete (an eager operand).
    pub(crate) fn array(&self) -> Array {
        self.to_array().expect("a concrete tensor")
    }

    /// A tensor of `shape` holding `data` in row-major order.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor, Error> {
        Tensor::from_slice(&data, shape)
    }

    /// Like `from_vec`, copying from a slice.
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<Tensor, Error> {
        Array::from_slice(data, shape, "from_vec").map(Tensor::from_array)
    }

    /// A 1-D tensor from a slice (`[n]`).
    #[track_caller]
    pub fn vector<T: Element>(data: &[T]) -> Tensor {
        let loc = Location::caller();
        Tensor::from_slice(data, &[data.len()]).unwrap_or_else(|e| fail(e.at(loc)))
    }

    /// A tensor of shape `[]` holding `v`.
    pub fn scalar<T: Element>(v: T) -> Tensor {
        Tensor::from_slice(&[v], &[]).expect("one element")
    }

    /// A tensor of zeros; an error (`Shape`) when the shape's byte size does
    /// not fit in memory addresses, or (`OutOfMemory`) when it cannot be
    /// allocated.
    pub fn try_zeros(shape: &[usize], dtype: DType) -> Result<Tensor, Error> {
        if crate::trace::current_trace().is_some() {
            return Tensor::try_full(shape, 0, dtype);
        }
        Tensor::try_zeros_for("zeros", shape, dtype)
    }

    fn try_zeros_for(op: &str, shape: &[usize], dtype: DType) -> Result<Tensor, Error> {
        let bytes = shape::checked_bytes(op, shape, dtype)?;
        let buf = Buffer::try_zeroed(bytes, || {
            format!("`{op}` of {}", crate::error::type_str(dtype, shape))
        })?;
        Ok(Tensor::from_buffer(Arc::new(buf), shape.to_vec(), dtype))
    }

    /// A tensor of zeros. Panics with `try_zeros`'s error (inside a `#[jit]`
    /// body: `try_call` returns it).
    #[track_caller]
    pub fn zeros(shape: &[usize], dtype: DType) -> Tensor {
        let loc = Location::caller();
        Tensor::try_zeros(shape, dtype).unwrap_or_else(|e| fail(e.at(loc)))
    }

    /// A tensor of ones.
    #[track_caller]
    pub fn ones(shape: &[usize], dtype: DType) -> Tensor {
        Tensor::full(shape, 1, dtype)
    }

    /// A tensor of `shape` with every element `value` converted to `dtype`;
    /// errors as `try_zeros`.
    pub fn try_full<S: Scalar>(shape: &[usize], value: S, dtype: DType) -> Result<Tensor, Error> {
        // Inside a trace a constant node (no captured buffer, and passes see its value:
        // `ones(..).tril(0)` is recognised as a causal mask), as `arange` is an iota.
        if crate::trace::current_trace().is_some() {
            shape::checked_bytes("full", shape, dtype)?;
            return Ok(crate::trace::push_const(
                value.literal(),
                shape.to_vec(),
                dtype,
                Location::caller(),
            ));
        }
        Array::try_filled(value.literal().cast(dtype), shape, dtype, "full").map(Tensor::from_array)
    }

    /// A tensor of `shape` with every element `value` converted to `dtype`.
    /// Panics with `try_full`'s error (inside a `#[jit]` body: `try_call`
    /// returns it).
    #[track_caller]
    pub fn full<S: Scalar>(shape: &[usize], value: S, dtype: DType) -> Tensor {
        let loc = Location::caller();
        Tensor::try_full(shape, value, dtype).unwrap_or_else(|e| fail(e.at(loc)))
    }

    /// `[0, 1, ..., n-1]` as a 1-D tensor of `dtype` (an `iota` node when
    /// tracing, so it costs no captured buffer).
    #[track_caller]
    pub fn arange(n: usize, dtype: DType) -> Tensor {
        if crate::trace::current_trace().is_some() && dtype != DType::Bool {
            return Tensor::iota(&[n], 0, dtype);
        }
        let loc = Location::caller();
        let mut t =
            Tensor::try_zeros_for("arange", &[n], dtype).unwrap_or_else(|e| fail(e.at(loc)));
        t.fill_with(|i| Literal::Int(i as i64));
        t
    }

    /// `start, start+step, ...` up to (excluding) `end`, as NumPy's `arange`.
    pub fn arange_step(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor, Error> {
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !end.is_finite() {
            return Err(Error::argument(format!(
                "arange: bad range {start}..{end} step {step}"
            )));
        }
        let count = ((end - start) / step).ceil().max(0.0);
        // `as usize` saturates: a count beyond usize (or infinite: 1e300 /
        // 1e-300) must be an error, not usize::MAX elements.
        if count >= usize::MAX as f64 {
            return Err(Error::shape(format!(
                "`arange`: {start:?}..{end:?} step {step:?} has {count:e} elements of {dtype}, more \
                 than fit in memory addresses"
            )));
        }
        let n = count as usize;
        let mut t = Tensor::try_zeros_for("arange", &[n], dtype)
            .map_err(|e| e.prefixed(&format!("range {start:?}..{end:?} step {step:?}")))?;
        t.fill_with(|i| Literal::Float(start + step * i as f64));
        Ok(t)
    }

    fn fill_with(&mut self, f: impl Fn(usize) -> Literal) {
        let Data::Concrete(buf) = &mut self.data else {
            unreachable!()
        };
        let buf = Arc::get_mut(buf).expect("fresh buffer");
        for i in 0..shape::numel(&self.shape) {
            crate::array::write_literal(buf, self.dtype, i, f(i));
        }
    }

    /// The same tensor marked weakly typed (see `Tensor::is_weak`).
    pub fn into_weak(mut self) -> Tensor {
        self.weak = true;
        self
    }

    /// Whether the tensor is weakly typed: in an op with strongly typed
    /// tensors it takes their dtype, like a Rust scalar literal.
    pub fn is_weak(&self) -> bool {
        self.weak
    }

    /// The extent of each dimension.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The number of dimensions (0 for a scalar).
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        shape::numel(&self.shape)
    }

    /// Whether it has no elements (a dimension of extent 0).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the elements (`len() * dtype().size()`).
    pub fn size_bytes(&self) -> usize {
        self.len() * self.dtype.size()
    }

    /// Whether it is a traced value (inside `#[jit]`, `grad` or a control-flow body) rather
    /// than concrete data.
    pub fn is_traced(&self) -> bool {
        matches!(self.data, Data::Traced { .. })
    }

    /// The buffer of a concrete tensor.
    pub(crate) fn buffer(&self) -> Option<&Arc<Buffer>> {
        match &self.data {
            Data::Concrete(b) => Some(b),
            Data::Traced { .. } => None,
        }
    }

    /// The address of a concrete tensor's storage (for checking aliasing and
    /// donation: two tensors with the same address share their buffer).
    pub fn storage_addr(&self) -> Option<usize> {
        self.buffer().map(|b| b.as_ptr() as usize)
    }

    /// Whether two tensors share one buffer (clones do).
    pub fn shares_buffer_with(&self, other: &Tensor) -> bool {
        match (self.buffer(), other.buffer()) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    #[track_caller]
    fn concrete_buffer(&self, what: &str) -> Result<&Arc<Buffer>, Error> {
        let loc = std::panic::Location::caller();
        self.buffer().ok_or_else(|| {
            Error::new(
                ErrorKind::TracedValue,
                format!(
                    "{what}: this tensor {} is traced inside a #[jit] function, so it has no value yet. \
                     Return it from the jitted function and read the result, or compute with tensor \
                     operations (use `select` instead of branching on its value)",
                    crate::error::type_str(self.dtype, &self.shape)
                ),
            )
            .at(loc)
        })
    }

    /// The elements in row-major order. Errors when `T` is not the tensor's
    /// dtype, or the tensor is traced.
    #[track_caller]
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, Error> {
        Ok(self.typed_slice::<T>("to_vec")?.to_vec())
    }

    /// The elements in row-major order, borrowed from the tensor's buffer (no copy: a
    /// concrete tensor is always one contiguous row-major block). Errors as `to_vec`.
    #[track_caller]
    pub fn as_slice<T: Element>(&self) -> Result<&[T], Error> {
        self.typed_slice::<T>("as_slice")
    }

    /// The concrete elements as `T`; errors name `what` (`to_vec`, `as_slice`).
    #[track_caller]
    fn typed_slice<T: Element>(&self, what: &str) -> Result<&[T], Error> {
        let buf = self.concrete_buffer(what)?;
        if T::DTYPE != self.dtype {
            return Err(Error::dtype(format!(
                "{what}::<{}>() on a tensor of dtype {}; use {what}::<{}>() or cast first",
                T::DTYPE,
                self.dtype,
                self.dtype
            ))
            .at(std::panic::Location::caller()));
        }
        Ok(buf.typed::<T>())
    }

    /// The single element of a one-element tensor.
    #[track_caller]
    pub fn item<T: Element>(&self) -> Result<T, Error> {
        let buf = self.concrete_buffer("item")?;
        if self.len() != 1 {
            return Err(Error::shape(format!(
                "item() needs a tensor with one element, this one is {}",
                crate::error::type_str(self.dtype, &self.shape)
            ))
            .at(std::panic::Location::caller()));
        }
        if T::DTYPE != self.dtype {
            return Err(Error::dtype(format!(
                "item::<{}>() on a tensor of dtype {}",
                T::DTYPE,
                self.dtype
            ))
            .at(std::panic::Location::caller()));
        }
        Ok(buf.typed::<T>()[0])
    }

    /// Element `i` (row-major) of a concrete tensor, as an `f64`.
    pub(crate) fn get_f64(&self, i: usize) -> f64 {
        self.array().f64_at(i)
    }
}
