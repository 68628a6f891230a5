//! The collectives on MPI (Open MPI through the `mpi` crate): `MPI_COMM_WORLD`, initialised
//! once with thread support and finalised at exit. Every call is serialised by one lock, so
//! that MPI may be called from any thread whatever thread level it grants. Each collective is
//! started non-blocking and waited for (`complete`), so that a timeout can end a collective
//! some rank never joins.

use super::{Bytes, Fold};
use crate::DType;
use mpi::collective::SystemOperation;
use mpi::request::{scope, Request, Scope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::sync::Mutex;
use std::time::Instant;

static CALLS: Mutex<()> = Mutex::new(());

fn world() -> SimpleCommunicator {
    SimpleCommunicator::world()
}

/// Join the world: (rank, size). MPI initialised by another library first is used as it is.
pub fn init() -> (usize, usize) {
    let _one = CALLS.lock().unwrap_or_else(|e| e.into_inner());
    if !mpi::is_initialized() {
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Multiple)
            .expect("jitfuse dist: MPI initialised concurrently");
        // MPI stays initialised until the process exits (a `Universe` finalises on drop).
        std::mem::forget(universe);
        #[cfg(target_os = "linux")]
        // SAFETY: registers a plain `extern "C"` function.
        unsafe {
            libc::atexit(finalize);
        }
    }
    let w = world();
    (w.rank() as usize, w.size() as usize)
}

#[cfg(target_os = "linux")]
extern "C" fn finalize() {
    // SAFETY: MPI was initialised by `init` and is finalised once, at exit.
    unsafe {
        if mpi::ffi::MPI_Finalize() != 0 {
            eprintln!("jitfuse dist: MPI_Finalize failed");
        }
    }
}

fn op(fold: Fold) -> SystemOperation {
    match fold {
        Fold::Sum => SystemOperation::sum(),
        Fold::Max => SystemOperation::max(),
        Fold::Min => SystemOperation::min(),
        Fold::Prod => SystemOperation::product(),
    }
}

/// `$body` with `$s` and `$r` the send and receive bytes as slices of the dtype's elements
/// (bool as bytes).
macro_rules! typed {
    ($b:expr, |$s:ident, $r:ident| $body:expr) => {{
        fn cast<'a, T>(s: &'a [u8], r: &'a mut [u8]) -> (&'a [T], &'a mut [T]) {
            let size = std::mem::size_of::<T>();
            assert!(
                s.as_ptr() as usize % std::mem::align_of::<T>() == 0
                    && r.as_ptr() as usize % std::mem::align_of::<T>() == 0
            );
            // SAFETY: whole buffers of the dtype, aligned for it (checked), used only for the
            // duration of the call that borrows them.
            unsafe {
                (
                    std::slice::from_raw_parts(s.as_ptr().cast(), s.len() / size),
                    std::slice::from_raw_parts_mut(r.as_mut_ptr().cast(), r.len() / size),
                )
            }
        }
        let _one = CALLS.lock().unwrap_or_else(|e| e.into_inner());
        match $b.dtype {
            DType::F32 => {
                let ($s, $r) = cast::<f32>($b.send, $b.recv);
                $body
            }
            DType::F64 => {
                let ($s, $r) = cast::<f64>($b.send, $b.recv);
                $body
            }
            DType::I32 => {
                let ($s, $r) = cast::<i32>($b.send, $b.recv);
                $body
            }
            DType::I64 => {
                let ($s, $r) = cast::<i64>($b.send, $b.recv);
                $body
            }
            DType::Bool => {
                let ($s, $r) = cast::<u8>($b.send, $b.recv);
                $body
            }
        }
    }};
}

/// Wait for the collective `what` (`req`). Where a timeout is set (`dist::set_timeout`) and
/// passes first, this rank says so and MPI aborts every rank: the collective cannot be
/// cancelled, and the ranks that did join it would wait for ever.
fn complete<'a, D: ?Sized, S: Scope<'a>>(what: &str, req: Request<'a, D, S>) {
    let Some(limit) = super::timeout() else {
        return req.wait_without_status();
    };
    let start = Instant::now();
    let mut req = req;
    loop {
        match req.test() {
            Ok(_) => return,
            Err(r) => req = r,
        }
        if start.elapsed() > limit {
            let (r, n) = (world().rank(), world().size());
            eprintln!(
                "jitfuse dist: rank {r} of {n}: {what} did not complete within {limit:?} (a rank \
                 that never calls it, or calls another collective first); aborting every rank"
            );
            world().abort(3);
        }
        std::thread::yield_now();
    }
}

/// End every rank's process, after a failure on this one.
pub fn abort(code: i32) -> ! {
    world().abort(code)
}

pub fn barrier() {
    let _one = CALLS.lock().unwrap_or_else(|e| e.into_inner());
    complete("barrier", world().immediate_barrier());
}

pub fn all_reduce(b: Bytes, fold: Fold) {
    typed!(b, |s, r| scope(|sc| {
        complete(
            b.what,
            world().immediate_all_reduce_into(sc, s, r, op(fold)),
        )
    }))
}

pub fn all_gather(b: Bytes) {
    typed!(b, |s, r| scope(|sc| {
        complete(b.what, world().immediate_all_gather_into(sc, s, r))
    }))
}

pub fn reduce_scatter(b: Bytes, fold: Fold) {
    typed!(b, |s, r| scope(|sc| {
        let req = world().immediate_reduce_scatter_block_into(sc, s, r, op(fold));
        complete(b.what, req)
    }))
}

pub fn broadcast(what: &str, buf: &mut [u8], root: usize) {
    let _one = CALLS.lock().unwrap_or_else(|e| e.into_inner());
    scope(|sc| {
        let req = world()
            .process_at_rank(root as i32)
            .immediate_broadcast_into(sc, buf);
        complete(what, req)
    })
}
