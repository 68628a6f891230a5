//! A compiled program (`Executable`): the graph, its kernels and their
//! machine code, and `run`, which checks the arguments, allocates the
//! buffers and calls the kernels in order.

pub(crate) mod args;
mod control;
mod footprint;
mod parallel;
mod steps;

pub use crate::library::workspace::held_bytes as gemm_held_bytes;

use crate::codegen::{self, CompiledKernels, Target};
use crate::describe::{describe, Description};
use crate::diag::phases::phase;
use crate::error::type_str;
use crate::error::CompileError;
use crate::fusion::partition::{self, Partition, Step};
use crate::ir::{self, Graph, Op, ValueId};
use crate::plan::{self, BufferPlan, Place};
use crate::shape;
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::trace::Traced;
use crate::{interp, Error};
use args::{ArgKind, ArgSig, ArgTensor, CallArgs, Signature};
use std::sync::Arc;
use std::sync::Mutex;

/// A budget of this many bytes means "choose automatically" (`MemoryBudget::Auto`).
pub const AUTO_MEMORY_BUDGET: usize = usize::MAX;

/// The memory a compiled program must fit: chosen automatically (gradients cut into about
/// √N checkpointed segments while tracing) or a number of bytes of peak (recomputation
/// searched until the plan fits, else a refusal). The public spelling is
/// `Option<usize>` with `AUTO_MEMORY_BUDGET` for `Auto` (`MemoryBudget::from_bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryBudget {
    /// About √N checkpointed segments of every gradient (and √n of every loop's).
    Auto,
    /// A peak of at most this many bytes.
    Bytes(usize),
}

impl MemoryBudget {
    /// `AUTO_MEMORY_BUDGET` is `Auto`, any other count of bytes that many.
    pub fn from_bytes(b: usize) -> MemoryBudget {
        if b == AUTO_MEMORY_BUDGET {
            MemoryBudget::Auto
        } else {
            MemoryBudget::Bytes(b)
        }
    }

    /// The bytes of a budget given in bytes (`None` for `Auto`).
    pub fn bytes(self) -> Option<usize> {
        match self {
            MemoryBudget::Auto => None,
            MemoryBudget::Bytes(b) => Some(b),
        }
    }
}

/// How a program is compiled: for which target, under which memory budget, what it keeps
/// and what it checks. Every environment variable that changes compilation is read into
/// these (`Target::host`) before compilation starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// What the kernels are compiled for.
    pub target: Target,
    /// The memory the program must fit (`None`: no bound).
    pub budget: Option<MemoryBudget>,
    /// Keep every stage's text (traced and simplified graphs, kernels, Cranelift IR, machine
    /// code) for `Lowered::as_text` and dumps.
    pub keep_text: bool,
    /// Verify the IR after every pass and prove the buffer plan (on in debug builds; a
    /// release-build fuzz run can turn it on).
    pub verify: bool,
}

impl Default for CompileOptions {
    fn default() -> CompileOptions {
        CompileOptions {
            target: Target::host().clone(),
            budget: None,
            keep_text: true,
            verify: cfg!(debug_assertions),
        }
    }
}

impl CompileOptions {
    /// The default options, compiled for `target`.
    pub fn at(target: &Target) -> CompileOptions {
        CompileOptions {
            target: target.clone(),
            ..CompileOptions::default()
        }
    }
}

