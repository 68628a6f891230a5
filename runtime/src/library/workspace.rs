//! Memory the GEMM libraries allocate themselves, outside the program's arena: neither
//! `gemm` nor `matrixmultiply` takes a caller's workspace, so it cannot be planned into
//! the arena; `MemoryAnalysis::library_bytes` reports it instead.
//!
//! What they hold (gemm-common 0.19 as vendored, matrixmultiply 0.3): `gemm` keeps a
//! thread-local slab of the L2 cache's size in every thread that ran a product (the
//! caller's when it runs one alone, each rayon worker's; never freed while the thread
//! lives), and the vendored copy keeps each thread's largest packing buffer (the packed
//! right operand and prepacked left one) for its next product — upstream frees it after
//! every product and glibc then keeps a varying amount of the freed memory per thread.
//! The packing a product asks for is found by running `gemm` dry on its geometry.
//! `matrixmultiply` packs `kc x (mc + nc)` per call and thread and frees it.

use super::{band_geometry, faer_packing, FaerSplit, Gemm};
use crate::codegen::GemmSplit;
use gemm_common::packing::Request;

/// What the products of one program leave the GEMM libraries holding, by thread: the
/// bytes each has written (and so made resident) in its packing buffer and its slab.
#[derive(Clone, Copy, Debug, Default)]
pub struct GemmWorkspace {
    /// Each rayon worker's, where products run on the workers (bands, gemm's own split).
    workers: Option<Request>,
    /// The calling thread's, where it runs a product or packs for one.
    caller: Option<Request>,
    /// `matrixmultiply`'s packing over the threads (freed after each product).
    transient: usize,
}

/// The most of two requests.
fn most(a: Option<Request>, b: Request) -> Option<Request> {
    let a = a.unwrap_or_default();
    Some(Request {
        packing: a.packing.max(b.packing),
        slab: match (a.slab, b.slab) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        },
    })
}

impl GemmWorkspace {
    /// Count a product `[m, k] @ [k, n]` of `elem`-byte elements whose operands' rows and
    /// columns are `a` and `b` elements apart (`(row stride, column stride)`), split as
    /// `forced` where it is (the product's compiled split).
    pub fn add(
        &mut self,
        (m, k, n): (usize, usize, usize),
        elem: usize,
        (a, b): ((isize, isize), (isize, isize)),
        forced: Option<GemmSplit>,
    ) {
        match Gemm::pick(m, k, n) {
            Gemm::MatrixMultiply => {
                let threads = rayon::current_num_threads() + 1;
                let (kc, mc, nc) = (k.min(256), m.min(64), n.min(1024));
                self.transient = self.transient.max(threads * kc * (mc + nc) * elem);
            }
            Gemm::Faer => {
                let request = |mm: usize, nn: usize, par| faer_packing(mm, k, nn, a, b, par, elem);
                match FaerSplit::of(m, k, n, forced) {
                    FaerSplit::Bands => {
                        let (by_rows, len, step) = band_geometry(m, n);
                        for band in [step.min(len), len - (len.div_ceil(step) - 1) * step] {
                            let (mm, nn) = if by_rows { (band, n) } else { (m, band) };
                            let r = request(mm, nn, gemm::Parallelism::None);
                            self.workers = most(self.workers, r);
                        }
                    }
                    FaerSplit::Gemm(par) => {
                        // gemm packs on the calling thread; its blocks run on the workers,
                        // or on the caller when it picks one thread (so both may hold a slab).
                        let r = request(m, n, par);
                        self.caller = most(self.caller, r);
                        if matches!(par, gemm::Parallelism::Rayon(_)) {
                            let slab = Request {
                                packing: 0,
                                slab: r.slab,
                            };
                            self.workers = most(self.workers, slab);
                        }
                    }
                }
            }
        }
    }

