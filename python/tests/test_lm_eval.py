"""lm-evaluation-harness through the readout backend, end to end: authored144 as a local JSON
task (examples/lm_eval/authored144, nothing downloaded), and each choice's log-likelihood the
harness got equal to Readout's own on the same strings, one request at a time (within 1e-4)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

lm_eval = pytest.importorskip("lm_eval")

import readout.lm_eval  # noqa: E402,F401  (registers --model readout)
from conftest import MODEL, ROOT  # noqa: E402


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def evaluate(limit, **model_args):
    from lm_eval.tasks import TaskManager

    return lm_eval.simple_evaluate(
        model="readout",
        model_args={"model": str(MODEL), "device": "cpu", **model_args},
        tasks=["authored144"],
        task_manager=TaskManager(include_path=str(ROOT / "examples" / "lm_eval")),
        limit=limit,
        log_samples=True,
    )


def test_authored144_runs_and_each_choice_equals_readouts_own_loglikelihood():
    out = evaluate(12)
    acc = out["results"]["authored144"]["acc,none"]
    samples = out["samples"]["authored144"]
    assert len(samples) == 12 and 0.0 <= acc <= 1.0
    # Readout's own: the same strings, encoded as the harness encodes a pair, asked of the library
    # directly (one call, as the harness made one).
    lm = readout.lm_eval.ReadoutLM(model=str(MODEL), device="cpu")
    pairs = [lm._encode_pair(*a) for s in samples for a in s["arguments"]]
    own = iter(lm.judge.loglikelihood(pairs))
    checked = 0
    for s in samples:
        assert len(s["resps"]) == len(s["doc"]["options"])
        mine = [next(own) for _ in s["resps"]]
        for (ll, greedy), resp in zip(mine, s["resps"]):
            got_ll, got_greedy = resp[0]
            assert abs(got_ll - ll) < 1e-4, (got_ll, ll)
            assert bool(got_greedy) == greedy
            checked += 1
        best = max(range(len(mine)), key=lambda i: mine[i][0])
        assert s["acc"] == float(best == s["doc"]["label"])
    assert checked == 36


def test_the_default_model_runs_the_whole_task_and_refuses_generation():
    out = evaluate(None)
    assert len(out["samples"]["authored144"]) == 144
    lm = readout.lm_eval.ReadoutLM(model=str(MODEL), device="cpu")
    with pytest.raises(NotImplementedError, match="generate_until"):
        lm.generate_until([])
    with pytest.raises(NotImplementedError, match="loglikelihood_rolling"):
        lm.loglikelihood_rolling([])
    assert lm.eot_token_id >= 0 and lm.max_length == 8192


def test_the_harness_s_own_command_line_finds_model_readout(tmp_path):
    """`lm_eval run --model readout`: the harness's console script, nothing imported first. The
    wheel's .pth hook registers the backend when the harness imports its models, and start-up
    of any other program loads neither the harness nor Readout's native library."""
    bindir = Path(sys.executable).parent
    out = tmp_path / "out"
    run = subprocess.run(
        [str(bindir / "lm_eval"), "run", "--model", "readout", "--model_args", f"model={MODEL}",
         "--device", "cpu", "--tasks", "authored144", "--include_path", str(ROOT / "examples" / "lm_eval"),
         "--limit", "4", "--output_path", str(out)],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    [res] = list(out.rglob("results_*.json"))
    assert 0.0 <= json.loads(res.read_text())["results"]["authored144"]["acc,none"] <= 1.0
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('readout', 'lm_eval', '_readout_lm_eval_hook')))"],
        capture_output=True, text=True, check=True,
    )
    assert probe.stdout.strip() == "['_readout_lm_eval_hook']"
