//! Emission of one IR op on a "lane vector": LANES logical elements held in
//! one or two 128-bit Cranelift vectors (the widest x86-64 Cranelift lowers).
//!
//! Representation by dtype (`parts` of a `Vals`):
//! - f32: one F32X4; i32: one I32X4; bool: one I32X4 mask (all ones = true);
//! - f64: two F64X2; i64: two I64X2 (lanes 0-1, then 2-3);
//! - bf16, f16: one F32X4 holding values of the 16-bit type (`half.rs`: loads widen, stores
//!   narrow, casts to them round).
//! Ops without a vector lowering on x64 (integer division, 64-bit int <->
//! float casts) are done lane by lane on scalars.

use super::half;
use super::lower::{max_min_needs_nan_fixup, Local, LocalId, LocalOp};
use super::lower_traced;
use super::traced::Function;
use crate::ir::{BinaryOp, CmpOp, UnaryOp};
use crate::{DType, Literal};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, ConstantData, Endianness, InstBuilder, MemFlagsData, Type, Value,
};
use cranelift_frontend::FunctionBuilder;

pub const LANES: usize = 4;

pub type Vals = Vec<Value>;

/// The Cranelift type of each part, and how many parts a dtype takes.
pub fn part_type(d: DType) -> (Type, usize) {
    match d {
        DType::F32 | DType::BF16 | DType::F16 => (types::F32X4, 1),
        DType::I32 | DType::Bool => (types::I32X4, 1),
        DType::F64 => (types::F64X2, 2),
        DType::I64 => (types::I64X2, 2),
    }
}

pub fn scalar_type(d: DType) -> Type {
    match d {
        DType::F32 | DType::BF16 | DType::F16 => types::F32,
        DType::F64 => types::F64,
        DType::I32 | DType::Bool => types::I32,
        DType::I64 => types::I64,
    }
}

fn flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

fn le() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

/// A scalar constant of dtype `d` (bool: 0 or -1, the mask encoding).
pub fn scalar_const(b: &mut FunctionBuilder, d: DType, l: Literal) -> Value {
    match d {
        DType::F32 | DType::BF16 | DType::F16 => b.ins().f32const(l.as_f64(d) as f32),
        DType::F64 => b.ins().f64const(l.as_f64(d)),
        DType::I32 => b.ins().iconst(types::I32, l.as_i64(d) as i32 as i64),
        DType::I64 => b.ins().iconst(types::I64, l.as_i64(d)),
        DType::Bool => b.ins().iconst(types::I32, -(l.as_i64(d) & 1)),
    }
}

pub fn splat(b: &mut FunctionBuilder, d: DType, l: Literal) -> Vals {
    let s = scalar_const(b, d, l);
    let (ty, n) = part_type(d);
    let v = b.ins().splat(ty, s);
    vec![v; n]
}

/// Load LANES consecutive elements at `addr`.
pub fn load(b: &mut FunctionBuilder, d: DType, addr: Value) -> Vals {
    load_at(b, d, addr, 0)
}

/// Load LANES consecutive elements at `addr + off` bytes. The offset goes
/// into the instructions' displacement: an unrolled loop's vectors share one
/// address value (`addr + off` as a separate add was kept in the loop as a
/// `lea` per vector by Cranelift's optimiser).
pub fn load_at(b: &mut FunctionBuilder, d: DType, addr: Value, off: i32) -> Vals {
    match d {
        DType::Bool => {
            let w = b.ins().load(types::I32, flags(), addr, off);
            let v = b.ins().scalar_to_vector(types::I32X4, w);
            let v = b.ins().bitcast(types::I8X16, le(), v);
            let v = b.ins().uwiden_low(v);
            let v = b.ins().uwiden_low(v);
            let zero = b.ins().iconst(types::I32, 0);
            let zero = b.ins().splat(types::I32X4, zero);
            vec![b.ins().icmp(IntCC::NotEqual, v, zero)]
        }
        DType::BF16 | DType::F16 => {
            let h = b.ins().uload16x4(flags(), addr, off);
            vec![half::widen(b, d, h)]
        }
        _ => {
            let (ty, n) = part_type(d);
            (0..n)
                .map(|p| b.ins().load(ty, flags(), addr, off + (p * 16) as i32))
                .collect()
        }
    }
}

