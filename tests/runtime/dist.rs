//! `jitfuse::dist` in the default build: a world of one process, where every collective is
//! its single-process definition (a sum or mean of one, a gather or scatter of one block),
//! and the errors every rank would give alike. The collectives on several processes are
//! checked by `examples/dist_check.rs` under `mpirun` (`.ci/run`, with the `mpi` feature).

use jitfuse::dist::{self, Reduce};
use jitfuse::{DType, ErrorKind, Tensor};

fn sample(shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| (i % 7) as f64 - 3.0).collect();
    Tensor::from_vec(v, shape).unwrap().cast(dtype)
}

fn bits(t: &Tensor) -> Vec<f64> {
    t.cast(DType::F64).to_vec::<f64>().unwrap()
}

#[test]
fn a_world_of_one_process_gives_every_collective_its_input_back() {
    dist::init();
    assert_eq!((dist::rank(), dist::size()), (0, 1));
    dist::barrier();
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        for shape in [&[][..], &[5], &[3, 4], &[2, 3, 4]] {
            let x = sample(shape, dtype);
            let ops: &[Reduce] = if dtype.is_float() {
                &[Reduce::Sum, Reduce::Mean, Reduce::Max, Reduce::Min]
            } else {
                &[Reduce::Sum, Reduce::Max, Reduce::Min]
            };
            for &op in ops {
                let y = dist::all_reduce(&x, op).unwrap();
                assert_eq!((y.shape(), y.dtype()), (x.shape(), dtype), "{op:?}");
                assert_eq!(bits(&y), bits(&x), "all_reduce {op:?} {dtype}{shape:?}");
                for axis in 0..shape.len() as isize {
                    let y = dist::reduce_scatter(&x, axis, op).unwrap();
                    assert_eq!(bits(&y), bits(&x), "reduce_scatter {op:?} axis {axis}");
                    assert_eq!(y.shape(), x.shape());
                }
            }
            for axis in -(shape.len() as isize)..shape.len() as isize {
                let y = dist::all_gather(&x, axis).unwrap();
                assert_eq!((y.shape(), bits(&y)), (x.shape(), bits(&x)), "axis {axis}");
            }
            let y = dist::broadcast(&x, 0).unwrap();
            assert_eq!(bits(&y), bits(&x));
            // A new tensor: the input is not aliased.
            assert!(!y.shares_buffer_with(&x));
        }
    }
    let b = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
    let y = dist::all_reduce(&b, Reduce::Max).unwrap();
    assert_eq!(y.to_vec::<bool>().unwrap(), vec![true, false, true]);
}

#[test]
fn collectives_name_the_argument_that_no_rank_can_use() {
    let x = sample(&[4, 6], DType::F32);
    let e = dist::all_gather(&x, 2).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape);
    assert!(
        e.message.contains("dist::all_gather") && e.message.contains("f32[4,6]"),
        "{e}"
    );
    let e = dist::reduce_scatter(&x, -3, Reduce::Sum).unwrap_err();
    assert!(e.message.contains("axis -3"), "{e}");
    let e = dist::broadcast(&x, 1).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Argument);
    assert!(
        e.message.contains("root 1") && e.message.contains("world of 1"),
        "{e}"
    );
    let ints = sample(&[3], DType::I64);
    let e = dist::all_reduce(&ints, Reduce::Mean).unwrap_err();
    assert_eq!(e.kind, ErrorKind::DType);
    assert!(e.message.contains("Mean of i64[3]"), "{e}");
    let b = Tensor::from_vec(vec![true], &[1]).unwrap();
    let e = dist::all_reduce(&b, Reduce::Sum).unwrap_err();
    assert!(e.message.contains("Sum of bool[1]"), "{e}");
}

/// `broadcast` traced is a step (`broadcast_from[root]`): at every level as the interpreter,
/// and its gradient on the root (the one rank of a world of one) the cotangents' sum.
#[test]
fn a_compiled_broadcast_is_a_step_with_the_roots_gradient() {
    use jitfuse::internals::codegen::{Isa, Target};
    let x = sample(&[3, 5], DType::F32);
    let g = crate::common::trace_fn(std::slice::from_ref(&x), |ts| {
        vec![dist::broadcast(&(&ts[0] * 2.0), 0).unwrap() + 1.0]
    });
    let text = g.to_text();
    assert!(text.contains("broadcast_from[0]"), "{text}");
    assert_eq!(
        jitfuse::internals::ir::parse(&text).unwrap().to_text(),
        text
    );
    let want =
        jitfuse::internals::interpret::eval_graph(&g, std::slice::from_ref(&x), &[]).unwrap();
    assert_eq!(bits(&want[0]), bits(&(&x * 2.0 + 1.0)));
    for level in Isa::supported() {
        let exe = crate::common::compile_at(g.clone(), &Target::at(level)).unwrap();
        assert_eq!(
            bits(&exe.run_with(&[&x]).unwrap()[0]),
            bits(&want[0]),
            "{level}"
        );
    }
    let grad = jitfuse::grad(
        |x: &Tensor| dist::broadcast(&x.square(), 0).unwrap().sum(0).sum(0),
        &x,
    );
    assert_eq!(bits(&grad), bits(&(&x * 2.0)));
    // A root that is no rank is an error when traced, as eagerly.
    let mut seen = None;
    let _ = crate::common::trace_fn(&[x], |ts| {
        seen = Some(dist::broadcast(&ts[0], 1).map(|_| ()));
        vec![ts[0].clone()]
    });
    assert_eq!(seen.unwrap().unwrap_err().kind, ErrorKind::Argument);
}

