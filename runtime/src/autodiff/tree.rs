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

    /// How many leaves each argument has when the tree is a function's
    /// arguments (`vmap`'s `in_axes` give one entry per argument): the
    /// elements of a tuple are its arguments; any other tree is one.
    fn argument_leaves(&self) -> Vec<usize> {
        vec![self.leaves().len()]
    }

    /// Apply `f` to every leaf.
    fn map(&self, mut f: impl FnMut(&Tensor) -> Tensor) -> Self {
        let new: Vec<Tensor> = self.leaves().iter().map(&mut f).collect();
        self.rebuild(&mut new.into_iter())
    }

    /// Combine two trees of the same structure leaf by leaf (an optimiser
    /// step: `p.zip_map(&g, |w, dw| w - lr * dw)`). Trees of different leaf
    /// counts are an error (`Argument`) at the caller's line.
    #[track_caller]
    fn zip_map(&self, other: &Self, mut f: impl FnMut(&Tensor, &Tensor) -> Tensor) -> Self {
        let (a, b) = (self.leaves(), other.leaves());
        if a.len() != b.len() {
            leaf_count_mismatch("zip_map", a.len(), 1, b.len());
        }
        let new: Vec<Tensor> = a.iter().zip(&b).map(|(x, y)| f(x, y)).collect();
        self.rebuild(&mut new.into_iter())
    }

    /// Combine three trees of the same structure leaf by leaf.
    #[track_caller]
    fn zip_map3(
        &self,
        b: &Self,
        c: &Self,
        mut f: impl FnMut(&Tensor, &Tensor, &Tensor) -> Tensor,
    ) -> Self {
        Self::map_n(&[self, b, c], |l| f(&l[0], &l[1], &l[2]))
    }

    /// Combine any number of trees of the same structure leaf by leaf: `f`
    /// gets the k-th leaf of every tree, in the order of `trees`. The result
    /// has the structure of `trees[0]`. Panics when `trees` is empty; trees
    /// of different leaf counts are an error (`Argument`) at the caller's
    /// line.
    #[track_caller]
    fn map_n(trees: &[&Self], mut f: impl FnMut(&[Tensor]) -> Tensor) -> Self {
        let [out] = Self::map_n_unzip(trees, |l| [f(l)]);
        out
    }

    /// Like [`Tree::map_n`] with `K` results per leaf, unzipped into `K`
    /// trees (an optimiser's new parameter and moments from one closure:
    /// `let [p, m, v] = Tree::map_n_unzip(&[&p, &g, &m, &v], |l| [..])`).
    #[track_caller]
    fn map_n_unzip<const K: usize>(
        trees: &[&Self],
        mut f: impl FnMut(&[Tensor]) -> [Tensor; K],
    ) -> [Self; K] {
        assert!(!trees.is_empty(), "map_n of no trees");
        let leaves: Vec<Vec<Tensor>> = trees.iter().map(|t| t.leaves()).collect();
        let n = leaves[0].len();
        if let Some(k) = leaves.iter().position(|l| l.len() != n) {
            leaf_count_mismatch("map_n", n, k, leaves[k].len());
        }
        let mut outs: [Vec<Tensor>; K] = std::array::from_fn(|_| Vec::with_capacity(n));
        let mut column = Vec::with_capacity(trees.len());
        for i in 0..n {
            column.clear();
            column.extend(leaves.iter().map(|l| l[i].clone()));
            for (out, t) in outs.iter_mut().zip(f(&column)) {
                out.push(t);
            }
        }
        outs.map(|o| trees[0].rebuild(&mut o.into_iter()))
    }

    /// Append one name per leaf, in leaf order, to `out`: the path from the
    /// root of the tree, its parts joined by dots (`blocks.0.attn.wqkv`),
    /// with `path` (the path of `self`, empty at the root) in front. Struct
    /// fields (`#[derive(Tree)]`) are named by the field, `Vec` and array
    /// elements and tuple positions by their index; an `Option` adds
    /// nothing. The default, for trees that have no names of their own,
    /// numbers the leaves (`path.0`, `path.1`, ...).
    fn collect_names(&self, path: &str, out: &mut Vec<String>) {
        for i in 0..self.leaves().len() {
            out.push(join_path(path, &i.to_string()));
        }
    }

    /// The names of the leaves, in leaf order (see [`Tree::collect_names`]):
    /// the tensor names of a checkpoint (`jitfuse::io`). A lone `Tensor` is
    /// named `""`.
    fn leaf_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_names("", &mut out);
        out
    }
}

/// Reports trees combined leaf by leaf whose leaf counts differ (tree 0 has
/// `n` leaves, tree `k` has `m`) as an error of the caller's line: a panic
/// eagerly, the `#[jit]` call's `Err` while tracing (where a plain panic
/// would be reported as the user's body panicking, without the line).
#[track_caller]
fn leaf_count_mismatch(op: &str, n: usize, k: usize, m: usize) -> ! {
    crate::trace::fail(
        crate::Error::argument(format!(
            "`Tree::{op}` of trees with different leaf counts: tree 0 has {n} leaves, tree {k} \
             has {m}"
        ))
        .at(std::panic::Location::caller()),
    )
}

/// `path.part` (`part` alone at the root): how [`Tree::collect_names`] joins
/// names.
pub fn join_path(path: &str, part: &str) -> String {
    if path.is_empty() {
        part.to_string()
    } else {
        format!("{path}.{part}")
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
    fn collect_names(&self, path: &str, out: &mut Vec<String>) {
        out.push(path.to_string());
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
    fn collect_names(&self, path: &str, out: &mut Vec<String>) {
        for (i, t) in self.iter().enumerate() {
            t.collect_names(&join_path(path, &i.to_string()), out);
        }
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
    fn collect_names(&self, path: &str, out: &mut Vec<String>) {
        if let Some(t) = self {
            t.collect_names(path, out);
        }
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
    fn collect_names(&self, path: &str, out: &mut Vec<String>) {
        for (i, t) in self.iter().enumerate() {
            t.collect_names(&join_path(path, &i.to_string()), out);
        }
    }
}

impl Tree for () {
    fn collect_leaves(&self, _: &mut Vec<Tensor>) {}
    fn rebuild(&self, _: &mut dyn Iterator<Item = Tensor>) -> Self {}
    fn collect_names(&self, _: &str, _: &mut Vec<String>) {}
    fn argument_leaves(&self) -> Vec<usize> {
        Vec::new()
    }
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
            fn collect_names(&self, path: &str, out: &mut Vec<String>) {
                $(self.$i.collect_names(&join_path(path, stringify!($i)), out);)*
            }
            fn argument_leaves(&self) -> Vec<usize> {
                vec![$(self.$i.leaves().len()),*]
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
