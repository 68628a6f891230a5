//! Counter-based pseudo-random numbers, as `jax.random`: random values are pure
//! functions of a [`Key`], so they trace, compile and differentiate (as constants)
//! like any other op, and give the same bits eagerly and inside `#[jit]`.
//! (The example is tested in the `jitfuse` crate's documentation, which has `#[jit]`.)
//!
//! ```text
//! use jitfuse::prelude::*;
//! use jitfuse::random::{self, Key};
//!
//! let key = Key::new(42);
//! let [k1, k2] = key.split(2).try_into().unwrap();
//! let x = random::normal(&k1, &[2, 3], DType::F32);
//! let u = random::uniform(&k2, &[4], DType::F64, -1.0, 1.0);
//! assert_eq!(x.shape(), &[2, 3]);
//! assert!(u.to_vec::<f64>().unwrap().iter().all(|v| (-1.0..1.0).contains(v)));
//!
//! #[jit]
//! fn noisy(x: &Tensor, key: &Key) -> Tensor {
//!     x + 0.1 * random::normal(key, x.shape(), x.dtype())
//! }
//! // The key is a traced argument: a new key is a new value, not a recompile.
//! let y1 = noisy(&x, &Key::new(1));
//! let y2 = noisy(&x, &Key::new(2));
//! assert_eq!(noisy::cache_stats().misses, 1);
//! assert_ne!(y1.to_vec::<f32>().unwrap(), y2.to_vec::<f32>().unwrap());
//! ```
//!
//! - **The key** is a tensor `i32[2]`: two 32-bit words of Threefry key (their
//!   bits; `Key::new(seed)` puts `seed >> 32` and the low 32 bits there, as
//!   `jax.random.PRNGKey`). `Key` implements [`Tree`], so it is a `#[jit]`
//!   parameter (`key: &Key` borrowed, `key: Key` owned) and result like any tree
//!   of tensors: the key's *value* is data, a new key does not recompile.
//! - **The generator** is Threefry-2x32 with 20 rounds ([`threefry2x32`], checked
//!   against Random123's known-answer vectors). Element `i` of a result (its flat
//!   row-major index) comes from the block of counter `(i >> 32, i & 0xffffffff)`,
//!   so a value depends on the key and its index only, never on how the work is
//!   split. The bits are those of JAX's partitionable Threefry
//!   (`jax_threefry_partitionable`, JAX's default since 0.5): `bits` is `x0 ^ x1`
//!   (32 bits) or `x0 << 32 | x1` (64), `split(n)[j]` is the block of `(0, j)`, and
//!   `fold_in(d)` the block of `(0, d)`.
//! - **Floats**: `uniform` takes the top 23 (f32) or 52 (f64) bits as a mantissa in
//!   `[0, 1)`, then `u * (hi - lo) + lo` in the dtype, at least `lo` (JAX's
//!   formula, bit for bit). `normal` is JAX's inverse CDF: `u` uniform in
//!   `[nextafter(-1, 0), 1)`, then `sqrt(2) * erfinv(u)`, with erfinv computed to
//!   f64 accuracy ([`erfinv`]) and rounded once to the dtype (JAX evaluates an f32
//!   polynomial, so normals may differ from JAX's in the last bits; bits, uniforms
//!   and bernoulli masks do not).
//! - **Eager and jitted agree bit for bit**: every `random_*` IR node is evaluated by
//!   the same Rust function ([`native`]), in the interpreter and in compiled
//!   programs (a library step writing into its planned buffer, no allocation on
//!   cached calls).
//! - **Gradients** through random values are zero: they depend on the key only.
//!   Using one key twice gives the same numbers (the compiler may merge the two);
//!   split or fold in for independent streams.

/// The kernels, filed with the library steps that run them.
pub use crate::library::random::native;

pub use crate::library::random::erfinv::erfinv;
pub use crate::library::random::threefry::{threefry2x32, threefry2x32_rounds};

use crate::error::type_str;
use crate::ir::{CmpOp, Op, RandomOp};
use crate::tensor::ops::{apply, compare, IntoOperand};
use crate::trace::{self, fail};
use crate::{DType, Error, SourceLoc, Tensor, Tree};
use std::panic::Location;

/// A random key: an `i32[2]` tensor holding two 32-bit words of Threefry key.
/// Concrete or traced like any tensor; a `Tree` of one leaf, so `#[jit]`
/// functions take and return keys.
#[derive(Clone, Debug)]
pub struct Key {
    data: Tensor,
}