/// `all_reduce` traced is a step of the program (`all_reduce_sum` ...): compiled at every
/// level, donated or not, it computes what the interpreter computes (in a world of one, its
/// input; `Mean` divides by one), and the IR text names it.
#[test]
fn a_compiled_all_reduce_is_a_step_that_matches_the_interpreter_at_every_level() {
    use jitfuse::internals::codegen::{Isa, Target};
    let x = sample(&[5, 7], DType::F32);
    for op in [Reduce::Sum, Reduce::Mean, Reduce::Max, Reduce::Min] {
        let g = crate::common::trace_fn(std::slice::from_ref(&x), |ts| {
            let y = &ts[0] * 2.0;
            vec![(dist::all_reduce(&y, op).unwrap() + 1.0) * 3.0]
        });
        let text = g.to_text();
        let name = match op {
            Reduce::Sum | Reduce::Mean => "all_reduce_sum",
            Reduce::Max => "all_reduce_max",
            Reduce::Min => "all_reduce_min",
        };
        assert!(text.contains(name), "{text}");
        let parsed = jitfuse::internals::ir::parse(&text).unwrap();
        assert_eq!(parsed.to_text(), text);
        jitfuse::internals::ir::verify(&parsed).unwrap();
        let want =
            jitfuse::internals::interpret::eval_graph(&g, std::slice::from_ref(&x), &[]).unwrap();
        assert_eq!(bits(&want[0]), bits(&((&x * 2.0 + 1.0) * 3.0)), "{op:?}");
        for level in Isa::supported() {
            let exe = crate::common::compile_at(g.clone(), &Target::at(level)).unwrap();
            let got = exe.run_with(&[&x]).unwrap();
            assert_eq!(bits(&got[0]), bits(&want[0]), "{op:?} at {level}");
        }
    }
}

/// `all_gather` and `reduce_scatter` traced are steps too (`all_gather[axis,ranks]`,
/// `reduce_scatter_sum[axis,ranks]`), on every axis, at every level against the interpreter,
/// with each other's gradient: in a world of one, the identity and its gradient.
#[test]
fn compiled_gathers_and_scatters_match_the_interpreter_and_transpose_each_other() {
    use jitfuse::internals::codegen::{Isa, Target};
    let x = sample(&[2, 3, 4], DType::F64);
    for axis in -3..3isize {
        for gather in [true, false] {
            let g = crate::common::trace_fn(std::slice::from_ref(&x), |ts| {
                let y = &ts[0] * 2.0;
                let z = if gather {
                    dist::all_gather(&y, axis).unwrap()
                } else {
                    dist::reduce_scatter(&y, axis, Reduce::Mean).unwrap()
                };
                vec![z + 1.0]
            });
            let text = g.to_text();
            let name = if gather {
                "all_gather["
            } else {
                "reduce_scatter_sum["
            };
            assert!(text.contains(name), "{text}");
            let parsed = jitfuse::internals::ir::parse(&text).unwrap();
            assert_eq!(parsed.to_text(), text);
            let want = jitfuse::internals::interpret::eval_graph(&g, std::slice::from_ref(&x), &[])
                .unwrap();
            assert_eq!(bits(&want[0]), bits(&(&x * 2.0 + 1.0)), "axis {axis}");
            for level in Isa::supported() {
                let exe = crate::common::compile_at(g.clone(), &Target::at(level)).unwrap();
                let got = exe.run_with(&[&x]).unwrap();
                assert_eq!(bits(&got[0]), bits(&want[0]), "axis {axis} at {level}");
            }
            let grad = jitfuse::grad(
                |x: &Tensor| {
                    let y = if gather {
                        dist::all_gather(&x.square(), axis).unwrap()
                    } else {
                        dist::reduce_scatter(&x.square(), axis, Reduce::Sum).unwrap()
                    };
                    y.sum(0).sum(0).sum(0)
                },
                &x,
            );
            assert_eq!(bits(&grad), bits(&(&x * 2.0)), "gradient, axis {axis}");
        }
    }
}

/// The gradient of the sum over the ranks is the sum of the cotangents over the ranks
/// (JAX's `psum`): with one rank, the gradient of the function without it. Max and min
/// have none: an error naming the op.
#[test]
fn all_reduce_has_the_gradient_of_psum() {
    let x = sample(&[4], DType::F64);
    let g = jitfuse::grad(
        |x: &Tensor| dist::all_reduce(&x.square(), Reduce::Sum).unwrap().sum(0),
        &x,
    );
    assert_eq!(bits(&g), bits(&(&x * 2.0)));
    let g = jitfuse::grad(
        |x: &Tensor| dist::all_reduce(&x.square(), Reduce::Mean).unwrap().sum(0),
        &x,
    );
    assert_eq!(bits(&g), bits(&(&x * 2.0)));
    let specs = [jitfuse::internals::trace::ParamSpec {
        shape: vec![4],
        dtype: DType::F64,
        weak: false,
    }];
    let e = jitfuse::internals::trace::trace(&specs, |ts| {
        vec![jitfuse::grad(
            |x: &Tensor| dist::all_reduce(x, Reduce::Max).unwrap().sum(0),
            &ts[0],
        )]
    })
    .err()
    .unwrap();
    assert!(e.message.contains("all_reduce_max has no gradient"), "{e}");
}

