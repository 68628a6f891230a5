//! The rounding-noise scale of each output of a graph: the output computed
//! again with every linear combination replaced by the sum of its terms'
//! magnitudes (`|a| + |b|` for `a - b`, `Σ|x|` for a sum, `|a|·|b|` summed for
//! a matmul), a classic bound's shape: a float sum in any order is within
//! `n·ε·Σ|xᵢ|` of the exact one. Where terms cancel (`Σ(x - flip x)` is 0;
//! the gradient of a sum of softmax rows is `s·(g - Σ g·s)`, 0 from terms of
//! the cotangent's size) the result is rounding noise of that size, and the
//! comparison's scale must be that size, not the result's.
//!
//! Linear structure (views, sums, products, quotients, selects, convolutions) carries
//! magnitude forward, in f64 whatever the values' type. An elementwise product takes the
//! first-order propagation where that is smaller (`|b|·|a|~ + |a|·|b|~`, each value times
//! the other's magnitude, when an operand is mostly noise). A select whose predicate
//! compares values within their rounding of each other may take either branch, and carries
//! the branches' difference as noise (the sign in the gradient of `1/(|conv| + 0.5)` where
//! the conv sum cancelled, fuzz seed 14501095106). A max or min carries the noise of the
//! operand it took. Where an input is mostly noise (its noise more than
//! twice its magnitude: terms cancelled in it), a smooth function carries that
//! noise times its slope (`tanh`, `sin`, `cos`: 1; `sigmoid` 1/4; `erf` 2/√π;
//! `square`, `exp`, `ln`, `sqrt`, `rsqrt`, `recip`, `log1p`, `expm1`: |f'| at
//! the input), and a quotient the noise of its divisor. A computed input that is not
//! mostly noise is still rounded: a smooth function carries its noise times |f'| at the
//! input (`exp` of a rounded argument near 27 moves by 27 times the argument's relative
//! rounding: a false alarm of bf16 programs, where the interpreter rounds the argument to
//! bf16 and a fused kernel keeps it in f32). Two false alarms of
//! long runs: `tanh` of a product whose factor `1 + tanh(-8)` came out 0
//! compiled and 2.4e-7 interpreted is that product's noise, not its own tiny
//! value; `ln(|s²/(s²+0.5)| + 0.5)` of an element `s ≈ 0.75` of `x xᵀ` summed
//! from 1,030 terms of size 1 moved by 2e-5 with the order of the terms.
//! `sin` and `cos` of a computed (rounded) argument carry its noise: their result moves
//! by as much as the argument's rounding error, however large the argument (`cos` of
//! the variance of a column of i32 values near 1e4). Any other op starts again from its
//! own value's magnitude. So a parameter's noise is its own size and `sin` of a large
//! exact argument keeps the strict scale of its result (an inaccurate range reduction
//! still fails), while the conditioning of another nonlinear op on a large inexact input
//! stays the generator's business (it does not make those).

use crate::common::to_f64s;
use jitfuse::internals::interpret;
use jitfuse::internals::interpret::eval_graph;
use jitfuse::internals::ir::{BinaryOp, Graph, Node, Op, UnaryOp, ValueId};
use jitfuse::{DType, Tensor};

fn is_float(d: DType) -> bool {
    d.is_float()
}

fn abs(t: &Tensor) -> Tensor {
    interpret::eval_op(&Op::Unary(UnaryOp::Abs), &[t], t.shape(), t.dtype())
        .expect("abs of a float tensor")
}

/// A binary node's operands' values and noise scales, as f64s: `(va, vb, sa, sb)`.
fn operand_pair(n: &Node, v: &[Tensor], s: &[Tensor]) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let (a, b) = (n.inputs[0].index(), n.inputs[1].index());
    (
        to_f64s(&v[a]),
        to_f64s(&v[b]),
        to_f64s(&s[a]),
        to_f64s(&s[b]),
    )
}

