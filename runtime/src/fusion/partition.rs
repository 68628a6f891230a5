//! Splitting a graph into steps: Cranelift kernels and library calls.
//!
//! A kernel is one loop nest over an iteration shape computing a set of
//! same-shaped nodes: elementwise ops, and view ops (broadcast, transpose,
//! slice, reshape) that must be materialised. Views that are only read are
//! not computed at all: the reader folds their index map into its loads
//! (`Affine`). Constants are never materialised: kernels splat them.
//! Library steps (matmul, concat, pad, take, arg-reductions, iota,
//! scatters, random numbers) run outside Cranelift, reading their operands' buffers through
//! the operands' maps; reductions are kernels of their own.
//!
//! Loop fusion: all elementwise nodes of one shape go into one kernel unless
//! that would make a kernel depend on a later step (then a new kernel starts).
//!
//! Invariant: step k reads only parameters, captured tensors and outputs of
//! steps < k (or values it computes itself), so running steps in index order
//! is a valid schedule.

use crate::error::type_str;
use crate::fusion::RowGroup;
use crate::ir::{Graph, Op, ValueId};
use crate::{shape, Literal};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// Most nodes one loop kernel computes. A longer chain is cut into kernels
/// of this many nodes: the code of one kernel stays within the caches and
/// its register pressure bounded (values of a kernel live in registers or
/// its stack frame per vector; an unbounded kernel, e.g. the fused forward
/// and backward of a deep elementwise chain, needs registers for every
/// forward value the backward reads), and compile time linear in the graph
/// (the register allocator is superlinear in one function's size). Costs a
/// buffer per value crossing a cut.
pub const MAX_KERNEL_NODES: usize = 64;

/// An index map from a view's coordinates into a materialised root buffer:
/// element `i` of the view is `root[offset + Σ i_d * strides[d]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Affine {
    pub root: ValueId,
    pub offset: i64,
    pub strides: Vec<i64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The iteration shape (the shape of every node computed here).
    pub shape: Vec<usize>,
    /// Nodes computed in the kernel, in topological order.
    pub nodes: Vec<ValueId>,
    /// Materialised values read (parameters, captured, earlier steps' outputs).
    pub inputs: Vec<ValueId>,
    /// Values written to buffers: graph outputs and values later steps read.
    pub outputs: Vec<ValueId>,
    /// Where the kernel also sums columns (`describe::columns`): the iteration shape
    /// `[chunks, rows, ..kept]` of its sums' operands, which it walks instead of `shape` (the
    /// same elements in the same order). Its `reduce_sum` nodes over axis 1 accumulate there.
    pub columns: Option<Vec<usize>>,
}

/// A row group (see `fusion::row_groups`) with the buffers its kernel reads
/// and writes.
#[derive(Clone, Debug, PartialEq)]
pub struct RowKernel {
    pub group: RowGroup,
    /// Materialised values read (roots of the members' external operands).
    pub inputs: Vec<ValueId>,
    /// Members written to buffers.
    pub outputs: Vec<ValueId>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A fused row kernel: reductions over trailing axes with their
    /// producers and consumers.
    Row(RowKernel),
    Kernel(Kernel),
    /// One op run by the runtime library (operands read through their maps).
    Library(ValueId),
    /// A compiled reduction kernel (reads its input through `views`).
    Reduce(ValueId),
}

/// How each value is available to the code that reads it.
pub struct Partition {
    pub steps: Vec<Step>,
    /// Foldable views: their map into a materialised root.
    pub views: HashMap<ValueId, Affine>,
    /// Whether each value lives in a buffer of its own.
    pub materialised: Vec<bool>,
    /// Outputs that are a reshape of a whole buffer: returned as that buffer
    /// with the output's shape, without a copy (output → root).
    pub aliases: HashMap<ValueId, ValueId>,
}

/// Whether a value is read through a map into another buffer when it is not
/// materialised: a view, or a `barrier` (the value of its first operand,
/// read in place: the barrier orders the recomputation graph-wide, CSE
/// cannot merge across it, and it costs no copy; materialised, e.g. as a
/// program output, it is a copying library step).
fn folds(op: &Op) -> bool {
    op.is_view() || *op == Op::Barrier
}

