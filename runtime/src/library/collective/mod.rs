//! The processes a program runs on and the byte-level collectives between them, for
//! `jitfuse::dist` and the programs' collective steps: MPI's world where the `mpi` feature is
//! built (`mpi.rs`; a process started without `mpirun` is a world of one there too), else a
//! world of one process, where every collective gives its input back (`one` below).

#[cfg(feature = "mpi")]
pub(crate) mod mpi;

#[cfg(feature = "mpi")]
pub(crate) use mpi as transport;
#[cfg(not(feature = "mpi"))]
pub(crate) use one as transport;

use crate::array::Array;
use crate::error::type_str;
use crate::ir::{Op, ReduceOp};
use crate::storage::Buffer;
use crate::DType;
use std::sync::OnceLock;

/// This process's place in the world.
#[derive(Clone, Copy, Debug)]
pub(crate) struct World {
    pub rank: usize,
    pub size: usize,
}

static WORLD: OnceLock<World> = OnceLock::new();

/// The world, joined on first use (`dist::init`).
pub(crate) fn world() -> World {
    *WORLD.get_or_init(|| {
        let (rank, size) = transport::init();
        if size > 1 {
            abort_every_rank_on_panic(rank, size);
        }
        World { rank, size }
    })
}

static TIMEOUT: std::sync::Mutex<Option<std::time::Duration>> = std::sync::Mutex::new(None);

/// How long a collective may wait for the other ranks (`dist::set_timeout`).
pub(crate) fn set_timeout(limit: Option<std::time::Duration>) {
    *TIMEOUT.lock().unwrap_or_else(|e| e.into_inner()) = limit;
}

/// The collectives' time limit, if any.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn timeout() -> Option<std::time::Duration> {
    *TIMEOUT.lock().unwrap_or_else(|e| e.into_inner())
}

/// A panic that jitfuse does not turn into an error (`internal::catch`) ends every rank, with
/// a line naming this one: the others would wait for ever in their next collective.
fn abort_every_rank_on_panic(rank: usize, size: usize) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        if !crate::internal::panic_is_caught() {
            eprintln!("jitfuse dist: rank {rank} of {size} panicked; aborting every rank");
            transport::abort(2);
        }
    }));
}

/// The elementwise reduction a collective applies across ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fold {
    Sum,
    Max,
    Min,
    Prod,
}

impl Fold {
    pub(crate) fn of(op: ReduceOp) -> Fold {
        match op {
            ReduceOp::Sum => Fold::Sum,
            ReduceOp::Max => Fold::Max,
            ReduceOp::Min => Fold::Min,
            ReduceOp::Prod => Fold::Prod,
        }
    }
}

/// When a collective runs: started now and waited for later (`Later`: the steps in between
/// run while it is in flight), or to its end at once (`Now`: the next step waits for it, so
/// nothing could overlap it; the transport may then take a blocking call: an all-reduce's,
/// `mpi::blocking`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum When {
    Later,
    Now,
}

/// `Op::AllReduce(op)` of a program's step, started: `recv` = the fold of every rank's `send`
/// once waited for.
///
/// # Safety
/// `send` and `recv` stay valid, `send` unwritten and `recv` unread, until the wait.
pub(crate) unsafe fn all_reduce_step(
    op: ReduceOp,
    dtype: DType,
    send: &[u8],
    recv: &mut [u8],
    when: When,
) -> InFlight {
    world();
    let what = Op::AllReduce(op).name();
    let b = Bytes {
        what,
        dtype,
        send,
        recv,
    };
    InFlight::started(transport::start_all_reduce(b, Fold::of(op), when))
}

/// Gather every rank's `send` into `recv` now (the argument exchange of `dist`).
pub(crate) fn all_gather_now(b: Bytes) {
    // SAFETY: the buffers are borrowed until the wait, just below.
    transport::wait(unsafe { transport::start_all_gather(b) });
}

/// A compiled collective runs in the world it was traced for.
fn check_world(op: &Op, ranks: usize) -> Result<(), crate::Error> {
    let n = world().size;
    if n == ranks {
        return Ok(());
    }
    Err(crate::Error::new(
        crate::ErrorKind::Argument,
        format!(
            "{} was traced in a world of {ranks} processes and runs in one of {n}",
            op.name()
        ),
    ))
}

/// `Op::BroadcastFrom(root)` on `buf`, started (this rank's value on entry, the root's once
/// waited for).
///
/// # Safety
/// `buf` stays valid and untouched until the wait.
pub(crate) unsafe fn broadcast_step(root: usize, buf: &mut [u8]) -> Result<InFlight, crate::Error> {
    let n = world().size;
    if root >= n {
        return Err(crate::Error::new(
            crate::ErrorKind::Argument,
            format!("broadcast_from[{root}] runs in a world of {n} processes"),
        ));
    }
    Ok(InFlight::started(transport::start_broadcast(
        "broadcast_from",
        buf,
        root,
    )))
}

/// An operand read through its map: pointer, shape, strides (elements).
pub(crate) type Strided<'a> = (*const u8, &'a [usize], &'a [i64]);

