//! Windowed reductions (JAX's `lax.reduce_window` with `max` or `add`) and the ops their
//! gradients need: five roles of one window geometry.
//!
//! A window of `k` positions slides over each axis of `x` with stride `s` after `lo`
//! padding positions before the input and `hi` after: output position `o` covers input
//! positions `i = s·o + j − lo` for `j < k`, those with `0 <= i < len` being real (padding
//! is the reduction's identity: −∞ for max, 0 for sum). Pools are windows of 1 on the
//! batch and feature axes.
//!
//! A window's *winner* is the first of its real positions, in row-major window order,
//! holding its maximum, NaN counting as the maximum (the first NaN wins). The max
//! gradient routes each cotangent to its window's winner: with ties this is the position
//! XLA's `select_and_scatter` with `ge` picks, the first one scanned.
//!
//! | role | operands | result |
//! |---|---|---|
//! | `window_max` | `x` | `y[o]` = x at the winner (−∞ for a window of padding only) |
//! | `window_sum` | `x` | `y[o]` = Σ of the window's real positions |
//! | `window_sum_transpose` | `dy` | `dx[i]` = Σ of `dy[o]` over the windows covering `i` |
//! | `window_max_scatter` | `x, dy` | `dx[i]` = Σ of `dy[o]` over the windows `i` wins |
//! | `window_max_gather` | `x, t` | `y[o]` = `t` at `o`'s winner (0 without one) |
//!
//! `window_sum` and `window_sum_transpose` are each other's transposes, as are
//! `window_max_scatter` and `window_max_gather` in their second operand (the winners are
//! piecewise constant in `x`, whose gradient through them is zero): the family is closed
//! under differentiation. Sums run in f64 over the contributions in ascending order of the
//! window (for the transposes: of the output position), rounded once, in the interpreter
//! and in the library kernels alike.

use super::conv::{attr_pairs, counts_text, pads_text, parse_counts, parse_pads};
use crate::DType;

/// Which of the family's ops a node computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WindowRole {
    Max,
    Sum,
    SumTranspose,
    MaxScatter,
    MaxGather,
}

impl WindowRole {
    pub const ALL: [WindowRole; 5] = [
        WindowRole::Max,
        WindowRole::Sum,
        WindowRole::SumTranspose,
        WindowRole::MaxScatter,
        WindowRole::MaxGather,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WindowRole::Max => "window_max",
            WindowRole::Sum => "window_sum",
            WindowRole::SumTranspose => "window_sum_transpose",
            WindowRole::MaxScatter => "window_max_scatter",
            WindowRole::MaxGather => "window_max_gather",
        }
    }

    pub fn from_name(name: &str) -> Option<WindowRole> {
        WindowRole::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Whether the result has the input's shape (the two scatters) rather than the
    /// windows' grid.
    pub fn gives_input_shape(self) -> bool {
        matches!(self, WindowRole::SumTranspose | WindowRole::MaxScatter)
    }

    pub fn arity(self) -> usize {
        match self {
            WindowRole::Max | WindowRole::Sum | WindowRole::SumTranspose => 1,
            WindowRole::MaxScatter | WindowRole::MaxGather => 2,
        }
    }
}

/// The window geometry; every list has one entry per axis of the input.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WindowSpec {
    pub role: WindowRole,
    /// Window positions along each axis (`k`, at least 1).
    pub window: Vec<usize>,
    /// Strides (`s`, at least 1).
    pub strides: Vec<usize>,
    /// Padding `(lo, hi)`, at least 0.
    pub padding: Vec<(i64, i64)>,
}

impl WindowSpec {
    pub fn with_role(&self, role: WindowRole) -> WindowSpec {
        WindowSpec {
            role,
            ..self.clone()
        }
    }

    pub fn rank(&self) -> usize {
        self.window.len()
    }

    /// The window grid's length along `axis` for an input of `len` there.
    pub fn output_len(&self, axis: usize, len: usize) -> Result<usize, String> {
        let (lo, hi) = self.padding[axis];
        let padded = len as i64 + lo + hi;
        let k = self.window[axis] as i64;
        if padded < k {
            return Err(format!(
                "axis {axis}: the window of {k} does not fit the input of {len} padded to \
                 {padded}"
            ));
        }
        Ok(((padded - k) / self.strides[axis] as i64) as usize + 1)
    }

    /// The window grid's shape for input shape `x`, the attributes checked against it.
    pub fn output_shape(&self, x: &[usize]) -> Result<Vec<usize>, String> {
        let r = x.len();
        for (what, n) in [
            ("window", self.window.len()),
            ("strides", self.strides.len()),
            ("padding", self.padding.len()),
        ] {
            if n != r {
                return Err(format!(
                    "{what} has {n} entries for an input of rank {r} {x:?}"
                ));
            }
        }
        if r > 8 {
            return Err(format!(
                "an input of rank {r} {x:?}: window ops take at most 8 axes"
            ));
        }
        if crate::shape::numel(&self.window) >= u16::MAX as usize {
            return Err(format!(
                "the window {:?} has more than 65,534 positions",
                self.window
            ));
        }
        if self.window.contains(&0) || self.strides.contains(&0) {
            return Err(format!(
                "window {:?} and strides {:?} must be at least 1 on every axis",
                self.window, self.strides
            ));
        }
        if self.padding.iter().any(|&(lo, hi)| lo < 0 || hi < 0) {
            return Err(format!("padding {:?} must not be negative", self.padding));
        }
        (0..r).map(|d| self.output_len(d, x[d])).collect()
    }

