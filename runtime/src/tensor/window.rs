//! Windowed reductions and pools: `reduce_window` (JAX's `lax.reduce_window` with `max` or
//! `add`), `max_pool` and `avg_pool`; one op of the `ir::window` family each, whose
//! gradients are the family's other members (the max-pool gradient routes each cotangent
//! to the first maximum of its window).

use super::conv::{ConvLayout, Padding};
use super::ops::apply;
use super::Tensor;
use crate::error::type_str;
use crate::ir::{Op, WindowRole, WindowSpec};
use crate::trace::fail;
use crate::Error;
use std::panic::Location;
use std::sync::Arc;

/// The reduction of [`reduce_window`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reducer {
    /// The window's maximum (padding is −∞; NaN wins).
    Max,
    /// The window's sum (padding is 0).
    Sum,
}

/// Options of [`max_pool`] and [`avg_pool`]: the window moves over the spatial axes of a
/// `[N, spatial.., C]` input (or `[N, C, spatial..]` with `ChannelsFirst`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolOptions {
    /// Strides per spatial axis; empty means the window itself (non-overlapping windows,
    /// PyTorch's default; flax's `max_pool` defaults to 1).
    pub strides: Vec<usize>,
    /// The padding of the spatial axes (`Same` as `lax.padtype_to_pads`).
    pub padding: Padding,
    /// Where the feature axis is.
    pub layout: ConvLayout,
    /// `avg_pool` only: whether padding positions count in the divisor (true: PyTorch's
    /// and flax's default; false: divide by the window's real positions).
    pub count_include_pad: bool,
}

impl Default for PoolOptions {
    fn default() -> PoolOptions {
        PoolOptions {
            strides: vec![],
            padding: Padding::Valid,
            layout: ConvLayout::ChannelsLast,
            count_include_pad: true,
        }
    }
}

/// `reducer` over windows of `window` positions moved by `strides` over `x` padded by
/// `padding` (`(lo, hi)`, at least 0), each list one entry per axis of `x` (JAX's
/// `lax.reduce_window`): the result has `(len + lo + hi − k) / s + 1` positions per axis.
#[track_caller]
pub fn reduce_window(
    x: &Tensor,
    reducer: Reducer,
    window: &[usize],
    strides: &[usize],
    padding: &[(i64, i64)],
) -> Tensor {
    let role = match reducer {
        Reducer::Max => WindowRole::Max,
        Reducer::Sum => WindowRole::Sum,
    };
    let spec = WindowSpec {
        role,
        window: window.to_vec(),
        strides: strides.to_vec(),
        padding: padding.to_vec(),
    };
    window_op("reduce_window", x, spec, Location::caller())
}

/// The maximum over windows of `window` positions (one per spatial axis) of `x`.
#[track_caller]
pub fn max_pool(x: &Tensor, window: &[usize], options: PoolOptions) -> Tensor {
    let spec = pool_spec("max_pool", x, window, &options, WindowRole::Max);
    window_op("max_pool", x, spec, Location::caller())
}

/// The mean over windows of `window` positions (one per spatial axis) of `x`.
#[track_caller]
pub fn avg_pool(x: &Tensor, window: &[usize], options: PoolOptions) -> Tensor {
    let loc = Location::caller();
    let spec = pool_spec("avg_pool", x, window, &options, WindowRole::Sum);
    let sum = window_op("avg_pool", x, spec.clone(), loc);
    if options.count_include_pad || spec.padding.iter().all(|&p| p == (0, 0)) {
        let n: usize = spec.window.iter().product();
        return &sum * (1.0 / n as f64);
    }
    // Real positions per window: a product over the axes, known from the shapes alone.
    let y = sum.shape().to_vec();
    let mut shape = vec![1; y.len()];
    let mut counts = vec![1.0f64];
    for d in 0..y.len() {
        if spec.window[d] == 1 && spec.padding[d] == (0, 0) {
            continue;
        }
        shape[d] = y[d];
        let along: Vec<f64> = (0..y[d])
            .map(|o| {
                (0..spec.window[d])
                    .filter(|&j| spec.source(d, o, j, x.shape()[d]).is_some())
                    .count() as f64
            })
            .collect();
        counts = counts
            .iter()
            .flat_map(|c| along.iter().map(move |a| c * a))
            .collect();
    }
    let counts = Tensor::from_vec(counts, &shape)
        .expect("one count per window")
        .cast(x.dtype());
    &sum / &counts
}

/// The window spec of a pool over the spatial axes of `x`.
fn pool_spec(
    name: &str,
    x: &Tensor,
    window: &[usize],
    o: &PoolOptions,
    role: WindowRole,
) -> WindowSpec {
    let loc = Location::caller();
    let bad = |msg: String| -> ! {
        fail(
            Error::shape(format!(
                "`{name}`: {msg} (input {})",
                type_str(x.dtype, &x.shape)
            ))
            .at(loc),
        )
    };
    let r = x.shape.len();
    if r < 3 {
        bad("the input needs a batch axis, spatial axes and a feature axis".into());
    }
    let rank = r - 2;
    if window.len() != rank {
        bad(format!(
            "the window {window:?} needs one entry per spatial axis ({rank})"
        ));
    }
    let strides = match o.strides.len() {
        0 => window.to_vec(),
        n if n == rank => o.strides.clone(),
        n => bad(format!("strides has {n} entries for {rank} spatial axes")),
    };
    if window.contains(&0) || strides.contains(&0) {
        bad(format!(
            "window {window:?} and strides {strides:?} must be at least 1"
        ));
    }
    let first = match o.layout {
        ConvLayout::ChannelsLast => 1,
        ConvLayout::ChannelsFirst => 2,
    };
    let input = &x.shape[first..first + rank];
    let padding: Vec<(i64, i64)> = match &o.padding {
        Padding::Valid => vec![(0, 0); rank],
        Padding::Same => super::conv::same_padding(input, window, &strides),
        Padding::Explicit(p) if p.len() == rank => p.clone(),
        Padding::Explicit(p) => bad(format!(
            "padding has {} pairs for {rank} spatial axes",
            p.len()
        )),
    };
    let mut spec = WindowSpec {
        role,
        window: vec![1; r],
        strides: vec![1; r],
        padding: vec![(0, 0); r],
    };
    for d in 0..rank {
        spec.window[first + d] = window[d];
        spec.strides[first + d] = strides[d];
        spec.padding[first + d] = padding[d];
    }
    spec
}

/// The node of `spec` on `x`, checked.
fn window_op(name: &str, x: &Tensor, spec: WindowSpec, loc: &'static Location<'static>) -> Tensor {
    let desc = type_str(x.dtype, &x.shape);
    if !x.dtype.is_float() {
        fail(Error::dtype(format!("`{name}` takes a float input, not {desc}")).at(loc));
    }
    let y = spec
        .output_shape(&x.shape)
        .unwrap_or_else(|e| fail(Error::shape(format!("`{name}`: {e} (input {desc})")).at(loc)));
    apply(Op::Window(Arc::new(spec)), &[x], y, x.dtype, loc)
}

/// Another member of `spec`'s family on `ins`, giving `shape`: the gradients.
pub(crate) fn window_part(
    spec: &WindowSpec,
    role: WindowRole,
    ins: &[&Tensor],
    shape: &[usize],
    loc: &'static Location<'static>,
) -> Tensor {
    apply(
        Op::Window(Arc::new(spec.with_role(role))),
        ins,
        shape.to_vec(),
        ins[0].dtype,
        loc,
    )
}
