//! Buffer planning: where every value lives while a program runs.
//!
//! Steps run in partition order. Each value a step writes is an *output*
//! (returned to the caller: a fresh buffer per call, or a donated argument's
//! buffer), or a *temporary* placed in ONE arena per executable, reused
//! across calls. Temporaries get liveness intervals `[defining step, last
//! reading step]` and offsets by decreasing-size best fit (XLA's heap
//! simulator strategy): each buffer, largest first, goes into the smallest
//! gap left by the already-placed buffers whose intervals overlap its own.
//! A kernel may write an output over an input that dies at that step when it
//! reads that input only at the positions it writes (in-place); such chains
//! are placed as one buffer. Before the arena is laid out, temporaries that
//! die before some output is written are *hosted* in that output's buffer
//! (allocated for the whole call anyway; in a possibly donated one only
//! after the argument's last read), as XLA's buffer assignment does: a
//! gradient's residuals fit in the buffers of the weight gradients written
//! after them. A donated argument no output reuses hosts temporaries born
//! after its last read (the executor substitutes a fresh buffer when the
//! caller still shares it). `check` verifies a plan independently.

pub mod svg;

use crate::fusion::partition::Partition;
use crate::ir::{Graph, Op, ValueId};
use crate::{shape, Error};
use std::collections::HashMap;

/// Arena offsets and sizes are multiples of this (a cache line).
pub const ARENA_ALIGN: usize = 64;

/// A temporary placed inside a program output's buffer, in the steps before
/// that output is written (its buffer is allocated for the whole call
/// anyway): XLA's buffer assignment does the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hosted {
    /// The temporary; `offset` is inside the host's buffer.
    pub iv: Interval,
    /// The buffer holding it: an output (the step writing it is `host_def`)
    /// or a donated parameter no output reuses (`host_def` = the number of
    /// steps: it is never written), and the host's size in bytes.
    pub host: ValueId,
    pub host_def: usize,
    pub host_bytes: usize,
    /// The first step at which the host's bytes are free: 0 for a fresh
    /// output, one past the last read of the donated argument otherwise.
    pub free_from: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Not materialised (folded view, constant, unused) or an argument.
    None,
    /// A temporary at this arena offset.
    Arena(usize),
    /// A program output: a fresh buffer per call (or a donated argument's).
    Output,
    /// A temporary at this byte offset inside an output's buffer (dead
    /// before that output is written) or a dead donated argument's (see
    /// `Hosted`).
    InOutput(ValueId, usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    pub value: ValueId,
    pub def: usize,
    pub last: usize,
    pub offset: usize,
    pub size: usize,
}

#[derive(Clone, Debug, Default)]
pub struct BufferPlan {
    pub place: Vec<Place>,
    pub arena_bytes: usize,
    /// Temporaries in the arena.
    pub temps: Vec<Interval>,
    /// Temporaries inside outputs' buffers (not in the arena).
    pub hosted: Vec<Hosted>,
    /// `(input, output, step)`: the output is written over the input there.
    pub inplace: Vec<(ValueId, ValueId, usize)>,
    /// `(parameter index, output)`: the output may reuse the argument's
    /// buffer when the caller gave it away (owned and not shared).
    pub donations: Vec<(usize, ValueId)>,
    /// `(parameter index, parameter)`: donated parameters no output reuses
    /// whose buffers host temporaries after their last read (`hosted`). When
    /// the caller still shares such an argument, the executor gives its
    /// guests a substitute buffer of the same size instead.
    pub arg_hosts: Vec<(usize, ValueId)>,
    /// Largest sum of live arena temporaries at any step (in-place chains
    /// once).
    pub lower_bound_bytes: usize,
}

pub use crate::fusion::partition::step_io;

fn align(n: usize) -> usize {
    n.div_ceil(ARENA_ALIGN) * ARENA_ALIGN
}

fn bytes(g: &Graph, v: ValueId) -> usize {
    shape::numel(&g.node(v).shape) * g.node(v).dtype.size()
}