/// Ops that run as their own step (library call or reduction kernel).
fn is_library(op: &Op) -> bool {
    matches!(
        op,
        Op::Reduce(..)
            | Op::Matmul
            | Op::Concat(_)
            | Op::Pad(..)
            | Op::Take(_)
            | Op::ArgMax(_)
            | Op::ArgMin(_)
            | Op::Iota(_)
            | Op::SliceScatter(_)
            | Op::ScatterAdd(_)
            | Op::Attention(_)
            | Op::Conv(_)
            | Op::Window(_)
            | Op::AllReduce(_)
            | Op::AllGather(..)
            | Op::ReduceScatter(..)
            | Op::BroadcastFrom(_)
            | Op::AttentionGrad(_)
            | Op::Random(_)
            | Op::Cond(_)
            | Op::While(_)
            | Op::Scan(_)
    )
}

/// The values the step of a multi-output node (control flow, `attention_grad`) writes:
/// the node (output 0) and its `get` nodes, in node order.
pub fn control_outputs(g: &Graph, v: ValueId) -> Vec<ValueId> {
    let mut out = vec![v];
    for (i, n) in g.nodes.iter().enumerate().skip(v.index() + 1) {
        if matches!(n.op, Op::Get(_)) && n.inputs[0] == v {
            out.push(ValueId(i as u32));
        }
    }
    out
}

/// How a step reads `x`: its buffer's root, element offset and strides (a
/// folded view reads its root through the view's map).
pub fn read_map(g: &Graph, p: &Partition, x: ValueId) -> Affine {
    match p.views.get(&x) {
        Some(a) if !p.materialised[x.index()] => a.clone(),
        _ => Affine {
            root: x,
            offset: 0,
            strides: contiguous(&g.node(x).shape),
        },
    }
}

/// Values a step reads (materialised buffers) and writes.
pub fn step_io(g: &Graph, p: &Partition, s: &Step) -> (Vec<ValueId>, Vec<ValueId>) {
    match s {
        Step::Kernel(k) => (k.inputs.clone(), k.outputs.clone()),
        Step::Row(r) => (r.inputs.clone(), r.outputs.clone()),
        Step::Reduce(v) => (vec![read_map(g, p, g.node(*v).inputs[0]).root], vec![*v]),
        Step::Library(v) => (
            g.node(*v)
                .inputs
                .iter()
                .map(|&x| read_map(g, p, x).root)
                .collect(),
            if g.node(*v).op.is_multi_output() {
                control_outputs(g, *v)
            } else {
                vec![*v]
            },
        ),
    }
}

/// The constant a value holds everywhere, if it is a constant or a view of one.
pub fn const_value(g: &Graph, v: ValueId) -> Option<Literal> {
    let n = g.node(v);
    match &n.op {
        Op::Const(l) => Some(*l),
        op if op.is_view() => const_value(g, n.inputs[0]),
        _ => None,
    }
}

/// Per output dim of a view (not reshape): `(input dim, step)` or `None` for a
/// new broadcast dim, plus the start index per input dim.
fn dim_map(
    op: &Op,
    in_shape: &[usize],
    out_shape: &[usize],
) -> (Vec<Option<(usize, i64)>>, Vec<i64>) {
    match op {
        Op::Broadcast => {
            let off = out_shape.len() - in_shape.len();
            let m = (0..out_shape.len())
                .map(|d| {
                    if d < off {
                        None
                    } else {
                        let e = d - off;
                        Some((e, if in_shape[e] == out_shape[d] { 1 } else { 0 }))
                    }
                })
                .collect();
            (m, vec![0; in_shape.len()])
        }
        Op::Transpose(p) => (
            p.iter().map(|&e| Some((e, 1))).collect(),
            vec![0; in_shape.len()],
        ),
        Op::Slice(sl) => (
            sl.iter()
                .enumerate()
                .map(|(d, &(_, step))| Some((d, step)))
                .collect(),
            sl.iter().map(|s| s.0).collect(),
        ),
        _ => unreachable!(),
    }
}

fn contiguous(shape: &[usize]) -> Vec<i64> {
    shape::strides(shape)
        .into_iter()
        .map(|s| s as i64)
        .collect()
}

/// Whether strides are row-major contiguous for `shape` (size-1 dims ignored).
fn is_contiguous(strides: &[i64], shape: &[usize]) -> bool {
    let c = contiguous(shape);
    shape
        .iter()
        .zip(strides.iter().zip(&c))
        .all(|(&n, (a, b))| n == 1 || a == b)
}

