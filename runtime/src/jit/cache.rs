//! The per-function cache of compiled programs, keyed by signature.
//!
//! Thread-safe: the map is behind a mutex held only for the lookup; each entry
//! is a `OnceCell`, so concurrent first calls with one signature compile once
//! (the others wait for the result). Executables are shared by `Arc`: clearing
//! the cache frees a program's code once no running call holds it.

use super::args::{CallArgs, Signature};
use super::lowered::Lowered;
use crate::exec::Executable;
use crate::trace::{self, ParamSpec};
use crate::{Error, Tensor};
use once_cell::sync::OnceCell;
use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Entry = Arc<OnceCell<Result<(Arc<Executable>, Structure), Error>>>;

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
}

pub struct FnCache {
    name: &'static str,
    map: Mutex<Option<HashMap<Signature, Entry>>>,
    hits: AtomicU64,
    misses: AtomicU64,
    compile_nanos: AtomicU64,
    registered: AtomicBool,
    /// Peak-memory budget in bytes (0: none).
    budget: std::sync::atomic::AtomicUsize,
}

static REGISTRY: Mutex<Vec<&'static FnCache>> = Mutex::new(Vec::new());

/// Clear the caches of every jitted function.
pub fn clear_caches() {
    let all: Vec<&'static FnCache> = REGISTRY.lock().unwrap().clone();
    for c in all {
        c.clear();
    }
}

impl FnCache {
    pub const fn new(name: &'static str) -> FnCache {
        FnCache {
            name,
            map: Mutex::new(None),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            compile_nanos: AtomicU64::new(0),
            registered: AtomicBool::new(false),
            budget: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// A cache whose programs must fit `budget` bytes of peak memory
    /// (`#[jit(memory_budget = ..)]`).
    pub const fn with_memory_budget(name: &'static str, budget: Option<usize>) -> FnCache {
        let mut c = FnCache::new(name);
        c.budget = std::sync::atomic::AtomicUsize::new(match budget {
            Some(b) => b,
            None => 0,
        });
        c
    }

    /// Set or remove the budget; compiled programs are dropped.
    /// `Some(AUTO_MEMORY_BUDGET)` chooses automatically: gradients in the
    /// body keep about √N of their N residuals (checkpointed segments).
    pub fn set_memory_budget(&self, bytes: Option<usize>) {
        self.budget.store(bytes.unwrap_or(0), Ordering::SeqCst);
        self.clear();
    }

    pub fn memory_budget(&self) -> Option<usize> {
        match self.budget.load(Ordering::SeqCst) {
            0 => None,
            b => Some(b),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
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
        let sig = args.signature()?;
        let (exe, structure) = self.get_or_compile(&sig, body)?;
        Ok((exe.run(args)?, structure))
    }

    /// Trace and compile for these arguments without running, keeping every
    /// stage's text. Does not touch the cache.
    pub fn lower(&'static self, args: CallArgs<'_>, body: Body<'_>) -> Result<Lowered, Error> {
        let sig = args.signature()?;
        let (traced, structure) = self.trace_body(&sig, body)?;
        Ok(Lowered::new(self, sig, traced, structure))
    }

    /// The cached program for `sig`, compiled from `traced` on a miss.
    pub(crate) fn compile_traced(
        &'static self,
        sig: &Signature,
        traced: &trace::Traced,
        structure: &Structure,
    ) -> Result<Arc<Executable>, Error> {
        Ok(self
            .cached(sig, &mut || Ok((traced.clone(), structure.clone())))?
            .0)
    }

    fn get_or_compile(
        &'static self,
        sig: &Signature,
        body: Body<'_>,
    ) -> Result<(Arc<Executable>, Structure), Error> {
        self.cached(sig, &mut || self.trace_body(sig, body))
    }

    /// Trace the body; under the automatic budget, gradients taken in it
    /// are cut into checkpointed segments (`autodiff::with_auto_checkpoint`).
    fn trace_body(
        &self,
        sig: &Signature,
        body: Body<'_>,
    ) -> Result<(trace::Traced, Structure), Error> {
        let auto = self.memory_budget() == Some(crate::AUTO_MEMORY_BUDGET);
        crate::autodiff::with_auto_checkpoint(auto, || trace_body(sig, body))
    }

    fn cached(
        &'static self,
        sig: &Signature,
        trace: &mut dyn FnMut() -> Result<(trace::Traced, Structure), Error>,
    ) -> Result<(Arc<Executable>, Structure), Error> {
        self.register();
        let entry = {
            let mut map = self.map.lock().unwrap();
            map.get_or_insert_with(HashMap::new)
                .entry(sig.clone())
                .or_default()
                .clone()
        };
        let mut compiled_here = false;
        let result = entry.get_or_init(|| {
            compiled_here = true;
            let start = Instant::now();
            let dump = std::env::var_os("JITFUSE_DUMP");
            let r = trace().and_then(|(t, s)| {
                Ok((
                    Arc::new(Executable::compile_with_budget(
                        t,
                        sig,
                        dump.is_some(),
                        self.memory_budget(),
                    )?),
                    s,
                ))
            });
            if let (Some(dir), Ok((exe, _))) = (dump, &r) {
                super::dump::write(std::path::Path::new(&dir), self.name, sig, exe);
            }
            self.compile_nanos
                .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
            r
        });
        if compiled_here {
            self.misses.fetch_add(1, Ordering::Relaxed);
        } else {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        result.clone()
    }

    fn register(&'static self) {
        if !self.registered.swap(true, Ordering::AcqRel) {
            REGISTRY.lock().unwrap().push(self);
        }
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries: self.map.lock().unwrap().as_ref().map_or(0, |m| m.len()),
            compile_time: Duration::from_nanos(self.compile_nanos.load(Ordering::Relaxed)),
        }
    }

    /// Drop every cached program. Counters are kept; calls running now finish
    /// on the program they hold, whose code is freed when they are done.
    pub fn clear(&self) {
        let old = self.map.lock().unwrap().take();
        drop(old);
    }
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
        let map = c.map.lock().unwrap();
        map.iter()
            .flat_map(|m| m.values())
            .filter_map(|e| e.get().and_then(|r| r.as_ref().ok()).map(|x| x.0.code_id()))
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
            let map = CACHE.map.lock().unwrap();
            map.as_ref()
                .unwrap()
                .values()
                .next()
                .unwrap()
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
