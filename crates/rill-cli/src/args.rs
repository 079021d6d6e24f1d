//! Argument groups shared by several commands and their validation (whose
//! errors are usage errors: exit status 2).

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::usage::usage_bail;
use clap::{Args, ValueEnum};
use rill_mrt2::conditioning::{Conditioning, StyleLevels};
use rill_mrt2::sampler::{SamplingParams, VOCAB};
use rill_mrt2::Precision;
use rill_spectrostream::CodecPrecision;
use rill_stream::{StagePools, Stages};

/// Where the weights come from and how they run.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// MRT2 checkpoint (`mrt2_small.safetensors` or `mrt2_base.safetensors`).
    /// Default: $RILL_CHECKPOINT, then $MAGENTA_HOME/checkpoints/mrt2_small.safetensors,
    /// then ~/Documents/Magenta/magenta-rt-v2/checkpoints/mrt2_small.safetensors.
    #[arg(long, value_name = "PATH")]
    pub checkpoint: Option<PathBuf>,

    /// Use a random-weight mrt2_small checkpoint synthesised from this weights seed
    /// instead of real weights (a smoke test: the audio is not music).
    #[arg(long, value_name = "SEED", num_args = 0..=1, default_missing_value = "0", conflicts_with = "checkpoint")]
    pub random_weights: Option<u64>,

    /// Codec (SpectroStream decoder) weights: f32 (exact, ≈107 dB audio SNR vs
    /// upstream), i16 (int16 weights with per-channel scales for the
    /// bandwidth-bound early layers, ≈86 dB, faster), f16 (the same layers in
    /// IEEE half, ≈64 dB) or fp16 (every weight and activation in IEEE half with
    /// the two-stage rescale, ≈55 dB: the numerics of fp16 hardware, on the f32
    /// kernels, not faster). Default: f32 for generate and decode; i16 for play,
    /// serve and bench (live use) and with --precision mixed.
    #[arg(long, value_parser = names_parser(&CodecPrecision::ALL, CodecPrecision::name))]
    pub codec: Option<CodecPrecision>,

    /// Worker threads (default: $RILL_THREADS or the number of cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,

    /// How the language model and the codec share the threads: `two` runs the
    /// language model of frame n+1 while the codec decodes frame n (bit-identical
    /// output; audio comes out one frame, 40 ms, later), `one` runs them one after
    /// the other. Default: two with 2 or more threads.
    #[arg(long, value_enum)]
    pub stages: Option<StagesArg>,

    /// Threads of the language-model stage with --stages two (default: half of
    /// --threads, at least 1; the codec gets the rest).
    #[arg(long, value_name = "N")]
    pub lm_threads: Option<usize>,
}

/// Longest generation or stream accepted, in seconds (a day): bounds every
/// allocation sized by a frame count, so an absurd value is one error line.
pub const MAX_SECONDS: f64 = 86_400.0;
/// [`MAX_SECONDS`] in 40 ms frames.
pub const MAX_FRAMES: u64 = 25 * 86_400;

/// Worker threads: `explicit` (a --threads flag), else $RILL_THREADS, else the core
/// count; 1..=MAX_THREADS or an error ([`rill_kernels::pool::thread_count`]).
pub fn thread_count(explicit: Option<usize>) -> Result<usize> {
    rill_kernels::pool::thread_count(explicit).map_err(|e| crate::usage::usage(e.to_string()))
}

impl ModelArgs {
    /// Total worker threads: --threads, else $RILL_THREADS, else the core count.
    pub fn thread_count(&self) -> Result<usize> {
        thread_count(self.threads)
    }

    /// The stage arrangement and its thread pools.
    pub fn pools(&self) -> Result<StagePools> {
        let (stages, threads, lm_threads) = self.stage_plan()?;
        Ok(StagePools::new(stages, threads, lm_threads))
    }

