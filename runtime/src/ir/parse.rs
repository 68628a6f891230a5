//! Parser of the text form written by `print.rs`. Value names may be any
//! `%identifier`; they are renumbered in order of definition.

use super::{BinaryOp, CmpOp, Graph, Node, Op, UnaryOp, ValueId};
use crate::{DType, Error, Literal};
use std::collections::HashMap;

pub fn parse(text: &str) -> Result<Graph, Error> {
    let mut g = Graph::new();
    let mut names: HashMap<String, ValueId> = HashMap::new();
    let mut returned = false;
    for (lineno, raw) in text.lines().enumerate() {
        let line_no = lineno + 1;
        let line = raw.split("//").next().unwrap().trim();
        if line.is_empty() {
            continue;
        }
        if returned {
            return Err(Error::parse(line_no, "text after `return`"));
        }
        if let Some(rest) = line.strip_prefix("return") {
            for name in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                g.outputs.push(lookup(&names, name, line_no)?);
            }
            returned = true;
            continue;
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
            "pad" => {
                let pairs = pairs::<usize>(attr("before:after per axis")?, line_no)?;
                let (lit, rest) = split_first_word(args);
                (Op::Pad(pairs, parse_literal(lit, line_no)?), rest)
            }
            r if r.starts_with("reduce_") => {
                let op = crate::ir::ReduceOp::ALL
                    .into_iter()
                    .find(|o| o.name() == r)
                    .ok_or_else(|| Error::parse(line_no, format!("unknown op `{r}`")))?;
                (Op::Reduce(op, usizes(attr("the axes")?, line_no)?), args)
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
    if !returned {
        return Err(Error::parse(text.lines().count(), "missing `return`"));
    }
    Ok(g)
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
