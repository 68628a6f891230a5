//! Shape arithmetic: element counts, strides, NumPy broadcasting.
//!
//! Every tensor and every IR value has a shape whose byte size was checked
//! by [`checked_bytes`] where it was made (constructors, `trace::push_node`,
//! `interp::eval_op`, `ir::verify`): at most `isize::MAX` bytes. Below that
//! bound `numel`, `strides` and byte offsets cannot overflow, so they stay
//! unchecked; anything that makes a new shape from user numbers must check.

use crate::{DType, Error};

/// Number of elements (1 for a scalar of shape `[]`). Only for shapes
/// already checked (see the module's doc); new shapes go through
/// [`checked_numel`] or [`checked_bytes`].
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Number of elements, or `None` when it overflows `usize`.
pub fn checked_numel(shape: &[usize]) -> Option<usize> {
    // A 0 anywhere makes the product 0, even after a partial product that
    // overflowed ([2^32, 2^32, 0] is an empty tensor).
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// `2^63.0`: the element count of a shape as a power of two, for messages
/// about counts that do not fit a `usize`.
fn log2_count(shape: &[usize]) -> String {
    let l: f64 = shape.iter().map(|&d| (d as f64).log2()).sum();
    format!("2^{l:.1}")
}

/// The byte size of a tensor of `shape` and `dtype`, or a shape error naming
/// `op` when it exceeds `isize::MAX` (the most any allocation, pointer
/// offset or slice can span). As NumPy, the bound holds for the product of
/// the non-zero dimensions too (an empty `[2^32, 2^32, 0]` is an error): so
/// the product of any subset of a valid shape's dimensions (a stride, a
/// row length, `numel` multiplied in any order) fits, and no dimension
/// exceeds `isize::MAX`.
pub fn checked_bytes(op: &str, shape: &[usize], dtype: DType) -> Result<usize, Error> {
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(dtype.size(), |n, &d| n.checked_mul(d));
    match nonzero {
        Some(b) if b <= isize::MAX as usize => Ok(if shape.contains(&0) { 0 } else { b }),
        _ => {
            let dims: Vec<usize> = shape.iter().copied().filter(|&d| d != 0).collect();
            let count = match checked_numel(&dims) {
                Some(n) if n.is_power_of_two() => {
                    format!("{n} (2^{}) elements", n.trailing_zeros())
                }
                Some(n) => format!("{n} elements"),
                None => format!("{} elements", log2_count(&dims)),
            };
            let what = if dims.len() < shape.len() {
                "its non-zero dimensions have"
            } else {
                "has"
            };
            Err(Error::shape(format!(
                "`{op}`: shape {shape:?} {what} {count} of {dtype}, more than fit in memory \
                 addresses (at most isize::MAX = 2^63-1 bytes)"
            )))
        }
    }
}

/// The sum of byte sizes, saturating: several values of checked sizes may
/// add up past `usize`, and a total of `usize::MAX` is an allocation that
/// fails (reported as out of memory), never a wrapped small one.
pub fn sum_bytes(sizes: impl IntoIterator<Item = usize>) -> usize {
    sizes.into_iter().fold(0, usize::saturating_add)
}

/// `a + b` on a dimension, or a shape error naming `op` and `what` it was.
pub fn checked_dim_add(op: &str, what: &str, a: usize, b: usize) -> Result<usize, Error> {
    a.checked_add(b).ok_or_else(|| {
        Error::shape(format!(
            "`{op}`: {what} {a} + {b} overflows the size of a dimension"
        ))
    })
}

/// Row-major strides in elements.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![0; shape.len()];
    let mut acc = 1;
    for i in (0..shape.len()).rev() {
        s[i] = acc;
        acc *= shape[i];
    }
    s
}