/// Integer data that `Key::fold_in` mixes into a key: `u32`, `i32` (its bits),
/// or an integer tensor of shape `[]` (traced or not, e.g. a loop counter; `i64`
/// values are truncated to their low 32 bits).
pub trait FoldInData {
    /// The data as a `u32`-bits `i32` tensor (`loc`: the caller, for errors).
    fn into_data(self, loc: SourceLoc) -> Tensor;
}

impl FoldInData for u32 {
    fn into_data(self, _: SourceLoc) -> Tensor {
        Tensor::scalar(self as i32)
    }
}

impl FoldInData for i32 {
    fn into_data(self, _: SourceLoc) -> Tensor {
        Tensor::scalar(self)
    }
}

impl FoldInData for &Tensor {
    fn into_data(self, loc: SourceLoc) -> Tensor {
        if !self.shape().is_empty() || !self.dtype().is_int() {
            fail(
                Error::dtype(format!(
                    "`fold_in`: the data must be an integer scalar (i32[] or i64[]), not {}",
                    type_str(self.dtype(), self.shape())
                ))
                .at(loc),
            );
        }
        if self.dtype() == DType::I32 {
            self.clone()
        } else {
            apply(Op::Cast(DType::I32), &[self], vec![], DType::I32, loc)
        }
    }
}

impl FoldInData for Tensor {
    fn into_data(self, loc: SourceLoc) -> Tensor {
        (&self).into_data(loc)
    }
}

impl Key {
    /// The key of a seed, as `jax.random.PRNGKey(seed)`: words `seed >> 32` and
    /// `seed & 0xffffffff`.
    pub fn new(seed: u64) -> Key {
        let words = [(seed >> 32) as u32 as i32, seed as u32 as i32];
        Key {
            data: Tensor::vector(&words),
        }
    }

    /// A key from its data, an `i32[2]` tensor (what [`Key::data`] gives back).
    pub fn from_data(data: Tensor) -> Result<Key, Error> {
        if data.dtype() != DType::I32 || data.shape() != [2] {
            return Err(Error::dtype(format!(
                "a random key is an i32[2] tensor, not {}",
                type_str(data.dtype(), data.shape())
            )));
        }
        Ok(Key { data })
    }

    /// The key's data: an `i32[2]` tensor (the two key words' bits).
    pub fn data(&self) -> &Tensor {
        &self.data
    }

    /// The key's data, taken.
    pub fn into_data(self) -> Tensor {
        self.data
    }

    /// The two key words (a concrete key only: an error while traced).
    pub fn words(&self) -> Result<[u32; 2], Error> {
        let v = self.data.to_vec::<i32>()?;
        Ok([v[0] as u32, v[1] as u32])
    }

    /// `n` new keys, independent of each other and of `self` (as `jax.random.split`).
    #[track_caller]
    pub fn split(&self, n: usize) -> Vec<Key> {
        let loc = Location::caller();
        let all = self.split_at(n, loc);
        (0..n)
            .map(|j| Key {
                data: all
                    .slice_axis(0, j as isize, j as isize + 1, 1)
                    .reshape(&[2]),
            })
            .collect()
    }

    /// The data of `split(n)` as one `i32[n, 2]` tensor (row `j` is key `j`).
    #[track_caller]
    pub fn split_data(&self, n: usize) -> Tensor {
        self.split_at(n, Location::caller())
    }

    fn split_at(&self, n: usize, loc: SourceLoc) -> Tensor {
        random_node(RandomOp::Split, &[&self.data], vec![n, 2], DType::I32, loc)
    }

    /// A new key from this one and `data` (as `jax.random.fold_in`): equal to
    /// `split(n)[data]` for any `n > data`, and cheap for one key derived from,
    /// e.g., a step number. `data` may be traced (a loop counter).
    #[track_caller]
    pub fn fold_in(&self, data: impl FoldInData) -> Key {
        let loc = Location::caller();
        let d = data.into_data(loc);
        Key {
            data: random_node(
                RandomOp::FoldIn,
                &[&self.data, &d],
                vec![2],
                DType::I32,
                loc,
            ),
        }
    }
}

impl Tree for Key {
    fn collect_leaves(&self, out: &mut Vec<Tensor>) {
        out.push(self.data.clone());
    }
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self {
        Key {
            data: leaves
                .next()
                .expect("tree has fewer leaves than its structure"),
        }
    }
}

/// Random bits of `shape`: `dtype` `I32` (32 bits per element, a `u32`'s bits) or
/// `I64` (64 bits), as `jax.random.bits`.
#[track_caller]
pub fn bits(key: &Key, shape: &[usize], dtype: DType) -> Tensor {
    let loc = Location::caller();
    if !matches!(dtype, DType::I32 | DType::I64) {
        fail(Error::dtype(format!("`random::bits`: dtype {dtype}, not i32 or i64")).at(loc));
    }
    random_node(RandomOp::Bits, &[&key.data], shape.to_vec(), dtype, loc)
}

