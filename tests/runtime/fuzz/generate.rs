//! Random programs. Every instruction is generated with its result type
//! known, so programs are valid by construction. A value is *exact* when
//! every backend computes the same bits for it (parameters, correctly
//! rounded elementwise ops, max/min, views and copies of exact values);
//! comparisons, floors, float-to-integer casts and `cond` predicates only
//! read exact values, so a last-bit difference in a sum or a transcendental
//! (allowed by the tolerances) cannot flip a branch or an index. In
//! gradient programs the same holds for derivatives that compare: those of
//! relu, abs, maximum/minimum and max/min reductions read exact values only
//! (a 1-ulp difference in a `cos` made two elements tie for the max in one
//! backend and not the other, moving the gradient to another element).

use super::program::*;
use crate::common::Rng;
use jitfuse::{DType, Slice};

#[derive(Clone, Debug)]
pub struct Ty {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub exact: bool,
}

/// Dims that hit the vector-width edges of every backend (4 and 16 lanes,
/// 4-vector groups), size-1 broadcast axes and empty axes.
const DIMS: [usize; 14] = [1, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 64];
const BIG_DIMS: [usize; 5] = [63, 65, 129, 257, 1030];

fn dim(rng: &mut Rng, big: bool) -> usize {
    if rng.chance(0.02) {
        0
    } else if big && rng.chance(0.4) {
        BIG_DIMS[rng.below(BIG_DIMS.len())]
    } else {
        DIMS[rng.below(DIMS.len())]
    }
}

fn shape(rng: &mut Rng, big: bool) -> Vec<usize> {
    let rank = [0, 1, 1, 2, 2, 2, 3, 3][rng.below(8)];
    let mut s: Vec<usize> = (0..rank).map(|_| dim(rng, big)).collect();
    // Three large axes made a 68 M-element f64 argument ([257, 1030, 257]): its matmul with
    // itself ran for minutes in the interpreter and a long run out of memory. The largest
    // axis shrinks (no new draw: every other program is unchanged) until under the cap.
    while numel(&s) > MAX_BROADCAST {
        let (i, _) = s.iter().enumerate().max_by_key(|(_, &d)| d).unwrap();
        s[i] = 17;
    }
    s
}

/// The most multiply-adds a generated matmul may take (the interpreter checks it in
/// f64, at every level and argument mode).
const MAX_MATMUL_MACS: usize = 1 << 26;

fn numel(s: &[usize]) -> usize {
    s.iter().product()
}

/// The most elements a broadcast result may have: two large shapes broadcast against each
/// other ([129, 1030, 1] with [132870]) made 17 billion.
const MAX_BROADCAST: usize = 1 << 22;

/// NumPy broadcasting of two shapes (None past `MAX_BROADCAST` elements, unless an operand
/// is as large).
pub fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let mut out = vec![0; r];
    for i in 0..r {
        let x = if i + a.len() >= r {
            a[i + a.len() - r]
        } else {
            1
        };
        let y = if i + b.len() >= r {
            b[i + b.len() - r]
        } else {
            1
        };
        out[i] = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return None;
        };
    }
    // (A result no larger than an operand is always fine: that operand exists already.)
    let cap = MAX_BROADCAST.max(numel(a)).max(numel(b));
    (out.iter().try_fold(1usize, |n, &d| n.checked_mul(d))? <= cap).then_some(out)
}

/// Python's slice length (in i128: steps reach `isize::MAX`).
fn slice_len(n: usize, s: Slice) -> usize {
    let n = n as i128;
    let step = s.step as i128;
    let norm = |v: Option<isize>, dflt: i128, lo: i128, hi: i128| match v {
        None => dflt,
        Some(v) => {
            let v = v as i128;
            (if v < 0 { v + n } else { v }).clamp(lo, hi)
        }
    };
    let (start, end) = if step > 0 {
        (norm(s.start, 0, 0, n), norm(s.end, n, 0, n))
    } else {
        (norm(s.start, n - 1, -1, n - 1), norm(s.end, -1, -1, n - 1))
    };
    let len = if step > 0 {
        (end - start + step - 1).div_euclid(step)
    } else {
        (start - end - step - 1).div_euclid(-step)
    };
    len.max(0) as usize
}

/// The longest sum whose result is still of the inputs' size.
const LONG_SUM: usize = 4;

pub struct Gen<'r> {
    pub rng: &'r mut Rng,
    pub tys: Vec<Ty>,
    pub ins: Vec<Ins>,
    pub grad: bool,
    pub float: DType,
    /// Per value: whether it may be far larger than the inputs.
    pub big: Vec<bool>,
}

