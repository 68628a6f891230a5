//! Trains nanoGPT's character-level Shakespeare model (the CPU settings of nanoGPT's
//! README: 4 layers, 4 heads, width 128, block 64, batch 12, 2000 iterations) on tiny
//! Shakespeare, then samples from it.
//!
//! ```text
//! cargo run --release --example gpt                  # the full run (about 4 minutes on 2 cores)
//! cargo run --release --example gpt -- --iters 200   # a short one
//! ```
//!
//! Options: `--iters N` (2000), `--eval-every N` (250), `--seed N` (1337), `--sample N`
//! characters (500), `--data PATH` (the copy in `data/`), `--checkpoint PATH`
//! (`target/gpt-shakespeare.safetensors`), `--data-parallel`, `--sharded`, `--check`,
//! `--bucket-kib N` (the gradients' buckets; `data_parallel` chooses by default), `--dtype
//! f32|bf16`,
//! `--size cpu|gpu` (nanoGPT's GPU default: 6 layers, 6 heads, width 384, block 256, batch
//! 64; about 8 s a step on 2 cores).
//!
//! `--dtype bf16` trains with the mixed-precision policy `Policy::new(F32, BF16, F32)`
//! (`jitfuse::precision`): f32 parameters and AdamW state, the model computed on bf16
//! values (activations, residuals and products stored in 16 bits, every op computing in
//! f32), the loss in f32; it prints the memory report of the f32 step beside the bf16
//! one's. Evaluation and sampling run the f32 parameters in f32.
//!
//! `--sharded` is `--data-parallel` with the optimiser state split over the ranks
//! (`optim::sharded`: each rank keeps the AdamW moments of its block of the parameters,
//! clips by the global norm over every rank's block and gathers the updates); it prints the
//! state each rank keeps beside the whole state's size.
//!
//! `--data-parallel` trains on every process of `mpirun` (built with `--features mpi`):
//! every rank draws the same batch and takes its rows (12 rows: 1, 2, 3, 4 or 6 ranks), the
//! gradients are averaged over the ranks (`optim::data_parallel`), so the run computes what
//! one process computes, each rank doing its share; rank 0 prints, evaluates and saves. It
//! prints each rank's step time and the time it waited for communication the step did not
//! hide (`dist::time_waiting`). `--check` also trains one process's copy on whole batches on
//! every rank and compares: the loss at every step (relative 1e-6; 1e-3 with `--dtype bf16`,
//! where a last-bit difference of an f32 sum can move a bf16 rounding) and, at the end, the
//! parameters of every rank bit for bit (a checksum gathered from every rank); it exits
//! non-zero where they differ.
//!
//! ```text
//! cargo build --release --features mpi --example gpt
//! mpirun -np 2 -x RAYON_NUM_THREADS=1 target/release/examples/gpt --data-parallel
//! ```
//!
//! What it shows: a whole training step (loss, gradient, clipping, AdamW with a
//! schedule) is one `#[jit]` function compiled once; the model and optimiser state are
//! donated, so the new parameters and moments are written in place; attention is the
//! fused op (no `[B, H, T, T]` score matrix); the cross-entropy reads integer labels (no
//! one-hot). It prints progress, the step's memory report, validation loss (mean over
//! 20 random batches of the last 10 % of the text, as nanoGPT estimates it, and over the
//! whole of it), saves a
//! checkpoint, loads it back and generates text from the loaded model.

// The bench uses what the example does not (the GPU size).
#[allow(dead_code)]
mod model;

use jitfuse::dist;
use jitfuse::optim::Optimizer;
use jitfuse::optim::StateOf;
use jitfuse::precision::Policy;
use jitfuse::prelude::*;
use model::{
    context_logits, dp_train_step, eval_loss, mixed_train_step, opt, sharded_opt,
    sharded_train_step, train_step, Config, Gpt, Opt, ShardedOpt,
};
use std::time::{Duration, Instant};

