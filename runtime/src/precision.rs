//! Mixed precision, in the design of JAX's `jmp`: a [`Policy`] says which float type the
//! parameters are kept in, which one the model computes in and which one its outputs take;
//! a [`LossScale`] keeps small f16 gradients from flushing to zero (scale the loss up,
//! the gradients down, and with [`LossScale::dynamic`] skip a step whose gradients
//! overflowed). bf16 has f32's exponent range and needs no loss scale.
//!
//! ```
//! use jitfuse_runtime::precision::{all_finite, select_tree, LossScale, Policy};
//! use jitfuse_runtime::{DType, Tensor, Tree};
//!
//! let policy = Policy::new(DType::F32, DType::BF16, DType::F32);
//! let params = vec![Tensor::full(&[4, 4], 0.5, DType::F32)];
//! let x = Tensor::full(&[2, 4], 1.0, DType::F32);
//! let loss = |p: &Vec<Tensor>| {
//!     let p = policy.cast_to_compute(p);
//!     let y = policy.cast_to_compute(&x).matmul(&p[0]);
//!     policy.cast_to_output(&y.square().mean_all())
//! };
//! let g = jitfuse_runtime::grad(loss, &params);
//! assert_eq!(g[0].dtype(), DType::F32); // the gradient of an f32 parameter is f32
//!
//! let scale = LossScale::dynamic(2f64.powi(15));
//! let g = scale.unscale(&g);
//! let finite = all_finite(&g);
//! let stepped = params.zip_map(&g, |p, g| p - 0.1 * g);
//! let params = select_tree(&finite, &stepped, &params);
//! let scale = scale.adjust(&finite);
//! # let _ = (params, scale);
//! ```

use crate::{where_, DType, Error, Tensor, Tree};

/// The float types of a mixed-precision model (`jmp.Policy`): parameters are stored in
/// `param`, computed with in `compute`, results handed out in `output`. Only float leaves
/// are cast; integers and bools pass unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Policy {
    /// The dtype parameters (and the optimiser's state) are kept in.
    pub param: DType,
    /// The dtype the model computes in.
    pub compute: DType,
    /// The dtype of the model's outputs (a loss, logits).
    pub output: DType,
}

impl Policy {
    /// The policy of three float dtypes; a dtype that is not a float is an error at the
    /// caller's line.
    #[track_caller]
    pub fn new(param: DType, compute: DType, output: DType) -> Policy {
        for (what, d) in [("param", param), ("compute", compute), ("output", output)] {
            if !d.is_float() {
                crate::trace::fail(
                    Error::dtype(format!(
                        "`Policy::new`: the {what} dtype must be a float, not {d}"
                    ))
                    .at(std::panic::Location::caller()),
                );
            }
        }
        Policy {
            param,
            compute,
            output,
        }
    }

    /// Every float dtype `d`: full precision.
    pub fn uniform(d: DType) -> Policy {
        Policy::new(d, d, d)
    }

    /// The float leaves of `tree` cast to `param`.
    pub fn cast_to_param<T: Tree>(&self, tree: &T) -> T {
        cast_floats(tree, self.param)
    }

    /// The float leaves of `tree` cast to `compute`.
    pub fn cast_to_compute<T: Tree>(&self, tree: &T) -> T {
        cast_floats(tree, self.compute)
    }

    /// The float leaves of `tree` cast to `output`.
    pub fn cast_to_output<T: Tree>(&self, tree: &T) -> T {
        cast_floats(tree, self.output)
    }
}

/// `tree` with its float leaves cast to `d` (the others, and leaves already of `d`, as
/// they are: no node is added for them).
pub fn cast_floats<T: Tree>(tree: &T, d: DType) -> T {
    tree.map(|t| match t.dtype().is_float() && t.dtype() != d {
        true => t.cast(d),
        false => t.clone(),
    })
}

/// How the loss is scaled (`jmp`'s `NoOpLossScale`, `StaticLossScale`,
/// `DynamicLossScale`). A tree of two scalars (the scale, f32, and the count of finite
/// steps since it last changed, i32), so it goes in and out of a `#[jit]` step like the
/// optimiser's state; what kind it is and its period and factor are static.
#[derive(Clone, Debug)]
pub struct LossScale {
    /// The current scale (f32 scalar).
    pub scale: Tensor,
    /// Finite steps in a row since the scale last changed (i32 scalar).
    pub counter: Tensor,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    None,
    Fixed,
    Dynamic { period: i32, factor: f64, min: f64 },
}

impl LossScale {
    fn with(scale: f64, kind: Kind) -> LossScale {
        LossScale {
            scale: Tensor::scalar(scale as f32),
            counter: Tensor::scalar(0i32),
            kind,
        }
    }

    /// No scaling: `scale` and `unscale` return their trees, `adjust` keeps it.
    pub fn none() -> LossScale {
        LossScale::with(1.0, Kind::None)
    }

