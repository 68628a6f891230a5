//! Cranelift code generation: one function per kernel, all kernels of a
//! program in one JIT module, whose code goes to the shared code heap
//! (`code_heap`) and is freed with the program.

mod code_heap;
mod half;
mod jit_memory;
mod kernel;
pub mod lower;
mod lower_traced;
pub mod math;
#[cfg(test)]
mod math_tests;
pub mod micro;
mod reduce;
mod row;
pub mod target;
pub mod traced;
pub mod trig;
mod vector;
#[cfg(target_arch = "x86_64")]
pub mod x86;

pub use target::{GemmSplit, Isa, Target};

use crate::describe::Description;
use crate::fusion::partition::{Partition, Step};
use crate::ir::Graph;
use crate::Error;
use cranelift_codegen::ir::{types, AbiParam};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::Module;
use lower::Lowered;
use once_cell::sync::Lazy;

/// The signature of every compiled kernel.
pub type KernelFn = unsafe extern "C" fn(ptrs: *const *mut u8, begin: i64, end: i64);

/// The host ISA with the CPU's features (Cranelift uses up to AVX2/FMA), built once.
static ISA: Lazy<Result<OwnedTargetIsa, String>> = Lazy::new(|| {
    let mut fb = settings::builder();
    let set = |fb: &mut settings::Builder, k: &str, v: &str| {
        fb.set(k, v).map_err(|e| format!("{k}={v}: {e}"))
    };
    set(&mut fb, "opt_level", "speed")?;
    // The verifier runs in debug builds and tests (it costs 30-50 % of compile time).
    set(
        &mut fb,
        "enable_verifier",
        if cfg!(debug_assertions) {
            "true"
        } else {
            "false"
        },
    )?;
    set(&mut fb, "is_pic", "false")?;
    let isa = cranelift_native::builder().map_err(|e| format!("host ISA: {e}"))?;
    isa.finish(settings::Flags::new(fb))
        .map_err(|e| format!("host ISA: {e}"))
});

static LIVE: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Whether the code of the program with this id (`Executable::code_id`) is
/// still mapped. Lets tests check that clearing caches frees code.
pub fn is_code_live(id: u64) -> bool {
    LIVE.lock().unwrap().contains(&id)
}

/// Number of compiled programs whose code is mapped now.
pub fn live_code_count() -> usize {
    LIVE.lock().unwrap().len()
}

/// Bytes of executable memory the shared code heap has mapped, and the bytes of it that
/// programs hold (the rest: free units of partly used chunks).
pub fn code_heap_bytes() -> (usize, usize) {
    code_heap::heap_bytes()
}

/// A program's code, freed when the program is dropped: its blocks of the shared code
/// heap, and the JIT module only where some of it is in Cranelift's own memory.
pub struct JitCode {
    module: Option<JITModule>,
    blocks: Vec<code_heap::Block>,
    pub id: u64,
}

impl JitCode {
    /// Heap bytes of the code's bookkeeping: the block list, and the JIT module where it
    /// is kept (its declarations and relocation records; a measured figure).
    pub fn held_bytes(&self) -> usize {
        const MODULE_BYTES: usize = 2048;
        crate::units::heap_block(self.blocks.capacity() * std::mem::size_of::<code_heap::Block>())
            + if self.module.is_some() {
                MODULE_BYTES
            } else {
                0
            }
    }
}

// SAFETY: the module is only touched at drop; its finalized code is immutable
// and callable from any thread.
unsafe impl Send for JitCode {}
unsafe impl Sync for JitCode {}

impl Drop for JitCode {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: the program owning this code is being dropped, so no
            // call can be running through its function pointers.
            unsafe { m.free_memory() };
        }
        // The blocks (dropped after this) go back to the heap.
        self.blocks.clear();
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&i| i != self.id);
    }
}

