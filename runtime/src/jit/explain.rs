//! Signatures in the words of the function's parameters: how a signature
//! reads (`f(x: &f32[8,16], n: 3)`), what changed from a cached one
//! (`argument 0 (x): shape f32[8,16] -> f32[8,32]`), and which parameters
//! varied over many (for the recompile warning).
//!
//! A [`Signature`] keeps tensors, tree structures and statics apart; the
//! call's [`ParamSlot`]s say how they interleave, parameter by parameter.
//! Names come from `FnCache::with_param_names` when the macro passes them,
//! else parameters are named by position.

use crate::error::type_str;
use crate::exec::args::{ArgKind, ArgSig, ParamSlot, Signature, StaticValue};

/// One parameter's part of a signature.
#[derive(PartialEq)]
enum Part<'a> {
    Tensor(&'a ArgSig),
    /// The leaves, and the structure entry: leaf count, length, structure.
    Tree {
        leaves: &'a [ArgSig],
        structure: &'a [usize],
    },
    Static(&'a StaticValue),
}

/// The slots a signature has when the call did not say (every tensor, then
/// every static, as separate parameters).
fn fallback_slots(sig: &Signature) -> Vec<ParamSlot> {
    let mut v = vec![ParamSlot::Tensor; sig.args.len()];
    v.extend(std::iter::repeat_n(ParamSlot::Static, sig.statics.len()));
    v
}

/// The signature cut into its parameters (`None` when `slots` does not fit
/// it).
fn parts<'a>(sig: &'a Signature, slots: &[ParamSlot]) -> Option<Vec<Part<'a>>> {
    let fallback;
    let slots = if slots.is_empty() && (!sig.args.is_empty() || !sig.statics.is_empty()) {
        fallback = fallback_slots(sig);
        &fallback[..]
    } else {
        slots
    };
    let (mut t, mut s, mut st) = (0, 0, 0);
    let mut out = Vec::with_capacity(slots.len());
    for slot in slots {
        out.push(match *slot {
            ParamSlot::Tensor => {
                t += 1;
                Part::Tensor(sig.args.get(t - 1)?)
            }
            ParamSlot::Tree { leaves } => {
                let len = *sig.structure.get(st + 1)?;
                let structure = sig.structure.get(st..st + 2 + len)?;
                st += 2 + len;
                t += leaves;
                Part::Tree {
                    leaves: sig.args.get(t - leaves..t)?,
                    structure,
                }
            }
            ParamSlot::Static => {
                s += 1;
                Part::Static(sig.statics.get(s - 1)?)
            }
        });
    }
    (t == sig.args.len() && s == sig.statics.len() && st == sig.structure.len()).then_some(out)
}

fn arg_str(a: &ArgSig) -> String {
    let t = type_str(a.dtype, &a.shape);
    match a.kind {
        ArgKind::Borrowed => format!("&{t}"),
        ArgKind::Owned => t,
        ArgKind::Scalar => format!("scalar {t}"),
    }
}

/// At most this many leaves of a tree are written out.
const LEAVES_SHOWN: usize = 4;

fn part_str(p: &Part) -> String {
    match p {
        Part::Tensor(a) => arg_str(a),
        Part::Static(v) => format!("{v:?}"),
        Part::Tree { leaves, .. } => {
            let mut ls: Vec<String> = leaves.iter().take(LEAVES_SHOWN).map(arg_str).collect();
            if leaves.len() > LEAVES_SHOWN {
                ls.push(format!("... {} leaves", leaves.len()));
            }
            format!("tree[{}]", ls.join(", "))
        }
    }
}

/// `argument 1 (x)`, or `argument 1` without names.
pub(crate) use crate::exec::args::label;

/// `f(x: &f32[8,16], n: 3)`.
pub(crate) fn describe(name: &str, sig: &Signature, slots: &[ParamSlot], names: &[&str]) -> String {
    match parts(sig, slots) {
        Some(ps) => {
            let args: Vec<String> = ps
                .iter()
                .enumerate()
                .map(|(i, p)| match names.get(i) {
                    Some(n) => format!("{n}: {}", part_str(p)),
                    None => part_str(p),
                })
                .collect();
            format!("{name}({})", args.join(", "))
        }
        None => format!("{name}{sig}"),
    }
}

/// A change and its weight (how far apart the two signatures are: a
/// tensor whose dtype and shape both changed counts 2).
type Change = (usize, String);

