//! The rows of a convolution (output pixels, or input pixels of the input gradient) grouped
//! by the window positions that read inside the other operand, so a row panel runs only
//! those.
//!
//! In the general path a pixel near the border points the window positions that fall in
//! the padding at zeros and multiplies them: a 3 × 3 "same" window on 8 × 8 maps reads 22²
//! of 24² positions inside (16 % of the multiply-adds are by zero; 8 % at 16 × 16, 5 % at
//! 28 × 28, 18 % at 7 × 7; oneDNN's direct convolution skips them). Which positions read
//! inside depends on a pixel only through its position along each axis, and along an axis
//! the positions fall into a few groups (the first, the interior, the last) that read the
//! same window indices. A class is one group per axis; its pixels, over the whole batch,
//! are cut into panels, and a panel's tiles run only the class's positions
//! (`indirect::Listed`). A class's pixels are not contiguous in the result, so the tiles
//! store through a pointer per row (`indirect::Scattered`).
//!
//! The sums are the general path's with the terms by a skipped zero left out, in the same
//! order, so the same bits (as in `phased`): a sum that starts at `+0` is never `−0`, and
//! adding a zero to anything else leaves it as it is. A skipped term is `0 · w`, NaN where
//! `w` is not finite, which `lax` and the interpreter propagate: a kernel with a non-finite
//! element runs every position (`conv::finite`).

use super::Problem;
use crate::ir::ConvRole;
use crate::shape;

/// One class: a group of positions along each axis, and the window positions its pixels
/// read inside.
#[derive(Clone, Debug)]
struct Class {
    /// The group along each axis (an index into `Classes::axes[d]`).
    group: Vec<usize>,
    /// Pixels per image along each axis (the groups' sizes).
    extent: Vec<usize>,
    /// Window positions (flat, ascending) that read inside.
    ks: Vec<usize>,
    /// Rows over the batch, and the first of the class's panels.
    rows: usize,
    first_panel: usize,
}

#[derive(Clone, Debug)]
pub struct Classes {
    /// Per spatial axis, the groups of positions that read the same window indices (each
    /// ascending).
    axes: Vec<Vec<Vec<usize>>>,
    classes: Vec<Class>,
    /// Row panels over every class.
    pub panels: usize,
    mr: usize,
}

/// Window extents this grouping handles along one axis (a mask of window indices per
/// position).
const MAX_WINDOW: usize = 64;

/// The plan runs where its panels cost at most this share of the general path's (tiles ×
/// window positions): the scattered stores and shorter runs of pointers cost a little.
const WORTH: f64 = 0.985;

