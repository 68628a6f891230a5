//! Tracing the closures of control-flow ops into sub-graphs and recording
//! the control-flow node in the enclosing trace.

use super::staging::Components;
use crate::error::type_str;
use crate::ir::{CondOp, Graph, Node, Op, ScanOp, ValueId, WhileOp};
use crate::tensor::Data;
use crate::trace::{self, fail, ParamSpec, Traced};
use crate::{DType, Error, SourceLoc, Tensor, Tree};
use std::collections::HashMap;
use std::sync::Arc;

/// A predicate must be a bool scalar.
pub(crate) fn check_predicate(what: &str, pred: &Tensor, loc: SourceLoc) {
    if pred.dtype() != DType::Bool || !pred.shape().is_empty() {
        fail(
            Error::shape(format!(
                "the condition of `{what}` must be a bool tensor of shape [], found {}{}",
                type_str(pred.dtype(), pred.shape()),
                if pred.shape().is_empty() {
                    "; compare it (e.g. `x.gt(0.0)`)"
                } else {
                    "; for an elementwise choice use `select(cond, a, b)`, or reduce the condition to one value first"
                }
            ))
            .at(loc),
        );
    }
}

/// Loop bounds must be integer scalars of one dtype.
pub(crate) fn check_bounds(start: &Tensor, end: &Tensor, loc: SourceLoc) -> (Tensor, Tensor) {
    for (what, t) in [("start", start), ("end", end)] {
        if !t.dtype().is_int() || !t.shape().is_empty() {
            fail(
                Error::shape(format!(
                    "the {what} of a counted `for` loop must be an integer scalar tensor, found {}",
                    type_str(t.dtype(), t.shape())
                ))
                .at(loc),
            );
        }
    }
    let d = if start.dtype() == DType::I64 || end.dtype() == DType::I64 {
        DType::I64
    } else {
        start.dtype()
    };
    (start.cast(d), end.cast(d))
}

fn specs_of(leaves: &[Tensor]) -> Vec<ParamSpec> {
    leaves
        .iter()
        .map(|l| ParamSpec {
            shape: l.shape().to_vec(),
            dtype: l.dtype(),
            weak: l.is_weak(),
        })
        .collect()
}

/// Trace `f` on parameters of the given types (a nested trace when tracing);
/// an error inside aborts the enclosing call with that error.
fn trace_sub(specs: &[ParamSpec], f: impl FnOnce(&[Tensor]) -> Vec<Tensor>) -> Traced {
    match trace::trace(specs, f) {
        Ok(t) => t,
        Err(e) => fail(e),
    }
}

/// Identity of a captured tensor, to give one operand to a value several
/// sub-graphs capture.
fn capture_key(t: &Tensor) -> (usize, u64, Vec<usize>, DType) {
    match &t.data {
        Data::Traced { trace, id } => (id.index(), *trace, t.shape().to_vec(), t.dtype()),
        Data::Concrete(b) => (Arc::as_ptr(b) as usize, 0, t.shape().to_vec(), t.dtype()),
    }
}

/// Closure conversion: the sub-graphs' `captured k` nodes become parameters
/// after their `explicit` ones, one per distinct captured tensor across all
/// of them. Returns the closed graphs and the captured tensors (the extra
/// operands of the control-flow node, in parameter order).
pub(crate) fn close(traced: Vec<Traced>, explicit: &[ParamSpec]) -> (Vec<Graph>, Vec<Tensor>) {
    let mut merged: Vec<Tensor> = Vec::new();
    let mut index: HashMap<(usize, u64, Vec<usize>, DType), usize> = HashMap::new();
    let maps: Vec<Vec<usize>> = traced
        .iter()
        .map(|t| {
            t.captured
                .iter()
                .map(|c| {
                    *index.entry(capture_key(c)).or_insert_with(|| {
                        merged.push(c.clone());
                        merged.len() - 1
                    })
                })
                .collect()
        })
        .collect();
    let graphs = traced
        .into_iter()
        .zip(&maps)
        .map(|(t, map)| {
            let mut g = Graph::new();
            let mut param_ids = Vec::new();
            for (k, p) in explicit.iter().enumerate() {
                param_ids.push(g.push(Node {
                    op: Op::Param(k),
                    inputs: vec![],
                    shape: p.shape.clone(),
                    dtype: p.dtype,
                    loc: None,
                }));
            }
            for (j, c) in merged.iter().enumerate() {
                param_ids.push(g.push(Node {
                    op: Op::Param(explicit.len() + j),
                    inputs: vec![],
                    shape: c.shape().to_vec(),
                    dtype: c.dtype(),
                    loc: None,
                }));
            }
            let mut remap: Vec<ValueId> = Vec::with_capacity(t.graph.nodes.len());
            for n in &t.graph.nodes {
                let v = match n.op {
                    Op::Param(k) => param_ids[k],
                    Op::Captured(k) => param_ids[explicit.len() + map[k]],
                    _ => {
                        let mut n = n.clone();
                        n.inputs = n.inputs.iter().map(|x| remap[x.index()]).collect();
                        g.push(n)
                    }
                };
                remap.push(v);
            }
            g.outputs = t.graph.outputs.iter().map(|o| remap[o.index()]).collect();
            g
        })
        .collect();
    (graphs, merged)
}

