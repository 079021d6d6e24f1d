//! `rill bench`: load time, per-frame latency of each stage, real-time factor,
//! peak memory; `--quality` adds agreement of each precision with f32.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use clap::builder::TypedValueParser as _;
use clap::Args;
use rill_kernels::{Isa, Pool};
use rill_mrt2::conditioning::Conditioning;
use rill_mrt2::quality::compare_sessions;
use rill_mrt2::sampler::SamplingParams;
use rill_mrt2::{Mrt2, Precision, Session};
use rill_stream::{FramePipeline, Stages, StepReport};

use crate::args::ModelArgs;
use crate::model_source;
use crate::stats::{summarize, Summary};
use crate::usage::{usage, usage_bail};

#[derive(Debug, Args)]
#[command(mut_arg("codec", |a| a.help(CODEC_HELP)))]
pub struct BenchArgs {
    #[command(flatten)]
    pub model: ModelArgs,

    /// Which model to time: mrt2 (the music model of --checkpoint) or magpie (Magpie
    /// TTS + NanoCodec on random weights of the real shapes, CFG on); --precision and
    /// --codec name the weights of the model timed (see each).
    #[arg(long = "model", value_enum, default_value = "mrt2")]
    pub which: BenchModel,

    /// Weight precision of the model timed. --model mrt2: the language model's
    /// (f32, bf16, mlx-int8, int8, mixed, int4, lut4; as `rill generate
    /// --precision`; default f32, or the precision a pre-quantised file was made
    /// for). --model magpie: its linear layers' (f32, f16, bf16, int8; as `rill
    /// speak --precision`; default f32; f16: rounded to half, as NVIDIA's F16 GGUF
    /// holds them, f32 arithmetic).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(bench_precisions()))]
    pub precision: Option<String>,

    /// Frames to time (after the warm-up; at most a day's worth). With --model magpie,
    /// whole cycles of --codec-frames frames: up to that many − 1 more.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=crate::args::MAX_FRAMES).map(|n| n as usize))]
    pub frames: usize,

    /// Frames run before timing starts (with --model magpie at least the
    /// request's 4 single-frame codec calls).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(0..=10_000).map(|n| n as usize))]
    pub warmup: usize,

    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,

    /// Instead of timing: agreement of every precision with f32 on the same
    /// teacher-forced trajectory (logit cosine, greedy and sampling agreement).
    #[arg(long)]
    pub quality: bool,

    /// SIMD tiers to time, in one run: `all` (every tier this CPU runs, best
    /// first, with ratios) or a comma-separated list (portable, avx2, avx512,
    /// avx512-novnni). Default: the active tier.
    #[arg(long, value_name = "TIERS")]
    pub isa: Option<String>,

    /// With --model magpie: frames per NanoCodec call after the first (1 to 4;
    /// default 2, as `rill speak`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=rill_stream::tts::MAX_CODEC_FRAMES as u64).map(|v| v as usize))]
    pub codec_frames: Option<usize>,

    /// Time MusicCoCa instead: this text prompt to its 12 style tokens, --frames
    /// runs after --warmup, on --threads (see --musiccoca, --no-mapper).
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,

    #[command(flatten)]
    pub style: crate::style::StyleModelArgs,

    /// Music streams to time at once (1 to 4), stepped together as `rill serve` steps
    /// the streams that have room at once: each cycle makes one frame of every stream,
    /// their language models layer by layer across them. The times are per cycle; a
    /// real-time factor below 1 means that many streams keep up.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=rill_stream::pipeline::MAX_TOGETHER as u64).map(|n| n as usize))]
    pub streams: usize,

    /// Frames for --quality.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=100_000).map(|n| n as usize))]
    pub quality_frames: usize,
}

/// `rill bench --codec`: one flag, a codec per model (the shared `--codec` help
/// speaks of SpectroStream only).
const CODEC_HELP: &str = "Codec weights of the model timed. --model mrt2: the SpectroStream \
decoder's, f32, i16, f16 or fp16 as `rill generate --codec` (default i16, the live mode). \
--model magpie: NanoCodec's, f32 (default) or f16 (the random weights rounded to IEEE half, the \
values NVIDIA's F16 GGUF holds: stage 0 streams half the bytes, f32 arithmetic, the same output \
bits); i16 and fp16 are refused.";

/// Every name `--precision` takes: the music model's, then Magpie's not among them.
fn bench_precisions() -> Vec<&'static str> {
    let mut names: Vec<&str> = Precision::ALL.map(Precision::name).to_vec();
    for p in rill_magpie::Precision::ALL {
        if !names.contains(&p.name()) {
            names.push(p.name());
        }
    }
    names
}

