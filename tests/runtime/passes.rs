//! Passes and fusion decisions as text in → text out. Snapshots are
//! `expect_test` literals: run with `UPDATE_EXPECT=1` to rewrite them after a
//! deliberate change, then read the diff.

use crate::common::{assert_close, check_graph_with, random_tensor, trace_fn, Rng, Tol, EXACT};
use expect_test::{expect, Expect};
use jitfuse::internals::exec::CompileOptions;
use jitfuse::internals::exec::Executable;
use jitfuse::internals::interpret;
use jitfuse::internals::ir::{self, Graph, Op};
use jitfuse::{DType, Tensor};

/// Random arguments for the parameters of `g` (varied values, so that a rewrite that
/// changes any element's value shows).
fn random_args(g: &Graph, seed: u64) -> Vec<Tensor> {
    let mut rng = Rng::new(seed);
    let mut params: Vec<(usize, Tensor)> = g
        .nodes
        .iter()
        .filter_map(|n| match n.op {
            Op::Param(i) => Some((
                i,
                random_tensor(&mut rng, &n.shape, n.dtype, -3.0, 3.0, false),
            )),
            _ => None,
        })
        .collect();
    params.sort_by_key(|p| p.0);
    params.into_iter().map(|p| p.1).collect()
}

fn check_simplify(input: &str, want: Expect) {
    let g = ir::parse(input).unwrap();
    ir::verify(&g).unwrap();
    let s = jitfuse::internals::passes::simplify(&g);
    ir::verify(&s).unwrap_or_else(|e| panic!("{e}\n{s}"));
    want.assert_eq(&s.to_text());
    // The rewrites are exact identities: the simplified graph gives the original's bits
    // (several draws, so that a bool parameter takes both values), compiled too.
    for seed in 0..4 {
        let args = random_args(&g, seed);
        let before = interpret::eval_graph(&g, &args, &[]).unwrap();
        let after = interpret::eval_graph(&s, &args, &[]).unwrap();
        assert_eq!(before.len(), after.len());
        for (k, (a, b)) in after.iter().zip(&before).enumerate() {
            assert_close(
                a,
                b,
                EXACT,
                &format!("simplified output {k}, seed {seed}\n{s}"),
            );
        }
        // Compiled, the transcendentals are approximations (a few ulp; nothing here cancels).
        check_graph_with(&g, &args, &format!("compiled, seed {seed}"), |_, want| {
            if want.dtype().is_float() {
                Tol::rel(want.dtype(), 4e-6)
            } else {
                EXACT
            }
        });
    }
}