/// `Op::AllGather(axis, ranks)` of `x` into `out` (contiguous, `x` grown `ranks` times along
/// `axis`), started. `stage` holds `x` contiguous (MPI's send buffer) and then every rank's
/// block as MPI gathers them, `[ranks, ..x]`, which the wait lays out into `out`.
///
/// # Safety
/// `x`'s map stays inside a live buffer; `stage` is valid for `(1 + ranks)` times `x`'s bytes
/// and `out` for the result's, neither overlapping the other nor `x`, both valid and
/// untouched until the wait.
pub(crate) unsafe fn all_gather_step(
    (ptr, shape, strides): Strided,
    (axis, ranks): (usize, usize),
    dtype: DType,
    stage: *mut u8,
    out: *mut u8,
) -> Result<InFlight, crate::Error> {
    let op = Op::AllGather(axis, ranks);
    check_world(&op, ranks)?;
    let (size, bytes) = (dtype.size(), crate::shape::numel(shape) * dtype.size());
    let copy = super::ops::copy;
    copy(
        size,
        shape,
        ptr,
        strides,
        stage,
        &super::ops::contiguous(shape),
    );
    let gathered = stage.add(bytes);
    let pending = transport::start_all_gather(Bytes {
        what: op.name(),
        dtype,
        send: std::slice::from_raw_parts(stage, bytes),
        recv: std::slice::from_raw_parts_mut(gathered, ranks * bytes),
    });
    // Block r's element i lands at index r * len + i of `axis` in `out`.
    let mut out_shape = shape.to_vec();
    out_shape[axis] *= ranks;
    let ost = super::ops::contiguous(&out_shape);
    let mut each = vec![ranks];
    each.extend_from_slice(shape);
    let mut dst = vec![shape[axis] as i64 * ost[axis]];
    dst.extend_from_slice(&ost);
    let gathered = gathered as *const u8;
    Ok(InFlight {
        pending,
        done: false,
        // SAFETY: (in the wait) the gathered blocks are complete, `out` valid as promised.
        then: Some(Box::new(move || unsafe {
            copy(
                size,
                &each,
                gathered,
                &super::ops::contiguous(&each),
                out,
                &dst,
            )
        })),
    })
}

/// `Op::ReduceScatter(op, axis, ranks)` of `x` into `out` (contiguous, `x`'s `axis` cut
/// `ranks` times), started: `x` laid out in `stage` as the ranks' blocks one after another
/// (MPI's send buffer), MPI writing this rank's block of their fold into `out`.
///
/// # Safety
/// As `all_gather_step`'s, `stage` valid for `x`'s bytes.
pub(crate) unsafe fn reduce_scatter_step(
    (ptr, shape, strides): Strided,
    (r, axis, ranks): (ReduceOp, usize, usize),
    dtype: DType,
    stage: *mut u8,
    out: *mut u8,
) -> Result<InFlight, crate::Error> {
    let op = Op::ReduceScatter(r, axis, ranks);
    check_world(&op, ranks)?;
    let (size, bytes) = (dtype.size(), crate::shape::numel(shape) * dtype.size());
    let block = shape[axis] / ranks;
    // [ranks, ..x with `axis` of one block], read from x.
    let mut each = vec![ranks];
    each.extend_from_slice(shape);
    each[axis + 1] = block;
    let mut src = vec![block as i64 * strides[axis]];
    src.extend_from_slice(strides);
    let staged = super::ops::contiguous(&each);
    super::ops::copy(size, &each, ptr, &src, stage, &staged);
    let b = Bytes {
        what: op.name(),
        dtype,
        send: std::slice::from_raw_parts(stage, bytes),
        recv: std::slice::from_raw_parts_mut(out, bytes / ranks),
    };
    Ok(InFlight::started(transport::start_reduce_scatter(
        b,
        Fold::of(r),
    )))
}

/// `op`, a collective, of the array `x` (the interpreter, and `dist` on concrete tensors):
/// the compiled step itself (`ops::run`), on an output and a scratch of its own.
pub(crate) fn eval(op: &Op, x: &Array, shape: &[usize]) -> Result<Array, crate::Error> {
    let dtype = x.dtype();
    let what = || format!("{} of {}", op.name(), type_str(dtype, x.shape()));
    let scratch = super::ops::scratch_bytes(op, &[x.shape()], x.dtype(), shape, dtype);
    let scratch = Buffer::try_zeroed(scratch, what)?;
    let out = Buffer::try_zeroed(crate::shape::numel(shape) * dtype.size(), what)?;
    let strides = super::ops::contiguous(x.shape());
    let operand = super::ops::Operand {
        ptr: x.bytes().as_ptr(),
        dtype,
        shape: x.shape(),
        strides: &strides,
    };
    // SAFETY: `x` is contiguous; the output and the scratch were just allocated at the sizes
    // the step needs and overlap nothing.
    unsafe {
        super::ops::run(
            op,
            &[operand],
            shape,
            dtype,
            out.as_mut_ptr(),
            scratch.as_mut_ptr(),
        )?
    };
    Ok(Array::new(std::sync::Arc::new(out), shape.to_vec(), dtype))
}