impl BenchArgs {
    /// `--precision` as the music model's precision.
    fn mrt2_precision(&self) -> Result<Option<Precision>> {
        self.precision
            .as_deref()
            .map(|n| {
                Precision::from_name(n).ok_or_else(|| {
                    usage(format!(
                        "--model mrt2 takes --precision {} (not {n})",
                        Precision::ALL.map(Precision::name).join(", ")
                    ))
                })
            })
            .transpose()
    }

    /// `--precision` as Magpie's precision.
    pub fn magpie_precision(&self) -> Result<rill_magpie::Precision> {
        let Some(n) = self.precision.as_deref() else {
            return Ok(rill_magpie::Precision::F32);
        };
        rill_magpie::Precision::from_name(n).ok_or_else(|| {
            usage(format!(
                "--model magpie takes --precision {} (not {n})",
                rill_magpie::Precision::ALL
                    .map(rill_magpie::Precision::name)
                    .join(", ")
            ))
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchModel {
    Mrt2,
    Magpie,
}

/// Peak resident set size of this process (Linux); None elsewhere.
fn peak_rss_bytes() -> Option<u64> {
    rill_stream::process::peak_resident_bytes()
}

fn pool_for(args: &ModelArgs) -> Result<Pool> {
    Ok(Pool::new(args.thread_count()?))
}

/// A steady musical setting for timing: a style, a chord, drums on.
fn bench_conditioning() -> Conditioning {
    Conditioning {
        style: Some([325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]),
        drums: Some(true),
        ..Default::default()
    }
    .with_held_notes(&[60, 64, 67])
    .expect("60, 64 and 67 are MIDI pitches")
}

/// One tier's timings.
struct TierRun {
    isa: Isa,
    lm: Summary,
    codec: Summary,
    total: Summary,
}

/// The tiers `--isa` names: `all` = every tier this CPU runs, best first.
fn tiers(arg: Option<&str>) -> Result<Vec<Isa>> {
    match arg {
        None => Ok(vec![rill_kernels::isa::active()]),
        Some("all") => Ok(Isa::available().into_iter().rev().collect()),
        Some(list) => list
            .split(',')
            .map(|n| Isa::parse(n).map_err(|e| usage(format!("--isa: {e}"))))
            .collect(),
    }
}

pub fn run(args: BenchArgs) -> Result<()> {
    if args.streams > 1
        && (args.prompt.is_some() || args.which == BenchModel::Magpie || args.quality)
    {
        usage_bail!(
            "--streams times music streams: it is for --model mrt2 without --quality or --prompt"
        );
    }
    if let Some(p) = &args.prompt {
        return crate::bench_style::run(&args, p);
    }
    if args.which == BenchModel::Magpie {
        return crate::bench_magpie::run(&args);
    }
    if args.codec_frames.is_some() {
        usage_bail!(
            "--codec-frames is for --model magpie (MRT2's codec decodes one frame per call)"
        );
    }
    let explicit_precision = args.mrt2_precision()?;
    if args.quality {
        return quality(&args);
    }
    let tiers = tiers(args.isa.as_deref())?;
    let path = model_source::resolve(&args.model)?;
    let pools = args.model.pools()?;
    let t0 = Instant::now();
    let (ckpt, kind) = model_source::open(&path)?;
    let precision = model_source::precision(explicit_precision, &ckpt)?;
    // The LM of the first tier; each further tier loads its own (below), so every
    // model's kernels stay the tier it was loaded with.
    let mut lm = Some(Arc::new(Mrt2::load_with_isa(&ckpt, precision, tiers[0])?));
    let codec_precision = model_source::codec_precision(&args.model, precision, true);
    let load_codec = |isa| {
        rill_spectrostream::Codec::load_with(
            &ckpt,
            rill_spectrostream::CodecOptions {
                precision: codec_precision,
                isa: Some(isa),
                rescale: None,
            },
        )
        .map(Arc::new)
    };
    let mut codecs = vec![load_codec(tiers[0])?];
    // Load time as a user sees it: the weights and the codec of one tier.
    let load = t0.elapsed();
    for &isa in &tiers[1..] {
        codecs.push(load_codec(isa)?);
    }
    // Kept only while a tier's LM is still to load.
    let mut ckpt = (tiers.len() > 1).then_some(ckpt);
    rill_kernels::huge_pages::collapse_resident();

    let mut runs = Vec::new();
    for (i, (&isa, codec)) in tiers.iter().zip(codecs).enumerate() {
        // One tier's LM at a time: the previous one is dropped with its pipeline.
        let lm = match lm.take() {
            Some(lm) => lm,
            None => {
                let c = ckpt.as_ref().expect("kept while tiers remain");
                let lm = Arc::new(Mrt2::load_with_isa(c, precision, isa)?);
                if i + 1 == tiers.len() {
                    ckpt = None;
                }
                rill_kernels::huge_pages::collapse_resident();
                lm
            }
        };
        let mut pipes = Vec::with_capacity(args.streams);
        for seed in 42..42 + args.streams as u64 {
            let mut pipe = FramePipeline::new(lm.clone(), Some(codec.clone()), seed, &pools);
            pipe.session_mut()
                .set_conditioning(&bench_conditioning(), pools.lm())?;
            pipes.push(pipe);
        }
        drop(lm);
        let mut pipes: Vec<&mut FramePipeline> = pipes.iter_mut().collect();
        let mut reports = vec![StepReport::default(); pipes.len()];
        let (mut lm_t, mut codec_t, mut total_t) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..args.warmup + args.frames {
            let a = Instant::now();
            let r = if let [pipe] = &mut pipes[..] {
                pipe.step(None, &pools)
            } else {
                FramePipeline::step_together(&mut pipes, &pools, &mut reports);
                reports[0]
            };
            let wall = a.elapsed();
            if i >= args.warmup {
                lm_t.push(r.lm_time);
                codec_t.push(r.codec_time);
                total_t.push(wall);
            }
        }
        runs.push(TierRun {
            isa,
            lm: summarize(&lm_t),
            codec: summarize(&codec_t),
            total: summarize(&total_t),
        });
    }
    let rss = peak_rss_bytes();
    let huge = rill_stream::process::huge_page_bytes();
    let thp = rill_stream::process::huge_page_mode();
    let codec_name = codec_precision.describe();
    let (lm_threads, codec_threads) = pools.threads();
    if args.json {
        let s = |x: Summary| serde_json::json!({"median": x.median, "p90": x.p90, "p99": x.p99, "max": x.max});
        let tiers: Vec<_> = runs
            .iter()
            .map(|r| {
                serde_json::json!({
                    "isa": r.isa.name(), "lm_ms": s(r.lm), "codec_ms": s(r.codec),
                    "total_ms": s(r.total), "rtf": r.total.median / 40.0,
                })
            })
            .collect();
        let first = &runs[0];
        let v = serde_json::json!({
            "model": kind.name(), "precision": precision.name(), "codec": codec_name,
            "threads": args.model.thread_count()?, "stages": pools.stages().name(),
            "lm_threads": lm_threads, "codec_threads": codec_threads,
            "cpu": rill_stream::process::cpu_name(), "frames": args.frames, "streams": args.streams, "load_s": load.as_secs_f64(),
            "isa": first.isa.name(), "lm_ms": s(first.lm), "codec_ms": s(first.codec),
            "total_ms": s(first.total), "rtf": first.total.median / 40.0,
            "tiers": tiers, "peak_rss_bytes": rss,
            "huge_page_bytes": huge, "thp_mode": thp,
        });
        println!("{v}");
        return Ok(());
    }
    println!(
        "{kind} {precision} (codec {codec_name}) | {} | {} frames after {} warm-up",
        pools.describe(),
        args.frames,
        args.warmup
    );
    println!("cpu             {}", rill_stream::process::cpu_name());
    println!("load            {:8.2} s", load.as_secs_f64());
    if args.streams > 1 {
        println!(
            "({} streams stepped together: each line is one cycle, a frame of every stream; \
             language model = all of them layer by layer, codec = theirs one after another)",
            args.streams
        );
    }
    if pools.stages() == Stages::TwoStage {
        println!(
            "(two-stage: total = one step, the LM of frame n+1 and the codec of frame n at once)"
        );
    }
    println!("                  median      p90      p99      max   (ms per 40 ms frame)");
    let best = runs[0].total.median;
    for r in &runs {
        println!("-- {} kernels", r.isa);
        for (name, x) in [
            ("language model", r.lm),
            ("codec", r.codec),
            ("total", r.total),
        ] {
            println!(
                "{name:<15} {:8.2} {:8.2} {:8.2} {:8.2}",
                x.median, x.p90, x.p99, x.max
            );
        }
        let rtf = r.total.median / 40.0;
        print!("real-time factor {rtf:7.3}  (median total / 40 ms; < 1 is faster than real time)");
        if runs.len() > 1 {
            print!(
                "  | {:.2}x the time of {}",
                r.total.median / best,
                runs[0].isa
            );
        }
        println!();
    }
    if let Some(r) = rss {
        println!("peak RSS        {:8.2} GB", r as f64 / 1e9);
    }
    if let Some(h) = huge {
        // Where the system gives no huge pages the weights stream through 4 KB pages,
        // which costs the LM ≈ 15 % on the machines measured (README, Performance).
        println!(
            "huge pages      {:8.2} GB resident (system mode: {})",
            h as f64 / 1e9,
            thp.as_deref().unwrap_or("unknown")
        );
    }
    Ok(())
}

fn quality(args: &BenchArgs) -> Result<()> {
    let path = model_source::resolve(&args.model)?;
    let pool = pool_for(&args.model)?;
    let (ckpt, kind) = model_source::open(&path)?;
    let reference = Arc::new(Mrt2::load(&ckpt, Precision::F32)?);
    let cond = bench_conditioning();
    let p = SamplingParams::default();
    println!(
        "{kind}: agreement with f32 over {} frames ({} depth steps), teacher-forced on the f32 model's own samples (T {}, top-k {})",
        args.quality_frames,
        args.quality_frames * 12,
        p.temperature,
        p.top_k
    );
    println!("precision   logit cos mean   logit cos min   greedy agree   sampling agree (1-TV)");
    for prec in Precision::ALL.into_iter().filter(|&p| p != Precision::F32) {
        let m = Arc::new(Mrt2::load(&ckpt, prec)?);
        let mut r = Session::new(reference.clone(), 42, &pool);
        let mut t = Session::new(m, 42, &pool);
        let q = compare_sessions(&mut r, &mut t, &cond, p, args.quality_frames, &pool)?;
        println!(
            "{:<10} {:>15.6} {:>15.6} {:>14.3} {:>22.4}",
            prec.name(),
            q.cosine_mean(),
            q.cosine_min,
            q.greedy(),
            q.sampling()
        );
    }

    // Codec: audio of the f32 model's tokens, each codec mode vs f32.
    let frames = args.quality_frames.max(2);
    let mut s = Session::new(reference, 42, &pool);
    s.set_conditioning(&cond, &pool)?;
    let tokens: Vec<[u32; 12]> = (0..frames).map(|_| s.step(&pool, None)).collect();
    let decode = |precision| -> Result<Vec<f32>> {
        let c = rill_spectrostream::Codec::load_with(
            &ckpt,
            rill_spectrostream::CodecOptions {
                precision,
                isa: None,
                rescale: None,
            },
        )?;
        let mut st = c.new_state();
        let mut out = vec![0f32; frames * 2 * rill_spectrostream::SAMPLES_PER_FRAME];
        for (t, a) in tokens
            .iter()
            .zip(out.chunks_mut(2 * rill_spectrostream::SAMPLES_PER_FRAME))
        {
            c.step(&mut st, t, a, None, &pool)?;
        }
        Ok(out)
    };
    let exact = decode(rill_spectrostream::CodecPrecision::F32)?;
    // Activation peaks of the f32 codec on these generated codes: what the fp16
    // rescale's constants rest on (≥ 30× below half's 65504 once rescaled).
    let codec = rill_spectrostream::Codec::load(&ckpt)?;
    let peaks = codec.activation_peaks(&tokens, &pool)?;
    let region = |from: usize, to: usize| {
        peaks
            .iter()
            .filter(|p| (from..=to).any(|i| p.stage.starts_with(&format!("decoder_{i}/"))))
            .map(|p| p.native)
            .fold(0f32, f32::max)
    };
    let r = rill_spectrostream::Rescale::FP16;
    let (early, late) = (region(1, 4), region(5, 6));
    let stored = (early / (1u32 << r.first_log2) as f32)
        .max(late / (1u32 << (r.first_log2 + r.second_log2)) as f32)
        .max(region(0, 0));
    println!(
        "codec activation peaks: decoder_0 {:.3e}, decoder_1..4 {early:.3e}, decoder_5..6 {late:.3e}; with the fp16 rescale ({}×, {}×) the largest stored value is {stored:.3e}, {:.0}× below half's maximum",
        region(0, 0),
        1u32 << r.first_log2,
        1u32 << (r.first_log2 + r.second_log2),
        65504.0 / stored
    );
    for p in [
        rill_spectrostream::CodecPrecision::I16Weights,
        rill_spectrostream::CodecPrecision::F16Weights,
        rill_spectrostream::CodecPrecision::F16,
    ] {
        let got = decode(p)?;
        println!(
            "codec {}: audio SNR {:.1} dB vs f32 over {frames} frames (f32 matches upstream at ≈107 dB)",
            p.describe(),
            rill_kernels::metrics::snr_db(&exact, &got)
        );
    }
    Ok(())
}
