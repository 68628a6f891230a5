//! `scan`: a loop over the leading axis of some tensors, carrying a state
//! and stacking per-step outputs (JAX's `lax.scan`). Inside a trace it is one
//! `scan` node with a traced body; counted loops with static bounds are
//! scans too, so they can be differentiated.

use super::staging::Components;
use super::subgraph;
use super::AxisIter;
use crate::{SourceLoc, Tensor, Tree};
use std::panic::Location;

/// `scan(f, init, xs)`: for each slice `x` of `xs` along axis 0,
/// `(carry, y) = f(carry, x)`; returns the final carry and the `y`s stacked
/// along a new leading axis. `xs` is a tree whose leaves share their
/// leading dimension.
#[track_caller]
pub fn scan<C: Tree, X: Tree, Y: Tree>(f: impl FnMut(C, X) -> (C, Y), init: C, xs: &X) -> (C, Y) {
    let loc = Location::caller();
    subgraph::scan_tree(f, init, xs, loc)
}

/// `for x in t.iter_axis(a)` of a jitted body (see `staging.rs`).
pub(crate) fn staged_scan_for<S, F>(
    names: &[&str],
    it: AxisIter,
    state: S,
    mut body: F,
    loc: SourceLoc,
) -> S
where
    S: Tree + Components,
    F: FnMut(Tensor, S) -> S,
{
    staged_zip_for(
        names,
        vec![it],
        state,
        |mut xs, s| body(xs.pop().expect("one slice"), s),
        loc,
    )
}

/// `for (x, y) in zip_axis((&xs, &ys), a)` of a jitted body: one scan over
/// the axis of every tensor of `its` (their lengths agree: `zip_axis`
/// checked them), the body receiving slice `i` of each.
pub(crate) fn staged_zip_for<S, F>(
    names: &[&str],
    its: Vec<AxisIter>,
    state: S,
    mut body: F,
    loc: SourceLoc,
) -> S
where
    S: Tree + Components,
    F: FnMut(Vec<Tensor>, S) -> S,
{
    if !crate::trace::is_tracing() {
        let mut state = state;
        for i in 0..its[0].len() {
            state = body(its.iter().map(|it| it.slice(i)).collect(), state);
        }
        return state;
    }
    let xs: Vec<Tensor> = its
        .iter()
        .map(|it| {
            if it.axis == 0 {
                it.tensor.clone()
            } else {
                let mut perm: Vec<usize> = (0..it.tensor.ndim()).collect();
                perm.remove(it.axis);
                perm.insert(0, it.axis);
                it.tensor.transpose(&perm)
            }
        })
        .collect();
    let counts = state.leaf_counts();
    let (c, ()) = subgraph::scan_tree_named(
        |(s,): (S,), x: Vec<Tensor>| ((body(x, s),), ()),
        (state,),
        &xs,
        false,
        ("for", names, &counts),
        loc,
    );
    c.0
}

/// `for i in a..b` with static bounds as a scan over `i` (differentiable).
pub(crate) fn staged_counted_scan<S, F>(a: i64, b: i64, state: S, mut body: F, loc: SourceLoc) -> S
where
    S: Tree + Components,
    F: FnMut(Tensor, S) -> S,
{
    if !crate::trace::is_tracing() {
        let mut state = state;
        for i in a..b {
            state = body(Tensor::scalar(i), state);
        }
        return state;
    }
    let n = (b - a).max(0) as usize;
    let idx = Tensor::arange(n, crate::DType::I64) + a;
    let (c, ()) = subgraph::scan_tree_at(|s: S, i: Tensor| (body(i, s), ()), state, &idx, loc);
    c
}
