//! Row kernels (see `fusion::row_groups`): `extern "C" fn(ptrs, begin, end)`,
//! `ptrs` = the group's inputs then outputs, `begin..end` over the first
//! (collapsed) row dimension.
//!
//! Per row: row-level values are SSA vectors (the scalar splatted), computed
//! as soon as the reductions they need are done. Reductions run in phases:
//! all reductions whose operands are ready share one SIMD loop over the row
//! (sibling fusion: mean and mean-of-squares in one pass), with UNROLL
//! accumulators each, a padded and masked tail, and f32 sums/products
//! accumulated per block of BLOCK elements into f64. A final loop computes
//! and stores the element-level outputs. Inputs are read through their
//! affine maps; the within-row dimensions must collapse to one run.

use super::kernel::{
    emit_loop, enter, pin, pin_slot, scratch, starts, vector_loop, Addr, Lane, VectorBody, UNROLL,
};
use super::lower::loops::MIN_TILED_RUN;
use super::lower::reduction::{acc_dtype, binop, block_dtype, identity, tracks_nan};
use super::lower::{LocalId, LocalOp, RowBody, BLOCK};
use super::micro::{self, MicroFn};
use super::reduce::{acc_step, scalar_op, NanFlag};
use super::target::Target;
use super::vector::{self, Vals, LANES};
use crate::ir::ReduceOp;
use crate::DType;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, SigRef, Signature, StackSlot, Value};
use cranelift_frontend::{FunctionBuilder, Variable};
use std::collections::{HashMap, HashSet};

struct Ctx<'a> {
    body: &'a RowBody<'a>,
    /// Row pointer of each access.
    rows: Vec<Value>,
    /// Row-level values (splatted).
    row_env: HashMap<LocalId, Vals>,
    /// Element values stashed in a row-sized stack scratch (`RowBody::stash`): stored by
    /// the first sweep computing them, loaded by the later ones (softmax's `exp(x - max)`).
    stash: HashMap<LocalId, Value>,
    /// Stashed values already in their scratch.
    stash_ready: HashSet<LocalId>,
    /// Slot of `pin` (row-level values and row pointers).
    pin: StackSlot,
}

impl Ctx<'_> {
    /// Element-level values of `targets` at one vector position.
    fn eval(
        &self,
        b: &mut FunctionBuilder,
        addrs: &[Addr],
        pos: (Value, i64),
        targets: &[LocalId],
    ) -> HashMap<LocalId, Vals> {
        let locals = &self.body.locals;
        // Needed members, in order.
        let mut need: HashSet<LocalId> = HashSet::new();
        let mut stack: Vec<LocalId> = targets.to_vec();
        while let Some(v) = stack.pop() {
            if locals[v].op.is_leaf() || self.row_env.contains_key(&v) || !need.insert(v) {
                continue;
            }
            if !matches!(locals[v].op, LocalOp::Broadcast(_)) && !self.stash_ready.contains(&v) {
                stack.extend(locals[v].op.operands().iter().copied());
            }
        }
        let mut order: Vec<LocalId> = need.into_iter().collect();
        order.sort();
        let mut env: HashMap<LocalId, Vals> = HashMap::new();
        let fetch = |b: &mut FunctionBuilder, env: &mut HashMap<LocalId, Vals>, x: LocalId| {
            if let Some(v) = env.get(&x).or_else(|| self.row_env.get(&x)) {
                return v.clone();
            }
            let v = match locals[x].op {
                LocalOp::Read(a) => addrs[a].load(b, self.body.plan.accesses[a].dtype),
                _ => vector::local(b, locals, x, &[]),
            };
            env.insert(x, v.clone());
            v
        };
        for v in order {
            let l = &locals[v];
            let size = l.dtype.size() as i64;
            let scratch = self.stash.get(&v).map(|&slot| {
                let off = b.ins().imul_imm_s(pos.0, size);
                (b.ins().iadd(slot, off), (pos.1 * size) as i32)
            });
            let val = match l.op {
                _ if self.stash_ready.contains(&v) => {
                    let (at, off) = scratch.unwrap();
                    vector::load_at(b, l.dtype, at, off)
                }
                LocalOp::Broadcast(x) => self.row_env[&x].clone(),
                op => {
                    let args: Vec<Vals> = op
                        .operands()
                        .iter()
                        .map(|&x| fetch(b, &mut env, x))
                        .collect();
                    let val = vector::local(b, locals, v, &args);
                    if let Some((at, off)) = scratch {
                        vector::store_at(b, l.dtype, &val, at, off);
                    }
                    val
                }
            };
            env.insert(v, val);
        }
        for &t in targets {
            if !env.contains_key(&t) {
                let v = fetch(b, &mut env, t);
                env.insert(t, v);
            }
        }
        env
    }
}

