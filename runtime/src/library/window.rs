//! The windowed reductions (`ir::window`) as library steps: each computes what
//! `interp::window` computes, bit for bit (the same winners, sums in f64 in the same
//! order, one rounding), on operands read in place through their strides.
//!
//! A pool's trailing feature axis (window 1, stride 1, no padding) is run as a block: a
//! window position is one row of the input, and the block's lanes are reduced together
//! (vectorised over the contiguous features). Outputs are split across the cores by rows,
//! each element written by one thread, so results do not depend on the thread count.
//! `window_max_scatter` first records each window's winner per lane (the window position,
//! 4 bytes of scratch per element of the window grid), then gathers: every input element
//! sums the cotangents of the windows it wins, in ascending order of the window. Where no
//! two windows overlap (the usual pools) it writes each window's rows directly instead.

mod lanes;

use super::ops::{par_for, Operand};
use crate::ir::window::beats;
use crate::ir::{WindowRole, WindowSpec};
use crate::{shape, DType, Error};

/// The scratch a step needs: `window_max_scatter`'s winners.
pub fn scratch_bytes(spec: &WindowSpec, in_shapes: &[&[usize]]) -> usize {
    match spec.role {
        WindowRole::MaxScatter => shape::numel(in_shapes[1]) * 4,
        _ => 0,
    }
}

/// "No winner": a window of padding only.
const NONE: u32 = u32::MAX;

/// Runs `spec` on `ins`, writing its contiguous result of `out_shape` to `out`.
///
/// # Safety
/// The operands' maps stay inside their buffers, `out` holds `out_shape` elements of
/// `dtype` and `scratch` `scratch_bytes` bytes, none overlapping.
pub unsafe fn run(
    spec: &WindowSpec,
    ins: &[Operand],
    out_shape: &[usize],
    dtype: DType,
    out: *mut u8,
    scratch: *mut u8,
) -> Result<(), Error> {
    if shape::numel(&spec.window) >= u16::MAX as usize {
        return Err(Error::verify(format!(
            "`{}`: a window of {:?} has more positions than the kernel numbers",
            spec.role.name(),
            spec.window
        )));
    }
    match dtype {
        DType::F32 => go::<f32>(spec, ins, out_shape, out, scratch),
        DType::F64 => go::<f64>(spec, ins, out_shape, out, scratch),
        DType::BF16 => go::<half::bf16>(spec, ins, out_shape, out, scratch),
        DType::F16 => go::<half::f16>(spec, ins, out_shape, out, scratch),
        _ => {
            return Err(Error::verify(format!(
                "`{}` on {dtype} is not a library step",
                spec.role.name()
            )))
        }
    }
    Ok(())
}

