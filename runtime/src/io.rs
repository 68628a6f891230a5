//! Checkpoints: any [`Tree`] of tensors saved as a safetensors file (the
//! format of Hugging Face's `safetensors`, read by PyTorch, JAX and NumPy
//! through its libraries), each leaf under its name from the tree's
//! structure (`Tree::leaf_names`: `blocks.0.attn.wqkv`). Loading checks
//! every name, dtype and shape against a template tree and returns an
//! [`Error`] (kind `Checkpoint`, or `Io` when the file cannot be read or
//! written) instead of guessing.
//!
//! The header is read entry by entry against the template, so that what it
//! costs is bounded by the template rather than by the file: a header naming
//! more tensors than the template could use (more than twice its leaves,
//! plus 16), naming one twice, or giving a shape more than 64 dimensions (or
//! than the template's highest rank, if more) is refused as soon as that
//! entry is read, before the rest is parsed (safetensors' own reader builds
//! every entry of a header of up to 100 MB first). [`load`] reads the header
//! from the file the same way, and the tensor data only once it has passed.

use crate::error::type_str;
use crate::storage::Buffer;
use crate::{DType, Error, ErrorKind, Tensor, Tree};
use safetensors::tensor::{Dtype, TensorInfo, TensorView};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

/// The largest header safetensors accepts (its `MAX_HEADER_SIZE`).
const MAX_HEADER_BYTES: u64 = 100_000_000;

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
    let leaves = tree.leaves();
    let names = unique_names(tree, &leaves, "tree")?;
    let mut data = Vec::with_capacity(leaves.len());
    for (name, t) in names.iter().zip(&leaves) {
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
    let in_file = |e: Error| e.prefixed(&format!("checkpoint `{}`", path.display()));
    let io = |e: std::io::Error| {
        Error::new(
            ErrorKind::Io,
            format!(
                "loading a checkpoint: cannot read `{}`: {e}",
                path.display()
            ),
        )
    };
    let expect = Expect::new(template).map_err(in_file)?;
    let mut file = std::fs::File::open(path).map_err(io)?;
    let total = file.metadata().map_err(io)?.len();
    let mut first = [0u8; 8];
    let first = if total < 8 {
        None
    } else {
        file.read_exact(&mut first).map_err(io)?;
        Some(&first[..])
    };
    let n = header_len(first, total).map_err(in_file)?;
    // The header straight from the file, not read whole first: it may be
    // refused after a few entries.
    let reader = BufReader::new((&mut file).take(n as u64));
    let entries =
        read_header(serde_json::Deserializer::from_reader(reader), &expect).map_err(in_file)?;
    file.seek(SeekFrom::Start(8 + n as u64)).map_err(io)?;
    let data_len = (total - 8 - n as u64) as usize;
    let mut data = Vec::new();
    data.try_reserve_exact(data_len).map_err(|_| {
        in_file(Error::out_of_memory(
            data_len,
            "the tensor data of the checkpoint",
        ))
    })?;
    file.read_to_end(&mut data).map_err(io)?;
    read_tensors(template, &expect, entries, &data).map_err(in_file)
}

/// [`load`] from the bytes of a safetensors file.
pub fn from_bytes<T: Tree>(bytes: &[u8], template: &T) -> Result<T, Error> {
    let expect = Expect::new(template)?;
    let n = header_len(bytes.get(..8), bytes.len() as u64)?;
    let header = &bytes[8..8 + n];
    let entries = read_header(serde_json::Deserializer::from_slice(header), &expect)?;
    read_tensors(template, &expect, entries, &bytes[8 + n..])
}

/// A `Checkpoint` error: the file is not valid safetensors.
fn invalid(msg: impl fmt::Display) -> Error {
    Error::new(
        ErrorKind::Checkpoint,
        format!("not a valid safetensors file: {msg}"),
    )
}

/// The leaf names of `tree` (the tensor names of its checkpoint), one per
/// leaf and all different: two leaves under one name could not be told
/// apart in a file (saving would keep one, loading would give both the same
/// tensor).
fn unique_names<T: Tree>(tree: &T, leaves: &[Tensor], what: &str) -> Result<Vec<String>, Error> {
    let names = tree.leaf_names();
    if names.len() != leaves.len() {
        return Err(Error::new(
            ErrorKind::Checkpoint,
            format!(
                "the {what} has {} leaves but its `Tree::collect_names` gives {} names: a \
                 checkpoint needs one name per tensor",
                leaves.len(),
                names.len()
            ),
        ));
    }
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        if let Some(&j) = first.get(name.as_str()) {
            let ty = |k: usize| type_str(leaves[k].dtype(), leaves[k].shape());
            return Err(Error::new(
                ErrorKind::Checkpoint,
                format!(
                    "leaves {j} ({}) and {i} ({}) of the {what} are both named `{name}`: a \
                     checkpoint needs a unique name per tensor (implement `Tree::collect_names` \
                     for the type that repeats it)",
                    ty(j),
                    ty(i)
                ),
            ));
        }
        first.insert(name, i);
    }
    Ok(names)
}

