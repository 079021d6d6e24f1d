//! Style prompts: `--prompt`, `--style-audio` and the MusicCoCa flags every music
//! command shares, and the `rill style` command (each input's 12 tokens).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use rill_kernels::{isa, Pool};
use rill_musiccoca::{Mapper, StyleModel, LEVELS};

use crate::usage::usage_bail;

/// Where MusicCoCa comes from and how a text becomes a style.
#[derive(Debug, Clone, Default, Args)]
pub struct StyleModelArgs {
    /// MusicCoCa's assets: the folder holding spm.model and the five .tflite files
    /// (upstream's `resources/musiccoca`). Default: beside the checkpoint as upstream
    /// downloads it (ROOT/resources/musiccoca for ROOT/checkpoints/…), then
    /// $RILL_MUSICCOCA, $MAGENTA_HOME/resources/musiccoca and
    /// ~/Documents/Magenta/magenta-rt-v2/resources/musiccoca.
    #[arg(long, value_name = "DIR")]
    pub musiccoca: Option<PathBuf>,

    /// Use a text's embedding as it is, without the mapper (upstream's Python API
    /// default); by default a text is mapped toward audio, as upstream's CLI and
    /// C++ engine do.
    #[arg(long)]
    pub no_mapper: bool,

    /// Seed of the mapper's noise (numpy's RandomState(S).randn(768)) [default: 0].
    #[arg(long, value_name = "S", conflicts_with = "no_mapper")]
    pub mapper_seed: Option<u32>,
}

impl StyleModelArgs {
    /// The mapper setting.
    pub fn mapper(&self) -> Mapper {
        match (self.no_mapper, self.mapper_seed) {
            (true, _) => Mapper::Off,
            (false, s) => Mapper::Seed(s.unwrap_or(0)),
        }
    }

    /// Loads MusicCoCa: from --musiccoca, else with `random` (the command's
    /// `--random-weights` seed) a random-weight MusicCoCa from the cache, else found
    /// beside `checkpoint`.
    pub fn load(&self, checkpoint: Option<&Path>, random: Option<u64>) -> Result<StyleModel> {
        let dir = match (&self.musiccoca, random) {
            (Some(d), _) => Some(d.clone()),
            (None, Some(seed)) => {
                let cache = rill_stream::source::cache_dir();
                if !cache
                    .join(format!("musiccoca_random_seed{seed}/complete"))
                    .exists()
                {
                    eprintln!(
                        "writing a random-weight MusicCoCa (seed {seed}, 0.95 GB) to {} (once)",
                        cache.display()
                    );
                }
                let d = rill_musiccoca::synth::random_assets_dir(&cache, seed)?;
                eprintln!("note: random-weight MusicCoCa with a tiny tokenizer — the style codes are not meaningful");
                Some(d)
            }
            (None, None) => None,
        };
        let t = std::time::Instant::now();
        let m = StyleModel::locate_and_load(dir.as_deref(), checkpoint, isa::active())?;
        eprintln!(
            "MusicCoCa from {} loaded in {:.1} s",
            m.dir().display(),
            t.elapsed().as_secs_f64()
        );
        Ok(m)
    }
}

/// Text and audio style prompts, weighted, blended into one style.
#[derive(Debug, Clone, Default, Args)]
pub struct StylePromptArgs {
    /// A text style prompt, e.g. --prompt "disco funk". Repeat to blend, with
    /// relative weights: --prompt "jazz=0.7" --prompt "techno=0.3" (up to 6 prompts
    /// and clips in all). Needs MusicCoCa (see --musiccoca).
    #[arg(long, value_name = "TEXT[=WEIGHT]", conflicts_with = "style_codes")]
    pub prompt: Vec<String>,

    /// An audio clip as a style prompt (WAV, FLAC, MP3 or Ogg; any rate; the mean
    /// over its 10 s clips), optionally weighted: --style-audio clip.wav=0.5.
    #[arg(long, value_name = "FILE[=WEIGHT]", conflicts_with = "style_codes")]
    pub style_audio: Vec<String>,

    #[command(flatten)]
    pub model: StyleModelArgs,
}

/// One input of a blend.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    Text(String),
    Audio(PathBuf),
}

impl Input {
    /// How the input is named in messages and JSON.
    pub fn label(&self) -> String {
        match self {
            Input::Text(t) => t.clone(),
            Input::Audio(p) => p.display().to_string(),
        }
    }
}

/// `TEXT=WEIGHT` → (TEXT, WEIGHT); without a numeric suffix after the last `=`, the
/// whole string with weight 1.
pub fn split_weight(s: &str) -> (String, f32) {
    if let Some((head, tail)) = s.rsplit_once('=') {
        if let Ok(w) = tail.trim().parse::<f32>() {
            return (head.to_string(), w);
        }
    }
    (s.to_string(), 1.0)
}