/// Memory figures of a compiled program, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryAnalysis {
    /// The arguments' buffers.
    pub argument_bytes: usize,
    /// The outputs' buffers.
    pub output_bytes: usize,
    /// The arena holding every temporary (one per executable, reused), with
    /// library steps' scratch and the constants materialised for them, and
    /// what control-flow steps need: every loop's and branch's sub-program
    /// arena (each kept for the next call) and the most one step allocates
    /// while it runs.
    pub temp_bytes: usize,
    /// Outputs written into donated arguments' buffers (when donated).
    pub alias_bytes: usize,
    /// Memory holding the generated machine code: its whole 64-byte units of the shared
    /// code heap (whole pages where the code could not go there).
    pub code_bytes: usize,
    /// Heap memory the compiled program's own description holds for its life: graph,
    /// schedule, kernel descriptions, buffer plan (partly estimated, see
    /// `exec/footprint.rs`). With `code_bytes` and `temp_bytes`, what a cache holding
    /// the program holds.
    pub program_bytes: usize,
    /// What evaluating the same graph op by op allocates for intermediates:
    /// one buffer per computed non-view op result that is not an output.
    pub eager_bytes: usize,
    /// The largest sum of temporaries live at any step of the schedule.
    pub lower_bound_bytes: usize,
    /// Workspace the GEMM libraries hold for the program's products, outside the arena:
    /// over the threads that run them, the bytes their products write in each thread's
    /// packing buffer and L2 slab (`library/workspace.rs`, from dry runs of gemm). Not in
    /// `peak_bytes` (what a memory budget bounds): per thread and shared by every
    /// program (a thread holds the most any of its products needed).
    pub library_bytes: usize,
    /// arguments + outputs + temp - alias.
    pub peak_bytes: usize,
    /// The largest sum of temporaries live at any step inside outputs' and
    /// dead donated arguments' buffers instead of the arena (not counted in
    /// `temp_bytes`: those buffers exist for the whole call anyway).
    pub hosted_bytes: usize,
    /// What a call allocates besides when the caller still shares arguments the plan would
    /// host temporaries in after their last read (owned but not given away): buffers
    /// standing in for those temporaries (the outputs written into donated arguments are
    /// then fresh too: `alias_bytes`).
    pub kept_argument_bytes: usize,
    /// Of `temp_bytes`: values stacked by loops to be read back later (the
    /// carries a loop's gradient stores for its backward pass, stacked `scan`
    /// outputs that are not outputs of the program), in this program or,
    /// the most, in one of its loops' or branches' sub-programs.
    pub loop_stack_bytes: usize,
}

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
    consts: Vec<(ValueId, Tensor)>,
    /// The GEMM libraries' workspace for this program's products, made resident before
    /// the first call's products run (`library_bytes`).
    gemm: crate::library::workspace::Reserved,
}

/// What a call is given besides its arguments' buffers.
struct Inputs {
    signature: Signature,
    captured: Vec<Tensor>,
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
}

impl Executable {
    /// The partition and buffer plan of a graph (what `compile` will run).
    fn plan_graph(graph: &Graph, sig: &Signature, target: &Target) -> (Partition, BufferPlan) {
        let (part, described) = Executable::scheduled_partition(graph, sig, target);
        let plan = Executable::plan_partition(graph, &part, &refs(&described), sig);
        (part, plan)
    }

    /// The steps of a graph in a memory-aware order (`passes::schedule`:
    /// the order whose planned peak is lowest).
    /// `JITFUSE_SCHEDULE=trace` keeps trace order (for comparisons).
    /// A graph with checkpoint barriers is partitioned both ways (barriers
    /// read in place, or copied) and the lower planned peak wins (in place
    /// on ties: no copies).
    ///
    /// Each step is described once (`describe`), before scheduling: a step's
    /// description does not depend on its place, so every candidate order is
    /// planned from the same descriptions, which come back in the chosen order.
    fn scheduled_partition(
        graph: &Graph,
        sig: &Signature,
        target: &Target,
    ) -> (Partition, Vec<Description>) {
        let trace_order = target.trace_order;
        let peak = |p: &Partition, described: &[&Description]| {
            let plan = Executable::plan_partition(graph, p, described, sig);
            crate::passes::remat::peak(graph, &plan)
        };
        let scheduled = |copy: bool| {
            let part = phase("partition", || {
                crate::describe::partition_barriers(graph, copy)
            });
            let described = phase("describe", || describe(graph, &part));
            if trace_order {
                return (part, described);
            }
            let (part, order) = phase("schedule", || {
                crate::passes::schedule::schedule(graph, part, &|p, order| {
                    let d: Vec<&Description> = order.iter().map(|&i| &described[i]).collect();
                    peak(p, &d)
                })
            });
            let mut slots: Vec<Option<Description>> = described.into_iter().map(Some).collect();
            let described = order
                .iter()
                .map(|&i| slots[i].take().expect("a permutation"));
            (part, described.collect())
        };
        let folded = scheduled(false);
        if !graph.nodes.iter().any(|n| n.op == Op::Barrier) {
            return folded;
        }
        let copied = scheduled(true);
        if peak(&copied.0, &refs(&copied.1)) < peak(&folded.0, &refs(&folded.1)) {
            copied
        } else {
            folded
        }
    }

    /// The buffer plan of a partition (`described`: its steps' descriptions, which say where
    /// a step may write an output over an input).
    fn plan_partition(
        graph: &Graph,
        part: &Partition,
        described: &[&Description],
        sig: &Signature,
    ) -> BufferPlan {
        phase("plan", || {
            plan::plan(graph, part, &sig.owned(), &|si, x, o| {
                described[si].inplace_ok(graph, &part.steps[si], x, o)
            })
        })
    }

    /// `plan::check_program` on a plan of this partition.
    fn check_plan_of(
        graph: &Graph,
        part: &Partition,
        described: &[Description],
        sig: &Signature,
        plan: &BufferPlan,
    ) -> Result<(), Error> {
        plan::check_program(graph, part, &sig.owned(), plan, &|si, x, o| {
            described[si].inplace_ok(graph, &part.steps[si], x, o)
        })
    }

