//! Reduction kernels: `extern "C" fn(ptrs, begin, end)` with `ptrs = [input
//! root, output]`, `begin..end` over the outermost kept dimension.
//!
//! The input is read through its affine map (so a reduction of a transposed
//! or sliced view reads the original buffer). Dimensions are split into kept
//! and reduced groups, size-1 dims dropped, adjacent linear dims merged. Two
//! loop shapes:
//! - **row** (the innermost reduced dim is contiguous, or nothing else is):
//!   per output element, a SIMD loop over the innermost reduced dim with
//!   UNROLL vector accumulators, a padded tail (identity in the padding),
//!   and a horizontal combine. f32 sums and products accumulate blocks of at
//!   most BLOCK elements in f32, then add each block's result into an f64
//!   accumulator: accurate (tested on 10^7 elements) at f32 speed. f32
//!   products multiply in f64 lanes throughout (`block_dtype`).
//! - **column** (the innermost kept dim is contiguous): vectors of 4
//!   consecutive outputs accumulate over every reduced position (f32 sums in
//!   f64 lanes); leftover outputs go one by one.

use super::kernel::{copy_elems, emit_loop, enter, pin, pin_slot, scratch, starts};
use super::lower::reduction::{acc_dtype, binop, block_dtype, identity, tracks_nan};
use super::lower::BLOCK;
use super::vector::{self, Vals, LANES};
use crate::describe::reduce::{Dim, ReduceDescription};
use crate::ir::ReduceOp;
use crate::{shape, DType, Literal};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::{FunctionBuilder, Variable};

const UNROLL: usize = 4;

/// Vectors of outputs a column reduction sums together (`build_column`): 16 f32 outputs,
/// one cache line of each reduced row, in 8 f64 accumulators of two lanes (of the 16
/// vector registers).
const COLUMN_GROUP: usize = 4;

// The description's column form needs a row of at least one of this kernel's vectors.
const _: () = assert!(crate::describe::reduce::COLUMN_LANES == LANES);

pub(super) fn scalar_op(
    b: &mut FunctionBuilder,
    op: ReduceOp,
    d: DType,
    x: Value,
    y: Value,
) -> Value {
    match (op, d.is_float()) {
        (ReduceOp::Sum, true) => b.ins().fadd(x, y),
        (ReduceOp::Prod, true) => b.ins().fmul(x, y),
        (ReduceOp::Max, true) => b.ins().fmax(x, y),
        (ReduceOp::Min, true) => b.ins().fmin(x, y),
        (ReduceOp::Sum, false) => b.ins().iadd(x, y),
        (ReduceOp::Prod, false) => b.ins().imul(x, y),
        (ReduceOp::Max, false) => b.ins().smax(x, y),
        (ReduceOp::Min, false) => b.ins().smin(x, y),
    }
}

/// One accumulation step `acc op x`. Float max/min keep the accumulator
/// where either is NaN (one `maxps x, acc` / `minps x, acc`): a NaN
/// accumulator stays NaN, a NaN `x` is dropped here and caught by a
/// `NanFlag` instead, which costs one compare per *pair* of vectors where
/// the NaN-propagating binary max costs a compare and a blend per vector.
pub(super) fn acc_step(
    b: &mut FunctionBuilder,
    op: ReduceOp,
    d: DType,
    acc: &Vals,
    x: &Vals,
) -> Vals {
    if !tracks_nan(op, d) {
        return vector::binary(b, binop(op), d, acc, x);
    }
    acc.iter()
        .zip(x)
        .map(|(&a, &x)| {
            let ty = b.func.dfg.value_type(a);
            // x64 lowers `a < x ? x : a` to `maxps x, a` and `x < a ? x : a`
            // to `minps x, a`, both returning `a` when unordered.
            let wins = if op == ReduceOp::Max {
                b.ins().fcmp(FloatCC::LessThan, a, x)
            } else {
                b.ins().fcmp(FloatCC::LessThan, x, a)
            };
            let wins = b.ins().bitcast(ty, MemFlagsData::new(), wins);
            b.ins().bitselect(wins, x, a)
        })
        .collect()
}

