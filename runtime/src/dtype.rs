//! Element types, the Rust types that carry them, and the promotion rules.

use std::fmt;

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// 64-bit IEEE float.
    F64,
    /// 32-bit signed integer (wrapping arithmetic).
    I32,
    /// 64-bit signed integer (wrapping arithmetic).
    I64,
    /// Truth value, one byte (0 or 1); takes part in no arithmetic (cast it).
    Bool,
    /// bfloat16: 16-bit storage (f32's exponent range, 8 significant bits). Ops compute
    /// in f32; a result is rounded to bf16 (nearest, ties to even) where it is stored
    /// (docs/accuracy.md: inside a fused kernel a chain keeps f32).
    BF16,
    /// IEEE binary16: 16-bit storage (11 significant bits, largest finite 65504). Ops
    /// compute in f32; a result is rounded to f16 where it is stored (overflow gives
    /// infinity).
    F16,
}

impl DType {
    /// Every dtype.
    pub const ALL: [DType; 7] = [
        DType::F32,
        DType::F64,
        DType::I32,
        DType::I64,
        DType::Bool,
        DType::BF16,
        DType::F16,
    ];

    /// Bytes of one element in memory (`bool` is one byte holding 0 or 1).
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::Bool => 1,
            DType::BF16 | DType::F16 => 2,
        }
    }

    /// `f32`, `f64`, `bf16` or `f16`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::BF16 | DType::F16)
    }

    /// `bf16` or `f16`: a storage type whose ops compute in `f32`.
    pub fn is_half(self) -> bool {
        matches!(self, DType::BF16 | DType::F16)
    }

    /// The type its ops compute in: `f32` for the 16-bit floats, itself otherwise.
    pub fn compute(self) -> DType {
        match self {
            DType::BF16 | DType::F16 => DType::F32,
            d => d,
        }
    }

    /// `v` rounded to this dtype's values, as an `f64` (nearest, ties to even, once; NaN
    /// stays NaN; f16 overflows to infinity). Identity for `f64`; for integer and bool
    /// dtypes see `Literal::as_f64`.
    pub fn round_f64(self, v: f64) -> f64 {
        match self {
            DType::F32 => v as f32 as f64,
            DType::BF16 => bf16_of(v).to_f64(),
            DType::F16 => f16_of(v).to_f64(),
            DType::F64 => v,
            _ => Literal::Float(v).as_f64(self),
        }
    }

    /// `i32` or `i64`.
    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::I64)
    }

    /// The name used in error messages and in the IR text (`f32`, `i64`, `bool`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::Bool => "bool",
            DType::BF16 => "bf16",
            DType::F16 => "f16",
        }
    }

    /// The dtype of a name (`DType::name`), if it is one.
    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }

    /// The dtype two tensors of an arithmetic op are promoted to, in the spirit
    /// of JAX's lattice: the wider of two ints or of two floats; int with float
    /// gives the float; bf16 with f16 gives f32 (neither holds the other). `bool`
    /// takes part in no arithmetic (cast it first): `None` means "no promotion exists".
    pub fn promote(a: DType, b: DType) -> Option<DType> {
        use DType::*;
        if a == b {
            return Some(a);
        }
        match (a, b) {
            (Bool, _) | (_, Bool) => None,
            (F64, _) | (_, F64) => Some(F64),
            (F32, _) | (_, F32) | (BF16, F16) | (F16, BF16) => Some(F32),
            (h, _) | (_, h) if h.is_half() => Some(h),
            _ => Some(I64), // i32 with i64
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that is the element type of a tensor: `f32`, `f64`, `i32`,
/// `i64`, `bool`, or the `half` crate's `bf16` and `f16`.
pub trait Element: sealed::Sealed + Copy + Send + Sync + PartialEq + fmt::Debug + 'static {
    /// The dtype of tensors of this element type.
    const DTYPE: DType;
    /// The value as an `f64` (`as` conversion; `true` is 1).
    fn to_f64(self) -> f64;
    /// The value as an `i64` (`as` conversion; floats truncate).
    fn to_i64(self) -> i64;
    /// A literal's value in this type (rounded or converted as `Literal::as_f64`/`as_i64`).
    fn from_literal(l: Literal) -> Self;
    /// The value as a literal.
    fn to_literal(self) -> Literal;
}

macro_rules! element {
    ($t:ty, $d:ident, $lit:ident) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn from_literal(l: Literal) -> Self {
                match l {
                    Literal::Float(v) => v as $t,
                    Literal::Int(v) => v as $t,
                    Literal::Bool(v) => v as u8 as $t,
                }
            }
            fn to_literal(self) -> Literal {
                Literal::$lit(self as _)
            }
        }
    };
}
element!(f32, F32, Float);
element!(f64, F64, Float);
element!(i32, I32, Int);
element!(i64, I64, Int);

