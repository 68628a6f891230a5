//! Where a compiled program spends its time: every step of every call timed, written as a
//! Chrome trace (the JSON event format Perfetto and `chrome://tracing` open) and summed in a
//! table per program (time per step, its share of the calls, GB/s, GFLOP/s), as PyTorch's
//! profiler prints `key_averages().table()`.
//!
//! Off unless asked for: by `JITFUSE_PROFILE=path.json` (every call of the process, the
//! trace written at exit and the tables printed to stderr) or inside `profile(|| ..)` (the
//! calls `f` makes, on any thread). Off, a call reads one atomic flag; on, each step adds
//! two clock reads and one entry to a locked list.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// What a program's steps are, for the trace and the table: built once per program, the
/// first time it runs while profiling.
#[derive(Debug)]
pub struct ProgramInfo {
    /// Distinguishes programs of the same name (another signature, a sub-program).
    pub id: u64,
    pub steps: Vec<StepInfo>,
}

/// One step of a program.
#[derive(Clone, Debug)]
pub struct StepInfo {
    /// What runs it: "loop kernel", "row kernel", "reduce kernel", "matmul", "attention",
    /// "control", or the library op's name.
    pub kind: &'static str,
    /// Its ops and result type, short (`mul, add, tanh -> f32[256,512]`).
    pub label: String,
    /// Bytes of the buffers it reads and writes (each once).
    pub bytes: u64,
    /// Floating-point operations (a product's 2mkn; a kernel's one per element and op).
    pub flops: u64,
}

/// One timed step of one call.
#[derive(Clone, Debug)]
struct Event {
    program: Arc<ProgramInfo>,
    /// The function the program belongs to (`#[jit]` name, "eager", or "program").
    name: &'static str,
    call: u64,
    /// Index of the step, or `None` for the whole call.
    step: Option<usize>,
    /// Nanoseconds since the profile's start.
    start: u64,
    dur: u64,
    thread: u64,
    /// Threads the step's range was split over (1: the calling thread alone).
    threads: usize,
}

static ON: AtomicBool = AtomicBool::new(false);
/// `profile` calls running now (the flag stays on while any does).
static SCOPES: AtomicUsize = AtomicUsize::new(0);
static EVENTS: Mutex<Vec<Event>> = Mutex::new(Vec::new());
static CALLS: AtomicU64 = AtomicU64::new(0);
static PROGRAMS: AtomicU64 = AtomicU64::new(0);
static THREADS: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static E: OnceLock<Instant> = OnceLock::new();
    *E.get_or_init(Instant::now)
}

/// The path `JITFUSE_PROFILE` names, read once; profiling starts with the process.
fn env_path() -> Option<&'static std::path::Path> {
    static P: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    P.get_or_init(|| {
        let p = std::env::var_os("JITFUSE_PROFILE").filter(|p| !p.is_empty())?;
        epoch();
        ON.store(true, Ordering::Relaxed);
        write_at_exit();
        Some(std::path::PathBuf::from(p))
    })
    .as_deref()
}

/// Whether calls are being profiled now (two atomic loads once the environment was read).
#[inline]
pub fn enabled() -> bool {
    env_path();
    ON.load(Ordering::Relaxed)
}

/// A fresh program id (`ProgramInfo::id`).
pub fn program_id() -> u64 {
    PROGRAMS.fetch_add(1, Ordering::Relaxed)
}

thread_local! {
    static NAME: std::cell::Cell<&'static str> = const { std::cell::Cell::new("program") };
    static THREAD: u64 = THREADS.fetch_add(1, Ordering::Relaxed);
}

/// Run `f` (a call of the function `name`) with its steps recorded under that name.
pub fn named<R>(name: &'static str, f: impl FnOnce() -> R) -> R {
    if !enabled() {
        return f();
    }
    let old = NAME.with(|n| n.replace(name));
    let r = f();
    NAME.with(|n| n.set(old));
    r
}

/// A call being recorded: its steps are added with `step`, the whole call at `finish`.
pub struct CallTimer {
    program: Arc<ProgramInfo>,
    /// The function, the call's number and the thread it runs on, for each event.
    name: &'static str,
    call: u64,
    thread: u64,
    start: Instant,
    events: Vec<Event>,
}

impl CallTimer {
    /// Start timing a call of `program` (when profiling).
    pub fn start(program: Arc<ProgramInfo>) -> CallTimer {
        CallTimer {
            program,
            name: NAME.with(|n| n.get()),
            call: CALLS.fetch_add(1, Ordering::Relaxed),
            thread: THREAD.with(|t| *t),
            start: Instant::now(),
            events: Vec::new(),
        }
    }

    /// Record step `step`, which ran from `start` to now over `threads` threads.
    pub fn step(&mut self, step: usize, start: Instant, threads: usize) {
        let end = Instant::now();
        self.events
            .push(self.event(Some(step), start, end, threads));
    }

