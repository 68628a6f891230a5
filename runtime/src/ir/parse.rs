//! Parser of the text form written by `print.rs`. Value names may be any
//! `%identifier`; they are renumbered in order of definition.

use super::{BinaryOp, CmpOp, Graph, Node, Op, RandomOp, UnaryOp, ValueId};
use crate::{DType, Error, Literal};
use std::collections::HashMap;

pub fn parse(text: &str) -> Result<Graph, Error> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, raw)| (i + 1, raw.split("//").next().unwrap().trim()))
        .filter(|(_, l)| !l.is_empty())
        .collect();
    let mut pos = 0;
    let g = parse_graph(&lines, &mut pos, false)?;
    if let Some((line_no, _)) = lines.get(pos) {
        return Err(Error::parse(*line_no, "text after `return`"));
    }
    Ok(g)
}

/// One graph from `lines[*pos..]` up to and including its `return` (and,
/// for a sub-graph, the closing `}`).
fn parse_graph(lines: &[(usize, &str)], pos: &mut usize, nested: bool) -> Result<Graph, Error> {
    let mut g = Graph::new();
    let mut names: HashMap<String, ValueId> = HashMap::new();
    loop {
        let Some(&(line_no, line)) = lines.get(*pos) else {
            let last = lines.last().map_or(1, |l| l.0);
            return Err(Error::parse(last, "missing `return`"));
        };
        *pos += 1;
        if let Some(rest) = line.strip_prefix("return") {
            for name in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                g.outputs.push(lookup(&names, name, line_no)?);
            }
            if nested {
                match lines.get(*pos) {
                    Some((_, "}")) => *pos += 1,
                    Some((n, _)) => {
                        return Err(Error::parse(
                            *n,
                            "expected `}` after a sub-graph's `return`",
                        ))
                    }
                    None => return Err(Error::parse(line_no, "missing `}` after a sub-graph")),
                }
            }
            return Ok(g);
        }
        let (lhs, rhs) = line.split_once('=').ok_or_else(|| {
            Error::parse(
                line_no,
                format!("expected `%name = op ... : type`, found `{line}`"),
            )
        })?;
        let name = lhs.trim();
        if !name.starts_with('%') || name.len() < 2 {
            return Err(Error::parse(
                line_no,
                format!("value names start with `%`, found `{name}`"),
            ));
        }
        if names.contains_key(name) {
            return Err(Error::parse(line_no, format!("`{name}` is defined twice")));
        }
        let (body, ty) = rhs.rsplit_once(':').ok_or_else(|| {
            Error::parse(line_no, "missing `: dtype[shape]` at the end of the line")
        })?;
        let (dtype, shape) = parse_type(ty.trim(), line_no)?;
        let mut words = body.trim().splitn(2, ' ');
        let opword = words.next().unwrap_or("");
        let args = words.next().unwrap_or("").trim();
        let (opname, attrs) = match opword.split_once('[') {
            Some((n, rest)) => {
                let a = rest
                    .strip_suffix(']')
                    .ok_or_else(|| Error::parse(line_no, format!("unclosed `[` in `{opword}`")))?;
                (n, Some(a))
            }
            None => (opword, None),
        };
        let attr = |what: &str| -> Result<&str, Error> {
            attrs.ok_or_else(|| {
                Error::parse(
                    line_no,
                    format!("`{opname}` needs {what} in brackets, e.g. `{opname}[0]`"),
                )
            })
        };
        let (op, operand_text) = match opname {
            "param" | "captured" => {
                let (k, rest) = split_first_word(args);
                let k: usize = k.parse().map_err(|_| {
                    Error::parse(line_no, format!("`{opname}` needs an index, found `{k}`"))
                })?;
                (
                    if opname == "param" {
                        Op::Param(k)
                    } else {
                        Op::Captured(k)
                    },
                    rest,
                )
            }
            "const" => {
                let (lit, rest) = split_first_word(args);
                (Op::Const(parse_literal(lit, line_no)?), rest)
            }
            "select" => (Op::Select, args),
            "reshape" => (Op::Reshape, args),
            "matmul" => (Op::Matmul, args),
            "barrier" => (Op::Barrier, args),
            "transpose" => (
                Op::Transpose(usizes(attr("a permutation")?, line_no)?),
                args,
            ),
            "concat" => (Op::Concat(one(attr("an axis")?, line_no)?), args),
            "argmax" => (Op::ArgMax(one(attr("an axis")?, line_no)?), args),
            "argmin" => (Op::ArgMin(one(attr("an axis")?, line_no)?), args),
            "take" => (Op::Take(one(attr("an axis")?, line_no)?), args),
            "iota" => (Op::Iota(one(attr("an axis")?, line_no)?), args),
            "slice" => {
                let pairs = pairs::<i64>(attr("start:step per axis")?, line_no)?;
                (Op::Slice(pairs), args)
            }
            "slice_scatter" => {
                let pairs = pairs::<i64>(attr("start:step per axis")?, line_no)?;
                (Op::SliceScatter(pairs), args)
            }
            "scatter_add" => (Op::ScatterAdd(one(attr("an axis")?, line_no)?), args),
            "get" => (Op::Get(one(attr("an output index")?, line_no)?), args),
            "attention" | "attention_grad" => {
                let spec = attn_spec(attr("a mask kind and a scale")?, line_no)?;
                if opname == "attention" {
                    (Op::Attention(spec), args)
                } else {
                    (Op::AttentionGrad(spec), args)
                }
            }
            "conv" | "conv_input_grad" | "conv_weight_grad" => {
                let role = match opname {
                    "conv" => super::ConvRole::Output,
                    "conv_input_grad" => super::ConvRole::Input,
                    _ => super::ConvRole::Weight,
                };
                let text = attr("strides and padding, e.g. `s=1,1;p=0:0,0:0`")?;
                let spec = super::ConvSpec::parse(role, text)
                    .map_err(|e| Error::parse(line_no, format!("`{opname}`: {e}")))?;
                (Op::Conv(std::sync::Arc::new(spec)), args)
            }
            name if super::WindowRole::from_name(name).is_some() => {
                let role = super::WindowRole::from_name(name).expect("matched");
                let text = attr(
                    "a window, strides and padding, e.g. `w=1,2,2,1;s=1,2,2,1;p=0:0,0:0,0:0,0:0`",
                )?;
                let spec = super::WindowSpec::parse(role, text)
                    .map_err(|e| Error::parse(line_no, format!("`{opname}`: {e}")))?;
                (Op::Window(std::sync::Arc::new(spec)), args)
            }
            "cond" => {
                let else_ = sub_graph(lines, pos, line_no)?;
                let then = sub_graph(lines, pos, line_no)?;
                (
                    Op::Cond(std::sync::Arc::new(super::CondOp {
                        branches: [else_, then],
                    })),
                    args,
                )
            }
            "while" => {
                let carried = one(attr("the number of carried values")?, line_no)?;
                let cond = sub_graph(lines, pos, line_no)?;
                let body = sub_graph(lines, pos, line_no)?;
                (
                    Op::While(std::sync::Arc::new(super::WhileOp {
                        cond,
                        body,
                        carried,
                    })),
                    args,
                )
            }
            "scan" => {
                let a = usizes(attr("length,carried,xs,reverse")?, line_no)?;
                if a.len() != 4 || a[3] > 1 {
                    return Err(Error::parse(
                        line_no,
                        "`scan` needs `[length,carried,xs,reverse]` with reverse 0 or 1",
                    ));
                }
                let body = sub_graph(lines, pos, line_no)?;
                (
                    Op::Scan(std::sync::Arc::new(super::ScanOp {
                        body,
                        length: a[0],
                        carried: a[1],
                        xs: a[2],
                        reverse: a[3] == 1,
                    })),
                    args,
                )
            }
            "pad" => {
                let pairs = pairs::<usize>(attr("before:after per axis")?, line_no)?;
                let (lit, rest) = split_first_word(args);
                (Op::Pad(pairs, parse_literal(lit, line_no)?), rest)
            }
            "broadcast_from" => (Op::BroadcastFrom(one(attr("the root")?, line_no)?), args),
            "all_gather" => {
                let a = usizes(attr("the axis and the ranks")?, line_no)?;
                let [axis, ranks] = a[..] else {
                    return Err(Error::parse(line_no, "all_gather takes [axis,ranks]"));
                };
                (Op::AllGather(axis, ranks), args)
            }
            r if r.starts_with("reduce_scatter_") => {
                let op = crate::ir::ReduceOp::ALL
                    .into_iter()
                    .find(|&o| Op::ReduceScatter(o, 0, 1).name() == r)
                    .ok_or_else(|| Error::parse(line_no, format!("unknown op `{r}`")))?;
                let a = usizes(attr("the axis and the ranks")?, line_no)?;
                let [axis, ranks] = a[..] else {
                    return Err(Error::parse(line_no, format!("{r} takes [axis,ranks]")));
                };
                (Op::ReduceScatter(op, axis, ranks), args)
            }
            r if r.starts_with("all_reduce_") => {
                let op = crate::ir::ReduceOp::ALL
                    .into_iter()
                    .find(|&o| Op::AllReduce(o).name() == r)
                    .ok_or_else(|| Error::parse(line_no, format!("unknown op `{r}`")))?;
                (Op::AllReduce(op), args)
            }
            r if r.starts_with("reduce_") => {
                let op = crate::ir::ReduceOp::ALL
                    .into_iter()
                    .find(|o| o.name() == r)
                    .ok_or_else(|| Error::parse(line_no, format!("unknown op `{r}`")))?;
                (Op::Reduce(op, usizes(attr("the axes")?, line_no)?), args)
            }
            "random_bits" => (Op::Random(RandomOp::Bits), args),
            "random_normal" => (Op::Random(RandomOp::Normal), args),
            "random_split" => (Op::Random(RandomOp::Split), args),
            "random_fold_in" => (Op::Random(RandomOp::FoldIn), args),
            "random_uniform" => {
                let a = attr("the bounds `lo,hi`")?;
                let bounds: Vec<f64> = a
                    .split(',')
                    .map(|x| match parse_literal(x.trim(), line_no) {
                        Ok(Literal::Float(v)) => Ok(v),
                        Ok(Literal::Int(v)) => Ok(v as f64),
                        _ => Err(Error::parse(line_no, format!("bad bound `{x}`"))),
                    })
                    .collect::<Result<_, _>>()?;
                let [lo, hi] = bounds[..] else {
                    return Err(Error::parse(
                        line_no,
                        "`random_uniform` needs two bounds, e.g. `random_uniform[0.0,1.0]`",
                    ));
                };
                (Op::Random(RandomOp::Uniform { lo, hi }), args)
            }
            "cast" => (Op::Cast(dtype), args),
            "broadcast" => (Op::Broadcast, args),
            other => {
                if let Some(u) = UnaryOp::ALL.into_iter().find(|u| u.name() == other) {
                    (Op::Unary(u), args)
                } else if let Some(b) = BinaryOp::ALL.into_iter().find(|b| b.name() == other) {
                    (Op::Binary(b), args)
                } else if let Some(c) = CmpOp::ALL.into_iter().find(|c| c.name() == other) {
                    (Op::Compare(c), args)
                } else {
                    return Err(Error::parse(line_no, format!("unknown op `{other}`")));
                }
            }
        };
        let mut inputs = Vec::new();
        for operand in operand_text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            inputs.push(lookup(&names, operand, line_no)?);
        }
        let id = g.push(Node {
            op,
            inputs,
            shape,
            dtype,
            loc: None,
        });
        names.insert(name.to_string(), id);
    }
}

