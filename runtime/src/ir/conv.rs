//! The convolution family: one trilinear form, three ops.
//!
//! With `x [N, S.., C]` (channels last: NHWC for two spatial axes), `w [K.., C/G, F]`
//! (HWIO) and `y [N, O.., F]`, a window position `k` of output position `o` reads input
//! position `i` where, on each spatial axis, `s·o + d·k − lo = ld·i` (stride `s`, kernel
//! dilation `d`, padding `lo` before the input, input dilation `ld`), and
//!
//! ```text
//! T(x, w, y) = Σ x[n, i, g·Cg + c] · w[k, c, g·Fg + f] · y[n, o, g·Fg + f]
//! ```
//!
//! over every `n, o, k` whose `i` exists (inside the input, on its dilated grid), every
//! group `g < G` and `c < Cg = C/G`, `f < Fg = F/G`. The terms whose `i` does not exist
//! are zeros that are still multiplied (by `w` for `conv` and the weight gradient, and
//! for the input gradient those of its own transposed convolution, over input pixels,
//! whose `dy` lies in the padding or between dilated elements): as `lax` convolves the
//! padded input, a NaN or infinity in the other operand reaches every such output. `conv` is `∂T/∂y` (the
//! convolution, JAX's `lax.conv_general_dilated`), `conv_input_grad` is `∂T/∂x` and
//! `conv_weight_grad` is `∂T/∂w`. The gradient of each with respect to either operand is
//! one of the others, so the family is closed under differentiation to any order, and one
//! interpreter loop and one kernel driver (`library::conv`) serve all three.

use crate::DType;

/// Which partial derivative of the trilinear form a node computes, and so its operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvRole {
    /// `conv(x, w) -> y`.
    Output,
    /// `conv_input_grad(dy, w) -> dx` (the node's type is x's).
    Input,
    /// `conv_weight_grad(x, dy) -> dw` (the node's type is w's).
    Weight,
}

impl ConvRole {
    pub fn name(self) -> &'static str {
        match self {
            ConvRole::Output => "conv",
            ConvRole::Input => "conv_input_grad",
            ConvRole::Weight => "conv_weight_grad",
        }
    }
}

/// The attributes of a convolution; every list has one entry per spatial axis.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConvSpec {
    pub role: ConvRole,
    /// Window strides (`s`, at least 1).
    pub strides: Vec<usize>,
    /// Padding `(lo, hi)` of the dilated input (negative: cropped).
    pub padding: Vec<(i64, i64)>,
    /// Input dilation (`ld`, at least 1): `ld − 1` zeros between input elements, a
    /// transposed convolution's upsampling.
    pub lhs_dilation: Vec<usize>,
    /// Kernel dilation (`d`, at least 1): atrous convolution.
    pub rhs_dilation: Vec<usize>,
    /// Feature groups (`G`): `C` and `F` both split into `G` blocks, block `g` of the output
    /// reading block `g` of the input.
    pub groups: usize,
}

/// The shapes of the three tensors of the form: `x`, `w` and `y`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvShapes {
    pub x: Vec<usize>,
    pub w: Vec<usize>,
    pub y: Vec<usize>,
}

impl ConvShapes {
    /// The spatial axes.
    pub fn rank(&self) -> usize {
        self.x.len() - 2
    }
    pub fn batch(&self) -> usize {
        self.x[0]
    }
    pub fn in_channels(&self) -> usize {
        self.x[self.x.len() - 1]
    }
    pub fn out_channels(&self) -> usize {
        self.w[self.w.len() - 1]
    }
    pub fn input(&self) -> &[usize] {
        &self.x[1..self.x.len() - 1]
    }
    pub fn window(&self) -> &[usize] {
        &self.w[..self.w.len() - 2]
    }
    pub fn output(&self) -> &[usize] {
        &self.y[1..self.y.len() - 1]
    }
}

impl ConvSpec {
    /// The spec with every attribute at its identity (stride 1, no padding, no dilation,
    /// one group) for `rank` spatial axes.
    pub fn plain(role: ConvRole, rank: usize) -> ConvSpec {
        ConvSpec {
            role,
            strides: vec![1; rank],
            padding: vec![(0, 0); rank],
            lhs_dilation: vec![1; rank],
            rhs_dilation: vec![1; rank],
            groups: 1,
        }
    }

    /// The same convolution computing another partial derivative.
    pub fn with_role(&self, role: ConvRole) -> ConvSpec {
        ConvSpec {
            role,
            ..self.clone()
        }
    }

    pub fn rank(&self) -> usize {
        self.strides.len()
    }

