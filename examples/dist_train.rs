//! Data-parallel training on however many processes it runs: a small MLP trained for 200
//! Adam steps with `optim::data_parallel` and with `optim::sharded` (the Adam state split over
//! the ranks), each rank on its shard of every batch (`dist::shard`), against the same model
//! trained in one process on whole batches, which every rank also computes on its own.
//! Checks that the parameters stay within 1e-6 of the one-process run (relative to their
//! largest magnitude), that every rank holds the same bits, and that a rank's sharded state
//! is at most its share (plus padding) of the whole state. Halfway the sharded run is saved
//! (`Sharded::save_state`: one file of the whole state) and resumed both on the same ranks
//! (the same bits as straight through) and on one process with plain Adam (within 1e-6 of the
//! one-process run); saved again as a file per rank (`Sharded::save_state_per_rank`), it is
//! read back with the same bits and joins into the whole state. Last, a sharded run of global-norm clipping and AdamW decaying only the
//! matrices (neither elementwise) against the same optimiser in one process. Prints four
//! lines per rank and exits non-zero on any failure.
//!
//! ```text
//! cargo build --release --features mpi --example dist_train
//! mpirun -np 3 target/release/examples/dist_train
//! ```
//! (without the `mpi` feature, or without `mpirun`, the world is one process, where the
//! data-parallel step is the plain one.)

use jitfuse::dist;
use jitfuse::optim::{
    adam, adamw, clip_by_global_norm, data_parallel, sharded, Adam, Chain, ClipByGlobalNorm,
    DataParallel, Mask, Optimizer, Sharded, StateOf,
};
use jitfuse::prelude::*;

/// Rows of every batch, split over the ranks (a multiple of 1, 2, 3, 4 and 6).
const BATCH: usize = 48;
const FEATURES: usize = 8;
const HIDDEN: usize = 32;
const STEPS: usize = 200;

#[derive(Tree, Clone, Debug)]
struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

type Plain = Adam<f64>;
type Parallel = DataParallel<Adam<f64>>;
type Split = Sharded<Adam<f64>>;

fn plain() -> Plain {
    adam(1e-2, 0.9, 0.999, 1e-8)
}

/// The same Adam, on gradients averaged over the ranks; buckets of 1 KiB, so that the
/// gradients of this small model make several of them.
fn parallel() -> Parallel {
    data_parallel(plain()).bucket_bytes(1024)
}

/// The same Adam, its state split over the ranks (buckets of 1 KiB too).
fn split() -> Split {
    sharded(plain()).bucket_bytes(1024)
}

/// nanoGPT's kind of optimiser, neither part elementwise: clipping at a global norm the
/// gradients pass, then AdamW decaying the matrices only.
///
/// (Clipping at a norm the gradients always pass, 0.05 say, makes the steps normalised: the
/// training then amplifies the rounding of the norm, a sum of squares in another order than
/// one process's, past 1e-6 after about 100 steps. At 0.2 it clips the first steps.)
const CLIP: f64 = 0.2;
type Clipped = Chain<ClipByGlobalNorm, Adam<f64>>;
type SplitClipped = Sharded<Clipped>;

fn clipped() -> Clipped {
    let decay = Mask::by_leaf(|t| t.ndim() >= 2);
    clip_by_global_norm(CLIP).then(adamw(1e-2, 0.9, 0.999, 1e-8, 0.1).decay_mask(decay))
}

fn loss(p: &Mlp, x: &Tensor, y: &Tensor) -> Tensor {
    let h = (x.matmul(&p.w1) + &p.b1).tanh();
    let out = h.matmul(&p.w2) + &p.b2;
    (out - y).square().mean_all()
}

#[jit]
fn plain_step(
    p: Mlp,
    s: StateOf<Plain, Mlp>,
    x: &Tensor,
    y: &Tensor,
) -> (Mlp, StateOf<Plain, Mlp>) {
    let g = grad(|p: &Mlp| loss(p, x, y), &p);
    plain().update(&g, s, p)
}

#[jit]
fn parallel_step(
    p: Mlp,
    s: StateOf<Parallel, Mlp>,
    x: &Tensor,
    y: &Tensor,
) -> (Mlp, StateOf<Parallel, Mlp>) {
    let g = grad(|p: &Mlp| loss(p, x, y), &p);
    parallel().update(&g, s, p)
}

#[jit]
fn split_step(
    p: Mlp,
    s: StateOf<Split, Mlp>,
    x: &Tensor,
    y: &Tensor,
) -> (Mlp, StateOf<Split, Mlp>) {
    let g = grad(|p: &Mlp| loss(p, x, y), &p);
    split().update(&g, s, p)
}

