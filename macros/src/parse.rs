//! Tokens → [`JitFn`], checking everything the macro cannot stage and
//! collecting every error before giving up (like serde_derive's `Ctxt`).

use crate::classify::{self, ReturnClass, TypeClass, MAX_TUPLE};
use crate::control;
use crate::model::{Float, JitFn, Param, ParamKind, Receiver};
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::{FnArg, Item, ItemFn, Pat, ReturnType, Signature, Type};

/// Collects errors; combined `syn::Error`s expand to one `compile_error!`
/// each, so the user sees all of them at once.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn at(&mut self, tokens: impl ToTokens, msg: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }
}

/// `memory_budget = "64MiB"` (also KiB, GiB, B, or a plain number of bytes),
/// or `"auto"` ([`AUTO_BUDGET`]).
fn parse_args(attr: TokenStream, errors: &mut Errors) -> Option<u64> {
    let mut budget = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("memory_budget") {
            let value = meta.value()?;
            let lit: syn::Lit = value.parse()?;
            let bytes = match &lit {
                syn::Lit::Int(i) => i.base10_parse::<u64>().ok(),
                syn::Lit::Str(s) if s.value().trim() == "auto" => Some(AUTO_BUDGET),
                syn::Lit::Str(s) => parse_size(&s.value()),
                _ => None,
            };
            match bytes {
                Some(b) => budget = Some(b),
                None => {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "a memory budget is a size like \"64MiB\", \"512KiB\", \"2GiB\", a number of bytes, or \"auto\"",
                    ))
                }
            }
            Ok(())
        } else {
            Err(meta.error(format!(
                "unknown `#[jit]` argument `{}`: the only argument is `memory_budget = \"64MiB\"` (static parameters are the non-tensor ones, by type)",
                meta.path.get_ident().map(|i| i.to_string()).unwrap_or_default()
            )))
        }
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, attr) {
        errors.push(e);
    }
    budget
}

/// `memory_budget = "auto"`: the runtime's `AUTO_MEMORY_BUDGET` (about √N
/// residuals of N kept by every gradient of the body).
pub const AUTO_BUDGET: u64 = u64::MAX;

fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mult = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

pub fn parse(attr: TokenStream, item: TokenStream) -> syn::Result<JitFn> {
    let mut errors = Errors::default();
    let memory_budget = parse_args(attr, &mut errors);
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = match syn::parse2::<Item>(item)? {
        Item::Fn(f) => f,
        other => {
            errors.push(not_a_function(&other));
            return Err(errors.0.expect("just pushed"));
        }
    };
    check_qualifiers(&sig, &mut errors);
    let receiver = match sig.inputs.first() {
        Some(FnArg::Receiver(r)) => receiver(r, &mut errors),
        _ => {
            check_no_self(&sig, &mut errors);
            None
        }
    };
    let params: Vec<Param> = sig
        .inputs
        .iter()
        .filter_map(|arg| param(arg, &mut errors))
        .collect();
    let ret = return_type(&sig, &mut errors);
    // The body: every `if`/`while`/`for` staged, every construct that
    // cannot be reported.
    let mut body = block;
    let mut names: Vec<(syn::Ident, bool)> = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Receiver(r) => Some((
                syn::Ident::new("self", r.self_token.span),
                r.mutability.is_some() && r.reference.is_none(),
            )),
            FnArg::Typed(t) => match &*t.pat {
                Pat::Ident(p) => Some((p.ident.clone(), p.mutability.is_some())),
                _ => None,
            },
        })
        .collect();
    names.dedup_by(|a, b| a.0 == b.0);
    let mut body_errors = Errors::default();
    for e in control::stage(&mut body, names) {
        body_errors.push(e);
    }
    match (errors.0, ret) {
        (Some(mut e), _) => {
            if let Some(b) = body_errors.0 {
                e.combine(b);
            }
            Err(e)
        }
        (None, Some(ret)) => Ok(JitFn {
            attrs,
            vis,
            name: sig.ident,
            receiver,
            params,
            ret,
            body,
            body_errors: body_errors.0,
            memory_budget,
        }),
        (None, None) => unreachable!("a bad return type is reported"),
    }
}

/// `a b` as one token stream, for an error spanning both.
fn join(a: &impl ToTokens, b: &impl ToTokens) -> TokenStream {
    let mut ts = a.to_token_stream();
    b.to_tokens(&mut ts);
    ts
}