/// Whether a float max/min reduction met a NaN: an OR of unordered
/// compares, one per pair of vectors (`cmpunordps x0, x1` flags both).
pub(super) struct NanFlag {
    var: VarVals,
    /// The first vector of a pair, waiting for its partner.
    pending: Option<Vals>,
}

impl NanFlag {
    pub(super) fn new(b: &mut FunctionBuilder, d: DType) -> NanFlag {
        let (ty, n) = vector::part_type(d);
        let mask = if ty == types::F32X4 {
            types::I32X4
        } else {
            types::I64X2
        };
        let zero = b.ins().iconst(mask.lane_type(), 0);
        let zero = b.ins().splat(mask, zero);
        NanFlag {
            var: VarVals::new(b, &vec![zero; n]),
            pending: None,
        }
    }

    /// Vector `u` of a group of `of` (see `kernel::vector_loop`).
    pub(super) fn add(&mut self, b: &mut FunctionBuilder, x: &Vals, u: usize, of: usize) {
        let other = if u % 2 == 1 {
            self.pending.take().expect("the pair's first vector")
        } else if u + 1 < of {
            self.pending = Some(x.clone());
            return;
        } else {
            x.clone()
        };
        let f = self.var.get(b);
        let f: Vals = f
            .iter()
            .zip(x.iter().zip(&other))
            .map(|(&f, (&x, &y))| {
                let m = b.ins().fcmp(FloatCC::Unordered, x, y);
                b.ins().bor(f, m)
            })
            .collect();
        self.var.set(b, &f);
    }

    /// `s` (a scalar of dtype `d`), or NaN if a NaN was met.
    pub(super) fn apply(&self, b: &mut FunctionBuilder, d: DType, s: Value) -> Value {
        let f = self.var.get(b);
        let mut any = f[0];
        for &x in &f[1..] {
            any = b.ins().bor(any, x);
        }
        let any = b.ins().vany_true(any);
        let nan = vector::scalar_const(b, d, Literal::Float(f64::NAN));
        b.ins().select(any, nan, s)
    }
}

/// Vals held in frontend variables (loop-carried accumulators).
pub(super) struct VarVals(Vec<Variable>);

impl VarVals {
    pub(super) fn new(b: &mut FunctionBuilder, init: &Vals) -> VarVals {
        VarVals(
            init.iter()
                .map(|&v| {
                    let ty = b.func.dfg.value_type(v);
                    let var = b.declare_var(ty);
                    b.def_var(var, v);
                    var
                })
                .collect(),
        )
    }
    pub(super) fn get(&self, b: &mut FunctionBuilder) -> Vals {
        self.0.iter().map(|&v| b.use_var(v)).collect()
    }
    pub(super) fn set(&self, b: &mut FunctionBuilder, vals: &Vals) {
        for (&var, &v) in self.0.iter().zip(vals) {
            b.def_var(var, v);
        }
    }
}

/// Nested loops over `dims` (all full), calling `body` with the element
/// offset (in elements, as an I64 value) of each point.
fn nest(
    b: &mut FunctionBuilder,
    dims: &[Dim],
    base: Value,
    body: &mut dyn FnMut(&mut FunctionBuilder, Value),
) {
    match dims.split_first() {
        None => body(b, base),
        Some((d, rest)) => {
            let zero = b.ins().iconst(types::I64, 0);
            let n = b.ins().iconst(types::I64, d.size as i64);
            emit_loop(b, zero, n, 1, |b, j| {
                let off = b.ins().imul_imm_s(j, d.stride);
                let at = b.ins().iadd(base, off);
                nest(b, rest, at, body);
            });
        }
    }
}