/// Load lane `l` from `addr + off + l * step` bytes (a strided view).
pub fn load_gather_at(b: &mut FunctionBuilder, d: DType, addr: Value, step: i64, off: i32) -> Vals {
    if d.is_half() {
        let ls: Vec<Value> = (0..LANES as i64)
            .map(|l| {
                b.ins()
                    .uload16(types::I32, flags(), addr, off + (l * step) as i32)
            })
            .collect();
        let h = from_lanes(b, DType::I32, &ls);
        return vec![half::widen(b, d, h[0])];
    }
    let ls: Vec<Value> = (0..LANES as i64)
        .map(|l| match d {
            DType::Bool => {
                let x = b
                    .ins()
                    .uload8(types::I32, flags(), addr, off + (l * step) as i32);
                b.ins().ineg(x)
            }
            _ => b
                .ins()
                .load(scalar_type(d), flags(), addr, off + (l * step) as i32),
        })
        .collect();
    from_lanes(b, d, &ls)
}

/// Load the one element at `addr` into every lane.
pub fn load_splat(b: &mut FunctionBuilder, d: DType, addr: Value) -> Vals {
    if d.is_half() {
        let x = b.ins().uload16(types::I32, flags(), addr, 0);
        let h = b.ins().splat(types::I32X4, x);
        return vec![half::widen(b, d, h)];
    }
    let (ty, n) = part_type(d);
    let s = match d {
        DType::Bool => {
            let x = b.ins().uload8(types::I32, flags(), addr, 0);
            b.ins().ineg(x)
        }
        _ => b.ins().load(scalar_type(d), flags(), addr, 0),
    };
    let v = b.ins().splat(ty, s);
    vec![v; n]
}

pub fn store(b: &mut FunctionBuilder, d: DType, v: &Vals, addr: Value) {
    store_at(b, d, v, addr, 0)
}

/// Store LANES consecutive elements at `addr + off` bytes (see `load_at`).
pub fn store_at(b: &mut FunctionBuilder, d: DType, v: &Vals, addr: Value, off: i32) {
    match d {
        DType::Bool => {
            let one = b.ins().iconst(types::I32, 1);
            let one = b.ins().splat(types::I32X4, one);
            let x = b.ins().band(v[0], one);
            let x = b.ins().unarrow(x, x); // I16X8
            let x = b.ins().unarrow(x, x); // I8X16
            let x = b.ins().bitcast(types::I32X4, le(), x);
            let w = b.ins().extractlane(x, 0);
            b.ins().store(flags(), w, addr, off);
        }
        DType::BF16 | DType::F16 => {
            let h = half::narrow(b, d, v[0]);
            let x = b.ins().unarrow(h, h); // I16X8, the patterns twice
            let x = b.ins().bitcast(types::I64X2, le(), x);
            let w = b.ins().extractlane(x, 0);
            b.ins().store(flags(), w, addr, off);
        }
        _ => {
            for (p, part) in v.iter().enumerate() {
                b.ins().store(flags(), *part, addr, off + (p * 16) as i32);
            }
        }
    }
}

/// Store lane 0 of `v` (a lane vector of dtype `d`) as one element at `addr + off` bytes.
pub fn store_lane0(b: &mut FunctionBuilder, d: DType, v: &Vals, addr: Value, off: i32) {
    match d {
        DType::Bool => {
            let x = b.ins().extractlane(v[0], 0);
            let one = b.ins().iconst(types::I32, 1);
            let x = b.ins().band(x, one);
            let x = b.ins().ireduce(types::I8, x);
            b.ins().store(flags(), x, addr, off);
        }
        DType::BF16 | DType::F16 => {
            let h = half::narrow(b, d, v[0]);
            let x = b.ins().extractlane(h, 0);
            b.ins().istore16(flags(), x, addr, off);
        }
        _ => {
            let x = b.ins().extractlane(v[0], 0);
            b.ins().store(flags(), x, addr, off);
        }
    }
}

/// Store scalar `s` of dtype `from` (of `scalar_type(from)`) as one element of dtype `d`,
/// converted (and rounded) once.
pub fn store_scalar(b: &mut FunctionBuilder, from: DType, d: DType, s: Value, addr: Value) {
    if d != DType::Bool && !d.is_half() {
        // One scalar conversion (an f64 total to f32), no vector round trip.
        let s = match (from, d) {
            (DType::F64, DType::F32) => b.ins().fdemote(types::F32, s),
            _ => {
                debug_assert_eq!(from, d, "a scalar stored in its own type");
                s
            }
        };
        b.ins().store(flags(), s, addr, 0);
        return;
    }
    let (ty, n) = part_type(from);
    let v = b.ins().splat(ty, s);
    let v = cast(b, from, d, &vec![v; n]);
    store_lane0(b, d, &v, addr, 0)
}

