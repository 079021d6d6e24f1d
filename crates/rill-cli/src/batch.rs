//! `rill batch`: one WAV per row of a prompts CSV, as upstream's
//! `scripts/bulk_generate.py` (its defaults: temperature 1.1, top-k 128, CFG
//! 3/1/1, 60 s per clip, `{row index}.wav`), resumable and shardable across
//! machines with identical results.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use rill_kernels::Pool;
use rill_mrt2::conditioning::{Conditioning, StyleLevels};
use rill_mrt2::sampler::{SamplingParams, VOCAB};
use rill_musiccoca::StyleModel;
use rill_stream::{FramePipeline, StagePools};

use crate::args::{parse_style_levels, ModelArgs, OnOff, PrecisionArgs, MAX_SECONDS};
use crate::batch_csv::{self, Row};
use crate::model_source;
use crate::output::WavOut;
use crate::progress;
use crate::style::{self, Input, StyleModelArgs};
use crate::usage::usage_bail;

#[derive(Debug, Args)]
#[command(
    after_help = "Example (a CSV with a header line `prompt`, then one prompt per line):\n    \
rill batch prompts.csv --out clips --seconds 30\n\
On 4 machines sharing `clips`: --shard 0/4 … --shard 3/4 (or --shard auto in a Slurm array \
or a Kubernetes indexed Job; docs/batch.md). Rerun the same command to finish an \
interrupted batch."
)]
pub struct BatchArgs {
    /// The prompts CSV: a header line with a `prompt` column (text, needs MusicCoCa;
    /// may be left out when every row has style codes) and optional `seed` (the row's sampler seed) and `style_codes` (12 codes
    /// 0..1023, comma- or space-separated, as `rill style` prints them; used instead
    /// of the prompt, which then only labels the row) columns; other columns are
    /// ignored. Row i (0-based, the header not counted) becomes OUT/i.wav.
    #[arg(value_name = "PROMPTS.csv")]
    pub prompts: PathBuf,

    /// The folder the WAVs go to (created if missing). A row whose WAV is already
    /// there is skipped, so a rerun resumes an interrupted batch.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Seconds of audio per row (frames = ⌊25·S⌋).
    #[arg(long, default_value_t = 60.0)]
    pub seconds: f64,

    /// Generate only this machine's share of the rows: I/N takes the rows whose index
    /// % N == I (0-based I). `auto` reads I (and N) from a Slurm array --array=0-(N-1)
    /// ($SLURM_ARRAY_TASK_ID, $SLURM_ARRAY_TASK_COUNT) or a Kubernetes indexed Job
    /// ($JOB_COMPLETION_INDEX, with --shards N). Every row's audio is the same
    /// whichever machine makes it.
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<String>,

    /// The number of shards for --shard auto: a Kubernetes Job's `completions`;
    /// in a Slurm array, the task id is then the shard index whatever the array's
    /// range (without it, the array's size from $SLURM_ARRAY_TASK_COUNT).
    #[arg(long, value_name = "N")]
    pub shards: Option<u64>,

    /// Base sampler seed: a row without a `seed` gets this plus its row index.
    #[arg(long, default_value_t = rill_mrt2::DEFAULT_SEED)]
    pub seed: u64,

    /// Sampling temperature (upstream's bulk_generate.py default).
    #[arg(long, default_value_t = 1.1, allow_negative_numbers = true)]
    pub temperature: f32,

    /// Keep only the K most likely tokens per step (bulk_generate.py's default).
    #[arg(long, default_value_t = 128)]
    pub top_k: usize,

    /// Classifier-free guidance of the style.
    #[arg(long, default_value_t = 3.0, allow_negative_numbers = true)]
    pub cfg_musiccoca: f64,

    /// Classifier-free guidance of the notes.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub cfg_notes: f64,

    /// Classifier-free guidance of the drums.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub cfg_drums: f64,

    /// How many MusicCoCa style levels steer: 12 or 6 [default: 12].
    #[arg(long, value_name = "6|12", value_parser = parse_style_levels)]
    pub style_levels: Option<StyleLevels>,

    /// Drum channel for every row: on or off (default: masked, the model decides).
    #[arg(long, value_enum)]
    pub drums: Option<OnOff>,

    #[command(flatten)]
    pub model: ModelArgs,

    #[command(flatten)]
    pub precision: PrecisionArgs,

