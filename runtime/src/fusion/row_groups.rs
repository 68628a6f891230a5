//! Row groups: a reduction over the trailing axes of its input `S = O ++ I`
//! together with every connected node that lives per row (shape `O` or
//! `O ++ [1; |I|]`, "row level") or per element (shape `S`, "element level"),
//! other reductions with the same `(O, I)`, and the broadcasts and reshapes
//! between the two levels.
//!
//! The kernel of a group iterates over rows; within a row it runs one loop
//! over `I` per *phase* (all reductions whose operands are ready), then one
//! final loop for element-level outputs. Element-level values are recomputed
//! in each phase that needs them (never per element of a consumer: at most
//! once per phase), so nothing but the group's outputs touches memory.

use crate::ir::{Graph, Op, ValueId};
use std::collections::{HashSet, VecDeque};

#[derive(Clone, Debug, PartialEq)]
pub struct RowGroup {
    /// Kept (row) dimensions and reduced (within-row) dimensions.
    pub o: Vec<usize>,
    pub i: Vec<usize>,
    /// Members in topological order.
    pub members: Vec<ValueId>,
}

impl RowGroup {
    pub fn full_shape(&self) -> Vec<usize> {
        let mut s = self.o.clone();
        s.extend(&self.i);
        s
    }

    /// Whether a shape is per-row (`O` or `O ++ [1; |I|]`).
    pub fn is_row_shape(&self, s: &[usize]) -> bool {
        s == self.o.as_slice()
            || (s.len() == self.o.len() + self.i.len()
                && s[..self.o.len()] == self.o[..]
                && s[self.o.len()..].iter().all(|&d| d == 1))
    }

    pub fn is_element_shape(&self, s: &[usize]) -> bool {
        s == self.full_shape().as_slice()
    }
}

/// `(O, I)` of a reduction over trailing axes, if it is one.
fn trailing_reduction(g: &Graph, v: ValueId) -> Option<(Vec<usize>, Vec<usize>)> {
    let n = g.node(v);
    let Op::Reduce(_, axes) = &n.op else {
        return None;
    };
    let s = &g.node(n.inputs[0]).shape;
    let k = axes.len();
    if k == 0 || (0..k).any(|j| axes[j] != s.len() - k + j) {
        return None;
    }
    let (o, i) = s.split_at(s.len() - k);
    // Empty rows and rows of one element gain nothing from a row kernel
    // (and with one element the row and element shapes coincide).
    if i.iter().product::<usize>() <= 1 {
        return None;
    }
    Some((o.to_vec(), i.to_vec()))
}

fn qualifies(g: &Graph, grp: &RowGroup, v: ValueId, members: &HashSet<ValueId>) -> bool {
    let n = g.node(v);
    match &n.op {
        Op::Reduce(..) => trailing_reduction(g, v).is_some_and(|(o, i)| o == grp.o && i == grp.i),
        op if op.is_elementwise() => grp.is_element_shape(&n.shape) || grp.is_row_shape(&n.shape),
        Op::Broadcast | Op::Reshape => {
            let src = n.inputs[0];
            let ss = &g.node(src).shape;
            // A broadcast aligns trailing axes (NumPy): only a row value of
            // the output's rank (`O ++ 1s`) is spread over its own row; a
            // compact `O` would be spread along the row's axes instead.
            let row_wise = n.op != Op::Broadcast || ss.len() == n.shape.len();
            members.contains(&src)
                && grp.is_row_shape(ss)
                && row_wise
                && (grp.is_row_shape(&n.shape) || grp.is_element_shape(&n.shape))
        }
        _ => false,
    }
}

/// Users of every node.
fn users(g: &Graph) -> Vec<Vec<ValueId>> {
    let mut u = vec![Vec::new(); g.nodes.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        for x in &n.inputs {
            u[x.index()].push(ValueId(i as u32));
        }
    }
    u
}

/// Whether `x` depends (transitively) on any of `set`.
fn depends_on(g: &Graph, x: ValueId, set: &HashSet<ValueId>) -> bool {
    let mut stack = vec![x];
    let mut seen = HashSet::new();
    while let Some(v) = stack.pop() {
        if set.contains(&v) {
            return true;
        }
        if seen.insert(v) {
            stack.extend(g.node(v).inputs.iter().copied());
        }
    }
    false
}

/// Whether `members` can run as one step: no external input depends on a
/// member, and no outside user of a member comes before the group's last
/// member (it would be scheduled before the group).
fn valid(g: &Graph, users: &[Vec<ValueId>], members: &HashSet<ValueId>) -> bool {
    let last = members.iter().map(|v| v.index()).max().unwrap();
    for &m in members {
        for x in &g.node(m).inputs {
            if !members.contains(x) && depends_on(g, *x, members) {
                return false;
            }
        }
        for u in &users[m.index()] {
            if !members.contains(u) && u.index() < last {
                return false;
            }
        }
    }
    true
}