pub fn build(b: &mut FunctionBuilder, r: &ReduceDescription) {
    let (ptrs, begin, end) = enter(b);
    let d = r.dtype;
    let [in_base, out_base] = starts(b, ptrs, &[(0, r.offset, d), (1, 0, d)])[..] else {
        unreachable!()
    };
    let esize = d.size() as i64;
    // Kept dims: their sizes and input and (contiguous) output strides, in bytes.
    let kept_sizes: Vec<usize> = r.kept.iter().map(|d| d.size).collect();
    let kept: Vec<(usize, i64, i64)> = (r.kept.iter().zip(shape::strides(&kept_sizes)))
        .map(|(d, o)| (d.size, d.stride * esize, o as i64 * esize))
        .collect();
    if r.column {
        build_column(b, r, (in_base, out_base), begin, end, &kept);
    } else {
        let slot = scratch(b, 32);
        let pin_at = pin_slot(b);
        kept_points(
            b,
            &kept,
            begin,
            end,
            (in_base, out_base),
            &mut |b, row, o| {
                // Pinned: the row pointer stays out of the inner loops.
                let row = pin(b, pin_at, row);
                let acc = row_reduce(b, r, row, slot);
                let ad = acc_dtype(r.op, r.dtype);
                vector::store_scalar(b, ad, r.dtype, acc, o);
            },
        );
    }
    b.ins().return_(&[]);
}

/// Loops over the kept dims `dims` (size, input and output strides in bytes; the first over
/// `lo..hi`), calling `body` with the input's and the output's address at each point.
fn kept_points(
    b: &mut FunctionBuilder,
    dims: &[(usize, i64, i64)],
    lo: Value,
    hi: Value,
    at: (Value, Value),
    body: &mut dyn FnMut(&mut FunctionBuilder, Value, Value),
) {
    let Some((&(_, si, so), rest)) = dims.split_first() else {
        return body(b, at.0, at.1);
    };
    emit_loop(b, lo, hi, 1, |b, j| {
        let i = b.ins().imul_imm_s(j, si);
        let i = b.ins().iadd(at.0, i);
        let o = b.ins().imul_imm_s(j, so);
        let o = b.ins().iadd(at.1, o);
        match rest.first() {
            None => body(b, i, o),
            Some(&(n, ..)) => {
                let zero = b.ins().iconst(types::I64, 0);
                let n = b.ins().iconst(types::I64, n as i64);
                kept_points(b, rest, zero, n, (i, o), body);
            }
        }
    });
}

/// Reduce every reduced position of one output element whose input starts at
/// `row` (bytes); returns the result as a scalar of the accumulator's dtype.
fn row_reduce(b: &mut FunctionBuilder, r: &ReduceDescription, row: Value, slot: Value) -> Value {
    let d = r.dtype;
    let ad = acc_dtype(r.op, d);
    let esize = d.size() as i64;
    let init = vector::scalar_const(b, ad, identity(r.op, ad));
    let total = b.declare_var(vector::scalar_type(ad));
    b.def_var(total, init);
    let (outer, last) = r.red.split_at(r.red.len() - 1);
    let last = last[0];
    let outer_bytes: Vec<Dim> = outer
        .iter()
        .map(|x| Dim {
            size: x.size,
            stride: x.stride * esize,
        })
        .collect();
    nest(b, &outer_bytes, row, &mut |b, start| {
        let n = last.size as i64;
        let block = |b: &mut FunctionBuilder, lo: Value, hi: Value| {
            let part = block_reduce(b, r, start, last.stride, lo, hi, slot);
            let part = if ad != block_dtype(r.op, d) {
                b.ins().fpromote(types::F64, part)
            } else {
                part
            };
            let t = b.use_var(total);
            let t = scalar_op(b, r.op, ad, t, part);
            b.def_var(total, t);
        };
        let zero = b.ins().iconst(types::I64, 0);
        let nv = b.ins().iconst(types::I64, n);
        if n <= BLOCK {
            block(b, zero, nv);
        } else {
            let i = emit_loop(b, zero, nv, BLOCK, |b, i| {
                let e = b.ins().iadd_imm_s(i, BLOCK);
                block(b, i, e);
            });
            if n % BLOCK != 0 {
                block(b, i, nv);
            }
        }
    });
    b.use_var(total)
}

