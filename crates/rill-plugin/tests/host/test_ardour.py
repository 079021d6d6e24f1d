"""The VST3 bundle in a DAW: Ardour (Debian's `ardour`: 7.3 in bookworm), headless
through its Lua session tool `ardourN-lua` on the dummy audio backend. A session with one MIDI
track whose instrument is rill, the style preset "Piano" and drums on set as
Ardour sets automation, exported (4 s, 32-bit float) with Ardour's own export:
the samples equal `rill generate --style-codes <upstream's piano codes> --drums on`
(Ardour compensates the latency the plugin reports, so the bounce starts at 0).

Ardour does not tell a VST3 plugin that an export renders offline, so the bounce
sets the plugin's *Offline render* parameter (docs/plugin.md says so to users).
No notes: Ardour's Lua has no call that makes a MIDI region; the notes' timing is
checked in the pedalboard and CLAP tests.

Needs `ardourN-lua`; with RILL_ARDOUR_TEST=1 (as .ci/run sets) its absence is a
failure, else the test is skipped.
"""

import os
import pathlib
import shutil
import struct
import subprocess

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
# Debian's package is Ardour 7 in bookworm, 8 later: `ardourN-lua`, its libraries
# and VST3 scanner in /usr/lib/ardourN, its settings in ~/.config/ardourN.
ARDOUR_LUA, VERSION = next(((shutil.which(f"ardour{n}-lua"), n) for n in (9, 8, 7)
                            if shutil.which(f"ardour{n}-lua")), (None, None))
LIB = pathlib.Path(f"/usr/lib/ardour{VERSION}")

if not ARDOUR_LUA:
    if os.environ.get("RILL_ARDOUR_TEST") == "1":
        raise RuntimeError("RILL_ARDOUR_TEST=1 but no ardourN-lua is installed (apt-get install ardour)")
    pytest.skip("no ardourN-lua is installed (apt-get install ardour)", allow_module_level=True)

from test_vst3_host import BUNDLE, PIANO, generate  # noqa: E402 (pedalboard, after the skip)


def float_wav(path):
    """A 32-bit float WAV's samples, [channels, n] (its own reader: no scaling)."""
    data = path.read_bytes()
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    pos, channels, fmt = 12, None, None
    while pos < len(data):
        tag, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = data[pos + 8:pos + 8 + size]
        if tag == b"fmt ":
            fmt, channels = struct.unpack("<HH", body[:4])
        elif tag == b"data":
            assert fmt == 3, f"format {fmt}, not IEEE float"
            return np.frombuffer(body, dtype="<f4").reshape(-1, channels).T
        pos += 8 + size + (size & 1)
    raise AssertionError("no data chunk")


def test_an_ardour_export_equals_rill_generate(tmp_path):
    want, checkpoint = generate(tmp_path, 4, ["--style-codes", ",".join(map(str, PIANO)),
                                              "--drums", "on"], notes=())
    # Ardour's own settings and caches in the test's folder, not the user's.
    home = tmp_path / "ardour-home"
    config = home / "config" / f"ardour{VERSION}"
    (config / "export").mkdir(parents=True)
    (config / "config").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<Ardour><Config>'
        '<Option name="hide-dummy-backend" value="0"/></Config></Ardour>\n')
    shutil.copy(HERE / "ardour" / "export.format", config / "export" / "rill-bounce.format")
    shutil.copy(HERE / "ardour" / "export.preset", config / "export" / "rill-bounce.preset")
    env = dict(os.environ, XDG_CONFIG_HOME=str(home / "config"),
               XDG_CACHE_HOME=str(home / "cache"), VST3_PATH=str(BUNDLE.parent),
               LD_LIBRARY_PATH=str(LIB), RILL_CHECKPOINT=str(checkpoint),
               RILL_OUT=str(tmp_path), RILL_SECONDS="4",
               # Ardour takes a choice's index and a boolean as 0/1: Style 2 is the
               # Piano preset (Off, Codes, then style.rs's PRESETS), Drums 2 is On.
               RILL_PARAMS="Style=2;Drums=2;Offline render=1")
    # Ardour lists a VST3 once its scanner has indexed the bundle (as its plugin
    # manager does at start-up in the GUI).
    subprocess.run([str(LIB / "ardour-vst3-scanner"), "-q", str(BUNDLE)], env=env, check=True,
                   timeout=120)
    run = subprocess.run([ARDOUR_LUA, str(HERE / "ardour" / "bounce.lua")], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "rill bounce written" in run.stdout, run.stdout + run.stderr
    # Ardour names the file after the export preset's fields ("export.wav").
    wavs = [p for p in tmp_path.glob("*.wav") if p.name != "generate.wav"]
    assert len(wavs) == 1, wavs
    got = float_wav(wavs[0])
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.abs(want).max() > 0, "rill generate made silence"
    got16 = np.round(got.astype(np.float64) * 32768).astype(np.int32)
    differ = np.nonzero(np.any(got16 != want, axis=0))[0]
    assert differ.size == 0, f"{differ.size} samples differ, the first at {differ[0]}"
