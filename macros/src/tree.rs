//! `#[derive(Tree)]`: a struct whose fields are all trees is a tree; its
//! leaves are its fields' leaves, fields in declaration order, each named by
//! its field (`Tree::collect_names`: `field.inner`, a tuple struct's fields
//! by position).
//!
//! Every type parameter gets a `::jitfuse::Tree` bound (as serde adds
//! `Serialize` bounds). A field whose type is not a tree is reported at the
//! field's type, by the compiler: each use of the field is spanned there and
//! names `<FieldType as ::jitfuse::Tree>`, whose `on_unimplemented` text says
//! what a tree is.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{parse_quote, Data, DeriveInput, Fields, Index, Member};

pub fn derive(input: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(input)?;
    let fields = match &input.data {
        Data::Struct(s) => &s.fields,
        Data::Enum(e) => {
            let mut head = e.enum_token.to_token_stream();
            input.ident.to_tokens(&mut head);
            return Err(syn::Error::new_spanned(
                head,
                "`#[derive(Tree)]` applies to structs: an enum's leaves would depend on its variant, \
                 which a traced program cannot; use a struct (with `Option` fields for parts that may \
                 be absent), or keep the enum as a static parameter",
            ));
        }
        Data::Union(u) => {
            let mut head = u.union_token.to_token_stream();
            input.ident.to_tokens(&mut head);
            return Err(syn::Error::new_spanned(
                head,
                "`#[derive(Tree)]` applies to structs, not unions: use a struct of tensors",
            ));
        }
    };
    let members: Vec<Member> = match fields {
        Fields::Named(f) => f
            .named
            .iter()
            .map(|f| Member::Named(f.ident.clone().expect("named")))
            .collect(),
        Fields::Unnamed(f) => (0..f.unnamed.len())
            .map(|i| Member::Unnamed(Index::from(i)))
            .collect(),
        Fields::Unit => Vec::new(),
    };
    let types: Vec<&syn::Type> = fields.iter().map(|f| &f.ty).collect();

    let mut generics = input.generics.clone();
    for p in generics.type_params_mut() {
        p.bounds.push(parse_quote!(::jitfuse::Tree));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let name = &input.ident;

    let mut collect = Vec::new();
    let mut structure = Vec::new();
    let mut rebuild = Vec::new();
    let mut names = Vec::new();
    for (m, ty) in members.iter().zip(&types) {
        let part = match m {
            Member::Named(id) => id.unraw().to_string(),
            Member::Unnamed(i) => i.index.to_string(),
        };
        names.push(
            quote_spanned!(ty.span()=> <#ty as ::jitfuse::Tree>::collect_names(
            &self.#m,
            &::jitfuse::__private::join_path(__jitfuse_path, #part),
            __jitfuse_out,
        );),
        );
        let span = ty.span();
        collect.push(quote_spanned!(span=> <#ty as ::jitfuse::Tree>::collect_leaves(&self.#m, __jitfuse_out);));
        structure.push(
            quote_spanned!(span=> <#ty as ::jitfuse::Tree>::structure(&self.#m, __jitfuse_out);),
        );
        rebuild.push(quote_spanned!(span=> #m: <#ty as ::jitfuse::Tree>::rebuild(&self.#m, __jitfuse_leaves),));
    }
    Ok(quote! {
        #[automatically_derived]
        impl #impl_generics ::jitfuse::Tree for #name #ty_generics #where_clause {
            fn collect_leaves(&self, __jitfuse_out: &mut ::std::vec::Vec<::jitfuse::Tensor>) {
                #(#collect)*
            }

            fn rebuild(
                &self,
                __jitfuse_leaves: &mut dyn ::core::iter::Iterator<Item = ::jitfuse::Tensor>,
            ) -> Self {
                Self { #(#rebuild)* }
            }

            fn structure(&self, __jitfuse_out: &mut ::std::vec::Vec<usize>) {
                #(#structure)*
            }

            fn collect_names(
                &self,
                __jitfuse_path: &str,
                __jitfuse_out: &mut ::std::vec::Vec<::std::string::String>,
            ) {
                let _ = (&__jitfuse_path, &__jitfuse_out);
                #(#names)*
            }
        }
    })
}
