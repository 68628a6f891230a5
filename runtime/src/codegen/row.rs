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
    emit_loop, pin, pin_slot, vector_loop, Addr, Lane, VectorBody, MIN_STAGED_RUN, UNROLL,
};
use super::micro::{self, MicroFn};
use super::reduce::{
    acc_dtype, acc_step, binop, block_dtype, identity, scalar_op, tracks_nan, NanFlag,
};
use super::target::Target;
use super::vector::{self, Vals, LANES};
use crate::describe::row::{
    is_expensive, phase_cones, ready_reductions, reduction_deps, Plan, STASH_BYTES,
};
use crate::fusion::partition::{const_value, RowKernel};
use crate::ir::{Graph, Op, ReduceOp, ValueId};
use crate::DType;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, InstBuilder, MemFlagsData, SigRef, Signature, StackSlot, StackSlotData,
    StackSlotKind, Value,
};
use cranelift_frontend::{FunctionBuilder, Variable};
use std::collections::{HashMap, HashSet};

const BLOCK: i64 = 2048;

fn flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

struct Ctx<'a> {
    g: &'a Graph,
    pl: &'a Plan,
    /// Row pointer of each access.
    rows: Vec<Value>,
    /// Row-level values (splatted).
    row_env: HashMap<ValueId, Vals>,
    /// Expensive element-level values needed in several phases: stored to a
    /// row-sized stack scratch by the first phase computing them, loaded by
    /// the later ones (softmax's `exp(x - max)`).
    stash: HashMap<ValueId, Value>,
    /// Stashed values already in their scratch.
    stash_ready: HashSet<ValueId>,
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
        targets: &[ValueId],
    ) -> HashMap<ValueId, Vals> {
        let g = self.g;
        // Needed members, in topological order.
        let mut need: HashSet<ValueId> = HashSet::new();
        let mut stack: Vec<ValueId> = targets.to_vec();
        while let Some(v) = stack.pop() {
            if !self.pl.members.contains(&v) || self.row_env.contains_key(&v) || !need.insert(v) {
                continue;
            }
            if g.node(v).op != Op::Broadcast && !self.stash_ready.contains(&v) {
                stack.extend(g.node(v).inputs.iter().copied());
            }
        }
        let mut order: Vec<ValueId> = need.into_iter().collect();
        order.sort();
        let mut env: HashMap<ValueId, Vals> = HashMap::new();
        let fetch =
            |b: &mut FunctionBuilder, env: &mut HashMap<ValueId, Vals>, x: ValueId| -> Vals {
                if let Some(v) = env.get(&x).or_else(|| self.row_env.get(&x)) {
                    return v.clone();
                }
                let v = match const_value(g, x) {
                    Some(l) => vector::splat(b, g.node(x).dtype, l),
                    None => {
                        let a = self.pl.elem_reads[&x];
                        addrs[a].load(b, self.pl.accesses[a].dtype)
                    }
                };
                env.insert(x, v.clone());
                v
            };
        for v in order {
            let n = g.node(v);
            let size = n.dtype.size() as i64;
            let scratch = self.stash.get(&v).map(|&slot| {
                let off = b.ins().imul_imm_s(pos.0, size);
                (b.ins().iadd(slot, off), (pos.1 * size) as i32)
            });
            let val = match &n.op {
                _ if self.stash_ready.contains(&v) => {
                    let (at, off) = scratch.unwrap();
                    vector::load_at(b, n.dtype, at, off)
                }
                Op::Broadcast | Op::Reshape => self.row_env[&n.inputs[0]].clone(),
                _ => {
                    let args: Vec<Vals> = n.inputs.iter().map(|&x| fetch(b, &mut env, x)).collect();
                    let val = elementwise(b, g, v, &args);
                    if let Some((at, off)) = scratch {
                        vector::store_at(b, n.dtype, &val, at, off);
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

fn elementwise(b: &mut FunctionBuilder, g: &Graph, v: ValueId, args: &[Vals]) -> Vals {
    let n = g.node(v);
    match &n.op {
        Op::Unary(u) => vector::unary(b, *u, n.dtype, &args[0]),
        Op::Binary(o) => vector::binary(b, *o, n.dtype, &args[0], &args[1]),
        Op::Compare(c) => vector::compare(b, *c, g.node(n.inputs[0]).dtype, &args[0], &args[1]),
        Op::Select => vector::select(b, n.dtype, &args[0], &args[1], &args[2]),
        Op::Cast(to) => vector::cast(b, g.node(n.inputs[0]).dtype, *to, &args[0]),
        other => unreachable!("{} in a row kernel", other.name()),
    }
}

pub fn build(b: &mut FunctionBuilder, g: &Graph, rk: &RowKernel, pl: &Plan, t: &Target) {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (ptrs, begin, end) = (params[0], params[1], params[2]);
    let nptr = rk.inputs.len() + rk.outputs.len();
    let bases: Vec<Value> = (0..nptr)
        .map(|i| b.ins().load(types::I64, flags(), ptrs, (i * 8) as i32))
        .collect();
    let starts: Vec<Value> = pl
        .accesses
        .iter()
        .map(|a| {
            b.ins()
                .iadd_imm_s(bases[a.ptr], a.offset * a.dtype.size() as i64)
        })
        .collect();
    let slots: Vec<Value> = pl
        .accesses
        .iter()
        .map(|a| {
            let ss = b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                (LANES * a.dtype.size()).max(16) as u32,
                4,
            ));
            b.ins().stack_addr(types::I64, ss, 0)
        })
        .collect();
    let values = stash_values(g, &pl, rk, t);
    let stash: HashMap<ValueId, Value> = values
        .iter()
        .map(|&(v, _)| {
            let bytes = ((pl.n + LANES) * g.node(v).dtype.size()) as u32;
            let ss = b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                bytes,
                4,
            ));
            (v, b.ins().stack_addr(types::I64, ss, 0))
        })
        .collect();
    let micro: Vec<(ValueId, MicroFn)> =
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
        b, g, &pl, rk, &starts, &slots, &stash, pin, 0, begin, end, &mut idx,
    );
    b.ins().return_(&[]);
}

