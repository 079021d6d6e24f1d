//! From decoded audio to the 10 s, 16 kHz mono clips MusicCoCa embeds, as
//! upstream's `MusicCoCaBase.embed_audio` (`magenta_rt/musiccoca.py`) cuts them:
//! mix to mono by channel average, resample to 16 kHz, then windows of
//! [`CLIP_SAMPLES`] starting every [`CLIP_SAMPLES`] (the default hop: no overlap)
//! from sample 0 while the start is inside the audio, the last one zero-padded. An
//! audio prompt's embedding is the mean of its clips' embeddings.

use rill_io::DecodedAudio;

use crate::frontend::{CLIP_SAMPLES, SAMPLE_RATE};
use crate::Error;

/// The clips of 16 kHz mono audio: one per start `0, 160000, 320000, …` below
/// `mono.len()`, each [`CLIP_SAMPLES`] long, the last zero-padded (upstream's
/// `embed_audio` with `hop_length=None, pad_end=True`). Empty audio is refused
/// (upstream would embed it as zeros).
pub fn clip_windows(mono: &[f32]) -> Result<Vec<Vec<f32>>, Error> {
    if mono.is_empty() {
        return Err(Error::Input("the audio is empty (no samples)".into()));
    }
    Ok(mono
        .chunks(CLIP_SAMPLES)
        .map(|c| {
            let mut clip = c.to_vec();
            clip.resize(CLIP_SAMPLES, 0.0);
            clip
        })
        .collect())
}

/// The clips of decoded audio of any rate and channel count: channel average
/// (`rill_io::downmix_mono`), resampling to 16 kHz (`rill_io::resample`), then
/// [`clip_windows`].
pub fn clips_from_audio(audio: &DecodedAudio) -> Result<Vec<Vec<f32>>, Error> {
    if audio.channels == 0 || audio.samples.is_empty() {
        return Err(Error::Input("the audio is empty (no samples)".into()));
    }
    let mono = rill_io::downmix_mono(&audio.samples, audio.channels);
    let mono = rill_io::resample(&mono, audio.rate, SAMPLE_RATE, 1)
        .map_err(|e| Error::Input(e.to_string()))?;
    clip_windows(&mono)
}
