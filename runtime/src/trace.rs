//! The thread-local trace context. While a `#[jit]` body runs under
//! [`trace`], every tensor operation whose operands include a traced tensor
//! appends a node to the graph on top of this thread's trace stack instead of
//! computing. Errors inside a trace unwind to [`trace`] (without running the
//! panic hook) and come back as `Err`.

use crate::ir::{Graph, Node, Op, ValueId};
use crate::tensor::{Data, Tensor};
use crate::{DType, Error, ErrorKind, Literal, SourceLoc};
use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::resume_unwind;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_TRACE: AtomicU64 = AtomicU64::new(1);

pub(crate) struct TraceState {
    pub id: u64,
    pub graph: Graph,
    /// Concrete tensors the body closed over, in `captured k` order.
    pub captured: Vec<Tensor>,
    /// Captured tensors by (buffer or tracer identity, shape, dtype): two
    /// views of one buffer with different shapes are different captures.
    captured_by_ptr: HashMap<(usize, Vec<usize>, DType), usize>,
    pub error: Option<Error>,
}

thread_local! {
    static STACK: RefCell<Vec<TraceState>> = const { RefCell::new(Vec::new()) };
    static LOC_OVERRIDE: std::cell::Cell<Option<SourceLoc>> = const { std::cell::Cell::new(None) };
}

/// While alive, nodes recorded on this thread carry this location instead
/// of their caller's (the backward pass attributes its nodes to the user's
/// forward op).
pub(crate) struct LocOverride(Option<SourceLoc>);

impl LocOverride {
    pub(crate) fn set(loc: Option<SourceLoc>) -> LocOverride {
        LocOverride(LOC_OVERRIDE.with(|c| c.replace(loc)))
    }
}

impl Drop for LocOverride {
    fn drop(&mut self) {
        LOC_OVERRIDE.with(|c| c.set(self.0));
    }
}

/// Payload of the unwind that aborts a trace after an error was recorded.
struct TraceAbort;

/// Whether this thread is tracing (a `#[jit]` call here is inlined).
pub fn is_tracing() -> bool {
    STACK.with(|s| !s.borrow().is_empty())
}

/// Id of the innermost trace, if any.
pub(crate) fn current_trace() -> Option<u64> {
    STACK.with(|s| s.borrow().last().map(|t| t.id))
}

/// Report an error from a tensor operation: inside a trace it aborts the trace
/// (and `trace` returns it); eagerly it panics with the message.
pub(crate) fn fail(err: Error) -> ! {
    let recorded = STACK.with(|s| {
        let mut s = s.borrow_mut();
        match s.last_mut() {
            Some(top) => {
                top.error.get_or_insert(err.clone());
                true
            }
            None => false,
        }
    });
    if recorded {
        resume_unwind(Box::new(TraceAbort));
    }
    panic!("{err}");
}

/// A traced function's description of one parameter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamSpec {
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// Traced scalars of `f32`/`f64` parameters are weakly typed.
    pub weak: bool,
}

/// The result of tracing: the graph and the tensors it captured.
#[derive(Clone)]
pub struct Traced {
    pub graph: Graph,
    pub captured: Vec<Tensor>,
}

impl Traced {
    /// Compile the traced graph for calls of `sig` (the executor reads the captured
    /// tensors as arrays).
    pub fn compile(
        self,
        sig: &crate::exec::args::Signature,
        opts: &crate::exec::CompileOptions,
    ) -> Result<crate::exec::Executable, crate::error::CompileError> {
        let captured = crate::tensor::call::concrete(self.captured, "compile")?;
        crate::exec::Executable::compile(self.graph, captured, sig, opts)
    }
}

/// Trace `body` on parameters of the given types.
pub fn trace(
    params: &[ParamSpec],
    body: impl FnOnce(&[Tensor]) -> Vec<Tensor>,
) -> Result<Traced, Error> {
    let id = NEXT_TRACE.fetch_add(1, Ordering::Relaxed);
    let mut state = TraceState {
        id,
        graph: Graph::new(),
        captured: Vec::new(),
        captured_by_ptr: HashMap::new(),
        error: None,
    };
    let mut args = Vec::with_capacity(params.len());
    for (k, p) in params.iter().enumerate() {
        let v = state.graph.push(Node {
            op: Op::Param(k),
            inputs: vec![],
            shape: p.shape.clone(),
            dtype: p.dtype,
            loc: None,
        });
        let t = Tensor::traced(id, v, p.shape.clone(), p.dtype);
        args.push(if p.weak { t.into_weak() } else { t });
    }
    STACK.with(|s| s.borrow_mut().push(state));
    crate::internal::take_internal_panic();
    // Pop our frame however the body leaves (return, error, user panic).
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            STACK.with(|s| s.borrow_mut().pop());
        }
    }
    let result = {
        let _pop = Pop;
        let r = crate::internal::catch(|| {
            let outs = body(&args);
            drop(args);
            outs.iter().map(|t| to_value(t, None)).collect::<Vec<_>>()
        });
        let state = STACK.with(|s| {
            let mut s = s.borrow_mut();
            let top = s.last_mut().expect("trace stack");
            (
                std::mem::take(&mut top.graph),
                std::mem::take(&mut top.captured),
                top.error.take(),
            )
        });
        let internal = r.is_err() && crate::internal::take_internal_panic();
        (r, state, internal)
    };
    match result {
        (Ok(outputs), (mut graph, captured, None), _) => {
            graph.outputs = outputs;
            Ok(Traced { graph, captured })
        }
        (_, (_, _, Some(err)), _) => Err(err),
        (Err(payload), _, internal) => {
            if payload.is::<TraceAbort>() {
                return Err(Error::internal(
                    "a trace was aborted without an error being recorded",
                ));
            }
            let msg = crate::error::panic_message(&*payload);
            if internal {
                // jitfuse's own code (a tensor op's recording) panicked.
                return Err(Error::internal(format!("a panic while tracing: {msg}")));
            }
            // A panic of the user's body while tracing: reported like any
            // other error of the call (the panic hook has printed where).
            Err(Error::new(
                ErrorKind::Panic,
                format!("the traced body panicked: {msg}"),
            ))
        }
    }
}

