"""The Python API reproduces the reference recordings (testdata/mrt2) of upstream
magenta-rt 2.0.3: tokens exactly, logits within the Rust parity tests' bounds."""

import numpy as np

import rill_mrt
from conftest import cosine

FRAMES = 12  # of D1's 100: enough for every depth step, short for CI


def test_d1_free_running_tokens(mrt, d1):
    assert d1.meta["sampler_seed"] == mrt.seed == 42
    tokens, state = mrt.generate_tokens(d1.conditioning(), frames=FRAMES, **d1.sampling())
    assert tokens.dtype == np.int32 and tokens.shape == (FRAMES, 12)
    np.testing.assert_array_equal(tokens, d1.tokens[:FRAMES])
    assert state.frame == FRAMES and state.has_audio is False


def test_d1_teacher_forced_logits(mrt, d1):
    forced = d1.tokens[:FRAMES]
    tokens, logits, _ = mrt.generate_tokens(
        d1.conditioning(), forced_tokens=forced, return_logits=True, **d1.sampling()
    )
    np.testing.assert_array_equal(tokens, forced)
    want = d1.arrays["logits_level"][:FRAMES]
    assert logits.shape == want.shape == (FRAMES, 12, 1024) and logits.dtype == np.float32
    # crates/rill-mrt2/tests/parity.rs, F32: cosine ≥ 1 − 1e-11, max |diff| ≤ 1e-4.
    for n in range(FRAMES):
        for k in range(12):
            c = cosine(logits[n, k], want[n, k])
            assert c >= 1 - 1e-11, (n, k, 1 - c)
    assert np.abs(logits - want).max() <= 1e-4


def test_d1_audio(mrt, d1):
    """generate(): the same tokens with audio; the int16 audio within the codec
    parity tests' bounds (≤ 1 LSB, ≥ 99.3 % identical) and upstream's scaling."""
    wav, state = mrt.generate(d1.conditioning(), frames=FRAMES, **d1.sampling())
    assert isinstance(wav, rill_mrt.Waveform)
    assert wav.sample_rate == 48000 and wav.samples.dtype == np.float32
    assert wav.samples.shape == (FRAMES * 1920, 2)
    np.testing.assert_array_equal(wav.tokens, d1.tokens[:FRAMES])
    # upstream: Waveform(int16.astype(float32) / 32768)
    pcm = wav.samples * 32768.0
    np.testing.assert_array_equal(pcm, np.round(pcm))
    want = d1.arrays["audio_int16"][:FRAMES].reshape(-1, 2).astype(np.int32)
    diff = np.abs(wav.as_int16().astype(np.int32) - want)
    assert diff.max() <= 1 and (diff == 0).mean() >= 0.993
    assert state.frame == FRAMES and state.has_audio


def test_d1_bf16_teacher_forced_logits(checkpoint, d1_bf16):
    rec = d1_bf16
    assert rec.meta["precision"] == "bf16"
    bf16 = rill_mrt.MagentaRT2(checkpoint=checkpoint, precision="bf16")
    assert bf16.precision == "bf16"
    frames = 8
    _, logits, _ = bf16.generate_tokens(
        rec.conditioning(), forced_tokens=rec.tokens[:frames], return_logits=True, **rec.sampling()
    )
    want = rec.arrays["logits_level"][:frames]
    # crates/rill-mrt2/tests/parity.rs, BF16: logits cosine ≥ 1 − 2e-4.
    worst = min(cosine(logits[n, k], want[n, k]) for n in range(frames) for k in range(12))
    assert worst >= 1 - 2e-4, 1 - worst


def test_d1_mlx_int8_free_running_tokens(checkpoint):
    """Upstream's default (bits=8) is rill's mlx-int8: D1-int8's tokens (the Rust tests
    compare its first 22 frames)."""
    from conftest import Recording

    rec = Recording("D1-int8")
    m = rill_mrt.MagentaRT2(checkpoint=checkpoint, bits=8)
    assert m.precision == "mlx-int8"
    frames = 6
    tokens, _ = m.generate_tokens(rec.conditioning(), frames=frames, **rec.sampling())
    np.testing.assert_array_equal(tokens, rec.tokens[:frames])
