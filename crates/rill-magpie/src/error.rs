//! Errors of the Magpie model.

use rill_checkpoint::Problem;

#[derive(Debug, thiserror::Error)]
pub enum MagpieError {
    #[error(transparent)]
    Checkpoint(#[from] rill_checkpoint::CheckpointError),
    #[error("the checkpoint does not fit the Magpie v2602 layout ({} problems):\n  {}", .0.len(), .0.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n  "))]
    Invalid(Vec<Problem>),
    #[error("tensor {name}: {reason}")]
    BadTensor { name: String, reason: String },
    #[error("{path} cannot be used as a Magpie model ({} problems):\n  {}", problems.len(), problems.join("\n  "))]
    Load {
        path: std::path::PathBuf,
        problems: Vec<String>,
    },
    #[error(transparent)]
    Text(#[from] rill_text::TextError),
    #[error("{what} is {value}, but must be {expected}")]
    InvalidValue {
        what: &'static str,
        value: String,
        expected: String,
    },
}

impl MagpieError {
    pub fn invalid(
        what: &'static str,
        value: impl std::fmt::Display,
        expected: impl Into<String>,
    ) -> Self {
        MagpieError::InvalidValue {
            what,
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, MagpieError>;
