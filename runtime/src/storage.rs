//! Tensor storage: one 64-byte-aligned heap block, shared by `Arc`.

use crate::Error;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

/// Alignment of every buffer: a cache line, so vector loads never split one.
pub const ALIGN: usize = 64;

/// An owned, aligned, zero-initialised block of bytes. Immutable once shared
/// (tensors are values); only a compiled program writes into a fresh buffer
/// before handing it out.
pub struct Buffer {
    ptr: NonNull<u8>,
    bytes: usize,
    /// False for a view of memory owned elsewhere (an arena slot lent to a
    /// library call for its duration): not freed on drop.
    owned: bool,
}

// SAFETY: a Buffer is a plain heap block; it is only written while uniquely
// owned (before it is wrapped in an Arc and shared).
unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}

/// An aligned, never dereferenced pointer for empty buffers.
fn dangling() -> NonNull<u8> {
    #[repr(align(64))]
    struct Line(#[allow(dead_code)] [u8; ALIGN]);
    NonNull::<Line>::dangling().cast()
}

/// The layout of a buffer that exists (its size was checked when it was
/// allocated).
fn existing_layout(bytes: usize) -> Layout {
    // SAFETY: ALIGN is a power of two and `bytes`, rounded up to it, was
    // accepted by `Layout::from_size_align` when the block was allocated.
    unsafe { Layout::from_size_align_unchecked(bytes, ALIGN) }
}

impl Buffer {
    /// An empty buffer: a dangling but aligned pointer, never dereferenced.
    fn empty() -> Buffer {
        Buffer {
            ptr: dangling(),
            bytes: 0,
            owned: true,
        }
    }

    /// `bytes` zeroed bytes; an out-of-memory error naming `what` (the
    /// tensor or use they were for) when the allocator refuses.
    pub fn try_zeroed(bytes: usize, what: impl FnOnce() -> String) -> Result<Buffer, Error> {
        if bytes == 0 {
            return Ok(Buffer::empty());
        }
        Buffer::allocate(bytes, true, what)
    }

    /// A fresh block from the allocator (zeroed or not); an out-of-memory
    /// error naming `what` when it refuses. No allocation can span more than
    /// `isize::MAX` bytes: such a request is out of memory too, not a panic.
    fn allocate(
        bytes: usize,
        zeroed: bool,
        what: impl FnOnce() -> String,
    ) -> Result<Buffer, Error> {
        let Ok(layout) = Layout::from_size_align(bytes, ALIGN) else {
            return Err(Error::out_of_memory(bytes, &what()));
        };
        // SAFETY: callers pass a non-zero size.
        let ptr = unsafe {
            if zeroed {
                alloc_zeroed(layout)
            } else {
                std::alloc::alloc(layout)
            }
        };
        match NonNull::new(ptr) {
            Some(ptr) => {
                tracking::made(bytes);
                Ok(Buffer {
                    ptr,
                    bytes,
                    owned: true,
                })
            }
            None => Err(Error::out_of_memory(bytes, &what())),
        }
    }

    /// A copy of `src`, fallibly as `try_zeroed`.
    pub fn try_from_bytes(src: &[u8], what: impl FnOnce() -> String) -> Result<Buffer, Error> {
        let b = Buffer::try_uninit(src.len(), what)?;
        // SAFETY: b owns `src.len()` fresh bytes.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), b.ptr.as_ptr(), src.len()) };
        Ok(b)
    }

    /// Whether this buffer owns its memory (false for a borrowed view, which
    /// must never be donated).
    pub fn is_owned(&self) -> bool {
        self.owned
    }

    pub fn len_bytes(&self) -> usize {
        self.bytes
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Pointer for writing. Callers must own the buffer uniquely (it is fresh,
    /// or `Arc::get_mut` succeeded) while they write.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: ptr is valid for `bytes` bytes (dangling only when 0).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.bytes) }
    }

    /// The contents as a typed slice. `T` must be a plain element type.
    pub fn typed<T: crate::Element>(&self) -> &[T] {
        debug_assert_eq!(self.bytes % std::mem::size_of::<T>(), 0);
        // SAFETY: aligned to 64, sized by the tensor that owns it; bool buffers
        // only ever hold 0 or 1.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr.as_ptr() as *const T,
                self.bytes / std::mem::size_of::<T>(),
            )
        }
    }

    pub fn typed_mut<T: crate::Element>(&mut self) -> &mut [T] {
        // SAFETY: as `typed`, and `&mut self` proves unique access.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr.as_ptr() as *mut T,
                self.bytes / std::mem::size_of::<T>(),
            )
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if self.bytes != 0 && self.owned {
            tracking::dropped(self.bytes);
            if pool::give(self.ptr, self.bytes) {
                return;
            }
            // SAFETY: allocated by `try_zeroed`/`try_uninit` with this layout.
            unsafe { dealloc(self.ptr.as_ptr(), existing_layout(self.bytes)) };
            crate::release::freed(self.bytes);
        }
    }
}

