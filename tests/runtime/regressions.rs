//! Each of these once gave a wrong answer or crashed; each test is the
//! smallest program that showed it.

use crate::fuzz::check_ir;
use crate::fuzz::program::Mode::*;
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

/// A row group whose plan fails on a value other than its seed reduction
/// was excluded by that value, which changed nothing: the partitioner
/// looped forever (the gradient of a sum of a reversed view). Found by the
/// fuzzer.
#[test]
fn a_row_group_that_cannot_be_addressed_is_left_unfused() {
    check_ir(
        r#"
%0 = param 0 : f64[15,7]
%1 = slice[14:-1,0:1] %0 : f64[15,7]
%2 = const 0.5 : f64[15,7]
%3 = mul %1, %2 : f64[15,7]
%4 = reduce_sum[0,1] %3 : f64[]
%5 = const 1.0 : f64[15,7]
%6 = mul %1, %5 : f64[15,7]
%7 = reduce_sum[0,1] %6 : f64[]
%8 = add %4, %7 : f64[]
%9 = const 1.0 : f64[]
%10 = reshape %9 : f64[1,1]
%11 = broadcast %10 : f64[15,7]
%12 = mul %11, %5 : f64[15,7]
%13 = reshape %9 : f64[1,1]
%14 = broadcast %13 : f64[15,7]
%15 = mul %14, %2 : f64[15,7]
%16 = add %12, %15 : f64[15,7]
%17 = slice_scatter[14:-1,0:1] %16 : f64[15,7]
return %8, %17
"#,
        &[Donated],
        1000210,
        1.0,
    );
}

/// A library step read a folded view (a reshape of a parameter, also
/// returned) through the view's own pointer, which no buffer backs: a null
/// pointer read (SIGSEGV). Found by the fuzzer.
#[test]
fn a_library_step_reads_a_view_through_its_root() {
    check_ir(
        r#"
%0 = param 0 : f32[]
%1 = param 1 : f32[]
%2 = reshape %1 : f32[1]
%3 = iota[0] : i64[3]
%4 = const 7 : i64[3]
%5 = mul %3, %4 : i64[3]
%6 = const 1 : i64[3]
%7 = add %5, %6 : i64[3]
%8 = const 1 : i64[3]
%9 = rem %7, %8 : i64[3]
%10 = take[0] %2, %9 : f32[3]
return %10, %2, %0
"#,
        &[Donated, Donated],
        2000015,
        0.01,
    );
}

/// The gradient of a layer norm over rows of one element: a reshape of a
/// reshape back to the kernel's own shape, read in the kernel computing its
/// root, found no access (code generation panicked). Simplification now
/// drops the collapsed identity. Found by the fuzzer.
#[test]
fn a_reshape_round_trip_inside_a_kernel_is_the_value_itself() {
    check_ir(
        r#"
%0 = param 0 : f64[15,1]
%1 = const 2.0 : f64[15,1]
%2 = mul %0, %1 : f64[15,1]
%3 = reshape %2 : f64[15]
%4 = reshape %3 : f64[15,1]
%5 = mul %4, %0 : f64[15,1]
%6 = add %2, %5 : f64[15,1]
return %6
"#,
        &[Borrowed],
        1000494,
        0.01,
    );
}

