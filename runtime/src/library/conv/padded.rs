//! The weight gradient of a layer with few input features (a first layer on grey or RGB
//! images: 1 or 3), on a padded copy of `x`.
//!
//! `dw[k, c, f] = Σ_q x[src(q, k), c] · dy[q, f]` has `Cg · K` rows of few columns each
//! per pixel: tiles of 32 input features (`WeightGrad`) would compute 32 columns to keep
//! 1 to 3, and packing `x` into panels costs more than the multiply-adds. Here `x` is first
//! copied into its padded (and dilated) form, `xp[n, a.., c]` with `xp[n, s·o + d·k, c] =
//! x[n, src(o, k), c]` and zeros between and around, so the element a pixel `q` reads at
//! window position `k` is at `base(q) + off(k)` with no test: a tile of rows `(k, c)` by
//! 16 or 32 output features broadcasts `xp[base(q) + off(k, c)]` for each row and loads
//! `dy`'s row of `q` as its vectors. The pixels are split into chunks and passes as in
//! `WeightGrad`: each chunk sums its own partial `dw` in pixel order, the partials are
//! added in chunk order, so the bits do not depend on the thread count. The copy is the
//! step's planned scratch (`scratch_bytes`), as small as `x` and its border.

use super::{tile_rows, Problem, Shared, ALIGN, CHUNK_PIXELS, NONE, SLOTS};
use crate::ir::{ConvRole, ConvSpec};
use crate::library::ops::Operand;
use crate::shape;

/// Input features per group below which this path runs (`DIRECT_MIN_FEATURES`).
pub const MAX_FEATURES: usize = super::DIRECT_MIN_FEATURES - 1;
/// Pixels per pass of a tile.
const PASS_PIXELS: usize = 1024;
/// The most elements the padded copy may have, as a multiple of `x`'s (a copy dilated by
/// a transposed convolution's strides is left to the packed path).
const MAX_GROWTH: usize = 4;

#[derive(Clone, Debug)]
pub struct Padded {
    /// Extent of each padded spatial axis, and the element strides of the copy
    /// (`[N, padded.., C]`, contiguous).
    extent: Vec<usize>,
    strides: Vec<usize>,
    chunks: usize,
    splits: usize,
    /// Vectors of output features per tile row (1 or 2), rows `(k, c)` per tile, and the
    /// panels of each.
    v: usize,
    rows: usize,
    rpan: usize,
    fpan: usize,
    tiles: usize,
}

impl Padded {
    /// The plan, where this path runs the weight gradient `p` of `spec`.
    pub fn plan(p: &Problem, spec: &ConvSpec) -> Option<Padded> {
        let r = p.s.rank();
        if p.role != ConvRole::Weight || p.elem != 4 || p.cg > MAX_FEATURES || p.kc == 0 {
            return None;
        }
        let extent = extent(p, spec)?;
        let mut strides = vec![0usize; r + 1];
        strides[r] = p.s.in_channels();
        for d in (0..r).rev() {
            strides[d] = strides[d + 1] * extent[d];
        }
        let lanes = |v: usize| p.fg.div_ceil(16 * v) * 16 * v;
        let v = if lanes(1) < lanes(2) { 1 } else { 2 };
        let kr = p.kvol * p.cg;
        let rpan = kr.div_ceil(tile_rows(v)).max(1);
        let rows = kr.div_ceil(rpan).max(1);
        let fpan = p.fg.div_ceil(16 * v).max(1);
        let tiles = p.groups * rpan * fpan;
        let chunks = if p.slots == 1 {
            1
        } else {
            (p.kc / CHUNK_PIXELS).clamp(1, SLOTS)
        };
        let splits = if p.slots == 1 {
            1
        } else {
            (SLOTS / chunks).clamp(1, tiles)
        };
        Some(Padded {
            extent,
            strides,
            chunks,
            splits,
            v,
            rows,
            rpan,
            fpan,
            tiles,
        })
    }

