# Type stubs of the extension module (crates/rill-python/src/py). The public API is
# the rill_mrt package, which wraps these.
from os import PathLike
from typing import Iterator, List, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

_Controls = Tuple[
    Optional[Sequence[int]],  # style: 12 codes or None
    int,  # style_levels: 12 or 6
    Optional[Sequence[int]],  # notes: 128 raw pianoroll values or None
    Optional[int],  # drums: -1, 0, 1 or None
    Tuple[float, float, float],  # cfg scales: musiccoca, notes, drums
    float,  # temperature
    int,  # top_k
]

class State:
    @staticmethod
    def from_bytes(data: bytes) -> State: ...
    def to_bytes(self) -> bytes: ...
    def __bytes__(self) -> bytes: ...
    @property
    def frame(self) -> Optional[int]: ...
    @property
    def has_audio(self) -> Optional[bool]: ...

class Stream(Iterator[Tuple[npt.NDArray[np.float32], npt.NDArray[np.int32]]]):
    def __next__(self) -> Tuple[npt.NDArray[np.float32], npt.NDArray[np.int32]]: ...
    def update(self, controls: _Controls) -> None: ...
    def state(self) -> State: ...

class Model:
    def __init__(
        self,
        checkpoint: Optional[str | PathLike[str]],
        size: str,
        precision: Optional[str],
        codec: str,
        threads: Optional[int],
    ) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def size(self) -> str: ...
    @property
    def precision(self) -> str: ...
    @property
    def threads(self) -> str: ...
    def generate(
        self,
        controls: _Controls,
        frames: int,
        seed: int,
        state: Optional[State],
        forced: Optional[npt.NDArray[np.int64]],
        audio: bool,
        logits: bool,
        continue_from: Optional[str | Tuple[npt.NDArray[np.float32], int]] = None,
        keep_style: bool = False,
        encoder: Optional[str] = None,
    ) -> Tuple[
        npt.NDArray[np.int32],
        Optional[npt.NDArray[np.float32]],
        Optional[npt.NDArray[np.float32]],
        State,
    ]: ...
    def stream(
        self, controls: _Controls, seed: int, state: Optional[State], frames: Optional[int]
    ) -> Stream: ...

class StyleModel:
    def __init__(
        self, musiccoca_dir: Optional[str], checkpoint: Optional[str], threads: Optional[int]
    ) -> None: ...
    @property
    def dir(self) -> str: ...
    def embed_text(self, text: str, mapper_seed: Optional[int]) -> npt.NDArray[np.float32]: ...
    def embed_audio(
        self, samples: npt.NDArray[np.float32], channels: int, rate: int, pooled: bool
    ) -> npt.NDArray[np.float32]: ...
    def tokenize(self, embedding: npt.NDArray[np.float32]) -> List[int]: ...

def check_controls(controls: _Controls) -> None: ...
def conditioning_tokens(controls: _Controls) -> List[int]: ...
def precisions() -> List[str]: ...
def isa() -> str: ...
def synth_checkpoint(path: str, size: str = ..., seed: int = ...) -> Tuple[str, int, int, int, bool]: ...

class SpeechStream(Iterator[npt.NDArray[np.float32]]):
    def __next__(self) -> npt.NDArray[np.float32]: ...
    def close(self) -> None: ...

class SpeechModel:
    def __init__(
        self,
        checkpoint: Optional[str],
        codec: Optional[str],
        random_weights: Optional[int],
        all_languages: Optional[bool],
        precision: Optional[str],
        threads: Optional[int],
    ) -> None: ...
    @property
    def voices(self) -> List[str]: ...
    @property
    def languages(self) -> List[str]: ...
    @property
    def sample_rate(self) -> int: ...
    @property
    def precision(self) -> str: ...
    @property
    def threads(self) -> int: ...
    def speak(
        self,
        text: str,
        voice: int | str,
        language: str,
        seed: int,
        temperature: Optional[float],
        top_k: Optional[int],
        cfg_scale: Optional[float],
        max_frames: Optional[int],
        normalize: bool,
    ) -> Tuple[npt.NDArray[np.float32], npt.NDArray[np.int32]]: ...
    def stream(
        self,
        text: str,
        voice: int | str,
        language: str,
        seed: int,
        temperature: Optional[float],
        top_k: Optional[int],
        cfg_scale: Optional[float],
        max_frames: Optional[int],
        normalize: bool,
    ) -> SpeechStream: ...
