//! Each of these once gave a wrong answer or crashed; each test is the
//! smallest program that showed it.

use jitfuse::prelude::*;

#[jit]
fn lse_rows(x: &Tensor) -> Tensor {
    x.logsumexp(-1)
}

#[jit]
fn lse_all(x: &Tensor) -> Tensor {
    x.logsumexp_all()
}

/// A row-level mask (logsumexp's "the row's max is finite") in an AVX-512
/// row kernel was stored as if it were a vector: code generation panicked.
#[test]
fn jitted_logsumexp_compiles_and_matches_eager() {
    for (rows, n) in [(1, 2), (3, 5), (4, 17), (2, 1000)] {
        let vals: Vec<f32> = (0..rows * n)
            .map(|i| ((i * 7 % 23) as f32 - 11.0) * 0.7)
            .collect();
        let mut vals_inf = vals.clone();
        vals_inf[..n]
            .iter_mut()
            .for_each(|v| *v = f32::NEG_INFINITY);
        for vals in [vals, vals_inf] {
            let x = Tensor::from_vec(vals.clone(), &[rows, n]).unwrap();
            let got = lse_rows::try_call(&x).unwrap().to_vec::<f32>().unwrap();
            let all = lse_all::try_call(&x).unwrap().to_vec::<f32>().unwrap();
            for r in 0..rows {
                let row = &vals[r * n..(r + 1) * n];
                let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
                let want = if m == f64::NEG_INFINITY {
                    m
                } else {
                    m + row.iter().map(|&v| (v as f64 - m).exp()).sum::<f64>().ln()
                };
                let g = got[r] as f64;
                assert!(
                    g == want || (g - want).abs() <= 1e-5 * want.abs().max(1.0),
                    "row {r} of [{rows}, {n}]: {g} want {want}"
                );
            }
            let m = vals.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
            let want = if m == f64::NEG_INFINITY {
                m
            } else {
                m + vals.iter().map(|&v| (v as f64 - m).exp()).sum::<f64>().ln()
            };
            assert!(
                all[0] as f64 == want || (all[0] as f64 - want).abs() <= 1e-5 * want.abs().max(1.0),
                "all of [{rows}, {n}]: {} want {want}",
                all[0]
            );
        }
    }
}
