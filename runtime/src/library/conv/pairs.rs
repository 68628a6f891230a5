//! Convolutions of bf16 operands on `vdpbf16ps` (AVX-512 BF16): `conv` and
//! `conv_input_grad` on the direct tiles, each step of `kc` a pair of adjacent features.
//!
//! `vdpbf16ps` adds to each f32 lane the products of a pair of bf16 values of one operand
//! with a pair of the other (`gemm16`). The features a step sums over — `x`'s input
//! features for `conv`, `dy`'s output features for its input gradient — are contiguous in
//! the operand, so a pair of them is one 32-bit word where it lies: the operand is read in
//! place as a tensor of such words, with half the features (`halved`), through the same row
//! pointers and window-position classes as an f32 operand. Only the kernel is repacked, its
//! pairs along the same features interleaved per column (`pack_pairs`). The product so is
//! the f32 one of half the steps, each step a pair: twice the multiply-adds per instruction,
//! half the bytes per row.
//!
//! The result is the f32 sums (the graph rounds them to bf16 where it wants bf16:
//! `passes/widen.rs`), each one sum in a fixed order of the pairs, so the same bits under any
//! split and thread count. Products are exact in f32; each `vdpbf16ps` rounds its two
//! additions to nearest even and flushes subnormal inputs and results to zero, as the bf16
//! `matmul` on the same instruction (docs/accuracy.md).
//!
//! Runs where the paired features per group are even and the operand's features contiguous
//! (every other stride even); elsewhere a bf16 convolution runs on f32 panels widened as
//! they are packed (`conv::run`). The weight gradient sums over pixels: its steps are pairs
//! of pixels (`conv::WeightGrad`).

use super::{classes, finite, products, Problem, ALIGN, NR};
use crate::ir::{ConvRole, ConvSpec};
use crate::library::gemm16::{kind_for, Kind};
use crate::library::ops::Operand;
use crate::{shape, DType};

/// The shapes of the product on pairs: the paired operand's (`a`: `x` for `conv`, `dy` for
/// `conv_input_grad`) and the kernel's (`b`) with the paired features halved. None for the
/// weight gradient, and where a group's paired features are odd.
fn halved(spec: &ConvSpec, a: &[usize], b: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
    let r = a.len().checked_sub(2)?;
    if spec.role == ConvRole::Weight || r == 0 || b.len() != r + 2 || spec.groups == 0 {
        return None;
    }
    let per_group = a[r + 1] / spec.groups;
    if per_group == 0 || !per_group.is_multiple_of(2) {
        return None;
    }
    let (mut a2, mut b2) = (a.to_vec(), b.to_vec());
    a2[r + 1] /= 2;
    // The kernel's input features (`conv`) or output features (`conv_input_grad`).
    let axis = if spec.role == ConvRole::Output {
        r
    } else {
        r + 1
    };
    b2[axis] /= 2;
    Some((a2, b2))
}

/// Whether this CPU runs the convolution `spec` of bf16 operands shaped `ins` on pairs (its
/// result then is the f32 sums): of features here, of pixels for the weight gradient
/// (`conv::WeightGrad`).
/// Whether this CPU multiplies pairs of bf16 values (`vdpbf16ps`, AVX-512 BF16).
pub(super) fn dot_available() -> bool {
    kind_for(DType::BF16) == Some(Kind::Dot)
}

pub fn runs(spec: &ConvSpec, ins: &[&[usize]], dtype: DType) -> bool {
    let shapes = ins.len() == 2
        && match spec.role {
            // `WeightGrad` on pairs of pixels.
            ConvRole::Weight => {
                let x = ins[0];
                spec.groups > 0
                    && x.len() >= 3
                    && x[x.len() - 1] / spec.groups >= super::DIRECT_MIN_FEATURES
            }
            _ => halved(spec, ins[0], ins[1]).is_some(),
        };
    dtype == DType::BF16 && dot_available() && shapes
}

/// The problem on pairs, where `spec` of operands shaped `a` and `b` runs on them, and the
/// paired operand's shape as words (`halved`).
fn problem(
    spec: &ConvSpec,
    (a, b): (&[usize], &[usize]),
    out: &[usize],
) -> Option<(Problem, Vec<usize>)> {
    let (a2, b2) = halved(spec, a, b)?;
    let mut p = Problem::of(spec, (&a2, &b2, out), 4, true);
    p.dot = true;
    Some((p, a2))
}

/// Scratch bytes of `spec` on pairs (0 where it does not run on them).
pub fn scratch_bytes(spec: &ConvSpec, ins: &[&[usize]], out: &[usize]) -> usize {
    problem(spec, (ins[0], ins[1]), out)
        .map_or(0, |(p, _)| p.shared_bytes() + p.slots * p.task_bytes())
}

