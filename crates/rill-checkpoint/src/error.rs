//! Errors of checkpoint loading, validation and synthesis.

use std::fmt;
use std::path::PathBuf;

/// One thing wrong with a checkpoint tensor; validation collects all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A tensor the model needs is not in the file.
    Missing { name: String, expected: Vec<usize> },
    /// The tensor exists but its shape differs.
    WrongShape {
        name: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },
    /// The tensor exists but is not a float type rill can read (F32, BF16, F16).
    WrongDtype {
        name: String,
        expected: &'static str,
        found: String,
    },
    /// The tensor (or a configuration value) is present with the right shape but
    /// holds a value the model cannot use.
    BadValue { name: String, reason: String },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Missing { name, expected } => {
                write!(f, "missing tensor {name} (expected shape {expected:?})")
            }
            Problem::WrongShape {
                name,
                expected,
                found,
            } => write!(
                f,
                "tensor {name}: expected shape {expected:?}, found {found:?}"
            ),
            Problem::WrongDtype {
                name,
                expected,
                found,
            } => write!(f, "tensor {name}: expected dtype {expected}, found {found}"),
            Problem::BadValue { name, reason } => write!(f, "tensor {name}: {reason}"),
        }
    }
}

/// Everything that can go wrong with a checkpoint file.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot open checkpoint {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source} (is the disk full, or the folder read-only?)")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a readable safetensors file ({reason}); the file may be truncated or corrupt — download it again")]
    NotSafetensors { path: PathBuf, reason: String },
    #[error("{path} does not look like an MRT2 checkpoint: {reason}")]
    UnknownModel { path: PathBuf, reason: String },
    #[error("{path} has {} problem(s):\n{}", problems.len(), format_problems(problems))]
    Invalid {
        path: PathBuf,
        problems: Vec<Problem>,
    },
    #[error("{path} is not a readable {format} file: {reason}; it may be truncated, corrupt or of another kind")]
    BadContainer {
        path: PathBuf,
        format: &'static str,
        reason: String,
    },
    #[error("tensor {name} not found in {path}")]
    NoSuchTensor { path: PathBuf, name: String },
    #[error("tensor {name}: {reason}")]
    BadTensor { name: String, reason: String },
    #[error("{path} has no tensor {name}, a part of a pre-quantised matrix: the file is incomplete; quantise the original checkpoint again")]
    MissingPart { path: PathBuf, name: String },
    #[error("pre-quantised tensor {name} does not fit the model: {problem}; quantise the original checkpoint again")]
    QuantizedShape {
        name: String,
        problem: rill_kernels::MatrixArraysError,
    },
    #[error("synthesised {path} has sha256 {found}, not the oracle's {expected}: the random-weight recipe changed")]
    SynthMismatch {
        path: PathBuf,
        found: String,
        expected: String,
    },
}

/// `problems` as an indented list, one a line (how every "file has problems"
/// error shows them).
pub fn format_problems(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("  - {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

pub type Result<T, E = CheckpointError> = std::result::Result<T, E>;
