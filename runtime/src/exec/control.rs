//! Control-flow steps: a `cond`, `while` or `scan` node runs as a real loop
//! (or branch) in the executor, calling the compiled programs of its
//! sub-graphs. The code does not grow with the number of iterations: each
//! sub-graph is compiled once, with its own kernels and arena.
//!
//! Loop-carried values are donated from one iteration to the next (the body
//! may write the new state over the old one), except on the first iteration,
//! whose state is the parent program's buffers (read, never written). Scan
//! slices are read in place (borrowed rows of the scanned buffers); stacked
//! outputs are written row by row into the parent's buffers.

use super::args::{ArgKind, ArgSig, Signature};
use super::{CompileOptions, Executable};
use crate::array::{Array, ArrayRef};
use crate::ir::{Graph, Op};
use crate::storage::Buffer;
use crate::{shape, Error};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// The compiled sub-graphs of one control-flow node: `[else, then]` of a
/// `cond`, `[cond, body]` of a `while`, `[body]` of a `scan`.
pub(crate) struct ControlProgram {
    /// Shared with the other control-flow steps of the same compile whose
    /// sub-graph is the same (`SHARED`): a loop's gradient runs the same
    /// step body in several loops, compiled and held once.
    pub execs: Vec<Arc<Executable>>,
    /// How many outputs the node has (decided here, not on every call).
    pub outputs: usize,
}

fn bytes_of(g: &Graph, k: usize) -> usize {
    let n = g.node(g.params()[k]);
    shape::numel(&n.shape) * n.dtype.size()
}

thread_local! {
    /// The sub-programs compiled so far by the outermost compile running on
    /// this thread, by sub-graph text, donation, text keeping and target.
    static SHARED: RefCell<Option<HashMap<String, Arc<Executable>>>> =
        const { RefCell::new(None) };
}

/// Run `f` (a compile) sharing identical sub-programs: the outermost call
/// opens the table, nested ones use it.
pub(crate) fn sharing_sub_programs<R>(f: impl FnOnce() -> R) -> R {
    struct Close(bool);
    impl Drop for Close {
        fn drop(&mut self) {
            if self.0 {
                SHARED.with(|s| s.borrow_mut().take());
            }
        }
    }
    let outermost = SHARED.with(|s| {
        let mut s = s.borrow_mut();
        let open = s.is_none();
        if open {
            *s = Some(HashMap::new());
        }
        open
    });
    let _close = Close(outermost);
    f()
}

/// Compile a sub-graph (or take the identical one compiled before);
/// its first `donated` parameters may be donated.
fn compile_sub(g: &Graph, donated: usize, opts: &CompileOptions) -> Result<Arc<Executable>, Error> {
    let key = format!("{donated} {opts:?}\n{}", g.to_text());
    if let Some(e) = SHARED.with(|s| s.borrow().as_ref().and_then(|m| m.get(&key).cloned())) {
        return Ok(e);
    }
    let e = Arc::new(compile_new(g, donated, opts)?);
    SHARED.with(|s| {
        if let Some(m) = s.borrow_mut().as_mut() {
            m.insert(key, e.clone());
        }
    });
    Ok(e)
}

fn compile_new(g: &Graph, donated: usize, opts: &CompileOptions) -> Result<Executable, Error> {
    let args = g
        .params()
        .iter()
        .enumerate()
        .map(|(k, &p)| ArgSig {
            kind: if k < donated {
                ArgKind::Owned
            } else {
                ArgKind::Borrowed
            },
            dtype: g.node(p).dtype,
            shape: g.node(p).shape.clone(),
        })
        .collect();
    let sig = Signature {
        args,
        structure: vec![],
        statics: vec![],
    };
    // A sub-program is compiled without a budget: its parent's budget counts its arena.
    let opts = CompileOptions {
        budget: None,
        ..opts.clone()
    };
    Ok(Executable::compile(g.clone(), vec![], &sig, &opts)?)
}

