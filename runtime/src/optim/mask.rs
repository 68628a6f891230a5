//! Which leaves a transformation applies to (AdamW's weight decay).

use crate::trace::fail;
use crate::{DType, Error, Tensor, Tree};
use std::fmt;
use std::sync::Arc;

/// A choice of leaves of a parameter tree, decided when the update is
/// traced (so it costs nothing at run time): every leaf, a predicate on the
/// leaf (its shape: `Mask::by_leaf(|t| t.ndim() >= 2)` decays matrices, not
/// gains and biases), a predicate on its name (`Tree::leaf_names`), or one
/// flag per leaf.
#[derive(Clone)]
pub struct Mask(Kind);

type Pred = Arc<dyn Fn(&str, &Tensor) -> bool + Send + Sync>;

#[derive(Clone)]
enum Kind {
    All,
    Pred { by_name: bool, f: Pred },
    Flags(Vec<bool>),
}

impl Mask {
    /// Every leaf.
    pub fn all() -> Mask {
        Mask(Kind::All)
    }

    /// Whether it is `Mask::all()`.
    pub fn is_all(&self) -> bool {
        matches!(self.0, Kind::All)
    }

    /// No leaf.
    pub fn none() -> Mask {
        Mask::by_leaf(|_| false)
    }

    /// The leaves for which `f` is true (it sees the parameter: shape and
    /// dtype; traced inside `#[jit]`).
    pub fn by_leaf(f: impl Fn(&Tensor) -> bool + Send + Sync + 'static) -> Mask {
        Mask(Kind::Pred {
            by_name: false,
            f: Arc::new(move |_, t| f(t)),
        })
    }

    /// The leaves whose name (`Tree::leaf_names`: `blocks.0.attn.wqkv`)
    /// satisfies `f`.
    pub fn by_name(f: impl Fn(&str) -> bool + Send + Sync + 'static) -> Mask {
        Mask(Kind::Pred {
            by_name: true,
            f: Arc::new(move |n, _| f(n)),
        })
    }

    /// One flag per leaf, in leaf order.
    pub fn from_flags(flags: Vec<bool>) -> Mask {
        Mask(Kind::Flags(flags))
    }

    /// A mask tree: a tree of the parameters' structure whose leaves are
    /// concrete `bool` scalars (`p.map(|t| Tensor::scalar(t.ndim() >= 2))`).
    pub fn from_tree<T: Tree>(mask: &T) -> Result<Mask, Error> {
        let flags = mask
            .leaves()
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if t.dtype() != DType::Bool || t.len() != 1 {
                    return Err(Error::argument(format!(
                        "a mask tree has one bool scalar per leaf: leaf {i} is {}",
                        crate::error::type_str(t.dtype(), t.shape())
                    )));
                }
                t.item::<bool>()
            })
            .collect::<Result<Vec<bool>, Error>>()?;
        Ok(Mask::from_flags(flags))
    }

    /// The flag of each leaf of `params`, in leaf order. A flag list of
    /// another length than the tree's leaves is an error (`Argument`).
    #[track_caller]
    pub fn resolve<P: Tree>(&self, params: &P) -> Vec<bool> {
        let names = match &self.0 {
            Kind::Pred { by_name: true, .. } => params.leaf_names(),
            _ => Vec::new(),
        };
        self.resolve_leaves(&names, &params.leaves())
    }

    /// [`resolve`](Mask::resolve) of a tree given as its leaves and their names (`names` may
    /// be empty unless the mask is `by_name`).
    #[track_caller]
    pub(crate) fn resolve_leaves(&self, names: &[String], leaves: &[Tensor]) -> Vec<bool> {
        match &self.0 {
            Kind::All => vec![true; leaves.len()],
            Kind::Pred { by_name, f } => (leaves.iter().enumerate())
                .map(|(i, t)| f(if *by_name { &names[i] } else { "" }, t))
                .collect(),
            Kind::Flags(v) => {
                if v.len() != leaves.len() {
                    fail(
                        Error::argument(format!(
                            "a mask of {} flags for a tree of {} leaves",
                            v.len(),
                            leaves.len()
                        ))
                        .at(std::panic::Location::caller()),
                    );
                }
                v.clone()
            }
        }
    }
}

/// What a [`Mask`] selects of one leaf, or of one block of packed leaves (`Blocks::mask`).
#[derive(Clone, Debug)]
pub enum Selected {
    /// None of its elements.
    Nothing,
    /// Every element.
    All,
    /// A 0/1 tensor of the block's elements.
    Elements(Tensor),
}

impl Selected {
    /// `All` or `Nothing`, as a leaf's flag says.
    pub fn of(flag: bool) -> Selected {
        if flag {
            Selected::All
        } else {
            Selected::Nothing
        }
    }
}

impl fmt::Debug for Mask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::All => f.write_str("Mask::all()"),
            Kind::Pred { by_name: false, .. } => f.write_str("Mask::by_leaf(..)"),
            Kind::Pred { by_name: true, .. } => f.write_str("Mask::by_name(..)"),
            Kind::Flags(v) => write!(f, "Mask::from_flags({v:?})"),
        }
    }
}