struct Options {
    iters: usize,
    eval_every: usize,
    seed: u64,
    sample: usize,
    data: String,
    checkpoint: String,
    data_parallel: bool,
    /// `--sharded`: data-parallel with the optimiser state split over the ranks.
    sharded: bool,
    /// `--bucket-kib`: the gradients' buckets (`DataParallel::bucket_bytes`; 0: its choice).
    bucket_bytes: usize,
    check: bool,
    /// The type the model computes on (`--dtype`): f32, or bf16 under a mixed policy.
    compute: DType,
    /// The model's and batches' sizes (`--size`).
    config: Config,
}

fn options() -> Options {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut o = Options {
        iters: 2000,
        eval_every: 250,
        seed: 1337,
        sample: 500,
        data: format!("{root}/data/tinyshakespeare.txt"),
        checkpoint: format!("{root}/target/gpt-shakespeare.safetensors"),
        data_parallel: false,
        sharded: false,
        bucket_bytes: 0,
        check: false,
        compute: DType::F32,
        config: Config::SHAKESPEARE_CPU,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| fail(&format!("{flag} needs a value")))
        };
        let number = |v: String| {
            v.parse::<u64>()
                .unwrap_or_else(|_| fail(&format!("{flag}: {v:?} is not a number")))
        };
        match flag.as_str() {
            "--iters" => o.iters = number(value()) as usize,
            "--eval-every" => o.eval_every = number(value()).max(1) as usize,
            "--seed" => o.seed = number(value()),
            "--sample" => o.sample = number(value()) as usize,
            "--data" => o.data = value(),
            "--checkpoint" => o.checkpoint = value(),
            "--data-parallel" => o.data_parallel = true,
            "--sharded" => (o.data_parallel, o.sharded) = (true, true),
            "--bucket-kib" => o.bucket_bytes = (number(value()) as usize).max(1) << 10,
            "--check" => o.check = true,
            "--size" => {
                o.config = match value().as_str() {
                    "cpu" => Config::SHAKESPEARE_CPU,
                    "gpu" => Config::SHAKESPEARE_GPU,
                    v => fail(&format!("--size: {v:?} is not cpu or gpu")),
                }
            }
            "--dtype" => {
                o.compute = match value().as_str() {
                    "f32" => DType::F32,
                    "bf16" => DType::BF16,
                    v => fail(&format!("--dtype: {v:?} is not f32 or bf16")),
                }
            }
            _ => fail(&format!(
                "unknown option {flag:?} (see the top of examples/gpt/main.rs)"
            )),
        }
    }
    if o.iters == 0 {
        fail("--iters must be at least 1");
    }
    o
}

fn fail(msg: &str) -> ! {
    eprintln!("gpt: {msg}");
    std::process::exit(2)
}

/// The text as character ids, with the alphabet (sorted, as nanoGPT's `prepare.py`).
struct Corpus {
    alphabet: Vec<char>,
    train: Vec<i32>,
    val: Vec<i32>,
}

impl Corpus {
    fn load(path: &str) -> Corpus {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| fail(&format!("cannot read the text {path}: {e}")));
        let mut alphabet: Vec<char> = text.chars().collect();
        alphabet.sort_unstable();
        alphabet.dedup();
        let ids: Vec<i32> = text
            .chars()
            .map(|c| alphabet.binary_search(&c).unwrap() as i32)
            .collect();
        let split = ids.len() * 9 / 10;
        Corpus {
            alphabet,
            val: ids[split..].to_vec(),
            train: ids[..split].to_vec(),
        }
    }
}

/// SplitMix64: batch offsets and sampling draws, reproducible from `--seed`.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `batch` random windows of `block + 1` characters: inputs and next characters.
fn batch(data: &[i32], cfg: &Config, rng: &mut Rng) -> (Tensor, Tensor) {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..cfg.batch {
        let o = rng.below(data.len() - cfg.block - 1);
        x.extend_from_slice(&data[o..o + cfg.block]);
        y.extend_from_slice(&data[o + 1..o + cfg.block + 1]);
    }
    let shape = [cfg.batch, cfg.block];
    (
        Tensor::from_vec(x, &shape).unwrap(),
        Tensor::from_vec(y, &shape).unwrap(),
    )
}

