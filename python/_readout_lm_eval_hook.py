"""Registers ``--model readout`` with lm-evaluation-harness's own command line (``lm_eval``).

lm-evaluation-harness 0.4.13 looks models up in its registry, which only its own modules fill: it
has no entry-point group through which an installed package could add one. The wheel therefore
installs ``readout-lm-eval.pth`` and this module (top level, outside the ``readout`` package, so
that start-up never loads the native library) into site-packages; Python's ``site`` runs the
``.pth`` line at start-up, which imports this module and adds one finder to ``sys.meta_path``. The finder does nothing until
``lm_eval.models`` is imported (by the harness's command line or by any program using the
harness); then it lets that import finish and registers ``readout`` as a lazy entry
(``readout.lm_eval:ReadoutLM``), so neither lm-eval nor Readout's backend is imported by anyone
who does not use them. Where anything here fails, it stays silent: a start-up hook must never
break an interpreter, and ``import readout.lm_eval`` registers the backend as well.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

_WATCHED = "lm_eval.models"
_TARGET = "readout.lm_eval:ReadoutLM"


def register() -> None:
    """Add ``readout`` to the harness's model registry as a lazy entry (no import of it)."""
    from lm_eval.api.registry import model_registry

    try:
        model_registry.register("readout", target=_TARGET)
    except ValueError:  # already there: `import readout.lm_eval` registered the class itself
        pass


class _Loader(importlib.abc.Loader):
    """Runs the real loader of ``lm_eval.models``, then registers the backend."""

    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec):  # noqa: ANN001 (importlib's signature)
        return self._inner.create_module(spec)

    def exec_module(self, module) -> None:  # noqa: ANN001
        self._inner.exec_module(module)
        try:
            register()
        except Exception:
            pass


class _Finder(importlib.abc.MetaPathFinder):
    """Watches for one module's import; every other import passes through untouched."""

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001
        if fullname != _WATCHED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader)
        return spec


def install() -> None:
    """Add the finder once (the .pth file calls this at every start-up)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
