//! `JITFUSE_DUMP=dir`: every compilation writes its stages to `dir`:
//! `<fn>.<n>.traced.ir`, `.simplified.ir`, `.kernels.txt`, `.clif`, `.asm`,
//! `.memory.svg` and `.memory.txt` (the memory report as `Display` prints it).

use crate::exec::args::Signature;
use crate::exec::Executable;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

static SEQ: AtomicUsize = AtomicUsize::new(0);

pub fn write(dir: &Path, name: &str, sig: &Signature, exe: &Executable) {
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let files = [
        (
            "traced.ir",
            format!("// {name} {sig}\n{}", exe.traced_text()),
        ),
        ("simplified.ir", exe.optimized_text()),
        ("kernels.txt", exe.kernels_text()),
        ("clif", exe.clif_text()),
        ("asm", exe.asm_text()),
        (
            "memory.svg",
            exe.memory_svg_titled(&format!("{name} {sig}")),
        ),
        (
            "memory.txt",
            format!("// {name} {sig}\n{}\n", exe.memory_analysis()),
        ),
    ];
    // Dumping is a debugging aid: a failure to write must not fail the call.
    let _ = std::fs::create_dir_all(dir);
    for (ext, text) in files {
        let _ = std::fs::write(dir.join(format!("{name}.{n}.{ext}")), text);
    }
}
