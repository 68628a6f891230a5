//! Cache diagnostics: compile log lines, "what changed" on a
//! recompile, the recompile warning, and the LRU byte bound.
//!
//! Lines are captured by a log sink shared by the whole test binary; each
//! test uses functions of its own and reads only their lines.

use jitfuse::__private::{CallArgs, FnCache, Structure};
use jitfuse::jit::ArgKind;
use jitfuse::prelude::*;
use std::sync::{Arc, Mutex, Once};

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Capture every diagnostic line from here on, with compiles and cache on.
fn capture() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        jitfuse::jit::set_log_sink(Some(Arc::new(|l: &str| {
            LINES.lock().unwrap().push(l.to_string())
        })));
        jitfuse::jit::set_log(Some("compiles,cache"));
    });
}

/// The captured lines about function `name`, in order.
fn lines_of(name: &str) -> Vec<String> {
    let call = format!(" {name}(");
    let warn = format!("warning: {name} ");
    LINES
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains(&call) || l.contains(&warn))
        .cloned()
        .collect()
}

/// Check `line` is `jitfuse: compiled {what} in T ms: K kernels, B temp
/// bytes, C code bytes{rest}; phases: P` and return `rest`. P lists the
/// phases compile time went to (`trace 0.1 ms, codegen 0.2 ms (2×), ..`).
fn compiled_rest<'a>(line: &'a str, what: &str) -> &'a str {
    let (line, phases) = line.rsplit_once("; phases: ").expect("phases");
    let names: Vec<&str> = phases
        .split(", ")
        .map(|p| {
            let head = p.split_once(" ms").expect("ms").0;
            let (name, ms) = head.rsplit_once(' ').expect("name and time");
            assert!(ms.parse::<f64>().is_ok(), "{phases}");
            name
        })
        .collect();
    for must in ["trace", "simplify", "partition", "plan", "codegen"] {
        assert!(names.contains(&must), "no {must} in {phases}");
    }
    let head = format!("jitfuse: compiled {what} in ");
    let tail = line
        .strip_prefix(&head)
        .unwrap_or_else(|| panic!("{line:?} does not start with {head:?}"));
    let (ms, tail) = tail.split_once(" ms: ").expect("time");
    let (whole, frac) = ms.split_once('.').expect("ms with decimals");
    assert!(whole.parse::<u64>().is_ok() && frac.len() == 3, "{line}");
    let mut words = tail.splitn(7, ' ');
    let mut number = |unit: &[&str]| {
        let n = words.next().expect("a number");
        assert!(n.parse::<usize>().is_ok(), "{n} in {line}");
        for u in unit {
            assert_eq!(
                words.next().map(|w| w.trim_end_matches(',')),
                Some(*u),
                "{line}"
            );
        }
    };
    number(&["kernels"]);
    number(&["temp", "bytes"]);
    let rest = tail.split_once(" code bytes").expect("code bytes").1;
    let code = tail
        .split_once(" code bytes")
        .unwrap()
        .0
        .rsplit(' ')
        .next()
        .unwrap();
    assert!(code.parse::<usize>().is_ok(), "{line}");
    rest
}

/// The last line about `name`, which must be a compile line of `what`, and
/// what follows its figures.
fn last_compile(name: &str, what: &str) -> String {
    let ls = lines_of(name);
    let l = ls.last().unwrap_or_else(|| panic!("no line for {name}"));
    compiled_rest(l, what).to_string()
}

fn ramp(shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f64 * 0.5).collect::<Vec<f64>>(), shape)
        .unwrap()
        .cast(dtype)
}

