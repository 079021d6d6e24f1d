//! The style model as users meet it (upstream's `MusicCoCa`): the assets directory of
//! upstream's download read into one value; a text or a waveform to a style embedding
//! (`embed_style`), an embedding to 12 tokens (`tokenize_style`), blends.

use std::path::{Path, PathBuf};

use rill_io::audio::DecodedAudio;
use rill_kernels::{Isa, Pool};

use crate::clips::{clip_windows, clips_from_audio};
use crate::frontend::{patches, Frontend, CLIP_SAMPLES, SAMPLE_RATE};
use crate::numpy_rng::randn_f32;
use crate::tower::DIM;
use crate::{blend, locate, Error, MusicCoCa, Quantized, Spm, Weights};

/// Whether and how the mapper moves a text embedding toward the audio embeddings:
/// upstream's CLI and C++ engine map with seed 0; its Python API does not by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapper {
    /// The text tower's embedding as it is (`--no-mapper`).
    Off,
    /// Mapped with the noise `np.random.RandomState(seed).randn(768)`.
    Seed(u32),
}

impl Default for Mapper {
    fn default() -> Mapper {
        Mapper::Seed(0)
    }
}

/// One member of a style blend: a text (embedded with the blend's mapper setting) or
/// an embedding computed before (an audio clip's, from [`StyleModel::embed_audio`]).
#[derive(Debug, Clone, Copy)]
pub enum Prompt<'a> {
    Text(&'a str),
    Embedding(&'a [f32]),
}

/// MusicCoCa with its tokenizer and frontend, loaded from one assets directory.
pub struct StyleModel {
    dir: PathBuf,
    spm: Spm,
    frontend: Frontend,
    net: MusicCoCa,
}

impl StyleModel {
    /// Loads `dir` (`spm.model` and the five `.tflite` files) for tier `isa`.
    pub fn load(dir: &Path, isa: Isa) -> Result<StyleModel, Error> {
        let spm = Spm::load(dir.join("spm.model"))?;
        let mut w = Weights::from_tflite_dir(dir)?;
        let frontend = Frontend::from_weights(&mut w)?;
        let net = MusicCoCa::from_weights(w, isa)?;
        Ok(StyleModel {
            dir: dir.to_path_buf(),
            spm,
            frontend,
            net,
        })
    }

    /// Loads the assets of `explicit`, else the first place [`locate::find`] names
    /// beside `checkpoint`; none found is one error saying where rill looked and how
    /// to download them.
    pub fn locate_and_load(
        explicit: Option<&Path>,
        checkpoint: Option<&Path>,
        isa: Isa,
    ) -> Result<StyleModel, Error> {
        let dir = match explicit {
            Some(d) => d.to_path_buf(),
            None => locate::find(checkpoint).ok_or_else(|| Error::MissingAsset {
                path: PathBuf::from("resources/musiccoca"),
                hint: format!(
                    "MusicCoCa (text and audio style prompts) is neither beside the checkpoint nor in {}.\n{}",
                    locate::candidates(checkpoint)
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    locate::download_instructions()
                ),
            })?,
        };
        StyleModel::load(&dir, isa)
    }

    /// The directory the assets came from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The networks.
    pub fn networks(&self) -> &MusicCoCa {
        &self.net
    }

    /// The text tower's input ids of `prompt` (upstream's lowercase, SentencePiece,
    /// SOS first, at most 127 pieces); an empty or blank prompt is refused.
    pub fn prompt_ids(&self, prompt: &str) -> Result<Vec<u32>, Error> {
        if prompt.trim().is_empty() {
            return Err(Error::Input(
                "an empty prompt has no style; give some words (\"disco funk\")".into(),
            ));
        }
        let t = self.spm.encode_prompt(prompt);
        Ok(t.ids[..t.num_tokens].iter().map(|&i| i as u32).collect())
    }

    /// The prompt's SentencePiece pieces when there are more than the text tower reads
    /// (127; upstream ignores the rest without a word): callers warn with it.
    pub fn prompt_overflow(&self, prompt: &str) -> Option<usize> {
        let t = self.spm.encode_prompt(prompt);
        (t.pieces >= crate::spm::TEXT_LEN).then_some(t.pieces)
    }

    /// The style embedding of a text: the text tower's, mapped unless `mapper` is off
    /// (upstream's `embed_style(text, use_mapper, seed)`).
    pub fn embed_text(&self, prompt: &str, mapper: Mapper, pool: &Pool) -> Result<Vec<f32>, Error> {
        let ids = self.prompt_ids(prompt)?;
        let e = self.net.embed_ids(&ids, pool)?;
        match mapper {
            Mapper::Off => Ok(e),
            Mapper::Seed(s) => self.net.map(&e, &randn_f32(s, DIM), pool),
        }
    }

    /// The style embedding of 16 kHz mono audio: the mean over its 10 s clips.
    pub fn embed_mono_16k(&self, mono: &[f32], pool: &Pool) -> Result<Vec<f32>, Error> {
        self.embed_clips(&clip_windows(mono)?, pool)
    }

    /// The style embedding of decoded audio of any rate and channel count (averaged
    /// to mono, resampled to 16 kHz, then as [`StyleModel::embed_mono_16k`]).
    pub fn embed_audio(&self, audio: &DecodedAudio, pool: &Pool) -> Result<Vec<f32>, Error> {
        self.embed_clips(&clips_from_audio(audio)?, pool)
    }

    /// The embedding of each 10 s clip of decoded audio, in order (upstream's
    /// `embed_style(audio, pool_across_time=False)`); their mean is
    /// [`StyleModel::embed_audio`].
    pub fn embed_audio_clips(
        &self,
        audio: &DecodedAudio,
        pool: &Pool,
    ) -> Result<Vec<Vec<f32>>, Error> {
        self.embed_clips_each(&clips_from_audio(audio)?, pool)
    }

    /// The embedding of each clip (each [`crate::frontend::CLIP_SAMPLES`] of 16 kHz mono,
    /// as [`clip_windows`] cuts them).
    pub fn embed_clips_each(
        &self,
        clips: &[Vec<f32>],
        pool: &Pool,
    ) -> Result<Vec<Vec<f32>>, Error> {
        if clips.is_empty() {
            return Err(Error::Input("the audio holds no samples".into()));
        }
        clips
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let e = self
                    .net
                    .embed_patches(&patches(&self.frontend.log_mel(c)), pool);
                if e.iter().all(|v| v.is_finite()) {
                    return Ok(e);
                }
                // Only non-finite or absurdly loud samples overflow the log-mel
                // frontend: say which clip and what is wrong with it.
                let what = match c.iter().find(|v| !v.is_finite()) {
                    Some(v) => format!("holds a {v} sample"),
                    None => {
                        let peak = c.iter().fold(0f32, |m, v| m.max(v.abs()));
                        format!(
                            "reaches {peak:e}, far beyond full scale (±1); scale the audio down"
                        )
                    }
                };
                Err(Error::Input(format!(
                    "the audio's clip {} (from {} s) gives a non-finite embedding: it {what}",
                    i + 1,
                    i * CLIP_SAMPLES / SAMPLE_RATE as usize
                )))
            })
            .collect()
    }

    fn embed_clips(&self, clips: &[Vec<f32>], pool: &Pool) -> Result<Vec<f32>, Error> {
        let each = self.embed_clips_each(clips, pool)?;
        let mut acc = vec![0.0f32; DIM];
        for e in &each {
            for (a, v) in acc.iter_mut().zip(e) {
                *a += v;
            }
        }
        let n = each.len() as f32;
        Ok(acc.into_iter().map(|v| v / n).collect())
    }

    /// The 12 tokens of an embedding (upstream's `tokenize_style`).
    pub fn tokenize(&self, embedding: &[f32], pool: &Pool) -> Result<Quantized, Error> {
        self.net.quantize(embedding, pool)
    }

    /// The tokens of a weighted blend of embeddings ([`blend::blend`]).
    pub fn tokenize_blend(
        &self,
        members: &[(&[f32], f32)],
        pool: &Pool,
    ) -> Result<Quantized, Error> {
        let e = blend::blend(members)?;
        self.tokenize(&e, pool)
    }

    /// The tokens of a weighted blend of prompts (upstream's app: each member
    /// embedded, texts through `mapper`, the embeddings averaged by normalised weight,
    /// then quantised).
    pub fn tokenize_prompts(
        &self,
        members: &[(Prompt<'_>, f32)],
        mapper: Mapper,
        pool: &Pool,
    ) -> Result<Quantized, Error> {
        // Each text's embedding (empty for a member that already is one).
        let texts: Vec<Vec<f32>> = members
            .iter()
            .map(|(p, _)| match p {
                Prompt::Text(t) => self.embed_text(t, mapper, pool),
                Prompt::Embedding(_) => Ok(Vec::new()),
            })
            .collect::<Result<_, _>>()?;
        let blend: Vec<(&[f32], f32)> = members
            .iter()
            .zip(&texts)
            .map(|((p, w), t)| match p {
                Prompt::Embedding(e) => (*e, *w),
                Prompt::Text(_) => (t.as_slice(), *w),
            })
            .collect();
        self.tokenize_blend(&blend, pool)
    }
}
