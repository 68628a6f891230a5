//! Whether a construct's code leaves it other than by finishing: `return`,
//! `?`, `.await`, `yield`, or a `break`/`continue` whose target is the
//! construct itself or lies outside it. Such an `if`/`while`/`for` cannot be
//! staged into closures; the macro keeps it as plain Rust.

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::Lifetime;

#[derive(Default)]
pub struct Finder {
    /// Labels of the loops inside the construct enclosing the current
    /// point (`None` for an unlabelled loop); labelled blocks too.
    loops: Vec<(Option<String>, bool)>,
    /// Whether a way out was found.
    pub found: bool,
}

impl Finder {
    fn found(&mut self) {
        self.found = true;
    }

    /// Whether a `break`/`continue` with this label targets something inside.
    fn inside(&self, label: Option<&Lifetime>, is_continue: bool) -> bool {
        match label {
            None => self.loops.iter().any(|(_, is_loop)| *is_loop),
            Some(l) => {
                let name = l.ident.to_string();
                self.loops.iter().any(|(label, is_loop)| {
                    label.as_deref() == Some(name.as_str()) && (*is_loop || !is_continue)
                })
            }
        }
    }

    fn in_loop(&mut self, label: Option<&syn::Label>, f: impl FnOnce(&mut Self)) {
        self.loops
            .push((label.map(|l| l.name.ident.to_string()), true));
        f(self);
        self.loops.pop();
    }

    /// Macro arguments are only tokens: look for the keywords.
    fn tokens(&mut self, ts: TokenStream) {
        for t in ts {
            match &t {
                TokenTree::Ident(i) if i == "return" => self.found(),
                TokenTree::Ident(i)
                    if (i == "break" || i == "continue") && self.loops.is_empty() =>
                {
                    self.found()
                }
                TokenTree::Punct(p) if p.as_char() == '?' => self.found(),
                TokenTree::Group(g) => self.tokens(g.stream()),
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
        self.found();
    }

    fn visit_expr_try(&mut self, t: &'ast syn::ExprTry) {
        self.found();
        visit::visit_expr_try(self, t);
    }

    fn visit_expr_await(&mut self, a: &'ast syn::ExprAwait) {
        self.found();
        visit::visit_expr_await(self, a);
    }

    fn visit_expr_yield(&mut self, _: &'ast syn::ExprYield) {
        self.found();
    }

    fn visit_expr_break(&mut self, b: &'ast syn::ExprBreak) {
        if !self.inside(b.label.as_ref(), false) {
            self.found();
        }
        visit::visit_expr_break(self, b);
    }

    fn visit_expr_continue(&mut self, c: &'ast syn::ExprContinue) {
        if !self.inside(c.label.as_ref(), true) {
            self.found();
        }
    }

    fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
        self.in_loop(l.label.as_ref(), |s| s.visit_block(&l.body));
    }

    fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
        self.in_loop(w.label.as_ref(), |s| {
            s.visit_expr(&w.cond);
            s.visit_block(&w.body)
        });
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        self.visit_expr(&f.expr);
        self.in_loop(f.label.as_ref(), |s| s.visit_block(&f.body));
    }

    fn visit_expr_block(&mut self, b: &'ast syn::ExprBlock) {
        match &b.label {
            Some(l) => {
                self.loops.push((Some(l.name.ident.to_string()), false));
                self.visit_block(&b.block);
                self.loops.pop();
            }
            None => self.visit_block(&b.block),
        }
    }

    fn visit_expr_macro(&mut self, m: &'ast syn::ExprMacro) {
        self.tokens(m.mac.tokens.clone());
    }

    fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
        self.tokens(m.mac.tokens.clone());
    }

    // A closure's `return`/`?` leave the closure only; `break` cannot cross it.
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    fn visit_expr_const(&mut self, _: &'ast syn::ExprConst) {}
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}