/// The affine map of a view over its materialised root, or `None` when a
/// reshape of a non-contiguous view makes it non-affine (then the reshape's
/// source must be materialised).
fn fold_view(
    g: &Graph,
    v: ValueId,
    views: &HashMap<ValueId, Affine>,
    materialised: &[bool],
) -> Option<Affine> {
    let n = g.node(v);
    let src = n.inputs[0];
    let s = g.node(src);
    let a = if !materialised[src.index()] && views.contains_key(&src) {
        views[&src].clone()
    } else {
        Affine {
            root: src,
            offset: 0,
            strides: contiguous(&s.shape),
        }
    };
    if n.op == Op::Barrier {
        return Some(a);
    }
    if n.op == Op::Reshape {
        if !is_contiguous(&a.strides, &s.shape) {
            // A reshape that only drops or inserts axes of length 1 keeps the other
            // axes' strides (a lane `x[.., j]` of `passes::short_axis` is one).
            let live = |sh: &[usize]| sh.iter().copied().filter(|&d| d != 1).collect::<Vec<_>>();
            if live(&s.shape) != live(&n.shape) {
                return None;
            }
            let mut kept = (s.shape.iter().zip(&a.strides))
                .filter(|(&d, _)| d != 1)
                .map(|(_, &st)| st);
            let strides = n
                .shape
                .iter()
                .map(|&d| if d == 1 { 0 } else { kept.next().unwrap() })
                .collect();
            return Some(Affine {
                root: a.root,
                offset: a.offset,
                strides,
            });
        }
        return Some(Affine {
            root: a.root,
            offset: a.offset,
            strides: contiguous(&n.shape),
        });
    }
    let (m, starts) = dim_map(&n.op, &s.shape, &n.shape);
    let offset = a.offset
        + starts
            .iter()
            .zip(&a.strides)
            .map(|(st, sd)| st * sd)
            .sum::<i64>();
    let strides = m
        .iter()
        .map(|d| d.map_or(0, |(e, step)| step * a.strides[e]))
        .collect();
    Some(Affine {
        root: a.root,
        offset,
        strides,
    })
}

/// Whether broadcast `v` should read its source from a contiguous copy: the source is a
/// strided view (a lane `p[:, j]` of positions `[N, 3]`, `passes::short_axis`) that the
/// broadcast re-reads many times. Read in place, every reader's vector loads along it
/// would be strided (element by element); copied once (a small kernel), they are
/// contiguous.
fn gathers_first(
    g: &Graph,
    v: ValueId,
    views: &HashMap<ValueId, Affine>,
    materialised: &[bool],
) -> bool {
    let n = g.node(v);
    if n.op != Op::Broadcast {
        return false;
    }
    let src = n.inputs[0];
    let s = g.node(src);
    let Some(a) = views.get(&src).filter(|_| !materialised[src.index()]) else {
        return false;
    };
    // (A source spread by a broadcast of its own, stride 0, stays a view: its copy
    // would be larger than what it reads.)
    let spread = s
        .shape
        .iter()
        .zip(&a.strides)
        .any(|(&d, &st)| d > 1 && st == 0);
    s.op.is_view()
        && !spread
        && !is_contiguous(&a.strides, &s.shape)
        && shape::numel(&n.shape) >= 4 * shape::numel(&s.shape).max(1)
}

/// Fold every view (in node order) into an affine map over a materialised
/// root; a reshape that cannot fold forces its source into a buffer.
fn fold_all(
    g: &Graph,
    materialised: &mut [bool],
    members: &HashSet<ValueId>,
) -> HashMap<ValueId, Affine> {
    let mut views: HashMap<ValueId, Affine> = HashMap::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let v = ValueId(i as u32);
        if !folds(&n.op) || const_value(g, v).is_some() || members.contains(&v) {
            continue;
        }
        if n.op == Op::Barrier && materialised[i] {
            continue; // copied by its own step
        }
        if gathers_first(g, v, &views, materialised) {
            // Copy the view below its reshapes (the lane `p[:, j]` that `p[None, :, j]`
            // and `p[:, None, j]` both reshape: one copy for both), then fold the
            // reshapes again over the copy.
            let mut chain = vec![n.inputs[0]];
            loop {
                let c = g.node(*chain.last().unwrap());
                let below = c.inputs.first().copied();
                match below {
                    Some(b)
                        if c.op == Op::Reshape
                            && views.contains_key(&b)
                            && !materialised[b.index()]
                            && g.node(b).op.is_view() =>
                    {
                        chain.push(b)
                    }
                    _ => break,
                }
            }
            let copied = chain.pop().unwrap();
            materialised[copied.index()] = true;
            for &r in chain.iter().rev() {
                let a = fold_view(g, r, &views, materialised).expect("reshape of a copy folds");
                views.insert(r, a);
            }
        }
        match fold_view(g, v, &views, materialised) {
            Some(a) => {
                views.insert(v, a);
            }
            None => {
                materialised[n.inputs[0].index()] = true;
                let a = fold_view(g, v, &views, materialised)
                    .expect("reshape of a materialised value folds");
                views.insert(v, a);
            }
        }
    }
    views
}