/// Plan the buffers. `owned[k]` says whether argument `k` is passed by value (its buffer
/// may be donated); `inplace_ok(step, input, output)` whether a step may write `output`
/// over `input`.
pub fn plan(
    g: &Graph,
    p: &Partition,
    owned: &[bool],
    inplace_ok: &dyn Fn(usize, ValueId, ValueId) -> bool,
) -> BufferPlan {
    let nn = g.nodes.len();
    let mut def: Vec<Option<usize>> = vec![None; nn];
    let mut last: Vec<Option<usize>> = vec![None; nn];
    let mut reads_at: Vec<Vec<ValueId>> = Vec::new();
    for (si, s) in p.steps.iter().enumerate() {
        let (r, w) = step_io(g, p, s);
        for &x in &r {
            last[x.index()] = Some(si);
        }
        for &x in &w {
            def[x.index()] = Some(si);
        }
        reads_at.push(r);
    }
    // Values returned to the caller (aliases resolved).
    let mut is_output = vec![false; nn];
    for &o in &g.outputs {
        is_output[p.aliases.get(&o).copied().unwrap_or(o).index()] = true;
    }
    let mut place = vec![Place::None; nn];
    let mut temps: Vec<ValueId> = Vec::new();
    for i in 0..nn {
        if def[i].is_some() {
            if is_output[i] {
                place[i] = Place::Output;
            } else {
                temps.push(ValueId(i as u32));
            }
        }
    }
    let last_of = |v: ValueId| {
        last[v.index()]
            .unwrap_or(def[v.index()].unwrap())
            .max(def[v.index()].unwrap())
    };

    // In-place chains: union temporaries written over a dying input.
    let mut parent: HashMap<ValueId, ValueId> = HashMap::new();
    fn find(parent: &HashMap<ValueId, ValueId>, mut v: ValueId) -> ValueId {
        while let Some(&p) = parent.get(&v) {
            v = p;
        }
        v
    }
    let mut inplace = Vec::new();
    let mut used_input: Vec<bool> = vec![false; nn];
    for (si, s) in p.steps.iter().enumerate() {
        let (_, writes) = step_io(g, p, s);
        for &o in &writes {
            if is_output[o.index()] {
                continue;
            }
            let cand = reads_at[si].iter().copied().find(|&x| {
                def[x.index()].is_some()
                    && !is_output[x.index()]
                    && !used_input[x.index()]
                    && last_of(x) == si
                    && bytes(g, x) == bytes(g, o)
                    && inplace_ok(si, x, o)
            });
            if let Some(x) = cand {
                used_input[x.index()] = true;
                parent.insert(o, find(&parent, x));
                inplace.push((x, o, si));
            }
        }
    }
    // Virtual buffers: one per chain root, spanning the chain.
    let mut groups: HashMap<ValueId, (usize, usize, usize)> = HashMap::new(); // root -> (def, last, size)
    for &t in &temps {
        let r = find(&parent, t);
        let e = groups.entry(r).or_insert((usize::MAX, 0, 0));
        e.0 = e.0.min(def[t.index()].unwrap());
        e.1 = e.1.max(last_of(t));
        e.2 = e.2.max(align(bytes(g, t)));
    }
    // Donation: an owned argument's buffer backs an output of the same size
    // written at or after the argument's last read (in place when at it).
    // An argument read later can take fewer outputs (those written after its
    // last read are a subset of an earlier-read argument's), so arguments are
    // matched latest-read first: with nested choices that serves every
    // argument that can be served (first come, first served left arguments
    // of a common size without a buffer). Among the outputs an argument may
    // take it prefers the output in its own position (`fn step(p, s) -> (p,
    // s, ..)` returns each leaf where it came in), then one its last reader
    // writes in place, then the first.
    let mut donations = Vec::new();
    let params = g.params();
    let mut taken: Vec<bool> = vec![false; nn];
    let mut order: Vec<usize> = (0..owned.len().min(params.len()))
        .filter(|&k| owned[k])
        .collect();
    order.sort_by_key(|&k| std::cmp::Reverse(last[params[k].index()].map_or(0, |l| l + 1)));
    for k in order {
        let pv = params[k];
        if is_output[pv.index()] || g.outputs.iter().any(|o| p.aliases.get(o) == Some(&pv)) {
            continue;
        }
        let pl = last[pv.index()];
        let eligible = |o: ValueId| {
            place[o.index()] == Place::Output
                && !taken[o.index()]
                && bytes(g, o) == bytes(g, pv)
                && bytes(g, o) > 0
                && match pl {
                    None => true,
                    Some(l) => {
                        let d = def[o.index()].unwrap();
                        d > l || (d == l && inplace_ok(d, pv, o))
                    }
                }
        };
        let own = g
            .outputs
            .get(k)
            .map(|&o| p.aliases.get(&o).copied().unwrap_or(o))
            .filter(|&o| eligible(o));
        let written_in_place = || {
            (0..nn)
                .map(|i| ValueId(i as u32))
                .find(|&o| eligible(o) && pl == def[o.index()])
        };
        let first = || (0..nn).map(|i| ValueId(i as u32)).find(|&o| eligible(o));
        if let Some(o) = own.or_else(written_in_place).or_else(first) {
            taken[o.index()] = true;
            donations.push((k, o));
        }
    }
    donations.sort();
    // Hosting: a temporary may live inside a buffer that exists for the
    // whole call while that buffer's bytes are free: an output's before the
    // step writing it (a donated output's only after the argument's last
    // read: it is the argument's buffer then), a donated argument no output
    // reuses after its last read. Temporaries that die latest have the
    // fewest hosts: they go first, each into the host written soonest after
    // it dies where a gap of its size is free over its interval (best fit);
    // dead arguments (never written) come last.
    let nsteps = p.steps.len();
    let free_after = |k: usize| last[params[k].index()].map_or(0, |l| l + 1);
    // (host, free from, written at, usable bytes)
    let mut host_list: Vec<(ValueId, usize, usize, usize)> = (0..nn)
        .map(|i| ValueId(i as u32))
        .filter(|&o| place[o.index()] == Place::Output)
        .map(|o| {
            let from = donations
                .iter()
                .find(|d| d.1 == o)
                .map_or(0, |&(k, _)| free_after(k));
            (
                o,
                from,
                def[o.index()].unwrap(),
                bytes(g, o) / ARENA_ALIGN * ARENA_ALIGN,
            )
        })
        .collect();
    let mut arg_hosts = Vec::new();
    for (k, &own) in owned.iter().enumerate() {
        if !own || k >= params.len() || donations.iter().any(|d| d.0 == k) {
            continue;
        }
        let pv = params[k];
        if is_output[pv.index()] || g.outputs.iter().any(|o| p.aliases.get(o) == Some(&pv)) {
            continue;
        }
        arg_hosts.push((k, pv));
        host_list.push((
            pv,
            free_after(k),
            nsteps,
            bytes(g, pv) / ARENA_ALIGN * ARENA_ALIGN,
        ));
    }
    host_list.retain(|h| h.3 > 0 && h.1 < h.2);
    host_list.sort_by_key(|h| (h.2, h.0));
    let mut by_last: Vec<(ValueId, (usize, usize, usize))> =
        groups.iter().map(|(r, v)| (*r, *v)).collect();
    by_last.sort_by(|a, b| {
        b.1 .1
            .cmp(&a.1 .1)
            .then(b.1 .2.cmp(&a.1 .2))
            .then(a.0.cmp(&b.0))
    });
    // Per host: (def, last, offset, size) of what it holds.
    let mut host_placed: Vec<Vec<(usize, usize, usize, usize)>> = vec![Vec::new(); host_list.len()];
    let mut hosted_at: HashMap<ValueId, (usize, usize)> = HashMap::new(); // root -> (host index, offset)
    for (root, (d, l, size)) in by_last {
        let first = host_list.partition_point(|h| h.2 <= l);
        for hi in first..host_list.len() {
            if host_list[hi].3 < size || host_list[hi].1 > d {
                continue;
            }
            if let Some(off) = best_fit(&host_placed[hi], d, l, size, host_list[hi].3) {
                host_placed[hi].push((d, l, off, size));
                hosted_at.insert(root, (hi, off));
                break;
            }
        }
    }
    arg_hosts.retain(|a| hosted_at.values().any(|&(hi, _)| host_list[hi].0 == a.1));
    groups.retain(|r, _| !hosted_at.contains_key(r));
    let mut order: Vec<(ValueId, (usize, usize, usize))> = groups.into_iter().collect();
    order.sort_by(|a, b| {
        b.1 .2
            .cmp(&a.1 .2)
            .then(a.1 .0.cmp(&b.1 .0))
            .then(a.0.cmp(&b.0))
    });
    let mut placed: Vec<(usize, usize, usize, usize)> = Vec::new(); // def, last, offset, size
    let mut offset_of: HashMap<ValueId, usize> = HashMap::new();
    let mut arena_bytes = 0;
    for (root, (d, l, size)) in order {
        let off = best_fit(&placed, d, l, size, usize::MAX).expect("the arena grows");
        placed.push((d, l, off, size));
        offset_of.insert(root, off);
        arena_bytes = arena_bytes.max(off.saturating_add(size));
    }
    let mut intervals = Vec::new();
    let mut hosted = Vec::new();
    for &t in &temps {
        let iv = |offset| Interval {
            value: t,
            def: def[t.index()].unwrap(),
            last: last_of(t),
            offset,
            size: align(bytes(g, t)),
        };
        let root = find(&parent, t);
        if let Some(&(hi, off)) = hosted_at.get(&root) {
            let (host, free_from, host_def, _) = host_list[hi];
            place[t.index()] = Place::InOutput(host, off);
            hosted.push(Hosted {
                iv: iv(off),
                host,
                host_def,
                host_bytes: bytes(g, host),
                free_from,
            });
        } else {
            let off = offset_of[&root];
            place[t.index()] = Place::Arena(off);
            intervals.push(iv(off));
        }
    }
    // Lower bound: live bytes per step, chains counted once (a chain's
    // buffer counts with its largest member live at that step). One sweep
    // over each chain's interval ends, adding the changes of its live size
    // into a difference array over the steps: linear in the temporaries
    // (times a log), not their product with the steps.
    let nsteps = p.steps.len();
    let mut by_root: HashMap<ValueId, Vec<(usize, bool, usize)>> = HashMap::new();
    for iv in &intervals {
        let e = by_root.entry(find(&parent, iv.value)).or_default();
        e.push((iv.def, true, iv.size));
        e.push((iv.last + 1, false, iv.size));
    }
    let mut diff = vec![0i64; nsteps + 2];
    for mut events in by_root.into_values() {
        events.sort();
        let mut live: std::collections::BTreeMap<usize, usize> = Default::default();
        let mut cur = 0usize;
        let mut i = 0;
        while i < events.len() {
            let at = events[i].0;
            while i < events.len() && events[i].0 == at {
                let (_, start, size) = events[i];
                if start {
                    *live.entry(size).or_insert(0) += 1;
                } else if let Some(c) = live.get_mut(&size) {
                    *c -= 1;
                    if *c == 0 {
                        live.remove(&size);
                    }
                }
                i += 1;
            }
            let now = live.keys().next_back().copied().unwrap_or(0);
            diff[at.min(nsteps + 1)] += now as i64 - cur as i64;
            cur = now;
        }
    }
    let mut lower_bound_bytes = 0;
    let mut acc = 0i64;
    for d in diff.iter().take(nsteps) {
        acc += d;
        lower_bound_bytes = lower_bound_bytes.max(acc as usize);
    }
    let _ = Op::Reshape;
    BufferPlan {
        place,
        arena_bytes,
        temps: intervals,
        hosted,
        inplace,
        donations,
        arg_hosts,
        lower_bound_bytes,
    }
}

