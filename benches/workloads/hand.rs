//! The hand-written baselines: rustc loops over `Vec<f32>`, compiled for the machine's own
//! vector width and split over rayon's pool, and a GEMM on the same kernels jitfuse calls.

use super::defs::*;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Elements per parallel chunk of the 1-D loops; rows per chunk of the row loops.
pub const CHUNK: usize = 1 << 16;
pub const ROW_CHUNK: usize = 64;

/// A fresh `Vec<f32>` of `n` elements (not zeroed, like jitfuse's outputs),
/// filled in parallel chunks of `chunk`: `fill(first index, chunk)` must write
/// every element of its chunk.
pub fn par_fill(
    n: usize,
    chunk: usize,
    fill: impl Fn(usize, &mut [MaybeUninit<f32>]) + Sync,
) -> Vec<f32> {
    let mut v = Vec::<f32>::with_capacity(n);
    v.spare_capacity_mut()[..n]
        .par_chunks_mut(chunk)
        .enumerate()
        .for_each(|(i, c)| fill(i * chunk, c));
    // SAFETY: every chunk was written by `fill`.
    unsafe { v.set_len(n) };
    v
}

/// A chunk after every element has been written.
///
/// # Safety
/// Every element must have been initialised.
pub unsafe fn assume_init(s: &mut [MaybeUninit<f32>]) -> &mut [f32] {
    unsafe { &mut *(s as *mut [MaybeUninit<f32>] as *mut [f32]) }
}

/// tanh as XLA/Eigen compute it: odd 13/6 rational, input clamped to ±7.905
/// (max abs error 4.3e-7 on [-10, 10], measured against f64 `tanh`).
#[inline(always)]
pub fn tanh_r(x: f32) -> f32 {
    let x = x.clamp(-7.905_311, 7.905_311);
    let x2 = x * x;
    let mut p = -2.760_768_5e-16f32;
    p = p * x2 + 2.000_187_9e-13;
    p = p * x2 + -8.604_671_5e-11;
    p = p * x2 + 5.122_297e-8;
    p = p * x2 + 1.485_722_4e-5;
    p = p * x2 + 6.372_619_3e-4;
    p = p * x2 + 4.893_524_6e-3;
    let mut q = 1.198_258_4e-6f32;
    q = q * x2 + 1.185_347_1e-4;
    q = q * x2 + 2.268_434_6e-3;
    q = q * x2 + 4.893_525e-3;
    x * p / q
}

/// e^x, Cephes-style: round to n·ln2 with the magic-number trick (vectorises
/// without SSE4.1), degree-6 polynomial, 2^n through the exponent bits.
/// Max relative error 8.1e-8 on the clamped range (measured against f64 `exp`).
#[inline(always)]
pub fn exp_r(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E + 12_582_912.0) - 12_582_912.0;
    let r = x - n * 0.693_359_4 + n * 2.121_944_4e-4;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 5.000_000_1e-1;
    let y = p * r * r + r + 1.0;
    // SAFETY: x is clamped, so n is an integer in [-126, 127]. (`n as i32`
    // would saturate, which rustc does not vectorise.)
    let n: i32 = unsafe { n.to_int_unchecked() };
    y * f32::from_bits(((n + 127) << 23) as u32)
}

/// Sum with 16 independent accumulators (vectorised by rustc).
#[inline(always)]
pub fn sum16(x: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0.0f32; 16];
    let chunks = x.chunks_exact(16);
    let rest: f32 = chunks.remainder().iter().map(|&v| f(v)).sum();
    for c in chunks {
        for j in 0..16 {
            acc[j] += f(c[j]);
        }
    }
    acc.iter().sum::<f32>() + rest
}

#[inline(always)]
pub fn max16(x: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 16];
    let chunks = x.chunks_exact(16);
    let rest = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |a, &v| if v > a { v } else { a });
    for c in chunks {
        for j in 0..16 {
            acc[j] = if c[j] > acc[j] { c[j] } else { acc[j] };
        }
    }
    acc.iter().fold(rest, |a, &v| if v > a { v } else { a })
}