    fn event(&self, step: Option<usize>, start: Instant, end: Instant, threads: usize) -> Event {
        let since = |t: Instant| t.saturating_duration_since(epoch()).as_nanos() as u64;
        Event {
            program: self.program.clone(),
            name: self.name,
            call: self.call,
            step,
            start: since(start),
            dur: since(end).saturating_sub(since(start)),
            thread: self.thread,
            threads,
        }
    }

    /// The call ended: record it and its steps.
    pub fn finish(mut self) {
        let whole = self.event(None, self.start, Instant::now(), 1);
        self.events.push(whole);
        EVENTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .append(&mut self.events);
    }
}

/// What `profile` recorded: the trace and the tables of the calls it saw.
#[derive(Clone, Debug)]
pub struct Profile {
    events: Vec<Event>,
}

/// Profile the calls `f` makes (jitted functions, compiled eager ops and their steps, on any
/// thread): `f`'s result and what was recorded.
pub fn profile<R>(f: impl FnOnce() -> R) -> (R, Profile) {
    epoch();
    let before = {
        let events = EVENTS.lock().unwrap_or_else(|e| e.into_inner());
        SCOPES.fetch_add(1, Ordering::Relaxed);
        ON.store(true, Ordering::Relaxed);
        events.len()
    };
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            let _events = EVENTS.lock().unwrap_or_else(|e| e.into_inner());
            if SCOPES.fetch_sub(1, Ordering::Relaxed) == 1 && env_path().is_none() {
                ON.store(false, Ordering::Relaxed);
            }
        }
    }
    let off = Off;
    let r = f();
    let events = {
        let mut all = EVENTS.lock().unwrap_or_else(|e| e.into_inner());
        // Calls of other threads may have interleaved: take what came after `before`, and
        // leave the environment's trace (if any) whole.
        let from = before.min(all.len());
        let taken: Vec<Event> = all[from..].to_vec();
        if env_path().is_none() && SCOPES.load(Ordering::Relaxed) == 1 {
            all.truncate(from);
        }
        taken
    };
    drop(off);
    (r, Profile { events })
}

impl Profile {
    /// Number of calls recorded.
    pub fn calls(&self) -> usize {
        self.events.iter().filter(|e| e.step.is_none()).count()
    }

    /// The Chrome trace event format (JSON): one complete event (`"ph": "X"`) per call and
    /// per step, on the thread that ran it, with the step's kind, bytes, FLOPs and thread
    /// split as arguments. Perfetto (ui.perfetto.dev) and `chrome://tracing` open it.
    pub fn chrome_trace(&self) -> String {
        chrome_trace(&self.events)
    }