/// The offset of the smallest gap of at least `size` bytes below `cap` left
/// by the `placed` buffers `(def, last, offset, size)` live during
/// `[d, l]`; after the highest of them when no gap fits.
fn best_fit(
    placed: &[(usize, usize, usize, usize)],
    d: usize,
    l: usize,
    size: usize,
    cap: usize,
) -> Option<usize> {
    let mut busy: Vec<(usize, usize)> = placed
        .iter()
        .filter(|b| b.0 <= l && d <= b.1)
        .map(|b| (b.2, b.2.saturating_add(b.3)))
        .collect();
    busy.sort();
    let mut best: Option<(usize, usize)> = None; // (gap size, offset)
    let mut cursor = 0;
    for &(s, e) in &busy {
        if s > cursor && s - cursor >= size && best.is_none_or(|b| s - cursor < b.0) {
            best = Some((s - cursor, cursor));
        }
        cursor = cursor.max(e);
    }
    let off = best.map(|b| b.1).unwrap_or(cursor);
    // Saturating: a sum beyond usize is an arena no allocator gives, which
    // `Executable::run` reports as out of memory.
    (off.saturating_add(size) <= cap).then_some(off)
}

/// Independent check of a plan: no two temporaries that are live at the same
/// step overlap in the arena, except an approved in-place pair at the step
/// where the input dies and the output is born, at the same offset.
pub fn check(plan: &BufferPlan) -> Result<(), Error> {
    // Best fit must stay within 5 % of the liveness lower bound.
    if plan.arena_bytes as u128 * 100 > plan.lower_bound_bytes as u128 * 105 {
        return Err(Error::verify(format!(
            "arena of {} bytes exceeds 1.05 x the lower bound {}",
            plan.arena_bytes, plan.lower_bound_bytes
        )));
    }
    check_safety(plan)
}