/// What a header is read against: the template's leaves and the bounds
/// they put on a header that could match them.
struct Expect {
    names: Vec<String>,
    wanted: HashSet<String>,
    leaves: Vec<Tensor>,
    /// Tensor entries read before the header is refused: the leaves, and as
    /// many again plus 16, so that a file with some tensors too many is
    /// still read whole and its extra names all listed.
    max_entries: usize,
    /// The longest shape read: 64 dimensions, or the template's highest
    /// rank if more (longer shapes match no leaf; shorter ones are read
    /// whole so that an extra tensor is still named as such).
    max_rank: usize,
    /// Names longer than this (and so than any leaf's) are kept cut to it,
    /// for messages only.
    max_name: usize,
}

impl Expect {
    fn new<T: Tree>(template: &T) -> Result<Expect, Error> {
        let leaves = template.leaves();
        let names = unique_names(template, &leaves, "template")?;
        Ok(Expect {
            max_entries: leaves.len().saturating_mul(2).saturating_add(16),
            max_rank: leaves.iter().map(|t| t.ndim()).max().unwrap_or(0).max(64),
            max_name: names.iter().map(|n| n.len()).max().unwrap_or(0).max(200),
            wanted: names.iter().cloned().collect(),
            names,
            leaves,
        })
    }
}

/// The header's length from the file's first 8 bytes (`None`: it has
/// fewer), checked against safetensors' limit and the file's `total` length.
fn header_len(first: Option<&[u8]>, total: u64) -> Result<usize, Error> {
    let Some(first) = first else {
        return Err(invalid(format!(
            "{total} bytes, too short for the 8-byte length of its header"
        )));
    };
    let n = u64::from_le_bytes(first.try_into().expect("8 bytes"));
    if n > MAX_HEADER_BYTES {
        return Err(invalid(format!(
            "its header length {n} is more than safetensors' limit of {MAX_HEADER_BYTES} bytes"
        )));
    }
    if 8 + n > total {
        return Err(invalid(format!(
            "its header length {n} runs past the end of the file ({total} bytes)"
        )));
    }
    Ok(n as usize)
}

/// The tensor entries of a header (its `__metadata__` checked to be a map of
/// strings, and dropped). A refusal (too many entries, a name twice, too
/// long a shape) stops the reading where it is found.
fn read_header<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
    expect: &Expect,
) -> Result<Vec<(String, TensorInfo)>, Error> {
    let mut refusal = None;
    let read = HeaderSeed {
        expect,
        refusal: &mut refusal,
    }
    .deserialize(&mut de)
    .and_then(|entries| de.end().map(|()| entries));
    match (refusal, read) {
        (Some(e), _) => Err(e),
        (None, Ok(entries)) => Ok(entries),
        (None, Err(e)) if e.is_io() => Err(Error::new(
            ErrorKind::Io,
            format!("cannot read the header: {e}"),
        )),
        (None, Err(e)) => Err(invalid(format!("its header: {e}"))),
    }
}

/// Records why the header is refused; serde_json unwinds with a placeholder
/// and `read_header` returns the recorded error.
fn refuse<E: de::Error>(slot: &mut Option<Error>, msg: String) -> E {
    *slot = Some(Error::new(ErrorKind::Checkpoint, msg));
    E::custom("refused")
}

/// The header: a map of tensor names to entries, and `__metadata__`.
struct HeaderSeed<'a> {
    expect: &'a Expect,
    refusal: &'a mut Option<Error>,
}

