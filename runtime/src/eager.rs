//! Eager ops at compiled speed: outside `#[jit]`, every op on concrete tensors but the
//! control-flow ones (whose bodies are Rust code, run op by op) runs as a compiled one-op
//! program, cached by the op, its operands' shapes and dtypes and its results' types (as
//! JAX dispatches eager ops to single-op XLA computations); `attention_grad`'s three
//! results come from one program. A reshape (or a checkpoint barrier) shares its operand's
//! buffer and needs no program. Every op while an eager program itself is being compiled
//! or run, and one whose program does not compile, goes through the reference interpreter.
//! An elementwise op given a temporary that nobody else holds writes its result there
//! (`run_operands`).
//!
//! `JITFUSE_EAGER=interp` (read once) or [`set_eager_mode`] selects the interpreter for
//! everything: it stays the test oracle. The cache holds at most [`EAGER_CACHE_BYTES`] of
//! programs (code, arenas, the programs' own descriptions and the cache's entries: what
//! they keep resident), least recently used programs dropped first.

use crate::exec::args::ArgKind;
use crate::exec::Executable;
use crate::ir::{Graph, Node, Op, ValueId};
use crate::tensor::call::CallArgs;
use crate::tensor::Tensor;
use crate::{DType, Error};
use once_cell::sync::Lazy;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// How eager ops (outside `#[jit]`) run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EagerMode {
    /// Each op as a cached compiled program (the default).
    Compiled,
    /// Every op through the reference interpreter (`JITFUSE_EAGER=interp`).
    Interp,
}

/// The byte limit of the eager cache: its programs' code, arenas and descriptions, and its
/// entries (see `EagerStats::cached_bytes`).
pub const EAGER_CACHE_BYTES: usize = 256 << 20;

/// 0: not read yet; 1: compiled; 2: interpreter.
static MODE: AtomicU8 = AtomicU8::new(0);

/// Selects how eager ops run from now on, on every thread.
pub fn set_eager_mode(mode: EagerMode) {
    MODE.store(
        match mode {
            EagerMode::Compiled => 1,
            EagerMode::Interp => 2,
        },
        Ordering::Relaxed,
    );
}

/// How eager ops run: as `set_eager_mode` last said, else `JITFUSE_EAGER` (`interp` or
/// `compiled`, the default).
pub fn eager_mode() -> EagerMode {
    match MODE.load(Ordering::Relaxed) {
        1 => EagerMode::Compiled,
        2 => EagerMode::Interp,
        _ => {
            let mode = match std::env::var("JITFUSE_EAGER").as_deref() {
                Ok("interp") => EagerMode::Interp,
                _ => EagerMode::Compiled,
            };
            // Only the first reader stores; a concurrent `set_eager_mode` wins.
            let code = if mode == EagerMode::Compiled { 1 } else { 2 };
            let _ = MODE.compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
            eager_mode()
        }
    }
}

