"""MusicCoCa through Python: ``embed_style`` / ``tokenize_style`` against the oracle
recording ``testdata/musiccoca/gate_seed1.npz`` (random weights of seed 1, written by
``rill synth-checkpoint --model musiccoca --seed 1`` once per session), text styles in
the conditioning, and the missing-assets error."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import rill_mrt
from conftest import REPO
from test_cli import rill_binary

GATE = REPO / "testdata" / "musiccoca"
PROMPT = "Deep House, 124 BPM"


@pytest.fixture(scope="session")
def gate():
    path = GATE / "gate_seed1.npz"
    if not path.exists():
        pytest.fail(f"missing reference file {path} (git checkout -- testdata/musiccoca/)")
    return np.load(path)


@pytest.fixture(scope="session")
def musiccoca_dir(tmp_path_factory):
    """Random-weight MusicCoCa assets of seed 1 (0.95 GB) with the test SentencePiece model."""
    d = tmp_path_factory.mktemp("musiccoca")
    subprocess.run(
        [rill_binary(), "synth-checkpoint", "--model", "musiccoca", "--seed", "1", "-o", str(d)],
        check=True,
        capture_output=True,
    )
    shutil.copy(GATE / "spm.model", d / "spm.model")
    return d


@pytest.fixture(scope="session")
def mrt_style(checkpoint, musiccoca_dir):
    return rill_mrt.MagentaRT2(checkpoint=checkpoint, precision="f32", musiccoca_dir=musiccoca_dir)


def assert_close(got, want, tol=1e-5):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    rel = np.max(np.abs(got - want)) / np.max(np.abs(want))
    assert rel < tol, f"relative max difference {rel:.3g}"


def test_text_embedding_and_tokens_are_upstreams(mrt_style, gate):
    emb = mrt_style.embed_style(PROMPT)
    assert emb.dtype == np.float32 and emb.shape == (768,)
    assert_close(emb, gate["text_embedding"][0])
    np.testing.assert_array_equal(mrt_style.tokenize_style(emb), gate["text_tokens"][0])
    # The oracle's embedding gives the oracle's tokens too.
    np.testing.assert_array_equal(
        mrt_style.tokenize_style(gate["text_embedding"][0]), gate["text_tokens"][0]
    )


def test_mapper_seed_0_is_upstreams(mrt_style, gate):
    assert int(gate["mapper_seeds"][0]) == 0
    emb = mrt_style.embed_style(PROMPT, use_mapper=True, seed=0)
    assert_close(emb, gate["mapper_embedding"][0, 0])
    np.testing.assert_array_equal(mrt_style.tokenize_style(emb), gate["mapper_tokens"][0, 0])


def test_audio_embedding_is_upstreams(mrt_style, gate):
    wav = gate["audio_waveform"]
    emb = mrt_style.embed_style(wav)
    assert_close(emb, gate["audio_embedding"])
    np.testing.assert_array_equal(mrt_style.tokenize_style(emb), gate["audio_tokens"])
    # A Waveform carries its rate; one 16 kHz clip stays one clip unpooled.
    assert_close(mrt_style.embed_style(rill_mrt.Waveform(wav, 16_000)), gate["audio_embedding"])
    clips = mrt_style.embed_style(wav, pool_across_time=False)
    assert clips.shape == (1, 768)
    assert_close(clips[0], gate["audio_embedding"])


def test_long_audio_per_clip_and_pooled(mrt_style, gate):
    wav = gate["audio_long_waveform"]
    clips = mrt_style.embed_style(wav, pool_across_time=False)
    assert_close(clips, gate["audio_long_clip_embeddings"])
    assert_close(mrt_style.embed_style(wav), gate["audio_long_embedding"])


def test_stereo_at_another_rate_is_downmixed_and_resampled(mrt_style, gate):
    """Two identical channels at 16 kHz are the mono clip; 32 kHz is resampled."""
    wav = gate["audio_waveform"]
    stereo = np.stack([wav, wav], axis=1)
    assert_close(mrt_style.embed_style(stereo, sample_rate=16_000), gate["audio_embedding"])
    up = np.repeat(wav, 2)  # crude 32 kHz version: close, not equal
    emb = mrt_style.embed_style(up, sample_rate=32_000)
    assert emb.shape == (768,) and np.all(np.isfinite(emb))


def test_text_in_the_conditioning_is_embedded_without_mapper(mrt_style, gate):
    def toks(style):
        return mrt_style.generate_tokens({"mulan_tokens_25hz": style}, frames=2)[0]

    by_codes = toks(gate["text_tokens"][0])
    np.testing.assert_array_equal(toks(PROMPT), by_codes)
    np.testing.assert_array_equal(toks(gate["text_embedding"][0]), by_codes)
    np.testing.assert_array_equal(
        mrt_style.conditioning_tokens({"mulan_tokens_25hz": PROMPT})[:12], gate["text_tokens"][0] + 7
    )


@pytest.mark.parametrize(
    "bad",
    ["", "   ", np.zeros(767, np.float32), np.full(768, np.nan, np.float32), np.zeros(12, np.float32)],
    ids=["empty", "blank", "767-floats", "nan", "12-floats"],
)
def test_bad_styles_raise_value_error(mrt_style, bad):
    with pytest.raises(ValueError):
        mrt_style.generate_tokens({"mulan_tokens_25hz": bad}, frames=1)


def test_bad_embed_inputs(mrt_style):
    with pytest.raises(TypeError):
        mrt_style.embed_style(42)
    with pytest.raises(ValueError):
        mrt_style.embed_style(np.zeros(0, np.float32))
    with pytest.raises(ValueError):
        mrt_style.embed_style(np.zeros(100, np.int16))
    with pytest.raises(ValueError):
        mrt_style.embed_style(PROMPT, use_mapper=True, seed=-1)
    with pytest.raises(ValueError):
        mrt_style.tokenize_style(np.zeros(10, np.float32))


def test_missing_assets_say_how_to_download(checkpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RILL_MUSICCOCA", raising=False)
    monkeypatch.delenv("MAGENTA_HOME", raising=False)
    with pytest.raises(FileNotFoundError, match="google/magenta-realtime-2"):
        rill_mrt.MusicCoCa(tmp_path / "nowhere")
    # The system loads MusicCoCa on first use only: constructing it does not fail.
    m = rill_mrt.MagentaRT2(checkpoint=checkpoint, musiccoca_dir=tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="huggingface-cli download"):
        m.embed_style(PROMPT)
    with pytest.raises(FileNotFoundError, match="resources/musiccoca"):
        m.generate_tokens({"mulan_tokens_25hz": "disco funk"}, frames=1)


def test_missing_assets_not_found_beside_the_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RILL_MUSICCOCA", raising=False)
    monkeypatch.delenv("MAGENTA_HOME", raising=False)
    with pytest.raises(FileNotFoundError, match="google/magenta-realtime-2"):
        rill_mrt.MusicCoCa(checkpoint=tmp_path / "checkpoints" / "x.safetensors")
