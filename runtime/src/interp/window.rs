//! The interpreter's windowed reductions (`ir::window`): every window scanned position by
//! position in row-major order, sums in f64 in that order (the transposes: in ascending
//! order of the output position), each result rounded once to its type.

use crate::array::Array;
use crate::interp::{as_f64s, from_f64s};
use crate::ir::window::beats;
use crate::ir::{WindowRole, WindowSpec};
use crate::shape;

/// The node `spec.role` of `ins`, giving `out_shape`.
pub fn window(spec: &WindowSpec, ins: &[&Array], out_shape: &[usize]) -> Array {
    let x_shape: &[usize] = match spec.role {
        WindowRole::SumTranspose => out_shape,
        _ => &ins[0].shape,
    };
    let y_shape = spec.output_shape(x_shape).expect("verified window op");
    let a = as_f64s(ins[0]);
    let b = ins.get(1).map(|t| as_f64s(t));
    let xst = shape::strides(x_shape);
    let r = x_shape.len();
    let mut out = vec![0.0f64; shape::numel(out_shape)];
    let mut o = vec![0usize; r];
    let mut j = vec![0usize; r];
    for oi in 0..shape::numel(&y_shape) {
        shape::unflatten(oi, &y_shape, &mut o);
        // The window's real positions, in row-major window order.
        let mut real = vec![];
        'window: for ji in 0..shape::numel(&spec.window) {
            shape::unflatten(ji, &spec.window, &mut j);
            let mut at = 0;
            for d in 0..r {
                match spec.source(d, o[d], j[d], x_shape[d]) {
                    Some(i) => at += i * xst[d],
                    None => continue 'window,
                }
            }
            real.push(at);
        }
        let winner = || {
            let mut best: Option<usize> = None;
            for &i in &real {
                if best.is_none_or(|w| beats(a[i], a[w])) {
                    best = Some(i);
                }
            }
            best
        };
        match spec.role {
            WindowRole::Max => out[oi] = winner().map_or(f64::NEG_INFINITY, |w| a[w]),
            WindowRole::Sum => out[oi] = real.iter().fold(0.0, |s, &i| s + a[i]),
            WindowRole::SumTranspose => {
                for &i in &real {
                    out[i] += a[oi];
                }
            }
            WindowRole::MaxScatter => {
                if let Some(w) = winner() {
                    out[w] += b.as_ref().expect("two operands")[oi];
                }
            }
            WindowRole::MaxGather => {
                out[oi] = winner().map_or(0.0, |w| b.as_ref().expect("two operands")[w])
            }
        }
    }
    from_f64s(out, out_shape, ins[0].dtype)
}