/// Record a control-flow node with these operands (or evaluate it eagerly)
/// and return its outputs.
pub(crate) fn push_control(op: Op, operands: &[Tensor], loc: SourceLoc) -> Vec<Tensor> {
    let outs = op.control_outputs();
    if outs.is_empty() {
        return Vec::new();
    }
    if !trace::is_tracing() {
        // Eagerly: the node compiled as a program of its own (cached by its bodies and
        // operand types), else the interpreter.
        let refs: Vec<&Tensor> = operands.iter().collect();
        let types: Vec<(&[usize], crate::DType)> =
            outs.iter().map(|(s, d)| (s.as_slice(), *d)).collect();
        let compiled = crate::eager::run_all(&op, &refs, &types);
        let interpreted = || {
            let arrays: Vec<_> = operands.iter().map(|t| t.array()).collect();
            crate::interp::eval_control(&op, &arrays)
                .map(|outs| outs.into_iter().map(Tensor::from_array).collect())
        };
        return match compiled.unwrap_or_else(interpreted) {
            Ok(v) => v,
            Err(e) => fail(e.at(loc)),
        };
    }
    let refs: Vec<&Tensor> = operands.iter().collect();
    let (s0, d0) = outs[0].clone();
    let first = trace::push_node(op, &refs, s0, d0, loc);
    let mut res = vec![first.clone()];
    for (k, (s, d)) in outs.into_iter().enumerate().skip(1) {
        res.push(trace::push_node(Op::Get(k), &[&first], s, d, loc));
    }
    res
}

/// Which variable leaf `i` belongs to, for messages.
fn leaf_name(names: &[&str], counts: &[usize], i: usize) -> String {
    let mut start = 0;
    for (k, &c) in counts.iter().enumerate() {
        if i < start + c {
            let name = names.get(k).copied().unwrap_or("a value");
            // Variable names are quoted; descriptions ("the value of this
            // `if`") are not.
            let name = if name.contains(' ') {
                name.to_string()
            } else {
                format!("`{name}`")
            };
            return if c == 1 {
                name
            } else {
                format!("{name} (leaf {})", i - start)
            };
        }
        start += c;
    }
    format!("value {i}")
}

fn graph_types(g: &Graph) -> Vec<(Vec<usize>, DType)> {
    g.outputs
        .iter()
        .map(|o| (g.node(*o).shape.clone(), g.node(*o).dtype))
        .collect()
}

pub(crate) fn trace_cond<S, R, F>(
    pred: &Tensor,
    names: &[&str],
    state: S,
    branch: F,
    loc: SourceLoc,
) -> R
where
    S: Tree + Components,
    R: Tree + Components,
    F: FnOnce(bool, S) -> R + Clone,
{
    let leaves = state.leaves();
    let specs = specs_of(&leaves);
    let mut results: Vec<(R, Vec<usize>)> = Vec::new();
    let mut traced = Vec::new();
    for side in [false, true] {
        let b = branch.clone();
        let mut out = None;
        traced.push(trace_sub(&specs, |ps| {
            let r = b(side, state.rebuild(&mut ps.iter().cloned()));
            let leaves = r.leaves();
            let mut st = Vec::new();
            r.structure(&mut st);
            out = Some((r, st));
            leaves
        }));
        results.push(out.expect("traced"));
    }
    let counts = results[1].0.leaf_counts();
    let (te, tt) = (graph_types(&traced[0].graph), graph_types(&traced[1].graph));
    if results[0].0.leaf_counts() != counts || results[0].1 != results[1].1 {
        fail(
            Error::shape(format!(
                "the branches of this `if` give values of different structures (leaves per value: then {:?}, else {:?}; {})",
                counts,
                results[0].0.leaf_counts(),
                names.join(", ")
            ))
            .at(loc),
        );
    }
    for (i, (a, b)) in tt.iter().zip(&te).enumerate() {
        if a != b {
            fail(
                Error::shape(format!(
                    "{} is {} after the then-branch of this `if` but {} after the else-branch; a staged `if` must give each variable one shape and dtype",
                    leaf_name(names, &counts, i),
                    type_str(a.1, &a.0),
                    type_str(b.1, &b.0)
                ))
                .at(loc),
            );
        }
    }
    let (mut graphs, captured) = close(traced, &specs);
    let then = graphs.pop().unwrap();
    let else_ = graphs.pop().unwrap();
    let mut operands = vec![pred.clone()];
    operands.extend(leaves);
    operands.extend(captured);
    let outs = push_control(
        Op::Cond(Arc::new(CondOp {
            branches: [else_, then],
        })),
        &operands,
        loc,
    );
    results.pop().unwrap().0.rebuild(&mut outs.into_iter())
}

