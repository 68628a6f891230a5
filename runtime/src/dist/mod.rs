//! Several processes computing together: the world of processes a program runs in and the
//! collectives between them, on MPI (the `mpi` cargo feature, processes started by
//! `mpirun`). Without the feature, or outside `mpirun`, the world is this process alone and
//! every collective gives its input back (a mean of one, a gather of one).
//!
//! Every collective first exchanges what each rank passes (the collective, its reduction and
//! axis or root, the dtype and shape): where ranks disagree, each returns an error naming its
//! own shape and the first other one, rather than hanging or mixing data. An argument that is
//! wrong on every rank alike (an axis out of range) is an error on every rank, after the
//! exchange, so no rank is left waiting in a collective the others never start.
//!
//! Every collective runs inside `#[jit]` and `grad` too, as a step of the program
//! (`Op::AllReduce`, `AllGather`, `ReduceScatter`, `BroadcastFrom`: library steps that stage
//! their operand in their planned scratch or output and have MPI write their planned output),
//! with JAX's gradients (`psum`'s; `all_gather`'s is the sum scattered back, and the
//! reverse; a broadcast's, the sum of the cotangents on the root). A compiled collective
//! starts where its step runs (non-blocking, its operand staged in a region of the arena of
//! its own) and the call waits for it before the first step that reads its result
//! (`Executable::collectives_text` shows where).

pub(crate) mod buckets;

pub use buckets::{
    all_reduce_tree, bucket_bytes_for, buckets, DEFAULT_BUCKET_BYTES, MIN_BUCKET_BYTES,
};

use crate::error::type_str;
use crate::ir::{Op, ReduceOp};
use crate::library::collective::{self as world, transport, Bytes};
use crate::tensor::ops::apply;
use crate::{DType, Error, ErrorKind, Tensor};
use std::time::Duration;

/// How `all_reduce` and `reduce_scatter` combine the ranks' values, elementwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reduce {
    Sum,
    /// The sum divided by the number of ranks (float dtypes).
    Mean,
    Max,
    Min,
}

/// Join the world of processes (idempotent; the other functions join it on first use). With
/// the `mpi` feature MPI is initialised here, with thread support, and finalised at exit.
pub fn init() {
    joined();
}

/// This process's rank: 0 up to `size() - 1`.
pub fn rank() -> usize {
    joined().rank
}

/// The number of processes in the world.
pub fn size() -> usize {
    joined().size
}

/// How long a collective may wait for the other ranks before this rank gives up and MPI
/// aborts every rank, with a line naming the collective (`None`: no limit, the default;
/// `JITFUSE_DIST_TIMEOUT=seconds` sets it when the world is joined).
pub fn set_timeout(limit: Option<Duration>) {
    joined();
    world::set_timeout(limit);
}

/// Join the world once: the time limit from `JITFUSE_DIST_TIMEOUT` first.
fn joined() -> world::World {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(s) = std::env::var("JITFUSE_DIST_TIMEOUT") else {
            return;
        };
        match s.parse::<f64>() {
            Ok(t) if t > 0.0 && t.is_finite() => {
                world::set_timeout(Some(Duration::from_secs_f64(t)))
            }
            _ => eprintln!(
                "jitfuse: JITFUSE_DIST_TIMEOUT={s:?} is not a number of seconds; no limit"
            ),
        }
    });
    world::world()
}

/// The time this process has spent waiting for compiled collectives to complete, since it
/// started: the communication a program did not hide behind its other steps (a collective
/// still running when its first reader comes). Read it before and after a step to see that
/// step's exposed communication.
pub fn time_waiting() -> Duration {
    Duration::from_nanos(world::WAITED_NANOS.load(std::sync::atomic::Ordering::Relaxed))
}

/// Wait until every rank has called `barrier`.
pub fn barrier() {
    joined();
    transport::barrier();
}

/// This rank's share of `items` for data-parallel work: block `rank()` of `size()` equal
/// contiguous blocks, the last `items.len() % size()` items left out so that every rank gets
/// as many (and so runs as many steps, and joins as many collectives, as the others).
pub fn shard<T: Clone>(items: &[T]) -> Vec<T> {
    let (r, n) = (rank(), size());
    let per = items.len() / n;
    items[r * per..(r + 1) * per].to_vec()
}