/// Mean loss over 20 random batches of `data`.
fn estimate(p: &Gpt, data: &[i32], cfg: &Config, rng: &mut Rng) -> f32 {
    let total: f32 = (0..20)
        .map(|_| {
            let (x, y) = batch(data, cfg, rng);
            eval_loss(p, &x, &y, cfg.heads).item::<f32>().unwrap()
        })
        .sum();
    total / 20.0
}

/// Mean loss over every position of `data` cut into consecutive windows of `block`
/// characters (those that fill whole batches): the loss the random-batch estimate samples,
/// without its sampling noise. Returns it and the number of windows read.
fn whole_split_loss(p: &Gpt, data: &[i32], cfg: &Config) -> (f64, usize) {
    let windows = (data.len() - 1) / cfg.block / cfg.batch * cfg.batch;
    let mut total = 0.0f64;
    for first in (0..windows).step_by(cfg.batch) {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for w in first..first + cfg.batch {
            let o = w * cfg.block;
            x.extend_from_slice(&data[o..o + cfg.block]);
            y.extend_from_slice(&data[o + 1..o + cfg.block + 1]);
        }
        let shape = [cfg.batch, cfg.block];
        let (x, y) = (
            Tensor::from_vec(x, &shape).unwrap(),
            Tensor::from_vec(y, &shape).unwrap(),
        );
        total += eval_loss(p, &x, &y, cfg.heads).item::<f32>().unwrap() as f64;
    }
    (total / (windows / cfg.batch) as f64, windows)
}

