//! The windowed reductions (`ir::window`) as library steps: each computes what
//! `interp::window` computes, bit for bit (the same winners, sums in f64 in the same
//! order, one rounding), on operands read in place through their strides.
//!
//! A pool's trailing feature axis (window 1, stride 1, no padding) is run as a block: a
//! window position is one row of the input, and the block's lanes are reduced together
//! (vectorised over the contiguous features). Outputs are split across the cores by rows,
//! each element written by one thread, so results do not depend on the thread count.
//! `window_max_scatter` first records each window's winner per lane (the window position,
//! 2 bytes of scratch per element of the window grid), then gathers: every input element
//! sums the cotangents of the windows it wins, in ascending order of the window.

use super::ops::{par_for, Operand};
use crate::ir::window::beats;
use crate::ir::{WindowRole, WindowSpec};
use crate::{shape, DType, Error};

/// The scratch a step needs: `window_max_scatter`'s winners.
pub fn scratch_bytes(spec: &WindowSpec, in_shapes: &[&[usize]]) -> usize {
    match spec.role {
        WindowRole::MaxScatter => shape::numel(in_shapes[1]) * 2,
        _ => 0,
    }
}

/// "No winner": a window of padding only.
const NONE: u16 = u16::MAX;

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
    if shape::numel(&spec.window) >= NONE as usize {
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
/// lanes together.
struct Geometry<'a> {
    spec: &'a WindowSpec,
    x: Vec<usize>,
    y: Vec<usize>,
    /// Axes walked one by one (the rank, or one less with a block).
    outer: usize,
    /// Lanes reduced together (the trailing axis' length, or 1).
    block: usize,
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
        Geometry {
            spec,
            x: x.to_vec(),
            y,
            outer,
            block,
        }
    }

    fn y_rows(&self) -> usize {
        shape::numel(&self.y[..self.outer])
    }

    fn x_rows(&self) -> usize {
        shape::numel(&self.x[..self.outer])
    }

    fn positions(&self) -> usize {
        shape::numel(&self.spec.window[..self.outer])
    }

    /// Row `row` of the grid's real window positions, in row-major window order:
    /// `(position, offset of the input row under strides xs)` into `real`.
    fn sources(&self, row: usize, xs: &[i64], real: &mut Vec<(u16, i64)>) {
        let n = self.outer;
        let (mut o, mut j) = ([0usize; 8], [0usize; 8]);
        let (o, j) = if n <= 8 {
            (&mut o[..n], &mut j[..n])
        } else {
            unreachable!("checked in `go`")
        };
        shape::unflatten(row, &self.y[..n], o);
        real.clear();
        'window: for p in 0..self.positions() {
            shape::unflatten(p, &self.spec.window[..n], j);
            let mut at = 0i64;
            for d in 0..n {
                match self.spec.source(d, o[d], j[d], self.x[d]) {
                    Some(i) => at += i as i64 * xs[d],
                    None => continue 'window,
                }
            }
            real.push((p as u16, at));
        }
    }

    /// The windows covering input row `row`, in ascending order of the window:
    /// `(window position, flat row of the grid, offset of that row under strides ys)`.
    fn targets(&self, row: usize, ys: &[i64], hits: &mut Vec<(u16, usize, i64)>) {
        let n = self.outer;
        let (mut i, mut j, mut o) = ([0usize; 8], [0usize; 8], [0usize; 8]);
        shape::unflatten(row, &self.x[..n], &mut i[..n]);
        hits.clear();
        // Descending window positions give ascending windows (`ir::window`).
        'window: for p in (0..self.positions()).rev() {
            shape::unflatten(p, &self.spec.window[..n], &mut j[..n]);
            for d in 0..n {
                match self.spec.target(d, i[d], j[d], self.y[d]) {
                    Some(t) => o[d] = t,
                    None => continue 'window,
                }
            }
            let flat = (0..n).fold(0, |f, d| f * self.y[d] + o[d]);
            let at = (0..n).map(|d| o[d] as i64 * ys[d]).sum();
            hits.push((p as u16, flat, at));
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
                let mut arg: Vec<u16> = vec![NONE; b];
                let mut sum = vec![0.0f64; b];
                for r in lo..hi {
                    g.sources(r, &xs, &mut real);
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
                        _ => {
                            winners(&ins[0], &real, b, &mut best, &mut arg, &mut tmp);
                            if spec.role == WindowRole::Max {
                                for (y, (v, a)) in y.iter_mut().zip(best.iter().zip(&arg)) {
                                    *y = if *a == NONE { T::NEG_INFINITY } else { *v };
                                }
                            } else {
                                // `t` at the winner: the winner's row of `t`, lane by lane.
                                let t = &ins[1];
                                let ts = walked(t, g.outer);
                                let step = t.strides.last().copied().unwrap_or(1);
                                for (c, (y, a)) in y.iter_mut().zip(&arg).enumerate() {
                                    *y = if *a == NONE {
                                        T::ZERO
                                    } else {
                                        let at = t_offset(&g, r, *a, &ts);
                                        *(t.ptr as *const T).offset((at + c as i64 * step) as isize)
                                    };
                                }
                            }
                        }
                    }
                }
            });
        }
        WindowRole::SumTranspose | WindowRole::MaxScatter => {
            let dy = &ins[ins.len() - 1];
            let wins = scratch as *mut u16;
            if spec.role == WindowRole::MaxScatter {
                let xs = walked(&ins[0], g.outer);
                let w = Out(scratch);
                par_for(g.y_rows(), bytes, |lo, hi| {
                    let w = w;
                    let (mut real, mut tmp) = (Vec::new(), Vec::<T>::new());
                    let mut best: Vec<T> = vec![T::ZERO; b];
                    for r in lo..hi {
                        g.sources(r, &xs, &mut real);
                        let arg = std::slice::from_raw_parts_mut((w.0 as *mut u16).add(r * b), b);
                        winners(&ins[0], &real, b, &mut best, arg, &mut tmp);
                    }
                });
            }
            let ys = walked(dy, g.outer);
            let wins = Out(wins as *mut u8);
            par_for(g.x_rows(), bytes, |lo, hi| {
                let (dst, wins) = (out, wins);
                let (mut hits, mut tmp) = (Vec::new(), Vec::<T>::new());
                let mut sum = vec![0.0f64; b];
                for r in lo..hi {
                    g.targets(r, &ys, &mut hits);
                    sum.fill(0.0);
                    for &(p, flat, at) in &hits {
                        let d = row(dy, at, b, &mut tmp);
                        if spec.role == WindowRole::SumTranspose {
                            for (s, v) in sum.iter_mut().zip(d) {
                                *s += v.widen();
                            }
                        } else {
                            let won =
                                std::slice::from_raw_parts((wins.0 as *const u16).add(flat * b), b);
                            for ((s, v), w) in sum.iter_mut().zip(d).zip(won) {
                                if *w == p {
                                    *s += v.widen();
                                }
                            }
                        }
                    }
                    let x = std::slice::from_raw_parts_mut((dst.0 as *mut T).add(r * b), b);
                    for (x, s) in x.iter_mut().zip(&sum) {
                        *x = T::from_f64(*s);
                    }
                }
            });
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
    arg: &mut [u16],
    tmp: &mut Vec<T>,
) {
    arg.fill(NONE);
    let Some((&(p0, first), rest)) = real.split_first() else {
        return;
    };
    best.copy_from_slice(row(x, first, b, tmp));
    arg.fill(p0);
    for &(p, at) in rest {
        for ((bv, a), v) in best.iter_mut().zip(arg.iter_mut()).zip(row(x, at, b, tmp)) {
            if v.beats(*bv) {
                *bv = *v;
                *a = p;
            }
        }
    }
}

/// The offset (under `ts`) of the input row window position `p` of grid row `r` reads.
fn t_offset(g: &Geometry, r: usize, p: u16, ts: &[i64]) -> i64 {
    let n = g.outer;
    let (mut o, mut j) = ([0usize; 8], [0usize; 8]);
    shape::unflatten(r, &g.y[..n], &mut o[..n]);
    shape::unflatten(p as usize, &g.spec.window[..n], &mut j[..n]);
    (0..n)
        .map(|d| {
            let i = g
                .spec
                .source(d, o[d], j[d], g.x[d])
                .expect("a winner is real");
            i as i64 * ts[d]
        })
        .sum()
}
