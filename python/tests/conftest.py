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


def readout_binary() -> Path:
    """The CLI the tests serve with: $READOUT_BIN, else the release build in the shared target
    folder (.cargo/config.toml puts it beside the clone), which CI's `cargo test --release` made."""
    import os

    given = os.environ.get("READOUT_BIN")
    path = Path(given) if given else ROOT.parent / "readout-target" / "release" / "readout"
    if not path.exists():
        pytest.fail(f"no readout binary at {path}: run `cargo build --release` first, or set READOUT_BIN")
    return path


def _serve(*extra):
    """A real `readout serve` on a free loopback port with the default model (and `extra`
    options); yields its base URL (http://127.0.0.1:PORT), stopped (SIGTERM) afterwards."""
    import subprocess
    import threading

    proc = subprocess.Popen(
        [str(readout_binary()), "serve", "--port", "0", "--model", str(MODEL), *extra],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = None
    for line in proc.stderr:
        if "listening on " in line:
            base = line.split("listening on ")[1].split()[0]
            break
    if base is None:
        proc.wait(timeout=30)
        pytest.fail("readout serve did not start")
    # Keep reading its log, so that it never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    yield base
    proc.terminate()
    proc.wait(timeout=60)


@pytest.fixture(scope="session")
def server():
    """`readout serve` with its defaults."""
    yield from _serve()


@pytest.fixture(scope="session")
def exact_server():
    """`readout serve --attention kernel`: each prompt's numbers bit for bit the same whatever
    else shares its pass (the harness batches its requests its own way)."""
    yield from _serve("--attention", "kernel")
