//! Tracing the closures of control-flow ops into sub-graphs and recording
//! the control-flow node in the enclosing trace.

use super::staging::Components;
use crate::error::type_str;
use crate::trace::fail;
use crate::{DType, Error, SourceLoc, Tensor, Tree};

/// A predicate must be a bool scalar.
pub(crate) fn check_predicate(what: &str, pred: &Tensor, loc: SourceLoc) {
    if pred.dtype() != DType::Bool || !pred.shape().is_empty() {
        fail(
            Error::shape(format!(
                "the condition of `{what}` must be a bool tensor of shape [], found {}{}",
                type_str(pred.dtype(), pred.shape()),
                if pred.shape().is_empty() {
                    "; compare it (e.g. `x.gt(0.0)`)"
                } else {
                    "; for an elementwise choice use `select(cond, a, b)`, or reduce the condition to one value first"
                }
            ))
            .at(loc),
        );
    }
}

/// Loop bounds must be integer scalars of one dtype.
pub(crate) fn check_bounds(start: &Tensor, end: &Tensor, loc: SourceLoc) -> (Tensor, Tensor) {
    for (what, t) in [("start", start), ("end", end)] {
        if !t.dtype().is_int() || !t.shape().is_empty() {
            fail(
                Error::shape(format!(
                    "the {what} of a counted `for` loop must be an integer scalar tensor, found {}",
                    type_str(t.dtype(), t.shape())
                ))
                .at(loc),
            );
        }
    }
    let d = if start.dtype() == DType::I64 || end.dtype() == DType::I64 {
        DType::I64
    } else {
        start.dtype()
    };
    (start.cast(d), end.cast(d))
}

/// Whether a control-flow op must be staged: we are tracing (then it is,
/// even on concrete values, so a loop's code never depends on its data).
pub(crate) fn tracing_involves<S: Tree>(pred: &Tensor, state: &S) -> bool {
    let _ = (pred, state);
    crate::trace::is_tracing()
}

pub(crate) fn trace_cond<S, R, F>(
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
    let _ = (pred, names, state, branch);
    fail(
        Error::new(
            crate::ErrorKind::Codegen,
            "staged `if` is not implemented yet",
        )
        .at(loc),
    )
}

pub(crate) fn trace_while<S, FC, FB>(
    names: &[&str],
    state: S,
    cond: FC,
    body: FB,
    loc: SourceLoc,
) -> S
where
    S: Tree + Components,
    FC: FnMut(S) -> (Tensor, S),
    FB: FnMut(S) -> S,
{
    let _ = (names, state, cond, body);
    fail(
        Error::new(
            crate::ErrorKind::Codegen,
            "staged `while` is not implemented yet",
        )
        .at(loc),
    )
}

pub(crate) fn trace_counted<S, F>(
    names: &[&str],
    start: Tensor,
    end: Tensor,
    state: S,
    body: F,
    loc: SourceLoc,
) -> S
where
    S: Tree + Components,
    F: FnMut(Tensor, S) -> S,
{
    let _ = (names, start, end, state, body);
    fail(
        Error::new(
            crate::ErrorKind::Codegen,
            "staged `for` is not implemented yet",
        )
        .at(loc),
    )
}

pub(crate) fn scan_tree<C: Tree, X: Tree, Y: Tree>(
    f: impl FnMut(C, X) -> (C, Y),
    init: C,
    xs: &X,
    loc: SourceLoc,
) -> (C, Y) {
    scan_tree_at(f, init, xs, loc)
}

pub(crate) fn scan_tree_at<C: Tree, X: Tree, Y: Tree>(
    f: impl FnMut(C, X) -> (C, Y),
    init: C,
    xs: &X,
    loc: SourceLoc,
) -> (C, Y) {
    let _ = (f, init, xs);
    fail(Error::new(crate::ErrorKind::Codegen, "scan is not implemented yet").at(loc))
}
