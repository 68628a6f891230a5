//! The input gradient of a strided convolution by phases: only the window positions that
//! meet an output pixel.
//!
//! `dx[n, i, c] = Σ_k Σ_f dy[n, o(i, k), f] · w[k, c, f]`, where `o(i, k) = (i + pad −
//! d·k) / s` exists only where `s` divides `i + pad − d·k`. The general path reads every
//! window position for every input pixel, pointing the ones between the strided outputs at
//! zeros: at stride 2 in two dimensions, 3 of 4 of a 3 × 3 window's multiply-adds are by
//! zero. Which positions divide depends on the pixel only through its phase, `(i + pad)
//! mod s` along each axis. So the pixels are taken phase by phase (every `s`-th pixel of
//! each axis, a class), and a class's rows run only its positions (`K_φ`, ascending), from
//! a kernel packed class by class (each position belongs to exactly one class). A class's
//! pixels are not contiguous in `dx`, so the tiles store through a pointer per row
//! (`indirect::Scattered`).
//!
//! The sums are the general path's with the terms by a skipped zero left out, in the same
//! order, so the same bits: a sum that starts at `+0` is never `−0`, and adding a zero to
//! anything else leaves it as it is. A skipped term is `0 · w`, NaN where `w` is not finite,
//! which `lax` and the interpreter propagate: a kernel with a non-finite element takes the
//! general path.

use super::indirect::{tile, Every, Scattered};
use super::{Problem, Shared, Taps, ALIGN, DIRECT_NARROW_ROWS, MR, NONE, NR, SLOTS};
use crate::ir::{ConvRole, ConvSpec};
use crate::library::ops::Operand;
use crate::shape;

/// One phase: its pixels along each axis (`first + s·t`, `t < extent`) and the window
/// positions (flat, ascending) that meet an output pixel there.
#[derive(Clone, Debug)]
struct Class {
    first: Vec<usize>,
    extent: Vec<usize>,
    ks: Vec<usize>,
    /// Rows (batch × pixels) and panels of `mr` rows.
    rows: usize,
    panels: usize,
    /// Where the class's packed kernel starts (elements), per group.
    packed: usize,
}

#[derive(Clone, Debug)]
pub struct Phased {
    classes: Vec<Class>,
    /// The stride along each axis (a class's step between pixels).
    step: Vec<usize>,
    /// Elements of one group's packed kernel (every class).
    group_elems: usize,
    /// The most positions of a class.
    most: usize,
    slots: usize,
}

impl Phased {
    /// The plan, where this path runs the input gradient `p` of `spec`: f32 on the indirect
    /// tiles (`p.direct`), a stride above 1, no dilation of the input.
    pub fn plan(p: &Problem, spec: &ConvSpec) -> Option<Phased> {
        let r = p.s.rank();
        if p.role != ConvRole::Input
            || !p.direct
            || p.elem != 4
            || p.m == 0
            || p.kc == 0
            || spec.strides.iter().all(|&s| s == 1)
            || spec.lhs_dilation.iter().any(|&d| d != 1)
        {
            return None;
        }
        let input = p.s.input();
        let phases: Vec<usize> = spec.strides.clone();
        let mut classes = Vec::new();
        let mut packed = 0;
        let mut phi = vec![0usize; r];
        for c in 0..shape::numel(&phases) {
            shape::unflatten(c, &phases, &mut phi);
            let first: Vec<usize> = (0..r)
                .map(|d| (phi[d] as i64 - spec.padding[d].0).rem_euclid(phases[d] as i64) as usize)
                .collect();
            let extent: Vec<usize> = (0..r)
                .map(|d| input[d].saturating_sub(first[d]).div_ceil(phases[d]))
                .collect();
            let ks: Vec<usize> = (0..p.kvol)
                .filter(|&kp| {
                    let k = &p.kidx[kp * r..(kp + 1) * r];
                    (0..r).all(|d| {
                        let at = phi[d] as i64 - (spec.rhs_dilation[d] * k[d]) as i64;
                        at.rem_euclid(spec.strides[d] as i64) == 0
                    })
                })
                .collect();
            let rows = p.s.batch() * shape::numel(&extent);
            if rows == 0 {
                continue;
            }
            let elems = ks.len() * p.fg * p.col_panels() * NR;
            classes.push(Class {
                panels: rows.div_ceil(p.mr),
                first,
                extent,
                rows,
                packed,
                ks,
            });
            packed += elems;
        }
        let most = classes.iter().map(|c| c.ks.len()).max().unwrap_or(0);
        let items: usize = classes.iter().map(|c| c.panels).sum::<usize>() * p.groups;
        let slots = if p.slots == 1 {
            1
        } else {
            items.clamp(1, SLOTS)
        };
        Some(Phased {
            classes,
            step: phases,
            group_elems: packed,
            most,
            slots,
        })
    }

    fn packed_bytes(&self, p: &Problem) -> usize {
        (p.groups * self.group_elems * 4).next_multiple_of(ALIGN)
    }

