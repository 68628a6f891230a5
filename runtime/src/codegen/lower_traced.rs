//! A traced function (`traced::trace`) as Cranelift IR on F32X4 or F64X2 values: each
//! `SymOp` the instruction its x86 spelling and its micro-kernel intrinsic compute, so the
//! Cranelift kernels, the x86 kernels and the micro-kernels give the same bits.

use super::traced::{self, Function, SymOp};
use super::trig;
use crate::DType;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{
    types, AbiParam, BlockArg, InstBuilder, MemFlagsData, Signature, StackSlotData, StackSlotKind,
    Value,
};
use cranelift_frontend::FunctionBuilder;

/// Function `f` of `args` (F32X4 or F64X2; pow's x and y) from its trace. Panics when `f`
/// has none.
pub fn call(b: &mut FunctionBuilder, f: impl Into<Function>, args: &[Value]) -> Value {
    let f = f.into();
    let ty = b.func.dfg.value_type(args[0]);
    let (dtype, ity) = match ty {
        types::F32X4 => (DType::F32, types::I32X4),
        types::F64X2 => (DType::F64, types::I64X2),
        _ => panic!("jitfuse traced {f:?}: expected F32X4 or F64X2, got {ty}"),
    };
    let (ops, res) = traced::trace(f, dtype).expect("a traced function");
    let res = *res;
    let to_i = |b: &mut FunctionBuilder, v: Value| b.ins().bitcast(ity, MemFlagsData::new(), v);
    let to_f = |b: &mut FunctionBuilder, v: Value| b.ins().bitcast(ty, MemFlagsData::new(), v);
    // `m ? t : f` for an integer lane mask (one blendv).
    let sel = |b: &mut FunctionBuilder, m: Value, t: Value, f: Value| {
        let m = to_f(b, m);
        b.ins().bitselect(m, t, f)
    };
    let mut v: Vec<Value> = Vec::with_capacity(ops.len());
    // The n of each exact reduction, by the index of its `ExactR`.
    let mut exact_n: Vec<(u32, Value)> = Vec::new();
    for &op in ops {
        let at = |j: u32| v[j as usize];
        let out = match op {
            SymOp::Arg(i) => args[i as usize],
            SymOp::Const(bits) => {
                let s = match dtype {
                    DType::F64 => b.ins().f64const(f64::from_bits(bits)),
                    _ => b.ins().f32const(f32::from_bits(bits as u32)),
                };
                b.ins().splat(ty, s)
            }
            SymOp::Add(p, q) => b.ins().fadd(at(p), at(q)),
            SymOp::Sub(p, q) => b.ins().fsub(at(p), at(q)),
            SymOp::Mul(p, q) => b.ins().fmul(at(p), at(q)),
            SymOp::Div(p, q) => b.ins().fdiv(at(p), at(q)),
            SymOp::Fma(p, q, r) => b.ins().fma(at(p), at(q), at(r)),
            // minps/maxps: `a` where it compares, else `x` (a NaN `x` passes).
            SymOp::Min(a, x) => {
                let m = b.ins().fcmp(FloatCC::LessThan, at(a), at(x));
                sel(b, m, at(a), at(x))
            }
            SymOp::Max(a, x) => {
                let m = b.ins().fcmp(FloatCC::LessThan, at(x), at(a));
                sel(b, m, at(a), at(x))
            }
            SymOp::Lt(p, q) => b.ins().fcmp(FloatCC::LessThan, at(p), at(q)),
            SymOp::Eq(p, q) => b.ins().fcmp(FloatCC::Equal, at(p), at(q)),
            SymOp::Uge(p, q) => {
                let cc = FloatCC::UnorderedOrGreaterThanOrEqual;
                b.ins().fcmp(cc, at(p), at(q))
            }
            SymOp::Sel(m, t, f) => sel(b, at(m), at(t), at(f)),
            SymOp::And(p, q)
            | SymOp::Or(p, q)
            | SymOp::Xor(p, q)
            | SymOp::Iadd(p, q)
            | SymOp::Isub(p, q) => {
                let (p, q) = (to_i(b, at(p)), to_i(b, at(q)));
                let r = match op {
                    SymOp::And(..) => b.ins().band(p, q),
                    SymOp::Or(..) => b.ins().bor(p, q),
                    SymOp::Xor(..) => b.ins().bxor(p, q),
                    SymOp::Iadd(..) => b.ins().iadd(p, q),
                    _ => b.ins().isub(p, q),
                };
                to_f(b, r)
            }
            SymOp::ExactR(x, r, n, cos) => {
                let (r, n) = exact_reduction(b, at(x), at(r), at(n), cos);
                exact_n.push((v.len() as u32, n));
                r
            }
            SymOp::ExactN(j) => exact_n.iter().find(|e| e.0 == j).expect("its ExactR").1,
            SymOp::Shl(p, n) | SymOp::Shr(p, n) => {
                let p = to_i(b, at(p));
                let r = match op {
                    SymOp::Shl(..) => b.ins().ishl_imm_u(p, n as i64),
                    _ => b.ins().ushr_imm_u(p, n as i64),
                };
                to_f(b, r)
            }
        };
        v.push(out);
    }
    v[res as usize]
}