/// Runs `spec` of the bf16 operands `ins` on pairs, writing the f32 sums of `out_shape` to
/// `out`; false (nothing written) where it does not run on them.
///
/// # Safety
/// As `conv::run`'s.
pub unsafe fn run(
    spec: &ConvSpec,
    ins: &[Operand],
    out_shape: &[usize],
    out: *mut u8,
    scratch: *mut u8,
) -> bool {
    let (t, w) = (&ins[0], &ins[1]);
    if t.dtype != DType::BF16 || w.dtype != DType::BF16 || !dot_available() {
        return false;
    }
    let Some((p, a2)) = problem(spec, (t.shape, w.shape), out_shape) else {
        return false;
    };
    let r = a2.len() - 2;
    // Pairs of features as words: the features contiguous, every other step a whole word.
    if t.strides[r + 1] != 1 || t.strides[..=r].iter().any(|s| s % 2 != 0) {
        return false;
    }
    if p.kc == 0 {
        std::ptr::write_bytes(out, 0, shape::numel(out_shape) * 4);
        return true;
    }
    let strides: Vec<i64> = (t.strides.iter().enumerate())
        .map(|(d, &s)| if d == r + 1 { 1 } else { s / 2 })
        .collect();
    let words = Operand {
        ptr: t.ptr,
        dtype: DType::F32,
        shape: &a2,
        strides: &strides,
    };
    let base = scratch.wrapping_add(scratch.align_offset(ALIGN));
    let classes = classes::Classes::plan(&p).filter(|_| finite(w));
    let pack = |p: &Problem, w: &Operand, g, j, qs, dst: *mut f32| {
        pack_pairs(p, w, (g, j), qs, dst as *mut u32)
    };
    products::<f32>(&p, &[words, *w], (out, base), classes.as_ref(), &pack);
    true
}