/// The magnitude tensor of node `n` from its inputs' magnitudes `s` (floats)
/// and values `v` (the rest), or `None`: use the node's own `|value|`.
fn propagate(g: &Graph, i: usize, s: &[Tensor], v: &[Tensor]) -> Option<Tensor> {
    let n = &g.nodes[i];
    let pick = |x: ValueId| -> &Tensor {
        if is_float(g.node(x).dtype) {
            &s[x.index()]
        } else {
            &v[x.index()]
        }
    };
    let same = |op: &Op| -> Option<Tensor> {
        let ins: Vec<&Tensor> = n.inputs.iter().map(|&x| pick(x)).collect();
        interpret::eval_op(op, &ins, &n.shape, DType::F64).ok()
    };
    match &n.op {
        Op::Broadcast
        | Op::Reshape
        | Op::Transpose(_)
        | Op::Slice(_)
        | Op::Concat(_)
        | Op::Pad(..)
        | Op::Take(_)
        | Op::Matmul
        | Op::SliceScatter(_)
        | Op::ScatterAdd(_)
        | Op::Barrier
        | Op::Conv(_)
        | Op::Reduce(_, _)
        | Op::Binary(BinaryOp::Add)
        | Op::Unary(UnaryOp::Neg | UnaryOp::Abs | UnaryOp::StopGradient) => same(&n.op),
        // (Magnitudes are f64: a cast carries its operand's.)
        Op::Cast(_) if is_float(g.node(n.inputs[0]).dtype) => Some(s[n.inputs[0].index()].clone()),
        Op::Binary(BinaryOp::Sub) => same(&Op::Binary(BinaryOp::Add)),
        Op::Select => {
            // The taken branch's magnitude; where the predicate compares two values within
            // their rounding of each other (`x > 0` of a cancelled sum: the sign in the
            // gradient of `|x|`), either branch, and their difference as noise: the two
            // results may differ by all of it.
            let taken = same(&n.op)?;
            let c = g.node(n.inputs[0]);
            if !matches!(c.op, Op::Compare(_)) || !is_float(g.node(c.inputs[0]).dtype) {
                return Some(taken);
            }
            let (va, vb, sa, sb) = operand_pair(c, v, s);
            let (x, y) = (n.inputs[1].index(), n.inputs[2].index());
            let (vx, vy, sx, sy) = (
                to_f64s(&v[x]),
                to_f64s(&v[y]),
                to_f64s(&s[x]),
                to_f64s(&s[y]),
            );
            let (near, u) = (4.0 * unit(g.node(c.inputs[0]).dtype), unit(n.dtype));
            let out = to_f64s(&taken)
                .into_iter()
                .enumerate()
                .map(|(k, m)| {
                    let apart = (vx[k] - vy[k]).abs() / u;
                    if (va[k] - vb[k]).abs() <= near * (sa[k] + sb[k]) && apart.is_finite() {
                        m.max(sx[k]).max(sy[k]).max(apart)
                    } else {
                        m
                    }
                })
                .collect();
            Some(magnitude(out, &n.shape))
        }
        Op::Binary(BinaryOp::Mul) => {
            // `|a|·|b|` of the magnitudes, or the propagation of their noise, where that is
            // smaller: `|b|·|a|~ + |a|·|b|~ + u·|a|~·|b|~` (values times magnitudes, and the
            // product of the two noises, `u` the type's unit of tolerance, in which a
            // magnitude is noise). An operand that is mostly noise (`tanh` of a cancelled
            // argument, 0.09 of noise 9) moves the product by its noise times the other's
            // value, where the product of magnitudes (81 for its square) compounded through
            // a gradient's products to a scale 9,000 times the result's.
            let (va, vb, sa, sb) = operand_pair(n, v, s);
            let u = unit(n.dtype);
            let out = (0..va.len())
                .map(|k| {
                    let first = vb[k].abs() * sa[k] + va[k].abs() * sb[k];
                    (sa[k] * sb[k]).min(first + u * sa[k] * sb[k])
                })
                .map(|m| if m.is_nan() { f64::INFINITY } else { m })
                .collect();
            Some(magnitude(out, &n.shape))
        }
        Op::Binary(BinaryOp::Max | BinaryOp::Min) => {
            // The noise of the operand the value is taken from, not the max or min of the
            // two noises (`min(x, log_softmax(x))` is the log-softmax term, however small
            // `x`'s own noise); both where the operands are within their noise of each
            // other and rounding may pick either (`max(var, 0)` of a cancelled variance).
            let (va, vb, sa, sb) = operand_pair(n, v, s);
            let own = to_f64s(&v[i]);
            let out = (0..own.len())
                .map(|k| {
                    let close = mostly_noise(sa[k] + sb[k], va[k] - vb[k]);
                    match (own[k] == va[k], own[k] == vb[k]) {
                        (true, false) if !close => sa[k],
                        (false, true) if !close => sb[k],
                        _ => sa[k].max(sb[k]),
                    }
                })
                .collect();
            Some(magnitude(out, &n.shape))
        }
        Op::Binary(BinaryOp::Div) => {
            let (a, b) = (n.inputs[0].index(), n.inputs[1].index());
            let (sa, sb, vb) = (to_f64s(&s[a]), to_f64s(&s[b]), to_f64s(&v[b]));
            let own = to_f64s(&v[i]);
            let out: Vec<f64> = (0..own.len())
                .map(|k| {
                    let q = sa[k] / vb[k].abs();
                    // A divisor that is mostly noise moves the quotient by its own
                    // relative noise.
                    if mostly_noise(sb[k], vb[k]) {
                        q + own[k].abs() * sb[k] / vb[k].abs()
                    } else {
                        q
                    }
                })
                .collect();
            Some(magnitude(out, &n.shape))
        }
        Op::Unary(op @ (UnaryOp::Sin | UnaryOp::Cos)) if !exact(g, n.inputs[0]) => {
            // A periodic function of a computed argument: the argument's rounding error
            // (of its noise's scale) moves the result by as much, whatever the result's own
            // size (`cos` of a variance of 1e7 is any value in [-1, 1] after an f32 sum).
            let a = n.inputs[0].index();
            let noise = to_f64s(&s[a]);
            let own = to_f64s(&v[i]);
            let _ = op;
            let out = own
                .iter()
                .zip(&noise)
                .map(|(y, e)| y.abs().max(*e))
                .collect();
            Some(magnitude(out, &n.shape))
        }
        Op::Unary(op) => {
            // |f'| at the input `x` (result `y`).
            let slope: fn(f64, f64) -> f64 = match op {
                UnaryOp::Tanh | UnaryOp::Sin | UnaryOp::Cos => |_, _| 1.0,
                UnaryOp::Sigmoid => |_, _| 0.25,
                // 2/√π
                UnaryOp::Erf => |_, _| 1.1284,
                UnaryOp::Square => |x, _| 2.0 * x.abs(),
                UnaryOp::Exp | UnaryOp::Expm1 => |x, _| x.exp(),
                UnaryOp::Ln => |x, _| 1.0 / x.abs(),
                UnaryOp::Log1p => |x, _| 1.0 / (1.0 + x).abs(),
                UnaryOp::Sqrt => |_, y| 0.5 / y.abs(),
                UnaryOp::Rsqrt => |x, y| 0.5 * y.abs() / x.abs(),
                UnaryOp::Recip => |_, y| y * y,
                _ => return None,
            };
            // |f'| itself, where the input is not noise but rounded: a relative rounding
            // of the input moves the result by |x f'(x)| times as much relatively (`exp`
            // of a bf16 product near 27, one bf16 ulp of it 0.1 and of the result 10 %:
            // the interpreter rounds the product to bf16, the fused kernel keeps it in f32).
            let rounded: fn(f64, f64) -> f64 = match op {
                UnaryOp::Tanh => |_, y| 1.0 - y * y,
                UnaryOp::Sigmoid => |_, y| y * (1.0 - y),
                UnaryOp::Erf => |x, _| 1.1284 * (-x * x).exp(),
                UnaryOp::Sin => |x, _| x.cos().abs(),
                UnaryOp::Cos => |x, _| x.sin().abs(),
                _ => slope,
            };
            let a = n.inputs[0].index();
            let computed = !exact(g, n.inputs[0]);
            let (noise, value) = (to_f64s(&s[a]), to_f64s(&v[a]));
            let own = to_f64s(&v[i]);
            let out: Vec<f64> = own
                .iter()
                .zip(noise.iter().zip(&value))
                .map(|(&y, (&e, &x))| {
                    if mostly_noise(e, x) {
                        y.abs().max(slope(x, y) * e)
                    } else if computed {
                        y.abs().max(rounded(x, y).abs() * e)
                    } else {
                        y.abs()
                    }
                })
                .collect();
            Some(magnitude(out, &n.shape))
        }
        _ => None,
    }
}

