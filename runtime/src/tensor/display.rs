//! NumPy-style printing: `[[1.  2.5]\n [3.  4. ]]`, elements padded to one
//! width, large tensors summarised with `...` (first and last 3 along each
//! axis once a tensor has more than 1000 elements, NumPy's threshold).

use super::Tensor;
use crate::error::type_str;
use crate::DType;
use std::fmt;

const THRESHOLD: usize = 1000;
const EDGE: usize = 3;

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_traced() {
            return write!(f, "traced {}", type_str(self.dtype, &self.shape));
        }
        let summarise = self.len() > THRESHOLD;
        // The elements that will be shown decide the common format.
        let shown = shown_indices(&self.shape, summarise);
        let fmt_elem = formatter(self, &shown);
        let mut out = String::new();
        write_axis(self, 0, 0, summarise, &fmt_elem, &mut out);
        f.write_str(&out)
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_traced() {
            return write!(f, "Tensor(traced {})", type_str(self.dtype, &self.shape));
        }
        let body = self.to_string().replace('\n', "\n       ");
        write!(f, "Tensor({body}, {})", type_str(self.dtype, &self.shape))
    }
}

fn shown_indices(shape: &[usize], summarise: bool) -> Vec<usize> {
    let strides = crate::shape::strides(shape);
    let strides = &strides;
    let mut idx = vec![0usize];
    for (d, &n) in shape.iter().enumerate() {
        let keep: Vec<usize> = if summarise && n > 2 * EDGE {
            (0..EDGE).chain(n - EDGE..n).collect()
        } else {
            (0..n).collect()
        };
        idx = idx
            .iter()
            .flat_map(|&base| keep.iter().map(move |&k| base + k * strides[d]))
            .collect();
    }
    idx
}

/// The shortest decimal form of `v` (a value of float dtype `dt` other than f64) that
/// reads back as the same `dt` value, in scientific (`sci`) or positional form: Rust's
/// `Display` of an f32, and the same rule for bf16 and f16 (0.1 rounded to bf16 prints as
/// 0.1, not as the 0.1000977 of its f32 form), as NumPy's `ml_dtypes` does.
fn shortest(v: f64, dt: DType, sci: bool) -> String {
    if dt == DType::F32 {
        return if sci {
            format!("{:e}", v as f32)
        } else {
            format!("{}", v as f32)
        };
    }
    for p in 0..17 {
        let s = if sci {
            format!("{v:.p$e}")
        } else {
            format!("{v:.p$}")
        };
        if s.parse::<f64>().is_ok_and(|r| dt.round_f64(r) == v) {
            return match sci {
                true => s,
                false if s.contains('.') => s.trim_end_matches('0').trim_end_matches('.').into(),
                false => s,
            };
        }
    }
    format!("{v}")
}

