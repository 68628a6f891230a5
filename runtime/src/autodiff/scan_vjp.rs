//! The reverse-mode rule of `scan` (and so of `fori_loop` and staged `for`
//! loops), in memory chosen by the budget.
//!
//! The backward pass needs the carry entering every step. Stored for every
//! step (the default), that is one carry per step, read in place by a
//! reverse scan. Under the automatic budget (and, when a byte budget is not
//! met otherwise, deeper) the steps are cut into nested segments of static
//! sizes `factors = [f0, f1, .., fk]` (their product covers the steps):
//!
//! - a forward scan over the `f0` top segments keeps only the carry entering
//!   each segment (each segment runs forward as one flat scan);
//! - a reverse scan over the segments recomputes, for each segment, the
//!   same scheme one level down, from its stored carry; the last level
//!   stores the carry of each of its `fk` steps and runs the body's backward.
//!
//! Stored carries: `f0 + f1 + .. + fk` at any time (√n segments of √n steps:
//! about 2√n; factors of 2: about 2·log2 n, Griewank's binomial bound up to a
//! constant), for `k` extra forward passes. The graph holds one traced body
//! per level, whatever the trip count.
//!
//! A trip count that the factors do not divide is padded at the end (in the
//! loop's own order) with steps that leave the carry as it is: their rows of
//! xs are zeros, a `valid` flag per step selects the old carry in the
//! forward passes and the incoming cotangent in the backward ones, so the
//! pad steps change nothing (not even by a NaN) and their rows of the xs'
//! cotangents are dropped.

use super::{auto, backward, replay};
use crate::control::subgraph::scan_tree_dir;
use crate::ir::{Graph, ScanOp};
use crate::{select, DType, SourceLoc, Tensor};

/// Cotangents of all the graph's parameters, given seeds for its outputs
/// (missing seeds are zero).
pub(super) fn graph_vjp(g: &Graph, params: &[Tensor], seeds: &[Option<Tensor>]) -> Vec<Tensor> {
    let vals = replay(g, params, &[]);
    let seeds: Vec<_> = g
        .outputs
        .iter()
        .zip(seeds)
        .filter_map(|(o, s)| s.clone().map(|s| (*o, s)))
        .collect();
    let cts = backward(g, &vals, &seeds);
    g.params()
        .iter()
        .zip(params)
        .map(|(p, x)| cts[p.index()].clone().unwrap_or_else(|| x.zeros_like()))
        .collect()
}

/// The segment sizes for a loop of `n` steps at checkpointing depth `levels`
/// (0: every carry stored; 1: √n; `auto::BINARY`: factors of 2).
pub(crate) fn loop_factors(n: usize, levels: u32) -> Vec<usize> {
    if levels == 0 || n < 8 {
        return vec![n];
    }
    if levels == 1 {
        // Fewest stored carries (m + s), then (within two carries of it) the
        // fewest pad steps.
        let plans: Vec<(usize, usize)> = (1..=n).map(|s| (n.div_ceil(s), s)).collect();
        let least = plans.iter().map(|(m, s)| m + s).min().unwrap_or(n);
        let (m, s) = plans
            .into_iter()
            .filter(|(m, s)| m + s <= least + 2)
            .min_by_key(|(m, s)| (m * s - n, m + s))
            .unwrap_or((1, n));
        return vec![m, s];
    }
    let (f, k) = if levels == auto::BINARY {
        (2usize, n.ilog2().saturating_sub(1))
    } else {
        let f = (n as f64).powf(1.0 / (levels as f64 + 1.0)).ceil() as usize;
        (f.max(2), levels)
    };
    let inner = f.checked_pow(k).filter(|&p| p < n);
    match inner {
        Some(p) if k > 0 => {
            let mut factors = vec![n.div_ceil(p)];
            factors.extend(std::iter::repeat_n(f, k as usize));
            factors
        }
        _ => loop_factors(n, 1),
    }
}

/// One `scan` being differentiated: its body and what every step reads.
struct Loop<'a> {
    body: &'a Graph,
    nc: usize,
    nx: usize,
    inv: Vec<Tensor>,
    reverse: bool,
    loc: SourceLoc,
}

/// Per-step values a level scans over: the xs' leaves, the pad flag (when
/// the steps were padded) and the cotangents of the stacked ys.
#[derive(Clone)]
struct Rows {
    xs: Vec<Tensor>,
    valid: Option<Tensor>,
    ys_ct: Vec<Tensor>,
}