/// Shuffle the lanes of two 4x32-bit vectors of type `ty`: `idx` picks lanes
/// 0-3 of `x` and 4-7 of `y`.
fn shuffle32(b: &mut FunctionBuilder, ty: Type, x: Value, y: Value, idx: [u8; 4]) -> Value {
    let xb = b.ins().bitcast(types::I8X16, le(), x);
    let yb = b.ins().bitcast(types::I8X16, le(), y);
    let bytes: Vec<u8> = idx
        .iter()
        .flat_map(|&l| (0..4).map(move |k| l * 4 + k))
        .collect();
    let mask = b.func.dfg.immediates.push(ConstantData::from(bytes));
    let r = b.ins().shuffle(xb, yb, mask);
    b.ins().bitcast(ty, le(), r)
}

/// A mask over two I64X2 (or F64X2 compare results) narrowed to one I32X4.
fn narrow_mask(b: &mut FunctionBuilder, lo: Value, hi: Value) -> Value {
    let lo = b.ins().bitcast(types::I32X4, le(), lo);
    let hi = b.ins().bitcast(types::I32X4, le(), hi);
    shuffle32(b, types::I32X4, lo, hi, [0, 2, 4, 6])
}

/// An I32X4 mask widened to two I64X2 masks.
fn widen_mask(b: &mut FunctionBuilder, m: Value) -> [Value; 2] {
    [b.ins().swiden_low(m), b.ins().swiden_high(m)]
}

/// The scalar lanes of a value (LANES of them), in order.
pub fn lanes(b: &mut FunctionBuilder, v: &Vals) -> Vec<Value> {
    let per = LANES / v.len();
    v.iter()
        .flat_map(|&p| (0..per).map(move |l| (p, l as u8)).collect::<Vec<_>>())
        .map(|(p, l)| b.ins().extractlane(p, l))
        .collect()
}

/// Build a value of dtype `d` from LANES scalars of its scalar type.
fn from_lanes(b: &mut FunctionBuilder, d: DType, ls: &[Value]) -> Vals {
    let (ty, n) = part_type(d);
    let per = LANES / n;
    (0..n)
        .map(|p| {
            let mut v = b.ins().splat(ty, ls[p * per]);
            for l in 1..per {
                v = b.ins().insertlane(v, ls[p * per + l], l as u8);
            }
            v
        })
        .collect()
}

fn map_parts(v: &Vals, mut f: impl FnMut(Value) -> Value) -> Vals {
    v.iter().map(|&p| f(p)).collect()
}

fn zip_parts(a: &Vals, c: &Vals, mut f: impl FnMut(Value, Value) -> Value) -> Vals {
    a.iter().zip(c).map(|(&x, &y)| f(x, y)).collect()
}

/// Local `v` of a lowered kernel (a constant or an elementwise op) on its operands' vectors
/// (`args`, in operand order). Reads, reductions and broadcasts are the emitters' own.
pub fn local(b: &mut FunctionBuilder, locals: &[Local], v: LocalId, args: &[Vals]) -> Vals {
    let l = &locals[v];
    match l.op {
        LocalOp::Const(c) => splat(b, l.dtype, c),
        LocalOp::Unary(u, _) => unary(b, u, l.dtype, &args[0]),
        LocalOp::Binary(o @ (BinaryOp::Max | BinaryOp::Min), ..) if l.dtype.is_float() => {
            // The lowering decided whether the NaN fix-up is needed.
            let fixup = max_min_needs_nan_fixup(locals, l);
            let max = o == BinaryOp::Max;
            zip_parts(&args[0], &args[1], |p, q| nan_max_min(b, p, q, max, fixup))
        }
        LocalOp::Binary(o, ..) => binary(b, o, l.dtype, &args[0], &args[1]),
        LocalOp::Compare(c, x, _) => compare(b, c, locals[x].dtype, &args[0], &args[1]),
        LocalOp::Select(..) => select(b, l.dtype, &args[0], &args[1], &args[2]),
        LocalOp::Cast(x) => cast(b, locals[x].dtype, l.dtype, &args[0]),
        LocalOp::Read(_) | LocalOp::Reduce(..) | LocalOp::Broadcast(_) => {
            unreachable!("not elementwise: {l:?}")
        }
    }
}

