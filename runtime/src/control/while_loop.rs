//! `while_loop` and counted loops. Eagerly they loop in Rust; inside a trace
//! the condition and the body are traced once into sub-graphs and one
//! `while` node is recorded: the compiled program loops at run time, so its
//! code does not grow with the number of iterations.

use super::staging::Components;
use super::subgraph;
use crate::{SourceLoc, Tensor, Tree};
use std::panic::Location;

/// `while cond_fn(&s) { s = body_fn(s) }` (JAX's `lax.while_loop`): the
/// condition is a bool scalar tensor; the state keeps its structure, shapes
/// and dtypes. Not reverse-differentiable (its trip count is not known
/// before it runs); use `fori_loop` or `scan` for a loop to differentiate.
#[track_caller]
pub fn while_loop<S: Tree>(
    mut cond_fn: impl FnMut(&S) -> Tensor,
    mut body_fn: impl FnMut(S) -> S,
    init: S,
) -> S {
    let loc = Location::caller();
    staged_while(
        &["the loop state"],
        (init,),
        |(s,): (S,)| (cond_fn(&s), (s,)),
        |(s,)| (body_fn(s),),
        loc,
    )
    .0
}

/// `for i in lower..upper { s = body_fn(i, s) }` (JAX's `lax.fori_loop`)
/// with `i` an `i64` scalar tensor. Both bounds known at trace time (Rust
/// integers): a `scan` of `upper - lower` steps (differentiable); traced
/// bounds (`i32`/`i64` scalar tensors): a `while` loop.
#[track_caller]
pub fn fori_loop<S: Tree>(
    lower: impl Into<LoopBound>,
    upper: impl Into<LoopBound>,
    mut body_fn: impl FnMut(&Tensor, S) -> S,
    init: S,
) -> S {
    let loc = Location::caller();
    let (lo, hi) = (lower.into(), upper.into());
    match (lo, hi) {
        (LoopBound::Static(a), LoopBound::Static(b)) => {
            super::scan::staged_counted_scan(a, b, (init,), |i, (s,)| (body_fn(&i, s),), loc).0
        }
        (a, b) => {
            staged_counted(
                &["the loop state"],
                a.to_tensor(),
                b.to_tensor(),
                (init,),
                |i, (s,)| (body_fn(&i, s),),
                loc,
            )
            .0
        }
    }
}

/// A bound of `fori_loop`: a Rust integer (static) or a scalar integer tensor.
pub enum LoopBound {
    Static(i64),
    Traced(Tensor),
}

impl LoopBound {
    fn to_tensor(self) -> Tensor {
        match self {
            LoopBound::Static(v) => Tensor::scalar(v),
            LoopBound::Traced(t) => t,
        }
    }
}

macro_rules! static_bound {
    ($($t:ty),*) => {$(
        impl From<$t> for LoopBound {
            fn from(v: $t) -> LoopBound {
                LoopBound::Static(v as i64)
            }
        }
    )*};
}
static_bound!(i32, i64, usize, u32, isize);

impl From<Tensor> for LoopBound {
    fn from(t: Tensor) -> LoopBound {
        LoopBound::Traced(t)
    }
}

impl From<&Tensor> for LoopBound {
    fn from(t: &Tensor) -> LoopBound {
        LoopBound::Traced(t.clone())
    }
}

/// The `while` of a jitted body on a tensor condition (see `staging.rs`).
pub(crate) fn staged_while<S, FC, FB>(
    names: &[&str],
    state: S,
    mut cond: FC,
    mut body: FB,
    loc: SourceLoc,
) -> S
where
    S: Tree + Components,
    FC: FnMut(S) -> (Tensor, S),
    FB: FnMut(S) -> S,
{
    if !crate::trace::is_tracing() {
        let mut state = state;
        loop {
            let (c, s) = cond(state);
            subgraph::check_predicate("while", &c, loc);
            if !c.item::<bool>().expect("a concrete bool scalar") {
                return s;
            }
            state = body(s);
        }
    }
    subgraph::trace_while(names, state, cond, body, loc)
}

/// `for i in start..end` with tensor bounds (see `staging.rs`): `i` is a
/// scalar of the bounds' (integer) dtype.
pub(crate) fn staged_counted<S, F>(
    names: &[&str],
    start: Tensor,
    end: Tensor,
    state: S,
    mut body: F,
    loc: SourceLoc,
) -> S
where
    S: Tree + Components,
    F: FnMut(Tensor, S) -> S,
{
    let (start, end) = subgraph::check_bounds(&start, &end, loc);
    if !crate::trace::is_tracing() {
        let (a, b) = (start.get_f64(0) as i64, end.get_f64(0) as i64);
        let mut state = state;
        for i in a..b {
            state = body(Tensor::scalar(i).cast(start.dtype()), state);
        }
        return state;
    }
    subgraph::trace_counted(names, start, end, state, body, loc)
}
