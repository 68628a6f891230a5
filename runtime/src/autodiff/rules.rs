//! Reverse-mode rules: the cotangent of every operand of every op, written
//! with tensor operations on the forward values (so the backward pass is
//! traced into the same graph inside `#[jit]`, or computed eagerly).
//! Broadcasting is explicit in the IR, so "reducing a gradient back to its
//! operand's shape" is the rule of `broadcast`.

use crate::ir::{BinaryOp, Graph, Op, ReduceOp, UnaryOp, ValueId};
use crate::tensor::ops::apply;
use crate::{select, Tensor};
use std::panic::Location;

fn shape_isize(s: &[usize]) -> Vec<isize> {
    s.iter().map(|&d| d as isize).collect()
}

/// Sum `t` down to `shape` (which broadcasts to `t`'s shape).
pub fn sum_to(t: &Tensor, shape: &[usize]) -> Tensor {
    let ts = t.shape().to_vec();
    if ts == shape {
        return t.clone();
    }
    let off = ts.len() - shape.len();
    let axes: Vec<isize> = (0..ts.len())
        .filter(|&d| d < off || (shape[d - off] == 1 && ts[d] != 1))
        .map(|d| d as isize)
        .collect();
    let s = if axes.is_empty() {
        t.clone()
    } else {
        t.sum(axes)
    };
    s.reshape(&shape_isize(shape))
}

/// The cotangent of `b` in `a @ b` from the product's cotangent `c`: `Σ aᵀ c` over the
/// batch axes `b` broadcasts over. A matrix `b` shared by a whole batch of `a` (a layer's
/// weight) gets one product over all the batch's rows, `a` and `c` flattened to
/// `[batch · m, ..]` (views of contiguous values), not a product per batch element summed
/// afterwards: a third of the GEMM time and no `[batch, k, n]` temporary.
fn matmul_rhs_grad(a: &Tensor, b: &Tensor, c: &Tensor) -> Tensor {
    let (ra, rb) = (a.ndim(), b.ndim());
    if rb == 2 && ra > 2 {
        let rows: usize = a.shape()[..ra - 1].iter().product();
        let a2 = a.reshape(&[rows as isize, a.shape()[ra - 1] as isize]);
        let c2 = c.reshape(&[rows as isize, c.shape()[c.ndim() - 1] as isize]);
        return transposed_matmul(&a2, &c2, true);
    }
    sum_to(&transposed_matmul(a, c, true), b.shape())
}

/// `aᵀ·b` (`left`) or `a·bᵀ`. Traced, the transpose is a node the product's library step
/// reads with strides; eagerly both run as one cached program for the same reason, where
/// an eager transpose would copy the operand first.
fn transposed_matmul(a: &Tensor, b: &Tensor, left: bool) -> Tensor {
    let ops = |a: &Tensor, b: &Tensor| {
        if left {
            a.t().matmul(b)
        } else {
            a.matmul(&b.t())
        }
    };
    let name = if left { "aT b" } else { "a bT" };
    crate::eager::fused(name, &[a, b], |t| vec![ops(&t[0], &t[1])])
        .map(|mut r| r.remove(0))
        .unwrap_or_else(|| ops(a, b))
}

/// Broadcast a reduction's cotangent (shape without `axes`) back over `x`.
fn unreduce(ct: &Tensor, x: &Tensor, axes: &[usize]) -> Tensor {
    let keep: Vec<isize> = (0..x.ndim())
        .map(|d| {
            if axes.contains(&d) {
                1
            } else {
                x.shape()[d] as isize
            }
        })
        .collect();
    ct.reshape(&keep).broadcast_to(x.shape())
}

