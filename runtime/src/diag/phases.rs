//! Where compile time goes: a per-phase breakdown (trace, autodiff,
//! simplify, remat, partition, schedule, plan, codegen, ...) of one
//! compilation, for `JITFUSE_LOG=compiles` and `benches/compile_time.rs`.
//!
//! Phases nest (the schedule measures candidate orders with the planner,
//! remat re-partitions): each phase is charged its *self* time, what it
//! spent outside the phases nested in it, so the shares add up to the
//! whole. Nothing is recorded outside [`collect`]; a phase then costs one
//! thread-local check.

use std::cell::RefCell;
use std::time::{Duration, Instant};

#[derive(Default)]
struct State {
    /// Depth of `collect` calls on this thread (0: not collecting).
    depth: usize,
    /// Self time and number of entries per phase, in first-entered order.
    totals: Vec<(&'static str, Duration, usize)>,
    /// Open phases: name, start, time spent in phases nested in it.
    open: Vec<(&'static str, Instant, Duration)>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Time of one phase of one compilation: self time and how often it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    pub name: &'static str,
    pub time: Duration,
    pub count: usize,
}

/// Run `f`, charging its time to the phase `name` when a [`collect`] is
/// active on this thread.
pub(crate) fn phase<R>(name: &'static str, f: impl FnOnce() -> R) -> R {
    let _t = Timer::start(name);
    f()
}

/// A phase that lasts until the guard is dropped (dropped on unwinding
/// too: errors inside a trace unwind through it).
pub(crate) struct Timer(bool);

impl Timer {
    pub(crate) fn start(name: &'static str) -> Timer {
        Timer(STATE.with(|s| {
            let mut s = s.borrow_mut();
            if s.depth == 0 {
                return false;
            }
            s.open.push((name, Instant::now(), Duration::ZERO));
            true
        }))
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        if !self.0 {
            return;
        }
        STATE.with(|s| {
            let mut s = s.borrow_mut();
            let Some((name, start, nested)) = s.open.pop() else {
                return;
            };
            let all = start.elapsed();
            let own = all.saturating_sub(nested);
            if let Some(parent) = s.open.last_mut() {
                parent.2 += all;
            }
            match s.totals.iter_mut().find(|t| t.0 == name) {
                Some(t) => {
                    t.1 += own;
                    t.2 += 1;
                }
                None => s.totals.push((name, own, 1)),
            }
        });
    }
}

/// Run `f` and return, beside its result, the phases it went through (the
/// time outside every named phase is charged to `"other"`). Nested calls
/// (a control-flow node's sub-programs compiled inside a compilation)
/// report to the outermost one.
pub(crate) fn collect<R>(f: impl FnOnce() -> R) -> (R, Vec<Phase>) {
    let outer = STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.depth += 1;
        s.depth == 1
    });
    struct Leave(bool);
    impl Drop for Leave {
        fn drop(&mut self) {
            STATE.with(|s| {
                let mut s = s.borrow_mut();
                s.depth -= 1;
                if self.0 {
                    s.totals.clear();
                    s.open.clear();
                }
            });
        }
    }
    let leave = Leave(outer);
    let r = phase("other", f);
    let phases = if outer {
        STATE.with(|s| {
            s.borrow()
                .totals
                .iter()
                .map(|&(name, time, count)| Phase { name, time, count })
                .collect()
        })
    } else {
        Vec::new()
    };
    drop(leave);
    (r, phases)
}

/// `trace 1.2 ms, simplify 0.3 ms (2×), ...`, the largest first.
pub(crate) fn describe(phases: &[Phase]) -> String {
    let mut ps: Vec<&Phase> = phases.iter().collect();
    ps.sort_by(|a, b| b.time.cmp(&a.time).then(a.name.cmp(b.name)));
    ps.iter()
        .map(|p| {
            let ms = p.time.as_secs_f64() * 1e3;
            if p.count > 1 {
                format!("{} {ms:.1} ms ({}×)", p.name, p.count)
            } else {
                format!("{} {ms:.1} ms", p.name)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_phases_are_charged_their_self_time() {
        let spin = |d: Duration| {
            let t = Instant::now();
            while t.elapsed() < d {}
        };
        let t = Instant::now();
        let ((), ps) = collect(|| {
            phase("outer", || {
                spin(Duration::from_millis(3));
                phase("inner", || spin(Duration::from_millis(5)));
                phase("inner", || spin(Duration::from_millis(5)));
            })
        });
        let wall = t.elapsed();
        let get = |n: &str| ps.iter().find(|p| p.name == n).unwrap().clone();
        let (outer, inner) = (get("outer"), get("inner"));
        assert_eq!((outer.count, inner.count), (1, 2));
        assert!(inner.time >= Duration::from_millis(10));
        // The outer phase's own time excludes its inner phases: the shares
        // add up to no more than the whole.
        assert!(outer.time >= Duration::from_millis(3));
        let sum: Duration = ps.iter().map(|p| p.time).sum();
        assert!(sum <= wall, "{ps:?} add up to more than {wall:?}");
        // Outside `collect` nothing is recorded.
        phase("stray", || ());
        let ((), ps) = collect(|| ());
        assert!(ps.iter().all(|p| p.name != "stray" && p.name != "outer"));
    }
}
