//! Simplification before fusion: constant folding, algebraic identities that
//! are exact in IEEE arithmetic, common-subexpression elimination and
//! dead-code elimination, iterated to a fixed point in one sweep (nodes are
//! visited in topological order, so each sees its simplified operands).
//!
//! Identities applied (all exact, -0 and NaN included): `x*1`, `1*x`, `x/1`,
//! `x-0`, `x+(-0)` → x (and `x+0`, `x-0` on integers); `neg(neg x)` → x;
//! `select(c, x, x)` → x; views that change nothing (same-shape broadcast or
//! reshape, identity transpose/slice) → x; chains of reshapes → one reshape.
//! Not applied because inexact: `x*0`, `x+0` on floats, `x-x`.
//! A `cond` whose predicate folds to a constant is replaced by its taken
//! branch, inlined; the sub-graphs of control-flow nodes are simplified too.

use crate::ir::{BinaryOp, Graph, Node, Op, UnaryOp, ValueId};
use crate::{DType, Literal};
use std::collections::HashMap;

/// The simplified graph (parameters are kept, in order, even if unused).
pub fn simplify(g: &Graph) -> Graph {
    let mut out = Graph::new();
    // Old value → new value.
    let mut map: Vec<ValueId> = Vec::with_capacity(g.nodes.len());
    let mut cse: HashMap<String, ValueId> = HashMap::new();
    // Outputs of `cond`s folded away (their taken branch inlined), for the
    // `get` nodes that read them.
    let mut inlined: HashMap<usize, Vec<ValueId>> = HashMap::new();
    let live = live_nodes(g);
    for (i, n) in g.nodes.iter().enumerate() {
        if !live[i] {
            map.push(ValueId(u32::MAX));
            continue;
        }
        if let Op::Get(k) = n.op {
            if let Some(outs) = inlined.get(&n.inputs[0].index()) {
                map.push(outs[k]);
                continue;
            }
        }
        let inputs: Vec<ValueId> = n.inputs.iter().map(|x| map[x.index()]).collect();
        // A `cond` on a constant predicate is its taken branch.
        if let Op::Cond(c) = &n.op {
            if let Op::Const(Literal::Bool(p)) = out.node(inputs[0]).op {
                let outs = inline(&mut out, &mut cse, &c.branches[p as usize], &inputs[1..]);
                map.push(outs[0]);
                inlined.insert(i, outs);
                continue;
            }
        }
        let node = Node {
            op: if n.op.is_control() {
                simplify_subgraphs(&n.op)
            } else {
                n.op.clone()
            },
            inputs,
            shape: n.shape.clone(),
            dtype: n.dtype,
            loc: n.loc,
        };
        map.push(add(&mut out, &mut cse, node));
    }
    out.outputs = g.outputs.iter().map(|o| map[o.index()]).collect();
    // Rewrites may have left nodes unused: one more dead-code sweep.
    prune(&out)
}

/// Append a node whose operands are already simplified: rewritten to an
/// existing value, folded to a constant, or merged with an equal node.
fn add(out: &mut Graph, cse: &mut HashMap<String, ValueId>, node: Node) -> ValueId {
    if let Some(existing) = rewrite(out, &node) {
        return existing;
    }
    let node = fold_constant(out, node);
    // A collapsed reshape-of-reshape may be the identity.
    if let Some(existing) = rewrite(out, &node) {
        return existing;
    }
    if matches!(node.op, Op::Param(_)) {
        return out.push(node);
    }
    let key = key(&node);
    match cse.get(&key) {
        Some(&v) => v,
        None => {
            let v = out.push(node);
            cse.insert(key, v);
            v
        }
    }
}

