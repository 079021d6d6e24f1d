//! `--dump`: intermediates in the oracle recordings' names and layouts.

use std::path::Path;

use anyhow::Result;
use rill_io::{Array, Data};
use rill_mrt2::sampler::{LEVEL, RESERVED, VOCAB};
use rill_mrt2::{FrameTrace, Mrt2, LEVELS};

/// Accumulates per-frame intermediates.
pub struct Dump {
    enc_dim: usize,
    dim: usize,
    frames: usize,
    cond_tokens: Vec<i32>,
    tokens: Vec<i32>,
    encoder_out: Vec<f32>,
    temporal_in: Vec<f32>,
    temporal_out: Vec<f32>,
    logits_level: Vec<f32>,
    gumbel_level: Vec<f32>,
    rng_key: Vec<u32>,
    audio_frames: usize,
    decoder_stft: Vec<f32>,
    audio_float: Vec<f32>,
    audio_int16: Vec<i16>,
}

impl Dump {
    pub fn new(model: &Mrt2, cond_tokens: &[i32]) -> Dump {
        Dump {
            enc_dim: model.config.dims.enc_dim,
            dim: model.config.dims.temporal.dim,
            frames: 0,
            cond_tokens: cond_tokens.to_vec(),
            tokens: Vec::new(),
            encoder_out: Vec::new(),
            temporal_in: Vec::new(),
            temporal_out: Vec::new(),
            logits_level: Vec::new(),
            gumbel_level: Vec::new(),
            rng_key: Vec::new(),
            audio_frames: 0,
            decoder_stft: Vec::new(),
            audio_float: Vec::new(),
            audio_int16: Vec::new(),
        }
    }

    pub fn push_frame(&mut self, tokens: &[u32; LEVELS], t: &FrameTrace) {
        self.frames += 1;
        self.tokens.extend(tokens.iter().map(|&v| v as i32));
        self.encoder_out.extend_from_slice(&t.encoder_out);
        self.temporal_in.extend_from_slice(&t.temporal_in);
        self.temporal_out.extend_from_slice(&t.temporal_out);
        self.logits_level.extend_from_slice(&t.logits);
        self.gumbel_level.extend_from_slice(&t.gumbel);
        self.rng_key.extend(t.keys.iter().flatten());
    }

    pub fn push_audio(&mut self, stft: &[f32], audio: &[f32], pcm: &[i16]) {
        self.audio_frames += 1;
        self.decoder_stft.extend_from_slice(stft);
        self.audio_float.extend_from_slice(audio);
        self.audio_int16.extend_from_slice(pcm);
    }

    pub fn write(self, path: &Path) -> Result<()> {
        let n = self.frames;
        let mut logits = vec![0f32; n * LEVELS * VOCAB];
        for f in 0..n {
            for k in 0..LEVELS {
                let src = &self.logits_level[(f * LEVELS + k) * LEVEL..][..LEVEL];
                let lo = (f * LEVELS + k) * VOCAB + RESERVED + LEVEL * k;
                logits[lo..lo + LEVEL].copy_from_slice(src);
            }
        }
        let mut arrays = vec![
            (
                "tokens",
                Array::new(vec![n, LEVELS], Data::I32(self.tokens)),
            ),
            (
                "cond_tokens",
                Array::new(vec![self.cond_tokens.len()], Data::I32(self.cond_tokens)),
            ),
            (
                "encoder_out",
                Array::new(vec![n, self.enc_dim], Data::F32(self.encoder_out)),
            ),
            (
                "temporal_in",
                Array::new(vec![n, self.dim], Data::F32(self.temporal_in)),
            ),
            (
                "temporal_out",
                Array::new(vec![n, self.dim], Data::F32(self.temporal_out)),
            ),
            (
                "logits",
                Array::new(vec![n, LEVELS, VOCAB], Data::F32(logits)),
            ),
            (
                "logits_level",
                Array::new(vec![n, LEVELS, LEVEL], Data::F32(self.logits_level)),
            ),
            (
                "gumbel_level",
                Array::new(vec![n, LEVELS, LEVEL], Data::F32(self.gumbel_level)),
            ),
            (
                "rng_key",
                Array::new(vec![n, LEVELS, 2], Data::U32(self.rng_key)),
            ),
        ];
        if self.audio_frames > 0 {
            let c = self.audio_frames;
            arrays.push((
                "decoder_stft",
                Array::new(vec![c, 4, 480, 4], Data::F32(self.decoder_stft)),
            ));
            arrays.push((
                "audio_float",
                Array::new(vec![c, 1920, 2], Data::F32(self.audio_float)),
            ));
            arrays.push((
                "audio_int16",
                Array::new(vec![c, 1920, 2], Data::I16(self.audio_int16)),
            ));
        }
        rill_io::write_npz(path, arrays.iter().map(|(k, a)| (*k, a)))?;
        Ok(())
    }
}
