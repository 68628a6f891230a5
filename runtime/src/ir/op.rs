//! The operations of the IR and their typing rules.

use super::Graph;
use crate::{DType, Literal};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Exp,
    Ln,
    Tanh,
    Sqrt,
    Rsqrt,
    Abs,
    Relu,
    Sigmoid,
    Sin,
    Cos,
    Square,
    Recip,
    /// Logical not of a `bool` tensor.
    Not,
    /// The error function.
    Erf,
    /// Largest integer not above x.
    Floor,
    /// Identity whose gradient is zero (`stop_gradient`).
    StopGradient,
    /// ln(1 + x), accurate near 0.
    Log1p,
    /// e^x - 1, accurate near 0.
    Expm1,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    /// Float division; on integers truncating division with `x / 0 = -1`
    /// and `MIN / -1 = MIN` (wrapping), as XLA defines it.
    Div,
    Max,
    Min,
    /// IEEE `pow` (floats only).
    Pow,
    /// Logical and / or of `bool` tensors.
    And,
    Or,
    /// Remainder with the sign of the dividend (Rust's `%`); on integers
    /// `x % 0 = x` and `MIN % -1 = 0`, as XLA defines them.
    Rem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    Prod,
}

impl ReduceOp {
    pub const ALL: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "reduce_sum",
            ReduceOp::Max => "reduce_max",
            ReduceOp::Min => "reduce_min",
            ReduceOp::Prod => "reduce_prod",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// The k-th argument of the traced function.
    Param(usize),
    /// A tensor filled with one value (its shape is the node's shape).
    Const(Literal),
    /// The k-th concrete tensor the traced body closed over; the executable
    /// holds it by reference (`Arc`), never copied into code.
    Captured(usize),
    Unary(UnaryOp),
    Binary(BinaryOp),
    Compare(CmpOp),
    /// `select(cond, a, b)`: `a` where `cond`, else `b`.
    Select,
    Cast(DType),
    /// NumPy broadcast of the input to the node's shape.
    Broadcast,
    /// Same elements in row-major order, new shape.
    Reshape,
    /// `out.shape[d] = in.shape[perm[d]]`.
    Transpose(Vec<usize>),
    /// Per axis `(start, step)`: output index `i` reads input `start + i*step`
    /// (the length is the node's shape; a negative step walks backwards).
    Slice(Vec<(i64, i64)>),
    /// Concatenation of the inputs along an axis.
    Concat(usize),
    /// Constant padding: `(before, after)` per axis.
    Pad(Vec<(usize, usize)>, Literal),
    /// Reduction over the listed axes (sorted, distinct); they are removed.
    Reduce(ReduceOp, Vec<usize>),
    /// Index (i64) of the first maximum / minimum along an axis, which is
    /// removed. NaN counts as the extreme.
    ArgMax(usize),
    ArgMin(usize),
    /// `take(x, idx)` along an axis: `out.shape = x[..axis] + idx + x[axis+1..]`.
    /// Negative indices count from the end; out-of-range ones are clamped.
    Take(usize),
    /// The index along an axis, as the node's dtype.
    Iota(usize),
    /// `a[..., m, k] @ b[..., k, n]`, batch dimensions broadcast.
    Matmul,
    /// The adjoint of `Slice`: zeros of the node's shape with the input
    /// written at `start + i*step` per axis.
    SliceScatter(Vec<(i64, i64)>),
    /// The adjoint of `Take(axis)`: inputs `(values, indices)`; zeros of the
    /// node's shape with each value added at its (clamped) index.
    ScatterAdd(usize),
    /// `barrier(x, after)`: the value of `x`, available only once `after` is.
    /// Feeds rematerialised computations, so they run in the backward pass
    /// and are never merged with the forward originals by CSE.
    Barrier,
    /// `cond(pred, operands..)`: runs `branches[1]` (then) when `pred` is
    /// true, else `branches[0]`; both are graphs whose params are the
    /// operands and whose outputs have the same types. This node is output 0;
    /// `get[k]` nodes reading it are the others.
    Cond(Arc<CondOp>),
    /// `while(carried.., invariants..)`: `cond` and `body` take the carried
    /// values then the invariants; `body` returns new carried values. This
    /// node is carried output 0; `get[k]` the others.
    While(Arc<WhileOp>),
    /// `scan(carry.., xs.., invariants..)`: `body(carry.., x slices..,
    /// invariants..) -> (carry.., y slices..)` for each index along axis 0 of
    /// the `xs` (backwards if `reverse`); outputs: final carry.., stacked ys..
    /// This node is output 0; `get[k]` the others.
    Scan(Arc<ScanOp>),
    /// Output `k >= 1` of the control-flow node it reads.
    Get(usize),
    /// `softmax(scale · q kᵀ + mask) v` over the last two axes: inputs
    /// `q [.., Sq, D]`, `k [.., Sk, D]`, `v [.., Sk, Dv]` (the same batch
    /// axes), and for a `Bool` or `Additive` mask `mask [.., Sq, Sk]`.
    /// Computed without the score matrix (`library::attention`).
    Attention(AttnSpec),
    /// The gradient of `Attention` with the same spec: inputs `q, k, v, [o,]
    /// do (, mask)` (`AttnSpec::grad_operands`; without the forward output `o`
    /// it is recomputed), results `dq` (the node) and `dk`, `dv` (`get[1]`,
    /// `get[2]`).
    AttentionGrad(AttnSpec),
    /// The elementwise reduction of the input over every process of the world
    /// (`jitfuse::dist::all_reduce`, MPI's `Allreduce`): the same shape and dtype, the same
    /// value on every rank. A library step; never folded, as it needs the other ranks.
    AllReduce(ReduceOp),
    /// `all_gather(axis, ranks)`: every rank's input concatenated along `axis`, rank 0 first
    /// (`jitfuse::dist::all_gather`), for a world of `ranks` processes (the size when it was
    /// traced; a run in another world is an error).
    AllGather(usize, usize),
    /// `reduce_scatter(op, axis, ranks)`: block `rank` of the elementwise `op` over every
    /// rank's input, cut along `axis` into `ranks` equal blocks (`dist::reduce_scatter`).
    ReduceScatter(ReduceOp, usize, usize),
    /// `broadcast_from(root)`: rank `root`'s input on every rank (`dist::broadcast`).
    BroadcastFrom(usize),
    /// Counter-based random numbers (`crate::random`): operand 0 is the key
    /// (`i32[2]`, two words of Threefry-2x32 key); element `i` of the result
    /// is a function of the key and `i` alone (its flat index), computed by
    /// `random::native` in the interpreter and in compiled programs alike.
    Random(RandomOp),
    /// A member of the convolution family (`ir::conv`): `conv(x, w)`,
    /// `conv_input_grad(dy, w)` or `conv_weight_grad(x, dy)` as `spec.role` says; channels
    /// last (`x [N, S.., C]`, `w [K.., C/G, F]`). A library step (`library::conv`).
    Conv(std::sync::Arc<super::ConvSpec>),
    /// A member of the windowed-reduction family (`ir::window`): `window_max(x)`,
    /// `window_sum(x)` and the ops of their gradients, as `spec.role` says. A library step
    /// (`library::window`).
    Window(std::sync::Arc<super::WindowSpec>),
}

