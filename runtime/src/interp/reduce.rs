//! The interpreter's reductions, arg-reductions and matmul (f64 accumulation
//! for floats, wrapping i64 for integers).

use crate::array::Array;
use crate::interp::{array_of, as_f64s, as_i64s, from_f64s, from_i64s};
use crate::ir::ReduceOp;
use crate::{shape, DType};

/// For every input element (row-major), the index of the output element it
/// reduces into when `axes` are removed.
fn output_index_map(in_shape: &[usize], axes: &[usize]) -> Vec<usize> {
    let out_shape: Vec<usize> = (0..in_shape.len())
        .filter(|a| !axes.contains(a))
        .map(|a| in_shape[a])
        .collect();
    let out_st = shape::strides(&out_shape);
    let mut map = Vec::with_capacity(shape::numel(in_shape));
    let mut idx = vec![0usize; in_shape.len()];
    for _ in 0..shape::numel(in_shape) {
        let mut o = 0;
        let mut k = 0;
        for (d, &i) in idx.iter().enumerate() {
            if !axes.contains(&d) {
                o += i * out_st[k];
                k += 1;
            }
        }
        map.push(o);
        for d in (0..in_shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < in_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    map
}

pub fn reduce(op: ReduceOp, axes: &[usize], x: &Array, out_shape: &[usize]) -> Array {
    let map = output_index_map(&x.shape, axes);
    let n = shape::numel(out_shape);
    if x.dtype.is_float() {
        let init = match op {
            ReduceOp::Sum => 0.0,
            ReduceOp::Prod => 1.0,
            ReduceOp::Max => f64::NEG_INFINITY,
            ReduceOp::Min => f64::INFINITY,
        };
        let mut acc = vec![init; n];
        for (v, &o) in as_f64s(x).iter().zip(&map) {
            let a = &mut acc[o];
            *a = match op {
                ReduceOp::Sum => *a + v,
                ReduceOp::Prod => *a * v,
                ReduceOp::Max => {
                    if a.is_nan() || v.is_nan() {
                        f64::NAN
                    } else {
                        a.max(*v)
                    }
                }
                ReduceOp::Min => {
                    if a.is_nan() || v.is_nan() {
                        f64::NAN
                    } else {
                        a.min(*v)
                    }
                }
            };
        }
        from_f64s(acc, out_shape, x.dtype)
    } else {
        let (lo, hi) = if x.dtype == DType::I32 {
            (i32::MIN as i64, i32::MAX as i64)
        } else {
            (i64::MIN, i64::MAX)
        };
        let init = match op {
            ReduceOp::Sum => 0,
            ReduceOp::Prod => 1,
            ReduceOp::Max => lo,
            ReduceOp::Min => hi,
        };
        let mut acc = vec![init; n];
        for (v, &o) in as_i64s(x).iter().zip(&map) {
            let a = &mut acc[o];
            *a = match op {
                ReduceOp::Sum => a.wrapping_add(*v),
                ReduceOp::Prod => a.wrapping_mul(*v),
                ReduceOp::Max => (*a).max(*v),
                ReduceOp::Min => (*a).min(*v),
            };
        }
        from_i64s(acc, out_shape, x.dtype)
    }
}

/// Index of the first maximum (or minimum) along `axis`; NaN is the extreme.
pub fn arg_extreme(max: bool, axis: usize, x: &Array, out_shape: &[usize]) -> Array {
    let n = x.shape[axis];
    let inner: usize = x.shape[axis + 1..].iter().product();
    let outer: usize = x.shape[..axis].iter().product();
    let vals = if x.dtype.is_float() {
        as_f64s(x)
    } else {
        as_i64s(x).into_iter().map(|v| v as f64).collect()
    };
    let ints = if x.dtype.is_int() { as_i64s(x) } else { vec![] };
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| (o * n + k) * inner + i;
            let mut best = 0usize;
            for k in 1..n {
                let better = if x.dtype.is_int() {
                    let (a, b) = (ints[at(k)], ints[at(best)]);
                    if max {
                        a > b
                    } else {
                        a < b
                    }
                } else {
                    let (a, b) = (vals[at(k)], vals[at(best)]);
                    !b.is_nan() && (a.is_nan() || if max { a > b } else { a < b })
                };
                if better {
                    best = k;
                }
            }
            out.push(best as i64);
        }
    }
    array_of(out, out_shape)
}

/// Batched matmul with broadcast batch dimensions, accumulated in f64, rounded once to
/// `dtype` (the operands' type, or f32 for 16-bit operands asked for an f32 result).
pub fn matmul(a: &Array, b: &Array, out_shape: &[usize], dtype: DType) -> Array {
    let r = out_shape.len();
    let (m, n) = (out_shape[r - 2], out_shape[r - 1]);
    let k = a.shape[a.shape.len() - 1];
    let batch = &out_shape[..r - 2];
    let av = as_f64s(a);
    let bv = as_f64s(b);
    let a_batch = shape::broadcast_strides(&a.shape[..a.shape.len() - 2], batch);
    let b_batch = shape::broadcast_strides(&b.shape[..b.shape.len() - 2], batch);
    let mut out = Vec::with_capacity(shape::numel(out_shape));
    let mut idx = vec![0usize; batch.len()];
    for _ in 0..shape::numel(batch) {
        let ao: usize = idx.iter().zip(&a_batch).map(|(i, s)| i * s).sum::<usize>() * m * k;
        let bo: usize = idx.iter().zip(&b_batch).map(|(i, s)| i * s).sum::<usize>() * k * n;
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0.0;
                for p in 0..k {
                    acc += av[ao + i * k + p] * bv[bo + p * n + j];
                }
                out.push(acc);
            }
        }
        for d in (0..batch.len()).rev() {
            idx[d] += 1;
            if idx[d] < batch[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    from_f64s(out, out_shape, dtype)
}
