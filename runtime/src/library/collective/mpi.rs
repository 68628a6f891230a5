//! The collectives on MPI (Open MPI through the `mpi` crate): `MPI_COMM_WORLD`, initialised
//! once with thread support and finalised at exit. Every call is serialised by one lock, so
//! that MPI may be called from any thread whatever thread level it grants. Each collective is
//! started non-blocking (`start_*`, a `Pending` request) and waited for later (`wait`): a
//! compiled program waits where the collective's result is first read, and a timeout can end
//! a collective some rank never joins.

use super::{Bytes, Fold, When};
use crate::DType;
use mpi::collective::SystemOperation;
use mpi::request::{Request, StaticScope};
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

/// `$body` with `$s` and `$r` the send and receive bytes as `'static` slices of the dtype's
/// elements (bool as bytes), under the lock of MPI calls.
macro_rules! typed {
    ($b:expr, |$s:ident, $r:ident| $body:expr) => {{
        fn cast<T>(s: &[u8], r: &mut [u8]) -> (&'static [T], &'static mut [T]) {
            let size = std::mem::size_of::<T>();
            assert!(
                s.as_ptr() as usize % std::mem::align_of::<T>() == 0
                    && r.as_ptr() as usize % std::mem::align_of::<T>() == 0
            );
            // SAFETY: whole buffers of the dtype, aligned for it (checked); the caller of
            // `start` keeps them valid and untouched until the request is waited for.
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
            DType::BF16 | DType::F16 => unreachable!("16-bit collectives run on f32 (dist::step)"),
        }
    }};
}

/// A collective in flight: its MPI request, and what it is (for the timeout's message).
pub struct Pending {
    request: mpi::ffi::MPI_Request,
    what: String,
}

// SAFETY: an MPI request handle is a plain value; every MPI call on it holds `CALLS`.
unsafe impl Send for Pending {}

/// A collective already run to its end (`When::Now`): its request is the null request, for
/// which `wait` returns at once.
fn completed(what: &str) -> Pending {
    Pending {
        // SAFETY: reads the null request constant.
        request: unsafe { mpi::ffi::RSMPI_REQUEST_NULL },
        what: what.to_string(),
    }
}

/// Arrays up to which an all-reduce run at once takes the blocking call.
const BLOCKING_ALL_REDUCE_BYTES: usize = 32 << 20;

/// Whether an all-reduce of `bytes` started `when` runs blocking: `When::Now`, at most
/// `BLOCKING_ALL_REDUCE_BYTES`, and no timeout set (a blocking call cannot be ended). Open
/// MPI runs a blocking all-reduce on the algorithm its `coll/tuned` component picks by size,
/// a non-blocking one on libnbc's. Measured here (2 ranks on one machine, Open MPI 4.1.4,
/// alternating builds; docs/distributed.md): blocking 1 MiB 0.14 against 0.23 ms, 4 MiB 0.70-
/// 0.75 against 1.34-1.61 ms, 16 MiB 5.9-6.3 against 7.9-10.3 ms, but 64 MiB 39-41 against
/// 32-36 ms. The blocking reduce-scatter and all-gather were slower than libnbc's at every
/// size from 256 KiB (a bucket's pair at 1 MiB: 0.69-0.72 against 0.31-0.34 ms): they stay
/// non-blocking.
fn blocking(when: When, bytes: usize) -> bool {
    when == When::Now && bytes <= BLOCKING_ALL_REDUCE_BYTES && super::timeout().is_none()
}

/// The raw request of a started collective.
fn pending<D: ?Sized>(what: &str, req: Request<'static, D, StaticScope>) -> Pending {
    // SAFETY: the request is completed by `wait` (every `Pending` is waited for: the
    // executor's set of collectives in flight waits for the rest when dropped).
    let (request, _, _) = unsafe { req.into_raw() };
    Pending {
        request,
        what: what.to_string(),
    }
}

/// Wait for a collective started by `start_*`. Where a timeout is set (`dist::set_timeout`)
/// and passes first, this rank says so and MPI aborts every rank: the collective cannot be
/// cancelled, and the ranks that did join it would wait for ever.
pub fn wait(p: Pending) {
    let Pending { mut request, what } = p;
    let limit = super::timeout();
    let start = Instant::now();
    loop {
        let _one = CALLS.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: a live request from `pending`, completed once here.
        unsafe {
            if limit.is_none() {
                mpi::ffi::MPI_Wait(&mut request, mpi::ffi::RSMPI_STATUS_IGNORE);
                return;
            }
            let mut done = 0;
            mpi::ffi::MPI_Test(&mut request, &mut done, mpi::ffi::RSMPI_STATUS_IGNORE);
            if done != 0 {
                return;
            }
        }
        drop(_one);
        let limit = limit.expect("a limit");
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

/// Whether a collective started by `start_*` has completed, without waiting: an
/// `MPI_Test`, which also runs MPI's progress engine for every request in flight. A completed
/// request becomes `MPI_REQUEST_NULL`, for which `wait` returns at once.
pub fn progress(p: &mut Pending) -> bool {
    let _one = CALLS.lock().unwrap_or_else(|e| e.into_inner());
    let mut done = 0;
    // SAFETY: a live request from `pending` (or the null request once completed).
    unsafe {
        mpi::ffi::MPI_Test(&mut p.request, &mut done, mpi::ffi::RSMPI_STATUS_IGNORE);
    }
    done != 0
}

/// End every rank's process, after a failure on this one.
pub fn abort(code: i32) -> ! {
    world().abort(code)
}

pub fn barrier() {
    let req = {
        let _one = CALLS.lock().unwrap_or_else(|e| e.into_inner());
        pending("barrier", world().immediate_barrier())
    };
    wait(req);
}

/// Start the elementwise `fold` of every rank's `send` into `recv` (run to its end now where
/// `blocking(when)`).
///
/// # Safety
/// `b`'s buffers stay valid, and `recv` unread and `send` unwritten, until `wait`.
pub unsafe fn start_all_reduce(b: Bytes, fold: Fold, when: When) -> Pending {
    if blocking(when, b.send.len()) {
        typed!(b, |s, r| world().all_reduce_into(s, r, op(fold)));
        return completed(b.what);
    }
    typed!(b, |s, r| pending(
        b.what,
        world().immediate_all_reduce_into(StaticScope, s, r, op(fold))
    ))
}

/// Start gathering every rank's `send` into `recv`, rank 0 first.
///
/// # Safety
/// As `start_all_reduce`'s.
pub unsafe fn start_all_gather(b: Bytes) -> Pending {
    typed!(b, |s, r| pending(
        b.what,
        world().immediate_all_gather_into(StaticScope, s, r)
    ))
}

/// Start the fold of every rank's `send` of which this rank receives its block in `recv`.
///
/// # Safety
/// As `start_all_reduce`'s.
pub unsafe fn start_reduce_scatter(b: Bytes, fold: Fold) -> Pending {
    typed!(b, |s, r| pending(
        b.what,
        world().immediate_reduce_scatter_block_into(StaticScope, s, r, op(fold))
    ))
}

/// Start broadcasting rank `root`'s `buf` into every rank's.
///
/// # Safety
/// `buf` stays valid and untouched until `wait`.
pub unsafe fn start_broadcast(what: &str, buf: &mut [u8], root: usize) -> Pending {
    let _one = CALLS.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: as the caller promises, for the request's life.
    let buf: &'static mut [u8] =
        unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr(), buf.len()) };
    let req = world()
        .process_at_rank(root as i32)
        .immediate_broadcast_into(StaticScope, buf);
    pending(what, req)
}
