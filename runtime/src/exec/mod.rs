//! A compiled program (`Executable`): the graph, its kernels and their
//! machine code, and `run`, which checks the arguments, allocates the
//! buffers and calls the kernels in order.

mod parallel;
pub mod partition;

use crate::codegen::{self, CompiledKernels};
use crate::error::type_str;
use crate::ir::{self, Graph, Op, ValueId};
use crate::jit::{ArgKind, ArgSig, CallArgs, Signature};
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::trace::Traced;
use crate::{interp, Error};
use partition::{Partition, Step};
use std::sync::Arc;

/// Memory figures of a compiled program, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryAnalysis {
    pub argument_bytes: usize,
    pub output_bytes: usize,
    /// Intermediates the program materialises (kernel outputs that are not
    /// program outputs).
    pub temp_bytes: usize,
    /// Intermediates an eager evaluation allocates: one buffer per computed
    /// op result that is not an output (the baseline fusion saves).
    pub eager_temp_bytes: usize,
}

pub struct Executable {
    /// The graph as traced, and after the passes (what the kernels compute).
    traced: Graph,
    graph: Graph,
    captured: Vec<Tensor>,
    part: Partition,
    /// How each compiled step's `begin..end` range may be split.
    layouts: Vec<parallel::Split>,
    compiled: CompiledKernels,
    signature: Signature,
}

