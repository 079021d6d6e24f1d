//! `rill play`: live audio to the default output device, MIDI input, status line.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use rill_stream::{PacedReader, StreamConfig, FRAME_PCM};

#[path = "play/style_lines.rs"]
mod style_lines;

#[cfg(feature = "audio")]
#[path = "play/device.rs"]
mod device;
#[cfg(not(feature = "audio"))]
#[path = "play/no_device.rs"]
mod device;

use device::{connect_midi, list_midi, open_device};

use crate::args::MAX_SECONDS;
use crate::live::{self, LiveArgs};
use crate::output::WavOut;
use crate::usage::usage_bail;

#[derive(Debug, Args)]
pub struct PlayArgs {
    #[command(flatten)]
    pub live: LiveArgs,

    /// MIDI input port to play from (a substring of its name; see --list-midi).
    /// Default: the first available port, if any.
    #[arg(long, value_name = "NAME")]
    pub midi_port: Option<String>,

    /// List MIDI input ports and exit.
    #[arg(long)]
    pub list_midi: bool,

    /// Also write everything played to this WAV file.
    #[arg(long, value_name = "FILE.wav")]
    pub record: Option<PathBuf>,

    /// Stop after this many seconds of audio (default: until Ctrl-C). With
    /// `--device null`, seconds of generated audio consumed (however long that
    /// takes on a slow machine); with a sound card, seconds of playing time.
    #[arg(long)]
    pub seconds: Option<f64>,

    /// Change the style while playing from standard input: each line typed (or
    /// piped) is a prompt ("disco funk"), a blend ("jazz=0.7 | techno=0.3"), a clip
    /// ("@clip.wav") or codes ("codes 1,2,…,12"). MusicCoCa loads before the stream
    /// starts and encodes beside it; the style switches at a frame boundary.
    #[arg(long)]
    pub stdin: bool,

    /// Output device: `default`, a substring of a device name, or `null` (no
    /// sound; audio is consumed at real-time pace, e.g. with --record).
    #[arg(long, default_value = "default")]
    pub device: String,
}

