//! `rill generate`: controls → tokens → audio, frame by frame as upstream streams it.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use rill_io::{Array, Data};
use rill_mrt2::conditioning::Conditioning;
use rill_mrt2::sampler::{self, SamplingParams};
use rill_mrt2::{FrameTrace, LEVELS};
use rill_stream::{FramePipeline, NoteTracker, Snapshot, StepReport};

use crate::args::{MusicArgs, MAX_FRAMES, MAX_SECONDS};
use crate::dump::Dump;
use crate::model_source;
use crate::output::{PendingFile, WavOut};
use crate::progress;
use crate::stats::Timings;
use crate::tokens::read_tokens;
use crate::usage::usage_bail;

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(flatten)]
    pub music: MusicArgs,

    /// Number of 40 ms frames to generate (25 per second).
    #[arg(long, conflicts_with = "seconds", value_parser = clap::value_parser!(u64).range(1..=MAX_FRAMES))]
    pub frames: Option<u64>,

    /// Seconds of audio to generate (frames = ⌊25·S⌋ as upstream).
    #[arg(long)]
    pub seconds: Option<f64>,

    /// Output WAV file (48 kHz, 16-bit stereo; `-`: standard output, written when
    /// the generation ends). The first 40 ms are silent, as
    /// upstream's streaming decoder emits them (its lookahead latency,
    /// rill_spectrostream::OUTPUT_DELAY; not with --resume).
    /// Default when no other output is asked for: rill_output.wav (never
    /// overwriting an existing default file).
    #[arg(short = 'o', long, value_name = "FILE.wav")]
    pub output: Option<PathBuf>,

    /// Teacher-force these tokens ([N,12] int32 .npy of unique ids, level k in
    /// 6+1024k..6+1024k+1023) while computing every frame's logits along that path.
    #[arg(long, value_name = "FILE.npy")]
    pub force_tokens: Option<PathBuf>,

    /// Write the generated tokens as a [N,12] int32 .npy.
    #[arg(long, value_name = "FILE.npy")]
    pub tokens_out: Option<PathBuf>,

    /// Write intermediates as .npz with the oracle's names: tokens, encoder_out,
    /// temporal_in, temporal_out, logits [N,12,12294] (soft-capped sampler input;
    /// ids outside the step's level are 0), logits_level, gumbel_level, rng_key,
    /// cond_tokens and, when audio is produced, decoder_stft, audio_float, audio_int16.
    #[arg(long, value_name = "FILE.npz")]
    pub dump: Option<PathBuf>,

    /// Only generate tokens (no audio); implied when only --tokens-out is given.
    #[arg(long)]
    pub no_audio: bool,

    /// After the last frame, write the whole stream state (language model, codec,
    /// controls, sampling, note state) to this file, for --resume. The codec runs
    /// even when no audio is written, since its state is part of the file.
    #[arg(long, value_name = "FILE.state")]
    pub save_state: Option<PathBuf>,

    /// Continue the stream saved by --save-state: the next --frames/--seconds
    /// frames, bit-identical to one longer run. The saved controls, sampling and
    /// sampler key are the defaults; each control flag given replaces its value
    /// (--notes the held set, --seed a new sampler key from that seed). The file
    /// must come from the same checkpoint and --precision; use the same --codec
    /// for identical audio. The WAV holds the new frames as the decoder emits them:
    /// no silent first block (it ends the saved run's last frame), so the saved
    /// run's WAV followed by this one equals the longer run's WAV.
    #[arg(long, value_name = "FILE.state")]
    pub resume: Option<PathBuf>,

    #[command(flatten)]
    pub continuation: crate::continuation::ContinueArgs,
}

fn default_output() -> PathBuf {
    let base = PathBuf::from("rill_output.wav");
    if !base.exists() {
        return base;
    }
    (2..)
        .map(|i| PathBuf::from(format!("rill_output_{i}.wav")))
        .find(|p| !p.exists())
        .unwrap_or(base)
}

