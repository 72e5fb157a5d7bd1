"""The `readout` package on the default model: the same answers as the CLI, errors with the
library's message and kind, the GIL released while scoring."""

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

import readout
from conftest import AUTHORED144, MODEL, ROOT, RUBRIC

TEXT = "I was charged twice this month, please refund one of them."


def readout_binary():
    """The CLI cargo built for this checkout (its target folder, as .cargo/config.toml sets it)."""
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"], capture_output=True, text=True, cwd=ROOT
    )
    if meta.returncode != 0:
        return None
    exe = Path(json.loads(meta.stdout)["target_directory"]) / "release" / "readout"
    return exe if exe.exists() else None


def test_score_gives_the_dicts_of_score_json(judge):
    [got] = judge.score([TEXT], RUBRIC)
    assert [c["criterion"] for c in got["criteria"]] == ["topic", "refund_requested", "urgency"]
    topic = got["criteria"][0]
    assert topic["chosen"] == max(topic["options"], key=lambda o: o["probability"])["id"]
    assert abs(sum(o["probability"] for o in topic["options"]) - 1) < 1e-9
    # A rubric as a dict decides the same as its file.
    again = judge.score(TEXT, json.loads(RUBRIC.read_text()))
    assert again == [got]


def test_score_equals_the_cli(judge):
    exe = readout_binary()
    if exe is None:
        pytest.skip("the CLI is not built here (cargo build --release)")
    out = subprocess.run(
        [str(exe), "score", "--rubric", str(RUBRIC), "--text", TEXT, "--json", "--model", str(MODEL), "--device", "cpu"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert judge.score([TEXT], RUBRIC) == [json.loads(out)]


SYSTEMONE = {
    "state": {"subject": "Charged twice", "body": TEXT},
    "questions": {
        "refund": {"type": "noul", "instructions": "Does the customer ask for money back?",
                   "criteria": {"true": "A refund, chargeback or credit"}},
        "team": {"type": "choice", "instructions": "Which team?", "criteria": {"Billing": None, "Technical": "Bugs"}},
        "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["Can wait", "Soon", "Now"]},
    },
}


def test_decide_answers_a_system_one_request_as_the_cli_does(judge, tmp_path):
    got = judge.decide(SYSTEMONE)
    assert list(got["answers"]) == ["refund", "team", "urgency"]
    assert got["x_debias"] == "cyclic" and got["usage"]["input_tokens"] > 0
    assert 0 <= got["answers"]["refund"]["noul"] <= 1
    urgency = got["answers"]["urgency"]
    assert abs(urgency["score"] - sum(int(k) * p for k, p in urgency["probabilities"].items())) < 1e-9
    with pytest.raises(readout.ReadoutError, match="criteria"):
        judge.decide({**SYSTEMONE, "questions": {"q": {"type": "score", "criteria": ["one"]}}})
    exe = readout_binary()
    if exe is None:
        pytest.skip("the CLI is not built here (cargo build --release)")
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"model": "jev-latest", **SYSTEMONE}))
    out = subprocess.run(
        [str(exe), "decide", "--request", str(path), "--model", str(MODEL), "--device", "cpu"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert json.loads(out) == got


def test_texts_with_ids_and_debias(judge):
    got = judge.score([{"text": TEXT, "id": "t1"}, "Cannot log in."], RUBRIC, debias="cyclic")
    assert [r.get("id") for r in got] == ["t1", None]
    assert all(c["order_unstable"] in (True, False) for r in got for c in r["criteria"])


def test_run_gives_the_result_file_and_compare_pairs_two(judge, tmp_path):
    out = tmp_path / "r.json"
    a = judge.run(AUTHORED144, shots=0, limit=6, out=out)
    assert a["schema"] == "readout.result" and a["status"] == "complete"
    assert len(a["rows"]) == 6 and a["metrics"]["overall"]["rows"] == 6
    assert json.loads(out.read_text())["rows"] == a["rows"]
    b = readout.run(AUTHORED144, judge=judge, debias="cyclic", limit=6)
    c = readout.compare(a, out)
    assert c["paired"] == 6 and c["only_a_correct"] == 0 and c["p_value"] == 1.0
    d = readout.compare(a, b)
    assert d["paired"] == 6 and d["accuracy_b"] == sum(r["correct"] for r in b["rows"]) / 6


def test_shards_merge_into_the_single_run(judge):
    whole = judge.run(AUTHORED144, shots=2, debias="cyclic", limit=24)
    shards = readout.shard_groups(AUTHORED144, 3, shots=2, debias="cyclic", limit=24)
    assert len(shards) == 3 and sorted(g for s in shards for g in s) == sorted({r["group_id"] for r in whole["rows"]})
    parts = [judge.run(AUTHORED144, shots=2, debias="cyclic", limit=24, groups=g) for g in shards]
    merged = readout.merge(parts, AUTHORED144)
    assert merged["rows"] == whole["rows"]
    assert merged["metrics"] == whole["metrics"]
    assert merged["status"] == "complete" and merged["eval_set"]["rows"] == 24


def test_errors_carry_the_library_message_and_kind(judge, tmp_path):
    with pytest.raises(readout.ReadoutError) as e:
        readout.Judge(tmp_path / "missing.gguf")
    assert e.value.kind == "ModelMissing" and "missing.gguf" in str(e.value)
    with pytest.raises(readout.ReadoutError) as e:
        judge.score([TEXT], {"questions": {}})
    assert e.value.kind == "BadInput"
    with pytest.raises(readout.ReadoutError) as e:
        judge.score([TEXT], RUBRIC, debias="sideways")
    assert e.value.kind == "Config" and "sideways" in str(e.value)
    with pytest.raises(readout.ReadoutError) as e:
        judge.run(AUTHORED144, debias="pride", groups=["x"])
    assert e.value.kind == "Config" and "shards" in str(e.value)
    with pytest.raises(readout.ReadoutError) as e:
        judge.loglikelihood([([], [1])])
    assert e.value.kind == "Config" and "empty context" in str(e.value)
    assert issubclass(readout.ReadoutError, Exception)


def test_the_gil_is_released_while_scoring(judge):
    """A Python thread keeps running while another scores: it counts far more often than once."""
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    start = ticks
    judge.score([TEXT] * 8, RUBRIC, debias="cyclic")
    during = ticks - start
    done.set()
    t.join()
    assert during > 20, during


def test_loglikelihood_tree_equals_one_request_at_a_time(judge):
    """With f32 weights and KV cache the tree and each request alone, token by token, sum the
    same products; the default (native weights, 16-bit activations, f16 cache) rounds by the pass's
    shape (up to 3e-3 on a five-token continuation), so there passes of 2 tokens are held to passes
    of 1,024 within 0.01 and the same greedy flags."""
    exact = readout.Judge(MODEL, "cpu", weights="f32", kv_cache="f32")
    ctx = exact.tokenize("The capital of France is")
    other = exact.tokenize("Two plus two is")
    reqs = [
        (ctx, exact.tokenize(" Paris")),
        (ctx, exact.tokenize(" Lyon")),
        (ctx, exact.tokenize(" a city on the Seine")),
        (other, exact.tokenize(" four")),
        (other[:1], exact.tokenize(" plus")),
    ]
    tree = exact.loglikelihood(reqs)
    plain = exact.loglikelihood(reqs, plain=True)
    for (a, ga), (b, gb) in zip(tree, plain):
        assert abs(a - b) < 1e-4 and ga == gb and a < 0
    assert tree[0][0] > tree[2][0], "one token is likelier than five"
    native = judge.loglikelihood(reqs)
    small = judge.loglikelihood(reqs, pass_tokens=2)
    assert all(abs(a - b) < 0.01 and ga == gb for (a, ga), (b, gb) in zip(native, small))
    assert all(abs(a - b) < 0.01 for (a, _), (b, _) in zip(native, tree))
    _, work = judge.loglikelihood_work(reqs)
    assert work["computed_tokens"] < work["request_tokens"]
