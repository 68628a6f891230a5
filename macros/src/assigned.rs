//! Which variables declared outside an `if`/`while`/`for` it assigns: the
//! state that travels through the staged closures.
//!
//! A variable counts as assigned by `x = ..`, `x op= ..`, `x.f = ..`,
//! `x[i] = ..`, destructuring (`(x, y) = ..`), `&mut x` (or `&mut x.f`), and,
//! in a `while`, a method call on a variable declared `mut` (`v.push(..)`:
//! the macro cannot tell `&mut self` from `&self`; a `while` is staged into
//! two closures, its condition and its body, which could not both borrow
//! such a variable, so it travels in the state). Names declared inside (by
//! `let`, patterns, closure parameters) shadow the outer ones from their
//! declaration on.

use crate::bindings::{self, Binding};
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::visit::{self, Visit};
use syn::{Block, Expr, Ident};

/// What the enclosing scopes know of a name: `Some(mutable)` if declared
/// outside the construct.
pub type Outer<'a> = &'a dyn Fn(&Ident) -> Option<bool>;

pub struct Finder<'a> {
    outer: Outer<'a>,
    /// Count method calls on outer `mut` variables (for a `while`).
    receivers: bool,
    scopes: Vec<Vec<String>>,
    /// Assigned outer variables, in order of first assignment.
    pub found: Vec<Assignment>,
}

/// An outer variable and where it is first assigned.
pub struct Assignment {
    /// The user's token at that assignment (its span and hygiene).
    pub ident: Ident,
    /// The whole assignment, for errors.
    pub at: TokenStream,
}

impl<'a> Finder<'a> {
    /// `inner`: names bound by the construct itself (a `for` pattern).
    pub fn new(outer: Outer<'a>, inner: Vec<Binding>, receivers: bool) -> Finder<'a> {
        Finder {
            outer,
            receivers,
            scopes: vec![inner.into_iter().map(|b| b.ident.to_string()).collect()],
            found: Vec::new(),
        }
    }

    fn declared_inside(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| s.iter().any(|n| n == name))
    }

    fn declare(&mut self, bs: Vec<Binding>) {
        let top = self.scopes.last_mut().expect("a scope");
        top.extend(bs.into_iter().map(|b| b.ident.to_string()));
    }

    fn record(&mut self, ident: &Ident, at: &dyn ToTokens) {
        let name = ident.to_string();
        if self.declared_inside(&name) || self.found.iter().any(|f| f.ident == name) {
            return;
        }
        if (self.outer)(ident).is_some() {
            self.found.push(Assignment {
                ident: ident.clone(),
                at: at.to_token_stream(),
            });
        }
    }

    /// The targets of an assignment's left-hand side.
    fn targets(&mut self, lhs: &Expr, at: &dyn ToTokens) {
        match lhs {
            Expr::Tuple(t) => t.elems.iter().for_each(|e| self.targets(e, at)),
            Expr::Array(a) => a.elems.iter().for_each(|e| self.targets(e, at)),
            Expr::Paren(p) => self.targets(&p.expr, at),
            Expr::Struct(s) => s.fields.iter().for_each(|f| self.targets(&f.expr, at)),
            Expr::Call(c) => c.args.iter().for_each(|e| self.targets(e, at)),
            e => {
                if let Some(root) = place_root(e) {
                    self.record(&root, at);
                }
            }
        }
    }
}

/// The variable a place expression starts from: `x`, `x.f.g`, `x[i]`, `x.0`
/// (not through a dereference: writing through a reference does not rebind).
pub fn place_root(e: &Expr) -> Option<Ident> {
    match e {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
        Expr::Field(f) => place_root(&f.base),
        Expr::Index(i) => place_root(&i.expr),
        Expr::Paren(p) => place_root(&p.expr),
        _ => None,
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_block(&mut self, b: &'ast Block) {
        self.scopes.push(Vec::new());
        visit::visit_block(self, b);
        self.scopes.pop();
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        if let Some(init) = &l.init {
            self.visit_expr(&init.expr);
            if let Some((_, diverge)) = &init.diverge {
                self.visit_expr(diverge);
            }
        }
        self.declare(bindings::of(&l.pat));
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        self.scopes.push(
            c.inputs
                .iter()
                .flat_map(bindings::of)
                .map(|b| b.ident.to_string())
                .collect(),
        );
        self.visit_expr(&c.body);
        self.scopes.pop();
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        self.visit_expr(&f.expr);
        self.scopes.push(Vec::new());
        self.declare(bindings::of(&f.pat));
        self.visit_block(&f.body);
        self.scopes.pop();
    }

    fn visit_arm(&mut self, a: &'ast syn::Arm) {
        self.scopes.push(Vec::new());
        self.declare(bindings::of(&a.pat));
        if let Some((_, g)) = &a.guard {
            self.visit_expr(g);
        }
        self.visit_expr(&a.body);
        self.scopes.pop();
    }

    fn visit_expr_if(&mut self, i: &'ast syn::ExprIf) {
        match &*i.cond {
            Expr::Let(l) => {
                self.visit_expr(&l.expr);
                self.scopes.push(Vec::new());
                self.declare(bindings::of(&l.pat));
                self.visit_block(&i.then_branch);
                self.scopes.pop();
            }
            c => {
                self.visit_expr(c);
                self.visit_block(&i.then_branch);
            }
        }
        if let Some((_, e)) = &i.else_branch {
            self.visit_expr(e);
        }
    }

    fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
        match &*w.cond {
            Expr::Let(l) => {
                self.visit_expr(&l.expr);
                self.scopes.push(Vec::new());
                self.declare(bindings::of(&l.pat));
                self.visit_block(&w.body);
                self.scopes.pop();
            }
            c => {
                self.visit_expr(c);
                self.visit_block(&w.body);
            }
        }
    }

    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        self.targets(&a.left, a);
        // Index expressions and the right-hand side may assign too.
        visit::visit_expr_assign(self, a);
    }

    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        use syn::BinOp::*;
        if matches!(
            b.op,
            AddAssign(_)
                | SubAssign(_)
                | MulAssign(_)
                | DivAssign(_)
                | RemAssign(_)
                | BitXorAssign(_)
                | BitAndAssign(_)
                | BitOrAssign(_)
                | ShlAssign(_)
                | ShrAssign(_)
        ) {
            if let Some(root) = place_root(&b.left) {
                self.record(&root, b);
            }
        }
        visit::visit_expr_binary(self, b);
    }

    fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
        if r.mutability.is_some() {
            if let Some(root) = place_root(&r.expr) {
                self.record(&root, r);
            }
        }
        visit::visit_expr_reference(self, r);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if let Some(root) = place_root(&m.receiver).filter(|_| self.receivers) {
            let name = root.to_string();
            if !self.declared_inside(&name) && (self.outer)(&root) == Some(true) {
                self.record(&root, m);
            }
        }
        visit::visit_expr_method_call(self, m);
    }

    // Nested items are not part of the construct.
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}