/// The elementwise `op` of `x` over every rank (JAX's `psum`, `pmean`, `pmax`, `pmin`), the
/// same on every rank. Every rank passes the same dtype and shape.
///
/// Inside `#[jit]` and `grad` it is a step of the program (`all_reduce_sum`, ...: the ranks'
/// arguments are compared once, when it is traced, and every call runs the collective), with
/// the gradient of JAX's `psum` (the sum of the cotangents over the ranks; `Mean` divides it
/// too); `Max` and `Min` have none.
#[track_caller]
pub fn all_reduce(x: &Tensor, op: Reduce) -> Result<Tensor, Error> {
    let what = "dist::all_reduce";
    agree(what, Call::AllReduce(op), x)?;
    check_reduce(what, op, x)?;
    let loc = std::panic::Location::caller();
    let sum = step(Op::AllReduce(reduce_op(op)), x, x.shape().to_vec(), loc)?;
    finish(sum, op)
}

/// Every rank's `x` concatenated along `axis`, rank 0 first (JAX's `all_gather` with
/// `tiled=True`): dimension `axis` grows `size()` times. Every rank passes the same dtype and
/// shape.
#[track_caller]
pub fn all_gather(x: &Tensor, axis: isize) -> Result<Tensor, Error> {
    let what = "dist::all_gather";
    agree(what, Call::AllGather(axis), x)?;
    let axis = check_axis(what, axis, x)?;
    let n = size();
    let mut shape = x.shape().to_vec();
    shape[axis] *= n;
    step(
        Op::AllGather(axis, n),
        x,
        shape,
        std::panic::Location::caller(),
    )
}

/// Block `rank()` of the elementwise `op` over every rank's `x`, `x` cut along `axis` into
/// `size()` equal blocks (JAX's `psum_scatter` with `tiled=True`). Every rank passes the same
/// dtype and shape, `axis`'s length a multiple of `size()`.
#[track_caller]
pub fn reduce_scatter(x: &Tensor, axis: isize, op: Reduce) -> Result<Tensor, Error> {
    let what = "dist::reduce_scatter";
    agree(what, Call::ReduceScatter(axis, op), x)?;
    check_reduce(what, op, x)?;
    let axis = check_axis(what, axis, x)?;
    let n = size();
    if !x.shape()[axis].is_multiple_of(n) {
        return Err(Error::new(
            ErrorKind::Shape,
            format!(
                "{what}: axis {axis} of {} has length {}, which does not split into {n} equal \
                 blocks, one per rank",
                describe(x),
                x.shape()[axis]
            ),
        ));
    }
    let mut shape = x.shape().to_vec();
    shape[axis] /= n;
    let loc = std::panic::Location::caller();
    finish(
        step(Op::ReduceScatter(reduce_op(op), axis, n), x, shape, loc)?,
        op,
    )
}

/// Rank `root`'s `x` on every rank. Every rank passes the same dtype and shape. Inside
/// `#[jit]` and `grad` a step of the program (`broadcast_from[root]`), whose gradient on the
/// root is the sum of every rank's cotangent (zero on the others).
#[track_caller]
pub fn broadcast(x: &Tensor, root: usize) -> Result<Tensor, Error> {
    let what = "dist::broadcast";
    agree(what, Call::Broadcast(root), x)?;
    if root >= size() {
        return Err(Error::new(
            ErrorKind::Argument,
            format!(
                "{what}: root {root} is not a rank of this world of {}",
                size()
            ),
        ));
    }
    let loc = std::panic::Location::caller();
    step(Op::BroadcastFrom(root), x, x.shape().to_vec(), loc)
}

/// The collective `op` of `x`, its result of `shape`: a step of the program being traced, or
/// run now on a concrete `x` (the compiled step's own function, `collective::eval`).
fn step(op: Op, x: &Tensor, shape: Vec<usize>, loc: crate::SourceLoc) -> Result<Tensor, Error> {
    if x.dtype().is_half() {
        // On f32 values (a sum of 16-bit values accumulates in f32 and rounds once, as every
        // 16-bit reduction does). FIXME: twice the bytes on the wire for a gather or a
        // broadcast; MPI has no 16-bit float type of its own.
        let wide = step(op, &x.cast(DType::F32), shape, loc)?;
        return Ok(wide.cast(x.dtype()));
    }
    match x.to_array() {
        None => Ok(apply(op, &[x], shape, x.dtype(), loc)),
        Some(a) => Ok(Tensor::from_array(world::eval(&op, &a, &shape)?)),
    }
}

/// A collective and its parameters, as the ranks compare them.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Call {
    AllReduce(Reduce),
    AllGather(isize),
    ReduceScatter(isize, Reduce),
    Broadcast(usize),
}

/// Dimensions a rank's record of its call holds (longer shapes are compared by a hash).
const RECORD_DIMS: usize = 10;
const RECORD: usize = 6 + RECORD_DIMS;

