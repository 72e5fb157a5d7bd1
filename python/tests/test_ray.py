"""examples/ray_score.py on a local Ray cluster (`ray.init()` on this machine): 2,000 texts
through Ray Data's `map_batches` with two Readout actors, the answers equal to one process's;
an eval set in shards of item groups, merged into the single run's rows."""

import json
import random
import subprocess
import sys

import pytest

pytest.importorskip("ray")

import readout  # noqa: E402
from conftest import AUTHORED144, MODEL, ROOT  # noqa: E402

SCRIPT = ROOT / "examples" / "ray_score.py"
# The cheapest rubric: one yes/no question (two letters read per text).
RUBRIC = {
    "name": "refund",
    "questions": {
        "refund_requested": {
            "type": "noul",
            "instructions": "Does the customer ask for money back?",
            "criteria": "A request for a refund, a chargeback or a credit counts.",
        }
    },
}


def texts(n: int) -> list[dict]:
    rng = random.Random(7)
    subjects = ["My order", "The invoice", "The app", "My password", "The parcel", "Billing", "The refund"]
    verbs = ["is late", "is wrong", "crashed again", "does not work", "was charged twice", "never arrived"]
    asks = ["Please refund me.", "Can you help?", "I want my money back.", "Fix it today.", "Thanks."]
    return [{"id": f"t{i}", "text": f"{rng.choice(subjects)} {rng.choice(verbs)}. {rng.choice(asks)}"} for i in range(n)]


def run_script(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--model", str(MODEL), "--actors", "2", "--cpus-per-actor", "1", *args],
        check=True, capture_output=True, text=True, cwd=ROOT, timeout=900,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_two_thousand_texts_on_two_actors_equal_one_process(tmp_path, judge):
    rows = texts(2000)
    src = tmp_path / "texts.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "rubric.json").write_text(json.dumps(RUBRIC))
    out = tmp_path / "answers"
    summary = run_script("texts", "--rubric", str(tmp_path / "rubric.json"), "--texts", str(src), "--out", str(out), "--format", "parquet")
    assert summary["texts"] == 2000
    import pyarrow.parquet as pq

    table = pq.read_table(out).to_pylist()
    assert sorted(r["index"] for r in table) == list(range(2000))
    by_index = {r["index"]: r for r in table}
    # Every 40th text against one process scoring the same texts. A batch is one prefix tree, and
    # a token's last bits depend on the tree node it is computed in: probabilities agree to 1e-3.
    picked = list(range(0, 2000, 40))
    mine = judge.score([rows[i] for i in picked], RUBRIC)
    for i, m in zip(picked, mine):
        got = by_index[i]
        assert got["id"] == rows[i]["id"]
        [d] = json.loads(got["decision"])["criteria"]
        [c] = m["criteria"]
        assert max(abs(a["probability"] - b["probability"]) for a, b in zip(d["options"], c["options"])) < 1e-3
        assert got["refund_requested_p"] == d["probability"]
        if c["margin"] > 0.01:
            assert got["refund_requested"] == c["chosen"]


def test_an_eval_set_in_shards_merges_into_the_single_run(tmp_path, judge):
    out = tmp_path / "merged.json"
    summary = run_script("--debias", "cyclic", "evalset", str(AUTHORED144), "--shots", "2", "--limit", "24", "--out", str(out))
    assert summary["shards"] == 2 and summary["rows"] == 24
    merged = json.loads(out.read_text())
    whole = judge.run(AUTHORED144, shots=2, debias="cyclic", limit=24)
    assert merged["rows"] == whole["rows"]
    assert merged["metrics"] == whole["metrics"] and merged["status"] == "complete"
