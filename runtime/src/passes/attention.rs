//! The attention pattern users write, `softmax(scale · q kᵀ + mask, -1) v`, rewritten into
//! one `attention` node, so plain code gets the fused kernel (no score matrix) forward and,
//! since autodiff runs this pass on the function it differentiates, backward.
//!
//! Recognised (as `Tensor::softmax` traces it, `e / sum(e)` with `e = exp(x - max x)` over
//! the last axis, then a matmul with `v`), with `x` one of
//! - `s`, no mask;
//! - `select(cond, s, f)` (`where_`): a `Bool` mask, `Causal` when `cond` is causal;
//! - `select(cond, f, s)`: `Causal` when `cond` is the complement of a causal condition,
//!   a `Bool` mask `m` when `cond` is `!m`;
//! - `s + m` (either order): an `Additive` mask, `Causal` (with `bias`) when `m` is a
//!   causal bias `select(cond, 0, -inf)` (or `select(!cond, -inf, 0)`), through broadcasts,
//!   reshapes and casts between float types;
//!
//! where a condition is causal when it is `col <= row` of `iota`s over the score axes (also
//! spelled `row >= col`, `!(col > row)`, `!(row < col)`), through broadcasts and reshapes,
//! or `tril(ones)` of bools (`select(col <= row, true, false)`), and its complement is any
//! of `col > row`, `row < col`, `!causal`, `triu(ones, 1)`;
//!
//! and `s = q @ kᵀ` scaled by constants (`* c`, `/ c`, on the scores or on `q`), `kᵀ` a
//! transpose of the last two axes (any other `kᵀ` is transposed back, a view). Every value
//! inside the pattern must be read only inside it: attention weights that are also returned
//! or read elsewhere keep the composition (a near miss, reported with its reason).
//! The fill `f` is `-inf` or any finite constant (`-1e9`, `finfo.min`, as Hugging Face and
//! Flax models write it), kept in the op (`AttnSpec::fill`) with its exact meaning: a
//! masked score equals `f`, so a masked key keeps the weight `exp(f - max) / sum` and a
//! row with every key masked is uniform (NaN with `-inf`). A finite additive bias
//! (`s + where_(causal, 0, -1e9)`) makes masked scores `s - 1e9`, not a constant: it stays
//! an `Additive` operand (its `[Sq, Sk]` matrix kept), reported as a near miss.
//!
//! The rewrite keeps the composition's values for every operand, finite or not: a causal
//! `-inf` bias is kept apart from a selected `-inf` (`AttnSpec::bias`: `s - inf` is NaN
//! where `s` is +inf or NaN, and passes its cotangent on), and the step computes the keys
//! it would skip wherever a non-finite or overflowing operand makes them count
//! (`library/attention/exact.rs`). Test
//! `attention::masked_keys_with_non_finite_or_overflowing_operands_give_the_compositions_values`.

use crate::ir::{AttnSpec, BinaryOp, CmpOp, Graph, MaskKind, Node, Op, ReduceOp, UnaryOp, ValueId};
use crate::{DType, Literal};

/// One recognised pattern.
struct Found {
    q: ValueId,
    /// `k [.., Sk, D]`, or `kᵀ` to transpose back.
    k: (ValueId, bool),
    v: ValueId,
    mask: MaskKind,
    mask_value: Option<ValueId>,
    /// The finite value masked scores take (`None`: -inf).
    fill: Option<f64>,
    /// A causal mask added as a `-inf` bias (`AttnSpec::bias`).
    bias: bool,
    scale: f64,
    /// The nodes the rewrite replaces (the final matmul last).
    interior: Vec<ValueId>,
}