    /// Output positions along one axis of an input of `len` and a window of `k`, or why
    /// there are none: the dilated, padded input must hold the dilated window.
    pub fn output_len(&self, axis: usize, len: usize, k: usize) -> Result<usize, String> {
        let dilated = |n: usize, d: usize| if n == 0 { 0 } else { (n - 1) * d + 1 };
        let (lo, hi) = self.padding[axis];
        let padded = dilated(len, self.lhs_dilation[axis]) as i64 + lo + hi;
        let window = dilated(k, self.rhs_dilation[axis]) as i64;
        if k == 0 || padded < window {
            return Err(format!(
                "spatial axis {axis}: the window of {k} (dilated to {window}) does not fit the \
                 input of {len} (dilated and padded to {padded})"
            ));
        }
        Ok(((padded - window) / self.strides[axis] as i64) as usize + 1)
    }

    /// Checks the attributes against `rank` spatial axes.
    fn check_attrs(&self, rank: usize) -> Result<(), String> {
        let lens = [
            ("strides", self.strides.len()),
            ("padding", self.padding.len()),
            ("lhs_dilation", self.lhs_dilation.len()),
            ("rhs_dilation", self.rhs_dilation.len()),
        ];
        for (what, n) in lens {
            if n != rank {
                return Err(format!("{what} has {n} entries for {rank} spatial axes"));
            }
        }
        let ones = [
            ("strides", &self.strides),
            ("lhs_dilation", &self.lhs_dilation),
            ("rhs_dilation", &self.rhs_dilation),
        ];
        for (what, v) in ones {
            if v.contains(&0) {
                return Err(format!("{what} {v:?} has a 0 (each is at least 1)"));
            }
        }
        if self.groups == 0 {
            return Err("groups is 0 (at least 1)".into());
        }
        Ok(())
    }

    /// The shapes of `x`, `w` and `y` from two of them, checked: `(x, w)` for `conv`,
    /// `(dy, w)` and the node's `x` for `conv_input_grad`, `(x, dy)` and the node's `w` for
    /// `conv_weight_grad`.
    pub fn shapes(
        &self,
        a: &[usize],
        b: &[usize],
        declared: &[usize],
    ) -> Result<ConvShapes, String> {
        let (x, w) = match self.role {
            ConvRole::Output => (a, b),
            ConvRole::Input => (declared, b),
            ConvRole::Weight => (a, declared),
        };
        let r = x.len();
        if r < 3 || w.len() != r {
            return Err(format!(
                "the input {x:?} and kernel {w:?} need one rank of at least 3 ([N, spatial.., C] \
                 and [spatial.., C/groups, F])"
            ));
        }
        self.check_attrs(r - 2)?;
        let (c, cg, f) = (x[r - 1], w[r - 2], w[r - 1]);
        let groups = self.groups;
        if c % groups != 0 || f % groups != 0 || cg * groups != c {
            return Err(format!(
                "{groups} groups need input features {c} = groups · kernel input features {cg} \
                 and output features {f} divisible by groups (input {x:?}, kernel {w:?})"
            ));
        }
        let mut y = vec![x[0]];
        for d in 0..r - 2 {
            y.push(self.output_len(d, x[1 + d], w[d])?);
        }
        y.push(f);
        let given = match self.role {
            ConvRole::Output => None,
            ConvRole::Input => Some(a),
            ConvRole::Weight => Some(b),
        };
        if let Some(dy) = given {
            if dy != y.as_slice() {
                return Err(format!(
                    "the output cotangent is {dy:?}; input {x:?} and kernel {w:?} give {y:?}"
                ));
            }
        }
        Ok(ConvShapes {
            x: x.to_vec(),
            w: w.to_vec(),
            y,
        })
    }

    /// The node's type on operands `ins` (`declared` fixes `x` or `w` for the gradients).
    pub fn infer(
        &self,
        ins: &[(&[usize], DType)],
        declared: (&[usize], DType),
    ) -> Result<(Vec<usize>, DType), String> {
        if ins.len() != 2 {
            return Err(format!("expects 2 operands, has {}", ins.len()));
        }
        let ((a, da), (b, db)) = (ins[0], ins[1]);
        if da != db || !da.is_float() {
            return Err(format!(
                "{} takes two operands of one float type, not {da} and {db}",
                self.role.name()
            ));
        }
        let s = self.shapes(a, b, declared.0)?;
        let shape = match self.role {
            ConvRole::Output => s.y,
            ConvRole::Input => s.x,
            ConvRole::Weight => s.w,
        };
        // 16-bit operands give their own type, or f32 where the node says so (the f32 sums
        // of a convolution that reads its 16-bit operands itself: `passes/widen.rs`).
        let result = if da.is_half() && declared.1 == DType::F32 {
            DType::F32
        } else {
            da
        };
        Ok((shape, result))
    }