    /// The table of each program: its steps by total time, slowest first.
    pub fn table(&self) -> String {
        table(&self.events)
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.table())
    }
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn chrome_trace(events: &[Event]) -> String {
    let mut s = String::from("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
    for (i, e) in events.iter().enumerate() {
        let us = |ns: u64| ns as f64 / 1000.0;
        let (name, cat, args) = match e.step {
            None => (
                format!("{} (call {})", e.name, e.call),
                "call",
                format!("{{\"program\": {}}}", e.program.id),
            ),
            Some(k) => {
                let st = &e.program.steps[k];
                (
                    format!("{} {k}: {}", st.kind, st.label),
                    st.kind,
                    format!(
                        "{{\"program\": {}, \"call\": {}, \"step\": {k}, \"bytes\": {}, \"flops\": {}, \"threads\": {}}}",
                        e.program.id, e.call, st.bytes, st.flops, e.threads
                    ),
                )
            }
        };
        let _ = write!(
            s,
            "{{\"name\": {}, \"cat\": {}, \"ph\": \"X\", \"ts\": {:.3}, \"dur\": {:.3}, \"pid\": 1, \"tid\": {}, \"args\": {args}}}{}\n",
            json_str(&name),
            json_str(cat),
            us(e.start),
            us(e.dur),
            e.thread,
            if i + 1 < events.len() { "," } else { "" }
        );
    }
    s.push_str("]}\n");
    s
}

fn table(events: &[Event]) -> String {
    use std::collections::BTreeMap;
    // Per program: its name, calls, total time, and per step (count, time).
    struct Sums {
        name: &'static str,
        program: Arc<ProgramInfo>,
        calls: u64,
        total: u64,
        steps: BTreeMap<usize, (u64, u64)>,
    }
    let mut by: BTreeMap<u64, Sums> = BTreeMap::new();
    for e in events {
        let p = by.entry(e.program.id).or_insert_with(|| Sums {
            name: e.name,
            program: e.program.clone(),
            calls: 0,
            total: 0,
            steps: BTreeMap::new(),
        });
        match e.step {
            None => {
                p.calls += 1;
                p.total += e.dur;
            }
            Some(k) => {
                let s = p.steps.entry(k).or_default();
                s.0 += 1;
                s.1 += e.dur;
            }
        }
    }
    let mut progs: Vec<&Sums> = by.values().filter(|p| p.calls > 0).collect();
    progs.sort_by_key(|p| std::cmp::Reverse(p.total));
    let all: u64 = progs.iter().map(|p| p.total).sum();
    let mut s = String::new();
    let shown = progs.len().min(TABLE_PROGRAMS);
    let (progs, rest) = progs.split_at(shown);
    for p in progs {
        let ms = |ns: u64| ns as f64 / 1e6;
        let _ = writeln!(
            s,
            "{} (program {}): {} calls, {:.3} ms per call, {} steps",
            p.name,
            p.program.id,
            p.calls,
            ms(p.total) / p.calls as f64,
            p.program.steps.len()
        );
        // By kind first (as PyTorch's `key_averages` groups by op).
        let mut kinds: Vec<(&str, u64)> = Vec::new();
        for (&k, &(_, t)) in &p.steps {
            let kind = p.program.steps[k].kind;
            match kinds.iter_mut().find(|(n, _)| *n == kind) {
                Some((_, x)) => *x += t,
                None => kinds.push((kind, t)),
            }
        }
        kinds.sort_by_key(|k| std::cmp::Reverse(k.1));
        let by_kind: Vec<String> = kinds
            .iter()
            .map(|(n, t)| format!("{n} {:.1}%", 100.0 * *t as f64 / p.total.max(1) as f64))
            .collect();
        let _ = writeln!(s, "  by kind: {}", by_kind.join(", "));
        let _ = writeln!(
            s,
            "  {:>4}  {:<14} {:>10} {:>7} {:>8} {:>9}  ops",
            "step", "kind", "ms/call", "share", "GB/s", "GFLOP/s"
        );
        let mut steps: Vec<(&usize, &(u64, u64))> = p.steps.iter().collect();
        steps.sort_by_key(|(_, (_, t))| std::cmp::Reverse(*t));
        let more = steps.split_off(steps.len().min(TABLE_STEPS));
        if !more.is_empty() {
            let t: u64 = more.iter().map(|(_, (_, t))| t).sum();
            let _ = writeln!(
                s,
                "  ({} faster steps below these: {:.1}% of the time)",
                more.len(),
                100.0 * t as f64 / p.total.max(1) as f64
            );
        }
        for (&k, &(n, t)) in steps {
            let st = &p.program.steps[k];
            let per = t as f64 / n.max(1) as f64;
            let rate = |x: u64| {
                if per > 0.0 {
                    format!("{:.1}", x as f64 / per)
                } else {
                    "-".into()
                }
            };
            let mut label = st.label.clone();
            if label.chars().count() > 60 {
                label = label.chars().take(59).collect::<String>() + "…";
            }
            let _ = writeln!(
                s,
                "  {k:>4}  {:<14} {:>10.4} {:>6.1}% {:>8} {:>9}  {label}",
                st.kind,
                per / 1e6,
                100.0 * t as f64 / p.total.max(1) as f64,
                rate(st.bytes),
                if st.flops > 0 {
                    rate(st.flops)
                } else {
                    "-".into()
                },
            );
        }
    }
    if !rest.is_empty() {
        let t: u64 = rest.iter().map(|p| p.total).sum();
        let _ = writeln!(
            s,
            "({} more programs: {:.3} ms in all, {:.1}% of the profiled calls' time)",
            rest.len(),
            t as f64 / 1e6,
            100.0 * t as f64 / all.max(1) as f64
        );
    }
    s
}

/// Programs a table shows (those taking the most time), and steps per program.
const TABLE_PROGRAMS: usize = 6;
const TABLE_STEPS: usize = 24;

/// Under `JITFUSE_PROFILE`: at exit, write the trace to the path and print the tables.
fn write_at_exit() {
    extern "C" fn at_exit() {
        let Some(path) = env_path() else { return };
        let events = std::mem::take(&mut *EVENTS.lock().unwrap_or_else(|e| e.into_inner()));
        match std::fs::write(path, chrome_trace(&events)) {
            Ok(()) => eprintln!(
                "jitfuse: profile of {} calls written to {} (open it in ui.perfetto.dev)\n{}",
                events.iter().filter(|e| e.step.is_none()).count(),
                path.display(),
                table(&events)
            ),
            Err(e) => eprintln!(
                "jitfuse: cannot write the profile to {}: {e}",
                path.display()
            ),
        }
    }
    // SAFETY: registers a plain function with no arguments, run once at exit.
    unsafe {
        libc::atexit(at_exit);
    }
}