/// The graph with every recognised attention rewritten, and the near misses (why a
/// softmax-then-matmul was left as it is).
pub fn fuse(g: &Graph) -> (Graph, Vec<String>) {
    let mut users = vec![0usize; g.nodes.len()];
    for n in &g.nodes {
        for x in &n.inputs {
            users[x.index()] += 1;
        }
    }
    for o in &g.outputs {
        users[o.index()] += 1;
    }
    let mut found: Vec<Option<Found>> = (0..g.nodes.len()).map(|_| None).collect();
    let mut misses = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        if n.op != Op::Matmul {
            continue;
        }
        let mut m = Matcher {
            g,
            seen: Vec::new(),
            miss: None,
            partial: None,
        };
        let Some(f) = m.attention(ValueId(i as u32)) else {
            if let Some(why) = m.miss {
                misses.push(format!("softmax-then-matmul %{i} left unfused: {why}"));
            }
            continue;
        };
        // Every interior value but the result is read only by interior nodes.
        // (A map: one vector per match would make many layers quadratic in the graph.)
        let mut reads: std::collections::HashMap<ValueId, usize> = Default::default();
        for &v in &f.interior {
            for &x in &g.node(v).inputs {
                *reads.entry(x).or_default() += 1;
            }
        }
        let leak = f.interior[..f.interior.len() - 1]
            .iter()
            .find(|v| users[v.index()] > reads.get(v).copied().unwrap_or(0));
        match leak {
            Some(v) => misses.push(format!(
                "softmax-then-matmul %{i} left unfused: %{} ({}) is also read outside the pattern",
                v.0,
                g.node(*v).op.name()
            )),
            None => {
                if let Some(why) = m.partial.take() {
                    misses.push(format!("softmax-then-matmul %{i} fused, but {why}"));
                }
                found[i] = Some(f)
            }
        }
    }
    if found.iter().all(|f| f.is_none()) {
        return (g.clone(), misses);
    }
    (rebuild(g, &found), misses)
}

struct Matcher<'g> {
    g: &'g Graph,
    /// Interior nodes met so far.
    seen: Vec<ValueId>,
    /// Why a softmax-then-matmul whose softmax matched was left as it is.
    miss: Option<String>,
    /// What a match keeps that a closer spelling would not (a finite additive bias's
    /// `[Sq, Sk]` operand).
    partial: Option<String>,
}

