//! The text form of a graph, one node a line:
//!
//! ```text
//! %0 = param 0 : f32[4,8]
//! %1 = const 2.0 : f32[4,8]
//! %2 = mul %0, %1 : f32[4,8]
//! return %2
//! ```
//! Every line ends with the node's type, so a pass's output reads without
//! looking anything up. A control-flow node is followed by its sub-graphs,
//! each in braces, indented (a sub-graph numbers its own values):
//!
//! ```text
//! %3 = cond %2, %0 : f32[4]
//!   {
//!     %0 = param 0 : f32[4]
//!     return %0
//!   }
//!   { ... }
//! ```
//! `parse` reads exactly this back.

use super::{Graph, Op};
use crate::error::type_str;
use crate::Literal;
use std::fmt::Write;

pub fn print(g: &Graph) -> String {
    let mut s = String::new();
    print_into(g, "", &mut s);
    s
}

fn print_into(g: &Graph, indent: &str, s: &mut String) {
    for (i, n) in g.nodes.iter().enumerate() {
        write!(s, "{indent}%{i} = {}{}", n.op.name(), attr_text(&n.op)).unwrap();
        match &n.op {
            Op::Param(k) | Op::Captured(k) => write!(s, " {k}").unwrap(),
            Op::Const(l) | Op::Pad(_, l) => write!(s, " {}", literal_text(*l)).unwrap(),
            _ => {}
        }
        for (j, v) in n.inputs.iter().enumerate() {
            s.push_str(if j == 0 { " " } else { ", " });
            write!(s, "%{}", v.0).unwrap();
        }
        writeln!(s, " : {}", type_str(n.dtype, &n.shape)).unwrap();
        for sub in n.op.subgraphs() {
            writeln!(s, "{indent}  {{").unwrap();
            print_into(sub, &format!("{indent}    "), s);
            writeln!(s, "{indent}  }}").unwrap();
        }
    }
    let outs: Vec<String> = g.outputs.iter().map(|v| format!("%{}", v.0)).collect();
    writeln!(s, "{indent}return {}", outs.join(", ")).unwrap();
}

/// Literals print so that they parse back to the same value: floats always
/// carry a `.`, an exponent, `inf` or `NaN` (Rust's shortest round-trip form).
pub fn literal_text(l: Literal) -> String {
    match l {
        Literal::Float(v) => format!("{v:?}"),
        Literal::Int(v) => v.to_string(),
        Literal::Bool(v) => v.to_string(),
    }
}

fn list<T: std::fmt::Display>(xs: &[T]) -> String {
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The bracketed attributes written right after an op's name
/// (`transpose[1,0]`, `slice[0:1,3:-1]`, `pad[1:2,0:0]`, `reduce_sum[0,2]`).
pub fn attr_text(op: &Op) -> String {
    match op {
        Op::Transpose(p) => format!("[{}]", list(p)),
        Op::Reduce(_, axes) => format!("[{}]", list(axes)),
        Op::AllGather(axis, ranks) | Op::ReduceScatter(_, axis, ranks) => {
            format!("[{axis},{ranks}]")
        }
        Op::Slice(sl) | Op::SliceScatter(sl) => format!(
            "[{}]",
            sl.iter()
                .map(|(a, b)| format!("{a}:{b}"))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Op::Pad(p, _) => format!(
            "[{}]",
            p.iter()
                .map(|(a, b)| format!("{a}:{b}"))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Op::Concat(a)
        | Op::ArgMax(a)
        | Op::ArgMin(a)
        | Op::Take(a)
        | Op::Iota(a)
        | Op::ScatterAdd(a)
        | Op::BroadcastFrom(a)
        | Op::Get(a) => format!("[{a}]"),
        Op::While(w) => format!("[{}]", w.carried),
        Op::Attention(a) | Op::AttentionGrad(a) => match a.fill {
            // `{:?}` round-trips every f64 exactly (`-1e30`, `-3.4028234663852886e38`).
            Some(f) => format!("[{},{:?},fill={f:?}]", a.mask.name(), a.scale),
            None if a.bias => format!("[{},{:?},bias]", a.mask.name(), a.scale),
            None => format!("[{},{:?}]", a.mask.name(), a.scale),
        },
        Op::Random(crate::ir::RandomOp::Uniform { lo, hi }) => format!(
            "[{},{}]",
            literal_text(Literal::Float(*lo)),
            literal_text(Literal::Float(*hi))
        ),
        Op::Conv(c) => c.attr_text(),
        Op::Window(w) => w.attr_text(),
        Op::Scan(sc) => format!(
            "[{},{},{},{}]",
            sc.length, sc.carried, sc.xs, sc.reverse as u8
        ),
        _ => String::new(),
    }
}