impl Buffer {
    /// A buffer whose contents are unspecified: for kernel outputs, which
    /// write every element before anyone reads them. Fallible as
    /// `try_zeroed`.
    pub fn try_uninit(bytes: usize, what: impl FnOnce() -> String) -> Result<Buffer, Error> {
        if bytes == 0 {
            return Ok(Buffer::empty());
        }
        if let Some(ptr) = pool::take(bytes) {
            tracking::made(bytes);
            return Ok(Buffer {
                ptr,
                bytes,
                owned: true,
            });
        }
        Buffer::allocate(bytes, false, what)
    }

    /// A non-owning view of `bytes` bytes at `ptr`.
    ///
    /// # Safety
    /// The memory must stay valid and unwritten by others while the view
    /// (and every tensor made from it) lives.
    pub unsafe fn borrowed(ptr: *mut u8, bytes: usize) -> Buffer {
        Buffer {
            ptr: NonNull::new(ptr).unwrap_or(dangling()),
            bytes,
            owned: false,
        }
    }
}

/// Bytes of owned buffers made and dropped on each thread: what a call allocates, measured
/// next to what its memory report says (the fuzzer's check of every compiled program).
pub mod tracking {
    use std::cell::Cell;

    thread_local! {
        static LIVE: Cell<i64> = const { Cell::new(0) };
        static PEAK: Cell<i64> = const { Cell::new(0) };
    }

    pub(super) fn made(bytes: usize) {
        let live = LIVE.with(|l| {
            l.set(l.get() + bytes as i64);
            l.get()
        });
        PEAK.with(|p| p.set(p.get().max(live)));
    }

    pub(super) fn dropped(bytes: usize) {
        LIVE.with(|l| l.set(l.get() - bytes as i64));
    }

    /// Run `f`; with its result, the most bytes of buffers made on this thread while it ran
    /// were held at once beyond those held when it started (buffers dropped on another
    /// thread count as still held).
    pub fn peak_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
        let start = LIVE.with(|l| l.get());
        let before = PEAK.with(|p| p.replace(start));
        let r = f();
        let peak = PEAK.with(|p| {
            let peak = p.get();
            p.set(before.max(peak));
            peak
        });
        (r, (peak - start).max(0) as usize)
    }
}

/// A pool of freed large buffers, by exact size: outputs and arenas of a
/// steady loop reuse the pages of the tensors dropped in the previous
/// iteration instead of faulting in fresh ones (a fresh 16 MiB output costs
/// thousands of page faults, more than many kernels).
///
/// It keeps only what will be asked for again. Per size it counts the buffers
/// handed out by `take` (hits and misses) that have not come back; a freed
/// buffer is kept only while that count is positive, so a size holds at most
/// as many buffers as were ever out at once, and buffers nobody requested
/// through the pool (the interpreter's results, constants) go straight back
/// to the allocator. A size not requested during the last `IDLE` requests
/// releases what it holds. Within `MAX_POOLED`, the sizes requested least
/// recently are released first.
pub mod pool {
    use super::existing_layout;
    use std::alloc::dealloc;
    use std::collections::HashMap;
    use std::ptr::NonNull;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// Buffers smaller than this go straight back to the allocator.
    pub const MIN_POOLED: usize = 64 * 1024;
    /// Bytes the pool may hold; beyond, freed buffers are released.
    pub const MAX_POOLED: usize = 512 * 1024 * 1024;
    /// Requests (of pooled sizes, any size) after which a size nobody asked
    /// for again releases its buffers: a steady loop asks for each of its
    /// sizes every iteration, far more often than this.
    pub const IDLE: u64 = 4096;
    /// Requests between two sweeps for idle sizes.
    const SWEEP_EVERY: u64 = 256;
    /// Sizes the pool keeps free buffers of at once: beyond, the size requested least
    /// recently gives its buffers back. A steady loop frees far fewer distinct large sizes
    /// than this per iteration; an eager loop over thousands of shapes would otherwise keep
    /// buffers of every one until they are swept as idle (430 MiB for 10,000 `[n, 3]`
    /// shapes).
    pub const MAX_FREE_SIZES: usize = 128;

    struct Ptr(NonNull<u8>);
    // SAFETY: a pooled block is owned by the pool alone.
    unsafe impl Send for Ptr {}

    /// One size.
    #[derive(Default)]
    struct Class {
        free: Vec<Ptr>,
        /// Buffers `take` handed out (pooled or fresh) not given back yet.
        out: usize,
        /// The request count when this size was last requested.
        last: u64,
    }

    struct Pool {
        classes: HashMap<usize, Class>,
        /// Requests so far (the clock of `Class::last`).
        tick: u64,
    }

