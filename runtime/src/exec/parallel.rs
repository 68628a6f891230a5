//! Splitting a kernel's outer range across the cores. Kernels are pure
//! functions of disjoint output ranges, so chunks of `begin..end` can run
//! concurrently; small kernels stay on the calling thread.
//!
//! The calling thread works too: it asks rayon's persistent pool for helpers
//! (one per worker) and then takes chunks off a shared counter itself, and so
//! do the helpers once they are awake. Waking a sleeping worker takes tens of microseconds
//! here, as long as a whole mid-sized kernel; blocking on the pool (as
//! `par_iter` from outside it does) would put that wake-up on every step's
//! critical path. A helper that wakes after the last chunk was taken finds
//! nothing to do and never touches the buffers.

use crate::codegen::KernelFn;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

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

/// One split call, shared by the caller and its helpers.
struct Shared {
    f: KernelFn,
    /// The kernel's buffer pointers (as addresses: the helpers' copy).
    ptrs: Vec<usize>,
    extent: usize,
    per: usize,
    chunks: usize,
    /// The next chunk to take.
    next: AtomicUsize,
    /// Chunks finished.
    done: AtomicUsize,
}

impl Shared {
    /// Take and run chunks until none is left.
    fn work(&self) {
        loop {
            let c = self.next.fetch_add(1, Ordering::Relaxed);
            if c >= self.chunks {
                return;
            }
            let begin = c * self.per;
            let end = ((c + 1) * self.per).min(self.extent);
            if begin < end {
                // SAFETY: chunks write disjoint output ranges; the caller of
                // `run_kernel` keeps the buffers alive until every taken chunk
                // is done (it waits for `done` below).
                unsafe {
                    (self.f)(
                        self.ptrs.as_ptr() as *const *mut u8,
                        begin as i64,
                        end as i64,
                    )
                };
            }
            self.done.fetch_add(1, Ordering::Release);
        }
    }
}

/// Run `f` over its whole range; the number of chunks it was split into (1: the calling
/// thread ran it alone).
///
/// # Safety
/// `ptrs` must hold the kernel's live input and output buffers.
pub unsafe fn run_kernel(f: KernelFn, ptrs: &[*mut u8], split: Split) -> usize {
    let Split {
        extent,
        work,
        align,
    } = split;
    let threads = rayon::current_num_threads();
    if work < PARALLEL_MIN_ELEMENTS || extent < 2 || threads < 2 {
        f(ptrs.as_ptr(), 0, extent as i64);
        return 1;
    }
    // One chunk per thread: a helper that wakes late leaves its chunk to the
    // caller. (Four per thread balanced late helpers better but measured slower
    // here: more hand-offs, more waits on a helper the scheduler preempted.)
    let chunks = threads.min(extent.div_ceil(align)).max(1);
    let per = extent.div_ceil(chunks).div_ceil(align) * align;
    let shared = Arc::new(Shared {
        f,
        ptrs: ptrs.iter().map(|&p| p as usize).collect(),
        extent,
        per,
        chunks: extent.div_ceil(per),
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
    });
    // A helper for every worker, though the caller takes a chunk too: each one
    // wakes a worker, and a pool left half asleep makes the next library GEMM
    // (rayon's `par_iter` from outside the pool, several per product) wait for
    // wake-ups: with one helper fewer an MLP's gradient took 1.6x as long.
    for _ in 0..threads {
        let s = shared.clone();
        rayon::spawn(move || s.work());
    }
    shared.work();
    // Every chunk is taken; wait for those still running on a helper.
    let mut spins = 0u32;
    while shared.done.load(Ordering::Acquire) < shared.chunks {
        if spins < 1 << 10 {
            std::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
    shared.chunks
}
