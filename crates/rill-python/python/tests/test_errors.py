"""Bad input raises the right exception with the library's message; nothing panics."""

import numpy as np
import pytest

import rill_mrt

STYLE = [660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22]


@pytest.mark.parametrize(
    "conditioning, match",
    [
        ({"mulan_tokens_25hz": STYLE[:11]}, "needs 12 values"),
        ({"mulan_tokens_25hz": STYLE[:11] + [1024]}, "0..=1023"),
        ({"mulan_tokens_25hz": [-1] + STYLE[1:]}, "masks the style as a whole"),
        ({"mulan_tokens_25hz": [-2] * 12}, "0..=1023"),
        ({"pianoroll_with_onsets_tokens": [0] * 127}, "needs 128 values"),
        ({"pianoroll_with_onsets_tokens": [4] * 128}, "is not one of -1"),
        ({"pianoroll_with_onsets_tokens": np.zeros(128)}, "must hold integers"),
        ({"drum_pianoroll_tokens": [2]}, "drum_pianoroll_tokens value 2"),
        ({"drum_pianoroll_tokens": [0, 1]}, "needs 1 values"),
        ({"cfg_conditioning_tokens": [41, 0]}, "0..40"),
        ({"cfg_conditioning_drums_tokens": [9]}, "0..8"),
        ({"style": STYLE}, "unknown conditioning key 'style'"),
    ],
)
def test_bad_conditioning(mrt, conditioning, match):
    with pytest.raises(ValueError, match=match):
        mrt.generate(conditioning, frames=1)
    with pytest.raises(ValueError, match=match):
        mrt.generate_tokens(conditioning, frames=1)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(temperature=-1.0), "temperature"),
        (dict(temperature=float("nan")), "temperature"),
        (dict(top_k=0), "top-k"),
        (dict(top_k=12295), "top-k"),
        (dict(top_k=2.5), "top_k must be an integer"),
        (dict(cfg_scales={"musiccoca": float("inf")}), "cfg musiccoca"),
        (dict(cfg_scales={"style": 3.0}), "unknown cfg_scales keys"),
        (dict(frames=0), "frames must be at least 1"),
    ],
)
def test_bad_sampling(mrt, kwargs, match):
    kwargs.setdefault("frames", 1)
    with pytest.raises(ValueError, match=match):
        mrt.generate_tokens({}, **kwargs)


def test_bad_forced_tokens(mrt, d1):
    good = d1.tokens[:2]
    with pytest.raises(ValueError, match=r"shape \[N, 12\]"):
        mrt.generate_tokens(forced_tokens=good[:, :11])
    with pytest.raises(ValueError, match="must hold integers"):
        mrt.generate_tokens(forced_tokens=good.astype(np.float32))
    bad = good.copy()
    bad[1, 3] = 5  # level 3 holds 6+3072 ..
    with pytest.raises(ValueError, match="row 1: token 5 at level 3"):
        mrt.generate_tokens(forced_tokens=bad)
    bad[1, 3] = -7
    with pytest.raises(ValueError, match="row 1"):
        mrt.generate(forced_tokens=bad)
    with pytest.raises(ValueError, match="has 2 rows"):
        mrt.generate_tokens(forced_tokens=good, frames=3)


def test_bad_precision_lists_the_valid_names(checkpoint):
    with pytest.raises(ValueError) as e:
        rill_mrt.MagentaRT2(checkpoint=checkpoint, precision="fp8")
    for name in rill_mrt.precisions():
        assert name in str(e.value)
    assert "f32" in rill_mrt.precisions() and "bf16" in rill_mrt.precisions()


def test_bad_size_and_codec(checkpoint):
    with pytest.raises(ValueError, match="size"):
        rill_mrt.MagentaRT2(checkpoint=checkpoint, size="mrt2_huge")
    with pytest.raises(ValueError, match="mrt2_small checkpoint, but size"):
        rill_mrt.MagentaRT2(checkpoint=checkpoint, size="mrt2_base")
    with pytest.raises(ValueError, match="codec"):
        rill_mrt.MagentaRT2(checkpoint=checkpoint, codec="f8")
    with pytest.raises(ValueError, match="temperature"):
        rill_mrt.MagentaRT2(checkpoint=checkpoint, temperature=-2)


def test_missing_checkpoint(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError) as e:
        rill_mrt.MagentaRT2(checkpoint=tmp_path / "nope.safetensors")
    assert "does not exist" in str(e.value)
    assert "huggingface-cli download google/magenta-realtime-2" in str(e.value)
    # No argument: $RILL_CHECKPOINT, then upstream's default locations.
    monkeypatch.delenv("RILL_CHECKPOINT", raising=False)
    monkeypatch.setenv("MAGENTA_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="none found in the default locations") as e:
        rill_mrt.MagentaRT2()
    assert "rill_mrt.synth_checkpoint" in str(e.value)


def test_not_a_checkpoint(tmp_path):
    p = tmp_path / "junk.safetensors"
    p.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(ValueError, match="safetensors|MRT2"):
        rill_mrt.MagentaRT2(checkpoint=p)


def test_default_location_is_found(checkpoint, tmp_path, monkeypatch):
    monkeypatch.delenv("RILL_CHECKPOINT", raising=False)
    d = tmp_path / "Documents/Magenta/magenta-rt-v2/checkpoints"
    d.mkdir(parents=True)
    (d / "mrt2_small.safetensors").symlink_to(checkpoint)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("MAGENTA_HOME", raising=False)
    m = rill_mrt.MagentaRT2(threads=1)
    assert m.checkpoint == str(d / "mrt2_small.safetensors")
    assert m.threads.startswith("sequential")
    # Upstream's spellings: a size name first, or a file name in its checkpoints directory.
    monkeypatch.chdir(tmp_path)
    assert rill_mrt.MagentaRT2System("mrt2_small", threads=1).checkpoint == m.checkpoint
    assert rill_mrt.MagentaRT2(checkpoint="mrt2_small.safetensors", threads=1).checkpoint == m.checkpoint


def test_upstream_quantisation_arguments(checkpoint):
    with pytest.raises(ValueError, match="bits=3"):
        rill_mrt.MagentaRT2(checkpoint=checkpoint, bits=3)
    with pytest.raises(ValueError, match="quantize_group_size=128"):
        rill_mrt.MagentaRT2(checkpoint=checkpoint, bits=8, quantize_group_size=128)
    with pytest.raises(ValueError, match="not both"):
        rill_mrt.MagentaRT2(checkpoint=checkpoint, bits=8, precision="int8")
