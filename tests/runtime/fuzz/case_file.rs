//! A regression program as a file of `tests/runtime/programs/`: what it once broke, how it
//! is called (each parameter's mode and value stream, the seed, the error floor), its IR, and
//! what each stage of the compiler makes of it (the simplified graph, the steps, the steps as
//! lowered for the backends). The runner
//! (`programs.rs`) checks every file against the interpreter at every level and its stages
//! against the recorded text; `UPDATE_EXPECT=1` rewrites the stages. The fuzzer's shrinker
//! writes the file of a failing case (`save`).
//!
//! ```text
//! # What it once broke (any number of comment lines).
//! seed 1000210
//! floor 1.0
//! params Donated Borrowed
//! draws 0 1
//! === ir
//! %0 = param 0 : f64[15,7]
//! ...
//! === simplified
//! ...
//! === steps
//! ...
//! === lowered
//! ...
//! ```

use super::program::Mode;
use jitfuse::internals::exec::Executable;
use jitfuse::internals::ir;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq)]
pub struct CaseFile {
    /// The comment lines (without `# `).
    pub about: Vec<String>,
    pub seed: u64,
    pub floor: f64,
    pub modes: Vec<Mode>,
    /// Each parameter's value stream (`0..n` unless a shrunk case dropped parameters).
    pub draws: Vec<u64>,
    pub ir: String,
    /// (stage, text), in the order of `STAGES`.
    pub stages: Vec<(String, String)>,
}

/// The stages recorded, in order.
pub const STAGES: [&str; 3] = ["simplified", "steps", "lowered"];

/// The folder of the regression programs.
pub fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/runtime/programs")
}

fn mode(word: &str) -> Result<Mode, String> {
    match word {
        "Borrowed" => Ok(Mode::Borrowed),
        "Donated" => Ok(Mode::Donated),
        "Shared" => Ok(Mode::Shared),
        other => Err(format!(
            "unknown mode `{other}` (Borrowed, Donated or Shared)"
        )),
    }
}

impl CaseFile {
    pub fn parse(text: &str) -> Result<CaseFile, String> {
        let mut case = CaseFile {
            about: Vec::new(),
            seed: 0,
            floor: 1.0,
            modes: Vec::new(),
            draws: Vec::new(),
            ir: String::new(),
            stages: Vec::new(),
        };
        let mut draws = None;
        let mut section: Option<String> = None;
        let mut body = String::new();
        let close =
            |section: &mut Option<String>, body: &mut String, case: &mut CaseFile| match section
                .take()
                .as_deref()
            {
                Some("ir") => case.ir = std::mem::take(body),
                Some(s) => case.stages.push((s.to_string(), std::mem::take(body))),
                None => {}
            };
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("=== ") {
                close(&mut section, &mut body, &mut case);
                section = Some(name.trim().to_string());
                continue;
            }
            if section.is_some() {
                body.push_str(line);
                body.push('\n');
                continue;
            }
            let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
            let number = |what: &str| format!("`{line}`: a {what}");
            match key {
                "#" => case.about.push(rest.to_string()),
                "" => {}
                "seed" => case.seed = rest.trim().parse().map_err(|_| number("seed"))?,
                "floor" => case.floor = rest.trim().parse().map_err(|_| number("floor"))?,
                "params" => {
                    case.modes = rest
                        .split_whitespace()
                        .map(mode)
                        .collect::<Result<_, _>>()?
                }
                "draws" => {
                    let d: Result<Vec<u64>, _> = rest.split_whitespace().map(str::parse).collect();
                    draws = Some(d.map_err(|_| number("list of draws"))?);
                }
                _ => {
                    return Err(format!(
                        "`{line}`: not a header line (# seed floor params draws)"
                    ))
                }
            }
        }
        close(&mut section, &mut body, &mut case);
        case.draws = draws.unwrap_or_else(|| (0..case.modes.len() as u64).collect());
        if case.draws.len() != case.modes.len() {
            return Err(format!(
                "{} draws for {} parameters",
                case.draws.len(),
                case.modes.len()
            ));
        }
        if case.ir.is_empty() {
            return Err("no `=== ir` section".into());
        }
        Ok(case)
    }

    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for line in &self.about {
            s.push_str(&format!("# {line}\n"));
        }
        s.push_str(&format!("seed {}\nfloor {:?}\n", self.seed, self.floor));
        let modes: Vec<String> = self.modes.iter().map(|m| format!("{m:?}")).collect();
        s.push_str(&format!("params {}\n", modes.join(" ")));
        if !self.draws.iter().copied().eq(0..self.draws.len() as u64) {
            let draws: Vec<String> = self.draws.iter().map(u64::to_string).collect();
            s.push_str(&format!("draws {}\n", draws.join(" ")));
        }
        s.push_str(&format!("=== ir\n{}", self.ir));
        for (name, text) in &self.stages {
            s.push_str(&format!("=== {name}\n{text}"));
        }
        s
    }

    /// What each stage makes of the IR now (a stage that fails records its error).
    pub fn current_stages(&self) -> Vec<(String, String)> {
        let run = |f: &dyn Fn() -> Result<String, String>| match catch_unwind(AssertUnwindSafe(f)) {
            Ok(Ok(text)) => text,
            Ok(Err(e)) => format!("(error: {e})\n"),
            Err(p) => format!("(panicked: {})\n", crate::common::panic_text(&*p)),
        };
        let parsed = || ir::parse(&self.ir).map_err(|e| e.to_string());
        let simplified = run(&|| Ok(jitfuse::internals::passes::simplify(&parsed()?).to_text()));
        let exe = || Executable::from_graph(parsed()?, vec![]).map_err(|e| e.to_string());
        let steps = run(&|| Ok(exe()?.kernels_text()));
        let lowered = run(&|| Ok(exe()?.lowered_text()));
        let texts = [simplified, steps, lowered];
        (STAGES.iter().zip(texts))
            .map(|(n, t)| (n.to_string(), end_line(t)))
            .collect()
    }
}

fn end_line(mut t: String) -> String {
    if !t.ends_with('\n') {
        t.push('\n');
    }
    t
}

/// Write the file of a failing case found by the fuzzer (`about`: what failed) into `dir`
/// (the fuzzer: `folder()`), named by its seed; returns its path.
pub fn save(
    dir: &Path,
    about: &str,
    ir: &str,
    modes: &[Mode],
    draws: &[u64],
    seed: u64,
    floor: f64,
) -> std::io::Result<PathBuf> {
    let mut case = CaseFile {
        about: vec![format!("Found by the fuzzer (seed {seed}): {about}")],
        seed,
        floor,
        modes: modes.to_vec(),
        draws: draws.to_vec(),
        ir: end_line(ir.to_string()),
        stages: Vec::new(),
    };
    case.stages = case.current_stages();
    let path = dir.join(format!("fuzz_{seed}.txt"));
    std::fs::create_dir_all(dir)?;
    std::fs::write(&path, case.to_text())?;
    Ok(path)
}
