//! Checkpoints (`jitfuse::io`): a tree saved as safetensors, each leaf named
//! by its path in the tree, loaded back bit for bit, readable by the
//! `safetensors` crate itself; every mismatch with the template and every
//! broken file is an error naming what is wrong, never a panic.

use crate::common::{random_tensor, Rng};
use jitfuse::optim::{self, Optimizer};
use jitfuse::prelude::*;
use jitfuse::ErrorKind;
use std::path::PathBuf;

#[derive(Tree, Clone, Debug)]
struct Attn {
    wqkv: Tensor,
    wo: Tensor,
}

#[derive(Tree, Clone, Debug)]
struct Block {
    attn: Attn,
    ln: (Tensor, Tensor),
    extra: Option<Tensor>,
}

#[derive(Tree, Clone, Debug)]
struct Pair(Tensor, Tensor);

#[derive(Tree, Clone, Debug)]
struct Model {
    wte: Tensor,
    blocks: Vec<Block>,
    /// i32
    step: Tensor,
    /// f64
    table: [Tensor; 2],
    /// bool
    flags: Tensor,
    pair: Pair,
}

fn model(seed: u64, blocks: usize) -> Model {
    let mut rng = Rng::new(seed);
    let mut r =
        |s: &[usize], d: DType, specials: bool| random_tensor(&mut rng, s, d, -2.0, 2.0, specials);
    Model {
        wte: r(&[5, 4], DType::F32, true),
        blocks: (0..blocks)
            .map(|i| Block {
                attn: Attn {
                    wqkv: r(&[4, 12], DType::F32, true),
                    wo: r(&[4, 4], DType::F32, false),
                },
                ln: (r(&[4], DType::F32, false), r(&[4], DType::F64, false)),
                extra: (i == 0).then(|| r(&[2, 0, 3], DType::F32, false)),
            })
            .collect(),
        step: r(&[], DType::I32, false) * 1000,
        table: [r(&[3], DType::F64, true), r(&[2, 2], DType::I64, false)],
        flags: r(&[6], DType::Bool, false),
        pair: Pair(r(&[1], DType::F32, false), r(&[2], DType::I32, false)),
    }
}

const NAMES: [&str; 16] = [
    "wte",
    "blocks.0.attn.wqkv",
    "blocks.0.attn.wo",
    "blocks.0.ln.0",
    "blocks.0.ln.1",
    "blocks.0.extra",
    "blocks.1.attn.wqkv",
    "blocks.1.attn.wo",
    "blocks.1.ln.0",
    "blocks.1.ln.1",
    "step",
    "table.0",
    "table.1",
    "flags",
    "pair.0",
    "pair.1",
];

/// The bytes of a tensor's elements, whatever its dtype (NaN payloads too).
fn raw(t: &Tensor) -> Vec<u8> {
    match t.dtype() {
        DType::BF16 => t
            .to_vec::<jitfuse::bf16>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::F16 => t
            .to_vec::<jitfuse::f16>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::F32 => t
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::F64 => t
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::I32 => t
            .to_vec::<i32>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::I64 => t
            .to_vec::<i64>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::Bool => t
            .to_vec::<bool>()
            .unwrap()
            .iter()
            .map(|&v| v as u8)
            .collect(),
    }
}

/// A fresh path in the target directory's temporary folder.
fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jitfuse-save-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn assert_same(a: &impl Tree, b: &impl Tree) {
    let (a, b) = (a.leaves(), b.leaves());
    assert_eq!(a.len(), b.len());
    for (k, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x.dtype(), y.dtype(), "leaf {k}");
        assert_eq!(x.shape(), y.shape(), "leaf {k}");
        assert_eq!(raw(x), raw(y), "leaf {k}: bit for bit");
    }
}

