//! The rewriting of a jitted body's `if`, `while` and `for` into the calls of
//! `jitfuse::__private` that stage them (the forms are in the runtime's
//! `control/staging.rs`): the macro cannot see types, so every one of them
//! goes through a trait that runs plain Rust on a `bool` (or an ordinary
//! iterator, an integer range) and stages graph control flow on a traced
//! `Tensor`.
//!
//! ```text
//! if c { A } else { B }   =>  { let v; (v, a, x) = staged_if(&(c), &[..], (a,),
//!                                  |then, s| { let (mut a,) = s; let x; let v = if then { A } else { B }; (v, a, x) }); v }
//! while c { B }           =>  { (a,) = staged_while(&[..], (a,), |s| { let (a,) = s; let c = c; (c, (a,)) },
//!                                  |s| { let (mut a,) = s; let () = { B }; (a,) }); }
//! for p in it { B }       =>  { (a,) = staged_for(&[..], it, (a,), |p, s| { let (mut a,) = s; let () = { B }; (a,) }); }
//! for p in x..y { B }     =>  the same with staged_for_range
//! ```
//! The state (`a`) is every variable declared outside the construct that it
//! assigns (`assigned.rs`); a variable declared without a value (`let x;`)
//! and assigned in every branch of an `if` is one of its outputs (`x`).
//!
//! A construct that is left early (`escapes.rs`: `return`, `?`, a `break`
//! or `continue` to itself or beyond) stays plain Rust, its condition wrapped
//! in `static_if_cond`/`static_while_cond` (its iterable in `static_iter`):
//! a traced condition there is a compile error saying why. `if let`,
//! `while let`, `match` and `loop` stay plain Rust; the code inside all of
//! them (and inside closures, which are traced too) is rewritten.
//!
//! Generated locals are hygienic (`Span::mixed_site()`); the calls carry the
//! span of the user's keyword, so `#[track_caller]` locations and rustc's
//! errors land on the user's line.

use crate::assigned::{self, Assignment};
use crate::bindings::{self, Binding};
use crate::classify::MAX_TUPLE;
use crate::escapes;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr, Ident};

/// What the rewriting knows of a variable in scope.
struct Var {
    name: String,
    mutable: bool,
    /// Declared by `let x;` and not assigned yet (as far as syntax tells).
    uninit: bool,
}

pub struct Stager {
    scopes: Vec<Vec<Var>>,
    pub errors: Vec<syn::Error>,
}

/// Rewrite the body of a `#[jit]` function whose parameters are `params`
/// (name, declared `mut`); errors are collected, not returned early.
pub fn stage(body: &mut Block, params: Vec<(Ident, bool)>) -> Vec<syn::Error> {
    let mut s = Stager {
        scopes: vec![params
            .into_iter()
            .map(|(ident, mutable)| Var {
                name: ident.to_string(),
                mutable,
                uninit: false,
            })
            .collect()],
        errors: Vec::new(),
    };
    s.visit_block_mut(body);
    s.errors
}

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

