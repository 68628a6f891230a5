//! Integration tests of the runtime (one binary: build time matters).

mod array_ops;
mod autodiff;
mod cache_diag;
mod common;
mod control_flow;
mod differential;
mod donation;
mod fuzz;
mod ir_text;
mod math_ops;
mod memory;
mod passes;
mod proptests;
mod regressions;
mod tensor_api;
mod zmm;