#[test]
fn leaf_names_follow_the_structure() {
    let m = model(1, 2);
    assert_eq!(m.leaf_names(), NAMES);
    assert_eq!(Tensor::scalar(1f32).leaf_names(), [""]);
    let t = (
        Tensor::scalar(1f32),
        vec![Tensor::scalar(2f32)],
        None::<Tensor>,
    );
    assert_eq!(t.leaf_names(), ["0", "1.0"]);
    // An optimiser state: its fields, then the parameters' names.
    let p = Pair(Tensor::scalar(1f32), Tensor::scalar(2f32));
    let s = optim::adam(0.1, 0.9, 0.999, 1e-8).init(&p);
    assert_eq!(s.leaf_names(), ["count", "mu.0", "mu.1", "nu.0", "nu.1"]);
    let both = (
        p.clone(),
        optim::clip_by_global_norm(1.0)
            .then(optim::momentum(0.1, 0.9))
            .init(&p),
    );
    assert_eq!(
        both.leaf_names(),
        ["0.0", "0.1", "1.1.count", "1.1.trace.0", "1.1.trace.1"]
    );
}

#[test]
fn a_nested_tree_round_trips_bit_for_bit() {
    let m = model(2, 2);
    let path = temp_path("model.safetensors");
    jitfuse::save(&m, &path).unwrap();
    let template = model(3, 2);
    let back: Model = jitfuse::load(&path, &template).unwrap();
    assert_same(&back, &m);
    // The loaded tensors are ordinary tensors: they compute.
    assert_eq!((&back.wte * 1.0).shape(), &[5, 4]);
    // In memory too.
    let bytes = jitfuse::io::to_bytes(&m).unwrap();
    assert_eq!(bytes, std::fs::read(&path).unwrap(), "save writes to_bytes");
    assert_same(&jitfuse::io::from_bytes(&bytes, &template).unwrap(), &m);
    // A params + optimiser state checkpoint.
    let p = Pair(Tensor::vector(&[1f32, 2.0]), Tensor::vector(&[3f32]));
    let opt = optim::adam(0.1, 0.9, 0.999, 1e-8);
    let (p2, s2) = opt.update(&p.map(|t| t.ones_like()), opt.init(&p), p.clone());
    let bytes = jitfuse::io::to_bytes(&(p2.clone(), s2.clone())).unwrap();
    let (p3, s3) = jitfuse::io::from_bytes(&bytes, &(p.clone(), opt.init(&p))).unwrap();
    assert_same(&p3, &p2);
    assert_same(&s3, &s2);
    assert_eq!(s3.count.item::<i32>().unwrap(), 1);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn the_file_is_read_by_the_safetensors_crate_with_the_tree_names() {
    use safetensors::tensor::{Dtype, SafeTensors};
    let m = model(4, 2);
    let path = temp_path("direct.safetensors");
    jitfuse::save(&m, &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let file = SafeTensors::deserialize(&bytes).unwrap();
    let mut names = file.names();
    names.sort();
    let mut want = NAMES.to_vec();
    want.sort();
    assert_eq!(names, want);
    let wqkv = file.tensor("blocks.1.attn.wqkv").unwrap();
    assert_eq!(wqkv.dtype(), Dtype::F32);
    assert_eq!(wqkv.shape(), &[4, 12]);
    assert_eq!(wqkv.data(), raw(&m.blocks[1].attn.wqkv).as_slice());
    let expect = [
        ("step", Dtype::I32, &m.step),
        ("table.0", Dtype::F64, &m.table[0]),
        ("table.1", Dtype::I64, &m.table[1]),
        ("flags", Dtype::BOOL, &m.flags),
        (
            "blocks.0.extra",
            Dtype::F32,
            m.blocks[0].extra.as_ref().unwrap(),
        ),
    ];
    for (name, dtype, t) in expect {
        let v = file.tensor(name).unwrap();
        assert_eq!((v.dtype(), v.shape()), (dtype, t.shape()), "{name}");
        assert_eq!(v.data(), raw(t).as_slice(), "{name}");
    }
    std::fs::remove_file(&path).unwrap();
}

fn load_err(bytes: &[u8], template: &Model) -> jitfuse::Error {
    match jitfuse::io::from_bytes(bytes, template) {
        Ok(_) => panic!("loaded a checkpoint that does not match"),
        Err(e) => e,
    }
}

#[test]
fn a_mismatch_with_the_template_names_the_tensor() {
    let m = model(5, 2);
    let bytes = jitfuse::io::to_bytes(&m).unwrap();

    // Another shape.
    let mut t = model(5, 2);
    t.blocks[1].attn.wo = Tensor::zeros(&[4, 5], DType::F32);
    let e = load_err(&bytes, &t);
    assert_eq!(e.kind, ErrorKind::Checkpoint);
    assert!(
        e.message.contains(
            "tensor `blocks.1.attn.wo` is f32[4,4] in the file, the template has f32[4,5]"
        ),
        "{e}"
    );

    // Another dtype.
    let mut t = model(5, 2);
    t.table[0] = Tensor::zeros(&[3], DType::F32);
    let e = load_err(&bytes, &t);
    assert!(
        e.message
            .contains("tensor `table.0` is f64[3] in the file, the template has f32[3]"),
        "{e}"
    );

    // A tensor the file lacks: a template with three blocks.
    let e = load_err(&bytes, &model(5, 3));
    assert_eq!(e.kind, ErrorKind::Checkpoint);
    assert!(
        e.message
            .contains("tensor `blocks.2.attn.wqkv` (f32[4,12]) is missing from the file"),
        "{e}"
    );

    // Tensors the template lacks: a template with one block.
    let mut t = model(5, 1);
    t.blocks[0].extra = Some(Tensor::zeros(&[2, 0, 3], DType::F32));
    let e = load_err(&bytes, &t);
    assert!(
        e.message.contains("the file has tensors the template does not: `blocks.1.attn.wo`, `blocks.1.attn.wqkv`, `blocks.1.ln.0`, `blocks.1.ln.1`"),
        "{e}"
    );

    // Missing and extra at once: renamed (the first block's `extra` absent).
    let mut t = model(5, 2);
    t.blocks[0].extra = None;
    t.blocks[1].extra = Some(Tensor::zeros(&[1], DType::F32));
    let e = load_err(&bytes, &t);
    assert!(
        e.message.contains("tensor `blocks.1.extra` (f32[1]) is missing from the file; it has tensors the template does not: `blocks.0.extra`"),
        "{e}"
    );
}

#[test]
fn a_broken_file_is_an_error_not_a_panic() {
    let m = model(6, 1);
    let good = jitfuse::io::to_bytes(&m).unwrap();
    let mut cases: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), vec![]),
        ("seven bytes".into(), vec![1, 2, 3, 4, 5, 6, 7]),
        (
            "garbage".into(),
            b"this is not a safetensors file at all".to_vec(),
        ),
        ("a header length past the end".into(), {
            let mut b = good.clone();
            b[..8].copy_from_slice(&u64::MAX.to_le_bytes());
            b
        }),
        ("a header that is not JSON".into(), {
            let mut b = good.clone();
            b[8] = b'#';
            b
        }),
    ];
    for cut in [9, good.len() / 2, good.len() - 1] {
        cases.push((format!("truncated to {cut} bytes"), good[..cut].to_vec()));
    }
    let mut rng = Rng::new(7);
    for i in 0..200 {
        let mut b = good.clone();
        for _ in 0..1 + i % 4 {
            let k = rng.below(b.len());
            b[k] = rng.next_u64() as u8;
        }
        cases.push((format!("corrupted copy {i}"), b));
    }
    let path = temp_path("broken.safetensors");
    for (what, bytes) in cases {
        let got = std::panic::catch_unwind(|| jitfuse::io::from_bytes(&bytes, &m))
            .unwrap_or_else(|_| panic!("{what}: panicked"));
        // `load` reads the header from the file, not from memory: the same
        // verdict, in the same words.
        std::fs::write(&path, &bytes).unwrap();
        let loaded = std::panic::catch_unwind(|| jitfuse::load(&path, &m))
            .unwrap_or_else(|_| panic!("{what}: load panicked"));
        match (&got, &loaded) {
            (Ok(a), Ok(b)) => assert_same(a, b),
            (Err(a), Err(b)) => assert_eq!(
                format!("checkpoint `{}`: {}", path.display(), a.message),
                b.message,
                "{what}"
            ),
            _ => panic!(
                "{what}: from_bytes {:?}, load {:?}",
                got.is_ok(),
                loaded.is_ok()
            ),
        }
        match got {
            Err(e) => {
                assert_eq!(e.kind, ErrorKind::Checkpoint, "{what}: {e}");
                assert!(!e.message.is_empty());
            }
            // A flipped byte in the data itself is still a valid file.
            Ok(_) => assert!(what.starts_with("corrupted"), "{what}: loaded"),
        }
    }
    std::fs::remove_file(&path).unwrap();
    // The header's own checks, in words.
    let e = load_err(b"this is not a safetensors file at all", &m);
    assert!(e.message.starts_with("not a valid safetensors file"), "{e}");

    // A bool that is neither 0 nor 1.
    let flags = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
    let mut bytes = jitfuse::io::to_bytes(&flags).unwrap();
    let last = bytes.len() - 1;
    bytes[last] = 7;
    let e = jitfuse::io::from_bytes(&bytes, &flags).err().unwrap();
    assert!(e.message.contains("element 2 is byte 7, not a bool"), "{e}");

    // Files that cannot be read or written.
    let missing = temp_path("does-not-exist.safetensors");
    let e = jitfuse::load(&missing, &m).err().unwrap();
    assert_eq!(e.kind, ErrorKind::Io);
    assert!(e.message.contains("does-not-exist.safetensors"), "{e}");
    let e = jitfuse::save(&m, temp_path("no-such-dir").join("x.safetensors")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Io, "{e}");
    // A load error says which file.
    let path = temp_path("small.safetensors");
    jitfuse::save(&model(6, 1), &path).unwrap();
    let e = jitfuse::load(&path, &model(6, 2)).err().unwrap();
    assert!(
        e.message.starts_with(&format!(
            "checkpoint `{}`: tensor `blocks.1",
            path.display()
        )),
        "{e}"
    );
    std::fs::remove_file(&path).unwrap();
}

