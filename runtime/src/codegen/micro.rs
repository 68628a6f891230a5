//! Micro-kernels: the f32 transcendentals of `traced/` compiled by rustc for AVX-512F (16
//! lanes) and AVX2+FMA (8 lanes), `extern "C" fn(src, dst, n)` over a contiguous tile.
//!
//! Cranelift 0.135 lowers nothing wider than 128 bits on x86-64, so the loop kernels'
//! transcendental-heavy stage runs 4 lanes at a time. Tiled kernels (`kernel.rs`, "Tiled
//! kernels") compute a transcendental's argument for an L1-resident tile, call the micro-kernel
//! here on the tile, and consume the result.
//!
//! **Same function, bit for bit.** Each micro-kernel is the generic code of `traced/`, which
//! the Cranelift and x86 kernels lower from its trace (sin/cos: the operations of their
//! Cranelift twin in `math.rs`): the same constants rounded to f32, `fma`s, operand order of
//! `minps`/`maxps`, clamps and blends; division and `fma` are correctly rounded on every path.
//! So its results are bit-identical to the inline path (tested over every 97th f32 bit pattern
//! and the special values in `math_tests/`), and the error table of `math.rs` holds. The last partial vector is padded through a stack buffer (as the loop
//! kernels' padded tail), so `n` may be anything and `src == dst` is allowed.
//!
//! The instruction set is the target's (`Target::isa`): AVX-512F or AVX2+FMA; the portable
//! level has none (the inline Cranelift path is kept).

pub use super::target::Isa;
use super::target::Target;
use crate::ir::UnaryOp;
use crate::DType;

/// `extern "C" fn(src, dst, n)`: `dst[i] = f(src[i])` for `i < n` (src == dst allowed).
pub type MicroFn = unsafe extern "C" fn(*const f32, *mut f32, usize);

/// The micro-kernel of `op` on `dtype` for `target`, if there is one.
pub fn kernel(target: &Target, op: UnaryOp, dtype: DType) -> Option<MicroFn> {
    if dtype != DType::F32 || !target.micro {
        return None;
    }
    kernel_at(target.isa, op)
}

