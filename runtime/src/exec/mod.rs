//! A compiled program (`Executable`): the graph, its kernels and their
//! machine code, and `run`, which checks the arguments, allocates the
//! buffers and calls the kernels in order.

pub(crate) mod args;
mod compile;
mod control;
mod footprint;
mod memory;
mod parallel;
mod profiled;
mod slots;
mod steps;

pub use crate::library::workspace::held_bytes as gemm_held_bytes;
pub use compile::{CompileOptions, MemoryBudget, AUTO_MEMORY_BUDGET};
pub use memory::MemoryAnalysis;

use crate::array::{Array, ArrayRef};
use crate::codegen::{CompiledKernels, Target};
use crate::describe::Description;
use crate::error::type_str;
use crate::fusion::partition::{self, Partition, Step};
use crate::ir::{self, Graph, Op, ValueId};
use crate::plan::{BufferPlan, Place};
use crate::shape;
use crate::storage::Buffer;
use crate::Error;
use args::{ArgKind, Signature};
use slots::Slots;
use std::sync::Arc;
use std::sync::Mutex;

/// A compiled program: what it computes (the graph after the passes, partitioned and
/// planned), what a call runs, and what a call needs besides its arguments.
pub struct Executable {
    /// The graph after the passes (what the kernels compute).
    graph: Graph,
    /// Its steps in their scheduled order, and which values live in buffers.
    part: Partition,
    /// What a call runs, step by step (decided at compile time so that a call only
    /// follows them).
    steps: Vec<steps::RunStep>,
    plan: BufferPlan,
    /// The machine code of the compiled steps (and its listings when kept).
    compiled: CompiledKernels,
    /// The memory a call uses beside its arguments and outputs.
    memory: CallMemory,
    /// What a call is given: the calling convention and the tensors the trace captured.
    inputs: Inputs,
    /// What the program was compiled from and for, kept for its texts, proofs and reports.
    record: Record,
}

/// The memory a call uses beside its arguments and outputs.
struct CallMemory {
    /// Arenas of finished calls, reused by the next ones.
    arenas: Mutex<Vec<Buffer>>,
    /// Bytes of every arena: the plan's, then (at `scratch_offset`) the
    /// largest scratch a library step needs (`library::ops::scratch_bytes`).
    arena_len: usize,
    scratch_offset: usize,
    /// Constants a step reads from a buffer, materialised once (they are
    /// immutable): of their full shape for compiled and control steps, of one
    /// element (read with zero strides) where only library steps read them.
    consts: Vec<(ValueId, Array)>,
    /// The GEMM libraries' workspace for this program's products, made resident before
    /// the first call's products run (`library_bytes`).
    gemm: crate::library::workspace::Reserved,
}

/// What a call is given besides its arguments' buffers.
struct Inputs {
    signature: Signature,
    captured: Vec<Array>,
}

/// What the program was compiled from and for.
struct Record {
    /// The graph as traced (empty unless the program keeps its text).
    traced: Graph,
    /// What each step computes and how it walks memory (`describe::describe`, built once):
    /// what the plan's proof reads.
    described: Vec<Description>,
    /// What the kernels were compiled for.
    target: Target,
    /// What the profiler shows of the steps (built the first time the program runs while
    /// profiling).
    profile: std::sync::OnceLock<Arc<crate::diag::profile::ProgramInfo>>,
}

impl Executable {
    /// The control-flow steps and their sub-programs, in step order.
    pub(crate) fn controls(&self) -> impl Iterator<Item = (ValueId, &control::ControlProgram)> {
        self.steps.iter().filter_map(|s| s.control())
    }

    /// What the kernels were compiled for.
    pub fn target(&self) -> &Target {
        &self.record.target
    }

