//! The values of the `random_*` ops, element by element: the one function the
//! interpreter (eager calls, the oracle) and compiled programs (a library step writing
//! into its planned buffer) both call, so eager and jitted results are the same bits.
//!
//! Element `i` (the flat row-major index of the result) depends on the key and `i`
//! only: it is computed from the Threefry-2x32 block of counter `(i >> 32, i)`, as
//! JAX's partitionable Threefry (`jax_threefry_partitionable`, the default since
//! JAX 0.5) derives it. Chunks are computed in parallel for large results; the
//! split cannot change a value.

use super::erfinv::erfinv;
use super::threefry::{block, threefry2x32};
use crate::ir::RandomOp;
use rayon::prelude::*;

/// A contiguous result buffer of one of the dtypes a random op gives.
pub enum Out<'a> {
    /// An f32 buffer.
    F32(&'a mut [f32]),
    /// An f64 buffer.
    F64(&'a mut [f64]),
    /// An i32 buffer.
    I32(&'a mut [i32]),
    /// An i64 buffer.
    I64(&'a mut [i64]),
}

/// The key words of a key tensor's two `i32` elements.
pub fn key_words(k0: i32, k1: i32) -> [u32; 2] {
    [k0 as u32, k1 as u32]
}

/// Write the result of `op` for `key` (and `data`, the operand of `fold_in`) into `out`.
/// Fails (naming the op) on a dtype the op does not give; the verifier rejects those.
pub fn fill(op: RandomOp, key: [u32; 2], data: u32, out: Out) -> Result<(), String> {
    match (op, out) {
        (RandomOp::Bits, Out::I32(o)) => par_fill(o, |i| bits32(key, i) as i32),
        (RandomOp::Bits, Out::I64(o)) => par_fill(o, |i| bits64(key, i) as i64),
        (RandomOp::Uniform { lo, hi }, Out::F32(o)) => {
            let (lo, hi) = (lo as f32, hi as f32);
            par_fill(o, |i| uniform_f32(bits32(key, i), lo, hi))
        }
        (RandomOp::Uniform { lo, hi }, Out::F64(o)) => {
            par_fill(o, |i| uniform_f64(bits64(key, i), lo, hi))
        }
        (RandomOp::Normal, Out::F32(o)) => par_fill(o, |i| normal_f32(bits32(key, i))),
        (RandomOp::Normal, Out::F64(o)) => par_fill(o, |i| normal_f64(bits64(key, i))),
        (RandomOp::Split, Out::I32(o)) => {
            par_fill(o, |i| block(key, i / 2)[(i % 2) as usize] as i32)
        }
        (RandomOp::FoldIn, Out::I32(o)) => {
            let k = threefry2x32(key, [0, data]);
            for (w, v) in o.iter_mut().zip(k) {
                *w = v as i32;
            }
        }
        (op, _) => return Err(format!("`{}` has no such result dtype", op.name())),
    }
    Ok(())
}

/// 32 random bits of element `i`: the xor of its block's words.
#[inline]
fn bits32(key: [u32; 2], i: u64) -> u32 {
    let [a, b] = block(key, i);
    a ^ b
}

/// 64 random bits of element `i`: its block's words, high then low.
#[inline]
fn bits64(key: [u32; 2], i: u64) -> u64 {
    let [a, b] = block(key, i);
    (a as u64) << 32 | b as u64
}

/// Uniform in `[lo, hi)` from 32 bits, as JAX: the top 23 bits as a mantissa
/// (`(bits >> 9) * 2^-23`, exactly JAX's `bitcast(bits >> 9 | 1.0) - 1`), scaled and
/// shifted in f32, and kept at or above `lo`.
#[inline]
fn uniform_f32(bits: u32, lo: f32, hi: f32) -> f32 {
    let u = (bits >> 9) as f32 * f32::EPSILON;
    lo.max(u * (hi - lo) + lo)
}

/// The same in f64 from 64 bits (the top 52 as the mantissa).
#[inline]
fn uniform_f64(bits: u64, lo: f64, hi: f64) -> f64 {
    let u = (bits >> 12) as f64 * f64::EPSILON;
    lo.max(u * (hi - lo) + lo)
}

/// A standard normal value, as JAX: `u` uniform in `[nextafter(-1, 0), 1)` in f32,
/// then `sqrt(2) * erfinv(u)`, here computed in f64 and rounded once.
#[inline]
fn normal_f32(bits: u32) -> f32 {
    let lo = -1.0 + f32::EPSILON / 2.0;
    let u = uniform_f32(bits, lo, 1.0);
    (std::f64::consts::SQRT_2 * erfinv(u as f64)) as f32
}

#[inline]
fn normal_f64(bits: u64) -> f64 {
    let lo = -1.0 + f64::EPSILON / 2.0;
    let u = uniform_f64(bits, lo, 1.0);
    std::f64::consts::SQRT_2 * erfinv(u)
}

/// Elements per parallel chunk (a chunk of normals is ~1 ms of work).
const CHUNK: usize = 1 << 14;

/// `out[i] = f(i)`, in parallel chunks when there are several.
fn par_fill<T: Send>(out: &mut [T], f: impl Fn(u64) -> T + Sync) {
    if out.len() <= CHUNK || rayon::current_num_threads() < 2 {
        for (i, o) in out.iter_mut().enumerate() {
            *o = f(i as u64);
        }
        return;
    }
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let base = (c * CHUNK) as u64;
            for (i, o) in chunk.iter_mut().enumerate() {
                *o = f(base + i as u64);
            }
        });
}
