//! What the caches count is what they keep resident: compiling thousands of distinct
//! programs (eager one-op programs, a jitted function over many shapes) grows the process's
//! resident memory by about the bytes the caches report, clearing them gives it back, and a
//! cached training step's calls grow it by about its memory report.
//!
//! Resident memory is process-wide and other tests run beside these in threads: each test
//! re-runs itself alone in a child process (`alone`), which does the measuring.

use jitfuse::optim::{Adam, Optimizer, StateOf};
use jitfuse::prelude::*;

use crate::common::resident_bytes;

/// Run the test `name` alone in a child process; true in the child (which measures).
fn alone(name: &str) -> bool {
    crate::common::measure_alone(&format!("cache_memory::{name}"))
}

/// Distinct shapes to compile for: `JITFUSE_CACHE_SHAPES`, else a count that keeps the
/// test to a few seconds (fewer unoptimised).
fn shapes() -> usize {
    std::env::var("JITFUSE_CACHE_SHAPES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) { 300 } else { 10_000 })
}

/// Five eager one-op programs for the shape `[n, 3]`.
fn eager_ops(n: usize) {
    let x = Tensor::full(&[n, 3], 0.5f32, DType::F32);
    let y = ((x.exp() * &x).tanh() + &x).sum_all();
    assert!(y.item::<f32>().unwrap().is_finite());
}

#[test]
fn eager_programs_count_the_memory_they_keep() {
    if !alone("eager_programs_count_the_memory_they_keep") {
        return;
    }
    let Some(_) = resident_bytes() else { return };
    // The allocator, the pool and the code heap warmed up by other shapes first.
    for n in 0..100 {
        eager_ops(50_000 + n);
    }
    let (r0, s0) = (resident_bytes().unwrap(), jitfuse::eager::eager_stats());
    let n = shapes();
    for i in 0..n {
        eager_ops(16 + i);
    }
    let (r1, s1) = (resident_bytes().unwrap(), jitfuse::eager::eager_stats());
    let (grown, counted) = (r1.saturating_sub(r0), s1.cached_bytes - s0.cached_bytes);
    let programs = s1.compiled - s0.compiled;
    println!(
        "{n} shapes, {programs} programs: resident +{} KiB, counted +{} KiB ({:.2} KiB each)",
        grown >> 10,
        counted >> 10,
        counted as f64 / 1024.0 / programs as f64
    );
    let pool_held = jitfuse::internals::storage::pool::held_bytes();
    println!("the storage pool holds {} KiB", pool_held >> 10);

    assert_eq!(programs, 5 * n as u64);
    assert_eq!(s1.evicted, s0.evicted, "nothing evicted at this size");
    assert!(
        grown as f64 <= 1.25 * counted as f64,
        "resident +{grown} for {counted} counted"
    );
    // Cleared, the memory goes back (the code heap unmapped, the heap trimmed).
    jitfuse::eager::clear_eager_cache();
    let r2 = resident_bytes().unwrap();
    println!(
        "cleared: resident {} KiB -> {} KiB (the storage pool held {} KiB)",
        r1 >> 10,
        r2 >> 10,
        pool_held >> 10
    );
    assert!(
        r2 <= r0 + grown / 4,
        "after clearing: {r2} (before compiling {r0}, grown {grown})"
    );
}

#[jit]
fn many_shapes(x: &Tensor) -> Tensor {
    ((x.exp() * x).tanh() + x).sum_all()
}

#[test]
fn jitted_programs_count_the_memory_they_keep_and_the_limit_bounds_it() {
    if !alone("jitted_programs_count_the_memory_they_keep_and_the_limit_bounds_it") {
        return;
    }
    let Some(_) = resident_bytes() else { return };
    many_shapes::set_recompile_warning(None);
    let call = |n: usize| many_shapes(&Tensor::full(&[n, 3], 0.5f32, DType::F32));
    for n in 0..50 {
        call(50_000 + n);
    }
    let (r0, s0) = (resident_bytes().unwrap(), many_shapes::cache_stats());
    let n = shapes() / 2;
    for i in 0..n {
        call(16 + i);
    }
    let (r1, s1) = (resident_bytes().unwrap(), many_shapes::cache_stats());
    let (grown, counted) = (r1.saturating_sub(r0), s1.cached_bytes - s0.cached_bytes);
    println!(
        "{n} signatures: resident +{} KiB, counted +{} KiB ({:.2} KiB each)",
        grown >> 10,
        counted >> 10,
        counted as f64 / 1024.0 / n as f64
    );
    assert!(
        grown as f64 <= 1.25 * counted as f64,
        "resident +{grown} for {counted} counted"
    );
    // A limit of a quarter of that: the cache holds within it.
    let limit = counted / 4;
    many_shapes::set_cache_limit(Some(limit));
    let r2 = resident_bytes().unwrap();
    for i in 0..n {
        call(5_000 + i);
    }
    let (r3, s3) = (resident_bytes().unwrap(), many_shapes::cache_stats());
    println!(
        "limited to {} KiB: cached {} KiB, resident {} -> {} KiB",
        limit >> 10,
        s3.cached_bytes >> 10,
        r2 >> 10,
        r3 >> 10
    );
    assert!(s3.cached_bytes <= limit && s3.evictions > 0);
    // As many programs again, under the limit: resident memory grows by less than the
    // limit (without it, by about `grown` again).
    assert!(
        r3 <= r1 + limit,
        "under the limit resident memory grew {r1} -> {r3} (limit {limit})"
    );
}

#[derive(Tree, Clone, Debug)]
pub struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

fn adam() -> Adam<f64> {
    jitfuse::optim::adam(1e-3, 0.9, 0.999, 1e-8)
}

#[jit]
fn mlp_adam_step(
    p: Mlp,
    s: StateOf<Adam<f64>, Mlp>,
    x: &Tensor,
    y: &Tensor,
) -> (Mlp, StateOf<Adam<f64>, Mlp>, Tensor) {
    let (l, g) = value_and_grad(
        |p: &Mlp| {
            let h = (x.matmul(&p.w1) + &p.b1).tanh();
            (h.matmul(&p.w2) + &p.b2 - y).square().mean_all()
        },
        &p,
    );
    let (p, s) = adam().update(&g, s, p);
    (p, s, l)
}

/// glibc's malloc with a fixed mmap threshold: every block of 128 KiB or more is fresh
/// pages from the system, never memory the process freed before.
const FRESH_LARGE_BLOCKS: &str = "glibc.malloc.mmap_threshold=131072";

/// A cached MLP training step with Adam: its calls grow resident memory by what its report
/// names (temporaries, outputs not written in place, the program, the GEMM workspace).
///
/// Measured twice, in two child processes. With the allocator as it comes, a call's large
/// blocks may reuse memory the process freed before the calls (glibc raises its mmap
/// threshold after a large free and then serves large blocks from its heaps), so the calls
/// grow the process by less than the report: the report must be a bound. With the mmap
/// threshold fixed, every large block is fresh, and the growth must be the report's figure.
#[test]
fn a_cached_training_step_grows_memory_by_its_report() {
    let name = "cache_memory::a_cached_training_step_grows_memory_by_its_report";
    if !crate::common::measure_alone(name) {
        crate::common::measure_alone_with(name, &[("GLIBC_TUNABLES", FRESH_LARGE_BLOCKS)]);
        return;
    }
    let fresh_blocks =
        std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains(FRESH_LARGE_BLOCKS));
    let Some(_) = resident_bytes() else { return };
    let mut rng = crate::common::Rng::new(3);
    let mut r =
        |s: &[usize]| crate::common::random_tensor(&mut rng, s, DType::F32, -0.1, 0.1, false);
    let (b, d, h, o) = (256, 512, 1024, 256);
    let (x, y) = (r(&[b, d]), r(&[b, o]));
    let mut p = Mlp {
        w1: r(&[d, h]),
        b1: r(&[h]),
        w2: r(&[h, o]),
        b2: r(&[o]),
    };
    let mut s = adam().init(&p);
    // Compiled once outside the cache first: the compiler's own (freed) heap is then in
    // place, and what the cached calls add is what they hold.
    let m = mlp_adam_step::lower(p.clone(), s.clone(), &x, &y)
        .unwrap()
        .memory_analysis()
        .unwrap();
    // Buffers freed before (the pool's, the allocator's free pages) would serve the calls
    // without growing the process: they go back to the system first.
    jitfuse::internals::storage::pool::clear();
    let r0 = resident_bytes().unwrap();
    let mut top = r0;
    for _ in 0..20 {
        let (p2, s2, _) = mlp_adam_step(p, s, &x, &y);
        (p, s) = (p2, s2);
        top = top.max(resident_bytes().unwrap());
    }
    // The arguments existed before; what the calls add is the rest of the peak.
    let reported =
        m.peak_bytes - m.argument_bytes + m.library_bytes + m.code_bytes + m.program_bytes;
    let grown = top - r0;
    println!(
        "grown {} KiB, reported {} KiB\n{m}",
        grown >> 10,
        reported >> 10
    );
    // The GEMM's packing buffers, kept per thread, are what the report's workspace names
    // (gemm runs these products on AVX-512 CPUs, matrixmultiply elsewhere).
    let (packing, slabs) = jitfuse::internals::exec::gemm_held_bytes();
    #[cfg(target_arch = "x86_64")]
    let on_gemm = std::arch::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    let on_gemm = false;
    assert!(
        (!on_gemm || packing + slabs > 0) && packing <= m.library_bytes,
        "gemm holds {packing} B of packing (and {slabs} B of slabs allocated) for a reported \
         workspace of {} B",
        m.library_bytes
    );
    // The report is a bound the calls never pass by more than 10 %; with fresh blocks it
    // is their growth within 10 % (2-core Zen 4, 2026-12-05: 6.50-6.62 MiB grown for 6.61
    // MiB reported; 5.3-6.2 MiB with the allocator as it comes). FIXME: `matrixmultiply`
    // (the products on CPUs without AVX-512) frees its packing after every product, which
    // the report counts while a product runs: the growth measured between calls is less.
    let least = if fresh_blocks && on_gemm { 0.9 } else { 0.7 };
    assert!(
        grown as f64 <= 1.1 * reported as f64 && grown as f64 >= least * reported as f64,
        "resident +{grown} for {reported} reported (at least {least} of it expected, \
         GLIBC_TUNABLES={:?}):\n{m}",
        std::env::var("GLIBC_TUNABLES")
    );
}
