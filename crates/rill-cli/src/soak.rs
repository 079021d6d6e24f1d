//! `rill soak`: stream through the live engine for a long time and print, per
//! interval, what would reveal a slow fault: output level and peak (drift,
//! blow-up, silence), non-finite and clipped samples, resident memory (leaks)
//! and underruns (slow-down). A command, not a test: it runs for an hour.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Args;
use rill_stream::{Control, PacedReader, StreamConfig, StreamHandle};
use std::sync::atomic::Ordering;

use crate::args::MAX_SECONDS;
use crate::live::{self, LiveArgs};
use crate::usage::usage_bail;

#[derive(Debug, Args)]
pub struct SoakArgs {
    #[command(flatten)]
    pub live: LiveArgs,

    /// How long to stream, in seconds of wall time (a day at most).
    #[arg(long, default_value_t = 3600.0)]
    pub seconds: f64,

    /// Seconds per report line.
    #[arg(long, default_value_t = 60.0)]
    pub interval: f64,

    /// Streams played at once (each consumed at real-time pace).
    #[arg(long, default_value_t = 1)]
    pub streams: usize,

    /// Change the held chord every this many seconds (0 = keep the --notes given),
    /// so the soak also exercises control changes.
    #[arg(long, default_value_t = 8.0)]
    pub vary_every: f64,
}

const MAX_STREAMS: usize = 64;

/// Chords cycled through by `--vary-every` (C, Am, F, G).
const CHORDS: [&[u8]; 4] = [&[60, 64, 67], &[57, 60, 64], &[53, 57, 60], &[55, 59, 62]];

/// Sample statistics of one report interval.
#[derive(Default)]
struct Window {
    sum_sq: f64,
    samples: u64,
    peak: i32,
    clipped: u64,
}

impl Window {
    fn add(&mut self, pcm: &[i16]) {
        for &s in pcm {
            let v = s as i32;
            self.sum_sq += (v * v) as f64;
            self.peak = self.peak.max(v.abs());
            self.clipped += u64::from(s == i16::MAX || s == i16::MIN);
        }
        self.samples += pcm.len() as u64;
    }
}

fn dbfs(x: f64) -> f64 {
    if x <= 0.0 {
        f64::NEG_INFINITY
    } else {
        20.0 * (x / 32768.0).log10()
    }
}

/// Current resident memory (Linux), for leaks: the peak would hide a slow rise.
fn rss_bytes() -> Option<u64> {
    rill_stream::process::resident_bytes()
}

/// (non-finite samples, underruns) summed over the streams.
fn totals(streams: &[StreamHandle]) -> (u64, u64) {
    let sum = |f: fn(&StreamHandle) -> u64| streams.iter().map(f).sum();
    (
        sum(|s| s.stats.nonfinite.load(Ordering::Relaxed)),
        sum(|s| s.stats.underruns.load(Ordering::Relaxed)),
    )
}