    /// A task's pointers (a row of `dy` per row and position, a row of `dx` per row) and
    /// zeros (`Fg`) for the rows that meet no output pixel.
    fn task_bytes(&self, p: &Problem) -> usize {
        (p.mr * (self.most + 1) * 8).next_multiple_of(ALIGN) + (p.fg * 4).next_multiple_of(ALIGN)
    }

    pub fn scratch_bytes(&self, p: &Problem) -> usize {
        self.packed_bytes(p) + self.slots * self.task_bytes(p)
    }

    /// Runs the product into `dx` (`out`), with `base` the aligned scratch; false (nothing
    /// written) where the kernel has a non-finite element.
    ///
    /// # Safety
    /// As `conv::run`'s; AVX-512 F, BW and VL.
    #[cfg(target_arch = "x86_64")]
    pub unsafe fn run(&self, p: &Problem, ins: &[Operand], out: *mut u8, base: *mut u8) -> bool {
        let (dy, w) = (&ins[0], &ins[1]);
        if !super::finite(w) {
            return false;
        }
        let taps = Taps::of(p, dy, false);
        // The kernel class by class: rows `(k, f)` for the class's positions in order.
        let packed = base as *mut f32;
        for g in 0..p.groups {
            for class in &self.classes {
                for (i, &kp) in class.ks.iter().enumerate() {
                    for j in 0..p.col_panels() {
                        let dst = packed.add(self.panel_at(p, g, class, j) + i * p.fg * NR);
                        super::pack_b(p, w, g, j, (kp * p.fg, (kp + 1) * p.fg), dst);
                    }
                }
            }
        }
        let sh = Shared((base, out));
        let items: Vec<(usize, usize, usize)> = (0..p.groups)
            .flat_map(|g| {
                self.classes
                    .iter()
                    .enumerate()
                    .flat_map(move |(ci, c)| (0..c.panels).map(move |panel| (g, ci, panel)))
            })
            .collect();
        let task = |t: usize| {
            let sh = sh.get();
            let own = sh.0.add(self.packed_bytes(p) + t * self.task_bytes(p));
            let mine = &items[t * items.len() / self.slots..(t + 1) * items.len() / self.slots];
            self.task(
                p,
                (dy, &taps),
                (sh.0 as *const f32, own),
                sh.1 as *mut f32,
                mine,
            );
        };
        super::run_tasks(self.slots, task);
        true
    }

    /// Where column panel `j` of `class`'s packed kernel for group `g` starts (elements).
    fn panel_at(&self, p: &Problem, g: usize, class: &Class, j: usize) -> usize {
        g * self.group_elems + class.packed + j * class.ks.len() * p.fg * NR
    }