    /// (stages, total threads, LM threads) as validated from the flags.
    pub fn stage_plan(&self) -> Result<(Stages, usize, Option<usize>)> {
        let threads = self.thread_count()?;
        let stages = match self.stages {
            Some(StagesArg::One) => Stages::Sequential,
            Some(StagesArg::Two) => Stages::TwoStage,
            None => Stages::auto(threads),
        };
        if let Some(n) = self.lm_threads {
            if stages != Stages::TwoStage {
                usage_bail!("--lm-threads needs --stages two");
            }
            if n == 0 || n >= threads.max(2) {
                usage_bail!("--lm-threads must leave the codec at least one of the {threads} threads, got {n}");
            }
        }
        Ok((stages, threads, self.lm_threads))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StagesArg {
    One,
    Two,
}

/// The music model, its precision and its controls: the flags `generate`,
/// `play` and `soak` share (`serve` takes the model and precision only, its
/// controls come from the browser).
#[derive(Debug, Clone, Args)]
pub struct MusicArgs {
    #[command(flatten)]
    pub model: ModelArgs,

    #[command(flatten)]
    pub precision: PrecisionArgs,

    #[command(flatten)]
    pub controls: ControlArgs,
}

/// The music model's `--precision`.
#[derive(Debug, Clone, Args)]
pub struct PrecisionArgs {
    /// Weight precision of the language model: f32 (parity with upstream's fp32
    /// reference), bf16 (weights rounded like upstream's shipped model, f32 math),
    /// mlx-int8 (upstream's default app exactly: bf16 weights quantised by MLX g64
    /// 8-bit, embeddings included, with MLX's CPU bf16 arithmetic — upstream's int8
    /// tokens bit for bit; ≈2.3× slower than int8, not real time on 2 cores), int8
    /// (rill's fast int8: the same MLX g64 quantiser on the f32 weights with f32
    /// math, closer to f32 than upstream's int8), int4 (affine g32), lut4 (4-bit
    /// palettes per 16 rows) or mixed (temporal 4-bit palettes, the rest int8).
    /// Default: the precision a pre-quantised file (`rill quantize`) was made for;
    /// else f32 for generate and batch, and int8 for play, serve and soak (real
    /// time; a copy quantised once and kept in the user's cache directory).
    #[arg(long, value_parser = mrt2_precision_parser())]
    pub precision: Option<Precision>,
}

/// Parses one of `all` by its `name`, listing every name in `--help` and in the
/// errors: how a flag takes a library's enum.
pub fn names_parser<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(T) -> &'static str,
) -> NamesParser<T> {
    NamesParser {
        all,
        name,
        elsewhere: |_| None,
    }
}

/// [`names_parser`] of the music model's precisions: a name only another model
/// takes (Magpie's f16) is refused with where it applies.
pub fn mrt2_precision_parser() -> NamesParser<Precision> {
    NamesParser {
        all: &Precision::ALL,
        name: Precision::name,
        elsewhere: |s| {
            rill_magpie::Precision::from_name(s).map(|_| {
                format!(
                    "--precision {s} is for Magpie's linear layers (`rill speak --precision {s}`, \
                     `rill bench --model magpie`); the music model takes {}",
                    Precision::ALL.map(Precision::name).join(", ")
                )
            })
        },
    }
}

/// A value parser of a library enum by name (see [`names_parser`]).
#[derive(Clone)]
pub struct NamesParser<T: 'static> {
    all: &'static [T],
    name: fn(T) -> &'static str,
    /// The error for a name that belongs elsewhere, if it does.
    elsewhere: fn(&str) -> Option<String>,
}

impl<T: Copy + Send + Sync + 'static> clap::builder::TypedValueParser for NamesParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        use clap::builder::PossibleValuesParser;
        if let Some(&v) = self.all.iter().find(|&&v| value == (self.name)(v)) {
            return Ok(v);
        }
        if let Some(msg) = value.to_str().and_then(self.elsewhere) {
            return Err(cmd.clone().error(clap::error::ErrorKind::InvalidValue, msg));
        }
        // clap's own error: the value, the flag and every possible value.
        let names = self.all.iter().map(|&v| (self.name)(v));
        match PossibleValuesParser::new(names).parse_ref(cmd, arg, value) {
            Err(e) => Err(e),
            Ok(s) => Err(cmd.clone().error(
                clap::error::ErrorKind::InvalidValue,
                format!("{s:?} is not a value of this flag"),
            )),
        }
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.all
                .iter()
                .map(|&v| clap::builder::PossibleValue::new((self.name)(v))),
        ))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

