//! The assembler of one x86 function at its width and lane type: each vector operation
//! spelled once as the instruction of that width and lane (`sym_op`, loads, stores, masks,
//! compares, blends), the constant pool emitted after the code, and the AVX2 tail table.

use super::*;

/// The assembler of one function, its constant pool and the traced functions it inlined.
pub(super) struct Asm {
    pub a: CodeAssembler,
    pub w: Width,
    /// The lane type every vector instruction is spelled for.
    pub lane: Lane,
    /// Whether the lanes hold integers (`int.rs`): arithmetic and compares are integer
    /// instructions, moves those of `lane`.
    pub int: bool,
    /// The constant pool: (lane bits, label), emitted after the code.
    pub(super) consts: Vec<(u64, CodeLabel)>,
    /// AVX2 tails: 8 all-ones dwords then 8 zeros; the mask of the first `m` lanes is the 8
    /// dwords at `8 - m` (f32) or `8 - 2m` (f64).
    pub(super) tail_table: Option<CodeLabel>,
    /// The most values a pass of the function keeps in registers (`body::Pass::hoist`).
    pub(super) held: usize,
}

impl Asm {
    pub(super) fn new(w: Width, lane: Lane) -> R<Self> {
        Ok(Asm {
            a: CodeAssembler::new(64)?,
            w,
            lane,
            int: false,
            tail_table: None,
            held: 0,
            consts: Vec::new(),
        })
    }

    /// Lanes per vector.
    pub(super) fn lanes(&self) -> usize {
        self.w.lanes() * 4 / self.lane.bytes() as usize
    }

    /// Bytes per element of an access of dtype `d`: a lane, or one byte for bools.
    pub(super) fn elem_bytes(&self, d: DType) -> i32 {
        match d {
            DType::Bool => 1,
            DType::BF16 | DType::F16 => 2,
            _ => self.lane.bytes(),
        }
    }

    /// The dtype of the lanes' values.
    pub(super) fn value_dtype(&self) -> DType {
        value_dtype(self.lane, self.int)
    }

    /// The lane bits of constant `l` of dtype `d` (the lanes' dtype).
    pub(super) fn const_bits(&self, l: crate::Literal, d: DType) -> u64 {
        match (self.int, self.lane) {
            (true, Lane::F32) => l.as_i64(d) as u32 as u64,
            (true, Lane::F64) => l.as_i64(d) as u64,
            (false, lane) => lane.bits(l.as_f64(d)),
        }
    }

