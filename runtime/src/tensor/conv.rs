//! `conv(x, w, options)` and `conv_transpose`: convolutions with JAX's `lax` semantics
//! (`conv_general_dilated`, `conv_transpose`), channels last by default, one op of the
//! `ir::conv` family each; their gradients are the family's other two members.

use super::ops::apply;
use super::Tensor;
use crate::error::type_str;
use crate::ir::{ConvRole, ConvSpec, Op};
use crate::trace::fail;
use crate::Error;
use std::panic::Location;

/// How a convolution pads its input's spatial axes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Padding {
    /// None: every window lies inside the input (`'VALID'`).
    Valid,
    /// `ceil(len / stride)` outputs on each axis, the padding split evenly with the odd
    /// element after (`'SAME'`, as `lax.padtype_to_pads` computes it from the undilated
    /// input and the dilated window).
    Same,
    /// `(lo, hi)` per spatial axis; negative values crop.
    Explicit(Vec<(i64, i64)>),
}

/// Where the feature axis of the input and output is, and the kernel's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ConvLayout {
    /// `x [N, spatial.., C]`, `w [spatial.., C/groups, F]`, `y [N, spatial.., F]` (NHWC,
    /// HWIO): the layout the kernels run on.
    #[default]
    ChannelsLast,
    /// `x [N, C, spatial..]`, `w [F, C/groups, spatial..]`, `y [N, F, spatial..]` (NCHW,
    /// OIHW: PyTorch's); transposed to channels last, which the compiler folds into the
    /// convolution's reads.
    ChannelsFirst,
}

/// Options of [`conv`] and [`conv_transpose`]. An empty list means 1 on every spatial axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvOptions {
    /// Window strides (`conv_transpose`: the upsampling factors).
    pub strides: Vec<usize>,
    /// The padding of the spatial axes.
    pub padding: Padding,
    /// Input dilation: `d − 1` zeros between input elements (`conv` only).
    pub lhs_dilation: Vec<usize>,
    /// Kernel dilation (atrous convolution).
    pub rhs_dilation: Vec<usize>,
    /// Feature groups: input and output features split into `groups` blocks, each output
    /// block reading its input block (`groups == C`: depthwise).
    pub groups: usize,
    /// The layout of the input, kernel and result.
    pub layout: ConvLayout,
}

impl Default for ConvOptions {
    fn default() -> ConvOptions {
        ConvOptions {
            strides: vec![],
            padding: Padding::Valid,
            lhs_dilation: vec![],
            rhs_dilation: vec![],
            groups: 1,
            layout: ConvLayout::ChannelsLast,
        }
    }
}

/// The convolution of `x` with the kernel `w` (JAX's `lax.conv_general_dilated`): with
/// the default layout `x [N, spatial.., C]`, `w [spatial.., C/groups, F]`, the result
/// `[N, spatial'.., F]` with `spatial' = (ld·(len−1) + 1 + lo + hi − (d·(k−1) + 1)) / s + 1`
/// on each of 1, 2 or 3 (or more) spatial axes.
#[track_caller]
pub fn conv(x: &Tensor, w: &Tensor, options: ConvOptions) -> Tensor {
    conv_at("conv", x, w, &options, false, Location::caller())
}

/// The transposed convolution (JAX's `lax.conv_transpose` with `transpose_kernel=False`):
/// the input dilated by the strides and convolved with stride 1, so each axis grows about
/// `strides` times (`len · s` under `Same`, `len · s + max(k − s, 0)` under `Valid`, `k`
/// the dilated window). The gradient of a strided `conv` with respect to its input is this
/// with the kernel's spatial axes reversed and its feature axes swapped.
#[track_caller]
pub fn conv_transpose(x: &Tensor, w: &Tensor, options: ConvOptions) -> Tensor {
    conv_at("conv_transpose", x, w, &options, true, Location::caller())
}