pub fn run(mut args: SoakArgs) -> Result<()> {
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= MAX_SECONDS) {
        usage_bail!(
            "--seconds must be in (0, {MAX_SECONDS}], got {}",
            args.seconds
        );
    }
    if !(args.interval.is_finite() && args.interval >= 1.0 && args.interval <= args.seconds) {
        usage_bail!(
            "--interval must be at least 1 s and at most --seconds, got {}",
            args.interval
        );
    }
    if !(1..=MAX_STREAMS).contains(&args.streams) {
        usage_bail!(
            "--streams must be in 1..={MAX_STREAMS}, got {}",
            args.streams
        );
    }
    if !(args.vary_every.is_finite() && args.vary_every >= 0.0) {
        usage_bail!("--vary-every must be ≥ 0 seconds, got {}", args.vary_every);
    }
    live::resolve_style(&mut args.live.music)?;
    let initial = live::initial_controls(&args.live.music.controls)?;
    let loaded = live::start_engine(
        &args.live.music.model,
        args.live.music.precision.precision,
        live::Admission::Measured(Some(args.streams)),
        args.live.allow_stutter,
    )?;
    if loaded.engine.capacity() < args.streams {
        bail!(
            "this machine sustains {} stream(s) in real time, fewer than --streams {}",
            loaded.engine.capacity(),
            args.streams
        );
    }
    let mut streams = (0..args.streams)
        .map(|i| {
            loaded.engine.open(StreamConfig {
                seed: args.live.music.controls.seed().wrapping_add(i as u64),
                buffer_frames: args.live.buffer_frames(),
                initial: initial.clone(),
                record: false,
            })
        })
        .collect::<Result<Vec<StreamHandle>, _>>()?;
    // Fill the buffers before the clock starts, as a device would wait.
    let t0 = Instant::now();
    while streams.iter().any(|s| s.buffered_ms() < s.capacity_ms())
        && t0.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(5));
    }

    println!(
        "{:>7} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>6}",
        "minute", "rms dBFS", "peak dBFS", "nonfin", "clipped", "rss MB", "underruns", "RTF"
    );
    let mut window = Window::default();
    let mut readers = vec![PacedReader::new(); streams.len()];
    let (mut last_nonfinite, mut last_underruns) = (0u64, 0u64);
    let mut rss_first = None;
    let mut rss_range = (u64::MAX, 0u64);
    let mut chord = 0usize;
    let start = Instant::now();
    let mut next_report = args.interval;
    let mut next_vary = args.vary_every;
    loop {
        let elapsed = start.elapsed();
        let now = elapsed.as_secs_f64();
        // Consume at real-time pace; a frame not ready when due is one underrun.
        for (i, (h, r)) in streams.iter_mut().zip(&mut readers).enumerate() {
            if h.failed() {
                bail!("stream {i} failed with an internal error (see the message above)");
            }
            r.catch_up(h, elapsed, None, |pcm| window.add(pcm));
        }
        if args.vary_every > 0.0 && now >= next_vary {
            next_vary += args.vary_every;
            chord = (chord + 1) % CHORDS.len();
            for h in &streams {
                // A full control queue only delays the change to the next chord.
                let _ = h.send(Control::HeldNotes(CHORDS[chord].to_vec()));
            }
        }
        if now >= next_report {
            next_report += args.interval;
            let (nonfinite, underruns) = totals(&streams);
            let rtf = streams.iter().map(|s| s.stats.rtf()).fold(0.0, f32::max);
            let rss = rss_bytes();
            if let Some(r) = rss {
                rss_first.get_or_insert(r);
                rss_range = (rss_range.0.min(r), rss_range.1.max(r));
            }
            let rms = (window.sum_sq / window.samples.max(1) as f64).sqrt();
            println!(
                "{:>7.1} {:>9.1} {:>9.1} {:>8} {:>8} {:>9} {:>9} {:>6.2}",
                now / 60.0,
                dbfs(rms),
                dbfs(window.peak as f64),
                nonfinite - last_nonfinite,
                window.clipped,
                rss.map_or("n/a".into(), |r| format!("{:.1}", r as f64 / 1e6)),
                underruns - last_underruns,
                rtf
            );
            let _ = std::io::stdout().flush();
            (last_nonfinite, last_underruns) = (nonfinite, underruns);
            window = Window::default();
        }
        if now >= args.seconds {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let (nonfinite, underruns) = totals(&streams);
    let frames: u64 = readers.iter().map(PacedReader::played).sum();
    let drift = match (rss_first, rss_range) {
        (Some(f), (lo, hi)) if f > 0 => format!(
            "RSS {:.1}–{:.1} MB ({:+.2} % of the first reading)",
            lo as f64 / 1e6,
            hi as f64 / 1e6,
            (hi as f64 - f as f64) / f as f64 * 100.0
        ),
        _ => "RSS not available on this OS".into(),
    };
    println!(
        "soak: {:.0} s, {} stream(s), {frames} frames played, {nonfinite} non-finite samples, {underruns} underruns; {drift}",
        start.elapsed().as_secs_f64(),
        streams.len(),
    );
    Ok(())
}
