//! The crate's one error type: every message says what was wrong and, for a missing or
//! damaged asset, which file and how to get it.

use std::path::PathBuf;

/// Why a MusicCoCa asset could not be read or an input could not be embedded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An asset file is absent.
    #[error("{}: not found. {hint}", path.display())]
    MissingAsset { path: PathBuf, hint: String },
    /// An asset file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An asset file is not what it should be (truncated, corrupt, other model).
    #[error("{}: {what}", path.display())]
    BadAsset { path: PathBuf, what: String },
    /// A weight is missing or has the wrong shape.
    #[error("weight {name}: {what}")]
    Weight { name: String, what: String },
    /// A user's input cannot be embedded (empty prompt, weights summing to 0, …).
    #[error("{0}")]
    Input(String),
}