/// The tolerance's unit of a float type (`check::compare_with`'s absolute term): the
/// noise of a value of magnitude `m` is about `unit · m`.
fn unit(d: DType) -> f64 {
    match d {
        DType::F64 => 1e-11,
        DType::F32 => 2e-5,
        DType::F16 => 4.0 * 2f64.powi(-10),
        _ => 4.0 * 2f64.powi(-7),
    }
}

/// Whether value `x` is exact: a parameter, a constant, an iota, or a view, negation or
/// absolute value of exact values (no rounding went into it).
fn exact(g: &Graph, x: ValueId) -> bool {
    let n = g.node(x);
    match &n.op {
        Op::Param(_) | Op::Const(_) | Op::Iota(_) => true,
        Op::Broadcast
        | Op::Reshape
        | Op::Transpose(_)
        | Op::Slice(_)
        | Op::Unary(UnaryOp::Neg | UnaryOp::Abs | UnaryOp::StopGradient) => {
            n.inputs.iter().all(|&y| exact(g, y))
        }
        _ => false,
    }
}

/// Whether a value of noise scale `noise` is mostly noise: terms cancelled in it, so its
/// last bits differ between orders of summation by more than its own size.
fn mostly_noise(noise: f64, value: f64) -> bool {
    noise > 2.0 * value.abs()
}

