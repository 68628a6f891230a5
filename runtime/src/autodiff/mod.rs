//! Transformations on traced closures: `grad`, `value_and_grad`, `vjp`,
//! `stop_gradient`. They trace the function into a graph (a nested trace
//! inside `#[jit]`), replay it where they are called (recording into the
//! enclosing trace, or evaluating eagerly), and run the reverse-mode rules
//! on the replayed values. Inside `#[jit]` the result is one graph: forward
//! and backward together, visible in `lower(..).as_text()`, simplified and
//! fused like any other.

mod auto;
mod checkpoint;
mod control_rules;
mod recompute;
mod replay;
mod residuals;
mod rules;
mod scan_vjp;
mod tree;

pub use crate::ir::Policy;
pub use auto::{
    segmented_loops, with_auto_checkpoint, with_checkpoint_levels, BINARY, LOOP_LADDER,
};
pub use checkpoint::{checkpoint, checkpoint_name, checkpoint_with};

pub use replay::replay;
pub(crate) use replay::replay_node;
pub use residuals::{saved_residuals, Residual};
pub use rules::{backward, sum_to};
pub use tree::{join_path, Tree};

use crate::diag::phases::phase;
use crate::error::type_str;
use crate::ir::Graph;
use crate::trace::{self, fail, ParamSpec};
use crate::{Error, ErrorKind, SourceLoc, Tensor};
use std::panic::Location;

/// Identity whose gradient is zero.
#[track_caller]
pub fn stop_gradient(x: &Tensor) -> Tensor {
    crate::tensor::ops::stop_gradient(x)
}

/// Trace `f` on fresh parameters shaped like the leaves of `x`.
fn trace_leaves<T: Tree>(
    what: &str,
    x: &T,
    f: &dyn Fn(&[Tensor]) -> Vec<Tensor>,
    loc: &'static Location<'static>,
) -> trace::Traced {
    let leaves = x.leaves();
    for (i, l) in leaves.iter().enumerate() {
        if !l.dtype().is_float() {
            fail(
                Error::new(
                    ErrorKind::DType,
                    format!(
                        "`{what}`: leaf {i} is {}; only float tensors can be differentiated (cast it, or close over it instead of passing it)",
                        type_str(l.dtype(), l.shape())
                    ),
                )
                .at(loc),
            );
        }
    }
    let specs: Vec<ParamSpec> = leaves
        .iter()
        .map(|l| ParamSpec {
            shape: l.shape().to_vec(),
            dtype: l.dtype(),
            weak: false,
        })
        .collect();
    match trace::trace(&specs, f) {
        Ok(t) => t,
        Err(e) => fail(e),
    }
}

/// The value of `f` at `x` and its gradient with respect to every leaf of
/// `x`. The value must be a float scalar (shape `[]`).
#[track_caller]
pub fn value_and_grad<T: Tree>(f: impl Fn(&T) -> Tensor, x: &T) -> (Tensor, T) {
    let ((value, ()), g) = aux_at(|x: &T| (f(x), ()), x, Location::caller());
    (value, g)
}

/// `value_and_grad` of a function that also returns an auxiliary tree (JAX's
/// `has_aux=True`): `((value, aux), gradient)`, the gradient of the value alone. What a
/// batch-normalised model returns beside its loss (the updated running statistics) comes
/// out of the one forward pass.
#[track_caller]
pub fn value_and_grad_with_aux<T: Tree, A: Tree>(
    f: impl Fn(&T) -> (Tensor, A),
    x: &T,
) -> ((Tensor, A), T) {
    aux_at(f, x, Location::caller())
}

