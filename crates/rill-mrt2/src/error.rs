//! Errors of the language model.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
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
    #[error("session file {path}: {reason}")]
    SessionFile { path: PathBuf, reason: String },
    #[error("forced token {token} at depth step {level} is outside that level's ids {lo}..{hi}")]
    ForcedToken {
        level: usize,
        token: u32,
        lo: u32,
        hi: u32,
    },
}