fn conv_at(
    name: &str,
    x: &Tensor,
    w: &Tensor,
    o: &ConvOptions,
    transpose: bool,
    loc: &'static Location<'static>,
) -> Tensor {
    let desc = |t: &Tensor| type_str(t.dtype, &t.shape);
    let bad = |msg: String| -> ! {
        fail(
            Error::shape(format!(
                "`{name}`: {msg} (input {}, kernel {})",
                desc(x),
                desc(w)
            ))
            .at(loc),
        )
    };
    if !x.dtype.is_float() || w.dtype != x.dtype {
        fail(
            Error::dtype(format!(
                "`{name}`: the input and kernel must share one float dtype: input {}, kernel {}",
                desc(x),
                desc(w)
            ))
            .at(loc),
        );
    }
    let r = x.shape.len();
    if r < 3 || w.shape.len() != r {
        bad(format!(
            "the input and kernel need one rank of at least 3 (batch, spatial axes, features; \
             spatial axes, input and output features), not {} and {}",
            r,
            w.shape.len()
        ));
    }
    let rank = r - 2;
    let list = |what: &str, v: &[usize]| -> Vec<usize> {
        match v.len() {
            0 => vec![1; rank],
            n if n == rank => v.to_vec(),
            n => bad(format!("{what} has {n} entries for {rank} spatial axes")),
        }
    };
    let strides = list("strides", &o.strides);
    let lhs_dilation = list("lhs_dilation", &o.lhs_dilation);
    let rhs_dilation = list("rhs_dilation", &o.rhs_dilation);
    for (what, v) in [
        ("strides", &strides),
        ("lhs_dilation", &lhs_dilation),
        ("rhs_dilation", &rhs_dilation),
    ] {
        if v.contains(&0) {
            bad(format!("{what} {v:?} has a 0 (each is at least 1)"));
        }
    }
    if transpose && lhs_dilation.iter().any(|&d| d != 1) {
        bad("lhs_dilation is the strides of a transposed convolution; leave it empty".into());
    }
    if o.groups == 0 {
        bad("groups is 0 (at least 1)".into());
    }
    // Channels last: the layout of the IR.
    let (x2, w2) = match o.layout {
        ConvLayout::ChannelsLast => (x.clone(), w.clone()),
        ConvLayout::ChannelsFirst => {
            let mut px = vec![0];
            px.extend(2..r);
            px.push(1);
            let mut pw: Vec<usize> = (2..r).collect();
            pw.extend([1, 0]);
            (x.transpose(&px), w.transpose(&pw))
        }
    };
    let (input, window) = (&x2.shape[1..r - 1], &w2.shape[..rank]);
    let dilated_window: Vec<usize> = window
        .iter()
        .zip(&rhs_dilation)
        .map(|(&k, &d)| if k == 0 { 0 } else { (k - 1) * d + 1 })
        .collect();
    let padding: Vec<(i64, i64)> = match &o.padding {
        Padding::Explicit(p) if p.len() == rank => p.clone(),
        Padding::Explicit(p) => bad(format!(
            "padding has {} pairs for {rank} spatial axes",
            p.len()
        )),
        Padding::Valid if transpose => dilated_window
            .iter()
            .zip(&strides)
            .map(|(&k, &s)| {
                let k = k as i64;
                let len = k + s as i64 - 2 + (k - s as i64).max(0);
                (k - 1, len - (k - 1))
            })
            .collect(),
        Padding::Same if transpose => dilated_window
            .iter()
            .zip(&strides)
            .map(|(&k, &s)| {
                let (k, s) = (k as i64, s as i64);
                let len = k + s - 2;
                let lo = if s > k - 1 { k - 1 } else { (len + 1) / 2 };
                (lo, len - lo)
            })
            .collect(),
        Padding::Valid => vec![(0, 0); rank],
        Padding::Same => same_padding(input, &dilated_window, &strides),
    };
    let spec = ConvSpec {
        role: ConvRole::Output,
        strides: if transpose {
            vec![1; rank]
        } else {
            strides.clone()
        },
        padding,
        lhs_dilation: if transpose { strides } else { lhs_dilation },
        rhs_dilation,
        groups: o.groups,
    };
    let shapes = spec
        .shapes(&x2.shape, &w2.shape, &[])
        .unwrap_or_else(|e| bad(e));
    let y = apply(
        Op::Conv(std::sync::Arc::new(spec)),
        &[&x2, &w2],
        shapes.y,
        x.dtype,
        loc,
    );
    match o.layout {
        ConvLayout::ChannelsLast => y,
        ConvLayout::ChannelsFirst => {
            let mut p = vec![0, r - 1];
            p.extend(1..r - 1);
            y.transpose(&p)
        }
    }
}

/// The padding `'SAME'` stands for on inputs of `input` with (dilated) windows `window` at
/// `strides` (`lax.padtype_to_pads`): `ceil(len / s)` outputs, the padding split evenly with
/// the odd element after.
pub(crate) fn same_padding(
    input: &[usize],
    window: &[usize],
    strides: &[usize],
) -> Vec<(i64, i64)> {
    input
        .iter()
        .zip(window)
        .zip(strides)
        .map(|((&len, &k), &s)| {
            let out = len.div_ceil(s);
            let total = ((out.max(1) - 1) * s + k).saturating_sub(len) as i64;
            (total / 2, total - total / 2)
        })
        .collect()
}

/// Another member of `spec`'s family on `a` and `b` (its operands for `role`), giving
/// `shape`: the gradients of a convolution.
pub(crate) fn conv_part(
    spec: &ConvSpec,
    role: ConvRole,
    (a, b): (&Tensor, &Tensor),
    shape: &[usize],
    loc: &'static Location<'static>,
) -> Tensor {
    apply(
        Op::Conv(std::sync::Arc::new(spec.with_role(role))),
        &[a, b],
        shape.to_vec(),
        a.dtype,
        loc,
    )
}
