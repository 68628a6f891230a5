//! The shared lowering: each loop or row step's description turned, once, into a
//! self-contained kernel that every backend spells and none re-derives.
//!
//! A lowered kernel numbers its values locally (`Local`, indices into one list in
//! dependency order): each is a read through one of the kernel's accesses, a constant, or an
//! elementwise op (row kernels also: a reduction over the row, a row-level value read at
//! element level) on earlier locals. With it come the decisions the backends used to make
//! each on their own from the graph:
//! - loop kernels (`loops.rs`): which transcendentals go through the micro-kernels, in
//!   which sweep (`Tiling`);
//! - reductions (`reduction.rs`): identity, accumulator and block dtypes, NaN tracking;
//! - row kernels (`row.rs`): the sweeps over a row (reduction phases, then the element
//!   outputs), the row-level values computed before each, and which element values are
//!   stashed in a row-sized scratch (one rule).
//!
//! The Cranelift emitters (`kernel.rs`, `row.rs`) and the x86 emitters (`x86/`) read only
//! the lowered kernel, never the `Graph`; its text (`LoopKernel::key`) is the key under
//! which a program compiles a kernel once.

pub mod loops;
pub mod reduction;
pub mod row;

pub use loops::{LoopKernel, Tiling};
pub use row::RowBody;

use crate::codegen::target::Target;
use crate::describe::reduce::ReduceDescription;
use crate::describe::Description;
use crate::fusion::partition::{const_value, Step};
use crate::ir::{BinaryOp, CmpOp, Graph, Op, ReduceOp, UnaryOp, ValueId};
use crate::{DType, Literal};
use std::collections::HashMap;

/// Elements a sum or product folds in its own type before the block's result is added into
/// an f64 total (reduction and row kernels, every backend): f32 speed with f64 accuracy
/// across blocks (tested on 10^7 elements).
pub const BLOCK: i64 = 2048;

/// A compiled step lowered: a loop kernel, a row kernel, or a reduction (whose description is
/// already self-contained).
pub enum Lowered<'p> {
    Loop(LoopKernel<'p>),
    Row(RowBody<'p>),
    Reduce(&'p ReduceDescription),
}

impl<'p> Lowered<'p> {
    /// Step `s` (described by `d`) lowered for target `t`; None for a library step.
    pub fn of(g: &Graph, s: &Step, d: &'p Description, t: &Target) -> Option<Lowered<'p>> {
        Some(match (s, d) {
            (Step::Kernel(k), Description::Loop(p)) => Lowered::Loop(loops::lower(g, k, p, t)),
            (Step::Row(rk), Description::Row(p)) => Lowered::Row(row::lower(g, rk, p)),
            (Step::Reduce(_), Description::Reduce(r)) => Lowered::Reduce(r),
            _ => return None,
        })
    }

    /// Everything the kernel's code depends on, as text: two kernels with the same key compile
    /// to the same function, so a program builds each once. What the lowering derives
    /// (tiling, sweeps, stash) is not in it: it follows from the rest and the target.
    pub fn key(&self) -> String {
        match self {
            Lowered::Loop(lk) => lk.key(),
            Lowered::Row(rb) => rb.key(),
            Lowered::Reduce(r) => format!("{r:?}"),
        }
    }
}

/// A value's index in its kernel's list of locals.
pub type LocalId = usize;

/// What a local value is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LocalOp {
    /// Read through access `a` of the kernel (an input, or a view folded into its read).
    Read(usize),
    Const(Literal),
    Unary(UnaryOp, LocalId),
    Binary(BinaryOp, LocalId, LocalId),
    Compare(CmpOp, LocalId, LocalId),
    /// `cond ? a : b`.
    Select(LocalId, LocalId, LocalId),
    /// To the local's own dtype.
    Cast(LocalId),
    /// Row kernels: the reduction over the row of an element-level local.
    Reduce(ReduceOp, LocalId),
    /// Row kernels: a row-level local seen at another shape (broadcast along the row, or
    /// reshaped): the same value.
    Broadcast(LocalId),
}

/// One value of a lowered kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Local {
    pub op: LocalOp,
    pub dtype: DType,
}

/// The operands of a local, as a slice.
pub struct Operands {
    ids: [LocalId; 3],
    n: usize,
}

impl std::ops::Deref for Operands {
    type Target = [LocalId];
    fn deref(&self) -> &[LocalId] {
        &self.ids[..self.n]
    }
}

impl LocalOp {
    pub fn operands(&self) -> Operands {
        let (ids, n) = match *self {
            LocalOp::Read(_) | LocalOp::Const(_) => ([0; 3], 0),
            LocalOp::Unary(_, a)
            | LocalOp::Cast(a)
            | LocalOp::Reduce(_, a)
            | LocalOp::Broadcast(a) => ([a, 0, 0], 1),
            LocalOp::Binary(_, a, b) | LocalOp::Compare(_, a, b) => ([a, b, 0], 2),
            LocalOp::Select(c, a, b) => ([c, a, b], 3),
        };
        Operands { ids, n }
    }

    /// Whether the local is read rather than computed (a read or a constant).
    pub fn is_leaf(&self) -> bool {
        matches!(self, LocalOp::Read(_) | LocalOp::Const(_))
    }
}

/// Whether float max/min local `l` (of `locals`) needs its NaN fix-up. x86's `maxps x, y`
/// (`minps`), which the backends emit, returns `y` when either operand is NaN; NaN must
/// propagate, so a NaN `x` is restored by a compare and a blend, unless `x` is a constant that
/// is not NaN (the lowering puts such a constant first): clamps and relu are one instruction.
pub fn max_min_needs_nan_fixup(locals: &[Local], l: &Local) -> bool {
    match l.op {
        LocalOp::Binary(BinaryOp::Max | BinaryOp::Min, x, _) => !locals[x].non_nan_const(),
        _ => false,
    }
}

impl Local {
    /// The constant's literal, if the local is one.
    pub fn literal(&self) -> Option<Literal> {
        match self.op {
            LocalOp::Const(l) => Some(l),
            _ => None,
        }
    }

    /// A constant that is not NaN.
    pub fn non_nan_const(&self) -> bool {
        self.literal()
            .is_some_and(|l| !l.as_f64(self.dtype).is_nan())
    }

    /// An op whose result is worth keeping rather than computing again (row kernels' stash).
    pub fn is_expensive(&self) -> bool {
        match self.op {
            LocalOp::Unary(u, _) => u.is_transcendental(),
            LocalOp::Binary(o, _, _) => matches!(o, BinaryOp::Pow | BinaryOp::Div | BinaryOp::Rem),
            _ => false,
        }
    }
}

/// The kernel's list of locals as it is built from graph nodes: each node computed in the
/// kernel becomes one local, each value read from outside one local the first time it is
/// needed (a constant, or a read through the access `read` gives it).
pub(crate) struct Builder<'g> {
    g: &'g Graph,
    pub locals: Vec<Local>,
    /// The local of each node computed in the kernel or read into it, by the key the caller
    /// gives (row kernels read one value apart per row and per element).
    pub of: HashMap<(ValueId, bool), LocalId>,
    /// The 16-bit rounding of each f32 local holding a 16-bit value (`Builder::stored`).
    rounded: HashMap<LocalId, LocalId>,
}

