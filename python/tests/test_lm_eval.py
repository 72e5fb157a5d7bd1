"""lm-evaluation-harness through the readout backend, end to end: authored144 as a local JSON
task (examples/lm_eval/authored144, nothing downloaded), and each choice's log-likelihood the
harness got equal to Readout's own on the same strings, one request at a time (within 1e-4)."""

import os

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