pub fn build(b: &mut FunctionBuilder, body: &RowBody, t: &Target) {
    let pl = body.plan;
    let (ptrs, begin, end) = enter(b);
    let accesses: Vec<_> = pl
        .accesses
        .iter()
        .map(|a| (a.ptr, a.offset, a.dtype))
        .collect();
    let starts = starts(b, ptrs, &accesses);
    let slots: Vec<Value> = (pl.accesses.iter())
        .map(|a| scratch(b, (LANES * a.dtype.size()).max(16)))
        .collect();
    // Rows long enough stage their transcendentals through the micro-kernels (in the stash).
    let values = body.stash(&|l| match l.op {
        LocalOp::Unary(u, _) if pl.n >= MIN_TILED_RUN => micro::kernel(t, u, l.dtype),
        _ => None,
    });
    let stash: HashMap<LocalId, Value> = (values.iter())
        .map(|&(v, _)| (v, scratch(b, body.stash_bytes(v))))
        .collect();
    let micro: Vec<(LocalId, MicroFn)> =
        values.iter().filter_map(|&(v, f)| Some((v, f?))).collect();
    let sig = (!micro.is_empty()).then(|| {
        let mut sig = Signature::new(b.func.signature.call_conv);
        for _ in 0..3 {
            sig.params.push(AbiParam::new(types::I64));
        }
        b.import_signature(sig)
    });
    let stash = Stash {
        slots: stash,
        micro,
        sig,
    };
    let mut idx = Vec::new();
    let pin = pin_slot(b);
    outer(
        b, body, &starts, &slots, &stash, pin, 0, begin, end, &mut idx,
    );
    b.ins().return_(&[]);
}

/// Row-sized scratches of stashed values. A stashed transcendental with a micro-kernel
/// (`micro.rs`) is computed before the first phase that needs it: a pass over the row stores its
/// argument into its scratch, then one micro-kernel call turns the scratch into the result in
/// place (bit-identical to the inline function), and every phase loads it.
struct Stash {
    slots: HashMap<LocalId, Value>,
    /// The stashed values computed by micro-kernels, in order.
    micro: Vec<(LocalId, MicroFn)>,
    /// Signature of the micro-kernels (when there are any).
    sig: Option<SigRef>,
}

#[allow(clippy::too_many_arguments)]
fn outer(
    b: &mut FunctionBuilder,
    body: &RowBody,
    starts: &[Value],
    slots: &[Value],
    stash: &Stash,
    pin_at: StackSlot,
    d: usize,
    lo: Value,
    hi: Value,
    idx: &mut Vec<Value>,
) {
    let pl = body.plan;
    emit_loop(b, lo, hi, 1, |b, j| {
        idx.push(j);
        if d + 1 == pl.o_dims.len() {
            let rows: Vec<Value> = pl
                .accesses
                .iter()
                .enumerate()
                .map(|(a, acc)| {
                    let mut p = starts[a];
                    for (k, &jv) in idx.iter().enumerate() {
                        let bytes = acc.o_strides[k] * acc.dtype.size() as i64;
                        if bytes != 0 {
                            let t = b.ins().imul_imm_s(jv, bytes);
                            p = b.ins().iadd(p, t);
                        }
                    }
                    pin(b, pin_at, p)
                })
                .collect();
            row(b, body, rows, slots, stash, pin_at);
        } else {
            let zero = b.ins().iconst(types::I64, 0);
            let n = b.ins().iconst(types::I64, pl.o_dims[d + 1] as i64);
            outer(b, body, starts, slots, stash, pin_at, d + 1, zero, n, idx);
        }
        idx.pop();
    });
}

