//! XLA timed in the same rounds as jitfuse: `benches/jax_compare.py --serve`
//! runs as a worker process and takes one XLA sample per request, so XLA's
//! samples are interleaved with ours and see the same machine. (Timing XLA
//! first and ours after let the machine's bandwidth, which drifts by 1.5×
//! within minutes here, decide some ratios.)
//!
//! The worker blocks on its stdin between requests, so the two processes
//! never run at the same time. Each reply is timed inside Python (around
//! `block_until_ready`), so the pipe round trip is not counted.

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
    /// Per row id: the compile time (s) reported by `setup`.
    compile: HashMap<String, f64>,
    /// Per row id: minor page faults per call of every sample taken.
    faults: HashMap<String, Vec<f64>>,
}

/// Shared by the sample closures of every XLA case.
pub type Shared = Rc<RefCell<Worker>>;

impl Worker {
    /// Start the worker; `None` (with the reason on stderr) when Python, JAX
    /// or the script is missing or fails to start.
    pub fn start(script: &str) -> Option<Shared> {
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
        let mut greeting = String::new();
        stdout.read_line(&mut greeting).ok()?;
        let Some(version) = greeting.trim().strip_prefix("ready ") else {
            eprintln!(
                "{script} --serve did not start (is JAX installed? pip install \"jax[cpu]\" numpy)"
            );
            let _ = child.kill();
            return None;
        };
        Some(Rc::new(RefCell::new(Worker {
            version: version.to_string(),
            child,
            stdin,
            stdout,
            compile: HashMap::new(),
            faults: HashMap::new(),
        })))
    }

    fn request(&mut self, line: &str) -> String {
        writeln!(self.stdin, "{line}").expect("write to the JAX worker");
        self.stdin.flush().expect("flush the JAX worker's stdin");
        let mut reply = String::new();
        self.stdout
            .read_line(&mut reply)
            .expect("read from the JAX worker");
        assert!(
            !reply.is_empty(),
            "the JAX worker exited during `{line}` (see its stderr above)"
        );
        reply.trim().to_string()
    }

    /// One XLA sample of row `id`: seconds per call. Compiles on first use
    /// (so rows left out by `JITFUSE_BENCH_ONLY` are never compiled).
    pub fn sample(&mut self, id: &str) -> f64 {
        if !self.compile.contains_key(id) {
            let reply = self.request(&format!("setup {id}"));
            let s = reply
                .strip_prefix("ok ")
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("JAX worker, setup {id}: {reply}"));
            self.compile.insert(id.to_string(), s);
        }
        let reply = self.request(&format!("run {id}"));
        let mut f = reply.split_whitespace().map(|v| v.parse::<f64>());
        match (f.next(), f.next()) {
            (Some(Ok(s)), Some(Ok(faults))) => {
                self.faults.entry(id.to_string()).or_default().push(faults);
                s
            }
            _ => panic!("JAX worker, run {id}: {reply}"),
        }
    }

    /// XLA's compile time of row `id` in seconds (after its first sample).
    pub fn compile_s(&self, id: &str) -> Option<f64> {
        self.compile.get(id).copied()
    }

    /// Median minor page faults per XLA call of row `id`.
    pub fn faults(&self, id: &str) -> Option<f64> {
        let mut v = self.faults.get(id)?.clone();
        v.sort_by(|a, b| a.total_cmp(b));
        v.get(v.len() / 2).copied()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}
