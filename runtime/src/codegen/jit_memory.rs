//! The memory a program's JIT module writes its code into: blocks of the shared code heap
//! (`code_heap`), or Cranelift's own page-per-module memory where the heap cannot be used
//! (no heap on this system, or code whose relocations depend on its address).
//!
//! The provider is handed to the module, so what it allocated is shared with the caller
//! (`Allocated`): once the module is finalized and every code block is in the heap, the
//! module itself (its declarations and relocation records) is dropped and the program
//! keeps only its blocks.

use super::code_heap::Block;
use cranelift_jit::{BranchProtection, JITMemoryKind, JITMemoryProvider, SystemMemoryProvider};
use cranelift_module::ModuleResult;
use std::sync::{Arc, Mutex};

/// What a module's provider allocated.
#[derive(Default)]
pub struct Allocated {
    /// Code blocks in the shared heap.
    pub blocks: Vec<Block>,
    /// Bytes asked of Cranelift's own memory (code the heap could not take, or data): the
    /// module must then be kept, since that memory is freed through it.
    pub system_bytes: usize,
    /// When set, code goes to Cranelift's own memory (decided before it is defined).
    pub no_heap: bool,
}

pub struct Provider {
    pub shared: Arc<Mutex<Allocated>>,
    system: SystemMemoryProvider,
}

impl Provider {
    pub fn new() -> (Provider, Arc<Mutex<Allocated>>) {
        let shared = Arc::new(Mutex::new(Allocated::default()));
        (
            Provider {
                shared: shared.clone(),
                system: SystemMemoryProvider::new(),
            },
            shared,
        )
    }
}

impl JITMemoryProvider for Provider {
    fn allocate(
        &mut self,
        size: usize,
        align: u64,
        kind: JITMemoryKind,
    ) -> std::io::Result<*mut u8> {
        let mut a = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(kind, JITMemoryKind::Executable) && !a.no_heap {
            if let Some(b) = Block::new(size, align as usize) {
                let p = b.writable();
                a.blocks.push(b);
                return Ok(p);
            }
        }
        a.system_bytes += size;
        self.system.allocate(size, align, kind)
    }

    unsafe fn free_memory(&mut self) {
        self.system.free_memory();
        self.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .blocks
            .clear();
    }

    fn finalize(&mut self, branch_protection: BranchProtection) -> ModuleResult<()> {
        // Heap blocks are executable through their other mapping already.
        self.system.finalize(branch_protection)
    }
}

impl Allocated {
    /// Where the code at `p` (an address the module handed out) runs.
    pub fn executable(&self, p: *const u8) -> *const u8 {
        self.blocks
            .iter()
            .find_map(|b| b.executable(p))
            .unwrap_or(p)
    }

    /// Resident bytes of code memory: the heap blocks' whole units, and Cranelift's own
    /// memory in whole pages.
    pub fn bytes(&self) -> usize {
        self.blocks.iter().map(Block::bytes).sum::<usize>()
            + self.system_bytes.next_multiple_of(4096)
    }
}
