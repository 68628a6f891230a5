//! Integration tests of the runtime (one binary: build time matters).

mod array_ops;
mod common;
mod differential;
mod ir_text;
mod proptests;
mod tensor_api;
