//! A peer timed in the same rounds as jitfuse: `benches/jax_compare.py --serve` (XLA) and
//! `benches/torch_compare.py --serve` (PyTorch, eager and compiled) run as worker processes
//! and take one sample per request, so the peers' samples are interleaved with ours and see
//! the same machine. (Timing XLA first and ours after let the machine's bandwidth, which
//! drifts by 1.5× within minutes here, decide some ratios.)
//!
//! The worker is idle (blocked on its stdin) between requests, so the two
//! processes take turns (a peer's thread pool may spin briefly after a call; the
//! warm-up runs before each timed one absorb that). Each reply is timed inside
//! Python (around `block_until_ready`), so the pipe round trip is not counted.
//! A request the worker fails gives NaN samples: that row's columns of the peer stay
//! empty and the bench goes on.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::rc::Rc;

pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// "JAX 0.10.2", from the worker's greeting.
    pub version: String,
    /// "JAX", "PyTorch": for messages.
    peer: &'static str,
    /// Per row id: the compile time (s) reported by `setup` (NaN: it failed).
    compile: HashMap<String, f64>,
    /// Minor page faults per call of the last sample, counted by the worker.
    pub last_faults: u64,
}

/// Shared by the sample closures of every case of the peer.
pub type Shared = Rc<RefCell<Worker>>;

impl Worker {
    /// Start the worker of `peer`; `None` (with the reason on stderr) when Python, the
    /// peer (`install`: how to get it) or the script is missing or fails to start.
    pub fn start(script: &str, peer: &'static str, install: &str) -> Option<Shared> {
        let mut child = Command::new("python3")
            .arg(script)
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| eprintln!("cannot start python3 {script}: {e}"))
            .ok()?;
        let stdin = child.stdin.take()?;
        let mut stdout = BufReader::new(child.stdout.take()?);
        // The greeting; a stray line before it is skipped, the end of the
        // stream means the worker did not start.
        let version = loop {
            let mut line = String::new();
            if stdout.read_line(&mut line).map_or(true, |n| n == 0) {
                eprintln!("{script} --serve did not start (is {peer} installed? {install})");
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            if let Some(v) = line.trim().strip_prefix("ready ") {
                break v.to_string();
            }
        };
        Some(Rc::new(RefCell::new(Worker {
            child,
            stdin,
            stdout,
            version,
            peer,
            compile: HashMap::new(),
            last_faults: 0,
        })))
    }

    fn request(&mut self, line: &str) -> String {
        let peer = self.peer;
        writeln!(self.stdin, "{line}")
            .unwrap_or_else(|e| panic!("write to the {peer} worker: {e}"));
        self.stdin
            .flush()
            .unwrap_or_else(|e| panic!("flush the {peer} worker's stdin: {e}"));
        let mut reply = String::new();
        self.stdout
            .read_line(&mut reply)
            .unwrap_or_else(|e| panic!("read from the {peer} worker: {e}"));
        assert!(
            !reply.is_empty(),
            "the {peer} worker exited during `{line}` (see its stderr above)"
        );
        reply.trim().to_string()
    }

    /// One sample of row `id`: seconds per call, or NaN when the worker
    /// failed it (the reason is printed once). Compiles on first use, so rows
    /// left out by `JITFUSE_BENCH_ONLY` are never compiled.
    pub fn sample(&mut self, id: &str) -> f64 {
        if !self.compile.contains_key(id) {
            let reply = self.request(&format!("setup {id}"));
            let s = match reply.strip_prefix("ok ").and_then(|s| s.parse().ok()) {
                Some(s) => s,
                None => {
                    let peer = self.peer;
                    eprintln!("{peer} worker, setup {id}: {reply} (its {peer} columns stay empty)");
                    f64::NAN
                }
            };
            self.compile.insert(id.to_string(), s);
        }
        if self.compile[id].is_nan() {
            return f64::NAN;
        }
        let reply = self.request(&format!("run {id}"));
        let mut f = reply.split_whitespace().map(|v| v.parse::<f64>());
        match (f.next(), f.next()) {
            (Some(Ok(s)), Some(Ok(faults))) => {
                self.last_faults = faults.round() as u64;
                s
            }
            _ => {
                let peer = self.peer;
                eprintln!("{peer} worker, run {id}: {reply} (its {peer} columns stay empty)");
                self.compile.insert(id.to_string(), f64::NAN);
                f64::NAN
            }
        }
    }

    /// The peer's compile time of row `id` in seconds (after its first sample;
    /// NaN when it failed).
    pub fn compile_s(&self, id: &str) -> Option<f64> {
        self.compile.get(id).copied()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}