    /// The compiled sub-graphs of every control-flow node, in node order:
    /// `[else, then]` of a `cond`, `[cond, body]` of a `while`, `[body]` of
    /// a `scan` (for tests and tools).
    pub fn sub_programs(&self) -> Vec<&Executable> {
        let mut cs: Vec<(ValueId, &control::ControlProgram)> = self.controls().collect();
        cs.sort_by_key(|c| c.0);
        cs.into_iter()
            .flat_map(|(_, c)| c.execs.iter().map(|e| &**e))
            .collect()
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Identifies this program's machine code (see `codegen::is_code_live`).
    pub fn code_id(&self) -> u64 {
        self.compiled.code.id
    }

    /// Number of compiled (Cranelift) kernels.
    pub fn kernel_count(&self) -> usize {
        self.part
            .steps
            .iter()
            .filter(|s| !matches!(s, Step::Library(_)))
            .count()
            + self
                .controls()
                .map(|(_, c)| c.kernel_count())
                .sum::<usize>()
    }

    /// Number of distinct machine-code functions of the compiled steps
    /// (kernels of the same structure share one).
    pub fn function_count(&self) -> usize {
        let mut f: Vec<usize> = self
            .steps
            .iter()
            .filter_map(|s| match s.run {
                steps::Run::Kernel { f, .. } => Some(f as usize),
                _ => None,
            })
            .collect();
        f.sort();
        f.dedup();
        f.len()
    }

    /// Number of steps (kernels and library calls).
    pub fn step_count(&self) -> usize {
        self.part.steps.len()
    }

    /// The graph as traced (empty when the program was compiled without its text: the
    /// caches' programs, unless `JITFUSE_DUMP` is set).
    pub fn traced_text(&self) -> String {
        self.record.traced.to_text()
    }

    /// The graph after the passes (simplification), which the kernels compute.
    pub fn optimized_text(&self) -> String {
        self.graph.to_text()
    }

    /// Where each collective step starts and where a call waits for it, one line each:
    /// `step 2 all_reduce_sum %5: waited for before step 4 (its first reader)`.
    pub fn collectives_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        for (si, step) in self.steps.iter().enumerate() {
            let steps::Run::Library {
                v,
                collective: Some(c),
                ..
            } = &step.run
            else {
                continue;
            };
            let why = match c.wait_before {
                w if w == self.steps.len() => "the end of the call: a program output",
                w if !self.steps[w].reads.contains(v) => "the next step: no step reads it",
                _ => "its first reader",
            };
            let op = self.graph.node(*v).op.name();
            let now = if c.runs_at_once(si) {
                ", run at once"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "step {si} {op} %{}: waited for before step {} ({why}){now}",
                v.0, c.wait_before
            );
        }
        s.push_str(&self.sub_programs_text(|e| e.collectives_text()));
        s
    }

    pub fn kernels_text(&self) -> String {
        let mut s = partition::steps_text(&self.graph, &self.part);
        s.push_str(&self.sub_programs_text(|e| e.kernels_text()));
        s
    }

    /// Each compiled step as every backend reads it (`codegen::lower`): its locals, then what
    /// it walks (accesses, dims) and stores.
    pub fn lowered_text(&self) -> String {
        let listings: Vec<String> = (self.part.steps.iter().zip(&self.record.described))
            .filter_map(|(step, d)| {
                let lowered =
                    crate::codegen::lower::Lowered::of(&self.graph, step, d, &self.record.target)?;
                Some(lowered.key().replace(';', "\n"))
            })
            .collect();
        let mut s = self.by_step(&listings);
        s.push_str(&self.sub_programs_text(|e| e.lowered_text()));
        s
    }

    pub fn clif_text(&self) -> String {
        let mut s = self.by_step(&self.compiled.clif);
        s.push_str(&self.sub_programs_text(|e| e.clif_text()));
        s
    }

    /// Machine code of every kernel (the x86 emitter's disassembled, Cranelift's VCode
    /// listing after register allocation), when the program was compiled keeping its text.
    pub fn asm_text(&self) -> String {
        let mut s = self.by_step(&self.compiled.asm);
        s.push_str(&self.sub_programs_text(|e| e.asm_text()));
        s
    }

