//! A traced function (`traced::trace`) as Cranelift IR on one F32X4 or F64X2 value: each
//! `SymOp` the instruction its x86 spelling and its micro-kernel intrinsic compute, so the
//! Cranelift kernels, the x86 kernels and the micro-kernels give the same bits.

use super::traced::{self, SymOp};
use crate::ir::UnaryOp;
use crate::DType;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;

/// `op` of `x` (F32X4 or F64X2) from its trace. Panics when `op` has none (`has`).
pub fn unary(b: &mut FunctionBuilder, op: UnaryOp, x: Value) -> Value {
    let ty = b.func.dfg.value_type(x);
    let (dtype, ity) = match ty {
        types::F32X4 => (DType::F32, types::I32X4),
        types::F64X2 => (DType::F64, types::I64X2),
        _ => panic!("jitfuse traced {op:?}: expected F32X4 or F64X2, got {ty}"),
    };
    let (ops, res) = traced::trace(op, dtype).expect("a traced function");
    let to_i = |b: &mut FunctionBuilder, v: Value| b.ins().bitcast(ity, MemFlagsData::new(), v);
    let to_f = |b: &mut FunctionBuilder, v: Value| b.ins().bitcast(ty, MemFlagsData::new(), v);
    // `m ? t : f` for an integer lane mask (one blendv).
    let sel = |b: &mut FunctionBuilder, m: Value, t: Value, f: Value| {
        let m = to_f(b, m);
        b.ins().bitselect(m, t, f)
    };
    let mut v: Vec<Value> = Vec::with_capacity(ops.len());
    for op in ops {
        let at = |j: u32| v[j as usize];
        let out = match op {
            SymOp::Arg => x,
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