impl<'de> DeserializeSeed<'de> for HeaderSeed<'_> {
    type Value = Vec<(String, TensorInfo)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for HeaderSeed<'_> {
    type Value = Vec<(String, TensorInfo)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object of tensor entries")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let expect = self.expect;
        let mut entries: Vec<(String, TensorInfo)> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        while let Some((name, cut)) = map.next_key_seed(NameSeed(expect.max_name))? {
            // serde_json would keep the last of two entries under one name.
            if !cut && !seen.insert(name.clone()) {
                return Err(refuse(
                    self.refusal,
                    format!("the file's header names `{name}` twice"),
                ));
            }
            if name == "__metadata__" && !cut {
                map.next_value_seed(MetadataSeed)?;
                continue;
            }
            if entries.len() == expect.max_entries {
                let extra: Vec<String> = entries
                    .iter()
                    .map(|(n, _)| n.clone())
                    .chain([name])
                    .filter(|n| !expect.wanted.contains(n))
                    .collect();
                return Err(refuse(
                    self.refusal,
                    format!(
                        "the file's header has more tensor entries than the template can use: \
                         the template has {} leaves, the header more than {} entries (refused \
                         at entry {}, the rest unread); among those read, tensors the template \
                         does not have: {}",
                        expect.leaves.len(),
                        expect.max_entries,
                        expect.max_entries + 1,
                        quoted(&extra)
                    ),
                ));
            }
            let info = map.next_value_seed(EntrySeed {
                name: &name,
                max_rank: expect.max_rank,
                refusal: &mut *self.refusal,
            })?;
            entries.push((name, info));
        }
        Ok(entries)
    }
}

/// A tensor name, and whether it was cut (longer than any of the template:
/// kept for messages, matching nothing).
struct NameSeed(usize);

impl<'de> DeserializeSeed<'de> for NameSeed {
    type Value = (String, bool);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for NameSeed {
    type Value = (String, bool);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a tensor name")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        if v.len() <= self.0 {
            return Ok((v.to_string(), false));
        }
        let mut cut = self.0;
        while !v.is_char_boundary(cut) {
            cut -= 1;
        }
        Ok((format!("{}... ({} bytes)", &v[..cut], v.len()), true))
    }
}

/// `__metadata__`: null or a map of strings, read and dropped.
struct MetadataSeed;

impl<'de> DeserializeSeed<'de> for MetadataSeed {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for MetadataSeed {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("`__metadata__`: a map of strings")
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(StringSeed)?;
        }
        Ok(())
    }
}

/// A string, checked and dropped.
struct StringSeed;

impl<'de> DeserializeSeed<'de> for StringSeed {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for StringSeed {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
}

/// One tensor's entry: `{"dtype": .., "shape": [..], "data_offsets": [b, e]}`
/// (other fields skipped, as safetensors does).
struct EntrySeed<'a> {
    name: &'a str,
    max_rank: usize,
    refusal: &'a mut Option<Error>,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_> {
    type Value = TensorInfo;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TensorInfo, D::Error> {
        d.deserialize_map(self)
    }
}

/// A field of a tensor's entry.
enum Field {
    Dtype,
    Shape,
    Offsets,
    Other,
}

impl<'de> de::Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Field, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field of a tensor entry")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
                Ok(match v {
                    "dtype" => Field::Dtype,
                    "shape" => Field::Shape,
                    "data_offsets" => Field::Offsets,
                    _ => Field::Other,
                })
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_> {
    type Value = TensorInfo;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "the entry of tensor `{}`", self.name)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TensorInfo, A::Error> {
        let (mut dtype, mut shape, mut offsets) = (None, None, None);
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Dtype if dtype.is_none() => dtype = Some(map.next_value::<Dtype>()?),
                Field::Dtype => return Err(de::Error::duplicate_field("dtype")),
                Field::Shape if shape.is_none() => {
                    shape = Some(map.next_value_seed(ShapeSeed {
                        name: self.name,
                        max_rank: self.max_rank,
                        refusal: &mut *self.refusal,
                    })?)
                }
                Field::Shape => return Err(de::Error::duplicate_field("shape")),
                Field::Offsets if offsets.is_none() => {
                    offsets = Some(map.next_value::<(usize, usize)>()?)
                }
                Field::Offsets => return Err(de::Error::duplicate_field("data_offsets")),
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(TensorInfo {
            dtype: dtype.ok_or_else(|| de::Error::missing_field("dtype"))?,
            shape: shape.ok_or_else(|| de::Error::missing_field("shape"))?,
            data_offsets: offsets.ok_or_else(|| de::Error::missing_field("data_offsets"))?,
        })
    }
}

/// A shape of at most `max_rank` dimensions (see `Expect::max_rank`).
struct ShapeSeed<'a> {
    name: &'a str,
    max_rank: usize,
    refusal: &'a mut Option<Error>,
}

