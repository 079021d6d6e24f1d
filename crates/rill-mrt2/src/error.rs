//! Errors of the language model.

use std::path::PathBuf;

/// A control value outside what the model accepts. Public setters reject such
/// values instead of clamping them, so a caller's bug is never silent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{what} is {value}, but must be {expected}")]
pub struct InvalidValue {
    pub what: &'static str,
    pub value: String,
    pub expected: &'static str,
}

impl InvalidValue {
    pub fn new(what: &'static str, value: impl std::fmt::Display, expected: &'static str) -> Self {
        InvalidValue {
            what,
            value: value.to_string(),
            expected,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Invalid(#[from] InvalidValue),
    #[error(transparent)]
    Checkpoint(#[from] rill_checkpoint::CheckpointError),
    #[error("tensor {name}: expected {expected} elements, found {found}")]
    Shape {
        name: String,
        expected: usize,
        found: usize,
    },
    #[error("pre-quantised tensor {name}: {reason}")]
    Prequantized { name: String, reason: String },
    #[error(
        "precision f32 is the format of the source checkpoint, nothing to pre-quantise; pick one of {}",
        crate::prequantized::compact_precisions()
    )]
    QuantizeToF32,
    #[error("{path} is already pre-quantised ({precision}); quantise the original checkpoint")]
    AlreadyPrequantized { path: PathBuf, precision: String },
    #[error("state file {path}: {reason}")]
    SessionFile { path: PathBuf, reason: String },
    /// A prefill request the model cannot run (no frames, a code out of range).
    #[error("prefill: {0}")]
    Prefill(String),
    #[error("forced token {token} at depth step {level} is outside that level's ids {lo}..{hi}")]
    ForcedToken {
        level: usize,
        token: u32,
        lo: u32,
        hi: u32,
    },
}
