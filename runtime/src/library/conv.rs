//! Convolutions as implicit GEMMs: no patch matrix is ever built.
//!
//! Each member of the family (`ir::conv`) is, per feature group `g`, a product
//! `c[m, ncol] = a[m, kc] · b[kc, ncol]` whose operands are read through index maps:
//!
//! | role | rows `m` | steps `kc` | columns `ncol` | `a[row, q]` | `b[q, col]` |
//! |---|---|---|---|---|---|
//! | `conv` | output pixels `(n, o)` | `(k, c)` | `f` | `x[n, src(o, k), c]` | `w[k, c, f]` |
//! | `conv_input_grad` | input pixels `(n, i)` | `(k, f)` | `c` | `dy[n, dst(i, k), f]` | `w[k, c, f]` |
//! | `conv_weight_grad` | `(k, c)` | output pixels `(n, o)` | `f` | `x[n, src(o, k), c]` | `dy[n, o, f]` |
//!
//! (`c` and `f` within the group; zero where the window position reads outside the input or
//! between the elements of a dilated one). The operands are gathered straight into the
//! panels of `gemm16`'s f32 tile kernel (14 × 32 accumulators on FMAs): a task packs a block
//! of `b` (at most `BLOCK_BYTES`, so it stays in the L2 cache) and then, one panel of 14 rows
//! at a time, the matching block of `a`, and runs the tiles. A tile continues the sums the
//! previous block left in `c` (`tile_fma::<_, true>`), so each result is one f32 sum over
//! its steps in order: the same bits whatever the blocking, the split or the thread count.
//! The weight gradient is so a reduction over the batch with no partial sums per thread:
//! its tasks own rows of `dw`. Tasks are contiguous ranges of the (group, row panel) pairs,
//! at most `SLOTS`, a function of the sizes only. Their panels are the step's planned scratch
//! (`scratch_bytes`), in the arena and the memory report.
//!
//! f64 convolutions, and f32 ones on CPUs without AVX-512, run the same driver on a
//! portable tile. bf16 `conv` and `conv_input_grad` run the direct tiles on pairs of
//! features (`pairs`, on `vdpbf16ps`), giving their f32 sums; other 16-bit convolutions run
//! on f32 copies (`passes/widen.rs`), or, given 16-bit operands the pairs do not read, on
//! packed panels widened as they are packed.
//!
//! Products of at most 16 columns read in place run on tiles of 28 rows by one vector
//! (`DIRECT_NARROW_ROWS`); the weight gradient picks one or two vectors per tile row and
//! balances its panels (`WeightGrad::plan`); a layer with fewer than 8 input features takes
//! its weight gradient on a padded copy of `x` (`padded`).
//!
//! The input gradient of a strided convolution runs phase by phase (`phased`: only the
//! window positions that meet an output pixel), and the forward of a layer with few input
//! features on a padded copy of `x` (`padded_forward`: a pointer per window row). Elsewhere
//! the direct forward and input gradient on the wide tiles group their rows by the window
//! positions they read inside (`classes`), so the positions in the padding are skipped.
//!
//! FIXME: the input gradient of a transposed convolution (`lhs_dilation` > 1) still
//! multiplies the zeros between the dilated elements; products of 17 to 31 columns fill
//! part of a 32-column tile.

/// Calls `$tile::<V, R> $args` for the `$rows` rows of a tile of `$v` vectors per row
/// (`tile_rows`): each count is its own code, as the accumulators are registers.
macro_rules! by_tile_rows {
    (@arms $v:literal, $rows:expr, $tile:ident $args:tt, $($r:literal)*) => {
        match $rows {
            $($r => $tile::<$v, $r> $args,)*
            rows => unreachable!("{rows} rows of {} vectors", $v),
        }
    };
    ($v:expr, $rows:expr, $tile:ident $args:tt) => {
        if $v == 1 {
            by_tile_rows!(@arms 1, $rows, $tile $args,
                1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28)
        } else {
            by_tile_rows!(@arms 2, $rows, $tile $args, 1 2 3 4 5 6 7 8 9 10 11 12 13)
        }
    };
}

mod classes;
mod padded;
mod padded_forward;
pub(super) mod pairs;
mod phased;

use super::gemm16::{MR, NR};
use super::ops::Operand;
use crate::ir::conv::{source, target};
use crate::ir::{ConvRole, ConvShapes, ConvSpec};
use crate::{shape, DType, Error};

/// The most tasks a convolution is split into (rayon spreads them over the threads).
const SLOTS: usize = 8;
/// Below this many multiply-adds a convolution runs on the calling thread.
const PARALLEL_MACS: usize = 1 << 21;
/// The most bytes of a task's packed block of `b`.
const BLOCK_BYTES: usize = 256 << 10;
/// Alignment of the scratch regions (a cache line).
const ALIGN: usize = 64;
/// Rows of a direct tile of at most 16 columns: 28 accumulators of one vector (a tile of
/// 14 × 32 would compute 32 columns to keep 16).
const DIRECT_NARROW_ROWS: usize = 28;
/// A window position that reads no input element.
const NONE: i64 = i64::MIN;

/// The product a convolution is, and how it is blocked and split.
struct Problem {
    role: ConvRole,
    s: ConvShapes,
    groups: usize,
    /// Input and output features per group.
    cg: usize,
    fg: usize,
    m: usize,
    kc: usize,
    ncol: usize,
    /// Window positions (the product of the window's extents).
    kvol: usize,
    /// Steps per window position: `Cg` for `conv`, `Fg` for `conv_input_grad`, 1 for
    /// `conv_weight_grad`.
    inner: usize,
    /// Steps of `kc` per block (whole window positions where `inner > 1`).
    kb: usize,
    /// Whether the rows of `a` are read in place (`indirect`) rather than packed.
    direct: bool,
    /// Rows per panel: `MR` (the packed tile's), or `DIRECT_NARROW_ROWS` for a direct
    /// product of at most 16 columns (one vector per row).
    mr: usize,
    /// Row panels per group.
    panels: usize,
    slots: usize,
    /// Bytes of a compute element (f32 or f64; a pair of bf16 values where `dot`).
    elem: usize,
    /// Whether a step of `kc` is a pair of bf16 values multiplied on `vdpbf16ps` (`pairs`).
    dot: bool,
    /// Window position `kpos`'s index along spatial axis `d`: `kidx[kpos · rank + d]`.
    kidx: Vec<usize>,
    /// Per spatial axis `d`, `source` and `target` as tables (a pixel's window costs
    /// lookups, not divisions): `fwd[d][o · K_d + k]` the input position output position `o`
    /// reads at window index `k`, `bwd[d][i · K_d + k]` the output position reading input
    /// position `i` there; −1 for none.
    fwd: Vec<Vec<i32>>,
    bwd: Vec<Vec<i32>>,
}

impl Problem {
    fn of(
        spec: &ConvSpec,
        (a, b, out): (&[usize], &[usize], &[usize]),
        elem: usize,
        direct: bool,
    ) -> Problem {
        let s = spec.shapes(a, b, out).expect("verified convolution");
        let groups = spec.groups;
        let (cg, fg) = (s.in_channels() / groups, s.out_channels() / groups);
        let kvol = shape::numel(s.window());
        let (n, ivol, ovol) = (s.batch(), shape::numel(s.input()), shape::numel(s.output()));
        let (m, kc, ncol) = match spec.role {
            ConvRole::Output => (n * ovol, kvol * cg, fg),
            ConvRole::Input => (n * ivol, kvol * fg, cg),
            ConvRole::Weight => (kvol * cg, n * ovol, fg),
        };
        let cols = ncol.div_ceil(NR).max(1) * NR;
        // Blocks of whole window positions where the steps are (window position, feature),
        // so a block's rows are read through one pointer per row and position (`indirect`).
        let inner = match spec.role {
            ConvRole::Output => cg,
            ConvRole::Input => fg,
            ConvRole::Weight => 1,
        }
        .max(1);
        let kb = ((BLOCK_BYTES / (cols * elem)).max(16) / inner).max(1) * inner;
        let kb = kb.min(kc.max(1));
        let direct = direct && spec.role != ConvRole::Weight && elem == 4;
        let mr = if direct && ncol <= 16 {
            DIRECT_NARROW_ROWS
        } else {
            MR
        };
        let panels = m.div_ceil(mr);
        let macs = groups
            .saturating_mul(m)
            .saturating_mul(kc)
            .saturating_mul(ncol);
        let slots = if macs < PARALLEL_MACS {
            1
        } else {
            (groups * panels).clamp(1, SLOTS)
        };
        let r = s.rank();
        let mut kidx = vec![0usize; kvol * r];
        for (kpos, k) in kidx.chunks_mut(r.max(1)).enumerate().take(kvol) {
            shape::unflatten(kpos, s.window(), &mut k[..r]);
        }
        let table = |len: usize, d: usize, f: &dyn Fn(usize, usize) -> Option<usize>| {
            let kd = s.window()[d];
            (0..len * kd)
                .map(|q| f(q / kd, q % kd).map_or(-1, |v| v as i32))
                .collect::<Vec<i32>>()
        };
        let fwd = (0..r)
            .map(|d| {
                table(s.output()[d], d, &|o, k| {
                    source(spec, d, o, k, s.input()[d])
                })
            })
            .collect();
        let bwd = (0..r)
            .map(|d| {
                table(s.input()[d], d, &|i, k| {
                    target(spec, d, i, k, s.output()[d])
                })
            })
            .collect();
        Problem {
            kidx,
            fwd,
            bwd,
            role: spec.role,
            s,
            groups,
            cg,
            fg,
            m,
            kc,
            ncol,
            kvol,
            inner,
            kb,
            direct,
            mr,
            panels,
            slots,
            elem,
            dot: false,
        }
    }

