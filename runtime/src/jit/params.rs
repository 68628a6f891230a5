//! Tree parameters and tree returns of `#[jit]` functions: what the macro's
//! generated code calls (through `jitfuse::__private`).
//!
//! **Which parameters are trees.** The macro sees tokens, not trait impls, so
//! for a by-value parameter of a type that is not `Tensor`, `f32`, `f64` or a
//! primitive (`usize`, `bool`, ...), it lets the compiler decide, with
//! autoref specialisation on a concrete type (`#[jit]` functions are not
//! generic): `(&&Probe::<T>::new()).__jitfuse_kind()` finds
//! [`ViaTree`] (implemented for `&Probe<T>` when `T: Tree`) before
//! [`ViaStatic`] (implemented for every `Probe<T>`). A tree is traced leaf by
//! leaf and donated; anything else is static, and must then be a
//! [`StaticArg`] (a trait-bound error at the parameter's type otherwise). A
//! `&T` parameter (`T` not `Tensor` or a primitive) is a borrowed tree, and
//! `T: Tree` is required ([`BorrowedTree`]). The receiver of a `#[jit]`
//! method goes through the same probe with `Probe::<Self>`: `self` like a
//! by-value parameter, `&self` by `collect_ref` (a borrowed tree, or a
//! static value cloned).
//!
//! **Structure.** A tree parameter is rebuilt inside the trace from a
//! *template*: the caller's value with every leaf replaced by one shared
//! placeholder tensor, so that the template holds no buffer of the caller's
//! (owned leaves stay unshared, hence donatable). A return value is
//! flattened to its leaves (the program's outputs) and its template, kept in
//! the cache entry next to the executable: calls that hit the cache rebuild
//! their return value from it.

use super::cache::Structure;
use crate::exec::args::{ArgKind, StaticArg, StaticValue};
use crate::tensor::call::CallArgs;
use crate::{Error, Tensor, Tree};
use once_cell::sync::OnceCell;
use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

/// The leaf of every template: one shared scalar, never read.
fn placeholder() -> Tensor {
    static P: OnceCell<Tensor> = OnceCell::new();
    P.get_or_init(|| Tensor::scalar(0f32)).clone()
}

/// `t`'s structure, without its leaves' buffers.
fn template<T: Tree>(t: &T) -> T {
    t.map(|_| placeholder())
}

/// The type of a by-value parameter, for dispatch (see the module docs).
pub struct Probe<T>(PhantomData<fn() -> T>);

impl<T> Probe<T> {
    #[allow(clippy::new_without_default)]
    /// A probe of parameter type `T`.
    pub fn new() -> Probe<T> {
        Probe(PhantomData)
    }
}

/// Chosen for trees (one more autoref: tried first).
pub trait ViaTree<T> {
    /// The parameter's kind: a tree.
    fn __jitfuse_kind(&self) -> TreeParam<T>;
}

impl<T: Tree> ViaTree<T> for &Probe<T> {
    fn __jitfuse_kind(&self) -> TreeParam<T> {
        TreeParam(PhantomData)
    }
}

/// Chosen for every other type.
pub trait ViaStatic<T> {
    /// The parameter's kind: static.
    fn __jitfuse_kind(&self) -> StaticParam<T>;
}

impl<T> ViaStatic<T> for Probe<T> {
    fn __jitfuse_kind(&self) -> StaticParam<T> {
        StaticParam(PhantomData)
    }
}

/// A by-value tree parameter: leaves traced, owned (donated).
pub struct TreeParam<T>(PhantomData<fn() -> T>);

impl<T: Tree> TreeParam<T> {
    /// Pass `v`'s leaves as arguments; the slot rebuilds the tree inside the trace.
    pub fn collect(self, v: T, args: &mut CallArgs<'_>) -> TreeSlot<T> {
        let leaves = v.leaves();
        let slot = TreeSlot::new(&v, args.tensor_count(), leaves.len());
        args.tree(ArgKind::Owned, leaves, |s| v.structure(s));
        // `v` is dropped here: the arguments hold the only references to its
        // leaves that the caller gave away.
        slot
    }

    /// The receiver of a `&self` method: a borrowed tree (never written).
    pub fn collect_ref(self, v: &T, args: &mut CallArgs<'_>) -> TreeSlot<T> {
        borrowed_tree(v, args)
    }
}

/// A static parameter: part of the cache key, cloned into the body.
pub struct StaticParam<T>(PhantomData<fn() -> T>);