fn main() {
    let o = options();
    // On several processes (`--data-parallel`), rank 0 speaks for all.
    let (rank, ranks) = match o.data_parallel {
        true => (dist::rank(), dist::size()),
        false => (0, 1),
    };
    macro_rules! say {
        ($($t:tt)*) => {
            if rank == 0 {
                println!($($t)*);
            }
        };
    }
    let corpus = Corpus::load(&o.data);
    let mut cfg = o.config;
    cfg.vocab = corpus.alphabet.len();
    if !cfg.batch.is_multiple_of(ranks) {
        fail(&format!(
            "--data-parallel: {ranks} ranks do not split a batch of {} rows",
            cfg.batch
        ));
    }
    // This rank's rows of every batch.
    let rows = (cfg.batch / ranks * rank) as isize..(cfg.batch / ranks * (rank + 1)) as isize;
    let policy = Policy::new(DType::F32, o.compute, DType::F32);
    let step_fn = |p, s: State, x: &Tensor, y: &Tensor| {
        let (h, r, n, b) = (cfg.heads, cfg.remat, o.iters, o.bucket_bytes);
        let mine = |t: &Tensor| t.slice_axis(0, rows.start, rows.end, 1);
        match s {
            State::Sharded(s) => {
                let (p, s, l) = sharded_train_step(p, s, &mine(x), &mine(y), h, r, n, policy, b);
                (p, State::Sharded(s), l)
            }
            State::Whole(s) => {
                let (p, s, l) = match o.data_parallel {
                    false if o.compute != DType::F32 => {
                        mixed_train_step(p, s, x, y, h, r, n, policy)
                    }
                    false => train_step(p, s, x, y, h, r, n),
                    true => dp_train_step(p, s, &mine(x), &mine(y), h, r, n, policy, b),
                };
                (p, State::Whole(s), l)
            }
        }
    };
    say!(
        "tiny Shakespeare: {} characters, {} distinct; {} for training, {} for validation",
        corpus.train.len() + corpus.val.len(),
        cfg.vocab,
        corpus.train.len(),
        corpus.val.len()
    );

    let mut p = Gpt::init(&cfg, &Key::new(o.seed));
    let mut state = match o.sharded {
        true => State::Sharded(sharded_opt(o.iters, o.bucket_bytes).init(&p)),
        false => State::Whole(opt(o.iters).init(&p)),
    };
    say!(
        "model: {} layers, {} heads, width {}, block {}, batch {}: {} parameters\n",
        cfg.layers,
        cfg.heads,
        cfg.width,
        cfg.block,
        cfg.batch,
        p.parameters()
    );
    if let State::Sharded(s) = &state {
        let (mine, whole) = (bytes(s), bytes(&opt(o.iters).init(&p)));
        say!(
            "optimiser state (--sharded): {mine} bytes on each rank of {whole} for the whole \
             state ({:.3})\n",
            mine as f64 / whole as f64
        );
    }

    let mut rng = Rng(o.seed);
    let mut eval_rng = Rng(o.seed ^ 0xE7A1);
    let mut times: Vec<Duration> = Vec::with_capacity(o.iters);
    let mut waits: Vec<Duration> = Vec::with_capacity(o.iters);
    // `--check`: one process's copy, trained on whole batches.
    let mut copy = o.check.then(|| (p.clone(), opt(o.iters).init(&p)));
    let mut worst = 0f64;
    let (mut window, mut window_loss) = (Instant::now(), 0.0f64);
    let mut donated = 0;
    let wall = Instant::now();
    let mut val = f32::NAN;
    for step in 0..o.iters {
        let (x, y) = batch(&corpus.train, &cfg, &mut rng);
        let before = p.wte.storage_addr();
        let (t, waited) = (Instant::now(), dist::time_waiting());
        let (p2, s2, l) = step_fn(p, state, &x, &y);
        let loss = l.item::<f32>().unwrap();
        times.push(t.elapsed());
        waits.push(dist::time_waiting() - waited);
        if let Some((q, qs)) = copy.take() {
            let (q, qs, lq) = match o.compute {
                DType::F32 => train_step(q, qs, &x, &y, cfg.heads, cfg.remat, o.iters),
                _ => mixed_train_step(q, qs, &x, &y, cfg.heads, cfg.remat, o.iters, policy),
            };
            let lq = lq.item::<f32>().unwrap() as f64;
            worst = worst.max((loss as f64 - lq).abs() / lq.abs());
            copy = Some((q, qs));
        }
        donated += (p2.wte.storage_addr() == before) as usize;
        (p, state) = (p2, s2);
        window_loss += loss as f64;
        if step == 0 {
            say!(
                "step    0: loss {loss:.4} (first call: trace, compile and run in {:.2} s)",
                times[0].as_secs_f64()
            );
            let (x, y) = batch(&corpus.train, &cfg, &mut rng);
            let (s, h, r, b) = (state.clone(), cfg.heads, cfg.remat, o.bucket_bytes);
            let (x, y) = match o.data_parallel {
                true => (
                    x.slice_axis(0, rows.start, rows.end, 1),
                    y.slice_axis(0, rows.start, rows.end, 1),
                ),
                false => (x, y),
            };
            let lowered = match s {
                State::Sharded(s) => {
                    sharded_train_step::lower(p.clone(), s, &x, &y, h, r, o.iters, policy, b)
                }
                State::Whole(s) if o.data_parallel => {
                    dp_train_step::lower(p.clone(), s, &x, &y, h, r, o.iters, policy, b)
                }
                State::Whole(s) => train_step::lower(p.clone(), s, &x, &y, h, r, o.iters),
            };
            let m = lowered.and_then(|l| l.compile()).unwrap().memory_analysis();
            if o.compute == DType::F32 || o.data_parallel {
                say!("memory of the train step:\n{m}\n");
            } else {
                let State::Whole(s) = state.clone() else {
                    unreachable!("--sharded trains on several processes")
                };
                let (x2, y2) = (x.clone(), y.clone());
                let mixed = mixed_train_step::lower(p.clone(), s, &x2, &y2, h, r, o.iters, policy);
                let b = mixed.and_then(|l| l.compile()).unwrap().memory_analysis();
                say!("memory of the train step in f32:\n{m}\n");
                say!("memory of the train step under {policy:?}:\n{b}\n");
                say!(
                    "temporaries under the policy: {:.2}x the f32 step's\n",
                    b.temp_bytes as f64 / m.temp_bytes as f64
                );
            }
            (window, window_loss) = (Instant::now(), 0.0);
            continue;
        }
        let last = step + 1 == o.iters;
        if step % 50 == 0 || last {
            let n = if step % 50 == 0 { 50 } else { step % 50 };
            let per_step = window.elapsed().as_secs_f64() / n as f64;
            say!(
                "step {step:4}: loss {:.4} (mean of the last {n}), {:.1} ms per step, {:.0} tokens/s",
                window_loss / n as f64,
                per_step * 1e3,
                (cfg.batch * cfg.block) as f64 / per_step
            );
            (window, window_loss) = (Instant::now(), 0.0);
        }
        if (step % o.eval_every == 0 || last) && rank == 0 {
            let train = estimate(&p, &corpus.train, &cfg, &mut eval_rng);
            val = estimate(&p, &corpus.val, &cfg, &mut eval_rng);
            say!("            train loss {train:.4}, validation loss {val:.4}");
            window = Instant::now();
        }
    }
    let wall = wall.elapsed();
    let mut sorted = times[1..].to_vec();
    sorted.sort();
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
    say!(
        "\n{} steps in {:.1} s (with evaluation): median {:.1} ms per step, {:.0} tokens/s; \
         the parameters were donated (updated in place) in {donated} of {} steps",
        o.iters,
        wall.as_secs_f64(),
        median.as_secs_f64() * 1e3,
        (cfg.batch * cfg.block) as f64 / median.as_secs_f64().max(1e-9),
        o.iters
    );
    say!("final validation loss {val:.4} (nanoGPT's README: 1.88 for this configuration)");
    if o.data_parallel {
        report_ranks(&times, &waits, &cfg);
    }
    if let Some((q, _)) = &copy {
        let same = check_ranks(&p, q);
        say!(
            "--check: largest relative difference of the loss from one process's, over {} \
             steps: {worst:.2e}; the parameters the same bits on every rank: {same}",
            o.iters
        );
        let bound = if o.compute == DType::F32 { 1e-6 } else { 1e-3 };
        if worst > bound || !same {
            eprintln!("gpt: --check failed on rank {rank}");
            std::process::exit(1);
        }
    }
    if rank != 0 {
        return;
    }
    let (whole, windows) = whole_split_loss(&p, &corpus.val, &cfg);
    say!(
        "validation loss over the whole split: {whole:.4} ({windows} windows of {} characters; \
         the 20-batch estimate above varies by about ±0.02 with the batches drawn)",
        cfg.block
    );

    // ---- checkpoint: save, load into a fresh tree, sample from what was loaded ----
    if let Some(dir) = std::path::Path::new(&o.checkpoint).parent() {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| fail(&format!("{}: {e}", dir.display())));
    }
    jitfuse::save(&p, &o.checkpoint).unwrap_or_else(|e| fail(&e.to_string()));
    let template = Gpt::init(&cfg, &Key::new(0));
    let loaded: Gpt =
        jitfuse::load(&o.checkpoint, &template).unwrap_or_else(|e| fail(&e.to_string()));
    let same = p
        .leaves()
        .iter()
        .zip(loaded.leaves())
        .all(|(a, b)| a.to_vec::<f32>().unwrap() == b.to_vec::<f32>().unwrap());
    say!(
        "checkpoint: {} ({} bytes), loaded back {}",
        o.checkpoint,
        std::fs::metadata(&o.checkpoint)
            .map(|m| m.len())
            .unwrap_or(0),
        if same { "identical" } else { "DIFFERENT" }
    );
    assert!(same, "a checkpoint loads back to the saved parameters");

    let text = generate(&loaded, &cfg, &corpus.alphabet, o.sample, &mut rng);
    say!(
        "\n---- {} characters sampled from the loaded model ----\n{text}",
        o.sample
    );
}