    /// Whether a direct product runs on the narrow tiles (`DIRECT_NARROW_ROWS` rows by one
    /// vector: at most 16 columns).
    fn narrow(&self) -> bool {
        self.direct && self.ncol <= 16
    }

    /// Column panels of `b` and `c`.
    fn col_panels(&self) -> usize {
        self.ncol.div_ceil(NR)
    }

    /// Blocks of `kc`.
    fn blocks(&self) -> usize {
        self.kc.div_ceil(self.kb)
    }

    /// Whether `b` (the kernel, for `conv` and `conv_input_grad`) is packed once for every
    /// task: packed by each, the tasks of a product of few rows each (512 features at 7²)
    /// spent more time packing the kernel than multiplying. The weight gradient's `b` is
    /// `dy`, as large as an activation: each task packs the blocks it runs.
    fn shared_b(&self) -> bool {
        self.role != ConvRole::Weight
    }

    /// Bytes of one packed block of `b` (every column panel).
    fn b_block_bytes(&self) -> usize {
        (self.col_panels() * self.kb * NR * self.elem).next_multiple_of(ALIGN)
    }

    /// Bytes of `b` packed for every task: every group and block.
    fn shared_bytes(&self) -> usize {
        if self.shared_b() {
            self.groups * self.blocks() * self.b_block_bytes()
        } else {
            0
        }
    }

    /// Bytes of one task's regions: its block of `b` (unless shared), its panel of `a`, the
    /// input offsets of the panel's window positions (or of a block's pixels), and zeros.
    fn regions(&self) -> [usize; 4] {
        let up = |x: usize| x.next_multiple_of(ALIGN);
        [
            if self.shared_b() {
                0
            } else {
                self.b_block_bytes()
            },
            if self.direct {
                0
            } else {
                up(MR * self.kb * self.elem)
            },
            // (And a pointer per row into `c`, where `classes` groups the rows.)
            up((self.mr * (self.kvol + 1)).max(self.kb) * 8),
            // Zeros that rows reading no input point at (`indirect`).
            up(self.inner * self.elem),
        ]
    }

    fn task_bytes(&self) -> usize {
        self.regions().iter().sum()
    }
}

/// Bytes of scratch the convolution `spec` of operands of type `operands` shaped `ins`
/// giving `out` of `dtype` needs (`run`'s `scratch`).
pub fn scratch_bytes(
    spec: &ConvSpec,
    ins: &[&[usize]],
    out: &[usize],
    operands: DType,
    dtype: DType,
) -> usize {
    if operands.is_half() {
        // On pairs where they are read as pairs, else on widened packed panels.
        let p = Problem::of(spec, (ins[0], ins[1], out), 4, false);
        let packed = p.shared_bytes() + p.slots * p.task_bytes();
        let weight = if p.role == ConvRole::Weight {
            let w = WeightGrad {
                pairs: true,
                ..WeightGrad::plan(&p)
            };
            w.scratch_bytes(&p)
        } else {
            0
        };
        return packed.max(weight).max(pairs::scratch_bytes(spec, ins, out)) + ALIGN;
    }
    // (Whether the rows are read in place depends on the operand's strides, unknown here:
    // the larger of the two.)
    let p = Problem::of(spec, (ins[0], ins[1], out), dtype.size(), false);
    let d = Problem::of(spec, (ins[0], ins[1], out), dtype.size(), true);
    let packed = (p.shared_bytes() + p.slots * p.task_bytes())
        .max(d.shared_bytes() + d.slots * d.task_bytes());
    // (The direct weight gradient's needs, where it may run: the larger of the two.)
    let direct = if p.role == ConvRole::Weight && dtype == DType::F32 {
        let padded = padded::Padded::plan(&p, spec).map_or(0, |w| w.scratch_bytes(&p));
        WeightGrad::plan(&p).scratch_bytes(&p).max(padded)
    } else {
        let forward =
            padded_forward::PaddedForward::plan(&d, spec).map_or(0, |f| f.scratch_bytes(&d));
        let phased = phased::Phased::plan(&d, spec).map_or(0, |f| f.scratch_bytes(&d));
        forward.max(phased)
    };
    packed.max(direct) + ALIGN
}

/// The weight gradient without packing: `dwᵀ[g, k, f, c] = Σ_q dy[q, g·Fg + f] · x[src(q,
/// k), g·Cg + c]` as tiles of 14 output features (broadcast from `dy`'s rows, read where
/// they lie) by 32 input features (vectors loaded from the row of `x` each pixel reads at
/// window position `k`, through a pointer per pixel: zeros where it reads nothing), over
/// the pixels in order. The pixels are cut into `chunks` (a function of the sizes), each
/// summed into its own partial `dwᵀ` by tasks owning ranges of its tiles; the partials are
/// then added in chunk order and transposed into `dw`. Runs where both operands' features
/// are contiguous, in f32 on AVX-512 (`conv_weight_grad`'s packed path otherwise), and on
/// bf16 operands with AVX-512 BF16 (`pairs`).
///
/// On bf16 operands a step is a pair of consecutive pixels of a chunk (`vdpbf16ps`): `dy`'s
/// pairs are packed per pass, `(dy[q, f], dy[q + 1, f])` in one word, and the vector of `x`
/// interleaves the two pixels' rows (a pixel past the chunk's end reads zeros in both).
#[derive(Clone, Copy, Debug)]
struct WeightGrad {
    /// Pixel chunks, each with its partial `dwᵀ`.
    chunks: usize,
    /// Tasks per chunk, each a range of the chunk's tiles.
    splits: usize,
    /// Tiles of a chunk: (group, window position, row panel of `f`, column panel of `c`).
    tiles: usize,
    /// Vectors of 16 input features per tile row (1 or 2), rows of output features per
    /// tile (at most `tile_rows(v)`), and the panels of each.
    v: usize,
    rows: usize,
    fpan: usize,
    cpan: usize,
    /// Pixels a tile's pass covers before its sums go back to the partial.
    pass: usize,
    /// Whether the operands are bf16, multiplied in pairs of pixels on `vdpbf16ps`.
    pairs: bool,
}

/// `dst[p · f_all + f] = dy[2p][f] | dy[2p + 1][f] << 16` (bf16 bits) for the pairs of the
/// `len` pixels whose rows `rows` points at, the second of an odd last pair zero.
///
/// # Safety
/// Each row valid for `f_all` values; `dst` for `len.div_ceil(2) · f_all` words.
#[cfg(target_arch = "x86_64")]
unsafe fn pack_pixel_pairs(rows: *const *const u16, len: usize, f_all: usize, dst: *mut u32) {
    for pair in 0..len.div_ceil(2) {
        let even = *rows.add(2 * pair);
        let odd = (2 * pair + 1 < len).then(|| *rows.add(2 * pair + 1));
        let out = dst.add(pair * f_all);
        for f in 0..f_all {
            let hi = odd.map_or(0, |o| *o.add(f) as u32);
            *out.add(f) = *even.add(f) as u32 | hi << 16;
        }
    }
}

/// Input features per group below which the weight gradient gathers `x` into packed panels
/// rather than running tiles of 32 of its features (a first layer on grey or RGB images
/// has 1 or 3: a tile would compute 32 columns to keep 1 to 3). The forward and input
/// gradient keep their pointer per row and window position (measured faster there).
const DIRECT_MIN_FEATURES: usize = 8;

/// Pixels per chunk of the direct weight gradient (at least), and per pass of a tile.
const CHUNK_PIXELS: usize = 4096;
/// Rows of a weight-gradient tile of `v` vectors per row: 28 accumulators of one vector, 13
/// rows of two (14 rows, 28 accumulators beside the two vectors of `x` and the broadcast,
/// spilled: 256 features ran at 40 % of the GEMM rate, 13 rows at 94 %).
fn tile_rows(v: usize) -> usize {
    if v == 1 {
        28
    } else {
        13
    }
}
const PASS_PIXELS: usize = 1024;

impl WeightGrad {
    fn plan(p: &Problem) -> WeightGrad {
        // Two vectors per row unless one wastes fewer lanes (16 or 48 input features: a
        // 32-wide tile computed 32 columns to keep 16); as many rows as the accumulators
        // allow, the panels of `f` balanced (64 features: 5 panels of 13 rows, not 14 + 8).
        let lanes = |v: usize| p.cg.div_ceil(16 * v) * 16 * v;
        let v = if lanes(1) < lanes(2) { 1 } else { 2 };
        let fpan = p.fg.div_ceil(tile_rows(v)).max(1);
        let rows = p.fg.div_ceil(fpan).max(1);
        let cpan = p.cg.div_ceil(16 * v).max(1);
        let tiles = p.groups * p.kvol * fpan * cpan;
        let chunks = if p.slots == 1 {
            1
        } else {
            (p.kc / CHUNK_PIXELS).clamp(1, SLOTS)
        };
        let splits = if p.slots == 1 {
            1
        } else {
            (SLOTS / chunks).clamp(1, tiles.max(1))
        };
        WeightGrad {
            chunks,
            splits,
            tiles,
            v,
            rows,
            fpan,
            cpan,
            // (Even: pairs of pixels start at a chunk's even offsets.)
            pass: PASS_PIXELS
                .min(p.kc.div_ceil(chunks).next_multiple_of(2))
                .max(2),
            pairs: false,
        }
    }

