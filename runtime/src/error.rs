//! The one error type of jitfuse. Every message names what went wrong, the
//! values involved, and (for errors in user code) the user's source line.

use std::fmt;
use std::panic::Location;

/// Where in the user's source an operation was written (captured by
/// `#[track_caller]` on every tensor operation).
pub type SourceLoc = &'static Location<'static>;

#[derive(Clone, Debug, PartialEq, Eq)]
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
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub location: Option<SourceLoc>,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            location: None,
        }
    }

    pub fn at(mut self, loc: SourceLoc) -> Error {
        if self.location.is_none() {
            self.location = Some(loc);
        }
        self
    }

    pub fn shape(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Shape, msg)
    }
    pub fn dtype(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::DType, msg)
    }
    pub fn codegen(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Codegen, msg)
    }
    pub fn verify(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Verify, msg)
    }
    pub fn parse(line: usize, msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Parse, format!("line {line}: {}", msg.into()))
    }
    pub fn argument(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Argument, msg)
    }
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
