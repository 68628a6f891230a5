//! The property every `vmap` test checks: a function of one example, vmapped
//! over random batch sizes with each argument batched (at a random axis,
//! sometimes negative) or shared, and each output stacked at a random axis,
//! computes what a loop of single calls stacked computes; and the batched
//! function, traced as `#[jit]` traces it, is a valid graph that compiles to
//! what the interpreter computes.

use crate::common::{assert_close, random_tensor, Rng, Tol};
use jitfuse::internals::exec::Executable;
use jitfuse::internals::interpret;
use jitfuse::internals::ir::verify;
use jitfuse::internals::trace::{trace, ParamSpec};
use jitfuse::{stack, vmap, BatchAxes, DType, Tensor};

/// How an argument may be batched.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Batch {
    /// Batched or shared, chosen at random.
    Maybe,
    /// Always batched.
    Always,
    /// Always shared by the whole batch.
    Never,
}

/// One argument of one example: its type, the range of its values and
/// whether it may be batched.
#[derive(Clone, Debug)]
pub struct Arg {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub lo: f64,
    pub hi: f64,
    pub batch: Batch,
}

/// A float argument with values in `[-1, 1]`.
pub fn arg(shape: &[usize], dtype: DType) -> Arg {
    Arg {
        shape: shape.to_vec(),
        dtype,
        lo: -1.0,
        hi: 1.0,
        batch: Batch::Maybe,
    }
}

/// An `i32` argument with values in `[lo, hi]`.
pub fn ints(shape: &[usize], lo: i64, hi: i64) -> Arg {
    Arg {
        lo: lo as f64,
        hi: hi as f64,
        ..arg(shape, DType::I32)
    }
}

impl Arg {
    pub fn shared(self) -> Arg {
        Arg {
            batch: Batch::Never,
            ..self
        }
    }
    pub fn batched(self) -> Arg {
        Arg {
            batch: Batch::Always,
            ..self
        }
    }
    pub fn range(self, lo: f64, hi: f64) -> Arg {
        Arg { lo, hi, ..self }
    }
}

/// The relative tolerance of results computed in a different order (a
/// batched GEMM against single ones): normwise, scaled by the largest
/// element of the expected result.
pub fn reordered(d: DType, want: &Tensor) -> Tol {
    let rel = if d == DType::F64 { 1e-12 } else { 2e-5 };
    // Inputs are of order one: a result that cancels to zero in one order
    // of summation is off by rounding of that order in another.
    let scale = crate::common::to_f64s(want)
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(1.0f64, |m, v| m.max(v.abs()));
    Tol {
        rel,
        abs: rel * scale,
    }
}

fn tol_for(want: &Tensor) -> Tol {
    if want.dtype().is_float() {
        reordered(want.dtype(), want)
    } else {
        crate::common::EXACT
    }
}

/// Check `f` vmapped against a loop of single calls for one random batch
/// (sizes, batched arguments and axes drawn from `seed`).
pub fn check_vmap(what: &str, seed: u64, args: &[Arg], f: impl Fn(&[Tensor]) -> Vec<Tensor>) {
    let mut rng = Rng::new(seed);
    let size = 1 + rng.below(4);
    let lanes: Vec<Vec<Tensor>> = (0..size)
        .map(|_| {
            args.iter()
                .map(|a| random_tensor(&mut rng, &a.shape, a.dtype, a.lo, a.hi, false))
                .collect()
        })
        .collect();
    let mut axes: Vec<Option<isize>> = Vec::new();
    let mut batched_args: Vec<Tensor> = Vec::new();
    let any_forced = args.iter().any(|a| a.batch == Batch::Always);
    for (i, a) in args.iter().enumerate() {
        let batch = match a.batch {
            Batch::Always => true,
            Batch::Never => false,
            Batch::Maybe => (i == 0 && !any_forced) || rng.chance(0.6),
        };
        if batch {
            let r = a.shape.len();
            let ax = rng.below(r + 1);
            let parts: Vec<&Tensor> = lanes.iter().map(|l| &l[i]).collect();
            batched_args.push(stack(&parts, ax as isize));
            axes.push(Some(if rng.chance(0.3) {
                ax as isize - (r as isize + 1)
            } else {
                ax as isize
            }));
        } else {
            batched_args.push(lanes[0][i].clone());
            axes.push(None);
        }
    }
    let lane_args = |l: usize| -> Vec<Tensor> {
        (0..args.len())
            .map(|i| lanes[if axes[i].is_some() { l } else { 0 }][i].clone())
            .collect()
    };
    let single: Vec<Vec<Tensor>> = (0..size).map(|l| f(&lane_args(l))).collect();
    let out_axes: Vec<Option<isize>> = single[0]
        .iter()
        .map(|o| {
            let r = o.ndim() as isize + 1;
            let a = rng.below(r as usize) as isize;
            Some(if rng.chance(0.3) { a - r } else { a })
        })
        .collect();
    let want: Vec<Tensor> = (0..single[0].len())
        .map(|k| {
            let parts: Vec<&Tensor> = single.iter().map(|s| &s[k]).collect();
            stack(&parts, out_axes[k].unwrap())
        })
        .collect();
    let context =
        format!("{what} (seed {seed}, batch {size}, in_axes {axes:?}, out_axes {out_axes:?})");
    let batched = vmap(
        |xs: &Vec<Tensor>| f(xs),
        BatchAxes(axes.clone()),
        BatchAxes(out_axes.clone()),
    );
    let got = batched(&batched_args);
    assert_eq!(got.len(), want.len(), "{context}: outputs");
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_close(
            g,
            w,
            tol_for(w),
            &format!("{context}: output {k} against a loop"),
        );
    }
    // As `#[jit]` traces it: compiled against the interpreter.
    let specs: Vec<ParamSpec> = batched_args
        .iter()
        .map(|a| ParamSpec {
            shape: a.shape().to_vec(),
            dtype: a.dtype(),
            weak: false,
        })
        .collect();
    let traced = trace(&specs, |ts| batched(&ts.to_vec())).unwrap();
    let g = &traced.graph;
    verify(g).unwrap_or_else(|e| panic!("{context}: {e}\n{g}"));
    let want = interpret::eval_graph(g, &batched_args, &traced.captured).unwrap();
    let exe = Executable::from_graph(g.clone(), traced.captured.clone())
        .unwrap_or_else(|e| panic!("{context}: {e}\n{g}"));
    let refs: Vec<&Tensor> = batched_args.iter().collect();
    let got = exe.run_with(&refs).unwrap();
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        assert_close(
            a,
            b,
            tol_for(b),
            &format!("{context}: output {k} compiled\n{g}"),
        );
    }
}

/// A function of one example, boxed (the cases of a property differ in it).
pub type Body = Box<dyn Fn(&[Tensor]) -> Vec<Tensor>>;

/// `check_vmap` over `cases` seeds, the example's argument types and the
/// function (its static parameters: axes, shapes) drawn per seed.
pub fn property(what: &str, cases: u64, case: impl Fn(&mut Rng) -> (Vec<Arg>, Body)) {
    for seed in 0..cases {
        let mut rng = Rng::new(0x5eed ^ seed.wrapping_mul(0x9e37_79b9));
        let (a, body) = case(&mut rng);
        check_vmap(what, seed, &a, body);
    }
}
