//! The names a pattern binds (`let`, closure parameters, `for` patterns,
//! match arms), for the scopes of the control-flow rewriting.

use syn::{Ident, Pat};

/// A name a pattern binds, and whether it is bound `mut`.
pub struct Binding {
    pub ident: Ident,
    pub mutable: bool,
}

/// Every name `pat` binds, in order. A lone identifier could also be a unit
/// struct or a constant (`None`); treating it as a binding is harmless: the
/// rewriting only asks whether an *assigned* name was declared.
pub fn of(pat: &Pat) -> Vec<Binding> {
    let mut out = Vec::new();
    collect(pat, &mut out);
    out
}

fn collect(pat: &Pat, out: &mut Vec<Binding>) {
    match pat {
        Pat::Ident(p) => {
            out.push(Binding {
                ident: p.ident.clone(),
                mutable: p.mutability.is_some(),
            });
            if let Some((_, sub)) = &p.subpat {
                collect(sub, out);
            }
        }
        Pat::Or(p) => {
            // Every alternative binds the same names.
            if let Some(first) = p.cases.first() {
                collect(first, out);
            }
        }
        Pat::Paren(p) => collect(&p.pat, out),
        Pat::Reference(p) => collect(&p.pat, out),
        Pat::Slice(p) => p.elems.iter().for_each(|p| collect(p, out)),
        Pat::Struct(p) => p.fields.iter().for_each(|f| collect(&f.pat, out)),
        Pat::Tuple(p) => p.elems.iter().for_each(|p| collect(p, out)),
        Pat::TupleStruct(p) => p.elems.iter().for_each(|p| collect(p, out)),
        Pat::Type(p) => collect(&p.pat, out),
        _ => {}
    }
}
