//! Internal failures: a panic in jitfuse's own code (tracing machinery,
//! passes, planning, code generation, running a program) must reach the
//! caller of `try_call` as an `ErrorKind::Internal` error, never as a panic,
//! and be told apart from a panic of the user's traced body (`Panic`).
//!
//! The traced body and jitfuse's tensor ops run interleaved on one stack,
//! so `trace::trace` learns which one panicked from [`Scope`]: jitfuse code
//! called by the body (`apply`, `push_node`) runs inside one, and a scope
//! dropped while the thread unwinds marks the panic as internal. Compiling
//! and running are caught as a whole in `jit/cache.rs`.

use std::cell::Cell;

thread_local! {
    static INJECT: Cell<Option<&'static str>> = const { Cell::new(None) };
    static INTERNAL_PANIC: Cell<bool> = const { Cell::new(false) };
    static CATCHING: Cell<u32> = const { Cell::new(0) };
}

/// `catch_unwind` of `f`, known while it runs: a panic in it becomes an error of jitfuse's
/// (`panic_is_caught`), where `jitfuse::dist` must not bring the other processes down.
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            CATCHING.with(|c| c.set(c.get() - 1));
        }
    }
    CATCHING.with(|c| c.set(c.get() + 1));
    let _leave = Leave;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
}

/// Whether a panic on this thread now would be caught by jitfuse (`catch`) and reported as
/// an error rather than unwinding out of it.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn panic_is_caught() -> bool {
    CATCHING.with(|c| c.get() > 0)
}

/// Test hook: make the internal stage `stage` (`"trace"`, `"simplify"`,
/// `"codegen"`, `"run"`) panic on this thread, as a bug there would (`None`:
/// stop). Not part of the API.
#[doc(hidden)]
pub fn inject_panic(stage: Option<&'static str>) {
    INJECT.with(|c| c.set(stage));
}

/// Panics when the test hook asks `stage` to.
pub(crate) fn injection_point(stage: &'static str) {
    if INJECT.with(|c| c.get()) == Some(stage) {
        panic!("injected internal failure in `{stage}`");
    }
}

/// While alive, the code running is jitfuse's own: a panic unwinding
/// through it is an internal failure.
pub(crate) struct Scope;

impl Scope {
    pub(crate) fn enter() -> Scope {
        Scope
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if std::thread::panicking() {
            INTERNAL_PANIC.with(|c| c.set(true));
        }
    }
}

/// Whether a panic unwound through a [`Scope`] since the last call (and
/// forget it).
pub(crate) fn take_internal_panic() -> bool {
    INTERNAL_PANIC.with(|c| c.replace(false))
}
