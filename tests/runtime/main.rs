//! Integration tests of the runtime (one binary: build time matters).

mod array_ops;
mod attention;
mod attention_fill;
mod autodiff;
mod cache_diag;
mod cache_memory;
mod checkpoint_memory;
mod common;
mod control_flow;
mod conv;
mod cross_entropy;
mod determinism;
mod differential;
mod dist;
mod donation;
mod eager;
mod fuzz;
mod gpt;
mod half_floats;
mod half_matmul;
mod ir_text;
mod layering;
mod listings;
mod loop_gradients;
mod math_ops;
mod memory;
mod nanogpt;
mod ndarray_interop;
mod norm;
mod optim;
mod passes;
mod precision;
mod profile;
mod programs;
mod proptests;
mod random;
mod regressions;
mod report;
mod save_load;
mod short_reductions;
mod statistics;
mod tensor_api;
mod vmap;
mod window;
mod x86;

/// Counts the process's large allocations (>= 64 KiB, the pool's smallest
/// size): the memory tests check that a steady loop makes none.
pub struct CountingAlloc;

pub static LARGE_ALLOCS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; the counter has no effect on it.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        if l.size() >= 64 * 1024 {
            LARGE_ALLOCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        std::alloc::System.alloc(l)
    }
    unsafe fn alloc_zeroed(&self, l: std::alloc::Layout) -> *mut u8 {
        if l.size() >= 64 * 1024 {
            LARGE_ALLOCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        std::alloc::System.alloc_zeroed(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        std::alloc::System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        if n >= 64 * 1024 {
            LARGE_ALLOCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        std::alloc::System.realloc(p, l, n)
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;
