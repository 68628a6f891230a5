//! Finite fills (`where_(mask, s, -1e9)`, `AttnSpec::fill`): a masked score equals the
//! constant `fill` instead of `-inf`, with the composition's exact meaning, and the
//! regions wholly masked for a tile of rows still cost no tile products.
//!
//! Every key of a wholly masked region scores `fill`, so for a query row with running
//! maximum `m` the region adds `n · exp(fill - m)` to the softmax's sum and
//! `exp(fill - m) · Σ v_j` to its output: one update per row from the region's key count
//! and the sum of its `v` rows (`add_filled_keys`). In the gradient a filled score is a
//! constant (its `dS` is zero, `zero_masked`), but `dV_j` still gets `Σ_i p_ij dO_i` with
//! `p_ij = exp(fill - m_i) / l_i`: for the keys of a region wholly masked for rows `i` that
//! is one vector, `Σ_i p_ij dO_i`, summed per query tile in the first pass
//! (`weighted_dout`) and added to each key of the region in the second. The regions are
//! the keys past a causal diagonal, and under a bool mask the tiles it masks wholly
//! (`masked_tile`: a padding mask's keys past a sequence's end). When `fill` is so
//! low that `exp(fill - m)` is 0 these add zeros, and remain exact when it is not.

use super::{Float, Mats, Src, BC};
use crate::ir::{AttnSpec, MaskKind};
use crate::library::ops::Operand;

/// The value of a masked score: the fill, or `-inf` without one.
pub(super) fn value<T: Float>(spec: &AttnSpec) -> T {
    spec.fill.map_or(T::NEG_INF, T::from_f64)
}

/// Whether the keys past a causal tile's diagonal (`key_end`) are computed in closed form:
/// a causal mask with a finite fill (with `-inf` they add nothing and are skipped).
pub(super) fn closed_form(spec: &AttnSpec) -> bool {
    spec.fill.is_some() && spec.mask == MaskKind::Causal
}

/// The online softmax of rows `0..rows` extended by `n` keys that all score `fill` and
/// whose `v` rows sum to `vsum`: the maxima `m`, sums `l` and (when given) the running
/// outputs `acc` (`rows × vsum.len()`) rescaled and extended as a tile of them would be.
pub(super) fn add_filled_keys<T: Float>(
    fill: T,
    n: usize,
    vsum: &[T],
    rows: usize,
    (m, l): (&mut [T], &mut [T]),
    mut acc: Option<&mut [T]>,
) {
    let count = T::from_f64(n as f64);
    let dv = vsum.len();
    for r in 0..rows {
        let mx = if fill > m[r] { fill } else { m[r] };
        // m = -inf (no key yet): alpha = 0, the fill alone. fill is finite, so mx is.
        let alpha = (m[r] - mx).exp();
        let w = (fill - mx).exp();
        l[r] = l[r] * alpha + count * w;
        if let Some(acc) = acc.as_deref_mut() {
            for (a, &x) in acc[r * dv..(r + 1) * dv].iter_mut().zip(vsum) {
                *a = *a * alpha + w * x;
            }
        }
        m[r] = mx;
    }
}

/// `out = Σ_{j in j0..j1} x[b, j]` (`out.len()` columns), in key order.
///
/// # Safety
/// Rows `j0..j1` of `x`'s matrix `b` are inside its live buffer.
pub(super) unsafe fn sum_rows<T: Float>(
    x: &Mats<T>,
    b: usize,
    (j0, j1): (usize, usize),
    out: &mut [T],
) {
    out.fill(T::ZERO);
    for j in j0..j1 {
        add_row(out, T::ONE, x, (b, j));
    }
}

/// `out = Σ_{j in j0..j1} x[b, j]` (`out.len()` columns), in key order, reading (16-bit)
/// `x` a tile of at most `BC` rows at a time through `buf`.
///
/// # Safety
/// Rows `j0..j1` of `x`'s matrix `b` are inside its live buffer; `buf` holds `BC` rows.
pub(super) unsafe fn sum_src_rows<T: Float>(
    x: &Src<T>,
    b: usize,
    (j0, j1): (usize, usize),
    buf: &mut [T],
    out: &mut [T],
) {
    out.fill(T::ZERO);
    for j in (j0..j1).step_by(BC) {
        let n = BC.min(j1 - j);
        let tile = x.rows(b, (j, n), out.len(), buf);
        for i in j..j + n {
            add_row(out, T::ONE, &tile, (b, i));
        }
    }
}

/// `suffixes[t] = Σ_{j >= t·BC} v[b, j]` (`dv` columns each) for the key tiles `t` of
/// batch element `b`, from the last tile back (each tile's rows in key order, then the
/// sum of the tiles after it).
///
/// # Safety
/// Rows `0..sk` of `v`'s matrix `b` are inside its live buffer; `buf` holds `BC` rows.
pub(super) unsafe fn tile_suffixes<T: Float>(
    v: &Src<T>,
    b: usize,
    sk: usize,
    buf: &mut [T],
    suffixes: &mut [T],
) {
    let dv = suffixes.len() / sk.div_ceil(BC).max(1);
    for t in (0..sk.div_ceil(BC)).rev() {
        let (this, after) = suffixes[t * dv..].split_at_mut(dv);
        sum_src_rows(v, b, (t * BC, sk.min((t + 1) * BC)), buf, this);
        if !after.is_empty() {
            this.iter_mut()
                .zip(&after[..dv])
                .for_each(|(a, &x)| *a = *a + x);
        }
    }
}