pub fn unary(b: &mut FunctionBuilder, op: UnaryOp, d: DType, x: &Vals) -> Vals {
    let (ty, _) = part_type(d);
    if op == UnaryOp::Not {
        return map_parts(x, |p| b.ins().bnot(p));
    }
    if op == UnaryOp::StopGradient {
        return x.clone();
    }
    if d.is_float() {
        return map_parts(x, |p| match op {
            // Sign-bit masks from the constant pool: x64 lowers `fneg`/`fabs`
            // of a vector by rebuilding the mask (pcmpeqd + shift) at every use.
            UnaryOp::Neg => sign_op(b, ty, p, false),
            UnaryOp::Abs => sign_op(b, ty, p, true),
            UnaryOp::Sqrt => b.ins().sqrt(p),
            UnaryOp::Exp
            | UnaryOp::Ln
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Erf
            | UnaryOp::Log1p
            | UnaryOp::Expm1
            | UnaryOp::Sin
            | UnaryOp::Cos => lower_traced::call(b, op, &[p]),
            UnaryOp::Floor => b.ins().floor(p),
            UnaryOp::Relu
            | UnaryOp::Square
            | UnaryOp::Recip
            | UnaryOp::Rsqrt
            | UnaryOp::Not
            | UnaryOp::StopGradient => unreachable!("{op:?}: lowered to binary ops"),
        });
    }
    map_parts(x, |p| match op {
        UnaryOp::Neg => b.ins().ineg(p),
        UnaryOp::Abs => {
            let n = b.ins().ineg(p);
            b.ins().smax(p, n) // wraps at MIN like wrapping_abs
        }
        _ => unreachable!("{op:?} on integers: lowered to binary ops or rejected at trace time"),
    })
}

pub fn binary(b: &mut FunctionBuilder, op: BinaryOp, d: DType, x: &Vals, y: &Vals) -> Vals {
    if d.is_float() {
        return zip_parts(x, y, |p, q| match op {
            BinaryOp::Add => b.ins().fadd(p, q),
            BinaryOp::Sub => b.ins().fsub(p, q),
            BinaryOp::Mul => b.ins().fmul(p, q),
            BinaryOp::Div => b.ins().fdiv(p, q),
            BinaryOp::Max => nan_max_min(b, p, q, true, true),
            BinaryOp::Min => nan_max_min(b, p, q, false, true),
            BinaryOp::Pow => lower_traced::call(b, Function::Pow, &[p, q]),
            BinaryOp::Rem => float_rem(b, p, q),
            BinaryOp::And | BinaryOp::Or => unreachable!(),
        });
    }
    match op {
        BinaryOp::Div => int_div(b, d, x, y, false),
        BinaryOp::Rem => int_div(b, d, x, y, true),
        _ => zip_parts(x, y, |p, q| match op {
            BinaryOp::Add => b.ins().iadd(p, q),
            BinaryOp::Sub => b.ins().isub(p, q),
            BinaryOp::Mul => b.ins().imul(p, q),
            BinaryOp::Max => b.ins().smax(p, q),
            BinaryOp::Min => b.ins().smin(p, q),
            BinaryOp::And => b.ins().band(p, q),
            BinaryOp::Or => b.ins().bor(p, q),
            BinaryOp::Div | BinaryOp::Pow | BinaryOp::Rem => unreachable!(),
        }),
    }
}

/// `-x` (`abs = false`) or `|x|` as one bitwise op with a sign mask.
fn sign_op(b: &mut FunctionBuilder, ty: Type, x: Value, abs: bool) -> Value {
    let ity = if ty == types::F32X4 {
        types::I32X4
    } else {
        types::I64X2
    };
    let sign = if ty == types::F32X4 {
        b.ins().iconst(types::I32, 0x8000_0000u32 as i32 as i64)
    } else {
        b.ins().iconst(types::I64, i64::MIN)
    };
    let mask = b.ins().splat(ity, sign);
    let xi = b.ins().bitcast(ity, MemFlagsData::new(), x);
    let r = if abs {
        b.ins().band_not(xi, mask)
    } else {
        b.ins().bxor(xi, mask)
    };
    b.ins().bitcast(ty, MemFlagsData::new(), r)
}

