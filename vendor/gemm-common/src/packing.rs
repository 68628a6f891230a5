//! Packing buffers kept per thread between products (a patch of jitfuse's vendored copy).
//!
//! Upstream allocates the packed right operand and the prepacked left one afresh for every
//! product and frees them at its end. Under glibc, a steady loop of products of several
//! shapes on several threads then leaves each thread's heap holding a varying amount of
//! freed packing memory (1 to 5 MiB per thread on a 2-core Zen 4 for an MLP step, changing
//! from run to run), which no report can name. Here each thread keeps its largest packing
//! buffer and reuses it: what a thread holds is the largest packing any of its products
//! needed, a figure the caller can compute and `packing_bytes` reads.

use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicUsize, Ordering};
use dyn_stack::{MemBuffer, StackReq};

/// Bytes of packing buffers held by all threads' caches and by products running now.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// Bytes of the per-thread L2 slabs (upstream's, counted here) of all living threads.
static SLABS: AtomicUsize = AtomicUsize::new(0);

/// Bytes of packing buffers held now, over all threads (cached and in use).
pub fn packing_bytes() -> usize {
    HELD.load(Ordering::Relaxed)
}

/// Bytes of the L2 slabs every thread that ran a product holds while it lives.
pub fn slab_bytes() -> usize {
    SLABS.load(Ordering::Relaxed)
}

/// A thread's L2 slab (upstream's `L2_SLAB`), counted in `slab_bytes` while it lives.
pub struct Slab(MemBuffer, usize);

impl Slab {
    pub fn new(req: StackReq) -> Slab {
        SLABS.fetch_add(req.size_bytes(), Ordering::Relaxed);
        Slab(MemBuffer::new(req), req.size_bytes())
    }
}

impl Deref for Slab {
    type Target = MemBuffer;
    fn deref(&self) -> &MemBuffer {
        &self.0
    }
}

impl DerefMut for Slab {
    fn deref_mut(&mut self) -> &mut MemBuffer {
        &mut self.0
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        SLABS.fetch_sub(self.1, Ordering::Relaxed);
    }
}

/// A packing buffer and the bytes it was allocated for; freeing it uncounts them.
struct Kept {
    buf: MemBuffer,
    bytes: usize,
    align: usize,
}