    /// One task: its (group, class, row panel) items.
    #[cfg(target_arch = "x86_64")]
    unsafe fn task(
        &self,
        p: &Problem,
        (dy, taps): (&Operand, &Taps),
        (packed, own): (*const f32, *mut u8),
        dx: *mut f32,
        items: &[(usize, usize, usize)],
    ) {
        let r = p.s.rank();
        let mr = p.mr;
        // `dx`'s strides (contiguous `[N, input.., C]`): the batch's, then each axis'.
        let input = p.s.input();
        let mut xs = vec![p.s.in_channels(); r];
        for d in (0..r.saturating_sub(1)).rev() {
            xs[d] = xs[d + 1] * input[d + 1];
        }
        let batch_stride = shape::numel(input) * p.s.in_channels();
        let rows_at = own as *mut *const f32;
        let c_rows = own.add(mr * self.most * 8) as *mut *mut f32;
        let zeros = own.add((mr * (self.most + 1) * 8).next_multiple_of(ALIGN)) as *mut f32;
        std::ptr::write_bytes(zeros, 0, p.fg);
        let window = p.s.window();
        let mut t = vec![0usize; r];
        let mut i = vec![0usize; r];
        for &(g, ci, panel) in items {
            let class = &self.classes[ci];
            let r0 = panel * mr;
            let rows = (class.rows - r0).min(mr);
            let per_image = shape::numel(&class.extent).max(1);
            let dy_g = (dy.ptr as *const f32).add(g * p.fg);
            for row in 0..mr {
                // Rows past the class's read zeros and are not stored.
                if row >= rows {
                    *c_rows.add(row) = dx;
                    for (ki, _) in class.ks.iter().enumerate() {
                        *rows_at.add(ki * mr + row) = zeros;
                    }
                    continue;
                }
                let q = r0 + row;
                let n = q / per_image;
                shape::unflatten(q % per_image, &class.extent, &mut t);
                let mut at = n * batch_stride;
                for d in 0..r {
                    i[d] = class.first[d] + self.step[d] * t[d];
                    at += i[d] * xs[d];
                }
                *c_rows.add(row) = dx.add(at + g * p.cg);
                for (ki, &kp) in class.ks.iter().enumerate() {
                    let k = &p.kidx[kp * r..(kp + 1) * r];
                    let mut off = n as i64 * taps.lead;
                    for d in 0..r {
                        let o = taps.tab[d][i[d] * window[d] + k[d]];
                        off = if o == NONE || off == NONE {
                            NONE
                        } else {
                            off + o
                        };
                    }
                    *rows_at.add(ki * mr + row) = if off == NONE {
                        zeros
                    } else {
                        dy_g.offset(off as isize)
                    };
                }
            }
            if class.ks.is_empty() {
                // No position meets an output pixel: every sum is empty.
                for row in 0..rows {
                    std::ptr::write_bytes(*c_rows.add(row), 0, p.cg);
                }
                continue;
            }
            for j in 0..p.col_panels() {
                let c0 = j * NR;
                let cols = (p.ncol - c0).min(NR);
                let b = packed.add(self.panel_at(p, g, class, j));
                let shape = (Every(class.ks.len()), p.fg, rows, cols);
                let c = Scattered(c_rows as *const *mut f32, c0);
                let rp = rows_at as *const *const f32;
                if p.narrow() {
                    tile::<1, DIRECT_NARROW_ROWS, _, _>(false, rp, b, c, shape, false);
                } else {
                    tile::<2, MR, _, _>(false, rp, b, c, shape, false);
                }
            }
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::super::{run, scratch_bytes};
    use crate::ir::{ConvRole, ConvSpec};
    use crate::library::ops::Operand;
    use crate::DType;

    /// The phased input gradient gives the general path's bits: `dy` with contiguous
    /// features runs by phases, the same values with strided features (stored as `[N, F,
    /// H, W]`) on the packed panels, which multiply every zero; both against each other at
    /// strides 2 and 3, with padding, a kernel dilation and groups.
    #[test]
    fn the_phases_give_the_bits_of_the_full_sum() {
        if !crate::library::gemm16::fma_tiles() {
            // Without AVX-512 both runs take the packed panels: nothing to compare.
            return;
        }
        let specs = [
            (
                [2usize, 2],
                vec![(1i64, 1i64), (1, 1)],
                [1usize, 1],
                1usize,
                [3usize, 3],
            ),
            ([3, 2], vec![(0, 2), (2, 0)], [1, 2], 2, [2, 3]),
        ];
        for (strides, padding, rhs, groups, window) in specs {
            let spec = ConvSpec {
                role: ConvRole::Input,
                strides: strides.to_vec(),
                padding,
                lhs_dilation: vec![1, 1],
                rhs_dilation: rhs.to_vec(),
                groups,
            };
            let (n, c, f) = (3usize, 4 * groups, 8 * groups);
            let x = [n, 11, 10, c];
            let w = [window[0], window[1], c / groups, f];
            let forward = ConvSpec {
                role: ConvRole::Output,
                ..spec.clone()
            };
            let y = forward.shapes(&x, &w, &[]).unwrap().y;
            let (h, wd) = (y[1], y[2]);
            let direct = super::super::Problem::of(&spec, (&y, &w, &x), 4, true);
            assert!(super::Phased::plan(&direct, &spec).is_some());
            let mut next = super::super::test_values();
            let dy: Vec<f32> = (0..n * h * wd * f).map(|_| next()).collect();
            let wv: Vec<f32> = (0..w.iter().product::<usize>()).map(|_| next()).collect();
            // The same dy stored as [N, F, H, W].
            let mut dy_t = vec![0f32; dy.len()];
            for (i, v) in dy.iter().enumerate() {
                let (b, rest) = (i / (h * wd * f), i % (h * wd * f));
                let (p, ch) = (rest / f, rest % f);
                dy_t[b * f * h * wd + ch * h * wd + p] = *v;
            }
            let w_strides = [
                (w[1] * w[2] * w[3]) as i64,
                (w[2] * w[3]) as i64,
                w[3] as i64,
                1,
            ];
            let y_contig = [(h * wd * f) as i64, (wd * f) as i64, f as i64, 1];
            let y_strided = [(f * h * wd) as i64, wd as i64, 1, (h * wd) as i64];
            let mut results = Vec::new();
            for (data, strides) in [(&dy, y_contig), (&dy_t, y_strided)] {
                let ins = [
                    Operand {
                        ptr: data.as_ptr() as *const u8,
                        dtype: DType::F32,
                        shape: &y,
                        strides: &strides,
                    },
                    Operand {
                        ptr: wv.as_ptr() as *const u8,
                        dtype: DType::F32,
                        shape: &w,
                        strides: &w_strides,
                    },
                ];
                let bytes = scratch_bytes(&spec, &[&y, &w], &x, DType::F32, DType::F32);
                let mut scratch = vec![0u8; bytes];
                let mut out = vec![0f32; x.iter().product()];
                unsafe {
                    run(
                        &spec,
                        &ins,
                        &x,
                        DType::F32,
                        out.as_mut_ptr() as *mut u8,
                        scratch.as_mut_ptr(),
                    )
                    .unwrap();
                }
                results.push(out.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            }
            assert!(results[0].iter().any(|&b| b != 0));
            assert_eq!(
                results[0], results[1],
                "strides {strides:?}, groups {groups}"
            );
        }
    }
}
