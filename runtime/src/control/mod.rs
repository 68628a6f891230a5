//! Staged control flow: `cond`, `while_loop`, `fori_loop` and `scan` (JAX's
//! `lax` forms), and the trait dispatch `#[jit]`'s rewriting of `if`,
//! `while` and `for` goes through (`staging.rs`).
//!
//! Eagerly (no trace) they run as ordinary Rust control flow on concrete
//! values. Inside a trace they trace their closures into sub-graphs (nested
//! traces; values of the enclosing trace and concrete tensors the closures
//! use become explicit operands) and record one control-flow node: the
//! compiled program runs a real loop, whose code does not grow with the
//! number of iterations.

mod axis_iter;
pub(crate) mod cond;
mod scan;
pub mod staging;
pub(crate) mod subgraph;
mod while_loop;

pub use axis_iter::{zip_axis, AxisIter, ZipAxis, ZipItem, ZipTensors};
pub use cond::cond;
pub use scan::scan;
pub use while_loop::{fori_loop, while_loop};
