"""`readout serve`'s POST /v1/systemone through the System One field's official client,
typesafe-sdk 0.7.5 (with its zstd extra: bodies of 1 KiB and more go compressed), and the bad
bodies a client can send, on a real server on loopback with the default model.

Run by .ci/run's System One stage: READOUT_BIN is the readout binary, READOUT_MODEL the model.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from backports import zstd
from typesafe_sdk import Choice, Noul, Score, TypeSafeClient, TypeSafeUnprocessableEntityError

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("READOUT_BIN", str(ROOT.parent / "readout-target" / "release" / "readout"))
MODEL = os.environ.get("READOUT_MODEL", str(ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))

TICKET = ("Hi, I was charged twice for my March invoice (order #4471) and the refund I was promised last "
          "week still hasn't arrived. Please fix this today or I will dispute the charge with my bank.")
QUESTIONS = {
    "refund": {"type": "noul", "instructions": "Is the customer asking for money back?",
               "criteria": {"true": "A refund, chargeback or credit", "false": "Anything else"}},
    "team": {"type": "choice", "instructions": "Which team should handle this ticket?",
             "criteria": {"Billing": "Payments, invoices, refunds", "Technical": None, "Sales": "Pricing"}},
    "anger": {"type": "score", "instructions": "How frustrated is the customer?",
              "criteria": ["Calm", "Frustrated", {"label": "Very angry"}]},
}


@pytest.fixture(scope="module")
def server():
    """A readout serve on a free port, with a 64 KiB body limit."""
    proc = subprocess.Popen([BIN, "serve", "--port", "0", "--model", MODEL, "--threads", "2",
                             "--max-body-bytes", "65536", "--max-text-tokens", "2048"],
                            stderr=subprocess.PIPE, text=True)
    line = ""
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stderr.readline()
        m = re.search(r"http://([0-9.]+):(\d+)", line)
        if m:
            break
        if proc.poll() is not None:
            raise RuntimeError(f"readout serve ended: {line}{proc.stderr.read()}")
    else:
        raise RuntimeError("readout serve did not listen")
    yield m.group(1), int(m.group(2))
    proc.terminate()
    proc.wait(timeout=60)


def post(server, body: bytes, headers: dict[str, str] | None = None, path: str = "/v1/systemone"):
    host, port = server
    conn = http.client.HTTPConnection(host, port, timeout=300)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused before the body was all sent (413): the answer is there to read
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, dict(r.getheaders()), data


def request(**over) -> dict:
    return {"model": "jev-latest", "state": TICKET, "questions": QUESTIONS, **over}


def test_the_official_sdk_gets_every_answer_type(server):
    host, port = server
    questions = {
        "refund": Noul(instructions=QUESTIONS["refund"]["instructions"], criteria=QUESTIONS["refund"]["criteria"]),
        "team": Choice(instructions=QUESTIONS["team"]["instructions"], criteria=QUESTIONS["team"]["criteria"]),
        "anger": Score(instructions=QUESTIONS["anger"]["instructions"], criteria=QUESTIONS["anger"]["criteria"]),
    }
    # A state of more than 1 KiB: the SDK sends the body zstd-compressed.
    state = TICKET + " " + " ".join(["It has been a long week."] * 60)
    assert len(json.dumps({"state": state})) > 1024
    with TypeSafeClient(api_key="unused", base_url=f"http://{host}:{port}") as client:
        r = client.system_one(state=state, questions=questions, model="jev-latest")
        models = client.models.list()
    assert 0.0 <= r.nouls["refund"].noul <= 1.0
    team = r.choices["team"]
    assert team.choice in QUESTIONS["team"]["criteria"]
    assert set(team.probabilities) == set(QUESTIONS["team"]["criteria"])
    assert abs(sum(team.probabilities.values()) - 1) < 1e-9
    anger = r.scores["anger"]
    # The SDK keys a score's levels by number.
    assert {str(k) for k in anger.probabilities} == {"0", "1", "2"}
    assert abs(anger.score - sum(int(k) * p for k, p in anger.probabilities.items())) < 1e-9
    assert anger.legend[2] == {"label": "Very angry"}
    assert r.usage.input_tokens > 0
    assert "jev-latest" in [m.name for m in models.models]

    # The same body sent as it is and compressed gets the same answers, bit for bit.
    body = json.dumps(request(state=state)).encode()
    plain = post(server, body)
    packed = post(server, zstd.compress(body), {"Content-Encoding": "zstd"})
    assert plain[0] == packed[0] == 200
    assert json.loads(plain[2])["answers"] == json.loads(packed[2])["answers"]
    assert plain[1].get("x-typesafe-request-id") and packed[1].get("x-typesafe-request-id")


def test_a_wrong_request_is_a_422_naming_the_field(server):
    host, port = server
    with TypeSafeClient(api_key="unused", base_url=f"http://{host}:{port}") as client:
        with pytest.raises(TypeSafeUnprocessableEntityError):
            client.system_one(state=TICKET, questions={"anger": Score(instructions="How angry?", criteria=["Calm"])})


def detail(data: bytes):
    return json.loads(data)["detail"]


BAD = {
    "not JSON": (b'{"model": "jev-latest", "state": "x", "questions": {', {}, 422, ["body"]),
    "state null": (json.dumps(request(state=None)).encode(), {}, 422, ["body", "state"]),
    "no questions": (json.dumps(request(questions={})).encode(), {}, 422, ["body", "questions"]),
    "an unknown type": (json.dumps(request(questions={"q": {"type": "boolean"}})).encode(), {}, 422, ["body", "questions", "q"]),
    "1 level": (json.dumps(request(questions={"q": {"type": "score", "criteria": ["a"]}})).encode(), {}, 422,
                ["body", "questions", "q", "criteria"]),
    "11 levels": (json.dumps(request(questions={"q": {"type": "score", "criteria": [str(i) for i in range(11)]}})).encode(),
                  {}, 422, ["body", "questions", "q", "criteria"]),
    "score criteria as a map": (json.dumps(request(questions={"q": {"type": "score", "criteria": {"0": "a", "1": "b"}}})).encode(),
                                {}, 422, ["body", "questions", "q", "criteria"]),
    "256 options": (json.dumps(request(questions={"q": {"type": "choice", "criteria": {f"o{i}": None for i in range(256)}}})).encode(),
                    {}, 422, ["body", "questions", "q", "criteria"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_bodies_are_refused_and_the_server_goes_on(server, case):
    body, headers, status, loc = BAD[case]
    got, _, data = post(server, body, headers)
    assert got == status, data
    assert any(d["loc"][: len(loc)] == loc for d in detail(data)), data


def test_bodies_past_the_limits_are_refused_and_the_server_goes_on(server):
    # The wrong content type.
    got, _, data = post(server, json.dumps(request()).encode(), {"Content-Type": "text/plain"})
    assert got == 415 and detail(data)["error_type"] == "invalid_request_error", data
    # A 10 MB state (the limit is 64 KiB).
    got, _, data = post(server, json.dumps(request(state="x" * 10_000_000)).encode())
    assert got == 413 and "max-body-bytes" in detail(data)["message"], data
    # A small zstd body that inflates past the limit: refused, not inflated.
    bomb = zstd.compress(json.dumps(request(state="y" * 5_000_000)).encode())
    assert len(bomb) < 65536
    got, _, data = post(server, bomb, {"Content-Encoding": "zstd"})
    assert got == 413 and "inflates" in detail(data)["message"], data
    # A zstd body cut in two.
    whole = zstd.compress(json.dumps(request()).encode())
    got, _, data = post(server, whole[: len(whole) // 2], {"Content-Encoding": "zstd"})
    assert got == 400 and "zstd" in detail(data)["message"], data
    # A state of more tokens than --max-text-tokens.
    got, _, data = post(server, json.dumps(request(state="word " * 5000)).encode())
    assert got == 422 and detail(data)[0]["loc"] == ["body", "state"], data
    # An unknown model.
    got, _, data = post(server, json.dumps(request(model="no-such-model")).encode())
    assert got == 404 and detail(data)["error_type"] == "not_found_error", data
    # And the next request is answered.
    got, headers, data = post(server, json.dumps(request()).encode())
    assert got == 200 and set(json.loads(data)["answers"]) == set(QUESTIONS), data