/// `got` is `f` of every element of `x`, within `rel` of its value.
fn assert_each(got: &Tensor, x: &Tensor, f: impl Fn(f32) -> f32, rel: f32) {
    let (g, x) = (got.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
    assert_eq!(g.len(), x.len());
    for (i, (g, x)) in g.iter().zip(&x).enumerate() {
        let w = f(*x);
        assert!((g - w).abs() <= rel * w.abs(), "element {i}: {g} vs {w}");
    }
}

fn unit() -> Structure {
    Arc::new(())
}

static CHANGES: FnCache = FnCache::new("diag_changes").with_param_names(&["x", "n", "p"]);

/// `x * n`, with a tree parameter `p` that the body ignores.
fn call_changes(x: &Tensor, n: usize, p: &Vec<Tensor>) -> Tensor {
    let mut a = CallArgs::new();
    a.borrowed(x);
    a.static_arg(&n);
    a.tree(ArgKind::Borrowed, p.clone(), |s| p.structure(s));
    let body = move |ts: &[Tensor]| (vec![&ts[0] * n as f64], unit());
    CHANGES.call(a, &body).unwrap().0.pop().unwrap()
}

#[test]
fn a_recompile_says_which_argument_changed_and_how() {
    capture();
    let x = ramp(&[8, 16], DType::F32);
    let p1 = vec![ramp(&[4], DType::F32)];
    let n_lines = || lines_of("diag_changes").len();

    call_changes(&x, 3, &p1);
    assert_eq!(
        last_compile(
            "diag_changes",
            "diag_changes(x: &f32[8,16], n: 3, p: tree[&f32[4]])"
        ),
        "",
        "a first compilation has nothing to explain"
    );
    // A hit logs nothing.
    call_changes(&x, 3, &p1);
    assert_eq!(n_lines(), 1);

    call_changes(&ramp(&[8, 32], DType::F32), 3, &p1);
    assert_eq!(
        last_compile(
            "diag_changes",
            "diag_changes(x: &f32[8,32], n: 3, p: tree[&f32[4]])"
        ),
        "; recompile (2 signatures): argument 0 (x): shape f32[8,16] -> f32[8,32]"
    );

    // Closest is the first signature (dtype only), not the latest.
    call_changes(&ramp(&[8, 16], DType::F64), 3, &p1);
    assert_eq!(
        last_compile(
            "diag_changes",
            "diag_changes(x: &f64[8,16], n: 3, p: tree[&f32[4]])"
        ),
        "; recompile (3 signatures): argument 0 (x): dtype f32 -> f64"
    );

    let y = call_changes(&x, 4, &p1);
    assert_eq!(
        last_compile(
            "diag_changes",
            "diag_changes(x: &f32[8,16], n: 4, p: tree[&f32[4]])"
        ),
        "; recompile (4 signatures): argument 1 (n): static 3 -> 4"
    );
    // The recompiled program scales by the new n, every element.
    assert_each(&y, &x, |v| v * 4.0, 0.0);

    let p2 = vec![ramp(&[4], DType::F32), ramp(&[4], DType::F32)];
    call_changes(&x, 3, &p2);
    assert_eq!(
        last_compile(
            "diag_changes",
            "diag_changes(x: &f32[8,16], n: 3, p: tree[&f32[4], &f32[4]])"
        ),
        "; recompile (5 signatures): argument 2 (p): tree structure changed (leaves 1 -> 2)"
    );

    call_changes(&x, 3, &vec![ramp(&[5], DType::F32)]);
    assert_eq!(
        last_compile(
            "diag_changes",
            "diag_changes(x: &f32[8,16], n: 3, p: tree[&f32[5]])"
        ),
        "; recompile (6 signatures): argument 2 (p) leaf 0: shape f32[4] -> f32[5]"
    );

    // Two parameters at once; among equally close signatures, the latest
    // (n = 4) is named.
    call_changes(&ramp(&[8, 64], DType::F32), 7, &p1);
    assert_eq!(
        last_compile(
            "diag_changes",
            "diag_changes(x: &f32[8,64], n: 7, p: tree[&f32[4]])"
        ),
        "; recompile (7 signatures): argument 0 (x): shape f32[8,16] -> f32[8,64]; argument 1 \
         (n): static 4 -> 7"
    );
    assert_eq!(n_lines(), 7);
}

#[jit]
fn diag_positions(x: &Tensor, n: usize) -> Tensor {
    x * n as f64
}

#[test]
fn a_jit_function_names_its_parameters_in_the_log() {
    capture();
    let x = ramp(&[4], DType::F32);
    diag_positions(&x, 2);
    assert_eq!(
        last_compile("diag_positions", "diag_positions(x: &f32[4], n: 2)"),
        ""
    );
    let y = diag_positions(&x, 3);
    assert_eq!(
        last_compile("diag_positions", "diag_positions(x: &f32[4], n: 3)"),
        "; recompile (2 signatures): argument 1 (n): static 2 -> 3"
    );
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.0, 1.5, 3.0, 4.5]);
}

static WARN: FnCache = FnCache::new("diag_warn").with_param_names(&["x", "k"]);

fn call_warn(len: usize, k: u8) {
    let x = ramp(&[len], DType::F32);
    let mut a = CallArgs::new();
    a.borrowed(&x);
    a.static_arg(&k);
    let body = |ts: &[Tensor]| (vec![ts[0].exp()], unit());
    WARN.call(a, &body).unwrap();
}