    /// The attributes as the IR text writes them: `[s=2,2;p=1:1,0:1]` plus `ld=`, `rd=`
    /// and `g=` where they are not the identity.
    pub fn attr_text(&self) -> String {
        let mut s = format!(
            "[s={};p={}",
            counts_text(&self.strides),
            pads_text(&self.padding)
        );
        if self.lhs_dilation.iter().any(|&d| d != 1) {
            s += &format!(";ld={}", counts_text(&self.lhs_dilation));
        }
        if self.rhs_dilation.iter().any(|&d| d != 1) {
            s += &format!(";rd={}", counts_text(&self.rhs_dilation));
        }
        if self.groups != 1 {
            s += &format!(";g={}", self.groups);
        }
        s + "]"
    }

    /// Reads `attr_text`'s form back (without the brackets).
    pub fn parse(role: ConvRole, text: &str) -> Result<ConvSpec, String> {
        let mut strides = None;
        let mut padding = None;
        let (mut ld, mut rd, mut groups) = (None, None, 1);
        for (key, value) in attr_pairs(text)? {
            match key {
                "s" => strides = Some(parse_counts(value)?),
                "p" => padding = Some(parse_pads(value)?),
                "ld" => ld = Some(parse_counts(value)?),
                "rd" => rd = Some(parse_counts(value)?),
                "g" => {
                    groups = value
                        .parse()
                        .map_err(|_| format!("`{value}` is not a count"))?
                }
                other => return Err(format!("unknown convolution attribute `{other}`")),
            }
        }
        let strides = strides.ok_or("a convolution needs `s=` (its strides)")?;
        let padding = padding.ok_or("a convolution needs `p=` (its padding)")?;
        let rank = strides.len();
        Ok(ConvSpec {
            role,
            strides,
            padding,
            lhs_dilation: ld.unwrap_or_else(|| vec![1; rank]),
            rhs_dilation: rd.unwrap_or_else(|| vec![1; rank]),
            groups,
        })
    }
}

/// `1,2,3`: a list of counts as the IR text writes them (the convolution and window ops).
pub(super) fn counts_text(v: &[usize]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// `1:0,2:2`: padding pairs as the IR text writes them.
pub(super) fn pads_text(p: &[(i64, i64)]) -> String {
    p.iter()
        .map(|(a, b)| format!("{a}:{b}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The `key=value` parts of `a=..;b=..`.
pub(super) fn attr_pairs(text: &str) -> Result<Vec<(&str, &str)>, String> {
    text.split(';')
        .map(|part| {
            part.split_once('=')
                .ok_or_else(|| format!("`{part}` is not `key=value`"))
        })
        .collect()
}

/// Reads `counts_text`'s form back.
pub(super) fn parse_counts(v: &str) -> Result<Vec<usize>, String> {
    v.split(',')
        .filter(|x| !x.is_empty())
        .map(|x| x.parse().map_err(|_| format!("`{x}` is not a count")))
        .collect()
}

/// Reads `pads_text`'s form back.
pub(super) fn parse_pads(v: &str) -> Result<Vec<(i64, i64)>, String> {
    v.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (a, b) = p
                .split_once(':')
                .ok_or_else(|| format!("padding `{p}` is not `lo:hi`"))?;
            let int = |t: &str| t.parse().map_err(|_| format!("`{t}` is not an integer"));
            Ok((int(a)?, int(b)?))
        })
        .collect()
}

/// Input position `i` (per spatial axis) read by window position `k` of output position
/// `o`, if there is one: `s·o + d·k − lo = ld·i` with `0 <= i < len`.
#[inline]
pub fn source(spec: &ConvSpec, axis: usize, o: usize, k: usize, len: usize) -> Option<usize> {
    let at = (spec.strides[axis] * o + spec.rhs_dilation[axis] * k) as i64 - spec.padding[axis].0;
    let ld = spec.lhs_dilation[axis] as i64;
    if at < 0 || at % ld != 0 {
        return None;
    }
    let i = (at / ld) as usize;
    (i < len).then_some(i)
}

/// Output position `o` whose window position `k` reads input position `i`, if there is
/// one (the inverse of `source` for a fixed `k`).
#[inline]
pub fn target(spec: &ConvSpec, axis: usize, i: usize, k: usize, len: usize) -> Option<usize> {
    let at = (spec.lhs_dilation[axis] * i) as i64 + spec.padding[axis].0
        - (spec.rhs_dilation[axis] * k) as i64;
    let s = spec.strides[axis] as i64;
    if at < 0 || at % s != 0 {
        return None;
    }
    let o = (at / s) as usize;
    (o < len).then_some(o)
}