macro_rules! half_element {
    ($t:ty, $d:ident, $of:ident) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            fn to_i64(self) -> i64 {
                <$t>::to_f64(self) as i64
            }
            fn from_literal(l: Literal) -> Self {
                $of(l.as_f64(DType::$d))
            }
            fn to_literal(self) -> Literal {
                Literal::Float(<$t>::to_f64(self))
            }
        }
    };
}
half_element!(half::bf16, BF16, bf16_of);
half_element!(half::f16, F16, f16_of);

impl sealed::Sealed for bool {}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn from_literal(l: Literal) -> Self {
        match l {
            Literal::Float(v) => v != 0.0,
            Literal::Int(v) => v != 0,
            Literal::Bool(v) => v,
        }
    }
    fn to_literal(self) -> Literal {
        Literal::Bool(self)
    }
}

/// A Rust scalar that may stand beside a tensor in arithmetic (`x * 2.0`).
/// Such scalars are *weakly typed*, as in JAX: they take the tensor's dtype,
/// except that a float scalar with an integer tensor promotes to `f32`.
pub trait Scalar: Copy + 'static {
    /// The value as a literal, dtype left open.
    fn literal(self) -> Literal;
}
impl Scalar for f32 {
    fn literal(self) -> Literal {
        Literal::Float(self as f64)
    }
}
impl Scalar for f64 {
    fn literal(self) -> Literal {
        Literal::Float(self)
    }
}
impl Scalar for i32 {
    fn literal(self) -> Literal {
        Literal::Int(self as i64)
    }
}
impl Scalar for i64 {
    fn literal(self) -> Literal {
        Literal::Int(self)
    }
}

/// A constant value before it is given a dtype. Floats are kept in `f64` and
/// rounded when the dtype is known, so a weak `0.1` with an `f32` tensor is the
/// `f32` nearest to 0.1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Literal {
    /// A float, kept in `f64` until its dtype is known.
    Float(f64),
    /// An integer.
    Int(i64),
    /// A truth value.
    Bool(bool),
}

impl Literal {
    /// The dtype a weak scalar gets beside a tensor of dtype `t`.
    pub fn weak_dtype(self, t: DType) -> Option<DType> {
        match (self, t) {
            (_, DType::Bool) => None,
            (Literal::Bool(_), _) => None,
            (Literal::Float(_), d) if d.is_int() => Some(DType::F32),
            (_, d) => Some(d),
        }
    }

    /// The value rounded to `dtype`, as an `f64` (exact for every i32 and f32;
    /// i64 constants beyond 2^53 go through `as_i64`).
    pub fn as_f64(self, dtype: DType) -> f64 {
        match dtype {
            DType::F32 | DType::F64 | DType::BF16 | DType::F16 => dtype.round_f64(self.raw_f64()),
            DType::I32 => self.as_i64(dtype) as f64,
            DType::I64 => self.as_i64(dtype) as f64,
            DType::Bool => (self.raw_f64() != 0.0) as u8 as f64,
        }
    }

    /// The value converted to `dtype`, as an `i64` (floats truncate, integers wrap to i32
    /// for `i32`, bools are 0 or 1).
    pub fn as_i64(self, dtype: DType) -> i64 {
        let v = match self {
            Literal::Float(v) => v as i64,
            Literal::Int(v) => v,
            Literal::Bool(v) => v as i64,
        };
        match dtype {
            DType::I32 => v as i32 as i64,
            DType::Bool => (v != 0) as i64,
            _ => v,
        }
    }

    fn raw_f64(self) -> f64 {
        match self {
            Literal::Float(v) => v,
            Literal::Int(v) => v as f64,
            Literal::Bool(v) => v as u8 as f64,
        }
    }

    /// The literal as it will be stored, converted to `dtype`.
    pub fn cast(self, dtype: DType) -> Literal {
        match dtype {
            DType::F32 | DType::F64 | DType::BF16 | DType::F16 => {
                Literal::Float(self.as_f64(dtype))
            }
            DType::I32 | DType::I64 => Literal::Int(self.as_i64(dtype)),
            DType::Bool => Literal::Bool(self.raw_f64() != 0.0),
        }
    }
}

/// `v` rounded once to bf16 (nearest, ties to even; NaN stays NaN, made quiet). Through
/// f32 rounded to odd: `half`'s own f64 conversions drop the low half of the f64 first,
/// which rounds values just above a tie as the tie.
pub fn bf16_of(v: f64) -> half::bf16 {
    half::bf16::from_f32(f32_rounded_to_odd(v))
}

/// `v` rounded once to f16 (nearest, ties to even; overflow to infinity; NaN stays NaN).
pub fn f16_of(v: f64) -> half::f16 {
    half::f16::from_f32(f32_rounded_to_odd(v))
}

/// `v` as an f32 rounded toward zero, its lowest bit set when inexact ("round to odd"):
/// rounding that f32 again to fewer than 23 bits gives `v` rounded once.
fn f32_rounded_to_odd(v: f64) -> f32 {
    let t = v as f32;
    if t.is_nan() || t as f64 == v {
        return t;
    }
    let mut b = t.to_bits();
    if (t as f64).abs() > v.abs() {
        b -= 1; // toward zero (sign and magnitude)
    }
    f32::from_bits(b | 1)
}