/// The optimiser state: [`Opt`]'s, or under `--sharded` this rank's share of it.
#[derive(Clone)]
enum State {
    Whole(StateOf<Opt, Gpt>),
    Sharded(StateOf<ShardedOpt, Gpt>),
}

fn bytes<T: Tree>(t: &T) -> usize {
    t.leaves().iter().map(|x| x.size_bytes()).sum()
}

/// Each rank's median step time and the communication it waited for in it, printed by rank 0
/// (gathered from every rank).
fn report_ranks(times: &[Duration], waits: &[Duration], cfg: &Config) {
    let median = |d: &[Duration]| {
        let mut v: Vec<f64> = d.iter().skip(1).map(|t| t.as_secs_f64() * 1e3).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let mean = |d: &[Duration]| {
        d.iter().skip(1).map(|t| t.as_secs_f64() * 1e3).sum::<f64>() / (d.len().max(2) - 1) as f64
    };
    let mine = Tensor::from_vec(vec![median(times), mean(waits)], &[1, 2]).unwrap();
    let all = dist::all_gather(&mine, 0).unwrap().to_vec::<f64>().unwrap();
    let ranks = all.len() / 2;
    if dist::rank() != 0 {
        return;
    }
    let rows = (cfg.batch / ranks * cfg.block) as f64;
    for (r, v) in all.chunks(2).enumerate() {
        println!(
            "rank {r}: median {:.1} ms per step, {:.0} tokens/s of its rows; waited {:.2} ms per \
             step for communication the step did not hide ({:.1} %)",
            v[0],
            rows / v[0] * 1e3,
            v[1],
            100.0 * v[1] / v[0]
        );
    }
}

/// Whether every rank holds the same bits in `p` (a checksum of them gathered from every
/// rank), and the same for the one-process copy `q`.
fn check_ranks(p: &Gpt, q: &Gpt) -> bool {
    use std::hash::{Hash, Hasher};
    let sum = |t: &Gpt| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for l in t.leaves() {
            for v in l.to_vec::<f32>().unwrap() {
                v.to_bits().hash(&mut h);
            }
        }
        h.finish() as i64
    };
    let mine = Tensor::from_vec(vec![sum(p), sum(q)], &[1, 2]).unwrap();
    let all = dist::all_gather(&mine, 0).unwrap().to_vec::<i64>().unwrap();
    all.chunks(2).all(|c| c == &all[..2])
}

