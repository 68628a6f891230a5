//! Registers of the x86 kernels: the vector and mask registers by number, where a value is
//! (`Loc`), the free registers of a vector's code (`Regs`), and the values a sweep keeps in
//! registers for all its vectors (`Hoist`, `Hoisted`).

use super::super::{Fail, Width, R};
use iced_x86::code_asm::*;
use std::collections::HashMap;

pub(in crate::codegen::x86) const Z: [AsmRegisterZmm; 32] = [
    zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13, zmm14,
    zmm15, zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27,
    zmm28, zmm29, zmm30, zmm31,
];
pub(in crate::codegen::x86) const X: [AsmRegisterXmm; 32] = [
    xmm0, xmm1, xmm2, xmm3, xmm4, xmm5, xmm6, xmm7, xmm8, xmm9, xmm10, xmm11, xmm12, xmm13, xmm14,
    xmm15, xmm16, xmm17, xmm18, xmm19, xmm20, xmm21, xmm22, xmm23, xmm24, xmm25, xmm26, xmm27,
    xmm28, xmm29, xmm30, xmm31,
];
pub(in crate::codegen::x86) const K: [AsmRegisterK; 8] = [k0, k1, k2, k3, k4, k5, k6, k7];
/// The 16 ymm registers of AVX2 kernels; `Y_TAIL` holds the tail's lane mask.
pub(in crate::codegen::x86) const Y: [AsmRegisterYmm; 16] = [
    ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14,
    ymm15,
];
pub(in crate::codegen::x86) const Y_TAIL: u8 = 15;
/// The tail mask of the masked last vector.
pub(in crate::codegen::x86) const TAIL: u8 = 1;
/// Scratch mask inside one op (max/min NaN fix-up).
pub(in crate::codegen::x86) const SCRATCH_K: u8 = 7;

/// `z{k}`: a destination written under mask `k` (merging).
pub(in crate::codegen::x86) fn zk(z: u8, k: u8) -> AsmRegisterZmm {
    let r = Z[z as usize];
    match k {
        1 => r.k1(),
        2 => r.k2(),
        3 => r.k3(),
        4 => r.k4(),
        5 => r.k5(),
        6 => r.k6(),
        7 => r.k7(),
        _ => r,
    }
}

/// Where a value is: a vector register or (bool) a mask: a k register (AVX-512) or a vector
/// register of all-ones and all-zeros lanes (AVX2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Loc {
    Z(u8),
    K(u8),
}

impl Loc {
    pub(super) fn z(self) -> u8 {
        match self {
            Loc::Z(r) => r,
            Loc::K(_) => unreachable!("a mask where a vector was expected"),
        }
    }
    pub(super) fn k(self) -> u8 {
        match self {
            Loc::K(r) => r,
            Loc::Z(_) => unreachable!("a vector where a mask was expected"),
        }
    }
}

/// Free registers (per vector: each vector of a loop starts from the pass's state).
#[derive(Clone)]
pub(in crate::codegen::x86) struct Regs {
    z: Vec<u8>,
    k: Vec<u8>,
    w: Width,
}

impl Regs {
    pub fn z(&mut self) -> R<u8> {
        self.z.pop().ok_or(Fail::Registers)
    }
    pub fn k(&mut self) -> R<u8> {
        self.k.pop().ok_or(Fail::Registers)
    }
    pub fn new(w: Width) -> Self {
        match w {
            Width::Z => Regs {
                z: (0..32).rev().collect(),
                k: vec![6, 5, 4, 3, 2],
                w,
            },
            Width::Y => Regs {
                z: (0..Y_TAIL).rev().collect(),
                k: Vec::new(),
                w,
            },
        }
    }
    /// A register for a mask.
    pub fn mask(&mut self) -> R<u8> {
        match self.w {
            Width::Z => self.k(),
            Width::Y => self.z(),
        }
    }
    pub(super) fn free(&mut self, l: Loc) {
        match (l, self.w) {
            (Loc::Z(r), _) | (Loc::K(r), Width::Y) => self.z.push(r),
            (Loc::K(r), Width::Z) => self.k.push(r),
        }
    }
}

/// How many values of each kind a pass may keep in registers for the whole pass (`Sweep::hoist`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::codegen::x86) struct Hoist {
    pub(super) consts: usize,
    pub(super) splats: usize,
    pub(super) rows: usize,
}

impl Hoist {
    /// The hoisting levels a kernel is emitted with at width `w`, most first: the first whose
    /// code fits in the registers is kept. AVX-512: at most 12 constants, 4 splats and 8
    /// row-level values of 32 registers. AVX2: up to 12, 3 and 3 of its 15 where they fit (rustc
    /// keeps all 10 constants of the 20-op chain in registers; reloading 5 of them per vector
    /// cost 15 %), else 5, 2 and 2.
    pub fn levels(w: Width) -> &'static [Hoist] {
        const OFF: Hoist = Hoist {
            consts: 0,
            splats: 0,
            rows: 0,
        };
        match w {
            Width::Z => &[
                Hoist {
                    consts: 12,
                    splats: 4,
                    rows: 8,
                },
                OFF,
            ],
            Width::Y => &[
                Hoist {
                    consts: 12,
                    splats: 3,
                    rows: 3,
                },
                Hoist {
                    consts: 5,
                    splats: 2,
                    rows: 2,
                },
                OFF,
            ],
        }
    }
}

/// Values kept in registers for a whole pass: constants (by their lane bits) and stride-0
/// accesses.
#[derive(Default)]
pub(in crate::codegen::x86) struct Hoisted {
    pub(super) consts: HashMap<u64, u8>,
    pub(super) splats: HashMap<usize, u8>,
    pub(super) rows: HashMap<i32, u8>,
    /// Registers owned by the caller for the whole pass (reduction accumulators).
    pub fixed: Vec<u8>,
}

impl Hoisted {
    pub(super) fn pinned(&self, r: u8) -> bool {
        self.consts
            .values()
            .chain(self.splats.values())
            .chain(self.rows.values())
            .chain(&self.fixed)
            .any(|&x| x == r)
    }
}