/// What a rank passes to a collective, as words every rank can compare: the call and its
/// parameter, the dtype, whether the tensor is concrete, the rank count of the shape, a hash
/// of the shape, and its first dimensions.
fn record(call: Call, x: &Tensor) -> [u64; RECORD] {
    use std::hash::{Hash, Hasher};
    let reduce = |r: Reduce| r as u64;
    let (kind, op, param) = match call {
        Call::AllReduce(r) => (1, reduce(r), 0),
        Call::AllGather(a) => (2, 0, a as u64),
        Call::ReduceScatter(a, r) => (3, reduce(r), a as u64),
        Call::Broadcast(root) => (4, 0, root as u64),
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    x.shape().hash(&mut h);
    let mut words = [0u64; RECORD];
    words[..6].copy_from_slice(&[
        kind,
        op,
        param,
        DType::ALL.iter().position(|&d| d == x.dtype()).unwrap() as u64,
        x.shape().len() as u64 | (u64::from(x.is_traced()) << 32),
        h.finish(),
    ]);
    for (w, &d) in words[6..].iter_mut().zip(x.shape()) {
        *w = d as u64;
    }
    words
}

/// The call and tensor a record describes, for messages.
fn describe_record(words: &[u64]) -> String {
    let kind = [
        "?",
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "broadcast",
    ];
    let dtype = DType::ALL.get(words[3] as usize).map_or("?", |d| d.name());
    let rank = (words[4] & 0xffff_ffff) as usize;
    let mut dims: Vec<String> = words[6..6 + rank.min(RECORD_DIMS)]
        .iter()
        .map(|d| d.to_string())
        .collect();
    if rank > RECORD_DIMS {
        dims.push("…".into());
    }
    format!(
        "{} ({}, parameter {}) of {dtype}[{}]",
        kind.get(words[0] as usize).unwrap_or(&"?"),
        ["sum", "mean", "max", "min"]
            .get(words[1] as usize)
            .unwrap_or(&"-"),
        words[2] as i64,
        dims.join(",")
    )
}

/// Every rank learns what every other passes; an error on every rank where they differ.
fn agree(what: &str, call: Call, x: &Tensor) -> Result<(), Error> {
    let mine = record(call, x);
    let mut all = vec![0u64; size() * RECORD];
    // SAFETY: the words as bytes (every bit pattern is a u64), for the one call.
    let (send, recv) = unsafe {
        (
            std::slice::from_raw_parts(mine.as_ptr().cast::<u8>(), RECORD * 8),
            std::slice::from_raw_parts_mut(all.as_mut_ptr().cast::<u8>(), all.len() * 8),
        )
    };
    let exchange = format!("{what} (exchanging the ranks' arguments)");
    world::all_gather_now(Bytes {
        what: &exchange,
        dtype: DType::I64,
        send,
        recv,
    });
    let me = rank();
    if let Some((other, theirs)) = all
        .chunks(RECORD)
        .enumerate()
        .find(|(_, w)| *w != mine.as_slice())
    {
        return Err(Error::new(
            ErrorKind::Shape,
            format!(
                "{what}: the ranks pass different arguments: rank {me} passes {}, rank {other} \
                 passes {}",
                describe_record(&mine),
                describe_record(theirs)
            ),
        ));
    }
    Ok(())
}

fn describe(x: &Tensor) -> String {
    type_str(x.dtype(), x.shape())
}

/// `op` applies to `x`'s dtype.
fn check_reduce(what: &str, op: Reduce, x: &Tensor) -> Result<(), Error> {
    let d = x.dtype();
    let fits = match op {
        Reduce::Mean => d.is_float(),
        Reduce::Sum => d != DType::Bool,
        Reduce::Max | Reduce::Min => true,
    };
    if fits {
        return Ok(());
    }
    Err(Error::dtype(format!(
        "{what}: {op:?} of {} is not defined; cast to a float dtype first",
        describe(x)
    )))
}

/// `axis` (negative from the end) as an index of `x`'s dimensions.
fn check_axis(what: &str, axis: isize, x: &Tensor) -> Result<usize, Error> {
    let r = x.shape().len() as isize;
    let a = if axis < 0 { axis + r } else { axis };
    if (0..r).contains(&a) {
        return Ok(a as usize);
    }
    Err(Error::new(
        ErrorKind::Shape,
        format!("{what}: axis {axis} is out of range for {}", describe(x)),
    ))
}

fn reduce_op(op: Reduce) -> ReduceOp {
    match op {
        Reduce::Sum | Reduce::Mean => ReduceOp::Sum,
        Reduce::Max => ReduceOp::Max,
        Reduce::Min => ReduceOp::Min,
    }
}

/// A reduction's result: the sum divided by the rank count for `Mean`.
fn finish(sum: Tensor, op: Reduce) -> Result<Tensor, Error> {
    Ok(match op {
        Reduce::Mean => &sum / size() as f64,
        _ => sum,
    })
}
