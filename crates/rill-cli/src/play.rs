//! `rill play`: live audio to the default output device, MIDI input, status line.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use rill_stream::{Control, StreamConfig, StreamController, StreamHandle, FRAME_PCM};

use crate::args::{ControlArgs, ModelArgs};
use crate::live::{self, LiveArgs};
use crate::output::WavOut;

#[derive(Debug, Args)]
pub struct PlayArgs {
    #[command(flatten)]
    pub model: ModelArgs,

    #[command(flatten)]
    pub controls: ControlArgs,

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

    /// Stop after this many seconds (default: until Ctrl-C).
    #[arg(long)]
    pub seconds: Option<f64>,

    /// Output device: `default`, a substring of a device name, or `null` (no
    /// sound; audio is consumed at real-time pace, e.g. with --record).
    #[arg(long, default_value = "default")]
    pub device: String,
}

/// What to do on a machine without a usable sound device.
const NO_DEVICE_HINT: &str =
    "Without a sound card (containers, SSH sessions) use `--device null --record out.wav`, \
or `rill serve` and open the page in a browser.";

fn list_midi() -> Result<()> {
    let midi = midir::MidiInput::new("rill").map_err(|e| {
        anyhow!("cannot open the MIDI system: {e} (is there an ALSA sequencer, /dev/snd/seq?)")
    })?;
    let ports = midi.ports();
    if ports.is_empty() {
        println!("no MIDI input ports");
    }
    for p in &ports {
        println!(
            "{}",
            midi.port_name(p).unwrap_or_else(|_| "<unnamed>".into())
        );
    }
    Ok(())
}

/// Connects MIDI input (note on/off → controls); None if there is no port.
fn connect_midi(
    want: Option<&str>,
    ctl: StreamController,
) -> Result<Option<midir::MidiInputConnection<()>>> {
    let mut midi = match midir::MidiInput::new("rill") {
        Ok(m) => m,
        Err(e) if want.is_none() => {
            eprintln!("note: no MIDI ({e}); playing without MIDI input");
            return Ok(None);
        }
        Err(e) => bail!("cannot open the MIDI system: {e}"),
    };
    midi.ignore(midir::Ignore::All);
    let ports = midi.ports();
    let port = match want {
        Some(name) => ports
            .iter()
            .find(|p| midi.port_name(p).map(|n| n.contains(name)).unwrap_or(false))
            .cloned()
            .ok_or_else(|| {
                anyhow!("no MIDI input port matches {name:?} (see rill play --list-midi)")
            })?,
        None => match ports.first() {
            Some(p) => p.clone(),
            None => {
                eprintln!("note: no MIDI input port found; playing the --notes given (if any)");
                return Ok(None);
            }
        },
    };
    let name = midi.port_name(&port).unwrap_or_default();
    let conn = midi
        .connect(
            &port,
            "rill-in",
            move |_, msg, _| {
                if msg.len() >= 3 {
                    let (kind, pitch, vel) = (msg[0] & 0xf0, msg[1] & 0x7f, msg[2]);
                    let c = match kind {
                        0x90 if vel > 0 => Some(Control::NoteOn(pitch)),
                        0x80 | 0x90 => Some(Control::NoteOff(pitch)),
                        _ => None,
                    };
                    if let Some(c) = c {
                        let _ = ctl.send(c);
                    }
                }
            },
            (),
        )
        .map_err(|e| anyhow!("cannot connect to MIDI port {name:?}: {e}"))?;
    eprintln!("MIDI input: {name}");
    Ok(Some(conn))
}

/// Opens the output device at 48 kHz stereo with the stream as its source.
fn open_device(name: &str, mut stream: StreamHandle) -> Result<cpal::Stream> {
    let host = cpal::default_host();
    let device = if name == "default" {
        host.default_output_device().ok_or_else(|| {
            anyhow!(
                "no audio output device found (host {}). {NO_DEVICE_HINT}",
                host.id().name()
            )
        })?
    } else {
        host.output_devices()
            .map_err(|e| anyhow!("cannot list audio devices: {e}"))?
            .find(|d| {
                d.description()
                    .map(|n| n.name().contains(name))
                    .unwrap_or(false)
            })
            .ok_or_else(|| anyhow!("no audio output device matches {name:?}"))?
    };
    let dev_name = device
        .description()
        .map(|d| d.name().to_string())
        .unwrap_or_else(|_| "?".into());
    let config = device
        .supported_output_configs()
        .map_err(|e| anyhow!("audio device {dev_name:?} cannot be opened: {e}. {NO_DEVICE_HINT}"))?
        .filter(|c| c.channels() == 2 && c.sample_format() == cpal::SampleFormat::F32)
        .find(|c| c.min_sample_rate() <= 48_000 && c.max_sample_rate() >= 48_000)
        .ok_or_else(|| anyhow!("audio device {dev_name:?} has no 48 kHz stereo float output"))?
        .with_sample_rate(48_000);
    let s = device
        .build_output_stream(
            config.into(),
            move |data: &mut [f32], _| stream.read_f32(data),
            |e| eprintln!("\naudio device error: {e}"),
            None,
        )
        .map_err(|e| anyhow!("cannot open audio device {dev_name:?}: {e}"))?;
    s.play()
        .map_err(|e| anyhow!("cannot start audio device {dev_name:?}: {e}"))?;
    eprintln!("audio output: {dev_name}");
    Ok(s)
}

pub fn run(args: PlayArgs) -> Result<()> {
    if args.list_midi {
        return list_midi();
    }
    let initial = live::initial_controls(&args.controls)?;
    let mut wav = args.record.as_deref().map(WavOut::create).transpose()?;
    let loaded = live::start_engine(&args.model, Some(1))?;
    let mut stream = loaded.engine.open(StreamConfig {
        seed: args.controls.seed,
        buffer_frames: args.live.buffer_frames(),
        initial,
        record: wav.is_some(),
    })?;
    let ctl = stream.controller();
    let recorder = stream.take_recorder();
    let _midi = connect_midi(args.midi_port.as_deref(), ctl.clone())?;

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
    let mut null_sink = None;
    let _device = if args.device == "null" {
        null_sink = Some(stream);
        None
    } else {
        Some(open_device(&args.device, stream)?)
    };
    let mut rec_buf = vec![0i16; FRAME_PCM];
    let mut recorder = recorder;
    let mut null_frame = vec![0i16; FRAME_PCM];
    let start = Instant::now();
    let mut played_null = 0u64;
    let mut last_status = Instant::now();
    eprintln!("playing — Ctrl-C stops");
    while !stop.load(Ordering::SeqCst)
        && args
            .seconds
            .is_none_or(|s| start.elapsed().as_secs_f64() < s)
    {
        if let Some(h) = null_sink.as_mut() {
            // Consume at real-time pace, as a device would.
            let due = (start.elapsed().as_secs_f64() / 0.04) as u64;
            while played_null < due {
                h.read_frame(&mut null_frame);
                played_null += 1;
            }
        }
        if let (Some(r), Some(w)) = (recorder.as_mut(), wav.as_mut()) {
            while let Ok(chunk) = r.read_chunk(FRAME_PCM) {
                let (a, b) = chunk.as_slices();
                rec_buf[..a.len()].copy_from_slice(a);
                rec_buf[a.len()..].copy_from_slice(b);
                chunk.commit_all();
                w.write(&rec_buf)?;
            }
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
    eprintln!();
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