/// Style, notes, drums, CFG and sampling controls (defaults = upstream Python's).
/// The values are options so that `generate --resume` can tell a flag given from
/// its default: there the state file's value is the default.
#[derive(Debug, Clone, Args)]
pub struct ControlArgs {
    /// Sampler seed [default: 42, upstream's key].
    #[arg(long)]
    pub seed: Option<u64>,

    /// 12 MusicCoCa style codes 0..1023, comma-separated (default: masked, no style;
    /// `rill style PROMPT` prints a prompt's codes).
    #[arg(long, value_name = "C0,...,C11")]
    pub style_codes: Option<String>,

    #[command(flatten)]
    pub style: crate::style::StylePromptArgs,

    /// The codes `--prompt` / `--style-audio` resolved to (set by
    /// [`ControlArgs::resolve_style`]).
    #[arg(skip)]
    pub resolved_style: Option<[u16; 12]>,

    /// How many MusicCoCa style levels steer: 12 (all, as upstream's Python) or 6
    /// (the coarsest, levels 6–11 masked, as upstream's C++ engine) [default: 12].
    #[arg(long, value_name = "6|12", value_parser = parse_style_levels)]
    pub style_levels: Option<StyleLevels>,

    /// MIDI pitches 0..127 held on for every frame, comma-separated; other pitches
    /// are left to the model (masked).
    #[arg(long, value_name = "P,P,...")]
    pub notes: Option<String>,

    /// Drum channel: on or off (default: masked, the model decides).
    #[arg(long, value_enum)]
    pub drums: Option<OnOff>,

    /// Sampling temperature (scales the Gumbel noise; 0 = greedy) [default: 1.3].
    #[arg(long, allow_negative_numbers = true)]
    pub temperature: Option<f32>,

    /// Keep only the K most likely tokens per step (1..=12294; ≥ 1024 keeps all) [default: 40].
    #[arg(long)]
    pub top_k: Option<usize>,

    /// Classifier-free guidance of the style (binned to 0.2 steps in -1..7, as upstream) [default: 3].
    #[arg(long, allow_negative_numbers = true)]
    pub cfg_musiccoca: Option<f64>,

    /// Classifier-free guidance of the notes (binned to 0.2 steps in -1..7) [default: 1].
    #[arg(long, allow_negative_numbers = true)]
    pub cfg_notes: Option<f64>,

    /// Classifier-free guidance of the drums (binned to whole steps in -1..7) [default: 1].
    #[arg(long, allow_negative_numbers = true)]
    pub cfg_drums: Option<f64>,
}

/// Parses `--style-codes`: exactly 12 integers 0..1023.
pub fn parse_style_codes(s: &str) -> Result<[u16; 12]> {
    let parts: Vec<&str> = s
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if parts.len() != 12 {
        usage_bail!(
            "--style-codes needs exactly 12 comma-separated codes (MusicCoCa RVQ levels 0..11), got {}",
            parts.len()
        );
    }
    let mut out = [0u16; 12];
    for (i, p) in parts.iter().enumerate() {
        let v: i64 = p
            .parse()
            .with_context(|| format!("--style-codes: {p:?} (code {i}) is not an integer"))?;
        if !(0..=1023).contains(&v) {
            usage_bail!("--style-codes: code {i} is {v}, but codes must be in 0..1023");
        }
        out[i] = v as u16;
    }
    Ok(out)
}

/// Parses `--style-levels`: 6 or 12.
pub fn parse_style_levels(s: &str) -> std::result::Result<StyleLevels, String> {
    s.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| StyleLevels::from_count(n).ok())
        .ok_or_else(|| {
            "the number of MusicCoCa style levels fed is 6 (upstream's C++ engine) or 12 (upstream's Python)".to_string()
        })
}

/// Parses `--notes`: MIDI pitches 0..127.
pub fn parse_notes(s: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let v: i64 = p
            .parse()
            .with_context(|| format!("--notes: {p:?} is not a MIDI pitch number"))?;
        if !(0..=127).contains(&v) {
            usage_bail!("--notes: pitch {v} is outside the MIDI range 0..127");
        }
        out.push(v as u8);
    }
    Ok(out)
}

