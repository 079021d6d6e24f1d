//! `rill bench`: load time, per-frame latency of each stage, real-time factor,
//! peak memory; `--quality` adds agreement of each precision with f32.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use rill_kernels::Pool;
use rill_mrt2::conditioning::Conditioning;
use rill_mrt2::quality::compare_sessions;
use rill_mrt2::sampler::SamplingParams;
use rill_mrt2::{Mrt2, Precision, Session};

use crate::args::ModelArgs;
use crate::model_source;
use crate::stats::{summarize, Summary};

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub model: ModelArgs,

    /// Frames to time (after the warm-up).
    #[arg(long, default_value_t = 100)]
    pub frames: usize,

    /// Frames run before timing starts.
    #[arg(long, default_value_t = 5)]
    pub warmup: usize,

    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,

    /// Instead of timing: agreement of every precision with f32 on the same
    /// teacher-forced trajectory (logit cosine, greedy and sampling agreement).
    #[arg(long)]
    pub quality: bool,

    /// Frames for --quality.
    #[arg(long, default_value_t = 50)]
    pub quality_frames: usize,
}

/// Peak resident set size of this process, from /proc (Linux); None elsewhere.
fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn pool_for(args: &ModelArgs) -> Pool {
    match args.threads {
        Some(n) => Pool::new(n.max(1)),
        None => Pool::from_env(),
    }
}

/// A steady musical setting for timing: a style, a chord, drums on.
fn bench_conditioning() -> Conditioning {
    Conditioning {
        style: Some([325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]),
        drums: Some(true),
        ..Default::default()
    }
    .with_held_notes(&[60, 64, 67])
}

pub fn run(args: BenchArgs) -> Result<()> {
    if args.quality {
        return quality(&args);
    }
    let path = model_source::resolve(&args.model)?;
    let pool = pool_for(&args.model);
    let t0 = Instant::now();
    let (ckpt, kind) = model_source::open(&path)?;
    let precision = model_source::precision(&args.model, &ckpt)?;
    let lm = Arc::new(Mrt2::load(&ckpt, precision)?);
    let codec_precision = model_source::codec_precision(&args.model, precision);
    let codec = rill_codec::Codec::load_with(
        &ckpt,
        rill_codec::CodecOptions {
            precision: codec_precision,
            isa: None,
        },
    )?;
    drop(ckpt);
    let load = t0.elapsed();

    let mut session = Session::new(lm, 42, &pool);
    session.set_conditioning(&bench_conditioning(), &pool);
    let mut state = codec.new_state();
    let mut audio = vec![0f32; 2 * rill_codec::SAMPLES_PER_FRAME];
    let (mut lm_t, mut codec_t, mut total_t) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..args.warmup + args.frames {
        let a = Instant::now();
        let tokens = session.step(&pool, None);
        let b = Instant::now();
        codec.step(&mut state, &tokens, &mut audio, None, &pool);
        let c = Instant::now();
        if i >= args.warmup {
            lm_t.push(b - a);
            codec_t.push(c - b);
            total_t.push(c - a);
        }
    }
    let (lm, cd, tot) = (summarize(&lm_t), summarize(&codec_t), summarize(&total_t));
    let rss = peak_rss_bytes();
    let rtf = tot.median / 40.0;
    let isa = rill_kernels::isa::active().name();
    if args.json {
        let s = |x: Summary| serde_json::json!({"median": x.median, "p90": x.p90, "p99": x.p99, "max": x.max});
        let v = serde_json::json!({
            "model": kind.name(), "precision": precision.name(),
            "codec": model_source::codec_name(codec_precision), "threads": pool.threads(),
            "isa": isa, "frames": args.frames, "load_s": load.as_secs_f64(),
            "lm_ms": s(lm), "codec_ms": s(cd), "total_ms": s(tot),
            "rtf": rtf, "peak_rss_bytes": rss,
        });
        println!("{v}");
    } else {
        println!(
            "{} {} (codec {}) | {} threads | {isa} kernels | {} frames after {} warm-up",
            kind,
            precision,
            model_source::codec_name(codec_precision),
            pool.threads(),
            args.frames,
            args.warmup
        );
        println!("load            {:8.2} s", load.as_secs_f64());
        println!("                  median      p90      p99      max   (ms per 40 ms frame)");
        for (name, x) in [("language model", lm), ("codec", cd), ("total", tot)] {
            println!(
                "{name:<15} {:8.2} {:8.2} {:8.2} {:8.2}",
                x.median, x.p90, x.p99, x.max
            );
        }
        println!(
            "real-time factor {rtf:7.3}  (median total / 40 ms; < 1 is faster than real time)"
        );
        if let Some(r) = rss {
            println!("peak RSS        {:8.2} GB", r as f64 / 1e9);
        }
    }
    Ok(())
}

fn quality(args: &BenchArgs) -> Result<()> {
    let path = model_source::resolve(&args.model)?;
    let pool = pool_for(&args.model);
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
        let q = compare_sessions(&mut r, &mut t, &cond, p, args.quality_frames, &pool);
        println!(
            "{:<10} {:>15.6} {:>15.6} {:>14.3} {:>22.4}",
            prec.name(),
            q.cosine_mean(),
            q.cosine_min,
            q.greedy(),
            q.sampling()
        );
    }

    // Codec: audio of the f32 model's tokens, f16 early weights vs f32.
    let frames = args.quality_frames.max(2);
    let mut s = Session::new(reference, 42, &pool);
    s.set_conditioning(&cond, &pool);
    let tokens: Vec<[u32; 12]> = (0..frames).map(|_| s.step(&pool, None)).collect();
    let decode = |precision| -> Result<Vec<f32>> {
        let c = rill_codec::Codec::load_with(
            &ckpt,
            rill_codec::CodecOptions {
                precision,
                isa: None,
            },
        )?;
        let mut st = c.new_state();
        let mut out = vec![0f32; frames * 2 * rill_codec::SAMPLES_PER_FRAME];
        for (t, a) in tokens
            .iter()
            .zip(out.chunks_mut(2 * rill_codec::SAMPLES_PER_FRAME))
        {
            c.step(&mut st, t, a, None, &pool);
        }
        Ok(out)
    };
    let exact = decode(rill_codec::CodecPrecision::F32)?;
    let f16 = decode(rill_codec::CodecPrecision::F16Weights)?;
    let (mut sig, mut err) = (0f64, 0f64);
    for (a, b) in exact.iter().zip(&f16) {
        sig += (*a as f64).powi(2);
        err += ((a - b) as f64).powi(2);
    }
    println!(
        "codec f16 early weights: audio SNR {:.1} dB vs f32 over {frames} frames (f32 matches upstream at ≈107 dB)",
        10.0 * (sig / err.max(f64::MIN_POSITIVE)).log10()
    );
    Ok(())
}
