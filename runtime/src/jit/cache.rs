//! The per-function cache of compiled programs, keyed by signature.
//!
//! Thread-safe: the map is behind a mutex held only for the lookup; each entry
//! is a `OnceCell`, so concurrent first calls with one signature compile once
//! (the others wait for the result). Executables are shared by `Arc`: clearing
//! the cache, or evicting an entry, frees a program's code once no running
//! call holds it.
//!
//! Diagnostics (see `log.rs`): every compilation can be logged with what
//! changed from the closest signature compiled before (a short history of
//! signatures is kept, evicted and cleared ones included); a warning is
//! emitted when a function has compiled more than a threshold of signatures.
//! An optional byte bound (what each program keeps resident: code, arena,
//! its description, its entry) evicts the least recently used programs; the
//! most recently compiled one is always kept.

use super::explain;
use super::log::{self, Category};
use super::lowered::Lowered;
use crate::error::CompileError;
use crate::exec::args::{ParamSlot, Signature};
use crate::exec::{Executable, MemoryBudget};
use crate::tensor::call::CallArgs;
use crate::trace::{self, ParamSpec};
use crate::{Error, ErrorKind, Tensor};
use once_cell::sync::OnceCell;
use std::any::Any;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Compiled = Result<(Arc<Executable>, Structure), Error>;

/// One cached signature: its program (compiled once), when a call last used
/// it, and its size once compiled.
#[derive(Default)]
struct Slot {
    cell: OnceCell<Compiled>,
    /// The cache's clock at the last call that used it (LRU order).
    last_used: AtomicU64,
    /// Resident bytes once compiled and accounted (0 before, or on error).
    bytes: AtomicUsize,
}

type Entry = Arc<Slot>;

/// The structure of a jitted function's return value, as traced: the
/// returned tree with placeholder leaves (see `__private::flatten_output`).
/// A call rebuilds its return value from this and the program's outputs.
pub type Structure = Arc<dyn Any + Send + Sync>;

/// The body of a jitted function as the wrapper hands it over: traced tensor
/// arguments in (a tree parameter's leaves in order), output leaves and the
/// return value's structure out (static arguments are captured).
pub type Body<'a> = &'a dyn Fn(&[Tensor]) -> (Vec<Tensor>, Structure);

/// Counters of one function's cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Calls that found a compiled program.
    pub hits: u64,
    /// Calls that traced and compiled.
    pub misses: u64,
    /// Signatures currently cached.
    pub entries: usize,
    /// Time spent tracing and compiling, over all misses.
    pub compile_time: Duration,
    /// Programs dropped to keep the cache within its byte limit.
    pub evictions: u64,
    /// Bytes the cached programs keep resident: their machine code, arenas
    /// and materialised constants, their own descriptions (graph, schedule,
    /// plan) and the cache's entries for them (what the limit of
    /// `set_cache_limit` bounds).
    pub cached_bytes: usize,
}

/// What became of a signature compiled before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Cached,
    Evicted,
    Cleared,
}

/// A signature this function compiled, for "what changed" and the warning.
struct Seen {
    sig: Signature,
    slots: Vec<ParamSlot>,
    fate: Fate,
}

/// At most this many signatures are remembered (oldest forgotten first).
const HISTORY: usize = 256;

#[derive(Default)]
struct Inner {
    map: HashMap<Signature, Entry>,
    /// Ticks once per call: recency of the entries.
    clock: u64,
    /// Sum of the entries' `bytes`.
    bytes: usize,
    /// Signatures compiled, least recently compiled first.
    seen: VecDeque<Seen>,
    /// Distinct signatures compiled (a forgotten one counts again).
    signatures: usize,
    /// The threshold the last recompile warning was for.
    warned_at: Option<usize>,
}

impl Inner {
    fn seen(&self, sig: &Signature) -> Option<usize> {
        self.seen.iter().position(|s| s.sig == *sig)
    }
}

