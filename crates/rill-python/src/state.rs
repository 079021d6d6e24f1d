//! A resumable generation state: everything needed to continue bit-identically.
//!
//! In memory it is a [`Snapshot`] of the pipeline (language-model state, codec
//! state, a frame in flight) plus whether its codec state follows its tokens (a
//! tokens-only call does not advance the codec). As bytes (what pickle stores) it
//! is a short header (format version, flags) followed by the stream's state file
//! ([`Snapshot::to_bytes`]: the `rill-state` format, which records and checks the
//! model, precision and weights), validated against the model when it is resumed.

use rill_mrt2::Mrt2;
use rill_spectrostream::Codec;
use rill_stream::{FramePipeline, NoteTracker, Snapshot};

use crate::error::{Error, Result};

/// Start of every serialised state: name and format version.
pub const MAGIC: &[u8; 8] = b"RILLMRT\x01";
/// Flag bit: the codec state follows the tokens.
const FLAG_AUDIO: u8 = 1;

#[derive(Debug, Clone, PartialEq)]
pub struct State {
    snapshot: Snapshot,
    audio: bool,
}

impl State {
    /// The state of `pipe` after a call with `controls`. Without a codec in `pipe`
    /// (tokens only) the codec state is `codec_from`'s (or fresh) and marked stale.
    pub(crate) fn capture(
        pipe: &FramePipeline,
        audio: bool,
        codec_from: Option<&State>,
        codec: &Codec,
    ) -> State {
        let session = pipe.session();
        let cond = session.conditioning();
        let codec_state = match (pipe.codec_state(), codec_from) {
            (Some(c), _) => c.clone(),
            (None, Some(s)) => s.snapshot.codec.clone(),
            (None, None) => codec.new_state(),
        };
        State {
            snapshot: Snapshot {
                lm: session.state().clone(),
                codec: codec_state,
                pending: pipe.pending(),
                style: cond.style,
                drums: cond.drums,
                cfg: cond.cfg,
                sampling: session.sampling(),
                notes: NoteTracker::default(),
            },
            audio,
        }
    }

    /// Loads this state into a fresh pipeline of the same model.
    pub(crate) fn restore_into(&self, pipe: &mut FramePipeline, audio: bool) -> Result<()> {
        if audio && !self.audio {
            return Err(Error::invalid(
                "this state comes from generate_tokens (tokens only, the codec did not run); \
                 continue it with generate_tokens, or generate audio from the start",
            ));
        }
        if !audio && self.snapshot.pending.is_some() {
            return Err(Error::invalid(
                "this state was taken from a stream with a frame in flight; continue it with \
                 generate() or stream()",
            ));
        }
        pipe.restore(&self.snapshot)?;
        Ok(())
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Whether audio generation can continue from this state.
    pub fn has_audio(&self) -> bool {
        self.audio
    }

    /// Frames the language model has generated since the start.
    pub fn frame(&self) -> u64 {
        self.snapshot.lm.frame
    }

    /// The serialised state.
    pub fn to_bytes(&self, lm: &Mrt2) -> Vec<u8> {
        let body = self.snapshot.to_bytes(lm);
        let mut out = Vec::with_capacity(MAGIC.len() + 1 + body.len());
        out.extend_from_slice(MAGIC);
        out.push(if self.audio { FLAG_AUDIO } else { 0 });
        out.extend_from_slice(&body);
        out
    }

    /// Checks what can be checked without a model: the header.
    pub fn check_header(bytes: &[u8]) -> Result<()> {
        if bytes.len() < MAGIC.len() + 1 || bytes[..MAGIC.len() - 1] != MAGIC[..MAGIC.len() - 1] {
            return Err(Error::invalid(
                "not a rill_mrt state (the bytes do not start with its header)",
            ));
        }
        if bytes[MAGIC.len() - 1] != MAGIC[MAGIC.len() - 1] {
            return Err(Error::invalid(format!(
                "rill_mrt state format version {} is not supported (this version reads {})",
                bytes[MAGIC.len() - 1],
                MAGIC[MAGIC.len() - 1]
            )));
        }
        if bytes[MAGIC.len()] & !FLAG_AUDIO != 0 {
            return Err(Error::invalid("corrupt rill_mrt state: unknown flags"));
        }
        Ok(())
    }

    /// Parses and validates serialised state against the model that will resume it.
    pub fn from_bytes(bytes: &[u8], lm: &Mrt2, codec: &Codec) -> Result<State> {
        Self::check_header(bytes)?;
        let audio = bytes[MAGIC.len()] & FLAG_AUDIO != 0;
        let snapshot = Snapshot::from_bytes(&bytes[MAGIC.len() + 1..], lm, codec)
            .map_err(|e| Error::invalid(format!("corrupt or incompatible rill_mrt state: {e}")))?;
        Ok(State { snapshot, audio })
    }
}