/// Cotangents of all nodes reachable backwards from the seeded outputs.
/// `vals` are the forward values of every node. Only float nodes carry
/// cotangents.
pub fn backward(g: &Graph, vals: &[Tensor], seeds: &[(ValueId, Tensor)]) -> Vec<Option<Tensor>> {
    let here = Location::caller();
    let mut vals: Vec<Tensor> = vals.to_vec();
    // The last node of each checkpoint region: reaching it (backwards)
    // triggers the region's recomputation.
    let mut region_at: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for (r, reg) in g.checkpoints.iter().enumerate() {
        if let Some(last) = reg.nodes.last() {
            region_at.insert(last.index(), r);
        }
    }
    let mut ct: Vec<Option<Tensor>> = vec![None; g.nodes.len()];
    // Only values that depend on a parameter need a cotangent: the others
    // (closed-over inputs, constants) are never differentiated, and their
    // cotangents would keep forward values alive for nothing.
    let mut requires = vec![false; g.nodes.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        requires[i] = matches!(n.op, Op::Param(_)) || n.inputs.iter().any(|x| requires[x.index()]);
    }
    let add = |ct: &mut Vec<Option<Tensor>>, v: ValueId, t: Tensor| {
        if !g.node(v).dtype.is_float() || !requires[v.index()] {
            return;
        }
        let t = if t.dtype() != g.node(v).dtype {
            t.cast(g.node(v).dtype)
        } else {
            t
        };
        ct[v.index()] = Some(match ct[v.index()].take() {
            Some(old) => old + t,
            None => t,
        });
    };
    for (v, t) in seeds {
        add(&mut ct, *v, t.clone());
    }
    let mut get_cts: std::collections::HashMap<usize, Vec<(usize, Tensor)>> = Default::default();
    for i in (0..g.nodes.len()).rev() {
        if let Some(&r) = region_at.get(&i) {
            super::recompute::recompute_region(g, &g.checkpoints[r], &mut vals, &ct);
        }
        // Control flow: outputs beyond the first arrive through `get` nodes
        // (later in the graph, so visited first).
        if let Op::Get(k) = g.nodes[i].op {
            if let Some(c) = ct[i].clone() {
                get_cts
                    .entry(g.nodes[i].inputs[0].index())
                    .or_default()
                    .push((k, c));
            }
            continue;
        }
        if g.nodes[i].op.is_control() {
            let n = &g.nodes[i];
            let mut outs: Vec<Option<Tensor>> = vec![None; n.op.control_outputs().len()];
            outs[0] = ct[i].clone();
            for (k, c) in get_cts.remove(&i).unwrap_or_default() {
                outs[k] = Some(c);
            }
            if outs.iter().all(Option::is_none) {
                continue;
            }
            let _at = crate::trace::LocOverride::set(n.loc);
            let ins: Vec<Tensor> = n.inputs.iter().map(|x| vals[x.index()].clone()).collect();
            let needs: Vec<bool> = n
                .inputs
                .iter()
                .map(|x| requires[x.index()] && g.node(*x).dtype.is_float())
                .collect();
            let in_cts = super::control_rules::control_vjp(
                &n.op,
                &ins,
                &outs,
                &needs,
                n.loc.unwrap_or(here),
            );
            for (k, c) in in_cts.into_iter().enumerate() {
                if let (Some(c), true) = (c, needs[k]) {
                    add(&mut ct, n.inputs[k], c);
                }
            }
            continue;
        }
        if let Op::AttentionGrad(_) = g.nodes[i].op {
            // Checked here, not in the match below: a cotangent may reach only its
            // `get`s (dk, dv), never the node itself.
            if ct[i].is_some() || get_cts.contains_key(&i) {
                crate::trace::fail(crate::Error::shape(
                    "attention_grad: second derivatives of attention are not supported".to_string(),
                ));
            }
            continue;
        }
        let Some(c) = ct[i].clone() else { continue };
        let n = &g.nodes[i];
        let loc = n.loc.unwrap_or(here);
        // Backward nodes carry the location of the forward op they come from.
        let _at = crate::trace::LocOverride::set(n.loc);
        let y = &vals[i];
        let x = |k: usize| &vals[n.inputs[k].index()];
        let inp = |k: usize| n.inputs[k];
        // Whether operand k needs a cotangent (computing one it does not
        // need would keep forward values alive for nothing).
        let need = |k: usize| requires[n.inputs[k].index()] && g.node(n.inputs[k]).dtype.is_float();
        match &n.op {
            Op::Param(_)
            | Op::Const(_)
            | Op::Captured(_)
            | Op::Iota(_)
            // Random values depend on the key only (an integer): no gradient.
            | Op::Random(_)
            | Op::ArgMax(_)
            | Op::ArgMin(_)
            | Op::Compare(_) => {}
            Op::Unary(u) => {
                let a = x(0);
                let d = match u {
                    UnaryOp::Neg => Some(-&c),
                    UnaryOp::Exp => Some(&c * y),
                    UnaryOp::Ln => Some(&c / a),
                    UnaryOp::Tanh => Some(&c * (1.0 - y * y)),
                    UnaryOp::Sqrt => Some(&c * 0.5 / y),
                    UnaryOp::Rsqrt => Some(&c * -0.5 * y / a),
                    UnaryOp::Abs => {
                        Some(&c * select(a.gt(0), 1.0, select(a.lt(0), -1.0, 0.0)).cast(a.dtype()))
                    }
                    // relu(x) > 0 exactly where x > 0: the mask from the output
                    // keeps the pre-activation from being saved.
                    UnaryOp::Relu => Some(select(y.gt(0), &c, 0.0)),
                    UnaryOp::Sigmoid => Some(&c * y * (1.0 - y)),
                    UnaryOp::Sin => Some(&c * a.cos()),
                    UnaryOp::Cos => Some(-(&c * a.sin())),
                    UnaryOp::Square => Some(&c * 2.0 * a),
                    UnaryOp::Recip => Some(-(&c * y * y)),
                    UnaryOp::Erf => {
                        Some(&c * std::f64::consts::FRAC_2_SQRT_PI * (-a.square()).exp())
                    }
                    UnaryOp::Log1p => Some(&c / (a + 1.0)),
                    UnaryOp::Expm1 => Some(&c * a.exp()),
                    UnaryOp::Floor | UnaryOp::StopGradient | UnaryOp::Not => None,
                };
                if let Some(d) = d {
                    if need(0) {
                        add(&mut ct, inp(0), d);
                    }
                }
            }
            Op::Binary(b) => {
                let (a, bb) = (x(0), x(1));
                match b {
                    BinaryOp::Add => {
                        if need(0) {
                            add(&mut ct, inp(0), c.clone());
                        }
                        if need(1) {
                            add(&mut ct, inp(1), c);
                        }
                    }
                    BinaryOp::Sub => {
                        if need(0) {
                            add(&mut ct, inp(0), c.clone());
                        }
                        if need(1) {
                            add(&mut ct, inp(1), -&c);
                        }
                    }
                    BinaryOp::Mul => {
                        if need(0) {
                            add(&mut ct, inp(0), &c * bb);
                        }
                        if need(1) {
                            add(&mut ct, inp(1), &c * a);
                        }
                    }
                    BinaryOp::Div => {
                        if need(0) {
                            add(&mut ct, inp(0), &c / bb);
                        }
                        if need(1) {
                            add(&mut ct, inp(1), -(&c * y / bb));
                        }
                    }
                    BinaryOp::Max | BinaryOp::Min => {
                        // Ties split the gradient evenly, as JAX does.
                        let wins = if *b == BinaryOp::Max {
                            a.gt(bb)
                        } else {
                            a.lt(bb)
                        };
                        let share = select(&wins, 1.0, select(a.eq(bb), 0.5, 0.0)).cast(a.dtype());
                        if need(0) {
                            add(&mut ct, inp(0), &c * &share);
                        }
                        if need(1) {
                            add(&mut ct, inp(1), &c * (1.0 - &share));
                        }
                    }
                    BinaryOp::Pow => {
                        if need(0) {
                            add(&mut ct, inp(0), &c * bb * a.powf(bb - 1.0));
                        }
                        if need(1) {
                            add(&mut ct, inp(1), select(a.gt(0), &c * y * a.ln(), 0.0));
                        }
                    }
                    BinaryOp::Rem => {
                        if need(0) {
                            add(&mut ct, inp(0), c.clone());
                        }
                        if need(1) {
                            add(&mut ct, inp(1), -(&c * ((a - y) / bb)));
                        }
                    }
                    BinaryOp::And | BinaryOp::Or => {}
                }
            }
            Op::Select => {
                let cond = x(0);
                if need(1) {
                    add(&mut ct, inp(1), select(cond, &c, 0.0));
                }
                if need(2) {
                    add(&mut ct, inp(2), select(cond, 0.0, &c));
                }
            }
            Op::Cast(_) => {
                if x(0).dtype().is_float() {
                    if need(0) {
                        add(&mut ct, inp(0), c.cast(x(0).dtype()));
                    }
                }
            }
            Op::Broadcast => add(&mut ct, inp(0), sum_to(&c, x(0).shape())),
            Op::Reshape => add(&mut ct, inp(0), c.reshape(&shape_isize(x(0).shape()))),
            Op::Transpose(p) => {
                let mut inv = vec![0; p.len()];
                for (i, &q) in p.iter().enumerate() {
                    inv[q] = i;
                }
                if need(0) {
                    add(&mut ct, inp(0), c.transpose(&inv));
                }
            }
            Op::Slice(sl) => {
                let t = apply(
                    Op::SliceScatter(sl.clone()),
                    &[&c],
                    x(0).shape().to_vec(),
                    c.dtype(),
                    loc,
                );
                if need(0) {
                    add(&mut ct, inp(0), t);
                }
            }
            Op::SliceScatter(sl) => {
                let t = apply(
                    Op::Slice(sl.clone()),
                    &[&c],
                    x(0).shape().to_vec(),
                    c.dtype(),
                    loc,
                );
                if need(0) {
                    add(&mut ct, inp(0), t);
                }
            }
            Op::Concat(axis) => {
                let mut start = 0i64;
                for k in 0..n.inputs.len() {
                    let s = x(k).shape().to_vec();
                    let sl: Vec<(i64, i64)> = (0..s.len())
                        .map(|d| (if d == *axis { start } else { 0 }, 1))
                        .collect();
                    start += s[*axis] as i64;
                    let t = apply(Op::Slice(sl), &[&c], s, c.dtype(), loc);
                    if need(k) {
                        add(&mut ct, inp(k), t);
                    }
                }
            }
            Op::Pad(p, _) => {
                let sl: Vec<(i64, i64)> = p.iter().map(|&(lo, _)| (lo as i64, 1)).collect();
                let t = apply(Op::Slice(sl), &[&c], x(0).shape().to_vec(), c.dtype(), loc);
                if need(0) {
                    add(&mut ct, inp(0), t);
                }
            }
            Op::Reduce(r, axes) => {
                let a = x(0);
                let t = match r {
                    ReduceOp::Sum => unreduce(&c, a, axes),
                    ReduceOp::Max | ReduceOp::Min => {
                        let at = a.eq(unreduce(y, a, axes)).cast(a.dtype());
                        let count = unreduce(
                            &at.sum(axes.iter().map(|&d| d as isize).collect::<Vec<_>>()),
                            a,
                            axes,
                        );
                        unreduce(&c, a, axes) * &at / count
                    }
                    ReduceOp::Prod => {
                        // ∂prod/∂x_i is the product of the others: prod / x_i while no
                        // element is 0 (0 / 0 = NaN at a zero otherwise); with one zero,
                        // the product of the rest at the zero and 0 · rest elsewhere; with
                        // more, 0 · rest everywhere. `0 · rest` rather than 0: it is NaN
                        // where the others hold a NaN or an infinity, as multiplying them
                        // out is, so a value that rounds to exactly 0 on one backend and
                        // to a tiny nonzero on another cannot turn a NaN into a 0.
                        let ax: Vec<isize> = axes.iter().map(|&d| d as isize).collect();
                        let zero = a.eq(0.0);
                        let zeros = unreduce(&zero.cast(a.dtype()).sum(ax.clone()), a, axes);
                        let rest = unreduce(&select(&zero, 1.0, a).prod(ax), a, axes);
                        let one_zero = zeros.eq(1.0).logical_and(&zero);
                        let others = unreduce(&c, a, axes) * rest;
                        let at_zero = select(&one_zero, &others, &(&others * 0.0));
                        select(&zeros.eq(0.0), &(unreduce(&(&c * y), a, axes) / a), &at_zero)
                    }
                };
                if need(0) {
                    add(&mut ct, inp(0), t);
                }
            }
            Op::Take(axis) => {
                let t = apply(
                    Op::ScatterAdd(*axis),
                    &[&c, x(1)],
                    x(0).shape().to_vec(),
                    c.dtype(),
                    loc,
                );
                if need(0) {
                    add(&mut ct, inp(0), t);
                }
            }
            Op::ScatterAdd(axis) => add(&mut ct, inp(0), c.take(x(1), *axis as isize)),
            Op::Barrier => add(&mut ct, inp(0), c),
            // The sum over the ranks is linear and its own transpose (JAX's `psum`): every
            // rank's input reaches every rank's output.
            Op::AllReduce(ReduceOp::Sum) => {
                let t = apply(
                    Op::AllReduce(ReduceOp::Sum),
                    &[&c],
                    c.shape().to_vec(),
                    c.dtype(),
                    loc,
                );
                add(&mut ct, inp(0), t);
            }
            // A gather's transpose is the sum scattered back (JAX's `all_gather` and
            // `psum_scatter`), and the reverse.
            Op::AllGather(axis, ranks) => {
                let op = Op::ReduceScatter(ReduceOp::Sum, *axis, *ranks);
                let t = apply(op, &[&c], x(0).shape().to_vec(), c.dtype(), loc);
                add(&mut ct, inp(0), t);
            }
            Op::ReduceScatter(ReduceOp::Sum, axis, ranks) => {
                let op = Op::AllGather(*axis, *ranks);
                let t = apply(op, &[&c], x(0).shape().to_vec(), c.dtype(), loc);
                add(&mut ct, inp(0), t);
            }
            // Every rank's output is the root's input: the root's gradient is the sum of
            // every rank's cotangent, the others' zero (the sum still runs on every rank).
            Op::BroadcastFrom(root) => {
                let sum = Op::AllReduce(ReduceOp::Sum);
                let t = apply(sum, &[&c], c.shape().to_vec(), c.dtype(), loc);
                let t = if crate::library::collective::world().rank == *root {
                    t
                } else {
                    // Zeros that still read the sum: every rank must run the collective
                    // (a select on a constant predicate is not simplified away).
                    let off = Tensor::full(t.shape(), 0, crate::DType::Bool);
                    select(&off, &t, 0.0)
                };
                add(&mut ct, inp(0), t);
            }
            Op::ReduceScatter(..) => crate::trace::fail(crate::Error::shape(format!(
                "dist::reduce_scatter: {} has no gradient; use Sum or Mean",
                n.op.name()
            ))),
            Op::AllReduce(r) => crate::trace::fail(crate::Error::shape(format!(
                "dist::all_reduce: {} has no gradient (as JAX's pmax and pmin have none); \
                 use Sum or Mean",
                Op::AllReduce(*r).name()
            ))),
            // Handled above.
            Op::Cond(_) | Op::While(_) | Op::Scan(_) | Op::Get(_) => {}
            Op::Attention(spec) => {
                if spec.mask == crate::ir::MaskKind::Additive && need(3) {
                    crate::trace::fail(crate::Error::shape(format!(
                        "attention: the gradient with respect to an additive mask {} is not \
                         supported (add the bias to the scores of the unfused composition)",
                        crate::error::type_str(x(3).dtype(), x(3).shape())
                    )));
                }
                if need(0) || need(1) || need(2) {
                    // The forward output is saved for the gradient (D = rowsum(dO ∘ O));
                    // `passes::attention::recompute_outputs` drops it where nothing else
                    // keeps it alive.
                    let mut ins = vec![x(0), x(1), x(2), y, &c];
                    if spec.mask.has_operand() {
                        ins.push(x(3));
                    }
                    let parts = crate::tensor::attention::attention_grad_parts(*spec, &ins, loc);
                    for (k, t) in parts.into_iter().enumerate() {
                        if need(k) {
                            add(&mut ct, inp(k), t);
                        }
                    }
                }
            }
            Op::AttentionGrad(_) => unreachable!("handled above"),
            // The family's members are the partial derivatives of one trilinear form
            // (`ir::conv`): the gradient of each is another member.
            Op::Conv(spec) => {
                use crate::ir::ConvRole::{Input, Output, Weight};
                use crate::tensor::conv::conv_part;
                let (a, b) = (x(0), x(1));
                // The role and operands giving the cotangent of operand 0, then of 1.
                let [first, second] = match spec.role {
                    Output => [(Input, (&c, b)), (Weight, (a, &c))],
                    Input => [(Output, (&c, b)), (Weight, (&c, a))],
                    Weight => [(Input, (b, &c)), (Output, (a, &c))],
                };
                for (k, (role, ops)) in [first, second].into_iter().enumerate() {
                    if need(k) {
                        let shape = x(k).shape().to_vec();
                        add(&mut ct, inp(k), conv_part(spec, role, ops, &shape, loc));
                    }
                }
            }
            // The family (`ir::window`) is closed: each member's gradient is another.
            Op::Window(spec) => {
                use crate::ir::WindowRole::{Max, MaxGather, MaxScatter, Sum, SumTranspose};
                use crate::tensor::window::window_part;
                let shape = |k: usize| x(k).shape().to_vec();
                match spec.role {
                    Max if need(0) => {
                        add(&mut ct, inp(0), window_part(spec, MaxScatter, &[x(0), &c], &shape(0), loc))
                    }
                    Sum if need(0) => {
                        add(&mut ct, inp(0), window_part(spec, SumTranspose, &[&c], &shape(0), loc))
                    }
                    SumTranspose if need(0) => {
                        add(&mut ct, inp(0), window_part(spec, Sum, &[&c], &shape(0), loc))
                    }
                    // The winners are piecewise constant in `x`: no gradient through them.
                    MaxScatter if need(1) => {
                        add(&mut ct, inp(1), window_part(spec, MaxGather, &[x(0), &c], &shape(1), loc))
                    }
                    MaxGather if need(1) => {
                        add(&mut ct, inp(1), window_part(spec, MaxScatter, &[x(0), &c], &shape(1), loc))
                    }
                    _ => {}
                }
            }
            Op::Matmul => {
                let (a, b) = (x(0), x(1));
                // A product of 16-bit operands with an f32 result (`matmul_with`): the
                // gradients of its 16-bit operands are 16-bit products of the cotangent.
                let c = if c.dtype() != a.dtype() {
                    c.cast(a.dtype())
                } else {
                    c.clone()
                };
                if need(0) {
                    add(&mut ct, inp(0), sum_to(&transposed_matmul(&c, b, false), a.shape()));
                }
                if need(1) {
                    add(&mut ct, inp(1), matmul_rhs_grad(a, b, &c));
                }
            }
        }
    }
    ct
}