/// `fn name(args) body` compiled three times: for AVX-512F, for AVX2+FMA and for the default
/// target, the widest the CPU has chosen at each call. rustc vectorises a plain loop only for
/// the target it compiles for (SSE2 by default on x86-64); the hand loops are meant to be the
/// best rustc does on this machine, at its vector width, like jitfuse's kernels and XLA's.
macro_rules! at_machine_width {
    (fn $name:ident($($a:ident : $t:ty),* $(,)?) $body:block) => {
        fn $name($($a: $t),*) {
            #[inline(always)]
            fn imp($($a: $t),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
                unsafe fn z($($a: $t),*) {
                    imp($($a),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn y($($a: $t),*) {
                    imp($($a),*)
                }
                if hand_width_is_avx512() {
                    // SAFETY: the CPU has the features `z` is compiled for.
                    return unsafe { z($($a),*) };
                }
                if hand_width_is_avx2() {
                    // SAFETY: as above, for `y`.
                    return unsafe { y($($a),*) };
                }
            }
            imp($($a),*)
        }
    };
}

at_machine_width! {
    fn w1_chunk(x: &[f32], out: &mut [MaybeUninit<f32>]) {
        for (o, &v) in out.iter_mut().zip(x) {
            o.write(0.5 * v * (1.0 + tanh_r(0.797_884_56 * (v + 0.044_715 * v * v * v))));
        }
    }
}

/// Whether `at_machine_width!` functions run their AVX-512F build: the level jitfuse compiles
/// for (the CPU's best, capped by `JITFUSE_ISA`), so that "ours/hand" compares one width.
pub fn hand_width_is_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        jitfuse::internals::codegen::Target::host().isa == jitfuse::internals::codegen::Isa::Avx512
            && is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether they run their AVX2+FMA build.
pub fn hand_width_is_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        !hand_width_is_avx512()
            && jitfuse::internals::codegen::Target::host().isa
                >= jitfuse::internals::codegen::Isa::Avx2
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

pub fn w1_hand(x: &[f32]) -> Vec<f32> {
    par_fill(x.len(), CHUNK, |s, out| w1_chunk(&x[s..], out))
}

at_machine_width! {
    fn w2_chunk(a: &[f32], b: &[f32], c: &[f32], out: &mut [MaybeUninit<f32>]) {
        for (o, ((&a, &b), &c)) in out.iter_mut().zip(a.iter().zip(b).zip(c)) {
            o.write(((a * 2.0 + b) * c - a) / (1.0 + b * b));
        }
    }
}

pub fn w2_hand(a: &[f32], b: &[f32], c: &[f32]) -> Vec<f32> {
    par_fill(a.len(), CHUNK, |s, out| {
        w2_chunk(&a[s..], &b[s..], &c[s..], out)
    })
}

at_machine_width! {
    fn w3_chunk(x: &[f32], out: &mut [MaybeUninit<f32>]) {
        for (orow, xrow) in out.chunks_mut(C3).zip(x.chunks(C3)) {
            let m = max16(xrow);
            for (o, &v) in orow.iter_mut().zip(xrow) {
                o.write(exp_r(v - m));
            }
            // SAFETY: the loop above wrote the whole row.
            let orow = unsafe { assume_init(orow) };
            let inv = 1.0 / sum16(orow, |v| v);
            orow.iter_mut().for_each(|v| *v *= inv);
        }
    }
}

pub fn w3_hand(x: &[f32]) -> Vec<f32> {
    par_fill(x.len(), C3 * ROW_CHUNK, |s, out| w3_chunk(&x[s..], out))
}

at_machine_width! {
    fn w4_chunk(x: &[f32], gamma: &[f32], beta: &[f32], out: &mut [MaybeUninit<f32>]) {
        for (orow, xrow) in out.chunks_mut(C3).zip(x.chunks(C3)) {
            let mean = sum16(xrow, |v| v) / C3 as f32;
            let var = sum16(xrow, |v| (v - mean) * (v - mean)) / C3 as f32;
            let rstd = 1.0 / (var + 1e-5).sqrt();
            for (o, ((&v, &g), &b)) in orow.iter_mut().zip(xrow.iter().zip(gamma).zip(beta)) {
                o.write((v - mean) * rstd * g + b);
            }
        }
    }
}

pub fn w4_hand(x: &[f32], gamma: &[f32], beta: &[f32]) -> Vec<f32> {
    par_fill(x.len(), C3 * ROW_CHUNK, |s, out| {
        w4_chunk(&x[s..], gamma, beta, out)
    })
}

at_machine_width! {
    fn w5_chunk(x: &[f32], out: &mut [MaybeUninit<f32>]) {
        for (i, o) in out.iter_mut().enumerate() {
            o.write(sum16(&x[i * N5..][..N5], |v| v));
        }
    }
}

pub fn w5_hand(x: &[f32]) -> Vec<f32> {
    par_fill(x.len() / N5, ROW_CHUNK, |s, out| {
        w5_chunk(&x[s * N5..], out)
    })
}

/// `a[m,k] @ b[k,n]` (row-major) into a fresh buffer by the fastest GEMM
/// library on this CPU, called directly: faer's `gemm` (AVX-512 kernels,
/// threaded on rayon's pool) where the CPU has AVX-512, `matrixmultiply`
/// (AVX2/FMA, threaded) otherwise (`benches/gemm_compare.rs` times both).
pub fn sgemm(m: usize, k: usize, n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    assert!(a.len() == m * k && b.len() == k * n);
    let mut c = Vec::<f32>::with_capacity(m * n);
    // SAFETY: sizes checked above; with beta = 0 (`read_dst` false for `gemm`)
    // C is written without being read.
    unsafe {
        if hand_gemm_is_faer() {
            gemm::gemm(
                m,
                n,
                k,
                c.as_mut_ptr(),
                1,
                n as isize,
                false,
                a.as_ptr(),
                1,
                k as isize,
                b.as_ptr(),
                1,
                n as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::Rayon(0),
            );
        } else {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                k as isize,
                1,
                b.as_ptr(),
                n as isize,
                1,
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            );
        }
        c.set_len(m * n);
    }
    c
}

/// Whether the hand baseline's GEMM is `gemm` (the CPU has AVX-512).
pub fn hand_gemm_is_faer() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

pub struct Mlp {
    pub x: Vec<f32>,
    pub w1: Vec<f32>,
    pub b1: Vec<f32>,
    pub w2: Vec<f32>,
    pub b2: Vec<f32>,
    pub y: Vec<f32>,
}

pub fn w6_hand(p: &Mlp) -> Vec<f32> {
    let mut h = sgemm(B6, I6, H6, &p.x, &p.w1);
    for row in h.chunks_mut(H6) {
        for (v, &b) in row.iter_mut().zip(&p.b1) {
            *v = (*v + b).max(0.0);
        }
    }
    let logits = sgemm(B6, H6, O6, &h, &p.w2);
    let mut total = 0.0f32;
    for (row, y) in logits.chunks(O6).zip(p.y.chunks(O6)) {
        let l: Vec<f32> = row.iter().zip(&p.b2).map(|(v, b)| v + b).collect();
        let m = l.iter().fold(f32::NEG_INFINITY, |a, &v| a.max(v));
        let lse = l.iter().map(|v| (v - m).exp()).sum::<f32>().ln() + m;
        total -= l.iter().zip(y).map(|(v, y)| y * (v - lse)).sum::<f32>();
    }
    vec![total / B6 as f32]
}

at_machine_width! {
    fn chain_chunk(x: &[f32], out: &mut [MaybeUninit<f32>]) {
        for (o, &x) in out.iter_mut().zip(x) {
            let y = ((x * 1.5 + 0.25) * x - 1.0).abs();
            let y = (y + 1.0).sqrt() * 0.5 - x;
            let y = y.max(-2.0).min(2.0);
            let y = -((y * y + x) * 0.125) + 3.0;
            o.write(((1.0 / y) * x - 0.5).abs());
        }
    }
}

pub fn chain_hand(x: &[f32]) -> Vec<f32> {
    par_fill(x.len(), CHUNK, |s, out| chain_chunk(&x[s..], out))
}

at_machine_width! {
    fn nbody_chunk(p: &[f32], first: usize, out: &mut [MaybeUninit<f32>]) {
        for (r, f) in out.chunks_mut(3).enumerate() {
            let i = first + r;
            let (xi, yi, zi) = (p[3 * i], p[3 * i + 1], p[3 * i + 2]);
            let (mut fx, mut fy, mut fz) = (0.0f32, 0.0f32, 0.0f32);
            for q in p.chunks_exact(3) {
                let (dx, dy, dz) = (q[0] - xi, q[1] - yi, q[2] - zi);
                let inv = 1.0 / (dx * dx + dy * dy + dz * dz + NB_EPS).sqrt();
                let inv3 = inv * inv * inv;
                fx += dx * inv3;
                fy += dy * inv3;
                fz += dz * inv3;
            }
            f[0].write(fx);
            f[1].write(fy);
            f[2].write(fz);
        }
    }
}

/// N-body forces as a plain loop over the bodies `[NB, 3]` (rows split over the pool).
pub fn nbody_hand(p: &[f32]) -> Vec<f32> {
    par_fill(p.len(), 3 * 16, |s, out| nbody_chunk(p, s / 3, out))
}