    fn copy_bytes(&self, p: &Problem) -> usize {
        (p.s.batch() * self.strides[0] * 4).next_multiple_of(ALIGN)
    }

    fn partial_bytes(&self, p: &Problem) -> usize {
        (p.groups * p.kvol * p.cg * p.fg * 4).next_multiple_of(ALIGN)
    }

    /// A task's pointers to the padded base and `dy`'s row of each pixel of a pass.
    fn task_bytes(&self) -> usize {
        (2 * PASS_PIXELS * 8).next_multiple_of(ALIGN)
    }

    pub fn scratch_bytes(&self, p: &Problem) -> usize {
        self.copy_bytes(p)
            + self.chunks * self.partial_bytes(p)
            + self.chunks * self.splits * self.task_bytes()
    }

    /// Runs the product into `dw` (`out`), with `base` the aligned scratch.
    ///
    /// # Safety
    /// As `conv::run`'s; `dy`'s features contiguous; AVX-512 F, BW and VL.
    #[cfg(target_arch = "x86_64")]
    pub unsafe fn run(
        &self,
        p: &Problem,
        spec: &ConvSpec,
        ins: &[Operand],
        out: *mut u8,
        base: *mut u8,
    ) {
        let (x, dy) = (&ins[0], &ins[1]);
        let xp = base as *mut f32;
        copy(p, spec, x, &self.extent, xp);
        let partials = base.add(self.copy_bytes(p));
        let own = partials.add(self.chunks * self.partial_bytes(p));
        let sh = Shared((partials, own, xp as *const f32));
        let tasks = self.chunks * self.splits;
        let task = |t: usize| {
            let sh = sh.get();
            let (chunk, split) = (t / self.splits, t % self.splits);
            let partial = sh.0.add(chunk * self.partial_bytes(p)) as *mut f32;
            let own = sh.1.add(t * self.task_bytes());
            let pixels = (chunk * p.kc / self.chunks)..((chunk + 1) * p.kc / self.chunks);
            let tiles =
                (split * self.tiles / self.splits)..((split + 1) * self.tiles / self.splits);
            self.task(p, spec, (sh.2, dy), partial, own, (pixels, tiles));
        };
        super::run_tasks(tasks, task);
        // dw[k, c, g·Fg + f] = Σ_chunks partial[g, k·Cg + c, f], in chunk order.
        let (kr, fg, f_all) = (p.kvol * p.cg, p.fg, p.s.out_channels());
        let dw = out as *mut f32;
        for g in 0..p.groups {
            for row in 0..kr {
                for f in 0..fg {
                    let at = (g * kr + row) * fg + f;
                    let mut sum = *(partials as *const f32).add(at);
                    for ch in 1..self.chunks {
                        sum += *(partials.add(ch * self.partial_bytes(p)) as *const f32).add(at);
                    }
                    *dw.add(row * f_all + g * fg + f) = sum;
                }
            }
        }
    }

