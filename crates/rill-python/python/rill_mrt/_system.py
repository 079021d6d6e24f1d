"""``MagentaRT2``: upstream's ``MagentaRT2System`` API over the rill engine."""

from __future__ import annotations

import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _rill
from ._audio import Waveform
from ._rill import State
from ._style import EMBEDDING_DIM, MusicCoCa

SAMPLE_RATE = 48_000
"""Output sample rate (Hz)."""
FRAME_SAMPLES = 1920
"""Stereo samples per 40 ms frame (25 frames per second)."""

MUSICCOCA = "mulan_tokens_25hz"
PIANOROLL = "pianoroll_with_onsets_tokens"
DRUMS = "drum_pianoroll_tokens"
CFG_MUSICCOCA_NOTES = "cfg_conditioning_tokens"
CFG_DRUMS = "cfg_conditioning_drums_tokens"
CONDITIONING_KEYS = (MUSICCOCA, PIANOROLL, DRUMS, CFG_MUSICCOCA_NOTES, CFG_DRUMS)
"""The conditioning inputs of MRT2, in upstream's order."""

DEFAULT_CFG_SCALES = {"musiccoca": 3.0, "notes": 1.0, "drums": 1.0}
_CFG_KEYS = ("musiccoca", "notes", "drums")

Conditioning = Mapping[str, Union[Sequence[int], np.ndarray, str, None]]


def _ints(value: Any, key: str, n: int) -> List[int]:
    """``n`` integers from a list / array (a scalar for ``n == 1``)."""
    arr = np.asarray(value)
    if arr.ndim == 0 and n == 1:
        arr = arr.reshape(1)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{key} must hold integers, got {arr.dtype} values")
    if arr.shape != (n,):
        raise ValueError(f"{key} needs {n} values, got shape {list(arr.shape)}")
    return [int(v) for v in arr]


_SIZES = ("mrt2_small", "mrt2_base")


def _upstream_checkpoint(path: str) -> str:
    """A relative name that is not a file here is looked up as upstream does, in
    ``$MAGENTA_HOME/magenta-rt-v2/checkpoints`` (default ``~/Documents/Magenta/…``)."""
    if os.path.exists(path) or os.path.isabs(path):
        return path
    base = os.environ.get("MAGENTA_HOME") or os.path.join(os.path.expanduser("~"), "Documents", "Magenta")
    candidate = os.path.join(base, "magenta-rt-v2", "checkpoints", path)
    return candidate if os.path.exists(candidate) else path


def _bits_precision(bits: Optional[int], group: Optional[int], precision: Optional[str]) -> Optional[str]:
    """Upstream's ``bits=`` / ``quantize_group_size=`` as a rill precision."""
    if precision is not None:
        raise ValueError("give either precision= or upstream's bits=, not both")
    if bits is None or bits >= 32:
        name, default_group = None, None
    elif bits == 8:
        # upstream's own int8 (MLX g64 of bf16 weights, bf16 arithmetic), reproduced
        name, default_group = "mlx-int8" if "mlx-int8" in _rill.precisions() else "int8", 64
    elif bits == 4:
        name, default_group = "int4", 32
    else:
        raise ValueError(f"bits={bits} is not supported: 8 (int8, group 64), 4 (int4, group 32) or None")
    if group is not None and group != default_group:
        raise ValueError(
            f"quantize_group_size={group} is not supported with bits={bits} (rill uses {default_group})"
        )
    return name