/// Two leaves with one name (a hand-written tree naming all its leaves
/// alike) cannot be told apart in a file: an error, not a silent overwrite.
#[test]
fn duplicate_names_are_refused() {
    struct Twins(Tensor, Tensor);
    impl Tree for Twins {
        fn collect_leaves(&self, out: &mut Vec<Tensor>) {
            out.push(self.0.clone());
            out.push(self.1.clone());
        }
        fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self {
            Twins(leaves.next().unwrap(), leaves.next().unwrap())
        }
        fn collect_names(&self, path: &str, out: &mut Vec<String>) {
            out.push(format!("{path}twin"));
            out.push(format!("{path}twin"));
        }
    }
    let t = Twins(Tensor::scalar(1f32), Tensor::vector(&[2f32]));
    let e = jitfuse::io::to_bytes(&t).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Checkpoint);
    assert!(
        e.message
            .contains("leaves 0 (f32[]) and 1 (f32[1]) of the tree are both named `twin`"),
        "{e}"
    );
    // Saved: an error, and no file (not one holding a single `twin`).
    let path = temp_path("twins.safetensors");
    let e = jitfuse::save(&t, &path).unwrap_err();
    assert!(e.message.contains("both named `twin`"), "{e}");
    assert!(!path.exists());
    // As a template: an error naming the path, whatever the file holds
    // (here one `twin`, which both leaves would otherwise be loaded from).
    let one = jitfuse::io::to_bytes(&vec![Named(Tensor::scalar(1f32))]).unwrap();
    let nested = vec![
        Twins(Tensor::scalar(1f32), Tensor::scalar(2f32)),
        Twins(Tensor::scalar(3f32), Tensor::scalar(4f32)),
    ];
    assert_eq!(nested.leaf_names(), ["0twin", "0twin", "1twin", "1twin"]);
    std::fs::write(&path, &one).unwrap();
    for e in [
        jitfuse::io::from_bytes(&one, &nested).err().unwrap(),
        jitfuse::load(&path, &nested).err().unwrap(),
        jitfuse::io::to_bytes(&nested).unwrap_err(),
    ] {
        assert_eq!(e.kind, ErrorKind::Checkpoint);
        assert!(
            e.message.contains("leaves 0 (f32[]) and 1 (f32[]) of the")
                && e.message.contains("are both named `0twin`"),
            "{e}"
        );
    }
    std::fs::remove_file(&path).unwrap();

    /// Names `twin` for its one leaf (the file the twins would both read).
    struct Named(Tensor);
    impl Tree for Named {
        fn collect_leaves(&self, out: &mut Vec<Tensor>) {
            out.push(self.0.clone());
        }
        fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self {
            Named(leaves.next().unwrap())
        }
        fn collect_names(&self, path: &str, out: &mut Vec<String>) {
            let _ = path;
            out.push("0twin".into());
        }
    }

    /// One name for two leaves: the second has none to be saved under.
    struct Short(Tensor, Tensor);
    impl Tree for Short {
        fn collect_leaves(&self, out: &mut Vec<Tensor>) {
            out.push(self.0.clone());
            out.push(self.1.clone());
        }
        fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self {
            Short(leaves.next().unwrap(), leaves.next().unwrap())
        }
        fn collect_names(&self, path: &str, out: &mut Vec<String>) {
            out.push(format!("{path}only"));
        }
    }
    let short = Short(Tensor::scalar(1f32), Tensor::scalar(2f32));
    for e in [
        jitfuse::io::to_bytes(&short).unwrap_err(),
        jitfuse::io::from_bytes(&one, &short).err().unwrap(),
    ] {
        assert!(
            e.message
                .contains("has 2 leaves but its `Tree::collect_names` gives 1 names"),
            "{e}"
        );
    }

    /// Without `collect_names` the leaves are numbered.
    struct Plain(Tensor, Tensor);
    impl Tree for Plain {
        fn collect_leaves(&self, out: &mut Vec<Tensor>) {
            out.push(self.0.clone());
            out.push(self.1.clone());
        }
        fn rebuild(&self, leaves: &mut dyn Iterator<Item = Tensor>) -> Self {
            Plain(leaves.next().unwrap(), leaves.next().unwrap())
        }
    }
    let p = vec![Plain(Tensor::scalar(1f32), Tensor::scalar(2f32))];
    assert_eq!(p.leaf_names(), ["0.0", "0.1"]);
    let back = jitfuse::io::from_bytes(&jitfuse::io::to_bytes(&p).unwrap(), &p).unwrap();
    assert_eq!(back[0].1.item::<f32>().unwrap(), 2.0);
}

