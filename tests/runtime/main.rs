//! Integration tests of the runtime (one binary: build time matters).

mod array_ops;
mod autodiff;
mod common;
mod differential;
mod passes;
mod ir_text;
mod memory;
mod proptests;
mod tensor_api;