impl Gen<'_> {
    fn pick(&mut self, ok: &dyn Fn(&Ty) -> bool) -> Option<usize> {
        let c: Vec<usize> = (0..self.tys.len()).filter(|&i| ok(&self.tys[i])).collect();
        if c.is_empty() {
            return None;
        }
        // Recent values more often: programs are chains with side branches.
        let k = if self.rng.chance(0.6) {
            c.len() - 1 - self.rng.below(c.len().min(3))
        } else {
            self.rng.below(c.len())
        };
        Some(c[k])
    }

    pub fn push(&mut self, ins: Ins, ty: Ty) {
        // Values that may be far from the inputs' size: a last-bit difference
        // in them is a large absolute one.
        let big = match &ins {
            Ins::Reduce(Red::Prod, ..)
            | Ins::ReduceAll(Red::Prod, _)
            | Ins::Matmul(..)
            | Ins::MatmulF32(..) => true,
            Ins::Unary(Un::Exp | Un::Square, _) | Ins::Binary(Bin::Mul, ..) => true,
            // `a / (|b| + 0.5)` scales a's last-bit error by up to 2, and b's by |a| / 0.25:
            // `cos(x / (|cos x| + 0.5))` of a layer norm's x ≈ 26 moved by 1e-4 for a 1-ulp
            // difference in x (a false alarm of a long run).
            Ins::Binary(Bin::DivPos, ..) => true,
            // A sum of many terms grows with its extent, and its rounding depends on the
            // order of the terms: `cos(sum(log_softmax(x)))` over 17 values (a sum of
            // about -50) came out 8e-6 apart compiled and interpreted, both right for
            // their order (a false alarm of a long run).
            Ins::Reduce(Red::Sum, a, ax, _) => {
                let t = &self.tys[*a];
                let u = if *ax < 0 {
                    *ax + t.shape.len() as isize
                } else {
                    *ax
                } as usize;
                t.shape[u] > LONG_SUM || self.big[*a]
            }
            Ins::ReduceAll(Red::Sum, a) => numel(&self.tys[*a].shape) > LONG_SUM || self.big[*a],
            Ins::Unary(op, _) if *op != Un::Neg && *op != Un::Abs && *op != Un::Relu => false,
            Ins::RowOp(..) | Ins::Less(..) | Ins::ArgMax(..) | Ins::Random(..) => false,
            other => other.operands().iter().any(|&x| self.big[x]),
        };
        self.big.push(big);
        self.ins.push(ins);
        self.tys.push(ty);
    }

    /// A random axis of `rank`, spelled negative half the time, and its index.
    fn axis(&mut self, rank: usize) -> (isize, usize) {
        let a = self.rng.below(rank);
        if self.rng.chance(0.5) {
            (a as isize - rank as isize, a)
        } else {
            (a as isize, a)
        }
    }

    /// One random instruction (None when the picked form does not apply, or when it
    /// would make a value past `MAX_BROADCAST` elements). The cap is checked here, once for
    /// every form: a concatenation of a `[1030, 1030, 3]` parameter with itself made 6.4 M
    /// elements, as a pad or a broadcast of a large value could.
    pub fn step(&mut self) -> Option<()> {
        let before = self.ins.len();
        let made = self.any_step();
        if self.tys[self.tys.len() - (self.ins.len() - before)..]
            .iter()
            .any(|t| numel(&t.shape) > MAX_BROADCAST)
        {
            let keep = self.tys.len() - (self.ins.len() - before);
            self.tys.truncate(keep);
            self.big.truncate(keep);
            self.ins.truncate(before);
            return None;
        }
        made
    }

    fn any_step(&mut self) -> Option<()> {
        let fl = self.float;
        let is_fl = move |t: &Ty| t.dtype == fl;
        let choice = self.rng.below(101);
        let rng_un = |g: &mut Self| {
            const U: [Un; 18] = [
                Un::Neg,
                Un::Abs,
                Un::Relu,
                Un::Square,
                Un::Exp,
                Un::Tanh,
                Un::Sigmoid,
                Un::Sin,
                Un::Cos,
                Un::Erf,
                Un::SqrtPos,
                Un::LnPos,
                Un::RecipPos,
                Un::RsqrtPos,
                Un::Floor,
                Un::Gelu,
                Un::Silu,
                Un::Softplus,
            ];
            U[g.rng.below(U.len())]
        };
        match choice {
            0..=17 => {
                let a = self.pick(&is_fl)?;
                let mut op = rng_un(self);
                let t = self.tys[a].clone();
                if op == Un::Floor && !t.exact {
                    op = Un::Abs;
                }
                // sin/cos of a large inexact value (a product of 33 values)
                // amplify its rounding into any result: keep them bounded.
                if matches!(op, Un::Sin | Un::Cos) && self.big[a] && !t.exact {
                    op = Un::Tanh;
                }
                if matches!(op, Un::Relu | Un::Abs) && self.grad && !t.exact {
                    op = Un::Tanh;
                }
                // A 16-bit value rounded by the interpreter after every op lands on exact
                // values the kernels' f32 chains miss (`exp(a) - 1` is 0 for a small `a`):
                // no kink of `|x|` (the `*Pos` ops) on an inexact one in a gradient program, and
                // `sin`/`cos` of an inexact 16-bit argument carry its rounding (2⁻⁸ of its
                // size) into their result (false alarms of both, behind a `cond`).
                let kinked = matches!(op, Un::SqrtPos | Un::LnPos | Un::RecipPos | Un::RsqrtPos);
                if fl.is_half()
                    && !t.exact
                    && (kinked && self.grad || matches!(op, Un::Sin | Un::Cos))
                {
                    op = Un::Tanh;
                }
                // f16 ends at 65504: the square or exp of a large value may overflow where
                // the interpreter rounds it and not inside a kernel's f32 chain, and what
                // reads it then differs (a gradient through `x⁴` of a product: a false alarm).
                if matches!(op, Un::Square | Un::Exp) && fl == DType::F16 && self.big[a] {
                    op = Un::Tanh;
                }
                // exp of large values overflows: keep its arguments bounded.
                let exact = t.exact && matches!(op, Un::Neg | Un::Abs | Un::Relu | Un::Floor);
                self.push(Ins::Unary(op, a), Ty { exact, ..t });
            }
            18..=32 => {
                let a = self.pick(&is_fl)?;
                let sa = self.tys[a].shape.clone();
                let b = self
                    .pick(&|t: &Ty| t.dtype == fl && broadcast(&sa, &t.shape).is_some())
                    .unwrap_or(a);
                const B: [Bin; 6] = [
                    Bin::Add,
                    Bin::Sub,
                    Bin::Mul,
                    Bin::Max,
                    Bin::Min,
                    Bin::DivPos,
                ];
                let mut op = B[self.rng.below(B.len())];
                let both_exact = self.tys[a].exact && self.tys[b].exact;
                if matches!(op, Bin::Max | Bin::Min) && self.grad && !both_exact {
                    op = Bin::Add;
                }
                // A 16-bit program's kernels keep f32 inside where the interpreter rounds
                // each op: the kink of the divisor's |b| must not sit on an inexact value
                // (its side can differ by a rounding), nor may a sum of 16-bit values count
                // as exact (8 or 11 bits run out).
                // Nor in any type when the divisor may be large and so cancel to near zero
                // (a product's sum: `x / (|x @ x| + 0.5)` over 1030 batched 2×2 products had
                // one sum whose sign differed between the GEMM's f32 FMAs and the f64 sum
                // rounded once, and its gradient with it: a false alarm).
                if op == Bin::DivPos
                    && self.grad
                    && (fl.is_half() || self.big[b])
                    && !self.tys[b].exact
                {
                    op = Bin::Mul;
                }
                // (And the product of a large f16 value may overflow, as its square.)
                if op == Bin::Mul && fl == DType::F16 && (self.big[a] || self.big[b]) {
                    op = Bin::Add;
                }
                let shape = broadcast(&sa, &self.tys[b].shape).unwrap();
                let exact = self.tys[a].exact
                    && self.tys[b].exact
                    && !fl.is_half()
                    && matches!(op, Bin::Max | Bin::Min | Bin::Add | Bin::Sub | Bin::Mul);
                self.push(
                    Ins::Binary(op, a, b),
                    Ty {
                        shape,
                        dtype: fl,
                        exact,
                    },
                );
            }
            33 => {
                let a = self.pick(&is_fl)?;
                let t = self.tys[a].clone();
                let fold = if self.rng.chance(0.5) {
                    self.pick(&|o: &Ty| {
                        matches!(o.dtype, DType::I32 | DType::I64) && o.exact && numel(&o.shape) > 0
                    })
                } else {
                    None
                };
                let dist = [Dist::Normal, Dist::Uniform, Dist::Bernoulli][self.rng.below(3)];
                let seed = self.rng.below(1000) as u64;
                let dtype = if dist == Dist::Bernoulli {
                    DType::Bool
                } else {
                    t.dtype
                };
                // The same bits in every backend (one native function).
                self.push(
                    Ins::Random(dist, a, seed, fold),
                    Ty {
                        shape: t.shape,
                        dtype,
                        exact: true,
                    },
                );
            }
            34..=39 => {
                let a = self.pick(&is_fl)?;
                const B: [Bin; 5] = [Bin::Add, Bin::Sub, Bin::Mul, Bin::Max, Bin::DivPos];
                let mut op = B[self.rng.below(B.len())];
                let c = [0.5, -1.0, 2.0, 0.0, 3.25, -0.125][self.rng.below(6)];
                let t = self.tys[a].clone();
                if op == Bin::Max && self.grad && !t.exact {
                    op = Bin::Add;
                }
                if op == Bin::DivPos && self.grad && (fl.is_half() || self.big[a]) && !t.exact {
                    op = Bin::Mul;
                }
                let exact = t.exact && op != Bin::DivPos && !(fl.is_half() && op != Bin::Max);
                let flip = self.rng.chance(0.3);
                self.push(Ins::Scalar(op, a, c, flip), Ty { exact, ..t });
            }
            40..=43 => {
                let a = self.pick(&|t: &Ty| t.dtype == fl && t.exact)?;
                let sa = self.tys[a].shape.clone();
                let b = self
                    .pick(&|t: &Ty| t.dtype == fl && t.exact && broadcast(&sa, &t.shape).is_some())
                    .unwrap_or(a);
                let shape = broadcast(&sa, &self.tys[b].shape).unwrap();
                self.push(
                    Ins::Less(a, b),
                    Ty {
                        shape,
                        dtype: DType::Bool,
                        exact: true,
                    },
                );
            }
            44..=47 => {
                let c = self.pick(&|t: &Ty| t.dtype == DType::Bool)?;
                let sc = self.tys[c].shape.clone();
                let a = self.pick(&|t: &Ty| t.dtype == fl && broadcast(&sc, &t.shape).is_some())?;
                let s2 = broadcast(&sc, &self.tys[a].shape).unwrap();
                let b = self
                    .pick(&|t: &Ty| t.dtype == fl && broadcast(&s2, &t.shape).is_some())
                    .unwrap_or(a);
                let shape = broadcast(&s2, &self.tys[b].shape).unwrap();
                let exact = self.tys[a].exact && self.tys[b].exact;
                self.push(
                    Ins::Select(c, a, b),
                    Ty {
                        shape,
                        dtype: fl,
                        exact,
                    },
                );
            }
            48..=50 => {
                let a = self.pick(&|_| true)?;
                let t = self.tys[a].clone();
                let to = match t.dtype {
                    d if d.is_float() && t.exact && self.rng.chance(0.4) => DType::I32,
                    DType::F32 if fl.is_half() => fl,
                    DType::F32 => DType::F64,
                    DType::F64 => DType::F32,
                    DType::BF16 | DType::F16 => DType::F32,
                    _ => fl,
                };
                let exact = t.exact;
                self.push(
                    Ins::Cast(a, to),
                    Ty {
                        dtype: to,
                        exact,
                        ..t
                    },
                );
            }
            51..=54 => {
                let a = self.pick(&|t: &Ty| t.shape.len() >= 2)?;
                let t = self.tys[a].clone();
                let mut perm: Vec<usize> = (0..t.shape.len()).collect();
                for i in (1..perm.len()).rev() {
                    let j = self.rng.below(i + 1);
                    perm.swap(i, j);
                }
                let shape = perm.iter().map(|&p| t.shape[p]).collect();
                self.push(Ins::Transpose(a, perm), Ty { shape, ..t });
            }
            55..=58 => {
                let a = self.pick(&|t: &Ty| !t.shape.is_empty())?;
                let t = self.tys[a].clone();
                let mut sl = Vec::new();
                let mut shape = Vec::new();
                for &n in &t.shape {
                    let n_i = n as isize;
                    let s = match self.rng.below(6) {
                        0 => Slice::full(),
                        1 => Slice::rev(),
                        2 => Slice::new(self.rng.below(n + 1) as isize, None, 1),
                        3 => Slice::new(None, -(self.rng.below(n + 1) as isize) - 1, -2),
                        4 => Slice::new(
                            self.rng.below(n + 2) as isize - 1,
                            n_i - self.rng.below(n + 1) as isize,
                            1 + self.rng.below(3) as isize,
                        ),
                        _ => Slice::new(
                            None,
                            None,
                            [3, -3, isize::MAX, isize::MIN + 1][self.rng.below(4)],
                        ),
                    };
                    shape.push(slice_len(n, s));
                    sl.push(s);
                }
                self.push(Ins::Slice(a, sl), Ty { shape, ..t });
            }
            59..=60 => {
                let a = self.pick(&|t: &Ty| !t.shape.is_empty())?;
                let t = self.tys[a].clone();
                let (ax, _) = self.axis(t.shape.len());
                self.push(Ins::Flip(a, vec![ax]), t);
            }
            61..=64 => {
                let a = self.pick(&|_| true)?;
                let t = self.tys[a].clone();
                let n = numel(&t.shape);
                let target: Vec<usize> = match self.rng.below(3) {
                    0 => vec![n],
                    1 if n > 0 => {
                        let divs: Vec<usize> = (1..=n).filter(|d| n % d == 0).collect();
                        let d = divs[self.rng.below(divs.len())];
                        vec![d, n / d]
                    }
                    _ => {
                        let mut s = t.shape.clone();
                        s.insert(self.rng.below(s.len() + 1), 1);
                        s
                    }
                };
                let spec: Vec<isize> = target.iter().map(|&d| d as isize).collect();
                self.push(Ins::Reshape(a, spec), Ty { shape: target, ..t });
            }
            65..=66 => {
                let a = self.pick(&|t: &Ty| t.shape.len() < 3)?;
                let t = self.tys[a].clone();
                let mut shape: Vec<usize> = t
                    .shape
                    .iter()
                    .map(|&d| if d == 1 { dim(self.rng, false) } else { d })
                    .collect();
                shape.insert(0, [1, 2, 3][self.rng.below(3)]);
                self.push(Ins::BroadcastTo(a, shape.clone()), Ty { shape, ..t });
            }
            67..=74 => {
                let a = self.pick(&|t: &Ty| t.dtype == fl && !t.shape.is_empty())?;
                let t = self.tys[a].clone();
                const R: [Red; 7] = [
                    Red::Sum,
                    Red::Mean,
                    Red::Max,
                    Red::Min,
                    Red::Prod,
                    Red::Var,
                    Red::Logsumexp,
                ];
                let mut op = R[self.rng.below(R.len())];
                if matches!(op, Red::Max | Red::Min) && self.grad && !t.exact {
                    op = Red::Logsumexp;
                }
                let (ax, u) = self.axis(t.shape.len());
                let keep = self.rng.chance(0.4);
                let mut shape = t.shape.clone();
                if keep {
                    shape[u] = 1;
                } else {
                    shape.remove(u);
                }
                let exact = t.exact && matches!(op, Red::Max | Red::Min) && t.shape[u] > 0;
                // A product of many factors, or of large ones, can overflow in one partial
                // product while another is 0 or has underflowed: inf · 0 is NaN in one
                // order of the factors and 0 in another, both right for their order (a
                // compiled 8,959-element product of `exp(x) - 1`, NaN against the
                // interpreter's -0, was a false alarm of a long run). Products stay short.
                let short = |extent: usize| extent <= 16 && !self.big[a];
                if self.rng.chance(0.25) {
                    if op == Red::Prod && !short(numel(&t.shape)) {
                        op = Red::Mean;
                    }
                    let exact = t.exact && matches!(op, Red::Max | Red::Min) && numel(&t.shape) > 0;
                    self.push(
                        Ins::ReduceAll(op, a),
                        Ty {
                            shape: vec![],
                            dtype: fl,
                            exact,
                        },
                    );
                } else {
                    if op == Red::Prod && !short(t.shape[u]) {
                        op = Red::Mean;
                    }
                    self.push(
                        Ins::Reduce(op, a, ax, keep),
                        Ty {
                            shape,
                            dtype: fl,
                            exact,
                        },
                    );
                }
            }
            75..=76 => {
                let a = self.pick(&|t: &Ty| {
                    t.exact
                        && t.dtype == fl
                        && t.shape.iter().all(|&d| d > 0)
                        && !t.shape.is_empty()
                })?;
                let t = self.tys[a].clone();
                let (ax, u) = self.axis(t.shape.len());
                let mut shape = t.shape.clone();
                shape.remove(u);
                self.push(
                    Ins::ArgMax(a, ax),
                    Ty {
                        shape,
                        dtype: DType::I64,
                        exact: true,
                    },
                );
            }
            77..=82 => {
                let a = self.pick(&|t: &Ty| t.dtype == fl && !t.shape.is_empty())?;
                let t = self.tys[a].clone();
                // A row of a large inexact value (a product of 33 values, all of a row
                // after `max`) normalises its rounding: a constant row of 1e4 came out of
                // a layer norm 1.5e-3 off, one ulp of its mean away.
                if self.big[a] && !t.exact {
                    return None;
                }
                // The gradient of a row op of a row op's f16 result cancels (`dp - Σ p dp`
                // twice): the interpreter's rounding after every op of that chain moved one
                // element by 0.6 % of the output's scale against the kernels' f32 chains, at
                // every level and with either GEMM (a false alarm).
                let params = self.tys.len() - self.ins.len();
                let of_row_op = a >= params && matches!(self.ins[a - params], Ins::RowOp(..));
                if fl == DType::F16 && self.grad && of_row_op {
                    return None;
                }
                let mut op = [Row::Softmax, Row::LogSoftmax, Row::LayerNorm][self.rng.below(3)];
                // A layer norm's gradient divides by the row's deviation, which a 16-bit
                // inexact row (repeated values of a logsumexp) has little of: the
                // interpreter's rounding after every op moved one element from -4.7e-3 to 0.
                if op == Row::LayerNorm && fl.is_half() && self.grad && !t.exact {
                    op = Row::Softmax;
                }
                // An f16 layer norm's sum of squares over a long row overflows 65504 in the
                // interpreter, which rounds it to f16, and not in a kernel's f32 moments: a
                // row of 48,573 values of size 1 gave the interpreter's rsqrt 0, the kernel's
                // a finite value (seed 15301093877).
                let row = t.shape.last().copied().unwrap_or(1);
                if op == Row::LayerNorm && fl == DType::F16 && row > MAX_F16_NORM_ROW {
                    op = Row::Softmax;
                }
                let ax = if op == Row::LayerNorm {
                    -1
                } else {
                    self.axis(t.shape.len()).0
                };
                self.push(Ins::RowOp(op, a, ax), Ty { exact: false, ..t });
            }
            83..=86 => {
                let a = self.pick(&|t: &Ty| t.dtype == fl && t.shape.len() >= 2)?;
                let sa = self.tys[a].shape.clone();
                let k = sa[sa.len() - 1];
                let b = self.pick(&|t: &Ty| {
                    t.dtype == fl
                        && t.shape.len() >= 2
                        && t.shape[t.shape.len() - 2] == k
                        && broadcast(&sa[..sa.len() - 2], &t.shape[..t.shape.len() - 2]).is_some()
                });
                let b = match b {
                    Some(b) => b,
                    None => {
                        let r = sa.len();
                        let mut perm: Vec<usize> = (0..r).collect();
                        perm.swap(r - 1, r - 2);
                        let mut s = sa.clone();
                        s.swap(r - 1, r - 2);
                        let t = self.tys[a].clone();
                        self.push(Ins::Transpose(a, perm), Ty { shape: s, ..t });
                        self.tys.len() - 1
                    }
                };
                let sb = self.tys[b].shape.clone();
                let mut shape = broadcast(&sa[..sa.len() - 2], &sb[..sb.len() - 2]).unwrap();
                shape.push(sa[sa.len() - 2]);
                shape.push(sb[sb.len() - 1]);
                // A product over an empty `k` still writes every output element: `[1, 257,
                // 1030, 0] @ [1, 257, 0, 1030]` took no multiply-adds and made a 272 M-element
                // output, whose copies ran a long run out of memory.
                if numel(&shape).saturating_mul(k.max(1)) > MAX_MATMUL_MACS
                    || numel(&shape) > MAX_BROADCAST
                {
                    return None;
                }
                // 16-bit operands: half the products return their f32 sums (`matmul_with`).
                let (ins, dtype) = if fl.is_half() && self.rng.chance(0.5) {
                    (Ins::MatmulF32(a, b), DType::F32)
                } else {
                    (Ins::Matmul(a, b), fl)
                };
                self.push(
                    ins,
                    Ty {
                        shape,
                        dtype,
                        exact: false,
                    },
                );
            }
            87..=88 => {
                let a = self.pick(&|t: &Ty| !t.shape.is_empty())?;
                let t = self.tys[a].clone();
                let (ax, u) = self.axis(t.shape.len());
                let sa = t.shape.clone();
                let b = self
                    .pick(&|o: &Ty| {
                        o.dtype == t.dtype
                            && o.shape.len() == sa.len()
                            && (0..sa.len()).all(|d| d == u || o.shape[d] == sa[d])
                    })
                    .unwrap_or(a);
                let mut shape = sa.clone();
                shape[u] += self.tys[b].shape[u];
                let exact = t.exact && self.tys[b].exact;
                self.push(
                    Ins::Concat(a, b, ax),
                    Ty {
                        shape,
                        dtype: t.dtype,
                        exact,
                    },
                );
            }
            89..=90 => {
                let a = self.pick(&|t: &Ty| !t.shape.is_empty() && t.dtype != DType::Bool)?;
                let t = self.tys[a].clone();
                let pads: Vec<(usize, usize)> = t
                    .shape
                    .iter()
                    .map(|_| (self.rng.below(3), self.rng.below(3)))
                    .collect();
                let shape = t
                    .shape
                    .iter()
                    .zip(&pads)
                    .map(|(d, p)| d + p.0 + p.1)
                    .collect();
                let c = if is_float(t.dtype) {
                    [0.0, 1.5, -2.0][self.rng.below(3)]
                } else {
                    [0.0, 1.0, -2.0][self.rng.below(3)]
                };
                self.push(Ins::Pad(a, pads, c), Ty { shape, ..t });
            }
            91..=93 => {
                let a =
                    self.pick(&|t: &Ty| !t.shape.is_empty() && t.shape.iter().all(|&d| d > 0))?;
                let t = self.tys[a].clone();
                let (ax, u) = self.axis(t.shape.len());
                let idx = if self.rng.chance(0.5) {
                    self.pick(&|o: &Ty| {
                        matches!(o.dtype, DType::I32 | DType::I64) && o.exact && o.shape.len() <= 1
                    })
                } else {
                    None
                };
                let k = match idx {
                    Some(i) => numel(&self.tys[i].shape),
                    None => [1, 3, 5, 16, 17][self.rng.below(5)],
                };
                let mul = 1 + self.rng.below(7);
                let mut shape = t.shape.clone();
                shape[u] = k;
                self.push(Ins::Take(a, ax, k, mul, idx), Ty { shape, ..t });
            }
            94 if self.rng.chance(0.5) => return self.attend(),
            94 => return self.conv(),
            95 => return self.window(),
            98..=99 => {
                let a = self.pick(&|t: &Ty| t.dtype == fl && t.exact)?;
                let t = self.tys[a].clone();
                self.push(Ins::Cond(a), Ty { exact: false, ..t });
            }
            96 => {
                let a = self.pick(&is_fl)?;
                let t = self.tys[a].clone();
                let n = self.rng.below(4);
                self.push(Ins::Fori(a, n), Ty { exact: false, ..t });
            }
            97 => {
                let a = self.pick(&is_fl)?;
                let b = self.pick(&|t: &Ty| t.dtype != DType::Bool)?;
                let t = self.tys[a].clone();
                let n = [0, 1, 3, 8, 9, 17, 40][self.rng.below(7)];
                let op =
                    [Un::Tanh, Un::Sin, Un::Sigmoid, Un::Silu, Un::Erf, Un::Cos][self.rng.below(6)];
                let levels = [0, 1, 1, 2, 3, jitfuse::autodiff::BINARY][self.rng.below(6)];
                self.push(Ins::Loop(a, b, n, op, levels), Ty { exact: false, ..t });
            }
            _ => {
                if self.grad {
                    return None;
                }
                let a = self.pick(&is_fl)?;
                let t = self.tys[a].clone();
                let n = self.rng.below(4);
                self.push(Ins::While(a, n), Ty { exact: false, ..t });
            }
        }
        Some(())
    }
}

