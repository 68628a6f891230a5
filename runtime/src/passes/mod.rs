//! Graph-to-graph passes, each with one entry point, each tested as IR text
//! in → IR text out (`tests/runtime/passes.rs`), the verifier run after each.

pub mod remat;
pub mod schedule;
pub mod simplify;

pub use simplify::simplify;