impl<T> StaticParam<T> {
    /// `T: StaticArg` is the one bound (it implies `Clone` through its
    /// blanket impl, and `'static` through `Any`), so a type that is neither
    /// a tree nor a static gets only `StaticArg`'s messages.
    pub fn collect(self, v: T, args: &mut CallArgs<'_>) -> StaticSlot<T>
    where
        T: StaticArg,
    {
        args.push_static(StaticValue(v.clone_box()));
        let clone = |v: &T| -> T {
            let b: Box<dyn Any> = v.clone_box();
            *b.downcast::<T>().expect("clone_box keeps the type")
        };
        StaticSlot { value: v, clone }
    }

    /// The receiver of a `&self` method whose type is static: cloned into
    /// the cache key and into the body.
    pub fn collect_ref(self, v: &T, args: &mut CallArgs<'_>) -> StaticSlot<T>
    where
        T: StaticArg,
    {
        let clone = |v: &T| -> T {
            let b: Box<dyn Any> = v.clone_box();
            *b.downcast::<T>().expect("clone_box keeps the type")
        };
        self.collect(clone(v), args)
    }
}

/// A borrowed tree parameter `&T` of a `#[jit]` function.
#[diagnostic::on_unimplemented(
    message = "`&{Self}` cannot be a parameter of a #[jit] function: `{Self}` is not a tree of tensors",
    label = "a borrowed parameter must be a tree of tensors (`jitfuse::Tree`)",
    note = "`&Tensor`, `&(Tensor, Tensor)`, `&Vec<Tensor>` or `&S` for a `#[derive(Tree)]` struct `S` are \
            traced; a static parameter (part of the cache key) is taken by value: write `{Self}`"
)]
pub trait BorrowedTree: Tree {}
impl<T: Tree> BorrowedTree for T {}

/// Collect a borrowed tree parameter: leaves traced, never written.
pub fn borrowed_tree<T: BorrowedTree>(v: &T, args: &mut CallArgs<'_>) -> TreeSlot<T> {
    let leaves = v.leaves();
    let slot = TreeSlot::new(v, args.tensor_count(), leaves.len());
    args.tree(ArgKind::Borrowed, leaves, |s| v.structure(s));
    slot
}

/// Where a tree parameter's leaves are among the traced arguments, and its
/// structure.
pub struct TreeSlot<T> {
    template: T,
    start: usize,
    len: usize,
    // A function pointer instead of a `T: Tree` bound on `value`: a missing
    // impl is reported once, where the slot is made.
    rebuild: fn(&T, &mut dyn Iterator<Item = Tensor>) -> T,
}

impl<T: Tree> TreeSlot<T> {
    fn new(v: &T, start: usize, len: usize) -> TreeSlot<T> {
        TreeSlot {
            template: template(v),
            start,
            len,
            rebuild: T::rebuild,
        }
    }
}

impl<T> TreeSlot<T> {
    /// The parameter as the body sees it: the structure with the traced (or,
    /// inlined in an enclosing trace, the given) leaves.
    pub fn value(&self, ts: &[Tensor]) -> T {
        (self.rebuild)(
            &self.template,
            &mut ts[self.start..self.start + self.len].iter().cloned(),
        )
    }
}

/// A static parameter's value.
pub struct StaticSlot<T> {
    value: T,
    clone: fn(&T) -> T,
}

impl<T> StaticSlot<T> {
    /// The static value (a copy) inside the trace.
    pub fn value(&self, _ts: &[Tensor]) -> T {
        (self.clone)(&self.value)
    }
}

/// The return type of a `#[jit]` function.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a #[jit] function",
    label = "the return type must be a tree of tensors (`jitfuse::Tree`)",
    note = "a #[jit] function returns `Tensor`, a tuple, array, `Vec` or `Option` of trees, or a \
            `#[derive(Tree)]` struct: its leaves are the program's outputs"
)]
pub trait JitReturn: Tree + Send + Sync + 'static {}
impl<T: Tree + Send + Sync + 'static> JitReturn for T {}

/// What a [`Structure`] holds: the return value's template, its leaf count
/// and how to rebuild it (a function pointer, so that `rebuild_output`
/// needs no `Tree` bound: a bad return type is reported once, at
/// `flatten_output`).
struct Template<R> {
    template: R,
    leaves: usize,
    rebuild: fn(&R, &mut dyn Iterator<Item = Tensor>) -> R,
}

/// The traced return value → the program's outputs and the structure to
/// rebuild it from.
pub fn flatten_output<R: JitReturn>(r: R) -> (Vec<Tensor>, Structure) {
    let leaves = r.leaves();
    let t = Template {
        template: template(&r),
        leaves: leaves.len(),
        rebuild: R::rebuild,
    };
    (leaves, Arc::new(t))
}

/// The program's outputs → the return value.
pub fn rebuild_output<R: 'static>(structure: &Structure, outputs: Vec<Tensor>) -> Result<R, Error> {
    let t = structure.downcast_ref::<Template<R>>().ok_or_else(|| {
        Error::argument("the cached return structure has another type (bug in #[jit])".to_string())
    })?;
    if outputs.len() != t.leaves {
        return Err(Error::argument(format!(
            "program returned {} outputs, the function {}",
            outputs.len(),
            t.leaves
        )));
    }
    Ok((t.rebuild)(&t.template, &mut outputs.into_iter()))
}