    /// A fixed scale.
    pub fn fixed(scale: f64) -> LossScale {
        LossScale::with(scale, Kind::Fixed)
    }

    /// A scale that halves after a step whose gradients were not all finite (not below 1)
    /// and doubles after 2000 finite steps in a row (`period`, `factor` and `min_scale`
    /// change these). Start high (2^15 is common): the first steps find the largest scale
    /// that does not overflow.
    pub fn dynamic(initial: f64) -> LossScale {
        LossScale::with(
            initial,
            Kind::Dynamic {
                period: 2000,
                factor: 2.0,
                min: 1.0,
            },
        )
    }

    /// A dynamic scale's count of finite steps before it grows (at least 1).
    pub fn period(mut self, steps: usize) -> LossScale {
        if let Kind::Dynamic { period, .. } = &mut self.kind {
            *period = steps.clamp(1, i32::MAX as usize) as i32;
        }
        self
    }

    /// A dynamic scale's factor of growth and shrinkage.
    pub fn factor(mut self, f: f64) -> LossScale {
        if let Kind::Dynamic { factor, .. } = &mut self.kind {
            *factor = f;
        }
        self
    }

    /// The smallest scale a dynamic scale shrinks to.
    pub fn min_scale(mut self, m: f64) -> LossScale {
        if let Kind::Dynamic { min, .. } = &mut self.kind {
            *min = m;
        }
        self
    }

    /// `tree` (a loss) times the scale, in each leaf's own dtype.
    pub fn scale<T: Tree>(&self, tree: &T) -> T {
        if self.kind == Kind::None {
            return tree.map(Tensor::clone);
        }
        tree.map(|t| t * &self.scale.cast(t.dtype()))
    }

    /// `tree` (the gradients) divided by the scale, in each leaf's own dtype.
    pub fn unscale<T: Tree>(&self, tree: &T) -> T {
        if self.kind == Kind::None {
            return tree.map(Tensor::clone);
        }
        let inverse = self.scale.recip();
        tree.map(|t| t * &inverse.cast(t.dtype()))
    }

    /// The scale after a step whose gradients were all finite or not (`grads_finite`, a bool
    /// scalar: [`all_finite`]): a dynamic scale shrinks by its factor when they were not
    /// (the caller skips that step: [`select_tree`]), and grows when they were for `period`
    /// steps in a row. Other scales stay.
    pub fn adjust(&self, grads_finite: &Tensor) -> LossScale {
        let Kind::Dynamic {
            period,
            factor,
            min,
        } = self.kind
        else {
            return self.clone();
        };
        let full = self.counter.eq(period - 1);
        let grown = where_(&full, &(&self.scale * factor), &self.scale);
        let shrunk = (&self.scale / factor).maximum(min);
        let scale = where_(grads_finite, &grown, &shrunk);
        let next = (&self.counter + 1) % period;
        let counter = where_(grads_finite, &next, 0);
        LossScale {
            scale,
            counter,
            kind: self.kind,
        }
    }
}

impl Tree for LossScale {
    fn collect_leaves(&self, out: &mut Vec<Tensor>) {
        out.push(self.scale.clone());
        out.push(self.counter.clone());
    }

    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self {
        LossScale {
            scale: self.scale.rebuild(leaves),
            counter: self.counter.rebuild(leaves),
            kind: self.kind,
        }
    }

    fn structure(&self, out: &mut Vec<usize>) {
        // The kind and its constants are traced into a step: part of its cache key.
        match self.kind {
            Kind::None => out.push(0),
            Kind::Fixed => out.push(1),
            Kind::Dynamic {
                period,
                factor,
                min,
            } => out.extend([
                2,
                period as usize,
                factor.to_bits() as usize,
                min.to_bits() as usize,
            ]),
        }
    }

    fn collect_names(&self, path: &str, out: &mut Vec<String>) {
        out.push(crate::autodiff::join_path(path, "scale"));
        out.push(crate::autodiff::join_path(path, "counter"));
    }
}

/// Whether every element of every float leaf of `tree` is finite (a bool scalar).
pub fn all_finite<T: Tree>(tree: &T) -> Tensor {
    let mut all = Tensor::scalar(true);
    for t in tree.leaves() {
        if t.dtype().is_float() {
            // x - x is 0 for finite x, NaN for infinities and NaN: one sum says.
            let s = (&t - &t).cast(DType::F32).sum_all();
            all = all.logical_and(&s.eq(0.0));
        }
    }
    all
}

/// `a` where `pred` (a bool scalar) is true, `b` otherwise, leaf by leaf (a step kept or
/// skipped).
#[track_caller]
pub fn select_tree<T: Tree>(pred: &Tensor, a: &T, b: &T) -> T {
    a.zip_map(b, |x, y| where_(pred, x, y))
}