/// A cheap producer (`max`) was sunk into a consumer kernel that also read
/// it through a folded view (its reverse): the view's root was then
/// computed in that kernel and had no buffer to read (code generation
/// panicked). Found by the fuzzer.
#[test]
fn a_producer_read_through_a_view_is_not_sunk_into_its_reader() {
    check_ir(
        r#"
%0 = param 0 : f32[4]
%1 = param 1 : f32[4]
%2 = max %1, %0 : f32[4]
%3 = slice[3:-1] %2 : f32[4]
%4 = max %3, %2 : f32[4]
return %4
"#,
        &[Borrowed, Borrowed],
        1000827,
        0.01,
    );
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

/// A reduction over the last axis broadcast back along the last axis
/// (NumPy alignment: `out[i, j] = prod[j]`, not the row's own value), read
/// by the same row kernel. Found by the fuzzer.
#[test]
fn a_reduction_broadcast_along_the_reduced_axis_is_not_a_row_value() {
    check_ir(
        r#"
%0 = param 0 : f32[4,4]
%1 = reduce_prod[1] %0 : f32[4]
%2 = abs %0 : f32[4,4]
%3 = const 0.5 : f32[4,4]
%4 = add %2, %3 : f32[4,4]
%5 = broadcast %1 : f32[4,4]
%6 = div %5, %4 : f32[4,4]
return %6
"#,
        &[Borrowed],
        20004697,
        0.01,
    );
}

/// An f32 product whose partial products leave the f32 range: the compiled
/// reduction multiplied f32 lanes, met inf × 0 and returned NaN where the
/// interpreter's f64 product is 0. Found by the fuzzer.
#[test]
fn an_f32_product_of_many_factors_is_not_nan() {
    check_ir(
        r#"
%0 = param 0 : f32[3,17,33]
%1 = reduce_max[0,1,2] %0 : f32[]
%2 = const 0.0 : f32[]
%3 = gt %1, %2 : bool[]
%4 = cond %3, %0 : f32[3,17,33]
  {
    %0 = param 0 : f32[3,17,33]
    %1 = exp %0 : f32[3,17,33]
    %2 = const 1.0 : f32[3,17,33]
    %3 = sub %1, %2 : f32[3,17,33]
    return %3
  }
  {
    %0 = param 0 : f32[3,17,33]
    %1 = const 2.0 : f32[3,17,33]
    %2 = mul %0, %1 : f32[3,17,33]
    %3 = const 1.0 : f32[3,17,33]
    %4 = add %2, %3 : f32[3,17,33]
    return %4
  }
%5 = reduce_prod[0,1,2] %4 : f32[]
return %5
"#,
        &[Borrowed],
        43000970,
        0.01,
    );
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
        let want = jitfuse::internals::interp::eval_graph(&g, std::slice::from_ref(arg), &[]).unwrap();
        let w = want[0].to_vec::<f32>().unwrap();
        assert!(w.iter().all(|v| v.is_finite()), "the f64 products are finite: {w:?}");
        let mut levels = vec![Isa::detected(), Isa::Portable];
        levels.dedup();
        check::check_graph(&g, &[], std::slice::from_ref(arg), &[Borrowed], &levels, 1e-3)
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
    let e = jitfuse::internals::interp::eval_graph(&g, &[x], &[]).unwrap_err();
    assert_eq!(e.kind, jitfuse::ErrorKind::Verify, "{e}");
    assert!(
        e.to_string().contains("does not broadcast to f32[5,7]"),
        "{e}"
    );
}

/// An output that is a reshape of a value another output's kernel also reads: the value
/// was fused into that kernel and never written ("output %2 was never computed"). Found by
/// the fuzzer.
#[test]
fn an_output_reshape_of_a_fused_value_is_written() {
    check_ir(
        r#"
%0 = param 0 : f64[17,5,15]
%1 = param 1 : f64[17,5,15]
%2 = mul %0, %1 : f64[17,5,15]
%3 = reduce_sum[0,1,2] %0 : f64[]
%4 = broadcast %3 : f64[17,5,15]
%5 = add %2, %4 : f64[17,5,15]
%6 = reshape %2 : f64[17,1,5,15]
return %6, %5, %0
"#,
        &[Borrowed, Borrowed],
        4323017649,
        0.1,
    );
}

/// A call whose caller keeps (shares) an argument the plan hosts temporaries in gets
/// stand-in buffers for them: they were the argument's whole size (1 MiB here for 16 KiB
/// of temporaries) and in no report, so the call allocated 2.03 MB where its report
/// allowed 1.10 MB. Now a stand-in is its guests' extent and `kept_argument_bytes` names
/// it; the harness measures every call against its report. Found by the fuzzer.
#[test]
fn a_kept_argument_costs_only_the_temporaries_planned_inside_it() {
    check_ir(
        r#"
%0 = param 0 : f32[64,64,64]
%1 = reduce_sum[1] %0 : f32[64,64]
%2 = reshape %1 : f32[64,1,64]
%3 = const 64.0 : f32[64,1,64]
%4 = div %2, %3 : f32[64,1,64]
%5 = broadcast %4 : f32[64,64,64]
%6 = sub %0, %5 : f32[64,64,64]
%7 = reduce_sum[1] %6 : f32[64,64]
%8 = reshape %7 : f32[64,1,64]
%9 = const 64.0 : f32[64,1,64]
%10 = div %8, %9 : f32[64,1,64]
%11 = add %4, %10 : f32[64,1,64]
return %11
"#,
        &[Donated],
        10000051,
        0.1,
    );
}