impl<'de> DeserializeSeed<'de> for ShapeSeed<'_> {
    type Value = Vec<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<usize>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ShapeSeed<'_> {
    type Value = Vec<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a shape (an array of sizes)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<usize>, A::Error> {
        let mut dims = Vec::new();
        while let Some(d) = seq.next_element::<usize>()? {
            if dims.len() == self.max_rank {
                return Err(refuse(
                    self.refusal,
                    format!(
                        "tensor `{}` has more than {} dimensions in the file's header, more than \
                         any leaf of the template has",
                        self.name, self.max_rank
                    ),
                ));
            }
            dims.push(d);
        }
        Ok(dims)
    }
}

/// The tree of `template`'s structure holding the tensors of a read header
/// (`data`: the bytes after it).
fn read_tensors<T: Tree>(
    template: &T,
    expect: &Expect,
    mut entries: Vec<(String, TensorInfo)>,
    data: &[u8],
) -> Result<T, Error> {
    let err = |msg: String| Error::new(ErrorKind::Checkpoint, msg);
    check_layout(&mut entries, data.len())?;
    let file: HashMap<&str, &TensorInfo> =
        entries.iter().map(|(n, info)| (n.as_str(), info)).collect();
    let mut extra: Vec<String> = entries
        .iter()
        .map(|(n, _)| n)
        .filter(|n| !expect.wanted.contains(*n))
        .cloned()
        .collect();
    extra.sort();
    let mut out = Vec::with_capacity(expect.leaves.len());
    for (name, want) in expect.names.iter().zip(&expect.leaves) {
        let expected = type_str(want.dtype(), want.shape());
        let info = file.get(name.as_str()).ok_or_else(|| {
            let mut msg = format!("tensor `{name}` ({expected}) is missing from the file");
            if !extra.is_empty() {
                msg.push_str(&format!(
                    "; it has tensors the template does not: {}",
                    quoted(&extra)
                ));
            }
            err(msg)
        })?;
        let found = match jitfuse_dtype(info.dtype) {
            Some(d) => type_str(d, &info.shape),
            None => format!("{:?}{:?}", info.dtype, info.shape),
        };
        if jitfuse_dtype(info.dtype) != Some(want.dtype()) || info.shape != want.shape() {
            let what = if jitfuse_dtype(info.dtype) != Some(want.dtype()) {
                "dtype"
            } else {
                "shape"
            };
            return Err(err(format!(
                "tensor `{name}` is {found} in the file, the template has {expected} (another {what})"
            )));
        }
        let (start, end) = info.data_offsets;
        let data = little_endian(want.dtype(), &data[start..end]);
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

/// safetensors' layout, as its own reader checks it (naming the tensor):
/// the entries, in offset order, lie end to end from offset 0, each as long
/// as its dtype and shape make it, and the data ends with the last.
fn check_layout(entries: &mut [(String, TensorInfo)], data_len: usize) -> Result<(), Error> {
    entries.sort_by_key(|(_, info)| info.data_offsets);
    let mut at = 0;
    for (name, info) in entries.iter() {
        let (start, end) = info.data_offsets;
        let ty = format!("{:?}{:?}", info.dtype, info.shape);
        if start != at || end < start {
            return Err(invalid(format!(
                "tensor `{name}` ({ty}) has data offsets [{start}, {end}], but the tensors \
                 before it end at {at}"
            )));
        }
        let bits = info
            .shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .and_then(|n| n.checked_mul(info.dtype.bitsize()));
        match bits {
            None => {
                return Err(invalid(format!(
                    "tensor `{name}` ({ty}) has more bits than a {}-bit size counts",
                    usize::BITS
                )))
            }
            Some(b) if b % 8 != 0 => {
                return Err(invalid(format!(
                    "tensor `{name}` ({ty}) is not a whole number of bytes ({b} bits)"
                )))
            }
            Some(b) if b / 8 != end - start => {
                return Err(invalid(format!(
                    "tensor `{name}` ({ty}) is {} bytes, its data offsets [{start}, {end}] \
                     hold {}",
                    b / 8,
                    end - start
                )))
            }
            Some(_) => {}
        }
        at = end;
    }
    if at != data_len {
        return Err(invalid(format!(
            "its header describes {at} bytes of tensor data, the file has {data_len} after the \
             header"
        )));
    }
    Ok(())
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
        DType::BF16 => Dtype::BF16,
        DType::F16 => Dtype::F16,
    }
}

fn jitfuse_dtype(d: Dtype) -> Option<DType> {
    Some(match d {
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        Dtype::BOOL => DType::Bool,
        Dtype::BF16 => DType::BF16,
        Dtype::F16 => DType::F16,
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
