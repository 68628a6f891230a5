//! One kernel as one Cranelift function:
//! `extern "C" fn(ptrs: *const *mut u8, begin: i64, end: i64)`.
//!
//! `ptrs` holds the buffers of the kernel's inputs, then its outputs.
//! The iteration shape is first collapsed (size-1 dimensions dropped,
//! adjacent dimensions merged where every access is contiguous across them);
//! `begin..end` is a range of the outermost collapsed dimension, so callers
//! can split the work. The innermost dimension runs a SIMD loop unrolled
//! UNROLL times, then single vectors, then a *padded* tail: the last partial
//! vector is copied into stack slots and computed by the same vector code, so
//! tail elements get bit-identical results to body elements.

use super::lower::{LocalOp, LoopKernel, Tiling};
use super::target::Target;
use super::vector::{self, Vals, LANES};
use crate::DType;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, BlockArg, InstBuilder, MemFlagsData, SigRef, Signature, StackSlot,
    StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::FunctionBuilder;

/// Vectors per iteration of the unrolled loop (independent accumulators in reductions).
pub(super) const UNROLL: usize = 4;

/// Where the vector code finds an access at the current position. Byte
/// offsets are kept apart from the address value so that they land in the
/// instructions' displacement (the vectors of an unrolled group share one
/// address value).
#[derive(Clone, Copy)]
pub(super) enum Addr {
    /// LANES consecutive elements start at `base + off` bytes.
    Run(Value, i32),
    /// One element here is broadcast to every lane.
    Splat(Value),
    /// Lane l is at `base + off + l * stride` bytes.
    Gather(Value, i64, i32),
}

impl Addr {
    /// Read LANES elements of dtype `d`.
    pub(super) fn load(self, b: &mut FunctionBuilder, d: DType) -> Vals {
        match self {
            Addr::Run(x, off) => vector::load_at(b, d, x, off),
            Addr::Splat(x) => vector::load_splat(b, d, x),
            Addr::Gather(x, step, off) => vector::load_gather_at(b, d, x, step, off),
        }
    }

    /// The address of the first lane as one value.
    fn first(self, b: &mut FunctionBuilder) -> Value {
        match self {
            Addr::Run(x, 0) | Addr::Splat(x) | Addr::Gather(x, _, 0) => x,
            Addr::Run(x, off) | Addr::Gather(x, _, off) => b.ins().iadd_imm_s(x, off as i64),
        }
    }
}

/// A copy of `v` that Cranelift's optimiser cannot move: `v` stored to
/// `slot` (16 bytes) and loaded back. Values computed once per row (a row's
/// mean, its pointers) and used in the row's inner loops are pinned this way:
/// otherwise the egraph places pure instructions at their uses, and in these
/// nests it did not hoist them back out, so each vector of the inner loops
/// recomputed the whole row-level chain (horizontal sums, f64 conversions,
/// rsqrt) and the row addresses (W4: 9.1 -> 4.8 instructions per element;
/// docs/performance.md, "Kernel gaps").
pub(super) fn pin(b: &mut FunctionBuilder, slot: StackSlot, v: Value) -> Value {
    let ty = b.func.dfg.value_type(v);
    b.ins().stack_store(types::I64, v, slot, 0);
    b.ins().stack_load(types::I64, ty, slot, 0)
}

/// The kernel's entry block; returns its parameters `(ptrs, begin, end)`.
pub(super) fn enter(b: &mut FunctionBuilder) -> (Value, Value, Value) {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let p = b.block_params(entry);
    (p[0], p[1], p[2])
}

/// The address of a new stack slot of `bytes` (16-byte aligned).
pub(super) fn scratch(b: &mut FunctionBuilder, bytes: usize) -> Value {
    let ss = b.create_sized_stack_slot(StackSlotData::new(
        StackSlotKind::ExplicitSlot,
        bytes as u32,
        4,
    ));
    b.ins().stack_addr(types::I64, ss, 0)
}

/// The first element of each access `(ptr, offset, dtype)`: pointer `ptr` of the table at
/// `ptrs` (each pointer loaded once), plus `offset` elements.
pub(super) fn starts(
    b: &mut FunctionBuilder,
    ptrs: Value,
    accesses: &[(usize, i64, DType)],
) -> Vec<Value> {
    let flags = MemFlagsData::new().with_notrap();
    let nptr = accesses.iter().map(|a| a.0 + 1).max().unwrap_or(0);
    let bases: Vec<Value> = (0..nptr)
        .map(|i| b.ins().load(types::I64, flags, ptrs, (i * 8) as i32))
        .collect();
    (accesses.iter())
        .map(|&(ptr, offset, d)| b.ins().iadd_imm_s(bases[ptr], offset * d.size() as i64))
        .collect()
}