impl<'g> Builder<'g> {
    pub fn new(g: &'g Graph) -> Self {
        Builder {
            g,
            locals: Vec::new(),
            of: HashMap::new(),
            rounded: HashMap::new(),
        }
    }

    /// A constant local of `dtype` (an integer dtype takes `v` as an integer).
    fn constant(&mut self, v: f64, dtype: DType) -> LocalId {
        let l = match dtype.is_float() {
            true => Literal::Float(v),
            false => Literal::Int(v as i64),
        };
        self.push(LocalOp::Const(l), dtype)
    }

    pub fn push(&mut self, op: LocalOp, dtype: DType) -> LocalId {
        self.locals.push(Local { op, dtype });
        self.locals.len() - 1
    }

    /// The local of `x` under key `level`, made from `read` (the access `x` is read through)
    /// or its constant the first time.
    pub fn leaf(&mut self, x: ValueId, level: bool, read: impl FnOnce() -> usize) -> LocalId {
        if let Some(&l) = self.of.get(&(x, level)) {
            return l;
        }
        let d = self.g.node(x).dtype;
        let (op, d) = match const_value(self.g, x) {
            // A 16-bit constant is its value as an f32 constant (nothing to widen per vector).
            Some(c) if d.is_half() => (LocalOp::Const(Literal::Float(c.as_f64(d))), DType::F32),
            Some(c) => (LocalOp::Const(c), d),
            None => (LocalOp::Read(read()), d),
        };
        let l = self.push(op, d);
        self.of.insert((x, level), l);
        l
    }

    /// Node `v` (an elementwise op) on the locals `args` of its inputs, in the ops every
    /// backend spells: the unary ops that are one binary op are lowered to it here, once
    /// (`relu(x) = max(0, x)`, `square(x) = x * x`, `recip(x) = 1 / x`,
    /// `rsqrt(x) = 1 / sqrt(x)`: the interpreter's definitions, `ir::semantics`), casts to
    /// bool are `x != 0` (NaN gives true) and casts from bool `b ? 1 : 0`, so a backend's
    /// casts are between numbers only; and a max or
    /// min with a constant that is not NaN takes the constant first, which is what lets a
    /// backend skip the NaN fix-up (`Local::max_min_needs_nan_fixup`).
    pub fn compute(&mut self, v: ValueId, args: &[LocalId]) -> LocalId {
        let n = self.g.node(v);
        if n.dtype.is_half() && !matches!(n.op, Op::Cast(_)) {
            // In f32 inside the kernel (a 16-bit operand is an f32 lane to every backend):
            // rounded where it is stored (`Builder::stored`).
            return self.compute_as(v, args, DType::F32);
        }
        // A value leaving its 16-bit type (compared, cast) is a value of that type: rounded
        // first, so that no comparison flips on precision the value does not have.
        let args: Vec<LocalId> = (args.iter().zip(&n.inputs))
            .map(|(&a, &x)| self.stored(x, a))
            .collect();
        self.compute_as(v, &args, n.dtype)
    }