pub fn run(mut args: GenerateArgs) -> Result<()> {
    // Checked once before any work; applied over the resumed state further down.
    args.music.controls.conditioning()?;
    args.music.controls.style.inputs()?;
    args.music.controls.sampling()?;
    let clip = args.continuation.load_clip()?;
    let forced = match &args.force_tokens {
        Some(p) => Some(read_tokens(p)?),
        None => None,
    };
    let frames = match (args.frames, args.seconds, &forced) {
        (Some(0), _, _) => usage_bail!("--frames must be at least 1"),
        (Some(n), _, Some(f)) if n as usize > f.len() => {
            usage_bail!(
                "--frames {n} is more than the {} frames in --force-tokens",
                f.len()
            )
        }
        (Some(n), _, _) => n as usize,
        (None, Some(s), _) => {
            if !(s.is_finite() && s > 0.0 && s <= MAX_SECONDS) {
                usage_bail!("--seconds must be a number in (0, {MAX_SECONDS}] (a day), got {s}");
            }
            let n = (s * 25.0).floor() as usize;
            if n == 0 {
                usage_bail!("--seconds {s} is shorter than one 40 ms frame");
            }
            n
        }
        (None, None, Some(f)) => f.len(),
        (None, None, None) => usage_bail!("say how much to generate: --frames N or --seconds S"),
    };
    if args.no_audio && args.save_state.is_some() {
        usage_bail!(
            "--no-audio and --save-state contradict each other: the state includes the codec's"
        );
    }
    if args.no_audio && args.output.is_some() {
        usage_bail!("--no-audio and -o contradict each other");
    }
    // A WAV is written when asked for with -o, or by default when no other output
    // is requested; the codec also runs to fill --dump's audio arrays.
    let wav_path = match (
        &args.output,
        args.no_audio || args.tokens_out.is_some() || args.dump.is_some(),
    ) {
        (Some(p), _) => Some(p.clone()),
        (None, false) => Some(default_output()),
        (None, true) => None,
    };
    let want_audio = wav_path.is_some() || (args.dump.is_some() && !args.no_audio);
    // The codec steps whenever its state is saved, and is loaded to check a resumed one.
    let run_codec = want_audio || args.save_state.is_some();

    // Reserve every output before any work, so a bad path fails in a second.
    let mut wav = wav_path.as_deref().map(WavOut::create).transpose()?;
    let tokens_out = args
        .tokens_out
        .as_deref()
        .map(PendingFile::reserve)
        .transpose()?;
    let dump_out = args.dump.as_deref().map(PendingFile::reserve).transpose()?;
    let state_out = args
        .save_state
        .as_deref()
        .map(PendingFile::reserve)
        .transpose()?;

    let path = model_source::resolve(&args.music.model)?;
    args.music
        .controls
        .resolve_style(&args.music.model, &path)?;
    let pools = args.music.model.pools()?;
    let (ckpt, _) = model_source::open(&path)?;
    let precision = model_source::precision(args.music.precision.precision, &ckpt)?;
    let lm = model_source::load_lm(&ckpt, precision)?;
    let codec = if run_codec || args.resume.is_some() {
        Some(model_source::load_codec(
            &ckpt,
            model_source::codec_precision(&args.music.model, precision, false),
        )?)
    } else {
        None
    };
    let encoder = clip
        .as_ref()
        .map(|_| {
            args.continuation
                .load_encoder(&args.music.model, &path, &ckpt)
        })
        .transpose()?;
    drop(ckpt);
    rill_kernels::huge_pages::collapse_resident();
    let resumed = match (&args.resume, &codec) {
        (Some(p), Some(c)) => Some(Snapshot::load(p, &lm, c)?),
        _ => None,
    };
    let codec = codec.filter(|_| run_codec);
    eprintln!(
        "{} kernels, {}",
        rill_kernels::isa::active(),
        pools.describe()
    );

    let mut pipe = FramePipeline::new(lm.clone(), codec, args.music.controls.seed(), &pools);
    // The controls: the defaults or the resumed state's, each flag given replacing
    // its value. The note state steps as a live stream's does (a held chord is
    // "on" in every frame).
    let (mut notes, base, base_sampling) = match &resumed {
        Some(s) => (s.notes.clone(), s.conditioning(), s.sampling),
        None => (
            NoteTracker::default(),
            Conditioning::default(),
            SamplingParams::default(),
        ),
    };
    if let Some(held) = args.music.controls.held_notes()? {
        notes.set_held(&held)?;
    }
    let mut cond = args.music.controls.conditioning_over(&base)?;
    cond.notes = notes.values();
    if let Some(s) = &resumed {
        pipe.restore(s)?;
        if let Some(seed) = args.music.controls.seed {
            pipe.session_mut().set_key(sampler::key(seed));
        }
    }
    pipe.session_mut().set_conditioning(&cond, pools.lm())?;
    pipe.session_mut()
        .set_sampling(args.music.controls.sampling_over(base_sampling)?)?;
    pipe.keep_stft(args.dump.is_some());
    if let (Some(clip), Some(enc)) = (&clip, encoder) {
        let keep = args.continuation.keep_style_during_prefill;
        crate::continuation::prefill(&mut pipe, &enc, clip, keep, &pools)?;
    }

    let mut dump = args
        .dump
        .as_ref()
        .map(|_| Dump::new(&lm, pipe.session().conditioning_tokens()));
    let mut trace = FrameTrace::default();
    let mut all_tokens: Vec<[u32; LEVELS]> = Vec::with_capacity(frames);
    let mut nonfinite = 0usize;
    let mut written = 0usize;
    let mut timings = Timings::default();

    let bar = progress::frames_bar(frames as u64, "generating");
    let start = Instant::now();
    // Writes the frame the pipeline just decoded (in two-stage mode one step late).
    let mut emit = |pipe: &FramePipeline,
                    r: &StepReport,
                    dump: &mut Option<Dump>,
                    timings: &mut Timings|
     -> Result<()> {
        if r.decoded {
            written += 1;
            nonfinite += r.nonfinite;
            timings.codec.push(r.codec_time);
            if let Some(w) = wav.as_mut() {
                w.write(pipe.pcm())?;
            }
            if let Some(d) = dump.as_mut() {
                d.push_audio(pipe.stft(), pipe.audio(), pipe.pcm());
            }
        }
        Ok(())
    };
    // A live stream's state can hold one frame the LM made and the codec has not
    // decoded (two stages); it comes first. (--save-state writes none.)
    if let Some(r) = pipe.flush(&pools) {
        emit(&pipe, &r, &mut dump, &mut timings)?;
    }
    for n in 0..frames {
        if notes.values() != cond.notes {
            cond.notes = notes.values();
            pipe.session_mut().set_conditioning(&cond, pools.lm())?;
        }
        let tr = dump.is_some().then_some(&mut trace);
        let r = match &forced {
            Some(f) => pipe
                .step_forced(&f[n], tr, &pools)
                .with_context(|| format!("--force-tokens row {n}"))?,
            None => pipe.step(tr, &pools),
        };
        notes.advance();
        timings.lm.push(r.lm_time);
        all_tokens.push(r.tokens);
        emit(&pipe, &r, &mut dump, &mut timings)?;
        if let Some(d) = dump.as_mut() {
            d.push_frame(&r.tokens, &trace);
        }
        bar.inc(1);
        if n % 5 == 4 {
            let rtf = start.elapsed().as_secs_f64() / ((n + 1) as f64 * 0.04);
            bar.set_message(format!("RTF {rtf:.2}"));
        }
    }
    if let Some(r) = pipe.flush(&pools) {
        emit(&pipe, &r, &mut dump, &mut timings)?;
    }
    bar.finish_and_clear();
    let wall = start.elapsed();

    if let Some(w) = wav {
        w.finish()?;
    }
    if let Some(p) = state_out {
        let snap = pipe
            .snapshot(&notes)
            .context("the codec runs whenever the state is saved")?;
        std::fs::write(p.partial_path(), snap.to_bytes(&lm))
            .with_context(|| format!("writing {}", p.partial_path().display()))?;
        p.commit()?;
    }
    if let Some(p) = tokens_out {
        let flat: Vec<i32> = all_tokens.iter().flatten().map(|&t| t as i32).collect();
        rill_io::write_npy(
            p.partial_path(),
            &Array::new(vec![frames, LEVELS], Data::I32(flat)),
        )?;
        p.commit()?;
    }
    if let (Some(p), Some(d)) = (dump_out, dump) {
        d.write(p.partial_path())?;
        p.commit()?;
    }

    timings.report(
        frames,
        wall,
        pools.stages() == rill_stream::Stages::TwoStage,
    );
    if nonfinite > 0 {
        eprintln!("warning: {nonfinite} non-finite audio samples were replaced by silence");
    }
    if let Some(p) = &wav_path {
        eprintln!(
            "wrote {} ({:.2} s of 48 kHz stereo audio)",
            p.display(),
            written as f64 * 0.04
        );
    }
    if let Some(p) = &args.tokens_out {
        eprintln!("wrote {} ([{frames}, 12] token ids)", p.display());
    }
    if let Some(p) = &args.dump {
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = &args.save_state {
        eprintln!(
            "wrote {} (stream state after frame {})",
            p.display(),
            pipe.session().state().frame
        );
    }
    Ok(())
}