/// Loop over one row's elements `lo..hi` in vectors (see `vector_loop`).
/// Only the final pass (`writes`) touches the outputs: a reduction phase
/// leaves them alone, so its padded tail copies nothing back into them (an
/// output written in place over an input would get the tail's garbage before
/// the later phases read that input).
#[allow(clippy::too_many_arguments)]
fn row_loop(
    b: &mut FunctionBuilder,
    rb: &RowBody,
    rows: &[Value],
    slots: &[Value],
    lo: Value,
    hi: Value,
    known: Option<i64>,
    writes: bool,
    body: &mut VectorBody,
) {
    let lanes: Vec<Lane> = (rb.plan.accesses.iter())
        .enumerate()
        .map(|(a, acc)| {
            let output = rb.outputs.iter().any(|o| o.1 == a);
            Lane {
                size: acc.dtype.size(),
                // An output outside the final pass: no address, no copy.
                stride: if output && !writes { 0 } else { acc.i_stride },
                output: output && writes,
                read: !(output && writes),
            }
        })
        .collect();
    vector_loop(b, &lanes, rows, slots, lo, hi, known, UNROLL, body);
}

/// Mask of the first `r` lanes.
fn lane_mask(b: &mut FunctionBuilder, r: Value) -> Vals {
    let r32 = b.ins().ireduce(types::I32, r);
    let rv = b.ins().splat(types::I32X4, r32);
    let zero = b.ins().iconst(types::I32, 0);
    let mut iota = b.ins().splat(types::I32X4, zero);
    for l in 1..LANES as i64 {
        let c = b.ins().iconst(types::I32, l);
        iota = b.ins().insertlane(iota, c, l as u8);
    }
    vec![b.ins().icmp(IntCC::SignedLessThan, iota, rv)]
}

#[allow(clippy::too_many_arguments)]
fn row(
    b: &mut FunctionBuilder,
    body: &RowBody,
    rows: Vec<Value>,
    slots: &[Value],
    stash: &Stash,
    pin_at: StackSlot,
) {
    let pl = body.plan;
    let mut ctx = Ctx {
        body,
        rows,
        row_env: HashMap::new(),
        stash: stash.slots.clone(),
        stash_ready: HashSet::new(),
        pin: pin_at,
    };
    let zero = b.ins().iconst(types::I64, 0);
    let nrow = b.ins().iconst(types::I64, pl.n as i64);
    for sweep in &body.sweeps {
        compute_row_level(b, &mut ctx, &sweep.row_values);
        micro_passes(b, &mut ctx, stash, &sweep.cone, slots);
        if sweep.reductions.is_empty() {
            break; // the last sweep: the element outputs
        }
        reduce_sweep(b, &mut ctx, &sweep.reductions, slots, zero, nrow);
        // Values this sweep stored are loaded by the next ones.
        let stored: Vec<LocalId> = (ctx.stash.keys().copied())
            .filter(|v| sweep.cone.contains(v))
            .collect();
        ctx.stash_ready.extend(stored);
    }
    // The last sweep: element-level outputs.
    let elem_outs: Vec<(LocalId, usize)> = body.element_outputs().collect();
    if !elem_outs.is_empty() {
        let targets: Vec<LocalId> = elem_outs.iter().map(|o| o.0).collect();
        let rows = ctx.rows.clone();
        row_loop(
            b,
            body,
            &rows,
            slots,
            zero,
            nrow,
            Some(pl.n as i64),
            true,
            &mut |b, addrs, pos, _, _| {
                let env = ctx.eval(b, addrs, pos, &targets);
                for &(o, a) in &elem_outs {
                    if let Addr::Run(p, off) = addrs[a] {
                        vector::store_at(b, body.locals[o].dtype, &env[&o], p, off);
                    }
                }
            },
        );
    }
    // Row-level outputs: one scalar per row.
    for (o, a) in body.row_outputs() {
        vector::store_lane0(b, body.locals[o].dtype, &ctx.row_env[&o], ctx.rows[a], 0);
    }
}