/// Append the nodes of `sub` with its parameters bound to `args`; its outputs.
fn inline(
    out: &mut Graph,
    cse: &mut HashMap<String, ValueId>,
    sub: &Graph,
    args: &[ValueId],
) -> Vec<ValueId> {
    let sub = simplify(sub);
    let mut map: Vec<ValueId> = Vec::with_capacity(sub.nodes.len());
    let mut extra: HashMap<usize, Vec<ValueId>> = HashMap::new();
    for (i, n) in sub.nodes.iter().enumerate() {
        let v = match &n.op {
            Op::Param(k) => args[*k],
            Op::Get(k) if extra.contains_key(&n.inputs[0].index()) => {
                extra[&n.inputs[0].index()][*k]
            }
            Op::Cond(c)
                if matches!(
                    out.node(map[n.inputs[0].index()]).op,
                    Op::Const(Literal::Bool(_))
                ) =>
            {
                let Op::Const(Literal::Bool(p)) = out.node(map[n.inputs[0].index()]).op else {
                    unreachable!()
                };
                let a: Vec<ValueId> = n.inputs[1..].iter().map(|x| map[x.index()]).collect();
                let outs = inline(out, cse, &c.branches[p as usize], &a);
                extra.insert(i, outs.clone());
                outs[0]
            }
            _ => {
                let mut n = n.clone();
                n.inputs = n.inputs.iter().map(|x| map[x.index()]).collect();
                add(out, cse, n)
            }
        };
        map.push(v);
    }
    sub.outputs.iter().map(|o| map[o.index()]).collect()
}

/// A control-flow op with its sub-graphs simplified (their parameters stay).
fn simplify_subgraphs(op: &Op) -> Op {
    use std::sync::Arc;
    match op {
        Op::Cond(c) => Op::Cond(Arc::new(crate::ir::CondOp {
            branches: [simplify(&c.branches[0]), simplify(&c.branches[1])],
        })),
        Op::While(w) => Op::While(Arc::new(crate::ir::WhileOp {
            cond: simplify(&w.cond),
            body: simplify(&w.body),
            carried: w.carried,
        })),
        Op::Scan(sc) => Op::Scan(Arc::new(crate::ir::ScanOp {
            body: simplify(&sc.body),
            ..(**sc).clone()
        })),
        op => op.clone(),
    }
}

/// Nodes reachable from the outputs, plus every parameter.
fn live_nodes(g: &Graph) -> Vec<bool> {
    let mut live = vec![false; g.nodes.len()];
    let mut stack: Vec<ValueId> = g.outputs.clone();
    while let Some(v) = stack.pop() {
        if !std::mem::replace(&mut live[v.index()], true) {
            stack.extend(g.node(v).inputs.iter().copied());
        }
    }
    for (i, n) in g.nodes.iter().enumerate() {
        if matches!(n.op, Op::Param(_)) {
            live[i] = true;
        }
    }
    live
}

fn prune(g: &Graph) -> Graph {
    let live = live_nodes(g);
    let mut out = Graph::new();
    let mut map = vec![ValueId(u32::MAX); g.nodes.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        if live[i] {
            let mut n = n.clone();
            n.inputs = n.inputs.iter().map(|x| map[x.index()]).collect();
            map[i] = out.push(n);
        }
    }
    out.outputs = g.outputs.iter().map(|o| map[o.index()]).collect();
    out
}

/// CSE key: the op with its attributes, operands and type.
fn key(n: &Node) -> String {
    let lit = match &n.op {
        Op::Const(l) | Op::Pad(_, l) => crate::ir::literal_text(*l),
        Op::Param(k) | Op::Captured(k) => k.to_string(),
        // Two control-flow nodes are the same only with the same sub-graphs.
        op if op.is_control() => op
            .subgraphs()
            .iter()
            .map(|g| g.to_text())
            .collect::<Vec<_>>()
            .join("|"),
        _ => String::new(),
    };
    format!(
        "{}{} {} {:?} {:?} {:?}",
        n.op.name(),
        crate::ir::attr_text(&n.op),
        lit,
        n.inputs,
        n.shape,
        n.dtype
    )
}