#[jit]
fn clipped_step(
    p: Mlp,
    s: StateOf<Clipped, Mlp>,
    x: &Tensor,
    y: &Tensor,
) -> (Mlp, StateOf<Clipped, Mlp>) {
    let g = grad(|p: &Mlp| loss(p, x, y), &p);
    clipped().update(&g, s, p)
}

/// The sum of squares of the gradient is added over the ranks, the decay mask cut into
/// each rank's blocks (buckets of 1 KiB: leaves share them).
#[jit]
fn split_clipped_step(
    p: Mlp,
    s: StateOf<SplitClipped, Mlp>,
    x: &Tensor,
    y: &Tensor,
) -> (Mlp, StateOf<SplitClipped, Mlp>) {
    let g = grad(|p: &Mlp| loss(p, x, y), &p);
    sharded(clipped()).bucket_bytes(1024).update(&g, s, p)
}

/// A deterministic tensor of `shape`: the same on every rank.
fn fixed(shape: &[usize], seed: f64, scale: f64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| (scale * ((i as f64 + 1.0) * 0.7548 + seed).sin()) as f32)
        .collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// Batch `b`: inputs and targets, the same on every rank.
fn batch(b: usize) -> (Tensor, Tensor) {
    let x = fixed(&[BATCH, FEATURES], 0.31 * b as f64, 1.0);
    let y = (x.sum(-1) * 0.5).sin().reshape(&[BATCH as isize, 1]);
    (x, y)
}

fn params(p: &Mlp) -> Vec<f32> {
    p.leaves()
        .iter()
        .flat_map(|t| t.to_vec::<f32>().unwrap())
        .collect()
}

fn bytes<T: Tree>(t: &T) -> usize {
    t.leaves().iter().map(|x| x.size_bytes()).sum()
}

/// The largest difference of `got` from `want` relative to `want`'s largest magnitude, and
/// whether every rank's `got` has the same bits.
fn compare(got: &[f32], want: &[f32]) -> (f32, bool) {
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    let diff = (got.iter().zip(want)).fold(0f32, |m, (a, b)| m.max((a - b).abs())) / scale;
    let mine = Tensor::from_vec(got.to_vec(), &[1, got.len()]).unwrap();
    let all = dist::all_gather(&mine, 0).unwrap().to_vec::<f32>().unwrap();
    let same = all
        .chunks(got.len())
        .all(|r| r.iter().zip(got).all(|(a, b)| a.to_bits() == b.to_bits()));
    (diff, same)
}