impl Matcher<'_> {
    fn node(&self, v: ValueId) -> &Node {
        self.g.node(v)
    }

    fn take(&mut self, v: ValueId) {
        self.seen.push(v);
    }

    /// The last axis of `v`'s shape.
    fn last(&self, v: ValueId) -> usize {
        self.node(v).shape.len().saturating_sub(1)
    }

    /// `v` through broadcasts and reshapes (interior), returning what they read.
    fn through_views(&mut self, mut v: ValueId) -> ValueId {
        while matches!(self.node(v).op, Op::Broadcast | Op::Reshape) {
            self.take(v);
            v = self.node(v).inputs[0];
        }
        v
    }

    /// The scalar value of a constant (possibly broadcast), rounded to `d` (a bool as 0 or 1).
    fn constant(&self, mut v: ValueId, d: DType) -> Option<f64> {
        while self.node(v).op == Op::Broadcast {
            v = self.node(v).inputs[0];
        }
        match self.node(v).op {
            Op::Const(Literal::Float(x)) => Some(if d == DType::F32 { x as f32 as f64 } else { x }),
            Op::Const(Literal::Int(x)) => Some(x as f64),
            Op::Const(Literal::Bool(b)) => Some(b as u8 as f64),
            _ => None,
        }
    }

    /// `o = softmax(x) @ v`.
    fn attention(&mut self, o: ValueId) -> Option<Found> {
        let (p, v) = (self.node(o).inputs[0], self.node(o).inputs[1]);
        let d = self.node(o).dtype;
        if self.node(p).shape.len() < 2 {
            return None;
        }
        let x = self.softmax(p)?;
        let (mask, mask_value, s, fill, bias) = self.mask(x, d)?;
        let (q, k, scale) = self.scores(s, d)?;
        self.take(o);
        Some(Found {
            q,
            k,
            v,
            mask,
            mask_value,
            fill,
            bias,
            scale,
            interior: std::mem::take(&mut self.seen),
        })
    }

    /// `p = e / sum(e)`, `e = exp(x - max x)` over the last axis: `x`.
    fn softmax(&mut self, p: ValueId) -> Option<ValueId> {
        let axis = self.last(p);
        let n = self.node(p);
        if n.op != Op::Binary(BinaryOp::Div) {
            return None;
        }
        let (e, z) = (n.inputs[0], n.inputs[1]);
        self.take(p);
        let sum = self.through_views(z);
        if self.node(sum).op != Op::Reduce(ReduceOp::Sum, vec![axis])
            || self.node(sum).inputs[0] != e
        {
            return None;
        }
        self.take(sum);
        if self.node(e).op != Op::Unary(UnaryOp::Exp) {
            return None;
        }
        self.take(e);
        let sub = self.node(e).inputs[0];
        if self.node(sub).op != Op::Binary(BinaryOp::Sub) {
            return None;
        }
        self.take(sub);
        let (x, mb) = (self.node(sub).inputs[0], self.node(sub).inputs[1]);
        // The shift may be a `stop_gradient` of the max (as `Tensor::softmax` writes it:
        // its gradient is zero anyway) or the max itself (as users may write it).
        let mut mx = self.through_views(mb);
        if self.node(mx).op == Op::Unary(UnaryOp::StopGradient) {
            self.take(mx);
            mx = self.node(mx).inputs[0];
            mx = self.through_views(mx);
        }
        if self.node(mx).op != Op::Reduce(ReduceOp::Max, vec![axis]) || self.node(mx).inputs[0] != x
        {
            return None;
        }
        self.take(mx);
        Some(x)
    }

    /// The mask around the scores `x`: `(kind, operand, scores, finite fill)`.
    #[allow(clippy::type_complexity)]
    fn mask(
        &mut self,
        x: ValueId,
        d: DType,
    ) -> Option<(MaskKind, Option<ValueId>, ValueId, Option<f64>, bool)> {
        let n = self.node(x).clone();
        // A fill is -inf or finite: `None` for the op's -inf, `Some` for a finite one.
        let fill_of = |f: Option<f64>| match f {
            Some(f) if f == f64::NEG_INFINITY => Some(None),
            Some(f) if f.is_finite() => Some(Some(f)),
            _ => None,
        };
        match n.op {
            Op::Select => {
                let (cond, a, b) = (n.inputs[0], n.inputs[1], n.inputs[2]);
                let (fa, fb) = (self.constant(a, d), self.constant(b, d));
                if fa.is_none() {
                    if let Some(fill) = fill_of(fb) {
                        self.take(x);
                        return Some(if self.causal(cond) == Some(true) {
                            (MaskKind::Causal, None, a, fill, false)
                        } else {
                            (MaskKind::Bool, Some(cond), a, fill, false)
                        });
                    }
                }
                if fb.is_none() {
                    if let Some(fill) = fill_of(fa) {
                        if self.causal(cond) == Some(false) {
                            // `where_(col > row, f, s)`: the scores where the condition fails.
                            self.take(x);
                            return Some((MaskKind::Causal, None, b, fill, false));
                        }
                        if self.node(cond).op == Op::Unary(UnaryOp::Not) {
                            // `where_(!keep, f, s)`: `keep` is the mask (the `not` is left
                            // unread).
                            self.take(x);
                            let keep = self.node(cond).inputs[0];
                            return Some((MaskKind::Bool, Some(keep), b, fill, false));
                        }
                    }
                }
                self.miss = Some(match (fa, fb) {
                    (None, Some(f)) | (Some(f), None) if fill_of(Some(f)).is_none() => format!(
                        "the masked scores are filled with {f:e}, which is neither -inf nor \
                         finite (the softmax of the row is NaN)"
                    ),
                    (Some(_), None) => "the mask selects its fill where its condition holds \
                                       and is neither the complement of a causal condition \
                                       nor a `!mask`: write where_(keep, s, fill)"
                        .to_string(),
                    _ => "a select around the scores that is not a mask".to_string(),
                });
                None
            }
            Op::Binary(BinaryOp::Add) => {
                self.take(x);
                let (a, b) = (n.inputs[0], n.inputs[1]);
                // The scores are the operand that is a (scaled) matmul.
                let (s, m) = if self.is_scores(a) {
                    (a, b)
                } else if self.is_scores(b) {
                    (b, a)
                } else {
                    return None;
                };
                match self.causal_bias(m, d) {
                    // A masked score is `s - inf`: the op's bias form.
                    Some(None) => Some((MaskKind::Causal, None, s, None, true)),
                    Some(Some(f)) => {
                        self.partial = Some(format!(
                            "with its [Sq, Sk] bias as an operand: the causal bias adds the \
                             finite {f:e}, so a masked score is s + ({f:e}), not a constant \
                             (select the fill, where_(causal, s, {f:e}), to skip the masked \
                             tiles)"
                        ));
                        Some((MaskKind::Additive, Some(m), s, None, false))
                    }
                    None => Some((MaskKind::Additive, Some(m), s, None, false)),
                }
            }
            _ => Some((MaskKind::None, None, x, None, false)),
        }
    }

    /// `bias` (through broadcasts and reshapes) is `select(cond, 0, f)` with a causal
    /// `cond`, or `select(cond, f, 0)` with its complement: `Some(None)` when `f` is -inf,
    /// `Some(Some(f))` when finite (not a mask: masked scores are `s + f`). Its nodes are
    /// not taken: a bias computed once is read by every layer.
    fn causal_bias(&self, mut bias: ValueId, d: DType) -> Option<Option<f64>> {
        // Through casts between float types too (a weakly typed `where_(c, 0.0, -inf)` meeting
        // bf16 scores): 0 and -inf are the same in every one.
        let float_cast = |v: ValueId| match self.node(v).op {
            Op::Cast(t) => t.is_float() && self.node(self.node(v).inputs[0]).dtype.is_float(),
            _ => false,
        };
        while matches!(self.node(bias).op, Op::Broadcast | Op::Reshape) || float_cast(bias) {
            bias = self.node(bias).inputs[0];
        }
        let n = self.node(bias);
        if n.op != Op::Select {
            return None;
        }
        let (cond, a, b) = (n.inputs[0], n.inputs[1], n.inputs[2]);
        let (fa, fb) = (self.constant(a, d), self.constant(b, d));
        let zero = |f: Option<f64>| f == Some(0.0);
        let f = if zero(fa) && self.causal(cond) == Some(true) {
            fb?
        } else if zero(fb) && self.causal(cond) == Some(false) {
            fa?
        } else {
            return None;
        };
        match f {
            f if f == f64::NEG_INFINITY => Some(None),
            f if f.is_finite() && f != 0.0 => Some(Some(f)),
            _ => None,
        }
    }

    fn is_scores(&self, mut v: ValueId) -> bool {
        loop {
            let n = self.node(v);
            match n.op {
                Op::Matmul => return true,
                Op::Binary(BinaryOp::Mul | BinaryOp::Div) => v = n.inputs[0],
                _ => return false,
            }
        }
    }

    /// `Some(true)` when `cond` is causal (`col <= row` of `iota`s over the last two axes),
    /// `Some(false)` when it is the complement (`col > row`), `None` otherwise; through
    /// broadcasts, reshapes, `not`, and `select(c, true, false)` (`tril` of bool ones).
    fn causal(&self, mut cond: ValueId) -> Option<bool> {
        let mut keep = true;
        loop {
            let n = self.node(cond);
            match &n.op {
                Op::Broadcast | Op::Reshape => cond = n.inputs[0],
                Op::Unary(UnaryOp::Not) => {
                    keep = !keep;
                    cond = n.inputs[0];
                }
                Op::Select => {
                    let bool_of = |v| self.constant(v, DType::Bool);
                    match (bool_of(n.inputs[1]), bool_of(n.inputs[2])) {
                        (Some(1.0), Some(0.0)) => {}
                        (Some(0.0), Some(1.0)) => keep = !keep,
                        _ => return None,
                    }
                    cond = n.inputs[0];
                }
                _ => break,
            }
        }
        let n = self.node(cond);
        let r = n.shape.len();
        if r < 2 || !matches!(n.op, Op::Compare(_)) {
            return None;
        }
        // The axis an operand counts along and the integer added to it: an iota (any shape
        // of rank r, broadcast or not), plus constants (`tril`'s offset).
        let iota_axis = |mut v: ValueId| {
            let mut offset = 0i64;
            loop {
                let n = self.node(v);
                match n.op {
                    Op::Broadcast | Op::Reshape => v = n.inputs[0],
                    Op::Binary(BinaryOp::Add) if n.dtype.is_int() => {
                        match self.constant(n.inputs[1], n.dtype) {
                            Some(c) => {
                                offset += c as i64;
                                v = n.inputs[0];
                            }
                            None => return None,
                        }
                    }
                    _ => break,
                }
            }
            match (&self.node(v).op, self.node(v).shape.len()) {
                (Op::Iota(a), len) if len == r => Some((*a, offset)),
                _ => None,
            }
        };
        let (col, row) = (r - 1, r - 2);
        let (Some((a, oa)), Some((b, ob))) = (iota_axis(n.inputs[0]), iota_axis(n.inputs[1]))
        else {
            return None;
        };
        let Op::Compare(cmp) = n.op else { return None };
        // As `col - row  cmp  c`.
        let (cmp, c) = if (a, b) == (col, row) {
            (cmp, ob - oa)
        } else if (a, b) == (row, col) {
            let mirrored = match cmp {
                CmpOp::Le => CmpOp::Ge,
                CmpOp::Ge => CmpOp::Le,
                CmpOp::Lt => CmpOp::Gt,
                CmpOp::Gt => CmpOp::Lt,
                other => other,
            };
            (mirrored, oa - ob)
        } else {
            return None;
        };
        let int = self.node(n.inputs[0]).dtype.is_int();
        // Causal is `col - row <= 0`; on integers also `< 1`; its complement `> 0`, `>= 1`.
        let causal = match (cmp, c) {
            (CmpOp::Le, 0) => true,
            (CmpOp::Lt, 1) if int => true,
            (CmpOp::Gt, 0) => false,
            (CmpOp::Ge, 1) if int => false,
            _ => return None,
        };
        Some(causal == keep)
    }

    /// `s = scale · q @ kᵀ`: `(q, (k, transpose back?), scale)`.
    fn scores(&mut self, mut s: ValueId, d: DType) -> Option<(ValueId, (ValueId, bool), f64)> {
        let mut scale = 1.0;
        loop {
            let n = self.node(s).clone();
            match n.op {
                Op::Binary(op @ (BinaryOp::Mul | BinaryOp::Div)) => {
                    let (a, b) = (n.inputs[0], n.inputs[1]);
                    let (inner, c) = match (self.constant(b, d), self.constant(a, d)) {
                        (Some(c), _) => (a, c),
                        (None, Some(c)) if op == BinaryOp::Mul => (b, c),
                        _ => return None,
                    };
                    scale = if op == BinaryOp::Mul {
                        scale * c
                    } else {
                        scale / c
                    };
                    self.take(s);
                    s = inner;
                }
                Op::Matmul => {
                    self.take(s);
                    let (mut q, kt) = (n.inputs[0], n.inputs[1]);
                    // A scaled q: `(q * c) @ kᵀ`.
                    while let Op::Binary(BinaryOp::Mul) = self.node(q).op {
                        let (a, b) = (self.node(q).inputs[0], self.node(q).inputs[1]);
                        match self.constant(b, d) {
                            Some(c) => {
                                self.take(q);
                                scale *= c;
                                q = a;
                            }
                            None => break,
                        }
                    }
                    let kn = self.node(kt);
                    let r = kn.shape.len();
                    let swap = |p: &[usize]| {
                        p.len() == r
                            && (0..r - 2).all(|i| p[i] == i)
                            && p[r - 2] == r - 1
                            && p[r - 1] == r - 2
                    };
                    let k = match &kn.op {
                        Op::Transpose(p) if swap(p) => (kn.inputs[0], false),
                        _ => (kt, true),
                    };
                    return scale.is_finite().then_some((q, k, scale));
                }
                _ => return None,
            }
        }
    }
}

