//! Continuation prefill codes as upstream's C++ engine prepares them
//! (`MLXEngine::prefill_state`, `ensure_silent_tokens`): the caller's audio is cut to
//! whole 1920-sample frames and to the exported encoder's fixed input (28 s), zero-padded
//! to it and encoded; the first 12 levels are kept, frames past the real audio dropped,
//! and `trim_front` / `trim_back` frames cut from the ends (the engine's default 25 / 25:
//! the first frames see an encoder that has not warmed up, the last ones the zero
//! padding of the reverse-causal STFT). The kept codes feed the model one frame at a time
//! (spec §3.7).
//!
//! Encoder frame `j` reads STFT frames up to `4j + 3`, i.e. samples up to
//! `1920j + 2400`; past the end of the input the STFT reads zeros. So the frames of the
//! real audio are the same whether the encoder sees that audio alone or zero-padded to
//! 28 s, and rill encodes only the real audio (the test `prefill_ignores_padding` checks
//! the equality bit for bit).

use rill_kernels::Pool;

use super::{Encoder, SAMPLES_PER_ENCODER_FRAME};
use crate::{CodecError, LEVELS};

/// How the prefill audio is windowed ([`PrefillWindow::UPSTREAM`] is the engine's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefillWindow {
    /// Most frames encoded: longer audio is truncated (the engine's encoder is traced at
    /// 28 s = 700 frames).
    pub max_frames: usize,
    /// Frames dropped at the start of the audio's codes.
    pub trim_front: usize,
    /// Frames dropped at the end of the audio's codes.
    pub trim_back: usize,
}

impl PrefillWindow {
    /// Upstream's engine: 28 s, 25 frames trimmed at each end.
    pub const UPSTREAM: PrefillWindow = PrefillWindow {
        max_frames: 700,
        trim_front: 25,
        trim_back: 25,
    };
}

impl PrefillWindow {
    /// Whole frames a clip needs to keep one frame: `trim_front + trim_back + 1`.
    pub const fn min_frames(&self) -> usize {
        self.trim_front + self.trim_back + 1
    }

    /// The part of `audio` (interleaved stereo, 48 kHz) a continuation encodes: its
    /// last whole frames (a partial frame at the end dropped, as upstream), at most
    /// `max_frames`.
    pub fn tail<'a>(&self, audio: &'a [f32]) -> &'a [f32] {
        let frame = 2 * SAMPLES_PER_ENCODER_FRAME;
        let frames = audio.len() / frame;
        let end = frames * frame;
        &audio[end - frames.min(self.max_frames) * frame..end]
    }
}

impl Default for PrefillWindow {
    fn default() -> Self {
        PrefillWindow::UPSTREAM
    }
}

impl Encoder {
    /// The 12-level codes upstream's engine prefills with for `audio` (interleaved stereo,
    /// 48 kHz; see the module doc): whole frames of at most `window.max_frames`, then
    /// frames `trim_front .. frames − trim_back`. Audio too short to keep a frame, or
    /// bad audio ([`Encoder::encode`]), is an error.
    pub fn prefill_codes(
        &self,
        audio: &[f32],
        window: PrefillWindow,
        pool: &Pool,
    ) -> Result<Vec<[u16; LEVELS]>, CodecError> {
        let frames = (audio.len() / (2 * SAMPLES_PER_ENCODER_FRAME)).min(window.max_frames);
        if frames <= window.trim_front + window.trim_back {
            return Err(CodecError::BadInput(format!(
                "prefill audio of {frames} whole frames is too short for a trim of {} + {}",
                window.trim_front, window.trim_back
            )));
        }
        let codes = self.encode(&audio[..frames * 2 * SAMPLES_PER_ENCODER_FRAME], pool)?;
        Ok(codes[window.trim_front..frames - window.trim_back].to_vec())
    }

    /// The engine's silent frame (`ensure_silent_tokens`): frame `max(25, F / 2)` of
    /// `F = window.max_frames` frames of silence, encoded (only the frames up to it are
    /// computed). Upstream's silence prefill repeats it.
    pub fn silent_codes(
        &self,
        window: PrefillWindow,
        pool: &Pool,
    ) -> Result<[u16; LEVELS], CodecError> {
        let middle = (window.max_frames / 2).max(25);
        let silence = vec![0f32; (middle + 1) * 2 * SAMPLES_PER_ENCODER_FRAME];
        Ok(self.encode(&silence, pool)?[middle])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_whole_frames() {
        let w = PrefillWindow {
            max_frames: 3,
            trim_front: 1,
            trim_back: 1,
        };
        assert_eq!(w.min_frames(), 3);
        let f = 2 * SAMPLES_PER_ENCODER_FRAME;
        let audio: Vec<f32> = (0..5 * f + 7).map(|i| i as f32).collect();
        let t = w.tail(&audio);
        assert_eq!(t.len(), 3 * f);
        assert_eq!(
            t[0],
            (2 * f) as f32,
            "frames 2..5; the partial frame dropped"
        );
        assert_eq!(w.tail(&audio[..2 * f + 1]).len(), 2 * f);
        assert!(w.tail(&audio[..f - 1]).is_empty());
    }
}
