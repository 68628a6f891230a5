//! [`JitFn`] → the staged body, the plain wrapper and the companion.
//!
//! ```text
//! fn __jitfuse_body_f(..)        the user's body, in the user's scope
//! VIS fn f(..) -> R              the plain call: panics on error
//! VIS struct f {}               the companion, in the type namespace:
//! impl f { try_call, lower, cache_stats, clear_cache }
//! ```
//! Generated names start with `__jitfuse_`, so no user parameter clashes with
//! them; paths are absolute.

use crate::model::{Float, JitFn, Param, ParamKind};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, Ident};

pub fn generate(f: &JitFn) -> TokenStream {
    let body_fn = body_fn(f);
    let wrapper = wrapper(f);
    let companion = companion(f);
    quote!(#body_fn #wrapper #companion)
}

fn body_ident(f: &JitFn) -> Ident {
    format_ident!("__jitfuse_body_{}", f.name)
}

fn attr_is(attr: &Attribute, names: &[&str]) -> bool {
    names.iter().any(|n| attr.path().is_ident(n))
}

const CFG: &[&str] = &["cfg", "cfg_attr"];
/// Lint levels that never complain about themselves (unlike `expect`).
const LINTS: &[&str] = &["allow", "warn", "deny", "forbid"];

/// The user's body in the user's scope, so every name resolves as written.
/// A traced scalar parameter is a `&Tensor` here.
fn body_fn(f: &JitFn) -> TokenStream {
    let ident = body_ident(f);
    let attrs = f
        .attrs
        .iter()
        .filter(|a| attr_is(a, CFG) || attr_is(a, LINTS));
    let params = f.params.iter().map(|p| {
        let (m, name) = (&p.mutability, &p.name);
        match p.kind {
            ParamKind::Scalar(_) => quote!(#m #name: &::jitfuse::Tensor),
            _ => {
                let ty = &p.ty;
                quote!(#m #name: #ty)
            }
        }
    });
    let (ret, body) = (&f.ret, &f.body);
    quote! {
        #(#attrs)*
        #[doc(hidden)]
        #[allow(non_snake_case, dead_code, clippy::all)]
        fn #ident(#(#params),*) -> #ret #body
    }
}

/// `name: Type` for the signatures of the wrapper and the companion's
/// functions (no `mut`: these only pass the value on).
fn signature_params(params: &[Param]) -> Vec<TokenStream> {
    params
        .iter()
        .map(|p| {
            let (name, ty) = (&p.name, &p.ty);
            quote!(#name: #ty)
        })
        .collect()
}

fn names(params: &[Param]) -> Vec<&Ident> {
    params.iter().map(|p| &p.name).collect()
}

/// The plain call, with the user's attributes: panics with the message
/// `try_call` returns as `Err`, at the caller's location.
fn wrapper(f: &JitFn) -> TokenStream {
    let attrs = f
        .attrs
        .iter()
        .filter(|a| !a.path().is_ident("track_caller"));
    let (vis, name, ret) = (&f.vis, &f.name, &f.ret);
    let params = signature_params(&f.params);
    let args = names(&f.params);
    quote! {
        #(#attrs)*
        #[track_caller]
        #vis fn #name(#(#params),*) -> #ret {
            match #name::try_call(#(#args),*) {
                ::core::result::Result::Ok(__jitfuse_value) => __jitfuse_value,
                ::core::result::Result::Err(__jitfuse_error) => ::jitfuse::__private::fail(__jitfuse_error),
            }
        }
    }
}

/// The companion: `f::try_call`, `f::lower`, `f::cache_stats`,
/// `f::clear_cache`, sharing one cache.
///
/// It is a braced struct with inherent associated functions, not a `mod`:
/// a struct `f {}` lives in the type namespace only (next to the function
/// `f`), and its `impl` sits in the user's scope, so the signature's types
/// resolve as written even when that scope is a block (a `#[jit]` function
/// inside `fn main`, as in every doctest), which `mod f { use super::*; }`
/// cannot see.
fn companion(f: &JitFn) -> TokenStream {
    let cfgs: Vec<&Attribute> = f.attrs.iter().filter(|a| attr_is(a, CFG)).collect();
    let docs = f.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let (vis, name, ret) = (&f.vis, &f.name, &f.ret);
    let name_str = name.unraw().to_string();
    let params = signature_params(&f.params);
    let args = names(&f.params);
    let collect = collect_args(f);
    let rebuild = quote_spanned!(ret.span()=> ::jitfuse::__private::rebuild_output::<#ret>);
    let budget = match f.memory_budget {
        Some(b) => quote!(::core::option::Option::Some(#b as usize)),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        #(#cfgs)*
        #(#docs)*
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name {}

        #(#cfgs)*
        #[allow(dead_code)]
        impl #name {
            fn __jitfuse_cache() -> &'static ::jitfuse::__private::FnCache {
                static __JITFUSE_CACHE: ::jitfuse::__private::FnCache = ::jitfuse::__private::FnCache::with_memory_budget(#name_str, #budget);
                &__JITFUSE_CACHE
            }

            #collect

            /// Call the function; a shape or dtype mismatch in its body, or a
            /// bad argument, is returned as `Err` instead of panicking.
            pub fn try_call(#(#params),*) -> ::core::result::Result<#ret, ::jitfuse::Error> {
                let (__jitfuse_outputs, __jitfuse_structure) = Self::__jitfuse_with_args(#(#args,)* |__jitfuse_args, __jitfuse_body| {
                    Self::__jitfuse_cache().call(__jitfuse_args, __jitfuse_body)
                })?;
                #rebuild(&__jitfuse_structure, __jitfuse_outputs)
            }

            /// Trace and compile for these arguments without running, keeping
            /// the text of every stage. Does not touch the cache.
            pub fn lower(#(#params),*) -> ::core::result::Result<::jitfuse::Lowered, ::jitfuse::Error> {
                Self::__jitfuse_with_args(#(#args,)* |__jitfuse_args, __jitfuse_body| {
                    Self::__jitfuse_cache().lower(__jitfuse_args, __jitfuse_body)
                })
            }

            /// Hits, misses and cached signatures of this function.
            pub fn cache_stats() -> ::jitfuse::CacheStats {
                Self::__jitfuse_cache().stats()
            }

            /// Drop this function's compiled programs: the next call recompiles.
            pub fn clear_cache() {
                Self::__jitfuse_cache().clear()
            }

            /// Set (or remove) the peak-memory budget in bytes: compiled
            /// programs recompute values until they fit, or the call fails
            /// saying by how much they miss. Clears the cache.
            pub fn set_memory_budget(bytes: ::core::option::Option<usize>) {
                Self::__jitfuse_cache().set_memory_budget(bytes)
            }
        }
    }
}

/// `__jitfuse_with_args(params.., k)`: collects the call's arguments and
/// hands them, with the staged body as a closure over the static arguments
/// and the trees' structures, to `k` (the cache's `call` or `lower`). One
/// place for both, so a bad parameter type is reported once.
///
/// Tree or static: a by-value parameter of a non-primitive type (`Mlp`,
/// `Vec<Tensor>`, `Act`) goes through `__private::Probe`, whose method
/// resolution (autoref specialisation on the concrete type) picks the tree
/// path when the type implements `Tree` and the static path otherwise; the
/// static path requires `StaticArg`. All of it is spanned at the parameter's
/// type, so a type that is neither is reported there, once (rustc drops a
/// repeated predicate at the same span).
fn collect_args(f: &JitFn) -> TokenStream {
    let params = signature_params(&f.params);
    let body = body_ident(f);
    let mut checks = Vec::new();
    let mut pushes = Vec::new();
    let mut body_args = Vec::new();
    for (i, p) in f.params.iter().enumerate() {
        let name = &p.name;
        let ty = &p.ty;
        let span = p.ty.span();
        // The parameter's first tensor among the traced arguments, or its slot.
        let at = format_ident!("__jitfuse_at_{}", i);
        if p.is_tensor() {
            pushes.push(quote!(let #at = __jitfuse_args.tensor_count();));
        }
        match p.kind {
            ParamKind::Borrowed => {
                pushes.push(quote!(__jitfuse_args.borrowed(#name);));
                body_args.push(quote!(&__jitfuse_ts[#at]));
            }
            ParamKind::Owned => {
                pushes.push(quote!(__jitfuse_args.owned(#name);));
                body_args.push(quote!(::core::clone::Clone::clone(&__jitfuse_ts[#at])));
            }
            ParamKind::Scalar(float) => {
                let method = match float {
                    Float::F32 => quote!(scalar_f32),
                    Float::F64 => quote!(scalar_f64),
                };
                pushes.push(quote!(__jitfuse_args.#method(#name);));
                body_args.push(quote!(&__jitfuse_ts[#at]));
            }
            ParamKind::Static => {
                // All spanned at the type: a type that is not `Hash + Eq +
                // ...` is reported there, with the runtime's on_unimplemented
                // text, and once.
                checks
                    .push(quote_spanned!(span=> ::jitfuse::__private::assert_static_arg::<#ty>();));
                pushes.push(quote_spanned!(span=> __jitfuse_args.static_arg::<#ty>(&#name);));
                body_args.push(quote_spanned!(span=> <#ty as ::core::clone::Clone>::clone(&#name)));
            }
            ParamKind::Auto => {
                pushes.push(quote_spanned! {span=>
                    let #at = {
                        #[allow(unused_imports)]
                        use ::jitfuse::__private::{ViaStatic as _, ViaTree as _};
                        (&&::jitfuse::__private::Probe::<#ty>::new())
                            .__jitfuse_kind()
                            .collect(#name, &mut __jitfuse_args)
                    };
                });
                body_args.push(quote!(#at.value(__jitfuse_ts)));
            }
            ParamKind::BorrowedTree => {
                let elem = match crate::classify::strip(ty) {
                    syn::Type::Reference(r) => &r.elem,
                    _ => unreachable!("classified as a reference"),
                };
                pushes.push(quote_spanned! {span=>
                    let #at = ::jitfuse::__private::borrowed_tree::<#elem>(#name, &mut __jitfuse_args);
                });
                body_args.push(quote!(&#at.value(__jitfuse_ts)));
            }
        }
    }
    let ret = &f.ret;
    let flatten = quote_spanned!(ret.span()=> ::jitfuse::__private::flatten_output::<#ret>);
    quote! {
        fn __jitfuse_with_args<__JitfuseR>(
            #(#params,)*
            __jitfuse_k: impl ::core::ops::FnOnce(
                ::jitfuse::__private::CallArgs<'_>,
                &dyn ::core::ops::Fn(&[::jitfuse::Tensor]) -> (
                    ::std::vec::Vec<::jitfuse::Tensor>,
                    ::jitfuse::__private::Structure,
                ),
            ) -> __JitfuseR,
        ) -> __JitfuseR {
            #(#checks)*
            let mut __jitfuse_args = ::jitfuse::__private::CallArgs::new();
            #(#pushes)*
            __jitfuse_k(__jitfuse_args, &|__jitfuse_ts: &[::jitfuse::Tensor]| {
                #flatten(#body(#(#body_args),*))
            })
        }
    }
}