    static POOL: Mutex<Option<Pool>> = Mutex::new(None);
    static HELD: AtomicUsize = AtomicUsize::new(0);
    static REUSED: AtomicUsize = AtomicUsize::new(0);
    static FRESH: AtomicUsize = AtomicUsize::new(0);

    fn pooled(bytes: usize) -> bool {
        (MIN_POOLED..=MAX_POOLED).contains(&bytes)
    }

    fn release(p: Ptr, bytes: usize) {
        HELD.fetch_sub(bytes, Ordering::Relaxed);
        // SAFETY: allocated by Buffer with this size and alignment.
        unsafe { dealloc(p.0.as_ptr(), existing_layout(bytes)) };
        crate::release::freed(bytes);
    }

    /// Keep a freed buffer if its size has buffers out (else the caller
    /// frees it).
    pub(super) fn give(ptr: NonNull<u8>, bytes: usize) -> bool {
        if !pooled(bytes) {
            return false;
        }
        let mut guard = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let Some(pool) = guard.as_mut() else {
            return false;
        };
        match pool.classes.get_mut(&bytes) {
            Some(c) if c.out > 0 => c.out -= 1,
            _ => return false,
        }
        // Full: release the sizes requested least recently first (never this
        // one: the buffer just freed is the likeliest to be wanted soon).
        while HELD.load(Ordering::Relaxed) + bytes > MAX_POOLED {
            let Some((&size, _)) = pool
                .classes
                .iter()
                .filter(|(&s, c)| s != bytes && !c.free.is_empty())
                .min_by_key(|(_, c)| c.last)
            else {
                return false;
            };
            let old = pool.classes.get_mut(&size).unwrap().free.pop().unwrap();
            release(old, size);
        }
        let c = pool.classes.get_mut(&bytes).unwrap();
        let new_size = c.free.is_empty();
        c.free.push(Ptr(ptr));
        HELD.fetch_add(bytes, Ordering::Relaxed);
        if new_size {
            let sizes = pool.classes.values().filter(|c| !c.free.is_empty()).count();
            if sizes > MAX_FREE_SIZES {
                let oldest = pool
                    .classes
                    .iter()
                    .filter(|(&s, c)| s != bytes && !c.free.is_empty())
                    .min_by_key(|(_, c)| c.last)
                    .map(|(&s, _)| s);
                if let Some(size) = oldest {
                    for p in pool.classes.get_mut(&size).unwrap().free.drain(..) {
                        release(p, size);
                    }
                }
            }
        }
        true
    }

    /// A pooled buffer of exactly `bytes`, if one is free. Every request of a
    /// pooled size counts, hit or miss: the buffer handed out (or allocated
    /// by the caller) may come back to the pool.
    pub(super) fn take(bytes: usize) -> Option<NonNull<u8>> {
        if !pooled(bytes) {
            return None;
        }
        let mut guard = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let pool = guard.get_or_insert_with(|| Pool {
            classes: HashMap::new(),
            tick: 0,
        });
        pool.tick += 1;
        let tick = pool.tick;
        let c = pool.classes.entry(bytes).or_default();
        c.out += 1;
        c.last = tick;
        let got = c.free.pop();
        if tick.is_multiple_of(SWEEP_EVERY) {
            sweep(pool);
        }
        drop(guard);
        match got {
            Some(p) => {
                HELD.fetch_sub(bytes, Ordering::Relaxed);
                REUSED.fetch_add(1, Ordering::Relaxed);
                Some(p.0)
            }
            None => {
                FRESH.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Release the buffers of sizes idle for `IDLE` requests; forget sizes
    /// with nothing pooled and nothing out.
    fn sweep(pool: &mut Pool) {
        let tick = pool.tick;
        pool.classes.retain(|&size, c| {
            if c.last + IDLE < tick {
                for p in c.free.drain(..) {
                    release(p, size);
                }
            }
            !c.free.is_empty() || c.out > 0
        });
    }

    /// `(buffers reused from the pool, large buffers freshly allocated)`
    /// since the start of the process.
    pub fn stats() -> (usize, usize) {
        (
            REUSED.load(Ordering::Relaxed),
            FRESH.load(Ordering::Relaxed),
        )
    }

    /// Bytes held by the pool now.
    pub fn held_bytes() -> usize {
        HELD.load(Ordering::Relaxed)
    }

    /// Release every pooled buffer to the allocator, and the allocator's free pages to
    /// the system (the counts of buffers out stay: those buffers may still come back).
    pub fn clear() {
        let mut guard = POOL.lock().unwrap_or_else(|e| e.into_inner());
        for (&size, c) in guard.iter_mut().flat_map(|p| p.classes.iter_mut()) {
            for p in c.free.drain(..) {
                release(p, size);
            }
        }
        drop(guard);
        crate::release::trim();
    }
}