impl Executable {
    /// Verify, partition and compile a traced graph.
    pub fn compile(traced: Traced, sig: &Signature, keep_text: bool) -> Result<Executable, Error> {
        let traced_graph = traced.graph;
        if cfg!(debug_assertions) {
            ir::verify(&traced_graph)?;
        }
        let graph = crate::passes::simplify(&traced_graph);
        if cfg!(debug_assertions) {
            ir::verify(&graph).map_err(|e| Error::verify(format!("after simplify: {e}")))?;
        }
        let part = partition::partition(&graph);
        let layouts = part
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Kernel(k) => {
                    let dims = codegen::layout(&graph, &part, k).dims;
                    Some(parallel::Split { extent: dims[0], work: dims.iter().product(), align: if dims.len() == 1 { 64 } else { 1 } })
                }
                Step::Reduce(v) => {
                    let (extent, work, align) = codegen::reduce_extent(&graph, &part, *v);
                    Some(parallel::Split { extent, work, align })
                }
                Step::Row(rk) => {
                    let (extent, work) = codegen::row_extent(&graph, &part, rk);
                    Some(parallel::Split { extent, work, align: 1 })
                }
                Step::Library(_) => None,
            })
            .collect();
        let compiled = codegen::compile(&graph, &part, keep_text)?;
        Ok(Executable { traced: traced_graph, graph, captured: traced.captured, part, layouts, compiled, signature: sig.clone() })
    }

    /// Compile a graph built by hand or parsed from text; every parameter is
    /// taken as borrowed. `captured` fills its `captured k` slots.
    pub fn from_graph(graph: Graph, captured: Vec<Tensor>) -> Result<Executable, Error> {
        ir::verify(&graph)?;
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
            .map(|&p| {
                let n = graph.node(p);
                ArgSig { kind: ArgKind::Borrowed, dtype: n.dtype, shape: n.shape.clone() }
            })
            .collect();
        let sig = Signature { args, statics: vec![] };
        Executable::compile(Traced { graph, captured }, &sig, true)
    }

    /// Run on borrowed arguments (for programs made by `from_graph`).
    pub fn run_with(&self, args: &[&Tensor]) -> Result<Vec<Tensor>, Error> {
        let mut call = CallArgs::new();
        for a in args {
            call.borrowed(a);
        }
        self.run(call)
    }

    /// Bytes of the program's arguments, outputs and temporaries, and what an
    /// eager evaluation of the same graph allocates for intermediates.
    pub fn memory_analysis(&self) -> MemoryAnalysis {
        let g = &self.graph;
        let bytes = |v: ValueId| crate::shape::numel(&g.node(v).shape) * g.node(v).dtype.size();
        let is_output = |v: ValueId| g.outputs.contains(&v);
        let argument_bytes = g.params().iter().map(|&p| bytes(p)).sum();
        let output_bytes = g.outputs.iter().map(|&o| bytes(o)).sum();
        let temp_bytes = self
            .part
            .steps
            .iter()
            .flat_map(|s| match s {
                Step::Kernel(k) => k.outputs.clone(),
                Step::Row(r) => r.outputs.clone(),
                Step::Library(v) | Step::Reduce(v) => vec![*v],
            })
            .filter(|&v| !is_output(v))
            .map(bytes)
            .sum();
        let eager_temp_bytes = (0..g.nodes.len())
            .map(|i| ValueId(i as u32))
            .filter(|&v| g.node(v).op.is_elementwise() && !is_output(v))
            .map(bytes)
            .sum();
        MemoryAnalysis { argument_bytes, output_bytes, temp_bytes, eager_temp_bytes }
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
        self.part.steps.iter().filter(|s| !matches!(s, Step::Library(_))).count()
    }

    /// Number of steps (kernels and library calls).
    pub fn step_count(&self) -> usize {
        self.part.steps.len()
    }

    pub fn traced_text(&self) -> String {
        self.traced.to_text()
    }

    /// The graph after the passes (simplification), which the kernels compute.
    pub fn optimized_text(&self) -> String {
        self.graph.to_text()
    }

    pub fn kernels_text(&self) -> String {
        partition::steps_text(&self.graph, &self.part)
    }

    pub fn clif_text(&self) -> String {
        self.compiled.clif.join("\n")
    }

    /// Check that the arguments have the types the program was compiled for.
    fn check_args(&self, args: &CallArgs) -> Result<(), Error> {
        if args.tensors.len() != self.signature.args.len() {
            return Err(Error::argument(format!(
                "program expects {} tensor arguments, got {}",
                self.signature.args.len(),
                args.tensors.len()
            )));
        }
        for (i, ((_, t), s)) in args.tensors.iter().zip(&self.signature.args).enumerate() {
            let t = t.tensor();
            if t.is_traced() || t.shape() != s.shape.as_slice() || t.dtype() != s.dtype {
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
        let params: Vec<&Tensor> = args.tensors.iter().map(|(_, t)| t.tensor()).collect();
        let mut bufs: Vec<Option<Arc<Buffer>>> = vec![None; self.graph.nodes.len()];
        for (i, n) in self.graph.nodes.iter().enumerate() {
            match n.op {
                Op::Param(k) => bufs[i] = params[k].buffer().cloned(),
                Op::Captured(k) => bufs[i] = self.captured[k].buffer().cloned(),
                _ => {}
            }
        }
        let mut ptrs: Vec<*mut u8> = Vec::new();
        let mut ki = 0;
        for step in &self.part.steps {
            match step {
                Step::Kernel(k) => {
                    ptrs.clear();
                    for &x in &k.inputs {
                        ptrs.push(
                            bufs[x.index()]
                                .as_ref()
                                .unwrap_or_else(|| panic!("%{} not computed before use\n{}\n{}", x.0, self.graph, self.kernels_text()))
                                .as_mut_ptr(),
                        );
                    }
                    for &o in &k.outputs {
                        let n = self.graph.node(o);
                        let buf = Arc::new(Buffer::uninit(crate::shape::numel(&n.shape) * n.dtype.size()));
                        ptrs.push(buf.as_mut_ptr());
                        bufs[o.index()] = Some(buf);
                    }
                    if crate::shape::numel(&k.shape) > 0 {
                        // SAFETY: the pointers are live buffers of the sizes the
                        // kernel was compiled for (checked by check_args and
                        // allocated above); outputs are fresh and unshared.
                        unsafe { parallel::run_kernel(self.compiled.fns[ki], &ptrs, self.layouts[ki]) };
                    }
                    ki += 1;
                }
                Step::Row(rk) => {
                    let mut ins = Vec::with_capacity(rk.inputs.len());
                    for &x in &rk.inputs {
                        ins.push(self.value(x, &bufs)?);
                    }
                    ptrs.clear();
                    ptrs.extend(ins.iter().map(|t| t.buffer().unwrap().as_mut_ptr()));
                    for &o in &rk.outputs {
                        let n = self.graph.node(o);
                        let buf = Arc::new(Buffer::uninit(crate::shape::numel(&n.shape) * n.dtype.size()));
                        ptrs.push(buf.as_mut_ptr());
                        bufs[o.index()] = Some(buf);
                    }
                    if crate::shape::numel(&rk.group.o) > 0 {
                        // SAFETY: live buffers of the compiled shapes.
                        unsafe { parallel::run_kernel(self.compiled.fns[ki], &ptrs, self.layouts[ki]) };
                    }
                    ki += 1;
                }
                Step::Reduce(v) => {
                    let n = self.graph.node(*v);
                    let root = codegen::reduce_input_map(&self.graph, &self.part, *v).root;
                    let input = self.value(root, &bufs)?;
                    let out = Arc::new(Buffer::uninit(crate::shape::numel(&n.shape) * n.dtype.size()));
                    let ptrs = [input.buffer().unwrap().as_mut_ptr(), out.as_mut_ptr()];
                    if crate::shape::numel(&n.shape) > 0 {
                        // SAFETY: input and output buffers of the compiled shapes.
                        unsafe { parallel::run_kernel(self.compiled.fns[ki], &ptrs, self.layouts[ki]) };
                    }
                    bufs[v.index()] = Some(out);
                    ki += 1;
                }
                Step::Library(v) => {
                    let n = self.graph.node(*v);
                    let ins: Vec<Tensor> = n.inputs.iter().map(|&x| self.value(x, &bufs)).collect::<Result<_, _>>()?;
                    let refs: Vec<&Tensor> = ins.iter().collect();
                    let out = crate::library::run(&n.op, &refs, &n.shape, n.dtype)?;
                    bufs[v.index()] = out.buffer().cloned();
                }
            }
        }
        let outs = self
            .graph
            .outputs
            .iter()
            .map(|&o| self.output(o, &bufs))
            .collect::<Result<Vec<_>, _>>()?;
        drop(args);
        Ok(outs)
    }

    /// A materialised value as a tensor (constants are filled on demand).
    fn value(&self, x: ValueId, bufs: &[Option<Arc<Buffer>>]) -> Result<Tensor, Error> {
        self.output(x, bufs)
    }

    fn output(&self, o: ValueId, bufs: &[Option<Arc<Buffer>>]) -> Result<Tensor, Error> {
        let n = self.graph.node(o);
        if let Some(&root) = self.part.aliases.get(&o) {
            let t = self.output(root, bufs)?;
            return Ok(Tensor::from_buffer(t.buffer().unwrap().clone(), n.shape.clone(), n.dtype));
        }
        if let Some(b) = &bufs[o.index()] {
            return Ok(Tensor::from_buffer(b.clone(), n.shape.clone(), n.dtype));
        }
        match n.op {
            Op::Const(l) => Ok(interp::filled(l.cast(n.dtype), &n.shape, n.dtype)),
            _ => Err(Error::verify(format!("output %{} was never computed", o.0))),
        }
    }
}