/// The longest row of an f16 layer norm: its sum of squares of values up to about 2 stays
/// below f16's 65504.
const MAX_F16_NORM_ROW: usize = 4096;

/// The most multiply-adds a generated convolution may take (the interpreter's f64 loop).
const MAX_CONV_MACS: usize = 1 << 21;

impl Gen<'_> {
    /// A convolution of a float value viewed as `[N, spatial.., C]` (1 or 2 spatial axes):
    /// random window, strides, padding (negative: cropped), dilations and groups.
    fn conv(&mut self) -> Option<()> {
        let fl = self.float;
        let a = self.pick(&|t: &Ty| {
            t.dtype == fl && (2..=3).contains(&t.shape.len()) && t.shape.iter().all(|&d| d > 0)
        })?;
        let t = self.tys[a].clone();
        let s = &t.shape;
        let x: Vec<usize> = match (s.len(), self.rng.below(2)) {
            (2, 0) => vec![s[0], s[1], 1],
            (2, _) => vec![1, s[0], s[1], 1],
            (_, 0) => s.clone(),
            _ => vec![1, s[0], s[1], s[2]],
        };
        let r = x.len() - 2;
        let c = x[r + 1];
        let divisors: Vec<usize> = (1..=c).filter(|g| c % g == 0).collect();
        let groups = if self.rng.chance(0.3) {
            divisors[self.rng.below(divisors.len())]
        } else {
            1
        };
        let f = groups * [1, 2, 3, 5, 17][self.rng.below(5)];
        let rng = &mut *self.rng;
        let mut w: Vec<usize> = (0..r).map(|_| 1 + rng.below(3)).collect();
        w.extend([c / groups, f]);
        let pick = |rng: &mut Rng, p: f64| if rng.chance(p) { 2 } else { 1 };
        let strides: Vec<usize> = (0..r).map(|_| pick(rng, 0.3)).collect();
        let lhs_dilation: Vec<usize> = (0..r).map(|_| pick(rng, 0.15)).collect();
        let rhs_dilation: Vec<usize> = (0..r).map(|_| pick(rng, 0.2)).collect();
        let padding: Vec<(i64, i64)> = (0..r)
            .map(|_| {
                let mut p = || [-1, 0, 0, 1, 2][rng.below(5)];
                (p(), p())
            })
            .collect();
        let o = jitfuse::ConvOptions {
            strides,
            padding: jitfuse::Padding::Explicit(padding.clone()),
            lhs_dilation,
            rhs_dilation,
            groups,
            layout: jitfuse::ConvLayout::ChannelsLast,
        };
        let spec = jitfuse::internals::ir::ConvSpec {
            role: jitfuse::internals::ir::ConvRole::Output,
            strides: o.strides.clone(),
            padding,
            lhs_dilation: o.lhs_dilation.clone(),
            rhs_dilation: o.rhs_dilation.clone(),
            groups,
        };
        let y = spec.shapes(&x, &w, &[]).ok()?.y;
        if numel(&y) == 0 || numel(&y) * numel(&w[..r]) * (c / groups) > MAX_CONV_MACS {
            return None;
        }
        let ty = Ty {
            shape: y,
            dtype: fl,
            exact: false,
        };
        self.push(Ins::Conv(a, x, w, o), ty);
        Some(())
    }

    /// Self-attention of a float value of rank 2 or 3 over its last two axes (`Ins::Attend`).
    ///
    /// In gradient programs of f64 only. Autodiff fuses the pattern before the interpreter
    /// sees it, so the oracle is the program traced again with pattern fusion off
    /// (`run_case`): the composition's gradient, whose rounding the noise model follows
    /// (checked against the fused graph itself, the model restarted at `attention_grad`).
    /// Its scores are products of the operand with itself, far from the inputs' size, and a
    /// softmax gradient's `dP - D` cancels what their rounding moved: the model, which starts
    /// `exp` afresh from its value, misses that, and in f32 and bf16 it showed as false
    /// alarms (program seeds 12301068945 and 13801064801, f32: scores near 1e5, and of `x²`,
    /// moved the weights by 1e-4 and the gradient by 2.6e-5 of its scale; 12201037753 and
    /// 13801042741, bf16: 5 and 7 % of the output's scale, where the composition rounds every
    /// intermediate to bf16 and the fused step computes in f32; since `exp` of a computed
    /// argument carries the argument's rounding, 12301068945 passes and the other three still
    /// fail, the f32 one at 1.3 times the tolerance of a gradient of scale 1). f64 leaves
    /// seven orders of
    /// magnitude between its rounding and the tolerance. The f32 and 16-bit gradients are
    /// checked against the composition's and finite differences
    /// (`attention::attention_gradients_match_*`), and in 16 bits bit for bit against the
    /// f32 step (`attention::sixteen_bit_attention_is_the_f32_step_rounded_once`).
    fn attend(&mut self) -> Option<()> {
        let fl = self.float;
        if self.grad && fl != DType::F64 {
            return None;
        }
        let a = self.pick(&|t: &Ty| {
            t.dtype == fl && (2..=3).contains(&t.shape.len()) && t.shape.iter().all(|&d| d > 0)
        })?;
        let t = self.tys[a].clone();
        let r = t.shape.len();
        let (n, d) = (t.shape[r - 2], t.shape[r - 1]);
        let batch: usize = t.shape[..r - 2].iter().product();
        // The interpreter builds the composition's scores: two products of n × n × d.
        if batch * n * n * d > MAX_MATMUL_MACS || batch * n * n > MAX_BROADCAST {
            return None;
        }
        let causal = self.rng.chance(0.5);
        self.push(Ins::Attend(a, causal), Ty { exact: false, ..t });
        Some(())
    }

    /// A windowed max or sum over every axis of a float value. Both are exact on exact
    /// values (a maximum, or an f64 sum of a few values rounded once, in every backend); a
    /// gradient program takes the max of exact values only (its gradient picks a winner).
    fn window(&mut self) -> Option<()> {
        let fl = self.float;
        let a = self.pick(&|t: &Ty| t.dtype == fl && !t.shape.is_empty())?;
        let t = self.tys[a].clone();
        let rng = &mut *self.rng;
        let window: Vec<usize> = t.shape.iter().map(|_| 1 + rng.below(3)).collect();
        let strides: Vec<usize> = t.shape.iter().map(|_| 1 + rng.below(2)).collect();
        let padding: Vec<(i64, i64)> = t
            .shape
            .iter()
            .map(|_| (rng.below(2) as i64, rng.below(2) as i64))
            .collect();
        let mut shape = vec![];
        for d in 0..t.shape.len() {
            let padded = t.shape[d] as i64 + padding[d].0 + padding[d].1;
            if padded < window[d] as i64 {
                return None;
            }
            shape.push(((padded - window[d] as i64) / strides[d] as i64) as usize + 1);
        }
        let reducer = if (self.grad && !t.exact) || self.rng.chance(0.5) {
            jitfuse::Reducer::Sum
        } else {
            jitfuse::Reducer::Max
        };
        let big = self.big[a] || (reducer == jitfuse::Reducer::Sum && numel(&window) > LONG_SUM);
        let ty = Ty {
            shape,
            dtype: fl,
            exact: t.exact,
        };
        self.push(Ins::Window(a, reducer, window, strides, padding), ty);
        if big {
            *self.big.last_mut().unwrap() = true;
        }
        Some(())
    }
}

