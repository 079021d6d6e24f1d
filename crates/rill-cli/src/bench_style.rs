//! `rill bench --prompt TEXT`: MusicCoCa's text → 12 tokens time (the text tower on the
//! prompt's real tokens, the mapper unless --no-mapper, the quantizer), median and
//! p99 over `--frames` runs after `--warmup`, on the command's threads.

use std::time::{Duration, Instant};

use anyhow::Result;
use rill_kernels::Pool;

use crate::bench::BenchArgs;
use crate::stats::summarize;

pub fn run(args: &BenchArgs, prompt: &str) -> Result<()> {
    let model = args
        .style
        .load(args.model.checkpoint.as_deref(), args.model.random_weights)?;
    let threads = rill_kernels::pool::thread_count(args.model.threads)?;
    let pool = Pool::new(threads);
    let mapper = args.style.mapper();
    let once = || -> Result<[u16; 12]> {
        let e = model.embed_text(prompt, mapper, &pool)?;
        Ok(model.tokenize(&e, &pool)?.tokens)
    };
    let tokens = once()?;
    for _ in 0..args.warmup {
        once()?;
    }
    let mut times: Vec<Duration> = Vec::with_capacity(args.frames);
    for _ in 0..args.frames {
        let t = Instant::now();
        once()?;
        times.push(t.elapsed());
    }
    let s = summarize(&times);
    let pieces = model.prompt_ids(prompt)?.len();
    let cpu = rill_stream::process::cpu_name();
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "prompt": prompt, "tokens_in": pieces, "style_tokens": tokens, "cpu": cpu,
                "threads": threads, "isa": rill_kernels::isa::active().name(), "runs": args.frames,
                "mapper": mapper != rill_musiccoca::Mapper::Off,
                "median_ms": s.median, "p99_ms": s.p99, "max_ms": s.max,
            })
        );
    } else {
        println!("cpu             {cpu}");
        println!(
            "prompt          {prompt:?}: {pieces} tokens in (SOS included), {} threads, {} kernels, mapper {}",
            threads,
            rill_kernels::isa::active(),
            if mapper == rill_musiccoca::Mapper::Off { "off" } else { "on" }
        );
        println!(
            "text → tokens   median {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} runs)",
            s.median, s.p99, s.max, args.frames
        );
    }
    Ok(())
}
