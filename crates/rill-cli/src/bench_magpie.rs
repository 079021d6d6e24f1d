//! `rill bench --model magpie`: per-frame time of the Magpie decoder step (with the
//! local transformer and the EOS stream) and of the NanoCodec step, time to first
//! audio, on random weights of the real shapes (the same work as the real model
//! except the 98-row text table), CFG on, f32 codec.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use rill_kernels::WeightFormat;
use rill_magpie::{InferenceParams, Model, Session};
use rill_mrt2::Precision;
use rill_nanocodec::{NanoCodec, SAMPLES_PER_FRAME, SAMPLE_RATE};
use rill_text::{EnglishFrontEnd, TextVocabulary};

use crate::args::{CodecArg, PrecisionArg};
use crate::bench::BenchArgs;
use crate::stats::summarize;

/// A 40-token sentence (the time-to-first-audio case is ≈ 40 tokens).
const TEXT: &str = "Hello world, I read the rill docs.";

pub fn run(args: &BenchArgs) -> Result<()> {
    let format = match args.model.precision {
        None | Some(PrecisionArg::Music(Precision::F32)) => WeightFormat::F32,
        Some(PrecisionArg::Music(Precision::Bf16)) => WeightFormat::Bf16,
        Some(PrecisionArg::Music(Precision::Int8)) => WeightFormat::Int8,
        Some(PrecisionArg::F16) => WeightFormat::F16,
        Some(PrecisionArg::Music(p)) => {
            bail!("--model magpie takes --precision f32, f16, bf16 or int8 (not {p})")
        }
    };
    let seed = args.model.random_weights.unwrap_or(0);
    let pools = args.model.pools()?;
    let threads = args.model.thread_count()?;
    let setup_pool = rill_kernels::Pool::new(threads);
    let t0 = Instant::now();
    let w = rill_magpie::synth::build(&rill_magpie::Config::oracle(), seed)?;
    let model = Arc::new(Model::with_format(w, format)?);
    let mut codec_weights = rill_nanocodec::Weights::synthetic(seed);
    let (codec_short, codec_kind) = match args.model.codec {
        None | Some(CodecArg::F32) => ("f32", "f32 codec weights"),
        Some(CodecArg::F16) => {
            codec_weights.round_to_half();
            (
                "f16",
                "codec weights rounded to half as in NVIDIA's F16 GGUF (f32 arithmetic)",
            )
        }
        Some(c) => bail!(
            "--model magpie takes --codec f32 or f16 (not {})",
            format!("{c:?}").to_lowercase()
        ),
    };
    let codec = NanoCodec::new(&codec_weights)?;
    let vocab = TextVocabulary::from_embedding_rows(model.config.text_vocab, 0)?;
    let ids = EnglishFrontEnd::new(vocab).encode(TEXT)?;
    let ids = &ids[..ids.len() - 1];
    eprintln!(
        "Magpie (random weights, seed {seed}) + NanoCodec ready in {:.1} s; {} linears, CFG on, \
         {codec_kind} ({} convs streamed as half), {}, {} tier",
        t0.elapsed().as_secs_f64(),
        format.name(),
        codec.half_weight_convs(),
        pools.describe(),
        rill_kernels::isa::active()
    );
    // No EOS within the run: the frame cap is the run length.
    let params = InferenceParams {
        max_decoder_steps: args.warmup + args.frames,
        min_generated_frames: args.warmup + args.frames,
        ..InferenceParams::default()
    };
    // The CFG row's prefill is a constant of the model, made once per process (at
    // start-up in `rill serve`); timed on its own, outside the sentence's setup.
    let t = Instant::now();
    model.unconditional_prefill(&setup_pool);
    let cfg_prefill = t.elapsed();
    let mut state = codec.new_state();
    let mut audio = [0f32; SAMPLES_PER_FRAME];
    let start = Instant::now();
    let mut session = Session::new(model, ids, 0, params, 0, &setup_pool)?;
    let setup = start.elapsed();
    let n = args.frames;
    let (mut dec, mut cod, mut step) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let mut first_audio = None;
    // The frame the codec decodes during the next step (two stages).
    let mut pending: Option<[u32; 8]> = None;
    for i in 0..args.warmup + args.frames {
        let t = Instant::now();
        let prev = pending.take();
        let ((frame, dt), (decoded, ct)) = pools.overlap(
            |lm| {
                let t = Instant::now();
                (session.step(lm), t.elapsed())
            },
            |cp| {
                let t = Instant::now();
                let r = match prev {
                    Some(c) => codec.step(&mut state, &c, &mut audio, cp),
                    None => Ok(()),
                };
                (r, t.elapsed())
            },
        );
        decoded?;
        let Some(f) = frame? else { break };
        pending = Some(f.map(u32::from));
        if first_audio.is_none() {
            // Setup, the first decoder step, then that frame's codec step with the
            // decoder stage assisting (as `rill_stream::tts` does for a request's
            // first frame).
            if let Some(c) = pending.take() {
                let ((), decoded) =
                    pools.overlap(|_| (), |cp| codec.step(&mut state, &c, &mut audio, cp));
                decoded?;
            }
            first_audio = Some(start.elapsed());
        }
        if i >= args.warmup {
            dec.push(dt);
            cod.push(ct);
            step.push(t.elapsed());
        }
    }
    let frame_ms = 1e3 * SAMPLES_PER_FRAME as f64 / SAMPLE_RATE as f64;
    let (d, c, s) = (summarize(&dec), summarize(&cod), summarize(&step));
    if args.json {
        println!(
            "{{\"model\":\"magpie\",\"linears\":\"{}\",\"codec_weights\":\"{codec_short}\",\
             \"half_convs\":{},\"threads\":{threads},\"stages\":\"{}\",\
             \"isa\":\"{}\",\"frames\":{},\"decoder_ms\":{{\"median\":{:.2},\"p99\":{:.2}}},\
             \"codec_ms\":{{\"median\":{:.2},\"p99\":{:.2}}},\"step_ms\":{{\"median\":{:.2},\
             \"p99\":{:.2}}},\"setup_ms\":{:.1},\"first_audio_ms\":{:.1},\"cfg_prefill_ms\":{:.1},\
             \"rtf\":{:.3}}}",
            format.name(),
            codec.half_weight_convs(),
            pools.stages().name(),
            rill_kernels::isa::active(),
            step.len(),
            d.median,
            d.p99,
            c.median,
            c.p99,
            s.median,
            s.p99,
            setup.as_secs_f64() * 1e3,
            first_audio.unwrap_or(Duration::ZERO).as_secs_f64() * 1e3,
            cfg_prefill.as_secs_f64() * 1e3,
            s.median / frame_ms
        );
    } else {
        println!(
            "{} frames of {frame_ms:.1} ms: decoder step (CFG, LT, EOS stream) {:.1} ms median \
             ({:.1} p99), NanoCodec {:.1} ({:.1}), frame {:.1} ({:.1}); real-time factor {:.2}",
            step.len(),
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
             (the CFG row's prefill, once per process: {:.0} ms)",
            ids.len() + 1,
            setup.as_secs_f64() * 1e3,
            first_audio.unwrap_or(Duration::ZERO).as_secs_f64() * 1e3,
            cfg_prefill.as_secs_f64() * 1e3
        );
    }
    Ok(())
}