/// Copy `g`, emitting an `attention` node (and the views it needs) in place of each
/// recognised pattern's final matmul. The replaced interior nodes stay, unread: dead code
/// for `simplify` (their indices are what checkpoint regions and names refer to).
fn rebuild(g: &Graph, found: &[Option<Found>]) -> Graph {
    let mut out = Graph::new();
    let mut map: Vec<ValueId> = Vec::with_capacity(g.nodes.len());
    // The first new node emitted for each old one (node ranges map through it).
    let mut first: Vec<usize> = Vec::with_capacity(g.nodes.len() + 1);
    for (i, n) in g.nodes.iter().enumerate() {
        first.push(out.nodes.len());
        let Some(f) = &found[i] else {
            let mut c = n.clone();
            c.inputs = n.inputs.iter().map(|x| map[x.index()]).collect();
            map.push(out.push(c));
            continue;
        };
        let view = |out: &mut Graph, op: Op, x: ValueId, shape: Vec<usize>| -> ValueId {
            let xn = out.node(x);
            if op == Op::Broadcast && xn.shape == shape {
                return x;
            }
            let dtype = xn.dtype;
            out.push(Node {
                op,
                inputs: vec![x],
                shape,
                dtype,
                loc: n.loc,
            })
        };
        let r = n.shape.len();
        let batch = n.shape[..r - 2].to_vec();
        let with = |tail: [usize; 2]| {
            let mut s = batch.clone();
            s.extend(tail);
            s
        };
        let (q, k, v) = (map[f.q.index()], map[f.k.0.index()], map[f.v.index()]);
        let k = if f.k.1 {
            let s = &out.node(k).shape;
            let kr = s.len();
            let mut perm: Vec<usize> = (0..kr).collect();
            perm.swap(kr - 2, kr - 1);
            let mut shape = s.clone();
            shape.swap(kr - 2, kr - 1);
            view(&mut out, Op::Transpose(perm), k, shape)
        } else {
            k
        };
        let tail = |out: &Graph, x: ValueId| {
            let s = &out.node(x).shape;
            [s[s.len() - 2], s[s.len() - 1]]
        };
        let (tq, tk, tv) = (tail(&out, q), tail(&out, k), tail(&out, v));
        let q = view(&mut out, Op::Broadcast, q, with(tq));
        let k = view(&mut out, Op::Broadcast, k, with(tk));
        let v = view(&mut out, Op::Broadcast, v, with(tv));
        let mut inputs = vec![q, k, v];
        if let Some(m) = f.mask_value {
            inputs.push(view(
                &mut out,
                Op::Broadcast,
                map[m.index()],
                with([tq[0], tk[0]]),
            ));
        }
        map.push(out.push(Node {
            op: Op::Attention(if f.bias {
                AttnSpec::causal_bias(f.scale)
            } else {
                AttnSpec::new(f.mask, f.scale, f.fill)
            }),
            inputs,
            shape: n.shape.clone(),
            dtype: n.dtype,
            loc: n.loc,
        }));
    }
    first.push(out.nodes.len());
    out.outputs = g.outputs.iter().map(|o| map[o.index()]).collect();
    out.checkpoints = g
        .checkpoints
        .iter()
        .map(|c| crate::ir::CheckpointRegion {
            nodes: c
                .nodes
                .iter()
                .flat_map(|v| first[v.index()]..first[v.index() + 1])
                .map(|i| ValueId(i as u32))
                .collect(),
            policy: c.policy.clone(),
        })
        .collect();
    out.names = g
        .names
        .iter()
        .map(|(v, s)| (map[v.index()], s.clone()))
        .collect();
    out.grad_ranges = g
        .grad_ranges
        .iter()
        .map(|&(a, b, c)| (first[a], first[b], first[c]))
        .collect();
    out.late = g.late.iter().map(|v| map[v.index()]).collect();
    out
}