/// Before a sweep (`cone`: the members it evaluates): each micro-kernel value it needs that is
/// not in its scratch yet gets a pass over the row storing its argument there, then the
/// micro-kernel call on the scratch, in place.
fn micro_passes(
    b: &mut FunctionBuilder,
    ctx: &mut Ctx,
    stash: &Stash,
    cone: &[LocalId],
    slots: &[Value],
) {
    let body = ctx.body;
    let pl = body.plan;
    for &(t, f) in &stash.micro {
        if !cone.contains(&t) || ctx.stash_ready.contains(&t) {
            continue;
        }
        let arg = body.locals[t].op.operands()[0];
        let at = stash.slots[&t];
        let rows = ctx.rows.clone();
        let zero = b.ins().iconst(types::I64, 0);
        let nrow = b.ins().iconst(types::I64, pl.n as i64);
        let c: &Ctx = ctx;
        // Outputs untouched (`writes` false): see `row_loop`.
        row_loop(
            b,
            body,
            &rows,
            slots,
            zero,
            nrow,
            Some(pl.n as i64),
            false,
            &mut |b, addrs, pos, _, _| {
                let env = c.eval(b, addrs, pos, &[arg]);
                let off = b.ins().imul_imm_s(pos.0, 4);
                let p = b.ins().iadd(at, off);
                vector::store_at(b, DType::F32, &env[&arg], p, (pos.1 * 4) as i32);
            },
        );
        let callee = b.ins().iconst(types::I64, f as usize as i64);
        let sig = stash.sig.expect("imported with the micro-kernels");
        b.ins().call_indirect(sig, callee, &[at, at, nrow]);
        ctx.stash_ready.insert(t);
    }
}

/// The row-level values `values` (their reductions are done), each splatted and pinned.
fn compute_row_level(b: &mut FunctionBuilder, ctx: &mut Ctx, values: &[LocalId]) {
    let body = ctx.body;
    for &m in values {
        let val = match body.locals[m].op {
            LocalOp::Broadcast(x) => ctx.row_env[&x].clone(),
            op => {
                let args: Vec<Vals> = (op.operands().iter())
                    .map(|&x| match body.locals[x].op {
                        _ if ctx.row_env.contains_key(&x) => ctx.row_env[&x].clone(),
                        LocalOp::Read(a) => {
                            vector::load_splat(b, body.plan.accesses[a].dtype, ctx.rows[a])
                        }
                        _ => vector::local(b, &body.locals, x, &[]),
                    })
                    .collect();
                let val = vector::local(b, &body.locals, m, &args);
                val.iter().map(|&v| pin(b, ctx.pin, v)).collect()
            }
        };
        ctx.row_env.insert(m, val);
    }
}