/// The 16-byte stack slot `pin` goes through.
pub(super) fn pin_slot(b: &mut FunctionBuilder) -> StackSlot {
    b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 4))
}

/// Emit a counted loop `for i in (lo..hi).step_by(step)` while `i + step <= hi`;
/// returns the first `i` not run.
///
/// The test is at the bottom (`i <= hi - step`, with a guard before the
/// loop), so an iteration ends in one add, compare and branch, instead of
/// a jump back to a header that tests again.
pub(super) fn emit_loop(
    b: &mut FunctionBuilder,
    lo: Value,
    hi: Value,
    step: i64,
    mut body: impl FnMut(&mut FunctionBuilder, Value),
) -> Value {
    let body_blk = b.create_block();
    let exit = b.create_block();
    let i = b.append_block_param(body_blk, types::I64);
    let out = b.append_block_param(exit, types::I64);
    let last = b.ins().iadd_imm_s(hi, -step);
    // Into the body with `i` while `i <= last`, else out with it.
    let test = |b: &mut FunctionBuilder, i: Value| {
        let go = b.ins().icmp(IntCC::SignedLessThanOrEqual, i, last);
        let to = [BlockArg::Value(i)];
        b.ins().brif(go, body_blk, &to, exit, &to);
    };
    test(b, lo);
    b.switch_to_block(body_blk);
    body(b, i);
    let next = b.ins().iadd_imm_s(i, step);
    test(b, next);
    b.switch_to_block(exit);
    out
}

pub fn build(b: &mut FunctionBuilder, p: &LoopKernel, t: &Target) {
    let (ptrs, begin, end) = enter(b);
    // Stack slots for the padded tail (one LANES-wide run per access).
    let slots: Vec<Value> = (p.accesses.iter())
        .map(|a| scratch(b, (LANES * a.dtype.size()).max(16)))
        .collect();
    let nd = p.dims.len();
    let inner = *p.dims.last().unwrap() as i64;
    let tiled = p.tiling.as_ref().map(|st| {
        let tiles = st.locals.iter().map(|_| scratch(b, t.tile * 4)).collect();
        let tail_slots = st.locals.iter().map(|_| scratch(b, LANES * 4)).collect();
        let mut sig = Signature::new(b.func.signature.call_conv);
        for _ in 0..3 {
            sig.params.push(AbiParam::new(types::I64));
        }
        let sig = b.import_signature(sig);
        TiledFrame {
            tiling: st,
            tiles,
            tail_slots,
            sig,
            tile: t.tile,
        }
    });
    let tiled = tiled.as_ref();
    // Each access's first element.
    let accesses: Vec<_> = p
        .accesses
        .iter()
        .map(|a| (a.ptr, a.offset, a.dtype))
        .collect();
    let starts = starts(b, ptrs, &accesses);
    if nd == 1 {
        // begin..end is the inner range itself.
        let rows = starts;
        emit_inner(b, p, tiled, &rows, &slots, begin, end, None);
    } else {
        // Outer loops: dim 0 over begin..end, dims 1..nd-1 full.
        let mut idx: Vec<Value> = Vec::new();
        let pin_at = pin_slot(b);
        emit_outer(
            b, p, tiled, &starts, &slots, begin, end, 0, &mut idx, inner, pin_at,
        );
    }
    b.ins().return_(&[]);
}

#[allow(clippy::too_many_arguments)]
fn emit_outer(
    b: &mut FunctionBuilder,
    p: &LoopKernel,
    tiled: Option<&TiledFrame<'_>>,
    bases: &[Value],
    slots: &[Value],
    lo: Value,
    hi: Value,
    d: usize,
    idx: &mut Vec<Value>,
    inner: i64,
    pin_at: StackSlot,
) {
    let nd = p.dims.len();
    emit_loop(b, lo, hi, 1, |b, j| {
        idx.push(j);
        if d + 2 == nd {
            // Row bases for the inner loop.
            let rows: Vec<Value> = p
                .accesses
                .iter()
                .enumerate()
                .map(|(ai, a)| {
                    let mut off = b.ins().iconst(types::I64, 0);
                    for (dd, &jv) in idx.iter().enumerate() {
                        let bytes = a.strides[dd] * a.dtype.size() as i64;
                        if bytes != 0 {
                            let t = b.ins().imul_imm_s(jv, bytes);
                            off = b.ins().iadd(off, t);
                        }
                    }
                    // Pinned: computed once per row, not per vector.
                    let at = b.ins().iadd(bases[ai], off);
                    pin(b, pin_at, at)
                })
                .collect();
            let zero = b.ins().iconst(types::I64, 0);
            let n = b.ins().iconst(types::I64, inner);
            emit_inner(b, p, tiled, &rows, slots, zero, n, Some(inner));
        } else {
            let zero = b.ins().iconst(types::I64, 0);
            let n = b.ins().iconst(types::I64, p.dims[d + 1] as i64);
            emit_outer(
                b,
                p,
                tiled,
                bases,
                slots,
                zero,
                n,
                d + 1,
                idx,
                inner,
                pin_at,
            );
        }
        idx.pop();
    });
}