/// Check that a loop body gives back its state with the same types.
fn check_carried(
    what: &str,
    names: &[&str],
    counts: &[usize],
    specs: &[ParamSpec],
    got: &[(Vec<usize>, DType)],
    loc: SourceLoc,
) {
    if got.len() != specs.len() {
        fail(
            Error::shape(format!(
                "the body of this `{what}` gives {} state values, the state has {}",
                got.len(),
                specs.len()
            ))
            .at(loc),
        );
    }
    for (i, (p, g)) in specs.iter().zip(got).enumerate() {
        if p.shape != g.0 || p.dtype != g.1 {
            fail(
                Error::shape(format!(
                    "{} is {} before this `{what}` but {} after its body; a staged loop must keep each variable's shape and dtype",
                    leaf_name(names, counts, i),
                    type_str(p.dtype, &p.shape),
                    type_str(g.1, &g.0)
                ))
                .at(loc),
            );
        }
    }
}

pub(crate) fn trace_while<S, FC, FB>(
    names: &[&str],
    state: S,
    mut cond: FC,
    mut body: FB,
    loc: SourceLoc,
) -> S
where
    S: Tree + Components,
    FC: FnMut(S) -> (Tensor, S),
    FB: FnMut(S) -> S,
{
    let leaves = state.leaves();
    let counts = state.leaf_counts();
    let specs = specs_of(&leaves);
    let cond_tr = trace_sub(&specs, |ps| {
        let (c, _) = cond(state.rebuild(&mut ps.iter().cloned()));
        check_predicate("while", &c, loc);
        vec![c]
    });
    let body_tr = trace_sub(&specs, |ps| {
        body(state.rebuild(&mut ps.iter().cloned())).leaves()
    });
    check_carried(
        "while",
        names,
        &counts,
        &specs,
        &graph_types(&body_tr.graph),
        loc,
    );
    let (mut graphs, captured) = close(vec![cond_tr, body_tr], &specs);
    let body_g = graphs.pop().unwrap();
    let cond_g = graphs.pop().unwrap();
    let carried = leaves.len();
    let mut operands = leaves;
    operands.extend(captured);
    let outs = push_control(
        Op::While(Arc::new(WhileOp {
            cond: cond_g,
            body: body_g,
            carried,
        })),
        &operands,
        loc,
    );
    state.rebuild(&mut outs.into_iter())
}

pub(crate) fn trace_counted<S, F>(
    names: &[&str],
    start: Tensor,
    end: Tensor,
    state: S,
    mut body: F,
    loc: SourceLoc,
) -> S
where
    S: Tree + Components,
    F: FnMut(Tensor, S) -> S,
{
    let leaves = state.leaves();
    let counts = state.leaf_counts();
    let mut specs = specs_of(&[start.clone()]);
    specs.extend(specs_of(&leaves));
    let cond_tr = trace_sub(&specs, |ps| vec![ps[0].lt(&end)]);
    let body_tr = trace_sub(&specs, |ps| {
        let s = body(ps[0].clone(), state.rebuild(&mut ps[1..].iter().cloned()));
        let mut out = vec![&ps[0] + 1];
        out.extend(s.leaves());
        out
    });
    let got = graph_types(&body_tr.graph);
    check_carried("for", names, &counts, &specs[1..], &got[1..], loc);
    let (mut graphs, captured) = close(vec![cond_tr, body_tr], &specs);
    let body_g = graphs.pop().unwrap();
    let cond_g = graphs.pop().unwrap();
    let carried = specs.len();
    let mut operands = vec![start];
    operands.extend(leaves);
    operands.extend(captured);
    let mut outs = push_control(
        Op::While(Arc::new(WhileOp {
            cond: cond_g,
            body: body_g,
            carried,
        })),
        &operands,
        loc,
    );
    outs.remove(0);
    state.rebuild(&mut outs.into_iter())
}