/// `warn` when the threshold comes from `JITFUSE_RECOMPILE_WARN`.
const WARN_DEFAULT: usize = usize::MAX;
/// `warn` when warnings are off.
const WARN_OFF: usize = usize::MAX - 1;
/// `limit` when the cache is unbounded.
const NO_LIMIT: usize = usize::MAX;

/// The compiled programs of one `#[jit]` function, by signature, with its settings (memory
/// budget, cache limit, recompile warning) and statistics.
pub struct FnCache {
    name: &'static str,
    /// The parameters' names, in order (empty: named by position).
    params: &'static [&'static str],
    inner: Mutex<Option<Inner>>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    compile_nanos: AtomicU64,
    registered: AtomicBool,
    /// Peak-memory budget in bytes (0: none).
    budget: AtomicUsize,
    /// Bound on the cached programs' resident bytes (`NO_LIMIT`: none).
    limit: AtomicUsize,
    /// Recompile-warning threshold (`WARN_DEFAULT`, `WARN_OFF` or a count).
    warn: AtomicUsize,
}

static REGISTRY: Mutex<Vec<&'static FnCache>> = Mutex::new(Vec::new());

/// Clear the caches of every jitted function.
pub fn clear_caches() {
    let all: Vec<&'static FnCache> = REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for c in all {
        c.drop_all();
    }
    crate::release::trim();
}

impl FnCache {
    /// An empty cache for the function named `name`.
    pub const fn new(name: &'static str) -> FnCache {
        FnCache {
            name,
            params: &[],
            inner: Mutex::new(None),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            compile_nanos: AtomicU64::new(0),
            registered: AtomicBool::new(false),
            budget: AtomicUsize::new(0),
            limit: AtomicUsize::new(NO_LIMIT),
            warn: AtomicUsize::new(WARN_DEFAULT),
        }
    }

    /// A cache whose programs must fit `budget` bytes of peak memory
    /// (`#[jit(memory_budget = ..)]`).
    pub const fn with_memory_budget(name: &'static str, budget: Option<usize>) -> FnCache {
        let mut c = FnCache::new(name);
        c.budget = AtomicUsize::new(match budget {
            Some(b) => b,
            None => 0,
        });
        c
    }