/// The value of `t` in the innermost trace: its node if it is traced there,
/// otherwise a new `const` (one-element concrete tensors) or `captured` node.
/// Must be called while tracing.
pub(crate) fn to_value(t: &Tensor, loc: Option<SourceLoc>) -> ValueId {
    let r = STACK.with(|s| {
        let mut s = s.borrow_mut();
        let outer: Vec<u64> = s.iter().map(|f| f.id).collect();
        let top = s.last_mut().expect("to_value outside a trace");
        match &t.data {
            Data::Traced { trace, id } if *trace == top.id => Ok(*id),
            // A value of an enclosing trace (e.g. a closure of `grad` over a
            // jitted function's argument): captured like a concrete tensor;
            // the inner graph is later replayed inside the outer trace.
            Data::Traced { trace, id } if outer.contains(trace) => {
                let key = (*trace as usize) << 32 ^ id.index() ^ (1 << 63);
                Ok(capture(top, key, t, loc))
            }
            Data::Traced { .. } => Err(Error::new(
                ErrorKind::LeakedTracer,
                format!(
                    "a traced tensor {} from another trace was used here; traced tensors live only \
                     inside the #[jit] call that made them: return it as an output instead of \
                     storing it",
                    crate::error::type_str(t.dtype, &t.shape)
                ),
            )),
            Data::Concrete(buf) => {
                if t.len() == 1 {
                    let lit = t.array().literal(0);
                    let node = Node {
                        op: Op::Const(lit),
                        inputs: vec![],
                        shape: t.shape.clone(),
                        dtype: t.dtype,
                        loc,
                    };
                    return Ok(top.graph.push(node));
                }
                Ok(capture(top, std::sync::Arc::as_ptr(buf) as usize, t, loc))
            }
        }
    });
    match r {
        Ok(v) => v,
        Err(e) => fail(match loc {
            Some(l) => e.at(l),
            None => e,
        }),
    }
}

/// The `captured k` node of `t` (one slot per identity, shape and dtype).
fn capture(top: &mut TraceState, id: usize, t: &Tensor, loc: Option<SourceLoc>) -> ValueId {
    let key = (id, t.shape.clone(), t.dtype);
    let k = match top.captured_by_ptr.get(&key) {
        Some(k) => *k,
        None => {
            top.captured.push(t.clone());
            top.captured_by_ptr.insert(key, top.captured.len() - 1);
            top.captured.len() - 1
        }
    };
    let node = Node {
        op: Op::Captured(k),
        inputs: vec![],
        shape: t.shape.clone(),
        dtype: t.dtype,
        loc,
    };
    top.graph.push(node)
}

/// Append a node to the innermost trace and return its traced tensor.
pub(crate) fn push_node(
    op: Op,
    inputs: &[&Tensor],
    shape: Vec<usize>,
    dtype: DType,
    loc: SourceLoc,
) -> Tensor {
    let _internal = crate::internal::Scope::enter();
    crate::internal::injection_point("trace");
    let loc = LOC_OVERRIDE.with(|c| c.get()).unwrap_or(loc);
    // Every traced value's byte size fits in memory addresses (the
    // invariant `shape.rs` states): what the planner and code generator
    // compute from shapes cannot overflow.
    if let Err(e) = crate::shape::checked_bytes(op.name(), &shape, dtype) {
        fail(e.at(loc));
    }
    let ids: Vec<ValueId> = inputs.iter().map(|t| to_value(t, Some(loc))).collect();
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        let top = s.last_mut().expect("push_node outside a trace");
        let v = top.graph.push(Node {
            op,
            inputs: ids,
            shape: shape.clone(),
            dtype,
            loc: Some(loc),
        });
        Tensor::traced(top.id, v, shape, dtype)
    })
}

/// Number of nodes in the innermost trace so far (None when not tracing).
pub(crate) fn graph_len() -> Option<usize> {
    STACK.with(|s| s.borrow().last().map(|t| t.graph.nodes.len()))
}

/// Run `f` on the innermost trace's graph.
pub(crate) fn with_graph<R>(f: impl FnOnce(&mut Graph) -> R) -> Option<R> {
    STACK.with(|s| s.borrow_mut().last_mut().map(|t| f(&mut t.graph)))
}

/// The node of `t` in the innermost trace, if it is traced there.
pub(crate) fn own_value(t: &Tensor) -> Option<ValueId> {
    let top = current_trace()?;
    match &t.data {
        Data::Traced { trace, id } if *trace == top => Some(*id),
        _ => None,
    }
}

/// A constant node in the innermost trace.
pub(crate) fn push_const(lit: Literal, shape: Vec<usize>, dtype: DType, loc: SourceLoc) -> Tensor {
    push_node(Op::Const(lit.cast(dtype)), &[], shape, dtype, loc)
}
