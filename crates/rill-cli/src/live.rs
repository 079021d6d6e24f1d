//! Shared set-up of the live commands (`play`, `serve`): load the weights, start
//! the streaming engine, report honestly whether this machine keeps up.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use rill_mrt2::Precision;
use rill_stream::{Control, Engine, EngineConfig};

use crate::args::{ControlArgs, ModelArgs, MusicArgs};
use crate::model_source;

/// The flags of the live commands (`play`, `soak`): the music model and its
/// controls, and how far generation may run ahead.
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    #[command(flatten)]
    pub music: MusicArgs,

    /// How far generation may run ahead of playback, in ms (rounded to 40 ms
    /// frames; 40 to 10000).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(40..=10_000))]
    pub buffer_ms: u32,

    /// Play even when the start-up measurement says this machine cannot keep up
    /// (the audio will have gaps); without it such a stream is refused.
    #[arg(long)]
    pub allow_stutter: bool,
}

impl LiveArgs {
    pub fn buffer_frames(&self) -> usize {
        ((self.buffer_ms as f32 / 40.0).round() as usize).max(1)
    }
}

/// Loaded weights plus a short description for status pages.
pub struct Loaded {
    pub engine: Engine,
    pub info: serde_json::Value,
    /// When the weights were in memory, before the engine's calibration: the
    /// start of "load to first audio".
    pub weights_ready: Instant,
}

/// Loads the model and codec and starts the engine (measuring real-time capacity).
/// How many streams the engine admits.
#[derive(Debug, Clone, Copy)]
pub enum Admission {
    /// As many as the calibration measures this CPU sustains, at most this many.
    Measured(Option<usize>),
    /// Exactly this many, without measuring (`rill serve --capacity`: operators
    /// who know their hardware, and tests that need a fixed capacity).
    Fixed(usize),
}

pub fn start_engine(
    model: &ModelArgs,
    precision: Option<Precision>,
    admission: Admission,
    allow_stutter: bool,
) -> Result<Loaded> {
    let (max_sessions, calibration_frames) = match admission {
        Admission::Measured(max) => (max, 8),
        Admission::Fixed(n) => (Some(n.max(1)), 0),
    };
    let path = model_source::resolve(model)?;
    let (ckpt, kind) = model_source::open(&path)?;
    let (ckpt, precision) = live_weights(ckpt, precision)?;
    let lm = model_source::load_lm(&ckpt, precision)?;
    let codec_precision = model_source::codec_precision(model, precision, true);
    let codec = model_source::load_codec(&ckpt, codec_precision)?;
    drop(ckpt);
    rill_kernels::huge_pages::collapse_resident();
    let weights_ready = Instant::now();
    let (stages, threads, lm_threads) = model.stage_plan()?;
    if calibration_frames > 0 {
        eprintln!(
            "measuring real-time capacity ({} threads, {}, {} kernels)…",
            threads,
            stages.name(),
            rill_kernels::isa::active()
        );
    }
    let engine = Engine::start(
        lm,
        Arc::clone(&codec),
        EngineConfig {
            threads,
            stages,
            lm_threads,
            max_sessions,
            calibration_frames,
            allow_stutter,
        },
    )
    .context("starting the streaming engine")?;
    // Loading (f32 → int8 conversion, packing) and the calibration stream leave
    // tens of MB of freed temporaries resident; hand them back before serving.
    rill_stream::process::release_free_memory();
    let rtf = engine.measured_rtf();
    if calibration_frames == 0 {
        eprintln!(
            "admitting {} stream(s) at once (--capacity; not measured)",
            engine.capacity()
        );
    } else if rtf > 1.0 {
        eprintln!(
            "warning: this machine generates one stream at {:.2}× real time (real-time factor {rtf:.2}); \
             playback would stutter. {} {}",
            1.0 / rtf,
            faster_advice(precision, codec_precision),
            if allow_stutter {
                "Admitting streams anyway (--allow-stutter)."
            } else {
                "No music stream is admitted (--allow-stutter admits them anyway)."
            }
        );
    } else {
        eprintln!(
            "one stream needs {:.0}% of this machine (real-time factor {rtf:.2}); up to {} stream(s) at once",
            rtf * 100.0,
            engine.capacity()
        );
    }
    Ok(Loaded {
        engine,
        info: serde_json::json!({
            "model": kind.name(),
            "precision": precision.name(),
            "codec": codec_precision.describe(),
            // The page says so: random weights make noise, not music.
            "random_weights": model.random_weights.is_some(),
        }),
        weights_ready,
    })
}

