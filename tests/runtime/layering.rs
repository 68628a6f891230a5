//! The module graph of `jitfuse-runtime`, read from the `crate::` paths of its files: which
//! top-level modules reach each other (strongly connected components). The compiler below
//! the front end should be a chain (`ir → fusion → describe → codegen/plan → exec`) with at
//! most small circles; today it is not, and this test holds the line where it stands: no
//! change may grow the largest component or add modules to it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The top-level module a file of `runtime/src` belongs to (`exec/control.rs` → `exec`,
/// `interp/reduce.rs` → `interp`); `None` for `lib.rs`.
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib").then_some(name)
}

/// The items `lib.rs` re-exports at the root (`pub use tensor::Tensor;` → `Tensor` is
/// `tensor`'s), so that `crate::Tensor` counts as an import of `tensor`.
fn root_items(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    // Each `pub use ..;` statement at the start of a line, across its lines.
    let mut rest = lib;
    let next = |rest: &str| match rest.starts_with("pub use ") {
        true => Some(0),
        false => rest.find("\npub use ").map(|a| a + 1),
    };
    while let Some(at) = next(rest) {
        let stmt = &rest[at + "pub use ".len()..];
        let end = stmt.find(';').unwrap_or(stmt.len());
        let (stmt, next) = (&stmt[..end], &stmt[end..]);
        rest = next;
        let module: String = (stmt.chars())
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !modules.contains(&module) {
            continue;
        }
        // The items: each name of a `{..}` group, or the last path segment.
        let items = match (stmt.find('{'), stmt.rfind("::")) {
            (Some(open), _) => stmt[open + 1..].trim_end_matches(['}', ' ', '\n']),
            (None, Some(at)) => &stmt[at + 2..],
            _ => continue,
        };
        for item in items.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            out.insert(item.to_string(), module.clone());
        }
    }
    out
}

/// The modules a file's code (not its comments) names through `crate::`: `crate::x::..`,
/// every head of `crate::{x, y::z, ..}`, and root items re-exported from a module (`root`).
fn imports(
    text: &str,
    modules: &BTreeSet<String>,
    root: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let heads: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                // Top-level items of the group (one line is enough: rustfmt keeps a
                // `use crate::{..}` of several modules on lines that each start an item).
                let end = group.find('}').unwrap_or(group.len());
                let mut depth = 0;
                let mut items = vec![];
                let mut start = 0;
                for (i, c) in group[..end].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            items.push(&group[start..i]);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                items.push(&group[start..end]);
                items
            } else {
                vec![rest]
            };
            for h in heads {
                let ident: String = h
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if modules.contains(&ident) {
                    found.insert(ident);
                } else if let Some(m) = root.get(&ident) {
                    found.insert(m.clone());
                }
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Edges `module → module it imports` of `runtime/src`.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    let mut files = vec![];
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|f| module_of(f.strip_prefix(&src).unwrap()))
        .collect();
    let root = root_items(
        &std::fs::read_to_string(src.join("lib.rs")).unwrap(),
        &modules,
    );
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for (m, to) in file_imports(&src, &files, &modules, &root) {
        graph.get_mut(&m).unwrap().insert(to);
    }
    graph
}

