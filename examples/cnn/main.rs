//! Train a convolutional network on Fashion-MNIST (70,000 28×28 grey images of clothing in
//! 10 classes; the idx files ship in `data/fashion-mnist`, MIT).
//!
//! `--model cnn` (the default) is the network of Fashion-MNIST's own benchmark (two 5×5
//! convolutions with max pooling, dense 1024, dense 10); `--model resnet20` a residual
//! network of ResNet-20's shape with batch norm. Adam at 1e-3, batches of 128. Each epoch
//! prints its mean loss, examples per second and the test accuracy; the first step prints
//! the compiled train step's memory report. At the end the parameters are saved as a
//! safetensors checkpoint, loaded back and checked, and the test set's confusion matrix is
//! printed and drawn as an SVG next to the checkpoint. `--remat` (resnet20) checkpoints each
//! residual block, keeping only its convolutions' outputs for the gradient. `--dtype bf16`
//! trains under the mixed-precision policy (parameters, images and running statistics cast
//! to bf16 inside the loss; f32 master weights, optimiser state, statistics and loss).
//!
//! Run: `cargo run --release --example cnn -- [--model cnn|resnet20] [--epochs N]
//! [--limit TRAIN_EXAMPLES] [--out DIR] [--data DIR] [--remat] [--dtype f32|bf16]`

mod data;
mod model;

use jitfuse::optim::{self, Optimizer, StateOf};
use jitfuse::precision::Policy;
use jitfuse::prelude::*;
use model::{Cnn, ResNet, ResNetStats};
use std::time::Instant;

const BATCH: usize = 128;

type Opt = optim::Adam<optim::Constant>;

fn opt() -> Opt {
    optim::adam(optim::constant(1e-3), 0.9, 0.999, 1e-8)
}

/// The policy of a step computing in `compute` (f32 parameters, state and loss).
fn policy(compute: DType) -> Policy {
    Policy::new(DType::F32, compute, DType::F32)
}

#[jit]
fn cnn_step(
    p: Cnn,
    s: StateOf<Opt, Cnn>,
    x: &Tensor,
    y: &Tensor,
    compute: DType,
) -> (Cnn, StateOf<Opt, Cnn>, Tensor) {
    let policy = policy(compute);
    let (l, g) = value_and_grad(
        |p: &Cnn| {
            let (p, x) = policy.cast_to_compute(&(p.clone(), x.clone()));
            policy.cast_to_output(&softmax_cross_entropy_with_labels(&p.logits(&x), y))
        },
        &p,
    );
    let (p, s) = opt().update(&g, s, p);
    (p, s, l)
}

#[jit]
fn cnn_predict(p: &Cnn, x: &Tensor) -> Tensor {
    p.logits(x).argmax(-1)
}

/// One step of the residual network: the loss's gradient and the updated running
/// statistics from one forward pass.
#[jit]
fn resnet_step(
    p: ResNet,
    s: StateOf<Opt, ResNet>,
    stats: ResNetStats,
    x: &Tensor,
    y: &Tensor,
    remat: bool,
    compute: DType,
) -> (ResNet, StateOf<Opt, ResNet>, ResNetStats, Tensor) {
    let policy = policy(compute);
    let ((l, stats), g) = value_and_grad_with_aux(
        |p: &ResNet| {
            let (p, x, stats) = policy.cast_to_compute(&(p.clone(), x.clone(), stats.clone()));
            let (z, stats) = p.logits(&x, &stats, true, remat);
            let l = softmax_cross_entropy_with_labels(&z, y);
            (policy.cast_to_output(&l), policy.cast_to_param(&stats))
        },
        &p,
    );
    let (p, s) = opt().update(&g, s, p);
    (p, s, stats, l)
}

#[jit]
fn resnet_predict(p: &ResNet, stats: &ResNetStats, x: &Tensor) -> Tensor {
    p.logits(x, stats, false, false).0.argmax(-1)
}

struct Options {
    model: String,
    epochs: usize,
    limit: usize,
    out: String,
    data: Option<String>,
    remat: bool,
    /// The steps' compute type (`--dtype`).
    compute: DType,
}

fn fail(msg: &str) -> ! {
    eprintln!("cnn: {msg}");
    std::process::exit(2)
}

fn options() -> Options {
    let mut o = Options {
        model: "cnn".into(),
        epochs: 2,
        limit: 60_000,
        out: "target/cnn".into(),
        data: None,
        remat: false,
        compute: DType::F32,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| fail(&format!("{flag} needs a value")))
        };
        let count = |v: String| -> usize {
            v.parse()
                .unwrap_or_else(|_| fail(&format!("{flag}: `{v}` is not a count")))
        };
        match flag.as_str() {
            "--model" => o.model = value(),
            "--epochs" => o.epochs = count(value()),
            "--limit" => o.limit = count(value()),
            "--out" => o.out = value(),
            "--data" => o.data = Some(value()),
            "--remat" => o.remat = true,
            "--dtype" => {
                o.compute = match value().as_str() {
                    "f32" => DType::F32,
                    "bf16" => DType::BF16,
                    v => fail(&format!("--dtype {v}: f32 or bf16")),
                }
            }
            _ => fail(&format!(
                "unknown flag {flag} (--model cnn|resnet20, --epochs, --limit, --out, --data, \
                 --remat, --dtype f32|bf16)"
            )),
        }
    }
    if o.model != "cnn" && o.model != "resnet20" {
        fail(&format!("--model {}: cnn or resnet20", o.model));
    }
    if o.remat && o.model != "resnet20" {
        fail("--remat checkpoints the residual blocks: --model resnet20 only");
    }
    o
}

