//! The `#[jit]` attribute and `#[derive(Tree)]` of jitfuse.
//!
//! Like serde_derive, the macro works in three steps:
//! 1. [`parse`] reads the item into the macro's own [`model`], checking every
//!    part and collecting *all* errors (each a `syn::Error` at the offending
//!    tokens, saying what to write instead); the body's `if`/`while`/`for`
//!    are rewritten into staged calls here ([`control`]), reporting what
//!    cannot be staged;
//! 2. on errors, the original item is emitted unchanged next to the
//!    `compile_error!`s, so IDEs and the rest of the crate keep working
//!    (errors in the body only, with a sound signature, are emitted next to
//!    the generated code instead: see `JitFn::body_errors`);
//! 3. otherwise [`generate`] writes the staged body, the plain wrapper and the
//!    companion (`f::try_call`, `f::lower`, ...), using absolute paths only (`::jitfuse::...`).

mod assigned;
mod bindings;
mod classify;
mod control;
mod escapes;
mod generate;
mod model;
mod parse;
mod tree;

use proc_macro::TokenStream;

/// Stage a function of tensors: on the first call for each input signature
/// its body is traced, compiled and cached; see the `jitfuse` crate docs.
#[proc_macro_attribute]
pub fn jit(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    match parse::parse(attr.into(), item.clone()) {
        Ok(func) => {
            let errors = func.body_errors.as_ref().map(syn::Error::to_compile_error);
            let generated = generate::generate(&func);
            quote::quote!(#errors #generated).into()
        }
        Err(err) => {
            let errors = err.to_compile_error();
            quote::quote!(#errors #item).into()
        }
    }
}

/// Implement `jitfuse::Tree` for a struct whose fields are all trees
/// (`Tensor`, tuples, arrays, `Vec`, `Option` of trees, other derived
/// structs). Leaves are visited field by field, in declaration order; every
/// type parameter gets a `Tree` bound.
#[proc_macro_derive(Tree)]
pub fn derive_tree(input: TokenStream) -> TokenStream {
    match tree::derive(input.into()) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}
