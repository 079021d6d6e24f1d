"""`rill serve`'s OpenAI-compatible speech API through the official `openai` Python
client (PyPI), as an OpenAI user's code calls it: a random-weight voice, wav and pcm,
streaming, the model list, and errors raised by the client with rill's reasons.

Run by .ci/run: `RILL_BIN=target/release/rill python -m pytest -q` on this folder, with
`XDG_CACHE_HOME` pointing at a cache that may already hold the random-weight checkpoint
(`rill serve --random-weights` synthesises it otherwise).
"""

import os
import re
import subprocess
import threading

import openai
import pytest

FRAMES = 8  # 46.4 ms each: short requests on random weights, which never say EOS
SAMPLES = FRAMES * 1024  # at 22.05 kHz


@pytest.fixture(scope="module")
def base_url():
    rill = os.environ.get("RILL_BIN", "target/release/rill")
    assert os.path.exists(rill), f"{rill} is missing: build it (cargo build --release)"
    proc = subprocess.Popen(
        [rill, "serve", "--random-weights", "--tts-random-weights", "--addr", "127.0.0.1:0",
         "--max-sessions", "1", "--threads", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    found = threading.Event()
    address = {}

    def read():
        for line in proc.stderr:
            lines.append(line)
            m = re.search(r"listening on (http://[0-9.:]+)/", line)
            if m and not found.is_set():
                address["url"] = m.group(1)
                found.set()

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(600):
        proc.kill()
        pytest.fail("rill serve did not start:\n" + "".join(lines))
    yield address["url"] + "/v1"
    proc.terminate()
    proc.wait(30)


@pytest.fixture(scope="module")
def client(base_url):
    return openai.OpenAI(base_url=base_url, api_key="not-needed", max_retries=0, timeout=300)


def test_models_lists_the_voice(client):
    ids = [m.id for m in client.models.list()]
    assert ids == ["magpie-tts-multilingual"]


def test_wav_speech(client):
    audio = client.audio.speech.create(
        model="magpie-tts-multilingual", voice="0", input="Hello there.",
        response_format="wav", extra_body={"max_frames": FRAMES})
    data = audio.content
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    assert int.from_bytes(data[24:28], "little") == 22050
    assert len(data) == 44 + 2 * SAMPLES


def test_streamed_pcm_at_24_khz(client):
    chunks = []
    with client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="1", input="It costs $3.50.", response_format="pcm",
            extra_body={"max_frames": FRAMES}) as response:
        assert response.headers["content-type"] == "audio/pcm"
        for chunk in response.iter_bytes():
            chunks.append(chunk)
    data = b"".join(chunks)
    # round(n · 24000 / 22050) 16-bit samples, halves up
    assert len(data) == 2 * ((2 * SAMPLES * 24000 + 22050) // (2 * 22050))


@pytest.mark.parametrize("kwargs, needle", [
    ({"voice": "alloy"}, "voices: 0, 1, 2, 3, 4"),
    ({"speed": 1.5}, "no rate control"),
    ({"response_format": "mp3"}, "use wav"),
    ({"extra_body": {"language": "xx"}}, "valid codes"),
    ({"model": "whisper-1"}, "GET /v1/models"),
])
def test_bad_requests_raise_with_the_reason(client, kwargs, needle):
    args = {"model": "tts-1", "voice": "0", "input": "Hi.", **kwargs}
    with pytest.raises(openai.BadRequestError) as e:
        client.audio.speech.create(**args)
    assert needle in str(e.value)