pub fn run(mut args: PlayArgs) -> Result<()> {
    if args.list_midi {
        return list_midi();
    }
    let target_frames = match args.seconds {
        Some(s) if !(s.is_finite() && s > 0.0 && s <= MAX_SECONDS) => {
            usage_bail!("--seconds must be a number in (0, {MAX_SECONDS}], got {s}")
        }
        Some(s) => Some(((s * 25.0).round() as u64).max(1)),
        None => None,
    };
    // With --stdin MusicCoCa is loaded once, before the stream, for both --prompt and
    // the live lines.
    let music = &mut args.live.music;
    music.controls.style.inputs()?; // usage errors before any load
    let checkpoint = crate::model_source::resolve(&music.model)?;
    let style_model = args.stdin.then(|| {
        style_lines::preload(
            &music.controls.style.model,
            &checkpoint,
            music.model.random_weights,
        )
    });
    match style_model.as_ref().and_then(Option::as_ref) {
        Some(m) if music.controls.style.any() => {
            let pool = rill_kernels::Pool::new(crate::args::thread_count(music.model.threads)?);
            music.controls.resolved_style = music.controls.style.resolve_with(m, &pool)?;
        }
        _ => music.controls.resolve_style(&music.model, &checkpoint)?,
    }
    let initial = live::initial_controls(&args.live.music.controls)?;
    let mut wav = args.record.as_deref().map(WavOut::create).transpose()?;
    let loaded = live::start_engine(
        &args.live.music.model,
        args.live.music.precision.precision,
        live::Admission::Measured(Some(1)),
        args.live.allow_stutter,
    )?;
    let opened = Instant::now();
    let mut stream = loaded.engine.open(StreamConfig {
        seed: args.live.music.controls.seed(),
        buffer_frames: args.live.buffer_frames(),
        initial,
        record: wav.is_some(),
    })?;
    let ctl = stream.controller();
    let recorder = stream.take_recorder();
    let _midi = connect_midi(args.midi_port.as_deref(), ctl.clone())?;
    if let Some(loaded) = style_model {
        style_lines::spawn(
            args.live.music.controls.style.model.clone(),
            checkpoint.clone(),
            args.live.music.model.random_weights,
            loaded,
            ctl.clone(),
        );
    }

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .context("installing the Ctrl-C handler")?;
    }
    // Wait for the buffer to fill before the device starts pulling.
    let t0 = Instant::now();
    while stream.buffered_ms() < stream.capacity_ms() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    eprintln!(
        "first audio {:.2} s after the weights loaded (engine start and calibration {:.2} s, \
         {:.0} ms buffer filled in {:.2} s)",
        loaded.weights_ready.elapsed().as_secs_f64(),
        opened.duration_since(loaded.weights_ready).as_secs_f64(),
        stream.buffered_ms(),
        t0.elapsed().as_secs_f64(),
    );
    let mut null_sink = None;
    let _device = if args.device == "null" {
        null_sink = Some(stream);
        None
    } else {
        Some(open_device(&args.device, stream)?)
    };
    let mut rec_buf = vec![0i16; FRAME_PCM];
    let mut recorder = recorder;
    let start = Instant::now();
    let mut reader = PacedReader::new();
    let mut last_status = Instant::now();
    eprintln!("playing — Ctrl-C stops");
    let null = null_sink.is_some();
    let done = |played_null: u64| match (target_frames, null) {
        (None, _) => false,
        (Some(n), true) => played_null >= n,
        (Some(n), false) => start.elapsed().as_secs_f64() >= n as f64 * 0.04,
    };
    while !stop.load(Ordering::SeqCst) && !done(reader.played()) {
        if let Some(h) = null_sink.as_mut() {
            // Consume at real-time pace, as a device would.
            reader.catch_up(h, start.elapsed(), target_frames, |_| {});
        }
        if let (Some(r), Some(w)) = (recorder.as_mut(), wav.as_mut()) {
            drain_recorder(r, w, &mut rec_buf)?;
        }
        if last_status.elapsed() > Duration::from_millis(250) {
            last_status = Instant::now();
            let s = &ctl.stats;
            eprint!(
                "\r{:7.1} s | frames {:6} | RTF {:4.2} | underruns {:4}   ",
                start.elapsed().as_secs_f64(),
                s.frames.load(Ordering::Relaxed),
                s.rtf(),
                s.underruns.load(Ordering::Relaxed),
            );
            let _ = std::io::stderr().flush();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Close the stream, then record everything it generated.
    drop(null_sink);
    // (Without the `audio` feature the device is a unit value.)
    #[allow(dropping_copy_types)]
    drop(_device);
    if let (Some(r), Some(w)) = (recorder.as_mut(), wav.as_mut()) {
        drain_recorder(r, w, &mut rec_buf)?;
    }
    let s = &ctl.stats;
    eprintln!(
        "\nplayed {:.2} s: {} frames generated, real-time factor {:.2}, {} underruns",
        start.elapsed().as_secs_f64(),
        s.frames.load(Ordering::Relaxed),
        s.rtf(),
        s.underruns.load(Ordering::Relaxed),
    );
    if let Some(w) = wav {
        w.finish()?;
        if let Some(p) = &args.record {
            eprintln!("wrote {}", p.display());
        }
    }
    let dropped = ctl.stats.record_dropped.load(Ordering::Relaxed);
    if dropped > 0 {
        eprintln!("warning: {dropped} frames could not be recorded in time");
    }
    Ok(())
}

/// Writes every whole frame waiting in the recording queue to the WAV.
fn drain_recorder(r: &mut rtrb::Consumer<i16>, w: &mut WavOut, buf: &mut [i16]) -> Result<()> {
    while let Ok(chunk) = r.read_chunk(FRAME_PCM) {
        let (a, b) = chunk.as_slices();
        buf[..a.len()].copy_from_slice(a);
        buf[a.len()..].copy_from_slice(b);
        chunk.commit_all();
        w.write(buf)?;
    }
    Ok(())
}
