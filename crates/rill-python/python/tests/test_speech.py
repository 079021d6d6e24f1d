"""Magpie TTS through Python (``rill_mrt.Speech``): the same audio as ``rill speak``.

Random weights (seed 0, the test oracle's recipe) never say EOS, so every call caps
its frames. One model serves the module (its full-table copy loads on the first
non-English call, as ``rill speak --random-weights --language fr`` does).
"""

import subprocess
import threading
import time
import wave

import numpy as np
import pytest

import rill_mrt
from test_cli import rill_binary

TEXT = "Hello world."
FRAMES = 4


@pytest.fixture(scope="module")
def tts():
    return rill_mrt.Speech(random_weights=0)


def cli_pcm(tmp_path, text, *flags):
    """``rill speak --random-weights`` of ``text`` (capped) as int16 samples."""
    out = tmp_path / "cli.wav"
    cmd = [
        rill_binary(), "speak", "--random-weights", "--max-frames", str(FRAMES),
        "--text", text, "-o", str(out), *flags,
    ]
    subprocess.run(cmd, check=True, capture_output=True)
    with wave.open(str(out)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (22050, 1, 2)
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


def test_properties(tts):
    assert tts.sample_rate == rill_mrt.SPEECH_SAMPLE_RATE == 22050
    assert tts.voices == ["0", "1", "2", "3", "4"]  # random weights name none
    assert {"en", "es", "fr", "it", "vi", "hi"} <= set(tts.languages)
    assert "Speech(5 voices" in repr(tts)


def test_speak_equals_cli(tts, tmp_path):
    wav = tts.speak(TEXT, max_frames=FRAMES)
    assert isinstance(wav, rill_mrt.Waveform)
    assert (wav.sample_rate, wav.num_channels, wav.num_samples) == (22050, 1, FRAMES * 1024)
    assert wav.samples.dtype == np.float32 and wav.tokens.shape == (FRAMES, 8)
    assert wav.peak_amplitude > 0
    np.testing.assert_array_equal(wav.as_int16()[:, 0], cli_pcm(tmp_path, TEXT))


def test_stream_concatenates_to_speak(tts):
    whole = tts.speak(TEXT, voice=2, seed=7, max_frames=FRAMES)
    chunks = list(tts.stream(TEXT, voice=2, seed=7, max_frames=FRAMES))
    assert len(chunks) == FRAMES
    assert all(c.shape == (1024,) and c.dtype == np.float32 for c in chunks)
    np.testing.assert_array_equal(np.concatenate(chunks), whole.samples[:, 0])
    # Another voice or seed is other audio.
    assert not np.array_equal(tts.speak(TEXT, max_frames=FRAMES).samples, whole.samples)


def test_french_equals_cli(tts, tmp_path):
    text = "Bonjour à tous."
    wav = tts.speak(text, language="fr", max_frames=FRAMES)
    np.testing.assert_array_equal(
        wav.as_int16()[:, 0], cli_pcm(tmp_path, text, "--language", "fr")
    )
    # A name works as well as a code.
    np.testing.assert_array_equal(
        tts.speak(text, language="French", max_frames=FRAMES).samples, wav.samples
    )


def test_normalize_false_is_nemos_raw_path(tts, tmp_path):
    text = "It costs $3.50."
    with pytest.warns(RuntimeWarning, match=r"'\$'"):  # NeMo's raw path drops '$'
        raw = tts.speak(text, normalize=False, max_frames=FRAMES)
    spoken = tts.speak(text, max_frames=FRAMES)
    assert not np.array_equal(raw.samples, spoken.samples)
    np.testing.assert_array_equal(
        raw.as_int16()[:, 0], cli_pcm(tmp_path, text, "--no-normalize")
    )


def test_unknown_language_names_the_valid_codes(tts):
    with pytest.raises(ValueError, match=r"klingon.*en.*fr"):
        tts.speak(TEXT, language="klingon", max_frames=1)


def test_japanese_needs_openjtalks_dictionary(tts, tmp_path):
    """Spoken as ``rill speak`` speaks it where the machine has OpenJTalk's dictionary
    (CI installs Debian's), else refused naming the package."""
    import os

    text = "こんにちは、世界。"
    where = os.environ.get("OPEN_JTALK_DICT_DIR", "/var/lib/mecab/dic/open-jtalk/naist-jdic")
    if os.path.isdir(where):
        wav = tts.speak(text, language="ja", max_frames=FRAMES)
        np.testing.assert_array_equal(
            wav.as_int16()[:, 0], cli_pcm(tmp_path, text, "--language", "ja")
        )
    else:
        with pytest.raises(ValueError, match="open-jtalk-mecab-naist-jdic"):
            tts.speak(text, language="ja", max_frames=1)


def test_unknown_voice_names_the_valid_ones(tts):
    with pytest.raises(ValueError, match=r"0\.\.4"):
        tts.speak(TEXT, voice="Sofia", max_frames=1)
    with pytest.raises(ValueError, match=r"0\.\.4"):
        tts.speak(TEXT, voice=5, max_frames=1)
    with pytest.raises(ValueError):
        tts.speak(TEXT, voice=-1, max_frames=1)
    with pytest.raises(TypeError):
        tts.speak(TEXT, voice=1.5, max_frames=1)
    # An index as text is an index.
    np.testing.assert_array_equal(
        tts.speak(TEXT, voice="3", max_frames=2).samples,
        tts.speak(TEXT, voice=3, max_frames=2).samples,
    )


def test_bad_arguments_are_value_errors(tts):
    for kw in (dict(max_frames=0), dict(temperature=float("nan")), dict(top_k=0)):
        with pytest.raises(ValueError):
            tts.speak(TEXT, **{"max_frames": 1, **kw})
    with pytest.raises(ValueError, match="empty"):
        tts.speak("   ", max_frames=1)
    with pytest.raises(ValueError, match="precision"):
        rill_mrt.Speech(random_weights=0, precision="f8")
    with pytest.raises(FileNotFoundError, match="huggingface-cli download"):
        rill_mrt.Speech(checkpoint="no-such-magpie.nemo", codec="no-such-codec.nemo")


def test_dropped_characters_warn_once(tts):
    with pytest.warns(RuntimeWarning, match=r"U\+1F600") as record:
        wav = tts.speak("Hello 😀 world.", max_frames=1)
    assert len([w for w in record if issubclass(w.category, RuntimeWarning)]) == 1
    assert wav.num_samples == 1024
    # Streams warn when they start, before any audio.
    with pytest.warns(RuntimeWarning, match=r"U\+1F600"):
        s = tts.stream("Hello 😀 world.", max_frames=1)
    assert len(list(s)) == 1


def test_closing_a_stream_stops_it(tts):
    s = tts.stream(TEXT, max_frames=500)
    first = next(s)
    assert first.shape == (1024,)
    s.close()
    assert list(s) == []
    # Dropping a stream mid-speech is fine too (its thread stops at its next frame).
    s = tts.stream(TEXT, max_frames=500)
    next(s)
    del s
    assert tts.speak(TEXT, max_frames=1).num_samples == 1024


def test_speak_releases_the_gil(tts):
    done = threading.Event()
    worker = threading.Thread(
        target=lambda: (tts.speak(TEXT, max_frames=12), done.set())
    )
    ticks = 0
    worker.start()
    time.sleep(0.05)
    while not done.is_set():
        ticks += 1
        time.sleep(0.002)
    worker.join()
    assert ticks >= 20, ticks