pub struct CompiledKernels {
    /// Each compiled step's function, in step order (the executable moves them into its
    /// steps).
    pub fns: Vec<KernelFn>,
    /// Resident bytes holding the machine code of all kernels: whole 64-byte units of the
    /// code heap (or whole pages of Cranelift's own memory).
    pub code_bytes: usize,
    /// Cranelift IR text of each kernel (when asked for).
    pub clif: Vec<String>,
    /// Machine code (Cranelift's VCode listing) of each kernel (when asked for).
    pub asm: Vec<String>,
    pub code: JitCode,
}

/// One kernel as built: its Cranelift IR text (or a note that it is x86 code), its code (x86
/// bytes, or the IR text: what debug builds compare between kernels of one key), and the IR to
/// compile (Cranelift kernels) or the listing (x86 kernels, when asked for).
struct Built {
    clif: String,
    code: Vec<u8>,
    func: Option<cranelift_codegen::ir::Function>,
    listing: Option<String>,
}

/// A kernel built earlier in the program, under its lowered key.
struct Known {
    id: cranelift_module::FuncId,
    clif: String,
    /// Its code (debug builds only).
    code: Vec<u8>,
}

/// One kernel's machine code, compiled off the module (on any thread).
struct MachineCode {
    bytes: Vec<u8>,
    alignment: u64,
    relocs: Vec<cranelift_module::ModuleReloc>,
    /// Optimised IR and VCode listing (when asked for).
    asm: String,
}

/// Compile one kernel's IR to machine code. Pure: runs on rayon's pool.
fn compile_function(
    isa: &dyn cranelift_codegen::isa::TargetIsa,
    func: cranelift_codegen::ir::Function,
    id: cranelift_module::FuncId,
    keep_clif: bool,
) -> Result<MachineCode, Error> {
    let mut ctx = cranelift_codegen::Context::for_function(func);
    ctx.set_disasm(keep_clif);
    let alignment = ctx
        .compile(isa, &mut Default::default())
        .map_err(|e| Error::codegen(format!("{:?}", e.inner)))?
        .buffer
        .alignment as u64;
    let code = ctx.compiled_code().expect("compiled");
    let relocs = code
        .buffer
        .relocs()
        .iter()
        .map(|r| cranelift_module::ModuleReloc::from_mach_reloc(r, &ctx.func, id))
        .collect();
    let asm = if keep_clif {
        // The IR after Cranelift's optimisations (where the egraph placed
        // each instruction), then the machine code.
        format!(
            "{}\n{}",
            ctx.func.display(),
            code.vcode.clone().unwrap_or_default()
        )
    } else {
        String::new()
    };
    Ok(MachineCode {
        bytes: code.code_buffer().to_vec(),
        alignment,
        relocs,
        asm,
    })
}