/// The steps of `g` with row kernels for exactly the row groups `groups` (the checked
/// partition, which leaves out the groups no row kernel can address, is
/// `describe::partition`).
pub fn partition_with(g: &Graph, groups: Vec<RowGroup>, copy_barriers: bool) -> Partition {
    let nn = g.nodes.len();
    let mut group_of: Vec<Option<usize>> = vec![None; nn];
    for (k, grp) in groups.iter().enumerate() {
        for &m in &grp.members {
            group_of[m.index()] = Some(k);
        }
    }
    let members: HashSet<ValueId> = groups
        .iter()
        .flat_map(|g| g.members.iter().copied())
        .collect();
    let group_last: Vec<ValueId> = groups.iter().map(|g| *g.members.last().unwrap()).collect();
    // 1. What must live in a buffer: outputs, library operands, sources of
    //    non-foldable reshapes. Views of constants never need one.
    let mut materialised = vec![false; nn];
    for (i, n) in g.nodes.iter().enumerate() {
        if group_of[i].is_some() {
            // Members live in the row kernel's registers; those read outside
            // the group become its outputs. Their external operands are read
            // like a loop kernel's (buffers, folded views, splatted constants).
            continue;
        }
        for &x in &n.inputs {
            if members.contains(&x) {
                materialised[x.index()] = true;
            }
        }
        if matches!(n.op, Op::Param(_) | Op::Captured(_) | Op::Get(_))
            || is_library(&n.op)
            || (copy_barriers && n.op == Op::Barrier)
        {
            materialised[i] = true;
        }
        if is_library(&n.op) {
            // (Plain constants have no buffer; the executable fills them.)
            // Reductions and library steps read a view of an operand through
            // the view's map (a GEMM takes any row and column strides, the
            // other library loops any strides); control flow's sub-programs
            // take contiguous arguments.
            for &x in &n.inputs {
                let view_read =
                    !n.op.is_control() && folds(&g.node(x).op) && const_value(g, x).is_none();
                if !view_read {
                    materialised[x.index()] = true;
                }
            }
        }
    }
    for &o in &g.outputs {
        if !matches!(g.node(o).op, Op::Const(_)) {
            materialised[o.index()] = true;
        }
    }
    // A barrier that must have a buffer of its own is a copying library
    // step: its operands are read from buffers (in reverse node order, so a
    // barrier of a barrier materialises both).
    for (i, n) in g.nodes.iter().enumerate().rev() {
        if n.op == Op::Barrier && materialised[i] && group_of[i].is_none() {
            for &x in &n.inputs {
                if const_value(g, x).is_none() {
                    materialised[x.index()] = true;
                }
            }
        }
    }
    let mut views = fold_all(g, &mut materialised, &members);
    // A materialised view is computed by a kernel reading its map; a view
    // whose root became materialised after it was folded still folds (the
    // map was taken over the root, which exists either way).

    // Outputs that only reinterpret a whole buffer alias it instead.
    let mut aliases = HashMap::new();
    for &o in &g.outputs {
        if let Some(a) = views.get(&o) {
            let root = g.node(a.root);
            if a.offset == 0
                && is_contiguous(&a.strides, &g.node(o).shape)
                && shape::numel(&root.shape) == shape::numel(&g.node(o).shape)
                && root.dtype == g.node(o).dtype
            {
                materialised[o.index()] = false;
                materialised[a.root.index()] = true;
                aliases.insert(o, a.root);
            }
        }
    }
    // Views folded through an aliased output must now fold through to its root.
    if !aliases.is_empty() {
        views = fold_all(g, &mut materialised, &members);
    }

    // 2. Steps in node order.
    let mut step_of: Vec<Option<usize>> = vec![None; nn];
    let mut steps: Vec<Step> = Vec::new();
    // The last loop kernel of each iteration shape (where a node may join).
    let mut last_kernel: HashMap<Vec<usize>, usize> = HashMap::new();
    let mut is_late = vec![false; nn];
    for v in &g.late {
        is_late[v.index()] = true;
    }
    // The step that produces a value's buffer (for a folded view: its root's).
    let producer = |x: ValueId,
                    step_of: &Vec<Option<usize>>,
                    views: &HashMap<ValueId, Affine>|
     -> Option<usize> {
        if !materialised[x.index()] {
            if let Some(a) = views.get(&x) {
                return step_of[a.root.index()];
            }
        }
        step_of[x.index()]
    };
    for (i, n) in g.nodes.iter().enumerate() {
        let v = ValueId(i as u32);
        if let Some(k) = group_of[i] {
            if group_last[k] == v {
                steps.push(Step::Row(RowKernel {
                    group: groups[k].clone(),
                    inputs: vec![],
                    outputs: vec![],
                }));
                let at = steps.len() - 1;
                for &m in &groups[k].members {
                    step_of[m.index()] = Some(at);
                }
            }
            continue;
        }
        if let Op::Get(_) = n.op {
            // Written by its control-flow node's step.
            step_of[i] = step_of[n.inputs[0].index()];
            continue;
        }
        if n.op == Op::Barrier && !materialised[i] {
            continue; // read in place through its map
        }
        if is_library(&n.op) || n.op == Op::Barrier {
            steps.push(if matches!(n.op, Op::Reduce(..)) {
                Step::Reduce(v)
            } else {
                Step::Library(v)
            });
            step_of[i] = Some(steps.len() - 1);
            continue;
        }
        let computed = n.op.is_elementwise() || (n.op.is_view() && materialised[i]);
        if !computed {
            continue;
        }
        // A computed view reads its root through its map: the root must come
        // from an earlier step. Elementwise operands may be in the same kernel.
        let mut need_before = Vec::new();
        let mut allow_same = Vec::new();
        if n.op.is_view() {
            if let Some(a) = views.get(&v) {
                if let Some(p) = step_of[a.root.index()] {
                    need_before.push(p);
                }
            }
        } else {
            for &x in &n.inputs {
                if let Some(p) = producer(x, &step_of, &views) {
                    if materialised[x.index()] || !views.contains_key(&x) {
                        allow_same.push(p);
                    } else {
                        need_before.push(p);
                    }
                }
            }
        }
        let candidate = last_kernel.get(&n.shape).copied();
        let late = is_late[i];
        let k = match candidate {
            Some(k)
                if !late
                    && need_before.iter().all(|&p| p < k)
                    && allow_same.iter().all(|&p| p <= k)
                    && matches!(&steps[k], Step::Kernel(kk) if kk.nodes.len() < MAX_KERNEL_NODES) =>
            {
                k
            }
            _ => {
                steps.push(Step::Kernel(Kernel {
                    shape: n.shape.clone(),
                    nodes: vec![],
                    inputs: vec![],
                    outputs: vec![],
                    columns: None,
                }));
                last_kernel.insert(n.shape.clone(), steps.len() - 1);
                steps.len() - 1
            }
        };
        step_of[i] = Some(k);
        if let Step::Kernel(kern) = &mut steps[k] {
            kern.nodes.push(v);
        }
    }
    // 3. Kernel inputs and outputs.
    let mut needed = vec![false; nn];
    for &o in &g.outputs {
        needed[aliases.get(&o).copied().unwrap_or(o).index()] = true;
    }
    for (i, n) in g.nodes.iter().enumerate() {
        let copied_barrier = n.op == Op::Barrier && materialised[i];
        if (is_library(&n.op) || copied_barrier) && group_of[i].is_none() {
            for &x in &n.inputs {
                let read = if !materialised[x.index()] && views.contains_key(&x) {
                    views[&x].root
                } else {
                    x
                };
                needed[read.index()] = true;
            }
        }
    }
    for (k, step) in steps.iter_mut().enumerate() {
        let Step::Kernel(kernel) = step else { continue };
        let mut inputs: Vec<ValueId> = Vec::new();
        for &v in &kernel.nodes {
            let n = g.node(v);
            let reads: Vec<ValueId> = if n.op.is_view() {
                views.get(&v).map(|a| vec![a.root]).unwrap_or_default()
            } else {
                n.inputs
                    .iter()
                    .filter(|x| const_value(g, **x).is_none())
                    .map(|&x| {
                        if !materialised[x.index()] && views.contains_key(&x) {
                            views[&x].root
                        } else {
                            x
                        }
                    })
                    .collect()
            };
            for x in reads {
                if step_of[x.index()] == Some(k) && !(n.op.is_view()) {
                    continue;
                }
                needed[x.index()] = true;
                if !inputs.contains(&x) {
                    inputs.push(x);
                }
            }
        }
        kernel.inputs = inputs;
    }
    for step in steps.iter_mut() {
        let Step::Row(rk) = step else { continue };
        let own: HashSet<ValueId> = rk.group.members.iter().copied().collect();
        let mut inputs = Vec::new();
        for &m in &rk.group.members {
            for &x in &g.node(m).inputs {
                if own.contains(&x) || const_value(g, x).is_some() {
                    continue;
                }
                let root = if !materialised[x.index()] && views.contains_key(&x) {
                    views[&x].root
                } else {
                    x
                };
                needed[root.index()] = true;
                if !inputs.contains(&root) {
                    inputs.push(root);
                }
            }
        }
        rk.inputs = inputs;
    }
    for step in steps.iter_mut() {
        match step {
            Step::Kernel(kernel) => {
                kernel.outputs = kernel
                    .nodes
                    .iter()
                    .copied()
                    .filter(|v| needed[v.index()])
                    .collect()
            }
            Step::Row(rk) => {
                rk.outputs = rk
                    .group
                    .members
                    .iter()
                    .copied()
                    .filter(|v| needed[v.index()])
                    .collect()
            }
            _ => {}
        }
    }
    sink_cheap_outputs(g, &mut steps, &materialised, &aliases);
    steps.retain(|s| {
        !matches!(s, Step::Kernel(k) if k.outputs.is_empty())
            && !matches!(s, Step::Row(r) if r.outputs.is_empty())
    });
    Partition {
        steps,
        views,
        materialised,
        aliases,
    }
}