/// A `{ .. }` sub-graph following a control-flow node's line.
fn sub_graph(lines: &[(usize, &str)], pos: &mut usize, op_line: usize) -> Result<Graph, Error> {
    match lines.get(*pos) {
        Some((_, "{")) => {
            *pos += 1;
            parse_graph(lines, pos, true)
        }
        Some((n, l)) => Err(Error::parse(
            *n,
            format!("expected `{{` opening a sub-graph, found `{l}`"),
        )),
        None => Err(Error::parse(op_line, "missing sub-graph")),
    }
}

fn split_first_word(s: &str) -> (&str, &str) {
    match s.split_once(' ') {
        Some((a, b)) => (a, b.trim()),
        None => (s, ""),
    }
}

fn lookup(names: &HashMap<String, ValueId>, name: &str, line: usize) -> Result<ValueId, Error> {
    names
        .get(name)
        .copied()
        .ok_or_else(|| Error::parse(line, format!("`{name}` is used before it is defined")))
}

fn parse_type(s: &str, line: usize) -> Result<(DType, Vec<usize>), Error> {
    let bad = || {
        Error::parse(
            line,
            format!("expected a type like `f32[4,8]`, found `{s}`"),
        )
    };
    let (d, rest) = s.split_once('[').ok_or_else(bad)?;
    let dims = rest.strip_suffix(']').ok_or_else(bad)?;
    let dtype = DType::from_name(d.trim())
        .ok_or_else(|| Error::parse(line, format!("unknown dtype `{d}`")))?;
    let shape = dims
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| x.parse::<usize>().map_err(|_| bad()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((dtype, shape))
}

fn parse_literal(s: &str, line: usize) -> Result<Literal, Error> {
    match s {
        "true" => return Ok(Literal::Bool(true)),
        "false" => return Ok(Literal::Bool(false)),
        _ => {}
    }
    let looks_float = s.contains(['.', 'e', 'E']) || s.contains("inf") || s.contains("NaN");
    if !looks_float {
        if let Ok(v) = s.parse::<i64>() {
            return Ok(Literal::Int(v));
        }
    }
    s.parse::<f64>()
        .map(Literal::Float)
        .map_err(|_| Error::parse(line, format!("bad literal `{s}`")))
}

fn usizes(s: &str, line: usize) -> Result<Vec<usize>, Error> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| {
            x.parse::<usize>()
                .map_err(|_| Error::parse(line, format!("expected an index, found `{x}`")))
        })
        .collect()
}

