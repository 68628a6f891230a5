//! One executable-memory heap shared by every program's machine code.
//!
//! Cranelift's default JIT memory maps at least one page per module (and keeps the
//! module's bookkeeping alive with it): a one-op eager program of ~600 bytes of code held
//! a 4 KiB page, and thousands of them held most of the cache's real memory uncounted.
//! Here every program's code is cut from shared chunks in 64-byte units, so it holds what
//! its code needs.
//!
//! Each chunk is one `memfd` mapped twice: writable, where Cranelift writes and relocates
//! the code, and read+execute, where it runs (no page is ever writable and executable, and
//! new code never changes the protection of code other threads are running). Relocations
//! are therefore only allowed when they do not depend on where the code sits (absolute
//! addresses): the caller checks (`position_independent`) and falls back to a private
//! module otherwise. When a program is dropped its units are freed; a page whose units are
//! all free is punched out of the file (its memory returns to the system), and a chunk
//! with nothing left is unmapped.
//!
//! x86-64 Linux only (x86 keeps instruction fetch coherent with writes through another
//! mapping of the same memory; other targets would need cache maintenance): elsewhere, or
//! when the kernel refuses the mappings, `Block::new` returns `None` and the caller uses
//! Cranelift's own memory.

use std::sync::Mutex;

/// Allocation granule: code is aligned to at most this (Cranelift asks 16 or 32, the
/// AVX-512 kernels 64).
pub const UNIT: usize = 64;
const PAGE: usize = 4096;
const UNITS_PER_PAGE: usize = PAGE / UNIT;
/// A chunk's size: 64 pages, one pair of mappings for dozens to hundreds of programs.
const CHUNK: usize = 256 * 1024;

/// Units of a chunk, free or not.
struct Chunk {
    /// Distinct from every other chunk's (chunks come and go).
    id: u64,
    rw: *mut u8,
    rx: *const u8,
    len: usize,
    fd: i32,
    used: Vec<bool>,
    in_use: usize,
    /// Units below this have been handed out at least once; above, all are free (new
    /// code is appended here without a search).
    cursor: usize,
}

// SAFETY: the raw pointers are addresses of mappings the heap owns; they are only
// dereferenced by the code's owner (writes before the code is published).
unsafe impl Send for Chunk {}

struct Heap {
    chunks: Vec<Chunk>,
    next_id: u64,
}

static HEAP: Mutex<Heap> = Mutex::new(Heap {
    chunks: Vec::new(),
    next_id: 1,
});

/// Units of one chunk held by one allocation; freed on drop.
pub struct Block {
    chunk: u64,
    first: usize,
    units: usize,
    rw: *mut u8,
    rx: *const u8,
}

// SAFETY: as `Chunk`: the block's memory is owned by it until it is dropped.
unsafe impl Send for Block {}
unsafe impl Sync for Block {}

impl Block {
    /// `size` bytes aligned to `align` (at most `UNIT`), or `None` where the heap is not
    /// available (the caller uses Cranelift's own memory).
    pub fn new(size: usize, align: usize) -> Option<Block> {
        if align > UNIT || size == 0 || !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
            return None;
        }
        let units = size.div_ceil(UNIT);
        let mut heap = HEAP.lock().unwrap_or_else(|e| e.into_inner());
        // Append to the newest chunk; else reuse freed units (first fit over the chunks with
        // that many free); else map a chunk.
        if let Some(c) = heap.chunks.last_mut() {
            if c.cursor + units <= c.used.len() {
                let first = c.cursor;
                return Some(take(c, first, units));
            }
        }
        for c in heap.chunks.iter_mut() {
            if c.used.len() - c.in_use < units {
                continue;
            }
            if let Some(first) = free_run(&c.used[..c.cursor], units) {
                return Some(take(c, first, units));
            }
        }
        let id = heap.next_id;
        heap.next_id += 1;
        let mut c = map_chunk(id, size.next_multiple_of(PAGE).max(CHUNK))?;
        let b = take(&mut c, 0, units);
        heap.chunks.push(c);
        Some(b)
    }

    /// Where the code is written.
    pub fn writable(&self) -> *mut u8 {
        self.rw
    }

    /// Drops the writable view's page mappings of this block once its code is written:
    /// the pages stay in the heap's file (and mapped executable), so the process's
    /// resident size does not count them twice. Another program writing to a neighbour
    /// in the same page meanwhile only faults the page back in.
    pub fn written(&self) {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            let start = (self.rw as usize) & !(PAGE - 1);
            let end = (self.rw as usize + self.bytes()).next_multiple_of(PAGE);
            // SAFETY: whole pages of a shared mapping the heap owns; the data stays in
            // the file. A failure only leaves the pages counted twice.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }

    /// Bytes held (whole units).
    pub fn bytes(&self) -> usize {
        self.units * UNIT
    }

    /// The executable address of `p`, a writable address inside this block.
    pub fn executable(&self, p: *const u8) -> Option<*const u8> {
        let off = (p as usize).checked_sub(self.rw as usize)?;
        (off < self.bytes()).then(|| self.rx.wrapping_add(off))
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        let mut heap = HEAP.lock().unwrap_or_else(|e| e.into_inner());
        let Some(i) = heap.chunks.iter().position(|c| c.id == self.chunk) else {
            return;
        };
        let c = &mut heap.chunks[i];
        c.used[self.first..self.first + self.units].fill(false);
        c.in_use -= self.units;
        if c.in_use == 0 {
            let c = heap.chunks.swap_remove(i);
            unmap_chunk(&c);
            return;
        }
        // Pages of this block no other block touches go back to the system.
        let (p0, p1) = (
            self.first / UNITS_PER_PAGE,
            (self.first + self.units).div_ceil(UNITS_PER_PAGE),
        );
        for p in p0..p1 {
            let units = &c.used[p * UNITS_PER_PAGE..(p + 1) * UNITS_PER_PAGE];
            if units.iter().all(|u| !u) {
                punch(c, p * PAGE, PAGE);
            }
        }
    }
}