    #[command(flatten)]
    pub musiccoca: StyleModelArgs,
}

impl BatchArgs {
    fn conditioning(&self, codes: Option<[u16; 12]>) -> Conditioning {
        let mut c = Conditioning::default();
        c.cfg.musiccoca = self.cfg_musiccoca;
        c.cfg.notes = self.cfg_notes;
        c.cfg.drums = self.cfg_drums;
        c.style = codes;
        if let Some(l) = self.style_levels {
            c.style_levels = l;
        }
        if let Some(d) = self.drums {
            c.drums = Some(d == OnOff::On);
        }
        c
    }

    /// Every flag checked before any work; the frames per row.
    fn check(&self) -> Result<(usize, SamplingParams)> {
        let s = self.seconds;
        if !(s.is_finite() && s > 0.0 && s <= MAX_SECONDS) {
            usage_bail!("--seconds must be a number in (0, {MAX_SECONDS}] (a day), got {s}");
        }
        let frames = (s * 25.0).floor() as usize;
        if frames == 0 {
            usage_bail!("--seconds {s} is shorter than one 40 ms frame");
        }
        for (name, v) in [
            ("--cfg-musiccoca", self.cfg_musiccoca),
            ("--cfg-notes", self.cfg_notes),
            ("--cfg-drums", self.cfg_drums),
        ] {
            if !v.is_finite() {
                usage_bail!("{name} must be a finite number, got {v}");
            }
        }
        if !self.temperature.is_finite() || self.temperature < 0.0 {
            usage_bail!(
                "--temperature must be a finite number ≥ 0, got {}",
                self.temperature
            );
        }
        if !(1..=VOCAB).contains(&self.top_k) {
            usage_bail!("--top-k must be in 1..={VOCAB}, got {}", self.top_k);
        }
        Ok((
            frames,
            SamplingParams {
                temperature: self.temperature,
                top_k: self.top_k,
            },
        ))
    }
}

/// The WAV of row `index`: `DIR/{index}.wav`, as upstream names them.
pub fn wav_path(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("{index}.wav"))
}