impl Drop for Kept {
    fn drop(&mut self) {
        HELD.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// A packing buffer in use by one product; back into its thread's cache when dropped.
pub struct Packing(Option<Kept>);

impl Packing {
    /// A buffer for `req`: this thread's cached one if it is large enough (else a new one,
    /// and the smaller cached one is freed). A product running inside another on the same
    /// thread (a rayon worker that stole work while waiting) finds the cache empty and
    /// allocates its own.
    pub fn take(req: StackReq) -> Packing {
        #[cfg(feature = "std")]
        {
            let cached = CACHE
                .try_with(|c| c.try_borrow_mut().ok().and_then(|mut c| c.take()))
                .ok()
                .flatten();
            if let Some(k) = cached {
                if k.bytes >= req.size_bytes() && k.align >= req.align_bytes() {
                    return Packing(Some(k));
                }
            }
        }
        let (bytes, align) = (req.size_bytes(), req.align_bytes());
        #[cfg(feature = "std")]
        let _ = ALLOCATED.try_with(|a| a.set(a.get() + 1));
        HELD.fetch_add(bytes, Ordering::Relaxed);
        Packing(Some(Kept {
            buf: MemBuffer::new(req),
            bytes,
            align,
        }))
    }
}

impl Deref for Packing {
    type Target = MemBuffer;
    fn deref(&self) -> &MemBuffer {
        &self.0.as_ref().unwrap().buf
    }
}

impl DerefMut for Packing {
    fn deref_mut(&mut self) -> &mut MemBuffer {
        &mut self.0.as_mut().unwrap().buf
    }
}

impl Drop for Packing {
    /// Kept in this thread's cache if that is empty or holds a smaller buffer (which is
    /// then freed); else freed.
    fn drop(&mut self) {
        let Some(k) = self.0.take() else { return };
        #[cfg(feature = "std")]
        {
            // During thread exit the cache may be gone: the buffer is then freed here.
            let _ = CACHE.try_with(move |c| {
                if let Ok(mut c) = c.try_borrow_mut() {
                    if c.as_ref().map_or(true, |old| k.bytes > old.bytes) {
                        *c = Some(k);
                    }
                }
            });
        }
        #[cfg(not(feature = "std"))]
        drop(k);
    }
}

#[cfg(feature = "std")]
std::thread_local! {
    static CACHE: core::cell::RefCell<Option<Kept>> = const { core::cell::RefCell::new(None) };
    /// Packing buffers this thread's products allocated (`Packing::take` finding no cached
    /// buffer large enough).
    static ALLOCATED: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// How many packing buffers this thread's products have allocated (a product that reuses
/// the kept buffer allocates none).
#[cfg(feature = "std")]
pub fn thread_packing_allocations() -> usize {
    ALLOCATED.try_with(|a| a.get()).unwrap_or(0)
}

/// What a dry run found: the bytes the products write in their packing buffer and in
/// their thread's L2 slab (`None`: no product used a slab, so none is created).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    pub packing: usize,
    pub slab: Option<usize>,
}

#[cfg(feature = "std")]
std::thread_local! {
    /// Set during `packing_request`: products return before touching their operands.
    static DRY: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
    /// What the dry products asked for so far.
    static ASKED: core::cell::Cell<Request> = const {
        core::cell::Cell::new(Request { packing: 0, slab: None })
    };
}

/// Whether this thread is in a dry run.
#[inline]
pub fn is_dry() -> bool {
    #[cfg(feature = "std")]
    {
        DRY.with(|d| d.get())
    }
    #[cfg(not(feature = "std"))]
    {
        false
    }
}

/// A dry product's request: the packing bytes it writes and the slab bytes, if any.
pub fn record(packing: usize, slab: Option<usize>) {
    #[cfg(feature = "std")]
    ASKED.with(|a| {
        let old = a.get();
        a.set(Request {
            packing: old.packing.max(packing),
            slab: match (old.slab, slab) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            },
        })
    });
    #[cfg(not(feature = "std"))]
    let _ = (packing, slab);
}

/// What the products `f` runs would write in packing buffers and slabs (the most of
/// any), without running them: inside `f` every product returns once its blocking is
/// chosen, before it reads or writes an operand or allocates (pointers may dangle). Only
/// products that reach the blocked kernel pack; the others (empty, tiny, matrix-vector)
/// ask for nothing.
#[cfg(feature = "std")]
pub fn packing_request(f: impl FnOnce()) -> Request {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            DRY.with(|d| d.set(self.0));
        }
    }
    let _reset = Reset(DRY.with(|d| d.replace(true)));
    ASKED.with(|a| a.set(Request::default()));
    f();
    ASKED.with(|a| a.get())
}

/// Bytes of the packing buffer this thread keeps (0 before its first packing product).
#[cfg(feature = "std")]
pub fn thread_packing_bytes() -> usize {
    CACHE
        .try_with(|c| c.try_borrow().ok().and_then(|c| c.as_ref().map(|k| k.bytes)))
        .ok()
        .flatten()
        .unwrap_or(0)
}

/// Make this thread hold what `r` asks, resident: a kept packing buffer of at least
/// `r.packing` bytes (allocated and written through if the kept one is smaller) and the
/// first `r.slab` bytes of its L2 slab written. A caller that reserves a program's request
/// on every thread that may run its products before the first one runs holds what its
/// report names from then on, whichever threads the products land on. A thread inside a
/// product (its cache or slab in use) is left as it is.
#[cfg(feature = "std")]
pub fn reserve(r: Request) {
    fn touch(buf: &mut [core::mem::MaybeUninit<u8>]) {
        for page in buf.chunks_mut(4096) {
            page[0] = core::mem::MaybeUninit::new(0);
        }
        if let Some(last) = buf.last_mut() {
            *last = core::mem::MaybeUninit::new(0);
        }
    }
    if r.packing > 0 {
        let _ = CACHE.try_with(|c| {
            let Ok(mut c) = c.try_borrow_mut() else { return };
            let align = crate::gemm::CACHELINE_ALIGN;
            if c.as_ref().map_or(false, |k| k.bytes >= r.packing && k.align >= align) {
                return;
            }
            *c = None;
            HELD.fetch_add(r.packing, Ordering::Relaxed);
            let mut buf = MemBuffer::new(StackReq::new_aligned::<u8>(r.packing, align));
            touch(&mut buf);
            *c = Some(Kept {
                buf,
                bytes: r.packing,
                align,
            });
        });
    }
    if let Some(s) = r.slab.filter(|&s| s > 0) {
        let _ = crate::gemm::L2_SLAB.try_with(|slab| {
            if let Ok(mut slab) = slab.try_borrow_mut() {
                let len = slab.len();
                touch(&mut slab[..s.min(len)]);
            }
        });
    }
}
