"""Style levels (12 as upstream's Python, 6 as its C++ engine) and continuing from
audio: the same as `rill generate --style-levels … --continue-from …`."""

import os
import subprocess
import wave

import numpy as np
import pytest

import rill_mrt
from conftest import Recording
from test_cli import rill_binary

FRAMES = 12  # of D1-levels6's 100, as test_parity
STYLE = [325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]


@pytest.fixture(scope="module")
def d1_levels6():
    return Recording("D1-levels6")


def test_six_levels_are_upstream_cpp_block_and_tokens(mrt, d1_levels6):
    """D1 recorded with levels 6–11 masked (testdata/mrt2/record_style_levels.py)."""
    rec = d1_levels6
    assert rec.meta["style_levels"] == 6
    c = {"mulan_tokens_25hz": rec.meta["style_codes"]}
    np.testing.assert_array_equal(
        mrt.conditioning_tokens(c, rec.meta["cfg_scales"], style_levels=6), rec.arrays["cond_tokens"]
    )
    assert list(rec.arrays["cond_tokens"][6:12]) == [6] * 6
    tokens, _ = mrt.generate_tokens(c, frames=FRAMES, style_levels=6, **rec.sampling())
    np.testing.assert_array_equal(tokens, rec.tokens[:FRAMES])
    # All 12 levels is another stream (D1's).
    twelve, _ = mrt.generate_tokens(c, frames=FRAMES, **rec.sampling())
    assert not np.array_equal(twelve, tokens)


def test_style_levels_is_6_or_12(mrt):
    c = {"mulan_tokens_25hz": STYLE}
    for bad in (0, 7, 13, -6):
        with pytest.raises(ValueError, match="style_levels is"):
            mrt.generate_tokens(c, frames=1, style_levels=bad)
    with pytest.raises(ValueError, match="must be an integer"):
        mrt.generate_tokens(c, frames=1, style_levels="6")
    t12 = mrt.conditioning_tokens(c)
    t6 = mrt.conditioning_tokens(c, style_levels=6)
    np.testing.assert_array_equal(t12[:6], t6[:6])
    assert list(t6[6:12]) == [6] * 6 and list(t12[6:12]) == [s + 7 for s in STYLE[6:]]


def write_clip(path, seconds=3.0, rate=44100):
    """A mono 16-bit chord (rill resamples and duplicates it)."""
    t = np.arange(int(seconds * rate)) / rate
    s = sum(np.sin(2 * np.pi * f * t) for f in (220.0, 277.2, 329.6))
    pcm = (s * 6000.0).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return pcm.astype(np.float32) / 32768.0, rate


def cli_continuation(tmp_path, checkpoint, clip, frames, extra):
    """`rill generate --random-weights --continue-from` with a cache holding the test
    checkpoint (the same bytes), so the CLI synthesises only the encoder there."""
    cache = tmp_path / "cache"
    (cache / "rill").mkdir(parents=True, exist_ok=True)
    link = cache / "rill" / "mrt2_small_random_seed0.safetensors"
    if not link.exists():
        os.symlink(os.path.abspath(checkpoint), link)
    out, toks = tmp_path / "cli.wav", tmp_path / "cli.npy"
    cmd = [
        rill_binary(), "generate", "--random-weights", "--continue-from", str(clip),
        "--frames", str(frames), "--style-codes", ",".join(map(str, STYLE)),
        "--precision", "f32", "--codec", "f32", "-o", str(out), "--tokens-out", str(toks), *extra,
    ]
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "frames prefilled" in r.stderr, r.stderr
    with wave.open(str(out)) as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, 2)
    encoder = cache / "rill" / "spectrostream_encoder_random_seed0.safetensors"
    assert encoder.is_file()
    return np.load(toks), pcm, encoder


@pytest.mark.parametrize("keep_style", [False, True])
def test_continuation_equals_cli(mrt, checkpoint, tmp_path, keep_style):
    frames = 4
    clip = tmp_path / "clip.wav"
    samples, rate = write_clip(clip)
    extra = ["--style-levels", "6"] + (["--keep-style-during-prefill"] if keep_style else [])
    cli_tokens, cli_pcm, encoder = cli_continuation(tmp_path, checkpoint, clip, frames, extra)
    assert cli_pcm.shape == (frames * 1920, 2)

    c = {"mulan_tokens_25hz": STYLE}
    kw = dict(frames=frames, style_levels=6, keep_style_during_prefill=keep_style, encoder=encoder)
    wav, state = mrt.generate(c, continue_from=clip, **kw)
    np.testing.assert_array_equal(wav.tokens, cli_tokens)
    np.testing.assert_array_equal(wav.as_int16(), cli_pcm)
    # The same clip as a Waveform (44.1 kHz mono, resampled and duplicated by rill).
    wav2, _ = mrt.generate(c, continue_from=rill_mrt.Waveform(samples, rate), **kw)
    np.testing.assert_array_equal(wav2.tokens, cli_tokens)
    # Tokens only: the same language-model stream.
    tokens, _ = mrt.generate_tokens(c, continue_from=clip, **kw)
    np.testing.assert_array_equal(tokens, cli_tokens)
    # The returned state continues the stream.
    more, _ = mrt.generate(c, frames=2, state=state, style_levels=6)
    assert more.tokens.shape == (2, 12)


def test_continuation_errors(mrt, checkpoint, tmp_path):
    c = {"mulan_tokens_25hz": STYLE}
    short = rill_mrt.Waveform(np.zeros((48000, 2), np.float32), 48000)  # 1 s < 2.04 s
    with pytest.raises(ValueError, match="too short"):
        mrt.generate(c, frames=1, continue_from=short, encoder=checkpoint)
    longer = rill_mrt.Waveform(np.zeros((3 * 48000, 2), np.float32), 48000)
    with pytest.raises(FileNotFoundError, match="encoder"):
        mrt.generate(c, frames=1, continue_from=longer, encoder=tmp_path / "none.safetensors")
    with pytest.raises(TypeError, match="continue_from"):
        mrt.generate(c, frames=1, continue_from=3.5)
    (tmp_path / "x.wav").write_text("not audio")
    with pytest.raises(ValueError, match="continue_from"):
        mrt.generate(c, frames=1, continue_from=tmp_path / "x.wav", encoder=checkpoint)
    _, state = mrt.generate_tokens(c, frames=1)
    with pytest.raises(ValueError, match="continue_from starts a new stream"):
        mrt.generate_tokens(c, frames=1, state=state, continue_from=longer, encoder=checkpoint)