    /// The plan, where the direct path runs this product.
    #[cfg(target_arch = "x86_64")]
    fn of(p: &Problem, ins: &[Operand]) -> Option<WeightGrad> {
        let r = p.s.rank();
        let pairs = ins.iter().all(|t| t.dtype == DType::BF16) && pairs::dot_available();
        let runs = p.role == ConvRole::Weight
            && p.elem == 4
            && p.cg >= DIRECT_MIN_FEATURES
            && ins[0].strides[r + 1] == 1
            && ins[1].strides[r + 1] == 1
            && super::gemm16::fma_tiles()
            && (pairs || ins[0].dtype == DType::F32);
        runs.then(|| WeightGrad {
            pairs,
            ..WeightGrad::plan(p)
        })
    }

    /// Bytes of a pass's packed pairs of `dy` (every feature of every group).
    fn dy_pairs_bytes(&self, p: &Problem) -> usize {
        if self.pairs {
            (self.pass.div_ceil(2) * p.s.out_channels() * 4).next_multiple_of(ALIGN)
        } else {
            0
        }
    }

    /// Bytes of one partial `dwᵀ`.
    fn partial_bytes(&self, p: &Problem) -> usize {
        (p.groups * p.kvol * p.fg * p.cg * 4).next_multiple_of(ALIGN)
    }

    /// Bytes of one task's pointers (to `dy`'s and `x`'s rows of a pass) and the zeros a
    /// pixel reading nothing points at (a group's features).
    fn task_bytes(&self, p: &Problem) -> usize {
        (2 * self.pass * 8 + p.cg.next_multiple_of(NR) * 4).next_multiple_of(ALIGN)
            + self.dy_pairs_bytes(p)
    }

    fn scratch_bytes(&self, p: &Problem) -> usize {
        self.chunks * self.partial_bytes(p) + self.chunks * self.splits * self.task_bytes(p)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn run(self, p: &Problem, ins: &[Operand], out: *mut u8, base: *mut u8) {
        let sh = Shared((base, out));
        let (x, dy) = (&ins[0], &ins[1]);
        let taps = Taps::of(p, x, true);
        let tasks = self.chunks * self.splits;
        let task = |t: usize| {
            let sh = sh.get();
            let (chunk, split) = (t / self.splits, t % self.splits);
            let partial = sh.0.add(chunk * self.partial_bytes(p)) as *mut f32;
            let own =
                sh.0.add(self.chunks * self.partial_bytes(p) + t * self.task_bytes(p));
            let pixels = (chunk * p.kc / self.chunks)..((chunk + 1) * p.kc / self.chunks);
            let tiles =
                (split * self.tiles / self.splits)..((split + 1) * self.tiles / self.splits);
            self.task(p, (x, dy, &taps), partial, own, (pixels, tiles));
        };
        run_tasks(tasks, task);
        // dw[k, c, g·Fg + f] = Σ_chunks dwᵀ[g, k, f, c], in chunk order.
        let (f_all, kvol, cg, fg) = (p.s.out_channels(), p.kvol, p.cg, p.fg);
        let reduce = |gk: usize| {
            let sh = sh.get();
            let (g, k) = (gk / kvol, gk % kvol);
            let dw = sh.1 as *mut f32;
            for c in 0..cg {
                for f in 0..fg {
                    let at = ((g * kvol + k) * fg + f) * cg + c;
                    let mut sum = *(sh.0 as *const f32).add(at);
                    for ch in 1..self.chunks {
                        sum += *(sh.0.add(ch * self.partial_bytes(p)) as *const f32).add(at);
                    }
                    *dw.add((k * cg + c) * f_all + g * fg + f) = sum;
                }
            }
        };
        if tasks == 1 {
            (0..p.groups * kvol).for_each(reduce);
        } else {
            use rayon::prelude::*;
            (0..p.groups * kvol).into_par_iter().for_each(reduce);
        }
    }

    /// One task: tiles `tiles` of the partial over the pixels `pixels`, a pass at a time.
    #[cfg(target_arch = "x86_64")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn task(
        self,
        p: &Problem,
        (x, dy, taps): (&Operand, &Operand, &Taps),
        partial: *mut f32,
        own: *mut u8,
        (pixels, tiles): (std::ops::Range<usize>, std::ops::Range<usize>),
    ) {
        let r = p.s.rank();
        let dyp = own as *mut *const f32;
        let xp = own.add(self.pass * 8) as *mut *const f32;
        let zeros = own.add(2 * self.pass * 8) as *mut f32;
        std::ptr::write_bytes(zeros, 0, p.cg.next_multiple_of(NR));
        let dy_pairs = own.add(self.task_bytes(p) - self.dy_pairs_bytes(p)) as *mut u32;
        // Element size of the operands, and `dy`'s features (a packed pair's row).
        let size = if self.pairs { 2 } else { 4 };
        let f_all = p.s.out_channels();
        let (fpan, cpan) = (self.fpan, self.cpan);
        let out = p.s.output();
        let mut o = vec![0usize; r];
        let first = pixels.start;
        for q0 in pixels.clone().step_by(self.pass) {
            let q1 = (q0 + self.pass).min(pixels.end);
            // `dy`'s row of each pixel (its feature 0).
            let along = dy.strides[r];
            each_run(out, q0..q1, &mut o, |q, n, o, run| {
                let start = dy.ptr.offset(offset(dy, n, o) as isize * size) as *const f32;
                for i in 0..run {
                    *dyp.add(q - q0 + i) = start.byte_offset(i as isize * along as isize * size);
                }
            });
            if self.pairs {
                pack_pixel_pairs(dyp as *const *const u16, q1 - q0, f_all, dy_pairs);
            }
            let mut at_k = None;
            for tile in tiles.clone() {
                let (gk, rest) = (tile / (fpan * cpan), tile % (fpan * cpan));
                let (g, kpos) = (gk / p.kvol, gk % p.kvol);
                let (fi, ci) = (rest / cpan, rest % cpan);
                if at_k != Some(gk) {
                    // `x`'s row (at the group's feature 0) each pixel reads at `kpos`.
                    let k = &p.kidx[kpos * r..(kpos + 1) * r];
                    let dst = |q: usize| xp.add(q - q0) as *mut *const u8;
                    // (`x`'s elements are `size` bytes: bf16 or f32.)
                    let group = x.ptr.add(g * p.cg * size as usize);
                    each_run(out, q0..q1, &mut o, |q, n, o, run| {
                        let base = group.offset((n as i64 * taps.lead) as isize * size);
                        if self.pairs {
                            taps.run_at(base as *const u16, o, run, k, zeros as *const u8, dst(q));
                        } else {
                            taps.run_at(base as *const f32, o, run, k, zeros as *const u8, dst(q));
                        }
                    });
                    if self.pairs && (q1 - q0) % 2 == 1 {
                        // (The pixel pairing an odd last one: `pass` is even.)
                        *dst(q1) = zeros as *const u8;
                    }
                    at_k = Some(gk);
                }
                // The last panel of `f` ends at `fg`, its first `skip` rows (the previous
                // panel's) computed but not stored: every tile has `rows` rows.
                let f0 = (fi * self.rows).min(p.fg - self.rows);
                let skip = fi * self.rows - f0;
                let c0 = ci * 16 * self.v;
                let cols = (p.cg - c0).min(16 * self.v);
                let c = partial.add(((g * p.kvol + kpos) * p.fg + f0) * p.cg + c0);
                let shape = weight_tile::Shape {
                    len: q1 - q0,
                    f0: g * p.fg + f0,
                    c0,
                    ldc: p.cg,
                    skip,
                    cols,
                    continues: q0 > first,
                };
                if self.pairs {
                    let xp = xp as *const *const u16;
                    weight_tile::run_pairs(self.v, self.rows, (dy_pairs, f_all), xp, c, shape);
                } else {
                    weight_tile::run(self.v, self.rows, dyp, xp, c, shape);
                }
            }
        }
    }
}

/// The compute types: f32 and f64.
trait Real: Copy + Send + Sync + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> {
    const ZERO: Self;
    fn from_f32(x: f32) -> Self;
}
impl Real for f32 {
    const ZERO: f32 = 0.0;
    fn from_f32(x: f32) -> f32 {
        x
    }
}
impl Real for f64 {
    const ZERO: f64 = 0.0;
    fn from_f32(x: f32) -> f64 {
        x as f64
    }
}

/// Runs the convolution `spec` of `ins` (its two operands, read through their strides),
/// writing its contiguous result of `out_shape` and `dtype` to `out`: f32 or f64 on operands
/// of its type, or the f32 sums of bf16 or f16 operands (`pairs` where it runs them).
///
/// # Safety
/// The operands' maps stay inside live buffers; `out` is valid for the result and overlaps
/// no operand; `scratch` holds `scratch_bytes` bytes.
pub unsafe fn run(
    spec: &ConvSpec,
    ins: &[Operand],
    out_shape: &[usize],
    dtype: DType,
    out: *mut u8,
    scratch: *mut u8,
) -> Result<(), Error> {
    let half = ins[0].dtype.is_half();
    match dtype {
        DType::F32 if half => {
            #[cfg(target_arch = "x86_64")]
            if pairs::run(spec, ins, out_shape, out, scratch) {
                return Ok(());
            }
            // Operands the pairs do not read (strided, odd features, no AVX-512 BF16):
            // widened element by element into the packed panels.
            drive::<f32>(spec, ins, out_shape, out, scratch)
        }
        DType::F32 => drive::<f32>(spec, ins, out_shape, out, scratch),
        DType::F64 => drive::<f64>(spec, ins, out_shape, out, scratch),
        d => {
            return Err(Error::verify(format!(
                "`{}` on {d} is not a native library step (passes/widen.rs runs it on f32)",
                spec.role.name()
            )))
        }
    }
    Ok(())
}

