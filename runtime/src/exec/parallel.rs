//! Splitting a kernel's outer range across the cores. Kernels are pure
//! functions of disjoint output ranges, so chunks of `begin..end` can run
//! concurrently on rayon's persistent pool; small kernels stay on the
//! calling thread (a parallel dispatch costs a few microseconds).

use crate::codegen::KernelFn;
use rayon::prelude::*;

/// Elements below which a kernel runs on the calling thread.
const PARALLEL_MIN_ELEMENTS: usize = 1 << 16;

/// How a compiled step's `begin..end` range may be split.
#[derive(Clone, Copy, Debug)]
pub struct Split {
    /// `end` of a whole call.
    pub extent: usize,
    /// Elements touched by a whole call (decides whether to go parallel).
    pub work: usize,
    /// Chunk boundaries are multiples of this (64 for ranges over vector
    /// lanes, so every chunk but the last runs whole unrolled blocks).
    pub align: usize,
}

/// Run `f` over its whole range.
///
/// # Safety
/// `ptrs` must hold the kernel's live input and output buffers.
pub unsafe fn run_kernel(f: KernelFn, ptrs: &[*mut u8], split: Split) {
    let Split {
        extent,
        work,
        align,
    } = split;
    let threads = rayon::current_num_threads();
    if work < PARALLEL_MIN_ELEMENTS || extent < 2 || threads < 2 {
        f(ptrs.as_ptr(), 0, extent as i64);
        return;
    }
    let chunks = (threads * 2).min(extent.div_ceil(align)).max(1);
    let per = extent.div_ceil(chunks).div_ceil(align) * align;
    let addr = ptrs.as_ptr() as usize;
    (0..chunks).into_par_iter().for_each(|c| {
        let begin = c * per;
        let end = ((c + 1) * per).min(extent);
        if begin < end {
            // SAFETY: chunks write disjoint output ranges; the caller keeps
            // the buffers alive until this returns.
            unsafe { f(addr as *const *mut u8, begin as i64, end as i64) };
        }
    });
}
