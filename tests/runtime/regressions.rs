//! Each of these once gave a wrong answer or crashed; each test is the
//! smallest program that showed it. Those that are one graph with its arguments are files of
//! `programs/` (run by `programs.rs`).

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

/// A loop (`fori_loop`, a `scan` step) whose carried value is a reshape of a
/// parameter that is also returned: the operand has no buffer of its own
/// and the step read through a null pointer (SIGSEGV). Found by the fuzzer.
#[test]
fn a_control_step_reads_an_aliased_reshape_through_its_root() {
    #[jit]
    fn f(x: &Tensor) -> (Tensor, Tensor) {
        let r = x.reshape(&[1]);
        let y = fori_loop(0i64, 2i64, |_, s: Tensor| &s * 0.5 + 1.0, r.clone());
        (y, r)
    }
    let x = Tensor::scalar(3.0f64);
    let (y, r) = f::try_call(&x).unwrap();
    assert_eq!(
        y.to_vec::<f64>().unwrap(),
        vec![(3.0 * 0.5 + 1.0) * 0.5 + 1.0]
    );
    assert_eq!(r.to_vec::<f64>().unwrap(), vec![3.0]);
}

/// The same class with chosen factors, through every kind of reduction
/// kernel (whole tensor, rows, columns, a row kernel with a consumer): 2
/// and 1/2 alternate, so every vector lane (an even stride) multiplies only
/// 2s, past f32's range after 128 of them, or only 1/2s, which underflow,
/// while the f64 product of each row or column is 2, 1 or 1/2
/// (exactly: powers of two), and exactly 0 for the row that holds a 0.
/// (A vectorised product is still not the sequential one where f64 lanes
/// overflow too; the interpreter's sequential f64 order is only matched
/// within f64's range.)
#[test]
fn f32_products_leave_the_f32_range_only_in_f64() {
    use crate::fuzz::check;
    use jitfuse::internals::codegen::Isa;
    let (rows, n) = (5, 2 * 2048 + 37);
    let vals: Vec<f32> = (0..rows * n)
        .map(|i| {
            let (r, j) = (i / n, i % n);
            if r == 3 && j == n - 1 {
                0.0
            } else if i % 2 == 0 {
                2.0
            } else {
                0.5
            }
        })
        .collect();
    let x = Tensor::from_vec(vals, &[rows, n]).unwrap();
    let xt = x.reshape(&[n as isize, rows as isize]);
    for text in [
        "%0 = param 0 : f32[5,4133]\n%1 = reduce_prod[0,1] %0 : f32[]\nreturn %1\n",
        "%0 = param 0 : f32[5,4133]\n%1 = reduce_prod[1] %0 : f32[5]\nreturn %1\n",
        "%0 = param 0 : f32[5,4133]\n%1 = reduce_prod[1] %0 : f32[5]\n%2 = reshape %1 : f32[5,1]\n%3 = broadcast %2 : f32[5,4133]\n%4 = add %0, %3 : f32[5,4133]\nreturn %4\n",
        "%0 = param 0 : f32[4133,5]\n%1 = reduce_prod[0] %0 : f32[5]\nreturn %1\n",
    ] {
        let g = jitfuse::internals::ir::parse(text).unwrap();
        let arg = if text.contains("f32[4133,5]") { &xt } else { &x };
        let want = jitfuse::internals::interpret::eval_graph(&g, std::slice::from_ref(arg), &[]).unwrap();
        let w = want[0].to_vec::<f32>().unwrap();
        assert!(w.iter().all(|v| v.is_finite()), "the f64 products are finite: {w:?}");
        let mut levels = vec![Isa::detected(), Isa::Portable];
        levels.dedup();
        check::check_graph(&g, &[], std::slice::from_ref(arg), &[crate::fuzz::program::Mode::Borrowed], &levels, 1e-3)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
}

/// The interpreter read out of bounds on a graph the verifier rejects (a
/// broadcast of f32[5] to f32[5,4133], misaligned under NumPy's rule): it now
/// verifies first and returns the verifier's error.
#[test]
fn the_interpreter_rejects_a_malformed_graph() {
    let text = "%0 = param 0 : f32[5,7]\n%1 = reduce_sum[1] %0 : f32[5]\n%2 = broadcast %1 : f32[5,7]\nreturn %2\n";
    let g = jitfuse::internals::ir::parse(text).unwrap();
    let x = Tensor::zeros(&[5, 7], DType::F32);
    let e = jitfuse::internals::interpret::eval_graph(&g, &[x], &[]).unwrap_err();
    assert_eq!(e.kind, jitfuse::ErrorKind::Verify, "{e}");
    assert!(
        e.to_string().contains("does not broadcast to f32[5,7]"),
        "{e}"
    );
}
