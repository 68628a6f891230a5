//! Fusion decisions over the optimised graph.
//!
//! - `row_groups`: reductions over trailing axes fused with their elementwise
//!   producers and consumers into one kernel that walks the rows once each
//!   phase, the row staying in cache (softmax, layer norm, log-softmax and
//!   cross-entropy become one kernel).
//! - `partition`: the steps of a program: loop fusion of elementwise ops and
//!   views (views folded into reads, constants splatted), row kernels of the
//!   row groups, reduction kernels and library steps.

pub mod partition;
pub mod row_groups;

pub use row_groups::{find_row_groups, RowGroup};