    /// The full proof of this program's buffer plan (`plan::check_program`),
    /// which debug builds run on every compiled program.
    pub fn check_plan(&self) -> Result<(), Error> {
        self.check_plan_with(&self.plan)
    }

    /// `plan::check_program` of another plan for this program (tests show
    /// that the checker rejects broken plans).
    pub fn check_plan_with(&self, plan: &BufferPlan) -> Result<(), Error> {
        Executable::check_plan_of(
            &self.graph,
            &self.part,
            &self.record.described,
            &self.inputs.signature,
            plan,
        )
    }

    /// Verify, simplify, partition, plan and compile a traced graph; under a budget in bytes,
    /// recompute values in the backward of the schedule until the plan fits
    /// (`passes::remat`), or refuse (`CompileError::Budget`, with the lowest peak reached).
    pub fn compile(
        traced: Traced,
        sig: &Signature,
        opts: &CompileOptions,
    ) -> Result<Executable, CompileError> {
        // Identical sub-programs of its loops and branches are compiled once.
        control::sharing_sub_programs(|| Executable::compile_shared(traced, sig, opts))
    }

    fn compile_shared(
        traced: Traced,
        sig: &Signature,
        opts: &CompileOptions,
    ) -> Result<Executable, CompileError> {
        let CompileOptions {
            target,
            budget,
            keep_text,
            verify: checks,
        } = opts;
        let (budget, keep_text, checks) = (*budget, *keep_text, *checks);
        let traced_graph = traced.graph;
        let verify = |g: &Graph| phase("verify", || ir::verify(g));
        if checks {
            verify(&traced_graph)?;
        }
        crate::internal::injection_point("simplify");
        let mut graph = phase("simplify", || {
            let g = crate::passes::simplify(&crate::passes::fuse_attention(&traced_graph));
            // An attention gradient that alone reads its forward output recomputes it.
            let g = match crate::passes::attention::recompute_outputs(&g) {
                Some(g) => crate::passes::simplify(&g),
                None => g,
            };
            // Reductions and short trailing axes split into lanes (then their common
            // operands merged, the split inputs dropped).
            match crate::passes::short_axis::split(&g) {
                Some(split) => crate::passes::simplify(&split),
                None => g,
            }
        });
        if checks {
            verify(&graph).map_err(|e| Error::verify(format!("after simplify: {e}")))?;
        }
        // (The automatic budget acted while tracing: checkpointed segments.)
        if let Some(b) = budget.and_then(MemoryBudget::bytes) {
            graph = phase("remat", || -> Result<Graph, CompileError> {
                let owned = sig.owned();
                // Sub-programs' arenas are fixed by their own graphs: measured once.
                let fixed = control::sub_program_bytes(&graph, opts)?;
                crate::passes::remat::fit(&graph, b, &owned, fixed, &|g| {
                    Executable::plan_graph(g, sig, target)
                })
            })?;
            if checks {
                verify(&graph).map_err(|e| Error::verify(format!("after remat: {e}")))?;
            }
        }
        let (part, described) = Executable::scheduled_partition(&graph, sig, target);
        if checks {
            phase("describe check", || {
                crate::describe::check(&graph, &part, &described)
            })
            .map_err(|e| Error::verify(format!("kernel descriptions: {e}")))?;
        }
        let layouts: Vec<parallel::Split> = described
            .iter()
            .filter_map(|d| {
                let (extent, work, align) = d.split()?;
                Some(parallel::Split {
                    extent,
                    work,
                    align,
                })
            })
            .collect();
        crate::internal::injection_point("codegen");
        let compiled = phase("codegen", || {
            codegen::compile(&graph, &part, &described, keep_text, target)
        })?;
        let plan = Executable::plan_partition(&graph, &part, &refs(&described), sig);
        if checks {
            phase("plan check", || {
                Executable::check_plan_of(&graph, &part, &described, sig, &plan)
            })?;
        }
        let io: Vec<(Vec<ValueId>, Vec<ValueId>)> = part
            .steps
            .iter()
            .map(|s| plan::step_io(&graph, &part, s))
            .collect();
        let in_place_library =
            |s: &Step| matches!(s, Step::Library(v) if !graph.node(*v).op.is_control());
        let mut operand_maps: Vec<Vec<partition::Affine>> = part
            .steps
            .iter()
            .map(|s| match s {
                Step::Library(v) if in_place_library(s) => graph
                    .node(*v)
                    .inputs
                    .iter()
                    .map(|&x| partition::read_map(&graph, &part, x))
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        let consts = Executable::materialise_constants(
            &graph,
            &part,
            &plan,
            &io,
            &mut operand_maps,
            &in_place_library,
        );
        let scratch = part
            .steps
            .iter()
            .map(|s| match s {
                Step::Library(v) if in_place_library(s) => {
                    let n = graph.node(*v);
                    let ins: Vec<&[usize]> = n
                        .inputs
                        .iter()
                        .map(|&x| graph.node(x).shape.as_slice())
                        .collect();
                    crate::library::ops::scratch_bytes(&n.op, &ins, &n.shape, n.dtype)
                }
                _ => 0,
            })
            .max()
            .unwrap_or(0);
        let scratch_offset = plan.arena_bytes.div_ceil(plan::ARENA_ALIGN) * plan::ARENA_ALIGN;
        let arena_len = if scratch > 0 {
            scratch_offset + scratch
        } else {
            plan.arena_bytes
        };
        let steps = Executable::run_steps(
            &graph,
            &part,
            io,
            operand_maps,
            (&compiled.fns, layouts),
            opts,
        )?;
        let mut exe = Executable {
            graph,
            part,
            steps,
            plan,
            compiled,
            memory: CallMemory {
                arenas: Mutex::new(Vec::new()),
                arena_len,
                scratch_offset,
                consts,
                gemm: Default::default(),
            },
            inputs: Inputs {
                signature: sig.clone(),
                captured: traced.captured,
            },
            record: Record {
                // The traced graph is only read for its text.
                traced: if keep_text {
                    traced_graph
                } else {
                    Graph::new()
                },
                described,
                target: target.clone(),
            },
        };
        exe.memory.gemm = crate::library::workspace::Reserved::new(exe.products_workspace());
        // The promise is the report's peak: library scratch and constants included.
        if let Some(b) = budget.and_then(MemoryBudget::bytes) {
            let peak = exe.memory_analysis().peak_bytes;
            if peak > b {
                return Err(CompileError::budget(
                    b,
                    peak,
                    format!(
                        "memory budget of {b} bytes cannot be met: the peak is {peak} bytes with \
                         library scratch, constants and sub-programs, and recomputation brings it \
                         down to {peak} at best ({} bytes over the budget)",
                        peak - b
                    ),
                ));
            }
        }
        Ok(exe)
    }

    /// The constants steps read from buffers (see `Executable::consts`);
    /// the maps of library operands read from one-element constants get zero
    /// strides.
    fn materialise_constants(
        graph: &Graph,
        part: &Partition,
        plan: &BufferPlan,
        io: &[(Vec<ValueId>, Vec<ValueId>)],
        operand_maps: &mut [Vec<partition::Affine>],
        in_place_library: &dyn Fn(&Step) -> bool,
    ) -> Vec<(ValueId, Tensor)> {
        let unplaced_const = |x: ValueId| {
            let n = graph.node(x);
            let own = !matches!(n.op, Op::Param(_) | Op::Captured(_))
                && plan.place[x.index()] == Place::None;
            own.then(|| partition::const_value(graph, x)).flatten()
        };
        // Read by a compiled or control step: the full shape.
        let mut full: Vec<ValueId> = Vec::new();
        for (si, s) in part.steps.iter().enumerate() {
            if !in_place_library(s) {
                for &x in io[si].0.iter().chain(&io[si].1) {
                    if unplaced_const(x).is_some() && !full.contains(&x) {
                        full.push(x);
                    }
                }
            }
        }
        let mut consts: Vec<(ValueId, Tensor)> = full
            .iter()
            .map(|&x| {
                let n = graph.node(x);
                let l = unplaced_const(x).unwrap().cast(n.dtype);
                (x, interp::filled(l, &n.shape, n.dtype))
            })
            .collect();
        for (si, s) in part.steps.iter().enumerate() {
            if !in_place_library(s) {
                continue;
            }
            for a in operand_maps[si].iter_mut() {
                let Some(l) = unplaced_const(a.root) else {
                    continue;
                };
                if full.contains(&a.root) {
                    continue;
                }
                a.offset = 0;
                a.strides.iter_mut().for_each(|s| *s = 0);
                if !consts.iter().any(|(v, _)| *v == a.root) {
                    let d = graph.node(a.root).dtype;
                    consts.push((a.root, interp::filled(l.cast(d), &[], d)));
                }
            }
        }
        consts
    }

    /// The steps a call runs, in the partition's order: each with its buffers' values, and
    /// its compiled kernel (`fns` and `splits` in the order of the compiled steps), its
    /// operands' maps or its control-flow sub-programs (compiled here).
    fn run_steps(
        graph: &Graph,
        part: &Partition,
        io: Vec<(Vec<ValueId>, Vec<ValueId>)>,
        operand_maps: Vec<Vec<partition::Affine>>,
        (fns, splits): (&[codegen::KernelFn], Vec<parallel::Split>),
        opts: &CompileOptions,
    ) -> Result<Vec<steps::RunStep>, CompileError> {
        let mut kernels = fns.iter().zip(splits);
        let mut out = Vec::with_capacity(part.steps.len());
        for ((step, (reads, writes)), operands) in part.steps.iter().zip(io).zip(operand_maps) {
            let run = match *step {
                Step::Library(v) if graph.node(v).op == Op::Matmul => {
                    steps::Run::Matmul { v, operands }
                }
                Step::Library(v) if graph.node(v).op.is_control() => steps::Run::Control {
                    v,
                    program: control::ControlProgram::compile(&graph.node(v).op, opts)?,
                },
                Step::Library(v) => steps::Run::Library { v, operands },
                Step::Kernel(_) | Step::Row(_) | Step::Reduce(_) => {
                    let (&f, split) = kernels.next().expect("a kernel per compiled step");
                    steps::Run::Kernel { f, split }
                }
            };
            out.push(steps::RunStep { reads, writes, run });
        }
        debug_assert!(kernels.next().is_none(), "a compiled step per kernel");
        Ok(out)
    }

    /// The control-flow steps and their sub-programs, in step order.
    pub(crate) fn controls(&self) -> impl Iterator<Item = (ValueId, &control::ControlProgram)> {
        self.steps.iter().filter_map(|s| s.control())
    }

    /// Compile a graph built by hand or parsed from text; every parameter is
    /// taken as borrowed. `captured` fills its `captured k` slots.
    pub fn from_graph(graph: Graph, captured: Vec<Tensor>) -> Result<Executable, Error> {
        Executable::from_graph_with(graph, captured, None, &CompileOptions::default())
    }

    /// `from_graph` with each parameter's kind (`None`: every one borrowed; `ArgKind::Owned`
    /// parameters may be donated, run with `CallArgs::owned`) and the options (the
    /// differential suites compile one graph at every level the CPU runs).
    pub fn from_graph_with(
        graph: Graph,
        captured: Vec<Tensor>,
        kinds: Option<&[ArgKind]>,
        opts: &CompileOptions,
    ) -> Result<Executable, Error> {
        let borrowed = vec![ArgKind::Borrowed; graph.params().len()];
        let kinds = kinds.unwrap_or(&borrowed);
        ir::verify(&graph)?;
        if kinds.len() != graph.params().len() {
            return Err(Error::argument(format!(
                "graph has {} parameters, {} kinds given",
                graph.params().len(),
                kinds.len()
            )));
        }
        if captured.len() < graph.num_captured() {
            return Err(Error::argument(format!(
                "graph reads {} captured tensors, {} given",
                graph.num_captured(),
                captured.len()
            )));
        }
        let args = graph
            .params()
            .iter()
            .zip(kinds)
            .map(|(&p, &kind)| {
                let n = graph.node(p);
                ArgSig {
                    kind,
                    dtype: n.dtype,
                    shape: n.shape.clone(),
                }
            })
            .collect();
        let sig = Signature {
            args,
            structure: vec![],
            statics: vec![],
        };
        Ok(Executable::compile(Traced { graph, captured }, &sig, opts)?)
    }

    /// What the kernels were compiled for.
    pub fn target(&self) -> &Target {
        &self.record.target
    }

    /// Run on borrowed arguments (for programs made by `from_graph`).
    pub fn run_with(&self, args: &[&Tensor]) -> Result<Vec<Tensor>, Error> {
        let mut call = CallArgs::new();
        for a in args {
            call.borrowed(a);
        }
        self.run(call)
    }

    /// The GEMM libraries' own workspace for this program's products (`library_bytes`).
    pub(crate) fn library_bytes(&self) -> usize {
        self.gemm_workspace().bytes()
    }

    /// What this program's products (and its sub-programs') leave the GEMM libraries
    /// holding.
    pub(crate) fn gemm_workspace(&self) -> crate::library::workspace::GemmWorkspace {
        self.memory.gemm.workspace()
    }

    /// `gemm_workspace`, found by running the products dry (once, at compile time).
    fn products_workspace(&self) -> crate::library::workspace::GemmWorkspace {
        let g = &self.graph;
        let mut w = crate::library::workspace::GemmWorkspace::default();
        for s in &self.steps {
            let steps::Run::Matmul { v, operands } = &s.run else {
                continue;
            };
            let n = g.node(*v);
            let a = &g.node(n.inputs[0]).shape;
            let b = &g.node(n.inputs[1]).shape;
            let (m, k) = (a[a.len().saturating_sub(2)], a[a.len() - 1]);
            let cols = b[b.len() - 1];
            // The strides `run` reads the operands through (their last two axes).
            let strides = |i: usize| {
                let st = &operands[i].strides;
                let r = st.len();
                (st[r - 2] as isize, st[r - 1] as isize)
            };
            let (sa, sb) = (strides(0), strides(1));
            w.add((m, k, cols), n.dtype.size(), sa, sb);
            // A batch times a shared matrix runs as one product of all the rows.
            if b.len() == 2 && a.len() > 2 {
                let rows = shape::numel(&a[..a.len() - 1]);
                w.add((rows, k, cols), n.dtype.size(), sa, sb);
            }
        }
        self.controls()
            .flat_map(|(_, c)| c.gemm_workspaces())
            .fold(w, |acc, x| acc.max(x))
    }

    fn value_bytes(&self, v: ValueId) -> usize {
        let n = self.graph.node(v);
        shape::numel(&n.shape) * n.dtype.size()
    }

    /// The output bytes a call allocates: outputs not written into donated arguments.
    /// (Figures a parent program's report reads from each sub-program: computed alone,
    /// not through `memory_analysis`, whose recursion would repeat at every depth.)
    pub(crate) fn allocated_output_bytes(&self) -> usize {
        let g = &self.graph;
        let outputs = shape::sum_bytes(g.outputs.iter().map(|&o| self.value_bytes(o)));
        let aliased = shape::sum_bytes(
            self.plan
                .donations
                .iter()
                .map(|&(_, o)| self.value_bytes(o)),
        );
        outputs - aliased
    }

    /// `MemoryAnalysis::loop_stack_bytes`: stacked scan outputs held as temporaries (output
    /// k >= carried of a scan; output 0 is the node itself, output k > 0 a `Get(k)` of
    /// it), plus the most of any sub-program.
    fn loop_stack_bytes(&self) -> usize {
        let g = &self.graph;
        let stacked_output = |n: &crate::ir::Node| match (&n.op, n.inputs.first()) {
            (Op::Scan(sc), _) => sc.carried == 0,
            (Op::Get(k), Some(&src)) => {
                matches!(&g.node(src).op, Op::Scan(sc) if *k >= sc.carried)
            }
            _ => false,
        };
        let stacked = shape::sum_bytes(
            (0..g.nodes.len())
                .map(|i| ValueId(i as u32))
                .filter(|&v| !g.outputs.contains(&v) && stacked_output(g.node(v)))
                .map(|v| self.value_bytes(v)),
        );
        let nested = self
            .controls()
            .flat_map(|(_, c)| c.execs.iter())
            .map(|e| e.loop_stack_bytes())
            .max()
            .unwrap_or(0);
        stacked.saturating_add(nested)
    }

    /// This program's own arena (library scratch after the plan's) and the
    /// constants read from buffers, materialised once for its life: its
    /// temporaries without its control-flow steps' sub-programs.
    pub(crate) fn own_temp_bytes(&self) -> usize {
        self.memory.arena_len
            + self
                .memory
                .consts
                .iter()
                .map(|(_, t)| t.buffer().map_or(0, |b| b.len_bytes()))
                .sum::<usize>()
    }

    /// The memory figures of this program (see `MemoryAnalysis`).
    pub fn memory_analysis(&self) -> MemoryAnalysis {
        let g = &self.graph;
        let bytes = |v: ValueId| shape::numel(&g.node(v).shape) * g.node(v).dtype.size();
        let is_output = |v: ValueId| g.outputs.contains(&v);
        let argument_bytes = shape::sum_bytes(g.params().iter().map(|&p| bytes(p)));
        let output_bytes = shape::sum_bytes(g.outputs.iter().map(|&o| bytes(o)));
        let eager_bytes = shape::sum_bytes(
            (0..g.nodes.len())
                .map(|i| ValueId(i as u32))
                .filter(|&v| {
                    let op = &g.node(v).op;
                    !is_output(v)
                        && !op.is_view()
                        && !matches!(op, Op::Param(_) | Op::Const(_) | Op::Captured(_))
                })
                .map(bytes),
        );
        let alias_bytes = shape::sum_bytes(self.plan.donations.iter().map(|&(_, o)| bytes(o)));
        // Control-flow steps run sub-programs with arenas of their own.
        let steps: Vec<(&Op, &control::ControlProgram)> =
            self.controls().map(|(v, c)| (&g.node(v).op, c)).collect();
        let control_bytes = control::control_bytes(&steps);
        let extra_bytes = self.own_temp_bytes() - self.plan.arena_bytes;
        let temp_bytes = self.own_temp_bytes().saturating_add(control_bytes);
        let loop_stack_bytes = self.loop_stack_bytes();
        let library_bytes = self.library_bytes();
        MemoryAnalysis {
            loop_stack_bytes,
            library_bytes,
            argument_bytes,
            output_bytes,
            temp_bytes,
            alias_bytes,
            code_bytes: self.compiled.code_bytes
                + control::distinct_subs(self.controls().map(|(_, c)| c))
                    .iter()
                    .map(|e| e.compiled.code_bytes)
                    .sum::<usize>(),
            program_bytes: self.description_bytes(),
            eager_bytes,
            lower_bound_bytes: self
                .plan
                .lower_bound_bytes
                .saturating_add(control_bytes)
                .saturating_add(extra_bytes),
            peak_bytes: shape::sum_bytes([argument_bytes, output_bytes, temp_bytes])
                .saturating_sub(alias_bytes),
            kept_argument_bytes: shape::sum_bytes(
                self.plan
                    .arg_hosts
                    .iter()
                    .map(|&(_, pv)| self.guest_extent(pv)),
            ),
            hosted_bytes: (0..self.part.steps.len())
                .map(|s| {
                    self.plan
                        .hosted
                        .iter()
                        .filter(|h| h.iv.def <= s && s <= h.iv.last)
                        .map(|h| h.iv.size)
                        .sum::<usize>()
                })
                .max()
                .unwrap_or(0),
        }
    }

    /// The bytes of a donated argument's buffer its guests use (`Plan::hosted`): what a
    /// substitute needs when the caller keeps the argument.
    fn guest_extent(&self, host: ValueId) -> usize {
        self.plan
            .hosted
            .iter()
            .filter(|h| h.host == host)
            .map(|h| h.iv.offset + h.iv.size)
            .max()
            .unwrap_or(0)
    }

    /// The buffer plan as an SVG timeline (x = step, labelled by kernel; y = bytes; each
    /// temporary named by its op and source line).
    pub fn memory_svg(&self) -> String {
        plan::svg::svg(&self.plan, &self.graph, &self.part, None)
    }

    /// `memory_svg` headed by `title` (the function and its signature).
    pub fn memory_svg_titled(&self, title: &str) -> String {
        plan::svg::svg(&self.plan, &self.graph, &self.part, Some(title))
    }

    /// The buffer plan (for tests and tools).
    pub fn buffer_plan(&self) -> &BufferPlan {
        &self.plan
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
        let mut f: Vec<usize> = self.compiled.fns.iter().map(|&p| p as usize).collect();
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

    pub fn kernels_text(&self) -> String {
        let mut s = partition::steps_text(&self.graph, &self.part);
        s.push_str(&self.sub_programs_text(|e| e.kernels_text()));
        s
    }

    pub fn clif_text(&self) -> String {
        let mut s = self.compiled.clif.join("\n");
        s.push_str(&self.sub_programs_text(|e| e.clif_text()));
        s
    }

    /// Machine code of every kernel (Cranelift's VCode listing after register
    /// allocation), when the program was compiled keeping its text.
    pub fn asm_text(&self) -> String {
        let mut s = self.compiled.asm.join("\n");
        s.push_str(&self.sub_programs_text(|e| e.asm_text()));
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
    fn check_args(&self, args: &CallArgs) -> Result<(), Error> {
        if args.tensors.len() != self.inputs.signature.args.len() {
            return Err(Error::argument(format!(
                "program expects {} tensor arguments, got {}",
                self.inputs.signature.args.len(),
                args.tensors.len()
            )));
        }
        for (i, ((_, t), s)) in args
            .tensors
            .iter()
            .zip(&self.inputs.signature.args)
            .enumerate()
        {
            let t = t.tensor();
            if t.is_traced() {
                return Err(Error::new(
                    crate::ErrorKind::LeakedTracer,
                    format!(
                        "argument {i} is a traced tensor {} outside the trace that made it; \
                         traced tensors live only inside the #[jit] call that made them: return \
                         it as an output instead of storing it",
                        type_str(t.dtype(), t.shape())
                    ),
                ));
            }
            if t.shape() != s.shape.as_slice() || t.dtype() != s.dtype {
                return Err(Error::argument(format!(
                    "argument {i}: program compiled for {}, got {}",
                    type_str(s.dtype, &s.shape),
                    type_str(t.dtype(), t.shape())
                )));
            }
        }
        Ok(())
    }

    /// Run the program on arguments of its signature.
    pub fn run(&self, args: CallArgs) -> Result<Vec<Tensor>, Error> {
        self.check_args(&args)?;
        crate::internal::injection_point("run");
        self.memory.gemm.before_call();
        let g = &self.graph;
        let nn = g.nodes.len();
        let params: Vec<&Tensor> = args.tensors.iter().map(|(_, t)| t.tensor()).collect();
        // Buffers of the program's outputs: a donated argument's (when the
        // caller gave it away: owned and not shared), else fresh.
        let mut out_bufs: Vec<Option<Arc<Buffer>>> = vec![None; nn];
        for &(k, o) in &self.plan.donations {
            if let (ArgKind::Owned, ArgTensor::Owned(t)) = (&args.tensors[k].0, &args.tensors[k].1)
            {
                if let Some(b) = t.buffer() {
                    if Arc::strong_count(b) == 1 && Arc::weak_count(b) == 0 && b.is_owned() {
                        out_bufs[o.index()] = Some(b.clone());
                    }
                }
            }
        }
        let mut arena = self.take_arena()?;
        let mut ptr: Vec<*mut u8> = vec![std::ptr::null_mut(); nn];
        for (i, n) in g.nodes.iter().enumerate() {
            match n.op {
                Op::Param(k) => {
                    ptr[i] = params[k]
                        .buffer()
                        .map_or(std::ptr::null_mut(), |b| b.as_mut_ptr())
                }
                Op::Captured(k) => {
                    ptr[i] = self.inputs.captured[k]
                        .buffer()
                        .map_or(std::ptr::null_mut(), |b| b.as_mut_ptr())
                }
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
            let given = match &args.tensors[k] {
                (ArgKind::Owned, ArgTensor::Owned(t)) => t.buffer().filter(|b| {
                    Arc::strong_count(*b) == 1 && Arc::weak_count(*b) == 0 && b.is_owned()
                }),
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
            ptr[v.index()] = t.buffer().unwrap().as_mut_ptr();
        }
        let scratch = arena.as_mut_ptr().wrapping_add(self.memory.scratch_offset);
        let mut ptrs: Vec<*mut u8> = Vec::new();
        for step in &self.steps {
            ptrs.clear();
            for &x in step.reads.iter().chain(&step.writes) {
                if ptr[x.index()].is_null() && shape::numel(&g.node(x).shape) > 0 {
                    return Err(Error::verify(format!(
                        "%{} has no buffer when the step writing {:?} runs (bug in the planner)",
                        x.0, step.writes
                    )));
                }
                ptrs.push(ptr[x.index()]);
            }
            match &step.run {
                steps::Run::Kernel { f, split } => {
                    if split.extent > 0 {
                        // SAFETY: the pointers are live buffers of the sizes the
                        // kernel was compiled for (arguments checked above,
                        // the rest planned and checked by plan::check).
                        unsafe { parallel::run_kernel(*f, &ptrs, *split) };
                    }
                }
                steps::Run::Matmul { v, operands } => {
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
                        crate::library::matmul_strided(&a, &b, &n.shape, n.dtype, ptr[v.index()])
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
                steps::Run::Library { v, operands } => {
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
                    if let Op::AttentionGrad(spec) = &n.op {
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
            }
        }
        self.return_arena(arena.take());
        drop(substitutes);
        let outs = g
            .outputs
            .iter()
            .map(|&o| self.output(o, &params, &out_bufs))
            .collect::<Result<Vec<_>, _>>()?;
        drop(params);
        drop(args);
        Ok(outs)
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
        params: &[&Tensor],
        out_bufs: &[Option<Arc<Buffer>>],
    ) -> Result<Tensor, Error> {
        let n = self.graph.node(o);
        if let Some(&root) = self.part.aliases.get(&o) {
            let t = self.output(root, params, out_bufs)?;
            return Ok(Tensor::from_buffer(
                t.buffer().unwrap().clone(),
                n.shape.clone(),
                n.dtype,
            ));
        }
        if let Some(b) = &out_bufs[o.index()] {
            return Ok(Tensor::from_buffer(b.clone(), n.shape.clone(), n.dtype));
        }
        match n.op {
            Op::Param(k) => Ok(params[k].clone()),
            Op::Captured(k) => Ok(self.inputs.captured[k].clone()),
            Op::Const(l) => Ok(interp::filled(l.cast(n.dtype), &n.shape, n.dtype)),
            _ => Err(Error::verify(format!("output %{} was never computed", o.0))),
        }
    }
}

/// A library or control step's operands as tensors viewing their buffers
/// (`ptr`: each value's buffer in this call). The views must be dropped
/// before the call's buffers are.
/// The operands of a control-flow step as tensors over their buffers. An
/// operand without a buffer of its own is read through its map: a
/// contiguous view (a reshape of a parameter that is also returned, say)
/// borrows its root's bytes; any other layout is a planner bug, reported.
fn borrowed_inputs(
    g: &Graph,
    part: &Partition,
    n: &ir::Node,
    ptr: &[*mut u8],
) -> Result<Vec<Tensor>, Error> {
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
            Ok(Tensor::from_buffer(Arc::new(b), xn.shape.clone(), xn.dtype))
        })
        .collect()
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

/// The descriptions by reference (what the buffer planner reads).
fn refs(described: &[Description]) -> Vec<&Description> {
    described.iter().collect()
}