/// One pass over the row computing the reductions `rs` together.
fn reduce_sweep(
    b: &mut FunctionBuilder,
    ctx: &mut Ctx,
    rs: &[LocalId],
    slots: &[Value],
    zero: Value,
    nrow: Value,
) {
    let body = ctx.body;
    let pl = body.plan;
    struct Red {
        v: LocalId,
        op: ReduceOp,
        d: DType,
        /// The dtype a block folds in (`lower::reduction::block_dtype`).
        block_d: DType,
        acc_d: DType,
        input: LocalId,
        total: Variable,
        accs: Vec<Vec<Variable>>,
        /// NaN met (float max/min: see `reduce::acc_step`), over the row.
        nan: Option<NanFlag>,
    }
    let mut reds: Vec<Red> = Vec::new();
    for &v in rs {
        let LocalOp::Reduce(op, input) = body.locals[v].op else {
            unreachable!("a reduction")
        };
        let d = body.locals[v].dtype;
        let acc_d = acc_dtype(op, d);
        let init = vector::scalar_const(b, acc_d, identity(op, acc_d));
        let total = b.declare_var(vector::scalar_type(acc_d));
        b.def_var(total, init);
        let nan = tracks_nan(op, d).then(|| NanFlag::new(b, d));
        reds.push(Red {
            v,
            op,
            d,
            block_d: block_dtype(op, d),
            acc_d,
            input,
            total,
            accs: vec![],
            nan,
        });
    }
    let n = pl.n as i64;
    let targets: Vec<LocalId> = reds.iter().map(|r| r.input).collect();
    let block = |b: &mut FunctionBuilder,
                 ctx: &Ctx,
                 reds: &mut Vec<Red>,
                 lo: Value,
                 hi: Value,
                 len: i64| {
        for r in reds.iter_mut() {
            let init = vector::splat(b, r.block_d, identity(r.op, r.block_d));
            r.accs = (0..UNROLL)
                .map(|_| {
                    init.iter()
                        .map(|&x| {
                            let ty = b.func.dfg.value_type(x);
                            let var = b.declare_var(ty);
                            b.def_var(var, x);
                            var
                        })
                        .collect()
                })
                .collect();
        }
        let rows = ctx.rows.clone();
        row_loop(
            b,
            body,
            &rows,
            slots,
            lo,
            hi,
            Some(len),
            false,
            &mut |b, addrs, pos, (u, of), tail| {
                let env = ctx.eval(b, addrs, pos, &targets);
                let mask = tail.map(|r| lane_mask(b, r));
                for r in reds.iter_mut() {
                    let mut x = env[&r.input].clone();
                    if let Some(m) = &mask {
                        let id = vector::splat(b, r.d, identity(r.op, r.d));
                        x = vector::select(b, r.d, m, &x, &id);
                    }
                    let wide = vector::cast(b, r.d, r.block_d, &x);
                    let a: Vals = r.accs[u].iter().map(|&var| b.use_var(var)).collect();
                    let y = acc_step(b, r.op, r.block_d, &a, &wide);
                    for (&var, &val) in r.accs[u].iter().zip(&y) {
                        b.def_var(var, val);
                    }
                    if let Some(f) = &mut r.nan {
                        f.add(b, &x, u, of);
                    }
                }
            },
        );
        for r in reds.iter() {
            let mut v: Vals = r.accs[0].iter().map(|&var| b.use_var(var)).collect();
            for acc in &r.accs[1..] {
                let a: Vals = acc.iter().map(|&var| b.use_var(var)).collect();
                v = vector::binary(b, binop(r.op), r.block_d, &v, &a);
            }
            let ls = vector::lanes(b, &v);
            let mut s = ls[0];
            for &x in &ls[1..] {
                s = scalar_op(b, r.op, r.block_d, s, x);
            }
            let s = if r.acc_d != r.block_d {
                b.ins().fpromote(types::F64, s)
            } else {
                s
            };
            let t = b.use_var(r.total);
            let t = scalar_op(b, r.op, r.acc_d, t, s);
            b.def_var(r.total, t);
        }
    };
    if n <= BLOCK {
        block(b, ctx, &mut reds, zero, nrow, n);
    } else {
        let i = {
            let ctx_ref: &Ctx = ctx;
            let reds_ref = &mut reds;
            emit_loop(b, zero, nrow, BLOCK, |b, i| {
                let e = b.ins().iadd_imm_s(i, BLOCK);
                block(b, ctx_ref, reds_ref, i, e, BLOCK);
            })
        };
        if n % BLOCK != 0 {
            block(b, ctx, &mut reds, i, nrow, n % BLOCK);
        }
    }
    for r in &reds {
        let t = b.use_var(r.total);
        let t = if r.acc_d == DType::F64 && r.d.compute() == DType::F32 {
            b.ins().fdemote(types::F32, t)
        } else {
            t
        };
        let t = match &r.nan {
            Some(f) => f.apply(b, r.d, t),
            None => t,
        };
        let (ty, parts) = vector::part_type(r.d);
        let sp = b.ins().splat(ty, t);
        let sp = pin(b, ctx.pin, sp);
        ctx.row_env.insert(r.v, vec![sp; parts]);
    }
}
