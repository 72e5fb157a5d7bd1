"""Readout from Python: decide rubric criteria with a small local language model by reading the
logits of the answer letters, and evaluate such models, with the Rust library underneath.

    import readout
    judge = readout.Judge()                        # the default model, loaded once
    judge.score(["I was charged twice."], "examples/support-ticket.rubric.json")

Everything numeric happens in the library (`readout._readout`, built with pyo3); this module
turns Python values into its arguments and its JSON answers into dicts. The GIL is released
while a model loads, scores or runs, so threads can share one `Judge`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from . import _readout
from ._readout import ReadoutError

__all__ = [
    "Judge",
    "ReadoutError",
    "compare",
    "default_model",
    "merge",
    "run",
    "shard_groups",
]
__version__: str = _readout.__version__

PathLike = Union[str, "os.PathLike[str]"]


def default_model() -> str:
    """The default model's path, found as the CLI finds it: ``$READOUT_MODEL``, the user's data
    folder's ``readout/models/``, then ``models/`` of the current folder."""
    return _readout.default_model()


def _rubric_json(rubric: Union[PathLike, Mapping[str, Any]]) -> tuple[str, str]:
    if isinstance(rubric, Mapping):
        return json.dumps(rubric), "<rubric dict>"
    path = Path(rubric)
    try:
        path.read_bytes()
        # A file is named by its path: the library reads it, and its errors name its lines.
        return json.dumps(str(path)), str(path)
    except OSError as e:
        err = ReadoutError(f"{path}: {e.strerror or e}")
        err.kind = "Io"
        raise err from e


def _texts(texts: Union[str, Iterable[Union[str, Mapping[str, Any]]]]) -> list[tuple[Optional[str], str]]:
    if isinstance(texts, str):
        texts = [texts]
    out: list[tuple[Optional[str], str]] = []
    for i, t in enumerate(texts):
        if isinstance(t, str):
            out.append((None, t))
        elif isinstance(t, Mapping) and isinstance(t.get("text"), str):
            tid = t.get("id")
            out.append((None if tid is None else str(tid), t["text"]))
        else:
            err = ReadoutError(f"text {i + 1}: each text must be a string or a dict with a `text` string")
            err.kind = "BadInput"
            raise err
    return out


def _result_json(r: Union[PathLike, Mapping[str, Any]]) -> str:
    if isinstance(r, Mapping):
        return json.dumps(r)
    try:
        return Path(r).read_text(encoding="utf-8")
    except OSError as e:
        err = ReadoutError(f"{r}: {e.strerror or e}")
        err.kind = "Io"
        raise err from e