    /// The compiled steps' listings (one per kernel, in step order), each headed by the
    /// step it belongs to: `// step 3: loop kernel mul×3, erf, add -> f32[768,512]`.
    fn by_step(&self, listings: &[String]) -> String {
        let kernels = self
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.run, steps::Run::Kernel { .. }))
            .map(|(i, _)| i);
        let mut s = String::new();
        for (si, text) in kernels.zip(listings) {
            let info = self.step_info(si);
            s.push_str(&format!(
                "// step {si}: {} {}\n{text}\n",
                info.kind, info.label
            ));
        }
        s
    }

    /// `text` of every control-flow node's sub-programs, labelled.
    fn sub_programs_text(&self, text: impl Fn(&Executable) -> String) -> String {
        let mut cs: Vec<(ValueId, &control::ControlProgram)> = self.controls().collect();
        cs.sort_by_key(|c| c.0);
        let mut s = String::new();
        for (v, c) in cs {
            let op = &self.graph.node(v).op;
            let names: &[&str] = match op {
                Op::Cond(_) => &["else branch", "then branch"],
                Op::While(_) => &["condition", "body"],
                _ => &["body"],
            };
            for (e, name) in c.execs.iter().zip(names) {
                s.push_str(&format!("\n// {} %{}: {name}\n{}", op.name(), v.0, text(e)));
            }
        }
        s
    }

    /// Check that the arguments have the types the program was compiled for.
    fn check_args(&self, args: &[(ArgKind, ArrayRef)]) -> Result<(), Error> {
        if args.len() != self.inputs.signature.args.len() {
            return Err(Error::argument(format!(
                "program expects {} tensor arguments, got {}",
                self.inputs.signature.args.len(),
                args.len()
            )));
        }
        for (i, ((_, a), s)) in args.iter().zip(&self.inputs.signature.args).enumerate() {
            if a.shape != s.shape.as_slice() || a.dtype != s.dtype {
                return Err(Error::argument(format!(
                    "argument {i}: program compiled for {}, got {}",
                    type_str(s.dtype, &s.shape),
                    type_str(a.dtype, a.shape)
                )));
            }
        }
        Ok(())
    }

    /// Run the program on arguments of its signature: each with how it is passed (an
    /// `Owned` array whose buffer no one else holds may be donated to an output, which then
    /// shares it: the caller drops its own after the call).
    pub fn run_arrays(&self, args: &[(ArgKind, ArrayRef)]) -> Result<Vec<Array>, Error> {
        self.run_arrays_as(args, |a| a)
    }

    /// `run_arrays`, each output handed to `wrap` (the tensor face makes tensors of them
    /// without a second list).
    pub fn run_arrays_as<T>(
        &self,
        args: &[(ArgKind, ArrayRef)],
        wrap: impl Fn(Array) -> T,
    ) -> Result<Vec<T>, Error> {
        self.check_args(args)?;
        crate::internal::injection_point("run");
        self.memory.gemm.before_call();
        let g = &self.graph;
        let nn = g.nodes.len();
        // Buffers of the program's outputs: a donated argument's (when the
        // caller gave it away: owned and not shared), else fresh.
        let mut out_bufs: Slots<Option<Arc<Buffer>>, INLINE_VALUES> = Slots::new(nn, None);
        for &(k, o) in &self.plan.donations {
            if let (ArgKind::Owned, a) = &args[k] {
                if sole_owner(a.buf) {
                    out_bufs[o.index()] = Some(a.buf.clone());
                }
            }
        }
        let mut arena = self.take_arena()?;
        let mut ptr: Slots<*mut u8, INLINE_VALUES> = Slots::new(nn, std::ptr::null_mut());
        for (i, n) in g.nodes.iter().enumerate() {
            match n.op {
                Op::Param(k) => ptr[i] = args[k].1.buf.as_mut_ptr(),
                Op::Captured(k) => ptr[i] = self.inputs.captured[k].buf.as_mut_ptr(),
                _ => {}
            }
            match self.plan.place[i] {
                Place::Arena(off) => ptr[i] = arena.as_mut_ptr().wrapping_add(off),
                Place::Output => {
                    if out_bufs[i].is_none() {
                        let b =
                            Buffer::try_uninit(shape::numel(&n.shape) * n.dtype.size(), || {
                                format!("output %{i} ({})", type_str(n.dtype, &n.shape))
                            })?;
                        out_bufs[i] = Some(Arc::new(b));
                    }
                    ptr[i] = out_bufs[i]
                        .as_ref()
                        .map_or(std::ptr::null_mut(), |b| b.as_mut_ptr());
                }
                Place::None | Place::InOutput(..) => {}
            }
        }
        // Temporaries hosted in outputs' buffers (all allocated above) and
        // in donated arguments' buffers after their last read; an argument
        // the caller still shares is never written: its guests get a
        // substitute buffer.
        let mut substitutes: Vec<Buffer> = Vec::new();
        let mut base: Vec<(ValueId, *mut u8)> = Vec::new();
        for &(k, pv) in &self.plan.arg_hosts {
            let given = match &args[k] {
                (ArgKind::Owned, a) => Some(a.buf).filter(|b| sole_owner(b)),
                _ => None,
            };
            let p = match given {
                Some(b) => b.as_mut_ptr(),
                None => {
                    let n = g.node(pv);
                    substitutes.push(Buffer::try_uninit(self.guest_extent(pv), || {
                        format!(
                            "the temporaries planned inside argument {k} ({})",
                            type_str(n.dtype, &n.shape)
                        )
                    })?);
                    substitutes.last().unwrap().as_mut_ptr()
                }
            };
            base.push((pv, p));
        }
        for h in &self.plan.hosted {
            let b = match base.iter().find(|b| b.0 == h.host) {
                Some(b) => b.1,
                None => ptr[h.host.index()],
            };
            ptr[h.iv.value.index()] = b.wrapping_add(h.iv.offset);
        }
        for (v, t) in &self.memory.consts {
            // Only read (constants are never a step's destination).
            ptr[v.index()] = t.buf.as_mut_ptr();
        }
        let scratch = arena.as_mut_ptr().wrapping_add(self.memory.scratch_offset);
        // Collectives started and not yet waited for (declared after the arena and the
        // output buffers: dropped first, it waits for them before those are released).
        let mut in_flight = crate::library::collective::InFlightSet::default();
        let mut timer = crate::diag::profile::enabled()
            .then(|| crate::diag::profile::CallTimer::start(self.profile_info()));
        for (si, step) in self.steps.iter().enumerate() {
            in_flight.wait_before(si);
            in_flight.progress();
            let started = timer.as_ref().map(|_| std::time::Instant::now());
            // Threads the step was split over (0: the library splits its own work).
            let mut threads = 0;
            let operands = step.reads.iter().chain(&step.writes);
            let mut ptrs: Slots<*mut u8, INLINE_OPERANDS> =
                Slots::new(operands.clone().count(), std::ptr::null_mut());
            for (j, &x) in operands.enumerate() {
                if ptr[x.index()].is_null() && shape::numel(&g.node(x).shape) > 0 {
                    return Err(Error::verify(format!(
                        "%{} has no buffer when the step writing {:?} runs (bug in the planner)",
                        x.0, step.writes
                    )));
                }
                ptrs[j] = ptr[x.index()];
            }
            match &step.run {
                steps::Run::Kernel { f, split, zeroed } => {
                    for &(j, bytes) in zeroed {
                        // SAFETY: operand j is a live buffer of `bytes` bytes (planned and
                        // checked), written by this step alone.
                        unsafe { std::ptr::write_bytes(ptrs[j], 0, bytes) };
                    }
                    if split.extent > 0 {
                        // SAFETY: the pointers are live buffers of the sizes the
                        // kernel was compiled for (arguments checked above,
                        // the rest planned and checked by plan::check).
                        threads = unsafe { parallel::run_kernel(*f, &ptrs, *split) };
                    }
                }
                // Library calls, products and control flow: out of line, so that the loop
                // the kernels run in stays small in the instruction cache (a cached call of a
                // one-kernel program is mostly this loop).
                _ => {
                    self.run_library_step(si, &ptr, arena.as_mut_ptr(), scratch, &mut in_flight)?
                }
            }
            if let (Some(t), Some(started)) = (&mut timer, started) {
                t.step(si, started, threads);
            }
        }
        in_flight.wait_all();
        if let Some(t) = timer {
            t.finish();
        }
        self.return_arena(arena.take());
        drop(substitutes);
        let outs = g
            .outputs
            .iter()
            .map(|&o| self.output(o, args, &out_bufs).map(&wrap))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(outs)
    }

    /// Step `si`, one that is not a compiled kernel (`Run::Matmul`, `Run::Control`,
    /// `Run::Library`) with the buffers `ptr` of this call, its arena and scratch; a
    /// collective is started and added to `in_flight`, or run at once when the next step
    /// waits for it.
    #[inline(never)]
    fn run_library_step(
        &self,
        si: usize,
        ptr: &[*mut u8],
        arena: *mut u8,
        scratch: *mut u8,
        in_flight: &mut crate::library::collective::InFlightSet,
    ) -> Result<(), Error> {
        let g = &self.graph;
        let step = &self.steps[si];
        match &step.run {
            steps::Run::Matmul { v, operands, split } => {
                let n = g.node(*v);
                let operand = |k: usize| {
                    let (x, a) = (n.inputs[k], &operands[k]);
                    let size = g.node(x).dtype.size() as i64;
                    crate::library::Strided {
                        ptr: ptr[a.root.index()].wrapping_offset((a.offset * size) as isize),
                        shape: g.node(x).shape.clone(),
                        strides: a.strides.clone(),
                    }
                };
                let (a, b) = (operand(0), operand(1));
                // SAFETY: the operands' maps stay inside their live roots
                // (folded views of checked shapes); the destination is
                // planned for this value and overlaps no operand.
                unsafe {
                    crate::library::matmul_strided(
                        &a,
                        &b,
                        &n.shape,
                        (g.node(n.inputs[0]).dtype, n.dtype),
                        ptr[v.index()],
                        *split,
                        scratch,
                    )
                };
            }
            steps::Run::Control { v, program } => {
                let n = g.node(*v);
                let ins = borrowed_inputs(g, &self.part, n, &ptr)?;
                let dest = result_buffers(g, &step.writes, &ptr, program.outputs);
                // SAFETY: the destinations were planned for these values
                // and overlap no operand (no in-place for library steps).
                unsafe { program.run(&n.op, &ins, &dest)? };
            }
            steps::Run::Library {
                v,
                operands,
                collective,
            } => {
                let n = g.node(*v);
                let ins: Vec<crate::library::ops::Operand> = n
                    .inputs
                    .iter()
                    .zip(operands)
                    .map(|(&x, a)| {
                        let xn = g.node(x);
                        let off = a.offset * xn.dtype.size() as i64;
                        crate::library::ops::Operand {
                            ptr: ptr[a.root.index()].wrapping_offset(off as isize),
                            dtype: xn.dtype,
                            shape: &xn.shape,
                            strides: &a.strides,
                        }
                    })
                    .collect();
                // SAFETY: the operands' maps stay inside their live roots
                // (folded views of checked shapes, constants of one
                // element read with zero strides); the destination was
                // planned for this value and overlaps no operand (no
                // in-place for library steps); the scratch is this call's.
                if let Some(c) = collective.filter(|c| c.runs_at_once(si)) {
                    // SAFETY: as below; the staging region is this step's alone.
                    unsafe {
                        crate::library::ops::run_collective_now(
                            &n.op,
                            &ins,
                            &n.shape,
                            n.dtype,
                            ptr[v.index()],
                            arena.wrapping_add(c.stage),
                        )?
                    };
                } else if let Some(c) = collective {
                    // SAFETY: as below; the staging region is this step's alone and the
                    // output is read only after the wait (`Collective::wait_before`).
                    let started = unsafe {
                        crate::library::ops::start_collective(
                            &n.op,
                            &ins,
                            &n.shape,
                            n.dtype,
                            ptr[v.index()],
                            arena.wrapping_add(c.stage),
                            crate::library::collective::When::Later,
                        )?
                    };
                    in_flight.push(c.wait_before, started);
                } else if let Op::AttentionGrad(spec) = &n.op {
                    // dq (the node), dk and dv (its `get`s; null when no one reads them).
                    let dest: [*mut u8; 3] = result_buffers(g, &step.writes, &ptr, 3)
                        .try_into()
                        .expect("three results");
                    // SAFETY: as below, for each destination.
                    unsafe {
                        crate::library::attention::run_grad(spec, &ins, n.dtype, dest, scratch)
                    };
                } else {
                    unsafe {
                        crate::library::ops::run(
                            &n.op,
                            &ins,
                            &n.shape,
                            n.dtype,
                            ptr[v.index()],
                            scratch,
                        )?
                    };
                }
            }
            steps::Run::Kernel { .. } => unreachable!("kernels run in the call's loop"),
        }
        Ok(())
    }

    fn take_arena(&self) -> Result<ArenaGuard<'_>, Error> {
        let pooled = self
            .memory
            .arenas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        let b = match pooled {
            Some(b) => b,
            None => Buffer::try_uninit(self.memory.arena_len, || {
                "the arena of the program's temporaries".into()
            })?,
        };
        Ok(ArenaGuard {
            exe: self,
            buf: Some(b),
        })
    }

    fn return_arena(&self, b: Option<Buffer>) {
        if let Some(b) = b {
            self.memory
                .arenas
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(b);
        }
    }

    fn output(
        &self,
        o: ValueId,
        args: &[(ArgKind, ArrayRef)],
        out_bufs: &[Option<Arc<Buffer>>],
    ) -> Result<Array, Error> {
        let n = self.graph.node(o);
        if let Some(&root) = self.part.aliases.get(&o) {
            let a = self.output(root, args, out_bufs)?;
            return Ok(Array::new(a.buf, n.shape.clone(), n.dtype));
        }
        if let Some(b) = &out_bufs[o.index()] {
            return Ok(Array::new(b.clone(), n.shape.clone(), n.dtype));
        }
        match n.op {
            Op::Param(k) => Ok(args[k].1.to_array()),
            Op::Captured(k) => Ok(self.inputs.captured[k].clone()),
            Op::Const(l) => Ok(Array::filled(l.cast(n.dtype), &n.shape, n.dtype)),
            _ => Err(Error::verify(format!("output %{} was never computed", o.0))),
        }
    }
}