fn formatter<'t>(t: &'t Tensor, shown: &[usize]) -> Box<dyn Fn(usize) -> String + 't> {
    match t.dtype {
        DType::Bool => {
            let w = if shown.iter().any(|&i| t.get_f64(i) == 0.0) {
                5
            } else {
                4
            };
            Box::new(move |i| format!("{:>w$}", if t.get_f64(i) != 0.0 { "True" } else { "False" }))
        }
        DType::I32 | DType::I64 => {
            let lit = |i: usize| match t.array().literal(i) {
                crate::Literal::Int(v) => v.to_string(),
                other => format!("{other:?}"),
            };
            let w = shown.iter().map(|&i| lit(i).len()).max().unwrap_or(0);
            Box::new(move |i| format!("{:>w$}", lit(i)))
        }
        DType::F32 | DType::F64 | DType::BF16 | DType::F16 => {
            let vals: Vec<f64> = shown
                .iter()
                .map(|&i| t.get_f64(i))
                .filter(|v| v.is_finite())
                .collect();
            let max = vals.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let min_nz = vals
                .iter()
                .filter(|v| **v != 0.0)
                .fold(f64::INFINITY, |m, v| m.min(v.abs()));
            let sci = max >= 1e16
                || (min_nz < 1e-4 && min_nz.is_finite())
                || (max / min_nz > 1e3 && min_nz < 1e-4);
            let ints = vals.iter().all(|v| v.fract() == 0.0);
            // NumPy's `maxprec`: at most 8 fractional digits, fewer where fewer identify
            // the element in its own dtype. An f32 element is rounded as an f32 (Rust's
            // shortest round-trip form of it): its f64 value has digits the f32 does not
            // hold, 1.1f32 being 1.10000002 to 8 places, which NumPy prints as 1.1.
            let digits = 8;
            let dt = t.dtype;
            let f32s = dt != DType::F64;
            // The mantissa digits of `v` in scientific form, `precision` of them or (None)
            // as many as identify it, at most `digits`; and its exponent.
            let sci_parts = move |v: f64, precision: Option<usize>| -> (String, i32) {
                let s = match precision {
                    Some(p) if f32s => format!("{:.p$e}", v as f32),
                    Some(p) => format!("{v:.p$e}"),
                    None => {
                        let short = if f32s {
                            shortest(v, dt, true)
                        } else {
                            format!("{v:e}")
                        };
                        let frac = short
                            .split_once('e')
                            .unwrap()
                            .0
                            .split_once('.')
                            .map_or(0, |(_, f)| f.len());
                        if frac <= digits {
                            short
                        } else {
                            let s = format!("{v:.digits$e}");
                            let (m, e) = s.split_once('e').unwrap();
                            format!("{}e{e}", m.trim_end_matches('0'))
                        }
                    }
                };
                let (m, e) = s.split_once('e').unwrap();
                (m.to_string(), e.parse().unwrap())
            };
            // In scientific form NumPy gives every mantissa as many digits as the longest.
            let sci_digits = shown
                .iter()
                .map(|&i| t.get_f64(i))
                .filter(|v| v.is_finite())
                .map(|v| {
                    let (m, _) = sci_parts(v, None);
                    m.split_once('.').map_or(0, |(_, f)| f.len())
                })
                .max()
                .unwrap_or(0);
            let one = move |v: f64| -> String {
                if v.is_nan() {
                    "nan".into()
                } else if v.is_infinite() {
                    if v > 0.0 {
                        "inf".into()
                    } else {
                        "-inf".into()
                    }
                } else if sci {
                    let (m, e) = sci_parts(v, Some(sci_digits));
                    let dot = if m.contains('.') { "" } else { "." };
                    format!("{m}{dot}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
                } else if ints {
                    format!("{v:.0}.")
                } else {
                    let s = format!("{v:.digits$}");
                    let s = s.trim_end_matches('0');
                    // (Rust's `Display` of an f32 is its shortest round-trip form.)
                    let short = shortest(v, dt, false);
                    let short_frac = short.split_once('.').map_or(0, |(_, f)| f.len());
                    if f32s && short_frac < s.split_once('.').map_or(0, |(_, f)| f.len()) {
                        if short.contains('.') {
                            short
                        } else {
                            format!("{short}.")
                        }
                    } else {
                        s.to_string()
                    }
                }
            };
            // NumPy pads the fractional part so decimal points line up.
            let texts: Vec<String> = shown.iter().map(|&i| one(t.get_f64(i))).collect();
            let frac = |s: &str| s.split_once('.').map(|(_, f)| f.len()).unwrap_or(0);
            let int_w = texts
                .iter()
                .map(|s| s.split_once('.').map(|(a, _)| a.len()).unwrap_or(s.len()))
                .max()
                .unwrap_or(0);
            let frac_w = if sci {
                0
            } else {
                texts.iter().map(|s| frac(s)).max().unwrap_or(0)
            };
            Box::new(move |i| {
                let s = one(t.get_f64(i));
                if sci {
                    let w = int_w.max(texts.iter().map(|x| x.len()).max().unwrap_or(0));
                    return format!("{s:>w$}");
                }
                let (ip, fp) = match s.split_once('.') {
                    Some((a, b)) => (a.to_string(), format!(".{b}")),
                    None => (s.clone(), String::new()),
                };
                let fp = if fp.is_empty() && frac_w > 0 {
                    " ".repeat(frac_w + 1)
                } else {
                    fp
                };
                format!("{ip:>int_w$}{fp:<w$}", w = frac_w + 1)
            })
        }
    }
}

fn write_axis(
    t: &Tensor,
    dim: usize,
    base: usize,
    summarise: bool,
    fe: &dyn Fn(usize) -> String,
    out: &mut String,
) {
    let shape = &t.shape;
    if dim == shape.len() {
        out.push_str(&fe(base));
        return;
    }
    let n = shape[dim];
    let stride: usize = shape[dim + 1..].iter().product();
    out.push('[');
    let last = dim + 1 == shape.len();
    let sep = if last {
        " ".to_string()
    } else {
        format!(
            "{}{}",
            "\n".repeat(shape.len() - dim - 1),
            " ".repeat(dim + 1)
        )
    };
    let items: Vec<Option<usize>> = if summarise && n > 2 * EDGE {
        (0..EDGE)
            .map(Some)
            .chain([None])
            .chain((n - EDGE..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    };
    for (j, it) in items.iter().enumerate() {
        if j > 0 {
            out.push_str(&sep);
        }
        match it {
            Some(k) => write_axis(t, dim + 1, base + k * stride, summarise, fe, out),
            None => out.push_str("..."),
        }
    }
    out.push(']');
}
