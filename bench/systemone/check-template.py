#!/usr/bin/env python3
"""Check that llama-server's openjev decision prompt (the decision GGUF's systemone template)
has the same token ids as Readout's prompt, question by question.

    python3 bench/systemone/check-template.py \
        --server-bin /work/llama-build/bin/llama-server \
        --model /work/models-bench/qwen2.5-coder-1.5b-openjev.gguf [--states 0,1,2,50,143] [--out FILE]
  or, against a running server started with LLAMA_SERVER_SLOTS_DEBUG=1:
    python3 bench/systemone/check-template.py --url http://127.0.0.1:8080

How llama.cpp's ids are obtained: llama-server renders each question's prompt with the
template and tokenizes it with common_tokenize(vocab, prompt, add_special=false,
parse_special=true) (server-decision.cpp, fill_task). The /v1/systemone response has no debug
field, but with LLAMA_SERVER_SLOTS_DEBUG=1 GET /slots shows each slot's last prompt
(detokenized from the task's token ids, specials included). So per question:
  llama ids   = /tokenize(slot prompt)             (the ids the server evaluated; the text is
                                                     their detokenization)
  readout ids = /tokenize(Readout's prompt text)   (built in Python from Readout's format)
both with {"add_special": false, "parse_special": true}; plus the texts are compared byte for
byte, and sum(len(readout ids)) is compared with the response's usage.input_tokens (the sum of
the prompt lengths llama.cpp evaluated).

Extra cases (--extra) probe what the authored states do not: object/array states and
descriptions, null choice descriptions, noul false descriptions, trailing white space.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sysone_common import questions, readout_prompt, states  # noqa: E402


class Client:
    def __init__(self, url: str):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80

    def call(self, method: str, path: str, body=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=600)
        data = None if body is None else json.dumps(body).encode()
        c.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        raw = r.read()
        c.close()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw.decode(errors="replace")

    def tokenize(self, text: str) -> list[int]:
        st, r = self.call("POST", "/tokenize", {"content": text, "add_special": False, "parse_special": True})
        assert st == 200, (st, r)
        return r["tokens"]

    def pieces(self, ids: list[int]) -> list[str]:
        st, r = self.call("POST", "/detokenize", {"tokens": ids})
        return r.get("content", "") if st == 200 else "?"


def start_server(bin_: str, model: str, port: int, threads: int, n_parallel: int, ctx: int, log: str):
    env = dict(os.environ, LLAMA_SERVER_SLOTS_DEBUG="1")
    cmd = [bin_, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-t", str(threads),
           "-np", str(n_parallel), "-c", str(ctx), "--slots"]
    f = open(log, "w")
    p = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)
    cl = Client(f"http://127.0.0.1:{port}")
    for _ in range(600):
        if p.poll() is not None:
            sys.exit(f"llama-server exited ({p.returncode}), see {log}")
        try:
            st, _ = cl.call("GET", "/health")
            if st == 200:
                return p, cmd
        except OSError:
            pass
        time.sleep(0.5)
    p.terminate()
    sys.exit("llama-server did not come up")


def extra_cases() -> list[tuple[str, object, dict]]:
    qs = questions()
    obj_state = {"subject": "Charged twice", "body": "Refund me, please.\n", "n": [1, 2, True, None],
                 "nested": {"a": "x\"y", "b": "ünïcödé"}}
    float_state = {"amount": 2.5, "ratio": 0.1, "whole": 1.0, "big": 1e20, "pi": 3.14159265}
    return [
        ("state with trailing white space", "My invoice is wrong.  \n\n", qs),
        ("object state (strings, ints, bools, null, nesting, escapes, non-ASCII)", obj_state, qs),
        ("object state with floats", float_state, qs),
        ("array state", ["first message", {"role": "user", "content": "second"}], qs),
        ("choice with null descriptions, an object description and an object instruction", "Text.", {
            "route": {"type": "choice", "instructions": {"ask": "Which team?", "n": 3},
                      "criteria": {"billing": None, " shipping ": None, "tech": {"area": "bugs"}}}}),
        ("noul with true and false descriptions", "Text.", {
            "q": {"type": "noul", "instructions": "  Spam?  ",
                  "criteria": {"true": "  It is spam. ", "false": "It is not spam"}}}),
        ("noul without criteria, only false, whitespace-only true", "Text.", {
            "a": {"type": "noul", "instructions": "Spam?"},
            "b": {"type": "noul", "instructions": "Spam?", "criteria": {"false": "Not spam"}},
            "c": {"type": "noul", "instructions": "Spam?", "criteria": {"true": "   "}}}),
        ("score with 10 levels", "Text.", {
            "s": {"type": "score", "instructions": "Rate.", "criteria": [f"level {i}" for i in range(10)]}}),
        ("special-token text inside the state", "a <|im_end|> b", qs),
    ]


def check_one(cl: Client, label: str, state, qs: dict, verbose: bool) -> dict:
    body = {"model": "jev-latest", "state": state, "questions": qs}
    t0 = time.perf_counter()
    st, resp = cl.call("POST", "/v1/systemone", body)
    dt = time.perf_counter() - t0
    out = {"case": label, "status": st, "latency_s": round(dt, 3), "questions": {}}
    if st != 200:
        out["error"] = resp
        return out
    # the tasks of this request have the newest ids, made in question order (one task per
    # question for openjev), so the slots with the k newest id_task are the k questions in order
    _, slots = cl.call("GET", "/slots")
    ran = sorted((s for s in slots if s.get("prompt") is not None and "id_task" in s), key=lambda s: s["id_task"])
    ran = ran[-len(qs):]
    if len(ran) < len(qs):
        out["error"] = "fewer slots than questions: start llama-server with -np >= the number of questions"
        return out
    total_readout = 0
    for (qid, q), slot in zip(qs.items(), ran):
        want = readout_prompt(state, q)
        want_ids = cl.tokenize(want)
        total_readout += len(want_ids)
        got = slot["prompt"]
        r = {"readout_n_tokens": len(want_ids)}
        got_ids = cl.tokenize(got)
        r["llama_n_tokens"] = len(got_ids)
        r["text_equal"] = got == want
        r["match"] = got_ids == want_ids
        if not r["match"] or not r["text_equal"]:
            i = next((i for i, (a, b) in enumerate(zip(got_ids, want_ids)) if a != b), min(len(got_ids), len(want_ids)))
            r["first_diff_token"] = i
            r["llama_tail"] = cl.pieces(got_ids[max(0, i - 3): i + 12])
            r["readout_tail"] = cl.pieces(want_ids[max(0, i - 3): i + 12])
            if verbose:
                r["llama_prompt"], r["readout_prompt"] = got, want
        out["questions"][qid] = r
    out["usage_input_tokens"] = resp.get("usage", {}).get("input_tokens")
    out["readout_sum_tokens"] = total_readout
    out["answers"] = resp.get("answers")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="a running llama-server (started with LLAMA_SERVER_SLOTS_DEBUG=1)")
    ap.add_argument("--server-bin")
    ap.add_argument("--model")
    ap.add_argument("--port", type=int, default=8093)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=4, help="-np; at least the number of questions")
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--log", default="/tmp/check-template-llama-server.log")
    ap.add_argument("--states", default="0,1,2,3,50,100,143", help="authored144 line indices")
    ap.add_argument("--no-extra", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="include both full prompts on a mismatch")
    ap.add_argument("--out", help="write the full JSON report here")
    args = ap.parse_args()

    proc = None
    if args.url:
        cl = Client(args.url)
    else:
        if not (args.server_bin and args.model):
            sys.exit("give --url, or --server-bin and --model")
        proc, cmd = start_server(args.server_bin, args.model, args.port, args.threads, args.parallel, args.ctx, args.log)
        print("started:", "LLAMA_SERVER_SLOTS_DEBUG=1", " ".join(cmd), file=sys.stderr)
        cl = Client(f"http://127.0.0.1:{args.port}")
    try:
        ss = states()
        cases = [(f"authored144[{i}]", ss[i], questions()) for i in map(int, args.states.split(","))]
        if not args.no_extra:
            cases += extra_cases()
        # one warm-up request so that the timed ones are not the first
        cl.call("POST", "/v1/systemone", {"state": "warm up", "questions": questions()})
        report = [check_one(cl, label, st, qs, args.verbose) for label, st, qs in cases]
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)

    n_auth = ok_auth = 0
    for r in report:
        qs = r.get("questions", {})
        flags = " ".join(f"{k}={'OK' if v.get('match') and v.get('text_equal') else 'DIFF' if v.get('match') is not None else '??'}"
                         f"({v.get('llama_n_tokens')}/{v['readout_n_tokens']})" for k, v in qs.items())
        usage = f"usage.input_tokens={r.get('usage_input_tokens')} readout_sum={r.get('readout_sum_tokens')}"
        print(f"{r['case']}: HTTP {r['status']} {r['latency_s']}s {flags} {usage if r['status'] == 200 else r.get('error')}")
        for k, v in qs.items():
            if not (v.get("match") and v.get("text_equal")):
                print(f"    {k}: first differing token {v.get('first_diff_token')}:"
                      f"\n      llama  : {v.get('llama_tail')!r}\n      readout: {v.get('readout_tail')!r}")
        if r["case"].startswith("authored144"):
            n_auth += len(qs)
            ok_auth += sum(bool(v.get("match") and v.get("text_equal")) for v in qs.values())
    print(f"authored144 questions with equal token ids: {ok_auth}/{n_auth}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1, ensure_ascii=False))
    sys.exit(0 if ok_auth == n_auth else 1)


if __name__ == "__main__":
    main()
