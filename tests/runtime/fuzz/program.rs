//! The fuzzer's programs: parameters (shape, dtype, how the caller passes
//! them) and a list of instructions over earlier values, built into tensor
//! ops by `build` (inside a trace: a graph; the graph is what is compiled
//! and interpreted). Value `i` is parameter `i` for `i < params.len()`, else
//! instruction `i - params.len()`.

use jitfuse::random::{self, Key};
use jitfuse::{DType, Slice, Tensor};

/// How the caller passes an argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `&Tensor`: never written.
    Borrowed,
    /// Owned and unshared: its buffer may receive an output.
    Donated,
    /// Owned, but the caller keeps a clone: must not be written.
    Shared,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub mode: Mode,
    /// Which stream its argument's values are drawn from: its index in the
    /// generated program, kept when the shrinker drops other parameters (so
    /// the shrunk program sees the values that failed).
    pub draw: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Un {
    Neg,
    Abs,
    Relu,
    Square,
    Exp,
    Tanh,
    Sigmoid,
    Sin,
    Cos,
    Erf,
    /// `(|x| + 0.25).sqrt()`, `(|x| + 0.5).ln()`, `1 / (|x| + 0.5)`,
    /// `(|x| + 0.5).rsqrt()`: defined and well conditioned everywhere.
    SqrtPos,
    LnPos,
    RecipPos,
    RsqrtPos,
    Floor,
    Gelu,
    Silu,
    Softplus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bin {
    Add,
    Sub,
    Mul,
    Max,
    Min,
    /// `a / (|b| + 0.5)`.
    DivPos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Red {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
    Var,
    Logsumexp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    Softmax,
    LogSoftmax,
    LayerNorm,
}

#[derive(Clone, Debug)]
pub enum Ins {
    Unary(Un, usize),
    Binary(Bin, usize, usize),
    /// `a op c` (or `c op a` when `flip`).
    Scalar(Bin, usize, f64, bool),
    /// `a < b` style comparison (both exact values): a bool.
    Less(usize, usize),
    Select(usize, usize, usize),
    Cast(usize, DType),
    Transpose(usize, Vec<usize>),
    Slice(usize, Vec<Slice>),
    Flip(usize, Vec<isize>),
    Reshape(usize, Vec<isize>),
    BroadcastTo(usize, Vec<usize>),
    Reduce(Red, usize, isize, bool),
    ReduceAll(Red, usize),
    ArgMax(usize, isize),
    RowOp(Row, usize, isize),
    Matmul(usize, usize),
    /// `a.matmul_with(b, { accumulate: F32, result: F32 })` of 16-bit operands: their f32 sums.
    MatmulF32(usize, usize),
    Concat(usize, usize, isize),
    Pad(usize, Vec<(usize, usize)>, f64),
    /// `a.take(idx, axis)` with `idx = (iota(k) * mul + add) % n`, or from
    /// an integer value `(v % n + n) % n` flattened.
    Take(usize, isize, usize, usize, Option<usize>),
    /// `cond(a.max_all() > 0, a * 2 + 1, a.exp() - 1)`.
    Cond(usize),
    /// `fori_loop(0, n, s * 0.5 + i)`.
    Fori(usize, usize),
    /// `fori_loop(0, n, un(op, s * 0.5) * 0.75 + mean(b) * 0.25 + i * 0.125)`: a loop with
    /// an invariant whose gradient is taken (in a gradient program) with the carries
    /// checkpointed `levels` deep (`autodiff::with_checkpoint_levels`; 0: every carry).
    Loop(usize, usize, usize, Un, u32),
    /// `while count < n: (count + 1, s * 0.75 + 0.5)` (not differentiable).
    While(usize, usize),
    /// `conv(a.reshape(x), w)` with `w` a fixed pattern of dyadic values scaled by
    /// `1 + tanh(mean(a)) / 4` (so a gradient reaches both operands' members of the family).
    Conv(usize, Vec<usize>, Vec<usize>, jitfuse::ConvOptions),
    /// Self-attention over the last two axes as users write it (`softmax(a aᵀ · 0.5
    /// [causal: -inf above the diagonal]) a`, `a`'s non-finite elements made 0), which the
    /// compiler turns into one `attention` step (its tiles, online softmax, 16-bit reading)
    /// against the interpreter's composition (forward programs only: `generate::attend`).
    Attend(usize, bool),
    /// `reduce_window(a, reducer, window, strides, padding)`.
    Window(
        usize,
        jitfuse::Reducer,
        Vec<usize>,
        Vec<usize>,
        Vec<(i64, i64)>,
    ),
    /// Random values shaped like `a` (its float dtype, or bool), keyed by
    /// `Key::new(seed)`, folded in with the max of an integer value if given.
    Random(Dist, usize, u64, Option<usize>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    Normal,
    /// In `[-1.5, 2)`.
    Uniform,
    /// `true` with probability 0.4.
    Bernoulli,
}

impl Ins {
    pub fn operands(&self) -> Vec<usize> {
        use Ins::*;
        match self {
            Unary(_, a) | Scalar(_, a, ..) | Cast(a, _) | Transpose(a, _) | Slice(a, _) => {
                vec![*a]
            }
            Flip(a, _) | Reshape(a, _) | BroadcastTo(a, _) | Reduce(_, a, ..) => vec![*a],
            ReduceAll(_, a) | ArgMax(a, _) | RowOp(_, a, _) | Pad(a, ..) | Cond(a) => vec![*a],
            Fori(a, _) | While(a, _) | Conv(a, ..) | Window(a, ..) | Attend(a, _) => vec![*a],
            Binary(_, a, b) | Less(a, b) | Matmul(a, b) | MatmulF32(a, b) | Concat(a, b, _) => {
                vec![*a, *b]
            }
            Loop(a, b, ..) => vec![*a, *b],
            Select(c, a, b) => vec![*c, *a, *b],
            Take(a, _, _, _, idx) | Random(_, a, _, idx) => {
                std::iter::once(*a).chain(*idx).collect()
            }
        }
    }

    pub fn map_operands(&mut self, f: &dyn Fn(usize) -> usize) {
        use Ins::*;
        match self {
            Unary(_, a) | Scalar(_, a, ..) | Cast(a, _) | Transpose(a, _) | Slice(a, _) => {
                *a = f(*a)
            }
            Flip(a, _) | Reshape(a, _) | BroadcastTo(a, _) | Reduce(_, a, ..) => *a = f(*a),
            ReduceAll(_, a) | ArgMax(a, _) | RowOp(_, a, _) | Pad(a, ..) | Cond(a) => *a = f(*a),
            Fori(a, _) | While(a, _) | Conv(a, ..) | Window(a, ..) | Attend(a, _) => *a = f(*a),
            Binary(_, a, b)
            | Less(a, b)
            | Matmul(a, b)
            | MatmulF32(a, b)
            | Concat(a, b, _)
            | Loop(a, b, ..) => {
                *a = f(*a);
                *b = f(*b);
            }
            Select(c, a, b) => {
                *c = f(*c);
                *a = f(*a);
                *b = f(*b);
            }
            Take(a, _, _, _, idx) | Random(_, a, _, idx) => {
                *a = f(*a);
                if let Some(i) = idx {
                    *i = f(*i);
                }
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct Program {
    pub params: Vec<Param>,
    pub ins: Vec<Ins>,
    pub outputs: Vec<usize>,
    /// Return `[loss, d loss / d float params..]` instead, the loss being
    /// `Σ_k (outputs[k] / (2k + 1)).sum_all()` over float outputs (odd reciprocals: the
    /// generator's constants are dyadic, so outputs that are multiples of each other, as
    /// `-x, -x, x` are, never cancel in the loss; weights 0.5, 1, 1.5 summed those to 0).
    pub grad: bool,
}

fn un(op: Un, x: &Tensor) -> Tensor {
    match op {
        Un::Neg => -x,
        Un::Abs => x.abs(),
        Un::Relu => x.relu(),
        Un::Square => x.square(),
        Un::Exp => x.exp(),
        Un::Tanh => x.tanh(),
        Un::Sigmoid => x.sigmoid(),
        Un::Sin => x.sin(),
        Un::Cos => x.cos(),
        Un::Erf => x.erf(),
        Un::SqrtPos => (x.abs() + 0.25).sqrt(),
        Un::LnPos => (x.abs() + 0.5).ln(),
        Un::RecipPos => (x.abs() + 0.5).recip(),
        Un::RsqrtPos => (x.abs() + 0.5).rsqrt(),
        Un::Floor => x.floor(),
        Un::Gelu => x.gelu(),
        Un::Silu => x.silu(),
        Un::Softplus => x.softplus(),
    }
}

fn bin(op: Bin, a: &Tensor, b: &Tensor) -> Tensor {
    match op {
        Bin::Add => a + b,
        Bin::Sub => a - b,
        Bin::Mul => a * b,
        Bin::Max => a.maximum(b),
        Bin::Min => a.minimum(b),
        Bin::DivPos => a / (b.abs() + 0.5),
    }
}

fn red(op: Red, x: &Tensor, axis: isize, keep: bool) -> Tensor {
    match (op, keep) {
        (Red::Sum, false) => x.sum(axis),
        (Red::Sum, true) => x.sum_keepdims(axis),
        (Red::Mean, false) => x.mean(axis),
        (Red::Mean, true) => x.mean_keepdims(axis),
        (Red::Max, false) => x.max(axis),
        (Red::Max, true) => x.max_keepdims(axis),
        (Red::Min, false) => x.min(axis),
        (Red::Min, true) => x.min_keepdims(axis),
        (Red::Prod, false) => x.prod(axis),
        (Red::Prod, true) => x.prod_keepdims(axis),
        (Red::Var, false) => x.var(axis),
        (Red::Var, true) => x.var_keepdims(axis),
        (Red::Logsumexp, false) => x.logsumexp(axis),
        (Red::Logsumexp, true) => x.logsumexp_keepdims(axis),
    }
}

fn red_all(op: Red, x: &Tensor) -> Tensor {
    match op {
        Red::Sum => x.sum_all(),
        Red::Mean => x.mean_all(),
        Red::Max => x.max_all(),
        Red::Min => x.min_all(),
        Red::Prod => x.prod_all(),
        Red::Var => x.var_all(),
        Red::Logsumexp => x.logsumexp_all(),
    }
}

fn one(ins: &Ins, v: &[Tensor]) -> Tensor {
    use Ins::*;
    match ins {
        Unary(op, a) => un(*op, &v[*a]),
        Binary(op, a, b) => bin(*op, &v[*a], &v[*b]),
        Scalar(op, a, c, flip) => {
            let c = Tensor::scalar(*c).into_weak();
            if *flip {
                bin(*op, &c, &v[*a])
            } else {
                bin(*op, &v[*a], &c)
            }
        }
        Less(a, b) => v[*a].lt(&v[*b]),
        Select(c, a, b) => jitfuse::select(&v[*c], &v[*a], &v[*b]),
        Cast(a, d) => v[*a].cast(*d),
        Transpose(a, perm) => v[*a].transpose(perm),
        Slice(a, s) => v[*a].slice(s),
        Flip(a, axes) => v[*a].flip(axes),
        Reshape(a, s) => v[*a].reshape(s),
        BroadcastTo(a, s) => v[*a].broadcast_to(s),
        Reduce(op, a, axis, keep) => red(*op, &v[*a], *axis, *keep),
        ReduceAll(op, a) => red_all(*op, &v[*a]),
        ArgMax(a, axis) => v[*a].argmax(*axis),
        RowOp(Row::Softmax, a, axis) => v[*a].softmax(*axis),
        RowOp(Row::LogSoftmax, a, axis) => v[*a].log_softmax(*axis),
        RowOp(Row::LayerNorm, a, _) => {
            let x = &v[*a];
            let n = *x.shape().last().unwrap();
            let iota = Tensor::iota(&[n], 0, x.dtype());
            // Gains and shifts repeat every 8 columns: growing with the column they
            // reached 928 in a row of 7425, and sin of the result amplified one ulp.
            let w = (&iota % 8.0) * 0.125 + 0.5;
            let b = (&iota % 8.0) * -0.25 + 1.0;
            // eps 0.1: a row of equal values (a `min` with its own
            // element) has no variance, and 1/sqrt(1e-5) would amplify
            // rounding past any tolerance; the kernels are the same.
            x.layer_norm(&w, &b, 0.1, -1)
        }
        Conv(a, x, w, o) => {
            let a = &v[*a];
            let n: usize = w.iter().product();
            let pattern = (Tensor::iota(&[n], 0, a.dtype()) % 7.0) * 0.125 - 0.375;
            let scale = a.mean_all().tanh() * 0.25 + 1.0;
            let shape = |s: &[usize]| s.iter().map(|&d| d as isize).collect::<Vec<_>>();
            let w = pattern.reshape(&shape(w)) * scale;
            jitfuse::conv(&a.reshape(&shape(x)), &w, o.clone())
        }
        Window(a, r, w, s, p) => jitfuse::reduce_window(&v[*a], *r, w, s, p),
        Attend(a, causal) => {
            // Non-finite elements included: where the composition multiplies an infinite or
            // NaN v by a weight of 0 past a causal diagonal, the fused step does too (program
            // seed 12201073905; library/attention/exact.rs).
            let x = &v[*a];
            let r = x.ndim();
            let mut perm: Vec<usize> = (0..r).collect();
            perm.swap(r - 2, r - 1);
            let s = x.matmul(&x.transpose(&perm)) * 0.5;
            let s = if *causal {
                let n = x.shape()[r - 2];
                let row = Tensor::iota(&[n, n], 0, DType::I32);
                let col = Tensor::iota(&[n, n], 1, DType::I32);
                jitfuse::where_(&col.le(&row), &s, f64::NEG_INFINITY)
            } else {
                s
            };
            s.softmax(-1).matmul(x)
        }
        Matmul(a, b) => v[*a].matmul(&v[*b]),
        MatmulF32(a, b) => v[*a].matmul_with(
            &v[*b],
            jitfuse::MatmulOptions {
                accumulate: DType::F32,
                result: DType::F32,
            },
        ),
        Concat(a, b, axis) => jitfuse::concat(&[&v[*a], &v[*b]], *axis),
        Pad(a, pads, c) if is_float(v[*a].dtype()) => v[*a].pad(pads, *c),
        Pad(a, pads, c) => v[*a].pad(pads, *c as i64),
        Take(a, axis, k, mul, idx) => {
            let x = &v[*a];
            let ax = if *axis < 0 {
                (*axis + x.ndim() as isize) as usize
            } else {
                *axis as usize
            };
            let n = x.shape()[ax] as i64;
            let idx = match idx {
                Some(i) => {
                    let t = v[*i].cast(DType::I64).reshape(&[-1]);
                    (&t % n + n) % n
                }
                None => (Tensor::iota(&[*k], 0, DType::I64) * (*mul as i64) + 1) % n,
            };
            x.take(&idx, *axis)
        }
        Cond(a) => {
            let x = &v[*a];
            let pred = x.max_all().gt(0.0);
            jitfuse::cond(
                &pred,
                |s: Tensor| &s * 2.0 + 1.0,
                |s: Tensor| s.exp() - 1.0,
                x.clone(),
            )
        }
        Fori(a, n) => jitfuse::fori_loop(
            0i64,
            *n as i64,
            |i, s: Tensor| {
                let d = s.dtype();
                &s * 0.5 + i.cast(d)
            },
            v[*a].clone(),
        ),
        Loop(a, b, n, op, _) => {
            let d = v[*a].dtype();
            let inv = v[*b].cast(d).mean_all();
            jitfuse::fori_loop(
                0i64,
                *n as i64,
                |i, s: Tensor| un(*op, &(&s * 0.5)) * 0.75 + &inv * 0.25 + i.cast(d) * 0.125,
                v[*a].clone(),
            )
        }
        While(a, n) => {
            let n = *n as i32;
            let (_, s) = jitfuse::while_loop(
                |st: &(Tensor, Tensor)| st.0.lt(n),
                |(c, s): (Tensor, Tensor)| (c + 1, &s * 0.75 + 0.5),
                (Tensor::scalar(0i32), v[*a].clone()),
            );
            s
        }
        Random(dist, a, seed, fold) => {
            let x = &v[*a];
            let mut key = Key::new(*seed);
            if let Some(i) = fold {
                key = key.fold_in(&v[*i].max_all());
            }
            match dist {
                Dist::Normal => random::normal(&key, x.shape(), x.dtype()),
                Dist::Uniform => random::uniform(&key, x.shape(), x.dtype(), -1.5, 2.0),
                Dist::Bernoulli => random::bernoulli(&key, 0.4, x.shape()),
            }
        }
    }
}

/// The program's values on `params` (traced or concrete).
pub fn values(p: &Program, params: &[Tensor]) -> Vec<Tensor> {
    let mut v: Vec<Tensor> = params.to_vec();
    for ins in &p.ins {
        let t = one(ins, &v);
        v.push(t);
    }
    v
}

pub fn is_float(d: DType) -> bool {
    d.is_float()
}

/// How deep a gradient program's loops are checkpointed: the depth of its first `Loop`
/// (`None`: no `Loop`, no automatic checkpointing).
pub fn loop_levels(p: &Program) -> Option<u32> {
    p.ins.iter().find_map(|i| match i {
        Ins::Loop(.., levels) => Some(*levels),
        _ => None,
    })
}

/// The program's results on `params`.
pub fn build(p: &Program, params: &[Tensor]) -> Vec<Tensor> {
    build_at(p, params, loop_levels(p))
}

/// `build` with the gradient's loops checkpointed `levels` deep (and the differentiated
/// function cut into √N checkpointed segments) when set.
pub fn build_at(p: &Program, params: &[Tensor], levels: Option<u32>) -> Vec<Tensor> {
    if !p.grad {
        let v = values(p, params);
        return p.outputs.iter().map(|&o| v[o].clone()).collect();
    }
    let float: Vec<usize> = (0..params.len())
        .filter(|&i| is_float(params[i].dtype()))
        .collect();
    let xs: Vec<Tensor> = float.iter().map(|&i| params[i].clone()).collect();
    let loss = |xs: &Vec<Tensor>| {
        let mut all = params.to_vec();
        for (k, &i) in float.iter().enumerate() {
            all[i] = xs[k].clone();
        }
        let v = values(p, &all);
        let mut loss: Option<Tensor> = None;
        for (k, &o) in p.outputs.iter().enumerate() {
            if is_float(v[o].dtype()) {
                let term = (&v[o] * (1.0 / (2 * k + 1) as f64))
                    .sum_all()
                    .cast(DType::F64);
                loss = Some(match loss {
                    Some(l) => l + term,
                    None => term,
                });
            }
        }
        loss.expect("a gradient program has a float output")
    };
    let (l, gs) =
        jitfuse::autodiff::with_checkpoint_levels(levels, || jitfuse::value_and_grad(loss, &xs));
    std::iter::once(l).chain(gs).collect()
}