/// The operands of a control-flow step as arrays over their buffers (`ptr`: each value's
/// buffer in this call; the views must be dropped before the call's buffers are). An
/// operand without a buffer of its own is read through its map: a
/// contiguous view (a reshape of a parameter that is also returned, say)
/// borrows its root's bytes; any other layout is a planner bug, reported.
fn borrowed_inputs(
    g: &Graph,
    part: &Partition,
    n: &ir::Node,
    ptr: &[*mut u8],
) -> Result<Vec<Array>, Error> {
    n.inputs
        .iter()
        .map(|&x| {
            let xn = g.node(x);
            let bytes = shape::numel(&xn.shape) * xn.dtype.size();
            let mut p = ptr[x.index()];
            if p.is_null() && bytes > 0 {
                let a = partition::read_map(g, part, x);
                let contiguous: Vec<i64> = shape::strides(&xn.shape)
                    .iter()
                    .map(|&s| s as i64)
                    .collect();
                let dense =
                    (0..xn.shape.len()).all(|d| xn.shape[d] <= 1 || a.strides[d] == contiguous[d]);
                if !dense || ptr[a.root.index()].is_null() {
                    return Err(Error::verify(format!(
                        "operand %{} of a `{}` step has no buffer (bug in the planner)",
                        x.0,
                        n.op.name()
                    )));
                }
                p = ptr[a.root.index()]
                    .wrapping_offset((a.offset * xn.dtype.size() as i64) as isize);
            }
            // SAFETY: the value's buffer lives until the end of this call;
            // the step's views are dropped before.
            let b = unsafe { Buffer::borrowed(p, bytes) };
            Ok(Array::new(Arc::new(b), xn.shape.clone(), xn.dtype))
        })
        .collect()
}