/// A safetensors file of `header` (JSON) and `data`.
fn file_of(header: &str, data: &[u8]) -> Vec<u8> {
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(header.as_bytes());
    b.extend_from_slice(data);
    b
}

/// The header of `entries` empty f32 tensors `t0`, `t1`, ... (each a valid
/// entry: all at offsets [0, 0]), then `tail`.
fn empty_entries(entries: usize, tail: &str) -> String {
    let mut h = String::with_capacity(entries * 60 + tail.len() + 2);
    h.push('{');
    for i in 0..entries {
        if i > 0 {
            h.push(',');
        }
        h.push_str(&format!(
            "\"t{i}\":{{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}"
        ));
    }
    h.push_str(tail);
    h.push('}');
    h
}

/// A header of 1.5 million entries (88 MB, under safetensors' 100 MB limit)
/// for a template of two leaves: safetensors' own reader parses every entry
/// first (over a GiB and seconds); it is refused at the entry past what the
/// template could use. That the rest is never read shows in a header whose
/// end is not even JSON, refused the same way, from bytes and from a file.
#[test]
fn a_header_with_more_entries_than_the_template_can_use_is_refused_unread() {
    let template = (
        Tensor::zeros(&[2], DType::F32),
        Tensor::zeros(&[3], DType::F32),
    );
    let hostile = file_of(&empty_entries(1_500_000, ""), &[]);
    assert!(hostile.len() > 80_000_000 && hostile.len() < 100_000_000);
    let broken_end = file_of(&empty_entries(1_500_000, ",\"x\": not json at all"), &[]);
    let path = temp_path("hostile.safetensors");
    std::fs::write(&path, &broken_end).unwrap();
    let errors = [
        jitfuse::io::from_bytes(&hostile, &template).err().unwrap(),
        jitfuse::io::from_bytes(&broken_end, &template)
            .err()
            .unwrap(),
        jitfuse::load(&path, &template).err().unwrap(),
    ];
    std::fs::remove_file(&path).unwrap();
    for e in errors {
        assert_eq!(e.kind, ErrorKind::Checkpoint, "{e}");
        assert!(
            e.message.contains(
                "the file's header has more tensor entries than the template can use: the \
                 template has 2 leaves, the header more than 20 entries (refused at entry 21, \
                 the rest unread); among those read, tensors the template does not have: `t0`, \
                 `t1`"
            ) && e.message.ends_with("and 13 more"),
            "{e}"
        );
    }

    // Up to twice the template's leaves plus 16 the header is read whole, so
    // that every extra tensor is named.
    let one = Tensor::zeros(&[0], DType::F32);
    let e = jitfuse::io::from_bytes(&file_of(&empty_entries(18, ""), &[]), &one)
        .err()
        .unwrap();
    assert!(
        e.message.contains("tensor `` (f32[0]) is missing from the file; it has tensors the template does not: `t0`, `t1`, `t10`"),
        "{e}"
    );
    let e = jitfuse::io::from_bytes(&file_of(&empty_entries(19, ""), &[]), &one)
        .err()
        .unwrap();
    assert!(e.message.contains("refused at entry 19"), "{e}");
    // `__metadata__` is not a tensor entry: it does not count, however long.
    let mut h = String::from("{\"__metadata__\":{\"format\":\"pt\"");
    for i in 0..1000 {
        h.push_str(&format!(",\"k{i}\":\"v\""));
    }
    h.push_str("},\"0\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}");
    let bytes = file_of(&h, &[0, 0, 128, 63, 0, 0, 0, 64]);
    let [w] = jitfuse::io::from_bytes(&bytes, &[Tensor::zeros(&[2], DType::F32)]).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), [1.0, 2.0]);
}

