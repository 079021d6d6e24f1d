"""Upstream's conditioning semantics: missing = masked = -1, CFG bins = scales,
float embeddings through a style model."""

import numpy as np

import rill_mrt

STYLE = [660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22]


def tokens(mrt, conditioning=None, **kw):
    return mrt.generate_tokens(conditioning, frames=2, **kw)[0]


def test_missing_inputs_are_masked(mrt):
    masked = tokens(mrt, {})
    np.testing.assert_array_equal(tokens(mrt, None), masked)
    explicit = {
        "mulan_tokens_25hz": [-1] * 12,
        "pianoroll_with_onsets_tokens": np.full(128, -1),
        "drum_pianoroll_tokens": [-1],
        "cfg_conditioning_tokens": None,
    }
    np.testing.assert_array_equal(tokens(mrt, explicit), masked)


def test_tokens_are_upstreams_block(mrt, d1):
    """As `_build_conditioning`: raw values in key order + 7, CFG scales binned."""
    np.testing.assert_array_equal(
        mrt.conditioning_tokens(d1.conditioning(), d1.meta["cfg_scales"]), d1.arrays["cond_tokens"]
    )
    notes = np.full(128, -1, dtype=np.int8)
    notes[[60, 64, 67]] = 3
    notes[[70, 71]] = [0, 2]
    notes[72] = 1
    c = {"mulan_tokens_25hz": STYLE, "pianoroll_with_onsets_tokens": notes, "drum_pianoroll_tokens": 0}
    want = np.concatenate([STYLE, notes, [0], [20, 10], [2]]) + 7  # cfg 3/1/1 → bins 20, 10, 2
    np.testing.assert_array_equal(mrt.conditioning_tokens(c), want)


def test_values_change_the_music(mrt):
    assert not np.array_equal(tokens(mrt, {"mulan_tokens_25hz": np.array(STYLE)}), tokens(mrt, {}))


def test_cfg_bins_equal_their_scales(mrt):
    c = {"mulan_tokens_25hz": STYLE}
    by_scale = tokens(mrt, c, cfg_scales={"musiccoca": 5.0, "notes": 2.0, "drums": 0.0})
    by_bins = tokens(
        mrt,
        dict(c, cfg_conditioning_tokens=[30, 15], cfg_conditioning_drums_tokens=[1]),
    )
    np.testing.assert_array_equal(by_bins, by_scale)
    # The instance's scales are the defaults a call overrides (upstream: missing = 3.0).
    assert mrt.cfg_scales == rill_mrt.DEFAULT_CFG_SCALES
    np.testing.assert_array_equal(
        tokens(mrt, c, cfg_scales={"musiccoca": 3.0}), tokens(mrt, c)
    )


class FakeStyleModel:
    """Stands in for magenta_rt.musiccoca.MusicCoCa (embed / tokenize)."""

    def embed(self, text, pool_across_time=True, use_mapper=False, seed=0):
        return np.full(768, len(text), dtype=np.float32)

    def tokenize(self, embedding):
        return np.array(STYLE, dtype=np.int32)


def test_float_embeddings_are_tokenized_by_the_style_model(checkpoint):
    m = rill_mrt.MagentaRT2(checkpoint=checkpoint, style_model=FakeStyleModel())
    emb = m.embed_style("disco funk")
    assert emb.dtype == np.float32 and emb.shape == (768,)
    np.testing.assert_array_equal(m.tokenize_style(emb), STYLE)
    np.testing.assert_array_equal(
        tokens(m, {"mulan_tokens_25hz": emb}), tokens(m, {"mulan_tokens_25hz": STYLE})
    )