/// `check` without the quality bound: no two live temporaries overlap, and
/// hosted ones stay inside their hosts while these are free. (Best fit is
/// a heuristic: on some programs it ends above 1.05 x the lower bound, which
/// costs memory but is not wrong; the planner's tests hold it to the bound.)
pub fn check_safety(plan: &BufferPlan) -> Result<(), Error> {
    for a in &plan.temps {
        if a.offset % ARENA_ALIGN != 0 || a.offset.saturating_add(a.size) > plan.arena_bytes {
            return Err(Error::verify(format!(
                "buffer %{} at {}+{} outside the arena",
                a.value.0, a.offset, a.size
            )));
        }
    }
    check_space(plan, &plan.temps.iter().collect::<Vec<_>>())?;
    // Hosted temporaries: inside their host, dead before it is written, and
    // not overlapping each other while live.
    let mut hosts: Vec<ValueId> = plan.hosted.iter().map(|h| h.host).collect();
    hosts.sort();
    hosts.dedup();
    for h in &plan.hosted {
        if h.iv.offset % ARENA_ALIGN != 0
            || h.iv.offset + h.iv.size > h.host_bytes
            || h.iv.last >= h.host_def
            || h.iv.def < h.free_from
        {
            return Err(Error::verify(format!(
                "buffer %{} [{}..={}] at {}+{} in %{} ({} bytes, free over steps {}..{}) is outside it or live when it is not free",
                h.iv.value.0, h.iv.def, h.iv.last, h.iv.offset, h.iv.size, h.host.0, h.host_bytes, h.free_from, h.host_def
            )));
        }
    }
    for host in hosts {
        let ivs: Vec<&Interval> = plan
            .hosted
            .iter()
            .filter(|h| h.host == host)
            .map(|h| &h.iv)
            .collect();
        check_space(plan, &ivs)?;
    }
    Ok(())
}

