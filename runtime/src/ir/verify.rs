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
        // The invariant of `shape.rs`: every value's byte size fits.
        if let Err(e) = shape::checked_bytes(n.op.name(), &n.shape, n.dtype) {
            return fail(e.message);
        }
        let ins: Vec<_> = n.inputs.iter().map(|v| g.node(*v)).collect();
        if let (Op::Get(k), Some(src)) = (&n.op, ins.first()) {
            if let Op::AttentionGrad(_) = src.op {
                // `dk` (k's type) and `dv` (v's type) of an attention gradient.
                let want = match (k, src.inputs.get(*k)) {
                    (1 | 2, Some(x)) if ins.len() == 1 => g.node(*x),
                    _ => {
                        return fail(format!(
                            "attention_grad has outputs 1 and 2 (dk, dv), not {k}"
                        ))
                    }
                };
                if want.shape != n.shape || want.dtype != n.dtype {
                    return fail(format!(
                        "output {k} of attention_grad is {}, declared {}",
                        type_str(want.dtype, &want.shape),
                        type_str(n.dtype, &n.shape)
                    ));
                }
                continue;
            }
        }
        if n.op.is_control() || matches!(n.op, Op::Get(_)) {
            if let Err(msg) = control(n, &ins) {
                return fail(msg);
            }
            continue;
        }
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

type Ty = (Vec<usize>, DType);

fn tys(xs: &[&super::Node]) -> Vec<Ty> {
    xs.iter().map(|x| (x.shape.clone(), x.dtype)).collect()
}

fn show(ts: &[Ty]) -> String {
    ts.iter()
        .map(|(s, d)| type_str(*d, s))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A sub-graph: valid itself, with parameters of the given types.
fn sub(what: &str, g: &Graph, params: &[Ty]) -> Result<Vec<Ty>, String> {
    verify(g).map_err(|e| format!("in its {what}: {e}"))?;
    let ps: Vec<Ty> = g
        .params()
        .iter()
        .map(|p| (g.node(*p).shape.clone(), g.node(*p).dtype))
        .collect();
    if ps != params {
        return Err(format!(
            "its {what} takes ({}) but the operands are ({})",
            show(&ps),
            show(params)
        ));
    }
    Ok(g.outputs
        .iter()
        .map(|o| (g.node(*o).shape.clone(), g.node(*o).dtype))
        .collect())
}

/// Typing of control-flow nodes and their `get`s.
fn control(n: &super::Node, ins: &[&super::Node]) -> Result<(), String> {
    let own: Ty = (n.shape.clone(), n.dtype);
    let first = |outs: &[Ty]| -> Result<(), String> {
        match outs.first() {
            Some(t) if *t == own => Ok(()),
            Some(t) => Err(format!(
                "its first output is {}, the node is declared {}",
                type_str(t.1, &t.0),
                type_str(own.1, &own.0)
            )),
            None => Err("a control-flow node needs at least one output".into()),
        }
    };
    match &n.op {
        Op::Cond(c) => {
            let Some(p) = ins.first() else {
                return Err("needs a predicate".into());
            };
            if p.dtype != DType::Bool || !p.shape.is_empty() {
                return Err(format!(
                    "predicate is {}, not bool[]",
                    type_str(p.dtype, &p.shape)
                ));
            }
            let operands = tys(&ins[1..]);
            let e = sub("else branch", &c.branches[0], &operands)?;
            let t = sub("then branch", &c.branches[1], &operands)?;
            if e != t {
                return Err(format!("branches give ({}) and ({})", show(&t), show(&e)));
            }
            first(&t)
        }
        Op::While(w) => {
            let operands = tys(ins);
            if w.carried > operands.len() {
                return Err(format!(
                    "{} carried values but {} operands",
                    w.carried,
                    operands.len()
                ));
            }
            let c = sub("condition", &w.cond, &operands)?;
            if c != [(vec![], DType::Bool)] {
                return Err(format!("its condition gives ({}), not bool[]", show(&c)));
            }
            let b = sub("body", &w.body, &operands)?;
            if b != operands[..w.carried] {
                return Err(format!(
                    "its body gives ({}) for carried ({})",
                    show(&b),
                    show(&operands[..w.carried])
                ));
            }
            first(&b)
        }
        Op::Scan(sc) => {
            let operands = tys(ins);
            if sc.carried + sc.xs > operands.len() {
                return Err("more carried and scanned values than operands".into());
            }
            let mut params = operands[..sc.carried].to_vec();
            for (s, d) in &operands[sc.carried..sc.carried + sc.xs] {
                if s.first() != Some(&sc.length) {
                    return Err(format!(
                        "scanned operand {} does not have the leading dimension {}",
                        type_str(*d, s),
                        sc.length
                    ));
                }
                params.push((s[1..].to_vec(), *d));
            }
            params.extend_from_slice(&operands[sc.carried + sc.xs..]);
            let b = sub("body", &sc.body, &params)?;
            if b.len() < sc.carried || b[..sc.carried] != operands[..sc.carried] {
                return Err(format!(
                    "its body gives ({}) for the carry ({})",
                    show(&b),
                    show(&operands[..sc.carried])
                ));
            }
            first(&n.op.control_outputs())
        }
        Op::Get(k) => {
            let src = ins.first().ok_or("needs an operand")?;
            if ins.len() != 1 || !src.op.is_control() {
                return Err("reads one control-flow node".into());
            }
            let outs = src.op.control_outputs();
            match outs.get(*k) {
                Some(t) if *k >= 1 && *t == own => Ok(()),
                Some(t) if *k >= 1 => Err(format!(
                    "output {k} is {}, declared {}",
                    type_str(t.1, &t.0),
                    type_str(own.1, &own.0)
                )),
                _ => Err(format!(
                    "no output {k} (outputs 1..{} are read by get)",
                    outs.len()
                )),
            }
        }
        _ => unreachable!(),
    }
}
