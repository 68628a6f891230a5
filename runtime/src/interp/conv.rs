//! The interpreter's convolutions: the trilinear form of `ir::conv` summed term by term in
//! f64, in one loop for all three roles, the result rounded once to its type.

use crate::array::Array;
use crate::interp::{as_f64s, from_f64s};
use crate::ir::conv::{source, target};
use crate::ir::{ConvRole, ConvSpec};
use crate::{shape, DType};

/// `conv`, `conv_input_grad` or `conv_weight_grad` (as `spec.role`) of `ins`, giving
/// `out_shape` of `dtype` (the operands' type, or f32 for 16-bit operands' f32 sums).
pub fn conv(spec: &ConvSpec, ins: &[&Array], out_shape: &[usize], dtype: DType) -> Array {
    let s = spec
        .shapes(&ins[0].shape, &ins[1].shape, out_shape)
        .expect("verified convolution");
    let (a, b) = (as_f64s(ins[0]), as_f64s(ins[1]));
    let mut out = vec![0.0f64; shape::numel(out_shape)];
    let (xst, wst, yst) = (
        shape::strides(&s.x),
        shape::strides(&s.w),
        shape::strides(&s.y),
    );
    let r = s.rank();
    let (cg, fg) = (s.w[r], s.out_channels() / spec.groups);
    let (outs, wins) = (s.output().to_vec(), s.window().to_vec());
    let input = s.input().to_vec();
    let mut o = vec![0usize; r];
    let mut k = vec![0usize; r];
    let mut i = vec![0usize; r];
    // The pixels a term is indexed by: output pixels for `conv` and `conv_weight_grad`,
    // input pixels for `conv_input_grad` (the transposed convolution, over its own
    // dilated and padded `dy`).
    let by_input = spec.role == ConvRole::Input;
    let lead = if by_input { &input } else { &outs };
    for n in 0..s.batch() {
        for pi in 0..shape::numel(lead) {
            shape::unflatten(pi, lead, &mut o);
            for ki in 0..shape::numel(&wins) {
                shape::unflatten(ki, &wins, &mut k);
                // The pixel on the other side, where it exists: a term whose gathered
                // operand lies in the padding or between dilated elements multiplies a
                // zero (as the kernels do, and as `lax` convolves the padded input), so a
                // NaN or infinity on the other side still reaches the result.
                let mut hit = true;
                for d in 0..r {
                    let other = if by_input {
                        target(spec, d, o[d], k[d], outs[d])
                    } else {
                        source(spec, d, o[d], k[d], input[d])
                    };
                    match other {
                        Some(v) => i[d] = v,
                        None => hit = false,
                    }
                }
                let (xpix, ypix) = if by_input { (&o, &i) } else { (&i, &o) };
                let xbase = n * xst[0] + (0..r).map(|d| xpix[d] * xst[1 + d]).sum::<usize>();
                let ybase = n * yst[0] + (0..r).map(|d| ypix[d] * yst[1 + d]).sum::<usize>();
                let wbase: usize = (0..r).map(|d| k[d] * wst[d]).sum();
                for g in 0..spec.groups {
                    for c in 0..cg {
                        let xi = xbase + g * cg + c;
                        for f in 0..fg {
                            let wi = wbase + c * wst[r] + g * fg + f;
                            let yi = ybase + g * fg + f;
                            match spec.role {
                                ConvRole::Output => {
                                    out[yi] += if hit { a[xi] } else { 0.0 } * b[wi]
                                }
                                ConvRole::Input => out[xi] += if hit { a[yi] } else { 0.0 } * b[wi],
                                ConvRole::Weight => {
                                    out[wi] += if hit { a[xi] } else { 0.0 } * b[yi]
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    from_f64s(out, out_shape, dtype)
}