/// The model being trained, with its optimiser state.
enum Model {
    Cnn(Cnn, StateOf<Opt, Cnn>),
    /// With whether its blocks are checkpointed (`--remat`).
    ResNet(ResNet, StateOf<Opt, ResNet>, ResNetStats, bool),
}

impl Model {
    fn step(self, x: &Tensor, y: &Tensor, compute: DType) -> (Model, f32) {
        let (m, l) = match self {
            Model::Cnn(p, s) => {
                let (p, s, l) = cnn_step(p, s, x, y, compute);
                (Model::Cnn(p, s), l)
            }
            Model::ResNet(p, s, st, remat) => {
                let (p, s, st, l) = resnet_step(p, s, st, x, y, remat, compute);
                (Model::ResNet(p, s, st, remat), l)
            }
        };
        (m, l.item::<f32>().unwrap())
    }

    fn predict(&self, x: &Tensor) -> Vec<i64> {
        let t = match self {
            Model::Cnn(p, _) => cnn_predict(p, x),
            Model::ResNet(p, _, st, _) => resnet_predict(p, st, x),
        };
        t.to_vec::<i64>().unwrap()
    }

    /// The compiled train step's memory report on one batch.
    fn memory(&self, x: &Tensor, y: &Tensor, compute: DType) -> String {
        let lowered = match self {
            Model::Cnn(p, s) => cnn_step::lower(p.clone(), s.clone(), x, y, compute),
            Model::ResNet(p, s, st, remat) => {
                resnet_step::lower(p.clone(), s.clone(), st.clone(), x, y, *remat, compute)
            }
        };
        let m = lowered.and_then(|l| l.compile()).unwrap().memory_analysis();
        m.to_string()
    }

    fn parameters(&self) -> usize {
        let leaves = match self {
            Model::Cnn(p, _) => p.leaves(),
            Model::ResNet(p, _, _, _) => p.leaves(),
        };
        leaves.iter().map(|t| t.len()).sum()
    }
}

/// Predictions for the whole split, in batches of 1,000.
fn predictions(m: &Model, split: &data::Split) -> Vec<i64> {
    let mut out = vec![];
    for start in (0..split.len()).step_by(1000) {
        let idx: Vec<usize> = (start..(start + 1000).min(split.len())).collect();
        out.extend(m.predict(&split.batch(&idx).0));
    }
    out
}

fn accuracy(pred: &[i64], labels: &[i32]) -> f64 {
    let right = pred
        .iter()
        .zip(labels)
        .filter(|(p, l)| **p == **l as i64)
        .count();
    right as f64 / labels.len() as f64
}

/// A small xorshift generator for the epochs' shuffles.
struct Shuffle(u64);

impl Shuffle {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn permute(&mut self, v: &mut [usize]) {
        for i in (1..v.len()).rev() {
            v.swap(i, (self.next() % (i as u64 + 1)) as usize);
        }
    }
}