/// A header naming one tensor twice (JSON readers keep the last) is refused,
/// naming it: whichever entry was meant, loading one silently is a guess.
/// `__metadata__` twice likewise.
#[test]
fn a_header_naming_a_tensor_twice_is_refused() {
    let entry = |at: usize| {
        format!(
            "{{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[{at},{}]}}",
            at + 4
        )
    };
    let one = [Tensor::zeros(&[1], DType::F32)];
    let data = [0, 0, 128, 63];
    // The same entry twice: without the check this loads (last wins).
    let cases = [
        format!("{{\"0\":{},\"0\":{}}}", entry(0), entry(0)),
        format!(
            "{{\"0\":{},\"t\":{},\"0\":{}}}",
            entry(0),
            entry(4),
            entry(0)
        ),
        format!(
            "{{\"__metadata__\":{{}},\"0\":{},\"__metadata__\":{{}}}}",
            entry(0)
        ),
    ];
    for (k, h) in cases.iter().enumerate() {
        let bytes = file_of(h, &data[..]);
        let e = jitfuse::io::from_bytes(&bytes, &one).err().unwrap();
        assert_eq!(e.kind, ErrorKind::Checkpoint, "{e}");
        let name = if k == 2 { "__metadata__" } else { "0" };
        assert!(
            e.message
                .contains(&format!("the file's header names `{name}` twice")),
            "{e}"
        );
    }
    // Once, it loads.
    let h = format!("{{\"__metadata__\":{{}},\"0\":{}}}", entry(0));
    let [t] = jitfuse::io::from_bytes(&file_of(&h, &data), &one).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), [1.0]);
}