/// Bytes of code memory the heap has mapped, and the bytes of it that programs hold.
pub fn heap_bytes() -> (usize, usize) {
    let heap = HEAP.lock().unwrap_or_else(|e| e.into_inner());
    heap.chunks
        .iter()
        .fold((0, 0), |(m, u), c| (m + c.len, u + c.in_use * UNIT))
}

/// The first run of `n` free units (first fit: the heap stays packed at its start).
fn free_run(used: &[bool], n: usize) -> Option<usize> {
    let mut run = 0;
    for (i, &u) in used.iter().enumerate() {
        run = if u { 0 } else { run + 1 };
        if run == n {
            return Some(i + 1 - n);
        }
    }
    None
}

fn take(c: &mut Chunk, first: usize, units: usize) -> Block {
    c.used[first..first + units].fill(true);
    c.in_use += units;
    c.cursor = c.cursor.max(first + units);
    Block {
        chunk: c.id,
        first,
        units,
        rw: c.rw.wrapping_add(first * UNIT),
        rx: c.rx.wrapping_add(first * UNIT),
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn map_chunk(id: u64, len: usize) -> Option<Chunk> {
    use libc::{c_void, MAP_FAILED, MAP_SHARED, PROT_EXEC, PROT_READ, PROT_WRITE};
    // SAFETY: plain system calls on a descriptor and mappings this function owns; every
    // failure path releases what was made before it.
    unsafe {
        let fd = libc::memfd_create(c"jitfuse-code".as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            return None;
        }
        if libc::ftruncate(fd, len as libc::off_t) != 0 {
            libc::close(fd);
            return None;
        }
        let map = |prot| libc::mmap(std::ptr::null_mut(), len, prot, MAP_SHARED, fd, 0);
        let rw = map(PROT_READ | PROT_WRITE);
        if rw == MAP_FAILED {
            libc::close(fd);
            return None;
        }
        let rx = map(PROT_READ | PROT_EXEC);
        if rx == MAP_FAILED {
            libc::munmap(rw, len);
            libc::close(fd);
            return None;
        }
        Some(Chunk {
            id,
            rw: rw as *mut u8,
            rx: rx as *const c_void as *const u8,
            len,
            fd,
            used: vec![false; len / UNIT],
            in_use: 0,
            cursor: 0,
        })
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn map_chunk(_id: u64, _len: usize) -> Option<Chunk> {
    None
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn unmap_chunk(c: &Chunk) {
    // SAFETY: no block of the chunk is left, so no code in it can run any more.
    unsafe {
        libc::munmap(c.rw as *mut libc::c_void, c.len);
        libc::munmap(c.rx as *mut libc::c_void, c.len);
        libc::close(c.fd);
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn unmap_chunk(_c: &Chunk) {}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn punch(c: &Chunk, offset: usize, len: usize) {
    // SAFETY: the range holds no block. A failure (an old kernel) only keeps the page.
    unsafe {
        libc::fallocate(
            c.fd,
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset as libc::off_t,
            len as libc::off_t,
        );
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn punch(_c: &Chunk, _offset: usize, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_share_chunks_and_free_them() {
        let Some(a) = Block::new(100, 16) else {
            return; // no heap on this system: Cranelift's memory is used
        };
        let b = Block::new(700, 64).unwrap();
        // Whole units: 100 bytes take 2, 700 take 11.
        assert_eq!((a.bytes(), b.bytes()), (128, 704));
        // SAFETY: the blocks' writable views, within their sizes.
        unsafe {
            a.writable().write(0xc3);
            b.writable().add(703).write(7);
            assert_eq!(*a.executable(a.writable()).unwrap(), 0xc3);
            assert_eq!(*b.executable(b.writable().add(703)).unwrap(), 7);
        }
        assert!(b.executable(b.writable().wrapping_add(704)).is_none());
        let big = Block::new(CHUNK + 1, 64).unwrap();
        assert_eq!(big.bytes(), (CHUNK + 1).next_multiple_of(UNIT));
        drop((a, b, big));
    }
}
