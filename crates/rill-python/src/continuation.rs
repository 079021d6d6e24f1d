//! Continuing from audio (`generate(..., continue_from=...)`), as `rill generate
//! --continue-from`: the clip is resampled to 48 kHz stereo (mono duplicated, beyond two
//! channels the first two kept), cut to its last whole frames of at most 28 s
//! ([`PrefillWindow::tail`]), encoded by the SpectroStream encoder as upstream's engine
//! does ([`Encoder::prefill_codes`]) and its codes forced through the language model
//! ([`FramePipeline::prefill`]); generation then continues from its last frame. The
//! prefill itself returns no audio.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rill_spectrostream::encoder::{PrefillWindow, SAMPLES_PER_ENCODER_FRAME};
use rill_spectrostream::{Encoder, SAMPLE_RATE};
use rill_stream::encoder_source;
use rill_stream::{FramePipeline, StagePools};

use crate::error::{Error, Result};

/// The clip of a continuation and how to prefill it.
#[derive(Debug, Clone, PartialEq)]
pub struct Continuation {
    /// Interleaved samples, `channels` per frame, at `rate` Hz.
    pub audio: Vec<f32>,
    pub rate: u32,
    pub channels: usize,
    /// Keep style levels 0–5 during the prefill (upstream's
    /// `mask_musiccoca_during_prefill = false`); else style and notes are masked.
    pub keep_style: bool,
    /// The encoder's file; `None` = upstream's place beside the checkpoint.
    pub encoder: Option<PathBuf>,
}

impl Continuation {
    /// A clip read from an audio file (any format rill reads).
    pub fn from_file(path: &Path, keep_style: bool, encoder: Option<PathBuf>) -> Result<Self> {
        let a = rill_io::audio::decode_file(path)
            .map_err(|e| Error::invalid(format!("continue_from {}: {e}", path.display())))?;
        Ok(Continuation {
            audio: a.samples,
            rate: a.rate,
            channels: a.channels,
            keep_style,
            encoder,
        })
    }

    /// The 48 kHz stereo samples the encoder reads (see the module doc); a clip too
    /// short to keep one frame is an error naming the length it needs.
    pub fn window(&self) -> Result<Vec<f32>> {
        if self.channels == 0 || self.rate == 0 {
            return Err(Error::invalid(format!(
                "continue_from: {} channels at {} Hz; the audio needs at least one channel and a positive sample rate",
                self.channels, self.rate
            )));
        }
        if self.audio.iter().any(|s| !s.is_finite()) {
            return Err(Error::invalid(
                "continue_from holds NaN or infinite samples; pass finite audio in -1..1",
            ));
        }
        let resampled =
            rill_io::audio::resample(&self.audio, self.rate, SAMPLE_RATE, self.channels)
                .map_err(|e| Error::invalid(format!("continue_from: {e}")))?;
        let stereo = rill_io::audio::to_stereo(&resampled, self.channels);
        let window = PrefillWindow::UPSTREAM;
        let frames = stereo.len() / (2 * SAMPLES_PER_ENCODER_FRAME);
        let need = window.min_frames();
        if frames < need {
            return Err(Error::invalid(format!(
                "continue_from: {:.2} s of audio is too short; a continuation needs at least {:.2} s \
                 ({need} frames of 40 ms: upstream drops {} at each end)",
                stereo.len() as f64 / 2.0 / f64::from(SAMPLE_RATE),
                need as f64 * 0.04,
                window.trim_front
            )));
        }
        Ok(window.tail(&stereo).to_vec())
    }
}

/// Loads the encoder for the checkpoint at `ckpt_path` (its RVQ codebook):
/// `explicit`, else the file beside the checkpoint.
pub fn load_encoder(explicit: Option<&Path>, ckpt_path: &Path) -> Result<Arc<Encoder>> {
    let path = encoder_source::resolve_encoder(explicit, ckpt_path, "encoder=PATH")?;
    let (ckpt, _) = rill_stream::source::open(ckpt_path)?;
    Ok(encoder_source::load_encoder(&path, &ckpt)?)
}

/// Encodes `window` ([`Continuation::window`]) and forces its codes through `pipe`;
/// returns the number of frames prefilled.
pub fn prefill(
    pipe: &mut FramePipeline,
    encoder: &Encoder,
    window: &[f32],
    keep_style: bool,
    pools: &StagePools,
) -> Result<usize> {
    let (codes, ()) = pools.overlap(
        |lp| encoder.prefill_codes(window, PrefillWindow::UPSTREAM, lp),
        |_| (),
    );
    let codes = codes?;
    pipe.prefill(&codes, keep_style, pools)?;
    Ok(codes.len())
}
