//! The forward convolution of a layer with few input features (a first layer on grey or
//! RGB images: 1 or 3), on a padded copy of `x`.
//!
//! The indirect tiles read a row of `a` through one pointer per window position and run
//! `Cg` steps from it: with one input feature, a 5 × 5 window costs 25 pointers per output
//! pixel for 25 multiply-adds per column, and building the pointers cost more than the
//! tiles. In the padded copy `xp` (`padded::copy`) the window positions along the last
//! spatial axis lie next to each other: for a window index `k'` over the other axes, the
//! `K_last · C` elements `(k_last, c)` an output pixel reads are one contiguous run
//! starting at `base(pixel) + off(k')`. So a tile reads one pointer per `k'` and runs
//! `K_last · C` steps from it, which are the rows `(k, c)` of the packed kernel in their
//! order: the same sums in the same order as the general path (padding read as zeros
//! there, as elements of the copy here), so the same bits.

#[cfg(target_arch = "x86_64")]
use super::indirect::{tile, Every, Strided};
use super::padded::{copy, extent, MAX_FEATURES};
use super::{Problem, Shared, ALIGN, DIRECT_NARROW_ROWS, MR, NR};
use crate::ir::{ConvRole, ConvSpec};
use crate::library::ops::Operand;
use crate::shape;

#[derive(Clone, Debug)]
pub struct PaddedForward {
    /// Extent of each padded spatial axis, and the element strides of the copy.
    extent: Vec<usize>,
    strides: Vec<usize>,
    /// Window indices over the spatial axes but the last (`k'`), and the steps each runs
    /// (`K_last · C`).
    outer: usize,
    inner: usize,
    /// Steps per block of the packed kernel: whole runs.
    kb: usize,
    /// Element offset in the copy of each `k'`.
    offs: Vec<usize>,
}

impl PaddedForward {
    /// The plan, where this path runs the forward convolution `p` of `spec`: f32 on the
    /// indirect tiles (`p.direct`), one group of at most `MAX_FEATURES` input features, no dilation of the window along the
    /// last axis (the run would not be contiguous), a copy at most `MAX_GROWTH` times `x`.
    pub fn plan(p: &Problem, spec: &ConvSpec) -> Option<PaddedForward> {
        let r = p.s.rank();
        if p.role != ConvRole::Output
            || !p.direct
            || p.m == 0
            || p.elem != 4
            || p.groups != 1
            || p.cg > MAX_FEATURES
            || p.kc == 0
            || r == 0
            || spec.rhs_dilation[r - 1] != 1
        {
            return None;
        }
        let extent = extent(p, spec)?;
        let mut strides = vec![0usize; r + 1];
        strides[r] = p.s.in_channels();
        for d in (0..r).rev() {
            strides[d] = strides[d + 1] * extent[d];
        }
        let window = p.s.window();
        let outer = shape::numel(&window[..r - 1]);
        let inner = window[r - 1] * p.cg;
        let cols = p.ncol.div_ceil(NR).max(1) * NR;
        let kb = ((super::BLOCK_BYTES / (cols * 4)).max(16) / inner).max(1) * inner;
        let kb = kb.min(p.kc);
        let mut k = vec![0usize; r - 1];
        let offs = (0..outer)
            .map(|kp| {
                shape::unflatten(kp, &window[..r - 1], &mut k);
                (0..r - 1)
                    .map(|d| k[d] * spec.rhs_dilation[d] * strides[d + 1])
                    .sum()
            })
            .collect();
        Some(PaddedForward {
            extent,
            strides,
            outer,
            inner,
            kb,
            offs,
        })
    }

    fn blocks(&self, p: &Problem) -> usize {
        p.kc.div_ceil(self.kb)
    }

    fn copy_bytes(&self, p: &Problem) -> usize {
        (p.s.batch() * self.strides[0] * 4).next_multiple_of(ALIGN)
    }

    fn b_bytes(&self, p: &Problem) -> usize {
        (p.col_panels() * self.kb * NR * 4).next_multiple_of(ALIGN)
    }

    /// A task's row pointers: one per row of a panel and `k'`.
    fn task_bytes(&self, p: &Problem) -> usize {
        (p.mr * self.outer * 8).next_multiple_of(ALIGN)
    }

