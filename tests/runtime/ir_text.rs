//! The IR text form: print → parse round trips, parse errors, verifier errors.

use crate::common::*;
use jitfuse::internals::ir;
use jitfuse::{DType, Tensor};

#[test]
fn traced_graphs_round_trip_through_text() {
    let mut rng = Rng::new(10);
    for d in [DType::F32, DType::F64, DType::I32, DType::I64] {
        let a = random_tensor(&mut rng, &[3, 1], d, -5.0, 5.0, false);
        let b = random_tensor(&mut rng, &[4], d, -5.0, 5.0, false);
        let args = [a, b];
        let g = trace_fn(&args, |ts| {
            let s = &ts[0] + &ts[1] * 2;
            let c = s.gt(0).logical_and(s.lt(3));
            vec![
                jitfuse::select(&c, &s, 0.1),
                s.cast(DType::F64),
                s.maximum(-1),
                c,
            ]
        });
        let text = g.to_text();
        let back = ir::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back.to_text(), text);
        ir::verify(&back).unwrap();
        assert_eq!(back.nodes.len(), g.nodes.len());
        // The parsed graph computes the same bits (a literal or an operand order the text
        // got wrong both ways would print back the same), and compiles to them.
        let want = jitfuse::internals::interpret::eval_graph(&g, &args, &[]).unwrap();
        let got = jitfuse::internals::interpret::eval_graph(&back, &args, &[]).unwrap();
        for (k, (a, b)) in got.iter().zip(&want).enumerate() {
            assert_close(a, b, EXACT, &format!("parsed {d} output {k}"));
        }
        check_graph(&back, &args, EXACT, &format!("parsed {d}"));
    }
}

#[test]
fn hand_written_text_parses_compiles_and_runs() {
    let text = "
        %x = param 0 : f32[2,3]
        %b = param 1 : f32[3]
        %bb = broadcast %b : f32[2,3]
        %two = const 2.0 : f32[2,3]
        %y = mul %x, %two : f32[2,3]
        %z = add %y, %bb : f32[2,3]   // comments are allowed
        %m = gt %z, %two : bool[2,3]
        return %z, %m
    ";
    let g = ir::parse(text).unwrap();
    assert_eq!(
        g.to_text(),
        "%0 = param 0 : f32[2,3]\n%1 = param 1 : f32[3]\n%2 = broadcast %1 : f32[2,3]\n\
         %3 = const 2.0 : f32[2,3]\n%4 = mul %0, %3 : f32[2,3]\n%5 = add %4, %2 : f32[2,3]\n\
         %6 = gt %5, %3 : bool[2,3]\nreturn %5, %6\n"
    );
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let b = Tensor::vector(&[0.5f32, -10.0, 0.0]);
    check_graph(&g, &[x.clone(), b.clone()], EXACT, "hand written");
    let exe = jitfuse::internals::exec::Executable::from_graph(g, vec![]).unwrap();
    let out = exe.run_with(&[&x, &b]).unwrap();
    assert_eq!(
        out[0].to_vec::<f32>().unwrap(),
        vec![2.5, -6.0, 6.0, 8.5, 0.0, 12.0]
    );
    assert_eq!(
        out[1].to_vec::<bool>().unwrap(),
        vec![true, false, true, true, false, true]
    );
}

#[test]
fn literals_round_trip_exactly() {
    for v in [
        0.1f64,
        -0.0,
        1e-300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        123456789.125,
        f64::MIN_POSITIVE,
    ] {
        let text = format!(
            "%0 = const {} : f64[]\nreturn %0\n",
            ir::literal_text(jitfuse::Literal::Float(v))
        );
        let g = ir::parse(&text).unwrap();
        assert_eq!(g.to_text(), text);
        // The value parsed, not only its text.
        match &g.nodes[0].op {
            ir::Op::Const(jitfuse::Literal::Float(p)) => {
                assert_eq!(p.to_bits(), v.to_bits(), "{v:e} parsed as {p:e}")
            }
            op => panic!("{v:e} parsed as {op:?}"),
        }
    }
    let g = ir::parse("%0 = const NaN : f32[]\n%1 = const -7 : i64[2]\n%2 = const true : bool[]\nreturn %0, %1, %2").unwrap();
    assert_eq!(g.to_text(), "%0 = const NaN : f32[]\n%1 = const -7 : i64[2]\n%2 = const true : bool[]\nreturn %0, %1, %2\n");
}