/// An element type: read as f64 for sums, compared for maxima, written rounded once.
trait Elem: Copy + Send + Sync + 'static {
    const NEG_INFINITY: Self;
    const ZERO: Self;
    fn widen(self) -> f64;
    fn from_f64(v: f64) -> Self;
    fn beats(self, best: Self) -> bool {
        beats(self.widen(), best.widen())
    }
}
impl Elem for f32 {
    const NEG_INFINITY: f32 = f32::NEG_INFINITY;
    const ZERO: f32 = 0.0;
    fn widen(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    #[inline(always)]
    fn beats(self, best: f32) -> bool {
        self > best || (self.is_nan() && !best.is_nan())
    }
}
impl Elem for f64 {
    const NEG_INFINITY: f64 = f64::NEG_INFINITY;
    const ZERO: f64 = 0.0;
    fn widen(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> f64 {
        v
    }
}
impl Elem for half::bf16 {
    const NEG_INFINITY: half::bf16 = half::bf16::NEG_INFINITY;
    const ZERO: half::bf16 = half::bf16::ZERO;
    fn widen(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(v: f64) -> half::bf16 {
        crate::dtype::bf16_of(v)
    }
}
impl Elem for half::f16 {
    const NEG_INFINITY: half::f16 = half::f16::NEG_INFINITY;
    const ZERO: half::f16 = half::f16::ZERO;
    fn widen(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(v: f64) -> half::f16 {
        crate::dtype::f16_of(v)
    }
}

/// The window grid walked row by row: the axes before the block one by one, the block's
/// lanes together. The per-axis maps between window and input positions are tables built
/// once (a row costs lookups, not divisions).
struct Geometry<'a> {
    spec: &'a WindowSpec,
    x: Vec<usize>,
    y: Vec<usize>,
    /// Axes walked one by one (the rank, or one less with a block).
    outer: usize,
    /// Lanes reduced together (the trailing axis' length, or 1).
    block: usize,
    /// Each window position's multi-index over the walked axes, in row-major order.
    jpos: Vec<[usize; 8]>,
    /// Per walked axis `d`: `src[d][o·k + j]` the input position window position `j` of
    /// output position `o` reads, or −1 (padding).
    src: Vec<Vec<i32>>,
    /// Per walked axis `d`: `dst[d][i·k + j]` the output position whose window position `j`
    /// reads input position `i`, or −1.
    dst: Vec<Vec<i32>>,
}

impl<'a> Geometry<'a> {
    fn new(spec: &'a WindowSpec, x: &[usize]) -> Geometry<'a> {
        let r = x.len();
        let y = spec.output_shape(x).expect("verified window op");
        let blocked = r > 0
            && spec.window[r - 1] == 1
            && spec.strides[r - 1] == 1
            && spec.padding[r - 1] == (0, 0);
        let (outer, block) = if blocked { (r - 1, x[r - 1]) } else { (r, 1) };
        let win = &spec.window[..outer];
        let jpos = (0..shape::numel(win))
            .map(|p| {
                let mut j = [0usize; 8];
                shape::unflatten(p, win, &mut j[..outer]);
                j
            })
            .collect();
        let table = |len: usize, d: usize, f: &dyn Fn(usize, usize) -> Option<usize>| {
            let k = spec.window[d];
            (0..len * k)
                .map(|q| f(q / k, q % k).map_or(-1, |v| v as i32))
                .collect::<Vec<i32>>()
        };
        let src = (0..outer)
            .map(|d| table(y[d], d, &|o, j| spec.source(d, o, j, x[d])))
            .collect();
        let dst = (0..outer)
            .map(|d| table(x[d], d, &|i, j| spec.target(d, i, j, y[d])))
            .collect();
        Geometry {
            spec,
            x: x.to_vec(),
            y,
            outer,
            block,
            jpos,
            src,
            dst,
        }
    }

    fn y_rows(&self) -> usize {
        shape::numel(&self.y[..self.outer])
    }

    fn x_rows(&self) -> usize {
        shape::numel(&self.x[..self.outer])
    }

    /// The grid row `o` (a multi-index over the walked axes)'s real window positions, in
    /// row-major window order: `(position, offset of the input row under strides xs)`.
    fn sources(&self, o: &[usize], xs: &[i64], real: &mut Vec<(u16, i64)>) {
        real.clear();
        'window: for (p, j) in self.jpos.iter().enumerate() {
            let mut at = 0i64;
            for d in 0..self.outer {
                let i = self.src[d][o[d] * self.spec.window[d] + j[d]];
                if i < 0 {
                    continue 'window;
                }
                at += i as i64 * xs[d];
            }
            real.push((p as u16, at));
        }
    }

    /// The windows covering input row `i` (a multi-index), in ascending order of the
    /// window: `(window position, flat row of the grid, offset of that row under ys)`.
    fn targets(&self, i: &[usize], ys: &[i64], hits: &mut Vec<(u16, usize, i64)>) {
        hits.clear();
        // Descending window positions give ascending windows (`ir::window`).
        'window: for (p, j) in self.jpos.iter().enumerate().rev() {
            let (mut flat, mut at) = (0usize, 0i64);
            for d in 0..self.outer {
                let o = self.dst[d][i[d] * self.spec.window[d] + j[d]];
                if o < 0 {
                    continue 'window;
                }
                flat = flat * self.y[d] + o as usize;
                at += o as i64 * ys[d];
            }
            hits.push((p as u16, flat, at));
        }
    }

    /// Whether no two windows share an input row: strides at least the window on every
    /// walked axis (the usual pools).
    fn disjoint(&self) -> bool {
        (0..self.outer).all(|d| self.spec.strides[d] >= self.spec.window[d])
    }

