//! Audio device output (cpal) and MIDI input (midir), built with the `audio`
//! feature (they link the system's ALSA library on Linux).

use anyhow::{anyhow, bail, Result};
use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use rill_stream::{Control, StreamController, StreamHandle};

/// An open MIDI input connection (dropped = disconnected).
pub type MidiConnection = midir::MidiInputConnection<()>;
/// A running output stream (dropped = stopped).
pub type OutputStream = cpal::Stream;

/// What to do on a machine without a usable sound device.
const NO_DEVICE_HINT: &str =
    "Without a sound card (containers, SSH sessions) use `--device null --record out.wav`, \
or `rill serve` and open the page in a browser.";

pub fn list_midi() -> Result<()> {
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
pub fn connect_midi(want: Option<&str>, ctl: StreamController) -> Result<Option<MidiConnection>> {
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
pub fn open_device(name: &str, mut stream: StreamHandle) -> Result<OutputStream> {
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