/// `out = Σ_{j in j0..sk} v[b, j]` from `tile_suffixes`: the rows up to the next tile
/// boundary, then that tile's suffix (fewer than `BC` rows read, not `sk - j0`).
///
/// # Safety
/// As `sum_src_rows`'; `suffixes` are `tile_suffixes` of `v`'s matrix `b`.
pub(super) unsafe fn sum_from<T: Float>(
    v: &Src<T>,
    b: usize,
    (j0, sk): (usize, usize),
    suffixes: &[T],
    buf: &mut [T],
    out: &mut [T],
) {
    let dv = out.len();
    let next = j0.div_ceil(BC);
    sum_src_rows(v, b, (j0, sk.min(next * BC)), buf, out);
    if next * BC < sk {
        let x = &suffixes[next * dv..(next + 1) * dv];
        out.iter_mut().zip(x).for_each(|(a, &x)| *a = *a + x);
    }
}

/// `out += w · x[b, i]` (`out.len()` columns); a contiguous row as a slice, so the loop
/// vectorises (this runs over every key past the diagonal, once per query tile).
///
/// # Safety
/// Row `i` of `x`'s matrix `b` is inside its live buffer.
unsafe fn add_row<T: Float>(out: &mut [T], w: T, x: &Mats<T>, (b, i): (usize, usize)) {
    let row = x.row(b, i);
    if x.cs == 1 {
        let row = std::slice::from_raw_parts(row, out.len());
        out.iter_mut().zip(row).for_each(|(o, &v)| *o = *o + w * v);
    } else {
        for (c, o) in out.iter_mut().enumerate() {
            *o = *o + w * *row.offset(c as isize * x.cs);
        }
    }
}

/// `out[c] = Σ_r exp(fill - m_r) / l_r · dout[b, i0 + r, c]` over the rows of `stats`
/// (`(m, 1/l)` pairs): what each key masked for all of these rows gets in `dV`.
///
/// # Safety
/// Rows `i0..i0 + stats.len() / 2` of `dout`'s matrix `b` are inside its live buffer.
pub(super) unsafe fn weighted_dout<T: Float>(
    fill: T,
    stats: &[T],
    dout: &Mats<T>,
    (b, i0): (usize, usize),
    out: &mut [T],
) {
    out.fill(T::ZERO);
    for (r, x) in stats.chunks_exact(2).enumerate() {
        let w = (fill - x[0]).exp() * x[1];
        add_row(out, w, dout, (b, i0 + r));
    }
}

/// Whether a `Bool` mask with a finite fill masks every key `j0..j0 + cols` for every
/// query `i0..i0 + rows` (a padding mask's keys past a sequence's length): the tile is
/// then added in closed form, not multiplied out. (A causal fill's wholly masked tiles are
/// past `key_end`, never asked about.)
///
/// # Safety
/// As `scores`': the mask operand covers the tile.
pub(super) unsafe fn masked_tile(
    spec: &AttnSpec,
    mask: Option<&Operand>,
    b: usize,
    (i0, rows): (usize, usize),
    (j0, cols): (usize, usize),
) -> bool {
    if spec.fill.is_none() || spec.mask != MaskKind::Bool {
        return false;
    }
    let m = mask.expect("a mask operand");
    let at: Mats<u8> = Mats::new(m);
    (0..rows).all(|r| {
        let first = at.offset(b, i0 + r) + j0 as isize * at.cs;
        (0..cols).all(|c| *m.ptr.wrapping_offset(first + c as isize * at.cs) == 0)
    })
}

/// `ds[r, c] = 0` (row stride `BC`) where key `j0 + c` is masked for query `i0 + r`: a
/// filled score is a constant, so the cotangent its weight carries does not reach q or k.
///
/// # Safety
/// As `scores`': the mask operand (when the spec has one) covers the tile.
pub(super) unsafe fn zero_masked<T: Float>(
    spec: &AttnSpec,
    mask: Option<&Operand>,
    b: usize,
    (i0, rows): (usize, usize),
    (j0, cols): (usize, usize),
    ds: &mut [T],
) {
    match spec.mask {
        MaskKind::Causal => {
            for r in 0..rows {
                let first_masked = (i0 + r + 1).saturating_sub(j0).min(cols);
                ds[r * BC + first_masked..r * BC + cols].fill(T::ZERO);
            }
        }
        MaskKind::Bool => {
            let m = mask.expect("a mask operand");
            let at: Mats<u8> = Mats::new(m);
            for r in 0..rows {
                let first = at.offset(b, i0 + r) + j0 as isize * at.cs;
                for c in 0..cols {
                    if *m.ptr.wrapping_offset(first + c as isize * at.cs) == 0 {
                        ds[r * BC + c] = T::ZERO;
                    }
                }
            }
        }
        MaskKind::None | MaskKind::Additive => {}
    }
}
