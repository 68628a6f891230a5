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

    #[derive(Clone, Copy)]
    struct Z(__m512);

    impl V for Z {
        const N: usize = 16;
        const D: bool = false;
        type M = __mmask16;
        #[inline(always)]
        unsafe fn splat(c: f64) -> Self {
            Z(_mm512_set1_ps(c as f32))
        }
        #[inline(always)]
        unsafe fn bits(c: u64) -> Self {
            Z(_mm512_castsi512_ps(_mm512_set1_epi32(c as u32 as i32)))
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Z(_mm512_loadu_ps(p))
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            _mm512_storeu_ps(p, self.0)
        }
        #[inline(always)]
        unsafe fn add(self, o: Self) -> Self {
            Z(_mm512_add_ps(self.0, o.0))
        }
        #[inline(always)]
        unsafe fn sub(self, o: Self) -> Self {
            Z(_mm512_sub_ps(self.0, o.0))
        }
        #[inline(always)]
        unsafe fn mul(self, o: Self) -> Self {
            Z(_mm512_mul_ps(self.0, o.0))
        }
        #[inline(always)]
        unsafe fn div(self, o: Self) -> Self {
            Z(_mm512_div_ps(self.0, o.0))
        }
        #[inline(always)]
        unsafe fn fma(self, b: Self, c: Self) -> Self {
            Z(_mm512_fmadd_ps(self.0, b.0, c.0))
        }
        #[inline(always)]
        unsafe fn min(self, x: Self) -> Self {
            Z(_mm512_min_ps(self.0, x.0))
        }
        #[inline(always)]
        unsafe fn max(self, x: Self) -> Self {
            Z(_mm512_max_ps(self.0, x.0))
        }
        #[inline(always)]
        unsafe fn lt(self, o: Self) -> __mmask16 {
            _mm512_cmp_ps_mask::<_CMP_LT_OQ>(self.0, o.0)
        }
        #[inline(always)]
        unsafe fn eq(self, o: Self) -> __mmask16 {
            _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(self.0, o.0)
        }
        #[inline(always)]
        unsafe fn uge(self, o: Self) -> __mmask16 {
            _mm512_cmp_ps_mask::<_CMP_NLT_UQ>(self.0, o.0)
        }
        #[inline(always)]
        unsafe fn sel(m: __mmask16, t: Self, f: Self) -> Self {
            Z(_mm512_mask_blend_ps(m, f.0, t.0))
        }
        #[inline(always)]
        unsafe fn exact_reduction(x: Self, r: Self, n: Self, cos: bool) -> (Self, Self) {
            exact_reduction_f32(x, r, n, cos)
        }
        #[inline(always)]
        unsafe fn any(m: __mmask16) -> bool {
            m != 0
        }
        #[inline(always)]
        unsafe fn and(self, o: Self) -> Self {
            Z(_mm512_castsi512_ps(_mm512_and_si512(
                _mm512_castps_si512(self.0),
                _mm512_castps_si512(o.0),
            )))
        }
        #[inline(always)]
        unsafe fn or(self, o: Self) -> Self {
            Z(_mm512_castsi512_ps(_mm512_or_si512(
                _mm512_castps_si512(self.0),
                _mm512_castps_si512(o.0),
            )))
        }
        #[inline(always)]
        unsafe fn xor(self, o: Self) -> Self {
            Z(_mm512_castsi512_ps(_mm512_xor_si512(
                _mm512_castps_si512(self.0),
                _mm512_castps_si512(o.0),
            )))
        }
        #[inline(always)]
        unsafe fn iadd(self, o: Self) -> Self {
            Z(_mm512_castsi512_ps(_mm512_add_epi32(
                _mm512_castps_si512(self.0),
                _mm512_castps_si512(o.0),
            )))
        }
        #[inline(always)]
        unsafe fn isub(self, o: Self) -> Self {
            Z(_mm512_castsi512_ps(_mm512_sub_epi32(
                _mm512_castps_si512(self.0),
                _mm512_castps_si512(o.0),
            )))
        }
        #[inline(always)]
        unsafe fn shl_mant(self) -> Self {
            Z(_mm512_castsi512_ps(_mm512_slli_epi32::<23>(
                _mm512_castps_si512(self.0),
            )))
        }
        #[inline(always)]
        unsafe fn shl_sign(self) -> Self {
            Z(_mm512_castsi512_ps(_mm512_slli_epi32::<31>(
                _mm512_castps_si512(self.0),
            )))
        }
        #[inline(always)]
        unsafe fn shr_mant(self) -> Self {
            Z(_mm512_castsi512_ps(_mm512_srli_epi32::<23>(
                _mm512_castps_si512(self.0),
            )))
        }
    }

    #[derive(Clone, Copy)]
    struct Y(__m256);

    impl V for Y {
        const N: usize = 8;
        const D: bool = false;
        type M = __m256;
        #[inline(always)]
        unsafe fn splat(c: f64) -> Self {
            Y(_mm256_set1_ps(c as f32))
        }
        #[inline(always)]
        unsafe fn bits(c: u64) -> Self {
            Y(_mm256_castsi256_ps(_mm256_set1_epi32(c as u32 as i32)))
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Y(_mm256_loadu_ps(p))
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            _mm256_storeu_ps(p, self.0)
        }
        #[inline(always)]
        unsafe fn add(self, o: Self) -> Self {
            Y(_mm256_add_ps(self.0, o.0))
        }
        #[inline(always)]
        unsafe fn sub(self, o: Self) -> Self {
            Y(_mm256_sub_ps(self.0, o.0))
        }
        #[inline(always)]
        unsafe fn mul(self, o: Self) -> Self {
            Y(_mm256_mul_ps(self.0, o.0))
        }
        #[inline(always)]
        unsafe fn div(self, o: Self) -> Self {
            Y(_mm256_div_ps(self.0, o.0))
        }
        #[inline(always)]
        unsafe fn fma(self, b: Self, c: Self) -> Self {
            Y(_mm256_fmadd_ps(self.0, b.0, c.0))
        }
        #[inline(always)]
        unsafe fn min(self, x: Self) -> Self {
            Y(_mm256_min_ps(self.0, x.0))
        }
        #[inline(always)]
        unsafe fn max(self, x: Self) -> Self {
            Y(_mm256_max_ps(self.0, x.0))
        }
        #[inline(always)]
        unsafe fn lt(self, o: Self) -> __m256 {
            _mm256_cmp_ps::<_CMP_LT_OQ>(self.0, o.0)
        }
        #[inline(always)]
        unsafe fn eq(self, o: Self) -> __m256 {
            _mm256_cmp_ps::<_CMP_EQ_OQ>(self.0, o.0)
        }
        #[inline(always)]
        unsafe fn uge(self, o: Self) -> __m256 {
            _mm256_cmp_ps::<_CMP_NLT_UQ>(self.0, o.0)
        }
        #[inline(always)]
        unsafe fn sel(m: __m256, t: Self, f: Self) -> Self {
            Y(_mm256_blendv_ps(f.0, t.0, m))
        }
        #[inline(always)]
        unsafe fn exact_reduction(x: Self, r: Self, n: Self, cos: bool) -> (Self, Self) {
            exact_reduction_f32(x, r, n, cos)
        }
        #[inline(always)]
        unsafe fn any(m: __m256) -> bool {
            _mm256_movemask_ps(m) != 0
        }
        #[inline(always)]
        unsafe fn and(self, o: Self) -> Self {
            Y(_mm256_and_ps(self.0, o.0))
        }
        #[inline(always)]
        unsafe fn or(self, o: Self) -> Self {
            Y(_mm256_or_ps(self.0, o.0))
        }
        #[inline(always)]
        unsafe fn xor(self, o: Self) -> Self {
            Y(_mm256_xor_ps(self.0, o.0))
        }
        #[inline(always)]
        unsafe fn iadd(self, o: Self) -> Self {
            Y(_mm256_castsi256_ps(_mm256_add_epi32(
                _mm256_castps_si256(self.0),
                _mm256_castps_si256(o.0),
            )))
        }
        #[inline(always)]
        unsafe fn isub(self, o: Self) -> Self {
            Y(_mm256_castsi256_ps(_mm256_sub_epi32(
                _mm256_castps_si256(self.0),
                _mm256_castps_si256(o.0),
            )))
        }
        #[inline(always)]
        unsafe fn shl_mant(self) -> Self {
            Y(_mm256_castsi256_ps(_mm256_slli_epi32::<23>(
                _mm256_castps_si256(self.0),
            )))
        }
        #[inline(always)]
        unsafe fn shl_sign(self) -> Self {
            Y(_mm256_castsi256_ps(_mm256_slli_epi32::<31>(
                _mm256_castps_si256(self.0),
            )))
        }
        #[inline(always)]
        unsafe fn shr_mant(self) -> Self {
            Y(_mm256_castsi256_ps(_mm256_srli_epi32::<23>(
                _mm256_castps_si256(self.0),
            )))
        }
    }

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

    /// A symbolic vector: `V`'s operations recorded into a thread-local list (`trace`).
    mod z {
        use super::*;
        micro!("avx512f", Z, exp ln tanh sigmoid sin cos erf log1p expm1);
    }

    mod y {
        use super::*;
        micro!("avx2,fma", Y, exp ln tanh sigmoid sin cos erf log1p expm1);
    }
}
