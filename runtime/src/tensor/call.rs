//! The arguments of one call as the `#[jit]` wrapper (or the eager path) collects them, and
//! the tensor face of a compiled program: `Executable::run` takes them (and `from_graph`
//! captured tensors), handing the executor the concrete arrays it computes with.

use crate::array::Array;
use crate::exec::args::{label, ArgKind, ArgSig, ParamSlot, Signature, StaticArg, StaticValue};
use crate::exec::{CompileOptions, Executable};
use crate::ir::Graph;
use crate::{Error, ErrorKind, Tensor};

/// A tensor argument: borrowed from the caller, or held by the call.
pub(crate) enum ArgTensor<'a> {
    Borrowed(&'a Tensor),
    Owned(Tensor),
}

impl ArgTensor<'_> {
    pub(crate) fn tensor(&self) -> &Tensor {
        match self {
            ArgTensor::Borrowed(t) => t,
            ArgTensor::Owned(t) => t,
        }
    }
}

/// The arguments of one call, in parameter order (statics separately).
#[derive(Default)]
pub struct CallArgs<'a> {
    pub(crate) tensors: Vec<(ArgKind, ArgTensor<'a>)>,
    pub(crate) structure: Vec<usize>,
    pub(crate) statics: Vec<StaticValue>,
    /// One per parameter, in order (see [`ParamSlot`]).
    pub(crate) slots: Vec<ParamSlot>,
}

impl<'a> CallArgs<'a> {
    /// No arguments yet.
    pub fn new() -> CallArgs<'a> {
        CallArgs::default()
    }

    /// A borrowed tensor argument (its buffer is not donated).
    pub fn borrowed(&mut self, t: &'a Tensor) {
        self.slots.push(ParamSlot::Tensor);
        self.tensors
            .push((ArgKind::Borrowed, ArgTensor::Borrowed(t)));
    }

    /// An owned tensor argument (its buffer may be donated to an output).
    pub fn owned(&mut self, t: Tensor) {
        self.slots.push(ParamSlot::Tensor);
        self.tensors.push((ArgKind::Owned, ArgTensor::Owned(t)));
    }

    /// An owned tensor passed as borrowed: held for the call, never written (an eager
    /// op's operand other than the one it donates).
    pub(crate) fn owned_kept(&mut self, t: Tensor) {
        self.slots.push(ParamSlot::Tensor);
        self.tensors.push((ArgKind::Borrowed, ArgTensor::Owned(t)));
    }

    /// An `f32` scalar argument (traced: a new value does not recompile).
    pub fn scalar_f32(&mut self, v: f32) {
        self.slots.push(ParamSlot::Tensor);
        self.tensors.push((
            ArgKind::Scalar,
            ArgTensor::Owned(Tensor::scalar(v).into_weak()),
        ));
    }

    /// An `f64` scalar argument (traced: a new value does not recompile).
    pub fn scalar_f64(&mut self, v: f64) {
        self.slots.push(ParamSlot::Tensor);
        self.tensors.push((
            ArgKind::Scalar,
            ArgTensor::Owned(Tensor::scalar(v).into_weak()),
        ));
    }

    /// The leaves of a tree parameter, in order: owned leaves are donated,
    /// borrowed ones (clones of the caller's leaves) never written; `structure` appends the
    /// tree's structure (`Tree::structure`: the calling convention does not know trees).
    pub fn tree(
        &mut self,
        kind: ArgKind,
        leaves: Vec<Tensor>,
        structure: impl FnOnce(&mut Vec<usize>),
    ) {
        debug_assert!(kind != ArgKind::Scalar);
        self.slots.push(ParamSlot::Tree {
            leaves: leaves.len(),
        });
        let start = self.structure.len();
        self.structure.extend([leaves.len(), 0]);
        structure(&mut self.structure);
        self.structure[start + 1] = self.structure.len() - start - 2;
        self.tensors
            .extend(leaves.into_iter().map(|t| (kind, ArgTensor::Owned(t))));
    }

    /// Number of tensor arguments so far (a tree counts its leaves).
    pub fn tensor_count(&self) -> usize {
        self.tensors.len()
    }

    /// A static argument: part of the signature, so each value compiles its own program.
    pub fn static_arg<T: StaticArg + Clone>(&mut self, v: &T) {
        self.push_static(StaticValue(Box::new(v.clone())));
    }

    pub(crate) fn push_static(&mut self, v: StaticValue) {
        self.slots.push(ParamSlot::Static);
        self.statics.push(v);
    }

    /// How the parameters map onto the signature's tensors and statics.
    pub(crate) fn slots(&self) -> &[ParamSlot] {
        &self.slots
    }

    /// The tensors as the traced body receives them (in the eager or inlined
    /// path they are the concrete arguments themselves).
    pub(crate) fn tensor_list(&self) -> Vec<Tensor> {
        self.tensors
            .iter()
            .map(|(_, t)| t.tensor().clone())
            .collect()
    }

    /// The call's signature; `name` and `params` (the function's name and
    /// parameter names, possibly empty) name an argument that cannot be in one.
    pub(crate) fn signature(&self, name: &str, params: &[&str]) -> Result<Signature, Error> {
        let mut args = Vec::with_capacity(self.tensors.len());
        for (i, (kind, t)) in self.tensors.iter().enumerate() {
            let t = t.tensor();
            if t.is_traced() {
                return Err(self.leaked(i, name, params));
            }
            args.push(ArgSig {
                kind: *kind,
                dtype: t.dtype(),
                shape: t.shape().to_vec(),
            });
        }
        Ok(Signature {
            args,
            structure: self.structure.clone(),
            statics: self.statics.clone(),
        })
    }

    /// The error of tensor `i` of the call being a tracer (kept from a trace
    /// that has ended, or from one that is not this call's).
    fn leaked(&self, i: usize, name: &str, params: &[&str]) -> Error {
        let t = self.tensors[i].1.tensor();
        let mut first = 0;
        let mut which = format!("argument {i}");
        for (p, slot) in self.slots.iter().enumerate() {
            let n = match *slot {
                ParamSlot::Tensor => 1,
                ParamSlot::Tree { leaves } => leaves,
                ParamSlot::Static => 0,
            };
            if i < first + n {
                which = label(p, params);
                if let ParamSlot::Tree { .. } = slot {
                    which = format!("{which}, leaf {}", i - first);
                }
                break;
            }
            first += n;
        }
        Error::new(
            ErrorKind::LeakedTracer,
            format!(
                "`{name}`: {which} is a traced tensor {} outside the trace that made it; traced \
                 tensors live only inside the #[jit] call that made them: return it as an output \
                 instead of storing it",
                crate::error::type_str(t.dtype(), t.shape())
            ),
        )
    }
}