fn one(s: &str, line: usize) -> Result<usize, Error> {
    s.trim()
        .parse::<usize>()
        .map_err(|_| Error::parse(line, format!("expected an axis, found `{s}`")))
}

fn pairs<T: std::str::FromStr>(s: &str, line: usize) -> Result<Vec<(T, T)>, Error> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| {
            let bad = || Error::parse(line, format!("expected `a:b`, found `{x}`"));
            let (a, b) = x.split_once(':').ok_or_else(bad)?;
            Ok((
                a.trim().parse::<T>().map_err(|_| bad())?,
                b.trim().parse::<T>().map_err(|_| bad())?,
            ))
        })
        .collect()
}

/// `causal,0.125`, `causal,0.125,fill=-1e30` or `causal,0.125,bias`: an attention's mask
/// kind, scale and the finite value of a masked score (only under a causal or bool mask),
/// or that a causal mask is an added `-inf` bias (`AttnSpec::bias`).
fn attn_spec(text: &str, line_no: usize) -> Result<super::AttnSpec, Error> {
    use super::MaskKind;
    let bad = || {
        Error::parse(line_no, format!("attention needs `[mask,scale]`, `[mask,scale,fill=x]` or `[causal,scale,bias]` with mask none, causal, bool or additive (a finite fill x only with causal or bool), found `[{text}]`"))
    };
    let (kind, rest) = text.split_once(',').ok_or_else(bad)?;
    let (scale, fill, bias) = match rest.split_once(',') {
        Some((scale, b)) if b.trim() == "bias" => (scale, None, true),
        Some((scale, fill)) => {
            let x = fill.trim().strip_prefix("fill=").ok_or_else(bad)?;
            let x: f64 = x.trim().parse().map_err(|_| bad())?;
            (scale, Some(x), false)
        }
        None => (rest, None, false),
    };
    let mask = match kind.trim() {
        "none" => MaskKind::None,
        "causal" => MaskKind::Causal,
        "bool" => MaskKind::Bool,
        "additive" => MaskKind::Additive,
        _ => return Err(bad()),
    };
    let scale: f64 = scale.trim().parse().map_err(|_| bad())?;
    let spec = if bias {
        if mask != MaskKind::Causal {
            return Err(bad());
        }
        super::AttnSpec::causal_bias(scale)
    } else {
        super::AttnSpec::new(mask, scale, fill)
    };
    if spec.fill != fill {
        return Err(bad());
    }
    Ok(spec)
}
