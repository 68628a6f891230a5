//! The calling convention of a compiled program: how each argument is passed, and the
//! signature (cache key) of a call. The arguments themselves, as the `#[jit]` wrapper or the
//! eager path collects them, are `tensor::call::CallArgs`.

use crate::DType;
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

/// `argument 1 (n)`: how messages name a parameter.
pub(crate) fn label(i: usize, names: &[&str]) -> String {
    match names.get(i) {
        Some(n) => format!("argument {i} ({n})"),
        None => format!("argument {i}"),
    }
}
