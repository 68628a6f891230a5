//! The compiler's driver: from a traced graph to an `Executable` (verify, simplify,
//! recompute under a byte budget, partition and schedule, describe, generate code, plan the
//! buffers and prove the plan, then the steps a call runs), and the options it takes.

use super::args::{ArgKind, ArgSig, Signature};
use super::{control, parallel, steps, CallMemory, Executable, Inputs, Record};
use crate::array::Array;
use crate::codegen::{self, Target};
use crate::describe::{describe, Description};
use crate::diag::phases::phase;
use crate::error::CompileError;
use crate::fusion::partition::{self, Partition, Step};
use crate::ir::{self, Graph, Op, ValueId};
use crate::plan::{self, BufferPlan, Place};
use crate::{shape, Error};
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

impl Executable {
    /// The partition and buffer plan of a graph (what `compile` will run).
    fn plan_graph(graph: &Graph, sig: &Signature, target: &Target) -> (Partition, BufferPlan) {
        let (part, described) = Executable::scheduled_partition(graph, sig, target);
        let plan = Executable::plan_partition(graph, &part, &refs(&described), sig);
        (part, plan)
    }

    /// The steps of a graph in a memory-aware order (`passes::step_order`:
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
                crate::passes::step_order::schedule(graph, part, &|p, order| {
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
    /// `captured` holds the arrays the graph's `captured k` nodes read.
    pub fn compile(
        traced_graph: Graph,
        captured: Vec<Array>,
        sig: &Signature,
        opts: &CompileOptions,
    ) -> Result<Executable, CompileError> {
        // Identical sub-programs of its loops and branches are compiled once.
        control::sharing_sub_programs(|| {
            Executable::compile_shared(traced_graph, captured, sig, opts)
        })
    }

    fn compile_shared(
        traced_graph: Graph,
        captured: Vec<Array>,
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
            // Library steps on 16-bit floats run on f32 operands.
            let g = match crate::passes::widen::widen(&g, &crate::library::runs_natively) {
                Some(w) => crate::passes::simplify(&w),
                None => g,
            };
            // Reductions and short trailing axes split into lanes (then their common
            // operands merged, the split inputs dropped).
            let g = match crate::passes::short_axis::split(&g) {
                Some(split) => crate::passes::simplify(&split),
                None => g,
            };
            // Column reductions of many rows in chunks the threads share.
            crate::passes::column_split::split(&g).unwrap_or(g)
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
        // Each compiled step's split, and its outputs that are column sums (zeroed first).
        let layouts: Vec<(parallel::Split, Vec<usize>)> = described
            .iter()
            .filter_map(|d| {
                let (extent, work, align) = d.split()?;
                let sums = match d {
                    Description::Loop(l) => l.accumulators.clone(),
                    _ => Vec::new(),
                };
                let split = parallel::Split {
                    extent,
                    work,
                    align,
                };
                Some((split, sums))
            })
            .collect();
        crate::internal::injection_point("codegen");
        let mut compiled = phase("codegen", || {
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
        let collective =
            |s: &Step| matches!(s, Step::Library(v) if graph.node(*v).op.is_collective());
        let scratch_of = |s: &Step| match s {
            Step::Library(v) => {
                let n = graph.node(*v);
                let ins: Vec<&[usize]> = (n.inputs.iter())
                    .map(|&x| graph.node(x).shape.as_slice())
                    .collect();
                let operands = n.inputs.first().map_or(n.dtype, |&x| graph.node(x).dtype);
                crate::library::ops::scratch_bytes(&n.op, &ins, operands, &n.shape, n.dtype)
            }
            _ => 0,
        };
        // The scratch the library steps share (collectives have regions of their own).
        let scratch = (part.steps.iter())
            .filter(|s| in_place_library(s) && !collective(s))
            .map(scratch_of)
            .max()
            .unwrap_or(0);
        let scratch_offset = plan.arena_bytes.div_ceil(plan::ARENA_ALIGN) * plan::ARENA_ALIGN;
        // Each collective stages its operand in a region of its own after the shared scratch:
        // it stays in flight past the steps that follow it.
        let mut stages = vec![None; part.steps.len()];
        let mut end = scratch_offset + scratch.div_ceil(plan::ARENA_ALIGN) * plan::ARENA_ALIGN;
        for (si, s) in part.steps.iter().enumerate() {
            if collective(s) {
                stages[si] = Some(end);
                end += scratch_of(s).div_ceil(plan::ARENA_ALIGN) * plan::ARENA_ALIGN;
            }
        }
        let arena_len = if end > scratch_offset {
            end
        } else {
            plan.arena_bytes
        };
        let mut steps = Executable::run_steps(
            &graph,
            &part,
            io,
            operand_maps,
            (std::mem::take(&mut compiled.fns), layouts),
            opts,
        )?;
        Executable::place_waits(&graph, &part, &mut steps, &stages);
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
                captured,
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
                profile: Default::default(),
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
    ) -> Vec<(ValueId, Array)> {
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
        let mut consts: Vec<(ValueId, Array)> = full
            .iter()
            .map(|&x| {
                let n = graph.node(x);
                let l = unplaced_const(x).unwrap().cast(n.dtype);
                (x, Array::filled(l, &n.shape, n.dtype))
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
                    consts.push((a.root, Array::filled(l.cast(d), &[], d)));
                }
            }
        }
        consts
    }

    /// The steps a call runs, in the partition's order: each with its buffers' values, and
    /// its compiled kernel (`fns` and `splits` in the order of the compiled steps, moved
    /// here: the steps are where a call finds its kernels), its
    /// operands' maps or its control-flow sub-programs (compiled here).
    fn run_steps(
        graph: &Graph,
        part: &Partition,
        io: Vec<(Vec<ValueId>, Vec<ValueId>)>,
        operand_maps: Vec<Vec<partition::Affine>>,
        (fns, splits): (Vec<codegen::KernelFn>, Vec<(parallel::Split, Vec<usize>)>),
        opts: &CompileOptions,
    ) -> Result<Vec<steps::RunStep>, CompileError> {
        let mut kernels = fns.into_iter().zip(splits);
        let mut out = Vec::with_capacity(part.steps.len());
        for ((step, (reads, writes)), operands) in part.steps.iter().zip(io).zip(operand_maps) {
            let run = match *step {
                Step::Library(v) if graph.node(v).op == Op::Matmul => steps::Run::Matmul {
                    v,
                    operands,
                    split: opts.target.gemm_split,
                },
                Step::Library(v) if graph.node(v).op.is_control() => steps::Run::Control {
                    v,
                    program: control::ControlProgram::compile(&graph.node(v).op, opts)?,
                },
                Step::Library(v) => steps::Run::Library {
                    v,
                    operands,
                    collective: None,
                },
                Step::Kernel(_) | Step::Row(_) | Step::Reduce(_) => {
                    let (f, (split, sums)) = kernels.next().expect("a kernel per compiled step");
                    let zeroed = (sums.iter())
                        .map(|&j| {
                            let n = graph.node(writes[j]);
                            (reads.len() + j, shape::numel(&n.shape) * n.dtype.size())
                        })
                        .collect();
                    steps::Run::Kernel { f, split, zeroed }
                }
            };
            out.push(steps::RunStep { reads, writes, run });
        }
        debug_assert!(kernels.next().is_none(), "a compiled step per kernel");
        Ok(out)
    }

    /// Each collective step's staging region (`stages`) and the step before which a call
    /// waits for it (`steps::Collective`).
    fn place_waits(
        graph: &Graph,
        part: &Partition,
        steps: &mut [steps::RunStep],
        stages: &[Option<usize>],
    ) {
        let output = |v: ValueId| {
            graph.outputs.contains(&v)
                || part
                    .aliases
                    .iter()
                    .any(|(o, r)| *r == v && graph.outputs.contains(o))
        };
        for si in 0..steps.len() {
            let Some(stage) = stages[si] else { continue };
            let v = steps[si].writes[0];
            let first_reader = (si + 1..steps.len()).find(|&sj| steps[sj].reads.contains(&v));
            let wait_before = match first_reader {
                Some(sj) => sj,
                None if output(v) => steps.len(),
                None => si + 1,
            };
            if let steps::Run::Library { collective, .. } = &mut steps[si].run {
                *collective = Some(steps::Collective { stage, wait_before });
            }
        }
    }

    /// Compile a graph built by hand or parsed from text, with each parameter's kind
    /// (`None`: every one borrowed; `ArgKind::Owned` parameters may be donated) and the
    /// options; `captured` fills its `captured k` slots.
    pub fn compile_graph(
        graph: Graph,
        captured: Vec<Array>,
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
        Ok(Executable::compile(graph, captured, &sig, opts)?)
    }
}

/// The descriptions by reference (what the buffer planner reads).
fn refs(described: &[Description]) -> Vec<&Description> {
    described.iter().collect()
}
