//! `rill bench --model magpie`: per-frame time of the Magpie decoder step (with the
//! local transformer and the EOS stream) and of the NanoCodec step, time to first
//! audio, on random weights of the real shapes (the same work as the real model
//! except the 98-row text table), CFG on, f32 codec; through `rill speak`'s own
//! pipeline (`Voice::speak`), timed per cycle.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use rill_magpie::{InferenceParams, Model, CODEBOOKS};
use rill_nanocodec::{NanoCodec, SAMPLES_PER_FRAME, SAMPLE_RATE};
use rill_stream::tts::{
    CycleTimes, SpeakOptions, SpeakSink, TtsError, Voice, DEFAULT_CODEC_FRAMES, SINGLE_FRAMES,
};
use rill_text::{Language, TextFrontEnd, TextVocabulary};

use rill_spectrostream::CodecPrecision;

/// One frame of audio (1024 samples at 22.05 kHz).
const FRAME: Duration =
    Duration::from_nanos(SAMPLES_PER_FRAME as u64 * 1_000_000_000 / SAMPLE_RATE as u64);
use crate::bench::BenchArgs;
use crate::stats::{summarize, Summary};
use crate::usage::usage_bail;

/// A 40-token sentence (the time-to-first-audio case is ≈ 40 tokens).
const TEXT: &str = "Hello world, I read the rill docs.";

pub fn run(args: &BenchArgs) -> Result<()> {
    let format = args.magpie_precision()?.format();
    // `--codec` names NanoCodec's weights here: f32, or f16 (rounded to half).
    let half_codec = match args.model.codec {
        None | Some(CodecPrecision::F32) => false,
        Some(CodecPrecision::F16Weights) => true,
        Some(c) => usage_bail!(
            "--model magpie takes --codec f32 or f16 (NanoCodec's weights), not {}",
            c.name()
        ),
    };
    let seed = args.model.random_weights.unwrap_or(0);
    let pools = args.model.pools()?;
    let threads = args.model.thread_count()?;
    let setup_pool = rill_kernels::Pool::new(threads);
    let t0 = Instant::now();
    let w = rill_magpie::synth::build(&rill_magpie::Config::oracle(), seed)?;
    let model = Arc::new(Model::with_format(w, format)?);
    let mut codec_weights = rill_nanocodec::Weights::synthetic(seed);
    let (codec_short, codec_kind) = if half_codec {
        codec_weights.round_to_half();
        (
            "f16",
            "codec weights rounded to half as in NVIDIA's F16 GGUF (f32 arithmetic)",
        )
    } else {
        ("f32", "f32 codec weights")
    };
    let codec = NanoCodec::new(&codec_weights)?;
    let vocab = TextVocabulary::from_embedding_rows(model.config.text_vocab, 0)?;
    let front = TextFrontEnd::new(vocab);
    let tokens = front.encode(TEXT, Language::English)?.utterances[0].len();
    // No EOS within the run: the frame cap is the run length, with room for the
    // first frame (decoded alone) and the group that fills the pipeline.
    let groups = args.codec_frames.unwrap_or(DEFAULT_CODEC_FRAMES);
    // The request's single-frame calls are start-up, not the steady cycle: timing
    // starts after them too.
    let warmup = args.warmup.max(SINGLE_FRAMES);
    let run = warmup + args.frames + 1 + groups;
    let params = InferenceParams {
        max_decoder_steps: run,
        min_generated_frames: run,
        ..InferenceParams::default()
    };
    let voice = Voice {
        model: model.clone(),
        codec: Arc::new(codec),
        front,
        params,
        speaker_names: Vec::new(),
    };
    let plan = voice.plan(
        TEXT,
        &SpeakOptions {
            codec_frames: args.codec_frames,
            normalize: false,
            ..SpeakOptions::default()
        },
    )?;
    eprintln!(
        "Magpie (random weights, seed {seed}) + NanoCodec ready in {:.1} s; {} linears, CFG on, \
         {codec_kind} ({} convs streamed as half), {} frames per codec call, {}, {} tier",
        t0.elapsed().as_secs_f64(),
        format.name(),
        voice.codec.half_weight_convs(),
        plan.codec_frames,
        pools.describe(),
        model.isa()
    );
    // The CFG row's prefill is a constant of the model, made once per process (at
    // start-up in `rill serve`); timed on its own, outside the sentence's setup.
    let t = Instant::now();
    model.unconditional_prefill(&setup_pool);
    let cfg_prefill = t.elapsed();
    // The frames and pipeline of `rill speak` and `rill serve`, timed per cycle.
    let mut sink = Timings {
        warmup,
        frames: args.frames,
        made: 0,
        timed: 0,
        dec: Vec::with_capacity(args.frames),
        cod: Vec::with_capacity(args.frames),
        step: Vec::with_capacity(args.frames),
        first: None,
        emitted: 0,
        buffer: Duration::ZERO,
    };
    let stats = voice.speak(&plan, &pools, &setup_pool, &mut sink)?;
    let Timings {
        dec,
        cod,
        step,
        timed,
        buffer,
        ..
    } = sink;
    let setup = Duration::from_secs_f64(stats.setup_seconds);
    // Zero when no frame came (none timed).
    let first_audio = Duration::from_secs_f64(stats.first_audio.unwrap_or(0.0));
    let codec = &voice.codec;
    let ids_len = tokens - 1;
    let frame_ms = 1e3 * SAMPLES_PER_FRAME as f64 / SAMPLE_RATE as f64;
    let (d, c, s) = (summarize(&dec), summarize(&cod), summarize(&step));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    if args.json {
        let stat = |x: Summary| serde_json::json!({"median": x.median, "p99": x.p99});
        let v = serde_json::json!({
            "model": "magpie",
            "linears": format.name(),
            "codec_weights": codec_short,
            "half_convs": codec.half_weight_convs(),
            "codec_frames": plan.codec_frames,
            "threads": threads,
            "stages": pools.stages().name(),
            "isa": model.isa().to_string(),
            "frames": timed,
            "decoder_ms": stat(d),
            "codec_ms": stat(c),
            "step_ms": stat(s),
            "setup_ms": ms(setup),
            "first_audio_ms": ms(first_audio),
            "cfg_prefill_ms": ms(cfg_prefill),
            "buffer_ms": ms(buffer),
            "rtf": s.median / frame_ms,
        });
        println!("{v}");
    } else {
        println!(
            "{timed} frames of {frame_ms:.1} ms in {} cycles of {} decoder steps beside a codec \
             call, per frame: decoder step (CFG, LT, EOS stream) {:.1} ms median ({:.1} p99), \
             NanoCodec {:.1} ({:.1}), frame {:.1} ({:.1}); real-time factor {:.2}",
            step.len(),
            plan.codec_frames,
            d.median,
            d.p99,
            c.median,
            c.p99,
            s.median,
            s.p99,
            s.median / frame_ms
        );
        println!(
            "setup (text encoder + 111-row prefill, {} tokens) {:.0} ms; first audio after {:.0} ms \
             (the CFG row's prefill, once per process: {:.0} ms); played from its first frame, \
             the stream is at most {:.0} ms late (the buffer a listener needs)",
            ids_len + 1,
            ms(setup),
            ms(first_audio),
            ms(cfg_prefill),
            ms(buffer)
        );
    }
    Ok(())
}