#[test]
fn a_world_of_one_process_keeps_every_item_of_its_shard() {
    let items: Vec<u32> = (0..10).collect();
    assert_eq!(dist::shard(&items), items);
    assert_eq!(dist::shard::<u32>(&[]), Vec::<u32>::new());
}

/// The buckets of `all_reduce_tree`: leaves last first (the order a backward pass finishes
/// them), a new bucket where the dtype changes or the bytes would pass the limit, a leaf
/// larger than the limit alone, empty leaves in none.
#[test]
fn gradient_buckets_fill_last_leaf_first_by_dtype_and_size() {
    let leaves = [
        Tensor::zeros(&[4], DType::F32),    // 16 bytes
        Tensor::zeros(&[2, 2], DType::F32), // 16
        Tensor::zeros(&[0, 3], DType::F32), // empty
        Tensor::zeros(&[3], DType::F64),    // 24
        Tensor::zeros(&[20], DType::F32),   // 80: more than the limit
        Tensor::zeros(&[1], DType::F32),    // 4
        Tensor::zeros(&[2], DType::F32),    // 8
    ];
    assert_eq!(
        dist::buckets(&leaves, 32),
        vec![vec![6, 5], vec![4], vec![3], vec![1, 0]]
    );
    assert_eq!(
        dist::buckets(&leaves, 1 << 20),
        vec![vec![6, 5, 4], vec![3], vec![1, 0]]
    );
    assert_eq!(dist::buckets(&leaves, 1).len(), 6);
}

/// `all_reduce_tree` gives every leaf back in a world of one (shapes, dtypes and bits), eagerly
/// and compiled at every level: each bucket one `reduce_scatter` and one `all_gather` step of
/// the program, the packing and unpacking fused around them.
#[test]
fn a_tree_reduced_in_buckets_is_the_tree_in_a_world_of_one() {
    use jitfuse::internals::codegen::{Isa, Target};
    let tree = vec![
        sample(&[3, 4], DType::F32),
        sample(&[5], DType::F64),
        sample(&[2, 2], DType::I32),
        sample(&[0], DType::F32),
        sample(&[7], DType::F32),
        sample(&[], DType::F32),
    ];
    for op in [Reduce::Sum, Reduce::Mean, Reduce::Max] {
        let tree: Vec<Tensor> = (tree.iter())
            .filter(|t| op != Reduce::Mean || t.dtype().is_float())
            .cloned()
            .collect();
        let got = dist::all_reduce_tree(&tree, op, 40).unwrap();
        for (g, x) in got.iter().zip(&tree) {
            assert_eq!((g.shape(), g.dtype()), (x.shape(), x.dtype()), "{op:?}");
            assert_eq!(bits(g), bits(x), "{op:?} {:?}", x.shape());
        }
        let g = crate::common::trace_fn(&tree, |ts| {
            dist::all_reduce_tree(&ts.to_vec(), op, 40).unwrap()
        });
        let text = g.to_text();
        let buckets = dist::buckets(&tree, 40).len();
        assert_eq!(text.matches("reduce_scatter_").count(), buckets, "{text}");
        assert_eq!(text.matches("all_gather[").count(), buckets, "{text}");
        let want = jitfuse::internals::interpret::eval_graph(&g, &tree, &[]).unwrap();
        for level in Isa::supported() {
            let exe = crate::common::compile_at(g.clone(), &Target::at(level)).unwrap();
            let args: Vec<&Tensor> = tree.iter().collect();
            let got = exe.run_with(&args).unwrap();
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                assert_eq!(bits(a), bits(b), "{op:?} leaf {k} at {level}");
                assert_eq!(bits(a), bits(&tree[k]), "{op:?} leaf {k} at {level}");
            }
        }
    }
}

/// `optim::data_parallel(opt)` in a world of one is `opt`: the same parameters and state, bit
/// for bit, step after step; on several processes `examples/dist_train.rs` checks it
/// against one process.
#[test]
fn data_parallel_in_a_world_of_one_is_the_optimiser_itself() {
    use jitfuse::optim::{adam, data_parallel, Optimizer};
    let p = (sample(&[3, 4], DType::F32), sample(&[4], DType::F32));
    let (mut a, mut sa) = (p.clone(), adam(1e-2, 0.9, 0.999, 1e-8).init(&p));
    let dp = data_parallel(adam(1e-2, 0.9, 0.999, 1e-8)).bucket_bytes(16);
    let (mut b, mut sb) = (p.clone(), dp.init(&p));
    for step in 0..3 {
        let g = (&a.0 * (0.5 + step as f64), &a.1 - 1.0);
        (a, sa) = adam(1e-2, 0.9, 0.999, 1e-8).update(&g, sa, a);
        let g = (&b.0 * (0.5 + step as f64), &b.1 - 1.0);
        (b, sb) = dp.update(&g, sb, b);
        assert_eq!(bits(&a.0), bits(&b.0), "step {step}");
        assert_eq!(bits(&a.1), bits(&b.1), "step {step}");
    }
    let _ = (sa, sb);
}

