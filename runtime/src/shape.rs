//! Shape arithmetic: element counts, strides, NumPy broadcasting.

/// Number of elements (1 for a scalar of shape `[]`).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
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