/// `seed` and the members it depends on through members.
fn input_cone(g: &Graph, seed: ValueId, members: &HashSet<ValueId>) -> HashSet<ValueId> {
    let mut cone = HashSet::from([seed]);
    let mut stack = vec![seed];
    while let Some(v) = stack.pop() {
        for &x in &g.node(v).inputs {
            if members.contains(&x) && cone.insert(x) {
                stack.push(x);
            }
        }
    }
    cone
}

/// Whether a node is a step of its own that makes a buffer (a library call, a control-flow
/// node): anything but elementwise ops, views, constants and parameters.
fn makes_buffer(op: &Op) -> bool {
    !(op.is_elementwise() || op.is_view() || matches!(op, Op::Const(_) | Op::Param(_) | Op::Get(_)))
}

/// Find the row groups of a graph (skipping seeds listed in `excluded`).
///
/// A producer joins a group only when no step that makes a buffer lies between it and the
/// member that reads it: a group runs where its last member is, so a producer pulled in
/// from further back would move its reads past those steps and keep its operands alive
/// across them. A gradient accumulated over 64 checkpointed time steps (one add per step,
/// each reading that step's product) and then squared for a global norm became one row
/// kernel reading all 64 products at the end: every recomputed step's product stayed alive,
/// undoing the checkpoint.
pub fn find_row_groups(g: &Graph, excluded: &HashSet<ValueId>) -> Vec<RowGroup> {
    let users = users(g);
    // heavy[i]: nodes before i that make a buffer of their own.
    let mut heavy = vec![0usize; g.nodes.len() + 1];
    for (i, n) in g.nodes.iter().enumerate() {
        heavy[i + 1] = heavy[i] + makes_buffer(&n.op) as usize;
    }
    let close =
        |w: ValueId, v: ValueId| w.index() >= v.index() || heavy[v.index()] == heavy[w.index() + 1];
    let mut claimed: HashSet<ValueId> = HashSet::new();
    let mut groups = Vec::new();
    for (i, _) in g.nodes.iter().enumerate() {
        let seed = ValueId(i as u32);
        if claimed.contains(&seed) || excluded.contains(&seed) {
            continue;
        }
        let Some((o, ii)) = trailing_reduction(g, seed) else {
            continue;
        };
        let mut grp = RowGroup {
            o,
            i: ii,
            members: vec![],
        };
        let mut members: HashSet<ValueId> = HashSet::new();
        members.insert(seed);
        let mut queue = VecDeque::from([seed]);
        while let Some(v) = queue.pop_front() {
            let n = g.node(v);
            // Inputs, users, and (sibling fusion) the other users of this
            // member's external inputs: mean and variance of the same x share
            // one pass.
            let mut neighbours = n
                .inputs
                .iter()
                .filter(|&&x| close(x, v))
                .chain(&users[v.index()])
                .copied()
                .collect::<Vec<_>>();
            for x in &n.inputs {
                if !members.contains(x) {
                    neighbours.extend(users[x.index()].iter().copied());
                }
            }
            for w in neighbours {
                if members.contains(&w) || claimed.contains(&w) || excluded.contains(&w) {
                    continue;
                }
                if qualifies(g, &grp, w, &members) {
                    members.insert(w);
                    queue.push_back(w);
                }
            }
        }
        // A view whose source joined later may now qualify: one more sweep.
        loop {
            let more: Vec<ValueId> = (0..g.nodes.len())
                .map(|i| ValueId(i as u32))
                .filter(|&w| {
                    !members.contains(&w)
                        && !claimed.contains(&w)
                        && qualifies(g, &grp, w, &members)
                })
                .filter(|&w| g.node(w).inputs.iter().any(|x| members.contains(x)))
                .collect();
            if more.is_empty() {
                break;
            }
            members.extend(more);
        }
        if !valid(g, &users, &members) {
            // The expansion reached nodes that depend on the reduction
            // through outside values (the elementwise users of a gradient
            // that is also scaled by a norm computed from it: clipping). The
            // reduction with its own producers alone still makes one pass
            // with nothing materialised: keep that part, if it is valid.
            let cone = input_cone(g, seed, &members);
            if cone.len() < members.len() && valid(g, &users, &cone) {
                members = cone;
            } else {
                continue;
            }
        }
        let mut ms: Vec<ValueId> = members.iter().copied().collect();
        ms.sort();
        claimed.extend(ms.iter().copied());
        grp.members = ms;
        groups.push(grp);
    }
    groups
}