type Pair = (Tensor, Tensor);
type ShardedAdam = jitfuse::optim::Sharded<jitfuse::optim::Adam<f64>>;
/// Global-norm clipping, then AdamW decaying the matrices only: nanoGPT's optimiser, neither
/// part elementwise.
type Clipped = jitfuse::optim::Chain<jitfuse::optim::ClipByGlobalNorm, jitfuse::optim::Adam<f64>>;
type ShardedClipped = jitfuse::optim::Sharded<Clipped>;
type ShardedDp = jitfuse::optim::Sharded<jitfuse::optim::DataParallel<jitfuse::optim::Adam<f64>>>;

fn clipped() -> Clipped {
    use jitfuse::optim::{adamw, clip_by_global_norm, Mask, Optimizer};
    let decay = Mask::by_leaf(|t| t.ndim() >= 2);
    clip_by_global_norm(0.5).then(adamw(1e-2, 0.9, 0.999, 1e-8, 0.1).decay_mask(decay))
}

fn sharded_adam() -> ShardedAdam {
    jitfuse::optim::sharded(jitfuse::optim::adam(1e-2, 0.9, 0.999, 1e-8)).bucket_bytes(16)
}

#[jitfuse::jit]
fn sharded_step(
    p: Pair,
    s: jitfuse::optim::StateOf<ShardedAdam, Pair>,
    g: &Pair,
) -> (Pair, jitfuse::optim::StateOf<ShardedAdam, Pair>) {
    use jitfuse::optim::Optimizer;
    sharded_adam().update(g, s, p)
}

#[jitfuse::jit]
fn sharded_clipped_step(
    p: Pair,
    s: jitfuse::optim::StateOf<ShardedClipped, Pair>,
    g: &Pair,
    bucket_bytes: usize,
) -> (Pair, jitfuse::optim::StateOf<ShardedClipped, Pair>) {
    use jitfuse::optim::{sharded, Optimizer};
    sharded(clipped())
        .bucket_bytes(bucket_bytes)
        .update(g, s, p)
}

#[jitfuse::jit]
fn sharded_dp_step(
    p: Pair,
    s: jitfuse::optim::StateOf<ShardedDp, Pair>,
    g: &Pair,
) -> (Pair, jitfuse::optim::StateOf<ShardedDp, Pair>) {
    use jitfuse::optim::{adam, data_parallel, sharded, Optimizer};
    sharded(data_parallel(adam(1e-2, 0.9, 0.999, 1e-8))).update(g, s, p)
}

/// `optim::sharded(opt)` in a world of one: the state is `opt`'s over the packed parameters
/// (one flat block per bucket, as many elements as the parameters), and the steps are `opt`'s,
/// bit for bit, eagerly and jitted. On several processes `examples/dist_train.rs` checks it
/// against one process and measures the state per rank.
#[test]
fn sharded_in_a_world_of_one_is_the_optimiser_on_packed_parameters() {
    use jitfuse::optim::{adam, Optimizer};
    let p: Pair = (sample(&[3, 4], DType::F32), sample(&[5], DType::F32));
    let plain = adam(1e-2, 0.9, 0.999, 1e-8);
    let (mut a, mut sa) = (p.clone(), plain.init(&p));
    let (mut b, mut sb) = (p.clone(), sharded_adam().init(&p));
    let (mut c, mut sc) = (p.clone(), sharded_adam().init(&p));
    // Buckets of at most 16 bytes: [5] (20 bytes) alone, then [3, 4] alone.
    let sizes: Vec<usize> = sb.mu.iter().map(|t| t.len()).collect();
    assert_eq!(sizes, vec![5, 12]);
    for step in 0..3 {
        let grads = |x: &Pair| (&x.0 * (0.5 + step as f64), &x.1 - 1.0);
        let g = grads(&a);
        (a, sa) = plain.update(&g, sa, a);
        let g = grads(&b);
        (b, sb) = sharded_adam().update(&g, sb, b);
        let g = grads(&c);
        (c, sc) = sharded_step(c, sc, &g);
        for (x, y) in [(&a.0, &b.0), (&a.1, &b.1), (&a.0, &c.0), (&a.1, &c.1)] {
            assert_eq!(bits(x), bits(y), "step {step}");
        }
    }
    let _ = (sa, sb, sc);
}

