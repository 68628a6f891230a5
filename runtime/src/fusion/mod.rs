//! Fusion decisions over the optimised graph.
//!
//! - `row_groups`: reductions over trailing axes fused with their elementwise
//!   producers and consumers into one kernel that walks the rows once each
//!   phase, the row staying in cache (softmax, layer norm, log-softmax and
//!   cross-entropy become one kernel).
//! - loop fusion of elementwise ops and views, and the placement of every
//!   other op, is done by `exec::partition` (views folded into reads,
//!   constants splatted).

pub mod row_groups;

pub use row_groups::{find_row_groups, RowGroup};
