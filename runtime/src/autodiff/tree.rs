//! `Tree`: a structure of tensors (JAX's pytree). Gradients, optimiser steps
//! and jitted parameters work leaf by leaf.

use crate::Tensor;

/// A structure whose leaves are tensors. Implemented for `Tensor`, tuples (up
/// to 12), arrays, `Vec` and `Option` of trees; `#[derive(Tree)]` implements
/// it for structs of trees.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tree of tensors (`jitfuse::Tree`)",
    label = "not a `Tree`",
    note = "`Tree` is implemented for `Tensor`, and for tuples, arrays, `Vec` and `Option` of trees; \
            `#[derive(Tree)]` implements it for structs whose fields are all trees"
)]
pub trait Tree: Sized {
    /// The leaves, in a fixed order.
    fn leaves(&self) -> Vec<Tensor> {
        let mut out = Vec::new();
        self.collect_leaves(&mut out);
        out
    }

    /// Append the leaves to `out`.
    fn collect_leaves(&self, out: &mut Vec<Tensor>);

    /// A tree of the same structure as `self` with leaves taken in order.
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self;

    /// Append what distinguishes two trees of this type with the same leaves
    /// beyond the leaves themselves: `Vec` lengths, `Option` presence (in
    /// leaf order). Part of a `#[jit]` cache key; the default is nothing.
    fn structure(&self, out: &mut Vec<usize>) {
        let _ = out;
    }

    /// Apply `f` to every leaf.
    fn map(&self, mut f: impl FnMut(&Tensor) -> Tensor) -> Self {
        let new: Vec<Tensor> = self.leaves().iter().map(&mut f).collect();
        self.rebuild(&mut new.into_iter())
    }

    /// Combine two trees of the same structure leaf by leaf (an optimiser
    /// step: `p.zip_map(&g, |w, dw| w - lr * dw)`).
    fn zip_map(&self, other: &Self, mut f: impl FnMut(&Tensor, &Tensor) -> Tensor) -> Self {
        let (a, b) = (self.leaves(), other.leaves());
        assert_eq!(
            a.len(),
            b.len(),
            "zip_map of trees with {} and {} leaves",
            a.len(),
            b.len()
        );
        let new: Vec<Tensor> = a.iter().zip(&b).map(|(x, y)| f(x, y)).collect();
        self.rebuild(&mut new.into_iter())
    }
}

impl Tree for Tensor {
    fn collect_leaves(&self, out: &mut Vec<Tensor>) {
        out.push(self.clone());
    }
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self {
        leaves
            .next()
            .expect("tree has fewer leaves than its structure")
    }
}

impl<T: Tree> Tree for Vec<T> {
    fn collect_leaves(&self, out: &mut Vec<Tensor>) {
        for t in self {
            t.collect_leaves(out);
        }
    }
    fn structure(&self, out: &mut Vec<usize>) {
        out.push(self.len());
        for t in self {
            t.structure(out);
        }
    }
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self {
        self.iter().map(|t| t.rebuild(leaves)).collect()
    }
}

impl<T: Tree> Tree for Option<T> {
    fn collect_leaves(&self, out: &mut Vec<Tensor>) {
        if let Some(t) = self {
            t.collect_leaves(out);
        }
    }
    fn structure(&self, out: &mut Vec<usize>) {
        out.push(self.is_some() as usize);
        if let Some(t) = self {
            t.structure(out);
        }
    }
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self {
        self.as_ref().map(|t| t.rebuild(leaves))
    }
}

impl<T: Tree, const N: usize> Tree for [T; N] {
    fn collect_leaves(&self, out: &mut Vec<Tensor>) {
        for t in self {
            t.collect_leaves(out);
        }
    }
    fn structure(&self, out: &mut Vec<usize>) {
        for t in self {
            t.structure(out);
        }
    }
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self {
        std::array::from_fn(|i| self[i].rebuild(leaves))
    }
}

impl Tree for () {
    fn collect_leaves(&self, _: &mut Vec<Tensor>) {}
    fn rebuild(&self, _: &mut dyn Iterator<Item = Tensor>) -> Self {}
}

macro_rules! tuple_tree {
    ($($t:ident $i:tt),*) => {
        impl<$($t: Tree),*> Tree for ($($t,)*) {
            fn collect_leaves(&self, out: &mut Vec<Tensor>) {
                $(self.$i.collect_leaves(out);)*
            }
            fn structure(&self, out: &mut Vec<usize>) {
                $(self.$i.structure(out);)*
            }
            fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self {
                ($(self.$i.rebuild(leaves),)*)
            }
        }
    };
}
tuple_tree!(A 0);
tuple_tree!(A 0, B 1);
tuple_tree!(A 0, B 1, C 2);
tuple_tree!(A 0, B 1, C 2, D 3);
tuple_tree!(A 0, B 1, C 2, D 3, E 4);
tuple_tree!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_tree!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_tree!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_tree!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_tree!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_tree!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_tree!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
