//! Graph-to-graph passes, each with one entry point, each tested as IR text
//! in → IR text out (`tests/runtime/passes.rs`), the verifier run after each.

pub mod attention;
pub mod column_split;
pub mod remat;
pub mod short_axis;
pub mod simplify;
pub mod step_order;
pub mod widen;

pub use simplify::simplify;

thread_local! {
    static PATTERNS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Turn the pattern fusion passes (attention) off or on for traces and compilations on
/// this thread: tests compare the fused result with the composition it replaces.
pub fn set_pattern_fusion(on: bool) {
    PATTERNS.with(|p| p.set(on));
}

/// `attention::fuse` with its near misses sent to `JITFUSE_LOG=fusion` (unless pattern
/// fusion is off on this thread).
pub fn fuse_attention(g: &crate::ir::Graph) -> crate::ir::Graph {
    if !PATTERNS.with(|p| p.get()) {
        return g.clone();
    }
    let (out, misses) = attention::fuse(g);
    if crate::diag::log::enabled(crate::diag::log::Category::Fusion) {
        for m in misses {
            crate::diag::log::emit(&format!("jitfuse fusion: {m}"));
        }
    }
    out
}
