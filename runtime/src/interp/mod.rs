//! The reference interpreter: evaluates any op of the IR in plain Rust on concrete arrays.
//! It is the eager path of `Array` and the oracle of the differential tests, so it
//! is written for obviousness, not speed. Float ops on `f32` are computed in
//! `f64` and rounded once (exact for + - * / sqrt; within half an ulp of the
//! true value for the transcendentals).

mod attention;
mod conv;
mod reduce;
mod window;

pub use attention::attention_grad;

use crate::array::{write_literal, Array, View};
use crate::ir::semantics::{self, binary_f64, binary_i64, compare, unary_f64, unary_i64};
use crate::ir::{BinaryOp, Graph, Op, UnaryOp};
use crate::storage::Buffer;
use crate::{shape, DType, Element, Error, Literal};
use std::sync::Arc;

/// Every element as `f64` (exact for all dtypes but i64 beyond 2^53).
pub(crate) fn as_f64s(t: &Array) -> Vec<f64> {
    match t.view() {
        View::F32(v) => v.iter().map(|&x| x as f64).collect(),
        View::F64(v) => v.to_vec(),
        View::I32(v) => v.iter().map(|&x| x as f64).collect(),
        View::I64(v) => v.iter().map(|&x| x as f64).collect(),
        View::Bool(v) => v.iter().map(|&x| x as u8 as f64).collect(),
        View::BF16(v) => v.iter().map(|&x| x.to_f64()).collect(),
        View::F16(v) => v.iter().map(|&x| x.to_f64()).collect(),
    }
}

pub(crate) fn as_i64s(t: &Array) -> Vec<i64> {
    match t.view() {
        View::I32(v) => v.iter().map(|&x| x as i64).collect(),
        View::I64(v) => v.to_vec(),
        View::Bool(v) => v.iter().map(|&x| x as i64).collect(),
        _ => unreachable!("as_i64s on a float array"),
    }
}

fn as_bools(t: &Array) -> Vec<bool> {
    match t.view() {
        View::Bool(v) => v.to_vec(),
        _ => unreachable!("as_bools on a non-bool array"),
    }
}

pub(crate) fn array_of<T: Element>(v: Vec<T>, shape: &[usize]) -> Array {
    Array::from_slice(&v, shape, "an interpreter result").unwrap_or_else(|e| panic!("{e}"))
}

/// An array from per-element f64 values, rounded to a float dtype.
pub(crate) fn from_f64s(v: Vec<f64>, shape: &[usize], dtype: DType) -> Array {
    match dtype {
        DType::F32 => array_of(v.into_iter().map(|x| x as f32).collect(), shape),
        DType::F64 => array_of(v, shape),
        DType::BF16 => array_of(v.into_iter().map(crate::dtype::bf16_of).collect(), shape),
        DType::F16 => array_of(v.into_iter().map(crate::dtype::f16_of).collect(), shape),
        _ => unreachable!(),
    }
}

/// An array from per-element i64 values, wrapped to an integer dtype.
pub(crate) fn from_i64s(v: Vec<i64>, shape: &[usize], dtype: DType) -> Array {
    match dtype {
        DType::I32 => array_of(v.into_iter().map(|x| x as i32).collect(), shape),
        DType::I64 => array_of(v, shape),
        _ => unreachable!(),
    }
}

