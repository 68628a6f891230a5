//! Attention on 16-bit operands (bf16, f16) read as they are: no f32 copy of q, k, v, the
//! saved output or the cotangent is ever a tensor of the program.
//!
//! Each tile of rows the f32 code reads (a query tile of q, o or dO, a key tile of k or v)
//! is converted into f32 in the worker's scratch slot just before it is read (`Src::rows`),
//! and each result is rounded once as it is stored (`store`; `dQ` is summed in f32 in the
//! slot and rounded at the end). A tile is converted once per tile it meets on the other
//! side: one conversion per `2 · BR` (or `2 · BC`) multiply-adds; where the forward's
//! workers take whole batch elements, their k and v are converted once, whole
//! (`attention::whole_kv_elems`). bf16 and f16 values are
//! exact in f32, so every sum is the one the f32 step computes on widened operands: the
//! results are those of the widened step rounded once, bit for bit
//! (`tests/runtime/attention.rs`), in a few tiles of scratch per worker instead of f32
//! copies of every operand and result.

use super::{Batch, Float, Mats};
use crate::library::gemm16::{pack_f32, widen};
use crate::library::ops::Operand;
use crate::DType;

/// An operand as the f32 (or f64) code reads it: in place, or 16-bit rows converted per
/// tile.
#[derive(Clone, Copy)]
pub(super) enum Src<'a, T> {
    Direct(Mats<'a, T>),
    Half(Mats<'a, u16>, DType),
}

impl<'a, T: Float> Src<'a, T> {
    pub(super) fn new(x: &Operand<'a>) -> Src<'a, T> {
        if x.dtype.is_half() {
            Src::Half(Mats::new(x), x.dtype)
        } else {
            Src::Direct(Mats::new(x))
        }
    }

    /// Rows `r0..r0 + n` of matrix `b` (`cols` each) as matrices whose `row(b, r0 + i)` is
    /// row `r0 + i` for `i < n`: the operand itself, or (16-bit) those rows converted into
    /// `buf`, which must hold `n · cols` elements.
    ///
    /// # Safety
    /// The rows are inside the operand's live buffer.
    pub(super) unsafe fn rows(
        &self,
        b: usize,
        (r0, n): (usize, usize),
        cols: usize,
        buf: &mut [T],
    ) -> Mats<'a, T> {
        match *self {
            Src::Direct(m) => m,
            Src::Half(m, dtype) => {
                // 16-bit operands run the f32 code (`attention::run`).
                assert_eq!(
                    std::mem::size_of::<T>(),
                    4,
                    "16-bit attention computes in f32"
                );
                assert!(
                    buf.len() >= n * cols,
                    "a tile of {n} × {cols} in {}",
                    buf.len()
                );
                let dst = buf.as_mut_ptr() as *mut f32;
                pack_f32(m.row(b, r0), dtype, m.rs, m.cs, (n, cols, cols), dst);
                Mats {
                    ptr: buf.as_ptr().wrapping_sub(r0 * cols),
                    batch: Batch::Tile { b },
                    rs: cols as isize,
                    cs: 1,
                }
            }
        }
    }
}

/// `src` stored from element `at` of `dst`, a buffer of `dtype`: as it is where `dtype` is
/// `T`, rounded once (to nearest, ties to even; NaN stays NaN) where it is bf16 or f16.
///
/// # Safety
/// `dst` holds elements `at..at + src.len()` of `dtype`, overlapping `src` nowhere.
pub(super) unsafe fn store<T: Float>(dtype: DType, dst: *mut u8, at: usize, src: &[T]) {
    match dtype {
        DType::BF16 => {
            let out = std::slice::from_raw_parts_mut((dst as *mut u16).add(at), src.len());
            for (o, &x) in out.iter_mut().zip(src) {
                *o = half::bf16::from_f32(x.to_f32()).to_bits();
            }
        }
        DType::F16 => {
            let out = std::slice::from_raw_parts_mut((dst as *mut u16).add(at), src.len());
            for (o, &x) in out.iter_mut().zip(src) {
                *o = half::f16::from_f32(x.to_f32()).to_bits();
            }
        }
        _ => std::ptr::copy_nonoverlapping(src.as_ptr(), (dst as *mut T).add(at), src.len()),
    }
}

/// The element of `dtype` at `p` as a `T` (an additive mask's: q's type).
///
/// # Safety
/// `p` points to a live element of `dtype`.
pub(super) unsafe fn read<T: Float>(p: *const u8, dtype: DType) -> T {
    match dtype {
        DType::BF16 | DType::F16 => T::from_f64(widen(dtype, *(p as *const u16)) as f64),
        _ => *(p as *const T),
    }
}
