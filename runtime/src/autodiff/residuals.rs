//! What the backward pass of a traced gradient keeps from the forward pass.

use crate::error::type_str;
use crate::ir::{Graph, Op, ValueId};
use crate::{shape, DType};
use std::fmt;

/// A value the backward pass reads from the forward pass.
#[derive(Clone, Debug, PartialEq)]
pub struct Residual {
    /// The forward value kept (its id in the traced graph).
    pub value: ValueId,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its element type.
    pub dtype: DType,
    /// Bytes it holds while the backward pass waits for it.
    pub bytes: usize,
    /// Which backward computations read it, and where the forward op was
    /// written.
    pub why: String,
}

impl fmt::Display for Residual {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "%{} {} ({} bytes): {}",
            self.value.0,
            type_str(self.dtype, &self.shape),
            self.bytes,
            self.why
        )
    }
}

/// The residuals of every gradient in a traced graph: forward values (and
/// arguments) read by the backward nodes, with the ops that read them.
pub fn saved_residuals(g: &Graph) -> Vec<Residual> {
    let mut out: Vec<Residual> = Vec::new();
    for &(start, mid, end) in &g.grad_ranges {
        for i in mid..end.min(g.nodes.len()) {
            let n = &g.nodes[i];
            for &x in &n.inputs {
                let xi = x.index();
                let xn = g.node(x);
                let forward =
                    (start <= xi && xi < mid) || matches!(xn.op, Op::Param(_) | Op::Captured(_));
                if !forward || matches!(xn.op, Op::Const(_)) || xi >= mid && xi < end {
                    continue;
                }
                let reader = format!(
                    "{}{}",
                    n.op.name(),
                    n.loc
                        .map(|l| format!(" (backward of {}:{})", l.file(), l.line()))
                        .unwrap_or_default()
                );
                match out.iter_mut().find(|r| r.value == x) {
                    Some(r) => {
                        if !r.why.contains(&reader) {
                            r.why.push_str(", ");
                            r.why.push_str(&reader);
                        }
                    }
                    None => {
                        let kind = match xn.op {
                            Op::Param(k) => format!("argument {k}"),
                            Op::Captured(_) => "captured tensor".to_string(),
                            _ => format!("forward `{}`", xn.op.name()),
                        };
                        out.push(Residual {
                            value: x,
                            shape: xn.shape.clone(),
                            dtype: xn.dtype,
                            bytes: shape::numel(&xn.shape) * xn.dtype.size(),
                            why: format!("{kind}, read by {reader}"),
                        });
                    }
                }
            }
        }
    }
    out
}