/// No two of these buffers (in one address space) live at the same step
/// overlap, except an approved in-place pair.
fn check_space(plan: &BufferPlan, t: &[&Interval]) -> Result<(), Error> {
    for (i, a) in t.iter().enumerate() {
        for b in &t[i + 1..] {
            let live_together = a.def <= b.last && b.def <= a.last;
            let overlap = a.offset < b.offset + b.size && b.offset < a.offset + a.size;
            if !(live_together && overlap) {
                continue;
            }
            let approved = plan.inplace.iter().any(|&(x, o, s)| {
                let (inp, out) = if a.value == x && b.value == o {
                    (a, b)
                } else if b.value == x && a.value == o {
                    (b, a)
                } else {
                    return false;
                };
                inp.last == s && out.def == s && inp.offset == out.offset
            });
            if !approved {
                return Err(Error::verify(format!(
                    "buffers %{} [{}..={}] @{}+{} and %{} [{}..={}] @{}+{} are live together and overlap",
                    a.value.0, a.def, a.last, a.offset, a.size, b.value.0, b.def, b.last, b.offset, b.size
                )));
            }
        }
    }
    Ok(())
}

/// The full proof of a program's plan, from the partition's reads and
/// writes recomputed here (nothing taken from the planner's own liveness):
/// `check`'s arena and hosting rules, every planned interval covering its
/// value's definition and last read, every in-place pair approved by the
/// step's kernel at the input's last read, and donation safety: a donated
/// argument's buffer receives no output before the last read of that
/// argument by any step (at that read only when the step writes the output
/// exactly where it reads the argument), hosts temporaries only after that
/// read, and is no other output's buffer.
pub fn check_program(
    g: &Graph,
    p: &Partition,
    owned: &[bool],
    plan: &BufferPlan,
    inplace_ok: &dyn Fn(usize, ValueId, ValueId) -> bool,
) -> Result<(), Error> {
    check_safety(plan)?;
    let nn = g.nodes.len();
    let mut def: Vec<Option<usize>> = vec![None; nn];
    let mut last: Vec<Option<usize>> = vec![None; nn];
    for (si, s) in p.steps.iter().enumerate() {
        let (r, w) = step_io(g, p, s);
        for x in r {
            last[x.index()] = Some(si);
        }
        for x in w {
            if def[x.index()].is_some() {
                return Err(Error::verify(format!("%{} is written by two steps", x.0)));
            }
            def[x.index()] = Some(si);
        }
    }
    fn fail<T>(m: String) -> Result<T, Error> {
        Err(Error::verify(m))
    }
    // Planned intervals cover the real lifetimes.
    let covers = |iv: &Interval| -> Result<(), Error> {
        let v = iv.value.index();
        let Some(d) = def[v] else {
            return fail(format!(
                "buffer %{} is planned but no step writes it",
                iv.value.0
            ));
        };
        let l = last[v].unwrap_or(d).max(d);
        if iv.def > d || iv.last < l {
            return fail(format!(
                "buffer %{} planned live over steps {}..={} but written at {d} and last read at {l}",
                iv.value.0, iv.def, iv.last
            ));
        }
        Ok(())
    };
    for iv in &plan.temps {
        covers(iv)?;
    }
    for h in &plan.hosted {
        covers(&h.iv)?;
    }
    for &(x, o, s) in &plan.inplace {
        if last[x.index()] != Some(s) || def[o.index()] != Some(s) || !inplace_ok(s, x, o) {
            return fail(format!(
                "%{} written over %{} at step {s}, which is not the input's last read ({:?}) or not approved by the step",
                o.0, x.0, last[x.index()]
            ));
        }
    }
    let params = g.params();
    let root_of = |o: ValueId| p.aliases.get(&o).copied().unwrap_or(o);
    let donated_param = |k: usize| -> Result<ValueId, Error> {
        let owned = owned.get(k).copied().unwrap_or(false);
        let Some(&pv) = params.get(k).filter(|_| owned) else {
            return fail(format!(
                "argument {k} is donated but not an owned parameter"
            ));
        };
        if g.outputs.iter().any(|&o| root_of(o) == pv) {
            return fail(format!(
                "argument {k} (%{}) is donated but returned (or a reshape of it is)",
                pv.0
            ));
        }
        Ok(pv)
    };
    let mut seen_args: Vec<usize> = Vec::new();
    let mut seen_outs: Vec<ValueId> = Vec::new();
    for &(k, o) in &plan.donations {
        let pv = donated_param(k)?;
        if seen_args.contains(&k) || seen_outs.contains(&o) {
            return fail(format!("argument {k} or output %{} donated twice", o.0));
        }
        seen_args.push(k);
        seen_outs.push(o);
        if plan.place.get(o.index()) != Some(&Place::Output) || bytes(g, o) != bytes(g, pv) {
            return fail(format!(
                "argument {k} (%{}, {} bytes) donated to %{} which is not a program output of its size",
                pv.0,
                bytes(g, pv),
                o.0
            ));
        }
        let Some(d) = def[o.index()] else {
            return fail(format!("donated output %{} is written by no step", o.0));
        };
        if let Some(l) = last[pv.index()] {
            if d < l || (d == l && !inplace_ok(d, pv, o)) {
                return fail(format!(
                    "output %{} is written into argument {k}'s buffer at step {d}, but step {l} reads the argument{}",
                    o.0,
                    if d == l { " at other positions" } else { " later" }
                ));
            }
        }
    }
    for &(k, pv) in &plan.arg_hosts {
        if donated_param(k)? != pv || seen_args.contains(&k) {
            return fail(format!(
                "argument {k} hosts temporaries but is not a donated parameter no output reuses"
            ));
        }
    }
    for h in &plan.hosted {
        // The host's bytes are free from one past the last read of the
        // argument whose buffer it may be.
        let arg = plan
            .donations
            .iter()
            .find(|d| d.1 == h.host)
            .map(|d| d.0)
            .or_else(|| plan.arg_hosts.iter().find(|a| a.1 == h.host).map(|a| a.0));
        let host_def = if plan.arg_hosts.iter().any(|a| a.1 == h.host) {
            p.steps.len()
        } else if plan.place.get(h.host.index()) == Some(&Place::Output) {
            match def[h.host.index()] {
                Some(d) => d,
                None => return fail(format!("host %{} is written by no step", h.host.0)),
            }
        } else {
            return fail(format!(
                "%{} hosts temporaries but is neither an output nor a donated argument",
                h.host.0
            ));
        };
        let free_from = arg.map_or(0, |k| last[params[k].index()].map_or(0, |l| l + 1));
        if h.iv.def < free_from || h.iv.last >= host_def || h.host_bytes != bytes(g, h.host) {
            return fail(format!(
                "buffer %{} [{}..={}] in %{} is live while the host is not free (steps {free_from}..{host_def})",
                h.iv.value.0, h.iv.def, h.iv.last, h.host.0
            ));
        }
    }
    Ok(())
}