fn aux_at<T: Tree, A: Tree>(
    f: impl Fn(&T) -> (Tensor, A),
    x: &T,
    loc: SourceLoc,
) -> ((Tensor, A), T) {
    // The traced auxiliary tree is kept for its structure only.
    let structure: std::cell::RefCell<Option<A>> = std::cell::RefCell::new(None);
    let body = |ts: &[Tensor]| {
        let (value, aux) = f(&x.rebuild(&mut ts.iter().cloned()));
        let mut outs = vec![value];
        aux.collect_leaves(&mut outs);
        *structure.borrow_mut() = Some(aux);
        outs
    };
    let mut traced = trace_leaves("value_and_grad", x, &body, loc);
    // The attention pattern becomes one op before it is differentiated: its gradient is
    // then the fused one (no score matrix saved).
    traced.graph = crate::passes::fuse_attention(&traced.graph);
    // Under the automatic memory budget (while tracing a `#[jit]` body):
    // √N checkpointed segments (`auto.rs`).
    if auto::auto_checkpoint_on()
        && trace::graph_len().is_some()
        && traced.graph.checkpoints.is_empty()
    {
        traced.graph.checkpoints = phase("auto segments", || auto::segment(&traced.graph));
    }
    let g = &traced.graph;
    let out = g.outputs[0];
    let on = g.node(out);
    if !on.shape.is_empty() || !on.dtype.is_float() {
        fail(
            Error::shape(format!(
                "`grad`: the function's value must be a float scalar (shape []), found {}; reduce it first (e.g. `.sum_all()` or `.mean_all()`)",
                type_str(on.dtype, &on.shape)
            ))
            .at(loc),
        );
    }
    let leaves = x.leaves();
    if let Some(outs) = eager_value_and_grad(&traced, &leaves) {
        // Outputs: the value, the auxiliary leaves, then the gradient of each leaf.
        let mut outs = outs.into_iter();
        let value = outs.next().expect("the value");
        let aux_leaves: Vec<Tensor> = outs.by_ref().take(g.outputs.len() - 1).collect();
        let aux = structure
            .into_inner()
            .expect("traced")
            .rebuild(&mut aux_leaves.into_iter());
        return ((value, aux), x.rebuild(&mut outs));
    }
    let start = trace::graph_len();
    let vals = phase("autodiff replay", || replay(g, &leaves, &traced.captured));
    let value = vals[out.index()].clone();
    let aux_leaves: Vec<Tensor> = g.outputs[1..]
        .iter()
        .map(|o| vals[o.index()].clone())
        .collect();
    let aux = structure
        .into_inner()
        .expect("traced")
        .rebuild(&mut aux_leaves.into_iter());
    let seed = value.ones_like();
    let mid = trace::graph_len();
    let cts = phase("autodiff backward", || backward(g, &vals, &[(out, seed)]));
    if let (Some(s), Some(m), Some(e)) = (start, mid, trace::graph_len()) {
        trace::with_graph(|g| g.grad_ranges.push((s, m, e)));
    }
    let grads = leaf_grads(g, &cts, &leaves);
    ((value, aux), x.rebuild(&mut grads.into_iter()))
}

/// The cotangent of each leaf (the graph's parameters, in order) among the backward pass's
/// `cts`: zeros where none reaches it.
fn leaf_grads(g: &Graph, cts: &[Option<Tensor>], leaves: &[Tensor]) -> Vec<Tensor> {
    (g.params().iter().zip(leaves))
        .map(|(p, l)| cts[p.index()].clone().unwrap_or_else(|| l.zeros_like()))
        .collect()
}

/// The values of the graph's outputs among the forward values `vals`.
fn output_values(g: &Graph, vals: &[Tensor]) -> Vec<Tensor> {
    g.outputs.iter().map(|o| vals[o.index()].clone()).collect()
}

/// `vjp`'s pullback on the forward values `vals`: the cotangent of each leaf for the
/// cotangents `ct` of the outputs.
fn pullback(g: &Graph, vals: &[Tensor], ct: &[Tensor], leaves: &[Tensor]) -> Vec<Tensor> {
    let seeds: Vec<_> = g.outputs.iter().copied().zip(ct.iter().cloned()).collect();
    leaf_grads(g, &backward(g, vals, &seeds), leaves)
}

/// Called eagerly (outside every trace, on concrete leaves and captured tensors), the value,
/// the auxiliary leaves and the gradient of each leaf of the traced function, computed by one
/// cached compiled program of its forward and backward (`eager::fused`, keyed by the traced
/// graph and the operands' types): the kernels fuse as in a jitted call (row kernels for
/// softmax, layer norm and cross-entropy, fused attention, products reading transposed
/// operands in place) where op by op every intermediate would be a program and a buffer of
/// its own. The function is traced on every call as before, so what it computes may change
/// between calls (another graph is another program). None where the ops are to run one by
/// one: inside a trace, on the interpreter, or when the program does not compile.
fn eager_value_and_grad(traced: &trace::Traced, leaves: &[Tensor]) -> Option<Vec<Tensor>> {
    if trace::current_trace().is_some() {
        return None;
    }
    let g = &traced.graph;
    let inputs: Vec<&Tensor> = leaves.iter().chain(&traced.captured).collect();
    let key = format!("value_and_grad\n{}", g.to_text());
    crate::eager::fused(&key, &inputs, |ts| {
        let (ls, cs) = ts.split_at(leaves.len());
        let vals = replay(g, ls, cs);
        let out = g.outputs[0];
        let seed = vals[out.index()].ones_like();
        let cts = backward(g, &vals, &[(out, seed)]);
        let mut outs = output_values(g, &vals);
        outs.extend(leaf_grads(g, &cts, ls));
        outs
    })
}

/// The gradient of `f` at `x` (see `value_and_grad`).
#[track_caller]
pub fn grad<T: Tree>(f: impl Fn(&T) -> Tensor, x: &T) -> T {
    value_and_grad(f, x).1
}

