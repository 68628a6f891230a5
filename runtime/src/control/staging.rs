//! What `#[jit]`'s rewriting of `if`, `while` and `for` calls (through
//! `jitfuse::__private`). The macro cannot see types, so it rewrites every
//! `if`/`while`/`for` of a jitted body into a call here and lets the trait
//! impls decide by the condition's type:
//!
//! - a `bool` condition (or an ordinary iterator) runs at trace time, exactly
//!   as the plain Rust would (only the taken branch runs);
//! - a `Tensor` condition (a traced bool of shape `[]`) is staged into the
//!   graph: `cond`, `while_loop`, a counted loop or a `scan`.
//!
//! The rewritten forms (the macro generates them; `names` lists the
//! variables in the order of the tuple they travel in, for error messages):
//!
//! ```text
//! if c { A } else { B }      =>  (v, a, b, x) = staged_if(&(c), &["if", "a", "b", "x"], (a, b),
//!                                    |then, (mut a, mut b)| { let x; let v = if then { A } else { B }; (v, a, b, x) })
//! while c { B }              =>  (a, b) = staged_while(&["a", "b"], (a, b),
//!                                    |(a, b)| { let c = c; (c, (a, b)) }, |(mut a, mut b)| { B; (a, b) })
//! for p in it { B }          =>  (a, b) = staged_for(&["a", "b"], it, (a, b),
//!                                    |p, (mut a, mut b)| { B; (a, b) })
//! for p in x..y { B }        =>  (a, b) = staged_for_range(&["a", "b"], x..y, (a, b),
//!                                    |p, (mut a, mut b)| { B; (a, b) })
//! ```
//! State tuples are flat tuples (at most 12 elements; the macro nests the
//! rest into a last element). A branch, body or condition that leaves the
//! construct (`return`, `break`, `continue`, `?`) cannot be staged: the macro
//! keeps the plain Rust and asserts with [`static_if_cond`],
//! [`static_while_cond`] or [`static_iter`] that it is decided at trace time.

use crate::{SourceLoc, Tensor, Tree};
use std::panic::Location;

/// A flat tuple of trees: how many leaves each element has (to name the
/// variable whose shape or dtype differs between branches or iterations).
pub trait Components {
    /// Leaves of each element, in order.
    fn leaf_counts(&self) -> Vec<usize>;
}

impl Components for () {
    fn leaf_counts(&self) -> Vec<usize> {
        Vec::new()
    }
}

macro_rules! tuple_components {
    ($($t:ident $i:tt),*) => {
        impl<$($t: Tree),*> Components for ($($t,)*) {
            fn leaf_counts(&self) -> Vec<usize> {
                vec![$(self.$i.leaves().len()),*]
            }
        }
    };
}
tuple_components!(A 0);
tuple_components!(A 0, B 1);
tuple_components!(A 0, B 1, C 2);
tuple_components!(A 0, B 1, C 2, D 3);
tuple_components!(A 0, B 1, C 2, D 3, E 4);
tuple_components!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_components!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_components!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_components!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_components!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_components!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_components!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

/// The condition of an `if`: `&bool` runs one branch at trace time; `&Tensor`
/// (a bool scalar) stages a `cond` when tracing (both branches traced) and
/// runs one branch when evaluating eagerly.
#[diagnostic::on_unimplemented(
    message = "an `if` in a #[jit] function needs a `bool` or a `Tensor` condition, not `{Self}`",
    label = "this condition",
    note = "on a traced `Tensor` condition, every variable the branches assign (and the `if`'s value) must be a tensor or a tree of tensors, and the branches may only capture what can be cloned"
)]
pub trait IfCond<S, R, F> {
    /// Run `branch` on `state` now (a `bool`) or stage both branches as a `cond` (a traced
    /// scalar bool); `names` name the state's variables in errors.
    fn run_if(self, names: &[&str], state: S, branch: F, loc: SourceLoc) -> R;
}

impl<S, R, F: FnOnce(bool, S) -> R> IfCond<S, R, F> for &bool {
    fn run_if(self, _: &[&str], state: S, branch: F, _: SourceLoc) -> R {
        branch(*self, state)
    }
}