#[test]
fn a_warning_once_past_the_recompile_threshold() {
    capture();
    WARN.set_recompile_warning(Some(3));
    assert_eq!(WARN.recompile_warning(), Some(3));
    let warnings = || {
        lines_of("diag_warn")
            .into_iter()
            .filter(|l| l.starts_with("jitfuse: warning:"))
            .collect::<Vec<_>>()
    };
    for len in 1..=3 {
        call_warn(len, 0);
    }
    assert!(warnings().is_empty(), "3 signatures are not more than 3");
    call_warn(4, 1);
    assert_eq!(
        warnings(),
        vec![
            "jitfuse: warning: diag_warn has compiled 4 signatures (more than 3): argument 0 (x) \
             took 4 types (&f32[1], &f32[2], &f32[3], ...); argument 1 (k) took 2 values (0, 1). \
             Each new signature traces and compiles again: keep shapes and static arguments to a \
             few values (threshold: JITFUSE_RECOMPILE_WARN)"
                .to_string()
        ]
    );
    // Once per threshold: no second warning at 5.
    call_warn(5, 1);
    assert_eq!(warnings().len(), 1);
    // A new threshold, crossed: warned again.
    WARN.set_recompile_warning(Some(5));
    call_warn(6, 1);
    assert_eq!(warnings().len(), 2);
    assert!(warnings()[1].contains("has compiled 6 signatures (more than 5)"));
    // Off: never.
    WARN.set_recompile_warning(None);
    call_warn(7, 1);
    assert_eq!(warnings().len(), 2);
}

fn exp_body(ts: &[Tensor]) -> (Vec<Tensor>, Structure) {
    (vec![ts[0].exp()], unit())
}

fn call_on(cache: &'static FnCache, x: &Tensor) -> Tensor {
    let mut a = CallArgs::new();
    a.borrowed(x);
    cache.call(a, &exp_body).unwrap().0.pop().unwrap()
}

static LRU_PROBE: FnCache = FnCache::new("diag_lru_probe");
static LRU: FnCache = FnCache::new("diag_lru").with_param_names(&["x"]);

#[test]
fn lru_eviction_under_a_byte_limit() {
    capture();
    let [a, b, c, d] = [64usize, 128, 256, 512].map(|n| ramp(&[n], DType::F32));
    // Sizes (code + arena) of each program, from a cache of their own.
    let mut size = vec![];
    for x in [&a, &b, &c, &d] {
        let before = LRU_PROBE.stats().cached_bytes;
        call_on(&LRU_PROBE, x);
        size.push(LRU_PROBE.stats().cached_bytes - before);
    }
    let [sa, sb, sc, sd] = [size[0], size[1], size[2], size[3]];
    assert!(size.iter().all(|&s| s > 0));

    for x in [&a, &b, &c] {
        call_on(&LRU, x);
    }
    assert_eq!(LRU.stats().cached_bytes, sa + sb + sc);
    // Room for a, c and d: adding d must evict exactly b.
    let limit = sa + sc + sd;
    LRU.set_cache_limit(Some(limit));
    assert_eq!(LRU.cache_limit(), Some(limit));
    assert_eq!(LRU.stats().evictions, 0, "a, b and c fit");
    // A hit refreshes a: b is now the least recently used.
    call_on(&LRU, &a);
    call_on(&LRU, &d);
    let s = LRU.stats();
    assert_eq!((s.entries, s.evictions, s.cached_bytes), (3, 1, limit));
    let ls = lines_of("diag_lru");
    assert_eq!(
        ls.last().unwrap(),
        &format!(
            "jitfuse: evicted diag_lru(x: &f32[128]): {sb} bytes, least recently used; cache {} of \
             {limit} bytes",
            sa + sc + sd
        )
    );
    // a, c and d still hit.
    let misses = s.misses;
    for x in [&a, &c, &d] {
        call_on(&LRU, x);
    }
    assert_eq!(LRU.stats().misses, misses);

    // b recompiles, with the right result, and says why; a (least recently
    // used now) makes room, and c too if b is larger than a.
    let yb = call_on(&LRU, &b);
    assert_each(&yb, &b, f32::exp, 1e-6);
    let ls = lines_of("diag_lru");
    let at = ls
        .iter()
        .rposition(|l| l.starts_with("jitfuse: compiled diag_lru(x: &f32[128])"))
        .expect("b's recompile is logged");
    assert_eq!(
        compiled_rest(&ls[at], "diag_lru(x: &f32[128])"),
        "; recompile (4 signatures): compiled before, evicted by the cache limit"
    );
    assert!(
        ls[at + 1].starts_with("jitfuse: evicted diag_lru(x: &f32[64]):"),
        "{}",
        ls[at + 1]
    );
    let also_c = (sb > sa) as usize;
    let s = LRU.stats();
    assert_eq!(
        (s.misses, s.evictions, s.entries),
        (misses + 1, 2 + also_c as u64, 3 - also_c)
    );
    assert!(s.cached_bytes <= limit);

    // No limit: nothing more is evicted.
    LRU.set_cache_limit(None);
    call_on(&LRU, &a);
    assert_eq!(LRU.stats().evictions, 2 + also_c as u64);
    assert_eq!(LRU.stats().entries, 4 - also_c);
}

