//! Reduction accumulators of a row kernel's sweep: the vector computed for a reduction folded
//! into the accumulator register of its place in the unrolled group, the lanes past a row's
//! tail taking the reduction's identity, NaN lanes of max/min noted in a mask.

use super::super::{Asm, Lane, Width, R};
use super::regs::{zk, Loc, SCRATCH_K, TAIL, Y_TAIL};
use super::Vector;
use crate::codegen::lower::reduction::identity;
use crate::ir::ReduceOp;

/// The accumulators of one reduction in a row kernel's phase: one register per vector of the
/// unrolled group, and for max/min the mask register collecting NaN lanes.
pub(in crate::codegen::x86) struct AccSet {
    pub op: ReduceOp,
    pub regs: [u8; 4],
    pub nan: Option<u8>,
}

/// The bits of a reduction's identity (`lower::reduction::identity`) in `lane`.
pub(in crate::codegen::x86) fn identity_bits(op: ReduceOp, lane: Lane) -> u64 {
    let d = lane.dtype();
    lane.bits(identity(op, d).as_f64(d))
}

impl Vector<'_, '_, '_> {
    /// Fold the vector in `x` into accumulator set `j` (the register of this vector's place
    /// in its group). Lanes past the tail take the reduction's identity; max/min keep a NaN
    /// accumulator (`maxps x, acc` returns `acc` when either is NaN) and note NaN lanes of `x`
    /// in the set's mask.
    pub(super) fn accumulate(&mut self, e: &mut Asm, j: usize, x: u8) -> R<()> {
        use crate::codegen::traced::SymOp as S;
        let set = &self.ctx.accs[j];
        let (op, nan) = (set.op, set.nan);
        let acc = set.regs[(self.disp as usize) / (e.lane.bytes() as usize * e.lanes())];
        let mut t = None;
        let mut x = x;
        if self.masked {
            // The lanes past the tail: the identity.
            let r = self.regs.z()?;
            let (c, tmp) = self.constant(e, identity_bits(op, e.lane))?;
            match e.w {
                Width::Z => {
                    e.vmov(r, c)?;
                    e.masked_move(zk(r, TAIL), x)?;
                }
                Width::Y => e.blend(r, Y_TAIL, c, x)?,
            }
            if tmp {
                self.regs.free(Loc::Z(c));
            }
            x = r;
            t = Some(r);
        }
        let regs = [acc, x];
        let r = |j: u32| regs[j as usize];
        match op {
            ReduceOp::Sum => e.sym_op(S::Add(0, 1), acc, &r)?,
            ReduceOp::Max | ReduceOp::Min => {
                if let Some(k) = nan {
                    // NaN lanes of `x` into the set's mask (AVX2: through a scratch vector).
                    let s = match e.w {
                        Width::Z => SCRATCH_K,
                        Width::Y => self.regs.z()?,
                    };
                    e.cmp_mask(s, x, x, 3)?;
                    e.mask_and_or(true, k, k, s)?;
                    if e.w == Width::Y {
                        self.regs.free(Loc::Z(s));
                    }
                }
                // `x` first: the accumulator wins where either is NaN.
                if op == ReduceOp::Max {
                    e.sym_op(S::Max(1, 0), acc, &r)?;
                } else {
                    e.sym_op(S::Min(1, 0), acc, &r)?;
                }
            }
            ReduceOp::Prod => e.sym_op(S::Mul(0, 1), acc, &r)?,
        }
        if let Some(r) = t {
            self.regs.free(Loc::Z(r));
        }
        Ok(())
    }
}