impl<S, R, F> IfCond<S, R, F> for &Tensor
where
    S: Tree + Components,
    R: Tree + Components,
    F: FnOnce(bool, S) -> R + Clone,
{
    fn run_if(self, names: &[&str], state: S, branch: F, loc: SourceLoc) -> R {
        super::cond::staged_cond(self, names, state, branch, loc)
    }
}

/// `if c { .. } else { .. }` of a jitted body (see the module docs).
#[track_caller]
pub fn staged_if<C, S, R, F>(cond: C, names: &[&str], state: S, branch: F) -> R
where
    C: IfCond<S, R, F>,
    F: FnOnce(bool, S) -> R,
{
    cond.run_if(names, state, branch, Location::caller())
}

/// The condition of a `while`: `bool` loops at trace time; `Tensor` (a bool
/// scalar) stages a `while_loop` when tracing.
#[diagnostic::on_unimplemented(
    message = "a `while` in a #[jit] function needs a `bool` or a `Tensor` condition, not `{Self}`",
    label = "this condition",
    note = "on a traced `Tensor` condition, every variable the loop assigns must be a tensor or a tree of tensors"
)]
pub trait WhileCond<S>: Sized {
    /// Loop `body` while `cond` holds: in Rust (a `bool` condition) or as a staged
    /// `while_loop` (a traced scalar bool); `names` name the state's variables in errors.
    fn run_while<FC, FB>(names: &[&str], state: S, cond: FC, body: FB, loc: SourceLoc) -> S
    where
        FC: FnMut(S) -> (Self, S),
        FB: FnMut(S) -> S;
}

impl<S> WhileCond<S> for bool {
    fn run_while<FC, FB>(_: &[&str], mut state: S, mut cond: FC, mut body: FB, _: SourceLoc) -> S
    where
        FC: FnMut(S) -> (bool, S),
        FB: FnMut(S) -> S,
    {
        loop {
            let (c, s) = cond(state);
            if !c {
                return s;
            }
            state = body(s);
        }
    }
}

impl<S: Tree + Components> WhileCond<S> for Tensor {
    fn run_while<FC, FB>(names: &[&str], state: S, cond: FC, body: FB, loc: SourceLoc) -> S
    where
        FC: FnMut(S) -> (Tensor, S),
        FB: FnMut(S) -> S,
    {
        super::while_loop::staged_while(names, state, cond, body, loc)
    }
}

/// `while c { .. }` of a jitted body (see the module docs).
#[track_caller]
pub fn staged_while<S, C, FC, FB>(names: &[&str], state: S, cond: FC, body: FB) -> S
where
    C: WhileCond<S>,
    FC: FnMut(S) -> (C, S),
    FB: FnMut(S) -> S,
{
    C::run_while(names, state, cond, body, Location::caller())
}

/// What a `for` loops over (other than a range written `a..b`, see
/// [`staged_for_range`]): any `IntoIterator` runs at trace time;
/// `tensor.iter_axis(0)` stages a `scan` over the leading axis, and
/// `zip_axis((&xs, &ys), 0)` one over the leading axes of several tensors.
#[diagnostic::on_unimplemented(
    message = "a `for` in a #[jit] function loops over an iterator, a range `a..b` (integer or `Tensor` bounds), `tensor.iter_axis(0)` or `zip_axis((&xs, &ys), 0)`, not `{Self}`",
    label = "this iterable",
    note = "only `a..b` is staged on `Tensor` bounds: write `a..(b + 1)` for `a..=b`"
)]
pub trait ForIter<S> {
    /// What each iteration receives.
    type Item;
    /// Run `body` for each item: unrolled in Rust (a static iterator) or as a staged `scan`
    /// (an `AxisIter` over a traced tensor's axis).
    fn run_for<F: FnMut(Self::Item, S) -> S>(
        self,
        names: &[&str],
        state: S,
        body: F,
        loc: SourceLoc,
    ) -> S;
}

// Not recommended: a type that is no iterator gets `ForIter`'s message,
// not `IntoIterator`'s.
#[diagnostic::do_not_recommend]
impl<I: IntoIterator, S> ForIter<S> for I {
    type Item = I::Item;
    fn run_for<F: FnMut(I::Item, S) -> S>(
        self,
        _: &[&str],
        mut state: S,
        mut body: F,
        _: SourceLoc,
    ) -> S {
        for x in self {
            state = body(x, state);
        }
        state
    }
}

