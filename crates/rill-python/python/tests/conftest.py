"""Shared fixtures: the repository's reference recordings and one random-weight
mrt2_small checkpoint (weights seed 0, the recordings' D1 weights), synthesised once
per test session into a temporary directory (~1.1 GB, ~10 s)."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

import rill_mrt

REPO = Path(__file__).resolve().parents[4]
TESTDATA = Path(os.environ.get("RILL_TESTDATA", REPO / "testdata" / "mrt2"))
# The D1 oracle checkpoint's sha256 (testdata/mrt2/D1.json, README "Parity").
D1_SHA256 = "4248ea629330af20bed5e467ddebbd14797638b913c56f788149bd335779ab3d"


class Recording:
    """One reference recording: ``NAME.npz`` arrays and ``NAME.json`` settings."""

    def __init__(self, name):
        npz, meta = TESTDATA / f"{name}.npz", TESTDATA / f"{name}.json"
        for p in (npz, meta):
            if not p.exists():
                pytest.fail(f"missing reference file {p} (restore it: git checkout -- testdata/mrt2/)")
        self.name = name
        self.meta = json.loads(meta.read_text())
        self.arrays = np.load(npz)
        self.tokens = self.arrays["tokens"]

    def conditioning(self):
        return self.meta["conditioning_dict"]

    def sampling(self):
        return dict(temperature=self.meta["temperature"], top_k=self.meta["top_k"])


@pytest.fixture(scope="session")
def d1():
    return Recording("D1")


@pytest.fixture(scope="session")
def d1_bf16():
    return Recording("D1-bf16")


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory):
    """The weights-seed-0 checkpoint. ``RILL_TEST_CHECKPOINT`` may name an existing
    copy (e.g. ``rill synth-checkpoint --seed 0``) to skip the synthesis."""
    given = os.environ.get("RILL_TEST_CHECKPOINT")
    if given:
        return given
    path = tmp_path_factory.mktemp("ckpt") / "mrt2_small_seed0.safetensors"
    info = rill_mrt.synth_checkpoint(path, size="mrt2_small", seed=0)
    assert info["sha256"] == D1_SHA256 and info["oracle_checked"], info
    return str(path)


@pytest.fixture(scope="session")
def mrt(checkpoint):
    return rill_mrt.MagentaRT2(checkpoint=checkpoint, precision="f32")


def cosine(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