pub(crate) fn scan_tree<C: Tree, X: Tree, Y: Tree>(
    f: impl FnMut(C, X) -> (C, Y),
    init: C,
    xs: &X,
    loc: SourceLoc,
) -> (C, Y) {
    scan_tree_at(f, init, xs, loc)
}

/// `scan` as one node (evaluated by the interpreter when not tracing).
pub(crate) fn scan_tree_at<C: Tree, X: Tree, Y: Tree>(
    f: impl FnMut(C, X) -> (C, Y),
    init: C,
    xs: &X,
    loc: SourceLoc,
) -> (C, Y) {
    scan_tree_dir(f, init, xs, false, loc)
}

/// `scan_tree_at` over the rows of `xs` last first when `reverse` (the ys still line up
/// with the xs, as in JAX): the rows are read in place either way, so a loop's backward
/// runs over its stacked forward values without a reversed copy of them.
pub(crate) fn scan_tree_dir<C: Tree, X: Tree, Y: Tree>(
    f: impl FnMut(C, X) -> (C, Y),
    init: C,
    xs: &X,
    reverse: bool,
    loc: SourceLoc,
) -> (C, Y) {
    let counts = vec![init.leaves().len()];
    scan_tree_named(f, init, xs, reverse, ("scan", &["the carry"], &counts), loc)
}

/// `scan_tree_dir` whose carry is a staged loop's variables: `(what, names,
/// counts)` is the construct (`for`), the variables' names and their leaf
/// counts, for the error of a carry whose shape or dtype changes.
pub(crate) fn scan_tree_named<C: Tree, X: Tree, Y: Tree>(
    mut f: impl FnMut(C, X) -> (C, Y),
    init: C,
    xs: &X,
    reverse: bool,
    (what, names, counts): (&str, &[&str], &[usize]),
    loc: SourceLoc,
) -> (C, Y) {
    let x_leaves = xs.leaves();
    let length = match x_leaves.first() {
        Some(x) if x.ndim() > 0 => x.shape()[0],
        Some(x) => fail(
            Error::shape(format!(
                "`scan` runs over the leading axis of its xs; a leaf is the scalar {}",
                type_str(x.dtype(), x.shape())
            ))
            .at(loc),
        ),
        None => fail(
            Error::shape("`scan` needs at least one tensor to scan over (xs has no leaves)")
                .at(loc),
        ),
    };
    for x in &x_leaves {
        if x.ndim() == 0 || x.shape()[0] != length {
            fail(
                Error::shape(format!(
                    "`scan`: every xs leaf must have the leading dimension {length}, found {}",
                    type_str(x.dtype(), x.shape())
                ))
                .at(loc),
            );
        }
    }
    let c_leaves = init.leaves();
    let c_specs = specs_of(&c_leaves);
    let mut specs = c_specs.clone();
    specs.extend(x_leaves.iter().map(|x| ParamSpec {
        shape: x.shape()[1..].to_vec(),
        dtype: x.dtype(),
        weak: false,
    }));
    let nc = c_leaves.len();
    let mut y_struct: Option<Y> = None;
    let body_tr = trace_sub(&specs, |ps| {
        let c = init.rebuild(&mut ps[..nc].iter().cloned());
        let x = xs.rebuild(&mut ps[nc..].iter().cloned());
        let (c2, y) = f(c, x);
        let mut out = c2.leaves();
        out.extend(y.leaves());
        y_struct = Some(y);
        out
    });
    let got = graph_types(&body_tr.graph);
    check_carried(
        what,
        names,
        counts,
        &c_specs,
        &got[..nc.min(got.len())],
        loc,
    );
    let (mut graphs, captured) = close(vec![body_tr], &specs);
    let mut operands = c_leaves;
    operands.extend(x_leaves.iter().cloned());
    operands.extend(captured);
    let outs = push_control(
        Op::Scan(Arc::new(ScanOp {
            body: graphs.pop().unwrap(),
            length,
            carried: nc,
            xs: x_leaves.len(),
            reverse,
        })),
        &operands,
        loc,
    );
    let mut it = outs.into_iter();
    let c = init.rebuild(&mut it);
    let y = y_struct.expect("traced").rebuild(&mut it);
    (c, y)
}