    /// The node's type on operands `ins` (`declared` gives `window_sum_transpose` the input
    /// shape, which its operand does not determine).
    pub fn infer(
        &self,
        ins: &[(&[usize], DType)],
        declared: (&[usize], DType),
    ) -> Result<(Vec<usize>, DType), String> {
        let name = self.role.name();
        if ins.len() != self.role.arity() {
            return Err(format!(
                "expects {} operand(s), has {}",
                self.role.arity(),
                ins.len()
            ));
        }
        let d = ins[0].1;
        if !d.is_float() || ins.iter().any(|i| i.1 != d) {
            return Err(format!(
                "{name} takes operands of one float type, not {:?}",
                ins.iter().map(|i| i.1.to_string()).collect::<Vec<_>>()
            ));
        }
        let x = match self.role {
            WindowRole::SumTranspose => declared.0,
            _ => ins[0].0,
        };
        let y = self.output_shape(x)?;
        let check = |got: &[usize], want: &[usize], what: &str| {
            if got != want {
                Err(format!("{what} is {got:?}; the input {x:?} needs {want:?}"))
            } else {
                Ok(())
            }
        };
        match self.role {
            WindowRole::Max | WindowRole::Sum => Ok((y, d)),
            WindowRole::SumTranspose => {
                check(ins[0].0, &y, "the cotangent")?;
                Ok((x.to_vec(), d))
            }
            WindowRole::MaxScatter => {
                check(ins[1].0, &y, "the cotangent")?;
                Ok((x.to_vec(), d))
            }
            WindowRole::MaxGather => {
                check(ins[1].0, x, "the gathered operand")?;
                Ok((y, d))
            }
        }
    }

    /// The attributes as the IR text writes them: `[w=1,2,2,1;s=1,2,2,1;p=0:0,..]`.
    pub fn attr_text(&self) -> String {
        format!(
            "[w={};s={};p={}]",
            counts_text(&self.window),
            counts_text(&self.strides),
            pads_text(&self.padding)
        )
    }

    /// Reads `attr_text`'s form back (without the brackets).
    pub fn parse(role: WindowRole, text: &str) -> Result<WindowSpec, String> {
        let (mut window, mut strides, mut padding) = (None, None, None);
        for (key, value) in attr_pairs(text)? {
            match key {
                "w" => window = Some(parse_counts(value)?),
                "s" => strides = Some(parse_counts(value)?),
                "p" => padding = Some(parse_pads(value)?),
                other => return Err(format!("unknown window attribute `{other}`")),
            }
        }
        Ok(WindowSpec {
            role,
            window: window.ok_or("a window op needs `w=` (its window)")?,
            strides: strides.ok_or("a window op needs `s=` (its strides)")?,
            padding: padding.ok_or("a window op needs `p=` (its padding)")?,
        })
    }

    /// Input position read by window position `j` of output position `o` along `axis`, if
    /// it is real.
    #[inline]
    pub fn source(&self, axis: usize, o: usize, j: usize, len: usize) -> Option<usize> {
        let i = (self.strides[axis] * o + j) as i64 - self.padding[axis].0;
        (i >= 0 && (i as usize) < len).then_some(i as usize)
    }

    /// Output position whose window position `j` reads input position `i` along `axis`,
    /// if there is one among `out_len`.
    #[inline]
    pub fn target(&self, axis: usize, i: usize, j: usize, out_len: usize) -> Option<usize> {
        let at = i as i64 + self.padding[axis].0 - j as i64;
        let s = self.strides[axis] as i64;
        if at < 0 || at % s != 0 {
            return None;
        }
        let o = (at / s) as usize;
        (o < out_len).then_some(o)
    }
}

/// Whether `v` replaces `best` as a window's maximum while scanning (the first maximum
/// wins; NaN is the maximum).
#[inline]
pub fn beats(v: f64, best: f64) -> bool {
    v > best || (v.is_nan() && !best.is_nan())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_shapes_follow_the_geometry() {
        let spec = WindowSpec {
            role: WindowRole::Max,
            window: vec![1, 3, 2, 1],
            strides: vec![1, 2, 2, 1],
            padding: vec![(0, 0), (1, 1), (0, 1), (0, 0)],
        };
        let text = spec.attr_text();
        assert_eq!(text, "[w=1,3,2,1;s=1,2,2,1;p=0:0,1:1,0:1,0:0]");
        assert_eq!(
            WindowSpec::parse(WindowRole::Max, &text[1..text.len() - 1]).unwrap(),
            spec
        );
        // (7 + 2 − 3) / 2 + 1 = 4 and (6 + 1 − 2) / 2 + 1 = 3.
        assert_eq!(spec.output_shape(&[2, 7, 6, 5]).unwrap(), vec![2, 4, 3, 5]);
        for o in 0..4 {
            for j in 0..3 {
                if let Some(i) = spec.source(1, o, j, 7) {
                    assert_eq!(spec.target(1, i, j, 4), Some(o));
                }
            }
        }
        let err = spec.output_shape(&[2, 7, 6]).unwrap_err();
        assert!(err.contains("rank 3"), "{err}");
    }
}
