//! The random-number kernels: Threefry-2x32 (`threefry.rs`, Random123's known answers), the
//! f64 inverse error function (`erfinv.rs`), and `native::fill`, element `i` from the block
//! of counter `i`: the one function the interpreter and the library step call. The user API
//! (`jitfuse::random`: `Key` and the draws that record `random_*` nodes) is `crate::random`.

pub mod erfinv;
pub mod native;
pub mod threefry;
