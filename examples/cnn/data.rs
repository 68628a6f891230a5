//! Fashion-MNIST from its four gzipped idx files: images as `f32 [N, 28, 28, 1]` (channels
//! last) standardised with the training set's mean and deviation, labels as `i32 [N]`.

use flate2::read::GzDecoder;
use jitfuse::prelude::*;
use std::io::Read;
use std::path::{Path, PathBuf};

pub const CLASSES: [&str; 10] = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
];

/// The training set's pixel mean and standard deviation (of values in [0, 1]).
const MEAN: f32 = 0.2860;
const STD: f32 = 0.3530;

pub struct Split {
    /// Standardised pixels, `n · 28 · 28`.
    pub pixels: Vec<f32>,
    pub labels: Vec<i32>,
}

impl Split {
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// The examples `idx` as `f32 [len, 28, 28, 1]` and `i32 [len]`.
    pub fn batch(&self, idx: &[usize]) -> (Tensor, Tensor) {
        let mut x = Vec::with_capacity(idx.len() * 784);
        for &i in idx {
            x.extend_from_slice(&self.pixels[i * 784..(i + 1) * 784]);
        }
        let y = idx.iter().map(|&i| self.labels[i]).collect();
        (
            Tensor::from_vec(x, &[idx.len(), 28, 28, 1]).unwrap(),
            Tensor::from_vec(y, &[idx.len()]).unwrap(),
        )
    }
}

/// The directory holding the idx files: `given`, else this repository's copy, else the
/// Debian package's.
pub fn find(given: Option<&str>) -> Result<PathBuf, String> {
    let candidates: Vec<PathBuf> = match given {
        Some(d) => vec![d.into()],
        None => vec![
            Path::new(env!("CARGO_MANIFEST_DIR")).join("data/fashion-mnist"),
            "/usr/share/dataset-fashion-mnist".into(),
            "/usr/share/datasets/fashion-mnist".into(),
        ],
    };
    candidates
        .iter()
        .find(|d| d.join("train-images-idx3-ubyte.gz").exists())
        .cloned()
        .ok_or_else(|| {
            format!(
                "no Fashion-MNIST idx files (train-images-idx3-ubyte.gz, ...) in {candidates:?}; \
                 pass --data DIR"
            )
        })
}

/// `train` or `t10k`.
pub fn load(dir: &Path, split: &str) -> Result<Split, String> {
    let images = read(&dir.join(format!("{split}-images-idx3-ubyte.gz")), 0x0803)?;
    let labels = read(&dir.join(format!("{split}-labels-idx1-ubyte.gz")), 0x0801)?;
    let n = labels.len();
    if images.len() != n * 784 {
        return Err(format!(
            "{split}: {} pixels for {n} labels (28 x 28 each)",
            images.len()
        ));
    }
    Ok(Split {
        pixels: images
            .iter()
            .map(|&p| (p as f32 / 255.0 - MEAN) / STD)
            .collect(),
        labels: labels.iter().map(|&l| l as i32).collect(),
    })
}

/// The payload of an idx file with the given magic number (its dimensions checked).
fn read(path: &Path, magic: u32) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = vec![];
    GzDecoder::new(file)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let word = |k: usize| u32::from_be_bytes(bytes[4 * k..4 * k + 4].try_into().unwrap());
    if bytes.len() < 8 || word(0) != magic {
        return Err(format!(
            "{}: not an idx file of type {magic:#x}",
            path.display()
        ));
    }
    let dims = (magic & 0xff) as usize;
    let count: usize = (1..=dims).map(|k| word(k) as usize).product();
    let start = 4 * (dims + 1);
    if bytes.len() != start + count {
        return Err(format!(
            "{}: {} bytes, the header says {}",
            path.display(),
            bytes.len(),
            start + count
        ));
    }
    Ok(bytes[start..].to_vec())
}