fn not_a_function(item: &Item) -> syn::Error {
    const MSG: &str = "`#[jit]` applies to functions: put it on a `fn` of tensors, \
                       e.g. `#[jit] fn f(x: &Tensor) -> Tensor { ... }`";
    let head = match item {
        Item::Struct(i) => join(&i.struct_token, &i.ident),
        Item::Enum(i) => join(&i.enum_token, &i.ident),
        Item::Union(i) => join(&i.union_token, &i.ident),
        Item::Trait(i) => join(&i.trait_token, &i.ident),
        Item::Mod(i) => join(&i.mod_token, &i.ident),
        Item::Const(i) => join(&i.const_token, &i.ident),
        Item::Static(i) => join(&i.static_token, &i.ident),
        Item::Type(i) => join(&i.type_token, &i.ident),
        Item::Impl(i) => return syn::Error::new_spanned(
            join(&i.impl_token, &i.self_ty),
            "`#[jit]` applies to functions and methods, not to `impl` blocks: put `#[jit]` on \
             each method to stage (`impl Model { #[jit] fn forward(&self, x: &Tensor) -> Tensor { .. } }`)",
        ),
        _ => return syn::Error::new(Span::call_site(), MSG),
    };
    syn::Error::new_spanned(head, MSG)
}

fn check_qualifiers(sig: &Signature, errors: &mut Errors) {
    if let Some(t) = &sig.constness {
        errors.at(t, "a `#[jit]` function traces and compiles when called, it cannot be `const`: remove `const`");
    }
    if let Some(t) = &sig.asyncness {
        errors.at(
            t,
            "a `#[jit]` function cannot be `async`: its body is traced synchronously; \
             remove `async` (call it from async code as a normal function)",
        );
    }
    if let Some(t) = &sig.unsafety {
        errors.at(
            t,
            "a `#[jit]` function cannot be `unsafe`: its body is traced, not run on the data; \
             remove `unsafe` and keep unsafe code out of the traced body",
        );
    }
    if let Some(abi) = &sig.abi {
        errors.at(
            abi,
            "a `#[jit]` function is called from Rust: remove the `extern` ABI",
        );
    }
    if !sig.generics.params.is_empty() {
        errors.at(
            &sig.generics,
            "generic `#[jit]` functions are not supported yet: write the function for concrete types \
             (tensor dtypes and shapes are already generic: they are part of the cache key)",
        );
    }
    if let Some(w) = &sig.generics.where_clause {
        errors.at(
            w,
            "`where` clauses on `#[jit]` functions are not supported yet: remove it",
        );
    }
    if let Some(v) = &sig.variadic {
        errors.at(v, "a `#[jit]` function cannot be variadic: remove `...`");
    }
}

/// A function without a receiver whose signature names `Self` is an
/// associated function of an `impl` block: its companion (a struct) cannot
/// be declared there. Those that do not name `Self` get rustc's error
/// ("struct is not supported in `trait`s or `impl`s").
fn check_no_self(sig: &Signature, errors: &mut Errors) {
    fn find(ts: TokenStream) -> Option<proc_macro2::Ident> {
        ts.into_iter().find_map(|t| match t {
            proc_macro2::TokenTree::Ident(i) if i == "Self" => Some(i),
            proc_macro2::TokenTree::Group(g) => find(g.stream()),
            _ => None,
        })
    }
    if find(sig.to_token_stream()).is_some() {
        errors.at(
            join(&sig.fn_token, &sig.ident),
            "`#[jit]` supports methods (`&self` or `self`) but not associated functions without a \
             receiver: move this function out of the `impl` block as a free `#[jit]` function, \
             or take `&self`",
        );
    }
}

/// `&self` or `self` (also `mut self`); `&mut self` and typed receivers
/// (`self: Box<Self>`) are errors.
fn receiver(r: &syn::Receiver, errors: &mut Errors) -> Option<Receiver> {
    if let Some(attr) = r.attrs.first() {
        errors.at(
            attr,
            "attributes on `#[jit]` parameters are not supported: remove it",
        );
        return None;
    }
    if r.colon_token.is_some() {
        errors.at(
            r,
            "a `#[jit]` method takes `&self` or `self`: write the receiver without a type \
             (`self: Box<Self>`, `self: Rc<Self>` and the like are not supported)",
        );
        return None;
    }
    match (&r.reference, r.mutability) {
        (Some((and, _)), Some(m)) => {
            errors.at(
                join(and, &m),
                "tensors are values: a `#[jit]` method cannot write through `&mut self`; take \
                 `&self` (or `self` to donate its leaves) and return the new value instead",
            );
            None
        }
        (Some(_), None) => Some(Receiver {
            by_ref: true,
            mutability: None,
            self_token: r.self_token,
        }),
        (None, m) => Some(Receiver {
            by_ref: false,
            mutability: m,
            self_token: r.self_token,
        }),
    }
}

