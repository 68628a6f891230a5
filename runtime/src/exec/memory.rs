//! What a compiled program costs in memory: the figures of its report (`MemoryAnalysis`),
//! the GEMM libraries' workspace, and the plan's picture.

use super::{control, steps, Executable};
use crate::ir::{Op, ValueId};
use crate::plan::{self, BufferPlan};
use crate::shape;

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

impl Executable {
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
    pub(super) fn products_workspace(&self) -> crate::library::workspace::GemmWorkspace {
        let g = &self.graph;
        let mut w = crate::library::workspace::GemmWorkspace::default();
        for s in &self.steps {
            let steps::Run::Matmul { v, operands, split } = &s.run else {
                continue;
            };
            let n = g.node(*v);
            if crate::library::runs_gemm16(g.node(n.inputs[0]).dtype) {
                continue; // its packing is the step's planned scratch
            }
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
            w.add((m, k, cols), n.dtype.size(), (sa, sb), *split);
            // A batch times a shared matrix runs as one product of all the rows.
            if b.len() == 2 && a.len() > 2 {
                let rows = shape::numel(&a[..a.len() - 1]);
                w.add((rows, k, cols), n.dtype.size(), (sa, sb), *split);
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
                .map(|(_, t)| t.buffer().len_bytes())
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
    pub(super) fn guest_extent(&self, host: ValueId) -> usize {
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
}
