//! Errors of loading NanoCodec weights, decoding and restoring codec state.

use std::path::PathBuf;

use rill_checkpoint::error::format_problems;
use rill_checkpoint::CheckpointError;

/// One thing wrong with a state-dict tensor (the checkpoint crate's, which
/// validation collects all of).
pub use rill_checkpoint::Problem;

/// Everything that can go wrong in `rill-nanocodec`.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(
        "{source_name} is not a usable NanoCodec state dict; {} problem(s):\n{}",
        problems.len(),
        format_problems(problems)
    )]
    Invalid {
        source_name: String,
        problems: Vec<Problem>,
    },
    #[error("cannot write {path}: {reason}")]
    Write { path: PathBuf, reason: String },
    #[error("codebook {codebook}: code {code} is not a NanoCodec code (valid: 0..2016); special tokens must not reach the codec")]
    BadCode { codebook: usize, code: u32 },
    /// A streaming call with more (or fewer) frames than its state was made for.
    #[error("a NanoCodec step decodes 1 to {max} frames with this state, not {given}; make the state with `new_stream_state({given})`")]
    ChunkSize { given: usize, max: usize },
    #[error("{frames} frames decode to {} samples; the audio buffer holds {given}", frames * 1024)]
    AudioLength { frames: usize, given: usize },
    /// An imported state's arrays do not fit the NanoCodec state.
    #[error("NanoCodec state: {0}")]
    State(#[from] rill_checkpoint::state_arrays::StateArrayError),
}
