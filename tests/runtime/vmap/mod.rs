//! `vmap` against a loop of single calls.

mod compose;
mod control;
mod errors;
mod harness;
mod ops;
mod programs;