/// Reduce elements `lo..hi` of a strided run starting at `start` (bytes,
/// element stride `stride`) in `block_dtype`; returns a scalar of it.
fn block_reduce(
    b: &mut FunctionBuilder,
    r: &ReduceDescription,
    start: Value,
    stride: i64,
    lo: Value,
    hi: Value,
    slot: Value,
) -> Value {
    let d = r.dtype;
    // Loads are in `d`, the lanes fold in `bd`.
    let bd = block_dtype(r.op, d);
    let esize = d.size() as i64;
    let step = stride * esize;
    let id = identity(r.op, d);
    let op = binop(r.op);
    let init = vector::splat(b, bd, identity(r.op, bd));
    let accs: Vec<VarVals> = (0..UNROLL).map(|_| VarVals::new(b, &init)).collect();
    let mut nan = tracks_nan(r.op, d).then(|| NanFlag::new(b, d));
    // One address value per `i`, the vector's place in the displacement.
    let load_at = |b: &mut FunctionBuilder, i: Value, extra: i64| -> Vals {
        let off = b.ins().imul_imm_s(i, step);
        let mut at = b.ins().iadd(start, off);
        let mut disp = extra * step;
        if disp.abs() + (LANES as i64 * step).abs() > i32::MAX as i64 / 2 {
            at = b.ins().iadd_imm_s(at, disp);
            disp = 0;
        }
        let x = if stride == 1 {
            vector::load_at(b, d, at, disp as i32)
        } else {
            vector::load_gather_at(b, d, at, step, disp as i32)
        };
        vector::cast(b, d, bd, &x)
    };
    let l = LANES as i64;
    let i = emit_loop(b, lo, hi, l * UNROLL as i64, |b, i| {
        for (u, acc) in accs.iter().enumerate() {
            let x = load_at(b, i, u as i64 * l);
            let a = acc.get(b);
            let y = acc_step(b, r.op, bd, &a, &x);
            acc.set(b, &y);
            if let Some(f) = &mut nan {
                f.add(b, &x, u, UNROLL);
            }
        }
    });
    let i = emit_loop(b, i, hi, l, |b, i| {
        let x = load_at(b, i, 0);
        let a = accs[0].get(b);
        let y = acc_step(b, r.op, bd, &a, &x);
        accs[0].set(b, &y);
        if let Some(f) = &mut nan {
            f.add(b, &x, 0, 1);
        }
    });
    // Padded tail: identity in the slot, then the r < LANES real elements.
    let tail = b.create_block();
    let done = b.create_block();
    let more = b.ins().icmp(IntCC::SignedLessThan, i, hi);
    b.ins().brif(more, tail, &[], done, &[]);
    b.switch_to_block(tail);
    let idv = vector::splat(b, d, id);
    vector::store(b, d, &idv, slot);
    let rem = b.ins().isub(hi, i);
    let off = b.ins().imul_imm_s(i, step);
    let src = b.ins().iadd(start, off);
    copy_elems(b, src, step, slot, rem, d.size());
    let x = vector::load(b, d, slot);
    let x = vector::cast(b, d, bd, &x);
    let a = accs[0].get(b);
    let y = acc_step(b, r.op, bd, &a, &x);
    accs[0].set(b, &y);
    if let Some(f) = &mut nan {
        f.add(b, &x, 0, 1);
    }
    b.ins().jump(done, &[]);
    b.switch_to_block(done);
    // Combine the accumulators, then the lanes.
    let mut v = accs[0].get(b);
    for acc in &accs[1..] {
        let a = acc.get(b);
        v = vector::binary(b, op, bd, &v, &a);
    }
    let ls = vector::lanes(b, &v);
    let mut s = ls[0];
    for &x in &ls[1..] {
        s = scalar_op(b, r.op, bd, s, x);
    }
    match &nan {
        Some(f) => f.apply(b, d, s),
        None => s,
    }
}