impl Classes {
    /// The grouping of `p`'s rows (a direct `conv` or `conv_input_grad`), where it saves
    /// enough multiply-adds.
    pub fn plan(p: &Problem) -> Option<Classes> {
        let r = p.s.rank();
        // Not for the narrow tiles (28 rows by one vector, at most 16 columns): there a
        // row's pointers and its scattered lines cost as much as a third of its multiply-adds,
        // and the border classes' rows come one at a time (a column of pixels), so at 32 ×
        // 32 maps and 16 features the grouping took 13 % longer for 4 % fewer multiply-adds.
        if !p.direct || p.narrow() || p.role == ConvRole::Weight || p.m == 0 || p.kc == 0 || r == 0
        {
            return None;
        }
        let (lead, tables) = match p.role {
            ConvRole::Output => (p.s.output(), &p.fwd),
            _ => (p.s.input(), &p.bwd),
        };
        let window = p.s.window();
        if window.iter().any(|&k| k > MAX_WINDOW) {
            return None;
        }
        // Per axis: the mask of window indices each position reads inside, and the groups
        // of positions with equal masks (in order of their first position).
        let mut axes = Vec::with_capacity(r);
        let mut masks = Vec::with_capacity(r);
        for d in 0..r {
            let kd = window[d];
            let mut groups: Vec<(u64, Vec<usize>)> = Vec::new();
            for pos in 0..lead[d] {
                let mask = (0..kd)
                    .filter(|&k| tables[d][pos * kd + k] >= 0)
                    .fold(0u64, |m, k| m | 1 << k);
                match groups.iter_mut().find(|(m, _)| *m == mask) {
                    Some((_, list)) => list.push(pos),
                    None => groups.push((mask, vec![pos])),
                }
            }
            masks.push(groups.iter().map(|(m, _)| *m).collect::<Vec<u64>>());
            axes.push(groups.into_iter().map(|(_, l)| l).collect::<Vec<_>>());
        }
        let counts: Vec<usize> = axes.iter().map(|a| a.len()).collect();
        let mut classes = Vec::new();
        let mut group = vec![0usize; r];
        let mut panels = 0;
        for c in 0..shape::numel(&counts) {
            shape::unflatten(c, &counts, &mut group);
            let extent: Vec<usize> = (0..r).map(|d| axes[d][group[d]].len()).collect();
            let ks: Vec<usize> = (0..p.kvol)
                .filter(|&kp| {
                    let k = &p.kidx[kp * r..(kp + 1) * r];
                    (0..r).all(|d| masks[d][group[d]] >> k[d] & 1 == 1)
                })
                .collect();
            let rows = p.s.batch() * shape::numel(&extent);
            if rows == 0 {
                continue;
            }
            classes.push(Class {
                group: group.clone(),
                extent,
                ks,
                rows,
                first_panel: panels,
            });
            panels += rows.div_ceil(p.mr);
        }
        let cost: usize = classes
            .iter()
            .map(|c| c.rows.div_ceil(p.mr) * c.ks.len())
            .sum();
        let general = p.panels * p.kvol;
        ((cost as f64) <= WORTH * general as f64).then_some(Classes {
            axes,
            classes,
            panels,
            mr: p.mr,
        })
    }

    /// Row panel `panel`: its class and rows.
    pub fn panel(&self, panel: usize) -> Panel<'_> {
        let at = self
            .classes
            .partition_point(|c| c.first_panel <= panel)
            .saturating_sub(1);
        let class = &self.classes[at];
        let r0 = (panel - class.first_panel) * self.mr;
        Panel {
            of: self,
            class,
            r0,
            rows: (class.rows - r0).min(self.mr),
        }
    }
}

/// One row panel of a class.
pub struct Panel<'a> {
    of: &'a Classes,
    class: &'a Class,
    /// The first row within the class, and the rows (at most `mr`).
    r0: usize,
    pub rows: usize,
}