/// Packs column panel `j` of steps `q0..q1` of group `g`'s kernel `w` (bf16, as it lies)
/// for the problem on pairs `p`: `dst[(q − q0)·NR + l]` is the pair of `b[q, j·NR + l]`
/// (its two features, the first in the low half), zero past `ncol`.
///
/// # Safety
/// `w`'s map stays inside its buffer; `dst` holds `(q1 − q0)·NR` words.
unsafe fn pack_pairs(
    p: &Problem,
    w: &Operand,
    (g, j): (usize, usize),
    (q0, q1): (usize, usize),
    dst: *mut u32,
) {
    let r = p.s.rank();
    let lanes = (p.ncol - j * NR).min(NR);
    let (sc, sf) = (w.strides[r], w.strides[r + 1]);
    let src = w.ptr as *const u16;
    for q in q0..q1 {
        let (kpos, ch) = ((q / p.inner) as i64, (q % p.inner) as i64);
        let k = &p.kidx[kpos as usize * r..(kpos as usize + 1) * r];
        let kbase: i64 = k.iter().zip(w.strides).map(|(&i, &s)| i as i64 * s).sum();
        let row = dst.add((q - q0) * NR);
        for l in 0..NR {
            *row.add(l) = if l >= lanes {
                0
            } else {
                let col = (j * NR + l) as i64;
                // The pair's first element, and the stride to its second along the paired
                // features: `w[k, c, g·Fg + f]` of step `(k, c)` and column `f` (`conv`), of
                // step `(k, f)` and column `c` (`conv_input_grad`), features doubled.
                let (at, next) = match p.role {
                    ConvRole::Output => {
                        (kbase + 2 * ch * sc + (g * p.fg) as i64 * sf + col * sf, sc)
                    }
                    _ => (kbase + col * sc + 2 * ((g * p.fg) as i64 + ch) * sf, sf),
                };
                let lo = *src.offset(at as isize) as u32;
                let hi = *src.offset((at + next) as isize) as u32;
                lo | hi << 16
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::WeightGrad;
    use super::*;

    /// The values `v` of `dtype` as a contiguous operand.
    fn operand<'a, E>(
        v: &'a [E],
        dtype: DType,
        shape: &'a [usize],
        strides: &'a [i64],
    ) -> Operand<'a> {
        Operand {
            ptr: v.as_ptr() as *const u8,
            dtype,
            shape,
            strides,
        }
    }

    /// `conv`, `conv_input_grad` and `conv_weight_grad` of bf16 operands through `conv::run`
    /// (on pairs where this CPU has AVX-512 BF16) against f64 sums of the same values (the
    /// f64 convolution, on the portable tiles: a sum of the same terms in f64): the
    /// wide tiles with and without grouped rows, the narrow ones, groups, strides, a sum in
    /// two blocks of `kc`, odd pixel counts; each within what an f32 sum of its terms may
    /// lose.
    #[test]
    fn pairs_match_f64_sums_on_every_tile() {
        if kind_for(DType::BF16) != Some(Kind::Dot) {
            return;
        }
        let mut next = super::super::test_values();
        for &(x, w, stride, groups) in &[
            ([2usize, 9, 10, 32], [3usize, 3, 32, 40], 1usize, 1usize),
            ([3, 8, 8, 16], [3, 3, 16, 16], 1, 1),
            ([2, 6, 7, 16], [3, 3, 8, 20], 1, 2),
            ([2, 9, 9, 8], [3, 3, 8, 34], 2, 1),
            ([1, 5, 5, 600], [3, 3, 600, 36], 1, 1),
            ([3, 21, 23, 24], [3, 3, 24, 14], 1, 1),
            ([1, 91, 91, 8], [3, 3, 8, 16], 1, 1),
        ] {
            for role in [ConvRole::Output, ConvRole::Input, ConvRole::Weight] {
                let spec = ConvSpec {
                    strides: vec![stride; 2],
                    padding: vec![(1, 1); 2],
                    groups,
                    ..ConvSpec::plain(role, 2)
                };
                let len = |d: usize| spec.output_len(d, x[1 + d], w[d]).unwrap();
                let y = vec![x[0], len(0), len(1), w[3]];
                let (a_shape, b_shape, out_shape) = match role {
                    ConvRole::Output => (x.to_vec(), w.to_vec(), y.clone()),
                    ConvRole::Input => (y.clone(), w.to_vec(), x.to_vec()),
                    ConvRole::Weight => (x.to_vec(), y.clone(), w.to_vec()),
                };
                let bits = |n: usize, next: &mut dyn FnMut() -> f32| -> Vec<u16> {
                    (0..n)
                        .map(|_| half::bf16::from_f32(next()).to_bits())
                        .collect()
                };
                let (a, b) = (
                    bits(shape::numel(&a_shape), &mut next),
                    bits(shape::numel(&b_shape), &mut next),
                );
                let strides = |s: &[usize]| -> Vec<i64> {
                    shape::strides(s).iter().map(|&v| v as i64).collect()
                };
                let (sa, sb) = (strides(&a_shape), strides(&b_shape));
                let ins = [
                    operand(&a, DType::BF16, &a_shape, &sa),
                    operand(&b, DType::BF16, &b_shape, &sb),
                ];
                let shapes: [&[usize]; 2] = [&a_shape, &b_shape];
                // The route: pairs of features, or the weight gradient on pairs of pixels.
                let pairs = match role {
                    ConvRole::Weight => {
                        let p = Problem::of(&spec, (&a_shape, &b_shape, &out_shape), 4, false);
                        WeightGrad::of(&p, &ins).is_some_and(|w| w.pairs)
                    }
                    _ => runs(&spec, &shapes, DType::BF16),
                };
                assert!(pairs, "{role:?} {x:?} {w:?}");
                let mut out = vec![f32::NAN; shape::numel(&out_shape)];
                let bytes = super::super::scratch_bytes(
                    &spec,
                    &shapes,
                    &out_shape,
                    DType::BF16,
                    DType::F32,
                );
                let mut scratch = vec![0u8; bytes];
                unsafe {
                    super::super::run(
                        &spec,
                        &ins,
                        &out_shape,
                        DType::F32,
                        out.as_mut_ptr() as *mut u8,
                        scratch.as_mut_ptr(),
                    )
                }
                .unwrap();
                // The f64 sums and their magnitudes from the f64 convolution.
                let f64s = |v: &[u16], abs: bool| -> Vec<f64> {
                    let x = v.iter().map(|&b| half::bf16::from_bits(b).to_f64());
                    x.map(|x| if abs { x.abs() } else { x }).collect()
                };
                let sum = |abs: bool| {
                    let (a, b) = (f64s(&a, abs), f64s(&b, abs));
                    let ins = [
                        operand(&a, DType::F64, &a_shape, &sa),
                        operand(&b, DType::F64, &b_shape, &sb),
                    ];
                    let mut out = vec![f64::NAN; shape::numel(&out_shape)];
                    let bytes = super::super::scratch_bytes(
                        &spec,
                        &shapes,
                        &out_shape,
                        DType::F64,
                        DType::F64,
                    );
                    let mut scratch = vec![0u8; bytes];
                    let (o, s) = (out.as_mut_ptr() as *mut u8, scratch.as_mut_ptr());
                    unsafe { super::super::run(&spec, &ins, &out_shape, DType::F64, o, s) }
                        .unwrap();
                    out
                };
                let (exact, size) = (sum(false), sum(true));
                // The most terms of a sum: a window's, or every output pixel's.
                let terms = shape::numel(&w).max(shape::numel(&y) / w[3]) as f64;
                for e in 0..out.len() {
                    let bound = 1.01 * terms * 2f64.powi(-24) * size[e];
                    assert!(
                        (out[e] as f64 - exact[e]).abs() <= bound,
                        "{role:?} {x:?} {w:?} at {e}: {} vs {}",
                        out[e],
                        exact[e]
                    );
                }
            }
        }
    }
}