/// Values of a program whose per-call lists (buffers, pointers) stay on the stack.
const INLINE_VALUES: usize = 16;
/// Operands of a step whose pointer list stays on the stack.
const INLINE_OPERANDS: usize = 8;

/// Whether the caller gave `b` away: no one else holds it, so the program may write it.
fn sole_owner(b: &Arc<Buffer>) -> bool {
    Arc::strong_count(b) == 1 && Arc::weak_count(b) == 0 && b.is_owned()
}

/// The arena of one call; returned to the executable's pool on drop (also
/// when a step fails).
struct ArenaGuard<'a> {
    exe: &'a Executable,
    buf: Option<Buffer>,
}

impl ArenaGuard<'_> {
    fn as_mut_ptr(&self) -> *mut u8 {
        self.buf.as_ref().unwrap().as_mut_ptr()
    }
    fn take(&mut self) -> Option<Buffer> {
        self.buf.take()
    }
}

impl Drop for ArenaGuard<'_> {
    fn drop(&mut self) {
        let b = self.buf.take();
        self.exe.return_arena(b);
    }
}

/// The buffers of a multi-output step's `n` results (result 0 is the node, result `k`
/// its `get[k]`), from the values it writes; null for a result nothing reads.
fn result_buffers(g: &Graph, writes: &[ValueId], ptr: &[*mut u8], n: usize) -> Vec<*mut u8> {
    let mut dest = vec![std::ptr::null_mut(); n];
    for &w in writes {
        let k = match g.node(w).op {
            Op::Get(k) => k,
            _ => 0,
        };
        dest[k] = ptr[w.index()];
    }
    dest
}