/// Uniform values in `[lo, hi)` of `shape`, of a float dtype (as `jax.random.uniform`; the
/// bounds are rounded to `dtype`, and a value may round up to `hi` when `hi - lo`
/// is large).
#[track_caller]
pub fn uniform(key: &Key, shape: &[usize], dtype: DType, lo: f64, hi: f64) -> Tensor {
    let loc = Location::caller();
    float_dtype("uniform", dtype, loc);
    if !lo.is_finite() || !hi.is_finite() {
        fail(
            Error::shape(format!(
                "`random::uniform`: bounds {lo} and {hi} must be finite"
            ))
            .at(loc),
        );
    }
    half_via_f32(dtype, loc, |d| {
        random_node(
            RandomOp::Uniform { lo, hi },
            &[&key.data],
            shape.to_vec(),
            d,
            loc,
        )
    })
}

/// A random float tensor of `dtype`: drawn in `f32` and rounded for the 16-bit floats (a
/// bf16 or f16 draw is the f32 draw of the same key, rounded once).
fn half_via_f32(dtype: DType, loc: SourceLoc, draw: impl FnOnce(DType) -> Tensor) -> Tensor {
    if !dtype.is_half() {
        return draw(dtype);
    }
    let x = draw(DType::F32);
    let shape = x.shape().to_vec();
    if trace::current_trace().is_some() {
        trace::push_node(Op::Cast(dtype), &[&x], shape, dtype, loc)
    } else {
        apply(Op::Cast(dtype), &[&x], shape, dtype, loc)
    }
}

/// Standard normal values of `shape`, of a float dtype (as `jax.random.normal`: the
/// inverse CDF of a uniform value). Scale and shift them for other means and
/// deviations: `mean + std * normal(..)`.
#[track_caller]
pub fn normal(key: &Key, shape: &[usize], dtype: DType) -> Tensor {
    let loc = Location::caller();
    float_dtype("normal", dtype, loc);
    half_via_f32(dtype, loc, |d| {
        random_node(RandomOp::Normal, &[&key.data], shape.to_vec(), d, loc)
    })
}

/// A `bool` tensor of `shape`, each element `true` with probability `p`: an f32
/// `uniform(key, shape, F32, 0, 1) < p` (as `jax.random.bernoulli`). `p` is a Rust
/// number or a tensor that broadcasts to `shape` (traced or not).
#[track_caller]
pub fn bernoulli<'a>(key: &Key, p: impl IntoOperand<'a>, shape: &[usize]) -> Tensor {
    let loc = Location::caller();
    let u = random_node(
        RandomOp::Uniform { lo: 0.0, hi: 1.0 },
        &[&key.data],
        shape.to_vec(),
        DType::F32,
        loc,
    );
    compare(CmpOp::Lt, u.into_operand(), p.into_operand(), loc)
}

/// `x` with each element zeroed with probability `rate` and the others scaled by
/// `1 / (1 − rate)` (inverted dropout, as flax's `Dropout`), the mask drawn from `key`;
/// `rate = 0` returns `x`. The same key gives the same mask eagerly and jitted.
#[track_caller]
pub fn dropout(key: &Key, x: &Tensor, rate: f64) -> Tensor {
    let loc = Location::caller();
    if !(0.0..1.0).contains(&rate) || !x.dtype().is_float() {
        fail(
            Error::argument(format!(
                "`dropout`: the rate {rate} must be in [0, 1) and the input a float tensor, not {}",
                crate::error::type_str(x.dtype(), x.shape())
            ))
            .at(loc),
        );
    }
    if rate == 0.0 {
        return x.clone();
    }
    let keep = bernoulli(key, 1.0 - rate, x.shape());
    crate::tensor::ops::select(&keep, x * (1.0 / (1.0 - rate)), 0.0)
}

fn float_dtype(op: &str, dtype: DType, loc: SourceLoc) {
    if !dtype.is_float() {
        fail(
            Error::dtype(format!(
                "`random::{op}` gives floats: dtype {dtype}, not a float (cast the result)"
            ))
            .at(loc),
        );
    }
}

/// Record a `random_*` node (while tracing, also for a concrete key: the program
/// computes it) or evaluate it now.
fn random_node(
    op: RandomOp,
    inputs: &[&Tensor],
    shape: Vec<usize>,
    dtype: DType,
    loc: SourceLoc,
) -> Tensor {
    if trace::current_trace().is_some() {
        trace::push_node(Op::Random(op), inputs, shape, dtype, loc)
    } else {
        apply(Op::Random(op), inputs, shape, dtype, loc)
    }
}