    /// Whether every input row lies in some window.
    fn covered(&self) -> bool {
        (0..self.outer).all(|d| {
            let k = self.spec.window[d];
            self.dst[d]
                .chunks(k)
                .all(|hits| hits.iter().any(|&o| o >= 0))
        })
    }

    /// The input offset (under `ts`) window position `p` of grid row `o` reads.
    fn source_offset(&self, o: &[usize], p: u16, ts: &[i64]) -> i64 {
        let j = &self.jpos[p as usize];
        (0..self.outer)
            .map(|d| self.src[d][o[d] * self.spec.window[d] + j[d]] as i64 * ts[d])
            .sum()
    }
}

/// Rows `lo..hi` of `shape` (row-major) as multi-indices, stepped like an odometer.
fn each_row(shape: &[usize], lo: usize, hi: usize, mut f: impl FnMut(usize, &[usize])) {
    let n = shape.len();
    let mut idx = [0usize; 8];
    shape::unflatten(lo, shape, &mut idx[..n]);
    for r in lo..hi {
        f(r, &idx[..n]);
        for d in (0..n).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// A pointer shared by a parallel loop's chunks (which write disjoint rows).
#[derive(Clone, Copy)]
struct Out(*mut u8);
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

/// One row of `block` lanes of `t` at `at` (elements), copied when its lanes are strided.
///
/// # Safety
/// The row lies inside `t`'s buffer.
unsafe fn row<'b, T: Elem>(t: &Operand, at: i64, block: usize, tmp: &'b mut Vec<T>) -> &'b [T] {
    let base = (t.ptr as *const T).offset(at as isize);
    let step = t.strides.last().copied().unwrap_or(1);
    if step == 1 || block == 1 {
        std::slice::from_raw_parts(base, block)
    } else {
        tmp.clear();
        tmp.extend((0..block).map(|c| *base.offset(c as isize * step as isize)));
        tmp
    }
}

/// The per-axis strides of the walked axes (the block's stride is `row`'s business).
fn walked(t: &Operand, n: usize) -> Vec<i64> {
    t.strides[..n].to_vec()
}

unsafe fn go<T: Elem>(
    spec: &WindowSpec,
    ins: &[Operand],
    out_shape: &[usize],
    out: *mut u8,
    scratch: *mut u8,
) {
    let x_shape = match spec.role {
        WindowRole::SumTranspose => out_shape,
        _ => ins[0].shape,
    };
    let g = Geometry::new(spec, x_shape);
    assert!(g.outer <= 8, "window ops on more than 8 walked axes");
    let b = g.block;
    let bytes = shape::numel(&g.x) * std::mem::size_of::<T>() * 2;
    let out = Out(out);
    match spec.role {
        WindowRole::Max | WindowRole::Sum | WindowRole::MaxGather => {
            let xs = walked(&ins[0], g.outer);
            par_for(g.y_rows(), bytes, |lo, hi| {
                let dst = out;
                let (mut real, mut tmp) = (Vec::new(), Vec::<T>::new());
                let mut best: Vec<T> = vec![T::ZERO; b];
                let mut arg: Vec<u32> = vec![NONE; b];
                let mut sum = vec![0.0f64; b];
                let mut rows: Vec<*const u8> = Vec::new();
                let fast = lane_rows::<T>(&[&ins[0]], b);
                let ts = ins.get(1).map(|t| walked(t, g.outer));
                each_row(&g.y[..g.outer], lo, hi, |r, o| {
                    g.sources(o, &xs, &mut real);
                    let y = std::slice::from_raw_parts_mut((dst.0 as *mut T).add(r * b), b);
                    match spec.role {
                        WindowRole::Sum => {
                            sum.fill(0.0);
                            for &(_, at) in &real {
                                for (s, v) in sum.iter_mut().zip(row(&ins[0], at, b, &mut tmp)) {
                                    *s += v.widen();
                                }
                            }
                            for (y, s) in y.iter_mut().zip(&sum) {
                                *y = T::from_f64(*s);
                            }
                        }
                        WindowRole::Max => match fast {
                            Some((kind, x)) if !real.is_empty() => {
                                rows.clear();
                                rows.extend(real.iter().map(|&(_, at)| at_elem::<T>(x, at)));
                                lanes::maxima_of(kind, &rows, y.as_mut_ptr() as *mut u8, b)
                            }
                            _ => maxima(&ins[0], &real, y, &mut tmp),
                        },
                        _ => {
                            winners(&ins[0], &real, b, &mut best, &mut arg, &mut tmp);
                            {
                                // `t` at the winner: the winner's row of `t`, lane by lane.
                                let t = &ins[1];
                                let ts = ts.as_deref().expect("two operands");
                                let step = t.strides.last().copied().unwrap_or(1);
                                for (c, (y, a)) in y.iter_mut().zip(&arg).enumerate() {
                                    *y = if *a == NONE {
                                        T::ZERO
                                    } else {
                                        let at = g.source_offset(o, *a as u16, ts);
                                        *(t.ptr as *const T).offset((at + c as i64 * step) as isize)
                                    };
                                }
                            }
                        }
                    }
                });
            });
        }
        WindowRole::MaxScatter if g.disjoint() => scatter_disjoint::<T>(&g, ins, out, bytes),
        WindowRole::SumTranspose | WindowRole::MaxScatter => {
            let dy = &ins[ins.len() - 1];
            let wins = scratch as *mut u32;
            if spec.role == WindowRole::MaxScatter {
                let xs = walked(&ins[0], g.outer);
                let w = Out(scratch);
                par_for(g.y_rows(), bytes, |lo, hi| {
                    let w = w;
                    let (mut real, mut tmp) = (Vec::new(), Vec::<T>::new());
                    let mut best: Vec<T> = vec![T::ZERO; b];
                    each_row(&g.y[..g.outer], lo, hi, |r, o| {
                        g.sources(o, &xs, &mut real);
                        let arg = std::slice::from_raw_parts_mut((w.0 as *mut u32).add(r * b), b);
                        winners(&ins[0], &real, b, &mut best, arg, &mut tmp);
                    });
                });
            }
            let ys = walked(dy, g.outer);
            let wins = Out(wins as *mut u8);
            par_for(g.x_rows(), bytes, |lo, hi| {
                let (dst, wins) = (out, wins);
                let (mut hits, mut tmp) = (Vec::new(), Vec::<T>::new());
                let mut sum = vec![0.0f64; b];
                each_row(&g.x[..g.outer], lo, hi, |r, i| {
                    g.targets(i, &ys, &mut hits);
                    sum.fill(0.0);
                    for &(p, flat, at) in &hits {
                        let d = row(dy, at, b, &mut tmp);
                        if spec.role == WindowRole::SumTranspose {
                            for (s, v) in sum.iter_mut().zip(d) {
                                *s += v.widen();
                            }
                        } else {
                            let won =
                                std::slice::from_raw_parts((wins.0 as *const u32).add(flat * b), b);
                            let p = p as u32;
                            for ((s, v), w) in sum.iter_mut().zip(d).zip(won) {
                                *s = if *w == p { *s + v.widen() } else { *s };
                            }
                        }
                    }
                    let x = std::slice::from_raw_parts_mut((dst.0 as *mut T).add(r * b), b);
                    for (x, s) in x.iter_mut().zip(&sum) {
                        *x = T::from_f64(*s);
                    }
                });
            });
        }
    }
}

/// `window_max_scatter` where no two windows share an input row: each window's winners take
/// its cotangent, written straight into the rows the window reads (the winners in
/// registers, no scratch, one pass over the grid), every other element zero. The same bits
/// as the general gather: one term, `0 + dy` rounded once.
///
/// # Safety
/// As `go`'s.
unsafe fn scatter_disjoint<T: Elem>(g: &Geometry, ins: &[Operand], out: Out, bytes: usize) {
    let (x, dy) = (&ins[0], &ins[1]);
    let b = g.block;
    if !g.covered() {
        std::ptr::write_bytes(out.0 as *mut T, 0, shape::numel(&g.x));
    }
    let (xs, ys) = (walked(x, g.outer), walked(dy, g.outer));
    // The result's (contiguous) strides over the walked axes.
    let mut os = vec![b as i64; g.outer];
    for d in (0..g.outer.saturating_sub(1)).rev() {
        os[d] = os[d + 1] * g.x[d + 1] as i64;
    }
    par_for(g.y_rows(), bytes, |lo, hi| {
        let dst = out;
        let (mut real, mut places) = (Vec::new(), Vec::new());
        let (mut tmp, mut tmp_dy) = (Vec::<T>::new(), Vec::<T>::new());
        let mut best: Vec<T> = vec![T::ZERO; b];
        let mut arg: Vec<u32> = vec![NONE; b];
        let (mut rows, mut outs) = (Vec::<*const u8>::new(), Vec::<*mut u8>::new());
        let fast = lane_rows::<T>(&[x, dy], b);
        each_row(&g.y[..g.outer], lo, hi, |_, o| {
            g.sources(o, &xs, &mut real);
            g.sources(o, &os, &mut places);
            let at: i64 = o.iter().zip(&ys).map(|(&i, &s)| i as i64 * s).sum();
            if let (Some((kind, xp)), false) = (fast, real.is_empty()) {
                rows.clear();
                rows.extend(real.iter().map(|&(_, at)| at_elem::<T>(xp, at)));
                outs.clear();
                outs.extend((places.iter()).map(|&(_, off)| at_elem::<T>(dst.0, off) as *mut u8));
                let d = at_elem::<T>(dy.ptr, at);
                lanes::scatter_of(kind, &rows, &outs, d, b);
                return;
            }
            winners(x, &real, b, &mut best, &mut arg, &mut tmp);
            let d = row(dy, at, b, &mut tmp_dy);
            for &(p, off) in &places {
                let p = p as u32;
                let xr = std::slice::from_raw_parts_mut((dst.0 as *mut T).offset(off as isize), b);
                for ((xv, a), v) in xr.iter_mut().zip(&arg).zip(d) {
                    *xv = if *a == p {
                        T::from_f64(0.0 + v.widen())
                    } else {
                        T::ZERO
                    };
                }
            }
        });
    });
}

/// The lane kind of `T` and `ts[0]`'s base when the vectorised `lanes` loops take `T` (f32,
/// bf16) and every operand of `ts` has contiguous lanes.
fn lane_rows<T: Elem>(ts: &[&Operand], b: usize) -> Option<(lanes::Kind, *const u8)> {
    let contiguous = ts
        .iter()
        .all(|t| b == 1 || t.strides.last().copied().unwrap_or(1) == 1);
    let kind = lanes::Kind::of::<T>()?;
    contiguous.then_some((kind, ts[0].ptr))
}

/// Element `at` (counted in elements of `T`) from `base`.
fn at_elem<T>(base: *const u8, at: i64) -> *const u8 {
    base.wrapping_offset(at as isize * size_of::<T>() as isize)
}

/// The maxima of one window row into `y` (−∞ for a window of padding only).
///
/// # Safety
/// The rows of `real` lie inside `x`'s buffer.
unsafe fn maxima<T: Elem>(x: &Operand, real: &[(u16, i64)], y: &mut [T], tmp: &mut Vec<T>) {
    let b = y.len();
    let Some((&(_, first), rest)) = real.split_first() else {
        y.fill(T::NEG_INFINITY);
        return;
    };
    y.copy_from_slice(row(x, first, b, tmp));
    for &(_, at) in rest {
        for (m, v) in y.iter_mut().zip(row(x, at, b, tmp)) {
            *m = if v.beats(*m) { *v } else { *m };
        }
    }
}

/// The winners of one window row, lane by lane: `arg[c]` the window position (`NONE` for
/// a window of padding only) and `best[c]` its value.
///
/// # Safety
/// The rows of `real` lie inside `x`'s buffer.
unsafe fn winners<T: Elem>(
    x: &Operand,
    real: &[(u16, i64)],
    b: usize,
    best: &mut [T],
    arg: &mut [u32],
    tmp: &mut Vec<T>,
) {
    arg.fill(NONE);
    let Some((&(p0, first), rest)) = real.split_first() else {
        return;
    };
    best.copy_from_slice(row(x, first, b, tmp));
    arg.fill(p0 as u32);
    for &(p, at) in rest {
        let p = p as u32;
        // Branch-free selects of equal-width lanes: vectorised.
        for ((bv, a), v) in best.iter_mut().zip(arg.iter_mut()).zip(row(x, at, b, tmp)) {
            let wins = v.beats(*bv);
            *a = if wins { p } else { *a };
            *bv = if wins { *v } else { *bv };
        }
    }
}