/// `n` characters after a newline, each drawn from the softmax of the model's logits
/// (temperature 1) given the last `block` characters.
fn generate(p: &Gpt, cfg: &Config, alphabet: &[char], n: usize, rng: &mut Rng) -> String {
    let newline = alphabet.binary_search(&'\n').unwrap_or(0) as i32;
    let mut ids = vec![newline];
    for _ in 0..n {
        let start = ids.len().saturating_sub(cfg.block);
        let mut window = ids[start..].to_vec();
        let last = window.len() - 1;
        window.resize(cfg.block, 0);
        let x = Tensor::from_vec(window, &[1, cfg.block]).unwrap();
        let logits = context_logits(p, &x, cfg.heads).to_vec::<f32>().unwrap();
        let row = &logits[last * cfg.vocab..(last + 1) * cfg.vocab];
        let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let weights: Vec<f64> = row.iter().map(|&l| ((l - max) as f64).exp()).collect();
        let mut u = rng.unit() * weights.iter().sum::<f64>();
        let mut next = weights.len() - 1;
        for (i, w) in weights.iter().enumerate() {
            if u < *w {
                next = i;
                break;
            }
            u -= w;
        }
        ids.push(next as i32);
    }
    ids[1..].iter().map(|&i| alphabet[i as usize]).collect()
}
