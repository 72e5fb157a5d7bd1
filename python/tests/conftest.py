"""Shared fixtures: the repository's root (the tests run from a checkout, on the default model
that `models/fetch` puts in models/) and one Judge loaded once for the session."""

from pathlib import Path

import pytest

import readout

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
RUBRIC = ROOT / "examples" / "support-ticket.rubric.json"
AUTHORED144 = ROOT / "bench" / "evalsets" / "authored144.jsonl"


@pytest.fixture(scope="session")
def judge() -> readout.Judge:
    return readout.Judge(MODEL, "cpu")


@pytest.fixture(autouse=True)
def in_root(monkeypatch):
    """Relative paths (the lm-eval task's data file) are the checkout's."""
    monkeypatch.chdir(ROOT)