impl<S: Tree + Components> ForIter<S> for super::AxisIter {
    type Item = Tensor;
    fn run_for<F: FnMut(Tensor, S) -> S>(
        self,
        names: &[&str],
        state: S,
        body: F,
        loc: SourceLoc,
    ) -> S {
        super::scan::staged_scan_for(names, self, state, body, loc)
    }
}

impl<S: Tree + Components, I: super::ZipItem> ForIter<S> for super::ZipAxis<I> {
    type Item = I;
    fn run_for<F: FnMut(I, S) -> S>(
        self,
        names: &[&str],
        state: S,
        mut body: F,
        loc: SourceLoc,
    ) -> S {
        super::scan::staged_zip_for(
            names,
            self.iters,
            state,
            |xs, s| body(I::from_slices(xs), s),
            loc,
        )
    }
}

/// `for p in it { .. }` of a jitted body (see the module docs).
#[track_caller]
pub fn staged_for<I, S, F>(names: &[&str], iterable: I, state: S, body: F) -> S
where
    I: ForIter<S>,
    F: FnMut(I::Item, S) -> S,
{
    iterable.run_for(names, state, body, Location::caller())
}

/// The element type of a range `a..b` a `for` loops over: Rust integers run
/// the loop at trace time (unrolled); `Tensor` / `&Tensor` bounds (integer
/// scalars) stage a counted loop whose body sees the index as a tensor.
#[diagnostic::on_unimplemented(
    message = "a `for` over a range in a #[jit] function needs integer or `Tensor` bounds, not `{Self}`",
    label = "this range",
    note = "on `Tensor` bounds, every variable the loop assigns must be a tensor or a tree of tensors"
)]
pub trait RangeElem<S>: Sized {
    /// What each iteration receives (the index, concrete or traced).
    type Item;
    /// Run `body` over `range`: in Rust (integer bounds) or as a staged loop (a traced
    /// bound).
    fn run_range<F: FnMut(Self::Item, S) -> S>(
        range: std::ops::Range<Self>,
        names: &[&str],
        state: S,
        body: F,
        loc: SourceLoc,
    ) -> S;
    /// `run_range` over `start..=end`.
    fn run_range_inclusive<F: FnMut(Self::Item, S) -> S>(
        range: std::ops::RangeInclusive<Self>,
        names: &[&str],
        state: S,
        body: F,
        loc: SourceLoc,
    ) -> S;
}

macro_rules! static_range {
    ($($t:ty),*) => {$(
        impl<S> RangeElem<S> for $t {
            type Item = $t;
            fn run_range<F: FnMut($t, S) -> S>(
                range: std::ops::Range<$t>,
                _: &[&str],
                mut state: S,
                mut body: F,
                _: SourceLoc,
            ) -> S {
                for i in range {
                    state = body(i, state);
                }
                state
            }
            fn run_range_inclusive<F: FnMut($t, S) -> S>(
                range: std::ops::RangeInclusive<$t>,
                _: &[&str],
                mut state: S,
                mut body: F,
                _: SourceLoc,
            ) -> S {
                for i in range {
                    state = body(i, state);
                }
                state
            }
        }
    )*};
}
static_range!(usize, isize, u8, u16, u32, u64, i8, i16, i32, i64, u128, i128);

impl<S: Tree + Components> RangeElem<S> for Tensor {
    type Item = Tensor;
    fn run_range<F: FnMut(Tensor, S) -> S>(
        range: std::ops::Range<Tensor>,
        names: &[&str],
        state: S,
        body: F,
        loc: SourceLoc,
    ) -> S {
        super::while_loop::staged_counted(names, range.start, range.end, state, body, loc)
    }
    fn run_range_inclusive<F: FnMut(Tensor, S) -> S>(
        range: std::ops::RangeInclusive<Tensor>,
        names: &[&str],
        state: S,
        body: F,
        loc: SourceLoc,
    ) -> S {
        let (start, end) = range.into_inner();
        let end = &end + 1;
        super::while_loop::staged_counted(names, start, end, state, body, loc)
    }
}