fn tensor_change(what: &str, a: &ArgSig, b: &ArgSig) -> Change {
    let (ta, tb) = (type_str(a.dtype, &a.shape), type_str(b.dtype, &b.shape));
    if a.kind != b.kind {
        (1, format!("{what}: {} -> {}", arg_str(a), arg_str(b)))
    } else if a.shape == b.shape {
        (
            1,
            format!("{what}: dtype {} -> {}", a.dtype.name(), b.dtype.name()),
        )
    } else if a.dtype == b.dtype {
        (1, format!("{what}: shape {ta} -> {tb}"))
    } else {
        (2, format!("{what}: {ta} -> {tb}"))
    }
}

/// At most this many changed leaves of one tree are listed.
const LEAF_CHANGES_SHOWN: usize = 3;

fn part_changes(i: usize, names: &[&str], a: &Part, b: &Part, out: &mut Vec<Change>) {
    if a == b {
        return;
    }
    let what = label(i, names);
    match (a, b) {
        (Part::Tensor(x), Part::Tensor(y)) => out.push(tensor_change(&what, x, y)),
        (Part::Static(x), Part::Static(y)) => {
            out.push((1, format!("{what}: static {x:?} -> {y:?}")))
        }
        (
            Part::Tree {
                leaves: la,
                structure: sa,
            },
            Part::Tree {
                leaves: lb,
                structure: sb,
            },
        ) => {
            if sa != sb {
                let detail = if la.len() != lb.len() {
                    format!("leaves {} -> {}", la.len(), lb.len())
                } else {
                    format!("structure {:?} -> {:?}", &sa[2..], &sb[2..])
                };
                out.push((2, format!("{what}: tree structure changed ({detail})")));
                return;
            }
            let changed: Vec<usize> = (0..la.len()).filter(|&j| la[j] != lb[j]).collect();
            for &j in changed.iter().take(LEAF_CHANGES_SHOWN) {
                out.push(tensor_change(&format!("{what} leaf {j}"), &la[j], &lb[j]));
            }
            if changed.len() > LEAF_CHANGES_SHOWN {
                out.push((
                    changed.len() - LEAF_CHANGES_SHOWN,
                    format!(
                        "{what}: {} more leaves changed",
                        changed.len() - LEAF_CHANGES_SHOWN
                    ),
                ));
            }
        }
        _ => out.push((2, format!("{what}: {} -> {}", part_str(a), part_str(b)))),
    }
}

/// What changed from `old` to `new`, one entry per changed parameter (or
/// tree leaf), and how far apart they are. Empty (0) when they are equal.
pub(crate) fn changes(
    old: (&Signature, &[ParamSlot]),
    new: (&Signature, &[ParamSlot]),
    names: &[&str],
) -> (usize, Vec<String>) {
    match (parts(old.0, old.1), parts(new.0, new.1)) {
        (Some(a), Some(b)) if a.len() == b.len() => {
            let mut out = Vec::new();
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                part_changes(i, names, x, y, &mut out);
            }
            (
                out.iter().map(|c| c.0).sum(),
                out.into_iter().map(|c| c.1).collect(),
            )
        }
        _ if old.0 == new.0 => (0, vec![]),
        _ => (
            usize::MAX / 2,
            vec![format!("signature {} -> {}", old.0, new.0)],
        ),
    }
}

/// At most this many distinct values of a varying parameter are listed.
const VALUES_SHOWN: usize = 3;

/// The parameters that differ among `sigs`, each with its number of
/// distinct types (or static values) and the first few of them:
/// `argument 0 (x) took 9 types (f32[1], f32[2], f32[3], ...)`.
pub(crate) fn varied<'a>(
    sigs: impl Iterator<Item = (&'a Signature, &'a [ParamSlot])>,
    names: &[&str],
) -> Vec<String> {
    // Per parameter: its distinct renderings in order of first appearance,
    // and whether it is static.
    let mut seen: Vec<(Vec<String>, bool)> = Vec::new();
    for (sig, slots) in sigs {
        let Some(ps) = parts(sig, slots) else {
            continue;
        };
        if seen.len() < ps.len() {
            seen.resize(ps.len(), (Vec::new(), false));
        }
        for (i, p) in ps.iter().enumerate() {
            let s = part_str(p);
            seen[i].1 = matches!(p, Part::Static(_));
            if !seen[i].0.contains(&s) {
                seen[i].0.push(s);
            }
        }
    }
    seen.iter()
        .enumerate()
        .filter(|(_, (vals, _))| vals.len() > 1)
        .map(|(i, (vals, is_static))| {
            let mut shown: Vec<&str> = vals.iter().take(VALUES_SHOWN).map(|s| s.as_str()).collect();
            if vals.len() > VALUES_SHOWN {
                shown.push("...");
            }
            let kind = if *is_static { "values" } else { "types" };
            format!(
                "{} took {} {kind} ({})",
                label(i, names),
                vals.len(),
                shown.join(", ")
            )
        })
        .collect()
}