#[test]
fn parse_errors_name_the_line_and_problem() {
    let cases = [
        (
            "%0 = param 0 : f32[2]\n%1 = frob %0 : f32[2]\nreturn %1",
            "line 2: unknown op `frob`",
        ),
        (
            "%0 = param 0 : f32[2]\nreturn %9",
            "line 2: `%9` is used before it is defined",
        ),
        (
            "%0 = param 0 : f33[2]\nreturn %0",
            "line 1: unknown dtype `f33`",
        ),
        ("%0 = param 0 : f32[2]", "missing `return`"),
        (
            "%0 = param 0\nreturn %0",
            "line 1: missing `: dtype[shape]`",
        ),
        (
            "%0 = param 0 : f32[2]\n%0 = neg %0 : f32[2]\nreturn %0",
            "line 2: `%0` is defined twice",
        ),
    ];
    for (text, want) in cases {
        let e = ir::parse(text).unwrap_err().to_string();
        assert!(e.contains(want), "{e:?} should contain {want:?}");
    }
}

#[test]
fn verifier_rejects_broken_graphs() {
    let cases = [
        (
            "%0 = param 0 : f32[2]\n%1 = param 0 : f32[2]\nreturn %1",
            "parameters must be numbered in order",
        ),
        (
            "%0 = param 0 : f32[2]\n%1 = param 1 : f32[3]\n%2 = add %0, %1 : f32[2]\nreturn %2",
            "elementwise operand f32[3]",
        ),
        (
            "%0 = param 0 : f32[2]\n%1 = param 1 : f64[2]\n%2 = add %0, %1 : f32[2]\nreturn %2",
            "bad dtypes f32, f64 -> f32",
        ),
        (
            "%0 = param 0 : i32[2]\n%1 = exp %0 : i32[2]\nreturn %1",
            "bad dtypes i32 -> i32",
        ),
        (
            "%0 = param 0 : f32[3]\n%1 = broadcast %0 : f32[2,4]\nreturn %1",
            "does not broadcast to f32[2,4]",
        ),
        (
            "%0 = param 0 : f32[2]\n%1 = gt %0, %0 : f32[2]\nreturn %1",
            "bad dtypes",
        ),
        (
            "%0 = param 0 : f32[2]\n%1 = select %0, %0, %0 : f32[2]\nreturn %1",
            "bad dtypes",
        ),
        (
            "%0 = param 0 : f32[2]\n%1 = cast %0 : i32[2]\n%2 = add %0 : f32[2]\nreturn %2",
            "expects 2 operands",
        ),
    ];
    for (text, want) in cases {
        let g = ir::parse(text).unwrap();
        let e = ir::verify(&g).unwrap_err().to_string();
        assert!(e.contains(want), "{e:?} should contain {want:?}");
    }
}

/// A fused attention with a finite fill (as the pattern fusion writes it from
/// `where_(mask, s, -1e9)`) prints its fill, parses back to the same graph and computes
/// the same bits in the interpreter, forward and gradient.
#[test]
fn attention_with_a_fill_round_trips_through_text() {
    let mut rng = Rng::new(11);
    let t = |rng: &mut Rng, s: &[usize]| random_tensor(rng, s, DType::F32, -1.0, 1.0, false);
    let args = [
        t(&mut rng, &[2, 9, 4]),
        t(&mut rng, &[2, 11, 4]),
        t(&mut rng, &[2, 11, 3]),
    ];
    let attn = |x: &[Tensor]| {
        // Made inside the trace: an iota comparison, recognised as causal.
        let row = Tensor::iota(&[9, 1], 0, DType::I32);
        let col = Tensor::iota(&[1, 11], 1, DType::I32);
        let s = x[0].matmul(&x[1].transpose(&[0, 2, 1])) * 0.5;
        jitfuse::where_(&col.le(&row), &s, f32::MIN as f64)
            .softmax(-1)
            .matmul(&x[2])
    };
    // The gradient traced with pattern fusion on is `attention_grad`.
    let g = trace_fn(&args, |x| {
        let grads = jitfuse::grad(
            |y: &Vec<Tensor>| attn(y).square().sum_all(),
            &vec![x[0].clone(), x[1].clone(), x[2].clone()],
        );
        let mut out = vec![attn(x)];
        out.extend(grads);
        out
    });
    let g = jitfuse::internals::passes::fuse_attention(&g);
    let text = g.to_text();
    assert!(
        text.contains("attention[causal,0.5,fill=-3.4028234663852886e38]")
            && text.contains("attention_grad[causal,0.5,fill=-3.4028234663852886e38]"),
        "{text}"
    );
    let back = ir::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back.to_text(), text);
    ir::verify(&back).unwrap();
    let want = jitfuse::internals::interpret::eval_graph(&g, &args, &[]).unwrap();
    let got = jitfuse::internals::interpret::eval_graph(&back, &args, &[]).unwrap();
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        assert_close(a, b, EXACT, &format!("parsed attention output {k}"));
    }
}