impl ControlArgs {
    /// `--seed`, or upstream's default key 42.
    pub fn seed(&self) -> u64 {
        self.seed.unwrap_or(rill_mrt2::DEFAULT_SEED)
    }

    /// Turns `--prompt` / `--style-audio` into style codes with MusicCoCa (found
    /// beside `checkpoint` unless `--musiccoca` names it); nothing without them.
    pub fn resolve_style(&mut self, model: &ModelArgs, checkpoint: &std::path::Path) -> Result<()> {
        if self.style.any() {
            self.resolved_style =
                self.style
                    .resolve(Some(checkpoint), model.random_weights, model.threads)?;
        }
        Ok(())
    }

    /// The `--notes` pitches, if given.
    pub fn held_notes(&self) -> Result<Option<Vec<u8>>> {
        self.notes.as_deref().map(parse_notes).transpose()
    }

    /// The controls from the flags over the defaults.
    pub fn conditioning(&self) -> Result<Conditioning> {
        self.conditioning_over(&Conditioning::default())
    }

    /// The controls with every flag given replacing its part of `base` (the
    /// pianoroll only when --notes is given).
    pub fn conditioning_over(&self, base: &Conditioning) -> Result<Conditioning> {
        let mut c = base.clone();
        for (name, v, dst) in [
            ("--cfg-musiccoca", self.cfg_musiccoca, &mut c.cfg.musiccoca),
            ("--cfg-notes", self.cfg_notes, &mut c.cfg.notes),
            ("--cfg-drums", self.cfg_drums, &mut c.cfg.drums),
        ] {
            if let Some(v) = v {
                if !v.is_finite() {
                    usage_bail!("{name} must be a finite number, got {v}");
                }
                *dst = v;
            }
        }
        if let Some(s) = self.style_codes.as_deref() {
            c.style = Some(parse_style_codes(s)?);
        }
        if let Some(codes) = self.resolved_style {
            c.style = Some(codes);
        }
        if let Some(l) = self.style_levels {
            c.style_levels = l;
        }
        if let Some(d) = self.drums {
            c.drums = Some(d == OnOff::On);
        }
        if let Some(n) = self.held_notes()? {
            c = c.with_held_notes(&n)?;
        }
        Ok(c)
    }

    /// The sampling settings from the flags over the defaults.
    pub fn sampling(&self) -> Result<SamplingParams> {
        self.sampling_over(SamplingParams::default())
    }

    /// The sampling settings with every flag given replacing its part of `base`.
    pub fn sampling_over(&self, base: SamplingParams) -> Result<SamplingParams> {
        let p = SamplingParams {
            temperature: self.temperature.unwrap_or(base.temperature),
            top_k: self.top_k.unwrap_or(base.top_k),
        };
        if !p.temperature.is_finite() || p.temperature < 0.0 {
            usage_bail!(
                "--temperature must be a finite number ≥ 0, got {}",
                p.temperature
            );
        }
        if !(1..=VOCAB).contains(&p.top_k) {
            usage_bail!("--top-k must be in 1..={VOCAB}, got {}", p.top_k);
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn style_codes_validation() {
        assert!(parse_style_codes("1,2,3").is_err());
        assert!(parse_style_codes("0,0,0,0,0,0,0,0,0,0,0,1024").is_err());
        assert!(parse_style_codes("0,0,0,0,0,0,0,0,0,0,0,x").is_err());
        assert_eq!(
            parse_style_codes("325, 98,979,657,802,453,475,622,729,934,567,782").unwrap()[1],
            98
        );
    }

    #[test]
    fn style_levels_are_6_or_12() {
        assert_eq!(parse_style_levels("6"), Ok(StyleLevels::Coarse6));
        assert_eq!(parse_style_levels("12"), Ok(StyleLevels::All12));
        for bad in ["0", "7", "11", "13", "-6", "six", ""] {
            assert!(parse_style_levels(bad).unwrap_err().contains("6"), "{bad}");
        }
    }

    #[test]
    fn notes_validation() {
        assert_eq!(parse_notes("60,64,67").unwrap(), vec![60, 64, 67]);
        assert!(parse_notes("128").is_err());
        assert!(parse_notes("-1").is_err());
        assert!(parse_notes("C4").is_err());
    }
}