/// The pointers and strides every task reads (shared: each writes its own rows of `c`
/// and its own scratch).
#[derive(Clone, Copy)]
struct Ptrs<'a> {
    a: &'a Operand<'a>,
    b: &'a Operand<'a>,
    /// Where the rows of `a` read (`Taps` of `a`).
    taps: &'a Taps,
    c: *mut u8,
    scratch: *mut u8,
}
// SAFETY: tasks write disjoint rows of `c` and disjoint scratch; operands are only read.
unsafe impl Send for Ptrs<'_> {}
unsafe impl Sync for Ptrs<'_> {}

impl<'a> Ptrs<'a> {
    /// The product's operands `ins` (`a`, `b`), read through `taps`, into `c` with `scratch`.
    fn new(ins: &'a [Operand<'a>], taps: &'a Taps, c: *mut u8, scratch: *mut u8) -> Ptrs<'a> {
        Ptrs {
            a: &ins[0],
            b: &ins[1],
            taps,
            c,
            scratch,
        }
    }
}

/// Runs tasks `0..n` over rayon's pool (one on the calling thread). What a task computes
/// depends on its index only, never on the thread that runs it.
fn run_tasks(n: usize, task: impl Fn(usize) + Sync + Send) {
    if n == 1 {
        task(0);
    } else {
        use rayon::prelude::*;
        (0..n).into_par_iter().for_each(task);
    }
}

/// Raw pointers a step's tasks share (a tuple of them): each task writes its own part of
/// what they point at.
#[derive(Clone, Copy)]
struct Shared<T: Copy>(T);
// SAFETY: the tasks write disjoint parts; what they read is not written during the step.
unsafe impl<T: Copy> Send for Shared<T> {}
unsafe impl<T: Copy> Sync for Shared<T> {}

impl<T: Copy> Shared<T> {
    /// The pointers (a method, so a closure captures the whole wrapper, not its field).
    fn get(self) -> T {
        self.0
    }
}