/// Which keys a query row of `attention` sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MaskKind {
    /// Every key.
    None,
    /// Key `j` for query `i` when `j <= i` (the lower triangle of the
    /// `[Sq, Sk]` scores, as `tril`).
    Causal,
    /// Where a `bool [.., Sq, Sk]` operand is true.
    Bool,
    /// Every key, with a float `[.., Sq, Sk]` operand added to the scores.
    Additive,
}

impl MaskKind {
    pub fn name(self) -> &'static str {
        match self {
            MaskKind::None => "none",
            MaskKind::Causal => "causal",
            MaskKind::Bool => "bool",
            MaskKind::Additive => "additive",
        }
    }

    /// Whether the mask is an operand (after q, k, v and, for the gradient, o, do).
    pub fn has_operand(self) -> bool {
        matches!(self, MaskKind::Bool | MaskKind::Additive)
    }
}

/// The attributes of `Attention`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttnSpec {
    pub mask: MaskKind,
    /// The factor of the scores (`1/√D` by default).
    pub scale: f64,
    /// Under a `Causal` or `Bool` mask, the finite value a masked score takes (as
    /// `where_(mask, s, -1e9)` writes it); `None` is `-inf`, a masked key's weight 0. With a
    /// finite fill a masked key keeps the weight `exp(fill - max) / sum` and a row with
    /// every key masked is uniform: the composition's meaning, not a mask's. Always `None`
    /// under `None` and `Additive` (`AttnSpec::new` keeps it so).
    pub fill: Option<f64>,
    /// Under a `Causal` mask without a fill: the mask was added as a bias
    /// (`s + where_(causal, 0, -inf)`), so a masked score is `s - inf` (NaN where `s` is
    /// +inf or NaN) and its cotangent reaches q and k. Otherwise a masked score is selected
    /// (`where_(causal, s, -inf)`): a constant whatever `s` is, with a zero cotangent.
    /// The two differ only for non-finite scores or cotangents.
    pub bias: bool,
}

