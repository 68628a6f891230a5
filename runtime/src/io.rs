//! Checkpoints: any [`Tree`] of tensors saved as a safetensors file (the
//! format of Hugging Face's `safetensors`, read by PyTorch, JAX and NumPy
//! through its libraries), each leaf under its name from the tree's
//! structure (`Tree::leaf_names`: `blocks.0.attn.wqkv`). Loading checks
//! every name, dtype and shape against a template tree and returns an
//! [`Error`] (kind `Checkpoint`, or `Io` when the file cannot be read or
//! written) instead of guessing.

use crate::error::type_str;
use crate::storage::Buffer;
use crate::{DType, Error, ErrorKind, Tensor, Tree};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// Write `tree` to `path` as a safetensors file (through a temporary file
/// in the same directory, renamed over `path` once complete: an interrupted
/// save leaves the previous checkpoint intact).
pub fn save<T: Tree>(tree: &T, path: impl AsRef<Path>) -> Result<(), Error> {
    let path = path.as_ref();
    let bytes = to_bytes(tree)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let io = |what: &str, e: std::io::Error| {
        Error::new(
            ErrorKind::Io,
            format!("saving a checkpoint to `{}`: {what}: {e}", path.display()),
        )
    };
    std::fs::write(&tmp, &bytes).map_err(|e| io("cannot write", e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io("cannot rename the temporary file into place", e)
    })
}

/// The safetensors bytes of `tree` (what [`save`] writes).
pub fn to_bytes<T: Tree>(tree: &T) -> Result<Vec<u8>, Error> {
    let names = tree.leaf_names();
    let leaves = tree.leaves();
    let mut seen = BTreeSet::new();
    let mut data = Vec::with_capacity(leaves.len());
    for (name, t) in names.iter().zip(&leaves) {
        if !seen.insert(name.as_str()) {
            return Err(Error::new(
                ErrorKind::Checkpoint,
                format!(
                    "two leaves of the tree are both named `{name}`: a checkpoint needs a unique \
                     name per tensor (implement `Tree::collect_names` for the type that repeats it)"
                ),
            ));
        }
        let buf = t.buffer().ok_or_else(|| {
            Error::new(
                ErrorKind::TracedValue,
                format!(
                    "saving a checkpoint: tensor `{name}` ({}) is traced inside a #[jit] function and \
                     has no value yet; return it from the jitted function and save the result",
                    type_str(t.dtype(), t.shape())
                ),
            )
        })?;
        data.push((
            name.clone(),
            t.dtype(),
            t.shape().to_vec(),
            little_endian(t.dtype(), buf.bytes()),
        ));
    }
    let views = data
        .iter()
        .map(|(name, dtype, shape, bytes)| {
            TensorView::new(file_dtype(*dtype), shape.clone(), bytes)
                .map(|v| (name.clone(), v))
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Internal,
                        format!("saving tensor `{name}` ({}): {e}", type_str(*dtype, shape)),
                    )
                })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    safetensors::serialize(views, None)
        .map_err(|e| Error::new(ErrorKind::Checkpoint, format!("writing safetensors: {e}")))
}

/// Read the checkpoint at `path` into a tree shaped like `template`: every
/// leaf of `template` must be in the file under its name with the same
/// dtype and shape, and the file must hold nothing else. The template's
/// values are not read (only its structure, shapes and dtypes).
pub fn load<T: Tree>(path: impl AsRef<Path>, template: &T) -> Result<T, Error> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!(
                "loading a checkpoint: cannot read `{}`: {e}",
                path.display()
            ),
        )
    })?;
    from_bytes(&bytes, template)
        .map_err(|e| e.prefixed(&format!("checkpoint `{}`", path.display())))
}

/// [`load`] from the bytes of a safetensors file.
pub fn from_bytes<T: Tree>(bytes: &[u8], template: &T) -> Result<T, Error> {
    let err = |msg: String| Error::new(ErrorKind::Checkpoint, msg);
    let file = SafeTensors::deserialize(bytes)
        .map_err(|e| err(format!("not a valid safetensors file: {e}")))?;
    let names = template.leaf_names();
    let leaves = template.leaves();
    let wanted: BTreeSet<&str> = names.iter().map(|n| n.as_str()).collect();
    let mut extra: Vec<String> = file
        .names()
        .into_iter()
        .filter(|n| !wanted.contains(*n))
        .map(|n| n.to_string())
        .collect();
    extra.sort();
    let mut out = Vec::with_capacity(leaves.len());
    for (name, want) in names.iter().zip(&leaves) {
        let expected = type_str(want.dtype(), want.shape());
        let view = file.tensor(name).map_err(|_| {
            let mut msg = format!("tensor `{name}` ({expected}) is missing from the file");
            if !extra.is_empty() {
                msg.push_str(&format!(
                    "; it has tensors the template does not: {}",
                    quoted(&extra)
                ));
            }
            err(msg)
        })?;
        let found = match jitfuse_dtype(view.dtype()) {
            Some(d) => type_str(d, view.shape()),
            None => format!("{:?}{:?}", view.dtype(), view.shape()),
        };
        if jitfuse_dtype(view.dtype()) != Some(want.dtype()) || view.shape() != want.shape() {
            let what = if jitfuse_dtype(view.dtype()) != Some(want.dtype()) {
                "dtype"
            } else {
                "shape"
            };
            return Err(err(format!(
                "tensor `{name}` is {found} in the file, the template has {expected} (another {what})"
            )));
        }
        let data = little_endian(want.dtype(), view.data());
        if want.dtype() == DType::Bool {
            if let Some(i) = data.iter().position(|&b| b > 1) {
                return Err(err(format!(
                    "tensor `{name}` ({expected}): element {i} is byte {}, not a bool (0 or 1)",
                    data[i]
                )));
            }
        }
        let buf =
            Buffer::try_from_bytes(&data, || format!("loading tensor `{name}` ({expected})"))?;
        out.push(Tensor::from_buffer(
            Arc::new(buf),
            want.shape().to_vec(),
            want.dtype(),
        ));
    }
    if !extra.is_empty() {
        return Err(err(format!(
            "the file has tensors the template does not: {}",
            quoted(&extra)
        )));
    }
    Ok(template.rebuild(&mut out.into_iter()))
}

fn quoted(names: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut s: Vec<String> = names.iter().take(SHOWN).map(|n| format!("`{n}`")).collect();
    if names.len() > SHOWN {
        s.push(format!("and {} more", names.len() - SHOWN));
    }
    s.join(", ")
}

fn file_dtype(d: DType) -> Dtype {
    match d {
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::Bool => Dtype::BOOL,
    }
}

fn jitfuse_dtype(d: Dtype) -> Option<DType> {
    Some(match d {
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        Dtype::BOOL => DType::Bool,
        _ => return None,
    })
}

/// Safetensors stores elements little-endian; so does the host on every
/// target jitfuse compiles for but big-endian ones, where bytes are swapped
/// (the swap is its own inverse: the same call reads and writes).
fn little_endian(d: DType, bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") || d.size() == 1 {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let mut v = bytes.to_vec();
    for c in v.chunks_mut(d.size()) {
        c.reverse();
    }
    std::borrow::Cow::Owned(v)
}