/// The checkpoint and precision live use runs: `--precision` or a pre-quantised
/// file's own as given; a full-precision checkpoint as a cached
/// [`rill_stream::live::LIVE_PRECISION`] copy (made once, said on stderr), or
/// quantised at load if the copy cannot be written (same weights).
fn live_weights(
    ckpt: rill_checkpoint::Checkpoint,
    explicit: Option<Precision>,
) -> Result<(rill_checkpoint::Checkpoint, Precision)> {
    use rill_stream::live::{LiveSource, LIVE_PRECISION as LIVE};
    let source = ckpt.path().to_path_buf();
    let (ckpt, precision, how) = rill_stream::live::live_weights(ckpt, explicit, &mut |copy| {
        eprintln!(
            "quantising {} to {LIVE} once for live use (real time; `--precision f32` runs it as is), \
             keeping the copy at {}…",
            source.display(),
            copy.display()
        )
    })?;
    match how {
        LiveSource::AsGiven => {}
        LiveSource::Copy(copy) => match copy.made_in {
            Some(s) => eprintln!("quantised in {s:.1} s"),
            None => eprintln!(
                "using the {LIVE} copy of {} made earlier ({}; `--precision f32` runs the original)",
                source.display(),
                copy.path.display()
            ),
        },
        LiveSource::QuantisedAtLoad(e) => eprintln!(
            "warning: cannot keep a {LIVE} copy in the cache ({e}); quantising at load instead"
        ),
    }
    Ok((ckpt, precision))
}

/// What to try when the machine is too slow, never the settings already in use.
fn faster_advice(p: Precision, codec: rill_spectrostream::CodecPrecision) -> String {
    let mut tips = Vec::new();
    match p {
        Precision::F32 | Precision::Bf16 | Precision::MlxInt8 => tips.push("--precision int8"),
        Precision::Int8 | Precision::Int4 => tips.push("--precision mixed"),
        Precision::Lut4 | Precision::Mixed => {}
    }
    if codec == rill_spectrostream::CodecPrecision::F32 {
        tips.push("--codec i16");
    }
    if tips.is_empty() {
        "These are rill's fastest settings; this CPU is too slow for real time.".into()
    } else {
        format!(
            "Try {} (see rill bench), or a faster machine.",
            tips.join(" and ")
        )
    }
}

/// Checks `--prompt` / `--style-audio`, finds the checkpoint and turns the prompts
/// into style codes (before the engine starts); returns the checkpoint's path.
pub fn resolve_style(music: &mut crate::args::MusicArgs) -> Result<std::path::PathBuf> {
    music.controls.style.inputs()?;
    let checkpoint = crate::model_source::resolve(&music.model)?;
    music.controls.resolve_style(&music.model, &checkpoint)?;
    Ok(checkpoint)
}

/// The controls of `rill generate`'s flags, as stream controls.
pub fn initial_controls(c: &ControlArgs) -> Result<Vec<Control>> {
    let cond = c.conditioning()?;
    let p = c.sampling()?;
    let mut v = vec![
        Control::Style(cond.style),
        Control::StyleLevels(cond.style_levels),
        Control::Drums(cond.drums),
        Control::CfgMusiccoca(cond.cfg.musiccoca),
        Control::CfgNotes(cond.cfg.notes),
        Control::CfgDrums(cond.cfg.drums),
        Control::Temperature(p.temperature),
        Control::TopK(p.top_k),
    ];
    if let Some(n) = c.held_notes()? {
        v.push(Control::HeldNotes(n));
    }
    Ok(v)
}