fn main() {
    dist::init();
    let (rank, size) = (dist::rank(), dist::size());
    let init = Mlp {
        w1: fixed(&[FEATURES, HIDDEN], 1.0, 0.5),
        b1: Tensor::zeros(&[HIDDEN], DType::F32),
        w2: fixed(&[HIDDEN, 1], 2.0, 0.5),
        b2: Tensor::zeros(&[1], DType::F32),
    };
    let rows = dist::shard(&(0..BATCH).collect::<Vec<_>>());
    let (first, end) = (rows[0] as isize, (rows[rows.len() - 1] + 1) as isize);
    let (mut p, mut s) = (init.clone(), parallel().init(&init));
    let (mut q, mut t) = (init.clone(), plain().init(&init));
    let (mut r, mut u) = (init.clone(), split().init(&init));
    let (mut c, mut cs) = (init.clone(), clipped().init(&init));
    let split_clipped = sharded(clipped()).bucket_bytes(1024);
    let (mut d, mut ds) = (init.clone(), split_clipped.init(&init));
    let mut clipped = 0;
    let (whole, share) = (bytes(&t), bytes(&u));
    // Halfway, the sharded run is checkpointed (its state as one file of the whole state) and
    // resumed twice: sharded on these ranks, and on one process with the plain optimiser.
    let dir = std::env::temp_dir();
    let state_file = dir.join(format!("jitfuse-dist-train-{size}-state.safetensors"));
    let params_file = dir.join(format!("jitfuse-dist-train-{size}-params.safetensors"));
    let rank_dir = dir.join(format!("jitfuse-dist-train-{size}-per-rank"));
    let mut resumed: Option<(Mlp, StateOf<Split, Mlp>, Mlp, StateOf<Plain, Mlp>)> = None;
    let mut per_rank_ok = false;
    for b in 0..STEPS {
        let (x, y) = batch(b);
        let (xs, ys) = (
            x.slice_axis(0, first, end, 1),
            y.slice_axis(0, first, end, 1),
        );
        (p, s) = parallel_step(p, s, &xs, &ys);
        (q, t) = plain_step(q, t, &x, &y);
        if let Some((r2, u2, one, v)) = resumed.take() {
            let (r2, u2) = split_step(r2, u2, &xs, &ys);
            let (one, v) = plain_step(one, v, &x, &y);
            resumed = Some((r2, u2, one, v));
        }
        (r, u) = split_step(r, u, &xs, &ys);
        let g = grad(|p: &Mlp| loss(p, &x, &y), &c);
        clipped += (jitfuse::optim::global_norm(&g).item::<f64>().unwrap() > CLIP) as usize;
        (c, cs) = clipped_step(c, cs, &x, &y);
        (d, ds) = split_clipped_step(d, ds, &xs, &ys);
        if b + 1 == STEPS / 2 {
            split().save_state(&u, &r, &state_file).unwrap();
            if rank == 0 {
                jitfuse::io::save(&r, &params_file).unwrap();
            }
            dist::barrier();
            let u2 = split().load_state(&state_file, &r).unwrap();
            let one = jitfuse::io::load(&params_file, &init).unwrap();
            let v = jitfuse::io::load(&state_file, &plain().init(&init)).unwrap();
            resumed = Some((r.clone(), u2, one, v));
            // The same state as a directory of one file per rank: read back here, and joined
            // into the whole state (what one process would continue from).
            split().save_state_per_rank(&u, &r, &rank_dir).unwrap();
            let u3 = split().load_state(&rank_dir, &r).unwrap();
            let joined = split().whole_state_of_ranks(&rank_dir, &r).unwrap();
            let gathered = split()
                .gather_state(Tree::map(&u, |t| t.clone()), &r)
                .unwrap();
            let state_bits = |t: Vec<Tensor>| -> Vec<u32> {
                (t.iter()
                    .flat_map(|x| x.cast(DType::F32).to_vec::<f32>().unwrap()))
                .map(f32::to_bits)
                .collect()
            };
            per_rank_ok = state_bits(u3.leaves()) == state_bits(u.leaves())
                && state_bits(joined.leaves()) == state_bits(gathered.leaves());
        }
    }
    dist::barrier();
    if rank == 0 {
        let _ = (
            std::fs::remove_file(&state_file),
            std::fs::remove_file(&params_file),
            std::fs::remove_dir_all(&rank_dir),
        );
    }
    let want = params(&q);
    let mut ok = true;
    let (diff, same) = compare(&params(&p), &want);
    let good = diff <= 1e-6 && same;
    ok &= good;
    println!(
        "rank {rank} of {size}: {STEPS} data-parallel Adam steps on {} of {BATCH} rows; largest \
         difference from one process {diff:.2e} of the largest parameter; the same bits on \
         every rank: {same}: {}",
        rows.len(),
        if good { "ok" } else { "FAILED" }
    );
    let (diff, same) = compare(&params(&r), &want);
    // The moments of this rank's blocks (each bucket padded to a multiple of the rank count)
    // and the step counter.
    let padding = 2 * 4 * size * 4;
    let fits = share <= whole.div_ceil(size) + padding;
    let good = diff <= 1e-6 && same && fits;
    ok &= good;
    println!(
        "rank {rank} of {size}: {STEPS} sharded Adam steps; largest difference {diff:.2e}; the \
         same bits on every rank: {same}; state {share} of {whole} bytes ({:.3}): {}",
        share as f64 / whole as f64,
        if good { "ok" } else { "FAILED" }
    );
    let (diff, same) = compare(&params(&d), &params(&c));
    let good = diff <= 1e-6 && same && clipped >= 10;
    ok &= good;
    println!(
        "rank {rank} of {size}: {STEPS} sharded steps clipping at the global norm ({clipped} \
         clipped) and decaying the matrices; largest difference from one process {diff:.2e}; \
         the same bits on every rank: {same}: {}",
        if good { "ok" } else { "FAILED" }
    );
    let _ = (cs, ds);
    let (r2, _, one, _) = resumed.expect("resumed halfway");
    let (diff, _) = compare(&params(&one), &want);
    let same = params(&r2)
        .iter()
        .zip(params(&r))
        .all(|(a, b)| a.to_bits() == b.to_bits());
    let good = same && diff <= 1e-6 && per_rank_ok;
    ok &= good;
    println!(
        "rank {rank} of {size}: checkpointed after {} steps; resumed on {size} ranks: the same \
         bits as straight through: {same}; resumed on one process: largest difference \
         {diff:.2e}; saved a file per rank, read back and joined into the whole state bit for \
         bit: {per_rank_ok}: {}",
        STEPS / 2,
        if good { "ok" } else { "FAILED" }
    );
    dist::barrier();
    if !ok {
        std::process::exit(1);
    }
}