def _check_int(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{what} must be an integer, got {value!r}")
    return int(value)


class MagentaRT2:
    """Magenta RealTime 2 on the CPU: style codes, notes and drums in, 48 kHz stereo out.

    Mirrors ``magenta_rt.mlx.system.MagentaRT2System`` (``generate`` takes the same
    conditioning dictionaries and returns ``(waveform, state)``) and adds token
    in/out (:meth:`generate_tokens`, ``forced_tokens=``) and frame-by-frame
    streaming (:meth:`stream`).

    Args:
      checkpoint: an MRT2 ``.safetensors`` file; default ``$RILL_CHECKPOINT``, then
        upstream's locations (``$MAGENTA_HOME/checkpoints/SIZE.safetensors``,
        ``$MAGENTA_HOME/magenta-rt-v2/checkpoints/…``,
        ``~/Documents/Magenta/magenta-rt-v2/checkpoints/…``). None found:
        ``FileNotFoundError`` telling how to download one.
      size: ``"mrt2_small"`` or ``"mrt2_base"``; the checkpoint must be of this size.
      precision: language-model weights, one of :func:`rill_mrt.precisions`
        (``"f32"`` is exact parity with upstream's fp32; ``"bf16"`` upstream's shipped
        rounding; ``"int8"`` its default quantisation). ``None``: f32, or the
        precision a pre-quantised file (``rill quantize``) was made for.
      temperature, top_k, cfg_scales: sampling defaults, as upstream (a ``cfg_scales``
        dict replaces the defaults; a scale it lacks is 3.0, as upstream).
      seed: sampler seed of every fresh state (upstream hard-codes 42).
      style_levels: MusicCoCa style levels fed: 12 (all, as upstream's Python; the
        default) or 6 (the coarsest six, levels 6–11 masked, as upstream's C++
        engine); a call's ``style_levels=`` overrides it.
      threads: worker threads (default ``$RILL_THREADS`` or all cores).
      codec: SpectroStream decoder weights: ``"f32"`` (exact), ``"i16"`` or ``"f16"``
        (faster early layers, ≈86 / ≈64 dB SNR).
      bits, quantize_group_size: upstream's quantisation arguments, accepted for
        compatibility (``bits=8`` is ``precision="mlx-int8"``, upstream's default
        quantisation reproduced; ``bits=4`` is ``"int4"``).
        Unlike upstream, the default is unquantised f32. Also as upstream, a size name
        as ``checkpoint`` selects the size, and a relative file name that is not a
        file here is looked up in upstream's checkpoints directory.
      style_model: the style model of :meth:`embed_style`, :meth:`tokenize_style`
        and text / float-embedding styles in the conditioning: anything with the
        ``embed``/``tokenize`` of upstream's ``magenta_rt.musiccoca.MusicCoCa``
        (upstream's own works). Default: rill's :class:`rill_mrt.MusicCoCa`, loaded
        on first use (0.95 GB of weights).
      musiccoca_dir: where rill's MusicCoCa reads its assets (``spm.model`` and the
        five ``.tflite`` files of upstream's ``resources/musiccoca``); default: beside
        the checkpoint (``ROOT/checkpoints/FILE`` → ``ROOT/resources/musiccoca``),
        ``$RILL_MUSICCOCA`` or upstream's download location. None found (on first
        use): ``FileNotFoundError`` saying how to download them.
    """

    def __init__(
        self,
        checkpoint: Optional[Union[str, "os.PathLike[str]"]] = None,
        size: str = "mrt2_small",
        precision: Optional[str] = None,
        temperature: float = 1.3,
        top_k: int = 40,
        cfg_scales: Optional[Dict[str, float]] = None,
        seed: int = 42,
        threads: Optional[int] = None,
        codec: str = "f32",
        style_model: Any = None,
        *,
        style_levels: int = 12,
        bits: Optional[int] = None,
        quantize_group_size: Optional[int] = None,
        musiccoca_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    ):
        # Upstream compatibility: MagentaRT2System("mrt2_base") names a size, and
        # checkpoint="NAME.safetensors" a file in upstream's checkpoints directory.
        if isinstance(checkpoint, str) and checkpoint in _SIZES and not os.path.exists(checkpoint):
            size, checkpoint = checkpoint, None
        if checkpoint is not None:
            checkpoint = _upstream_checkpoint(os.fspath(checkpoint))
        if bits is not None or quantize_group_size is not None:
            precision = _bits_precision(bits, quantize_group_size, precision)
        self.temperature = temperature
        self.top_k = top_k
        self.style_levels = style_levels
        self.cfg_scales = dict(cfg_scales) if cfg_scales else dict(DEFAULT_CFG_SCALES)
        self.seed = _check_int(seed, "seed")
        if self.seed < 0 or self.seed >= 2**64:
            raise ValueError(f"seed must be in 0..2**64-1, got {seed}")
        if threads is not None:
            threads = _check_int(threads, "threads")
            if threads < 1:
                raise ValueError(f"the thread count must be at least 1, got {threads}")
        # Invalid sampling defaults fail here, before the (slow) load.
        _rill.check_controls(self._controls(None, None, None, None, None))
        self._model = _rill.Model(checkpoint, size, precision, codec, threads)
        self._style_model = style_model
        self._musiccoca_dir = None if musiccoca_dir is None else os.fspath(musiccoca_dir)
        self._threads = threads
        self._text_codes: Dict[str, List[int]] = {}

    # --- properties ------------------------------------------------------------

    @property
    def sample_rate(self) -> int:
        return SAMPLE_RATE

    @property
    def checkpoint(self) -> str:
        """The checkpoint file that was loaded."""
        return str(self._model.path)

    @property
    def size(self) -> str:
        return self._model.size

    @property
    def precision(self) -> str:
        return self._model.precision

    @property
    def threads(self) -> str:
        """How the worker threads are arranged (e.g. ``two-stage, LM 1 + codec 1 threads``)."""
        return self._model.threads

    def __repr__(self) -> str:
        return f"rill_mrt.MagentaRT2({self.size}, {self.precision}, {self.threads})"

    # --- style (upstream's MusicCoCa) ------------------------------------------

    def _style(self) -> Any:
        if self._style_model is None:
            self._style_model = MusicCoCa(self._musiccoca_dir, self.checkpoint, self._threads)
        return self._style_model

    @property
    def style_model(self) -> Any:
        """The style model (rill's :class:`rill_mrt.MusicCoCa` unless one was given),
        loaded now if it was not yet."""
        return self._style()

    def embed_style(
        self,
        text_or_audio: Any,
        pool_across_time: bool = True,
        use_mapper: bool = False,
        seed: int = 0,
        *,
        sample_rate: Optional[int] = None,
    ) -> np.ndarray:
        """The MusicCoCa embedding (float32 ``[768]``) of a text or audio (upstream's
        ``embed_style``, same defaults: no mapper).

        ``text_or_audio``: a ``str``; a ``Waveform``; a float numpy array ``[samples]``
        or ``[samples, channels]`` at ``sample_rate`` Hz (default 16000; resampled and
        averaged to mono); or a list of these (embeddings stacked). Audio is embedded
        per 10 s clip, averaged unless ``pool_across_time=False`` (then ``[clips,
        768]``). ``use_mapper=True`` maps a text embedding toward the audio ones with
        the noise of ``seed`` (upstream's CLI and C++ engine use the mapper, seed 0).
        See :meth:`rill_mrt.MusicCoCa.embed`.
        """
        style = self._style()
        if isinstance(style, MusicCoCa):
            return style.embed(text_or_audio, pool_across_time, use_mapper, seed, sample_rate=sample_rate)
        if sample_rate is not None:
            text_or_audio = Waveform(np.asarray(text_or_audio), sample_rate)
        return style.embed(text_or_audio, pool_across_time, use_mapper, seed)

    def tokenize_style(self, embedding: np.ndarray) -> np.ndarray:
        """The 12 style codes 0..1023 of a MusicCoCa embedding (upstream's ``tokenize_style``)."""
        return np.asarray(self._style().tokenize(embedding))

    def _style_codes(self, value: Any) -> Any:
        """A text or a float embedding as ``mulan_tokens_25hz`` → its 12 codes
        (other values unchanged). A text is embedded as :meth:`embed_style` does by
        default (upstream's Python API: no mapper) and tokenised; codes of recent
        texts are remembered, so a stream's updates do not re-embed them."""
        if isinstance(value, str):
            codes = self._text_codes.get(value)
            if codes is None:
                codes = self._codes(self.embed_style(value))
                if len(self._text_codes) >= 64:
                    self._text_codes.pop(next(iter(self._text_codes)))
                self._text_codes[value] = codes
            return codes
        arr = np.asarray(value)
        if arr.dtype.kind != "f":
            return value
        if arr.shape != (EMBEDDING_DIM,):
            raise ValueError(
                f"{MUSICCOCA} as floats is a MusicCoCa embedding of {EMBEDDING_DIM} values, got "
                f"shape {list(arr.shape)} (style codes are 12 integers 0..1023)"
            )
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"the {MUSICCOCA} embedding holds NaN or infinite values")
        return self._codes(arr)

    def _codes(self, embedding: np.ndarray) -> List[int]:
        codes = [int(c) for c in np.asarray(self.tokenize_style(embedding)).reshape(-1)]
        return (codes + [-1] * 12)[:12]

    # --- controls --------------------------------------------------------------

    def _controls(
        self,
        conditioning: Optional[Conditioning],
        cfg_scales: Optional[Dict[str, float]],
        temperature: Optional[float],
        top_k: Optional[int],
        style_levels: Optional[int],
    ) -> Tuple[Any, ...]:
        """Upstream's conditioning dict → ``(style, style_levels, notes, drums, cfg,
        temperature, top_k)``."""
        scales = dict(self.cfg_scales)
        if cfg_scales:
            scales.update(cfg_scales)
        unknown = sorted(set(scales) - set(_CFG_KEYS))
        if unknown:
            raise ValueError(f"unknown cfg_scales keys {unknown}; rill's MRT2 takes {list(_CFG_KEYS)}")
        try:
            cfg = [float(scales.get(k, 3.0)) for k in _CFG_KEYS]
        except (TypeError, ValueError) as e:
            raise ValueError(f"cfg_scales values must be numbers: {e}") from None
        style = notes = drums = None
        for key, value in (conditioning or {}).items():
            if value is None:
                continue
            if key == MUSICCOCA:
                # A text or a float MusicCoCa embedding: tokenised (as upstream, which
                # takes embeddings; texts are rill's addition, as magenta_rt's C++ engine).
                style = _ints(self._style_codes(value), key, 12)
            elif key == PIANOROLL:
                notes = _ints(value, key, 128)
            elif key == DRUMS:
                drums = _ints(value, key, 1)[0]
            elif key == CFG_MUSICCOCA_NOTES:
                # Raw CFG bins (0..40, scale = -1 + 0.2·bin) override the scales.
                bins = _ints(value, key, 2)
                for b in bins:
                    if not 0 <= b <= 40:
                        raise ValueError(f"{key} bins must be in 0..40, got {b}")
                cfg[0], cfg[1] = (-1.0 + 0.2 * b for b in bins)
            elif key == CFG_DRUMS:
                b = _ints(value, key, 1)[0]
                if not 0 <= b <= 8:
                    raise ValueError(f"{key} bin must be in 0..8, got {b}")
                cfg[2] = -1.0 + 1.0 * b
            else:
                raise ValueError(
                    f"unknown conditioning key {key!r}; MRT2 takes {list(CONDITIONING_KEYS)}"
                )
        temperature = self.temperature if temperature is None else temperature
        top_k = self.top_k if top_k is None else top_k
        try:
            temperature = float(temperature)
        except (TypeError, ValueError):
            raise ValueError(f"temperature must be a number, got {temperature!r}") from None
        top_k = _check_int(top_k, "top_k")
        levels = _check_int(self.style_levels if style_levels is None else style_levels, "style_levels")
        return (style, levels, notes, drums, tuple(cfg), temperature, top_k)

    def conditioning_tokens(
        self,
        conditioning: Optional[Conditioning] = None,
        cfg_scales: Optional[Dict[str, float]] = None,
        *,
        style_levels: Optional[int] = None,
    ) -> np.ndarray:
        """The 144 encoder tokens a call with these arguments uses (the block
        upstream's ``_build_conditioning`` builds: raw values + 7, CFG scales binned;
        style levels beyond ``style_levels`` masked)."""
        controls = self._controls(conditioning, cfg_scales, None, None, style_levels)
        return np.asarray(_rill.conditioning_tokens(controls), dtype=np.int32)

    @staticmethod
    def _frames(frames: Optional[int], forced: Optional[np.ndarray]) -> int:
        if frames is None:
            return 25 if forced is None else len(forced)
        frames = _check_int(frames, "frames")
        if frames < 1:
            raise ValueError(f"frames must be at least 1, got {frames}")
        return frames

    @staticmethod
    def _forced(forced_tokens: Any) -> Optional[np.ndarray]:
        if forced_tokens is None:
            return None
        arr = np.asarray(forced_tokens)
        if arr.dtype.kind not in "iu":
            raise ValueError(f"forced_tokens must hold integers, got {arr.dtype} values")
        if arr.ndim != 2 or arr.shape[1] != 12 or arr.shape[0] == 0:
            raise ValueError(f"forced_tokens must have shape [N, 12] (N ≥ 1), got {list(arr.shape)}")
        return np.ascontiguousarray(arr, dtype=np.int64)

    @staticmethod
    def _state(state: Any) -> Optional[State]:
        if state is None or isinstance(state, State):
            return state
        raise TypeError(
            f"state must be a rill_mrt.State returned by this library, got {type(state).__name__}"
        )

    # --- generation ------------------------------------------------------------

    @staticmethod
    def _clip(continue_from: Any) -> Any:
        """``continue_from`` as the extension takes it: a path, or ``(samples
        [N, channels] float32, sample_rate)`` from a :class:`Waveform` (or anything
        with ``samples`` and ``sample_rate``)."""
        if continue_from is None:
            return None
        if isinstance(continue_from, (str, os.PathLike)):
            return os.fspath(continue_from)
        samples = getattr(continue_from, "samples", None)
        rate = getattr(continue_from, "sample_rate", None)
        if samples is None or rate is None:
            raise TypeError(
                "continue_from must be a path to an audio file or a Waveform (samples and "
                f"sample_rate), got {type(continue_from).__name__}"
            )
        arr = np.asarray(samples, dtype=np.float32)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2 or arr.shape[1] == 0:
            raise ValueError(f"continue_from samples must have shape [N, channels], got {list(arr.shape)}")
        return (np.ascontiguousarray(arr), _check_int(rate, "continue_from sample_rate"))

    def _generate(
        self, conditioning, cfg_scales, temperature, top_k, frames, state, forced_tokens, audio, logits,
        style_levels=None, continue_from=None, keep_style_during_prefill=False, encoder=None,
    ):
        """``generate`` and ``generate_tokens``: checks the arguments (raising
        before any work) and runs the model; ``(tokens, samples, logits, state)``."""
        forced = self._forced(forced_tokens)
        controls = self._controls(conditioning, cfg_scales, temperature, top_k, style_levels)
        clip = self._clip(continue_from)
        return self._model.generate(
            controls, self._frames(frames, forced), self.seed, self._state(state), forced, audio, logits,
            clip, bool(keep_style_during_prefill), None if encoder is None else os.fspath(encoder),
        )

    def generate(
        self,
        conditioning: Optional[Conditioning] = None,
        cfg_scales: Optional[Dict[str, float]] = None,
        temperature: Optional[float] = None,
        top_k: Optional[int] = None,
        frames: Optional[int] = None,
        state: Optional[State] = None,
        *,
        forced_tokens: Any = None,
        style_levels: Optional[int] = None,
        continue_from: Any = None,
        keep_style_during_prefill: bool = False,
        encoder: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> Tuple[Waveform, State]:
        """Generates ``frames`` 40 ms frames (default 25 = 1 s) of 48 kHz stereo audio.

        As upstream: ``conditioning`` maps ``mulan_tokens_25hz`` (12 MusicCoCa codes
        0..1023, a float embedding ``[768]``, or — rill's addition — a text such as
        ``"disco funk"``, embedded as :meth:`embed_style` does by default, i.e. without
        the mapper, and tokenised),
        ``pianoroll_with_onsets_tokens`` (128 values: -1 masked, 0 off, 1 sustained,
        2 onset, 3 on) and ``drum_pianoroll_tokens`` (-1 masked, 0 none, 1 drums) to
        their raw values; a missing input is masked. ``cfg_scales`` overrides the
        instance's scales for this call. Passing the returned ``state`` continues the
        music exactly as one longer call would (also after pickling).

        ``forced_tokens`` (``[N, 12]`` unique ids, level k in 6+1024k..6+1024k+1023)
        teacher-forces the language model instead of sampling; ``frames`` then
        defaults to N. The returned waveform's ``tokens`` are the frames' token ids.

        ``style_levels`` (12 or 6) overrides the instance's for this call.

        ``continue_from`` (an audio file's path or a :class:`Waveform`, any rate and
        channel count) continues that audio, as ``rill generate --continue-from``: its
        last whole frames of at most 28 s are encoded with the SpectroStream encoder
        (``encoder``: its file; default upstream's
        ``resources/spectrostream/encoder.safetensors`` beside the checkpoint's
        ``checkpoints/``) and forced through the language model, style and notes
        masked (``keep_style_during_prefill=True``: style levels 0–5 kept, as upstream's
        C++ engine); the ``frames`` returned are the new music only. It starts a new
        stream, so ``state`` and ``forced_tokens`` cannot be given with it; at least
        2.04 s of audio is needed (upstream drops 25 frames at each end).
        """
        tokens, samples, _, new_state = self._generate(
            conditioning, cfg_scales, temperature, top_k, frames, state, forced_tokens, True, False,
            style_levels, continue_from, keep_style_during_prefill, encoder,
        )
        return Waveform(samples, SAMPLE_RATE, tokens), new_state

    def generate_tokens(
        self,
        conditioning: Optional[Conditioning] = None,
        cfg_scales: Optional[Dict[str, float]] = None,
        temperature: Optional[float] = None,
        top_k: Optional[int] = None,
        frames: Optional[int] = None,
        state: Optional[State] = None,
        *,
        forced_tokens: Any = None,
        return_logits: bool = False,
        style_levels: Optional[int] = None,
        continue_from: Any = None,
        keep_style_during_prefill: bool = False,
        encoder: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> Union[Tuple[np.ndarray, State], Tuple[np.ndarray, np.ndarray, State]]:
        """Language model only: ``(tokens [frames, 12] int32, state)``, no audio.

        With ``return_logits=True``: ``(tokens, logits [frames, 12, 1024] float32,
        state)``, each depth step's soft-capped logits over its level's 1024 codes
        (the sampler's input; along ``forced_tokens`` when given). The state continues
        with ``generate_tokens`` (the codec did not run, so not with audio).
        ``style_levels`` and the continuation arguments are :meth:`generate`'s.
        """
        tokens, _, logits, new_state = self._generate(
            conditioning,
            cfg_scales,
            temperature,
            top_k,
            frames,
            state,
            forced_tokens,
            False,
            bool(return_logits),
            style_levels,
            continue_from,
            keep_style_during_prefill,
            encoder,
        )
        if return_logits:
            return tokens, logits, new_state
        return tokens, new_state

    def stream(
        self,
        conditioning: Optional[Conditioning] = None,
        cfg_scales: Optional[Dict[str, float]] = None,
        temperature: Optional[float] = None,
        top_k: Optional[int] = None,
        frames: Optional[int] = None,
        state: Optional[State] = None,
        *,
        style_levels: Optional[int] = None,
    ) -> "Stream":
        """An iterator of 40 ms frames (``Waveform`` of 1920 samples each); endless
        unless ``frames`` is given. Change controls between frames with
        :meth:`Stream.update`; :meth:`Stream.state` resumes anywhere."""
        if frames is not None:
            frames = self._frames(frames, None)
        controls = self._controls(conditioning, cfg_scales, temperature, top_k, style_levels)
        inner = self._model.stream(controls, self.seed, self._state(state), frames)
        return Stream(self, inner)


class Stream:
    """Frame-by-frame generation (from :meth:`MagentaRT2.stream`).

    With two or more threads the language model runs one frame ahead of the codec
    (as ``rill play``), so a control change is heard from the second frame after it.
    """

    def __init__(self, system: MagentaRT2, inner: Any):
        self._system = system
        self._inner = inner

    def __iter__(self) -> Iterator[Waveform]:
        return self

    def __next__(self) -> Waveform:
        samples, tokens = next(self._inner)
        return Waveform(samples, SAMPLE_RATE, tokens.reshape(1, 12))

    def update(
        self,
        conditioning: Optional[Conditioning] = None,
        cfg_scales: Optional[Dict[str, float]] = None,
        temperature: Optional[float] = None,
        top_k: Optional[int] = None,
        *,
        style_levels: Optional[int] = None,
    ) -> None:
        """Replaces the controls (as :meth:`MagentaRT2.generate` takes them) from the
        next language-model step on; an invalid value raises and changes nothing."""
        self._inner.update(
            self._system._controls(conditioning, cfg_scales, temperature, top_k, style_levels)
        )

    def state(self) -> State:
        """The state after the last frame returned (pass to ``generate`` or ``stream``)."""
        return self._inner.state()
