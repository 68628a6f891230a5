//! The collectives of `jitfuse::dist` against their single-process definitions, on however
//! many processes it runs: every rank builds every rank's tensor (a function of the rank and
//! the element), computes what each collective must give from them, and compares. Every
//! reduction, dtype and axis; then the errors: ranks passing different shapes, an axis out of
//! range, a root that is no rank, a mean of integers. Prints one line per rank and exits
//! non-zero on any difference.
//!
//! ```text
//! cargo build --release --features mpi --example dist_check
//! mpirun -np 3 target/release/examples/dist_check
//! ```
//! (without the `mpi` feature, or without `mpirun`, it checks the world of one process.)
//!
//! Faults: `--panic-rank r` makes rank `r` panic before the first collective (every rank must
//! end, the job failing with a line naming rank `r`); `--stall-rank r` makes rank `r` sleep
//! a minute first (with `JITFUSE_DIST_TIMEOUT=2` the others must end after 2 s, naming the
//! collective). `.ci/mpi` runs both.

use jitfuse::dist::{self, Reduce};
use jitfuse::{jit, DType, ErrorKind, Tensor};

/// A jitted step with the collectives as steps of its program.
#[jit]
fn doubled_mean(x: &Tensor) -> Tensor {
    dist::all_reduce(&(x * 2.0), Reduce::Mean).unwrap()
}

/// Every rank's doubled rows, gathered along axis 1.
#[jit]
fn doubled_gather(x: &Tensor) -> Tensor {
    dist::all_gather(&(x * 2.0), 1).unwrap()
}

/// This rank's block of the mean over the ranks, along axis 1.
#[jit]
fn scattered_mean(x: &Tensor) -> Tensor {
    dist::reduce_scatter(x, 1, Reduce::Mean).unwrap()
}

/// A body that reads a traced value: it panics while tracing, which jitfuse reports as an
/// error (`ErrorKind::Panic`); on several processes that must not end the others.
#[jit]
fn reads_its_argument(x: &Tensor) -> Tensor {
    let v = x.to_vec::<f32>().unwrap();
    Tensor::vector(&v)
}

/// Element `i` of rank `r`'s tensor, as f64 (small integers: sums are exact in every dtype).
fn value(r: usize, i: usize, dtype: DType) -> f64 {
    match dtype {
        DType::Bool => ((r + i) % 3 == 0) as u8 as f64,
        _ => (((r + 1) * (i + 1) * 7) % 17) as f64 - 8.0,
    }
}

fn tensor_of(r: usize, shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| value(r, i, dtype)).collect();
    Tensor::from_vec(v, shape).unwrap().cast(dtype)
}

fn values(t: &Tensor) -> Vec<f64> {
    t.cast(DType::F64).to_vec::<f64>().unwrap()
}

fn fold(op: Reduce, a: f64, b: f64) -> f64 {
    match op {
        Reduce::Sum | Reduce::Mean => a + b,
        Reduce::Max => a.max(b),
        Reduce::Min => a.min(b),
    }
}

/// The elementwise `op` over every rank's values.
fn folded(op: Reduce, shape: &[usize], dtype: DType, ranks: usize) -> Vec<f64> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|i| {
            let s = (1..ranks).fold(value(0, i, dtype), |acc, r| {
                fold(op, acc, value(r, i, dtype))
            });
            if op == Reduce::Mean {
                s / ranks as f64
            } else {
                s
            }
        })
        .collect()
}

/// Strides of a row-major shape.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The multi-index of flat position `i` in `shape`.
fn index(i: usize, shape: &[usize]) -> Vec<usize> {
    strides(shape)
        .iter()
        .zip(shape)
        .map(|(s, d)| i / s % d)
        .collect()
}

fn flat(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(strides(shape)).map(|(i, s)| i * s).sum()
}

struct Check {
    rank: usize,
    failures: Vec<String>,
    count: usize,
}

impl Check {
    fn same(&mut self, what: &str, got: &Tensor, shape: &[usize], want: &[f64], tol: f64) {
        self.count += 1;
        if got.shape() != shape {
            self.failures
                .push(format!("{what}: shape {:?}, want {shape:?}", got.shape()));
            return;
        }
        let g = values(got);
        if let Some(i) = (0..want.len()).find(|&i| (g[i] - want[i]).abs() > tol * want[i].abs()) {
            self.failures
                .push(format!("{what}: element {i} is {}, want {}", g[i], want[i]));
        }
    }

    fn error(
        &mut self,
        what: &str,
        got: Result<Tensor, jitfuse::Error>,
        kind: ErrorKind,
        says: &[&str],
    ) {
        self.count += 1;
        match got {
            Ok(t) => self
                .failures
                .push(format!("{what}: gave {:?}, want an error", t.shape())),
            Err(e) if e.kind == kind && says.iter().all(|s| e.message.contains(s)) => {}
            Err(e) => self
                .failures
                .push(format!("{what}: error {:?}: {}", e.kind, e.message)),
        }
    }
}

/// The rank named after `flag` on the command line, if any.
fn rank_arg(flag: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == flag)?;
    Some(args.get(i + 1)?.parse().expect("a rank"))
}