/// A flat tuple of at most [`MAX_TUPLE`] elements, the rest nested in the
/// last one (the runtime's tuple impls stop at 12).
fn tuple(items: &[TokenStream]) -> TokenStream {
    if items.len() <= MAX_TUPLE {
        quote!((#(#items,)*))
    } else {
        let (head, rest) = items.split_at(MAX_TUPLE - 1);
        let nested = tuple(rest);
        quote!((#(#head,)* #nested,))
    }
}

/// The names of a [`tuple`]'s top-level elements, for the runtime's
/// messages (which quote each name): a nested group is `a`, `b`, `c`.
fn names(items: &[String]) -> TokenStream {
    let mut top: Vec<String> = items.to_vec();
    if items.len() > MAX_TUPLE {
        top.truncate(MAX_TUPLE - 1);
        top.push(items[MAX_TUPLE - 1..].join("`, `"));
    }
    quote!(&[#(#top),*])
}

fn is_let(e: &Expr) -> bool {
    matches!(e, Expr::Let(_))
}

/// Whether a branch ends by panicking, so that a variable it does not assign
/// is still definitely assigned after the `if`.
fn diverges(b: &Block) -> bool {
    const PANICS: &[&str] = &["panic", "unreachable", "todo", "unimplemented"];
    let is_panic = |m: &syn::Macro| {
        m.path
            .segments
            .last()
            .is_some_and(|s| PANICS.iter().any(|p| s.ident == p))
    };
    match b.stmts.last() {
        Some(syn::Stmt::Macro(m)) => is_panic(&m.mac),
        Some(syn::Stmt::Expr(Expr::Macro(m), _)) => is_panic(&m.mac),
        _ => false,
    }
}

impl Stager {
    fn lookup(&self, name: &str) -> Option<&Var> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|v| v.name == name)
    }

    fn declare(&mut self, bs: Vec<Binding>, uninit: bool) {
        let top = self.scopes.last_mut().expect("a scope");
        top.extend(bs.into_iter().map(|b| Var {
            name: b.ident.to_string(),
            mutable: b.mutable,
            uninit,
        }));
    }

    fn mark_assigned(&mut self, name: &str) {
        if let Some(v) = self
            .scopes
            .iter_mut()
            .rev()
            .flat_map(|s| s.iter_mut().rev())
            .find(|v| v.name == name)
        {
            v.uninit = false;
        }
    }

    /// Where the variables declared without a value are.
    fn uninit(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (i, s) in self.scopes.iter().enumerate() {
            for (j, v) in s.iter().enumerate() {
                if v.uninit {
                    out.push((i, j));
                }
            }
        }
        out
    }

    fn restore_uninit(&mut self, uninit: &[(usize, usize)]) {
        for &(i, j) in uninit {
            self.scopes[i][j].uninit = true;
        }
    }

    fn error(&mut self, tokens: impl ToTokens, msg: impl std::fmt::Display) {
        self.errors.push(syn::Error::new_spanned(tokens, msg));
    }

    /// The outer variables that `visit` (run on the construct's parts)
    /// finds assigned; `inner` are the names the construct binds itself.
    fn assigned(
        &self,
        inner: Vec<Binding>,
        receivers: bool,
        visit: impl FnOnce(&mut assigned::Finder),
    ) -> Vec<Assignment> {
        let outer = |id: &Ident| self.lookup(&id.to_string()).map(|v| v.mutable);
        let mut f = assigned::Finder::new(&outer, inner, receivers);
        visit(&mut f);
        f.found
    }

    fn is_uninit(&self, a: &Assignment) -> bool {
        self.lookup(&a.ident.to_string()).is_some_and(|v| v.uninit)
    }

    /// `self` cannot travel through the closures (it cannot be a closure
    /// parameter).
    fn check_self(&mut self, state: &[Assignment], what: &str) {
        for a in state.iter().filter(|a| a.ident == "self") {
            let msg = format!(
                "`self` is assigned (or mutated) inside this `{what}`, which #[jit] stages into closures: \
                 bind it to a variable first (`let mut this = self;`) and use that"
            );
            self.errors.push(syn::Error::new_spanned(&a.at, msg));
        }
    }

    fn stage_if(&mut self, e: &mut Expr) {
        let Expr::If(i) = e else { unreachable!() };
        let span = i.if_token.span;
        let mut esc = escapes::Finder::default();
        esc.visit_block(&i.then_branch);
        if let Some((_, e)) = &i.else_branch {
            esc.visit_expr(e);
        }
        let escape = esc.found;
        let all = self.assigned(Vec::new(), false, |f| {
            f.visit_block(&i.then_branch);
            if let Some((_, e)) = &i.else_branch {
                f.visit_expr(e);
            }
        });
        let (outputs, state): (Vec<Assignment>, Vec<Assignment>) =
            all.into_iter().partition(|a| self.is_uninit(a));
        if !escape {
            self.check_self(&state, "if");
            self.check_outputs(i, &outputs);
        }

        // Each branch starts from what is assigned before the `if`.
        self.visit_expr_mut(&mut i.cond);
        let before = self.uninit();
        self.visit_block_mut(&mut i.then_branch);
        self.restore_uninit(&before);
        if let Some((_, e)) = &mut i.else_branch {
            self.visit_expr_mut(e);
        }
        self.restore_uninit(&before);
        for a in &outputs {
            self.mark_assigned(&a.ident.to_string());
        }

        if escape {
            let cond = &i.cond;
            let cs = cond.span();
            *i.cond = syn::parse_quote_spanned!(cs=> ::jitfuse::__private::static_if_cond(#cond));
            return;
        }

        let value = ident("__jitfuse_value");
        let then = ident("__jitfuse_then");
        let st = ident("__jitfuse_state");
        let state_ids: Vec<TokenStream> = state.iter().map(|a| a.ident.to_token_stream()).collect();
        let state_mut: Vec<TokenStream> = state
            .iter()
            .map(|a| {
                let id = &a.ident;
                quote!(mut #id)
            })
            .collect();
        let out_ids: Vec<&Ident> = outputs.iter().map(|a| &a.ident).collect();
        let mut all_ids = vec![value.to_token_stream()];
        all_ids.extend(state_ids.iter().cloned());
        all_ids.extend(out_ids.iter().map(|i| i.to_token_stream()));
        let mut all_names = vec!["the value of this `if`".to_string()];
        all_names.extend(state.iter().chain(&outputs).map(|a| a.ident.to_string()));

        let names = names(&all_names);
        let state_tuple = tuple(&state_ids);
        let state_pat = tuple(&state_mut);
        let result = tuple(&all_ids);
        let mut targets = vec![value.to_token_stream()];
        targets.extend(
            state
                .iter()
                .chain(&outputs)
                .map(|a| a.ident.to_token_stream()),
        );
        let lhs = tuple(&targets);
        // Borrowed (a tensor condition is not moved), at the condition's
        // tokens: a condition of a wrong type is reported there.
        let cond = &i.cond;
        let cond = quote_spanned!(cond.span()=> &(#cond));
        let then_branch = &i.then_branch;
        let else_branch = i.else_branch.as_ref().map(|(t, e)| quote!(#t #e));
        let tokens = quote_spanned! {span=>
            {
                let #value;
                #lhs = ::jitfuse::__private::staged_if(
                    #cond,
                    #names,
                    #state_tuple,
                    |#then, #st| {
                        #[allow(unused_mut)]
                        let #state_pat = #st;
                        #(let #out_ids;)*
                        let #value = if #then #then_branch #else_branch;
                        #result
                    },
                );
                #value
            }
        };
        *e = Expr::Block(syn::parse2(tokens).expect("the staged `if` parses"));
    }

    /// A variable declared without a value before the `if` must be assigned
    /// in every branch that does not panic.
    fn check_outputs(&mut self, i: &syn::ExprIf, outputs: &[Assignment]) {
        if outputs.is_empty() {
            return;
        }
        let then = self.assigned(Vec::new(), false, |f| f.visit_block(&i.then_branch));
        let else_ = match &i.else_branch {
            Some((_, e)) => self.assigned(Vec::new(), false, |f| f.visit_expr(e)),
            None => Vec::new(),
        };
        let else_diverges = match i.else_branch.as_ref().map(|(_, e)| &**e) {
            Some(Expr::Block(b)) => diverges(&b.block),
            _ => false,
        };
        for a in outputs {
            let in_then = then.iter().any(|t| t.ident == a.ident);
            let in_else = else_.iter().any(|t| t.ident == a.ident);
            let ok = (in_then || diverges(&i.then_branch)) && (in_else || else_diverges);
            if !ok {
                let msg = format!(
                    "variable `{0}` is assigned in only one branch of this `if`; an `if` in a #[jit] \
                     function is staged when its condition is a traced tensor (both branches run), \
                     so assign `{0}` in every branch, or give it a value where it is declared",
                    a.ident
                );
                self.errors.push(syn::Error::new_spanned(&a.at, msg));
            }
        }
    }

    /// Variables declared without a value cannot be carried by a loop.
    fn check_uninit_state(&mut self, state: &[Assignment], what: &str) {
        for a in state
            .iter()
            .filter(|a| self.is_uninit(a))
            .collect::<Vec<_>>()
        {
            let msg = format!(
                "variable `{0}` is declared without a value before this `{what}` and assigned inside it; \
                 a `{what}` in a #[jit] function carries the variables it assigns from one iteration to \
                 the next, so give `{0}` a value where it is declared",
                a.ident
            );
            self.errors.push(syn::Error::new_spanned(&a.at, msg));
        }
    }

    fn stage_while(&mut self, e: &mut Expr) {
        let Expr::While(w) = e else { unreachable!() };
        let span = w.while_token.span;
        let mut esc = escapes::Finder::default();
        esc.visit_expr(&w.cond);
        esc.visit_block(&w.body);
        let escape = esc.found;
        let state = self.assigned(Vec::new(), true, |f| {
            f.visit_expr(&w.cond);
            f.visit_block(&w.body);
        });
        if !escape {
            self.check_self(&state, "while");
            self.check_uninit_state(&state, "while");
        }

        self.visit_expr_mut(&mut w.cond);
        self.visit_block_mut(&mut w.body);
        for a in &state {
            self.mark_assigned(&a.ident.to_string());
        }

        if escape {
            let cond = &w.cond;
            let cs = cond.span();
            *w.cond =
                syn::parse_quote_spanned!(cs=> ::jitfuse::__private::static_while_cond(#cond));
            return;
        }

        let st = ident("__jitfuse_state");
        let c = ident("__jitfuse_cond");
        let (state_tuple, state_pat, names) = state_parts(&state);
        let cond = &w.cond;
        let body = &w.body;
        // The condition's closure at the condition's tokens: a condition of
        // a wrong type is reported there. (A condition may assign too:
        // `while { i += 1; i < n } {}`.)
        let cond_fn = quote_spanned! {cond.span()=>
            |#st| {
                #[allow(unused_mut)]
                let #state_pat = #st;
                let #c = #cond;
                (#c, #state_tuple)
            }
        };
        // The call at the condition too (on its line, for `#[track_caller]`):
        // a condition of a wrong type is reported at its tokens.
        let call = quote_spanned! {cond.span()=>
            ::jitfuse::__private::staged_while(
                #names,
                #state_tuple,
                #cond_fn,
                |#st| {
                    #[allow(unused_mut)]
                    let #state_pat = #st;
                    let () = #body;
                    #state_tuple
                },
            )
        };
        *e = assign_back(span, &state, call);
    }

    fn stage_for(&mut self, e: &mut Expr) {
        let Expr::ForLoop(f) = e else { unreachable!() };
        let span = f.for_token.span;
        let mut esc = escapes::Finder::default();
        esc.visit_block(&f.body);
        let escape = esc.found;
        let state = self.assigned(bindings::of(&f.pat), false, |v| v.visit_block(&f.body));
        if !escape {
            self.check_self(&state, "for");
            self.check_uninit_state(&state, "for");
        }

        self.visit_expr_mut(&mut f.expr);
        self.scopes.push(Vec::new());
        self.declare(bindings::of(&f.pat), false);
        self.visit_block_mut(&mut f.body);
        self.scopes.pop();
        for a in &state {
            self.mark_assigned(&a.ident.to_string());
        }

        if escape {
            let it = &f.expr;
            let is = it.span();
            *f.expr = syn::parse_quote_spanned!(is=> ::jitfuse::__private::static_iter(#it));
            return;
        }

        let st = ident("__jitfuse_state");
        let (state_tuple, state_pat, names) = state_parts(&state);
        let pat = match &*f.pat {
            p @ syn::Pat::Or(_) => quote!((#p)),
            p => p.to_token_stream(),
        };
        let body = &f.body;
        let it = &f.expr;
        let range = match strip_parens(it) {
            Expr::Range(r) if r.start.is_some() && r.end.is_some() => Some(r),
            _ => None,
        };
        let (func, it) = if let Some(r) = range {
            let func = match r.limits {
                syn::RangeLimits::HalfOpen(_) => quote_spanned!(span=> staged_for_range),
                syn::RangeLimits::Closed(_) => quote_spanned!(span=> staged_for_range_inclusive),
            };
            (func, quote!(#r))
        } else {
            (quote_spanned!(span=> staged_for), quote!(#it))
        };
        let call = quote_spanned! {span=>
            ::jitfuse::__private::#func(
                #names,
                #it,
                #state_tuple,
                |#pat, #st| {
                    #[allow(unused_mut)]
                    let #state_pat = #st;
                    let () = #body;
                    #state_tuple
                },
            )
        };
        *e = assign_back(span, &state, call);
    }

    /// `if let` / `while let`: plain Rust, the pattern's names in scope of
    /// the block.
    fn let_construct(&mut self, l: &mut syn::ExprLet, body: &mut Block) {
        self.visit_expr_mut(&mut l.expr);
        self.scopes.push(Vec::new());
        self.declare(bindings::of(&l.pat), false);
        self.visit_block_mut(body);
        self.scopes.pop();
    }
}

fn strip_parens(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_parens(&p.expr),
        e => e,
    }
}

/// The state tuple, its `mut` pattern and the names of its elements.
fn state_parts(state: &[Assignment]) -> (TokenStream, TokenStream, TokenStream) {
    let ids: Vec<TokenStream> = state.iter().map(|a| a.ident.to_token_stream()).collect();
    let muts: Vec<TokenStream> = state
        .iter()
        .map(|a| {
            let id = &a.ident;
            quote!(mut #id)
        })
        .collect();
    let n: Vec<String> = state.iter().map(|a| a.ident.to_string()).collect();
    (tuple(&ids), tuple(&muts), names(&n))
}

/// `{ (a, b) = call; }`, or `{ call; }` without state. The variables are
/// then borrowed once: in the plain loop, the last write of a variable
/// is read by the next test of the condition; here the write-back is, and
/// the user does not get "value assigned is never read" for it.
fn assign_back(span: Span, state: &[Assignment], call: TokenStream) -> Expr {
    let tokens = if state.is_empty() {
        quote_spanned!(span=> { #call; })
    } else {
        let ids: Vec<&Ident> = state.iter().map(|a| &a.ident).collect();
        let lhs = tuple(&ids.iter().map(|i| i.to_token_stream()).collect::<Vec<_>>());
        quote_spanned!(span=> { #lhs = #call; let _ = (#(&#ids,)*); })
    };
    Expr::Block(syn::parse2(tokens).expect("the staged loop parses"))
}

impl VisitMut for Stager {
    fn visit_block_mut(&mut self, b: &mut Block) {
        self.scopes.push(Vec::new());
        for s in &mut b.stmts {
            self.visit_stmt_mut(s);
        }
        self.scopes.pop();
    }

    fn visit_local_mut(&mut self, l: &mut syn::Local) {
        if let Some(init) = &mut l.init {
            self.visit_expr_mut(&mut init.expr);
            if let Some((_, diverge)) = &mut init.diverge {
                self.visit_expr_mut(diverge);
            }
        }
        let uninit = l.init.is_none();
        self.declare(bindings::of(&l.pat), uninit);
    }

    fn visit_expr_closure_mut(&mut self, c: &mut syn::ExprClosure) {
        if let Some(a) = &c.asyncness {
            self.error(
                a,
                "`async` closures cannot be staged: a #[jit] function's body is traced synchronously, \
                 once; keep async code outside the jitted function",
            );
            return;
        }
        self.scopes.push(Vec::new());
        let params = c.inputs.iter().flat_map(bindings::of).collect();
        self.declare(params, false);
        self.visit_expr_mut(&mut c.body);
        self.scopes.pop();
    }

    fn visit_arm_mut(&mut self, a: &mut syn::Arm) {
        self.scopes.push(Vec::new());
        self.declare(bindings::of(&a.pat), false);
        if let Some((_, g)) = &mut a.guard {
            self.visit_expr_mut(g);
        }
        self.visit_expr_mut(&mut a.body);
        self.scopes.pop();
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::If(i) if !is_let(&i.cond) => self.stage_if(e),
            Expr::If(i) => {
                let Expr::Let(l) = &mut *i.cond else { unreachable!() };
                self.let_construct(l, &mut i.then_branch);
                if let Some((_, e)) = &mut i.else_branch {
                    self.visit_expr_mut(e);
                }
            }
            Expr::While(w) if !is_let(&w.cond) => self.stage_while(e),
            Expr::While(w) => {
                let Expr::Let(l) = &mut *w.cond else { unreachable!() };
                self.let_construct(l, &mut w.body);
            }
            Expr::ForLoop(_) => self.stage_for(e),
            Expr::Async(a) => self.error(
                a.async_token,
                "`async` blocks cannot be staged: a #[jit] function's body is traced synchronously, \
                 once; keep async code outside the jitted function",
            ),
            Expr::Unsafe(u) => self.error(
                u.unsafe_token,
                "`unsafe` blocks are not allowed in a #[jit] function: its body runs once, on traced \
                 tensors that hold no data, to build the compiled program; keep unsafe code outside \
                 the jitted function",
            ),
            Expr::Assign(a) => {
                visit_mut::visit_expr_assign_mut(self, a);
                let mut roots = Vec::new();
                assign_roots(&a.left, &mut roots);
                for r in roots {
                    self.mark_assigned(&r.to_string());
                }
            }
            // Constant contexts are evaluated by the compiler, not traced.
            Expr::Const(_) => {}
            Expr::Repeat(r) => self.visit_expr_mut(&mut r.expr),
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    // Nested items are not part of the traced body; types and generic
    // arguments hold constant expressions only.
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    fn visit_type_mut(&mut self, _: &mut syn::Type) {}
    fn visit_generic_argument_mut(&mut self, _: &mut syn::GenericArgument) {}
}

fn assign_roots(lhs: &Expr, out: &mut Vec<Ident>) {
    match lhs {
        Expr::Tuple(t) => t.elems.iter().for_each(|e| assign_roots(e, out)),
        Expr::Array(a) => a.elems.iter().for_each(|e| assign_roots(e, out)),
        Expr::Paren(p) => assign_roots(&p.expr, out),
        e => out.extend(assigned::place_root(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    /// The staged form of `body` (a block), as text, with the parameters
    /// given as `(name, mutable)`.
    fn staged(params: &[(&str, bool)], body: &str) -> (String, Vec<String>) {
        let mut block: Block = syn::parse_str(body).unwrap();
        let params = params
            .iter()
            .map(|(n, m)| (Ident::new(n, Span::call_site()), *m))
            .collect();
        let errors = stage(&mut block, params);
        (
            block.to_token_stream().to_string(),
            errors.iter().map(|e| e.to_string()).collect(),
        )
    }

    const P: &str = ":: jitfuse :: __private ::";

    #[test]
    fn if_carries_assigned_variables_and_returns_outputs() {
        let (s, e) = staged(
            &[("x", false), ("flag", false)],
            "{ let mut y = x.clone(); let z; if flag { y = y.exp(); z = 1; } else { z = 2; } y }",
        );
        assert!(e.is_empty(), "{e:?}");
        for part in [
            format!("(__jitfuse_value , y , z ,) = {P} staged_if (& (flag) , & [\"the value of this `if`\" , \"y\" , \"z\"] , (y ,) ,"),
            "let (mut y ,) = __jitfuse_state ; let z ; let __jitfuse_value = if __jitfuse_then".into(),
            "(__jitfuse_value , y , z ,) } ,) ; __jitfuse_value }".into(),
        ] {
            assert!(s.contains(&part), "`{part}` not in {s}");
        }
    }

    #[test]
    fn loops_carry_assigned_variables() {
        let (s, e) = staged(
            &[("x", false), ("n", false)],
            "{ let mut y = x.clone(); let mut v = Vec::new(); \
               while v.len() < n { v.push(1); } \
               for i in 0..n { y = y + i; } \
               for (i, t) in v.iter().enumerate() { let y = t; } \
               for i in 0..=n { y = y * i; } y }",
        );
        assert!(e.is_empty(), "{e:?}");
        for part in [
            // A method call on a `mut` variable in a `while`: carried.
            format!("(v ,) = {P} staged_while (& [\"v\"] , (v ,) ,"),
            format!("(y ,) = {P} staged_for_range (& [\"y\"] , 0 .. n , (y ,) , | i , __jitfuse_state |"),
            // Shadowed inside: no state.
            format!("{{ {P} staged_for (& [] , v . iter () . enumerate () , () , | (i , t) , __jitfuse_state |"),
            format!("(y ,) = {P} staged_for_range_inclusive (& [\"y\"] , 0 ..= n , (y ,) ,"),
        ] {
            assert!(s.contains(&part), "`{part}` not in {s}");
        }
    }

    #[test]
    fn early_exits_keep_plain_rust_with_static_conditions() {
        let (s, e) = staged(
            &[("x", false), ("n", false)],
            "{ let mut y = x.clone(); \
               'outer: for i in 0..n { for j in 0..i { if j > 2 { break 'outer; } y = y + 1; } } \
               while y.gt(0) { if n > 1 { continue; } } \
               loop { if y.lt(1) { break; } } \
               if n == 0 { return y; } \
               let f = |t: &Tensor| -> Option<Tensor> { if n > 1 { return None; } Some(t.clone()) }; \
               if let Some(k) = f(&y) { y = k; } \
               y }",
        );
        assert!(e.is_empty(), "{e:?}");
        for part in [
            format!("'outer : for i in {P} static_iter (0 .. n)"),
            format!("for j in {P} static_iter (0 .. i)"),
            format!("if {P} static_if_cond (j > 2) {{ break 'outer ; }}"),
            format!("while {P} static_while_cond (y . gt (0))"),
            format!("loop {{ if {P} static_if_cond (y . lt (1)) {{ break ; }} }}"),
            format!("if {P} static_if_cond (n == 0) {{ return y ; }}"),
            // `return` inside a closure leaves the closure's `if` only.
            format!("{{ if {P} static_if_cond (n > 1) {{ return None ; }}"),
            "if let Some (k) = f (& y) { y = k ; }".into(),
        ] {
            assert!(s.contains(&part), "`{part}` not in {s}");
        }
        assert!(!s.contains("staged_"), "{s}");
    }

    #[test]
    fn closures_are_rewritten_and_their_parameters_shadow() {
        let (s, e) = staged(
            &[("x", false)],
            "{ let mut y = x.clone(); let f = |y: Tensor, c: bool| if c { y.exp() } else { y }; f(y, true) }",
        );
        assert!(e.is_empty(), "{e:?}");
        assert!(
            s.contains("staged_if (& (c) , & [\"the value of this `if`\"] , () ,"),
            "{s}"
        );
    }

    #[test]
    fn more_than_twelve_variables_nest() {
        let names: Vec<String> = (0..14).map(|i| format!("v{i}")).collect();
        let decls: String = names.iter().map(|n| format!("let mut {n} = 0; ")).collect();
        let sets: String = names.iter().map(|n| format!("{n} = 1; ")).collect();
        let (s, e) = staged(&[("c", false)], &format!("{{ {decls} if c {{ {sets} }} }}"));
        assert!(e.is_empty(), "{e:?}");
        for part in [
            "(v0 , v1 , v2 , v3 , v4 , v5 , v6 , v7 , v8 , v9 , v10 , (v11 , v12 , v13 ,) ,)",
            "(__jitfuse_value , v0 , v1 , v2 , v3 , v4 , v5 , v6 , v7 , v8 , v9 , (v10 , v11 , v12 , v13 ,) ,)",
            "\"v9\" , \"v10`, `v11`, `v12`, `v13\"]",
        ] {
            assert!(s.contains(part), "`{part}` not in {s}");
        }
    }

    #[test]
    fn what_cannot_be_staged_is_reported() {
        let (_, e) = staged(
            &[("x", false), ("c", false), ("s", true)],
            "{ let y; let z; if c { y = 1; z = 1; } else if c { z = 2; } else { z = 3; } \
               let w; if c { w = 1; } else { panic!() } \
               let u; for i in 0..3 { u = i; } \
               for i in 0..3 { s = s; } \
               let a = async { 1 }; let b = unsafe { 2 }; let f = async || 3; }",
        );
        let want = [
            "variable `y` is assigned in only one branch of this `if`",
            "variable `u` is declared without a value before this `for`",
            "`async` blocks cannot be staged",
            "`unsafe` blocks are not allowed",
            "`async` closures cannot be staged",
        ];
        assert_eq!(e.len(), want.len(), "{e:?}");
        for (got, want) in e.iter().zip(want) {
            assert!(got.starts_with(want), "{got}");
        }
    }
}