impl Executable {
    /// Run the program on arguments of its signature.
    pub fn run(&self, args: CallArgs) -> Result<Vec<Tensor>, Error> {
        let mut arrays = Vec::with_capacity(args.tensors.len());
        for (i, (kind, t)) in args.tensors.iter().enumerate() {
            // An owned tensor is held by `args` alone: its buffer may be donated.
            let a = t.tensor().array_ref();
            arrays.push((*kind, a.ok_or_else(|| leaked_argument(i, t.tensor()))?));
        }
        let outs = self.run_arrays_as(&arrays, Tensor::from_array)?;
        drop(arrays);
        drop(args);
        Ok(outs)
    }

    /// Run on borrowed arguments (for programs made by `from_graph`).
    pub fn run_with(&self, args: &[&Tensor]) -> Result<Vec<Tensor>, Error> {
        let mut call = CallArgs::new();
        for a in args {
            call.borrowed(a);
        }
        self.run(call)
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
        Executable::compile_graph(graph, concrete(captured, "from_graph")?, kinds, opts)
    }
}

/// The arrays of tensors a program captures (a traced one is an error naming `what`).
pub(crate) fn concrete(tensors: Vec<Tensor>, what: &str) -> Result<Vec<Array>, Error> {
    tensors
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let ty = crate::error::type_str(t.dtype(), t.shape());
            t.into_array().ok_or_else(|| {
                Error::new(
                    ErrorKind::LeakedTracer,
                    format!(
                        "{what}: captured tensor {i} ({ty}) is a traced tensor outside its trace"
                    ),
                )
            })
        })
        .collect()
}

/// The error of argument `i` of a call being a tracer outside the trace that made it.
fn leaked_argument(i: usize, t: &Tensor) -> Error {
    Error::new(
        ErrorKind::LeakedTracer,
        format!(
            "argument {i} is a traced tensor {} outside the trace that made it; \
             traced tensors live only inside the #[jit] call that made them: return \
             it as an output instead of storing it",
            crate::error::type_str(t.dtype(), t.shape())
        ),
    )
}