    /// One task: tiles `tiles` of the partial over the pixels `pixels`, a pass at a time.
    #[cfg(target_arch = "x86_64")]
    unsafe fn task(
        &self,
        p: &Problem,
        spec: &ConvSpec,
        (xp, dy): (*const f32, &Operand),
        partial: *mut f32,
        own: *mut u8,
        (pixels, tiles): (std::ops::Range<usize>, std::ops::Range<usize>),
    ) {
        let r = p.s.rank();
        let bases = own as *mut *const f32;
        let dys = own.add(PASS_PIXELS * 8) as *mut *const f32;
        let out = p.s.output();
        let kr = p.kvol * p.cg;
        let mut o = vec![0usize; r];
        let mut roff = [0isize; 28]; // (`tile_rows(1)`, the most rows)
        for q0 in pixels.clone().step_by(PASS_PIXELS) {
            let q1 = (q0 + PASS_PIXELS).min(pixels.end);
            super::each_pixel(out, q0..q1, &mut o, |q, n, o| {
                let mut at = n * self.strides[0];
                for d in 0..r {
                    at += o[d] * spec.strides[d] * self.strides[d + 1];
                }
                *bases.add(q - q0) = xp.add(at);
                *dys.add(q - q0) = (dy.ptr as *const f32).offset(super::offset(dy, n, o) as isize);
            });
            for tile in tiles.clone() {
                let (g, rest) = (
                    tile / (self.rpan * self.fpan),
                    tile % (self.rpan * self.fpan),
                );
                let (ri, fi) = (rest / self.fpan, rest % self.fpan);
                // The last panel of rows ends at `kr`, its first `skip` rows not stored.
                let row0 = (ri * self.rows).min(kr - self.rows);
                let skip = ri * self.rows - row0;
                for (i, off) in roff.iter_mut().enumerate().take(self.rows) {
                    let (kpos, c) = ((row0 + i) / p.cg, (row0 + i) % p.cg);
                    let k = &p.kidx[kpos * r..(kpos + 1) * r];
                    let mut at = g * p.cg + c;
                    for d in 0..r {
                        at += k[d] * spec.rhs_dilation[d] * self.strides[d + 1];
                    }
                    *off = at as isize;
                }
                let f0 = fi * 16 * self.v;
                let shape = tile::Shape {
                    len: q1 - q0,
                    f0: g * p.fg + f0,
                    ldc: p.fg,
                    skip,
                    cols: (p.fg - f0).min(16 * self.v),
                    continues: q0 > pixels.start,
                };
                let c = partial.add((g * kr + row0) * p.fg + f0);
                tile::run(self.v, self.rows, (bases, dys, roff.as_ptr()), c, shape);
            }
        }
    }
}

/// The extent of each spatial axis of the padded, dilated copy of `x` the output's windows
/// read, where the copy has at most `MAX_GROWTH` times `x`'s elements (and its border).
pub fn extent(p: &Problem, spec: &ConvSpec) -> Option<Vec<usize>> {
    let r = p.s.rank();
    let (input, out, window) = (p.s.input(), p.s.output(), p.s.window());
    let extent: Vec<usize> = (0..r)
        .map(|d| spec.strides[d] * (out[d] - 1) + spec.rhs_dilation[d] * (window[d] - 1) + 1)
        .collect();
    let copy = p.s.batch() * shape::numel(&extent) * p.s.in_channels();
    let x = (p.s.batch() * shape::numel(input) * p.s.in_channels()).max(1);
    (copy <= MAX_GROWTH * x + (1 << 16)).then_some(extent)
}

