//! Without the `audio` feature: no device output or MIDI input, with errors that
//! say how to get them (the `null` device, recording and `rill serve` still work).

use anyhow::{bail, Result};
use rill_stream::{StreamController, StreamHandle};

pub type MidiConnection = ();
pub type OutputStream = ();

const REBUILD: &str = "this rill was built without audio-device and MIDI support. Rebuild with \
`cargo build --release --features audio` (needs the ALSA headers: apt-get install libasound2-dev \
pkg-config), or use `--device null --record out.wav`, or `rill serve` and a browser";

pub fn list_midi() -> Result<()> {
    bail!("{REBUILD}")
}

pub fn connect_midi(want: Option<&str>, _ctl: StreamController) -> Result<Option<MidiConnection>> {
    if want.is_some() {
        bail!("{REBUILD}");
    }
    eprintln!("note: built without MIDI support; playing the --notes given (if any)");
    Ok(None)
}

pub fn open_device(_name: &str, _stream: StreamHandle) -> Result<OutputStream> {
    bail!("{REBUILD}")
}