/// The inner loop over elements lo..hi of a row (`known` = static length).
#[allow(clippy::too_many_arguments)]
fn emit_inner(
    b: &mut FunctionBuilder,
    p: &LoopKernel,
    tiled: Option<&TiledFrame<'_>>,
    rows: &[Value],
    slots: &[Value],
    lo: Value,
    hi: Value,
    known: Option<i64>,
) {
    if let Some(tiled) = tiled {
        return emit_tiled(b, p, tiled, rows, slots, lo, hi);
    }
    let lanes: Vec<Lane> = p
        .accesses
        .iter()
        .enumerate()
        .map(|(a, acc)| Lane {
            size: acc.dtype.size(),
            stride: *acc.strides.last().unwrap(),
            output: p.is_output(a),
            read: p.is_read(a),
        })
        .collect();
    vector_loop(
        b,
        &lanes,
        rows,
        slots,
        lo,
        hi,
        known,
        UNROLL,
        &mut |b, addrs, _, _, _| emit_vector(b, p, addrs, None),
    );
}

/// How one access moves along a run of elements: element size, stride in
/// elements (0: the same element for every lane), whether it is written, and whether it is
/// read (an output may be both: a fused column sum).
pub(super) struct Lane {
    pub size: usize,
    pub stride: i64,
    pub output: bool,
    pub read: bool,
}

/// Run `body` over elements `lo..hi` of a run, LANES at a time: an unrolled
/// loop of `unroll` vectors, single vectors, then a *padded* tail (inputs
/// copied into `slots`, outputs computed there and copied back), so tail
/// elements go through the same vector code. `body(b, addrs, pos, u, tail)`
/// gets each vector's addresses, its first element's index (`pos.0 + pos.1`:
/// the unrolled group's first index and the vector's place in it), its place in
/// its group of vectors and the group's size (`(u, unroll)` in the unrolled
/// loop, `(0, 1)` after it), and in the tail the count of real lanes. `known`
/// (a static length) drops loops that cannot run.
/// What `vector_loop` runs per vector: `(b, addrs, pos, (u, group), tail)`.
pub(super) type VectorBody<'a> =
    dyn FnMut(&mut FunctionBuilder, &[Addr], (Value, i64), (usize, usize), Option<Value>) + 'a;

