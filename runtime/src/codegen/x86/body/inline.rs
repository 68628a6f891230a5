//! Transcendentals and pow inline in a vector's code: the operations of their traced definition
//! (`traced::trace`), each as the instruction the micro-kernel uses, with registers freed at
//! each operand's last read.

use super::super::{Asm, R};
use super::{Loc, Vector};
use crate::codegen::traced::{Function, SymOp};

impl Vector<'_, '_, '_> {
    /// Function `f` of the values in `args` (f32 or f64 lanes; pow's x and y), inline: the
    /// operations of its traced definition (`traced::trace`), each as the instruction the
    /// micro-kernel uses, so the bits are the micro-kernel's (and the Cranelift path's).
    /// Returns the result's register (owned).
    pub(super) fn inline(&mut self, e: &mut Asm, f: Function, args: &[u8]) -> R<Loc> {
        let traced = e.traced(f);
        let (ops, res) = (&traced.0, traced.1 as usize);
        let mut last = vec![usize::MAX; ops.len()];
        for (i, op) in ops.iter().enumerate() {
            for j in op.operands() {
                last[j as usize] = i;
            }
        }
        // Register of each result, and whether this function owns it (frees it).
        let mut loc: Vec<Option<Loc>> = vec![None; ops.len()];
        let mut owned = vec![false; ops.len()];
        for (i, op) in ops.iter().enumerate() {
            let r = |j: u32| loc[j as usize].expect("operand computed").z();
            let dies = |j: u32, owned: &[bool]| owned[j as usize] && last[j as usize] == i;
            let out = match *op {
                SymOp::Arg(k) => {
                    loc[i] = Some(Loc::Z(args[k as usize]));
                    continue;
                }
                SymOp::Const(bits) => {
                    let (r, tmp) = self.constant(e, bits)?;
                    owned[i] = tmp;
                    loc[i] = Some(Loc::Z(r));
                    continue;
                }
                SymOp::Fma(a, b, c) => {
                    // Write over an operand that dies here (no copy).
                    let (d, form) = if dies(a, &owned) {
                        owned[a as usize] = false;
                        (loc[a as usize].unwrap().z(), (b, c, 213))
                    } else if dies(c, &owned) {
                        owned[c as usize] = false;
                        (loc[c as usize].unwrap().z(), (a, b, 231))
                    } else if dies(b, &owned) && b != a && b != c {
                        owned[b as usize] = false;
                        (loc[b as usize].unwrap().z(), (a, c, 213))
                    } else {
                        let d = self.regs.z()?;
                        e.vmov(d, r(a))?;
                        (d, (b, c, 213))
                    };
                    e.fma(form.2 == 213, d, r(form.0), r(form.1))?;
                    Loc::Z(d)
                }
                SymOp::Lt(a, b) | SymOp::Eq(a, b) | SymOp::Uge(a, b) => {
                    let k = self.regs.mask()?;
                    let imm = match *op {
                        SymOp::Lt(..) => 0x11, // LT_OQ
                        SymOp::Eq(..) => 0x00, // EQ_OQ
                        _ => 0x05,             // NLT_UQ
                    };
                    e.cmp_mask(k, r(a), r(b), imm)?;
                    Loc::K(k)
                }
                SymOp::Sel(m, t, f) => {
                    let d = self.regs.z()?;
                    let mk = loc[m as usize].unwrap().k();
                    e.blend(d, mk, r(f), r(t))?;
                    Loc::Z(d)
                }
                SymOp::ExactR(..) | SymOp::ExactN(_) => {
                    unreachable!("functions that call out are tiled (`node_ok`)")
                }
                SymOp::Shl(..)
                | SymOp::Shr(..)
                | SymOp::Add(..)
                | SymOp::Sub(..)
                | SymOp::Mul(..)
                | SymOp::Div(..)
                | SymOp::Min(..)
                | SymOp::Max(..)
                | SymOp::And(..)
                | SymOp::Or(..)
                | SymOp::Xor(..)
                | SymOp::Iadd(..)
                | SymOp::Isub(..) => {
                    let d = self.regs.z()?;
                    e.sym_op(*op, d, &|j| r(j))?;
                    Loc::Z(d)
                }
            };
            loc[i] = Some(out);
            owned[i] = true;
            // Operands read for the last time are freed (each once).
            let mut seen: Vec<u32> = Vec::new();
            for j in op.operands() {
                if !seen.contains(&j) && dies(j, &owned) {
                    seen.push(j);
                    owned[j as usize] = false;
                    self.regs.free(loc[j as usize].unwrap());
                }
            }
            if last[i] == usize::MAX && i != res {
                owned[i] = false;
                self.regs.free(out);
            }
        }
        if owned[res] {
            return Ok(loc[res].unwrap());
        }
        // The result is the argument or a pinned constant: copy it.
        let d = self.regs.z()?;
        e.vmov(d, loc[res].unwrap().z())?;
        Ok(Loc::Z(d))
    }
}