/// `f(x)` and a function mapping a cotangent of the output (a tree like the
/// output) to the cotangent of `x`.
#[track_caller]
pub fn vjp<T: Tree + Clone + 'static, U: Tree>(
    f: impl Fn(&T) -> U,
    x: &T,
) -> (U, impl Fn(&U) -> T) {
    let loc = Location::caller();
    // The traced output tree is kept for its structure only.
    let structure: std::cell::RefCell<Option<U>> = std::cell::RefCell::new(None);
    let body = |ts: &[Tensor]| {
        let u = f(&x.rebuild(&mut ts.iter().cloned()));
        let leaves = u.leaves();
        *structure.borrow_mut() = Some(u);
        leaves
    };
    let mut traced = trace_leaves("vjp", x, &body, loc);
    traced.graph = crate::passes::fuse_attention(&traced.graph);
    let leaves = x.leaves();
    // Eagerly, the forward is one cached program and so is the pullback, which computes the
    // forward again rather than keeping every intermediate value alive between the two
    // calls (`eager_vjp`); in a trace, or where those do not compile, op by op, every
    // value kept for the pullback.
    let fused = eager_vjp(&traced, &leaves, None);
    let vals = fused
        .is_none()
        .then(|| replay(&traced.graph, &leaves, &traced.captured));
    let outs = match (fused, &vals) {
        (Some(outs), _) => outs,
        (None, Some(vals)) => output_values(&traced.graph, vals),
        (None, None) => unreachable!("replayed when not fused"),
    };
    let y = structure
        .into_inner()
        .expect("traced")
        .rebuild(&mut outs.into_iter());
    let x = x.clone();
    let back = move |ct: &U| -> T {
        let g = &traced.graph;
        let ct = ct.leaves();
        let grads = match &vals {
            Some(vals) => pullback(g, vals, &ct, &leaves),
            None => eager_vjp(&traced, &leaves, Some(&ct)).unwrap_or_else(|| {
                pullback(g, &replay(g, &leaves, &traced.captured), &ct, &leaves)
            }),
        };
        x.rebuild(&mut grads.into_iter())
    };
    (y, back)
}

/// Called eagerly, `vjp`'s forward (`cotangents` None: the outputs) or its pullback (the
/// gradient of each leaf for the cotangents of the outputs, the forward computed again in
/// the same program) as one cached compiled program each (`eager::fused`, keyed by the
/// traced graph and the operands' types), as `eager_value_and_grad` does for gradients.
/// None where the ops are to run one by one.
fn eager_vjp(
    traced: &trace::Traced,
    leaves: &[Tensor],
    cotangents: Option<&[Tensor]>,
) -> Option<Vec<Tensor>> {
    if trace::current_trace().is_some() {
        return None;
    }
    let g = &traced.graph;
    let mut inputs: Vec<&Tensor> = leaves.iter().chain(&traced.captured).collect();
    let Some(ct) = cotangents else {
        let key = format!("vjp forward\n{}", g.to_text());
        return crate::eager::fused(&key, &inputs, |ts| {
            let (ls, cs) = ts.split_at(leaves.len());
            output_values(g, &replay(g, ls, cs))
        });
    };
    inputs.extend(ct);
    let key = format!("vjp pullback\n{}", g.to_text());
    let (nl, nc) = (leaves.len(), traced.captured.len());
    crate::eager::fused(&key, &inputs, |ts| {
        let (ls, rest) = ts.split_at(nl);
        let (cs, ct) = rest.split_at(nc);
        pullback(g, &replay(g, ls, cs), ct, ls)
    })
}

/// `f(x)` and the directional derivative `J_f(x) v` (forward mode; `v` is a
/// tree like `x`). Computed as the transpose of the (linear) vector-Jacobian
/// map: the backward pass of the backward pass, so it costs two reverse
/// passes and needs no separate tangent rules; every rule's ops are
/// themselves differentiable, and inside `#[jit]` the whole is one graph that
/// simplification prunes.
#[track_caller]
pub fn jvp<T: Tree + Clone + 'static, U: Tree + Clone + 'static>(
    f: impl Fn(&T) -> U,
    x: &T,
    v: &T,
) -> (U, U) {
    let (xl, vl) = (x.leaves(), v.leaves());
    let same = xl.len() == vl.len()
        && xl
            .iter()
            .zip(&vl)
            .all(|(a, b)| a.shape() == b.shape() && a.dtype() == b.dtype());
    if !same {
        let show = |ls: &[Tensor]| {
            ls.iter()
                .map(|l| type_str(l.dtype(), l.shape()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        fail(
            Error::shape(format!(
                "`jvp`: the tangent must have the primal's leaves, shapes and dtypes: primal ({}), tangent ({})",
                show(&xl),
                show(&vl)
            ))
            .at(Location::caller()),
        );
    }
    let (y, back) = vjp(f, x);
    // The vector-Jacobian map u -> J^T u is linear: its own vjp at any point
    // (zeros) applied to v is (J^T)^T v = J v.
    let u0 = y.map(|l| l.zeros_like());
    let (_, back2) = vjp(move |u: &U| back(u), &u0);
    let t = back2(v);
    (y, t)
}