/// Compile functions to machine code, spread over the cores with scoped
/// threads of our own. Not on rayon's pool: a compile runs inside the
/// cache's once-per-signature initialisation, and a rayon worker waiting for
/// its jobs may steal a user's job that calls the same jitted function
/// (re-entering that initialisation: deadlock), or the pool's workers may
/// all be user jobs blocked on it. A thread spawn (~65 µs) is small against
/// the ~0.3 ms a kernel takes to compile.
fn compile_all(
    isa: &dyn cranelift_codegen::isa::TargetIsa,
    todo: Vec<(cranelift_module::FuncId, cranelift_codegen::ir::Function)>,
    keep_clif: bool,
) -> Vec<Result<(cranelift_module::FuncId, MachineCode), Error>> {
    let one = |(id, func): (cranelift_module::FuncId, cranelift_codegen::ir::Function)| {
        compile_function(isa, func, id, keep_clif).map(|m| (id, m))
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(todo.len())
        .min(8);
    if threads < 2 {
        return todo.into_iter().map(one).collect();
    }
    // Round-robin shares (kernels of a program come in all sizes).
    let mut shares: Vec<Vec<_>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, f) in todo.into_iter().enumerate() {
        shares[i % threads].push(f);
    }
    let mine = shares.remove(0);
    std::thread::scope(|s| {
        let others: Vec<_> = shares
            .into_iter()
            .map(|share| s.spawn(move || share.into_iter().map(one).collect::<Vec<_>>()))
            .collect();
        let mut out: Vec<_> = mine.into_iter().map(one).collect();
        for h in others {
            match h.join() {
                Ok(v) => out.extend(v),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        out
    })
}

/// Compile every kernel and reduction step of a partition (in step order).
///
/// Three phases: build each kernel's Cranelift IR (cheap, sequential: the
/// builders need the module for imports); compile the distinct ones to
/// machine code in parallel (`compile_all`; Cranelift's optimiser and
/// register allocator are nearly all of a compile); define the bytes in the
/// module and finalize once.
pub fn compile(
    g: &Graph,
    part: &Partition,
    described: &[Description],
    keep_clif: bool,
    target: &Target,
) -> Result<CompiledKernels, Error> {
    let kernels = (part.steps.iter().zip(described)).filter(|s| !matches!(s.0, Step::Library(_)));
    let count = kernels.clone().count();
    let isa = ISA.as_ref().map_err(|e| Error::codegen(e.clone()))?.clone();
    let (provider, allocated) = jit_memory::Provider::new();
    let mut builder = JITBuilder::with_isa(isa.clone(), cranelift_module::default_libcall_names());
    builder.memory_provider(Box::new(provider));
    let mut module = JITModule::new(builder);
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut sig = module.make_signature();
    for _ in 0..3 {
        sig.params.push(AbiParam::new(types::I64));
    }
    let mut ids = Vec::new();
    let mut clif = Vec::new();
    // Distinct functions to compile: (id, IR).
    let mut todo: Vec<(cranelift_module::FuncId, cranelift_codegen::ir::Function)> = Vec::new();
    let mut x86_asm: std::collections::HashMap<cranelift_module::FuncId, String> =
        std::collections::HashMap::new();
    // Kernels by their lowered text (`Lowered::key`), the one deduplication key: a kernel like
    // an earlier one (the layers of a deep network and their gradients) takes its function
    // without being built again. A program of one kernel has nothing to share: no key. Debug
    // builds build it anyway and check that the code is the same.
    let mut by_key: std::collections::HashMap<String, Known> = std::collections::HashMap::new();
    for (k, desc) in kernels {
        let lowered = crate::diag::phases::phase("codegen lower", || {
            Lowered::of(g, k, desc, target).expect("each step has its own kind of description")
        });
        let key = (count > 1).then(|| lowered.key());
        let known = key.as_ref().and_then(|t| by_key.get(t));
        if let (Some(known), false) = (known, cfg!(debug_assertions)) {
            ids.push(known.id);
            if keep_clif {
                clif.push(known.clif.clone());
            }
            continue;
        }
        let built = 'emit: {
            #[cfg(target_arch = "x86_64")]
            {
                let code = crate::diag::phases::phase("codegen x86", || match &lowered {
                    Lowered::Loop(lk) => x86::build(lk, target),
                    // (Reductions outside row groups are rare: their input's reduced axes
                    // are not its trailing ones. Cranelift takes them.)
                    Lowered::Reduce(_) => None,
                    Lowered::Row(rb) => x86::row::build(rb, target),
                });
                if let Some(code) = code {
                    let text = format!("(an {} kernel: no Cranelift IR)", code.width.name());
                    let listing = keep_clif.then(|| x86::listing(&code));
                    break 'emit Built {
                        clif: text,
                        code: code.bytes,
                        func: None,
                        listing,
                    };
                }
            }
            ctx.func.signature = sig.clone();
            let _build = crate::diag::phases::Timer::start("codegen clif build");
            {
                let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
                match &lowered {
                    Lowered::Loop(lk) => kernel::build(&mut b, lk, target),
                    Lowered::Reduce(r) => reduce::build(&mut b, r),
                    Lowered::Row(rb) => row::build(&mut b, rb, target),
                }
                b.seal_all_blocks();
                b.finalize(module.target_config());
            }
            drop(_build);
            let text = (keep_clif || cfg!(debug_assertions)).then(|| {
                crate::diag::phases::phase("codegen clif text", || ctx.func.display().to_string())
            });
            let func = std::mem::replace(&mut ctx.func, cranelift_codegen::ir::Function::new());
            module.clear_context(&mut ctx);
            let text = text.unwrap_or_default();
            Built {
                clif: text.clone(),
                code: text.into_bytes(),
                func: Some(func),
                listing: None,
            }
        };
        if let Some(known) = known {
            assert!(
                known.code == built.code,
                "kernels of the same lowered key built different code:\n{}",
                lowered.key()
            );
            ids.push(known.id);
            if keep_clif {
                clif.push(known.clif.clone());
            }
            continue;
        }
        let id = module
            .declare_anonymous_function(&sig)
            .map_err(|e| Error::codegen(e.to_string()))?;
        match built.func {
            // Cranelift IR: compiled below, with the others, in parallel.
            Some(func) => todo.push((id, func)),
            // x86 machine code: defined now.
            None => {
                module
                    .define_function_bytes(id, 64, &built.code, &[])
                    .map_err(|e| Error::codegen(format!("{e:?}")))?;
                if let Some(listing) = built.listing {
                    x86_asm.insert(id, listing);
                }
            }
        }
        ids.push(id);
        if keep_clif {
            clif.push(built.clif.clone());
        }
        if let Some(key) = key {
            let code = if cfg!(debug_assertions) {
                built.code
            } else {
                Vec::new()
            };
            let clif = if keep_clif { built.clif } else { String::new() };
            by_key.insert(key, Known { id, clif, code });
        }
    }
    let compiled =
        crate::diag::phases::phase("codegen cranelift", || compile_all(&*isa, todo, keep_clif));
    let compiled: Vec<_> = compiled.into_iter().collect::<Result<_, _>>()?;
    // Code that refers to itself or its neighbours by relative address must run where it
    // was written: Cranelift's own memory, not the heap's second mapping.
    if compiled
        .iter()
        .any(|(_, m)| m.relocs.iter().any(|r| !position_independent(r.kind)))
    {
        allocated.lock().unwrap_or_else(|e| e.into_inner()).no_heap = true;
    }
    let mut asm_of = x86_asm;
    for (id, m) in compiled {
        module
            .define_function_bytes(id, m.alignment, &m.bytes, &m.relocs)
            .map_err(|e| Error::codegen(format!("{e:?}")))?;
        asm_of.insert(id, m.asm);
    }
    let mut asm = Vec::new();
    if keep_clif {
        let mut shown = std::collections::HashSet::new();
        for id in &ids {
            asm.push(if shown.insert(*id) {
                asm_of[id].clone()
            } else {
                "(the same code as an earlier kernel)".to_string()
            });
        }
    }
    module
        .finalize_definitions()
        .map_err(|e| Error::codegen(e.to_string()))?;
    let mut allocated = std::mem::take(&mut *allocated.lock().unwrap_or_else(|e| e.into_inner()));
    let fns = ids
        .iter()
        .map(|&id| {
            let p = allocated.executable(module.get_finalized_function(id));
            // SAFETY: every kernel was built with the KernelFn signature.
            unsafe { std::mem::transmute::<*const u8, KernelFn>(p) }
        })
        .collect();
    let code_bytes = allocated.bytes();
    allocated.blocks.iter().for_each(code_heap::Block::written);
    // All code in the heap: the module's bookkeeping is not needed any more (dropping it
    // frees nothing of the heap, and its own memory provider holds nothing).
    let module = (allocated.system_bytes > 0).then_some(module);
    let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).push(id);
    Ok(CompiledKernels {
        fns,
        code_bytes,
        clif,
        asm,
        code: JitCode {
            module,
            blocks: std::mem::take(&mut allocated.blocks),
            id,
        },
    })
}

/// Whether a relocation of this kind patches an absolute address (the same wherever the
/// code runs).
fn position_independent(kind: cranelift_codegen::binemit::Reloc) -> bool {
    use cranelift_codegen::binemit::Reloc;
    matches!(kind, Reloc::Abs4 | Reloc::Abs8)
}
