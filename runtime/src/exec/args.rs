//! The calling convention of a compiled program: the arguments of one call, as the `#[jit]`
//! wrapper (or the eager path) collects them, and the signature (cache key) they give.

use crate::{DType, Error, ErrorKind, Tensor};
use std::any::Any;
use std::fmt::Debug;
use std::hash::{Hash, Hasher};

/// How a tensor argument is passed: the user's Rust type decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// `&Tensor`: never written.
    Borrowed,
    /// `Tensor` by value: its buffer may be reused (donated).
    Owned,
    /// `f32` / `f64`: a traced scalar; a new value does not recompile.
    Scalar,
}

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

/// A static (non-traced) parameter value: part of the cache key.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a static parameter of a #[jit] function",
    label = "static parameters must be `Hash + Eq + Clone + Debug + Send + Sync + 'static`",
    note = "parameters of type `&Tensor`, `Tensor`, `f32`, `f64` and trees of tensors (`Tree`, e.g. a \
            `#[derive(Tree)]` struct) are traced; every other parameter is static: it is part of the cache \
            key, so it must be hashable and comparable"
)]
pub trait StaticArg: Any + Debug + Send + Sync {
    /// Whether `other` is the same type with an equal value (signatures compare by it).
    fn dyn_eq(&self, other: &dyn StaticArg) -> bool;
    /// Hash the value into `h` (the signature's hash).
    fn dyn_hash(&self, h: &mut dyn Hasher);
    /// A boxed copy (the cached signature keeps one).
    fn clone_box(&self) -> Box<dyn StaticArg>;
    /// The value as `Any`, to downcast it back.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Hash + Eq + Clone + Debug + Send + Sync + 'static> StaticArg for T {
    fn dyn_eq(&self, other: &dyn StaticArg) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
    fn dyn_hash(&self, mut h: &mut dyn Hasher) {
        self.hash(&mut h)
    }
    fn clone_box(&self) -> Box<dyn StaticArg> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Compile-time check emitted by `#[jit]` for each static parameter type.
pub fn assert_static_arg<T: StaticArg>() {}

pub(crate) struct StaticValue(pub Box<dyn StaticArg>);

impl PartialEq for StaticValue {
    fn eq(&self, o: &StaticValue) -> bool {
        self.0.dyn_eq(&*o.0)
    }
}
impl Eq for StaticValue {}
impl Hash for StaticValue {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.dyn_hash(h)
    }
}
impl Clone for StaticValue {
    fn clone(&self) -> StaticValue {
        StaticValue(self.0.clone_box())
    }
}
impl Debug for StaticValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// One traced argument's type in the signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArgSig {
    /// How the argument is passed.
    pub kind: ArgKind,
    /// Its element type.
    pub dtype: DType,
    /// Its shape.
    pub shape: Vec<usize>,
}

/// The cache key of a call: the traced arguments' kinds, dtypes and shapes
/// (a tree parameter gives one per leaf), the structure of tree parameters,
/// and the static arguments' values.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Signature {
    /// Each argument's kind, dtype and shape, in order.
    pub args: Vec<ArgSig>,
    /// For each tree parameter: its leaf count, the length of its
    /// structure (`Tree::structure`), then that structure.
    pub structure: Vec<usize>,
    pub(crate) statics: Vec<StaticValue>,
}

impl Signature {
    /// Which arguments are passed by value (their buffers may be donated): what the buffer
    /// planner needs of the signature.
    pub fn owned(&self) -> Vec<bool> {
        self.args.iter().map(|a| a.kind == ArgKind::Owned).collect()
    }

    /// The static argument values, as written by their `Debug`.
    pub fn statics_debug(&self) -> Vec<String> {
        self.statics.iter().map(|s| format!("{s:?}")).collect()
    }
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = self
            .args
            .iter()
            .map(|a| {
                let t = crate::error::type_str(a.dtype, &a.shape);
                match a.kind {
                    ArgKind::Borrowed => format!("&{t}"),
                    ArgKind::Owned => t,
                    ArgKind::Scalar => format!("scalar {t}"),
                }
            })
            .collect();
        parts.extend(self.statics.iter().map(|s| format!("static {s:?}")));
        if !self.structure.is_empty() {
            parts.push(format!("tree structure {:?}", self.structure));
        }
        write!(f, "({})", parts.join(", "))
    }
}

/// What one parameter of a jitted function contributed to the signature, in
/// parameter order: the signature keeps tensors and statics apart, this says
/// how they interleave (for diagnostics: which *parameter* changed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamSlot {
    /// One traced tensor (`&Tensor`, `Tensor`, `f32`, `f64`).
    Tensor,
    /// A tree parameter: this many leaves, and a structure entry.
    Tree {
        /// Leaves of the tree.
        leaves: usize,
    },
    /// A static value.
    Static,
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

/// `argument 1 (n)`: how messages name a parameter.
pub(crate) fn label(i: usize, names: &[&str]) -> String {
    match names.get(i) {
        Some(n) => format!("argument {i} ({n})"),
        None => format!("argument {i}"),
    }
}