/// NaN-propagating max (or min). x64 lowers exactly the blends
/// `y < x ? x : y` to `maxps x, y` and `x < y ? x : y` to `minps x, y`,
/// which return `y` when either is NaN; a NaN `x` is then restored with a
/// compare and a blend (3 instructions) where `fixup` (`max_min_needs_nan_fixup`:
/// not where `x` is a constant that is not NaN, 1 instruction). Cranelift's `fmax` costs ~7
/// instructions for IEEE's -0 < +0 ordering, which array code does not need
/// (max(-0, +0) may be either zero, as in NumPy and Rust's `f32::max`).
fn nan_max_min(b: &mut FunctionBuilder, x: Value, y: Value, max: bool, fixup: bool) -> Value {
    let ty = b.func.dfg.value_type(x);
    let x_safe = !fixup;
    let wins = if max {
        b.ins().fcmp(FloatCC::LessThan, y, x)
    } else {
        b.ins().fcmp(FloatCC::LessThan, x, y)
    };
    let wins = b.ins().bitcast(ty, MemFlagsData::new(), wins);
    let r = b.ins().bitselect(wins, x, y);
    if x_safe {
        return r;
    }
    let x_nan = b.ins().fcmp(FloatCC::Unordered, x, x);
    let x_nan = b.ins().bitcast(ty, MemFlagsData::new(), x_nan);
    b.ins().bitselect(x_nan, x, r)
}

/// Truncating division (or remainder) lane by lane, with XLA's definitions
/// where the hardware would trap: `x / 0 = -1`, `MIN / -1 = MIN`,
/// `x % 0 = x`, `MIN % -1 = 0`.
fn int_div(b: &mut FunctionBuilder, d: DType, x: &Vals, y: &Vals, rem: bool) -> Vals {
    let st = scalar_type(d);
    let xs = lanes(b, x);
    let ys = lanes(b, y);
    let out: Vec<Value> = xs
        .iter()
        .zip(&ys)
        .map(|(&a, &c)| {
            let is0 = b.ins().icmp_imm_s(IntCC::Equal, c, 0);
            let ism1 = b.ins().icmp_imm_s(IntCC::Equal, c, -1);
            let bad = b.ins().bor(is0, ism1);
            let one = b.ins().iconst(st, 1);
            let safe = b.ins().select(bad, one, c);
            if rem {
                let r = b.ins().srem(a, safe);
                let zero = b.ins().iconst(st, 0);
                let r = b.ins().select(ism1, zero, r);
                return b.ins().select(is0, a, r);
            }
            let q = b.ins().sdiv(a, safe);
            let neg = b.ins().ineg(a);
            let q = b.ins().select(ism1, neg, q);
            let m1 = b.ins().iconst(st, -1);
            b.ins().select(is0, m1, q)
        })
        .collect();
    from_lanes(b, d, &out)
}

/// Compare two values of dtype `d`; the result is a bool mask (one I32X4).
pub fn compare(b: &mut FunctionBuilder, op: CmpOp, d: DType, x: &Vals, y: &Vals) -> Vals {
    let parts: Vec<Value> = if d.is_float() {
        let cc = match op {
            CmpOp::Lt => FloatCC::LessThan,
            CmpOp::Le => FloatCC::LessThanOrEqual,
            CmpOp::Gt => FloatCC::GreaterThan,
            CmpOp::Ge => FloatCC::GreaterThanOrEqual,
            CmpOp::Eq => FloatCC::Equal,
            CmpOp::Ne => FloatCC::NotEqual,
        };
        zip_parts(x, y, |p, q| b.ins().fcmp(cc, p, q))
    } else {
        let cc = match op {
            CmpOp::Lt => IntCC::SignedLessThan,
            CmpOp::Le => IntCC::SignedLessThanOrEqual,
            CmpOp::Gt => IntCC::SignedGreaterThan,
            CmpOp::Ge => IntCC::SignedGreaterThanOrEqual,
            CmpOp::Eq => IntCC::Equal,
            CmpOp::Ne => IntCC::NotEqual,
        };
        zip_parts(x, y, |p, q| b.ins().icmp(cc, p, q))
    };
    if parts.len() == 2 {
        vec![narrow_mask(b, parts[0], parts[1])]
    } else {
        parts
    }
}

pub fn select(b: &mut FunctionBuilder, d: DType, c: &Vals, x: &Vals, y: &Vals) -> Vals {
    let (ty, n) = part_type(d);
    let masks: Vec<Value> = if n == 2 {
        widen_mask(b, c[0]).to_vec()
    } else {
        vec![c[0]]
    };
    masks
        .iter()
        .zip(x.iter().zip(y))
        .map(|(&m, (&p, &q))| {
            let m = if ty.lane_type().is_float() {
                b.ins().bitcast(ty, MemFlagsData::new(), m)
            } else {
                m
            };
            b.ins().bitselect(m, p, q)
        })
        .collect()
}