#[allow(clippy::too_many_arguments)]
pub(super) fn vector_loop(
    b: &mut FunctionBuilder,
    lanes: &[Lane],
    rows: &[Value],
    slots: &[Value],
    lo: Value,
    hi: Value,
    known: Option<i64>,
    unroll: usize,
    body: &mut VectorBody,
) {
    let l = LANES as i64;
    let w = l * unroll as i64;
    // Element `i + extra`: one address value per access and `i`, the
    // `extra` elements in the displacement (when it fits).
    let addr_at = |b: &mut FunctionBuilder, i: Value, extra: i64| -> Vec<Addr> {
        lanes
            .iter()
            .enumerate()
            .map(|(a, lane)| {
                if lane.stride == 0 {
                    return Addr::Splat(rows[a]);
                }
                let step = lane.stride * lane.size as i64;
                let off = b.ins().imul_imm_s(i, step);
                let mut at = b.ins().iadd(rows[a], off);
                let mut disp = extra * step;
                let reach = disp.abs() + (LANES as i64 * step).abs();
                if reach > i32::MAX as i64 / 2 {
                    at = b.ins().iadd_imm_s(at, disp);
                    disp = 0;
                }
                if lane.stride == 1 {
                    Addr::Run(at, disp as i32)
                } else {
                    Addr::Gather(at, step, disp as i32)
                }
            })
            .collect()
    };
    let mut i = lo;
    if known.is_none_or(|n| n >= w) {
        i = emit_loop(b, i, hi, w, |b, i| {
            for u in 0..unroll {
                let addrs = addr_at(b, i, u as i64 * l);
                body(b, &addrs, (i, u as i64 * l), (u, unroll), None);
            }
        });
    }
    if unroll > 1 && known.is_none_or(|n| n % w >= l) {
        i = emit_loop(b, i, hi, l, |b, i| {
            let addrs = addr_at(b, i, 0);
            body(b, &addrs, (i, 0), (0, 1), None);
        });
    }
    if known.is_none_or(|n| n % l != 0) {
        let tail = b.create_block();
        let done = b.create_block();
        let more = b.ins().icmp(IntCC::SignedLessThan, i, hi);
        b.ins().brif(more, tail, &[], done, &[]);
        b.switch_to_block(tail);
        let r = b.ins().isub(hi, i);
        let addrs = addr_at(b, i, 0);
        // Inputs: copy r elements into their slots; outputs: compute into slots.
        let tail_addrs: Vec<Addr> = addrs
            .iter()
            .enumerate()
            .map(|(a, ad)| match *ad {
                Addr::Splat(x) => Addr::Splat(x),
                Addr::Run(..) | Addr::Gather(..) => {
                    let size = lanes[a].size;
                    let step = if let Addr::Gather(_, st, _) = *ad {
                        st
                    } else {
                        size as i64
                    };
                    if lanes[a].read {
                        let src = ad.first(b);
                        copy_elems(b, src, step, slots[a], r, size);
                    }
                    Addr::Run(slots[a], 0)
                }
            })
            .collect();
        body(b, &tail_addrs, (i, 0), (0, 1), Some(r));
        for (a, lane) in lanes.iter().enumerate() {
            if let (true, Addr::Run(..)) = (lane.output, addrs[a]) {
                let dst = addrs[a].first(b);
                copy_elems(b, slots[a], lane.size as i64, dst, r, lane.size);
            }
        }
        b.ins().jump(done, &[]);
        b.switch_to_block(done);
    }
}

/// Copy `n` elements of `size` bytes (a dynamic count below LANES), reading
/// every `src_step` bytes and writing contiguously.
pub(super) fn copy_elems(
    b: &mut FunctionBuilder,
    src: Value,
    src_step: i64,
    dst: Value,
    n: Value,
    size: usize,
) {
    let ty = match size {
        1 => types::I8,
        2 => types::I16,
        4 => types::I32,
        _ => types::I64,
    };
    let flags = MemFlagsData::new().with_notrap();
    let zero = b.ins().iconst(types::I64, 0);
    emit_loop(b, zero, n, 1, |b, j| {
        let soff = b.ins().imul_imm_s(j, src_step);
        let off = b.ins().imul_imm_s(j, size as i64);
        let s = b.ins().iadd(src, soff);
        let d = b.ins().iadd(dst, off);
        let v = b.ins().load(ty, flags, s, 0);
        b.ins().store(flags, v, d, 0);
    });
}