#[test]
fn simplify_folds_constants_and_removes_dead_code() {
    check_simplify(
        "%x = param 0 : f32[4]
         %a = const 2.0 : f32[4]
         %b = const 3.0 : f32[4]
         %c = mul %a, %b : f32[4]
         %dead = exp %x : f32[4]
         %y = add %x, %c : f32[4]
         %i = const 7 : i32[4]
         %f = cast %i : f32[4]
         %z = mul %y, %f : f32[4]
         return %z",
        expect![[r#"
            %0 = param 0 : f32[4]
            %1 = const 6.0 : f32[4]
            %2 = add %0, %1 : f32[4]
            %3 = const 7.0 : f32[4]
            %4 = mul %2, %3 : f32[4]
            return %4
        "#]],
    );
}

#[test]
fn simplify_eliminates_common_subexpressions_and_exact_identities() {
    check_simplify(
        "%x = param 0 : f32[2,3]
         %unused = param 1 : f32[]
         %one = const 1.0 : f32[2,3]
         %zero = const 0.0 : f32[2,3]
         %negzero = const -0.0 : f32[2,3]
         %a = mul %x, %one : f32[2,3]
         %b = sub %a, %zero : f32[2,3]
         %c = add %b, %negzero : f32[2,3]
         %keep = add %x, %zero : f32[2,3]
         %e1 = exp %c : f32[2,3]
         %e2 = exp %x : f32[2,3]
         %n = neg %e1 : f32[2,3]
         %nn = neg %n : f32[2,3]
         %s = add %nn, %e2 : f32[2,3]
         %r = reshape %s : f32[2,3]
         %t = transpose[0,1] %r : f32[2,3]
         %m = gt %t, %keep : bool[2,3]
         %sel = select %m, %t, %t : f32[2,3]
         return %sel, %keep",
        expect![[r#"
            %0 = param 0 : f32[2,3]
            %1 = param 1 : f32[]
            %2 = const 0.0 : f32[2,3]
            %3 = add %0, %2 : f32[2,3]
            %4 = exp %0 : f32[2,3]
            %5 = add %4, %4 : f32[2,3]
            return %5, %3
        "#]],
    );
}

#[test]
fn simplify_keeps_integer_semantics_and_collapses_reshapes() {
    check_simplify(
        "%x = param 0 : i32[6]
         %z = const 0 : i32[6]
         %a = add %x, %z : i32[6]
         %r1 = reshape %a : i32[2,3]
         %r2 = reshape %r1 : i32[3,2]
         %d = const 0 : i32[3,2]
         %q = div %r2, %d : i32[3,2]
         return %r2, %q",
        expect![[r#"
            %0 = param 0 : i32[6]
            %1 = reshape %0 : i32[3,2]
            %2 = const 0 : i32[3,2]
            %3 = div %1, %2 : i32[3,2]
            return %1, %3
        "#]],
    );
}

/// The fusion decision for a traced function: the optimised graph's kernels. The fused
/// program is run on `args` too, against the interpreter (`tol` of each output, from the
/// interpreter's result).
fn fusion_text(
    args: &[Tensor],
    f: impl FnOnce(&[Tensor]) -> Vec<Tensor>,
    tol: impl Fn(&Tensor) -> Tol,
) -> (String, Executable) {
    let g = trace_fn(args, f);
    let want = interpret::eval_graph(&g, args, &[]).unwrap();
    let exe = Executable::from_graph(g, vec![]).unwrap();
    let refs: Vec<&Tensor> = args.iter().collect();
    let got = exe.run_with(&refs).unwrap();
    assert_eq!(got.len(), want.len());
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        assert_close(a, b, tol(b), &format!("fused output {k}"));
    }
    (exe.kernels_text(), exe)
}

/// A random f32 argument of `shape` (seeded by its position).
fn arg(shape: &[usize], seed: u64) -> Tensor {
    random_tensor(&mut Rng::new(seed), shape, DType::F32, -3.0, 3.0, false)
}

/// Normwise: for fused results that cancel (`1 + tanh`, centred rows, sums).
fn normwise(want: &Tensor) -> Tol {
    Tol {
        rel: 1e-5,
        abs: 1e-6,
    }
    .normwise(want)
}

#[test]
fn fusion_gelu_is_one_kernel() {
    let x = arg(&[1024], 1);
    let (text, exe) = fusion_text(&[x], |ts| vec![ts[0].gelu()], normwise);
    expect![[r#"
        step 0: kernel over [1024] reads (%0) writes (%13)
          %2 = mul %1, %0 : f32[1024]
          %4 = mul %3, %0 : f32[1024]
          %5 = mul %4, %0 : f32[1024]
          %6 = mul %5, %0 : f32[1024]
          %7 = add %0, %6 : f32[1024]
          %9 = mul %8, %7 : f32[1024]
          %10 = tanh %9 : f32[1024]
          %12 = add %11, %10 : f32[1024]
          %13 = mul %2, %12 : f32[1024]
    "#]]
    .assert_eq(&text);
    assert_eq!(exe.memory_analysis().temp_bytes, 0);
}

/// FIXME: a node whose loop kernel of its shape began before a smaller value it reads
/// (computed later, broadcast) starts a kernel of its own, and the first kernel's value is
/// materialised for it: `(x*c).maximum(c*0.5) - 1` is three kernels with `x*c` in a
/// buffer, where two would do. Moving the first kernel after the small value's step (when
/// no step between reads it) makes it two, and cut the random elementwise corpus's kernels
/// (5 -> 3 at most) and the GPT step's temporaries (25.4 -> 21.0 MiB), but it lengthens
/// the moved kernel's operands' lives: the attention composition's gradient planned 128 MiB
/// instead of 96 and its forward ran 1.26x as long (2-core Zen 5, 2026-12-05). The move
/// wants the planned peak to decide it.
#[test]
fn fusion_waits_for_a_broadcast_value_computed_later() {
    let (x, c) = (arg(&[64, 256], 3), arg(&[64, 1], 4));
    let (text, exe) = fusion_text(
        &[x, c],
        |ts| vec![(&ts[0] * &ts[1]).maximum(&(&ts[1] * 0.5)) - 1.0],
        normwise,
    );
    expect![[r#"
        step 0: kernel over [64, 256] reads (%0, %1) writes (%3)
          %3 = mul %0, %2 : f32[64,256]
        step 1: kernel over [64, 1] reads (%1) writes (%5)
          %5 = mul %1, %4 : f32[64,1]
        step 2: kernel over [64, 256] reads (%3, %5) writes (%9)
          %7 = max %3, %6 : f32[64,256]
          %9 = sub %7, %8 : f32[64,256]
    "#]]
    .assert_eq(&text);
    assert_eq!(exe.memory_analysis().temp_bytes, 64 * 256 * 4 + 64 * 4);
}

#[test]
fn fusion_softmax_is_one_row_kernel() {
    let x = arg(&[8, 16], 2);
    // Softmax does not cancel: relative, down to its smallest elements.
    let (text, exe) = fusion_text(
        &[x],
        |ts| vec![ts[0].softmax(-1)],
        |_| Tol::rel(DType::F32, 1e-5),
    );
    expect![[r#"
        step 0: row kernel over rows [8] x [16] reads (%0) writes (%9)
          %1 = reduce_max[1] %0 : f32[8]
          %2 = reshape %1 : f32[8,1]
          %3 = broadcast %2 : f32[8,16]
          %4 = sub %0, %3 : f32[8,16]
          %5 = exp %4 : f32[8,16]
          %6 = reduce_sum[1] %5 : f32[8]
          %7 = reshape %6 : f32[8,1]
          %8 = broadcast %7 : f32[8,16]
          %9 = div %5, %8 : f32[8,16]
    "#]]
    .assert_eq(&text);
    assert_eq!(exe.memory_analysis().temp_bytes, 0);
}

#[test]
fn fusion_layer_norm_is_one_row_kernel() {
    let (x, g, b) = (arg(&[8, 16], 3), arg(&[16], 4), arg(&[16], 5));
    let (text, exe) = fusion_text(
        &[x, g, b],
        |ts| vec![ts[0].layer_norm(&ts[1], &ts[2], 1e-5, -1)],
        normwise,
    );
    expect![[r#"
        step 0: row kernel over rows [8] x [16] reads (%0, %1, %2) writes (%30)
          %3 = reduce_sum[1] %0 : f32[8]
          %4 = reshape %3 : f32[8,1]
          %6 = div %4, %5 : f32[8,1]
          %7 = broadcast %6 : f32[8,16]
          %8 = sub %0, %7 : f32[8,16]
          %9 = reduce_sum[1] %8 : f32[8]
          %10 = reshape %9 : f32[8,1]
          %11 = div %10, %5 : f32[8,1]
          %12 = square %8 : f32[8,16]
          %13 = reduce_sum[1] %12 : f32[8]
          %14 = reshape %13 : f32[8,1]
          %15 = div %14, %5 : f32[8,1]
          %16 = square %11 : f32[8,1]
          %17 = sub %15, %16 : f32[8,1]
          %19 = max %17, %18 : f32[8,1]
          %20 = broadcast %11 : f32[8,16]
          %21 = sub %8, %20 : f32[8,16]
          %23 = add %19, %22 : f32[8,1]
          %24 = rsqrt %23 : f32[8,1]
          %25 = broadcast %24 : f32[8,16]
          %26 = mul %21, %25 : f32[8,16]
          %28 = mul %26, %27 : f32[8,16]
          %30 = add %28, %29 : f32[8,16]
    "#]]
    .assert_eq(&text);
    assert_eq!(exe.memory_analysis().temp_bytes, 0);
}

#[test]
fn fusion_mlp_forward() {
    let x = arg(&[16, 32], 6);
    let w1 = arg(&[32, 8], 7);
    let b1 = arg(&[8], 8);
    let w2 = arg(&[8, 4], 9);
    let b2 = arg(&[4], 10);
    let y = Tensor::from_vec((0..16i32).map(|i| i * 3 % 4).collect(), &[16])
        .unwrap()
        .one_hot(4);
    let (text, _) = fusion_text(
        &[x, w1, b1, w2, b2, y],
        |ts| {
            let h = (ts[0].matmul(&ts[1]) + &ts[2]).relu();
            vec![jitfuse::softmax_cross_entropy(
                &(h.matmul(&ts[3]) + &ts[4]),
                &ts[5],
            )]
        },
        normwise,
    );
    expect![[r#"
        step 0: library %6 = matmul %0, %1 : f32[16,8]
        step 1: kernel over [16, 8] reads (%6, %2) writes (%9)
          %8 = add %6, %7 : f32[16,8]
          %9 = relu %8 : f32[16,8]
        step 2: library %10 = matmul %9, %3 : f32[16,4]
        step 3: row kernel over rows [16] x [4] reads (%10, %4) writes (%12, %13)
          %12 = add %10, %11 : f32[16,4]
          %13 = reduce_max[1] %12 : f32[16]
        step 4: row kernel over rows [16] x [4] reads (%12, %13) writes (%16, %18)
          %16 = sub %12, %15 : f32[16,4]
          %17 = exp %16 : f32[16,4]
          %18 = reduce_sum[1] %17 : f32[16]
        step 5: kernel over [16, 1] reads (%18) writes (%20)
          %20 = ln %19 : f32[16,1]
        step 6: row kernel over rows [16] x [4] reads (%16, %20, %5) writes (%24)
          %22 = sub %16, %21 : f32[16,4]
          %23 = mul %5, %22 : f32[16,4]
          %24 = reduce_sum[1] %23 : f32[16]
        step 7: row kernel over rows [] x [16] reads (%24) writes (%36)
          %25 = neg %24 : f32[16]
          %26 = reduce_sum[0] %25 : f32[]
          %27 = reshape %26 : f32[1]
          %29 = div %27, %28 : f32[1]
          %30 = broadcast %29 : f32[16]
          %31 = sub %25, %30 : f32[16]
          %32 = reduce_sum[0] %31 : f32[]
          %34 = div %32, %33 : f32[]
          %35 = reshape %29 : f32[]
          %36 = add %35, %34 : f32[]
    "#]]
    .assert_eq(&text);
}

#[test]
fn fusion_chain_of_twenty_elementwise_ops_is_one_kernel_without_temporaries() {
    let (x, y) = (arg(&[4096], 11), arg(&[4096], 12));
    let (text, exe) = fusion_text(
        &[x, y],
        |ts| {
            let (x, y) = (&ts[0], &ts[1]);
            let mut h = x.clone();
            for k in 0..20 {
                h = match k % 4 {
                    0 => &h * y,
                    1 => &h + x,
                    2 => h.tanh(),
                    _ => &h - y,
                };
            }
            vec![h]
        },
        normwise,
    );
    assert_eq!(exe.step_count(), 1, "{text}");
    assert_eq!(text.lines().count(), 21, "{text}");
    assert_eq!(exe.memory_analysis().temp_bytes, 0);
}

#[test]
fn simplify_inlines_a_cond_on_a_constant_and_simplifies_sub_graphs() {
    check_simplify(
        "%x = param 0 : f32[4]
         %p = const true : bool[]
         %c = cond %p, %x : f32[4]
           {
             %a = param 0 : f32[4]
             %n = neg %a : f32[4]
             return %n, %a
           }
           {
             %a = param 0 : f32[4]
             %one = const 1.0 : f32[4]
             %m = mul %a, %one : f32[4]
             %e = exp %m : f32[4]
             return %e, %m
           }
         %g = get[1] %c : f32[4]
         %q = param 1 : bool[]
         %d = cond %q, %g : f32[4]
           {
             %a = param 0 : f32[4]
             %n = neg %a : f32[4]
             %nn = neg %n : f32[4]
             return %nn
           }
           {
             %a = param 0 : f32[4]
             %s = sqrt %a : f32[4]
             return %s
           }
         %y = add %c, %d : f32[4]
         return %y",
        expect![[r#"
            %0 = param 0 : f32[4]
            %1 = exp %0 : f32[4]
            %2 = param 1 : bool[]
            %3 = cond %2, %0 : f32[4]
              {
                %0 = param 0 : f32[4]
                return %0
              }
              {
                %0 = param 0 : f32[4]
                %1 = sqrt %0 : f32[4]
                return %1
              }
            %4 = add %1, %3 : f32[4]
            return %4
        "#]],
    );
}

/// The steps of a graph in trace order and after `passes::step_order` (as the
/// compiler runs them), and the arena lower bound of each order's plan.
fn check_schedule(input: &str, before: Expect, after: Expect) -> (usize, usize) {
    use jitfuse::internals::{fusion::partition, plan};
    let g = ir::parse(input).unwrap();
    ir::verify(&g).unwrap();
    let bound =
        |p: &partition::Partition| plan::plan(&g, p, &[], &|_, _, _| false).lower_bound_bytes;
    let part = jitfuse::internals::describe::partition(&g);
    let trace_text = partition::steps_text(&g, &part);
    before.assert_eq(&trace_text);
    let trace_bound = bound(&part);
    let steps = part.steps.len();
    let (scheduled, order) =
        jitfuse::internals::passes::step_order::schedule(&g, part, &|p, _| bound(p));
    // The order says where each scheduled step came from.
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(sorted, (0..steps).collect::<Vec<_>>());
    let deps = jitfuse::internals::passes::step_order::steps_deps(&g, &scheduled);
    let in_order: Vec<usize> = (0..deps.len()).collect();
    assert!(jitfuse::internals::passes::step_order::is_valid(
        &deps, &in_order
    ));
    // The compiler picks the same order (its cost is the planned peak).
    let exe = Executable::from_graph(g.clone(), vec![]).unwrap();
    after.assert_eq(&exe.kernels_text());
    assert_eq!(exe.kernels_text(), partition::steps_text(&g, &scheduled));
    // A target asking for trace order (`JITFUSE_SCHEDULE=trace`, read into the host target
    // once) keeps it.
    let in_trace_order = jitfuse::internals::codegen::Target {
        trace_order: true,
        ..jitfuse::internals::codegen::Target::host().clone()
    };
    let kinds = vec![jitfuse::jit::ArgKind::Borrowed; g.params().len()];
    let traced_order = Executable::from_graph_with(
        g.clone(),
        vec![],
        Some(&kinds),
        &CompileOptions::at(&in_trace_order),
    )
    .unwrap();
    assert_eq!(traced_order.kernels_text(), trace_text);
    // And the reordered program computes the graph (a step run before its inputs are
    // written, or a buffer reused while still live, would not).
    let args: Vec<Tensor> = random_args(&g, 1).into_iter().map(|t| &t * 0.1).collect();
    let want = interpret::eval_graph(&g, &args, &[]).unwrap();
    let refs: Vec<&Tensor> = args.iter().collect();
    let got = exe.run_with(&refs).unwrap();
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        assert_close(a, b, normwise(b), &format!("scheduled output {k}"));
    }
    (trace_bound, bound(&scheduled))
}

#[test]
fn schedule_finishes_one_chain_before_starting_the_other() {
    // Two independent expand-then-shrink chains traced side by side: in
    // trace order both wide intermediates are live at once.
    let (trace, sched) = check_schedule(
        "%x = param 0 : f32[64,64]
         %y = param 1 : f32[64,64]
         %w = param 2 : f32[64,256]
         %v = param 3 : f32[256,4]
         %u = param 4 : f32[64,192]
         %z = param 5 : f32[192,4]
         %a1 = matmul %x, %w : f32[64,256]
         %b1 = matmul %y, %u : f32[64,192]
         %ta = tanh %a1 : f32[64,256]
         %tb = exp %b1 : f32[64,192]
         %a2 = matmul %ta, %v : f32[64,4]
         %b2 = matmul %tb, %z : f32[64,4]
         %s = add %a2, %b2 : f32[64,4]
         return %s",
        expect![[r#"
            step 0: library %6 = matmul %0, %2 : f32[64,256]
            step 1: library %7 = matmul %1, %4 : f32[64,192]
            step 2: kernel over [64, 256] reads (%6) writes (%8)
              %8 = tanh %6 : f32[64,256]
            step 3: kernel over [64, 192] reads (%7) writes (%9)
              %9 = exp %7 : f32[64,192]
            step 4: library %10 = matmul %8, %3 : f32[64,4]
            step 5: library %11 = matmul %9, %5 : f32[64,4]
            step 6: kernel over [64, 4] reads (%10, %11) writes (%12)
              %12 = add %10, %11 : f32[64,4]
        "#]],
        expect![[r#"
            step 0: library %6 = matmul %0, %2 : f32[64,256]
            step 1: kernel over [64, 256] reads (%6) writes (%8)
              %8 = tanh %6 : f32[64,256]
            step 2: library %10 = matmul %8, %3 : f32[64,4]
            step 3: library %7 = matmul %1, %4 : f32[64,192]
            step 4: kernel over [64, 192] reads (%7) writes (%9)
              %9 = exp %7 : f32[64,192]
            step 5: library %11 = matmul %9, %5 : f32[64,4]
            step 6: kernel over [64, 4] reads (%10, %11) writes (%12)
              %12 = add %10, %11 : f32[64,4]
        "#]],
    );
    // Trace order: %6, %7 and %8 live at step 2; scheduled: %6 and %8.
    assert_eq!((trace, sched), (180_224, 131_072));
}

#[jitfuse::jit]
fn sin_chain_grad(x: &Tensor, n: usize) -> Tensor {
    jitfuse::grad(
        |x: &Tensor| {
            let mut y = x.clone();
            for _ in 0..n {
                y = (&y * 0.999).sin();
            }
            y.sum_all()
        },
        x,
    )
}

/// Compile work grows linearly with a deep chain (counted, not timed): the
/// fused forward and backward of n layers is cut into kernels of at most
/// `MAX_KERNEL_NODES` nodes, so steps grow as n while the distinct
/// functions codegen builds stay as many (the cut kernels are alike); one
/// kernel of every layer would be superlinear in the register allocator.
#[test]
fn a_deep_chain_gradient_compiles_bounded_kernels_linear_in_its_depth() {
    let x = Tensor::from_vec((0..256).map(|i| i as f32 / 256.0).collect(), &[256]).unwrap();
    let at = |n: usize| {
        let c = sin_chain_grad::lower(&x, n).unwrap().compile().unwrap();
        let exe = c.executable().clone();
        let text = c.kernels_text();
        // Nodes per kernel: the lines under each "step k: kernel" header.
        let mut sizes = vec![];
        for l in text.lines() {
            if l.starts_with("step ") {
                sizes.push(0usize);
            } else if let Some(s) = sizes.last_mut() {
                *s += 1;
            }
        }
        (
            exe.step_count(),
            exe.function_count(),
            sizes.into_iter().max().unwrap(),
        )
    };
    let (s1, f1, big1) = at(100);
    let (s4, f4, big4) = at(400);
    let cap = jitfuse::internals::fusion::partition::MAX_KERNEL_NODES;
    assert!(
        big1 <= cap && big4 <= cap,
        "kernels of {big1}, {big4} nodes"
    );
    assert!(s4 >= 3 * s1 && s4 <= 5 * s1, "steps {s1} -> {s4}");
    assert!(f4 <= f1 + 2, "distinct functions {f1} -> {f4}");
    // The gradient is still the chain rule's, computed in f64: relative (every factor
    // is positive), where an absolute 1e-4 was 1% of the smallest gradients.
    let got = sin_chain_grad(&x, 400);
    let mut want = vec![];
    for v in x.to_vec::<f32>().unwrap() {
        let (mut y, mut d) = (v as f64, 1.0f64);
        for _ in 0..400 {
            d *= (0.999 * y).cos() * 0.999;
            y = (0.999 * y).sin();
        }
        want.push(d);
    }
    for (g, w) in got.to_vec::<f32>().unwrap().iter().zip(&want) {
        assert!((*g as f64 - w).abs() <= 5e-5 * w.abs(), "{g} vs {w}");
    }
}

/// The description checker (`describe::check`) accepts the descriptions of a program with a
/// loop kernel, a row kernel and a reduction, and rejects each way of breaking them: an access
/// past its buffer, an output written from an offset (past its end), to one element, or to
/// every other element, a row access past its buffer, a reduction reading past its input.
#[test]
fn the_description_checker_rejects_accesses_outside_their_buffers() {
    use jitfuse::internals::describe::{self, Description};
    let x = random_tensor(&mut Rng::new(7), &[6, 40], DType::F32, -1.0, 1.0, false);
    let g = trace_fn(std::slice::from_ref(&x), |ts| {
        let y = (&ts[0] * 2.0).exp();
        vec![y.softmax(-1), y.sum(0), &y + 1.0]
    });
    let part = describe::partition(&g);
    let good = || describe::describe(&g, &part);
    describe::check(&g, &part, &good()).unwrap();
    let kinds: Vec<&str> = good()
        .iter()
        .map(|d| match d {
            Description::Loop(_) => "loop",
            Description::Row(_) => "row",
            Description::Reduce(_) => "reduce",
            Description::Library => "library",
        })
        .collect();
    for kind in ["loop", "row", "reduce"] {
        assert!(kinds.contains(&kind), "no {kind} step in {kinds:?}");
    }
    let broken = |what: &str, f: &dyn Fn(&mut Description) -> bool| {
        let mut d = good();
        assert!(d.iter_mut().any(f), "{what}: nothing to break");
        let e = describe::check(&g, &part, &d).expect_err(what);
        eprintln!("{what}: {e}");
        e
    };
    let e = broken("a read past its buffer", &|d| match d {
        Description::Loop(p) => {
            let last = p.accesses[0].strides.len() - 1;
            p.accesses[0].strides[last] *= 2;
            true
        }
        _ => false,
    });
    assert!(e.contains("elements"), "{e}");
    let e = broken("an output from an offset", &|d| match d {
        Description::Loop(p) => {
            let o = p.outs[0];
            p.accesses[o].offset = 1;
            true
        }
        _ => false,
    });
    assert!(e.contains("elements 1..=6"), "{e}");
    let e = broken("an output written to one element", &|d| match d {
        Description::Loop(p) => {
            let o = p.outs[0];
            p.accesses[o].strides.iter_mut().for_each(|s| *s = 0);
            true
        }
        _ => false,
    });
    assert!(e.contains("output 0") && e.contains("dense"), "{e}");
    let e = broken("a strided output", &|d| match d {
        Description::Loop(p) if p.dims.len() == 1 => {
            let o = p.outs[0];
            p.accesses[o].strides[0] = 2;
            p.dims[0] /= 2;
            true
        }
        _ => false,
    });
    assert!(e.contains("output 0"), "{e}");
    let e = broken("a row access past its buffer", &|d| match d {
        Description::Row(p) => {
            p.accesses[0].offset += p.n as i64;
            true
        }
        _ => false,
    });
    assert!(e.contains("row access 0"), "{e}");
    let e = broken("a reduction past its input", &|d| match d {
        Description::Reduce(r) => {
            r.offset = 1;
            true
        }
        _ => false,
    });
    assert!(e.contains("reduction input"), "{e}");
}

/// `short_axis::split` then `simplify`: the lanes of `d = p[None] - p[:, None]` read
/// from `p`, the sum over them a chain of adds, the sum over the second axis one
/// reduction per lane; the same values in the interpreter.
#[test]
fn short_axis_splits_reductions_into_lanes() {
    let g = ir::parse(
        "%p = param 0 : f32[4,3]
         %a = reshape %p : f32[1,4,3]
         %b = reshape %p : f32[4,1,3]
         %ab = broadcast %a : f32[4,4,3]
         %bb = broadcast %b : f32[4,4,3]
         %d = sub %ab, %bb : f32[4,4,3]
         %d2 = mul %d, %d : f32[4,4,3]
         %r2 = reduce_sum[2] %d2 : f32[4,4]
         %r = reshape %r2 : f32[4,4,1]
         %rb = broadcast %r : f32[4,4,3]
         %f = mul %d, %rb : f32[4,4,3]
         %s = reduce_sum[1] %f : f32[4,3]
         return %s",
    )
    .unwrap();
    ir::verify(&g).unwrap();
    let split = jitfuse::internals::passes::short_axis::split(&g).expect("splits");
    let s = jitfuse::internals::passes::simplify(&split);
    ir::verify(&s).unwrap_or_else(|e| panic!("{e}\n{s}"));
    expect![[r#"
        %0 = param 0 : f32[4,3]
        %1 = slice[0:1,0:1] %0 : f32[4,1]
        %2 = reshape %1 : f32[1,4]
        %3 = broadcast %2 : f32[4,4]
        %4 = broadcast %1 : f32[4,4]
        %5 = sub %3, %4 : f32[4,4]
        %6 = mul %5, %5 : f32[4,4]
        %7 = slice[0:1,1:1] %0 : f32[4,1]
        %8 = reshape %7 : f32[1,4]
        %9 = broadcast %8 : f32[4,4]
        %10 = broadcast %7 : f32[4,4]
        %11 = sub %9, %10 : f32[4,4]
        %12 = mul %11, %11 : f32[4,4]
        %13 = slice[0:1,2:1] %0 : f32[4,1]
        %14 = reshape %13 : f32[1,4]
        %15 = broadcast %14 : f32[4,4]
        %16 = broadcast %13 : f32[4,4]
        %17 = sub %15, %16 : f32[4,4]
        %18 = mul %17, %17 : f32[4,4]
        %19 = add %6, %12 : f32[4,4]
        %20 = add %19, %18 : f32[4,4]
        %21 = mul %5, %20 : f32[4,4]
        %22 = mul %11, %20 : f32[4,4]
        %23 = mul %17, %20 : f32[4,4]
        %24 = reduce_sum[1] %21 : f32[4]
        %25 = reshape %24 : f32[4,1]
        %26 = reduce_sum[1] %22 : f32[4]
        %27 = reshape %26 : f32[4,1]
        %28 = reduce_sum[1] %23 : f32[4]
        %29 = reshape %28 : f32[4,1]
        %30 = concat[1] %25, %27, %29 : f32[4,3]
        return %30
    "#]]
    .assert_eq(&s.to_text());
    // (The split graph's text parses back to it.)
    assert_eq!(ir::parse(&s.to_text()).unwrap().to_text(), s.to_text());
    let args = random_args(&g, 3);
    let before = interpret::eval_graph(&g, &args, &[]).unwrap();
    let after = interpret::eval_graph(&s, &args, &[]).unwrap();
    assert_close(
        &after[0],
        &before[0],
        Tol::rel(DType::F32, 1e-5).normwise(&before[0]),
        "split",
    );
    // A reduction of rows read from memory is left whole.
    let g = ir::parse(
        "%x = param 0 : f32[8,3]
         %y = exp %x : f32[8,3]
         %s = reduce_sum[1] %y : f32[8]
         return %s",
    )
    .unwrap();
    assert!(jitfuse::internals::passes::short_axis::split(&g).is_none());
}

/// `column_split::split`: a column reduction of many rows reduces chunks of rows, then the
/// chunks' results (the chunk count a function of the shape); max and integer sums too;
/// 16-bit sums, products, row reductions, views' reductions and short columns are left
/// whole. The split graph computes what the whole one computes, and compiled, the same bits
/// under 1, 2, 3 and 8 threads.
#[test]
fn column_split_reduces_chunks_of_rows_then_their_results() {
    use jitfuse::internals::passes::column_split::split;
    let g = ir::parse(
        "%x = param 0 : f32[8,64,12,5]
         %y = exp %x : f32[8,64,12,5]
         %s = reduce_sum[0,1,2] %y : f32[5]
         %m = reduce_max[0,1] %x : f32[12,5]
         return %s, %m",
    )
    .unwrap();
    let s = split(&g).expect("splits");
    ir::verify(&s).unwrap_or_else(|e| panic!("{e}\n{s}"));
    expect![[r#"
        %0 = param 0 : f32[8,64,12,5]
        %1 = exp %0 : f32[8,64,12,5]
        %2 = reshape %1 : f32[24,256,5]
        %3 = reduce_sum[1] %2 : f32[24,5]
        %4 = reduce_sum[0] %3 : f32[5]
        %5 = reshape %0 : f32[2,256,12,5]
        %6 = reduce_max[1] %5 : f32[2,12,5]
        %7 = reduce_max[0] %6 : f32[12,5]
        return %4, %7
    "#]]
    .assert_eq(&s.to_text());
    let args = random_args(&g, 4);
    let before = interpret::eval_graph(&g, &args, &[]).unwrap();
    let after = interpret::eval_graph(&s, &args, &[]).unwrap();
    assert_close(
        &after[0],
        &before[0],
        Tol::rel(DType::F32, 2e-7).normwise(&before[0]),
        "sum",
    );
    assert_eq!(
        crate::common::bits(&after[1]),
        crate::common::bits(&before[1]),
        "max"
    );
    let exe = Executable::from_graph(g.clone(), vec![]).unwrap();
    let text = exe.kernels_text();
    assert!(
        text.contains("reduce_sum[1]") && text.contains("reduce_max[1]"),
        "{text}"
    );
    let refs: Vec<&Tensor> = args.iter().collect();
    crate::common::same_bits("column reductions in chunks", || {
        exe.run_with(&refs).unwrap()
    });
    check_graph_with(&g, &args, "column reductions in chunks", |_, want| {
        Tol::rel(DType::F32, 2e-7).normwise(want)
    });
    for whole in [
        // Products, row reductions, reductions of views, short columns.
        "%x = param 0 : f32[4096,8]\n%s = reduce_prod[0] %x : f32[8]\nreturn %s",
        "%x = param 0 : f32[8,4096]\n%s = reduce_sum[1] %x : f32[8]\nreturn %s",
        "%x = param 0 : f32[8,4096]\n%t = transpose[1,0] %x : f32[4096,8]\n\
         %s = reduce_sum[0] %t : f32[8]\nreturn %s",
        "%x = param 0 : f32[4096,3]\n%s = reduce_sum[0] %x : f32[3]\nreturn %s",
        "%x = param 0 : f32[4096,256]\n%s = reduce_sum[0] %x : f32[256]\nreturn %s",
        "%x = param 0 : f32[257,8]\n%s = reduce_sum[0] %x : f32[8]\nreturn %s",
    ] {
        let g = ir::parse(whole).unwrap();
        assert!(split(&g).is_none(), "{whole}");
    }
}

/// `column_split::split` of a 16-bit sum: its chunks of `x` cast to f32, f32 partials and
/// total, rounded once to bf16; within half a bf16 unit of the interpreter's sum (one
/// rounding of the f64 sum), and compiled, the same bits under 1, 2, 3 and 8 threads.
#[test]
fn column_split_sums_16_bit_columns_in_f32_partials() {
    use jitfuse::internals::passes::column_split::split;
    let g = ir::parse(
        "%x = param 0 : bf16[64,64,16]
         %y = mul %x, %x : bf16[64,64,16]
         %s = reduce_sum[0,1] %y : bf16[16]
         return %s",
    )
    .unwrap();
    let s = split(&g).expect("splits");
    ir::verify(&s).unwrap_or_else(|e| panic!("{e}\n{s}"));
    expect![[r#"
        %0 = param 0 : bf16[64,64,16]
        %1 = mul %0, %0 : bf16[64,64,16]
        %2 = cast %1 : f32[64,64,16]
        %3 = reshape %2 : f32[16,256,16]
        %4 = reduce_sum[1] %3 : f32[16,16]
        %5 = reduce_sum[0] %4 : f32[16]
        %6 = cast %5 : bf16[16]
        return %6
    "#]]
    .assert_eq(&s.to_text());
    let args = random_args(&g, 6);
    let before = interpret::eval_graph(&g, &args, &[]).unwrap();
    let after = interpret::eval_graph(&s, &args, &[]).unwrap();
    // (Sums of squares: no cancellation, so the f32 partials lose at most a few f32 units.)
    assert_close(&after[0], &before[0], Tol::half_ulp(DType::BF16), "sum");
    let exe = Executable::from_graph(g.clone(), vec![]).unwrap();
    // The square, the cast and the chunks' sums are one kernel: no copy of `x` in any type.
    let temp = exe.memory_analysis().temp_bytes;
    assert!(
        temp < 64 * 64 * 16 * 2,
        "{temp} bytes\n{}",
        exe.kernels_text()
    );
    let refs: Vec<&Tensor> = args.iter().collect();
    crate::common::same_bits("16-bit column sums in chunks", || {
        exe.run_with(&refs).unwrap()
    });
    check_graph_with(&g, &args, "16-bit column sums in chunks", |_, _| {
        Tol::half_ulp(DType::BF16)
    });
}

/// Constant folding computes what the interpreter computes, element for element: every
/// elementwise op on every dtype it takes, on values at the edges (NaN, infinities, -0,
/// the integer extremes, floats that saturate when cast and integers that wrap).
#[test]
fn constant_folding_computes_what_the_interpreter_computes() {
    use jitfuse::internals::ir::{semantics, BinaryOp, CmpOp, Op, UnaryOp};
    use jitfuse::Literal;
    let floats = [
        0.0,
        -0.0,
        0.1,
        1.5,
        -2.25,
        3e9,
        -3e9,
        1e30,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    let ints = [
        0i64,
        1,
        -1,
        7,
        -7,
        i32::MAX as i64,
        i32::MIN as i64,
        3_000_000_000,
        i64::MAX,
        i64::MIN,
    ];
    let dtypes = [DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool];
    // One element of `d` (the literal as the interpreter stores it) and its tensor.
    let values = |d: DType| -> Vec<(Literal, Tensor)> {
        match d {
            DType::F32 => floats
                .iter()
                .map(|&v| {
                    (
                        Literal::Float(v),
                        Tensor::from_vec(vec![v as f32], &[]).unwrap(),
                    )
                })
                .collect(),
            DType::F64 => floats
                .iter()
                .map(|&v| (Literal::Float(v), Tensor::from_vec(vec![v], &[]).unwrap()))
                .collect(),
            DType::I32 => ints
                .iter()
                .map(|&v| {
                    (
                        Literal::Int(v as i32 as i64),
                        Tensor::from_vec(vec![v as i32], &[]).unwrap(),
                    )
                })
                .collect(),
            DType::I64 => ints
                .iter()
                .map(|&v| (Literal::Int(v), Tensor::from_vec(vec![v], &[]).unwrap()))
                .collect(),
            DType::Bool => [false, true]
                .iter()
                .map(|&v| (Literal::Bool(v), Tensor::from_vec(vec![v], &[]).unwrap()))
                .collect(),
            DType::BF16 | DType::F16 => floats
                .iter()
                .map(|&v| {
                    let l = Literal::Float(v).cast(d);
                    (l, Tensor::full(&[], l.as_f64(d), d))
                })
                .collect(),
        }
    };
    // The interpreter's element as the literal the folded constant would store.
    let element = |t: &Tensor| -> Literal {
        match t.dtype() {
            DType::F32 => Literal::Float(t.to_vec::<f32>().unwrap()[0] as f64),
            DType::F64 => Literal::Float(t.to_vec::<f64>().unwrap()[0]),
            DType::I32 => Literal::Int(t.to_vec::<i32>().unwrap()[0] as i64),
            DType::I64 => Literal::Int(t.to_vec::<i64>().unwrap()[0]),
            DType::Bool => Literal::Bool(t.to_vec::<bool>().unwrap()[0]),
            DType::BF16 => Literal::Float(t.to_vec::<jitfuse::bf16>().unwrap()[0].to_f64()),
            DType::F16 => Literal::Float(t.to_vec::<jitfuse::f16>().unwrap()[0].to_f64()),
        }
    };
    let same = |a: Literal, b: Literal, d: DType| match d {
        DType::F32 | DType::F64 => {
            let (x, y) = (a.as_f64(d), b.as_f64(d));
            (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
        }
        _ => a.as_i64(d) == b.as_i64(d),
    };
    let mut checked = 0;
    let mut check = |op: Op, ins: &[(DType, &(Literal, Tensor))], out: DType| {
        let refs: Vec<&Tensor> = ins.iter().map(|(_, (_, t))| t).collect();
        let want = interpret::eval_op(&op, &refs, &[], out).unwrap();
        let lits: Vec<(Literal, DType)> = ins.iter().map(|(d, (l, _))| (*l, *d)).collect();
        let got = semantics::eval(&op, &lits, out).expect("an elementwise op folds");
        assert!(
            same(got, element(&want), out),
            "{op:?} of {lits:?} -> {out:?}: folded {got:?}, interpreted {:?}",
            element(&want)
        );
        checked += 1;
    };
    let unary: Vec<UnaryOp> = UnaryOp::ALL
        .into_iter()
        .filter(|&u| u != UnaryOp::Not)
        .collect();
    let binary: Vec<BinaryOp> = BinaryOp::ALL
        .into_iter()
        .filter(|&b| !matches!(b, BinaryOp::And | BinaryOp::Or))
        .collect();
    let cmps = [
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
        CmpOp::Eq,
        CmpOp::Ne,
    ];
    for d in dtypes {
        let vs = values(d);
        for x in &vs {
            for to in dtypes {
                check(Op::Cast(to), &[(d, x)], to);
            }
            match d {
                DType::Bool => check(Op::Unary(UnaryOp::Not), &[(d, x)], d),
                DType::F32 | DType::F64 => {
                    for &u in &unary {
                        check(Op::Unary(u), &[(d, x)], d);
                    }
                }
                _ => {
                    for u in [UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Relu, UnaryOp::Square] {
                        check(Op::Unary(u), &[(d, x)], d);
                    }
                }
            }
            for y in &vs {
                for c in cmps {
                    check(Op::Compare(c), &[(d, x), (d, y)], DType::Bool);
                }
                let ops: Vec<BinaryOp> = match d {
                    DType::Bool => vec![BinaryOp::And, BinaryOp::Or],
                    DType::F32 | DType::F64 => binary.clone(),
                    _ => binary
                        .iter()
                        .copied()
                        .filter(|&b| b != BinaryOp::Pow)
                        .collect(),
                };
                for b in ops {
                    check(Op::Binary(b), &[(d, x), (d, y)], d);
                }
                for c in &values(DType::Bool) {
                    check(Op::Select, &[(DType::Bool, c), (d, x), (d, y)], d);
                }
            }
        }
    }
    assert!(checked > 5000, "{checked}");
}

/// A batch norm's column sums join the loop kernel computing their operands
/// (`describe::columns`): the chunked sums of `x − mean` and of its square are accumulated
/// where the deviation is computed, the square is never written, and no reduction step reads
/// the deviation back. Compiled at every level, the results are the interpreter's and have
/// the same bits at every level and thread count; sums that must stay apart stay apart.
#[test]
fn column_sums_join_the_kernel_computing_their_operand() {
    use crate::common::{bits, compile_at, same_bits};
    use jitfuse::internals::codegen::{Isa, Target};
    let bn = "%x = param 0 : f32[64,8,8,16]
         %s = reduce_sum[0,1,2] %x : f32[16]
         %n = const 4096.0 : f32[16]
         %m = div %s, %n : f32[16]
         %mb = broadcast %m : f32[64,8,8,16]
         %d = sub %x, %mb : f32[64,8,8,16]
         %d2 = square %d : f32[64,8,8,16]
         %v = reduce_sum[0,1,2] %d2 : f32[16]
         %sd = reduce_sum[0,1,2] %d : f32[16]
         %vn = div %v, %n : f32[16]
         %e = const 0.00001 : f32[16]
         %ve = add %vn, %e : f32[16]
         %r = rsqrt %ve : f32[16]
         %rb = broadcast %r : f32[64,8,8,16]
         %y = mul %d, %rb : f32[64,8,8,16]
         return %y, %v, %sd";
    let g = ir::parse(bn).unwrap();
    let exe = Executable::from_graph(g.clone(), vec![]).unwrap();
    let text = exe.kernels_text();
    let steps = &text[..text.find("// step 0").unwrap_or(text.len())];
    expect![[r#"
        step 0: reduce kernel %2 = reduce_sum[1] %1 : f32[16,16]
        step 1: reduce kernel %3 = reduce_sum[0] %2 : f32[16]
        step 2: kernel over [16] reads (%3) writes (%5)
          %5 = div %3, %4 : f32[16]
        step 3: kernel over [64, 8, 8, 16] in columns [16, 256, 16] reads (%0, %5) writes (%7, %10, %13)
          %7 = sub %0, %6 : f32[64,8,8,16]
          %8 = square %7 : f32[64,8,8,16]
          %10 = reduce_sum[1] %9 : f32[16,16]
          %13 = reduce_sum[1] %12 : f32[16,16]
        step 4: reduce kernel %11 = reduce_sum[0] %10 : f32[16]
        step 5: reduce kernel %14 = reduce_sum[0] %13 : f32[16]
        step 6: kernel over [16] reads (%11) writes (%18)
          %15 = div %11, %4 : f32[16]
          %17 = add %15, %16 : f32[16]
          %18 = rsqrt %17 : f32[16]
        step 7: kernel over [64, 8, 8, 16] reads (%7, %18) writes (%20)
          %20 = mul %7, %19 : f32[64,8,8,16]
    "#]]
    .assert_eq(steps);
    let args = random_args(&g, 7);
    let refs: Vec<&Tensor> = args.iter().collect();
    let want = interpret::eval_graph(&g, &args, &[]).unwrap();
    let mut first: Option<Vec<Vec<u64>>> = None;
    for level in [Isa::Portable, Isa::Avx2, Isa::Avx512] {
        if level > Isa::detected() {
            continue;
        }
        let exe = compile_at(g.clone(), &Target::at(level)).unwrap();
        exe.check_plan().unwrap();
        let got = exe.run_with(&refs).unwrap();
        for (k, (a, b)) in got.iter().zip(&want).enumerate() {
            // `Σ(x − mean)` cancels to rounding noise: compared against the size of its terms
            // (`Σ(x − mean)²` is of that size for values of order 1).
            let tol = Tol {
                rel: 1e-5,
                abs: 1e-5,
            }
            .normwise(if k == 2 { &want[1] } else { b });
            assert_close(a, b, tol, &format!("{level}, output {k}"));
        }
        let now: Vec<Vec<u64>> = got.iter().map(bits).collect();
        match &first {
            None => first = Some(now),
            Some(f) => assert!(f == &now, "{level}: other bits than the portable level"),
        }
        same_bits(&format!("fused column sums at {level}"), || {
            exe.run_with(&refs).unwrap()
        });
    }
    // Sums that stay reductions of their own: more rows a partial than f32 should sum
    // alone, a single kept element (every lane would add into it), an operand read through a
    // broadcast the chunks cannot walk; and sums that fuse: f64 (Cranelift), a 16-bit sum
    // (its chunks cast to f32).
    for (program, fused) in [
        (
            "%x = param 0 : f32[4,1024,8]\n%y = exp %x : f32[4,1024,8]\n\
          %s = reduce_sum[1] %y : f32[4,8]\nreturn %s",
            false,
        ),
        (
            "%x = param 0 : f32[16,64,1]\n%y = exp %x : f32[16,64,1]\n\
          %s = reduce_sum[1] %y : f32[16,1]\nreturn %s",
            false,
        ),
        (
            "%x = param 0 : f32[64,8,8,16]\n%b = param 1 : f32[8,8,16]\n\
          %bb = broadcast %b : f32[64,8,8,16]\n%y = mul %x, %bb : f32[64,8,8,16]\n\
          %s = reduce_sum[0,1,2] %y : f32[16]\nreturn %s",
            false,
        ),
        (
            "%x = param 0 : f64[64,8,8,16]\n%y = exp %x : f64[64,8,8,16]\n\
          %s = reduce_sum[0,1,2] %y : f64[16]\nreturn %s",
            true,
        ),
        (
            "%x = param 0 : bf16[64,8,8,16]\n%y = exp %x : bf16[64,8,8,16]\n\
          %s = reduce_sum[0,1,2] %y : bf16[16]\nreturn %s",
            true,
        ),
    ] {
        let g = ir::parse(program).unwrap();
        let exe = Executable::from_graph(g.clone(), vec![]).unwrap();
        let text = exe.kernels_text();
        assert_eq!(text.contains("in columns"), fused, "{text}");
        let args = random_args(&g, 3);
        check_graph_with(&g, &args, program, |_, want| {
            Tol::rel(want.dtype(), 1e-5).normwise(want)
        });
    }
}

/// `widen`: a 16-bit convolution its step reads as it is (`native`) becomes the
/// convolution's f32 sums cast to bf16; the others (here the weight gradient) run on f32
/// copies of their operands, their result cast back; the widened text parses back and
/// computes what the graph computes.
#[test]
fn widen_keeps_native_convolutions_on_16_bit_operands_and_copies_the_others() {
    use jitfuse::internals::ir::Op;
    let g = ir::parse(
        "%x = param 0 : bf16[2,5,5,4]
         %w = param 1 : bf16[3,3,4,6]
         %y = conv[s=1,1;p=1:1,1:1] %x, %w : bf16[2,5,5,6]
         %dw = conv_weight_grad[s=1,1;p=1:1,1:1] %x, %y : bf16[3,3,4,6]
         return %y, %dw",
    )
    .unwrap();
    ir::verify(&g).unwrap();
    let native = |g: &Graph, n: &jitfuse::internals::ir::Node| {
        matches!(&n.op, Op::Conv(s) if s.role.name() == "conv")
            && g.node(n.inputs[0]).dtype == DType::BF16
    };
    let w = jitfuse::internals::passes::widen::widen(&g, &native).expect("widens");
    ir::verify(&w).unwrap_or_else(|e| panic!("{e}\n{w}"));
    expect![[r#"
        %0 = param 0 : bf16[2,5,5,4]
        %1 = param 1 : bf16[3,3,4,6]
        %2 = conv[s=1,1;p=1:1,1:1] %0, %1 : f32[2,5,5,6]
        %3 = cast %2 : bf16[2,5,5,6]
        %4 = cast %0 : f32[2,5,5,4]
        %5 = cast %3 : f32[2,5,5,6]
        %6 = conv_weight_grad[s=1,1;p=1:1,1:1] %4, %5 : f32[3,3,4,6]
        %7 = cast %6 : bf16[3,3,4,6]
        return %3, %7
    "#]]
    .assert_eq(&w.to_text());
    assert_eq!(ir::parse(&w.to_text()).unwrap().to_text(), w.to_text());
    let args = random_args(&g, 5);
    let before = interpret::eval_graph(&g, &args, &[]).unwrap();
    let after = interpret::eval_graph(&w, &args, &[]).unwrap();
    for (a, b) in after.iter().zip(&before) {
        assert_eq!(a.dtype(), b.dtype());
        assert_close(a, b, Tol::half_ulp(DType::BF16).normwise(b), "widened");
    }
}