impl Rows {
    fn as_tree(&self) -> (Vec<Tensor>, Option<Tensor>, Vec<Tensor>) {
        (self.xs.clone(), self.valid.clone(), self.ys_ct.clone())
    }

    fn from_tree((xs, valid, ys_ct): (Vec<Tensor>, Option<Tensor>, Vec<Tensor>)) -> Rows {
        Rows { xs, valid, ys_ct }
    }

    /// The same rows with the leading `levels` axes merged into one.
    fn flat(&self, levels: usize) -> Rows {
        let merge = |t: &Tensor| {
            let steps: usize = t.shape()[..levels].iter().product();
            let mut shape = vec![steps as isize];
            shape.extend(t.shape()[levels..].iter().map(|&d| d as isize));
            t.reshape(&shape)
        };
        Rows {
            xs: self.xs.iter().map(merge).collect(),
            valid: self.valid.as_ref().map(merge),
            ys_ct: self.ys_ct.iter().map(merge).collect(),
        }
    }
}

/// `if valid { new } else { old }` leaf by leaf (no flag: `new`).
fn keep_valid(valid: &Option<Tensor>, new: Vec<Tensor>, old: Vec<Tensor>) -> Vec<Tensor> {
    match valid {
        None => new,
        Some(v) => new.iter().zip(&old).map(|(n, o)| select(v, n, o)).collect(),
    }
}

impl Loop<'_> {
    fn args(&self, c: Vec<Tensor>, x: Vec<Tensor>) -> Vec<Tensor> {
        let mut args = c;
        args.extend(x);
        args.extend(self.inv.iter().cloned());
        args
    }

    /// The carry after one step (kept as it was on a pad step).
    fn step(&self, c: Vec<Tensor>, x: Vec<Tensor>, valid: &Option<Tensor>) -> Vec<Tensor> {
        let vals = replay(self.body, &self.args(c.clone(), x), &[]);
        let next = self.body.outputs[..self.nc]
            .iter()
            .map(|o| vals[o.index()].clone())
            .collect();
        keep_valid(valid, next, c)
    }

    /// The carry after the steps of `rows` (one flat scan), and, if `stack`,
    /// the carry entering each of them stacked.
    fn forward(&self, c0: Vec<Tensor>, rows: &Rows, stack: bool) -> (Vec<Tensor>, Vec<Tensor>) {
        let scanned = (rows.xs.clone(), rows.valid.clone());
        scan_tree_dir(
            |c: Vec<Tensor>, (x, valid): (Vec<Tensor>, Option<Tensor>)| {
                let next = self.step(c.clone(), x, &valid);
                (next, if stack { c } else { Vec::new() })
            },
            c0,
            &scanned,
            self.reverse,
            self.loc,
        )
    }

    /// Cotangents of the carry entering the steps of `rows` (leading axes
    /// `factors`), given the carry `c0` entering them and the cotangent of
    /// the carry leaving them; `inv_ct` accumulates the invariants'. Returns
    /// the xs' cotangents with the rows' leading axes.
    fn vjp(
        &self,
        c0: Vec<Tensor>,
        rows: Rows,
        (c_ct, inv_ct): (Vec<Tensor>, Vec<Tensor>),
        factors: &[usize],
    ) -> ((Vec<Tensor>, Vec<Tensor>), Vec<Tensor>) {
        let carries = if factors.len() == 1 {
            // The last level: every step's entering carry, then the body's
            // backward step by step.
            self.forward(c0, &rows, true).1
        } else {
            // Keep the carry entering each segment; each segment runs forward flat.
            let depth = factors.len() - 1;
            let segs = rows.as_tree();
            scan_tree_dir(
                |c: Vec<Tensor>, seg: (Vec<Tensor>, Option<Tensor>, Vec<Tensor>)| {
                    let seg = Rows::from_tree(seg).flat(depth);
                    (self.forward(c.clone(), &seg, false).0, c)
                },
                c0,
                &segs,
                self.reverse,
                self.loc,
            )
            .1
        };
        let scanned = (carries, rows.as_tree());
        let inner = &factors[1..];
        scan_tree_dir(
            |(c_ct, inv_ct): (Vec<Tensor>, Vec<Tensor>),
             (c, row): (Vec<Tensor>, (Vec<Tensor>, Option<Tensor>, Vec<Tensor>))| {
                let row = Rows::from_tree(row);
                if inner.is_empty() {
                    self.step_vjp(c, row, (c_ct, inv_ct))
                } else {
                    self.vjp(c, row, (c_ct, inv_ct), inner)
                }
            },
            (c_ct, inv_ct),
            &scanned,
            !self.reverse,
            self.loc,
        )
    }

    /// The body's backward at one step.
    fn step_vjp(
        &self,
        c: Vec<Tensor>,
        row: Rows,
        (c_ct, inv_ct): (Vec<Tensor>, Vec<Tensor>),
    ) -> ((Vec<Tensor>, Vec<Tensor>), Vec<Tensor>) {
        let (nc, nx) = (self.nc, self.nx);
        let mut seeds: Vec<Option<Tensor>> = c_ct.iter().cloned().map(Some).collect();
        seeds.extend(row.ys_ct.into_iter().map(Some));
        let g = graph_vjp(self.body, &self.args(c, row.xs), &seeds);
        let new_c = keep_valid(&row.valid, g[..nc].to_vec(), c_ct);
        // Only float xs have cotangents to stack (the others' are zeros, made once at the end).
        let x_ct = g[nc..nc + nx]
            .iter()
            .filter(|t| t.dtype().is_float())
            .cloned()
            .collect();
        let summed: Vec<Tensor> = inv_ct
            .iter()
            .zip(&g[nc + nx..])
            .map(|(a, b)| {
                if a.dtype().is_float() {
                    a + b
                } else {
                    a.clone()
                }
            })
            .collect();
        let inv_ct = keep_valid(&row.valid, summed, inv_ct);
        ((new_c, inv_ct), x_ct)
    }
}