    /// The same cache, with the function's parameter names (in order) for
    /// diagnostics: `argument 1 (n): static 3 -> 4` instead of `argument 1`.
    pub const fn with_param_names(mut self, names: &'static [&'static str]) -> FnCache {
        self.params = names;
        self
    }

    /// Set or remove the budget; compiled programs are dropped.
    /// `Some(AUTO_MEMORY_BUDGET)` chooses automatically: gradients in the
    /// body keep about √N of their N residuals (checkpointed segments).
    pub fn set_memory_budget(&self, bytes: Option<usize>) {
        self.budget.store(bytes.unwrap_or(0), Ordering::SeqCst);
        self.clear();
    }

    /// The memory budget in effect (`set_memory_budget`).
    pub fn memory_budget(&self) -> Option<usize> {
        match self.budget.load(Ordering::SeqCst) {
            0 => None,
            b => Some(b),
        }
    }

    /// The memory budget in effect, as the compiler takes it.
    pub(crate) fn budget(&self) -> Option<MemoryBudget> {
        self.memory_budget().map(MemoryBudget::from_bytes)
    }

    /// Bound the bytes the cached programs keep resident (code, arenas,
    /// descriptions and entries: `CacheStats::cached_bytes`; `None`:
    /// unbounded, the default). Beyond it, the least recently used
    /// programs are evicted (now, and after each compilation), except the
    /// one compiled last; an evicted program's code is freed once no running
    /// call holds it, and its signature recompiles on its next call.
    pub fn set_cache_limit(&self, bytes: Option<usize>) {
        self.limit
            .store(bytes.unwrap_or(NO_LIMIT), Ordering::SeqCst);
        let (dropped, lines) = {
            let mut g = self.lock();
            match g.as_mut() {
                Some(inner) => self.evict(inner, None),
                None => (vec![], vec![]),
            }
        };
        lines.iter().for_each(|l| log::emit(l));
        drop(dropped);
    }

    /// The cache limit in effect (`set_cache_limit`).
    pub fn cache_limit(&self) -> Option<usize> {
        match self.limit.load(Ordering::SeqCst) {
            NO_LIMIT => None,
            b => Some(b),
        }
    }

    /// Warn (once per threshold) when this function has compiled more than
    /// `n` signatures; `None`: never. The default is `JITFUSE_RECOMPILE_WARN`
    /// (8 when unset).
    pub fn set_recompile_warning(&self, n: Option<usize>) {
        self.warn
            .store(n.unwrap_or(WARN_OFF).min(WARN_OFF), Ordering::SeqCst);
    }

    /// The recompile-warning threshold in effect.
    pub fn recompile_warning(&self) -> Option<usize> {
        match self.warn.load(Ordering::SeqCst) {
            WARN_DEFAULT => log::default_recompile_warning(),
            WARN_OFF => None,
            n => Some(n),
        }
    }

    /// The function's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The parameter names given by `with_param_names` (may be empty).
    pub fn param_names(&self) -> &'static [&'static str] {
        self.params
    }

    /// Run the function: inlined into the enclosing trace when tracing,
    /// otherwise through the compiled program for the call's signature.
    pub fn call(
        &'static self,
        args: CallArgs<'_>,
        body: Body<'_>,
    ) -> Result<(Vec<Tensor>, Structure), Error> {
        if trace::is_tracing() {
            return Ok(body(&args.tensor_list()));
        }
        let sig = args.signature(self.name, self.params)?;
        // A deeper checkpointing step gives another graph only if the first one
        // cut a loop gradient.
        let mut cut_loops = false;
        let (exe, structure) = self.cached(&sig, args.slots(), &mut |step| {
            if step > 1 && !cut_loops {
                return Ok(None);
            }
            let (traced, cut) = self.trace_body_with(&sig, body, ladder_levels(step))?;
            cut_loops |= cut;
            Ok(Some(traced))
        })?;
        let slots = args.slots().to_vec();
        let name = self.name;
        let run = || crate::diag::profile::named(name, || exe.run(args));
        let outs = match crate::internal::catch(run) {
            Ok(Ok(outs)) => outs,
            Ok(Err(e)) if e.kind == ErrorKind::OutOfMemory => {
                return Err(e.prefixed(&format!(
                    "running {}",
                    explain::describe(self.name, &sig, &slots, self.params)
                )))
            }
            Ok(Err(e)) => return Err(e),
            Err(payload) => {
                return Err(self.internal(&sig, &slots, "running", &*payload));
            }
        };
        Ok((outs, structure))
    }

    /// The error of a panic in jitfuse's own code while `doing` (compiling,
    /// running) the program of `sig`.
    fn internal(
        &self,
        sig: &Signature,
        slots: &[ParamSlot],
        doing: &str,
        payload: &(dyn Any + Send),
    ) -> Error {
        internal_error(
            &explain::describe(self.name, sig, slots, self.params),
            doing,
            &crate::error::panic_message(payload),
        )
    }

    /// Trace for these arguments without running or compiling. Does not
    /// touch the cache (the `Lowered`'s `compile()` does).
    pub fn lower(&'static self, args: CallArgs<'_>, body: Body<'_>) -> Result<Lowered, Error> {
        let sig = args.signature(self.name, self.params)?;
        let (traced, structure) = self.trace_body(&sig, body)?;
        // Under an explicit budget a call may fall back to the automatic checkpointing's
        // traces (`cached`): traced here too, so `compile()` is the program a call runs.
        let mut auto = Vec::new();
        if matches!(self.budget(), Some(MemoryBudget::Bytes(_))) {
            for step in 1..=crate::autodiff::LOOP_LADDER.len() {
                let (traced, cut) = self.trace_body_with(&sig, body, ladder_levels(step))?;
                auto.push(traced);
                if !cut {
                    break;
                }
            }
        }
        Ok(Lowered::new(
            self,
            sig,
            args.slots().to_vec(),
            (traced, structure),
            auto,
        ))
    }

    /// The cached program for `sig`, compiled from `traced` on a miss.
    pub(crate) fn compile_traced(
        &'static self,
        sig: &Signature,
        slots: &[ParamSlot],
        traced: &(trace::Traced, Structure),
        auto: &[(trace::Traced, Structure)],
    ) -> Result<Arc<Executable>, Error> {
        Ok(self
            .cached(sig, slots, &mut |step| match step {
                0 => Ok(Some(traced.clone())),
                k => Ok(auto.get(k - 1).cloned()),
            })?
            .0)
    }

    /// Trace the body; under the automatic budget, gradients taken in it
    /// are cut into checkpointed segments (`autodiff::with_auto_checkpoint`).
    fn trace_body(
        &self,
        sig: &Signature,
        body: Body<'_>,
    ) -> Result<(trace::Traced, Structure), Error> {
        Ok(self.trace_body_with(sig, body, None)?.0)
    }

    /// `trace_body`, with automatic checkpointing at loop depth `levels` when
    /// set (at least √N segments and √n loop segments under the automatic
    /// budget). Also says whether a loop gradient was cut into segments.
    fn trace_body_with(
        &self,
        sig: &Signature,
        body: Body<'_>,
        levels: Option<u32>,
    ) -> Result<((trace::Traced, Structure), bool), Error> {
        let levels = match levels {
            None if self.budget() == Some(MemoryBudget::Auto) => Some(1),
            l => l,
        };
        let before = crate::autodiff::segmented_loops();
        let traced = crate::autodiff::with_checkpoint_levels(levels, || trace_body(sig, body))?;
        Ok((traced, crate::autodiff::segmented_loops() > before))
    }

    fn cached(
        &'static self,
        sig: &Signature,
        slots: &[ParamSlot],
        trace: &mut dyn FnMut(usize) -> Result<Option<(trace::Traced, Structure)>, Error>,
    ) -> Result<(Arc<Executable>, Structure), Error> {
        self.register();
        let entry = {
            let mut g = self.lock();
            let inner = g.get_or_insert_with(Inner::default);
            inner.clock += 1;
            let entry = match inner.map.get(sig) {
                Some(e) => e.clone(),
                None => {
                    let e = Entry::default();
                    inner.map.insert(sig.clone(), e.clone());
                    e
                }
            };
            entry.last_used.store(inner.clock, Ordering::Relaxed);
            entry
        };
        let mut compiled_in = None;
        let mut phases = Vec::new();
        let result = entry.cell.get_or_init(|| {
            let start = Instant::now();
            let dump = std::env::var_os("JITFUSE_DUMP");
            let budget = self.budget();
            // Step `k` of the checkpointing ladder; `None`: the same graph as the step before.
            let mut build = |step: usize| {
                super::phases::phase("trace", || trace(step))
                    .map_err(CompileError::from)
                    .and_then(|t| {
                        t.map(|(t, s)| {
                            Ok((
                                Arc::new(t.compile(
                                    sig,
                                    &crate::exec::CompileOptions {
                                        budget,
                                        keep_text: dump.is_some(),
                                        ..Default::default()
                                    },
                                )?),
                                s,
                            ))
                        })
                        .transpose()
                    })
            };
            let (r, ps) = super::phases::collect(|| {
                // A panic in tracing machinery, passes, planning or codegen
                // is an `Internal` error of this signature, never a panic out
                // of `try_call` (nor a cell left half-initialised).
                crate::internal::catch(|| meet_budget(budget, &mut build))
                    .unwrap_or_else(|payload| {
                        Err(self.internal(sig, slots, "compiling", &*payload))
                    })
                    .map_err(|e| match e.kind {
                        // Recorded while tracing (`trace::trace`): add the signature.
                        ErrorKind::Internal if !e.message.starts_with(INTERNAL_PREFIX) => {
                            let what = explain::describe(self.name, sig, slots, self.params);
                            internal_error(&what, "tracing", &e.message)
                        }
                        _ => e,
                    })
            });
            phases = ps;
            if let (Some(dir), Ok((exe, _))) = (dump, &r) {
                super::dump::write(std::path::Path::new(&dir), self.name, sig, exe);
            }
            let elapsed = start.elapsed();
            self.compile_nanos
                .fetch_add(elapsed.as_nanos() as u64, Ordering::Relaxed);
            compiled_in = Some(elapsed);
            r
        });
        match compiled_in {
            Some(elapsed) => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                self.after_compile(sig, slots, &entry, result, elapsed, &phases);
                // An internal failure is not a property of the signature
                // (the next call may not meet it): not cached, the next call
                // compiles again.
                if matches!(result, Err(e) if e.kind == ErrorKind::Internal) {
                    let mut g = self.lock();
                    if let Some(inner) = g.as_mut() {
                        if inner.map.get(sig).is_some_and(|e| Arc::ptr_eq(e, &entry)) {
                            inner.map.remove(sig);
                        }
                    }
                }
            }
            None => {
                self.hits.fetch_add(1, Ordering::Relaxed);
            }
        }
        result.clone()
    }

    /// Account a new program's bytes, remember its signature, log it, warn
    /// past the threshold, and evict down to the limit.
    fn after_compile(
        &self,
        sig: &Signature,
        slots: &[ParamSlot],
        entry: &Entry,
        result: &Compiled,
        elapsed: Duration,
        phases: &[super::phases::Phase],
    ) {
        let bytes = match result {
            Ok((exe, _)) => {
                let m = exe.memory_analysis();
                m.code_bytes
                    .saturating_add(m.temp_bytes)
                    .saturating_add(m.program_bytes)
                    .saturating_add(entry_bytes(sig, slots))
            }
            Err(_) => 0,
        };
        let log_compiles = log::enabled(Category::Compiles);
        let (reason, warning, signatures, dropped, evict_lines) = {
            let mut g = self.lock();
            let inner = g.get_or_insert_with(Inner::default);
            // Cleared while compiling: the program is not cached.
            let cached = inner.map.get(sig).is_some_and(|e| Arc::ptr_eq(e, entry));
            if cached {
                entry.bytes.store(bytes, Ordering::Relaxed);
                inner.bytes = inner.bytes.saturating_add(bytes);
            }
            let reason = if log_compiles {
                self.reason(inner, sig, slots)
            } else {
                None
            };
            let fate = if cached { Fate::Cached } else { Fate::Cleared };
            match inner.seen(sig) {
                Some(i) => {
                    let mut s = inner.seen.remove(i).expect("found");
                    s.fate = fate;
                    inner.seen.push_back(s);
                }
                None => {
                    inner.signatures += 1;
                    if inner.seen.len() == HISTORY {
                        inner.seen.pop_front();
                    }
                    inner.seen.push_back(Seen {
                        sig: sig.clone(),
                        slots: slots.to_vec(),
                        fate,
                    });
                }
            }
            let warning = self.warning(inner);
            let (dropped, lines) = if cached {
                self.evict(inner, Some(entry))
            } else {
                (vec![], vec![])
            };
            (reason, warning, inner.signatures, dropped, lines)
        };
        if log_compiles {
            let what = explain::describe(self.name, sig, slots, self.params);
            let ms = elapsed.as_secs_f64() * 1e3;
            let mut line = match result {
                Ok((exe, _)) => {
                    let m = exe.memory_analysis();
                    format!(
                        "jitfuse: compiled {what} in {ms:.3} ms: {} kernels, {} temp bytes, {} code bytes",
                        exe.kernel_count(),
                        m.temp_bytes,
                        m.code_bytes
                    )
                }
                Err(e) => {
                    let msg = e.to_string();
                    let first = msg.lines().next().unwrap_or("");
                    format!("jitfuse: compiling {what} failed after {ms:.3} ms: {first}")
                }
            };
            if let Some(r) = reason {
                line.push_str(&format!("; recompile ({signatures} signatures): {r}"));
            }
            if !phases.is_empty() {
                line.push_str(&format!("; phases: {}", super::phases::describe(phases)));
            }
            log::emit(&line);
        }
        for l in &evict_lines {
            log::emit(l);
        }
        if let Some(w) = warning {
            log::emit(&w);
        }
        drop(dropped);
    }

    /// Why `sig` compiled although the function compiled before: what
    /// changed from the closest signature compiled before, or what became of
    /// `sig`'s earlier program. `None` on the first compilation.
    fn reason(&self, inner: &Inner, sig: &Signature, slots: &[ParamSlot]) -> Option<String> {
        if let Some(i) = inner.seen(sig) {
            return Some(
                match inner.seen[i].fate {
                    Fate::Evicted => "compiled before, evicted by the cache limit",
                    Fate::Cleared => "compiled before, the cache was cleared",
                    Fate::Cached => "compiled before",
                }
                .to_string(),
            );
        }
        // Closest: fewest changed parameters; the most recent among equals.
        let mut best: Option<(usize, Vec<String>)> = None;
        for s in inner.seen.iter().rev() {
            let c = explain::changes((&s.sig, &s.slots), (sig, slots), self.params);
            if best.as_ref().is_none_or(|b| c.0 < b.0) {
                best = Some(c);
            }
        }
        best.map(|c| c.1.join("; "))
    }

    /// The recompile warning, when this compilation crossed the threshold.
    fn warning(&self, inner: &mut Inner) -> Option<String> {
        let n = self.recompile_warning()?;
        if inner.signatures <= n || inner.warned_at == Some(n) {
            return None;
        }
        inner.warned_at = Some(n);
        let varied = explain::varied(
            inner.seen.iter().map(|s| (&s.sig, &s.slots[..])),
            self.params,
        );
        let varied = if varied.is_empty() {
            String::new()
        } else {
            format!(": {}", varied.join("; "))
        };
        Some(format!(
            "jitfuse: warning: {} has compiled {} signatures (more than {n}){varied}. Each new \
             signature traces and compiles again: keep shapes and static arguments to a few \
             values (threshold: JITFUSE_RECOMPILE_WARN)",
            self.name, inner.signatures
        ))
    }

    /// Evict least recently used programs until the cached bytes fit the
    /// limit, never `keep` (by default the most recently used entry).
    /// Returns the evicted entries (to drop once the lock is released) and
    /// the log lines.
    fn evict(&self, inner: &mut Inner, keep: Option<&Entry>) -> (Vec<Entry>, Vec<String>) {
        let (mut dropped, mut lines) = (vec![], vec![]);
        let Some(limit) = self.cache_limit() else {
            return (dropped, lines);
        };
        let keep = keep.cloned().or_else(|| {
            inner
                .map
                .values()
                .max_by_key(|e| e.last_used.load(Ordering::Relaxed))
                .cloned()
        });
        let log_cache = log::enabled(Category::Cache);
        while inner.bytes > limit {
            let victim = inner
                .map
                .iter()
                .filter(|(_, e)| {
                    // Compiled and accounted (a program of 0 bytes frees nothing).
                    e.bytes.load(Ordering::Relaxed) > 0
                        && !keep.as_ref().is_some_and(|k| Arc::ptr_eq(k, e))
                })
                .min_by_key(|(_, e)| e.last_used.load(Ordering::Relaxed))
                .map(|(s, _)| s.clone());
            let Some(sig) = victim else { break };
            let e = inner.map.remove(&sig).expect("a key of the map");
            let b = e.bytes.load(Ordering::Relaxed);
            inner.bytes = inner.bytes.saturating_sub(b);
            self.evictions.fetch_add(1, Ordering::Relaxed);
            let slots = match inner.seen(&sig) {
                Some(i) => {
                    inner.seen[i].fate = Fate::Evicted;
                    inner.seen[i].slots.clone()
                }
                None => vec![],
            };
            if log_cache {
                lines.push(format!(
                    "jitfuse: evicted {}: {b} bytes, least recently used; cache {} of {limit} bytes",
                    explain::describe(self.name, &sig, &slots, self.params),
                    inner.bytes
                ));
            }
            dropped.push(e);
        }
        (dropped, lines)
    }

    /// The cache's state, also after a panic while it was held: every
    /// update keeps it consistent, and a poisoned lock must not turn one
    /// failure into a panic of every later call.
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Inner>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn register(&'static self) {
        if !self.registered.swap(true, Ordering::AcqRel) {
            REGISTRY
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(self);
        }
    }

    /// Compilations, hits, evictions and bytes held so far.
    pub fn stats(&self) -> CacheStats {
        let (entries, cached_bytes) = self
            .lock()
            .as_ref()
            .map_or((0, 0), |i| (i.map.len(), i.bytes));
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries,
            compile_time: Duration::from_nanos(self.compile_nanos.load(Ordering::Relaxed)),
            evictions: self.evictions.load(Ordering::Relaxed),
            cached_bytes,
        }
    }

    /// Drop every cached program. Counters are kept; calls running now finish
    /// on the program they hold, whose code is freed when they are done. The
    /// freed memory is handed back to the system as far as the allocator can.
    pub fn clear(&self) {
        self.drop_all();
        crate::release::trim();
    }

    fn drop_all(&self) {
        let old = {
            let mut g = self.lock();
            g.as_mut().map(|inner| {
                for s in inner.seen.iter_mut().filter(|s| s.fate == Fate::Cached) {
                    s.fate = Fate::Cleared;
                }
                inner.bytes = 0;
                std::mem::take(&mut inner.map)
            })
        };
        drop(old);
    }
}