/// Sharded global-norm clipping and masked AdamW (nanoGPT's optimiser) compute the unsharded
/// optimiser's steps: bit for bit when every leaf is a bucket of its own (each block's sum of
/// squares is its leaf's, and each block is decayed or not as a whole), and to f32 rounding
/// when the leaves share a bucket (one sum over the bucket, a 0/1 decay mask over its
/// elements). Eagerly and jitted, with the clip active at every step.
#[test]
fn sharded_clipping_and_masked_decay_are_the_unsharded_steps() {
    use jitfuse::optim::{sharded, Optimizer};
    let p: Pair = (sample(&[3, 4], DType::F32), sample(&[5], DType::F32));
    let plain = clipped();
    for bucket_bytes in [16, 1024] {
        let opt = sharded(clipped()).bucket_bytes(bucket_bytes);
        let (mut a, mut sa) = (p.clone(), plain.init(&p));
        let (mut b, mut sb) = (p.clone(), opt.init(&p));
        let (mut c, mut sc) = (p.clone(), opt.init(&p));
        let blocks: Vec<usize> = sb.1.mu.iter().map(|t| t.len()).collect();
        assert_eq!(
            blocks,
            if bucket_bytes == 16 {
                vec![5, 12]
            } else {
                vec![17]
            }
        );
        for step in 0..4 {
            let grads = |x: &Pair| (&x.0 * (3.0 + step as f64), &x.1 - 2.0);
            assert!(global_norm(&grads(&a)).item::<f64>().unwrap() > 0.5);
            let g = grads(&a);
            (a, sa) = plain.update(&g, sa, a);
            let g = grads(&b);
            (b, sb) = opt.update(&g, sb, b);
            let g = grads(&c);
            (c, sc) = sharded_clipped_step(c, sc, &g, bucket_bytes);
            for (x, y) in [(&a.0, &b.0), (&a.1, &b.1), (&a.0, &c.0), (&a.1, &c.1)] {
                match bucket_bytes {
                    16 => assert_eq!(bits(x), bits(y), "step {step}"),
                    _ => crate::common::assert_close(
                        y,
                        x,
                        crate::common::Tol::rel(DType::F32, 1e-6),
                        &format!("bucket of both, step {step}"),
                    ),
                }
            }
        }
        let _ = (sa, sb, sc);
    }
}

fn global_norm(p: &Pair) -> Tensor {
    jitfuse::optim::global_norm(p)
}

/// An optimiser that is not elementwise and does not update blocks (`data_parallel`) cannot
/// be sharded: the jitted step's error names `optim::sharded` and says why; eagerly a panic.
#[test]
fn sharding_an_optimiser_without_block_updates_is_an_error_naming_it() {
    use jitfuse::optim::{adam, data_parallel, sharded, Optimizer};
    let p: Pair = (sample(&[3, 4], DType::F32), sample(&[5], DType::F32));
    let opt = sharded(data_parallel(adam(1e-2, 0.9, 0.999, 1e-8)));
    let s = opt.init(&p);
    let g = p.clone();
    let err = sharded_dp_step::try_call(p.clone(), s, &g).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Argument, "{err}");
    assert!(
        err.message.contains("`optim::sharded`") && err.message.contains("block_updates"),
        "{err}"
    );
    let s = opt.init(&p);
    let eager = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| opt.update(&g, s, p)));
    let msg = crate::common::panic_text(&*eager.unwrap_err());
    assert!(msg.contains("`optim::sharded`"), "{msg}");
    // The elementwise chains: SGD then momentum, Adam, AdamW decaying every leaf.
    use jitfuse::optim::{adamw, clip_by_global_norm, momentum, sgd, Mask};
    assert!(sgd(0.1).then(momentum(0.1, 0.9)).elementwise());
    assert!(adamw(1e-3, 0.9, 0.99, 1e-8, 0.1).elementwise());
    let masked = adamw(1e-3, 0.9, 0.99, 1e-8, 0.1).decay_mask(Mask::by_leaf(|t| t.ndim() >= 2));
    assert!(!masked.elementwise());
    assert!(!clip_by_global_norm(1.0).elementwise());
}

/// A made-up gradient of step `k` at `x`.
fn grads(x: &Pair, k: usize) -> Pair {
    (&x.0 * (0.5 + k as f64), &x.1 - 1.0)
}

/// Parameters and their `sharded_adam` state after two steps (a world of one).
fn two_sharded_steps() -> (Pair, jitfuse::optim::StateOf<ShardedAdam, Pair>) {
    use jitfuse::optim::Optimizer;
    let p: Pair = (sample(&[3, 4], DType::F32), sample(&[5], DType::F32));
    let opt = sharded_adam();
    let (mut a, mut sa) = (p.clone(), opt.init(&p));
    for k in 0..2 {
        (a, sa) = opt.update(&grads(&a, k), sa, a);
    }
    (a, sa)
}