fn param(arg: &FnArg, errors: &mut Errors) -> Option<Param> {
    let arg = match arg {
        FnArg::Receiver(_) => return None,
        FnArg::Typed(arg) => arg,
    };
    let mut ok = true;
    if let Some(attr) = arg.attrs.first() {
        errors.at(
            attr,
            "attributes on `#[jit]` parameters are not supported: remove it",
        );
        ok = false;
    }
    let ident = match &*arg.pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(p),
        pat => {
            errors.at(
                pat,
                "a `#[jit]` parameter must be a plain name: write `name: Type` and destructure \
                 inside the body (`let (a, b) = name;`)",
            );
            None
        }
    };
    let kind = param_kind(&arg.ty, errors);
    match (ident, kind) {
        (Some(p), Some(kind)) if ok => Some(Param {
            name: p.ident.clone(),
            mutability: p.mutability,
            ty: (*arg.ty).clone(),
            kind,
        }),
        _ => None,
    }
}

fn param_kind(ty: &Type, errors: &mut Errors) -> Option<ParamKind> {
    Some(match classify::classify(ty) {
        TypeClass::TensorRef => ParamKind::Borrowed,
        TypeClass::Tensor => ParamKind::Owned,
        TypeClass::F32 => ParamKind::Scalar(Float::F32),
        TypeClass::F64 => ParamKind::Scalar(Float::F64),
        TypeClass::Static => ParamKind::Static,
        TypeClass::Auto => ParamKind::Auto,
        TypeClass::TreeRef => ParamKind::BorrowedTree,
        TypeClass::TreeMut(r) => {
            errors.at(
                join(&r.and_token, &r.mutability),
                format!(
                    "tensors are values: a `#[jit]` function cannot write through `&mut`; take `&{0}` \
                     (or `{0}` to donate its leaves) and return the new value instead",
                    classify::display(&r.elem)
                ),
            );
            return None;
        }
        TypeClass::TensorMut(r) => {
            errors.at(
                join(&r.and_token, &r.mutability),
                "tensors are values: a `#[jit]` function cannot write through `&mut Tensor`; \
                 take `&Tensor` (or `Tensor` to donate its buffer) and return the new tensor instead",
            );
            return None;
        }
        TypeClass::OtherRef(r) => {
            let elem = &r.elem;
            errors.at(
                ty,
                format!(
                    "static parameters are taken by value (they are part of the cache key): \
                     write `{}` instead of `{}`",
                    classify::display(elem),
                    classify::display(ty)
                ),
            );
            return None;
        }
        TypeClass::ImplTrait => {
            errors.at(
                ty,
                "`impl Trait` parameters are not supported by `#[jit]`: use `&Tensor`, `Tensor`, \
                 `f32`, `f64`, a concrete `Tree` (traced) or a concrete `Hash + Eq + Clone` type (static)",
            );
            return None;
        }
        TypeClass::NestedTensorRef => {
            errors.at(
                ty,
                "a tree parameter owns its tensors: write the type with `Tensor` in place of \
                 `&Tensor` and borrow the whole parameter (`&(Tensor, Tensor)`, `&Vec<Tensor>`) \
                 or take it by value to donate it",
            );
            return None;
        }
    })
}

fn return_type(sig: &Signature, errors: &mut Errors) -> Option<Type> {
    let ty = match &sig.output {
        ReturnType::Type(_, ty) => ty,
        ReturnType::Default => {
            let mut head = join(&sig.fn_token, &sig.ident);
            sig.paren_token
                .surround(&mut head, |ts| sig.inputs.to_tokens(ts));
            errors.at(
                head,
                "a `#[jit]` function returns its results: add `-> Tensor` \
                 (or a tree of tensors: `-> (Tensor, Tensor)`, a `#[derive(Tree)]` struct)",
            );
            return None;
        }
    };
    match classify::classify_return(ty) {
        ReturnClass::Ok => return Some((**ty).clone()),
        ReturnClass::TooMany(n) => errors.at(
            ty,
            format!(
                "a `#[jit]` function returns a tuple of at most {MAX_TUPLE} elements, this one has {n}: \
                 nest tuples or return a `#[derive(Tree)]` struct"
            ),
        ),
        ReturnClass::ImplTrait => errors.at(
            ty,
            "a `#[jit]` function returns a concrete tree of tensors (`Tensor`, a tuple of tensors, \
             a `#[derive(Tree)]` struct), not `impl Trait`",
        ),
    }
    None
}