fn main() {
    let o = options();
    let dir = data::find(o.data.as_deref()).unwrap_or_else(|e| fail(&e));
    let train = data::load(&dir, "train").unwrap_or_else(|e| fail(&e));
    let test = data::load(&dir, "t10k").unwrap_or_else(|e| fail(&e));
    let n = o.limit.min(train.len());
    println!(
        "Fashion-MNIST from {}: {} training images (using {n}), {} test images",
        dir.display(),
        train.len(),
        test.len()
    );

    let key = Key::new(0);
    let mut model = match o.model.as_str() {
        "cnn" => {
            let p = Cnn::init(&key);
            let s = opt().init(&p);
            Model::Cnn(p, s)
        }
        _ => {
            let (p, st) = ResNet::init(&key);
            let s = opt().init(&p);
            Model::ResNet(p, s, st, o.remat)
        }
    };
    println!(
        "model {}: {} parameters; Adam 1e-3, batches of {BATCH}, {} epochs, computing in {}\n",
        o.model,
        model.parameters(),
        o.epochs,
        o.compute
    );

    let mut order: Vec<usize> = (0..n).collect();
    let mut shuffle = Shuffle(0x9E37_79B9_7F4A_7C15);
    let steps = n / BATCH;
    let started = Instant::now();
    for epoch in 0..o.epochs {
        shuffle.permute(&mut order);
        let (mut total, mut timed, mut timed_steps) = (0.0f64, 0.0f64, 0usize);
        for b in 0..steps {
            let (x, y) = train.batch(&order[b * BATCH..(b + 1) * BATCH]);
            let t = Instant::now();
            let (m, l) = model.step(&x, &y, o.compute);
            let took = t.elapsed().as_secs_f64();
            model = m;
            total += l as f64;
            if epoch == 0 && b == 0 {
                println!("first step: loss {l:.4}; traced, compiled and run in {took:.2} s");
                println!(
                    "memory of the train step:\n{}",
                    model.memory(&x, &y, o.compute)
                );
            } else {
                timed += took;
                timed_steps += 1;
            }
        }
        let acc = accuracy(&predictions(&model, &test), &test.labels);
        println!(
            "epoch {}: mean loss {:.4}, {:.0} examples/s ({:.1} ms a step), test accuracy {:.2} %",
            epoch + 1,
            total / steps as f64,
            (timed_steps * BATCH) as f64 / timed,
            1e3 * timed / timed_steps.max(1) as f64,
            100.0 * acc
        );
    }

    println!(
        "trained {} epochs in {:.2} s (the first step's compilation and each epoch's \
         evaluation included)",
        o.epochs,
        started.elapsed().as_secs_f64()
    );

    // ---- checkpoint: save, load into a fresh tree, check the predictions ----
    std::fs::create_dir_all(&o.out).unwrap_or_else(|e| fail(&format!("{}: {e}", o.out)));
    let path = format!("{}/{}.safetensors", o.out, o.model);
    let pred = predictions(&model, &test);
    let reloaded = match &model {
        Model::Cnn(p, s) => {
            jitfuse::save(p, &path).unwrap_or_else(|e| fail(&e.to_string()));
            let q: Cnn = jitfuse::load(&path, &Cnn::init(&Key::new(1)))
                .unwrap_or_else(|e| fail(&e.to_string()));
            Model::Cnn(q, s.clone())
        }
        Model::ResNet(p, s, st, remat) => {
            let tree = (p.clone(), st.clone());
            jitfuse::save(&tree, &path).unwrap_or_else(|e| fail(&e.to_string()));
            let (q, qs): (ResNet, ResNetStats) = jitfuse::load(&path, &ResNet::init(&Key::new(1)))
                .unwrap_or_else(|e| fail(&e.to_string()));
            Model::ResNet(q, s.clone(), qs, *remat)
        }
    };
    let same = predictions(&reloaded, &test) == pred;
    println!(
        "\ncheckpoint: {path} ({} bytes), loaded back: {}",
        std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
        if same {
            "the same predictions"
        } else {
            "OTHER PREDICTIONS"
        }
    );
    if !same {
        fail("the checkpoint does not give the trained model's predictions");
    }

    // ---- the confusion matrix ----
    let mut confusion = [[0usize; 10]; 10];
    for (p, l) in pred.iter().zip(&test.labels) {
        confusion[*l as usize][*p as usize] += 1;
    }
    println!("\nconfusion matrix (rows: true class, columns: predicted):");
    print!("{:>12}", "");
    for j in 0..10 {
        print!("{j:>6}");
    }
    println!();
    for (i, row) in confusion.iter().enumerate() {
        print!("{:>12}", data::CLASSES[i]);
        for c in row {
            print!("{c:>6}");
        }
        println!();
    }
    let svg = format!("{}/{}-confusion.svg", o.out, o.model);
    std::fs::write(
        &svg,
        confusion_svg(&confusion, &o.model, accuracy(&pred, &test.labels)),
    )
    .unwrap_or_else(|e| fail(&format!("{svg}: {e}")));
    println!("drawn as {svg}");
}

/// The confusion matrix as an SVG heat map: each cell shaded by its share of the row.
fn confusion_svg(m: &[[usize; 10]; 10], model: &str, acc: f64) -> String {
    let (cell, left, top) = (44, 110, 120);
    let size = (left + 10 * cell + 20, top + 10 * cell + 40);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"20\" font-size=\"14\">Fashion-MNIST test set, {model}: \
         {:.2} % correct</text>\n\
         <text x=\"{left}\" y=\"38\">rows: true class; columns: predicted class</text>\n",
        size.0,
        size.1,
        100.0 * acc
    );
    for (j, name) in data::CLASSES.iter().enumerate() {
        let x = left + j * cell + cell / 2;
        s += &format!(
            "<text x=\"{x}\" y=\"{}\" transform=\"rotate(-45 {x} {})\">{name}</text>\n",
            top - 6,
            top - 6
        );
    }
    for (i, row) in m.iter().enumerate() {
        let y = top + i * cell;
        s += &format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
            left - 6,
            y + cell / 2 + 4,
            data::CLASSES[i]
        );
        let total: usize = row.iter().sum::<usize>().max(1);
        for (j, &c) in row.iter().enumerate() {
            let share = c as f64 / total as f64;
            let shade = (255.0 * (1.0 - share)) as u8;
            let ink = if share > 0.5 { "white" } else { "black" };
            let x = left + j * cell;
            s += &format!(
                "<rect x=\"{x}\" y=\"{y}\" width=\"{cell}\" height=\"{cell}\" \
                 fill=\"rgb({shade},{shade},255)\" stroke=\"#ccc\"/>\n\
                 <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{ink}\">{c}</text>\n",
                x + cell / 2,
                y + cell / 2 + 4
            );
        }
    }
    s + "</svg>\n"
}
