//! `rill generate --continue-from FILE`: upstream's second audio door. The clip
//! is decoded (any format rill reads), resampled to 48 kHz stereo (mono
//! duplicated, beyond two channels the first two kept), cut to its last 28 s,
//! encoded by the SpectroStream encoder, and its codes forced through the language
//! model ([`FramePipeline::prefill`]); generation then continues from its last
//! frame. The prefill itself produces no audio, as in upstream's engine.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use rill_checkpoint::Checkpoint;
use rill_spectrostream::encoder::{PrefillWindow, SAMPLES_PER_ENCODER_FRAME};
use rill_spectrostream::{Encoder, SAMPLE_RATE};
use rill_stream::encoder_source;
use rill_stream::source::SynthProgress;
use rill_stream::{FramePipeline, StagePools};

use crate::args::ModelArgs;
use crate::usage::usage_bail;

/// The continuation flags of `rill generate`.
#[derive(Debug, Args)]
pub struct ContinueArgs {
    /// Continue from this audio (WAV, FLAC, MP3, Ogg/Vorbis; the last 28 s are used):
    /// it is encoded with the SpectroStream encoder and forced through the language
    /// model, then --frames/--seconds more are generated. The output holds only the
    /// new audio. Needs at least 2.04 s (upstream trims 25 frames at each end).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["resume", "force_tokens"])]
    pub continue_from: Option<PathBuf>,

    /// Keep the style conditioning during the prefill (upstream's
    /// `mask_musiccoca_during_prefill = false`, which its authors found gives style
    /// jumps): as upstream's engine, only style levels 0–5 are fed while the clip is
    /// forced, whatever --style-levels; by default style and notes are masked while
    /// the clip is forced, as upstream's engine does.
    #[arg(long, requires = "continue_from")]
    pub keep_style_during_prefill: bool,

    /// SpectroStream encoder weights (upstream's `encoder.safetensors`). Default:
    /// resources/spectrostream/encoder.safetensors beside the checkpoint's
    /// checkpoints/ directory; synthesised with --random-weights.
    #[arg(long, value_name = "PATH", requires = "continue_from")]
    pub encoder: Option<PathBuf>,
}

/// A clip ready to encode: 48 kHz stereo, interleaved, whole encoder frames.
pub struct Clip {
    path: PathBuf,
    samples: Vec<f32>,
}

impl ContinueArgs {
    /// Reads and checks the clip (before any output is reserved, so a bad clip
    /// writes nothing). `None` without --continue-from.
    pub fn load_clip(&self) -> Result<Option<Clip>> {
        let Some(path) = &self.continue_from else {
            return Ok(None);
        };
        let audio = rill_io::audio::decode_file(path)
            .with_context(|| format!("--continue-from {}", path.display()))?;
        if audio.frames() == 0 {
            anyhow::bail!(
                "--continue-from {}: the file holds no audio",
                path.display()
            );
        }
        let resampled =
            rill_io::audio::resample(&audio.samples, audio.rate, SAMPLE_RATE, audio.channels)
                .map_err(|e| anyhow::anyhow!("--continue-from {}: {e}", path.display()))?;
        let stereo = rill_io::audio::to_stereo(&resampled, audio.channels);
        let window = PrefillWindow::UPSTREAM;
        let frames = stereo.len() / (2 * SAMPLES_PER_ENCODER_FRAME);
        let need = window.min_frames();
        if frames < need {
            usage_bail!(
                "--continue-from {}: {:.2} s of audio is too short; a continuation needs at least {:.2} s ({need} frames of 40 ms: upstream drops {} at each end)",
                path.display(),
                audio.seconds(),
                need as f64 * 0.04,
                window.trim_front
            );
        }
        if frames > window.max_frames {
            eprintln!(
                "note: {} is {:.1} s long; continuing from its last {} s",
                path.display(),
                audio.seconds(),
                window.max_frames / 25
            );
        }
        Ok(Some(Clip {
            path: path.clone(),
            samples: window.tail(&stereo).to_vec(),
        }))
    }

    /// Loads the encoder: `--encoder`, else synthesised for --random-weights, else the
    /// file beside the checkpoint `ckpt_path`; the codebook is `ckpt`'s.
    pub fn load_encoder(
        &self,
        model: &ModelArgs,
        ckpt_path: &Path,
        ckpt: &Checkpoint,
    ) -> Result<Arc<Encoder>> {
        let path = match (&self.encoder, model.random_weights) {
            (None, Some(seed)) => encoder_source::random_encoder(seed, &mut |p| {
                if let SynthProgress::Start { path } = p {
                    eprintln!(
                        "synthesising a random-weight SpectroStream encoder at {}",
                        path.display()
                    );
                }
            })?,
            (explicit, _) => {
                encoder_source::resolve_encoder(explicit.as_deref(), ckpt_path, "--encoder PATH")?
            }
        };
        let start = Instant::now();
        let enc = encoder_source::load_encoder(&path, ckpt)?;
        eprintln!(
            "loaded SpectroStream encoder from {} in {:.1} s",
            path.display(),
            start.elapsed().as_secs_f64()
        );
        Ok(enc)
    }
}

/// Encodes `clip` and forces its codes through `pipe` (see the module doc).
pub fn prefill(
    pipe: &mut FramePipeline,
    encoder: &Encoder,
    clip: &Clip,
    keep_style: bool,
    pools: &StagePools,
) -> Result<()> {
    let start = Instant::now();
    // On two stages the codec stage's thread assists the encoder's kernels.
    let (codes, ()) = pools.overlap(
        |lp| encoder.prefill_codes(&clip.samples, PrefillWindow::UPSTREAM, lp),
        |_| (),
    );
    let codes = codes.with_context(|| format!("encoding {}", clip.path.display()))?;
    let encoded = start.elapsed();
    pipe.prefill(&codes, keep_style, pools)
        .context("prefilling the language model")?;
    eprintln!(
        "continuing from {}: {:.2} s encoded in {:.1} s, {} frames prefilled in {:.1} s{}",
        clip.path.display(),
        clip.samples.len() as f64 / 2.0 / f64::from(SAMPLE_RATE),
        encoded.as_secs_f64(),
        codes.len(),
        (start.elapsed() - encoded).as_secs_f64(),
        if keep_style { " (style kept)" } else { "" }
    );
    Ok(())
}