fn main() {
    dist::init();
    let (rank, ranks) = (dist::rank(), dist::size());
    if rank_arg("--panic-rank") == Some(rank) {
        panic!("rank {rank} fails on purpose (--panic-rank)");
    }
    if rank_arg("--stall-rank") == Some(rank) {
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
    let mut c = Check {
        rank,
        failures: vec![],
        count: 0,
    };
    // Axes of length 6 or 12 split among 1, 2 or 3 ranks (length 2 among 3: an error).
    let shapes: [&[usize]; 4] = [&[], &[6], &[6, 12], &[2, 6, 6]];
    for dtype in DType::ALL {
        // (16-bit floats: the f32 result rounded once, within half a unit of their last place.)
        let tol = match dtype {
            DType::BF16 => 2f64.powi(-8),
            DType::F16 => 2f64.powi(-11),
            d if d.is_float() => 1e-6,
            _ => 0.0,
        };
        for shape in shapes {
            let x = tensor_of(rank, shape, dtype);
            let ops: &[Reduce] = match dtype {
                DType::Bool => &[Reduce::Max, Reduce::Min],
                d if d.is_float() => &[Reduce::Sum, Reduce::Mean, Reduce::Max, Reduce::Min],
                _ => &[Reduce::Sum, Reduce::Max, Reduce::Min],
            };
            for &op in ops {
                let what = format!("all_reduce {op:?} {dtype}{shape:?}");
                let got = dist::all_reduce(&x, op).unwrap();
                c.same(&what, &got, shape, &folded(op, shape, dtype, ranks), tol);
            }
            for axis in 0..shape.len() {
                // Every rank's tensor along `axis`, rank 0 first.
                let mut out = shape.to_vec();
                out[axis] *= ranks;
                let want: Vec<f64> = (0..out.iter().product())
                    .map(|i| {
                        let mut idx = index(i, &out);
                        let r = idx[axis] / shape[axis];
                        idx[axis] %= shape[axis];
                        value(r, flat(&idx, shape), dtype)
                    })
                    .collect();
                let got = dist::all_gather(&x, axis as isize - shape.len() as isize).unwrap();
                c.same(
                    &format!("all_gather {dtype}{shape:?} axis {axis}"),
                    &got,
                    &out,
                    &want,
                    0.0,
                );
                for &op in ops {
                    if shape[axis] % ranks != 0 {
                        let got = dist::reduce_scatter(&x, axis as isize, op);
                        let what = format!("reduce_scatter {dtype}{shape:?} axis {axis}");
                        c.error(&what, got, ErrorKind::Shape, &["equal blocks"]);
                        continue;
                    }
                    // This rank's block of the fold along `axis`.
                    let all = folded(op, shape, dtype, ranks);
                    let mut block = shape.to_vec();
                    block[axis] /= ranks;
                    let want: Vec<f64> = (0..block.iter().product())
                        .map(|i| {
                            let mut idx = index(i, &block);
                            idx[axis] += rank * block[axis];
                            all[flat(&idx, shape)]
                        })
                        .collect();
                    let got = dist::reduce_scatter(&x, axis as isize, op).unwrap();
                    let what = format!("reduce_scatter {op:?} {dtype}{shape:?} axis {axis}");
                    c.same(&what, &got, &block, &want, tol);
                }
            }
            for root in 0..ranks {
                let n: usize = shape.iter().product();
                let want: Vec<f64> = (0..n).map(|i| value(root, i, dtype)).collect();
                let got = dist::broadcast(&x, root).unwrap();
                c.same(
                    &format!("broadcast {dtype}{shape:?} root {root}"),
                    &got,
                    shape,
                    &want,
                    0.0,
                );
            }
        }
    }
    // Inside #[jit] and grad: `all_reduce` as a step of the program, with psum's gradient
    // (every rank's loss holds every rank's squares: the gradient is 2 n x).
    for dtype in [DType::F32, DType::F64] {
        let shape = [6, 12];
        let x = tensor_of(rank, &shape, dtype);
        let mean = folded(Reduce::Mean, &shape, dtype, ranks);
        let want: Vec<f64> = mean.iter().map(|m| 2.0 * m).collect();
        let got = doubled_mean(&x);
        c.same(&format!("jitted mean {dtype}"), &got, &shape, &want, 1e-6);
        let g = jitfuse::grad(
            |x: &Tensor| {
                dist::all_reduce(&x.square(), Reduce::Sum)
                    .unwrap()
                    .sum(0)
                    .sum(0)
            },
            &x,
        );
        let want: Vec<f64> = values(&x).iter().map(|v| 2.0 * ranks as f64 * v).collect();
        c.same(
            &format!("gradient of a sum over ranks {dtype}"),
            &g,
            &shape,
            &want,
            1e-6,
        );
        // Gathered along axis 1: every rank's doubled values, rank 0's columns first.
        let mut out = shape.to_vec();
        out[1] *= ranks;
        let want: Vec<f64> = (0..out.iter().product())
            .map(|i| {
                let mut idx = index(i, &out);
                let r = idx[1] / shape[1];
                idx[1] %= shape[1];
                2.0 * value(r, flat(&idx, &shape), dtype)
            })
            .collect();
        c.same(
            &format!("jitted all_gather {dtype}"),
            &doubled_gather(&x),
            &out,
            &want,
            0.0,
        );
        // This rank's columns of the mean.
        let mut block = shape.to_vec();
        block[1] /= ranks;
        let want: Vec<f64> = (0..block.iter().product())
            .map(|i| {
                let mut idx = index(i, &block);
                idx[1] += rank * block[1];
                mean[flat(&idx, &shape)]
            })
            .collect();
        let got = scattered_mean(&x);
        c.same(
            &format!("jitted reduce_scatter {dtype}"),
            &got,
            &block,
            &want,
            1e-6,
        );
        // Gradients: a gather's is the sum scattered back (2 n x for a loss holding every
        // rank's squares), a scatter's the gather (2 x).
        let g = jitfuse::grad(
            |x: &Tensor| dist::all_gather(&x.square(), 0).unwrap().sum(0).sum(0),
            &x,
        );
        let want: Vec<f64> = values(&x).iter().map(|v| 2.0 * ranks as f64 * v).collect();
        c.same(
            &format!("gradient of a gather {dtype}"),
            &g,
            &shape,
            &want,
            1e-6,
        );
        let g = jitfuse::grad(
            |x: &Tensor| {
                let y = dist::reduce_scatter(&x.square(), 1, Reduce::Sum).unwrap();
                y.sum(0).sum(0)
            },
            &x,
        );
        let want: Vec<f64> = values(&x).iter().map(|v| 2.0 * v).collect();
        c.same(
            &format!("gradient of a scatter {dtype}"),
            &g,
            &shape,
            &want,
            1e-6,
        );
        // Broadcast from every root, through `grad`: the root's values everywhere; the
        // root's gradient is every rank's cotangent summed (2 n x), the others' zero.
        for root in 0..ranks {
            let (v, g) = jitfuse::value_and_grad(
                |x: &Tensor| dist::broadcast(&x.square(), root).unwrap().sum(0).sum(0),
                &x,
            );
            let root_x: Vec<f64> = values(&tensor_of(root, &shape, dtype));
            let total: f64 = root_x.iter().map(|v| v * v).sum();
            c.same(
                &format!("broadcast from {root} {dtype}"),
                &v,
                &[],
                &[total],
                1e-6,
            );
            let factor = if rank == root {
                2.0 * ranks as f64
            } else {
                0.0
            };
            let want: Vec<f64> = values(&x).iter().map(|v| factor * v).collect();
            let what = format!("gradient of a broadcast from {root} {dtype}");
            c.same(&what, &g, &shape, &want, 1e-6);
        }
    }
    // Errors, on every rank alike, and the world goes on after them.
    let x = tensor_of(rank, &[6, 4], DType::F32);
    if ranks > 1 {
        let mine = tensor_of(rank, &[6, 4 + rank], DType::F32);
        let got = dist::all_reduce(&mine, Reduce::Sum);
        // Each rank names its own shape and another's (rank 0's, or rank 1's on rank 0).
        let (own, other) = (
            format!("f32[6,{}]", 4 + rank),
            if rank == 0 { "f32[6,5]" } else { "f32[6,4]" },
        );
        c.error("different shapes", got, ErrorKind::Shape, &[&own, other]);
    }
    c.error(
        "axis out of range",
        dist::all_gather(&x, 2),
        ErrorKind::Shape,
        &["axis 2"],
    );
    let got = dist::broadcast(&x, ranks);
    c.error("root past the ranks", got, ErrorKind::Argument, &["root"]);
    let ints = tensor_of(rank, &[6], DType::I32);
    let got = dist::all_reduce(&ints, Reduce::Mean);
    c.error(
        "mean of integers",
        got,
        ErrorKind::DType,
        &["Mean", "i32[6]"],
    );
    let got = reads_its_argument::try_call(&x);
    c.error(
        "a panic jitfuse catches",
        got,
        ErrorKind::Panic,
        &["panicked"],
    );
    let got = dist::all_reduce(&x, Reduce::Sum).unwrap();
    c.same(
        "after the errors",
        &got,
        &[6, 4],
        &folded(Reduce::Sum, &[6, 4], DType::F32, ranks),
        1e-6,
    );
    // Shards: equal contiguous blocks, rank order, the remainder left out.
    let items: Vec<usize> = (0..3 * ranks + ranks - 1).collect();
    let mine = dist::shard(&items);
    c.count += 1;
    if mine != (3 * rank..3 * rank + 3).collect::<Vec<_>>() {
        c.failures
            .push(format!("shard of {} items: {mine:?}", items.len()));
    }
    dist::barrier();
    if c.failures.is_empty() {
        println!("rank {} of {ranks}: {} checks passed", c.rank, c.count);
    } else {
        for f in &c.failures {
            eprintln!("rank {} of {ranks}: {f}", c.rank);
        }
        std::process::exit(1);
    }
}
