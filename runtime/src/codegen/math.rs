//! TEMPORARY: per-lane calls into Rust's libm, until the vectorised
//! approximations land. Same signatures as the final module.

use cranelift_codegen::ir::{types, AbiParam, InstBuilder, Signature, Value};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::FunctionBuilder;

extern "C" fn exp32(x: f32) -> f32 { x.exp() }
extern "C" fn ln32(x: f32) -> f32 { x.ln() }
extern "C" fn tanh32(x: f32) -> f32 { x.tanh() }
extern "C" fn sig32(x: f32) -> f32 { (1.0 / (1.0 + (-(x as f64)).exp())) as f32 }
extern "C" fn sin32(x: f32) -> f32 { x.sin() }
extern "C" fn cos32(x: f32) -> f32 { x.cos() }
extern "C" fn pow32(x: f32, y: f32) -> f32 { x.powf(y) }
extern "C" fn exp64(x: f64) -> f64 { x.exp() }
extern "C" fn ln64(x: f64) -> f64 { x.ln() }
extern "C" fn tanh64(x: f64) -> f64 { x.tanh() }
extern "C" fn sig64(x: f64) -> f64 { 1.0 / (1.0 + (-x).exp()) }
extern "C" fn sin64(x: f64) -> f64 { x.sin() }
extern "C" fn cos64(x: f64) -> f64 { x.cos() }
extern "C" fn erf32(x: f32) -> f32 { libm::erf(x as f64) as f32 }
extern "C" fn erf64(x: f64) -> f64 { libm::erf(x) }
extern "C" fn pow64(x: f64, y: f64) -> f64 { x.powf(y) }

fn per_lane(b: &mut FunctionBuilder, xs: &[Value], f32fn: usize, f64fn: usize) -> Value {
    let ty = b.func.dfg.value_type(xs[0]);
    let (lt, n, f) = if ty == types::F32X4 { (types::F32, 4u8, f32fn) } else { (types::F64, 2u8, f64fn) };
    let mut sig = Signature::new(CallConv::SystemV);
    for _ in xs {
        sig.params.push(AbiParam::new(lt));
    }
    sig.returns.push(AbiParam::new(lt));
    let sr = b.import_signature(sig);
    let fp = b.ins().iconst(types::I64, f as i64);
    let mut out = None;
    for l in 0..n {
        let args: Vec<Value> = xs.iter().map(|&x| b.ins().extractlane(x, l)).collect();
        let c = b.ins().call_indirect(sr, fp, &args);
        let r = b.inst_results(c)[0];
        out = Some(match out {
            None => b.ins().splat(ty, r),
            Some(v) => b.ins().insertlane(v, r, l),
        });
    }
    out.unwrap()
}

pub fn exp(b: &mut FunctionBuilder, x: Value) -> Value { per_lane(b, &[x], exp32 as usize, exp64 as usize) }
pub fn ln(b: &mut FunctionBuilder, x: Value) -> Value { per_lane(b, &[x], ln32 as usize, ln64 as usize) }
pub fn tanh(b: &mut FunctionBuilder, x: Value) -> Value { per_lane(b, &[x], tanh32 as usize, tanh64 as usize) }
pub fn sigmoid(b: &mut FunctionBuilder, x: Value) -> Value { per_lane(b, &[x], sig32 as usize, sig64 as usize) }
pub fn sin(b: &mut FunctionBuilder, x: Value) -> Value { per_lane(b, &[x], sin32 as usize, sin64 as usize) }
pub fn cos(b: &mut FunctionBuilder, x: Value) -> Value { per_lane(b, &[x], cos32 as usize, cos64 as usize) }
pub fn pow(b: &mut FunctionBuilder, x: Value, y: Value) -> Value { per_lane(b, &[x, y], pow32 as usize, pow64 as usize) }
pub fn erf(b: &mut FunctionBuilder, x: Value) -> Value { per_lane(b, &[x], erf32 as usize, erf64 as usize) }