/// Every distinct sub-program below these control-flow steps, at any depth
/// (a shared one once).
pub(crate) fn distinct_subs<'a>(
    steps: impl Iterator<Item = &'a ControlProgram>,
) -> Vec<&'a Executable> {
    fn walk<'a>(c: &'a ControlProgram, out: &mut Vec<&'a Executable>) {
        for e in &c.execs {
            if !out.iter().any(|x| std::ptr::eq(*x, &**e)) {
                out.push(e);
                for (_, sub) in e.controls() {
                    walk(sub, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    for c in steps {
        walk(c, &mut out);
    }
    out
}

/// The most the control-flow steps allocate while one of them runs: its
/// own transient bytes plus those of the steps nested in it.
pub(crate) fn transient_path(steps: &[(&Op, &ControlProgram)]) -> usize {
    steps
        .iter()
        .map(|(op, c)| {
            let nested = c
                .execs
                .iter()
                .map(|e| {
                    let inner: Vec<(&Op, &ControlProgram)> = e
                        .controls()
                        .map(|(v, c)| (&e.graph.node(v).op, c))
                        .collect();
                    transient_path(&inner)
                })
                .max()
                .unwrap_or(0);
            c.transient_bytes(op).saturating_add(nested)
        })
        .max()
        .unwrap_or(0)
}

/// Memory a program's control-flow steps need beyond its arena: the arena
/// of every distinct sub-program at any depth (each kept by its program for
/// the next call), and the most they allocate while one step runs.
pub(crate) fn control_bytes<'a>(steps: &[(&'a Op, &'a ControlProgram)]) -> usize {
    let held = distinct_subs(steps.iter().map(|(_, c)| *c))
        .iter()
        .fold(0usize, |s, e| s.saturating_add(e.own_temp_bytes()));
    held.saturating_add(transient_path(steps))
}

/// `control_bytes` of `g`, its sub-programs compiled to measure it.
pub(crate) fn sub_program_bytes(g: &Graph, opts: &CompileOptions) -> Result<usize, Error> {
    let opts = CompileOptions {
        keep_text: false,
        ..opts.clone()
    };
    let mut programs = Vec::new();
    for n in g.nodes.iter().filter(|n| n.op.is_control()) {
        programs.push((&n.op, ControlProgram::compile(&n.op, &opts)?));
    }
    let steps: Vec<(&Op, &ControlProgram)> = programs.iter().map(|(op, c)| (*op, c)).collect();
    Ok(control_bytes(&steps))
}

impl ControlProgram {
    pub fn compile(op: &Op, opts: &CompileOptions) -> Result<ControlProgram, Error> {
        let execs = match op {
            Op::Cond(c) => vec![
                compile_sub(&c.branches[0], 0, opts)?,
                compile_sub(&c.branches[1], 0, opts)?,
            ],
            Op::While(w) => vec![
                compile_sub(&w.cond, 0, opts)?,
                compile_sub(&w.body, w.carried, opts)?,
            ],
            Op::Scan(s) => vec![compile_sub(&s.body, s.carried, opts)?],
            _ => unreachable!("not a control-flow op"),
        };
        Ok(ControlProgram {
            execs,
            outputs: op.control_outputs().len(),
        })
    }

    /// Bytes live only while the step runs: the outputs a sub-program
    /// allocates (each step's new state, unless written over the donated old
    /// one, and its row of the stacked outputs before they are copied into
    /// the parent's buffers), plus (loops) the state carried from one step
    /// to the next.
    pub fn transient_bytes(&self, op: &Op) -> usize {
        let outputs = self
            .execs
            .iter()
            .map(|e| e.allocated_output_bytes())
            .max()
            .unwrap_or(0);
        let carried = match op {
            Op::While(w) => (0..w.carried).map(|k| bytes_of(&w.body, k)).sum(),
            Op::Scan(s) => (0..s.carried).map(|k| bytes_of(&s.body, k)).sum(),
            _ => 0,
        };
        outputs + carried
    }

    pub fn kernel_count(&self) -> usize {
        self.execs.iter().map(|e| e.kernel_count()).sum()
    }

    /// Heap bytes of the sub-programs' descriptions (`Executable::description_bytes`).
    pub fn description_bytes(&self) -> usize {
        self.execs.iter().map(|e| e.description_bytes()).sum()
    }

    /// The GEMM workspace of each sub-program (`MemoryAnalysis::library_bytes`).
    pub fn gemm_workspaces(&self) -> Vec<crate::library::workspace::GemmWorkspace> {
        self.execs.iter().map(|e| e.gemm_workspace()).collect()
    }

    /// Run the node on its operands (views of the parent's buffers), writing
    /// output `k` to `dest[k]` (null: the output is not read).
    ///
    /// # Safety
    /// Each non-null `dest[k]` must be valid for output `k`'s bytes and
    /// overlap no operand.
    pub unsafe fn run(&self, op: &Op, ins: &[Array], dest: &[*mut u8]) -> Result<(), Error> {
        fn borrowed(a: &Array) -> (ArgKind, ArrayRef<'_>) {
            (ArgKind::Borrowed, a.by_ref())
        }
        fn owned(a: &Array) -> (ArgKind, ArrayRef<'_>) {
            (ArgKind::Owned, a.by_ref())
        }
        let write = |k: usize, a: &Array, row: usize| {
            if let Some(d) = dest.get(k).filter(|d| !d.is_null()) {
                let b = &a.buf;
                let n = b.len_bytes();
                // SAFETY: the caller guarantees `dest[k]` holds the output;
                // row `row` of a stacked output is at `row * n`.
                unsafe { std::ptr::copy_nonoverlapping(b.as_mut_ptr(), d.add(row * n), n) };
            }
        };
        match op {
            Op::Cond(_) => {
                let pred = ins[0].is_true()?;
                let args: Vec<_> = ins[1..].iter().map(borrowed).collect();
                let outs = self.execs[pred as usize].run_arrays(&args)?;
                for (k, t) in outs.iter().enumerate() {
                    write(k, t, 0);
                }
            }
            Op::While(w) => {
                let (cond, body) = (&self.execs[0], &self.execs[1]);
                let inv = &ins[w.carried..];
                let mut state: Option<Vec<Array>> = None;
                loop {
                    let carried = state.as_deref().unwrap_or(&ins[..w.carried]);
                    let args: Vec<_> = carried.iter().chain(inv).map(borrowed).collect();
                    if !cond.run_arrays(&args)?[0].is_true()? {
                        break;
                    }
                    drop(args);
                    // Later iterations give the old state away (dropped after the call).
                    let old = state.take();
                    let mut args: Vec<_> = match &old {
                        Some(s) => s.iter().map(owned).collect(),
                        None => ins[..w.carried].iter().map(borrowed).collect(),
                    };
                    args.extend(inv.iter().map(borrowed));
                    let new = body.run_arrays(&args)?;
                    drop(args);
                    drop(old);
                    state = Some(new);
                }
                let carried = state.as_deref().unwrap_or(&ins[..w.carried]);
                for (k, t) in carried.iter().enumerate() {
                    write(k, t, 0);
                }
            }
            Op::Scan(sc) => {
                let body = &self.execs[0];
                let (c, x) = (sc.carried, sc.xs);
                let (xs, inv) = (&ins[c..c + x], &ins[c + x..]);
                let mut state: Option<Vec<Array>> = None;
                for step in 0..sc.length {
                    let i = if sc.reverse {
                        sc.length - 1 - step
                    } else {
                        step
                    };
                    // Row i of each scanned operand, read in place.
                    let rows: Vec<Array> = xs
                        .iter()
                        .map(|t| {
                            let row_shape = t.shape()[1..].to_vec();
                            let n = shape::numel(&row_shape) * t.dtype().size();
                            // SAFETY: row i of a live operand buffer; the
                            // array is dropped before the operand.
                            let b = unsafe {
                                Buffer::borrowed(t.buf.as_mut_ptr().wrapping_add(i * n), n)
                            };
                            Array::new(Arc::new(b), row_shape, t.dtype())
                        })
                        .collect();
                    let old = state.take();
                    let mut args: Vec<_> = match &old {
                        Some(s) => s.iter().map(owned).collect(),
                        None => ins[..c].iter().map(borrowed).collect(),
                    };
                    args.extend(rows.iter().map(borrowed));
                    args.extend(inv.iter().map(borrowed));
                    let mut outs = body.run_arrays(&args)?;
                    drop(args);
                    drop(old);
                    for (j, y) in outs.drain(c..).enumerate() {
                        write(c + j, &y, i);
                    }
                    state = Some(outs);
                }
                let carried = state.as_deref().unwrap_or(&ins[..c]);
                for (k, t) in carried.iter().enumerate() {
                    write(k, t, 0);
                }
            }
            _ => unreachable!("not a control-flow op"),
        }
        Ok(())
    }
}