pub fn run(args: BatchArgs) -> Result<()> {
    let (frames, sampling) = args.check()?;
    let shard = batch_csv::shard(args.shard.as_deref(), args.shards, |v| {
        std::env::var(v).ok()
    })?;
    let name = args.prompts.display().to_string();
    let bytes = std::fs::read(&args.prompts)
        .with_context(|| format!("cannot read the prompts CSV {name}"))?;
    // Every row is checked, not only this shard's, so every shard fails alike.
    let rows = batch_csv::parse(&name, &bytes)?;
    let total = rows.len();
    let mine: Vec<Row> = rows.into_iter().filter(|r| shard.takes(r.index)).collect();
    let (done, todo): (Vec<Row>, Vec<Row>) = mine
        .into_iter()
        .partition(|r| wav_path(&args.out, r.index).exists());
    let shard_note = if shard.count > 1 {
        format!(" (shard {}/{})", shard.index, shard.count)
    } else {
        String::new()
    };
    eprintln!(
        "{name}: {total} rows, {} in this run{shard_note}: {} already in {} (skipped), {} to generate",
        todo.len() + done.len(),
        done.len(),
        args.out.display(),
        todo.len()
    );
    if todo.is_empty() {
        eprintln!("nothing to do: every row of this run has its WAV");
        return Ok(());
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create the output folder {}", args.out.display()))?;

    let path = model_source::resolve(&args.model)?;
    let pools = args.model.pools()?;
    let style_model = if todo.iter().any(Row::needs_musiccoca) {
        Some(
            args.musiccoca
                .load(Some(&path), args.model.random_weights)?,
        )
    } else {
        None
    };
    let (ckpt, _) = model_source::open(&path)?;
    let precision = model_source::precision(args.precision.precision, &ckpt)?;
    let lm = model_source::load_lm(&ckpt, precision)?;
    let codec = model_source::load_codec(
        &ckpt,
        model_source::codec_precision(&args.model, precision, false),
    )?;
    drop(ckpt);
    rill_kernels::huge_pages::collapse_resident();
    let style_pool = Pool::new(args.model.thread_count()?);
    eprintln!(
        "{} kernels, {}",
        rill_kernels::isa::active(),
        pools.describe()
    );

    let bar = progress::rows_bar(todo.len() as u64);
    let say = |line: String| {
        if bar.is_hidden() {
            eprintln!("{line}");
        } else {
            bar.println(line);
        }
    };
    let start = Instant::now();
    let mut nonfinite = 0usize;
    for row in &todo {
        let label = row
            .prompt
            .as_deref()
            .map(|p| format!("{p:?}"))
            .unwrap_or_else(|| "(style codes)".into());
        bar.set_message(format!("row {}: {}", row.index, cut(&label)));
        let codes = match (row.codes, &style_model) {
            (Some(c), _) => c,
            (None, Some(m)) => prompt_codes(m, &args.musiccoca, row, &style_pool)?,
            (None, None) => unreachable_codes(row)?,
        };
        let out = wav_path(&args.out, row.index);
        let seed = row.seed(args.seed);
        let t = Instant::now();
        let clip = Clip {
            seed,
            cond: args.conditioning(Some(codes)),
            sampling,
            frames,
        };
        nonfinite += render(&lm, &codec, &pools, &clip, &out)
            .with_context(|| format!("row {} ({})", row.index, out.display()))?;
        let secs = t.elapsed().as_secs_f64();
        say(format!(
            "row {}: wrote {} (seed {seed}, style {}) in {secs:.1} s, RTF {:.2}",
            row.index,
            out.display(),
            style::codes_line(&codes),
            secs / (frames as f64 * 0.04)
        ));
        bar.inc(1);
    }
    bar.finish_and_clear();
    if nonfinite > 0 {
        eprintln!("warning: {nonfinite} non-finite audio samples were replaced by silence");
    }
    eprintln!(
        "done: {} generated, {} skipped{shard_note}, {:.1} s of audio each, in {:.1} s; WAVs in {}",
        todo.len(),
        done.len(),
        frames as f64 * 0.04,
        start.elapsed().as_secs_f64(),
        args.out.display()
    );
    Ok(())
}

/// A row's codes when no MusicCoCa was loaded: cannot happen (it is loaded when
/// any row needs it), an error rather than a panic all the same.
fn unreachable_codes(row: &Row) -> Result<[u16; 12]> {
    anyhow::bail!("row {}: no style codes and MusicCoCa not loaded", row.index)
}

/// The 12 codes of a row's text prompt (upstream maps it toward audio, as
/// `embed_style(prompt, use_mapper=True)`).
fn prompt_codes(
    model: &StyleModel,
    args: &StyleModelArgs,
    row: &Row,
    pool: &Pool,
) -> Result<[u16; 12]> {
    let text = row.prompt.clone().unwrap_or_default();
    let inputs = [(Input::Text(text), 1.0f32)];
    let emb = style::embed_all(model, &inputs, args.mapper(), pool)
        .with_context(|| format!("row {}: the prompt's style", row.index))?;
    let members: Vec<(&[f32], f32)> = emb.iter().map(|e| (e.as_slice(), 1.0)).collect();
    Ok(model.tokenize_blend(&members, pool)?.tokens)
}

/// What one row generates.
struct Clip {
    seed: u64,
    cond: Conditioning,
    sampling: SamplingParams,
    frames: usize,
}

/// Generates one clip in a fresh stream (the model shared) into `out`, written
/// atomically; returns the non-finite samples replaced by silence.
fn render(
    lm: &std::sync::Arc<rill_mrt2::Mrt2>,
    codec: &std::sync::Arc<rill_spectrostream::Codec>,
    pools: &StagePools,
    clip: &Clip,
    out: &Path,
) -> Result<usize> {
    let mut wav = WavOut::create(out)?;
    let mut pipe = FramePipeline::new(lm.clone(), Some(codec.clone()), clip.seed, pools);
    pipe.session_mut()
        .set_conditioning(&clip.cond, pools.lm())?;
    pipe.session_mut().set_sampling(clip.sampling)?;
    let mut nonfinite = 0;
    for _ in 0..clip.frames {
        let r = pipe.step(None, pools);
        if r.decoded {
            nonfinite += r.nonfinite;
            wav.write(pipe.pcm())?;
        }
    }
    if let Some(r) = pipe.flush(pools) {
        if r.decoded {
            nonfinite += r.nonfinite;
            wav.write(pipe.pcm())?;
        }
    }
    wav.finish()?;
    Ok(nonfinite)
}

/// The start of a long label, for the bar.
fn cut(t: &str) -> String {
    match t.char_indices().nth(40) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_string(),
    }
}
