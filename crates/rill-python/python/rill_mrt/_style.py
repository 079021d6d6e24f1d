"""``MusicCoCa``: rill's style model, with the ``embed`` / ``tokenize`` of upstream's
``magenta_rt.musiccoca.MusicCoCa``."""

from __future__ import annotations

import os
from typing import Any, Optional, Union

import numpy as np

from . import _rill

EMBEDDING_DIM = 768
"""Width of a MusicCoCa style embedding."""
STYLE_SAMPLE_RATE = 16_000
"""The rate MusicCoCa hears audio at (other rates are resampled)."""

PathLike = Union[str, "os.PathLike[str]"]


def _audio(value: Any, sample_rate: Optional[int]) -> Optional[tuple]:
    """``(interleaved float32 samples, channels, rate)`` of a waveform-like value, or
    ``None`` when ``value`` is not audio. A ``Waveform`` (rill's or upstream's:
    ``.samples`` and ``.sample_rate``) carries its rate; a bare array is mono
    ``[samples]`` or ``[samples, channels]`` at ``sample_rate`` (default 16 kHz)."""
    if hasattr(value, "samples") and hasattr(value, "sample_rate"):
        if sample_rate is not None and int(sample_rate) != int(value.sample_rate):
            raise ValueError(
                f"sample_rate={sample_rate} contradicts the waveform's own rate {value.sample_rate}"
            )
        rate, samples = int(value.sample_rate), np.asarray(value.samples)
    elif isinstance(value, np.ndarray):
        rate = STYLE_SAMPLE_RATE if sample_rate is None else int(sample_rate)
        samples = value
    else:
        return None
    if samples.dtype.kind != "f":
        raise ValueError(f"audio samples must be floats (-1..1), got {samples.dtype} values")
    if samples.ndim == 1:
        samples = samples[:, np.newaxis]
    if samples.ndim != 2 or samples.shape[1] == 0:
        raise ValueError(f"audio must be [samples] or [samples, channels], got shape {list(samples.shape)}")
    if samples.shape[0] == 0:
        raise ValueError("the audio is empty (no samples)")
    if rate <= 0:
        raise ValueError(f"the sample rate must be positive, got {rate}")
    flat = np.ascontiguousarray(samples, dtype=np.float32).reshape(-1)
    return flat, int(samples.shape[1]), rate


class MusicCoCa:
    """MusicCoCa (the style model of Magenta RealTime 2) run by rill: a text or audio
    style prompt to a 768-float embedding, an embedding to 12 style codes 0..1023.

    Reads the assets of upstream's download (``spm.model`` and five ``.tflite``
    files, ``resources/musiccoca`` of ``google/magenta-realtime-2``) and matches
    upstream's float32 results. ``MagentaRT2`` creates one on first use.

    Args:
      musiccoca_dir: the folder holding the assets; default: found as the ``rill``
        command finds it (``$RILL_MUSICCOCA``, beside ``checkpoint``,
        ``$MAGENTA_HOME``, ``~/Documents/Magenta/magenta-rt-v2``). None found:
        ``FileNotFoundError`` whose message says how to download them.
      checkpoint: an MRT2 checkpoint file the assets may lie beside
        (``ROOT/checkpoints/FILE`` → ``ROOT/resources/musiccoca``).
      threads: worker threads (default ``$RILL_THREADS`` or all cores).
    """

    def __init__(
        self,
        musiccoca_dir: Optional[PathLike] = None,
        checkpoint: Optional[PathLike] = None,
        threads: Optional[int] = None,
    ):
        self._inner = _rill.StyleModel(
            None if musiccoca_dir is None else os.fspath(musiccoca_dir),
            None if checkpoint is None else os.fspath(checkpoint),
            threads,
        )

    @property
    def dir(self) -> str:
        """The assets folder that was loaded."""
        return str(self._inner.dir)

    def __repr__(self) -> str:
        return f"rill_mrt.MusicCoCa({self.dir!r})"

    def embed(
        self,
        text_or_audio: Any,
        pool_across_time: bool = True,
        use_mapper: bool = False,
        seed: int = 0,
        *,
        sample_rate: Optional[int] = None,
    ) -> np.ndarray:
        """The style embedding (float32 ``[768]``) of a text or audio, as upstream's
        ``embed`` / ``MagentaRT2System.embed_style``.

        * A ``str``: lowercased, SentencePiece, the text tower; with ``use_mapper=True``
          mapped toward the audio embeddings with the noise
          ``np.random.RandomState(seed).randn(768)`` (upstream's CLI and C++ engine map
          with seed 0; its Python default, kept here, does not map).
        * Audio: a ``Waveform`` (rill's or upstream's), or a float array ``[samples]``
          (mono) / ``[samples, channels]`` at ``sample_rate`` Hz (default 16000);
          channels are averaged, the audio resampled to 16 kHz and cut into 10 s clips
          (the last zero-padded). ``pool_across_time=True``: the mean of the clips'
          embeddings, else ``[clips, 768]``. The mapper is for text and is not applied.
        * A list or tuple of these: their embeddings stacked along a new first axis.
        """
        if isinstance(text_or_audio, (list, tuple)):
            if not text_or_audio:
                raise ValueError("nothing to embed (an empty list)")
            return np.stack(
                [
                    self.embed(x, pool_across_time, use_mapper, seed, sample_rate=sample_rate)
                    for x in text_or_audio
                ]
            )
        if isinstance(text_or_audio, str):
            mapper_seed = None
            if use_mapper:
                if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
                    raise ValueError(f"seed must be an integer, got {seed!r}")
                if not 0 <= int(seed) < 2**32:
                    raise ValueError(f"seed must be in 0..2**32-1 (numpy's RandomState), got {seed}")
                mapper_seed = int(seed)
            return self._inner.embed_text(text_or_audio, mapper_seed)
        audio = _audio(text_or_audio, sample_rate)
        if audio is None:
            raise TypeError(
                "embed takes a text (str), a Waveform, a float numpy array of audio or a list "
                f"of these, got {type(text_or_audio).__name__}"
            )
        samples, channels, rate = audio
        return self._inner.embed_audio(samples, channels, rate, bool(pool_across_time))

    def tokenize(self, embedding: Any) -> np.ndarray:
        """The 12 style codes (int32, 0..1023) of an embedding ``[768]``; ``[..., 768]``
        gives ``[..., 12]`` (upstream's ``tokenize``)."""
        arr = np.asarray(embedding)
        if arr.dtype.kind not in "fiu":
            raise ValueError(f"an embedding must hold numbers, got {arr.dtype} values")
        if arr.ndim == 0 or arr.shape[-1] != EMBEDDING_DIM:
            raise ValueError(
                f"a MusicCoCa embedding has {EMBEDDING_DIM} values, got shape {list(arr.shape)}"
            )
        rows = np.ascontiguousarray(arr, dtype=np.float32).reshape(-1, EMBEDDING_DIM)
        codes = np.array([self._inner.tokenize(r) for r in rows], dtype=np.int32)
        return codes.reshape(arr.shape[:-1] + (12,))
