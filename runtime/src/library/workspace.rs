//! Memory the GEMM libraries allocate themselves, outside the program's arena: neither
//! `gemm` nor `matrixmultiply` takes a caller's workspace, so it cannot be planned into
//! the arena; `MemoryAnalysis::library_bytes` reports it instead.
//!
//! What they hold (read from their sources, gemm-common 0.19 and matrixmultiply 0.3):
//! `gemm` keeps a thread-local slab of the L2 cache's size in every thread that ran a
//! product (the caller's and each rayon worker's; never freed while the thread lives) and
//! allocates, per call and thread, the packed right operand (`kc x nc`) and the prepacked
//! left one (`kc` by the rows); `matrixmultiply` packs `kc x (mc + nc)` per call and
//! thread. Freed packing buffers stay with the allocator, so a steady loop holds them.

use super::Gemm;
use once_cell::sync::Lazy;

/// The L2 cache's size (gemm's slab): from sysfs, else gemm's default of 1 MiB.
static L2: Lazy<usize> = Lazy::new(|| {
    std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index2/size")
        .ok()
        .and_then(|s| {
            let s = s.trim();
            let (num, mult) = match s.strip_suffix('K') {
                Some(n) => (n, 1024),
                None => match s.strip_suffix('M') {
                    Some(n) => (n, 1024 * 1024),
                    None => (s, 1),
                },
            };
            num.parse::<usize>().ok().map(|n| n * mult)
        })
        .unwrap_or(1 << 20)
});

/// Bytes a product `[m, k] @ [k, n]` of `elem`-byte elements may hold outside the arena,
/// over all the threads that run it.
pub fn gemm_bytes(m: usize, k: usize, n: usize, elem: usize) -> usize {
    let threads = rayon::current_num_threads() + 1;
    let kc = k.min(512);
    match Gemm::pick(m, k, n) {
        Gemm::Faer => {
            // Slabs in every thread; the packed operands once (`faer_panels` bands and
            // gemm's own split pack shares of them).
            let packing = kc * (n.next_multiple_of(48) + m.next_multiple_of(48)) * elem;
            threads * *L2 + packing
        }
        Gemm::MatrixMultiply => {
            let (kc, mc, nc) = (k.min(256), m.min(64), n.min(1024));
            threads * kc * (mc + nc) * elem
        }
    }
}