/// Per-frame times of the steady cycles (a group of decoder steps beside a codec
/// call of as many frames), after the warm-up frames.
struct Timings {
    /// Frames before timing starts, and frames to time (whole cycles: up to a
    /// group − 1 more).
    warmup: usize,
    frames: usize,
    /// Frames made so far, and those in the timed cycles.
    made: usize,
    timed: usize,
    dec: Vec<Duration>,
    cod: Vec<Duration>,
    step: Vec<Duration>,
    /// When the first frame reached the sink, frames since, and the latest any
    /// frame came against real-time playback from the first one: the buffer a
    /// streaming listener needs to play without a gap.
    first: Option<Instant>,
    emitted: u32,
    buffer: Duration,
}

impl SpeakSink for Timings {
    fn cycle(&mut self, t: &CycleTimes) {
        let steady =
            self.made >= self.warmup && self.timed < self.frames && t.made > 0 && t.decoded > 0;
        self.made += t.made;
        if steady {
            self.timed += t.made;
            self.dec.push(t.decoder / t.made as u32);
            self.cod.push(t.codec / t.decoded as u32);
            self.step.push(t.wall / t.made as u32);
        }
    }

    fn frame(
        &mut self,
        _: &[u32; CODEBOOKS],
        _: &[f32; SAMPLES_PER_FRAME],
        _: &[i16; SAMPLES_PER_FRAME],
    ) -> Result<(), TtsError> {
        let now = Instant::now();
        let first = *self.first.get_or_insert(now);
        let due = FRAME * self.emitted;
        self.buffer = self
            .buffer
            .max(now.duration_since(first).saturating_sub(due));
        self.emitted += 1;
        Ok(())
    }
}
