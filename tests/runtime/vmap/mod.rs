//! `vmap`: random programs, each op family, control flow, the compositions
//! with the other transformations, and its errors.

mod programs;