/// Row-sized scratches of stashed values. A stashed transcendental with a micro-kernel
/// (`micro.rs`) is computed before the first phase that needs it: a pass over the row stores its
/// argument into its scratch, then one micro-kernel call turns the scratch into the result in
/// place (bit-identical to the inline function), and every phase loads it.
struct Stash {
    slots: HashMap<ValueId, Value>,
    /// The stashed values computed by micro-kernels, in node order.
    micro: Vec<(ValueId, MicroFn)>,
    /// Signature of the micro-kernels (when there are any).
    sig: Option<SigRef>,
}

/// Expensive element-level values evaluated in more than one phase, and
/// transcendentals with a micro-kernel (rows of at least `MIN_STAGED_RUN`), within
/// the scratch budget; with their micro-kernels.
pub(super) fn stash_values(
    g: &Graph,
    pl: &Plan,
    rk: &RowKernel,
    t: &Target,
) -> Vec<(ValueId, Option<MicroFn>)> {
    let cones = phase_cones(g, pl, rk);
    let mut out = Vec::new();
    let mut budget = STASH_BYTES;
    let mut members: Vec<ValueId> = rk.group.members.to_vec();
    members.sort();
    for m in members {
        let uses = cones.iter().filter(|c| c.contains(&m)).count();
        let bytes = (pl.n + LANES) * g.node(m).dtype.size();
        let n = g.node(m);
        let micro = match n.op {
            Op::Unary(u) if pl.n >= MIN_STAGED_RUN => micro::kernel(t, u, n.dtype),
            _ => None,
        };
        let wanted = (uses >= 2 && is_expensive(g, m)) || (uses >= 1 && micro.is_some());
        if wanted && bytes <= budget {
            budget -= bytes;
            out.push((m, micro));
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn outer(
    b: &mut FunctionBuilder,
    g: &Graph,
    pl: &Plan,
    rk: &RowKernel,
    starts: &[Value],
    slots: &[Value],
    stash: &Stash,
    pin_at: StackSlot,
    d: usize,
    lo: Value,
    hi: Value,
    idx: &mut Vec<Value>,
) {
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
            row(b, g, pl, rk, rows, slots, stash, pin_at);
        } else {
            let zero = b.ins().iconst(types::I64, 0);
            let n = b.ins().iconst(types::I64, pl.o_dims[d + 1] as i64);
            outer(
                b,
                g,
                pl,
                rk,
                starts,
                slots,
                stash,
                pin_at,
                d + 1,
                zero,
                n,
                idx,
            );
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
    pl: &Plan,
    rows: &[Value],
    slots: &[Value],
    lo: Value,
    hi: Value,
    known: Option<i64>,
    writes: bool,
    body: &mut VectorBody,
) {
    let lanes: Vec<Lane> = pl
        .accesses
        .iter()
        .enumerate()
        .map(|(a, acc)| {
            let output = pl.outs.contains(&a);
            Lane {
                size: acc.dtype.size(),
                // An output outside the final pass: no address, no copy.
                stride: if output && !writes { 0 } else { acc.i_stride },
                output: output && writes,
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

fn row(
    b: &mut FunctionBuilder,
    g: &Graph,
    pl: &Plan,
    rk: &RowKernel,
    rows: Vec<Value>,
    slots: &[Value],
    stash: &Stash,
    pin_at: StackSlot,
) {
    let grp = &rk.group;
    let mut ctx = Ctx {
        g,
        pl,
        rows,
        row_env: HashMap::new(),
        stash: stash.slots.clone(),
        stash_ready: HashSet::new(),
        pin: pin_at,
    };
    let cones = phase_cones(g, pl, rk);
    let mut phase = 0;
    let (reductions, deps) = reduction_deps(g, &grp.members);
    let row_level: Vec<ValueId> = grp
        .members
        .iter()
        .copied()
        .filter(|m| !matches!(g.node(*m).op, Op::Reduce(..)) && grp.is_row_shape(&g.node(*m).shape))
        .collect();
    let mut done: HashSet<ValueId> = HashSet::new();
    let zero = b.ins().iconst(types::I64, 0);
    let nrow = b.ins().iconst(types::I64, pl.n as i64);
    loop {
        compute_row_level(b, &mut ctx, &row_level, &deps, &done);
        let ready = ready_reductions(&reductions, &deps, &done);
        if ready.is_empty() {
            break;
        }
        micro_passes(b, &mut ctx, stash, &cones[phase], slots);
        reduce_phase(b, &mut ctx, &ready, slots, zero, nrow);
        done.extend(ready);
        // Values this phase stored are loaded by the next ones.
        let stored: Vec<ValueId> = ctx
            .stash
            .keys()
            .copied()
            .filter(|v| cones[phase].contains(v))
            .collect();
        ctx.stash_ready.extend(stored);
        phase += 1;
    }
    compute_row_level(b, &mut ctx, &row_level, &deps, &done);
    micro_passes(b, &mut ctx, stash, &cones[phase], slots);
    // Final pass: element-level outputs.
    let elem_outs: Vec<(usize, ValueId)> = rk
        .outputs
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, o)| {
            !matches!(g.node(*o).op, Op::Reduce(..)) && grp.is_element_shape(&g.node(*o).shape)
        })
        .collect();
    if !elem_outs.is_empty() {
        let targets: Vec<ValueId> = elem_outs.iter().map(|(_, o)| *o).collect();
        let rows = ctx.rows.clone();
        row_loop(
            b,
            pl,
            &rows,
            slots,
            zero,
            nrow,
            Some(pl.n as i64),
            true,
            &mut |b, addrs, pos, _, _| {
                let env = ctx.eval(b, addrs, pos, &targets);
                for (j, o) in &elem_outs {
                    let a = pl.outs[*j];
                    if let Addr::Run(p, off) = addrs[a] {
                        vector::store_at(b, g.node(*o).dtype, &env[o], p, off);
                    }
                }
            },
        );
    }
    // Row-level outputs: one scalar per row.
    for (j, &o) in rk.outputs.iter().enumerate() {
        let n = g.node(o);
        if matches!(n.op, Op::Reduce(..)) || !grp.is_element_shape(&n.shape) {
            let v = &ctx.row_env[&o];
            let ls = vector::lanes(b, v);
            let lane0 = if n.dtype == DType::Bool {
                let one = b.ins().iconst(types::I32, 1);
                let x = b.ins().band(ls[0], one);
                b.ins().ireduce(types::I8, x)
            } else {
                ls[0]
            };
            b.ins().store(flags(), lane0, ctx.rows[pl.outs[j]], 0);
        }
    }
}

/// Before a phase (`cone`: the members it evaluates): each micro-kernel value it needs that is
/// not in its scratch yet gets a pass over the row storing its argument there, then the
/// micro-kernel call on the scratch, in place.
fn micro_passes(
    b: &mut FunctionBuilder,
    ctx: &mut Ctx,
    stash: &Stash,
    cone: &HashSet<ValueId>,
    slots: &[Value],
) {
    let g = ctx.g;
    let pl = ctx.pl;
    for &(t, f) in &stash.micro {
        if !cone.contains(&t) || ctx.stash_ready.contains(&t) {
            continue;
        }
        let arg = g.node(t).inputs[0];
        let at = stash.slots[&t];
        let rows = ctx.rows.clone();
        let zero = b.ins().iconst(types::I64, 0);
        let nrow = b.ins().iconst(types::I64, pl.n as i64);
        let c: &Ctx = ctx;
        // Outputs untouched (`writes` false): see `row_loop`.
        row_loop(
            b,
            pl,
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

fn compute_row_level(
    b: &mut FunctionBuilder,
    ctx: &mut Ctx,
    row_level: &[ValueId],
    deps: &HashMap<ValueId, HashSet<ValueId>>,
    done: &HashSet<ValueId>,
) {
    let g = ctx.g;
    for &m in row_level {
        if ctx.row_env.contains_key(&m) || !deps[&m].iter().all(|x| done.contains(x)) {
            continue;
        }
        let n = g.node(m);
        let val = match &n.op {
            Op::Broadcast | Op::Reshape => ctx.row_env[&n.inputs[0]].clone(),
            _ => {
                let args: Vec<Vals> = n
                    .inputs
                    .iter()
                    .map(|&x| {
                        if let Some(v) = ctx.row_env.get(&x) {
                            v.clone()
                        } else if let Some(l) = const_value(g, x) {
                            vector::splat(b, g.node(x).dtype, l)
                        } else {
                            let a = ctx.pl.row_reads[&x];
                            vector::load_splat(b, ctx.pl.accesses[a].dtype, ctx.rows[a])
                        }
                    })
                    .collect();
                let val = elementwise(b, g, m, &args);
                val.iter().map(|&v| pin(b, ctx.pin, v)).collect()
            }
        };
        ctx.row_env.insert(m, val);
    }
}

/// One pass over the row computing the reductions `rs` together.
fn reduce_phase(
    b: &mut FunctionBuilder,
    ctx: &mut Ctx,
    rs: &[ValueId],
    slots: &[Value],
    zero: Value,
    nrow: Value,
) {
    let g = ctx.g;
    let pl = ctx.pl;
    struct Red {
        v: ValueId,
        op: ReduceOp,
        d: DType,
        /// The dtype a block folds in (`reduce::block_dtype`).
        block_d: DType,
        acc_d: DType,
        input: ValueId,
        total: Variable,
        accs: Vec<Vec<Variable>>,
        /// NaN met (float max/min: see `reduce::acc_step`), over the row.
        nan: Option<NanFlag>,
    }
    let mut reds: Vec<Red> = Vec::new();
    for &v in rs {
        let n = g.node(v);
        let Op::Reduce(op, _) = n.op.clone() else {
            unreachable!()
        };
        let d = n.dtype;
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
            input: n.inputs[0],
            total,
            accs: vec![],
            nan,
        });
    }
    let n = pl.n as i64;
    let targets: Vec<ValueId> = reds.iter().map(|r| r.input).collect();
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
            pl,
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
        let t = if r.acc_d != r.d {
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
