"""The waveform container returned by generation, mirroring ``magenta_rt.audio.Waveform``."""

from __future__ import annotations

import wave
from typing import BinaryIO, Optional, Union

import numpy as np


class Waveform:
    """Audio samples ``[num_samples, num_channels]`` float32 at ``sample_rate`` Hz.

    Generated audio is the model's int16 output divided by 32768, exactly as upstream's
    ``MagentaRT2System.generate`` returns it. ``tokens`` holds the ``[frames, 12]``
    SpectroStream token ids the audio was decoded from (``None`` for other waveforms).
    Unlike upstream's class, construction does not copy float32 arrays.
    """

    def __init__(
        self,
        samples: np.ndarray,
        sample_rate: int,
        tokens: Optional[np.ndarray] = None,
    ):
        samples = np.asarray(samples)
        if samples.ndim == 1:
            samples = samples[:, np.newaxis]
        if not (samples.ndim == 2 and samples.shape[1] > 0):
            raise ValueError(f"Invalid shape for audio: {samples.shape}")
        if not np.issubdtype(samples.dtype, np.floating):
            raise TypeError(f"Samples should be np.floating. Got {samples.dtype}.")
        self._samples = samples.astype(np.float32, copy=False)
        self._sample_rate = int(sample_rate)
        self.tokens = tokens

    @property
    def samples(self) -> np.ndarray:
        return self._samples

    @property
    def sample_rate(self) -> int:
        return self._sample_rate

    @property
    def num_samples(self) -> int:
        return self._samples.shape[0]

    @property
    def num_channels(self) -> int:
        return self._samples.shape[1]

    @property
    def seconds(self) -> float:
        return self.num_samples / self.sample_rate

    def __len__(self) -> int:
        return self.num_samples

    @property
    def peak_amplitude(self) -> float:
        return float(np.abs(self._samples).max()) if self.num_samples else 0.0

    def apply_gain(self, gain: float) -> "Waveform":
        return Waveform(self._samples * np.float32(gain), self.sample_rate)

    def as_mono(self) -> "Waveform":
        if self.num_channels == 1:
            return self
        return Waveform(self._samples.mean(axis=1, keepdims=True), self.sample_rate)

    def as_stereo(self) -> "Waveform":
        if self.num_channels == 2:
            return self
        if self.num_channels == 1:
            return Waveform(np.concatenate([self._samples] * 2, axis=1), self.sample_rate)
        raise ValueError("Unsupported number of channels for stereo conversion.")

    def __getitem__(self, key: slice) -> "Waveform":
        return Waveform(self._samples[key], self.sample_rate)

    def as_int16(self) -> np.ndarray:
        """The samples as int16 (exact for generated audio: they are int16 / 32768)."""
        return np.clip(np.round(self._samples * 32768.0), -32768, 32767).astype(np.int16)

    def write(self, file: Union[str, BinaryIO]) -> None:
        """Writes a 16-bit PCM WAV file (the standard library's ``wave``; no soundfile needed)."""
        with wave.open(file, "wb") as w:
            w.setnchannels(self.num_channels)
            w.setsampwidth(2)
            w.setframerate(self.sample_rate)
            w.writeframes(self.as_int16().astype("<i2").tobytes())

    def __repr__(self) -> str:
        return (
            f"Waveform({self.num_samples} samples × {self.num_channels} channels, "
            f"{self.sample_rate} Hz, {self.seconds:.2f} s)"
        )
