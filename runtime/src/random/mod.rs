//! Counter-based pseudo-random numbers, as `jax.random`.

mod erfinv;
pub mod native;
mod threefry;

pub use erfinv::erfinv;
pub use threefry::{threefry2x32, threefry2x32_rounds};