/// `SymOp::ExactR`: the lanes of x past the Cody–Waite range (`trig::F32_FAST`, `F64_FAST`)
/// get r and the sign word n from the exact reduction (`trig::sin_fix_*`, `cos_fix_*`), called
/// out of line only when some lane of the vector needs it: the ordinary path costs one compare
/// and a branch.
fn exact_reduction(
    b: &mut FunctionBuilder,
    x: Value,
    r: Value,
    n: Value,
    cos: bool,
) -> (Value, Value) {
    let ty = b.func.dfg.value_type(x);
    let d = ty == types::F64X2;
    let ity = if d { types::I64X2 } else { types::I32X4 };
    let xi = b.ins().bitcast(ity, MemFlagsData::new(), x);
    let sign = if d {
        i64::MIN
    } else {
        0x8000_0000u32 as i32 as i64
    };
    let sign = b.ins().iconst(ity.lane_type(), sign);
    let sign = b.ins().splat(ity, sign);
    let ax = b.ins().band_not(xi, sign);
    let ax = b.ins().bitcast(ty, MemFlagsData::new(), ax);
    let thr = if d { trig::F64_FAST } else { trig::F32_FAST };
    let thr = match d {
        true => b.ins().f64const(thr),
        false => b.ins().f32const(thr as f32),
    };
    let thr = b.ins().splat(ty, thr);
    let big = b.ins().fcmp(FloatCC::LessThan, thr, ax);
    let any = b.ins().vany_true(big);
    let slow = b.create_block();
    let join = b.create_block();
    let rj = b.append_block_param(join, ty);
    let nj = b.append_block_param(join, ty);
    let pass = [BlockArg::Value(r), BlockArg::Value(n)];
    b.ins().brif(any, slow, &[], join, &pass);
    b.set_cold_block(slow);
    b.switch_to_block(slow);
    let ss = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 48, 4));
    b.ins().stack_store(types::I64, x, ss, 0);
    b.ins().stack_store(types::I64, r, ss, 16);
    b.ins().stack_store(types::I64, n, ss, 32);
    let px = b.ins().stack_addr(types::I64, ss, 0);
    let pr = b.ins().stack_addr(types::I64, ss, 16);
    let pn = b.ins().stack_addr(types::I64, ss, 32);
    let lanes = b.ins().iconst(types::I64, if d { 2 } else { 4 });
    let mut sig = Signature::new(b.func.signature.call_conv);
    for _ in 0..4 {
        sig.params.push(AbiParam::new(types::I64));
    }
    let sig = b.import_signature(sig);
    let f = match (d, cos) {
        (false, false) => trig::sin_fix_f32 as *const () as usize,
        (false, true) => trig::cos_fix_f32 as *const () as usize,
        (true, false) => trig::sin_fix_f64 as *const () as usize,
        (true, true) => trig::cos_fix_f64 as *const () as usize,
    };
    let callee = b.ins().iconst(types::I64, f as i64);
    b.ins().call_indirect(sig, callee, &[px, pr, pn, lanes]);
    let r2 = b.ins().stack_load(types::I64, ty, ss, 16);
    let n2 = b.ins().stack_load(types::I64, ty, ss, 32);
    b.ins()
        .jump(join, &[BlockArg::Value(r2), BlockArg::Value(n2)]);
    b.switch_to_block(join);
    (rj, nj)
}