impl<S: Tree + Components> RangeElem<S> for &Tensor {
    type Item = Tensor;
    fn run_range<F: FnMut(Tensor, S) -> S>(
        range: std::ops::Range<&Tensor>,
        names: &[&str],
        state: S,
        body: F,
        loc: SourceLoc,
    ) -> S {
        super::while_loop::staged_counted(
            names,
            range.start.clone(),
            range.end.clone(),
            state,
            body,
            loc,
        )
    }
    fn run_range_inclusive<F: FnMut(Tensor, S) -> S>(
        range: std::ops::RangeInclusive<&Tensor>,
        names: &[&str],
        state: S,
        body: F,
        loc: SourceLoc,
    ) -> S {
        let (start, end) = range.into_inner();
        super::while_loop::staged_counted(names, start.clone(), end + 1, state, body, loc)
    }
}

/// `for p in a..b { .. }` of a jitted body (the macro sees the range
/// syntactically and passes it whole, so Rust infers one bound type).
#[track_caller]
pub fn staged_for_range<T, S, F>(names: &[&str], range: std::ops::Range<T>, state: S, body: F) -> S
where
    T: RangeElem<S>,
    F: FnMut(T::Item, S) -> S,
{
    T::run_range(range, names, state, body, Location::caller())
}

/// `for p in a..=b { .. }` of a jitted body (see [`staged_for_range`]).
#[track_caller]
pub fn staged_for_range_inclusive<T, S, F>(
    names: &[&str],
    range: std::ops::RangeInclusive<T>,
    state: S,
    body: F,
) -> S
where
    T: RangeElem<S>,
    F: FnMut(T::Item, S) -> S,
{
    T::run_range_inclusive(range, names, state, body, Location::caller())
}

/// A condition the macro kept as plain Rust because a branch leaves the `if`.
#[diagnostic::on_unimplemented(
    message = "this `if` cannot be staged: a branch leaves it with `return`, `break`, `continue` or `?`, so its condition must be a `bool` known at trace time, not `{Self}`",
    label = "a traced condition here",
    note = "compute both outcomes and pick one with `select`, or move the early exit out of the branch; a loop that ends on a traced condition is written `while cond {{ .. }}`, which is staged"
)]
pub trait StaticIfCond {
    /// The condition's value.
    fn value(self) -> bool;
}
impl StaticIfCond for bool {
    fn value(self) -> bool {
        self
    }
}

/// The condition of a plain-Rust `if` the macro could not stage.
pub fn static_if_cond<C: StaticIfCond>(c: C) -> bool {
    c.value()
}

/// A `while` condition the macro kept as plain Rust because the body leaves
/// the loop early.
#[diagnostic::on_unimplemented(
    message = "this `while` cannot be staged: its body uses `break`, `continue`, `return` or `?`, so its condition must be a `bool` known at trace time, not `{Self}`",
    label = "a traced condition here",
    note = "a staged loop exits only through its condition: fold the early exit into the `while` condition"
)]
pub trait StaticWhileCond {
    /// The condition's value.
    fn value(self) -> bool;
}
impl StaticWhileCond for bool {
    fn value(self) -> bool {
        self
    }
}

/// The condition of a plain-Rust `while` the macro could not stage.
pub fn static_while_cond<C: StaticWhileCond>(c: C) -> bool {
    c.value()
}

/// An iterable of a `for` the macro kept as plain Rust because the body
/// leaves the loop early.
#[diagnostic::on_unimplemented(
    message = "this `for` cannot be staged: its body uses `break`, `continue`, `return` or `?`, so it must loop over an ordinary iterator, not `{Self}`",
    label = "a traced range here",
    note = "a staged loop runs its whole range: compute a mask with `select` instead of leaving early"
)]
pub trait StaticIter {
    /// The iterator the loop runs in Rust.
    type Iter: IntoIterator;
    /// The iterator unrolled at trace time.
    fn into_static(self) -> Self::Iter;
}
#[diagnostic::do_not_recommend]
impl<I: IntoIterator> StaticIter for I {
    type Iter = I;
    fn into_static(self) -> I {
        self
    }
}

/// The iterable of a plain-Rust `for` the macro could not stage.
pub fn static_iter<I: StaticIter>(i: I) -> I::Iter {
    i.into_static()
}