/// Cotangents of a `scan` node's operands (carry, xs, invariants) given
/// those of its outputs (final carry, stacked ys; zeros where unused).
pub(crate) fn scan_vjp(
    sc: &ScanOp,
    ins: &[Tensor],
    cts: Vec<Tensor>,
    loc: SourceLoc,
) -> Vec<Option<Tensor>> {
    let (nc, nx, n) = (sc.carried, sc.xs, sc.length);
    let lp = Loop {
        body: &sc.body,
        nc,
        nx,
        inv: ins[nc + nx..].to_vec(),
        reverse: sc.reverse,
        loc,
    };
    let factors = loop_factors(n, auto::loop_levels());
    if factors.len() > 1 {
        auto::note_segmented_loop();
    }
    let padded: usize = factors.iter().product();
    let pad = padded - n;
    // Pad steps go last in the loop's order: after the rows for a forward
    // loop, before them for a reverse one.
    let (before, after) = if sc.reverse { (pad, 0) } else { (0, pad) };
    let lay_out = |t: &Tensor| {
        let t = if pad > 0 {
            let mut pads = vec![(0, 0); t.ndim()];
            pads[0] = (before, after);
            t.pad(&pads, 0i32)
        } else {
            t.clone()
        };
        let mut shape: Vec<isize> = factors.iter().map(|&f| f as isize).collect();
        shape.extend(t.shape()[1..].iter().map(|&d| d as isize));
        t.reshape(&shape)
    };
    let valid = (pad > 0).then(|| {
        let i = Tensor::arange(padded, DType::I64);
        let v = if sc.reverse {
            i.ge(before as i64)
        } else {
            i.lt(n as i64)
        };
        v.reshape(&factors.iter().map(|&f| f as isize).collect::<Vec<_>>())
    });
    let rows = Rows {
        xs: ins[nc..nc + nx].iter().map(lay_out).collect(),
        valid,
        ys_ct: cts[nc..].iter().map(lay_out).collect(),
    };
    let inv_ct0: Vec<Tensor> = lp.inv.iter().map(|t| t.zeros_like()).collect();
    let ((c_ct, inv_ct), x_cts) = lp.vjp(
        ins[..nc].to_vec(),
        rows,
        (cts[..nc].to_vec(), inv_ct0),
        &factors,
    );
    let mut float_cts = x_cts.into_iter().map(|t| {
        if factors.len() == 1 && pad == 0 {
            return t;
        }
        let mut shape = vec![padded as isize];
        shape.extend(t.shape()[factors.len()..].iter().map(|&d| d as isize));
        let t = t.reshape(&shape);
        if pad > 0 {
            t.slice_axis(0, before as isize, (before + n) as isize, 1)
        } else {
            t
        }
    });
    let x_cts: Vec<Tensor> = ins[nc..nc + nx]
        .iter()
        .map(|x| {
            if x.dtype().is_float() {
                float_cts.next().expect("one cotangent per float xs leaf")
            } else {
                x.zeros_like()
            }
        })
        .collect();
    let mut res: Vec<Option<Tensor>> = c_ct.into_iter().map(Some).collect();
    res.extend(x_cts.into_iter().map(Some));
    res.extend(inv_ct.into_iter().map(Some));
    res
}
