//! Syntactic classification of parameter and return types. The macro sees
//! tokens, not types: `Tensor` is any path whose last segment is `Tensor`
//! (`Tensor`, `jitfuse::Tensor`, ...), `f32`/`f64` are those primitive names.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Type, TypePath};

/// The most tensors a return tuple may hold (the runtime's `FromOutputs`
/// impls go up to 8).
pub const MAX_OUTPUTS: usize = 8;

pub enum TypeClass<'a> {
    /// `&Tensor`
    TensorRef,
    /// `&mut Tensor`
    TensorMut(&'a syn::TypeReference),
    /// `Tensor`
    Tensor,
    F32,
    F64,
    /// `impl Trait`
    ImplTrait,
    /// `&T` or `&mut T` for a `T` that is not a tensor.
    OtherRef(&'a syn::TypeReference),
    /// A non-reference type that mentions `Tensor` (`Vec<Tensor>`,
    /// `(Tensor, Tensor)`, `[Tensor; 2]`): it would be static, which it
    /// cannot be.
    ContainsTensor,
    /// Any other type: a static parameter.
    Static,
}

/// Look through invisible groups (types passed through `macro_rules!`) and
/// parentheses.
pub fn strip(ty: &Type) -> &Type {
    match ty {
        Type::Group(g) => strip(&g.elem),
        Type::Paren(p) => strip(&p.elem),
        _ => ty,
    }
}

fn last_ident_is(ty: &Type, name: &str) -> bool {
    match strip(ty) {
        Type::Path(TypePath { qself: None, path }) => path
            .segments
            .last()
            .is_some_and(|s| s.ident == name && s.arguments.is_none()),
        _ => false,
    }
}

pub fn is_tensor(ty: &Type) -> bool {
    last_ident_is(ty, "Tensor")
}

fn mentions_tensor(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == "Tensor",
        TokenTree::Group(g) => mentions_tensor(g.stream()),
        _ => false,
    })
}

pub fn classify(ty: &Type) -> TypeClass<'_> {
    let ty = strip(ty);
    if is_tensor(ty) {
        return TypeClass::Tensor;
    }
    if last_ident_is(ty, "f32") {
        return TypeClass::F32;
    }
    if last_ident_is(ty, "f64") {
        return TypeClass::F64;
    }
    match ty {
        Type::Reference(r) if is_tensor(&r.elem) => match r.mutability {
            Some(_) => TypeClass::TensorMut(r),
            None => TypeClass::TensorRef,
        },
        Type::Reference(r) => TypeClass::OtherRef(r),
        Type::ImplTrait(_) => TypeClass::ImplTrait,
        _ if mentions_tensor(ty.to_token_stream()) => TypeClass::ContainsTensor,
        _ => TypeClass::Static,
    }
}

/// What a return type is.
pub enum ReturnClass {
    /// `Tensor` or a tuple of 1..=8 tensors.
    Ok,
    /// A tuple of tensors longer than [`MAX_OUTPUTS`].
    TooMany(usize),
    /// Anything else.
    Unsupported,
}

pub fn classify_return(ty: &Type) -> ReturnClass {
    match strip(ty) {
        t if is_tensor(t) => ReturnClass::Ok,
        Type::Tuple(t) if !t.elems.is_empty() && t.elems.iter().all(is_tensor) => {
            if t.elems.len() > MAX_OUTPUTS {
                ReturnClass::TooMany(t.elems.len())
            } else {
                ReturnClass::Ok
            }
        }
        _ => ReturnClass::Unsupported,
    }
}

/// A type as the user would write it (`Vec<Tensor>`, `&usize`), for messages:
/// `to_string` on tokens puts spaces everywhere.
pub fn display(ty: &Type) -> String {
    let mut out = String::new();
    write_compact(ty.to_token_stream(), &mut out);
    out
}

fn write_compact(tokens: TokenStream, out: &mut String) {
    use proc_macro2::Delimiter;
    for t in tokens {
        match t {
            TokenTree::Ident(_) | TokenTree::Literal(_) => {
                if out.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                    out.push(' ');
                }
                out.push_str(&t.to_string());
            }
            TokenTree::Punct(p) => {
                out.push(p.as_char());
                if matches!(p.as_char(), ',' | ';') {
                    out.push(' ');
                }
            }
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                write_compact(g.stream(), out);
                out.push_str(close);
            }
        }
    }
}