/// Where `attention_grad`'s operands are: `q, k, v`, then the forward output `o` when it
/// was saved (without it the step recomputes it), then the output's cotangent `do`,
/// then the mask when the spec has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GradOperands {
    pub saved_output: Option<usize>,
    pub dout: usize,
    pub mask: Option<usize>,
}

impl AttnSpec {
    /// The spec with `fill` kept only where it means something (a `Causal` or `Bool` mask)
    /// and only when finite (`-inf` is no fill: the mask itself).
    pub fn new(mask: MaskKind, scale: f64, fill: Option<f64>) -> AttnSpec {
        let fill =
            fill.filter(|f| f.is_finite() && matches!(mask, MaskKind::Causal | MaskKind::Bool));
        AttnSpec {
            mask,
            scale,
            fill,
            bias: false,
        }
    }

    /// A causal mask added to the scores as a `-inf` bias (`AttnSpec::bias`).
    pub fn causal_bias(scale: f64) -> AttnSpec {
        AttnSpec {
            bias: true,
            ..AttnSpec::new(MaskKind::Causal, scale, None)
        }
    }

    /// Whether a masked score is selected (a constant, its cotangent zero) rather than
    /// added to (`bias`, or an `Additive` mask's `-inf` entries).
    pub fn selects(&self) -> bool {
        matches!(self.mask, MaskKind::Causal | MaskKind::Bool) && !self.bias
    }

    /// The layout of an `attention_grad` with `n` operands (`None`: no valid layout).
    pub fn grad_operands(&self, n: usize) -> Option<GradOperands> {
        let m = self.mask.has_operand() as usize;
        let saved = match n.checked_sub(m)? {
            5 => true,
            4 => false,
            _ => return None,
        };
        let dout = 3 + saved as usize;
        Some(GradOperands {
            saved_output: saved.then_some(3),
            dout,
            mask: (m == 1).then_some(dout + 1),
        })
    }
}

/// What a `random_*` node computes from its key (see `crate::random`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RandomOp {
    /// Raw bits: `i32` (a `u32` per element, `x0 ^ x1` of its Threefry
    /// block) or `i64` (`x0 << 32 | x1`).
    Bits,
    /// Uniform floats in `[lo, hi)` (f32 or f64; bounds rounded to it).
    Uniform { lo: f64, hi: f64 },
    /// Standard normal floats: `sqrt(2) * erfinv(u)`, `u` uniform in `(-1, 1)`.
    Normal,
    /// New keys `i32[.., 2]`: row `j` is the Threefry block of counter `(0, j)`
    /// (`j` the flat index over the leading dimensions).
    Split,
    /// `fold_in(key, data)`: the key of counter `(0, data)`, `data` an `i32[]`
    /// operand (its bits as a `u32`).
    FoldIn,
}

