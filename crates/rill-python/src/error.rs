//! The errors of the Python API, one variant per Python exception class.

use rill_checkpoint::CheckpointError;
use rill_mrt2::{InvalidValue, ModelError};
use rill_spectrostream::CodecError;

/// An error, classified by the Python exception it becomes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A value the caller passed is invalid (`ValueError`).
    #[error("{0}")]
    Invalid(String),
    /// No checkpoint at the given or default locations (`FileNotFoundError`).
    #[error("{0}")]
    NotFound(String),
    /// Reading or writing a file failed (`OSError`).
    #[error("{0}")]
    Os(String),
    /// Something failed inside the engine (`RuntimeError`).
    #[error("{0}")]
    Runtime(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::Invalid(msg.into())
    }
}

impl From<InvalidValue> for Error {
    fn from(e: InvalidValue) -> Error {
        Error::Invalid(e.to_string())
    }
}

impl From<CheckpointError> for Error {
    fn from(e: CheckpointError) -> Error {
        match e {
            CheckpointError::Io { .. } => Error::Os(e.to_string()),
            // A file that is not a (complete) MRT2 checkpoint: the caller passed a bad file.
            _ => Error::Invalid(e.to_string()),
        }
    }
}

impl From<ModelError> for Error {
    fn from(e: ModelError) -> Error {
        match e {
            ModelError::Checkpoint(c) => c.into(),
            // Bad controls, forced tokens, session data or tensors of a file.
            _ => Error::Invalid(e.to_string()),
        }
    }
}

impl From<CodecError> for Error {
    fn from(e: CodecError) -> Error {
        match e {
            CodecError::Checkpoint(c) => c.into(),
            _ => Error::Invalid(e.to_string()),
        }
    }
}