/// Convert a value of dtype `from` to `to`, both numbers (Rust `as` semantics: float to int
/// saturates, NaN gives 0; casts from and to bool are lowered to a select and a compare).
pub fn cast(b: &mut FunctionBuilder, from: DType, to: DType, x: &Vals) -> Vals {
    use DType::*;
    if from == to {
        return x.clone();
    }
    if from.is_half() || to.is_half() {
        return cast_half(b, from, to, x);
    }
    assert!(
        from != Bool && to != Bool,
        "bool casts are lowered to compare and select"
    );
    match (from, to) {
        (F32, I32) => vec![b.ins().fcvt_to_sint_sat(types::I32X4, x[0])],
        (I32, F32) => vec![b.ins().fcvt_from_sint(types::F32X4, x[0])],
        (F32, F64) => {
            let lo = b.ins().fvpromote_low(x[0]);
            let hi_in = shuffle32(b, types::F32X4, x[0], x[0], [2, 3, 2, 3]);
            let hi = b.ins().fvpromote_low(hi_in);
            vec![lo, hi]
        }
        (F64, F32) => {
            let lo = b.ins().fvdemote(x[0]);
            let hi = b.ins().fvdemote(x[1]);
            vec![shuffle32(b, types::F32X4, lo, hi, [0, 1, 4, 5])]
        }
        _ => {
            // Lane by lane on scalars.
            let ls = lanes(b, x);
            let st = scalar_type(to);
            let out: Vec<Value> = ls
                .iter()
                .map(|&s| match (from.is_float(), to.is_float()) {
                    (true, false) => b.ins().fcvt_to_sint_sat(st, s),
                    (false, true) => b.ins().fcvt_from_sint(st, s),
                    (true, true) => {
                        if to == F64 {
                            b.ins().fpromote(st, s)
                        } else {
                            b.ins().fdemote(st, s)
                        }
                    }
                    (false, false) => {
                        if to == I64 {
                            b.ins().sextend(st, s)
                        } else {
                            b.ins().ireduce(st, s)
                        }
                    }
                })
                .collect();
            from_lanes(b, to, &out)
        }
    }
}

/// A cast from or to a 16-bit float: from one, the f32 lanes it is held in are cast; to one,
/// f32 lanes are rounded, anything else goes through f64 (exact for i32 and f32) and rounds
/// once from there.
fn cast_half(b: &mut FunctionBuilder, from: DType, to: DType, x: &Vals) -> Vals {
    let from = from.compute();
    if !to.is_half() {
        return cast(b, from, to, x);
    }
    if from == DType::F32 {
        return vec![half::round(b, to, x[0])];
    }
    let w = cast(b, from, DType::F64, x);
    vec![half::round_f64(b, to, w[0], w[1])]
}

extern "C" fn fmod32(x: f32, y: f32) -> f32 {
    x % y
}
extern "C" fn fmod64(x: f64, y: f64) -> f64 {
    x % y
}

/// Float remainder (`fmod`, exact) lane by lane through a call: there is no
/// exact SIMD fmod, and `%` on floats is rare in array code.
fn float_rem(b: &mut FunctionBuilder, x: Value, y: Value) -> Value {
    use cranelift_codegen::ir::{AbiParam, Signature};
    let ty = b.func.dfg.value_type(x);
    let (lt, n, f) = if ty == types::F32X4 {
        (types::F32, 4u8, fmod32 as *const () as i64)
    } else {
        (types::F64, 2u8, fmod64 as *const () as i64)
    };
    let mut sig = Signature::new(cranelift_codegen::isa::CallConv::SystemV);
    sig.params.extend([AbiParam::new(lt), AbiParam::new(lt)]);
    sig.returns.push(AbiParam::new(lt));
    let sr = b.import_signature(sig);
    let fp = b.ins().iconst(types::I64, f);
    let first = b.ins().extractlane(x, 0);
    let mut out = b.ins().splat(ty, first);
    for l in 0..n {
        let (a, c) = (b.ins().extractlane(x, l), b.ins().extractlane(y, l));
        let call = b.ins().call_indirect(sr, fp, &[a, c]);
        let r = b.inst_results(call)[0];
        out = b.ins().insertlane(out, r, l);
    }
    out
}
