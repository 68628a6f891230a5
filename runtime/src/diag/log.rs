//! Cache diagnostics: where they go and which are on.
//!
//! - `JITFUSE_LOG=compiles` logs every compilation (function, signature,
//!   time, kernels, bytes and, on a recompile, what changed);
//!   `JITFUSE_LOG=cache` logs evictions, `JITFUSE_LOG=fusion` the near
//!   misses of pattern fusion (an attention left unfused, and why); lists
//!   work (`compiles,cache`), as does `all`. Read once, on first use; [`set_log`] overrides it.
//! - `JITFUSE_RECOMPILE_WARN=N` (default 8; `off` disables): warn once when a
//!   function has compiled more than `N` signatures. Per function:
//!   `FnCache::set_recompile_warning`.
//!
//! Lines go to stderr, or to the sink set with [`set_log_sink`] (tests, or
//! a program routing them to its own logger). Warnings are always emitted.

use once_cell::sync::Lazy;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

/// A kind of diagnostic line that `JITFUSE_LOG` turns on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Category {
    /// One line per compilation.
    Compiles,
    /// Evictions from a bounded cache.
    Cache,
    /// Patterns a fusion pass recognised only in part (why it left them).
    Fusion,
}

const COMPILES: u8 = 1;
const CACHE: u8 = 2;
const FUSION: u8 = 4;
/// Set in `OVERRIDE` when [`set_log`] replaced the environment's choice.
const OVERRIDDEN: u8 = 0x80;

fn parse(spec: &str) -> u8 {
    spec.split(|c: char| c == ',' || c.is_whitespace())
        .map(|w| match w.trim().to_ascii_lowercase().as_str() {
            "compiles" | "compile" => COMPILES,
            "cache" => CACHE,
            "fusion" => FUSION,
            "all" => COMPILES | CACHE | FUSION,
            _ => 0,
        })
        .fold(0, |a, b| a | b)
}

static ENV: Lazy<u8> = Lazy::new(|| parse(&std::env::var("JITFUSE_LOG").unwrap_or_default()));
static OVERRIDE: AtomicU8 = AtomicU8::new(0);

/// Turn diagnostic categories on or off at run time, with the syntax of
/// `JITFUSE_LOG` (`"compiles"`, `"compiles,cache"`, `"all"`, `""` for none);
/// `None` goes back to the environment variable.
pub fn set_log(spec: Option<&str>) {
    let v = match spec {
        Some(s) => OVERRIDDEN | parse(s),
        None => 0,
    };
    OVERRIDE.store(v, Ordering::Relaxed);
}

pub(crate) fn enabled(c: Category) -> bool {
    let o = OVERRIDE.load(Ordering::Relaxed);
    let bits = if o & OVERRIDDEN != 0 { o } else { *ENV };
    bits & match c {
        Category::Compiles => COMPILES,
        Category::Cache => CACHE,
        Category::Fusion => FUSION,
    } != 0
}

/// Where diagnostic lines go instead of stderr.
pub type LogSink = Arc<dyn Fn(&str) + Send + Sync>;

static SINK: RwLock<Option<LogSink>> = RwLock::new(None);

/// Send diagnostic lines (compiles, evictions, recompile warnings) to `sink`
/// instead of stderr (`None`: stderr again). Returns the previous sink.
pub fn set_log_sink(sink: Option<LogSink>) -> Option<LogSink> {
    std::mem::replace(&mut *SINK.write().unwrap_or_else(|e| e.into_inner()), sink)
}

/// Write one diagnostic line (no trailing newline) to the sink or stderr.
pub(crate) fn emit(line: &str) {
    let sink = SINK.read().unwrap_or_else(|e| e.into_inner()).clone();
    match sink {
        Some(s) => s(line),
        None => eprintln!("{line}"),
    }
}

/// The default recompile-warning threshold: `JITFUSE_RECOMPILE_WARN`, 8 if
/// unset or not a number, `None` for `off`.
pub(crate) fn default_recompile_warning() -> Option<usize> {
    static W: Lazy<Option<usize>> = Lazy::new(|| match std::env::var("JITFUSE_RECOMPILE_WARN") {
        Ok(v) if matches!(v.trim(), "off" | "none" | "never") => None,
        Ok(v) => Some(v.trim().parse().unwrap_or(8)),
        Err(_) => Some(8),
    });
    *W
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_parse_as_lists() {
        assert_eq!(parse("compiles"), COMPILES);
        assert_eq!(parse("compiles,cache"), COMPILES | CACHE);
        assert_eq!(parse(" cache , compiles "), COMPILES | CACHE);
        assert_eq!(parse("all"), COMPILES | CACHE | FUSION);
        assert_eq!(parse("fusion"), FUSION);
        assert_eq!(parse(""), 0);
        assert_eq!(parse("nonsense"), 0);
    }
}