impl RandomOp {
    pub fn name(self) -> &'static str {
        match self {
            RandomOp::Bits => "random_bits",
            RandomOp::Uniform { .. } => "random_uniform",
            RandomOp::Normal => "random_normal",
            RandomOp::Split => "random_split",
            RandomOp::FoldIn => "random_fold_in",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CondOp {
    /// `[else, then]` (the branch index is the predicate as an integer).
    pub branches: [Graph; 2],
}

#[derive(Clone, Debug, PartialEq)]
pub struct WhileOp {
    pub cond: Graph,
    pub body: Graph,
    /// How many of the operands are carried (the rest are invariants).
    pub carried: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ScanOp {
    pub body: Graph,
    /// The number of iterations (the leading dimension of every x and y).
    pub length: usize,
    pub carried: usize,
    /// How many operands after the carried ones are scanned over.
    pub xs: usize,
    pub reverse: bool,
}

impl Op {
    /// The sub-graphs of a control-flow op.
    pub fn subgraphs(&self) -> Vec<&Graph> {
        match self {
            Op::Cond(c) => c.branches.iter().collect(),
            Op::While(w) => vec![&w.cond, &w.body],
            Op::Scan(s) => vec![&s.body],
            _ => vec![],
        }
    }

    /// Control-flow ops (one node with sub-graphs, outputs via `get`).
    pub fn is_control(&self) -> bool {
        matches!(self, Op::Cond(_) | Op::While(_) | Op::Scan(_))
    }

    /// The output types `(shape, dtype)` of a control-flow op.
    /// A collective across the processes of `jitfuse::dist`: a call starts it where its step
    /// runs and waits for it where its result is first read.
    pub fn is_collective(&self) -> bool {
        matches!(
            self,
            Op::AllReduce(_) | Op::BroadcastFrom(_) | Op::AllGather(..) | Op::ReduceScatter(..)
        )
    }

    /// Nodes with more than one result: control flow, and `attention_grad` (`dq` is
    /// the node, `dk` and `dv` are `get[1]` and `get[2]` of it). Results beyond the
    /// first are read through `get` nodes, and the step computing the node writes them.
    pub fn is_multi_output(&self) -> bool {
        self.is_control() || matches!(self, Op::AttentionGrad(_))
    }

    pub fn control_outputs(&self) -> Vec<(Vec<usize>, DType)> {
        let ty = |g: &Graph, v: &super::ValueId| (g.node(*v).shape.clone(), g.node(*v).dtype);
        match self {
            Op::Cond(c) => c.branches[1]
                .outputs
                .iter()
                .map(|v| ty(&c.branches[1], v))
                .collect(),
            Op::While(w) => w.body.outputs.iter().map(|v| ty(&w.body, v)).collect(),
            Op::Scan(s) => s
                .body
                .outputs
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let (mut shape, d) = ty(&s.body, v);
                    if i >= s.carried {
                        shape.insert(0, s.length);
                    }
                    (shape, d)
                })
                .collect(),
            _ => vec![],
        }
    }
}

impl UnaryOp {
    /// Computed by a polynomial micro-kernel (`codegen::micro`): far costlier than an
    /// arithmetic op, and inlined or staged by the kernels rather than one instruction.
    pub fn is_transcendental(self) -> bool {
        use UnaryOp::*;
        matches!(
            self,
            Exp | Ln | Tanh | Sigmoid | Sin | Cos | Erf | Log1p | Expm1
        )
    }

    pub const ALL: [UnaryOp; 19] = [
        UnaryOp::Neg,
        UnaryOp::Exp,
        UnaryOp::Ln,
        UnaryOp::Tanh,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Abs,
        UnaryOp::Relu,
        UnaryOp::Sigmoid,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Square,
        UnaryOp::Recip,
        UnaryOp::Not,
        UnaryOp::Erf,
        UnaryOp::Floor,
        UnaryOp::StopGradient,
        UnaryOp::Log1p,
        UnaryOp::Expm1,
    ];

    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Exp => "exp",
            UnaryOp::Ln => "ln",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Abs => "abs",
            UnaryOp::Relu => "relu",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Square => "square",
            UnaryOp::Recip => "recip",
            UnaryOp::Not => "not",
            UnaryOp::Erf => "erf",
            UnaryOp::Floor => "floor",
            UnaryOp::StopGradient => "stop_gradient",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
        }
    }

    /// Which operand dtypes the op accepts.
    pub fn accepts(self, d: DType) -> bool {
        match self {
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Square => {
                d.is_float() || d.is_int()
            }
            UnaryOp::Not => d == DType::Bool,
            UnaryOp::StopGradient => true,
            _ => d.is_float(),
        }
    }
}