    /// Bytes held over all threads: what the products write in each thread's packing
    /// buffer and slab, plus `matrixmultiply`'s packing while one runs. Resident bytes:
    /// a slab gemm allocates at the L2's size holds only the pages products write.
    pub fn bytes(&self) -> usize {
        let held = |r: Option<Request>| {
            r.map_or(0, |r| {
                r.packing.next_multiple_of(PAGE) + r.slab.map_or(0, |s| s.next_multiple_of(PAGE))
            })
        };
        self.transient + rayon::current_num_threads() * held(self.workers) + held(self.caller)
    }

    /// The most of two programs' workspaces, thread by thread (what a thread holds is the
    /// largest of what the products it ran needed).
    pub fn max(self, o: GemmWorkspace) -> GemmWorkspace {
        let both = |x: Option<Request>, y: Option<Request>| match y {
            Some(y) => most(x, y),
            None => x,
        };
        GemmWorkspace {
            workers: both(self.workers, o.workers),
            caller: both(self.caller, o.caller),
            transient: self.transient.max(o.transient),
        }
    }
}

impl GemmWorkspace {
    /// Whether no product of the program packs or uses a slab.
    fn is_empty(&self) -> bool {
        self.workers.is_none() && self.caller.is_none()
    }
}

/// A program's GEMM workspace, made resident where its products may run before they do:
/// what a thread holds is otherwise the most of the products that happened to land on it,
/// which differs from run to run with rayon's work stealing, while the report names the
/// most any thread could hold. Reserved, every thread holds that from the first call.
#[derive(Debug, Default)]
pub struct Reserved {
    workspace: GemmWorkspace,
    /// Whether the workers' share was sent to the pool (once per program).
    workers_sent: std::sync::atomic::AtomicBool,
}

impl Reserved {
    pub fn new(workspace: GemmWorkspace) -> Reserved {
        Reserved {
            workspace,
            workers_sent: Default::default(),
        }
    }

    pub fn workspace(&self) -> GemmWorkspace {
        self.workspace
    }

    /// Before a call: the calling thread's share now (a thread-local comparison once it
    /// holds it), and at the first call each rayon worker's, queued on every worker with
    /// `spawn_broadcast` and not waited for: a blocking broadcast would need every worker
    /// to come by, and one blocked outside rayon (on a lock the caller holds) never would.
    /// A product a worker runs before its share arrives packs into a buffer of its own
    /// size, which the share then replaces; either way the worker ends holding the share.
    pub fn before_call(&self) {
        use std::sync::atomic::Ordering;
        let w = &self.workspace;
        if w.is_empty() {
            return;
        }
        if let Some(r) = w.caller {
            gemm_common::packing::reserve(r);
        }
        if let Some(r) = w.workers {
            if !self.workers_sent.swap(true, Ordering::Relaxed) {
                rayon::spawn_broadcast(move |_| gemm_common::packing::reserve(r));
            }
        }
    }
}

/// Resident memory's granule.
const PAGE: usize = 4096;

/// Bytes the GEMM library holds now over all threads: `(packing buffers, L2 slabs)` (the
/// vendored `gemm-common` keeps one packing buffer per thread between products).
pub fn held_bytes() -> (usize, usize) {
    (
        gemm_common::packing::packing_bytes(),
        gemm_common::packing::slab_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first call of a program reserves each rayon worker's share on every worker of
    /// the pool it runs in (asynchronously), and the caller's on the calling thread.
    #[test]
    fn the_first_call_reserves_every_workers_share() {
        let mut w = GemmWorkspace::default();
        // Wide enough for bands on the workers; the right operand transposed, so that
        // each band packs it.
        w.add((512, 384, 1024), 4, ((384, 1), (1, 384)), None);
        let Some(share) = w.workers else {
            // No product of this size packs here (no AVX-512: matrixmultiply's).
            return;
        };
        assert!(share.packing > 0, "{w:?}");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let reserved = Reserved::new(w);
        pool.install(|| reserved.before_call());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let held = pool.broadcast(|_| gemm_common::packing::thread_packing_bytes());
            if held.iter().all(|&b| b >= share.packing) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "workers hold {held:?}, each should hold {share:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
