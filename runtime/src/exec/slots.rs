//! Lists a call fills and drops (each value's buffer, each step's operands), on the stack
//! when short: most programs have a few dozen values and a step a few operands, so a cached
//! call of a small program allocates only its outputs.

use std::ops::{Deref, DerefMut};

/// `n` values, initially `fill`: inline up to `N`, else on the heap.
pub(super) enum Slots<T, const N: usize> {
    Inline([T; N], usize),
    Heap(Vec<T>),
}

impl<T: Clone, const N: usize> Slots<T, N> {
    pub(super) fn new(n: usize, fill: T) -> Self {
        match n <= N {
            true => Slots::Inline(std::array::from_fn(|_| fill.clone()), n),
            false => Slots::Heap(vec![fill; n]),
        }
    }
}

impl<T, const N: usize> Deref for Slots<T, N> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Slots::Inline(a, n) => &a[..*n],
            Slots::Heap(v) => v,
        }
    }
}

impl<T, const N: usize> DerefMut for Slots<T, N> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Slots::Inline(a, n) => &mut a[..*n],
            Slots::Heap(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Slots;

    #[test]
    fn short_lists_are_inline_and_long_ones_on_the_heap_with_the_same_contents() {
        for n in [0, 1, 4, 5, 100] {
            let mut s: Slots<usize, 4> = Slots::new(n, 7);
            assert_eq!(matches!(s, Slots::Inline(..)), n <= 4);
            assert_eq!(s.len(), n);
            s.iter_mut().enumerate().for_each(|(i, x)| *x += i);
            assert_eq!(s.to_vec(), (0..n).map(|i| 7 + i).collect::<Vec<_>>());
        }
    }
}
