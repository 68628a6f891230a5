//! When the masked keys must be computed after all.
//!
//! The step skips what the composition computes but cannot change with finite operands:
//! the key tiles past a causal diagonal (their weight is 0), and under a finite fill the
//! regions summed in closed form (`fill`). With a non-finite operand they do change it:
//! a weight of 0 times an infinite `v` is NaN (so is `0 · k` in `dQ = dS K`, `0 · dO` in
//! `dV = Pᵀ dO`), and a causal mask added as a bias (`AttnSpec::bias`) makes a masked
//! score NaN where `q · k` is +inf or NaN. Finite operands can also overflow: a bias-masked
//! score or its `dP = dO · v` past the largest float, a closed-form sum of `v` or of `dO`.
//!
//! The gradient's `D = rowsum(dO ∘ O)` stands for the composition's `Σ_j p_ij dP_ij`, whose
//! terms of weight 0 (masked keys, or an `exp` that underflowed) are NaN where `dP` is not
//! finite: under any mask, an infinite `dO` or `v` makes that sum NaN and `rowsum(dO ∘ O)`
//! infinite.
//!
//! So each batch element's operands are scanned first (their largest magnitude, a few
//! reads per element next to the tile products' `O(Sq · Sk)`), and an element where any
//! of this can happen runs every key tile as the composition does, masks applied element
//! by element (`every_key`), and its gradient sums `D` over every key
//! (`sums_every_dp`). The finite case, the one models run, keeps its skips.

use super::{Dims, Float, Src, BC, BR};
use crate::ir::{AttnSpec, MaskKind};

/// The largest magnitudes of one batch element's operands (`+inf` where any element is
/// not finite); `dout` only for the gradient.
#[derive(Clone, Copy, Debug)]
pub(super) struct Magnitudes {
    pub q: f64,
    pub k: f64,
    pub v: f64,
    pub dout: Option<f64>,
}

/// Whether the step skips or sums in closed form anything of what the composition
/// multiplies out: only then can an operand's values make it differ.
pub(super) fn skips(spec: &AttnSpec) -> bool {
    spec.mask == MaskKind::Causal || spec.fill.is_some()
}

/// Whether a batch element with these magnitudes must run every key tile element by
/// element (`max` is the compute type's largest finite value).
pub(super) fn every_key(spec: &AttnSpec, d: Dims, m: Magnitudes, max: f64) -> bool {
    if !skips(spec) {
        return false;
    }
    let dout = m.dout.unwrap_or(0.0);
    if [m.q, m.k, m.v, dout].iter().any(|x| x.is_infinite()) {
        return true;
    }
    // Half the largest value: the bounds below are rounded, and a sum near the limit may
    // round past it.
    let limit = max / 2.0;
    let overflows = |x: f64| x >= limit;
    let bias = spec.bias
        && (overflows(m.q * m.k * d.d as f64 * spec.scale.abs())
            || overflows(dout * m.v * d.dv as f64 * 2.0));
    let closed = spec.fill.is_some()
        && (overflows(m.v * d.sk as f64) || overflows(dout * d.sq.max(1) as f64));
    bias || closed
}

/// Whether the gradient of a batch element with these magnitudes sums `D` as the
/// composition does, `Σ_j p_ij dP_ij` over every key, rather than as `rowsum(dO ∘ O)`:
/// where a key's weight is 0 (masked, or its `exp` underflowed), the composition's term
/// `0 · dP_ij` is NaN when `dP_ij` is not finite, which `O` does not show. Under any mask.
pub(super) fn sums_every_dp(d: Dims, m: Magnitudes, max: f64) -> bool {
    let dout = m.dout.unwrap_or(0.0);
    dout.is_infinite() || m.v.is_infinite() || dout * m.v * d.dv as f64 >= max / 2.0
}

/// The largest magnitude of batch element `b`'s `rows × cols` matrix of `x` (`+inf` if an
/// element is NaN or infinite), read `tile` rows at a time through `buf` (16-bit operands:
/// `tile · cols` elements).
///
/// # Safety
/// The matrix is inside `x`'s live buffer.
pub(super) unsafe fn magnitude<T: Float>(
    x: &Src<T>,
    b: usize,
    (rows, cols): (usize, usize),
    tile: usize,
    buf: &mut [T],
) -> f64 {
    // `largest_magnitude` is +inf for a non-finite element: the maximum says it all.
    let mut most = T::ZERO;
    let mut keep = |x: T| most = if x > most { x } else { most };
    for r0 in (0..rows).step_by(tile.max(1)) {
        let n = tile.min(rows - r0);
        let m = x.rows(b, (r0, n), cols, buf);
        if m.cs == 1 && m.rs == cols as isize {
            // The tile's rows one after the other: one slice.
            keep(T::largest_magnitude(std::slice::from_raw_parts(
                m.row(b, r0),
                n * cols,
            )));
            continue;
        }
        for r in r0..r0 + n {
            let p = m.row(b, r);
            match m.cs {
                1 => keep(T::largest_magnitude(std::slice::from_raw_parts(p, cols))),
                // Broadcast along the row (a sum's cotangent): one element.
                0 => keep(T::largest_magnitude(std::slice::from_raw_parts(
                    p,
                    cols.min(1),
                ))),
                cs => (0..cols).for_each(|c| {
                    keep(T::largest_magnitude(std::slice::from_ref(
                        &*p.offset(c as isize * cs),
                    )))
                }),
            }
        }
    }
    most.to_f64()
}

/// `magnitude` of batch element `b`'s q, k and v, reading through the forward's (or the
/// gradient's) tile buffers.
///
/// # Safety
/// As `magnitude`'s, for each operand.
pub(super) unsafe fn of_qkv<T: Float>(
    (q, k, v): (&Src<T>, &Src<T>, &Src<T>),
    b: usize,
    d: Dims,
    (qb, kb, vb): (&mut [T], &mut [T], &mut [T]),
) -> Magnitudes {
    Magnitudes {
        q: magnitude(q, b, (d.sq, d.d), BR, qb),
        k: magnitude(k, b, (d.sk, d.d), BC, kb),
        v: magnitude(v, b, (d.sk, d.dv), BC, vb),
        dout: None,
    }
}