/// Drops the saved forward output from each `attention_grad` whose output nothing else
/// reads (a gradient of attention alone: the forward ran only to be saved), so that the
/// gradient recomputes it tile by tile and the forward step goes away: the same work,
/// without an `[.., Sq, Dv]` buffer living from the forward to the backward pass. Where
/// the output is read anyway (a transformer's output projection) it stays saved. `None`
/// when nothing changed; the caller simplifies the result (dead forward steps).
pub fn recompute_outputs(g: &Graph) -> Option<Graph> {
    let saved = |n: &Node| match &n.op {
        Op::AttentionGrad(spec) => spec.grad_operands(n.inputs.len())?.saved_output,
        _ => None,
    };
    // Reads of each value other than as an attention gradient's saved output.
    let mut other = vec![0usize; g.nodes.len()];
    for n in &g.nodes {
        let skip = saved(n);
        for (k, x) in n.inputs.iter().enumerate() {
            if Some(k) != skip {
                other[x.index()] += 1;
            }
        }
    }
    for o in &g.outputs {
        other[o.index()] += 1;
    }
    let mut out: Option<Graph> = None;
    for (i, n) in g.nodes.iter().enumerate() {
        let (Some(at), Op::AttentionGrad(spec)) = (saved(n), &n.op) else {
            continue;
        };
        let o = n.inputs[at];
        let fwd = g.node(o);
        let layout = spec.grad_operands(n.inputs.len()).unwrap();
        let mut operands = n.inputs[..3].to_vec();
        operands.extend(layout.mask.map(|m| n.inputs[m]));
        if fwd.op != Op::Attention(*spec) || fwd.inputs != operands || other[o.index()] > 0 {
            continue;
        }
        let g2 = out.get_or_insert_with(|| g.clone());
        g2.nodes[i].inputs.remove(at);
    }
    out
}