/// The NumPy broadcast of two shapes (right-aligned; a dimension of 1
/// stretches), or `None` when they are incompatible.
pub fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i < n - a.len() {
            1
        } else {
            a[i - (n - a.len())]
        };
        let db = if i < n - b.len() {
            1
        } else {
            b[i - (n - b.len())]
        };
        out[i] = if da == db {
            da
        } else if da == 1 {
            db
        } else if db == 1 {
            da
        } else {
            return None;
        };
    }
    Some(out)
}

/// Whether `from` broadcasts to exactly `to`.
pub fn broadcasts_to(from: &[usize], to: &[usize]) -> bool {
    from.len() <= to.len() && broadcast(from, to).as_deref() == Some(to)
}

/// Strides (in elements) with which an operand of shape `from`, broadcast to
/// `to`, is read: 0 along stretched or missing dimensions.
pub fn broadcast_strides(from: &[usize], to: &[usize]) -> Vec<usize> {
    let own = strides(from);
    let off = to.len() - from.len();
    (0..to.len())
        .map(|i| {
            if i < off || from[i - off] == 1 && to[i] != 1 {
                0
            } else {
                own[i - off]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_checked() {
        assert_eq!(checked_numel(&[1 << 32, 1 << 32]), None);
        assert_eq!(checked_numel(&[1 << 32, 1 << 32, 0]), Some(0));
        assert_eq!(checked_numel(&[]), Some(1));
        assert_eq!(checked_bytes("x", &[3, 4], DType::F64).unwrap(), 96);
        // 2^61 f32 elements are 2^63 bytes: one more than isize::MAX.
        let e = checked_bytes("zeros", &[1 << 61], DType::F32).unwrap_err();
        assert!(e.message.contains("`zeros`: shape [2305843009213693952] has 2305843009213693952 (2^61) elements of f32"), "{e}");
        let e = checked_bytes("zeros", &[1 << 40, 1 << 40], DType::F32).unwrap_err();
        assert!(e.message.contains("2^80.0 elements of f32"), "{e}");
        assert!(checked_bytes("zeros", &[1 << 60], DType::F32).is_ok());
        assert!(checked_dim_add("pad", "axis 0:", usize::MAX, 1).is_err());
        let e = checked_bytes("iota", &[0, usize::MAX], DType::F32).unwrap_err();
        assert!(e.message.contains("`iota`: shape [0, 18446744073709551615] its non-zero dimensions have 18446744073709551615 elements"), "{e}");
        assert!(checked_bytes("iota", &[1 << 32, 1 << 32, 0], DType::F32).is_err());
        assert_eq!(
            checked_bytes("iota", &[1 << 30, 1 << 30, 0], DType::F32).unwrap(),
            0
        );
    }

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast(&[3, 1], &[4]), Some(vec![3, 4]));
        assert_eq!(broadcast(&[], &[2, 3]), Some(vec![2, 3]));
        assert_eq!(broadcast(&[2, 3], &[3, 2]), None);
        assert_eq!(broadcast(&[0], &[1]), Some(vec![0]));
        assert_eq!(broadcast_strides(&[3, 1], &[2, 3, 4]), vec![0, 1, 0]);
        assert!(broadcasts_to(&[1, 4], &[3, 4]));
        assert!(!broadcasts_to(&[3, 4], &[4]));
    }
}

/// Clamp an index into `0..n` after counting negative ones from the end (how `take` and
/// its gradient read an index out of range, as XLA's gather clamps: every backend and the
/// interpreter read it here).
pub fn clamp_index(i: i64, n: usize) -> usize {
    let i = if i < 0 { i + n as i64 } else { i };
    i.clamp(0, n as i64 - 1) as usize
}

/// The flat index (row-major) of multi-index `idx` of `shape`: `unflatten`'s inverse.
pub fn flatten(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |flat, (&i, &n)| flat * n + i)
}

/// The multi-index of flat index `i` of `shape` (row-major) into `idx`.
pub fn unflatten(mut i: usize, shape: &[usize], idx: &mut [usize]) {
    for d in (0..shape.len()).rev() {
        idx[d] = i % shape[d];
        i /= shape[d];
    }
}

