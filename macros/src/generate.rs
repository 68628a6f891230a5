//! [`JitFn`] → the staged body, the plain wrapper and the companion.
//!
//! A free function `f`:
//! ```text
//! fn __jitfuse_body_f(..)        the user's (staged) body, in the user's scope
//! VIS fn f(..) -> R              the plain call: panics on error
//! VIS struct f {}               the companion, in the type namespace:
//! impl f { try_call, lower, cache_stats, clear_cache, set_memory_budget }
//! ```
//! A method `m` (a receiver `&self`/`self`; a struct cannot be declared in
//! an `impl` block, so everything is an associated item next to it):
//! ```text
//! fn __jitfuse_body_m(&self, ..)            the staged body
//! VIS fn m(&self, ..) -> R                  the plain call
//! VIS fn m_try_call / m_lower(&self, ..)    the companion, by name
//! VIS fn m_cache_stats / m_clear_cache / m_set_memory_budget()
//! fn __jitfuse_cache_m, __jitfuse_with_args_m   (hidden)
//! ```
//! Generated names start with `__jitfuse_`, so no user parameter clashes with
//! them; paths are absolute.

use crate::model::{Float, JitFn, Param, ParamKind, Receiver};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, Ident};

pub fn generate(f: &JitFn) -> TokenStream {
    match &f.receiver {
        None => {
            let items = Items::free(f);
            let body_fn = body_fn(f, &items);
            let wrapper = wrapper(f, &items);
            let companion = companion(f, &items);
            quote!(#body_fn #wrapper #companion)
        }
        Some(r) => method(f, r),
    }
}

/// The names of the generated items and how the generated code reaches them.
struct Items {
    body: Ident,
    /// `f` (a function) or `Self::__jitfuse_body_m` (an associated one).
    body_path: TokenStream,
    with_args: Ident,
    cache: Ident,
    /// `f::try_call` / `Self::m_try_call`.
    try_call_path: TokenStream,
}

impl Items {
    fn free(f: &JitFn) -> Items {
        let body = format_ident!("__jitfuse_body_{}", f.name);
        let name = &f.name;
        Items {
            body_path: quote!(#body),
            body,
            with_args: format_ident!("__jitfuse_with_args"),
            cache: format_ident!("__jitfuse_cache"),
            try_call_path: quote!(#name::try_call),
        }
    }

    fn method(f: &JitFn) -> Items {
        let body = format_ident!("__jitfuse_body_{}", f.name);
        let try_call = companion_ident(f, "try_call");
        Items {
            body_path: quote!(Self::#body),
            body,
            with_args: format_ident!("__jitfuse_with_args_{}", f.name),
            cache: format_ident!("__jitfuse_cache_{}", f.name),
            try_call_path: quote!(Self::#try_call),
        }
    }
}

/// `m_try_call` for a method `m`, spanned at the user's name.
fn companion_ident(f: &JitFn, what: &str) -> Ident {
    format_ident!("{}_{}", f.name.unraw(), what, span = f.name.span())
}

fn attr_is(attr: &Attribute, names: &[&str]) -> bool {
    names.iter().any(|n| attr.path().is_ident(n))
}

const CFG: &[&str] = &["cfg", "cfg_attr"];
/// Lint levels that never complain about themselves (unlike `expect`).
const LINTS: &[&str] = &["allow", "warn", "deny", "forbid"];

/// The receiver as written in a signature: `&self` / `self` (with `mut`
/// only where the body binds it).
fn receiver_tokens(r: Option<&Receiver>, with_mut: bool) -> Option<TokenStream> {
    r.map(|r| {
        let s = &r.self_token;
        if r.by_ref {
            quote!(&#s)
        } else if with_mut {
            let m = &r.mutability;
            quote!(#m #s)
        } else {
            quote!(#s)
        }
    })
}

/// The user's body in the user's scope, so every name resolves as written.
/// A traced scalar parameter is a `&Tensor` here.
fn body_fn(f: &JitFn, items: &Items) -> TokenStream {
    let ident = &items.body;
    let recv = receiver_tokens(f.receiver.as_ref(), true).map(|r| quote!(#r,));
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
        fn #ident(#recv #(#params),*) -> #ret #body
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
fn wrapper(f: &JitFn, items: &Items) -> TokenStream {
    let attrs = f
        .attrs
        .iter()
        .filter(|a| !a.path().is_ident("track_caller"));
    let (vis, name, ret) = (&f.vis, &f.name, &f.ret);
    let params = signature_params(&f.params);
    let args = names(&f.params);
    let recv = receiver_tokens(f.receiver.as_ref(), false).map(|r| quote!(#r,));
    let self_arg = f.receiver.as_ref().map(|r| {
        let s = &r.self_token;
        quote!(#s,)
    });
    let try_call = &items.try_call_path;
    quote! {
        #(#attrs)*
        #[track_caller]
        #vis fn #name(#recv #(#params),*) -> #ret {
            match #try_call(#self_arg #(#args),*) {
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
fn companion(f: &JitFn, items: &Items) -> TokenStream {
    let cfgs: Vec<&Attribute> = f.attrs.iter().filter(|a| attr_is(a, CFG)).collect();
    let docs = f.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let (vis, name, ret) = (&f.vis, &f.name, &f.ret);
    let name_str = name.unraw().to_string();
    let params = signature_params(&f.params);
    let args = names(&f.params);
    let collect = collect_args(f, items);
    let rebuild = quote_spanned!(ret.span()=> ::jitfuse::__private::rebuild_output::<#ret>);
    let budget = budget_tokens(f);
    let param_names = param_names(f);
    quote! {
        #(#cfgs)*
        #(#docs)*
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name {}

        #(#cfgs)*
        #[allow(dead_code)]
        impl #name {
            fn __jitfuse_cache() -> &'static ::jitfuse::__private::FnCache {
                static __JITFUSE_CACHE: ::jitfuse::__private::FnCache = ::jitfuse::__private::FnCache::with_memory_budget(#name_str, #budget)
                    .with_param_names(&[#(#param_names),*]);
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

            /// Trace the body for these arguments without running it. Tracing
            /// alone does not touch the cache; the result's `compile()` does: it
            /// compiles into the function's cache (or takes the program cached
            /// there), so a later call with the same signature is a hit and does
            /// not compile again.
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

            /// Bound this function's cache in bytes of generated code plus
            /// arena (least recently used programs are evicted), or remove
            /// the bound.
            pub fn set_cache_limit(bytes: ::core::option::Option<usize>) {
                Self::__jitfuse_cache().set_cache_limit(bytes)
            }

            /// Warn once this function has compiled more than `n` signatures
            /// (`None`: never); the default is `JITFUSE_RECOMPILE_WARN` or 8.
            pub fn set_recompile_warning(n: ::core::option::Option<usize>) {
                Self::__jitfuse_cache().set_recompile_warning(n)
            }
        }
    }
}

/// The `Option<usize>` budget of the cache (`"auto"`: the runtime's constant).
fn budget_tokens(f: &JitFn) -> TokenStream {
    match f.memory_budget {
        Some(crate::parse::AUTO_BUDGET) => {
            quote!(::core::option::Option::Some(::jitfuse::AUTO_MEMORY_BUDGET))
        }
        Some(b) => quote!(::core::option::Option::Some(#b as usize)),
        None => quote!(::core::option::Option::None),
    }
}

/// Parameter names as written (raw identifiers without `r#`), for the
/// cache's diagnostics.
fn param_names(f: &JitFn) -> Vec<String> {
    f.params
        .iter()
        .map(|p| p.name.unraw().to_string())
        .collect()
}

/// A method: the staged body, the plain call and the companion functions,
/// all associated items of the user's `impl` block.
fn method(f: &JitFn, r: &Receiver) -> TokenStream {
    let items = Items::method(f);
    let body_fn = body_fn(f, &items);
    let wrapper = wrapper(f, &items);
    let cfgs: Vec<&Attribute> = f.attrs.iter().filter(|a| attr_is(a, CFG)).collect();
    let (vis, name, ret) = (&f.vis, &f.name, &f.ret);
    let name_str = name.unraw().to_string();
    let params = signature_params(&f.params);
    let args = names(&f.params);
    let recv = receiver_tokens(Some(r), false);
    let s = &r.self_token;
    let collect = collect_args(f, &items);
    let rebuild = quote_spanned!(ret.span()=> ::jitfuse::__private::rebuild_output::<#ret>);
    let budget = budget_tokens(f);
    let (cache, with_args) = (&items.cache, &items.with_args);
    let try_call = companion_ident(f, "try_call");
    let lower = companion_ident(f, "lower");
    let cache_stats = companion_ident(f, "cache_stats");
    let clear_cache = companion_ident(f, "clear_cache");
    let set_memory_budget = companion_ident(f, "set_memory_budget");
    let set_cache_limit = companion_ident(f, "set_cache_limit");
    let set_recompile_warning = companion_ident(f, "set_recompile_warning");
    let param_names = param_names(f);
    let doc = |what: &str| format!("`{name_str}`: {what}");
    let d_limit = doc("bound this method's cache in bytes of generated code plus arena (LRU eviction), or remove the bound.");
    let d_warn =
        doc("warn once this method has compiled more than `n` signatures (`None`: never).");
    let (d_try, d_lower, d_stats, d_clear, d_budget) = (
        doc("call the method; a shape or dtype mismatch in its body, or a bad argument, is returned as `Err` instead of panicking."),
        doc("trace the body for these arguments without running it. Tracing alone does not touch the cache; the result's `compile()` compiles into the method's cache (or takes the program cached there), so a later call with the same signature is a hit and does not compile again."),
        doc("hits, misses and cached signatures of this method (one cache for all receivers)."),
        doc("drop this method's compiled programs: the next call recompiles."),
        doc("set (or remove) the peak-memory budget in bytes. Clears the cache."),
    );
    quote! {
        #body_fn
        #wrapper

        #(#cfgs)*
        #[doc(hidden)]
        #[allow(dead_code)]
        fn #cache() -> &'static ::jitfuse::__private::FnCache {
            static __JITFUSE_CACHE: ::jitfuse::__private::FnCache = ::jitfuse::__private::FnCache::with_memory_budget(#name_str, #budget)
                .with_param_names(&["self", #(#param_names),*]);
            &__JITFUSE_CACHE
        }

        #(#cfgs)*
        #[doc(hidden)]
        #[allow(dead_code)]
        #collect

        #(#cfgs)*
        #[doc = #d_try]
        #[allow(dead_code)]
        #vis fn #try_call(#recv, #(#params),*) -> ::core::result::Result<#ret, ::jitfuse::Error> {
            let (__jitfuse_outputs, __jitfuse_structure) = Self::#with_args(#s, #(#args,)* |__jitfuse_args, __jitfuse_body| {
                Self::#cache().call(__jitfuse_args, __jitfuse_body)
            })?;
            #rebuild(&__jitfuse_structure, __jitfuse_outputs)
        }

        #(#cfgs)*
        #[doc = #d_lower]
        #[allow(dead_code)]
        #vis fn #lower(#recv, #(#params),*) -> ::core::result::Result<::jitfuse::Lowered, ::jitfuse::Error> {
            Self::#with_args(#s, #(#args,)* |__jitfuse_args, __jitfuse_body| {
                Self::#cache().lower(__jitfuse_args, __jitfuse_body)
            })
        }

        #(#cfgs)*
        #[doc = #d_stats]
        #[allow(dead_code)]
        #vis fn #cache_stats() -> ::jitfuse::CacheStats {
            Self::#cache().stats()
        }

        #(#cfgs)*
        #[doc = #d_clear]
        #[allow(dead_code)]
        #vis fn #clear_cache() {
            Self::#cache().clear()
        }

        #(#cfgs)*
        #[doc = #d_budget]
        #[allow(dead_code)]
        #vis fn #set_memory_budget(bytes: ::core::option::Option<usize>) {
            Self::#cache().set_memory_budget(bytes)
        }

        #(#cfgs)*
        #[doc = #d_limit]
        #[allow(dead_code)]
        #vis fn #set_cache_limit(bytes: ::core::option::Option<usize>) {
            Self::#cache().set_cache_limit(bytes)
        }

        #(#cfgs)*
        #[doc = #d_warn]
        #[allow(dead_code)]
        #vis fn #set_recompile_warning(n: ::core::option::Option<usize>) {
            Self::#cache().set_recompile_warning(n)
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
fn collect_args(f: &JitFn, items: &Items) -> TokenStream {
    let params = signature_params(&f.params);
    let body = &items.body_path;
    let with_args = &items.with_args;
    let mut checks = Vec::new();
    let mut pushes = Vec::new();
    let mut body_args = Vec::new();
    let recv = receiver_tokens(f.receiver.as_ref(), false).map(|r| quote!(#r,));
    if let Some(r) = &f.receiver {
        // `Self` as an `Auto` parameter (tree or static, the compiler
        // decides); `&self` is collected without being moved.
        let s = &r.self_token;
        let span = s.span;
        let at = format_ident!("__jitfuse_at_self");
        let collect = if r.by_ref {
            quote_spanned!(span=> collect_ref)
        } else {
            quote_spanned!(span=> collect)
        };
        pushes.push(quote_spanned! {span=>
            let #at = {
                #[allow(unused_imports)]
                use ::jitfuse::__private::{ViaStatic as _, ViaTree as _};
                (&&::jitfuse::__private::Probe::<Self>::new())
                    .__jitfuse_kind()
                    .#collect(#s, &mut __jitfuse_args)
            };
        });
        body_args.push(if r.by_ref {
            quote!(&#at.value(__jitfuse_ts))
        } else {
            quote!(#at.value(__jitfuse_ts))
        });
    }
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
        fn #with_args<__JitfuseR>(
            #recv
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
