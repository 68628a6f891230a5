//! How the figures users read print: byte counts in B/KiB/MiB/GiB, and the
//! `Display` of `MemoryAnalysis`, `CacheStats` and `EagerStats`, each figure with
//! what it means (their `Debug` stays the plain struct, for tests and logs).

use crate::eager::{EagerStats, EAGER_CACHE_BYTES};
use crate::exec::MemoryAnalysis;
use crate::jit::CacheStats;
use std::fmt;

pub use crate::units::human_bytes;

/// A duration in the unit that keeps three or so digits: `850 ns`, `12.3 us`, `4.56 ms`,
/// `1.23 s`.
pub fn human_duration(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-6 {
        format!("{} ns", d.as_nanos())
    } else if s < 1e-3 {
        format!("{:.1} us", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// `n` with its noun: `1 hit`, `3 hits`.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Several lines: the peak and what it is made of, then what each part means.
impl fmt::Display for MemoryAnalysis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = human_bytes;
        writeln!(
            f,
            "peak {} = arguments {} + outputs {} + temporaries {} - written in place {}",
            h(self.peak_bytes),
            h(self.argument_bytes),
            h(self.output_bytes),
            h(self.temp_bytes),
            h(self.alias_bytes)
        )?;
        if self.library_bytes > 0 {
            writeln!(
                f,
                "  besides: GEMM workspace of up to {} over the threads (packing buffers and \
                 per-thread slabs the matrix-product libraries allocate themselves, outside \
                 the arena)",
                h(self.library_bytes)
            )?;
        }
        writeln!(
            f,
            "  temporaries: one arena of {}, reused by every call; at most {} of them are live \
             at any one step, the least any plan could hold{}",
            h(self.temp_bytes),
            h(self.lower_bound_bytes),
            if self.hosted_bytes > 0 {
                format!(
                    " (and up to {} more live inside the outputs' and donated arguments' buffers)",
                    h(self.hosted_bytes)
                )
            } else {
                String::new()
            }
        )?;
        if self.loop_stack_bytes > 0 {
            writeln!(
                f,
                "  stacked by loops: {} of the temporaries are values loops stack to read back \
                 (the carries a loop's gradient keeps)",
                h(self.loop_stack_bytes)
            )?;
        }
        if self.kept_argument_bytes > 0 {
            writeln!(
                f,
                "  when the caller keeps the donatable arguments: {} more for the temporaries \
                 planned inside them, and the outputs planned into them fresh",
                h(self.kept_argument_bytes)
            )?;
        }
        if self.alias_bytes > 0 {
            writeln!(
                f,
                "  written in place: {} of outputs go into donated arguments' buffers",
                h(self.alias_bytes)
            )?;
        }
        writeln!(
            f,
            "  evaluated op by op, the intermediates would take {}",
            h(self.eager_bytes)
        )?;
        write!(
            f,
            "  held for the program's life: machine code {}, its description (graph, schedule, \
             plan) {}",
            h(self.code_bytes),
            h(self.program_bytes)
        )
    }
}

/// One line: calls, hits and misses, compile time, what is cached.
impl fmt::Display for CacheStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} (compiled programs reused), {} (traced and compiled, {} in all); {} cached \
             in {} (code, arenas, descriptions)",
            plural(self.hits + self.misses, "call", "calls"),
            plural(self.hits, "hit", "hits"),
            plural(self.misses, "miss", "misses"),
            human_duration(self.compile_time),
            plural(self.entries as u64, "signature", "signatures"),
            human_bytes(self.cached_bytes)
        )?;
        if self.evictions > 0 {
            write!(
                f,
                "; {} dropped to keep within the cache limit",
                plural(self.evictions, "program", "programs")
            )?;
        }
        Ok(())
    }
}

/// One line: the eager ops' programs compiled, held and dropped.
impl fmt::Display for EagerStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "eager ops: {} compiled; {} held in {} (code, arenas, descriptions; at most {})",
            plural(self.compiled, "single-op program", "single-op programs"),
            plural(self.entries as u64, "program", "programs"),
            human_bytes(self.cached_bytes),
            human_bytes(EAGER_CACHE_BYTES)
        )?;
        if self.evicted > 0 {
            write!(
                f,
                "; {} dropped to keep within that",
                plural(self.evicted, "program", "programs")
            )?;
        }
        if self.refused > 0 {
            write!(
                f,
                "; {} too large to keep (their ops run one by one)",
                plural(self.refused, "program", "programs")
            )?;
        }
        Ok(())
    }
}
