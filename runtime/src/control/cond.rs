//! `cond`: choose between two branches on a bool scalar. Eagerly one branch
//! runs; inside a trace both are traced into sub-graphs and one `cond` node
//! is recorded (the compiled program runs only the taken branch).

use super::staging::Components;
use super::subgraph;
use crate::{SourceLoc, Tensor, Tree};
use std::panic::Location;

/// `if pred { then_fn(operand) } else { else_fn(operand) }` on a bool scalar
/// tensor (JAX's `lax.cond`). Both branches must return trees of the same
/// structure, shapes and dtypes.
#[track_caller]
pub fn cond<S, R>(
    pred: &Tensor,
    then_fn: impl FnOnce(S) -> R + Clone,
    else_fn: impl FnOnce(S) -> R + Clone,
    operand: S,
) -> R
where
    S: Tree,
    R: Tree,
{
    let loc = Location::caller();
    let names = ["the result"];
    let branch = move |then: bool, (s,): (S,)| {
        if then {
            (then_fn.clone()(s),)
        } else {
            (else_fn.clone()(s),)
        }
    };
    staged_cond(pred, &names, (operand,), branch, loc).0
}

/// The `if` of a jitted body on a tensor condition (see `staging.rs`).
pub(crate) fn staged_cond<S, R, F>(
    pred: &Tensor,
    names: &[&str],
    state: S,
    branch: F,
    loc: SourceLoc,
) -> R
where
    S: Tree + Components,
    R: Tree + Components,
    F: FnOnce(bool, S) -> R + Clone,
{
    subgraph::check_predicate("if", pred, loc);
    // Inside a trace a tensor condition is always staged (even a concrete
    // one), so a program's code never depends on data.
    if !crate::trace::is_tracing() {
        let b = pred.item::<bool>().expect("a concrete bool scalar");
        return branch(b, state);
    }
    subgraph::trace_cond(pred, names, state, branch, loc)
}