/// Entries are read field by field with what safetensors requires (a known
/// dtype, a shape of sizes, two offsets; `__metadata__` a map of strings),
/// every violation an error, never a panic; a shape longer than any leaf
/// could have, or a name longer than any leaf's, is not kept whole.
#[test]
fn header_entries_are_checked_as_they_are_read() {
    let one = [Tensor::zeros(&[1], DType::F32)];
    let data = [0u8, 0, 128, 63];
    let ok = "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]";
    let bad = [
        ("[]", "invalid type"),
        ("{\"0\":1}", "invalid type"),
        ("{\"0\":{\"dtype\":\"F32\",\"shape\":[1]}}", "missing field `data_offsets`"),
        ("{\"0\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,4]}}", "unknown variant `Q7`"),
        ("{\"0\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", "invalid value"),
        ("{\"0\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "duplicate field `dtype`"),
        ("{\"0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", "trailing characters"),
        ("{\"0\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", "tensor `0` (F32[2]) is 8 bytes, its data offsets [0, 4] hold 4"),
        ("{\"0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", "tensor `0` (F32[1]) has data offsets [4, 8], but the tensors before it end at 0"),
        ("{\"__metadata__\":{\"k\":1},\"0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "invalid type: integer"),
        ("{\"0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x", "trailing characters"),
    ];
    for (h, want) in bad {
        let e = jitfuse::io::from_bytes(&file_of(h, &data), &one)
            .err()
            .unwrap();
        assert_eq!(e.kind, ErrorKind::Checkpoint, "{h}: {e}");
        assert!(
            e.message.starts_with("not a valid safetensors file") && e.message.contains(want),
            "{h}: {e}"
        );
    }
    // Data past what the header describes.
    let e = jitfuse::io::from_bytes(&file_of(&format!("{{\"0\":{{{ok}}}}}"), &[0; 5]), &one)
        .err()
        .unwrap();
    assert!(
        e.message
            .contains("describes 4 bytes of tensor data, the file has 5"),
        "{e}"
    );
    // Unknown fields are skipped; `__metadata__` may be null; space pads.
    let h = format!("{{\"__metadata__\":null,\"0\":{{\"note\":[{{}}],{ok}}}}}    ");
    let [t] = jitfuse::io::from_bytes(&file_of(&h, &data), &one).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), [1.0]);

    // 65 dimensions: more than 64 and than any leaf has.
    let dims = vec!["1"; 65].join(",");
    let h = format!("{{\"0\":{{\"dtype\":\"F32\",\"shape\":[{dims}],\"data_offsets\":[0,4]}}}}");
    let e = jitfuse::io::from_bytes(&file_of(&h, &data), &one)
        .err()
        .unwrap();
    assert!(
        e.message
            .contains("tensor `0` has more than 64 dimensions in the file's header"),
        "{e}"
    );
    // A megabyte name: an extra tensor, named cut.
    let long = "n".repeat(1 << 20);
    let h = format!(
        "{{\"0\":{{{ok}}},\"{long}\":{{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}}}"
    );
    let e = jitfuse::io::from_bytes(&file_of(&h, &data), &one)
        .err()
        .unwrap();
    assert!(
        e.message.contains(&format!(
            "the file has tensors the template does not: `{}... (1048576 bytes)`",
            &long[..200]
        )),
        "{}",
        &e.message[..e.message.len().min(400)]
    );
    // What the safetensors crate writes with metadata is read.
    let mut meta = std::collections::HashMap::new();
    meta.insert("format".to_string(), "pt".to_string());
    let view =
        safetensors::tensor::TensorView::new(safetensors::tensor::Dtype::F32, vec![1], &data)
            .unwrap();
    let bytes = safetensors::serialize([("0", view)], Some(meta)).unwrap();
    let [t] = jitfuse::io::from_bytes(&bytes, &one).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), [1.0]);
}