impl Panel<'_> {
    /// The window positions (flat, ascending) the panel's rows read inside.
    pub fn positions(&self) -> &[usize] {
        &self.class.ks
    }

    /// Calls `f(row, n, pos, run)` for each run of the panel's rows that lie next to each
    /// other along the last axis (same image and other axes), in order: the run's first row
    /// within the panel, its batch index, the position of its first pixel (`pos`, the
    /// caller's buffer of the rank) and its length. One unflatten per panel, not per run.
    pub fn each_run(&self, pos: &mut [usize], mut f: impl FnMut(usize, usize, &[usize], usize)) {
        let (class, axes) = (self.class, &self.of.axes);
        let r = pos.len();
        let last = r - 1;
        let per_image = shape::numel(&class.extent).max(1);
        let along = &axes[last][class.group[last]];
        let mut t = [0usize; super::STACK_RANK];
        let mut heap = Vec::new();
        let t: &mut [usize] = if r <= super::STACK_RANK {
            &mut t[..r]
        } else {
            heap.resize(r, 0);
            &mut heap
        };
        let mut n = self.r0 / per_image;
        shape::unflatten(self.r0 % per_image, &class.extent, t);
        let mut row = 0;
        while row < self.rows {
            for d in 0..r {
                pos[d] = axes[d][class.group[d]][t[d]];
            }
            // The run: next positions along the last axis, within the panel.
            let mut run = 1;
            while row + run < self.rows
                && t[last] + run < along.len()
                && along[t[last] + run] == pos[last] + run
            {
                run += 1;
            }
            f(row, n, pos, run);
            row += run;
            // The run's last pixel, then the next.
            t[last] += run - 1;
            super::step(&class.extent, t);
            if t.iter().all(|&i| i == 0) {
                n += 1;
            }
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::super::{run, scratch_bytes, Problem};
    use super::Classes;
    use crate::ir::{ConvRole, ConvSpec};
    use crate::library::ops::Operand;
    use crate::{shape, DType};

    /// Row-major strides of `shape`, and those of the same values stored with the features
    /// (the last axis) second: `[N, C, spatial..]`.
    fn strides(shape: &[usize]) -> (Vec<i64>, Vec<i64>) {
        let r = shape.len();
        let mut row = vec![1i64; r];
        for d in (0..r - 1).rev() {
            row[d] = row[d + 1] * shape[d + 1] as i64;
        }
        // Features second: [N, C, sp..] row-major, read as [N, sp.., C].
        let mut perm: Vec<usize> = vec![shape[0], shape[r - 1]];
        perm.extend(&shape[1..r - 1]);
        let mut ps = vec![1i64; r];
        for d in (0..r - 1).rev() {
            ps[d] = ps[d + 1] * perm[d + 1] as i64;
        }
        let mut moved = vec![ps[0]];
        moved.extend(&ps[2..]);
        moved.push(ps[1]);
        (row, moved)
    }

    /// The values of a row-major `[N, sp.., C]` array stored as `[N, C, sp..]`.
    fn features_second(v: &[f32], shape: &[usize]) -> Vec<f32> {
        let r = shape.len();
        let (_, moved) = strides(shape);
        let mut out = vec![0f32; v.len()];
        let mut idx = vec![0usize; r];
        for x in v {
            let at: i64 = idx.iter().zip(&moved).map(|(&i, &s)| i as i64 * s).sum();
            out[at as usize] = *x;
            super::super::step(shape, &mut idx);
        }
        out
    }

    /// `spec` (role `conv` or `conv_input_grad`) of `a` and `w` into `out` shaped `out_shape`,
    /// with `a`'s features contiguous (the direct tiles, grouped by class where the plan
    /// says so) or strided (the packed panels, which multiply every zero): the bits of each.
    fn both_ways(
        spec: &ConvSpec,
        (a_shape, a): (&[usize], &[f32]),
        (w_shape, w): (&[usize], &[f32]),
        out_shape: &[usize],
    ) -> [Vec<u32>; 2] {
        let (a_row, a_moved) = strides(a_shape);
        let moved = features_second(a, a_shape);
        let (w_row, _) = strides(w_shape);
        let mut results = [Vec::new(), Vec::new()];
        for (k, (data, st)) in [(a, &a_row), (&moved[..], &a_moved)]
            .into_iter()
            .enumerate()
        {
            let ins = [
                Operand {
                    ptr: data.as_ptr() as *const u8,
                    dtype: DType::F32,
                    shape: a_shape,
                    strides: st,
                },
                Operand {
                    ptr: w.as_ptr() as *const u8,
                    dtype: DType::F32,
                    shape: w_shape,
                    strides: &w_row,
                },
            ];
            let bytes = scratch_bytes(spec, &[a_shape, w_shape], out_shape, DType::F32, DType::F32);
            let mut scratch = vec![0xffu8; bytes];
            let mut out = vec![f32::NAN; shape::numel(out_shape)];
            unsafe {
                run(
                    spec,
                    &ins,
                    out_shape,
                    DType::F32,
                    out.as_mut_ptr() as *mut u8,
                    scratch.as_mut_ptr(),
                )
                .unwrap();
            }
            results[k] = out.iter().map(|v| v.to_bits()).collect();
        }
        results
    }

    /// Grouped by the window positions they read inside, the rows give the bits of the
    /// sums over every position: forward and input gradient, 1 to 3 spatial axes, padding
    /// on either side, strides, dilations, groups, one and several column panels, a
    /// kernel larger than the input, blocks of the kernel; with a non-finite kernel element every position runs
    /// (its NaN reaches every output of its feature, as the packed path gives).
    #[test]
    fn classes_give_the_bits_of_every_position() {
        if !crate::library::gemm16::fma_tiles() {
            // Without AVX-512 both runs take the packed panels: nothing to compare.
            return;
        }
        type Case = (
            Vec<usize>,
            Vec<usize>,
            Vec<(i64, i64)>,
            Vec<usize>,
            Vec<usize>,
            usize,
            usize,
        );
        // (input spatial, window, padding, strides, kernel dilation, groups, features per group)
        let cases: Vec<Case> = vec![
            (
                vec![8, 8],
                vec![3, 3],
                vec![(1, 1), (1, 1)],
                vec![1, 1],
                vec![1, 1],
                1,
                16,
            ),
            (
                vec![7, 9],
                vec![3, 3],
                vec![(1, 1), (1, 1)],
                vec![1, 1],
                vec![1, 1],
                1,
                40,
            ),
            (
                vec![6, 5],
                vec![5, 3],
                vec![(2, 2), (0, 2)],
                vec![1, 1],
                vec![1, 2],
                2,
                8,
            ),
            (
                vec![9, 8],
                vec![3, 3],
                vec![(1, 1), (1, 1)],
                vec![2, 2],
                vec![1, 1],
                1,
                16,
            ),
            (
                vec![3, 4],
                vec![5, 5],
                vec![(2, 2), (2, 2)],
                vec![1, 1],
                vec![1, 1],
                1,
                12,
            ),
            (vec![11], vec![7], vec![(3, 3)], vec![1], vec![1], 1, 16),
            // Many features: blocks of one window position, a class's sums started in a
            // later block than the first.
            (
                vec![6, 6],
                vec![3, 3],
                vec![(1, 1), (1, 1)],
                vec![1, 1],
                vec![1, 1],
                1,
                200,
            ),
            (
                vec![4, 5, 4],
                vec![3, 3, 3],
                vec![(1, 1), (1, 1), (1, 1)],
                vec![1, 1, 1],
                vec![1, 1, 1],
                1,
                8,
            ),
        ];
        let mut next = super::super::test_values();
        let mut grouped = 0;
        for (input, window, padding, strides, dil, groups, per) in cases {
            let r = input.len();
            for role in [ConvRole::Output, ConvRole::Input] {
                if role == ConvRole::Input && strides.iter().any(|&s| s != 1) {
                    // Strided input gradients run by phases (`phased`).
                    continue;
                }
                let spec = ConvSpec {
                    role: ConvRole::Output,
                    strides: strides.clone(),
                    padding: padding.clone(),
                    lhs_dilation: vec![1; r],
                    rhs_dilation: dil.clone(),
                    groups,
                };
                let (n, c, f) = (16usize, per * groups, (per + 20) * groups);
                let mut x = vec![n];
                x.extend(&input);
                x.push(c);
                let mut w = window.clone();
                w.extend([c / groups, f]);
                let y = spec.shapes(&x, &w, &[]).unwrap().y;
                let spec = ConvSpec { role, ..spec };
                let (a_shape, out_shape) = match role {
                    ConvRole::Output => (x.clone(), y.clone()),
                    _ => (y.clone(), x.clone()),
                };
                let direct = Problem::of(&spec, (&a_shape, &w, &out_shape), 4, true);
                grouped += Classes::plan(&direct).is_some() as usize;
                let a: Vec<f32> = (0..shape::numel(&a_shape)).map(|_| next()).collect();
                let mut wv: Vec<f32> = (0..shape::numel(&w)).map(|_| next()).collect();
                let [classes, packed] = both_ways(&spec, (&a_shape, &a), (&w, &wv), &out_shape);
                assert!(classes.iter().any(|&b| b != 0));
                assert_eq!(classes, packed, "{role:?} {input:?} window {window:?}");
                // A NaN in the kernel: every output of its feature, both ways.
                wv[1] = f32::NAN;
                let [classes, packed] = both_ways(&spec, (&a_shape, &a), (&w, &wv), &out_shape);
                assert_eq!(classes, packed, "{role:?} {input:?} with a NaN kernel");
            }
        }
        // The grouping ran (not every case falls back on the general path).
        assert!(grouped >= 8, "{grouped} cases grouped");
    }
}