/// `Sharded::save_state` writes the whole state (the file of an unsharded optimiser) and
/// `load_state` takes this rank's share back: resumed training gives the bits of training
/// straight through, and the file loads into the unsharded optimiser, which continues with
/// the same bits too (a world of one; `examples/dist_train.rs` resumes a run of 2 or 3 ranks
/// in one process).
#[test]
fn sharded_state_checkpoints_resume_sharded_or_not() {
    use jitfuse::optim::{adam, Optimizer};
    use jitfuse::Tree;
    let opt = sharded_adam();
    let (mut a, mut sa) = two_sharded_steps();
    let dir = std::env::temp_dir().join(format!("jitfuse-sharded-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.safetensors");
    opt.save_state(&sa, &a, &path).unwrap();
    let gathered = opt.gather_state(Tree::map(&sa, |t| t.clone()), &a).unwrap();
    let back = opt.shard_state(gathered, &a).unwrap();
    assert_eq!(
        back.mu.iter().map(bits).collect::<Vec<_>>(),
        sa.mu.iter().map(bits).collect::<Vec<_>>()
    );
    let (mut b, mut sb) = (a.clone(), opt.load_state(&path, &a).unwrap());
    let plain = adam(1e-2, 0.9, 0.999, 1e-8);
    let (mut c, mut sc) = (
        a.clone(),
        jitfuse::io::load(&path, &plain.init(&a)).unwrap(),
    );
    for k in 2..4 {
        (a, sa) = opt.update(&grads(&a, k), sa, a);
        (b, sb) = opt.update(&grads(&b, k), sb, b);
        (c, sc) = plain.update(&grads(&c, k), sc, c);
        for x in [&b, &c] {
            assert_eq!(
                (bits(&a.0), bits(&a.1)),
                (bits(&x.0), bits(&x.1)),
                "step {k}"
            );
        }
    }
    let _ = (sa, sb, sc);
    // A file of other shapes is the loader's error, naming the leaf.
    let other: Pair = (sample(&[4, 4], DType::F32), sample(&[5], DType::F32));
    let err = opt.load_state(&path, &other).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Checkpoint, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An optimiser that does not say how its state is laid out cannot be checkpointed sharded:
/// an error naming it.
#[test]
fn a_state_without_a_layout_cannot_be_sharded() {
    use jitfuse::optim::{sharded, Optimizer};
    use jitfuse::Tree;
    struct Halve;
    impl Optimizer for Halve {
        type State<P: Tree> = ();
        fn init<P: Tree>(&self, _: &P) {}
        fn updates<P: Tree>(&self, g: &P, _: (), _: &P) -> (P, ()) {
            (g.map(|x| x * -0.5), ())
        }
    }
    let p: Pair = (sample(&[3, 4], DType::F32), sample(&[5], DType::F32));
    let opt = sharded(Halve);
    let err = opt.shard_state((), &p).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Argument, "{err}");
    assert!(
        err.message.contains("Halve") && err.message.contains("map_state"),
        "{err}"
    );
}

/// A compiled collective starts where its step runs and the call waits for it before the
/// first step that reads its result: the steps in between (here the independent
/// `exp(w).sum()`) run while it is in flight. Program outputs are waited for at the end of the
/// call, results no step reads before the next step. The same values at every level.
#[test]
fn a_collective_is_waited_for_where_its_result_is_first_read() {
    use jitfuse::internals::codegen::{Isa, Target};
    let (x, w) = (sample(&[64], DType::F32), sample(&[256], DType::F32));
    let g = crate::common::trace_fn(&[x.clone(), w.clone()], |ts| {
        let y = dist::all_reduce(&(&ts[0] * 2.0), Reduce::Sum).unwrap();
        let total = (&ts[1] * 0.01).exp().sum_all();
        let out = dist::all_reduce(&(&ts[0] + 1.0), Reduce::Max).unwrap();
        vec![&y * &total, out]
    });
    let want = jitfuse::internals::interpret::eval_graph(&g, &[x.clone(), w.clone()], &[]).unwrap();
    for level in Isa::supported() {
        let exe = crate::common::compile_at(g.clone(), &Target::at(level)).unwrap();
        let text = exe.collectives_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        // "step {start} {op} %{v}: waited for before step {wait} (...)"
        let step_of = |l: &str| -> (usize, usize) {
            let words: Vec<&str> = l.split(' ').collect();
            (words[1].parse().unwrap(), words[8].parse().unwrap())
        };
        let sum = lines.iter().find(|l| l.contains("all_reduce_sum")).unwrap();
        let (start, wait) = step_of(sum);
        assert!(
            sum.contains("its first reader") && wait > start + 1,
            "{text}\n{}",
            exe.kernels_text()
        );
        let max = lines.iter().find(|l| l.contains("all_reduce_max")).unwrap();
        assert!(max.contains("the end of the call"), "{text}");
        // (The sum of exponentials rounds as compiled sums do: relative 1e-6.)
        let got = exe.run_with(&[&x, &w]).unwrap();
        for (a, b) in bits(&got[0]).iter().zip(bits(&want[0])) {
            assert!(
                (a - b).abs() <= 1e-6 * b.abs(),
                "{a} against {b} at {level}"
            );
        }
        assert_eq!(bits(&got[1]), bits(&want[1]), "at {level}");
    }
}

/// A collective whose result the next step reads has nothing to overlap: it runs at once
/// (`ops::run_collective_now`), sending its operand from where it is when that is
/// contiguous, from a staged contiguous copy when it is a view (a transpose read through
/// its strides). The same values at every level.
#[test]
fn a_collective_nothing_can_overlap_runs_at_once_from_its_operand_or_a_staged_copy() {
    use jitfuse::internals::codegen::{Isa, Target};
    let x = sample(&[24, 40], DType::F32);
    let programs: [fn(&[Tensor]) -> Vec<Tensor>; 2] = [
        |ts| vec![dist::all_reduce(&ts[0].t(), Reduce::Sum).unwrap().exp()],
        |ts| {
            vec![dist::all_reduce(&(&ts[0] * 2.0), Reduce::Max)
                .unwrap()
                .abs()
                .sqrt()]
        },
    ];
    for f in programs {
        let g = crate::common::trace_fn(&[x.clone()], f);
        let want = jitfuse::internals::interpret::eval_graph(&g, &[x.clone()], &[]).unwrap();
        for level in Isa::supported() {
            let exe = crate::common::compile_at(g.clone(), &Target::at(level)).unwrap();
            let text = exe.collectives_text();
            assert_eq!(text.lines().count(), 1, "{text}");
            assert!(
                text.trim_end().ends_with("run at once"),
                "{text}\n{}",
                exe.kernels_text()
            );
            let got = exe.run_with(&[&x]).unwrap();
            assert_eq!(bits(&got[0]), bits(&want[0]), "{text} at {level}");
        }
    }
}

/// The schedule starts a collective as soon as its operand exists: traced after an
/// independent chain of kernels, `all_reduce(exp(x) * 2)` (with the kernel computing its
/// operand) moves ahead of that chain, so that the chain runs while it is in flight; a
/// collective of another's result stays after it. The same values at every level.
#[test]
fn the_schedule_starts_collectives_as_early_as_their_operands_allow() {
    use jitfuse::internals::codegen::{Isa, Target};
    let (x, w) = (sample(&[64], DType::F32), sample(&[300, 40], DType::F32));
    let g = crate::common::trace_fn(&[x.clone(), w.clone()], |ts| {
        // The independent chain first: a row kernel and a loop kernel.
        let z = (&ts[1] * 0.01).exp().sum(-1);
        let z = (z.sqrt() + 1.0).sum_all();
        let y = dist::all_reduce(&((&ts[0] * 0.1).exp() * 2.0), Reduce::Sum).unwrap();
        let scattered = dist::reduce_scatter(&y, 0, Reduce::Sum).unwrap();
        let gathered = dist::all_gather(&scattered, 0).unwrap();
        vec![&gathered * &z]
    });
    let want = jitfuse::internals::interpret::eval_graph(&g, &[x.clone(), w.clone()], &[]).unwrap();
    for level in Isa::supported() {
        let exe = crate::common::compile_at(g.clone(), &Target::at(level)).unwrap();
        let text = exe.collectives_text();
        let at = |name: &str| -> (usize, usize) {
            let l = text
                .lines()
                .find(|l| l.contains(name))
                .unwrap_or_else(|| panic!("{text}"));
            let words: Vec<&str> = l.split(' ').collect();
            (words[1].parse().unwrap(), words[8].parse().unwrap())
        };
        let (start, wait) = at("all_reduce_sum");
        // The kernel of its operand, then the collective, then the chain.
        assert_eq!(start, 1, "{text}\n{}", exe.kernels_text());
        assert!(wait > start + 2, "{text}\n{}", exe.kernels_text());
        // The scatter reads the all-reduce's result: where its reader was.
        let (scatter, _) = at("reduce_scatter_sum");
        assert_eq!(scatter, wait, "{text}");
        let got = exe.run_with(&[&x, &w]).unwrap();
        for (a, b) in bits(&got[0]).iter().zip(bits(&want[0])) {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs(),
                "{a} against {b} at {level}"
            );
        }
    }
}

