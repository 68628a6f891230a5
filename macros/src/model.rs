//! The macro's model of a `#[jit]` function: what `parse` produces after
//! every check passed, and all that `generate` needs.

use syn::{Attribute, Block, Ident, Type, Visibility};

pub struct JitFn {
    /// The user's outer attributes (doc comments, `#[allow]`, `#[inline]`...).
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub name: Ident,
    /// `&self` or `self`: a method inside an `impl` block.
    pub receiver: Option<Receiver>,
    pub params: Vec<Param>,
    /// The return type as the user wrote it (a `Tree`: the compiler checks).
    pub ret: Type,
    /// The user's body with its `if`/`while`/`for` rewritten into staged
    /// calls (`control.rs`).
    pub body: Box<Block>,
    /// What in the body cannot be staged (an `unsafe` block, a variable
    /// assigned in one branch only, ...). The signature is fine, so the
    /// function and its companion are still generated next to these errors:
    /// callers keep type-checking, and rustc adds no errors of its own about
    /// the unstaged `if`s of the original body.
    pub body_errors: Option<syn::Error>,
    /// `#[jit(memory_budget = ..)]`, in bytes.
    pub memory_budget: Option<u64>,
}

/// The receiver of a `#[jit]` method: `Self` is a tree (traced, leaf by
/// leaf) or a static value (part of the cache key); the compiler decides, as
/// for [`ParamKind::Auto`].
pub struct Receiver {
    /// `&self` (borrowed: never written) or `self` (donated if a tree).
    pub by_ref: bool,
    /// `mut self`: kept for the staged body only.
    pub mutability: Option<syn::Token![mut]>,
    pub self_token: syn::Token![self],
}

pub struct Param {
    pub name: Ident,
    /// `mut` on the binding: kept for the staged body only.
    pub mutability: Option<syn::Token![mut]>,
    /// The type as the user wrote it.
    pub ty: Type,
    pub kind: ParamKind,
}

/// How a parameter is passed; its Rust type decides.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ParamKind {
    /// `&Tensor`: a traced tensor, never written.
    Borrowed,
    /// `Tensor` by value: a traced tensor whose buffer is donated.
    Owned,
    /// `f32` / `f64`: a traced scalar, a `&Tensor` of shape `[]` in the body.
    Scalar(Float),
    /// A primitive type (`usize`, `bool`, ...): part of the cache key,
    /// received by clone.
    Static,
    /// `&T` for a non-primitive `T`: a borrowed tree, leaves never written.
    BorrowedTree,
    /// Any other type by value: a tree (leaves traced and donated) if it
    /// implements `Tree`, else static; the compiler decides.
    Auto,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Float {
    F32,
    F64,
}

impl Param {
    /// Whether the parameter is one tensor argument (a tree gives any
    /// number, a static none).
    pub fn is_tensor(&self) -> bool {
        matches!(
            self.kind,
            ParamKind::Borrowed | ParamKind::Owned | ParamKind::Scalar(_)
        )
    }
}
