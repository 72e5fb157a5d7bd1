"""Typed stubs of the `readout` package (see __init__.py for what each does)."""

import os
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

PathLike = Union[str, os.PathLike[str]]
Text = Union[str, Mapping[str, Any]]

__version__: str

class ReadoutError(Exception):
    """An error of the Readout library, with its message; ``kind`` names it (the library's
    error variant: ``ModelMissing``, ``BadInput``, ``BadFile``, ``Config``, ``ContextOverflow``, …)."""

    kind: str

def default_model() -> str: ...

class Judge:
    def __init__(
        self,
        model: Optional[PathLike] = None,
        device: str = "auto",
        chat_template: Optional[str] = None,
        *,
        threads: Optional[int] = None,
        weights: str = "auto",
        kv_cache: str = "auto",
        int8_activations: bool = False,
        matmul: str = "dense",
        offline: bool = False,
        precision: str = "f32",
        attention: str = "auto",
        fused_kernels: str = "auto",
        progress: Optional[Callable[[str, int, int], Optional[bool]]] = None,
    ) -> None: ...
    @property
    def info(self) -> dict[str, Any]: ...
    @property
    def load_seconds(self) -> float: ...
    def tokenize(self, text: str) -> list[int]: ...
    def detokenize(self, ids: Sequence[int]) -> str: ...
    def score(
        self,
        texts: Union[str, Iterable[Text]],
        rubric: Union[PathLike, Mapping[str, Any]],
        debias: str = "none",
        *,
        truncate_middle: bool = False,
    ) -> list[dict[str, Any]]: ...
    def run(
        self,
        evalset: PathLike,
        shots: int = 0,
        debias: str = "none",
        limit: Optional[int] = None,
        *,
        shot_seed: int = 0,
        mode: str = "readout",
        family: Optional[str] = None,
        skip_bad: bool = False,
        truncate_middle: bool = False,
        prompt: str = "default",
        pass_tokens: Optional[int] = None,
        groups: Optional[Sequence[str]] = None,
        out: Optional[PathLike] = None,
    ) -> dict[str, Any]: ...
    def loglikelihood(
        self,
        requests: Sequence[tuple[Sequence[int], Sequence[int]]],
        *,
        plain: bool = False,
        pass_tokens: Optional[int] = None,
    ) -> list[tuple[float, bool]]: ...
    def loglikelihood_work(
        self,
        requests: Sequence[tuple[Sequence[int], Sequence[int]]],
        *,
        pass_tokens: Optional[int] = None,
    ) -> tuple[list[tuple[float, bool]], dict[str, int]]: ...

def run(
    evalset: PathLike,
    model: Optional[PathLike] = None,
    shots: int = 0,
    debias: str = "none",
    limit: Optional[int] = None,
    *,
    judge: Optional[Judge] = None,
    device: str = "auto",
    chat_template: Optional[str] = None,
    **options: Any,
) -> dict[str, Any]: ...
def compare(a: Union[PathLike, Mapping[str, Any]], b: Union[PathLike, Mapping[str, Any]]) -> dict[str, Any]: ...
def shard_groups(
    evalset: PathLike,
    n: int,
    shots: int = 0,
    debias: str = "none",
    limit: Optional[int] = None,
    *,
    shot_seed: int = 0,
    family: Optional[str] = None,
    skip_bad: bool = False,
) -> list[list[str]]: ...
def merge(
    parts: Sequence[Union[PathLike, Mapping[str, Any]]],
    evalset: PathLike,
    *,
    family: Optional[str] = None,
    skip_bad: bool = False,
) -> dict[str, Any]: ...