    /// The traced operations of function `f` on the lane type (see `body::Vector::inline`).
    pub(super) fn traced(&self, f: traced::Function) -> &'static traced::Traced {
        traced::trace(f, self.lane.dtype()).expect("checked by `supported`")
    }

    /// The label of constant `bits` (a lane) in the pool.
    pub(super) fn const_label(&mut self, bits: u64) -> CodeLabel {
        if let Some(&(_, l)) = self.consts.iter().find(|c| c.0 == bits) {
            return l;
        }
        let l = self.a.create_label();
        self.consts.push((bits, l));
        l
    }

    /// A vector of memory at `m` at this width.
    pub(super) fn vmem<M: Into<AsmMemoryOperand>>(&self, m: M) -> AsmMemoryOperand {
        match self.w {
            Width::Z => zmmword_ptr(m),
            Width::Y => ymmword_ptr(m),
        }
    }

    /// Every lane of vector register `r` = the lane at `m`.
    pub(super) fn broadcast<M: Into<AsmMemoryOperand>>(&mut self, r: u8, m: M) -> R<()> {
        let r = r as usize;
        match (self.w, self.lane) {
            (Width::Z, Lane::F32) => self.a.vbroadcastss(body::Z[r], dword_ptr(m))?,
            (Width::Y, Lane::F32) => self.a.vbroadcastss(body::Y[r], dword_ptr(m))?,
            (Width::Z, Lane::F64) => self.a.vbroadcastsd(body::Z[r], qword_ptr(m))?,
            (Width::Y, Lane::F64) => self.a.vbroadcastsd(body::Y[r], qword_ptr(m))?,
        }
        Ok(())
    }

    /// Vector register `r` = the vector at `m`; under the tail mask (zeroing the other lanes)
    /// where `masked`.
    pub(super) fn load(&mut self, r: u8, m: AsmMemoryOperand, masked: bool) -> R<()> {
        use body::{zk, Y, Z};
        let (r, t) = (r as usize, Y[body::Y_TAIL as usize]);
        match (self.w, self.lane, masked) {
            (Width::Z, Lane::F32, true) => self.a.vmovups(zk(r as u8, body::TAIL).z(), m)?,
            (Width::Z, Lane::F64, true) => self.a.vmovupd(zk(r as u8, body::TAIL).z(), m)?,
            (Width::Z, _, false) => self.a.vmovups(Z[r], m)?,
            (Width::Y, Lane::F32, true) => self.a.vmaskmovps(Y[r], t, m)?,
            (Width::Y, Lane::F64, true) => self.a.vmaskmovpd(Y[r], t, m)?,
            (Width::Y, _, false) => self.a.vmovups(Y[r], m)?,
        }
        Ok(())
    }

    /// The vector at `m` = vector register `r`; its lanes under the tail mask where `masked`.
    pub(super) fn store(&mut self, m: AsmMemoryOperand, r: u8, masked: bool) -> R<()> {
        use body::{Y, Z};
        let (r, t) = (r as usize, Y[body::Y_TAIL as usize]);
        match (self.w, self.lane, masked) {
            (Width::Z, Lane::F32, true) => self.a.vmovups(m.k1(), Z[r])?,
            (Width::Z, Lane::F64, true) => self.a.vmovupd(m.k1(), Z[r])?,
            (Width::Z, _, false) => self.a.vmovups(m, Z[r])?,
            (Width::Y, Lane::F32, true) => self.a.vmaskmovps(m, t, Y[r])?,
            (Width::Y, Lane::F64, true) => self.a.vmaskmovpd(m, t, Y[r])?,
            (Width::Y, _, false) => self.a.vmovups(m, Y[r])?,
        }
        Ok(())
    }

    /// The vector at `m` = vector register `r`, stored around the caches (`m` aligned to the
    /// vector's size): an output larger than the last-level cache is written without first
    /// reading its lines.
    pub(super) fn store_streaming(&mut self, m: AsmMemoryOperand, r: u8) -> R<()> {
        use body::{Y, Z};
        let r = r as usize;
        match (self.w, self.lane) {
            (Width::Z, Lane::F32) => self.a.vmovntps(m, Z[r])?,
            (Width::Z, Lane::F64) => self.a.vmovntpd(m, Z[r])?,
            (Width::Y, Lane::F32) => self.a.vmovntps(m, Y[r])?,
            (Width::Y, Lane::F64) => self.a.vmovntpd(m, Y[r])?,
        }
        Ok(())
    }

    pub(super) fn vmov(&mut self, d: u8, x: u8) -> R<()> {
        match self.w {
            Width::Z => self.a.vmovaps(body::Z[d as usize], body::Z[x as usize])?,
            Width::Y => self.a.vmovaps(body::Y[d as usize], body::Y[x as usize])?,
        }
        Ok(())
    }

    /// AVX2: all lanes of `r` set.
    pub(super) fn ones(&mut self, r: u8) -> R<()> {
        let y = body::Y[r as usize];
        self.a.vpcmpeqd(y, y, y)?;
        Ok(())
    }
    /// All lanes of `r` cleared.
    pub(super) fn zero(&mut self, r: u8) -> R<()> {
        match self.w {
            Width::Z => {
                let z = body::Z[r as usize];
                self.a.vpxord(z, z, z)?;
            }
            Width::Y => {
                let y = body::Y[r as usize];
                self.a.vpxor(y, y, y)?;
            }
        }
        Ok(())
    }

    /// The lane at `m` = lane 0 of vector register `r`. AVX-512: EVEX, `r` may be xmm16-31
    /// (the VEX form reaches xmm0-15 only); AVX2: VEX (an AVX2 CPU has no EVEX).
    pub(super) fn scalar_store<M: Into<AsmMemoryOperand>>(&mut self, m: M, r: u8) -> R<()> {
        let x = body::X[r as usize];
        match (self.w, self.lane) {
            (Width::Z, Lane::F32) => self.a.evex().vmovss(dword_ptr(m), x)?,
            (Width::Y, Lane::F32) => self.a.vmovss(dword_ptr(m), x)?,
            (Width::Z, Lane::F64) => self.a.evex().vmovsd(qword_ptr(m), x)?,
            (Width::Y, Lane::F64) => self.a.vmovsd(qword_ptr(m), x)?,
        }
        Ok(())
    }

    pub(super) fn sqrt(&mut self, d: u8, x: u8) -> R<()> {
        use body::{Y, Z};
        let (d, x) = (d as usize, x as usize);
        match (self.w, self.lane) {
            (Width::Z, Lane::F32) => self.a.vsqrtps(Z[d], Z[x])?,
            (Width::Y, Lane::F32) => self.a.vsqrtps(Y[d], Y[x])?,
            (Width::Z, Lane::F64) => self.a.vsqrtpd(Z[d], Z[x])?,
            (Width::Y, Lane::F64) => self.a.vsqrtpd(Y[d], Y[x])?,
        }
        Ok(())
    }

    /// Round toward -inf.
    pub(super) fn floor(&mut self, d: u8, x: u8) -> R<()> {
        use body::{Y, Z};
        let (d, x) = (d as usize, x as usize);
        match (self.w, self.lane) {
            (Width::Z, Lane::F32) => self.a.vrndscaleps(Z[d], Z[x], 0x09)?,
            (Width::Y, Lane::F32) => self.a.vroundps(Y[d], Y[x], 0x09)?,
            (Width::Z, Lane::F64) => self.a.vrndscalepd(Z[d], Z[x], 0x09)?,
            (Width::Y, Lane::F64) => self.a.vroundpd(Y[d], Y[x], 0x09)?,
        }
        Ok(())
    }

    /// Every lane of mask `k` set (`on`) or clear.
    pub(super) fn mask_fill(&mut self, k: u8, on: bool) -> R<()> {
        match (self.w, on) {
            (Width::Z, true) => {
                let kk = body::K[k as usize];
                self.a.kxnorw(kk, kk, kk)?
            }
            (Width::Z, false) => {
                let kk = body::K[k as usize];
                self.a.kxorw(kk, kk, kk)?
            }
            (Width::Y, true) => self.ones(k)?,
            (Width::Y, false) => self.zero(k)?,
        }
        Ok(())
    }

    /// ZF = no lane of mask `k` set.
    pub(super) fn mask_test(&mut self, k: u8) -> R<()> {
        match self.w {
            Width::Z => self.a.kortestw(body::K[k as usize], body::K[k as usize])?,
            Width::Y => self.a.vptest(body::Y[k as usize], body::Y[k as usize])?,
        }
        Ok(())
    }

    /// Mask `d` = not mask `x`.
    pub(super) fn mask_not(&mut self, d: u8, x: u8) -> R<()> {
        match self.w {
            Width::Z => self.a.knotw(body::K[d as usize], body::K[x as usize])?,
            Width::Y => {
                self.ones(d)?;
                let (dy, xy) = (body::Y[d as usize], body::Y[x as usize]);
                self.a.vpxor(dy, dy, xy)?;
            }
        }
        Ok(())
    }

    /// Mask `d` = masks `x` and (or) `y`.
    pub(super) fn mask_and_or(&mut self, or: bool, d: u8, x: u8, y: u8) -> R<()> {
        use body::{K, Y};
        let (d, x, y) = (d as usize, x as usize, y as usize);
        match (self.w, or) {
            (Width::Z, false) => self.a.kandw(K[d], K[x], K[y])?,
            (Width::Z, true) => self.a.korw(K[d], K[x], K[y])?,
            (Width::Y, false) => self.a.vpand(Y[d], Y[x], Y[y])?,
            (Width::Y, true) => self.a.vpor(Y[d], Y[x], Y[y])?,
        }
        Ok(())
    }

    /// AVX-512: zmm `d` (under its k mask, merging or zeroing) = zmm `x`, moved in lanes of
    /// the lane type (a k mask has one bit per lane).
    pub(super) fn masked_move(&mut self, d: AsmRegisterZmm, x: u8) -> R<()> {
        let x = body::Z[x as usize];
        match self.lane {
            Lane::F32 => self.a.vmovaps(d, x)?,
            Lane::F64 => self.a.vmovapd(d, x)?,
        }
        Ok(())
    }

    /// `d` = `p` in the lanes where `p` is NaN (AVX2 needs the scratch register `t`).
    pub(super) fn keep_nan(&mut self, d: u8, p: u8, t: Option<u8>) -> R<()> {
        match self.w {
            Width::Z => {
                let s = body::SCRATCH_K;
                self.cmp_mask(s, p, p, 3)?; // unordered
                self.masked_move(body::zk(d, s), p)?;
            }
            Width::Y => {
                let t = t.expect("a scratch register");
                self.cmp_mask(t, p, p, 3)?; // unordered
                self.blend(d, t, d, p)?;
            }
        }
        Ok(())
    }

    /// `d = d * a + b` (213) or `d = a * b + d` (231), one rounding.
    pub(super) fn fma(&mut self, form213: bool, d: u8, a: u8, b: u8) -> R<()> {
        use body::{Y, Z};
        let (d, a, b) = (d as usize, a as usize, b as usize);
        match (self.w, self.lane, form213) {
            (Width::Z, Lane::F32, true) => self.a.vfmadd213ps(Z[d], Z[a], Z[b])?,
            (Width::Z, Lane::F32, false) => self.a.vfmadd231ps(Z[d], Z[a], Z[b])?,
            (Width::Y, Lane::F32, true) => self.a.vfmadd213ps(Y[d], Y[a], Y[b])?,
            (Width::Y, Lane::F32, false) => self.a.vfmadd231ps(Y[d], Y[a], Y[b])?,
            (Width::Z, Lane::F64, true) => self.a.vfmadd213pd(Z[d], Z[a], Z[b])?,
            (Width::Z, Lane::F64, false) => self.a.vfmadd231pd(Z[d], Z[a], Z[b])?,
            (Width::Y, Lane::F64, true) => self.a.vfmadd213pd(Y[d], Y[a], Y[b])?,
            (Width::Y, Lane::F64, false) => self.a.vfmadd231pd(Y[d], Y[a], Y[b])?,
        }
        Ok(())
    }

    /// Mask `k` = predicate `imm` of `a` and `b`.
    pub(super) fn cmp_mask(&mut self, k: u8, a: u8, b: u8, imm: u32) -> R<()> {
        use body::{K, Y, Z};
        let (k, a, b) = (k as usize, a as usize, b as usize);
        match (self.w, self.lane) {
            (Width::Z, Lane::F32) => self.a.vcmpps(K[k], Z[a], Z[b], imm)?,
            (Width::Y, Lane::F32) => self.a.vcmpps(Y[k], Y[a], Y[b], imm)?,
            (Width::Z, Lane::F64) => self.a.vcmppd(K[k], Z[a], Z[b], imm)?,
            (Width::Y, Lane::F64) => self.a.vcmppd(Y[k], Y[a], Y[b], imm)?,
        }
        Ok(())
    }

    /// `d = m ? t : f`.
    pub(super) fn blend(&mut self, d: u8, m: u8, f: u8, t: u8) -> R<()> {
        use body::{Y, Z};
        let (d, m, f, t) = (d as usize, m as usize, f as usize, t as usize);
        match (self.w, self.lane) {
            (Width::Z, Lane::F32) => self.a.vblendmps(body::zk(d as u8, m as u8), Z[f], Z[t])?,
            (Width::Z, Lane::F64) => self.a.vblendmpd(body::zk(d as u8, m as u8), Z[f], Z[t])?,
            (Width::Y, Lane::F32) => self.a.vblendvps(Y[d], Y[f], Y[t], Y[m])?,
            (Width::Y, Lane::F64) => self.a.vblendvpd(Y[d], Y[f], Y[t], Y[m])?,
        }
        Ok(())
    }

    /// A traced arithmetic, bitwise or shift operation into `d`, operands by `r`, at the
    /// lane's size. The same instructions at both widths but the bitwise ones, which zmm
    /// registers take only in their EVEX forms (`vpandd`, ...).
    #[rustfmt::skip]
    pub(super) fn sym_op(&mut self, op: traced::SymOp, d: u8, r: &dyn Fn(u32) -> u8) -> R<()> {
        use traced::SymOp as S;
        let a = &mut self.a;
        macro_rules! spell {
            ($regs:expr, $and:ident, $or:ident, $xor:ident,
             $shl:ident, $shr:ident, $iadd:ident, $isub:ident,
             $add:ident, $sub:ident, $mul:ident, $div:ident, $min:ident, $max:ident) => {{
                let v = |j: u32| $regs[r(j) as usize];
                let d = $regs[d as usize];
                match op {
                    S::Shl(x, n) => a.$shl(d, v(x), n)?,
                    S::Shr(x, n) => a.$shr(d, v(x), n)?,
                    S::Add(p, q) => a.$add(d, v(p), v(q))?,
                    S::Sub(p, q) => a.$sub(d, v(p), v(q))?,
                    S::Mul(p, q) => a.$mul(d, v(p), v(q))?,
                    S::Div(p, q) => a.$div(d, v(p), v(q))?,
                    S::Min(p, q) => a.$min(d, v(p), v(q))?,
                    S::Max(p, q) => a.$max(d, v(p), v(q))?,
                    S::And(p, q) => a.$and(d, v(p), v(q))?,
                    S::Or(p, q) => a.$or(d, v(p), v(q))?,
                    S::Xor(p, q) => a.$xor(d, v(p), v(q))?,
                    S::Iadd(p, q) => a.$iadd(d, v(p), v(q))?,
                    S::Isub(p, q) => a.$isub(d, v(p), v(q))?,
                    other => unreachable!("{other:?} is not a two-operand op"),
                }
            }};
        }
        match (self.w, self.lane) {
            (Width::Z, Lane::F32) => spell!(body::Z, vpandd, vpord, vpxord, vpslld, vpsrld, vpaddd,
                vpsubd, vaddps, vsubps, vmulps, vdivps, vminps, vmaxps),
            (Width::Y, Lane::F32) => spell!(body::Y, vpand, vpor, vpxor, vpslld, vpsrld, vpaddd,
                vpsubd, vaddps, vsubps, vmulps, vdivps, vminps, vmaxps),
            (Width::Z, Lane::F64) => spell!(body::Z, vpandq, vporq, vpxorq, vpsllq, vpsrlq, vpaddq,
                vpsubq, vaddpd, vsubpd, vmulpd, vdivpd, vminpd, vmaxpd),
            (Width::Y, Lane::F64) => spell!(body::Y, vpand, vpor, vpxor, vpsllq, vpsrlq, vpaddq,
                vpsubq, vaddpd, vsubpd, vmulpd, vdivpd, vminpd, vmaxpd),
        }
        Ok(())
    }

    /// The label of the AVX2 tail table (`tail_table`).
    pub(super) fn tail_table(&mut self) -> CodeLabel {
        *self.tail_table.get_or_insert_with(|| self.a.create_label())
    }

    /// The constant pool after the code, then the machine code.
    pub(super) fn finish(mut self) -> R<Vec<u8>> {
        for (bits, mut l) in std::mem::take(&mut self.consts) {
            self.a.set_label(&mut l)?;
            match self.lane {
                Lane::F32 => self.a.dd(&[bits as u32])?,
                Lane::F64 => self.a.dq(&[bits])?,
            }
        }
        if let Some(mut l) = self.tail_table.take() {
            self.a.set_label(&mut l)?;
            self.a.dd(&[u32::MAX; 8])?;
            self.a.dd(&[0; 8])?;
        }
        Ok(self.a.assemble(0)?)
    }
}
