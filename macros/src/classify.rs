//! Syntactic classification of parameter and return types. The macro sees
//! tokens, not types: `Tensor` is any path whose last segment is `Tensor`
//! (`Tensor`, `jitfuse::Tensor`, ...), `f32`/`f64` and the other primitives
//! are those names. Whether any other type is a `Tree` (traced) or static is
//! left to the compiler (see `generate::collect_args`).

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Type, TypePath};

/// The longest tuple a return type may be (the runtime's `Tree` impls for
/// tuples go up to 12).
pub const MAX_TUPLE: usize = 12;

/// Types that are static by name (never trees), and whose references get a
/// "take it by value" error.
const PRIMITIVES: &[&str] = &[
    "bool", "char", "str", "String", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16",
    "i32", "i64", "i128", "isize", "f32", "f64",
];

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
    /// `&T` or `&mut T` for a primitive `T` (`&usize`).
    OtherRef(&'a syn::TypeReference),
    /// `&mut T` for a `T` that is neither a tensor nor a primitive.
    TreeMut(&'a syn::TypeReference),
    /// `&T` for any other `T`: a borrowed tree.
    TreeRef,
    /// A type with a `&Tensor` inside (`Vec<&Tensor>`, `(&Tensor, &Tensor)`):
    /// trees own their leaves.
    NestedTensorRef,
    /// A primitive (`usize`, `bool`, ...): a static parameter.
    Static,
    /// Any other type: a tree if it implements `Tree`, else static.
    Auto,
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

fn is_primitive(ty: &Type) -> bool {
    PRIMITIVES.iter().any(|p| last_ident_is(ty, p))
}

/// Whether a `&Tensor` or `&mut Tensor` occurs strictly inside `ty`.
fn has_nested_tensor_ref(ty: &Type) -> bool {
    fn inner(ty: &Type) -> bool {
        match strip(ty) {
            Type::Reference(r) => is_tensor(&r.elem) || inner(&r.elem),
            t => children(t).iter().any(|c| inner(c)),
        }
    }
    fn children(ty: &Type) -> Vec<&Type> {
        match ty {
            Type::Tuple(t) => t.elems.iter().collect(),
            Type::Array(a) => vec![&a.elem],
            Type::Slice(s) => vec![&s.elem],
            Type::Reference(r) => vec![&r.elem],
            Type::Path(p) => p
                .path
                .segments
                .iter()
                .flat_map(|s| match &s.arguments {
                    syn::PathArguments::AngleBracketed(a) => a
                        .args
                        .iter()
                        .filter_map(|a| match a {
                            syn::GenericArgument::Type(t) => Some(t),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                })
                .collect(),
            _ => Vec::new(),
        }
    }
    children(strip(ty)).iter().any(|c| inner(c))
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
        Type::Reference(r) if is_primitive(&r.elem) => TypeClass::OtherRef(r),
        Type::ImplTrait(_) => TypeClass::ImplTrait,
        _ if has_nested_tensor_ref(ty) => TypeClass::NestedTensorRef,
        Type::Reference(r) if r.mutability.is_some() => TypeClass::TreeMut(r),
        Type::Reference(_) => TypeClass::TreeRef,
        _ if is_primitive(ty) => TypeClass::Static,
        _ => TypeClass::Auto,
    }
}

/// What a return type is, as far as tokens tell: whether it is a `Tree` is
/// checked by the compiler (`JitReturn`, at the return type).
pub enum ReturnClass {
    /// Possibly a tree.
    Ok,
    /// A tuple longer than [`MAX_TUPLE`].
    TooMany(usize),
    /// `impl Trait`.
    ImplTrait,
}

pub fn classify_return(ty: &Type) -> ReturnClass {
    match strip(ty) {
        Type::Tuple(t) if t.elems.len() > MAX_TUPLE => ReturnClass::TooMany(t.elems.len()),
        Type::ImplTrait(_) => ReturnClass::ImplTrait,
        _ => ReturnClass::Ok,
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
