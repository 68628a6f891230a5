//! Kernel listings a person can read, recorded: for a few programs that cover the kernel
//! kinds (loop kernels with transcendentals and broadcasts, f64 and integer lanes, row
//! kernels: softmax, layer norm, a lone sum), the x86 emitter's code disassembled at AVX-512 and AVX2 width, and the
//! Cranelift IR the portable level builds. A change of code generation shows here as a diff
//! of instructions; after an intended one, `UPDATE_EXPECT=1` rewrites
//! `snapshots/kernels/`. Programs are compiled for the target only (`Target::emit_only`),
//! never run, so the listings are the same on every machine; `avx512_code.txt` (x86.rs)
//! fingerprints a wider corpus.

use crate::common::{compile_at, trace_fn};
use jitfuse::internals::codegen::{Isa, Target};
use jitfuse::prelude::*;

type Program = fn(&[Tensor]) -> Vec<Tensor>;

/// The x86 kernels of a listing (`asm_text`): each header line the emitter writes (`AVX-512
/// ...`, `AVX2 ...`) with its indented instructions and constants. Cranelift's own machine
/// code, which depends on the host's features, is left out.
fn x86_kernels(asm: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for l in asm.lines() {
        if l.starts_with("AVX-512 ") || l.starts_with("AVX2 ") {
            inside = true;
            if !out.is_empty() {
                out.push('\n');
            }
        } else if !l.starts_with("  ") {
            inside = false;
        }
        if inside {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

fn record(name: &str, args: &[Tensor], f: Program) {
    let g = trace_fn(args, f);
    for isa in [Isa::Avx512, Isa::Avx2] {
        let exe = compile_at(g.clone(), &Target::emit_only(isa)).unwrap();
        let text = x86_kernels(&exe.asm_text());
        let file = format!("snapshots/kernels/{name}.{}.asm", isa.name());
        expect_test::expect_file![file].assert_eq(&text);
    }
    let exe = compile_at(g, &Target::emit_only(Isa::Portable)).unwrap();
    let file = format!("snapshots/kernels/{name}.portable.clif");
    expect_test::expect_file![file].assert_eq(&exe.clif_text());
}

#[test]
fn kernel_listings_are_the_recorded_ones() {
    let f32s = |shapes: &[&[usize]]| -> Vec<Tensor> {
        shapes
            .iter()
            .map(|s| Tensor::zeros(s, DType::F32))
            .collect()
    };
    record("gelu", &f32s(&[&[4096]]), |ts| vec![ts[0].gelu()]);
    record("scale_rows", &f32s(&[&[512, 1024], &[512, 1]]), |ts| {
        vec![(&ts[0] * &ts[1]).maximum(&(&ts[1] * 0.5)) - 1.0]
    });
    record(
        "axpby_f64",
        &[
            Tensor::zeros(&[4096], DType::F64),
            Tensor::zeros(&[4096], DType::F64),
        ],
        |ts| vec![(&ts[0] * 2.0 + &ts[1]).sqrt()],
    );
    record(
        "int_mix",
        &[
            Tensor::zeros(&[4096], DType::I32),
            Tensor::zeros(&[4096], DType::I32),
        ],
        |ts| vec![(&ts[0] * &ts[1] + 3).maximum(&ts[1])],
    );
    record("softmax", &f32s(&[&[64, 1000]]), |ts| {
        vec![ts[0].softmax(-1)]
    });
    record(
        "layer_norm",
        &f32s(&[&[64, 1000], &[1000], &[1000]]),
        |ts| vec![ts[0].layer_norm(&ts[1], &ts[2], 1e-5, -1)],
    );
    record("row_sum", &f32s(&[&[64, 4100]]), |ts| vec![ts[0].sum(-1)]);
}