/// A random program.
pub fn program(rng: &mut Rng) -> Program {
    let big = rng.chance(0.04);
    let float = match rng.below(20) {
        0..=13 => DType::F32,
        14..=16 => DType::F64,
        17 | 18 => DType::BF16,
        _ => DType::F16,
    };
    let grad = rng.chance(0.25);
    let np = 1 + rng.below(3);
    let mut params = Vec::new();
    let base = shape(rng, big);
    for i in 0..np {
        let shape = if i == 0 || rng.chance(0.5) {
            base.clone()
        } else if rng.chance(0.5) {
            // A broadcast partner of the first.
            let drop = rng.below(base.len() + 1);
            base[drop..]
                .iter()
                .map(|&d| if rng.chance(0.3) { 1 } else { d })
                .collect()
        } else {
            shape(rng, big)
        };
        let dtype = if i > 0 && rng.chance(0.15) {
            [DType::I32, DType::I64, DType::Bool][rng.below(3)]
        } else {
            float
        };
        let mode = [Mode::Borrowed, Mode::Donated, Mode::Donated, Mode::Shared][rng.below(4)];
        params.push(Param {
            shape,
            dtype,
            mode,
            draw: i as u64,
        });
    }
    let tys: Vec<Ty> = params
        .iter()
        .map(|p| Ty {
            shape: p.shape.clone(),
            dtype: p.dtype,
            exact: true,
        })
        .collect();
    let big = vec![false; tys.len()];
    let mut g = Gen {
        big,
        rng,
        tys,
        ins: Vec::new(),
        grad,
        float,
    };
    let len = 1 + g.rng.below(7);
    let mut tries = 0;
    while g.ins.len() < len && tries < 40 {
        tries += 1;
        let _ = g.step();
    }
    let nv = g.tys.len();
    let n_out = 1 + g.rng.below(3);
    let mut outputs = vec![nv - 1];
    for _ in 1..n_out {
        outputs.push(g.rng.below(nv));
    }
    let grad = grad && outputs.iter().any(|&o| g.tys[o].dtype == float);
    Program {
        params,
        ins: g.ins,
        outputs,
        grad,
    }
}
