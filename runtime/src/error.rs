//! The one error type of jitfuse. Every message names what went wrong, the
//! values involved, and (for errors in user code) the user's source line.

use std::fmt;
use std::panic::Location;

/// Where in the user's source an operation was written (captured by
/// `#[track_caller]` on every tensor operation).
pub type SourceLoc = &'static Location<'static>;

/// What kind of failure an `Error` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Operand shapes that do not fit the op (broadcasting, lengths).
    Shape,
    /// Operand dtypes that do not fit the op.
    DType,
    /// A value of a traced tensor was read during tracing.
    TracedValue,
    /// A traced tensor was used outside the trace that made it.
    LeakedTracer,
    /// An argument of a jitted call does not match what the program expects.
    Argument,
    /// Cranelift failed to compile a kernel (a bug in jitfuse: please report).
    Codegen,
    /// The IR text did not parse.
    Parse,
    /// The IR broke an invariant (a bug in the pass that produced it).
    Verify,
    /// The traced body panicked.
    Panic,
    /// A buffer could not be allocated (the message names the bytes and
    /// what they were for).
    OutOfMemory,
    /// jitfuse itself failed (a panic in its tracing machinery, passes,
    /// planning, code generation or run time: a bug, please report). The
    /// message has the panic's message and the signature being compiled.
    Internal,
    /// A file could not be read or written (checkpoints: `jitfuse::io`).
    Io,
    /// A checkpoint file is not valid safetensors, or does not match the
    /// tree it is loaded into (a missing, extra, or differently shaped or
    /// typed tensor: the message names it).
    Checkpoint,
}

/// An error of jitfuse: its kind, a message naming the op, the arguments and their shapes,
/// and the user's source line where one is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// What kind of failure it is.
    pub kind: ErrorKind,
    /// What went wrong, with the values involved.
    pub message: String,
    /// The user's source line of the failing operation, where known.
    pub location: Option<SourceLoc>,
}

impl Error {
    /// An error of `kind` with `message` and no location.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            location: None,
        }
    }

    /// What kind of failure it is (the `kind` field): match on it to tell,
    /// say, a shape error in the caller's data from an internal failure.
    ///
    /// ```
    /// use jitfuse_runtime::{ErrorKind, Tensor};
    /// let e = Tensor::from_slice(&[1.0f32, 2.0], &[3]).unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::Shape);
    /// assert!(e.message().contains("2 elements do not fill shape [3]"));
    /// assert_eq!(e.location(), None);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What went wrong, with the values involved (the `message` field; the
    /// `Display` form adds the location).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The user's source line of the failing operation, where known (the
    /// `location` field).
    pub fn location(&self) -> Option<SourceLoc> {
        self.location
    }

    /// The error located at `loc`, unless it has a location already (the innermost wins).
    pub fn at(mut self, loc: SourceLoc) -> Error {
        if self.location.is_none() {
            self.location = Some(loc);
        }
        self
    }

    /// An `ErrorKind::Shape` error.
    pub fn shape(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Shape, msg)
    }
    /// An `ErrorKind::DType` error.
    pub fn dtype(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::DType, msg)
    }
    /// An `ErrorKind::Codegen` error.
    pub fn codegen(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Codegen, msg)
    }
    /// An `ErrorKind::Verify` error.
    pub fn verify(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Verify, msg)
    }
    /// An `ErrorKind::Parse` error at `line` of the IR text.
    pub fn parse(line: usize, msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Parse, format!("line {line}: {}", msg.into()))
    }
    /// An `ErrorKind::Argument` error.
    pub fn argument(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Argument, msg)
    }
    /// `bytes` could not be allocated for `what` (`f32[1024,1024]`, "the
    /// arena of temporaries", ...).
    pub fn out_of_memory(bytes: usize, what: &str) -> Error {
        Error::new(
            ErrorKind::OutOfMemory,
            format!(
                "out of memory: cannot allocate {bytes} bytes ({}) for {what}",
                crate::units::human_bytes(bytes)
            ),
        )
    }
    /// An `ErrorKind::Internal` error.
    pub fn internal(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Internal, msg)
    }

    /// The same error with `prefix: ` before its message (the op or call
    /// it came from).
    pub fn prefixed(mut self, prefix: &str) -> Error {
        self.message = format!("{prefix}: {}", self.message);
        self
    }
}

/// Why a compilation failed, typed for the code that retries it: a memory budget the
/// program could not be brought within (with the lowest peak reached), or any other error.
/// Users see the `Error` (`From`), an `ErrorKind::Argument` naming both figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompileError {
    /// The budget was missed.
    Budget {
        /// The budget, in bytes of peak.
        budget: usize,
        /// The lowest peak the compiler reached, in bytes.
        best: usize,
        /// What users read.
        error: Error,
    },
    /// Any other failure.
    Other(Error),
}

impl CompileError {
    /// A missed budget: `message` says what was tried and `best` is the lowest peak.
    pub fn budget(budget: usize, best: usize, message: String) -> CompileError {
        CompileError::Budget {
            budget,
            best,
            error: Error::new(ErrorKind::Argument, message),
        }
    }

    /// The lowest peak a missed budget reached (`None` for other errors).
    pub fn best(&self) -> Option<usize> {
        match self {
            CompileError::Budget { best, .. } => Some(*best),
            CompileError::Other(_) => None,
        }
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Budget { error, .. } | CompileError::Other(error) => error.fmt(f),
        }
    }
}

impl From<Error> for CompileError {
    fn from(e: Error) -> CompileError {
        CompileError::Other(e)
    }
}

impl From<CompileError> for Error {
    fn from(e: CompileError) -> Error {
        match e {
            CompileError::Budget { error, .. } | CompileError::Other(error) => error,
        }
    }
}

/// The message of a panic's payload (`panic!` gives a `String` or `&str`).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a non-string panic payload".into())
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(loc) = self.location {
            write!(f, " (at {}:{}:{})", loc.file(), loc.line(), loc.column())?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// `f32[3,4]`: how shapes appear in messages and in the IR text.
pub fn type_str(dtype: crate::DType, shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("{}[{}]", dtype.name(), dims.join(","))
}