/// Column reduction: the innermost kept dim is contiguous; vectors of LANES
/// outputs accumulate over all reduced positions.
fn build_column(
    b: &mut FunctionBuilder,
    r: &ReduceDescription,
    base: (Value, Value),
    begin: Value,
    end: Value,
    kept: &[(usize, i64, i64)],
) {
    let d = r.dtype;
    let ad = acc_dtype(r.op, d);
    let esize = d.size() as i64;
    let op = binop(r.op);
    let red_bytes: Vec<Dim> = r
        .red
        .iter()
        .map(|x| Dim {
            size: x.size,
            stride: x.stride * esize,
        })
        .collect();
    // `vectors` vectors of outputs from column i (or a single output, splatted, for 0),
    // each summed over the reduced positions in order: a group reads a run of
    // `vectors · LANES` elements of every reduced row, a whole cache line for
    // `COLUMN_GROUP` vectors of f32 where one vector read a quarter of it (and the next
    // vector's pass fetched the line again: a `[100352, 64] → [64]` sum at 3 GB/s).
    let column =
        |b: &mut FunctionBuilder, row_in: Value, row_out: Value, i: Value, vectors: usize| {
            let single = vectors == 0;
            let init = vector::splat(b, ad, identity(r.op, ad));
            let accs: Vec<VarVals> = (0..vectors.max(1))
                .map(|_| VarVals::new(b, &init))
                .collect();
            let off = b.ins().imul_imm_s(i, esize);
            let start = b.ins().iadd(row_in, off);
            nest(b, &red_bytes, start, &mut |b, at| {
                for (v, acc) in accs.iter().enumerate() {
                    let x = if single {
                        vector::load_splat(b, d, at)
                    } else {
                        let at = b.ins().iadd_imm_s(at, (v * LANES) as i64 * esize);
                        vector::load(b, d, at)
                    };
                    let x = if ad != d {
                        vector::cast(b, d, ad, &x)
                    } else {
                        x
                    };
                    let a = acc.get(b);
                    let y = vector::binary(b, op, ad, &a, &x);
                    acc.set(b, &y);
                }
            });
            for (v, acc) in accs.iter().enumerate() {
                let res = acc.get(b);
                let res = if ad != d {
                    vector::cast(b, ad, d, &res)
                } else {
                    res
                };
                let o = b.ins().iadd(row_out, off);
                if single {
                    vector::store_lane0(b, d, &res, o, 0);
                } else {
                    let o = b.ins().iadd_imm_s(o, (v * LANES) as i64 * esize);
                    vector::store(b, d, &res, o);
                }
            }
        };
    let inner = |b: &mut FunctionBuilder, row_in: Value, row_out: Value, lo: Value, hi: Value| {
        let group = (COLUMN_GROUP * LANES) as i64;
        let i = emit_loop(b, lo, hi, group, |b, i| {
            column(b, row_in, row_out, i, COLUMN_GROUP)
        });
        let i = emit_loop(b, i, hi, LANES as i64, |b, i| {
            column(b, row_in, row_out, i, 1)
        });
        emit_loop(b, i, hi, 1, |b, i| column(b, row_in, row_out, i, 0));
    };
    // The outer kept dims as loops (the first over begin..end), the innermost as the columns.
    let (last, outer) = kept.split_last().expect("a kept dim");
    if outer.is_empty() {
        return inner(b, base.0, base.1, begin, end);
    }
    kept_points(b, outer, begin, end, base, &mut |b, row_in, row_out| {
        let z = b.ins().iconst(types::I64, 0);
        let n = b.ins().iconst(types::I64, last.0 as i64);
        inner(b, row_in, row_out, z, n);
    });
}