static FREED: FnCache = FnCache::new("diag_freed");

#[test]
fn an_evicted_program_is_freed_once_no_call_holds_it() {
    capture();
    let a = ramp(&[32], DType::F32);
    let b = ramp(&[48], DType::F32);
    // Compile `a` through lower/compile: the same program a call runs, held here.
    let mut args = CallArgs::new();
    args.borrowed(&a);
    let held = FREED.lower(args, &exp_body).unwrap().compile().unwrap();
    let id = held.executable().code_id();
    call_on(&FREED, &b);
    assert_eq!(FREED.stats().entries, 2);
    // A limit of 0 keeps only the most recently used program.
    FREED.set_cache_limit(Some(0));
    let s = FREED.stats();
    assert_eq!((s.entries, s.evictions), (1, 1));
    assert!(
        jitfuse::internals::codegen::is_code_live(id),
        "held by a caller"
    );
    drop(held);
    assert!(
        !jitfuse::internals::codegen::is_code_live(id),
        "freed with its last holder"
    );
    // The next call with `a` recompiles, and evicts `b`.
    let y = call_on(&FREED, &a);
    assert_each(&y, &a, f32::exp, 1e-6);
    let s = FREED.stats();
    assert_eq!((s.misses, s.entries, s.evictions), (3, 1, 2));
}

#[jit]
fn diag_limited(x: &Tensor) -> Tensor {
    x.exp() * 2.0
}

/// The companion's `set_cache_limit` bounds the cache (LRU), and
/// `set_recompile_warning` silences the warning for this function.
#[test]
fn the_companion_sets_the_cache_limit_and_the_warning() {
    capture();
    diag_limited::set_recompile_warning(None);
    diag_limited::set_cache_limit(Some(1));
    for n in [3, 4, 5, 3] {
        let x = ramp(&[n], DType::F32);
        let y = diag_limited(&x);
        assert_each(&y, &x, |v| v.exp() * 2.0, 1e-6);
    }
    let s = diag_limited::cache_stats();
    assert_eq!(s.entries, 1, "{s:?}");
    // Each call after the first evicts the one program before it.
    assert_eq!(s.evictions, 3, "{s:?}");
    assert!(lines_of("diag_limited")
        .iter()
        .any(|l| l.contains("compiled before, evicted by the cache limit")));
    diag_limited::set_cache_limit(None);
}

#[jit]
fn dumped_step(x: &Tensor, w: &Tensor) -> Tensor {
    (x.matmul(w) + 1.0).tanh().sum(0)
}

/// `JITFUSE_DUMP=dir` writes every stage of each compilation, named by the function and a
/// sequence number; the memory report is the readable one. (Run alone in a child process:
/// the variable would make every test's compilations dump.)
#[test]
fn a_dump_writes_every_stage_and_a_readable_memory_report() {
    if !crate::common::measure_alone(
        "cache_diag::a_dump_writes_every_stage_and_a_readable_memory_report",
    ) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("jitfuse-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // SAFETY: the child runs this one test on one thread, before anything reads it.
    unsafe { std::env::set_var("JITFUSE_DUMP", &dir) };
    let x = Tensor::full(&[8, 16], 0.5f32, DType::F32);
    let w = Tensor::full(&[16, 4], 0.25f32, DType::F32);
    dumped_step(&x, &w);
    let read = |ext: &str| {
        let path = dir.join(format!("dumped_step.0.{ext}"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    for ext in [
        "traced.ir",
        "simplified.ir",
        "kernels.txt",
        "clif",
        "asm",
        "memory.svg",
    ] {
        assert!(!read(ext).is_empty(), "{ext} is empty");
    }
    assert!(read("simplified.ir").contains("matmul"));
    assert!(read("memory.svg").starts_with("<svg"));
    let memory = read("memory.txt");
    assert!(
        memory.starts_with("// dumped_step (")
            && memory.contains("peak ")
            && memory.contains("temporaries: one arena of")
            && !memory.contains("MemoryAnalysis {"),
        "{memory}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