/// The bytes of `dtype` elements as the transport moves them: `send` and `recv` are whole
/// buffers of that dtype (aligned for it), for the collective `what` (messages).
pub(crate) struct Bytes<'a> {
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub what: &'a str,
    pub dtype: DType,
    pub send: &'a [u8],
    pub recv: &'a mut [u8],
}

/// The world of this process alone: each collective's result is its input, there when it
/// starts.
#[cfg_attr(feature = "mpi", allow(dead_code))]
pub(crate) mod one {
    use super::{Bytes, Fold, When};

    pub fn init() -> (usize, usize) {
        (0, 1)
    }

    pub fn barrier() {}

    /// Nothing to wait for.
    pub struct Pending;

    pub fn wait(_: Pending) {}

    /// Done at once.
    pub fn progress(_: &mut Pending) -> bool {
        true
    }

    /// The fold of one value is that value.
    ///
    /// # Safety
    /// None beyond `Bytes`' (kept `unsafe` as MPI's twin).
    pub unsafe fn start_all_reduce(b: Bytes, _: Fold, _: When) -> Pending {
        debug_assert_eq!(b.send.len() % b.dtype.size(), 0);
        b.recv.copy_from_slice(b.send);
        Pending
    }

    /// # Safety
    /// None beyond `Bytes`'.
    pub unsafe fn start_all_gather(b: Bytes) -> Pending {
        b.recv.copy_from_slice(b.send);
        Pending
    }

    /// One block: all of it.
    ///
    /// # Safety
    /// None beyond `Bytes`'.
    pub unsafe fn start_reduce_scatter(b: Bytes, _: Fold) -> Pending {
        b.recv.copy_from_slice(b.send);
        Pending
    }

    /// The root is this process: `buf` is already its value.
    ///
    /// # Safety
    /// None.
    pub unsafe fn start_broadcast(_: &str, _: &mut [u8], _: usize) -> Pending {
        Pending
    }

    /// A world of one has no other process to bring down (`dist` installs no hook for it).
    pub fn abort(code: i32) -> ! {
        std::process::exit(code)
    }
}

/// Time this process has spent waiting for the collectives of compiled steps to complete
/// (`dist::time_waiting`).
pub(crate) static WAITED_NANOS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A collective of a compiled step in flight: waited for where its result is first read,
/// then finished (a gather lays the ranks' blocks out along its axis).
pub(crate) struct InFlight {
    pending: transport::Pending,
    then: Option<Box<dyn FnOnce()>>,
    /// Completed (seen by `progress`): the wait returns at once.
    done: bool,
}

impl InFlight {
    fn started(pending: transport::Pending) -> InFlight {
        InFlight {
            pending,
            then: None,
            done: false,
        }
    }

    /// Finish a collective run at once (`When::Now`), counting its whole time since `started`
    /// as waiting: nothing overlapped it.
    pub(crate) fn finish(self, started: std::time::Instant) {
        transport::wait(self.pending);
        if let Some(f) = self.then {
            f();
        }
        let waited = started.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        WAITED_NANOS.fetch_add(waited, std::sync::atomic::Ordering::Relaxed);
    }

    /// Wait for the collective and finish its step.
    pub(crate) fn wait(self) {
        let start = std::time::Instant::now();
        transport::wait(self.pending);
        let waited = start.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        WAITED_NANOS.fetch_add(waited, std::sync::atomic::Ordering::Relaxed);
        if let Some(f) = self.then {
            f();
        }
    }
}

/// The collectives of one call in flight, each with the index of the step before which it
/// is waited for; dropping the set waits for every one left (a call ending early on an error
/// must not give its arena back while MPI still writes into it).
#[derive(Default)]
pub(crate) struct InFlightSet(Vec<(usize, InFlight)>);

impl InFlightSet {
    pub(crate) fn push(&mut self, wait_before: usize, c: InFlight) {
        self.0.push((wait_before, c));
    }

    /// Wait for those to be waited for before step `si` (in the order they started).
    pub(crate) fn wait_before(&mut self, si: usize) {
        if self.0.iter().all(|(w, _)| *w != si) {
            return;
        }
        let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.0)
            .into_iter()
            .partition(|(w, _)| *w == si);
        self.0 = later;
        for (_, c) in now {
            c.wait();
        }
    }

    /// Let MPI move the collectives in flight along, without waiting: a non-blocking
    /// collective of Open MPI advances only inside MPI calls (it has no progress thread), so
    /// one started where the backward pass produced its operand would otherwise do its
    /// transfers only in the wait. Called between the steps of a call; tests the oldest
    /// collective not seen complete (one test runs the whole progress engine).
    pub(crate) fn progress(&mut self) {
        if let Some((_, c)) = self.0.iter_mut().find(|(_, c)| !c.done) {
            c.done = transport::progress(&mut c.pending);
        }
    }

    /// Wait for every one.
    pub(crate) fn wait_all(&mut self) {
        for (_, c) in std::mem::take(&mut self.0) {
            c.wait();
        }
    }
}

impl Drop for InFlightSet {
    fn drop(&mut self) {
        self.wait_all();
    }
}
