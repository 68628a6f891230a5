//! Readable listings of the x86 kernels (for `JITFUSE_DUMP`'s `.asm`, `explain` and the
//! recorded listings of the tests): a header line of what the kernel is, then its machine
//! code disassembled in Intel syntax at offsets from the kernel's start, then its constant
//! pool as words.
//!
//! Every kernel is laid out as its code, ending in the one `ret` of its epilogue, then the
//! constants it reads by address (`Asm::finish`): the listing decodes up to that `ret` and
//! shows the bytes after it as data, never as instructions.

use super::{Code, Lane, PREFETCH_AHEAD};
use iced_x86::{Decoder, DecoderOptions, Formatter, Instruction, IntelFormatter, Mnemonic};
use std::fmt::Write;

/// The listing of `code`: its header line (size, micro-kernel calls, registers, prefetch),
/// each instruction as `offset  instruction`, and the constant pool.
pub fn listing(code: &Code) -> String {
    let mut s = header(code);
    let end = disassemble(&code.bytes, &mut s);
    let pool = &code.bytes[end..];
    if !pool.is_empty() {
        let word = match code.lane {
            Lane::F32 => 4,
            Lane::F64 => 8,
        };
        let _ = writeln!(s, "  constants ({} bytes):", pool.len());
        for line in pool.chunks(8 * word) {
            s.push_str("   ");
            for w in line.chunks(word) {
                let v = w.iter().rev().fold(0u64, |v, &b| v << 8 | b as u64);
                let _ = write!(s, " {v:0width$x}", width = 2 * w.len());
            }
            s.push('\n');
        }
    }
    s
}

/// What the kernel is, one line (the tests and `explain` read its fields).
fn header(code: &Code) -> String {
    let prefetch = match (code.prefetched, code.kind) {
        (0, _) => String::new(),
        (n, "row kernel") => format!(", next row prefetched for {n} accesses"),
        (n, _) => format!(", {PREFETCH_AHEAD} bytes ahead prefetched for {n} accesses"),
    };
    let homed = match code.homed {
        0 => String::new(),
        n => format!(", {n} stashed rows kept in outputs"),
    };
    let lanes = match (code.lane, code.int) {
        (Lane::F32, false) => "",
        (Lane::F64, false) => " (f64 lanes)",
        (Lane::F32, true) => " (i32 lanes)",
        (Lane::F64, true) => " (i64 lanes)",
    };
    format!(
        "{} {}{lanes}, {} bytes of machine code, {} micro-kernel calls per tile, {} values held \
         in registers{homed}{prefetch}:\n",
        code.width.name(),
        code.kind,
        code.bytes.len(),
        code.tiled,
        code.held
    )
}

/// Write the instructions of `bytes` up to and including the first `ret` into `s`, one per
/// line; the offset where they end.
fn disassemble(bytes: &[u8], s: &mut String) -> usize {
    let mut decoder = Decoder::with_ip(64, bytes, 0, DecoderOptions::NONE);
    let mut fmt = IntelFormatter::new();
    let o = fmt.options_mut();
    o.set_hex_prefix("0x");
    o.set_hex_suffix("");
    o.set_uppercase_hex(false);
    o.set_branch_leading_zeros(false);
    o.set_space_after_operand_separator(true);
    let mut ins = Instruction::default();
    let mut text = String::new();
    while decoder.can_decode() {
        decoder.decode_out(&mut ins);
        text.clear();
        fmt.format(&ins, &mut text);
        let _ = writeln!(s, "  {:04x}  {text}", ins.ip());
        if ins.mnemonic() == Mnemonic::Ret {
            return ins.next_ip() as usize;
        }
    }
    bytes.len()
}