#[jitfuse::jit]
fn summed_bf16(x: &Tensor) -> Tensor {
    dist::all_reduce(x, Reduce::Sum).unwrap() + dist::all_gather(x, 0).unwrap().sum(0)
}

#[test]
fn collectives_of_16_bit_floats_run_on_f32_values_and_keep_their_type() {
    let x = Tensor::vector(&[1.5f32, -2.25, 3.0]).cast(DType::BF16);
    let eager = dist::all_reduce(&x, Reduce::Sum).unwrap();
    assert_eq!(eager.dtype(), DType::BF16);
    assert_eq!(
        eager.cast(DType::F32).to_vec::<f32>().unwrap(),
        vec![1.5, -2.25, 3.0]
    );
    let jitted = summed_bf16(&x);
    assert_eq!(jitted.dtype(), DType::BF16);
    // (x plus the sum of the one rank's gather of x: 2.25)
    assert_eq!(
        jitted.cast(DType::F32).to_vec::<f32>().unwrap(),
        vec![3.75, 0.0, 5.25]
    );
}

/// Unless told, `data_parallel` and `sharded` cut the gradients into about eight buckets, none
/// under 512 KiB (a call's fixed cost) nor over 25 MiB (DDP's bucket).
#[test]
fn buckets_are_an_eighth_of_the_gradients_within_bounds() {
    assert_eq!(dist::bucket_bytes_for(1 << 20), dist::MIN_BUCKET_BYTES);
    assert_eq!(dist::bucket_bytes_for(80 << 20), 10 << 20);
    assert_eq!(dist::bucket_bytes_for(1 << 30), dist::DEFAULT_BUCKET_BYTES);
    // The CPU-size GPT's gradients (3.2 MB over 26 leaves) make 7 buckets of 512 KiB at most.
    let leaves: Vec<Tensor> = (0..26)
        .map(|i| Tensor::zeros(&[if i % 2 == 0 { 128 * 384 } else { 128 }], DType::F32))
        .chain([Tensor::zeros(&[65 * 128 * 20], DType::F32)])
        .collect();
    let total: usize = leaves.iter().map(|t| t.size_bytes()).sum();
    let b = dist::bucket_bytes_for(total);
    let bks = dist::buckets(&leaves, b);
    assert!(
        bks.len() >= 4 && bks.len() <= 9,
        "{} buckets of {b} for {total}",
        bks.len()
    );
}