impl BinaryOp {
    pub const ALL: [BinaryOp; 10] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Max,
        BinaryOp::Min,
        BinaryOp::Pow,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Rem,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::Pow => "pow",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
            BinaryOp::Rem => "rem",
        }
    }

    pub fn accepts(self, d: DType) -> bool {
        match self {
            BinaryOp::Pow => d.is_float(),
            BinaryOp::And | BinaryOp::Or => d == DType::Bool,
            _ => d.is_float() || d.is_int(),
        }
    }
}

impl CmpOp {
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
        CmpOp::Eq,
        CmpOp::Ne,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
        }
    }

    pub fn accepts(self, d: DType) -> bool {
        matches!(self, CmpOp::Eq | CmpOp::Ne) || d != DType::Bool
    }
}

impl Op {
    /// The op's name as written in the IR text.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Param(_) => "param",
            Op::Const(_) => "const",
            Op::Captured(_) => "captured",
            Op::Unary(u) => u.name(),
            Op::Binary(b) => b.name(),
            Op::Compare(c) => c.name(),
            Op::Select => "select",
            Op::Cast(_) => "cast",
            Op::Broadcast => "broadcast",
            Op::Reshape => "reshape",
            Op::Transpose(_) => "transpose",
            Op::Slice(_) => "slice",
            Op::Concat(_) => "concat",
            Op::Pad(..) => "pad",
            Op::Reduce(r, _) => r.name(),
            Op::ArgMax(_) => "argmax",
            Op::ArgMin(_) => "argmin",
            Op::Take(_) => "take",
            Op::Iota(_) => "iota",
            Op::Matmul => "matmul",
            Op::SliceScatter(_) => "slice_scatter",
            Op::ScatterAdd(_) => "scatter_add",
            Op::Barrier => "barrier",
            Op::Cond(_) => "cond",
            Op::While(_) => "while",
            Op::Scan(_) => "scan",
            Op::Get(_) => "get",
            Op::Attention(_) => "attention",
            Op::AttentionGrad(_) => "attention_grad",
            Op::Random(r) => r.name(),
            Op::Conv(c) => c.role.name(),
            Op::Window(w) => w.role.name(),
            Op::AllGather(..) => "all_gather",
            Op::BroadcastFrom(_) => "broadcast_from",
            Op::ReduceScatter(r, ..) => match r {
                ReduceOp::Sum => "reduce_scatter_sum",
                ReduceOp::Max => "reduce_scatter_max",
                ReduceOp::Min => "reduce_scatter_min",
                ReduceOp::Prod => "reduce_scatter_prod",
            },
            Op::AllReduce(r) => match r {
                ReduceOp::Sum => "all_reduce_sum",
                ReduceOp::Max => "all_reduce_max",
                ReduceOp::Min => "all_reduce_min",
                ReduceOp::Prod => "all_reduce_prod",
            },
        }
    }

    /// Ops that only move elements (an index map over their input).
    pub fn is_view(&self) -> bool {
        matches!(
            self,
            Op::Broadcast | Op::Reshape | Op::Transpose(_) | Op::Slice(_)
        )
    }

    /// Ops computed element by element (fusible into one loop).
    pub fn is_elementwise(&self) -> bool {
        matches!(
            self,
            Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Select | Op::Cast(_)
        )
    }
}

#[cfg(test)]
mod tests {
    /// Every node of every cached graph holds an `Op`, so the eager cache's per-program
    /// bytes grow with it: large attributes live behind an `Arc` (control flow, convolutions).
    #[test]
    fn an_op_stays_small() {
        assert!(
            std::mem::size_of::<super::Op>() <= 48,
            "Op is {} bytes",
            std::mem::size_of::<super::Op>()
        );
    }
}