/// Compute every local of the kernel on one lane vector and store the outputs; or, in a tiled
/// kernel (`pass` = the tiling and the pass number), the pass's roots from its leaves.
fn emit_vector(
    b: &mut FunctionBuilder,
    p: &LoopKernel,
    addrs: &[Addr],
    pass: Option<(&Tiling, usize)>,
) {
    let mut env: Vec<Option<Vals>> = vec![None; p.locals.len()];
    let cone = pass.map(|(st, r)| st.cone(p, r));
    for v in 0..p.locals.len() {
        if let (Some(cone), Some((st, r))) = (&cone, pass) {
            if !cone[v] {
                continue;
            }
            if let Some(j) = st.done_before(v, r) {
                let Addr::Run(x, off) = addrs[p.accesses.len() + j] else {
                    unreachable!("tiles are contiguous")
                };
                env[v] = Some(vector::load_at(b, DType::F32, x, off));
                continue;
            }
        }
        let val = match p.locals[v].op {
            LocalOp::Read(a) => addrs[a].load(b, p.accesses[a].dtype),
            op => {
                let args: Vec<Vals> = (op.operands().iter())
                    .map(|&x| env[x].clone().expect("operands come first"))
                    .collect();
                vector::local(b, &p.locals, v, &args)
            }
        };
        env[v] = Some(val);
    }
    let value = |v: usize| env[v].as_ref().expect("a root of the pass");
    match pass {
        Some((st, r)) if r < st.last => {
            // A transcendental's argument into its tile.
            for (arg, j) in st.roots(p, r) {
                if let Addr::Run(x, off) = addrs[p.accesses.len() + j.expect("a tile")] {
                    vector::store_at(b, DType::F32, value(arg), x, off);
                }
            }
        }
        _ => {
            for &(o, a) in &p.outputs {
                if let Addr::Run(x, off) = addrs[a] {
                    vector::store_at(b, p.accesses[a].dtype, value(o), x, off);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tiled kernels: transcendentals computed tile by tile by rustc micro-kernels (micro.rs)
// ---------------------------------------------------------------------------------------------

/// A tiled kernel's codegen state: its tiling, a tile (`tile` f32, on the stack: per call, so
/// per thread) and a padded-tail slot per tiled node, and the micro-kernels' signature.
struct TiledFrame<'s> {
    tiling: &'s Tiling,
    tiles: Vec<Value>,
    tail_slots: Vec<Value>,
    sig: SigRef,
    tile: usize,
}

/// Elements lo..hi of a run, tile by tile: per tile, each sweep (a vector loop storing
/// the arguments into the tiles, then one micro-kernel call per tiled node, in place), then the
/// final pass computing the outputs. Accesses a pass does not touch get stride 0 (no address
/// arithmetic, no tail copies).
#[allow(clippy::too_many_arguments)]
fn emit_tiled(
    b: &mut FunctionBuilder,
    p: &LoopKernel,
    tiled: &TiledFrame<'_>,
    rows: &[Value],
    slots: &[Value],
    lo: Value,
    hi: Value,
) {
    let st = tiled.tiling;
    let na = p.accesses.len();
    let header = b.create_block();
    let body = b.create_block();
    let exit = b.create_block();
    let t0 = b.append_block_param(header, types::I64);
    b.ins().jump(header, &[BlockArg::Value(lo)]);
    b.switch_to_block(header);
    let go = b.ins().icmp(IntCC::SignedLessThan, t0, hi);
    b.ins().brif(go, body, &[], exit, &[]);
    b.switch_to_block(body);
    let full = b.ins().iadd_imm_s(t0, tiled.tile as i64);
    let short = b.ins().icmp(IntCC::SignedLessThan, hi, full);
    let t1 = b.ins().select(short, hi, full);
    let n = b.ins().isub(t1, t0);
    // Tile j's element i (t0 <= i < t1) is at tile_j + (i - t0) * 4.
    let back = b.ins().imul_imm_s(t0, -4);
    let mut all_rows = rows.to_vec();
    for &t in &tiled.tiles {
        all_rows.push(b.ins().iadd(t, back));
    }
    let mut all_slots = slots.to_vec();
    all_slots.extend_from_slice(&tiled.tail_slots);
    for r in 0..=st.last {
        let cone = st.cone(p, r);
        let mut used = vec![false; na + st.locals.len()];
        let mut out = vec![false; na + st.locals.len()];
        let mut read = vec![false; na + st.locals.len()];
        for v in (0..p.locals.len()).filter(|&v| cone[v]) {
            if let Some(j) = st.done_before(v, r) {
                used[na + j] = true;
                read[na + j] = true;
            } else if let LocalOp::Read(a) = p.locals[v].op {
                used[a] = true;
                read[a] = true;
            }
        }
        // Where the pass stores: its roots' tiles, or (the last pass) the outputs.
        let stores: Vec<usize> = match r < st.last {
            true => (st.roots(p, r).iter())
                .map(|&(_, j)| na + j.expect("a tile"))
                .collect(),
            false => p.outputs.iter().map(|&(_, a)| a).collect(),
        };
        for a in stores {
            used[a] = true;
            out[a] = true;
        }
        let lanes: Vec<Lane> = (0..na + st.locals.len())
            .map(|a| {
                let (size, stride) = if a < na {
                    let acc = &p.accesses[a];
                    (acc.dtype.size(), *acc.strides.last().unwrap())
                } else {
                    (4, 1)
                };
                Lane {
                    size,
                    stride: if used[a] { stride } else { 0 },
                    output: out[a],
                    read: read[a],
                }
            })
            .collect();
        vector_loop(
            b,
            &lanes,
            &all_rows,
            &all_slots,
            t0,
            t1,
            None,
            UNROLL,
            &mut |b, addrs, _, _, _| emit_vector(b, p, addrs, Some((st, r))),
        );
        if r < st.last {
            for (j, &(_, sweep, f)) in st.locals.iter().enumerate() {
                if sweep == r {
                    let callee = b.ins().iconst(types::I64, f as usize as i64);
                    let tile = tiled.tiles[j];
                    b.ins().call_indirect(tiled.sig, callee, &[tile, tile, n]);
                }
            }
        }
    }
    b.ins().jump(header, &[BlockArg::Value(t1)]);
    b.switch_to_block(exit);
}
