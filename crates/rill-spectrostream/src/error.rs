//! Errors of loading codec weights and of restoring codec state.

use rill_checkpoint::CheckpointError;

/// Everything that can go wrong in `rill-spectrostream`; each variant names the tensor or
/// state array concerned and, for shape problems, what was expected and found.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error("codec tensor {name}: expected shape {expected:?}, found {found:?}")]
    TensorShape {
        name: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },
    /// An imported state's arrays do not fit this codec's state.
    #[error("codec state: {0}")]
    State(#[from] rill_checkpoint::state_arrays::StateArrayError),
    /// An array fits but its value does not (the lookahead countdown).
    #[error("codec state array {name}: {reason}")]
    BadStateArray { name: String, reason: String },
    #[error(
        "token id {id} for RVQ level {level} is outside that level's ids {}..{} \
         (level k owns 6 + 1024·k + code, code 0..1023)",
        range.start,
        range.end - 1
    )]
    TokenId {
        level: usize,
        id: u32,
        range: std::ops::Range<u32>,
    },
    #[error(
        "codec rescale {rescale:?}: each exponent must be at most {}",
        crate::Rescale::MAX_LOG2
    )]
    BadRescale { rescale: crate::Rescale },
    /// Input the encoder cannot take (empty or non-finite audio, a bad level count).
    #[error("encoder input: {0}")]
    BadInput(String),
}
