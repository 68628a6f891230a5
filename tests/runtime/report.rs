//! What users read: byte counts, `MemoryAnalysis` and `CacheStats` as text.

use expect_test::expect;
use jitfuse::prelude::*;
use jitfuse::{human_bytes, CacheStats, MemoryAnalysis};
use std::time::Duration;

#[test]
fn byte_counts_print_in_the_unit_a_person_reads() {
    let cases = [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (24 << 20, "24.0 MiB"),
        ((1 << 30) - 1, "1024.0 MiB"),
        (1 << 30, "1.00 GiB"),
        (2068981760, "1.93 GiB"),
        (1 << 40, "1.00 TiB"),
        (128 << 40, "128.00 TiB"),
        ((3 << 50) / 2, "1.50 PiB"),
        (usize::MAX, "16.00 EiB"),
    ];
    for (bytes, text) in cases {
        assert_eq!(human_bytes(bytes), text, "{bytes} bytes");
    }
}

#[test]
fn a_memory_analysis_prints_each_figure_with_its_meaning() {
    let m = MemoryAnalysis {
        argument_bytes: 9 << 20,
        output_bytes: 9 << 20,
        temp_bytes: 24 << 20,
        alias_bytes: 9 << 20,
        code_bytes: 126865,
        program_bytes: 9 << 10,
        library_bytes: 0,
        eager_bytes: 300 << 20,
        lower_bound_bytes: 23 << 20,
        peak_bytes: 33 << 20,
        hosted_bytes: 2 << 20,
        kept_argument_bytes: 1 << 20,
        loop_stack_bytes: 6 << 20,
    };
    expect![[r#"
        peak 33.0 MiB = arguments 9.0 MiB + outputs 9.0 MiB + temporaries 24.0 MiB - written in place 9.0 MiB
          temporaries: one arena of 24.0 MiB, reused by every call; at most 23.0 MiB of them are live at any one step, the least any plan could hold (and up to 2.0 MiB more live inside the outputs' and donated arguments' buffers)
          stacked by loops: 6.0 MiB of the temporaries are values loops stack to read back (the carries a loop's gradient keeps)
          when the caller keeps the donatable arguments: 1.0 MiB more for the temporaries planned inside them, and the outputs planned into them fresh
          written in place: 9.0 MiB of outputs go into donated arguments' buffers
          evaluated op by op, the intermediates would take 300.0 MiB
          held for the program's life: machine code 123.9 KiB, its description (graph, schedule, plan) 9.0 KiB"#]]
    .assert_eq(&m.to_string());
    // Nothing donated, nothing hosted: those lines and clauses are left out.
    let plain = MemoryAnalysis {
        alias_bytes: 0,
        hosted_bytes: 0,
        kept_argument_bytes: 0,
        loop_stack_bytes: 0,
        ..m
    };
    let text = plain.to_string();
    assert!(!text.contains("written in place:") && !text.contains("more live inside"));
    assert!(!text.contains("stacked by loops") && !text.contains("keeps the donatable"));
    assert_eq!(text.lines().count(), 4);
}

#[jit]
fn report_scaled(x: &Tensor) -> Tensor {
    (x * 3.0).exp()
}

#[test]
fn cache_stats_print_calls_hits_misses_and_what_is_cached() {
    let s = CacheStats {
        hits: 1,
        misses: 1,
        entries: 1,
        compile_time: Duration::from_micros(4560),
        evictions: 0,
        cached_bytes: 3 << 10,
    };
    expect![[r#"2 calls: 1 hit (compiled programs reused), 1 miss (traced and compiled, 4.56 ms in all); 1 signature cached in 3.0 KiB (code, arenas, descriptions)"#]]
    .assert_eq(&s.to_string());
    let many = CacheStats {
        hits: 0,
        misses: 3,
        entries: 2,
        evictions: 1,
        compile_time: Duration::from_millis(1500),
        ..s
    };
    expect![[r#"3 calls: 0 hits (compiled programs reused), 3 misses (traced and compiled, 1.50 s in all); 2 signatures cached in 3.0 KiB (code, arenas, descriptions); 1 program dropped to keep within the cache limit"#]]
    .assert_eq(&many.to_string());
    // A real function's counters.
    let x = Tensor::from_vec(vec![0.5f32; 8], &[8]).unwrap();
    for _ in 0..3 {
        report_scaled(&x);
    }
    let text = report_scaled::cache_stats().to_string();
    assert!(
        text.starts_with(
            "3 calls: 2 hits (compiled programs reused), 1 miss (traced and compiled, "
        ),
        "{text}"
    );
    assert!(text.contains("; 1 signature cached in "), "{text}");
}

#[test]
fn eager_stats_print_what_was_compiled_held_and_dropped() {
    let s = jitfuse::eager::EagerStats {
        compiled: 1,
        evicted: 0,
        entries: 1,
        cached_bytes: 5 << 10,
        refused: 0,
    };
    expect![[r#"eager ops: 1 single-op program compiled; 1 program held in 5.0 KiB (code, arenas, descriptions; at most 256.0 MiB)"#]]
    .assert_eq(&s.to_string());
    let many = jitfuse::eager::EagerStats {
        compiled: 40,
        evicted: 3,
        entries: 37,
        cached_bytes: 3 << 20,
        refused: 2,
    };
    expect![[r#"eager ops: 40 single-op programs compiled; 37 programs held in 3.0 MiB (code, arenas, descriptions; at most 256.0 MiB); 3 programs dropped to keep within that; 2 programs too large to keep (their ops run one by one)"#]]
    .assert_eq(&many.to_string());
    // The process's own counters.
    let x = Tensor::from_vec(vec![0.25f32; 9], &[9]).unwrap();
    let _ = x.log1p();
    let text = jitfuse::eager::eager_stats().to_string();
    assert!(text.starts_with("eager ops: "), "{text}");
    assert!(!text.contains("eager ops: 0 single-op"), "{text}");
}