/// Every (module of a file, module it imports) pair, once per file and imported module.
fn file_imports(
    src: &Path,
    files: &[std::path::PathBuf],
    modules: &BTreeSet<String>,
    root: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let mut out = vec![];
    for f in files {
        let Some(m) = module_of(f.strip_prefix(src).unwrap()) else {
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        for to in imports(&text, modules, root) {
            if to != m {
                out.push((m.clone(), to));
            }
        }
    }
    out
}

/// The strongly connected components (Tarjan), largest first.
fn components(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.graph[v] {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: vec![],
        on_stack: BTreeSet::new(),
        out: vec![],
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort_by_key(|c| std::cmp::Reverse(c.len()));
    s.out
}

/// The reader sees imports of every spelling, and a circle as one component.
#[test]
fn the_import_reader_and_the_components_see_what_is_there() {
    let modules: BTreeSet<String> = ["ir", "exec", "plan", "shape"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let text = "use crate::ir::{Graph, Op};\n// crate::plan in a comment\n\
                use crate::{exec::Executable, shape, Error};\nlet x = crate::shape::numel(&s);";
    let lib = "pub use plan::{Plan,\n    check};\npub use ir::Graph;\n";
    let root = root_items(lib, &modules);
    assert_eq!(root["check"], "plan");
    assert_eq!(root["Plan"], "plan");
    assert_eq!(root["Graph"], "ir");
    let got: Vec<String> = imports(text, &modules, &root).into_iter().collect();
    assert_eq!(got, ["exec", "ir", "shape"]);
    let got: Vec<String> = imports("use crate::{Plan, Error};", &modules, &root)
        .into_iter()
        .collect();
    assert_eq!(got, ["plan"]);
    let edge = |a: &str, b: &[&str]| {
        (
            a.to_string(),
            b.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>(),
        )
    };
    let g: BTreeMap<_, _> = [
        edge("a", &["b"]),
        edge("b", &["c"]),
        edge("c", &["a", "d"]),
        edge("d", &[]),
    ]
    .into_iter()
    .collect();
    let comps = components(&g);
    assert_eq!(comps[0].len(), 3);
    assert_eq!(comps.len(), 2);
}

/// The declared layering of `runtime/src`, bottom first: a module may import its own layer
/// and the layers below. The compiler below the front end is a chain (`ir → fusion →
/// describe/plan → codegen/passes → library → interp → exec`), the front end above it
/// (`tensor`/`trace`/`eager` → `autodiff`/`control`/`vmap`/... → `jit` → `report`).
const LAYERS: &[&[&str]] = &[
    &["units", "dtype", "release", "internal", "diag"],
    &["error", "shape", "storage", "array"],
    &["ir"],
    &["fusion"],
    &["describe", "plan"],
    &["codegen", "passes"],
    &["library"],
    &["interp"],
    &["exec"],
    &["tensor", "trace", "eager"],
    &[
        "autodiff",
        "control",
        "vmap",
        "random",
        "optim",
        "precision",
        "io",
        "dist",
    ],
    &["jit"],
    &["report"],
];

/// Imports that climb the layering and are accepted (module edges). None: the executor and
/// the interpreter compute on `array::Array`, below `Tensor`.
const KNOWN_CLIMBS: &[(&str, &str)] = &[];

/// Every module is in one layer, and no import climbs the layering except the known ones:
/// a new upward import fails here, naming the file's module and the module it reaches.
#[test]
fn no_import_climbs_the_declared_layering() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    let mut files = vec![];
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = (files.iter())
        .filter_map(|f| module_of(f.strip_prefix(&src).unwrap()))
        .collect();
    let layer_of = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let unplaced: Vec<&String> = modules.iter().filter(|m| layer_of(m).is_none()).collect();
    assert!(unplaced.is_empty(), "modules in no layer: {unplaced:?}");
    let root = root_items(
        &std::fs::read_to_string(src.join("lib.rs")).unwrap(),
        &modules,
    );
    let imports = file_imports(&src, &files, &modules, &root);
    let climbs: Vec<&(String, String)> = (imports.iter())
        .filter(|(a, b)| layer_of(b) > layer_of(a))
        .collect();
    let new: BTreeSet<(String, String)> = (climbs.iter())
        .filter(|(a, b)| !KNOWN_CLIMBS.contains(&(a.as_str(), b.as_str())))
        .map(|e| (*e).clone())
        .collect();
    println!(
        "{} of {} file-level imports climb the layering (known module edges: {})",
        climbs.len(),
        imports.len(),
        KNOWN_CLIMBS.len()
    );
    assert!(new.is_empty(), "imports climbing the layering: {new:?}");
    // A known climb that is gone is taken off the list (it may not come back).
    let stale: Vec<&(&str, &str)> = (KNOWN_CLIMBS.iter())
        .filter(|(a, b)| !climbs.iter().any(|(x, y)| x == a && y == b))
        .collect();
    assert!(
        stale.is_empty(),
        "climbs no longer there, to take off the list: {stale:?}"
    );
}

/// The module graph is a chain of layers up to the front end, whose tracing core may be one
/// small circle (`tensor` records ops into `trace` and runs them through `eager`, which
/// builds tensors): no strongly connected component larger than 3 modules, and none that
/// holds a module below the front end (`tensor`'s layer).
#[test]
fn the_modules_form_at_most_small_circles_in_the_front_end() {
    let graph = module_graph();
    for (m, to) in &graph {
        println!("{m} → {}", to.iter().cloned().collect::<Vec<_>>().join(" "));
    }
    let comps = components(&graph);
    let largest = &comps[0];
    println!(
        "largest circle of modules ({}): {largest:?}; next: {:?}",
        largest.len(),
        comps.get(1)
    );
    assert!(
        largest.len() <= 3,
        "a circle of {} modules: {largest:?}",
        largest.len()
    );
    let front_end = LAYERS.iter().position(|l| l.contains(&"tensor")).unwrap();
    for c in comps.iter().filter(|c| c.len() > 1) {
        let below: Vec<&String> = (c.iter())
            .filter(|m| LAYERS.iter().position(|l| l.contains(&m.as_str())).unwrap() < front_end)
            .collect();
        assert!(
            below.is_empty(),
            "modules below the front end in a circle: {c:?}"
        );
    }
}

/// Nothing below the front end reads the environment or asks for the host's target while it
/// compiles or runs a program: what a compile is for lives in its `CompileOptions` and
/// `Target` (read once, in `codegen/target.rs`, the options' default in `exec/compile.rs`)
/// and what a run needs is carried by the compiled program. Files that may read it: the
/// target and the options' default, the diagnostics switches (`JITFUSE_LOG`,
/// `JITFUSE_PROFILE`, read once) and the math tests (which run every level the CPU has).
#[test]
fn only_the_target_and_the_options_read_the_environment_below_the_front_end() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    let mut files = vec![];
    rust_files(&src, &mut files);
    let front_end = LAYERS.iter().position(|l| l.contains(&"tensor")).unwrap();
    let allowed = [
        "codegen/target.rs",
        "exec/compile.rs",
        "diag/log.rs",
        "diag/profile.rs",
        "codegen/math_tests/functions.rs",
    ];
    let mut readers = vec![];
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let Some(m) = module_of(rel) else { continue };
        let below = LAYERS.iter().position(|l| l.contains(&m.as_str())).unwrap() < front_end;
        let rel = rel.to_str().unwrap().replace('\\', "/");
        let text = std::fs::read_to_string(f).unwrap();
        let reads = (text.lines())
            .filter(|l| !l.trim_start().starts_with("//"))
            .any(|l| l.contains("env::var") || l.contains("Target::host()"));
        if below && reads && !allowed.contains(&rel.as_str()) {
            readers.push(rel);
        }
    }
    assert!(
        readers.is_empty(),
        "files below the front end reading the environment: {readers:?}"
    );
}