class Judge:
    """A model loaded once. ``model``: a GGUF file, a Hugging Face model directory, or a model on
    the Hugging Face hub as ``hf:ORG/REPO[@REVISION][:FILE]`` (downloaded into the hub's cache
    once, resumed when cut off, checked against the hub's sha256; then read from the cache, and
    only from it with ``offline=True`` or ``HF_HUB_OFFLINE=1``); default: :func:`default_model`.
    ``device``: ``auto``, ``cpu``, ``cuda`` or ``metal``;
    ``chat_template``: a family name llama.cpp knows (``chatml``, ``gemma``, …) or a Jinja file,
    for a model without one of its own; ``progress``: called as ``progress(file, done, total)``
    while a hub model downloads (bytes); returning ``False`` or raising stops the download, as
    Ctrl-C does, and the partial file is resumed next time. ``precision`` (``f32``, ``tf32``,
    ``bf16``) and ``fused_kernels`` are for CUDA GPUs (a wheel built with the ``cuda`` feature);
    ``attention`` is ``kernel`` on a CUDA GPU for speed, on the CPU for numbers that do not depend
    on what shares a pass; the rest as the CLI's options of the same names."""

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
    ) -> None:
        self._judge = _readout.Judge(
            None if model is None else os.fspath(model),
            device,
            chat_template,
            threads,
            weights,
            kv_cache,
            int8_activations,
            matmul,
            offline,
            precision,
            attention,
            fused_kernels,
            progress,
        )

    @property
    def info(self) -> dict[str, Any]:
        """What the library reads from the model (``readout info``)."""
        return json.loads(self._judge.info())

    @property
    def load_seconds(self) -> float:
        return self._judge.load_seconds

    def tokenize(self, text: str) -> list[int]:
        return self._judge.tokenize(text)

    def detokenize(self, ids: Sequence[int]) -> str:
        return self._judge.detokenize(list(ids))

    def score(
        self,
        texts: Union[str, Iterable[Union[str, Mapping[str, Any]]]],
        rubric: Union[PathLike, Mapping[str, Any]],
        debias: str = "none",
        *,
        truncate_middle: bool = False,
    ) -> list[dict[str, Any]]:
        """Decide every criterion of ``rubric`` (a dict or a JSON file) for each text (a string,
        or a dict with ``text`` and an optional ``id``): one dict a text, the same as the lines
        of ``readout score --json``."""
        rubric_json, name = _rubric_json(rubric)
        lines = self._judge.score(_texts(texts), rubric_json, name, debias, truncate_middle)
        return [json.loads(line) for line in lines]

    def decide(self, request: Mapping[str, Any], debias: str = "cyclic") -> dict[str, Any]:
        """Decide a System One request — TypeSafe's ``/v1/systemone`` body: ``state`` (a string,
        dict or list) and ``questions`` (id → ``{"type": "choice" | "noul" | "score", ...}``);
        ``model`` may be left out — and return its answer as ``readout serve`` gives it:
        ``{"model", "answers": {id: answer}, "usage", "x_debias"}``. ``debias`` is the mode of a
        request without ``x_debias`` (none, cyclic or permutation)."""
        body = {"model": "jev-latest", **dict(request)}
        return json.loads(self._judge.decide(json.dumps(body), debias))

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
    ) -> dict[str, Any]:
        """Evaluate the model on an eval set (JSON Lines): the result file's content, as
        ``readout run`` writes it (and into ``out`` when given). ``groups``: only the rows of
        these item groups (a shard, see :func:`shard_groups`); the shots still come from the
        whole set."""
        text = self._judge.run(
            os.fspath(evalset),
            shots,
            shot_seed,
            debias,
            mode,
            limit,
            family,
            skip_bad,
            truncate_middle,
            prompt,
            pass_tokens,
            None if groups is None else list(groups),
            None if out is None else os.fspath(out),
        )
        return json.loads(text)

    def loglikelihood(
        self,
        requests: Sequence[tuple[Sequence[int], Sequence[int]]],
        *,
        plain: bool = False,
        pass_tokens: Optional[int] = None,
    ) -> list[tuple[float, bool]]:
        """For each (context token ids, continuation token ids): the continuation's summed log
        probability after the context, and whether each of its tokens was the most likely one.
        All requests are planned as one prefix tree (shared contexts computed once);
        ``plain=True`` computes each alone, token by token (the reference)."""
        answers, _ = self._judge.loglikelihood(
            [(list(c), list(t)) for c, t in requests], plain, pass_tokens
        )
        return answers

    def loglikelihood_work(
        self, requests: Sequence[tuple[Sequence[int], Sequence[int]]], *, pass_tokens: Optional[int] = None
    ) -> tuple[list[tuple[float, bool]], dict[str, int]]:
        """:meth:`loglikelihood` and what went through the model (tokens asked, tokens computed,
        passes)."""
        answers, work = self._judge.loglikelihood([(list(c), list(t)) for c, t in requests], False, pass_tokens)
        return answers, json.loads(work)


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
) -> dict[str, Any]:
    """Evaluate ``model`` (or an already loaded ``judge``) on an eval set: the result file's
    content. ``options``: those of :meth:`Judge.run`."""
    if judge is None:
        judge = Judge(model, device, chat_template)
    return judge.run(evalset, shots, debias, limit, **options)


def compare(a: Union[PathLike, Mapping[str, Any]], b: Union[PathLike, Mapping[str, Any]]) -> dict[str, Any]:
    """Compare two results (dicts or result files) of one eval set, paired by row id, with the
    exact McNemar p-value: ``readout compare --json``."""
    return json.loads(_readout.compare(_result_json(a), _result_json(b)))


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
) -> list[list[str]]:
    """The item groups of a run's rows split into at most ``n`` shards of about equal size,
    every row of a group in one shard (so each shard's prefix tree still shares its shots)."""
    return _readout.shard_groups(os.fspath(evalset), n, shots, shot_seed, debias, limit, family, skip_bad)


def merge(
    parts: Sequence[Union[PathLike, Mapping[str, Any]]],
    evalset: PathLike,
    *,
    family: Optional[str] = None,
    skip_bad: bool = False,
) -> dict[str, Any]:
    """Shards' results (dicts or files) of one run merged into the result a single run writes:
    the rows in its order, metrics recomputed over all of them."""
    return json.loads(_readout.merge([_result_json(p) for p in parts], os.fspath(evalset), family, skip_bad))
