//! Handing freed memory back to the system after a cache is cleared.
//!
//! A cache's programs are thousands of small heap blocks interleaved with everything else
//! the process allocated meanwhile: freed, they leave holes the allocator keeps (a
//! measured clear of 30,000 eager programs gave back 15 % of their resident memory).
//! glibc's `malloc_trim` returns the free pages inside its heaps as well as its top; the
//! code heap unmaps or punches out its own pages as programs are dropped.

/// Return the allocator's free memory to the system (glibc; elsewhere nothing to do).
pub(crate) fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: plain call; the allocator's state is its own.
    unsafe {
        libc::malloc_trim(0);
    }
}
