"""`rill serve --wyoming` through the `wyoming` Python package (PyPI), the way Home
Assistant's Wyoming integration uses it: `AsyncTcpClient`, `Describe` → `Info`,
`Synthesize` with a `SynthesizeVoice` → `AudioStart`, `AudioChunk`s, `AudioStop`;
the streaming form; errors as `Error` events.

Run by .ci/run: `RILL_BIN=target/release/rill python -m pytest -q` on this folder, with
`XDG_CACHE_HOME` pointing at a cache that may already hold the random-weight checkpoint
(`rill serve --random-weights` synthesises it otherwise).
"""

import asyncio
import os
import re
import subprocess
import threading

import pytest
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

FRAMES = 8  # 46.4 ms each (rill serve --tts-max-frames): random weights never say EOS
SAMPLES = FRAMES * 1024  # at 22.05 kHz


@pytest.fixture(scope="module")
def address():
    rill = os.environ.get("RILL_BIN", "target/release/rill")
    assert os.path.exists(rill), f"{rill} is missing: build it (cargo build --release)"
    proc = subprocess.Popen(
        [rill, "serve", "--random-weights", "--tts-random-weights", "--addr", "127.0.0.1:0",
         "--wyoming", "127.0.0.1:0", "--tts-max-frames", str(FRAMES),
         "--max-sessions", "1", "--threads", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    found = threading.Event()
    where = {}

    def read():
        for line in proc.stderr:
            lines.append(line)
            m = re.search(r"Wyoming on tcp://([0-9.]+):([0-9]+)", line)
            if m and not found.is_set():
                where["host"], where["port"] = m.group(1), int(m.group(2))
                found.set()

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(600):
        proc.kill()
        pytest.fail("rill serve did not start:\n" + "".join(lines))
    yield where["host"], where["port"]
    proc.terminate()
    proc.wait(30)


async def _exchange(address, events, until):
    """Sends `events`, returns the events read until one of type `until` (or the close)."""
    got = []
    async with AsyncTcpClient(address[0], address[1], read_timeout=300) as client:
        for e in events:
            await client.write_event(e.event())
        while True:
            event = await client.read_event()
            if event is None:
                return got, True
            got.append(event)
            if event.type in until:
                return got, False


def exchange(address, events, until=("audio-stop",)):
    return asyncio.run(_exchange(address, events, until))


def audio(events):
    start = AudioStart.from_event(events[0])
    assert (start.rate, start.width, start.channels) == (22050, 2, 1)
    assert AudioStop.is_type(events[-1].type)
    chunks = [AudioChunk.from_event(e) for e in events[1:-1]]
    assert all(AudioChunk.is_type(e.type) for e in events[1:-1])
    assert all(c.rate == 22050 and c.width == 2 and c.channels == 1 for c in chunks)
    return b"".join(c.audio for c in chunks)


def test_describe_lists_the_voices(address):
    events, _ = exchange(address, [Describe()], until=("info",))
    info = Info.from_event(events[-1])
    assert [p.name for p in info.tts] == ["rill"]
    program = info.tts[0]
    assert program.installed
    names = [v.name for v in program.voices]
    assert names[:2] == ["0", "1"]
    assert all(v.languages == ["en"] for v in program.voices)


def test_synthesize_as_home_assistant_does(address):
    # Home Assistant sends the voice's name (and a speaker when set).
    events, _ = exchange(address, [Synthesize(text="It costs $3.50.",
                                              voice=SynthesizeVoice(name="1"))])
    assert len(audio(events)) == 2 * SAMPLES
    # A language-only voice, as other clients send it.
    events, _ = exchange(address, [Synthesize(text="Hello there.",
                                              voice=SynthesizeVoice(language="en_US"))])
    assert len(audio(events)) == 2 * SAMPLES


def test_streamed_synthesis(address):
    events, closed = exchange(address, [
        SynthesizeStart(voice=SynthesizeVoice(name="0")),
        SynthesizeChunk(text="Hello "),
        SynthesizeChunk(text="there."),
        Synthesize(text="Hello there."),
        SynthesizeStop(),
    ], until=("synthesize-stopped",))
    assert not closed
    assert SynthesizeStopped.is_type(events[-1].type)
    assert len(audio(events[:-1])) == 2 * SAMPLES


@pytest.mark.parametrize("voice,says", [
    (SynthesizeVoice(name="alloy"), "not a voice"),
    (SynthesizeVoice(language="xx"), "not spoken"),
])
def test_errors(address, voice, says):
    events, closed = exchange(address, [Synthesize(text="Hi.", voice=voice)], until=())
    assert closed
    assert len(events) == 1 and Error.is_type(events[0].type)
    assert says in Error.from_event(events[0]).text