/// The strides over `to` of the access that `strides` make over `from` (the same number of
/// elements, visited in the same row-major order), where one affine map does it: each group
/// of `from`'s dims that `to` splits or merges differently must be linear across itself
/// (numpy's reshape without a copy). A fused column sum walks its kernel's elements in the
/// `[chunks, rows, ..kept]` shape of its operand (`describe::columns`).
pub fn restride(from: &[usize], strides: &[i64], to: &[usize]) -> Option<Vec<i64>> {
    let (od, os): (Vec<usize>, Vec<i64>) = (from.iter().zip(strides))
        .filter(|(&d, _)| d != 1)
        .map(|(&d, &s)| (d, s))
        .unzip();
    if from.iter().product::<usize>() != to.iter().product::<usize>() || to.contains(&0) {
        return None;
    }
    let mut out = vec![0i64; to.len()];
    let (mut oi, mut ni) = (0, 0);
    while oi < od.len() {
        // The smallest groups `od[oi..oj]` and `to[ni..nj]` of equal size.
        let (mut oj, mut nj) = (oi + 1, ni);
        let (mut op, mut np) = (od[oi], 1usize);
        while np < op || nj == ni {
            np *= to[nj];
            nj += 1;
            while op < np {
                op *= od[oj];
                oj += 1;
            }
        }
        if (oi..oj - 1).any(|k| os[k] != od[k + 1] as i64 * os[k + 1]) {
            return None;
        }
        let mut s = os[oj - 1];
        for k in (ni..nj).rev() {
            out[k] = s;
            s *= to[k] as i64;
        }
        (oi, ni) = (oj, nj);
    }
    Some(out)
}

#[cfg(test)]
mod restride_tests {
    use super::restride;

    /// Every element the strides reach over `from` is the one they reach over `to` at the
    /// same row-major position (or there is no map).
    fn same_elements(from: &[usize], strides: &[i64], to: &[usize]) -> Option<Vec<i64>> {
        let got = restride(from, strides, to)?;
        let at = |shape: &[usize], st: &[i64], mut i: usize| -> i64 {
            let mut off = 0;
            for (&d, &s) in shape.iter().zip(st).rev() {
                off += (i % d) as i64 * s;
                i /= d;
            }
            off
        };
        let n: usize = from.iter().product();
        for i in 0..n {
            assert_eq!(at(from, strides, i), at(to, &got, i), "element {i}");
        }
        Some(got)
    }

    #[test]
    fn restride_splits_and_merges_linear_groups_only() {
        // Contiguous: any regrouping.
        assert_eq!(
            same_elements(&[8, 6, 4], &[24, 4, 1], &[4, 12, 4]),
            Some(vec![48, 4, 1])
        );
        // A broadcast channel vector, rows split across a dim boundary.
        assert_eq!(
            same_elements(&[4, 6, 6, 16], &[0, 0, 0, 1], &[9, 16, 16]),
            Some(vec![0, 0, 1])
        );
        // Size-1 dims on either side (a new one takes any stride).
        assert_eq!(
            same_elements(&[1, 4, 1, 8], &[5, 8, 7, 1], &[2, 1, 16]),
            Some(vec![16, 16, 1])
        );
        // A transposed view regrouped within its linear runs.
        assert_eq!(
            same_elements(&[4, 3, 2], &[1, 8, 4], &[4, 6]),
            Some(vec![1, 4])
        );
        // Broadcast along the first dim only: its rows cannot be regrouped across it.
        assert_eq!(same_elements(&[4, 6, 16], &[0, 16, 1], &[8, 3, 16]), None);
        // A transpose split across its non-linear boundary.
        assert_eq!(same_elements(&[4, 3, 2], &[1, 8, 4], &[2, 12]), None);
        // Different sizes.
        assert_eq!(restride(&[4, 4], &[4, 1], &[15]), None);
    }
}