thread_local! {
    /// Depth of `interpreted` scopes on this thread (one is also entered while this thread
    /// compiles or runs an eager program, so the ops inside are interpreted).
    static INTERPRETED: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f` with this thread's eager ops on the reference interpreter, whatever the mode
/// (tests computing the oracle's answer eagerly; other threads are not affected).
pub fn interpreted<R>(f: impl FnOnce() -> R) -> R {
    struct Scope;
    impl Drop for Scope {
        fn drop(&mut self) {
            INTERPRETED.with(|d| d.set(d.get() - 1));
        }
    }
    INTERPRETED.with(|d| d.set(d.get() + 1));
    let _scope = Scope;
    f()
}

/// Whether this thread's eager ops run compiled now: the mode says so and no
/// `interpreted` scope (nor an eager program being compiled or run) is open.
fn compiling_here() -> bool {
    INTERPRETED.with(|d| d.get()) == 0 && eager_mode() == EagerMode::Compiled
}

/// Whether `op` runs compiled when eager.
fn compiles(op: &Op) -> bool {
    matches!(
        op,
        Op::Unary(_)
            | Op::Binary(_)
            | Op::Compare(_)
            | Op::Select
            | Op::Cast(_)
            | Op::Reduce(..)
            | Op::Matmul
            | Op::Transpose(_)
            | Op::Slice(_)
            | Op::Concat(_)
            | Op::Pad(..)
            | Op::ArgMax(_)
            | Op::ArgMin(_)
            | Op::Take(_)
            | Op::Broadcast
            | Op::Iota(_)
            | Op::SliceScatter(_)
            | Op::ScatterAdd(_)
            | Op::Random(_)
            | Op::Attention(_)
            | Op::AttentionGrad(_)
            | Op::Conv(_)
            | Op::Window(_)
            // Control flow: the node with its traced bodies, compiled once per body and
            // operand types (the key spells the bodies), its sub-programs cached with it.
            | Op::Cond(_)
            | Op::While(_)
            | Op::Scan(_)
    )
}

struct Entry {
    exe: Arc<Executable>,
    bytes: usize,
    used: u64,
    hits: u64,
}

#[derive(Default)]
struct Cache {
    map: HashMap<String, Entry>,
    bytes: usize,
    clock: u64,
    compiled: u64,
    evicted: u64,
    /// Hashes of the keys whose programs were too large to keep (`MAX_PROGRAM_SHARE`):
    /// their ops run one by one, without compiling the whole again.
    refused: std::collections::HashSet<u64>,
    /// Programs compiled and refused (each key once, unless the process compiles it again).
    refusals: u64,
}

/// A program may take at most this share of the cache: a larger one (a whole gradient of a
/// large model, `autodiff::eager_value_and_grad`) would evict every other program and be
/// evicted by the next ones, compiled again each time.
const MAX_PROGRAM_SHARE: usize = 4;

fn key_hash(k: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    k.hash(&mut h);
    h.finish()
}

static CACHE: Lazy<Mutex<Cache>> = Lazy::new(|| Mutex::new(Cache::default()));

/// Counters of the eager cache: programs compiled and dropped so far, and held now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EagerStats {
    /// Single-op programs compiled since the process started.
    pub compiled: u64,
    /// Programs dropped to keep the cache within its byte bound.
    pub evicted: u64,
    /// Programs held now.
    pub entries: usize,
    /// Bytes the held programs keep resident: their machine code, their arenas of
    /// temporaries and materialised constants, their own descriptions (graph, schedule,
    /// plan) and the cache's entries for them.
    pub cached_bytes: usize,
    /// Programs compiled but not kept, too large for the cache (over a quarter of its
    /// bound: a whole eager gradient of a large model); their ops run one by one.
    pub refused: u64,
}

/// The eager cache's counters now.
pub fn eager_stats() -> EagerStats {
    let c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    EagerStats {
        compiled: c.compiled,
        evicted: c.evicted,
        entries: c.map.len(),
        cached_bytes: c.bytes,
        refused: c.refusals,
    }
}

/// The cached eager programs: each one's key (the op, operand and result types, e.g.
/// `Unary(Exp)|f32[8]->f32[8]`) and how many calls reused it.
pub fn eager_cache_entries() -> Vec<(String, u64)> {
    let c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    c.map.iter().map(|(k, e)| (k.clone(), e.hits)).collect()
}

/// Drops every cached eager program (a program a call still runs is freed when it is done)
/// and hands the freed memory back to the system as far as the allocator can.
pub fn clear_eager_cache() {
    let old = {
        let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        c.bytes = 0;
        std::mem::take(&mut c.map)
    };
    drop(old);
    crate::release::trim();
}

fn key(op: &Op, inputs: &[&Tensor], donated: Option<usize>, outs: &[(&[usize], DType)]) -> String {
    use std::fmt::Write;
    let mut k = format!("{op:?}");
    for (i, t) in inputs.iter().enumerate() {
        let given = if donated == Some(i) { " donated" } else { "" };
        let _ = write!(k, "|{}{:?}{given}", t.dtype, t.shape);
    }
    for (i, (shape, dtype)) in outs.iter().enumerate() {
        let _ = write!(k, "{}{dtype}{shape:?}", if i == 0 { "->" } else { "," });
    }
    k
}

/// The one-op program: a parameter per operand, the op, its results (a multi-output op's
/// later results read by `get` nodes). An elementwise op's operand of another shape than
/// the result (a scalar as `[]`, a row, a column) is broadcast inside the program, where
/// the broadcast is a stride-0 read of the kernel, not a copy.
fn program(op: &Op, inputs: &[&Tensor], outs: &[(&[usize], DType)]) -> Graph {
    let mut g = Graph::new();
    let node = |op: Op, inputs: Vec<ValueId>, shape: &[usize], dtype: DType| Node {
        op,
        inputs,
        shape: shape.to_vec(),
        dtype,
        loc: None,
    };
    for (i, t) in inputs.iter().enumerate() {
        g.nodes.push(node(Op::Param(i), vec![], &t.shape, t.dtype));
    }
    let (shape, dtype) = outs[0];
    let elementwise = matches!(op, Op::Binary(_) | Op::Compare(_) | Op::Select);
    let mut operands = Vec::new();
    for (i, t) in inputs.iter().enumerate() {
        if elementwise && t.shape != shape {
            g.nodes
                .push(node(Op::Broadcast, vec![ValueId(i as u32)], shape, t.dtype));
            operands.push(ValueId(g.nodes.len() as u32 - 1));
        } else {
            operands.push(ValueId(i as u32));
        }
    }
    g.nodes.push(node(op.clone(), operands, shape, dtype));
    let first = ValueId(g.nodes.len() as u32 - 1);
    g.outputs = vec![first];
    for (k, &(shape, dtype)) in outs.iter().enumerate().skip(1) {
        g.nodes.push(node(Op::Get(k), vec![first], shape, dtype));
        g.outputs.push(ValueId(g.nodes.len() as u32 - 1));
    }
    g
}

/// The compiled program for this op and operand types, from the cache or compiled now;
/// `None` when it does not compile (the interpreter runs it).
fn executable(
    op: &Op,
    inputs: &[&Tensor],
    donated: Option<usize>,
    outs: &[(&[usize], DType)],
) -> Option<Arc<Executable>> {
    let kinds: Vec<ArgKind> = (0..inputs.len())
        .map(|i| {
            if donated == Some(i) {
                ArgKind::Owned
            } else {
                ArgKind::Borrowed
            }
        })
        .collect();
    cached(key(op, inputs, donated, outs), &kinds, || {
        Some(program(op, inputs, outs))
    })
}

/// The program cached under `k`, or the one `graph` builds (`None`: no program) compiled
/// now with parameters of `kinds` and cached within the byte bound.
fn cached(
    k: String,
    kinds: &[ArgKind],
    graph: impl FnOnce() -> Option<Graph>,
) -> Option<Arc<Executable>> {
    {
        let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        c.clock += 1;
        let now = c.clock;
        if let Some(e) = c.map.get_mut(&k) {
            e.used = now;
            e.hits += 1;
            return Some(e.exe.clone());
        }
        if c.refused.contains(&key_hash(&k)) {
            return None;
        }
    }
    // A program that does not compile (or a bug that panics compiling it) leaves the op to
    // the interpreter: an eager op never fails where the interpreter would not.
    let graph = graph()?;
    let compiled = crate::internal::catch(|| {
        let opts = crate::exec::CompileOptions {
            keep_text: false,
            ..Default::default()
        };
        Executable::from_graph_with(graph, vec![], Some(kinds), &opts)
    });
    let exe = Arc::new(compiled.ok()?.ok()?);
    let m = exe.memory_analysis();
    // The entry: its key and its slot of the map (which keeps up to twice its entries'
    // slots as it grows).
    let entry = crate::units::heap_block(k.capacity()) + 2 * std::mem::size_of::<(String, Entry)>();
    let bytes = m.code_bytes + m.temp_bytes + m.program_bytes + entry;
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    c.compiled += 1;
    if bytes > EAGER_CACHE_BYTES / MAX_PROGRAM_SHARE {
        c.refused.insert(key_hash(&k));
        c.refusals += 1;
        return None;
    }
    while c.bytes + bytes > EAGER_CACHE_BYTES && !c.map.is_empty() {
        let oldest = c
            .map
            .iter()
            .min_by_key(|(_, e)| e.used)
            .map(|(k, _)| k.clone())
            .expect("a non-empty cache has a least recently used entry");
        let gone = c.map.remove(&oldest).expect("the entry just found");
        c.bytes -= gone.bytes;
        c.evicted += 1;
    }
    let used = c.clock;
    if let Some(old) = c.map.insert(
        k,
        Entry {
            exe: exe.clone(),
            bytes,
            used,
            hits: 0,
        },
    ) {
        // Another thread compiled the same program meanwhile.
        c.bytes -= old.bytes;
    }
    c.bytes += bytes;
    Some(exe)
}

/// The op's result computed by a compiled program, or `None` where the interpreter runs
/// it (the mode, the op, a nested call, or a program that does not compile).
pub(crate) fn run(
    op: &Op,
    inputs: &[&Tensor],
    shape: &[usize],
    dtype: DType,
) -> Option<Result<Tensor, Error>> {
    run_all(op, inputs, &[(shape, dtype)]).map(|r| r.map(|mut outs| outs.remove(0)))
}

/// [`run`] for an op with several results (`attention_grad`), of the types `outs`.
pub(crate) fn run_all(
    op: &Op,
    inputs: &[&Tensor],
    outs: &[(&[usize], DType)],
) -> Option<Result<Vec<Tensor>, Error>> {
    if !compiles(op) || !compiling_here() {
        return None;
    }
    interpreted(|| {
        let exe = executable(op, inputs, None, outs)?;
        // A run that fails (its result cannot be allocated) is left to the interpreter,
        // whose error names the op and its result ("for the result of `pad`"), as a
        // program's error, naming its output by value number, would not.
        Some(Ok(crate::diag::profile::named("eager", || {
            exe.run_with(inputs)
        })
        .ok()?))
    })
}

/// An operand of an eager elementwise op: borrowed, or given away by the caller (a
/// temporary such as `a * 2.0` in `a * 2.0 + b`).
pub(crate) enum Operand<'a> {
    Borrowed(&'a Tensor),
    Owned(Tensor),
}

impl Operand<'_> {
    fn tensor(&self) -> &Tensor {
        match self {
            Operand::Borrowed(t) => t,
            Operand::Owned(t) => t,
        }
    }

    /// The tensor, owned (a borrowed one is shared, not copied).
    pub(crate) fn into_tensor(self) -> Tensor {
        match self {
            Operand::Borrowed(t) => t.clone(),
            Operand::Owned(t) => t,
        }
    }
}

/// Whether `o` can become the result of type `dtype[shape]` in place: given away, of
/// that type, and its buffer held by nobody else.
fn donatable(o: &Operand, shape: &[usize], dtype: DType) -> bool {
    match o {
        Operand::Owned(t) => {
            t.dtype == dtype
                && t.shape == shape
                && t.buffer().is_some_and(|b| {
                    Arc::strong_count(b) == 1 && Arc::weak_count(b) == 0 && b.is_owned()
                })
        }
        Operand::Borrowed(_) => false,
    }
}

/// [`run`] for an elementwise op whose operands may be given away: the result is written
/// into the first temporary of its type that nobody else holds (as ndarray's `a + &b`
/// reuses `a`), so a chain of eager ops does not allocate a buffer per op. `Err` gives
/// the operands back where the interpreter is to run the op.
pub(crate) fn run_operands<'a>(
    op: &Op,
    operands: Vec<Operand<'a>>,
    shape: &[usize],
    dtype: DType,
) -> Result<Result<Tensor, Error>, Vec<Operand<'a>>> {
    let donated = operands.iter().position(|o| donatable(o, shape, dtype));
    if donated.is_none() {
        let refs: Vec<&Tensor> = operands.iter().map(|o| o.tensor()).collect();
        return match run(op, &refs, shape, dtype) {
            Some(r) => Ok(r),
            None => Err(operands),
        };
    }
    if !compiles(op) || !compiling_here() {
        return Err(operands);
    }
    let exe = {
        let refs: Vec<&Tensor> = operands.iter().map(|o| o.tensor()).collect();
        match interpreted(|| executable(op, &refs, donated, &[(shape, dtype)])) {
            Some(exe) => exe,
            None => return Err(operands),
        }
    };
    let mut args = CallArgs::new();
    for (i, o) in operands.into_iter().enumerate() {
        match o {
            Operand::Owned(t) if Some(i) == donated => args.owned(t),
            Operand::Owned(t) => args.owned_kept(t),
            Operand::Borrowed(t) => args.borrowed(t),
        }
    }
    // The donated operand is gone: a failure is reported here, naming the op (the
    // program's own error names its output by value number).
    Ok(
        interpreted(|| crate::diag::profile::named("eager", || exe.run(args)))
            .map(|mut outs| outs.remove(0))
            .map_err(|e| Error::new(e.kind, format!("`{}`: {}", op.name(), e.message))),
    )
}

/// `f` of `inputs` (a few ops that compile better together than one by one, such as a
/// product with a transposed operand, whose GEMM reads it with strides instead of an
/// eager transpose copying it first) as one cached program, keyed by `name` and the
/// operands' types. `None` where the ops are to run one by one: while tracing, on the
/// interpreter, or when `f` does not trace or compile alone (its errors are then those of
/// the ops).
pub(crate) fn fused(
    name: &str,
    inputs: &[&Tensor],
    f: impl FnOnce(&[Tensor]) -> Vec<Tensor>,
) -> Option<Vec<Tensor>> {
    if crate::trace::current_trace().is_some()
        || inputs.iter().any(|t| t.is_traced())
        || !compiling_here()
    {
        return None;
    }
    use std::fmt::Write;
    let mut k = format!("Fused({name})");
    for t in inputs {
        let _ = write!(k, "|{}{:?}", t.dtype, t.shape);
    }
    let kinds = vec![ArgKind::Borrowed; inputs.len()];
    let exe = cached(k, &kinds, || {
        let specs: Vec<crate::trace::ParamSpec> = inputs
            .iter()
            .map(|t| crate::trace::ParamSpec {
                shape: t.shape.clone(),
                dtype: t.dtype,
                weak: false,
            })
            .collect();
        let traced = crate::trace::trace(&specs, f).ok()?;
        // A program of its parameters alone (nothing captured).
        traced.captured.is_empty().then_some(traced.graph)
    })?;
    interpreted(|| crate::diag::profile::named("eager control flow", || exe.run_with(inputs)).ok())
}