/// Collectives start in the order they were traced, whatever the memory-aware schedule and
/// the hoisting would prefer: MPI matches the ranks' collectives by the order they start in,
/// and ranks whose programs differ (a sharded optimiser's per-rank constants) could otherwise
/// schedule them differently. Here the second all-reduce's operand exists at once and the
/// first's only after a chain of kernels: hoisted on its own, the second would start first.
#[test]
fn collectives_start_in_the_order_they_were_traced() {
    use jitfuse::internals::codegen::{Isa, Target};
    let (x, w) = (sample(&[64], DType::F32), sample(&[300, 40], DType::F32));
    let g = crate::common::trace_fn(&[x.clone(), w.clone()], |ts| {
        let late = ((&ts[1] * 0.01).exp().sum(-1).sqrt() + 1.0).sum_all();
        let first = dist::all_reduce(&late, Reduce::Sum).unwrap();
        let second = dist::all_gather(&(&ts[0] * 2.0), 0).unwrap();
        vec![&second * &first]
    });
    let want = jitfuse::internals::interpret::eval_graph(&g, &[x.clone(), w.clone()], &[]).unwrap();
    for level in Isa::supported() {
        let exe = crate::common::compile_at(g.clone(), &Target::at(level)).unwrap();
        let text = exe.collectives_text();
        let start = |name: &str| -> usize {
            let l = (text.lines().find(|l| l.contains(name))).unwrap_or_else(|| panic!("{text}"));
            l.split(' ').nth(1).unwrap().parse().unwrap()
        };
        assert!(
            start("all_reduce_sum") < start("all_gather"),
            "{text}\n{}",
            exe.kernels_text()
        );
        let got = exe.run_with(&[&x, &w]).unwrap();
        for (a, b) in bits(&got[0]).iter().zip(bits(&want[0])) {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs(),
                "{a} against {b} at {level}"
            );
        }
    }
}

/// `save_state_per_rank` writes each rank's blocks and an index; `load_state` of the directory
/// on as many ranks reads this rank's file back bit for bit, and on another number of ranks
/// (here a directory as two ranks would have written it, read by one) joins every rank's
/// blocks into the whole state and keeps its own: the same bits as the state trained here.
#[test]
fn sharded_state_saved_per_rank_loads_on_any_number_of_ranks() {
    use jitfuse::optim::{AdamState, Optimizer};
    use jitfuse::Tree;
    let opt = sharded_adam();
    let (a, sa) = two_sharded_steps();
    let root = std::env::temp_dir().join(format!("jitfuse-per-rank-{}", std::process::id()));
    let one = root.join("one");
    opt.save_state_per_rank(&sa, &a, &one).unwrap();
    let state_bits = |s: &jitfuse::optim::StateOf<ShardedAdam, Pair>| {
        s.leaves().iter().map(bits).collect::<Vec<_>>()
    };
    let back = opt.load_state(&one, &a).unwrap();
    assert_eq!(state_bits(&back), state_bits(&sa));
    let whole = opt.whole_state_of_ranks(&one, &a).unwrap();
    let gathered = opt.gather_state(Tree::map(&sa, |t| t.clone()), &a).unwrap();
    assert_eq!(
        whole.leaves().iter().map(bits).collect::<Vec<_>>(),
        gathered.leaves().iter().map(bits).collect::<Vec<_>>()
    );
    // Two ranks' files: each bucket (a leaf each at 16 bytes: [5], then [3, 4]) padded to an
    // even length and halved.
    let two = root.join("two");
    std::fs::create_dir_all(&two).unwrap();
    let halves = |t: &Pair, r: isize| -> Vec<Tensor> {
        [&t.1, &t.0]
            .iter()
            .map(|x| {
                let flat = x.reshape(&[-1]);
                let flat = flat.pad(&[(0, flat.len() % 2)], 0);
                let per = (flat.len() / 2) as isize;
                flat.slice_axis(0, r * per, (r + 1) * per, 1)
            })
            .collect()
    };
    for r in 0..2 {
        let s = AdamState {
            count: gathered.count.clone(),
            mu: halves(&gathered.mu, r),
            nu: halves(&gathered.nu, r),
        };
        jitfuse::io::save(&s, two.join(format!("rank-{r}.safetensors"))).unwrap();
    }
    jitfuse::io::save(&Tensor::vector(&[2i64, 16]), two.join("index.safetensors")).unwrap();
    let joined = opt.load_state(&two, &a).unwrap();
    assert_eq!(state_bits(&joined), state_bits(&sa));
    // Training goes on from it as from the state itself.
    let (b, _) = opt.update(&grads(&a, 2), joined, a.clone());
    let (c, _) = opt.update(&grads(&a, 2), sa, a);
    assert_eq!((bits(&b.0), bits(&b.1)), (bits(&c.0), bits(&c.1)));
    // A directory without its index is an error naming the file.
    std::fs::remove_file(two.join("index.safetensors")).unwrap();
    let err = opt.load_state(&two, &b).unwrap_err();
    assert!(err.to_string().contains("index.safetensors"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}