/// The micro-kernel of `op` (f32) for `isa` (None when the CPU lacks it).
pub fn kernel_at(isa: Isa, op: UnaryOp) -> Option<MicroFn> {
    if isa == Isa::Portable || isa > Isa::detected() {
        return None;
    }
    imp::kernel_at(isa, op)
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    pub fn kernel_at(_: super::Isa, _: crate::ir::UnaryOp) -> Option<super::MicroFn> {
        None
    }
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::super::traced::{
        cos, erf, exact_reduction_f32, exp, expm1, ln, log1p, sigmoid, sin, tanh, V,
    };
    use super::{Isa as Level, MicroFn};
    use crate::ir::UnaryOp;
    use core::arch::x86_64::*;

    pub fn kernel_at(level: Level, op: UnaryOp) -> Option<MicroFn> {
        let f: MicroFn = match (level, op) {
            (Level::Avx512, UnaryOp::Exp) => z::exp,
            (Level::Avx512, UnaryOp::Ln) => z::ln,
            (Level::Avx512, UnaryOp::Tanh) => z::tanh,
            (Level::Avx512, UnaryOp::Sigmoid) => z::sigmoid,
            (Level::Avx512, UnaryOp::Sin) => z::sin,
            (Level::Avx512, UnaryOp::Cos) => z::cos,
            (Level::Avx512, UnaryOp::Erf) => z::erf,
            (Level::Avx512, UnaryOp::Log1p) => z::log1p,
            (Level::Avx512, UnaryOp::Expm1) => z::expm1,
            (Level::Avx2, UnaryOp::Exp) => y::exp,
            (Level::Avx2, UnaryOp::Ln) => y::ln,
            (Level::Avx2, UnaryOp::Tanh) => y::tanh,
            (Level::Avx2, UnaryOp::Sigmoid) => y::sigmoid,
            (Level::Avx2, UnaryOp::Sin) => y::sin,
            (Level::Avx2, UnaryOp::Cos) => y::cos,
            (Level::Avx2, UnaryOp::Erf) => y::erf,
            (Level::Avx2, UnaryOp::Log1p) => y::log1p,
            (Level::Avx2, UnaryOp::Expm1) => y::expm1,
            _ => return None,
        };
        Some(f)
    }

    /// A vector type of `traced::V`: the same operations at two widths, named by their
    /// intrinsics (the bitwise ones on the integer view, so both widths spell them alike).
    macro_rules! lanes {
        ($T:ident($reg:ty), $n:literal, $M:ty, [$set1:ident $set1i:ident $load:ident
         $store:ident $add:ident $sub:ident $mul:ident $div:ident $fma:ident $min:ident
         $max:ident $and:ident $or:ident $xor:ident $iadd:ident $isub:ident $slli:ident
         $srli:ident $toi:ident $tof:ident],
         cmp($x:ident, $y:ident, $p:ident) $cmp:expr, sel($m:ident, $t:ident, $f:ident) $sel:expr,
         any($a:ident) $any:expr) => {
            #[derive(Clone, Copy)]
            struct $T($reg);

            impl $T {
                #[inline(always)]
                unsafe fn cmp<const $p: i32>($x: Self, $y: Self) -> $M {
                    $cmp
                }
            }

            impl V for $T {
                const N: usize = $n;
                const D: bool = false;
                type M = $M;
                #[inline(always)]
                unsafe fn splat(c: f64) -> Self {
                    $T($set1(c as f32))
                }
                #[inline(always)]
                unsafe fn bits(c: u64) -> Self {
                    $T($tof($set1i(c as u32 as i32)))
                }
                #[inline(always)]
                unsafe fn load(p: *const f32) -> Self {
                    $T($load(p))
                }
                #[inline(always)]
                unsafe fn store(self, p: *mut f32) {
                    $store(p, self.0)
                }
                #[inline(always)]
                unsafe fn add(self, o: Self) -> Self {
                    $T($add(self.0, o.0))
                }
                #[inline(always)]
                unsafe fn sub(self, o: Self) -> Self {
                    $T($sub(self.0, o.0))
                }
                #[inline(always)]
                unsafe fn mul(self, o: Self) -> Self {
                    $T($mul(self.0, o.0))
                }
                #[inline(always)]
                unsafe fn div(self, o: Self) -> Self {
                    $T($div(self.0, o.0))
                }
                #[inline(always)]
                unsafe fn fma(self, b: Self, c: Self) -> Self {
                    $T($fma(self.0, b.0, c.0))
                }
                #[inline(always)]
                unsafe fn min(self, x: Self) -> Self {
                    $T($min(self.0, x.0))
                }
                #[inline(always)]
                unsafe fn max(self, x: Self) -> Self {
                    $T($max(self.0, x.0))
                }
                #[inline(always)]
                unsafe fn lt(self, o: Self) -> $M {
                    Self::cmp::<_CMP_LT_OQ>(self, o)
                }
                #[inline(always)]
                unsafe fn eq(self, o: Self) -> $M {
                    Self::cmp::<_CMP_EQ_OQ>(self, o)
                }
                #[inline(always)]
                unsafe fn uge(self, o: Self) -> $M {
                    Self::cmp::<_CMP_NLT_UQ>(self, o)
                }
                #[inline(always)]
                unsafe fn sel($m: $M, $t: Self, $f: Self) -> Self {
                    $T($sel)
                }
                #[inline(always)]
                unsafe fn exact_reduction(x: Self, r: Self, n: Self, cos: bool) -> (Self, Self) {
                    exact_reduction_f32(x, r, n, cos)
                }
                #[inline(always)]
                unsafe fn any($a: $M) -> bool {
                    $any
                }
                #[inline(always)]
                unsafe fn and(self, o: Self) -> Self {
                    $T($tof($and($toi(self.0), $toi(o.0))))
                }
                #[inline(always)]
                unsafe fn or(self, o: Self) -> Self {
                    $T($tof($or($toi(self.0), $toi(o.0))))
                }
                #[inline(always)]
                unsafe fn xor(self, o: Self) -> Self {
                    $T($tof($xor($toi(self.0), $toi(o.0))))
                }
                #[inline(always)]
                unsafe fn iadd(self, o: Self) -> Self {
                    $T($tof($iadd($toi(self.0), $toi(o.0))))
                }
                #[inline(always)]
                unsafe fn isub(self, o: Self) -> Self {
                    $T($tof($isub($toi(self.0), $toi(o.0))))
                }
                #[inline(always)]
                unsafe fn shl_mant(self) -> Self {
                    $T($tof($slli::<23>($toi(self.0))))
                }
                #[inline(always)]
                unsafe fn shl_sign(self) -> Self {
                    $T($tof($slli::<31>($toi(self.0))))
                }
                #[inline(always)]
                unsafe fn shr_mant(self) -> Self {
                    $T($tof($srli::<23>($toi(self.0))))
                }
            }
        };
    }

    lanes!(Z(__m512), 16, __mmask16, [_mm512_set1_ps _mm512_set1_epi32 _mm512_loadu_ps
        _mm512_storeu_ps _mm512_add_ps _mm512_sub_ps _mm512_mul_ps _mm512_div_ps _mm512_fmadd_ps
        _mm512_min_ps _mm512_max_ps _mm512_and_si512 _mm512_or_si512 _mm512_xor_si512
        _mm512_add_epi32 _mm512_sub_epi32 _mm512_slli_epi32 _mm512_srli_epi32
        _mm512_castps_si512 _mm512_castsi512_ps],
        cmp(x, y, P) _mm512_cmp_ps_mask::<P>(x.0, y.0), sel(m, t, f) _mm512_mask_blend_ps(m, f.0, t.0),
        any(m) m != 0);
    lanes!(Y(__m256), 8, __m256, [_mm256_set1_ps _mm256_set1_epi32 _mm256_loadu_ps
        _mm256_storeu_ps _mm256_add_ps _mm256_sub_ps _mm256_mul_ps _mm256_div_ps _mm256_fmadd_ps
        _mm256_min_ps _mm256_max_ps _mm256_and_si256 _mm256_or_si256 _mm256_xor_si256
        _mm256_add_epi32 _mm256_sub_epi32 _mm256_slli_epi32 _mm256_srli_epi32
        _mm256_castps_si256 _mm256_castsi256_ps],
        cmp(x, y, P) _mm256_cmp_ps::<P>(x.0, y.0), sel(m, t, f) _mm256_blendv_ps(f.0, t.0, m),
        any(m) _mm256_movemask_ps(m) != 0);

    /// The loop of a micro-kernel: two vectors per iteration, then one, then the last partial
    /// vector padded through a stack buffer.
    macro_rules! micro {
        ($isa:literal, $T:ty, $($name:ident)*) => {$(
            #[target_feature(enable = $isa)]
            pub(super) unsafe extern "C" fn $name(src: *const f32, dst: *mut f32, n: usize) {
                type T = $T;
                let w = <T as V>::N;
                let mut i = 0;
                while i + 2 * w <= n {
                    let a = super::$name::<T>(T::load(src.add(i)));
                    let b = super::$name::<T>(T::load(src.add(i + w)));
                    a.store(dst.add(i));
                    b.store(dst.add(i + w));
                    i += 2 * w;
                }
                if i + w <= n {
                    super::$name::<T>(T::load(src.add(i))).store(dst.add(i));
                    i += w;
                }
                if i < n {
                    let mut buf = [0.0f32; 16];
                    let r = n - i;
                    std::ptr::copy_nonoverlapping(src.add(i), buf.as_mut_ptr(), r);
                    super::$name::<T>(T::load(buf.as_ptr())).store(buf.as_mut_ptr());
                    std::ptr::copy_nonoverlapping(buf.as_ptr(), dst.add(i), r);
                }
            }
        )*};
    }

    /// The micro-kernels at each width.
    mod z {
        use super::*;
        micro!("avx512f", Z, exp ln tanh sigmoid sin cos erf log1p expm1);
    }

    mod y {
        use super::*;
        micro!("avx2,fma", Y, exp ln tanh sigmoid sin cos erf log1p expm1);
    }
}