/// Heap bytes of a cache entry besides its program: the slot, the signature
/// (the map's key, and again in the history of signatures), the parameter
/// slots and the return value's structure (a measured figure for the last).
fn entry_bytes(sig: &Signature, slots: &[ParamSlot]) -> usize {
    use crate::units::heap_block as block;
    use std::mem::size_of;
    const STRUCTURE_BYTES: usize = 128;
    let sig_bytes = block(sig.args.capacity() * size_of::<super::ArgSig>())
        + sig
            .args
            .iter()
            .map(|a| block(a.shape.capacity() * size_of::<usize>()))
            .sum::<usize>()
        + block(sig.structure.capacity() * size_of::<usize>())
        + sig.statics.len() * 64;
    block(size_of::<Slot>() + 16)
        + 2 * (sig_bytes + size_of::<(Signature, Entry)>())
        + block(std::mem::size_of_val(slots))
        + STRUCTURE_BYTES
}

/// How every internal error's message begins.
const INTERNAL_PREFIX: &str = "internal error in jitfuse";

/// Compile step 0 of the checkpointing ladder (`build(0)`, which always traces); when an
/// explicit budget refuses it, the steps after it in turn (`None`: no further trace) until
/// one is met. An explicit budget the recomputation search misses may still be met from
/// the automatic checkpointing's graph (√N segments, then the same search on it), then with
/// loop gradients cut deeper (`autodiff::LOOP_LADDER`). A refusal reports the lowest peak
/// any step reached, so its "at best" is never above the automatic checkpointing's. The one
/// strategy of calls, `Lowered::compile` and `Lowered::as_text`.
pub(crate) fn meet_budget<T>(
    budget: Option<MemoryBudget>,
    mut build: impl FnMut(usize) -> Result<Option<T>, CompileError>,
) -> Result<T, Error> {
    let first = build(0).map(|r| r.expect("step 0 always traces"));
    match first {
        Err(e @ CompileError::Budget { .. }) if matches!(budget, Some(MemoryBudget::Bytes(_))) => {
            let mut refusal = e.clone();
            for step in 1..=crate::autodiff::LOOP_LADDER.len() {
                match build(step) {
                    Ok(Some(r)) => return Ok(r),
                    Ok(None) => break,
                    Err(x @ CompileError::Budget { .. }) => {
                        if x.best() < refusal.best() {
                            refusal = x;
                        }
                    }
                    Err(_) => return Err(Error::from(e)),
                }
            }
            Err(Error::from(refusal))
        }
        r => r.map_err(Error::from),
    }
}