fn const_of(g: &Graph, v: ValueId) -> Option<Literal> {
    match g.node(v).op {
        Op::Const(l) => Some(l),
        _ => None,
    }
}

fn is_const(g: &Graph, v: ValueId, want: f64) -> bool {
    const_of(g, v).is_some_and(|l| {
        let d = g.node(v).dtype;
        d != DType::Bool
            && l.as_f64(d) == want
            && (want != 0.0 || l.as_f64(d).is_sign_negative() == want.is_sign_negative())
    })
}

/// An existing value the node equals, if an identity applies.
fn rewrite(g: &Graph, n: &Node) -> Option<ValueId> {
    let ins = &n.inputs;
    let int = n.dtype.is_int();
    match &n.op {
        Op::Binary(BinaryOp::Mul) if is_const(g, ins[1], 1.0) => Some(ins[0]),
        Op::Binary(BinaryOp::Mul) if is_const(g, ins[0], 1.0) => Some(ins[1]),
        Op::Binary(BinaryOp::Div) if is_const(g, ins[1], 1.0) => Some(ins[0]),
        Op::Binary(BinaryOp::Sub) if is_const(g, ins[1], 0.0) => Some(ins[0]),
        Op::Binary(BinaryOp::Add)
            if is_const(g, ins[1], -0.0) || (int && is_const(g, ins[1], 0.0)) =>
        {
            Some(ins[0])
        }
        Op::Binary(BinaryOp::Add)
            if is_const(g, ins[0], -0.0) || (int && is_const(g, ins[0], 0.0)) =>
        {
            Some(ins[1])
        }
        Op::Unary(UnaryOp::Neg) if g.node(ins[0]).op == Op::Unary(UnaryOp::Neg) => {
            Some(g.node(ins[0]).inputs[0])
        }
        Op::Select if ins[1] == ins[2] => Some(ins[1]),
        // Its only meaning is to autodiff, which runs before this pass.
        Op::Unary(UnaryOp::StopGradient) => Some(ins[0]),
        Op::Broadcast | Op::Reshape if g.node(ins[0]).shape == n.shape => Some(ins[0]),
        Op::Transpose(p) if p.iter().enumerate().all(|(i, &x)| i == x) => Some(ins[0]),
        Op::Slice(sl)
            if sl.iter().all(|&(start, step)| start == 0 && step == 1)
                && g.node(ins[0]).shape == n.shape =>
        {
            Some(ins[0])
        }
        _ => None,
    }
}

/// Replace a node computed only from constants by a constant; collapse
/// reshape-of-reshape.
fn fold_constant(g: &Graph, mut n: Node) -> Node {
    if n.op == Op::Reshape && g.node(n.inputs[0]).op == Op::Reshape {
        n.inputs = vec![g.node(n.inputs[0]).inputs[0]];
        return n;
    }
    let foldable = n.op.is_elementwise() || matches!(n.op, Op::Broadcast | Op::Reshape);
    if !foldable || n.inputs.is_empty() {
        return n;
    }
    let lits: Option<Vec<Literal>> = n.inputs.iter().map(|&x| const_of(g, x)).collect();
    let Some(lits) = lits else { return n };
    if !n.op.is_elementwise() {
        // A broadcast or reshape of a constant is the constant.
        return Node {
            op: Op::Const(lits[0]),
            inputs: vec![],
            ..n
        };
    }
    // The op on one element of each constant, as the interpreter computes every element.
    let ins: Vec<(Literal, DType)> = n
        .inputs
        .iter()
        .zip(&lits)
        .map(|(&x, &l)| (l, g.node(x).dtype))
        .collect();
    match crate::ir::semantics::eval(&n.op, &ins, n.dtype) {
        Some(l) => Node {
            op: Op::Const(l),
            inputs: vec![],
            ..n
        },
        None => n,
    }
}
