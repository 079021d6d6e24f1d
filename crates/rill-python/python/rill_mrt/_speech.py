"""Magpie TTS: text → 22.05 kHz mono speech with NVIDIA's Magpie TTS Multilingual and
NanoCodec, run by rill (the same code as ``rill speak``)."""

from __future__ import annotations

import os
from typing import List, Optional, Union

import numpy as np

from . import _rill
from ._audio import Waveform

SPEECH_SAMPLE_RATE = 22050
"""Speech sample rate (Hz)."""
SPEECH_FRAME_SAMPLES = 1024
"""Mono samples per Magpie frame (46.4 ms); :meth:`Speech.stream` yields one a chunk."""

_Path = Union[str, "os.PathLike[str]"]


class SpeechStream:
    """An iterator of float32 chunks ``[1024]`` (one Magpie frame each, 46.4 ms),
    made on a Rust thread while Python runs; waiting for a chunk releases the GIL.

    The synthesis stops when the stream is closed (:meth:`close`, a ``with`` block)
    or garbage-collected, at its next frame.
    """

    def __init__(self, inner: "_rill.SpeechStream"):
        self._inner = inner

    def __iter__(self) -> "SpeechStream":
        return self

    def __next__(self) -> np.ndarray:
        return next(self._inner)

    def close(self) -> None:
        """Stops the synthesis; the iterator then ends."""
        self._inner.close()

    def __enter__(self) -> "SpeechStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Speech:
    """Magpie TTS on the CPU: ``speak(text, voice, language) -> Waveform``.

    Weights: ``checkpoint=`` (Magpie: NVIDIA's ``.nemo``, the NeMo-Speech.cpp GGUF or a
    safetensors state dict) and ``codec=`` (NanoCodec, the same formats), or
    ``random_weights=SEED`` for a smoke run (speech-shaped noise, not words; the test
    oracle's recipe, as ``rill speak --random-weights``)::

        tts = rill_mrt.Speech(checkpoint="magpie_tts_multilingual_357m.nemo",
                              codec="nemo-nano-codec-22khz-1.89kbps-21.5fps.nemo")
        wav = tts.speak("It costs $3.50.", voice="Sofia")   # numbers read aloud
        wav.write("hello.wav")
        for chunk in tts.stream("Bonjour à tous.", language="fr"):
            play(chunk)                                       # 1024 float32 samples

    With random weights, ``all_languages`` picks the text table: ``None`` (default)
    uses the oracle's English table for English and loads v2602's full table (a
    second copy of the weights, ~3 s) the first time another language is asked for
    — exactly what ``rill speak --random-weights --language …`` runs; ``True`` loads
    only the full table (every language, one copy); ``False`` only English.

    ``precision``: Magpie's linear layers in ``f32`` (NeMo's arithmetic), ``f16``,
    ``bf16`` or ``int8``; the codec always runs in f32. ``threads``: worker threads
    (default ``$RILL_THREADS`` or the number of cores).

    A model may be used from several Python threads at once; each call runs its
    own synthesis.
    """

    def __init__(
        self,
        checkpoint: Optional[_Path] = None,
        codec: Optional[_Path] = None,
        *,
        random_weights: Optional[int] = None,
        all_languages: Optional[bool] = None,
        precision: str = "f32",
        threads: Optional[int] = None,
    ):
        self._model = _rill.SpeechModel(
            None if checkpoint is None else os.fspath(checkpoint),
            None if codec is None else os.fspath(codec),
            random_weights,
            all_languages,
            precision,
            threads,
        )

    @property
    def voices(self) -> List[str]:
        """The baked speakers by index: their names where the file names them
        (v2602: John, Sofia, Aria, Jason, Leo), else ``"0"``, ``"1"``, …"""
        return list(self._model.voices)

    @property
    def languages(self) -> List[str]:
        """Codes of the languages this model speaks (``en``, ``es``, ``fr``, …)."""
        return list(self._model.languages)

    @property
    def sample_rate(self) -> int:
        """22050."""
        return self._model.sample_rate

    @property
    def precision(self) -> str:
        return self._model.precision

    @property
    def threads(self) -> int:
        return self._model.threads

    def speak(
        self,
        text: str,
        voice: Union[int, str] = 0,
        language: str = "en",
        *,
        seed: int = 0,
        temperature: Optional[float] = None,
        top_k: Optional[int] = None,
        cfg_scale: Optional[float] = None,
        max_frames: Optional[int] = None,
        normalize: bool = True,
    ) -> Waveform:
        """Speaks ``text`` whole: a mono :class:`Waveform` at 22.05 kHz.

        ``voice``: a speaker index or name (see :attr:`voices`); ``language``: a code
        or name (see :attr:`languages`; an unknown one is a ``ValueError`` naming the
        valid codes). ``seed`` seeds the sampler (``torch.manual_seed``: the same
        seed gives NeMo's tokens); ``temperature``, ``top_k``, ``cfg_scale`` and
        ``max_frames`` (frame cap per sentence, NeMo's ``max_decoder_steps``) default
        to the checkpoint's config. ``normalize=True`` reads numbers, money, dates,
        times and measures aloud first ("$3.50" → "three dollars fifty cents", NeMo's
        ``apply_TN=True``; every language rill speaks has a normaliser);
        ``False`` tokenises the text as written (NeMo's raw default).

        Characters the language's front end cannot encode are left out with one
        ``RuntimeWarning`` naming them. The samples are the model's 16-bit PCM /
        32768 (what ``rill speak`` writes); ``tokens`` holds the ``[frames, 8]``
        NanoCodec codes. The GIL is released while speaking; Ctrl-C stops it.
        """
        samples, codes = self._model.speak(
            text, voice, language, seed, temperature, top_k, cfg_scale, max_frames, normalize
        )
        return Waveform(samples, SPEECH_SAMPLE_RATE, tokens=codes)

    def stream(
        self,
        text: str,
        voice: Union[int, str] = 0,
        language: str = "en",
        *,
        seed: int = 0,
        temperature: Optional[float] = None,
        top_k: Optional[int] = None,
        cfg_scale: Optional[float] = None,
        max_frames: Optional[int] = None,
        normalize: bool = True,
    ) -> SpeechStream:
        """Speaks ``text`` frame by frame: an iterator of float32 chunks ``[1024]``
        whose concatenation is :meth:`speak`'s samples. Arguments as :meth:`speak`;
        they are checked (and dropped characters warned about) here, before any
        audio. The first chunk comes after the text encoder, the prefill and the
        first frame; closing the stream stops the synthesis.
        """
        return SpeechStream(
            self._model.stream(
                text, voice, language, seed, temperature, top_k, cfg_scale, max_frames, normalize
            )
        )

    def __repr__(self) -> str:
        return (
            f"Speech({len(self.voices)} voices, languages {', '.join(self.languages)}, "
            f"{self.precision}, {self.threads} threads)"
        )

