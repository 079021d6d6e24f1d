"""rill_mrt — Google's Magenta RealTime 2 (MRT2) on the CPU, with the rill engine.

A drop-in for users of upstream's ``magenta_rt.mlx.system.MagentaRT2System``::

    import rill_mrt
    mrt = rill_mrt.MagentaRT2()            # or MagentaRT2(checkpoint="mrt2_small.safetensors")
    wav, state = mrt.generate({"mulan_tokens_25hz": codes}, frames=25)   # 1 s
    wav2, state = mrt.generate({"mulan_tokens_25hz": codes}, state=state)  # continues

``wav.samples`` is float32 ``[frames·1920, 2]`` at 48 kHz; ``state`` is picklable.
A text style works too (MusicCoCa, run by rill; its assets are upstream's download)::

    wav, state = mrt.generate({"mulan_tokens_25hz": "disco funk"})
    emb = mrt.embed_style("disco funk"); codes = mrt.tokenize_style(emb)

Speech too (NVIDIA's Magpie TTS, 22.05 kHz mono; the weights are NVIDIA's download)::

    tts = rill_mrt.Speech(checkpoint="magpie_tts_multilingual_357m.nemo",
                          codec="nemo-nano-codec-22khz-1.89kbps-21.5fps.nemo")
    wav = tts.speak("Hello world.", voice="Sofia", language="en")
    for chunk in tts.stream("Bonjour.", language="fr"): ...   # float32 [1024] each
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version as _version
from typing import Any, Dict, List, Union
import os

from . import _rill
from ._audio import Waveform
from ._rill import State
from ._speech import SPEECH_FRAME_SAMPLES, SPEECH_SAMPLE_RATE, Speech, SpeechStream
from ._style import EMBEDDING_DIM, MusicCoCa
from ._system import (
    CONDITIONING_KEYS,
    DEFAULT_CFG_SCALES,
    FRAME_SAMPLES,
    SAMPLE_RATE,
    MagentaRT2,
    Stream,
)

try:
    __version__ = _version("rill-mrt")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

MagentaRT2System = MagentaRT2
"""Upstream's class name, for code written against ``magenta_rt``."""


def precisions() -> List[str]:
    """The names ``MagentaRT2(precision=...)`` accepts."""
    return list(_rill.precisions())


def isa() -> str:
    """The SIMD tier rill's kernels run on here (``RILL_ISA`` can lower it)."""
    return _rill.isa()


def synth_checkpoint(
    path: Union[str, "os.PathLike[str]"], size: str = "mrt2_small", seed: int = 0
) -> Dict[str, Any]:
    """Writes a random-weight checkpoint in the real layout, as ``rill synth-checkpoint``.

    Every stage runs on it exactly as on real weights (the output is not music); for
    the seeds of the reference recordings the file is byte-identical to the oracle's.
    Returns ``{"path", "sha256", "tensors", "params", "bytes", "oracle_checked"}``.
    """
    sha, tensors, params, nbytes, checked = _rill.synth_checkpoint(os.fspath(path), size, seed)
    return {
        "path": os.fspath(path),
        "sha256": sha,
        "tensors": tensors,
        "params": params,
        "bytes": nbytes,
        "oracle_checked": checked,
    }


def _state_from_bytes(data: bytes) -> State:
    """Unpickling hook of :class:`State`."""
    return State.from_bytes(data)


__all__ = [
    "CONDITIONING_KEYS",
    "DEFAULT_CFG_SCALES",
    "EMBEDDING_DIM",
    "FRAME_SAMPLES",
    "SAMPLE_RATE",
    "SPEECH_FRAME_SAMPLES",
    "SPEECH_SAMPLE_RATE",
    "Speech",
    "SpeechStream",
    "MagentaRT2",
    "MagentaRT2System",
    "MusicCoCa",
    "State",
    "Stream",
    "Waveform",
    "isa",
    "precisions",
    "synth_checkpoint",
]
