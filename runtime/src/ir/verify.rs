//! The IR verifier: run after every stage in tests and debug builds, so a
//! broken pass is caught where it broke the graph, not where it crashes.

use super::{BinaryOp, Graph, Op};
use crate::error::type_str;
use crate::{shape, DType, Error};

pub fn verify(g: &Graph) -> Result<(), Error> {
    let mut params_seen = 0;
    for (i, n) in g.nodes.iter().enumerate() {
        let fail = |msg: String| Err(Error::verify(format!("%{i} = {}: {msg}", n.op.name())));
        for v in &n.inputs {
            if v.index() >= i {
                return fail(format!("operand %{} is not defined before its use", v.0));
            }
        }
        let ins: Vec<_> = n.inputs.iter().map(|v| g.node(*v)).collect();
        if !matches!(
            n.op,
            Op::Param(_)
                | Op::Const(_)
                | Op::Captured(_)
                | Op::Unary(_)
                | Op::Cast(_)
                | Op::Broadcast
                | Op::Binary(_)
                | Op::Compare(_)
                | Op::Select
        ) {
            let tys: Vec<(&[usize], DType)> =
                ins.iter().map(|x| (x.shape.as_slice(), x.dtype)).collect();
            match super::infer::infer(&n.op, &tys, (&n.shape, n.dtype)) {
                Ok((shape, dtype)) if shape == n.shape && dtype == n.dtype => {}
                Ok((shape, dtype)) => {
                    return fail(format!(
                        "result should be {}, is declared {}",
                        type_str(dtype, &shape),
                        type_str(n.dtype, &n.shape)
                    ))
                }
                Err(e) => return fail(e),
            }
            if let Op::Pad(_, l) = &n.op {
                if !super::infer::pad_value_ok(*l, n.dtype) {
                    return fail(format!("pad value does not fit {}", n.dtype));
                }
            }
            continue;
        }
        let arity = match n.op {
            Op::Param(_) | Op::Const(_) | Op::Captured(_) => 0,
            Op::Unary(_) | Op::Cast(_) | Op::Broadcast => 1,
            Op::Binary(_) | Op::Compare(_) => 2,
            Op::Select => 3,
            _ => unreachable!(),
        };
        if ins.len() != arity {
            return fail(format!("expects {arity} operands, has {}", ins.len()));
        }
        if n.op.is_elementwise() {
            for x in &ins {
                if x.shape != n.shape {
                    return fail(format!(
                        "elementwise operand {} differs from result {}",
                        type_str(x.dtype, &x.shape),
                        type_str(n.dtype, &n.shape)
                    ));
                }
            }
        }
        match &n.op {
            Op::Param(k) => {
                if *k != params_seen {
                    return fail(format!(
                        "parameters must be numbered in order: expected {params_seen}"
                    ));
                }
                params_seen += 1;
            }
            Op::Const(_) | Op::Captured(_) => {}
            Op::Unary(u) => {
                if !u.accepts(ins[0].dtype) || n.dtype != ins[0].dtype {
                    return fail(format!("bad dtypes {} -> {}", ins[0].dtype, n.dtype));
                }
            }
            Op::Binary(b) => {
                if ins[0].dtype != ins[1].dtype || n.dtype != ins[0].dtype || !b.accepts(n.dtype) {
                    return fail(format!(
                        "bad dtypes {}, {} -> {}",
                        ins[0].dtype, ins[1].dtype, n.dtype
                    ));
                }
                let _: BinaryOp = *b;
            }
            Op::Compare(c) => {
                if ins[0].dtype != ins[1].dtype
                    || n.dtype != DType::Bool
                    || !c.accepts(ins[0].dtype)
                {
                    return fail(format!(
                        "bad dtypes {}, {} -> {}",
                        ins[0].dtype, ins[1].dtype, n.dtype
                    ));
                }
            }
            Op::Select => {
                if ins[0].dtype != DType::Bool
                    || ins[1].dtype != ins[2].dtype
                    || n.dtype != ins[1].dtype
                {
                    return fail(format!(
                        "bad dtypes {}, {}, {} -> {}",
                        ins[0].dtype, ins[1].dtype, ins[2].dtype, n.dtype
                    ));
                }
            }
            Op::Cast(d) => {
                if *d != n.dtype {
                    return fail(format!("cast to {d} but the result is {}", n.dtype));
                }
            }
            Op::Broadcast => {
                if !shape::broadcasts_to(&ins[0].shape, &n.shape) || ins[0].dtype != n.dtype {
                    return fail(format!(
                        "{} does not broadcast to {}",
                        type_str(ins[0].dtype, &ins[0].shape),
                        type_str(n.dtype, &n.shape)
                    ));
                }
            }
            _ => unreachable!("structural ops are checked by infer above"),
        }
    }
    for o in &g.outputs {
        if o.index() >= g.nodes.len() {
            return Err(Error::verify(format!("returned %{} is not defined", o.0)));
        }
    }
    Ok(())
}