unsafe fn drive<T: Real>(
    spec: &ConvSpec,
    ins: &[Operand],
    out_shape: &[usize],
    out: *mut u8,
    scratch: *mut u8,
) {
    // Rows read in place through a pointer per row and window position where the features
    // are contiguous and the CPU runs the f32 tiles; packed panels otherwise (and for
    // 16-bit operands, widened as they are packed).
    let rank = ins[0].shape.len().saturating_sub(2);
    let half = ins[0].dtype.is_half();
    let direct = cfg!(target_arch = "x86_64")
        && !half
        && ins[0].strides.get(rank + 1) == Some(&1)
        && super::gemm16::fma_tiles();
    let p = Problem::of(
        spec,
        (ins[0].shape, ins[1].shape, out_shape),
        size_of::<T>(),
        direct,
    );
    if p.kc == 0 {
        // No steps: every sum is empty.
        std::ptr::write_bytes(out, 0, shape::numel(out_shape) * p.elem);
        return;
    }
    let base = scratch.wrapping_add(scratch.align_offset(ALIGN));
    let pack = |p: &Problem, b: &Operand, g, j, qs, dst: *mut T| pack_b(p, b, g, j, qs, dst);
    if half {
        #[cfg(target_arch = "x86_64")]
        if let Some(w) = WeightGrad::of(&p, ins) {
            return w.run(&p, ins, out, base);
        }
        return products::<T>(&p, ins, (out, base), None, &pack);
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(w) = padded::Padded::plan(&p, spec) {
        if ins[1].strides[rank + 1] == 1 && super::gemm16::fma_tiles() {
            w.run(&p, spec, ins, out, base);
            return;
        }
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(f) = padded_forward::PaddedForward::plan(&p, spec) {
        f.run(&p, spec, ins, out, base);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(ph) = phased::Phased::plan(&p, spec) {
        if ph.run(&p, ins, out, base) {
            return;
        }
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(w) = WeightGrad::of(&p, ins) {
        w.run(&p, ins, out, base);
        return;
    }
    // The rows grouped by the window positions they read inside, where that skips enough
    // zeros and no skipped zero would have multiplied a non-finite kernel element.
    let classes = classes::Classes::plan(&p).filter(|_| finite(&ins[1]));
    products::<T>(&p, ins, (out, base), classes.as_ref(), &pack);
}

/// Packs column panel `j` of block `(q0, q1)` of group `g`'s `b` (of operand `b`) at `dst`.
type PackB<'a, T> = dyn Fn(&Problem, &Operand, usize, usize, (usize, usize), *mut T) + Sync + 'a;

/// The product `p` of `ins` into `out` with the scratch at `base`: `b` packed by `pack`
/// (shared by the tasks, or each task's own), then the tasks' panels (grouped by `classes`
/// where given).
unsafe fn products<T: Real>(
    p: &Problem,
    ins: &[Operand],
    (out, base): (*mut u8, *mut u8),
    classes: Option<&classes::Classes>,
    pack_b: &PackB<T>,
) {
    let taps = Taps::of(p, &ins[0], p.role != ConvRole::Input);
    let ptrs = Ptrs::new(ins, &taps, out, base);
    // The shared `b`: every (group, block, column panel), split over the tasks.
    let packs = if p.shared_b() {
        p.groups * p.blocks() * p.col_panels()
    } else {
        0
    };
    let pack = |t: usize| {
        let ptrs = ptrs;
        for item in (t * packs / p.slots)..((t + 1) * packs / p.slots) {
            let (g, rest) = (
                item / (p.blocks() * p.col_panels()),
                item % (p.blocks() * p.col_panels()),
            );
            let (bi, j) = (rest / p.col_panels(), rest % p.col_panels());
            let q0 = bi * p.kb;
            let dst = shared_block(p, ptrs.scratch, g, bi).add(j * p.kb * NR * p.elem) as *mut T;
            pack_b(p, ptrs.b, g, j, (q0, (q0 + p.kb).min(p.kc)), dst);
        }
    };
    let task = |t: usize| {
        let ptrs = ptrs;
        let shared = ptrs.scratch;
        let own = Ptrs {
            scratch: shared.wrapping_add(p.shared_bytes()),
            ..ptrs
        };
        task::<T>(p, t, (own, shared), classes, pack_b);
    };
    run_tasks(p.slots, pack);
    run_tasks(p.slots, task);
}

/// Where block `bi` of group `g` of the shared `b` starts.
fn shared_block(p: &Problem, base: *mut u8, g: usize, bi: usize) -> *mut u8 {
    base.wrapping_add((g * p.blocks() + bi) * p.b_block_bytes())
}

/// Task `t`: its range of (group, row panel) pairs, block by block of `kc` (the panels of
/// `classes` where it groups the rows).
unsafe fn task<T: Real>(
    p: &Problem,
    t: usize,
    (ptrs, shared): (Ptrs, *mut u8),
    classes: Option<&classes::Classes>,
    pack_b: &PackB<T>,
) {
    let [b_bytes, a_bytes, o_bytes, z_bytes] = p.regions();
    let own = ptrs.scratch.wrapping_add(t * p.task_bytes());
    let (bp, ap) = (own as *mut T, own.wrapping_add(b_bytes) as *mut T);
    let offs = own.wrapping_add(b_bytes + a_bytes) as *mut i64;
    let zeros = own.wrapping_add(b_bytes + a_bytes + o_bytes);
    std::ptr::write_bytes(zeros, 0, z_bytes);
    // The pointers to the rows of `c` a class's panel stores through.
    let c_rows = offs.add(p.mr * p.kvol) as *mut *mut T;
    let panels = classes.map_or(p.panels, |c| c.panels);
    let total = p.groups * panels;
    let mine = (t * total / p.slots)..((t + 1) * total / p.slots);
    let (ldc, col_base) = match p.role {
        ConvRole::Input => (p.s.in_channels(), p.cg),
        _ => (p.s.out_channels(), p.fg),
    };
    for (bi, q0) in (0..p.kc).step_by(p.kb).enumerate() {
        let q1 = (q0 + p.kb).min(p.kc);
        let mut packed = None;
        let mut bp = bp;
        for item in mine.clone() {
            let (g, panel) = (item / panels, item % panels);
            if p.shared_b() {
                bp = shared_block(p, shared, g, bi) as *mut T;
            } else if packed != Some(g) {
                for j in 0..p.col_panels() {
                    pack_b(p, ptrs.b, g, j, (q0, q1), bp.add(j * p.kb * NR));
                }
                packed = Some(g);
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(classes) = classes {
                // A class's panel (direct tiles only): the class's positions in this block;
                // its sums start at the first.
                use indirect::{tile, Listed, Scattered};
                let (k0, k1) = (q0 / p.inner, q1 / p.inner);
                let rp = (offs as *const *const f32).add(k0 * p.mr);
                let class_panel = classes.panel(panel);
                let ks = class_panel.positions();
                let (lo, hi) = (
                    ks.partition_point(|&k| k < k0),
                    ks.partition_point(|&k| k < k1),
                );
                if lo == hi && lo > 0 {
                    continue;
                }
                let rows = row_pointers::<T>(
                    p,
                    &ptrs,
                    (g, panel),
                    (offs, zeros),
                    Some((&class_panel, c_rows)),
                );
                for j in 0..p.col_panels() {
                    let c0 = j * NR;
                    let cols = (p.ncol - c0).min(NR);
                    let c = Scattered(c_rows as *const *mut f32, c0);
                    let b = bp.add(j * p.kb * NR) as *const f32;
                    let shape = (Listed(&ks[lo..hi], k0), p.inner, rows, cols);
                    if p.narrow() {
                        tile::<1, DIRECT_NARROW_ROWS, _, _>(p.dot, rp, b, c, shape, lo > 0);
                    } else {
                        tile::<2, MR, _, _>(p.dot, rp, b, c, shape, lo > 0);
                    }
                }
                continue;
            }
            let r0 = panel * p.mr;
            let rows = (p.m - r0).min(p.mr);
            #[cfg(target_arch = "x86_64")]
            if p.direct {
                use indirect::{tile, Every, Strided};
                let (k0, k1) = (q0 / p.inner, q1 / p.inner);
                let rp = (offs as *const *const f32).add(k0 * p.mr);
                row_pointers::<T>(p, &ptrs, (g, panel), (offs, zeros), None);
                for j in 0..p.col_panels() {
                    let c0 = j * NR;
                    let cols = (p.ncol - c0).min(NR);
                    let c = (ptrs.c as *mut f32).add(r0 * ldc + g * col_base + c0);
                    let b = bp.add(j * p.kb * NR) as *const f32;
                    let (shape, c) = ((Every(k1 - k0), p.inner, rows, cols), Strided(c, ldc));
                    if p.narrow() {
                        tile::<1, DIRECT_NARROW_ROWS, _, _>(p.dot, rp, b, c, shape, q0 > 0);
                    } else {
                        tile::<2, MR, _, _>(p.dot, rp, b, c, shape, q0 > 0);
                    }
                }
                continue;
            }
            pack_a(p, &ptrs, g, panel, (q0, q1), ap, offs);
            for j in 0..p.col_panels() {
                let c0 = j * NR;
                let cols = (p.ncol - c0).min(NR);
                let c = (ptrs.c as *mut T).add(r0 * ldc + g * col_base + c0);
                tile::<T>(
                    q1 - q0,
                    ap,
                    bp.add(j * p.kb * NR),
                    c,
                    (ldc, rows, cols),
                    q0 > 0,
                );
            }
        }
    }
}

/// `c += a · b` (or `=` for the first block) over `kp` steps of an `MR`-row and an
/// `NR`-column panel, into the `rows × cols` of a tile (`c`'s rows `ldc` apart).
unsafe fn tile<T: Real>(
    kp: usize,
    a: *const T,
    b: *const T,
    c: *mut T,
    (ldc, rows, cols): (usize, usize, usize),
    continues: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if size_of::<T>() == 4 && super::gemm16::fma_tiles() {
        use super::gemm16::kernel::{tile_fma, F32};
        let (a, b, c) = (a as *const u32, b as *const u32, c as *mut u8);
        if continues {
            tile_fma::<F32, true>(kp, a, b, c, ldc, rows, cols);
        } else {
            tile_fma::<F32, false>(kp, a, b, c, ldc, rows, cols);
        }
        return;
    }
    let mut acc = [[T::ZERO; NR]; MR];
    if continues {
        for (r, row) in acc.iter_mut().enumerate().take(rows) {
            for (j, v) in row.iter_mut().enumerate().take(cols) {
                *v = *c.add(r * ldc + j);
            }
        }
    }
    for q in 0..kp {
        let (aq, bq) = (a.add(q * MR), b.add(q * NR));
        for (r, row) in acc.iter_mut().enumerate() {
            let x = *aq.add(r);
            for (j, v) in row.iter_mut().enumerate() {
                *v = *v + x * *bq.add(j);
            }
        }
    }
    for (r, row) in acc.iter().enumerate().take(rows) {
        for (j, v) in row.iter().enumerate().take(cols) {
            *c.add(r * ldc + j) = *v;
        }
    }
}

/// Element offset of `t[lead, pos.., ..]` along its leading and spatial axes.
fn offset(t: &Operand, lead: usize, pos: &[usize]) -> i64 {
    lead as i64 * t.strides[0]
        + pos
            .iter()
            .enumerate()
            .map(|(d, &i)| i as i64 * t.strides[1 + d])
            .sum::<i64>()
}

/// Advances a row-major multi-index of `shape` by one.
fn step(shape: &[usize], idx: &mut [usize]) {
    for d in (0..shape.len()).rev() {
        idx[d] += 1;
        if idx[d] < shape[d] {
            return;
        }
        idx[d] = 0;
    }
}

/// Calls `f(q, n, o)` for each pixel `q` of `pixels`, flat over `[N, out..]`: its batch
/// index `n` and output position `o` (`o` is the caller's buffer of `out.len()`), in order.
fn each_pixel(
    out: &[usize],
    pixels: std::ops::Range<usize>,
    o: &mut [usize],
    mut f: impl FnMut(usize, usize, &[usize]),
) {
    let ovol = shape::numel(out).max(1);
    shape::unflatten(pixels.start % ovol, out, o);
    let mut n = pixels.start / ovol;
    for q in pixels {
        f(q, n, o);
        step(out, o);
        if o.iter().all(|&i| i == 0) {
            n += 1;
        }
    }
}

/// Calls `f(q, n, pos, run)` for each run of `pixels` (flat over `[N, out..]`) along the
/// last axis, in order: its first pixel `q`, batch index `n` and position `pos` (the
/// caller's buffer of `out.len()`), and its length (one image row of a 2-D convolution, or
/// the part of it in the range). One unflatten per call, not the integer divisions of one
/// per pixel.
fn each_run(
    out: &[usize],
    pixels: std::ops::Range<usize>,
    pos: &mut [usize],
    mut f: impl FnMut(usize, usize, &[usize], usize),
) {
    let space = shape::numel(out).max(1);
    let mut n = pixels.start / space;
    shape::unflatten(pixels.start % space, out, pos);
    let (len, last) = (*out.last().expect("a spatial axis"), out.len() - 1);
    let mut q = pixels.start;
    while q < pixels.end {
        let run = (len - pos[last]).min(pixels.end - q);
        f(q, n, pos, run);
        q += run;
        // The first pixel of the next run.
        pos[last] += run - 1;
        step(out, pos);
        if pos.iter().all(|&i| i == 0) {
            n += 1;
        }
    }
}

/// Where the pixels' windows read in one operand (`x` for `conv` and its weight gradient,
/// `dy` for the input gradient): per spatial axis `d`, `tab[d][pos · K_d + k]` is the
/// element offset along that axis of the position that `pos` meets at window index `k` on
/// the other side, `NONE` where it meets none. A run of pixels along the last axis reads
/// the other axes' offsets once and the last axis' contiguously (`run_with`, the one
/// reader). Built once per call from `Problem`'s tables and the operand's strides.
struct Taps {
    lead: i64,
    window: Vec<usize>,
    tab: Vec<Vec<i64>>,
    /// The last axis' table by window index: `last[k · len + pos]` is `tab[last][pos · K +
    /// k]`, so a run of pixels along the last axis reads one window index's offsets
    /// contiguously (`run_with`).
    last: Vec<i64>,
}

impl Taps {
    /// Output pixels reading `t` (`forward`), or input pixels meeting the output `t`.
    fn of(p: &Problem, t: &Operand, forward: bool) -> Taps {
        let tables = if forward { &p.fwd } else { &p.bwd };
        let tab: Vec<Vec<i64>> = tables
            .iter()
            .enumerate()
            .map(|(d, hits)| {
                let stride = t.strides[1 + d];
                hits.iter()
                    .map(|&h| if h < 0 { NONE } else { h as i64 * stride })
                    .collect()
            })
            .collect();
        let window = p.s.window().to_vec();
        let k = *window.last().expect("a spatial axis");
        let tail: &Vec<i64> = tab.last().expect("a spatial axis");
        let len = tail.len() / k;
        let last = (0..k * len)
            .map(|i| tail[(i % len) * k + i / len])
            .collect();
        Taps {
            lead: t.strides[0],
            window,
            tab,
            last,
        }
    }

    /// `dst[kpos · stride + r]` for the `run` pixels `r` that follow the pixel at `pos` along
    /// the last axis (same batch entry and other axes), at every window position `kpos` (of
    /// per-axis indices `kidx[kpos · rank..]`): `run_at` for each. A pointer costs a load, a
    /// compare, an add and a store, where one written per pixel and position cost about 20
    /// instructions (a third of a 16-feature row's multiply-adds).
    ///
    /// # Safety
    /// As `run_at`'s, for `kvol` runs of `dst`, `stride` apart.
    #[inline(always)]
    unsafe fn pointers<T>(
        &self,
        base: *const T,
        (pos, run): (&[usize], usize),
        kidx: &[usize],
        zeros: *const u8,
        (dst, stride): (*mut *const u8, usize),
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            return self.pointers_wide(base, (pos, run), kidx, zeros, (dst, stride));
        }
        self.pointers_on(base, (pos, run), kidx, zeros, (dst, stride))
    }

    /// `pointers` compiled for AVX-512: a run's pointers are selects eight at a time (a
    /// panel's 252 pointers of a 28-row, 3×3 narrow tile cost about a fifth of its
    /// multiply-adds one at a time).
    ///
    /// # Safety
    /// As `pointers`'; AVX-512 F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw")]
    unsafe fn pointers_wide<T>(
        &self,
        base: *const T,
        (pos, run): (&[usize], usize),
        kidx: &[usize],
        zeros: *const u8,
        (dst, stride): (*mut *const u8, usize),
    ) {
        self.pointers_on(base, (pos, run), kidx, zeros, (dst, stride))
    }

    /// `pointers`, inlined into each caller so it compiles for the caller's vectors.
    ///
    /// # Safety
    /// As `pointers`'.
    #[inline(always)]
    unsafe fn pointers_on<T>(
        &self,
        base: *const T,
        (pos, run): (&[usize], usize),
        kidx: &[usize],
        zeros: *const u8,
        (dst, stride): (*mut *const u8, usize),
    ) {
        let r = pos.len();
        for (kpos, k) in kidx.chunks_exact(r).enumerate() {
            self.run_at(base, pos, run, k, zeros, dst.add(kpos * stride));
        }
    }

    /// `put(r, offset)` for the `run` pixels `r` that follow the pixel at `pos` along the
    /// last axis (same batch entry and other axes): the element offset within the batch
    /// entry that each reads at the window position of per-axis indices `k`, `NONE` where it
    /// reads none. The one reader of the tables: the other axes' offsets once per run, the
    /// last axis' a contiguous run of its transposed table (`last`).
    #[inline(always)]
    fn run_with(&self, pos: &[usize], run: usize, k: &[usize], mut put: impl FnMut(usize, i64)) {
        let last = pos.len() - 1;
        let mut off = 0i64;
        for d in 0..last {
            let v = self.tab[d][pos[d] * self.window[d] + k[d]];
            if v == NONE {
                return (0..run).for_each(|r| put(r, NONE));
            }
            off += v;
        }
        let len = self.last.len() / self.window[last];
        let from = k[last] * len + pos[last];
        for (r, &o) in self.last[from..from + run].iter().enumerate() {
            put(r, if o == NONE { NONE } else { off + o });
        }
    }

    /// `dst[r]` for the `run` pixels of `run_with`: the pointer into `base` (the pixels'
    /// batch entry, elements of `T`) each reads at window index `k`, `zeros` where none.
    ///
    /// # Safety
    /// `dst` valid for `run` pointers; `pos` + `run` within the last axis.
    #[inline(always)]
    unsafe fn run_at<T>(
        &self,
        base: *const T,
        pos: &[usize],
        run: usize,
        k: &[usize],
        zeros: *const u8,
        dst: *mut *const u8,
    ) {
        // A select per pointer, which vectorises where the caller enables wide vectors
        // (`pointers_wide`).
        self.run_with(pos, run, k, |r, off| {
            *dst.add(r) = if off == NONE {
                zeros
            } else {
                base.wrapping_offset(off as isize) as *const u8
            };
        });
    }
}

/// For each row of row panel `panel` (pixels of the output for `conv`, of the input for
/// `conv_input_grad`) and each window position, `set(row, k, offset)`: the element offset
/// of the pixel it reads (feature 0), or `NONE`.
fn row_offsets(p: &Problem, taps: &Taps, panel: usize, mut set: impl FnMut(usize, usize, i64)) {
    let rows = (p.m - panel * p.mr).min(p.mr);
    let lead_shape = if p.role == ConvRole::Output {
        p.s.output()
    } else {
        p.s.input()
    };
    let (mut stack, mut heap) = ([0usize; STACK_RANK], Vec::new());
    let first = panel * p.mr;
    let pos = position(p, &mut stack, &mut heap);
    let r = pos.len();
    each_run(lead_shape, first..first + rows, pos, |q, n, pos, run| {
        let batch = n as i64 * taps.lead;
        for (kpos, k) in p.kidx.chunks_exact(r).enumerate() {
            taps.run_with(pos, run, k, |i, off| {
                set(
                    q - first + i,
                    kpos,
                    if off == NONE { NONE } else { batch + off },
                )
            });
        }
    });
}

/// Spatial axes whose position a panel's walk keeps on the stack.
const STACK_RANK: usize = 4;

/// A position buffer of the problem's rank: `stack` where it fits, else `heap`.
fn position<'a>(
    p: &Problem,
    stack: &'a mut [usize; STACK_RANK],
    heap: &'a mut Vec<usize>,
) -> &'a mut [usize] {
    let r = p.s.rank();
    if r <= STACK_RANK {
        &mut stack[..r]
    } else {
        heap.resize(r, 0);
        heap
    }
}

/// Values in [-1, 1) from a fixed xorshift stream, for the tests of the convolution paths.
#[cfg(test)]
fn test_values() -> impl FnMut() -> f32 {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// Whether every element of the kernel `w` (f32, bf16 or f16) is finite: where its map is a
/// permutation of a dense buffer (any layout of a contiguous kernel), one scan of the
/// buffer (vectorised for f32); element by element otherwise.
///
/// # Safety
/// `w`'s map stays inside its buffer.
unsafe fn finite(w: &Operand) -> bool {
    use super::attention::Float;
    // The exponent bits of a 16-bit type (all ones: infinite or NaN).
    let exponent = match w.dtype {
        DType::BF16 => Some(0x7f80u16),
        DType::F16 => Some(0x7c00u16),
        _ => None,
    };
    let at = |i: i64| match exponent {
        Some(e) => *(w.ptr as *const u16).offset(i as isize) & e != e,
        None => (*(w.ptr as *const f32).offset(i as isize)).is_finite(),
    };
    let numel = shape::numel(w.shape);
    let mut dims: Vec<(i64, usize)> = (w.strides.iter().copied())
        .zip(w.shape.iter().copied())
        .filter(|&(_, n)| n != 1)
        .collect();
    dims.sort_unstable();
    let mut dense = 1i64;
    let permuted = dims.iter().all(|&(s, n)| {
        let ok = s == dense;
        dense *= n as i64;
        ok
    });
    if permuted {
        return match exponent {
            Some(_) => (0..numel as i64).all(at),
            None => {
                let all = std::slice::from_raw_parts(w.ptr as *const f32, numel);
                f32::largest_magnitude(all).is_finite()
            }
        };
    }
    let mut idx = vec![0usize; w.shape.len()];
    for _ in 0..numel {
        if !at(idx.iter().zip(w.strides).map(|(&i, &s)| i as i64 * s).sum()) {
            return false;
        }
        step(w.shape, &mut idx);
    }
    true
}

/// Reads element `at` of an operand of the compute type, or of a 16-bit type (widened).
#[inline(always)]
unsafe fn load<T: Real>(t: &Operand, at: i64) -> T {
    match t.dtype {
        DType::BF16 | DType::F16 => {
            let bits = *(t.ptr as *const u16).offset(at as isize);
            T::from_f32(super::gemm16::widen(t.dtype, bits))
        }
        _ => *(t.ptr as *const T).offset(at as isize),
    }
}

/// Packs column panel `j` of block `q0..q1` of `b` for group `g`: `dst[(q − q0)·NR + l]`
/// is `b[q, j·NR + l]`, zero past `ncol`.
#[allow(clippy::too_many_arguments)]
unsafe fn pack_b<T: Real>(
    p: &Problem,
    b: &Operand,
    g: usize,
    j: usize,
    (q0, q1): (usize, usize),
    dst: *mut T,
) {
    let r = p.s.rank();
    let lanes = (p.ncol - j * NR).min(NR);
    match p.role {
        // b[(k, c), f] = w[k, c, g·Fg + f] and b[(k, f), c] = w[k, c, g·Fg + f].
        ConvRole::Output | ConvRole::Input => {
            let w = b;
            let inner = if p.role == ConvRole::Output {
                p.cg
            } else {
                p.fg
            };
            let (sc, sf) = (w.strides[r], w.strides[r + 1]);
            for q in q0..q1 {
                let (kpos, ch) = (q / inner, q % inner);
                let k = &p.kidx[kpos * r..(kpos + 1) * r];
                let kbase: i64 = k.iter().zip(w.strides).map(|(&i, &s)| i as i64 * s).sum();
                let row = dst.add((q - q0) * NR);
                if p.role == ConvRole::Output && sf == 1 && !w.dtype.is_half() {
                    // A run of the kernel's output features: copied.
                    let at = kbase + ch as i64 * sc + (g * p.fg + j * NR) as i64;
                    let src = (w.ptr as *const T).offset(at as isize);
                    std::ptr::copy_nonoverlapping(src, row, lanes);
                    for l in lanes..NR {
                        *row.add(l) = T::ZERO;
                    }
                    continue;
                }
                for l in 0..NR {
                    *row.add(l) = if l >= lanes {
                        T::ZERO
                    } else {
                        let col = j * NR + l;
                        let (c, f) = if p.role == ConvRole::Output {
                            (ch, g * p.fg + col)
                        } else {
                            (col, g * p.fg + ch)
                        };
                        load(w, kbase + c as i64 * sc + f as i64 * sf)
                    };
                }
            }
        }
        // b[(n, o), f] = dy[n, o, g·Fg + f].
        ConvRole::Weight => {
            let dy = b;
            let out = p.s.output();
            let mut o = vec![0usize; r];
            let sf = dy.strides[r + 1];
            each_pixel(out, q0..q1, &mut o, |q, n, o| {
                let base = offset(dy, n, o);
                let row = dst.add((q - q0) * NR);
                for l in 0..NR {
                    *row.add(l) = if l >= lanes {
                        T::ZERO
                    } else {
                        load(dy, base + (g * p.fg + j * NR + l) as i64 * sf)
                    };
                }
            });
        }
    }
}

/// Packs row panel `panel` of block `q0..q1` of `a` for group `g`: `dst[(q − q0)·MR + r]`
/// is `a[panel·MR + r, q]`, zero past `m` and where the window reads no element.
#[allow(clippy::too_many_arguments)]
unsafe fn pack_a<T: Real>(
    p: &Problem,
    ptrs: &Ptrs,
    g: usize,
    panel: usize,
    (q0, q1): (usize, usize),
    dst: *mut T,
    offs: *mut i64,
) {
    let r = p.s.rank();
    let rows = (p.m - panel * MR).min(MR);
    let kb = q1 - q0;
    // Rows past `m` stay zero.
    if rows < MR {
        for q in 0..kb {
            for row in rows..MR {
                *dst.add(q * MR + row) = T::ZERO;
            }
        }
    }
    match p.role {
        // a[(n, o), (k, c)] = x[n, src(o, k), g·Cg + c]; a[(n, i), (k, f)] = dy[n, dst(i, k), g·Fg + f].
        ConvRole::Output | ConvRole::Input => {
            let t = ptrs.a;
            let ch_base = g * p.inner;
            let sc = t.strides[r + 1];
            let inner = p.inner;
            row_offsets(p, ptrs.taps, panel, |row, kpos, off| {
                *offs.add(row * p.kvol + kpos) = off;
            });
            let (mut kpos, mut ch) = (q0 / inner, q0 % inner);
            for q in 0..kb {
                let col = dst.add(q * MR);
                let c_off = (ch_base + ch) as i64 * sc;
                for row in 0..rows {
                    let o = *offs.add(row * p.kvol + kpos);
                    *col.add(row) = if o == NONE {
                        T::ZERO
                    } else {
                        load(t, o + c_off)
                    };
                }
                ch += 1;
                if ch == inner {
                    ch = 0;
                    kpos += 1;
                }
            }
        }
        // a[(k, c), (n, o)] = x[n, src(o, k), g·Cg + c].
        ConvRole::Weight => {
            let x = ptrs.a;
            let out = p.s.output();
            let sc = x.strides[r + 1];
            let mut pos = vec![0usize; r];
            let mut done = None;
            for row in 0..rows {
                let flat = panel * MR + row;
                let (kpos, c) = (flat / p.cg, flat % p.cg);
                if done != Some(kpos) {
                    // The input offset each pixel of the block reads at this window position.
                    let k = &p.kidx[kpos * r..(kpos + 1) * r];
                    let taps = ptrs.taps;
                    each_run(out, q0..q1, &mut pos, |q, n, o, run| {
                        let batch = n as i64 * taps.lead;
                        taps.run_with(o, run, k, |i, off| {
                            *offs.add(q - q0 + i) = if off == NONE { NONE } else { batch + off };
                        });
                    });
                    done = Some(kpos);
                }
                let c_off = (g * p.cg + c) as i64 * sc;
                for q in 0..kb {
                    let o = *offs.add(q);
                    *dst.add(q * MR + row) = if o == NONE {
                        T::ZERO
                    } else {
                        load(x, o + c_off)
                    };
                }
            }
        }
    }
}

/// The pointer each row of row panel `panel` of group `g` reads at each window position,
/// `ptrs[k · mr + r]`: its run of features in `a`'s operand (`x` for `conv`, `dy` for
/// `conv_input_grad`), or `zeros` where the window position reads nothing (and for rows
/// past the panel's). The panel's rows are the `panel`-th `mr` of `m`, or of a class where
/// `classes` groups them; then `c_rows[r]` is where row `r`'s result starts in `c` (group
/// `g`'s first column). Returns the panel's rows.
///
/// # Safety
/// As `pack_a`'s; `ptrs` holds `mr · kvol` pointers, `c_rows` `mr`.
unsafe fn row_pointers<T: Real>(
    p: &Problem,
    ptrs: &Ptrs,
    (g, panel): (usize, usize),
    (out, zeros): (*mut i64, *mut u8),
    classes: Option<(&classes::Panel, *mut *mut T)>,
) -> usize {
    let (t, taps) = (ptrs.a, ptrs.taps);
    let mr = p.mr;
    let ch_base = (g * p.inner) as i64 * t.strides[p.s.rank() + 1];
    let base = (t.ptr as *const T).wrapping_offset(ch_base as isize);
    let out = out as *mut *const u8;
    let zeros = zeros as *const u8;
    let lead_shape = if p.role == ConvRole::Output {
        p.s.output()
    } else {
        p.s.input()
    };
    let (mut stack, mut heap) = ([0usize; STACK_RANK], Vec::new());
    let pos = position(p, &mut stack, &mut heap);
    let each = |row: usize, n: usize, pos: &[usize], run: usize| {
        let at = base.wrapping_offset((n as i64 * taps.lead) as isize);
        taps.pointers(at, (pos, run), &p.kidx, zeros, (out.add(row), mr));
    };
    let rows = match classes {
        None => {
            let (first, rows) = (panel * mr, (p.m - panel * mr).min(mr));
            each_run(lead_shape, first..first + rows, pos, |q, n, pos, run| {
                each(q - first, n, pos, run)
            });
            rows
        }
        Some((panel, c_rows)) => {
            // `c`'s rows: the pixel's flat index over `[N, lead..]`, `ldc` apart.
            let (ldc, col_base) = match p.role {
                ConvRole::Input => (p.s.in_channels(), p.cg),
                _ => (p.s.out_channels(), p.fg),
            };
            let c = (ptrs.c as *mut T).add(g * col_base);
            let space = shape::numel(lead_shape);
            panel.each_run(pos, |row, n, pos, run| {
                each(row, n, pos, run);
                let first = c.add((n * space + shape::flatten(pos, lead_shape)) * ldc);
                for i in 0..run {
                    *c_rows.add(row + i) = first.add(i * ldc);
                }
            });
            panel.rows
        }
    };
    for kpos in 0..p.kvol {
        for row in rows..mr {
            *out.add(kpos * mr + row) = zeros;
        }
    }
    rows
}

/// The tile of an indirect product (XNNPACK's "indirect GEMM"): the rows of `a` are read
/// where they lie, through one pointer per row and window position, never packed.
#[cfg(target_arch = "x86_64")]
mod indirect {
    use super::super::gemm16::kernel::lanes;
    use super::NR;
    use std::arch::x86_64::*;

    /// `c[r, j] (+)= Σ_k Σ_ch rows[k·R + r][ch] · b[(k·inner + ch)·NR + j]` (`c`'s rows
    /// where `Rows` puts them) for the `rows × cols` of a tile of `R` rows and `V` vectors
    /// (`cols ≤ 16·V`) over the window positions `ks` lists (ascending), `inner` steps each
    /// (f32 FMAs in order of the steps, continuing `c`'s sums where `continues`): over
    /// `Every` position, the same sums, in the same order, as `gemm16::kernel::tile_fma` on
    /// the packed panel. Where `dot`, a step is a pair of bf16 values in each row and in
    /// each lane of `b`, multiplied and added on `vdpbf16ps` (`pairs`).
    ///
    /// # Safety
    /// AVX-512 F, BW and VL (and BF16 where `dot`); each pointer valid for `inner` values
    /// (f32, or pairs of bf16); `b` holds `inner` steps of `NR` for each listed position; `c`
    /// valid for the tile.
    #[inline(always)]
    pub unsafe fn tile<const V: usize, const R: usize, C: Rows, K: Positions>(
        dot: bool,
        rows_at: *const *const f32,
        b: *const f32,
        c: C,
        shape: (K, usize, usize, usize),
        continues: bool,
    ) {
        if dot {
            tile_dot::<V, R, C, K>(rows_at, b, c, shape, continues)
        } else {
            tile_fma::<V, R, C, K>(rows_at, b, c, shape, continues)
        }
    }

    /// `tile`'s body with `$step(acc, row value, b vector)` the multiply-add of one step,
    /// `$broadcast(p)` a row's value at `p` in every lane.
    macro_rules! indirect_tile {
        ($(#[$attr:meta])* $name:ident, |$p:ident| $broadcast:expr,
            |$a:ident, $x:ident, $b:ident| $step:expr) => {
            $(#[$attr])*
            unsafe fn $name<const V: usize, const R: usize, C: Rows, K: Positions>(
                rows_at: *const *const f32,
                b: *const f32,
                c: C,
                (ks, inner, rows, cols): (K, usize, usize, usize),
                continues: bool,
            ) {
                let mask = [lanes(cols.min(16)), lanes(cols.saturating_sub(16))];
                let mut acc = [[_mm512_setzero_ps(); V]; R];
                if continues {
                    for (r, row) in acc.iter_mut().enumerate().take(rows) {
                        for (v, a) in row.iter_mut().enumerate() {
                            *a = _mm512_maskz_loadu_ps(mask[v], c.at(r).add(16 * v));
                        }
                    }
                }
                for i in 0..ks.len() {
                    let k = ks.at(i);
                    let p: [*const f32; R] = *(rows_at.add(k * R) as *const [*const f32; R]);
                    let mut b = b.add(k * inner * NR);
                    for ch in 0..inner {
                        let mut bv = [_mm512_setzero_ps(); V];
                        for (v, bv) in bv.iter_mut().enumerate() {
                            *bv = _mm512_loadu_ps(b.add(16 * v));
                        }
                        for (r, row) in acc.iter_mut().enumerate() {
                            let x = {
                                let $p = p[r].add(ch);
                                $broadcast
                            };
                            for (a, bv) in row.iter_mut().zip(&bv) {
                                *a = {
                                    let ($a, $x, $b) = (*a, x, *bv);
                                    $step
                                };
                            }
                        }
                        b = b.add(NR);
                    }
                }
                for (r, row) in acc.iter().enumerate().take(rows) {
                    for (v, a) in row.iter().enumerate() {
                        _mm512_mask_storeu_ps(c.at(r).add(16 * v), mask[v], *a);
                    }
                }
            }
        };
    }

    indirect_tile!(
        #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
        tile_fma,
        |p| _mm512_set1_ps(*p),
        |a, x, b| _mm512_fmadd_ps(x, b, a)
    );

    indirect_tile!(
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
        tile_dot,
        // (A pair's 32 bits, not necessarily aligned to 4 bytes: `pairs` views 16-bit
        // operands.)
        |p| _mm512_castsi512_ps(_mm512_set1_epi32((p as *const i32).read_unaligned())),
        |a, x, b| _mm512_dpbf16_ps(
            a,
            std::mem::transmute::<__m512, __m512bh>(x),
            std::mem::transmute::<__m512, __m512bh>(b)
        )
    );

    /// The window positions a tile runs.
    pub trait Positions: Copy {
        fn len(self) -> usize;
        /// The `i`-th position, counted from the block's first.
        fn at(self, i: usize) -> usize;
    }

    /// Every position of the block: `0..n`.
    #[derive(Clone, Copy)]
    pub struct Every(pub usize);
    impl Positions for Every {
        #[inline(always)]
        fn len(self) -> usize {
            self.0
        }
        #[inline(always)]
        fn at(self, i: usize) -> usize {
            i
        }
    }

    /// The positions listed (ascending), of a block starting at the second field.
    #[derive(Clone, Copy)]
    pub struct Listed<'a>(pub &'a [usize], pub usize);
    impl Positions for Listed<'_> {
        #[inline(always)]
        fn len(self) -> usize {
            self.0.len()
        }
        #[inline(always)]
        fn at(self, i: usize) -> usize {
            self.0[i] - self.1
        }
    }

    /// Where a tile's rows of `c` lie.
    pub trait Rows: Copy {
        /// Row `r`'s first element.
        ///
        /// # Safety
        /// `r` is a row of the tile.
        unsafe fn at(self, r: usize) -> *mut f32;
    }

    /// Rows `ldc` elements apart from `c`.
    #[derive(Clone, Copy)]
    pub struct Strided(pub *mut f32, pub usize);
    impl Rows for Strided {
        #[inline(always)]
        unsafe fn at(self, r: usize) -> *mut f32 {
            self.0.add(r * self.1)
        }
    }

    /// A pointer per row, each offset by a column.
    #[derive(Clone, Copy)]
    pub struct Scattered(pub *const *mut f32, pub usize);
    impl Rows for Scattered {
        #[inline(always)]
        unsafe fn at(self, r: usize) -> *mut f32 {
            (*self.0.add(r)).add(self.1)
        }
    }
}

/// The tile of the direct weight gradient (`WeightGrad`).
#[cfg(target_arch = "x86_64")]
mod weight_tile {
    use super::acc;
    use std::arch::x86_64::*;

    /// Where a tile reads and writes: `len` pixels; `dy`'s features from `f0`, `x`'s from
    /// `c0`; `c`'s rows `ldc` apart, the first `skip` not stored, `cols` columns; whether
    /// the sums continue those in `c`.
    pub struct Shape {
        pub len: usize,
        pub f0: usize,
        pub c0: usize,
        pub ldc: usize,
        pub skip: usize,
        pub cols: usize,
        pub continues: bool,
    }

    /// Runs the tile of `v` vectors by `rows` rows (each count its own code: the
    /// accumulators are registers).
    ///
    /// # Safety
    /// As `tile`'s.
    pub unsafe fn run(
        v: usize,
        rows: usize,
        dyp: *const *const f32,
        xp: *const *const f32,
        c: *mut f32,
        s: Shape,
    ) {
        by_tile_rows!(v, rows, tile(dyp, xp, c, s))
    }

    /// `c[r, j] (+)= Σ_q dy[q][f0 + r] · x[q][c0 + j]` for the `R × cols` of a tile over
    /// `len` pixels, where `dy[q]` and `x[q]` are the rows `dyp[q]` and `xp[q]` point at (a
    /// pixel reading no input points at zeros): f32 FMAs in order of the pixels,
    /// continuing `c`'s sums where `continues`. Rows below `skip` are not stored.
    ///
    /// # Safety
    /// AVX-512 F, BW and VL; every row valid for the features read (`f0 + R`, `c0 +
    /// cols`); `c` valid for the tile.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn tile<const V: usize, const R: usize>(
        dyp: *const *const f32,
        xp: *const *const f32,
        c: *mut f32,
        s: Shape,
    ) {
        let mask = acc::masks(s.cols);
        let mut acc = acc::start::<V, R>(s.continues, c, s.ldc, s.skip, mask);
        for q in 0..s.len {
            let xq = (*xp.add(q)).add(s.c0);
            let mut b = [_mm512_setzero_ps(); V];
            for (v, b) in b.iter_mut().enumerate() {
                *b = _mm512_maskz_loadu_ps(mask[v], xq.add(16 * v));
            }
            let d = (*dyp.add(q)).add(s.f0);
            for (r, row) in acc.iter_mut().enumerate() {
                let x = _mm512_set1_ps(*d.add(r));
                for (a, b) in row.iter_mut().zip(&b) {
                    *a = _mm512_fmadd_ps(x, *b, *a);
                }
            }
        }
        acc::store(&acc, c, s.ldc, s.skip, mask);
    }

    /// `run` on pairs of pixels of bf16 operands (`pair_tile`): `dy`'s pairs packed in rows
    /// of `ldd` words (`dy_pairs`), `x`'s rows through `xp` (`len` rounded up to even).
    ///
    /// # Safety
    /// As `pair_tile`'s.
    pub unsafe fn run_pairs(
        v: usize,
        rows: usize,
        dy_pairs: (*const u32, usize),
        xp: *const *const u16,
        c: *mut f32,
        s: Shape,
    ) {
        by_tile_rows!(v, rows, pair_tile(dy_pairs, xp, c, s))
    }

    /// `tile` with each step a pair of pixels `2p`, `2p + 1` on `vdpbf16ps`: `c[r, j] (+)=
    /// Σ_p dy[2p][f0 + r] · x[2p][c0 + j] + dy[2p + 1][f0 + r] · x[2p + 1][c0 + j]`, the
    /// pair of `dy` broadcast from its packed word, the two rows of `x` interleaved (word
    /// `2j` from the first pixel, `2j + 1` from the second).
    ///
    /// # Safety
    /// AVX-512 F, BW, VL and BF16; `len.div_ceil(2)` packed rows of `dy` and as many pairs of
    /// rows of `x`, valid for the features read; `c` valid for the tile.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    unsafe fn pair_tile<const V: usize, const R: usize>(
        (dy, ldd): (*const u32, usize),
        xp: *const *const u16,
        c: *mut f32,
        s: Shape,
    ) {
        let mask = acc::masks(s.cols);
        let mut acc = acc::start::<V, R>(s.continues, c, s.ldc, s.skip, mask);
        let mut order = [0i16; 32];
        for l in 0..16 {
            order[2 * l] = l as i16;
            order[2 * l + 1] = 16 + l as i16;
        }
        let order = _mm512_loadu_si512(order.as_ptr() as *const _);
        for pair in 0..s.len.div_ceil(2) {
            let (x0, x1) = (*xp.add(2 * pair), *xp.add(2 * pair + 1));
            let mut b = [_mm512_setzero_ps(); V];
            for (v, b) in b.iter_mut().enumerate() {
                let at = s.c0 + 16 * v;
                let lo = _mm256_maskz_loadu_epi16(mask[v], x0.add(at) as *const i16);
                let hi = _mm256_maskz_loadu_epi16(mask[v], x1.add(at) as *const i16);
                let both = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
                *b = _mm512_castsi512_ps(_mm512_permutexvar_epi16(order, both));
            }
            let d = dy.add(pair * ldd + s.f0);
            for (r, row) in acc.iter_mut().enumerate() {
                let x: __m512bh = std::mem::transmute(_mm512_set1_epi32(*d.add(r) as i32));
                for (a, b) in row.iter_mut().zip(&b) {
                    *a = _mm512_dpbf16_ps(*a, x, std::mem::transmute::<__m512, __m512bh>(*b));
                }
            }
        }
        acc::store(&acc, c, s.ldc, s.skip, mask);
    }
}

/// The accumulators of the weight-gradient tiles (`weight_tile`, `padded`): `R` rows of `V`
/// vectors of a tile in `c` (rows `ldc` apart), the first `skip` rows not read or written.
#[cfg(target_arch = "x86_64")]
mod acc {
    use super::super::gemm16::kernel::lanes;
    use std::arch::x86_64::*;

    /// The masks of a tile's two vectors for `cols` columns.
    pub fn masks(cols: usize) -> [__mmask16; 2] {
        [lanes(cols.min(16)), lanes(cols.saturating_sub(16))]
    }

    /// The accumulators where a sum starts: zero, or the tile in `c` where it continues.
    ///
    /// # Safety
    /// AVX-512 F; `c` valid for the tile's rows from `skip`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn start<const V: usize, const R: usize>(
        continues: bool,
        c: *const f32,
        ldc: usize,
        skip: usize,
        mask: [__mmask16; 2],
    ) -> [[__m512; V]; R] {
        let mut acc = [[_mm512_setzero_ps(); V]; R];
        if continues {
            for (r, row) in acc.iter_mut().enumerate().skip(skip) {
                for (v, a) in row.iter_mut().enumerate() {
                    *a = _mm512_maskz_loadu_ps(mask[v], c.add(r * ldc + 16 * v));
                }
            }
        }
        acc
    }

    /// Stores the accumulators' rows from `skip`.
    ///
    /// # Safety
    /// AVX-512 F; `c` valid for the tile's rows from `skip`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn store<const V: usize, const R: usize>(
        acc: &[[__m512; V]; R],
        c: *mut f32,
        ldc: usize,
        skip: usize,
        mask: [__mmask16; 2],
    ) {
        for (r, row) in acc.iter().enumerate().skip(skip) {
            for (v, a) in row.iter().enumerate() {
                _mm512_mask_storeu_ps(c.add(r * ldc + 16 * v), mask[v], *a);
            }
        }
    }
}