/// Elementwise ops cheap enough to recompute rather than store.
fn is_cheap(op: &Op) -> bool {
    use crate::ir::{BinaryOp as B, UnaryOp as U};
    match op {
        Op::Compare(_) | Op::Select | Op::Cast(_) => true,
        Op::Unary(u) => matches!(
            u,
            U::Neg | U::Abs | U::Relu | U::Square | U::Not | U::StopGradient
        ),
        Op::Binary(b) => matches!(
            b,
            B::Add | B::Sub | B::Mul | B::Max | B::Min | B::And | B::Or
        ),
        _ => false,
    }
}

/// Duplicate cheap producers into their consumers instead of materialising
/// them: a kernel output that is a cheap elementwise op of values which are
/// in buffers anyway, read (at the same shape) only by later kernels, is
/// recomputed in each of them (a ReLU mask kept for the backward pass costs a
/// buffer; recomputing it from the saved activation costs nothing).
///
/// A program output's buffer is never sunk, nor the root an output aliases (a reshape of
/// it returned): sunk, it had no writer and the output was never computed.
fn sink_cheap_outputs(
    g: &Graph,
    steps: &mut [Step],
    materialised: &[bool],
    aliases: &HashMap<ValueId, ValueId>,
) {
    let outputs: HashSet<ValueId> = g
        .outputs
        .iter()
        .map(|o| aliases.get(o).copied().unwrap_or(*o))
        .collect();
    for p in 0..steps.len() {
        let Step::Kernel(prod) = &steps[p] else {
            continue;
        };
        let candidates: Vec<ValueId> = prod.outputs.clone();
        for o in candidates {
            let n = g.node(o);
            if outputs.contains(&o) || !is_cheap(&n.op) {
                continue;
            }
            let Step::Kernel(prod) = &steps[p] else {
                unreachable!()
            };
            // Its operands must already be in buffers when consumers run.
            let operands_ready = n.inputs.iter().all(|x| {
                const_value(g, *x).is_some()
                    || materialised[x.index()]
                    || prod.inputs.contains(x)
                    || (prod.outputs.contains(x) && *x != o)
            });
            // The producer itself must not need it internally.
            let used_in_prod = prod.nodes.iter().any(|v| g.node(*v).inputs.contains(&o));
            if !operands_ready || used_in_prod {
                continue;
            }
            // Every reader: a later kernel reading it directly at its shape.
            let mut readers = Vec::new();
            let mut ok = true;
            for (q, s) in steps.iter().enumerate() {
                let reads = match s {
                    Step::Kernel(k) => k.inputs.contains(&o),
                    Step::Row(r) => r.inputs.contains(&o),
                    // (Directly or through a folded view of it.)
                    Step::Reduce(v) | Step::Library(v) => g.node(*v).inputs.iter().any(|&x| {
                        let mut x = x;
                        while x != o && g.node(x).op.is_view() && !materialised[x.index()] {
                            x = g.node(x).inputs[0];
                        }
                        x == o
                    }),
                };
                if !reads || q == p {
                    continue;
                }
                match s {
                    Step::Kernel(k)
                        if q > p && k.shape == n.shape && k.nodes.len() < MAX_KERNEL_NODES =>
                    {
                        // Read only as an elementwise operand: a view of it (computed,
                        // or folded into a read) needs it in a buffer.
                        let through_view = |x: ValueId| {
                            let mut x = x;
                            while x != o && g.node(x).op.is_view() && !materialised[x.index()] {
                                x = g.node(x).inputs[0];
                            }
                            x == o
                        };
                        let direct = k.nodes.iter().all(|v| {
                            let vn = g.node(*v);
                            (!vn.inputs.contains(&o) || !vn.op.is_view())
                                && vn.inputs.iter().all(|&x| x == o || !through_view(x))
                        });
                        if direct {
                            readers.push(q);
                        } else {
                            ok = false;
                        }
                    }
                    _ => ok = false,
                }
            }
            if !ok || readers.is_empty() {
                continue;
            }
            for q in readers {
                let Step::Kernel(k) = &mut steps[q] else {
                    unreachable!()
                };
                k.inputs.retain(|x| *x != o);
                for &x in &n.inputs {
                    if const_value(g, x).is_none()
                        && !k.inputs.contains(&x)
                        && !k.nodes.contains(&x)
                    {
                        k.inputs.push(x);
                    }
                }
                k.nodes.insert(0, o);
            }
            let Step::Kernel(prod) = &mut steps[p] else {
                unreachable!()
            };
            prod.outputs.retain(|x| *x != o);
            prod.nodes.retain(|x| *x != o);
        }
    }
}