/// Writes the padded, dilated copy of `x` of `extent` (zeros where no element lands).
///
/// # Safety
/// `xp` holds `N · Π extent · C` elements.
pub unsafe fn copy(p: &Problem, spec: &ConvSpec, x: &Operand, extent: &[usize], xp: *mut f32) {
    let r = p.s.rank();
    let c_all = p.s.in_channels();
    // Per axis, the input position each padded position holds (`NONE` for none).
    let src: Vec<Vec<i64>> = (0..r)
        .map(|d| {
            (0..extent[d])
                .map(|a| {
                    let at = a as i64 - spec.padding[d].0;
                    let ld = spec.lhs_dilation[d] as i64;
                    let i = at.div_euclid(ld);
                    if at < 0 || at % ld != 0 || i >= p.s.input()[d] as i64 {
                        NONE
                    } else {
                        i * x.strides[1 + d]
                    }
                })
                .collect()
        })
        .collect();
    let sc = x.strides[r + 1];
    // Rows of the copy: one per batch index and position over the axes but the last, each
    // `extent_last · C` long, filled from the last axis' table (in parallel: a row is
    // written by one thread, so the copy is the same under any split).
    let ptrs = Shared((x.ptr as *const f32, xp));
    let (prefix, last) = match r {
        0 => (&[][..], 1),
        _ => (&extent[..r - 1], extent[r - 1]),
    };
    let row_len = last * c_all;
    let per_image = shape::numel(prefix);
    let rows = p.s.batch() * per_image;
    let bytes = rows * row_len * 4;
    crate::library::ops::par_for(rows, bytes, |lo, hi| {
        let (xs, xp) = ptrs.get();
        let mut pos = vec![0usize; prefix.len()];
        for row in lo..hi {
            let n = row / per_image;
            shape::unflatten(row % per_image, prefix, &mut pos);
            let mut off = n as i64 * x.strides[0];
            for (d, &a) in pos.iter().enumerate() {
                let s = src[d][a];
                off = if s == NONE || off == NONE {
                    NONE
                } else {
                    off + s
                };
            }
            let dst = xp.add(row * row_len);
            if off == NONE {
                std::ptr::write_bytes(dst, 0, row_len);
                continue;
            }
            for a in 0..last {
                let s = if r == 0 { 0 } else { src[r - 1][a] };
                let dst = dst.add(a * c_all);
                if s == NONE {
                    std::ptr::write_bytes(dst, 0, c_all);
                } else {
                    let at = xs.offset((off + s) as isize);
                    for c in 0..c_all {
                        *dst.add(c) = *at.offset(c as isize * sc as isize);
                    }
                }
            }
        }
    });
}

#[cfg(target_arch = "x86_64")]
mod tile {
    use super::super::acc;
    use std::arch::x86_64::*;

    /// `len` pixels; `dy`'s features from `f0`, `cols` of them; `c`'s rows `ldc` apart,
    /// the first `skip` not stored; whether the sums continue those in `c`.
    pub struct Shape {
        pub len: usize,
        pub f0: usize,
        pub ldc: usize,
        pub skip: usize,
        pub cols: usize,
        pub continues: bool,
    }

    type Reads = (*const *const f32, *const *const f32, *const isize);

    /// Runs the tile of `v` vectors by `rows` rows (each count its own code: the
    /// accumulators are registers).
    ///
    /// # Safety
    /// As `tile`'s.
    pub unsafe fn run(v: usize, rows: usize, reads: Reads, c: *mut f32, s: Shape) {
        by_tile_rows!(v, rows, tile(reads, c, s))
    }

    /// `c[r, j] (+)= Σ_q base[q][off[r]] · dy[q][f0 + j]` for the `R × cols` of a tile over
    /// `len` pixels (`reads` = the pixels' padded bases, their `dy` rows, the rows'
    /// offsets): f32 FMAs in order of the pixels, continuing `c`'s sums where `continues`.
    ///
    /// # Safety
    /// AVX-512 F, BW and VL; every read inside the padded copy and `dy`; `c` valid for the
    /// tile.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn tile<const V: usize, const R: usize>(
        (bases, dys, off): Reads,
        c: *mut f32,
        s: Shape,
    ) {
        let mask = acc::masks(s.cols);
        let off: [isize; R] = *(off as *const [isize; R]);
        let mut acc = acc::start::<V, R>(s.continues, c, s.ldc, s.skip, mask);
        for q in 0..s.len {
            let d = (*dys.add(q)).add(s.f0);
            let mut b = [_mm512_setzero_ps(); V];
            for (v, b) in b.iter_mut().enumerate() {
                *b = _mm512_maskz_loadu_ps(mask[v], d.add(16 * v));
            }
            let xq = *bases.add(q);
            for (row, &o) in acc.iter_mut().zip(&off) {
                let x = _mm512_set1_ps(*xq.offset(o));
                for (a, b) in row.iter_mut().zip(&b) {
                    *a = _mm512_fmadd_ps(x, *b, *a);
                }
            }
        }
        acc::store(&acc, c, s.ldc, s.skip, mask);
    }
}