/// A magnitude tensor of `shape` from its f64 values.
fn magnitude(x: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(x, shape).expect("a magnitude of the node's shape")
}

/// `t`'s values as f64: magnitudes are kept in f64, where products of 16-bit magnitudes
/// overflowed to infinity (and so out of an output's scale: the gradient of
/// `tanh(var(x) + x)` in f16 came out with no noise at all, and failed on roundings of
/// values 20 times its size).
fn as_f64(t: &Tensor) -> Tensor {
    magnitude(to_f64s(t), t.shape())
}

/// Every node's value, from the interpreter: the outputs and the input of `scales`
/// (control flow and attention included: their results start afresh from their
/// magnitudes).
pub fn node_values(
    g: &Graph,
    args: &[Tensor],
    captured: &[Tensor],
) -> Result<Vec<Tensor>, jitfuse::Error> {
    let mut all = g.clone();
    all.outputs = (0..g.nodes.len() as u32).map(ValueId).collect();
    eval_graph(&all, args, captured)
}

/// Every node's noise magnitude (its value for integers and bools), from every node's
/// value `v` (`node_values`); the parameters' magnitudes are `params` where given (a
/// branch's operands), else their own values.
fn magnitudes(g: &Graph, v: &[Tensor], params: Option<&[Tensor]>) -> Vec<Tensor> {
    let mut s: Vec<Tensor> = Vec::with_capacity(v.len());
    for i in 0..g.nodes.len() {
        let t = match (&g.nodes[i].op, params) {
            (Op::Param(k), Some(p)) => p[*k].clone(),
            _ if is_float(g.nodes[i].dtype) => {
                let p = propagate(g, i, &s, v)
                    .or_else(|| taken_branch(g, i, &s, v))
                    .unwrap_or_else(|| v[i].clone());
                abs(&as_f64(&p))
            }
            _ => v[i].clone(),
        };
        s.push(t);
    }
    s
}