/// A buffer holding a copy of the interpreter's result bytes (`eval_op`
/// checked up front that a buffer of the result's size can be allocated).
fn result_buffer(bytes: &[u8]) -> Arc<Buffer> {
    Arc::new(
        Buffer::try_from_bytes(bytes, || "an interpreter result".into())
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

/// Results at least this large are allocated once before the interpreter
/// computes them, so that a size the allocator refuses is an error and not
/// an abort in one of its working vectors.
const PROBE_BYTES: usize = 1 << 30;

/// The result of `op` of type `dtype[shape]`: its byte size must fit in
/// memory addresses and, when large, be allocatable.
fn check_result(op: &Op, shape: &[usize], dtype: DType) -> Result<(), Error> {
    let bytes = shape::checked_bytes(op.name(), shape, dtype)?;
    if bytes >= PROBE_BYTES && !matches!(op, Op::Reshape | Op::Barrier) {
        drop(Buffer::try_uninit(bytes, || {
            format!(
                "the result of `{}` ({})",
                op.name(),
                crate::error::type_str(dtype, shape)
            )
        })?);
    }
    Ok(())
}

fn cast(x: &Array, to: DType) -> Array {
    let n = shape::numel(&x.shape);
    let mut buf =
        Buffer::try_zeroed(n * to.size(), || "a cast".into()).unwrap_or_else(|e| panic!("{e}"));
    for i in 0..n {
        let l = semantics::cast(x.literal(i), x.dtype, to);
        write_literal(&mut buf, to, i, l);
    }
    Array::new(Arc::new(buf), x.shape.clone(), to)
}

/// For a view op (broadcast, transpose, slice): the element offset in the
/// input of output element 0, and the input stride of each output axis.
pub fn view_map(op: &Op, in_shape: &[usize], out_shape: &[usize]) -> (i64, Vec<i64>) {
    let st = shape::strides(in_shape);
    match op {
        Op::Broadcast => (
            0,
            shape::broadcast_strides(in_shape, out_shape)
                .into_iter()
                .map(|x| x as i64)
                .collect(),
        ),
        Op::Transpose(p) => (0, p.iter().map(|&a| st[a] as i64).collect()),
        Op::Slice(sl) => {
            let off = sl
                .iter()
                .zip(&st)
                .map(|((start, _), s)| start * *s as i64)
                .sum();
            (
                off,
                sl.iter()
                    .zip(&st)
                    .map(|((_, step), s)| step * *s as i64)
                    .collect(),
            )
        }
        Op::Reshape => (
            0,
            shape::strides(out_shape)
                .into_iter()
                .map(|x| x as i64)
                .collect(),
        ),
        _ => unreachable!("{} is not a view", op.name()),
    }
}

/// Copy the elements of an affine view of `x`.
fn gather_view(op: &Op, x: &Array, to: &[usize]) -> Array {
    let (off0, st) = view_map(op, &x.shape, to);
    let n = shape::numel(to);
    let size = x.dtype.size();
    let src = x.bytes();
    let mut out = vec![0u8; n * size];
    let mut idx = vec![0usize; to.len()];
    for i in 0..n {
        let off = (off0 + idx.iter().zip(&st).map(|(a, b)| *a as i64 * b).sum::<i64>()) as usize;
        out[i * size..(i + 1) * size].copy_from_slice(&src[off * size..(off + 1) * size]);
        for d in (0..to.len()).rev() {
            idx[d] += 1;
            if idx[d] < to[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Array::new(result_buffer(&out), to.to_vec(), x.dtype)
}

/// Bytes of each "row" of `s` from `axis` on, and how many such rows precede.
fn outer_inner(s: &[usize], axis: usize) -> (usize, usize) {
    (s[..axis].iter().product(), s[axis..].iter().product())
}

fn concat(ins: &[&Array], axis: usize, s: &[usize]) -> Array {
    let size = ins[0].dtype.size();
    let (outer, _) = outer_inner(s, axis);
    let mut out = Vec::with_capacity(shape::numel(s) * size);
    for o in 0..outer {
        for t in ins {
            let (_, inner) = outer_inner(&t.shape, axis);
            let b = t.bytes();
            out.extend_from_slice(&b[o * inner * size..(o + 1) * inner * size]);
        }
    }
    Array::new(result_buffer(&out), s.to_vec(), ins[0].dtype)
}

fn pad(x: &Array, p: &[(usize, usize)], l: Literal, s: &[usize]) -> Array {
    let out = Array::filled(l.cast(x.dtype), s, x.dtype);
    let size = x.dtype.size();
    let ost = shape::strides(s);
    let src = x.bytes();
    let dst_buf = &out.buf;
    // SAFETY: `out` is fresh and unshared until returned.
    let dst = unsafe { std::slice::from_raw_parts_mut(dst_buf.as_mut_ptr(), dst_buf.len_bytes()) };
    let n = shape::numel(&x.shape);
    let mut idx = vec![0usize; s.len()];
    for i in 0..n {
        let off: usize = idx
            .iter()
            .zip(p)
            .zip(&ost)
            .map(|((a, (lo, _)), st)| (a + lo) * st)
            .sum();
        dst[off * size..(off + 1) * size].copy_from_slice(&src[i * size..(i + 1) * size]);
        for d in (0..s.len()).rev() {
            idx[d] += 1;
            if idx[d] < x.shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Zeros of shape `to` with `x` written at `start + i*step` per axis.
fn slice_scatter(x: &Array, sl: &[(i64, i64)], to: &[usize]) -> Array {
    let out = Array::filled(Literal::Int(0), to, x.dtype);
    let size = x.dtype.size();
    let ost = shape::strides(to);
    let src = x.bytes();
    let dst_buf = &out.buf;
    // SAFETY: `out` is fresh and unshared until returned.
    let dst = unsafe { std::slice::from_raw_parts_mut(dst_buf.as_mut_ptr(), dst_buf.len_bytes()) };
    let mut idx = vec![0usize; to.len()];
    for i in 0..shape::numel(&x.shape) {
        let off: usize = idx
            .iter()
            .zip(sl)
            .zip(&ost)
            .map(|((&a, &(st, step)), &o)| (st + a as i64 * step) as usize * o)
            .sum();
        dst[off * size..(off + 1) * size].copy_from_slice(&src[i * size..(i + 1) * size]);
        for d in (0..x.shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < x.shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Zeros of shape `to` with each value of `vals` added at its clamped index
/// along `axis` (the adjoint of `take`).
fn scatter_add(vals: &Array, idx: &Array, axis: usize, to: &[usize]) -> Array {
    let n = to[axis];
    let outer: usize = to[..axis].iter().product();
    let inner: usize = to[axis + 1..].iter().product();
    let ids = as_i64s(idx);
    let v = as_f64s(vals);
    let mut acc = vec![0.0f64; shape::numel(to)];
    if n == 0 {
        // No row to add to: the result has no elements.
        return from_f64s(acc, to, vals.dtype);
    }
    let mut j = 0;
    for o in 0..outer {
        for &i in &ids {
            let k = crate::shape::clamp_index(i, n);
            for e in 0..inner {
                acc[(o * n + k) * inner + e] += v[j];
                j += 1;
            }
        }
    }
    from_f64s(acc, to, vals.dtype)
}

fn take(x: &Array, idx: &Array, axis: usize, s: &[usize]) -> Array {
    let size = x.dtype.size();
    let n = x.shape[axis];
    let (outer, _) = outer_inner(&x.shape, axis);
    let inner: usize = x.shape[axis + 1..].iter().product();
    let ids = as_i64s(idx);
    let src = x.bytes();
    let mut out = Vec::with_capacity(shape::numel(s) * size);
    for o in 0..outer {
        for &i in &ids {
            if n == 0 {
                continue;
            }
            let k = crate::shape::clamp_index(i, n);
            let start = (o * n + k) * inner * size;
            out.extend_from_slice(&src[start..start + inner * size]);
        }
    }
    // n == 0 with indices: the result has no elements only if it is empty.
    out.resize(shape::numel(s) * size, 0);
    Array::new(result_buffer(&out), s.to_vec(), x.dtype)
}

/// A `random_*` node, by the same native function compiled programs call.
fn random(
    r: crate::ir::RandomOp,
    ins: &[&Array],
    s: &[usize],
    dtype: DType,
) -> Result<Array, Error> {
    use crate::library::random::native::{fill, key_words, Out};
    let k = as_i64s(ins[0]);
    let key = key_words(k[0] as i32, k[1] as i32);
    let data = ins.get(1).map_or(0, |d| as_i64s(d)[0] as i32 as u32);
    let mut buf = Buffer::try_zeroed(shape::numel(s) * dtype.size(), || {
        format!("the result of `{}`", r.name())
    })?;
    let out = match dtype {
        DType::F32 => Out::F32(buf.typed_mut()),
        DType::F64 => Out::F64(buf.typed_mut()),
        DType::I32 => Out::I32(buf.typed_mut()),
        DType::I64 => Out::I64(buf.typed_mut()),
        d => return Err(Error::verify(format!("`{}` on {d}", r.name()))),
    };
    fill(r, key, data, out).map_err(Error::verify)?;
    Ok(Array::new(Arc::new(buf), s.to_vec(), dtype))
}

/// Evaluate one op on concrete operands of the op's exact shapes and dtypes.
pub fn eval_op(op: &Op, ins: &[&Array], shape: &[usize], dtype: DType) -> Result<Array, Error> {
    check_result(op, shape, dtype)?;
    let s = shape;
    Ok(match op {
        Op::Param(_) | Op::Captured(_) => {
            return Err(Error::verify(format!(
                "`{}` has no value of its own",
                op.name()
            )))
        }
        Op::Const(l) => Array::filled(*l, s, dtype),
        Op::Cond(_) | Op::While(_) | Op::Scan(_) | Op::Get(_) => {
            return Err(Error::verify(format!(
                "`{}` has several outputs: evaluate it with `eval_control`",
                op.name()
            )))
        }
        Op::Cast(d) => cast(ins[0], *d),
        Op::Unary(UnaryOp::Not) => array_of(as_bools(ins[0]).into_iter().map(|v| !v).collect(), s),
        Op::Unary(UnaryOp::StopGradient) | Op::Barrier => ins[0].clone(),
        Op::SliceScatter(sl) => slice_scatter(ins[0], sl, s),
        Op::ScatterAdd(axis) => scatter_add(ins[0], ins[1], *axis, s),
        Op::AllReduce(_) | Op::AllGather(..) | Op::ReduceScatter(..) | Op::BroadcastFrom(_) => {
            crate::library::collective::eval(op, ins[0], s)?
        }
        Op::Unary(u) if dtype.is_float() => from_f64s(
            as_f64s(ins[0])
                .into_iter()
                .map(|x| unary_f64(*u, x))
                .collect(),
            s,
            dtype,
        ),
        Op::Unary(u) => from_i64s(
            as_i64s(ins[0])
                .into_iter()
                .map(|x| unary_i64(*u, x, dtype))
                .collect(),
            s,
            dtype,
        ),
        Op::Binary(b @ (BinaryOp::And | BinaryOp::Or)) => {
            let (x, y) = (as_bools(ins[0]), as_bools(ins[1]));
            let and = *b == BinaryOp::And;
            array_of(
                x.iter()
                    .zip(&y)
                    .map(|(a, b)| if and { *a && *b } else { *a || *b })
                    .collect(),
                s,
            )
        }
        Op::Binary(b) if dtype.is_float() => {
            let (x, y) = (as_f64s(ins[0]), as_f64s(ins[1]));
            from_f64s(
                x.iter()
                    .zip(&y)
                    .map(|(a, c)| binary_f64(*b, *a, *c))
                    .collect(),
                s,
                dtype,
            )
        }
        Op::Binary(b) => {
            let (x, y) = (as_i64s(ins[0]), as_i64s(ins[1]));
            from_i64s(
                x.iter()
                    .zip(&y)
                    .map(|(a, c)| binary_i64(*b, *a, *c, dtype))
                    .collect(),
                s,
                dtype,
            )
        }
        Op::Compare(c) => {
            let d = ins[0].dtype;
            let r: Vec<bool> = if d.is_float() {
                let (x, y) = (as_f64s(ins[0]), as_f64s(ins[1]));
                x.iter().zip(&y).map(|(a, b)| compare(*c, a, b)).collect()
            } else {
                let (x, y) = (as_i64s(ins[0]), as_i64s(ins[1]));
                x.iter().zip(&y).map(|(a, b)| compare(*c, a, b)).collect()
            };
            array_of(r, s)
        }
        Op::Reshape => Array::new(ins[0].buf.clone(), s.to_vec(), dtype),
        Op::Transpose(_) | Op::Slice(_) | Op::Broadcast => gather_view(op, ins[0], s),
        Op::Concat(axis) => concat(ins, *axis, s),
        Op::Pad(p, l) => pad(ins[0], p, *l, s),
        Op::Reduce(r, axes) => reduce::reduce(*r, axes, ins[0], s),
        Op::ArgMax(axis) => reduce::arg_extreme(true, *axis, ins[0], s),
        Op::ArgMin(axis) => reduce::arg_extreme(false, *axis, ins[0], s),
        Op::Take(axis) => take(ins[0], ins[1], *axis, s),
        Op::Iota(axis) => {
            let st = shape::strides(s);
            let n = shape::numel(s);
            let mut buf = Buffer::try_zeroed(n * dtype.size(), || "an iota".into())?;
            for i in 0..n {
                write_literal(
                    &mut buf,
                    dtype,
                    i,
                    Literal::Int(((i / st[*axis]) % s[*axis]) as i64),
                );
            }
            Array::new(Arc::new(buf), s.to_vec(), dtype)
        }
        Op::Matmul => reduce::matmul(ins[0], ins[1], s, dtype),
        Op::Conv(c) => conv::conv(c, ins, s, dtype),
        Op::Window(w) => window::window(w, ins, s),
        Op::Attention(a) => attention::attention(a, ins, s),
        // `dq` (the node's own result; `eval_nodes` keeps `dk`, `dv` for its `get`s).
        Op::AttentionGrad(a) => attention::attention_grad(a, ins).swap_remove(0),
        Op::Random(r) => random(*r, ins, s, dtype)?,
        Op::Select => {
            let c = as_bools(ins[0]);
            let size = dtype.size();
            let (a, b) = (ins[1].bytes(), ins[2].bytes());
            let mut out = Vec::with_capacity(a.len());
            for (i, &ci) in c.iter().enumerate() {
                let src = if ci { a } else { b };
                out.extend_from_slice(&src[i * size..(i + 1) * size]);
            }
            Array::new(result_buffer(&out), s.to_vec(), dtype)
        }
    })
}

/// Row `i` of an array along its leading axis (a copy).
pub(crate) fn leading_row(t: &Array, i: usize) -> Array {
    let inner: usize = t.shape[1..].iter().product::<usize>() * t.dtype.size();
    let src = &t.bytes()[i * inner..(i + 1) * inner];
    Array::new(result_buffer(src), t.shape[1..].to_vec(), t.dtype)
}

/// Arrays of one shape stacked along a new leading axis.
pub(crate) fn stack_rows(rows: &[Array], shape: &[usize], dtype: DType) -> Array {
    let mut out = Vec::with_capacity(rows.len() * shape::numel(shape) * dtype.size());
    for r in rows {
        out.extend_from_slice(r.bytes());
    }
    let mut s = vec![rows.len()];
    s.extend_from_slice(shape);
    Array::new(result_buffer(&out), s, dtype)
}

/// All outputs of a control-flow op (`cond`, `while`, `scan`) on concrete
/// operands (of a verified graph: the sub-graphs are not verified again).
pub fn eval_control(op: &Op, ins: &[Array]) -> Result<Vec<Array>, Error> {
    match op {
        Op::Cond(c) => {
            let pred = as_bools(&ins[0])[0];
            eval_nodes(&c.branches[pred as usize], &ins[1..], &[])
        }
        Op::While(w) => {
            let (mut carried, inv) = (ins[..w.carried].to_vec(), &ins[w.carried..]);
            loop {
                let args: Vec<Array> = carried.iter().chain(inv).cloned().collect();
                if !as_bools(&eval_nodes(&w.cond, &args, &[])?[0])[0] {
                    return Ok(carried);
                }
                carried = eval_nodes(&w.body, &args, &[])?;
            }
        }
        Op::Scan(sc) => {
            let (c, x) = (sc.carried, sc.xs);
            let mut carry = ins[..c].to_vec();
            let (xs, inv) = (&ins[c..c + x], &ins[c + x..]);
            let ny = sc.body.outputs.len() - c;
            let mut ys: Vec<Vec<Array>> = vec![Vec::with_capacity(sc.length); ny];
            for step in 0..sc.length {
                let i = if sc.reverse {
                    sc.length - 1 - step
                } else {
                    step
                };
                let mut args = carry.clone();
                args.extend(xs.iter().map(|t| leading_row(t, i)));
                args.extend(inv.iter().cloned());
                let mut outs = eval_nodes(&sc.body, &args, &[])?;
                for (j, y) in outs.drain(c..).enumerate() {
                    ys[j].push(y);
                }
                carry = outs;
            }
            if sc.reverse {
                ys.iter_mut().for_each(|v| v.reverse());
            }
            for (j, rows) in ys.iter().enumerate() {
                let o = sc.body.node(sc.body.outputs[c + j]);
                carry.push(stack_rows(rows, &o.shape, o.dtype));
            }
            Ok(carry)
        }
        _ => Err(Error::verify(format!(
            "`{}` is not a control-flow op",
            op.name()
        ))),
    }
}

/// Evaluate a whole graph, node by node. The graph is verified first: a
/// malformed graph (a parsed text, a hand-built graph) is a `Verify` error
/// naming the node, never an out-of-bounds read.
pub fn eval_graph(g: &Graph, params: &[Array], captured: &[Array]) -> Result<Vec<Array>, Error> {
    crate::ir::verify(g)?;
    eval_nodes(g, params, captured)
}

/// `eval_graph` on a graph known to verify (control-flow bodies of a
/// verified graph, evaluated once per iteration).
fn eval_nodes(g: &Graph, params: &[Array], captured: &[Array]) -> Result<Vec<Array>, Error> {
    let mut vals: Vec<Array> = Vec::with_capacity(g.nodes.len());
    // Outputs of control-flow nodes beyond the first, read by `get` nodes.
    let mut extra: std::collections::HashMap<usize, Vec<Array>> = Default::default();
    for (i, n) in g.nodes.iter().enumerate() {
        let t = match n.op {
            ref op if op.is_control() => {
                let ins: Vec<Array> = n.inputs.iter().map(|v| vals[v.index()].clone()).collect();
                let mut outs = eval_control(op, &ins)?;
                let first = outs.remove(0);
                extra.insert(i, outs);
                first
            }
            Op::AttentionGrad(ref a) => {
                let ins: Vec<&Array> = n.inputs.iter().map(|v| &vals[v.index()]).collect();
                let mut outs = attention::attention_grad(a, &ins);
                let first = outs.remove(0);
                extra.insert(i, outs);
                first
            }
            Op::Get(k) => extra[&n.inputs[0].index()][k - 1].clone(),
            Op::Param(k) => params.get(k).cloned().ok_or_else(|| {
                Error::argument(format!("graph needs parameter {k}, {} given", params.len()))
            })?,
            Op::Captured(k) => captured
                .get(k)
                .cloned()
                .ok_or_else(|| Error::argument(format!("graph needs captured tensor {k}")))?,
            _ => {
                let ins: Vec<&Array> = n.inputs.iter().map(|v| &vals[v.index()]).collect();
                eval_op(&n.op, &ins, &n.shape, n.dtype)?
            }
        };
        if t.shape != n.shape || t.dtype != n.dtype {
            return Err(Error::argument(format!(
                "value %{} is {} but the graph declares {}",
                vals.len(),
                crate::error::type_str(t.dtype, &t.shape),
                crate::error::type_str(n.dtype, &n.shape)
            )));
        }
        vals.push(t);
    }
    Ok(g.outputs.iter().map(|o| vals[o.index()].clone()).collect())
}