impl StylePromptArgs {
    /// Whether any prompt or clip was given.
    pub fn any(&self) -> bool {
        !self.prompt.is_empty() || !self.style_audio.is_empty()
    }

    /// The inputs and their weights, checked before any weights load.
    pub fn inputs(&self) -> Result<Vec<(Input, f32)>> {
        let mut v = Vec::new();
        for p in &self.prompt {
            let (t, w) = split_weight(p);
            v.push((Input::Text(t), w));
        }
        for a in &self.style_audio {
            let (p, w) = split_weight(a);
            v.push((Input::Audio(PathBuf::from(p)), w));
        }
        check_inputs(&v)?;
        Ok(v)
    }

    /// The blended style's 12 tokens, or `None` without prompts.
    pub fn resolve(
        &self,
        checkpoint: Option<&Path>,
        random: Option<u64>,
        threads: Option<usize>,
    ) -> Result<Option<[u16; LEVELS]>> {
        if !self.any() {
            return Ok(None);
        }
        self.inputs()?; // usage errors before any load
        let model = self.model.load(checkpoint, random)?;
        let pool = Pool::new(rill_kernels::pool::thread_count(threads)?);
        self.resolve_with(&model, &pool)
    }

    /// As [`StylePromptArgs::resolve`] with MusicCoCa already loaded.
    pub fn resolve_with(&self, model: &StyleModel, pool: &Pool) -> Result<Option<[u16; LEVELS]>> {
        if !self.any() {
            return Ok(None);
        }
        let inputs = self.inputs()?;
        let embeddings = embed_all(model, &inputs, self.model.mapper(), pool)?;
        let members: Vec<(&[f32], f32)> = embeddings
            .iter()
            .zip(&inputs)
            .map(|(e, (_, w))| (e.as_slice(), *w))
            .collect();
        let q = model.tokenize_blend(&members, pool)?;
        eprintln!("style {}: {}", describe(&inputs), codes_line(&q.tokens));
        Ok(Some(q.tokens))
    }
}

/// Refuses what no weights are needed to refuse: no inputs, too many, empty texts,
/// non-finite weights, weights that sum to nothing.
pub fn check_inputs(v: &[(Input, f32)]) -> Result<()> {
    if v.is_empty() {
        return Ok(());
    }
    if v.len() > rill_musiccoca::blend::MAX_PROMPTS {
        usage_bail!(
            "at most {} style prompts and clips may be blended, got {}",
            rill_musiccoca::blend::MAX_PROMPTS,
            v.len()
        );
    }
    for (i, _) in v {
        if let Input::Text(t) = i {
            if t.trim().is_empty() {
                usage_bail!(
                    "--prompt: an empty prompt has no style; give some words (\"disco funk\")"
                );
            }
        }
    }
    let weights: Vec<f32> = v.iter().map(|x| x.1).collect();
    if let Err(e) = rill_musiccoca::blend::normalised_weights(&weights) {
        usage_bail!("{e}");
    }
    Ok(())
}

/// Every input's embedding (texts through the mapper setting, clips unmapped).
pub fn embed_all(
    model: &StyleModel,
    inputs: &[(Input, f32)],
    mapper: Mapper,
    pool: &Pool,
) -> Result<Vec<Vec<f32>>> {
    inputs
        .iter()
        .map(|(i, _)| -> Result<Vec<f32>> {
            Ok(match i {
                Input::Text(t) => {
                    if let Some(n) = model.prompt_overflow(t) {
                        eprintln!(
                            "warning: the prompt {:?} is {n} SentencePiece pieces; MusicCoCa reads the first 127 (as upstream) and ignores the rest",
                            cut(t)
                        );
                    }
                    model.embed_text(t, mapper, pool)?
                }
                Input::Audio(p) => {
                    let audio = rill_io::audio::decode_file(p)?;
                    model
                        .embed_audio(&audio, pool)
                        .with_context(|| p.display().to_string())?
                }
            })
        })
        .collect()
}

/// The start of a long text, for messages.
fn cut(t: &str) -> String {
    match t.char_indices().nth(40) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_string(),
    }
}

fn describe(v: &[(Input, f32)]) -> String {
    v.iter()
        .map(|(i, w)| format!("{:?}={w}", i.label()))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// `t0,t1,…,t11`, as `--style-codes` takes them.
pub fn codes_line(t: &[u16; LEVELS]) -> String {
    t.iter().map(u16::to_string).collect::<Vec<_>>().join(",")
}