    pub fn scratch_bytes(&self, p: &Problem) -> usize {
        self.copy_bytes(p) + self.blocks(p) * self.b_bytes(p) + p.slots * self.task_bytes(p)
    }

    /// Runs the product into `y` (`out`), with `base` the aligned scratch.
    ///
    /// # Safety
    /// As `conv::run`'s; AVX-512 F, BW and VL.
    #[cfg(target_arch = "x86_64")]
    pub unsafe fn run(
        &self,
        p: &Problem,
        spec: &ConvSpec,
        ins: &[Operand],
        out: *mut u8,
        base: *mut u8,
    ) {
        let xp = base as *mut f32;
        copy(p, spec, &ins[0], &self.extent, xp);
        let packed = base.add(self.copy_bytes(p));
        let own = packed.add(self.blocks(p) * self.b_bytes(p));
        // The kernel, packed block by block: rows `(k, c)` in order, as the runs read them.
        for (bi, q0) in (0..p.kc).step_by(self.kb).enumerate() {
            let q1 = (q0 + self.kb).min(p.kc);
            let dst = packed.add(bi * self.b_bytes(p)) as *mut f32;
            for j in 0..p.col_panels() {
                super::pack_b(p, &ins[1], 0, j, (q0, q1), dst.add(j * self.kb * NR));
            }
        }
        let sh = Shared((xp as *const f32, packed, own, out as *mut f32));
        let task = |t: usize| {
            let sh = sh.get();
            let rp = sh.2.add(t * self.task_bytes(p)) as *mut *const f32;
            let panels = (t * p.panels / p.slots)..((t + 1) * p.panels / p.slots);
            self.task(
                p,
                spec,
                (sh.0 as *const f32, sh.1, rp),
                sh.3 as *mut f32,
                panels,
            );
        };
        super::run_tasks(p.slots, task);
    }

    /// One task: its row panels, block by block of the packed kernel.
    #[cfg(target_arch = "x86_64")]
    unsafe fn task(
        &self,
        p: &Problem,
        spec: &ConvSpec,
        (xp, packed, rp): (*const f32, *mut u8, *mut *const f32),
        y: *mut f32,
        panels: std::ops::Range<usize>,
    ) {
        let r = p.s.rank();
        let ldc = p.s.out_channels();
        let mut o = vec![0usize; r];
        for panel in panels {
            let r0 = panel * p.mr;
            let rows = (p.m - r0).min(p.mr);
            // Each run of pixels along the last axis: its first pixel's element in the copy,
            // the next ones a stride on; then a pointer per pixel and `k'`.
            let step = spec.strides[r - 1] * self.strides[r];
            super::each_run(p.s.output(), r0..r0 + rows, &mut o, |q, n, o, run| {
                let mut at = n * self.strides[0];
                for d in 0..r {
                    at += o[d] * spec.strides[d] * self.strides[d + 1];
                }
                for (kp, off) in self.offs.iter().enumerate() {
                    let dst = rp.add(kp * p.mr + q - r0);
                    let first = xp.add(at + off);
                    for i in 0..run {
                        *dst.add(i) = first.add(i * step);
                    }
                }
            });
            // Rows past the output read the first row's elements (computed, not stored).
            for kp in 0..self.outer {
                let first = *rp.add(kp * p.mr);
                for row in rows..p.mr {
                    *rp.add(kp * p.mr + row) = first;
                }
            }
            for (bi, q0) in (0..p.kc).step_by(self.kb).enumerate() {
                let q1 = (q0 + self.kb).min(p.kc);
                let (k0, k1) = (q0 / self.inner, q1 / self.inner);
                let b = packed.add(bi * self.b_bytes(p)) as *const f32;
                for j in 0..p.col_panels() {
                    let c0 = j * NR;
                    let cols = (p.ncol - c0).min(NR);
                    let c = y.add(r0 * ldc + c0);
                    let shape = (Every(k1 - k0), self.inner, rows, cols);
                    let rows_at = rp.add(k0 * p.mr) as *const *const f32;
                    let (b, c) = (b.add(j * self.kb * NR), Strided(c, ldc));
                    if p.narrow() {
                        tile::<1, DIRECT_NARROW_ROWS, _, _>(false, rows_at, b, c, shape, q0 > 0);
                    } else {
                        tile::<2, MR, _, _>(false, rows_at, b, c, shape, q0 > 0);
                    }
                }
            }
        }
    }
}