/// Text of the step list, for `Lowered::as_text`.
pub fn steps_text(g: &Graph, p: &Partition) -> String {
    let list = |vs: &[ValueId]| {
        vs.iter()
            .map(|v| format!("%{}", v.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // `%v = op[attrs] %a, %b : type`
    let node = |v: ValueId| {
        let n = g.node(v);
        format!(
            "%{} = {}{} {} : {}",
            v.0,
            n.op.name(),
            crate::ir::attr_text(&n.op),
            list(&n.inputs),
            type_str(n.dtype, &n.shape)
        )
    };
    let mut s = String::new();
    for (i, step) in p.steps.iter().enumerate() {
        let (head, nodes): (String, &[ValueId]) = match step {
            Step::Library(v) => (format!("library {}", node(*v)), &[]),
            Step::Reduce(v) => (format!("reduce kernel {}", node(*v)), &[]),
            Step::Row(rk) => (
                format!(
                    "row kernel over rows {:?} x {:?} reads ({}) writes ({})",
                    rk.group.o,
                    rk.group.i,
                    list(&rk.inputs),
                    list(&rk.outputs)
                ),
                &rk.group.members,
            ),
            Step::Kernel(k) => (
                format!(
                    "kernel over {:?}{} reads ({}) writes ({})",
                    k.shape,
                    match &k.columns {
                        Some(c) => format!(" in columns {c:?}"),
                        None => String::new(),
                    },
                    list(&k.inputs),
                    list(&k.outputs)
                ),
                &k.nodes,
            ),
        };
        writeln!(s, "step {i}: {head}").unwrap();
        for &v in nodes {
            writeln!(s, "  {}", node(v)).unwrap();
        }
    }
    s
}