    /// The local a kernel stores for node `v` computed as `l`: a 16-bit value kept in f32
    /// inside the kernel, rounded once to its type (a local of its own).
    pub fn stored(&mut self, v: ValueId, l: LocalId) -> LocalId {
        let d = self.g.node(v).dtype;
        if !d.is_half() || self.locals[l].dtype == d {
            return l;
        }
        if let Some(&r) = self.rounded.get(&l) {
            return r;
        }
        let r = self.push(LocalOp::Cast(l), d);
        self.rounded.insert(l, r);
        r
    }

    /// `compute` with the result computed in dtype `d`.
    fn compute_as(&mut self, v: ValueId, args: &[LocalId], d: DType) -> LocalId {
        let n = self.g.node(v);
        let op = match &n.op {
            Op::Unary(UnaryOp::Relu) => {
                let zero = self.constant(0.0, d);
                LocalOp::Binary(BinaryOp::Max, zero, args[0])
            }
            Op::Unary(UnaryOp::Square) => LocalOp::Binary(BinaryOp::Mul, args[0], args[0]),
            Op::Unary(UnaryOp::Recip) => {
                let one = self.constant(1.0, d);
                LocalOp::Binary(BinaryOp::Div, one, args[0])
            }
            Op::Unary(UnaryOp::Rsqrt) => {
                let root = self.push(LocalOp::Unary(UnaryOp::Sqrt, args[0]), d);
                let one = self.constant(1.0, d);
                LocalOp::Binary(BinaryOp::Div, one, root)
            }
            Op::Binary(o @ (BinaryOp::Max | BinaryOp::Min)) => {
                let (a, b) = (args[0], args[1]);
                match !self.locals[a].non_nan_const() && self.locals[b].non_nan_const() {
                    true => LocalOp::Binary(*o, b, a),
                    false => LocalOp::Binary(*o, a, b),
                }
            }
            Op::Unary(u) => LocalOp::Unary(*u, args[0]),
            Op::Binary(o) => LocalOp::Binary(*o, args[0], args[1]),
            Op::Compare(c) => LocalOp::Compare(*c, args[0], args[1]),
            Op::Select => LocalOp::Select(args[0], args[1], args[2]),
            Op::Cast(to) => {
                let from = self.locals[args[0]].dtype;
                match (from, *to) {
                    (DType::Bool, DType::Bool) => LocalOp::Cast(args[0]),
                    (_, DType::Bool) => {
                        let zero = self.constant(0.0, from);
                        LocalOp::Compare(CmpOp::Ne, args[0], zero)
                    }
                    (DType::Bool, _) => {
                        let one = self.constant(1.0, d);
                        let zero = self.constant(0.0, d);
                        LocalOp::Select(args[0], one, zero)
                    }
                    _ => LocalOp::Cast(args[0]),
                }
            }
            Op::Reduce(op, _) => LocalOp::Reduce(*op, args[0]),
            Op::Broadcast | Op::Reshape => LocalOp::Broadcast(args[0]),
            other => unreachable!("{} is not computed in a kernel", other.name()),
        };
        self.push(op, d)
    }
}

/// The locals as text, one per line (`%i = op operands : dtype`), for keys and listings.
pub fn locals_text(locals: &[Local]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for (i, l) in locals.iter().enumerate() {
        let _ = write!(s, "%{i} = ");
        let _ = match l.op {
            LocalOp::Read(a) => write!(s, "read a{a}"),
            LocalOp::Const(c) => write!(s, "const {}", crate::ir::literal_text(c)),
            LocalOp::Unary(u, a) => write!(s, "{u:?} %{a}"),
            LocalOp::Binary(o, a, b) => write!(s, "{o:?} %{a} %{b}"),
            LocalOp::Compare(c, a, b) => write!(s, "{c:?} %{a} %{b}"),
            LocalOp::Select(c, a, b) => write!(s, "select %{c} %{a} %{b}"),
            LocalOp::Cast(a) => write!(s, "cast %{a}"),
            LocalOp::Reduce(o, a) => write!(s, "reduce {o:?} %{a}"),
            LocalOp::Broadcast(a) => write!(s, "broadcast %{a}"),
        };
        let _ = writeln!(s, " : {:?}", l.dtype);
    }
    s
}