/// The loop checkpointing depth of step `step` of a missed budget's ladder (0: the graph
/// as traced; then the depths of `autodiff::LOOP_LADDER`).
fn ladder_levels(step: usize) -> Option<u32> {
    step.checked_sub(1).map(|k| crate::autodiff::LOOP_LADDER[k])
}

fn internal_error(what: &str, doing: &str, msg: &str) -> Error {
    Error::internal(format!(
        "{INTERNAL_PREFIX} (a bug: please report it) {doing} {what}: {msg}"
    ))
}

fn trace_body(sig: &Signature, body: Body<'_>) -> Result<(trace::Traced, Structure), Error> {
    let specs: Vec<ParamSpec> = sig
        .args
        .iter()
        .map(|a| ParamSpec {
            shape: a.shape.clone(),
            dtype: a.dtype,
            weak: a.kind == super::ArgKind::Scalar,
        })
        .collect();
    let structure = RefCell::new(None);
    let traced = trace::trace(&specs, |ts| {
        let (outs, s) = body(ts);
        *structure.borrow_mut() = Some(s);
        outs
    })?;
    Ok((traced, structure.into_inner().expect("the body returned")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    fn code_ids(c: &FnCache) -> Vec<u64> {
        let inner = c.inner.lock().unwrap();
        inner
            .iter()
            .flat_map(|i| i.map.values())
            .filter_map(|e| {
                e.cell
                    .get()
                    .and_then(|r| r.as_ref().ok())
                    .map(|x| x.0.code_id())
            })
            .collect()
    }

    #[test]
    fn clearing_frees_code_once_no_call_holds_it() {
        static CACHE: FnCache = FnCache::new("double");
        let body = |ts: &[Tensor]| (vec![&ts[0] * 2.0], Arc::new(()) as Structure);
        let x = Tensor::zeros(&[8], DType::F32);
        let call = || {
            let mut a = CallArgs::new();
            a.borrowed(&x);
            CACHE.call(a, &body).unwrap()
        };
        call();
        call();
        let ids = code_ids(&CACHE);
        assert_eq!(ids.len(), 1);
        assert!(crate::codegen::is_code_live(ids[0]));
        // A call in flight holds its executable: simulate by holding the Arc.
        let held = {
            let inner = CACHE.inner.lock().unwrap();
            inner
                .as_ref()
                .unwrap()
                .map
                .values()
                .next()
                .unwrap()
                .cell
                .get()
                .unwrap()
                .clone()
                .unwrap()
                .0
        };
        CACHE.clear();
        assert_eq!(CACHE.stats().entries, 0);
        assert!(
            crate::codegen::is_code_live(ids[0]),
            "still held by a running call"
        );
        drop(held);
        assert!(
            !crate::codegen::is_code_live(ids[0]),
            "freed when the last holder is done"
        );
        call();
        let s = CACHE.stats();
        assert_eq!((s.hits, s.misses, s.entries), (1, 2, 1));
    }
}
