//! `rill speak --dump F.npz` and `--force-codes F.npy`: one utterance's intermediates
//! in the Magpie oracle recordings' key names, shapes and dtypes (so the oracle's
//! `compare.py` diffs them key by key), and teacher forcing from a code file.
//!
//! Per decoder step (the EOS step included, as NeMo records it): `dec_hidden
//! [S, B, 768]`, `final_logits_raw [S, B, 8·V]`, `lt_logits [S, 8, B, V]`, `lt_codes` and
//! `argmax_codes [S, 1, 8, 1]`, `attended_timestep [S, 1]` (−1 before the prior
//! starts); per utterance `text_tokens [1, T]`, `text_encoder_out [T, 768]`; per frame
//! `predicted_codes [8, F]`, `codec_latents [1, 32, F]`, `audio [F·1024]` (float,
//! before int16). `B` is 2 with CFG (conditional row first), else 1.

use std::path::Path;

use anyhow::{bail, Context, Result};
use rill_io::{Array, Data};
use rill_magpie::{Model, StepTrace, CODEBOOKS};
use rill_nanocodec::LATENT_DIM;

/// Accumulates one utterance's intermediates.
pub struct TtsDump {
    dim: usize,
    vocab: usize,
    text_tokens: Vec<i32>,
    encoder_out: Vec<f32>,
    steps: usize,
    batch: usize,
    hidden: Vec<f32>,
    final_logits: Vec<f32>,
    lt_logits: Vec<f32>,
    lt_codes: Vec<i64>,
    argmax_codes: Vec<i64>,
    attended: Vec<i64>,
    frames: Vec<[u32; CODEBOOKS]>,
    audio: Vec<f32>,
}

impl TtsDump {
    /// Starts a dump of the utterance `tokens` (the text front end's ids, EOS last);
    /// runs the text encoder once more to record its output.
    pub fn new(model: &Model, tokens: &[u32], pool: &rill_kernels::Pool) -> Result<TtsDump> {
        let c = &model.config;
        let mut encoder_out = vec![0f32; tokens.len() * c.dim];
        model.encode(tokens, &mut encoder_out, pool)?;
        Ok(TtsDump {
            dim: c.dim,
            vocab: c.codebook_vocab,
            text_tokens: tokens.iter().map(|&t| t as i32).collect(),
            encoder_out,
            steps: 0,
            batch: 0,
            hidden: Vec::new(),
            final_logits: Vec::new(),
            lt_logits: Vec::new(),
            lt_codes: Vec::new(),
            argmax_codes: Vec::new(),
            attended: Vec::new(),
            frames: Vec::new(),
            audio: Vec::new(),
        })
    }

    /// Records one decoder step (a trace the session filled).
    pub fn step(&mut self, tr: &StepTrace) {
        self.batch = tr.hidden.len() / self.dim;
        self.steps += 1;
        self.hidden.extend_from_slice(&tr.hidden);
        self.final_logits.extend_from_slice(&tr.final_logits);
        self.lt_logits.extend_from_slice(&tr.lt_logits);
        self.lt_codes.extend(tr.sampled.iter().map(|&c| c as i64));
        self.argmax_codes
            .extend(tr.argmax_codes.iter().map(|&c| c as i64));
        self.attended.push(tr.attended.map_or(-1, |a| a as i64));
    }

    /// Records one frame the codec decoded and its float audio.
    pub fn frame(&mut self, codes: &[u32; CODEBOOKS], audio: &[f32]) {
        self.frames.push(*codes);
        self.audio.extend_from_slice(audio);
    }

    pub fn write(self, path: &Path) -> Result<()> {
        let (s, b, d, v, f) = (
            self.steps,
            self.batch,
            self.dim,
            self.vocab,
            self.frames.len(),
        );
        let t = self.text_tokens.len();
        let mut predicted = vec![0i64; CODEBOOKS * f];
        let mut latents = vec![0f32; LATENT_DIM * f];
        let mut lat = [0f32; LATENT_DIM];
        for (i, codes) in self.frames.iter().enumerate() {
            rill_nanocodec::fsq::dequantize(codes, &mut lat);
            for (k, &c) in codes.iter().enumerate() {
                predicted[k * f + i] = c as i64;
            }
            for (k, &x) in lat.iter().enumerate() {
                latents[k * f + i] = x;
            }
        }
        let arrays = [
            (
                "text_tokens",
                Array::new(vec![1, t], Data::I32(self.text_tokens)),
            ),
            (
                "text_encoder_out",
                Array::new(vec![t, d], Data::F32(self.encoder_out)),
            ),
            (
                "dec_hidden",
                Array::new(vec![s, b, d], Data::F32(self.hidden)),
            ),
            (
                "final_logits_raw",
                Array::new(vec![s, b, CODEBOOKS * v], Data::F32(self.final_logits)),
            ),
            (
                "lt_logits",
                Array::new(vec![s, CODEBOOKS, b, v], Data::F32(self.lt_logits)),
            ),
            (
                "lt_codes",
                Array::new(vec![s, 1, CODEBOOKS, 1], Data::I64(self.lt_codes)),
            ),
            (
                "argmax_codes",
                Array::new(vec![s, 1, CODEBOOKS, 1], Data::I64(self.argmax_codes)),
            ),
            (
                "attended_timestep",
                Array::new(vec![s, 1], Data::I64(self.attended)),
            ),
            (
                "predicted_codes",
                Array::new(vec![CODEBOOKS, f], Data::I64(predicted)),
            ),
            (
                "codec_latents",
                Array::new(vec![1, LATENT_DIM, f], Data::F32(latents)),
            ),
            (
                "audio",
                Array::new(vec![self.audio.len()], Data::F32(self.audio)),
            ),
        ];
        rill_io::write_npz(path, arrays.iter().map(|(k, a)| (*k, a)))
            .with_context(|| format!("writing the dump {}", path.display()))?;
        Ok(())
    }
}

/// Reads `--force-codes`: an `[F, 8]` integer `.npy` of NanoCodec codes (0..2016).
pub fn read_forced_codes(path: &Path) -> Result<Vec<[u16; CODEBOOKS]>> {
    let a = rill_io::read_npy(path)
        .with_context(|| format!("reading the forced codes {}", path.display()))?;
    let what = || format!("forced codes {}", path.display());
    if a.shape.len() != 2 || a.shape[1] != CODEBOOKS || a.shape[0] == 0 {
        bail!(
            "{}: shape {:?}, expected [frames, {CODEBOOKS}] with at least one frame",
            what(),
            a.shape
        );
    }
    let Some(v) = (match &a.data {
        Data::I32(_) | Data::I64(_) | Data::I16(_) | Data::U8(_) | Data::U32(_) => a.to_i64(),
        _ => None,
    }) else {
        bail!("{}: the codes must be integers (int32 or int64)", what());
    };
    let size = rill_nanocodec::CODEBOOK_SIZE as i64;
    let mut frames = Vec::with_capacity(a.shape[0]);
    for (i, row) in v.chunks_exact(CODEBOOKS).enumerate() {
        if let Some(k) = row.iter().position(|&c| !(0..size).contains(&c)) {
            bail!(
                "{}: frame {i}, codebook {k} has code {}; NanoCodec codes are 0..{}",
                what(),
                row[k],
                size - 1
            );
        }
        frames.push(std::array::from_fn(|k| row[k] as u16));
    }
    Ok(frames)
}