/// The magnitude of a one-output `cond`: its taken branch's, the operands' magnitudes
/// carried in (a softmax gradient's cancelled terms, `(1/s - Σe/s²)·e`, stay noise of
/// their terms' size when a branch multiplies them by `exp(x)`, where starting afresh
/// from the branch's value, 0, failed on one bf16 ulp of `1/s`).
fn taken_branch(g: &Graph, i: usize, s: &[Tensor], v: &[Tensor]) -> Option<Tensor> {
    let n = &g.nodes[i];
    let Op::Cond(c) = &n.op else {
        return None;
    };
    let taken = *v[n.inputs[0].index()].to_vec::<bool>().ok()?.first()?;
    let branch = &c.branches[taken as usize];
    if branch.outputs.len() != 1 {
        return None;
    }
    let operands = |of: &[Tensor]| -> Vec<Tensor> {
        n.inputs[1..]
            .iter()
            .map(|x| of[x.index()].clone())
            .collect()
    };
    let values = node_values(branch, &operands(v), &[]).ok()?;
    let inner = magnitudes(branch, &values, Some(&operands(s)));
    Some(inner[branch.outputs[0].index()].clone())
}

/// For each output, whether it depends on an infinity multiplied by (or divided into) a
/// value that is mostly rounding noise: `inf × (Σ(x - mean))` is `inf`, `-inf` or NaN as
/// the cancelled sum came out positive, negative or exactly 0, which its order of summation
/// decides, so there the compiled program and the interpreter may give different
/// non-finite values (a finite value against a non-finite one still fails).
fn noisy_infinities(g: &Graph, v: &[Tensor], s: &[Tensor]) -> Vec<bool> {
    let source: Vec<bool> = (0..g.nodes.len())
        .map(|i| {
            let n = &g.nodes[i];
            if !matches!(n.op, Op::Binary(BinaryOp::Mul | BinaryOp::Div)) || !is_float(n.dtype) {
                return false;
            }
            let (va, vb, sa, sb) = operand_pair(n, v, s);
            (0..va.len()).any(|k| {
                (va[k].is_infinite() && mostly_noise(sb[k], vb[k]))
                    || (vb[k].is_infinite() && mostly_noise(sa[k], va[k]))
            })
        })
        .collect();
    g.outputs
        .iter()
        .map(|&o| {
            let mut seen = vec![false; g.nodes.len()];
            let mut stack = vec![o];
            while let Some(x) = stack.pop() {
                if std::mem::replace(&mut seen[x.index()], true) {
                    continue;
                }
                if source[x.index()] {
                    return true;
                }
                stack.extend(g.node(x).inputs.iter().copied());
            }
            false
        })
        .collect()
}

/// What the oracle allows each output of a graph, from every node's value (`node_values`).
pub struct Noise {
    /// The largest finite noise magnitude of each output (0 for integer and bool outputs).
    pub scales: Vec<f64>,
    /// Whether each output may be another non-finite value (`noisy_infinities`).
    pub noisy_infinities: Vec<bool>,
}

/// The noise of each output of `g`, from every node's value `v` (`node_values`); the
/// magnitudes are propagated once for both figures.
pub fn analyse(g: &Graph, v: &[Tensor]) -> Noise {
    let s = magnitudes(g, v, None);
    Noise {
        scales: scales(g, &s),
        noisy_infinities: noisy_infinities(g, v, &s),
    }
}

/// The largest finite noise magnitude of each output, from every node's magnitude `s`.
fn scales(g: &Graph, s: &[Tensor]) -> Vec<f64> {
    g.outputs
        .iter()
        .map(|o| {
            let t = &s[o.index()];
            if !is_float(t.dtype()) {
                return 0.0;
            }
            to_f64s(t)
                .into_iter()
                .filter(|x| x.is_finite())
                .fold(0.0, f64::max)
        })
        .collect()
}
