#!/usr/bin/env python3
"""onnxruntime as the peer on an ONNX export: the seed's own engine, on Readout's prompts.

Why this exists: the system Readout rebuilds runs its judge on onnxruntime; this measures that
engine on the very ONNX file Readout reads, with Readout's prompts (`readout prompts`, tokenized
by the export's `tokenizer.json` with the `tokenizers` package).

  run         every prompt's letter logits at its last position. The KV cache is reused as the
              API allows: onnxruntime's Python API takes the past keys and values as inputs and
              returns the present ones, so each prompt keeps the longest common prefix with the
              previous prompt (the present tensors cut to it along the sequence axis) and runs only
              its rest, as llama.cpp's peer does (bench/llamacpp_peer.py). Wall time, tokens
              evaluated, peak RSS (getrusage).
  logit-cost  the performance page's curve: a cached prefix of N tokens (35, the seed's), then a
              suffix of 1/8/16/32/64/96 tokens read to its last logits; the median of R timed reads
              each and the least-squares fixed + per-token milliseconds.

Usage:
  python3 bench/onnxruntime_peer.py run --model DIR --prompts P.jsonl [--threads 2] --out F.json
  python3 bench/onnxruntime_peer.py logit-cost --model DIR [--prefix-tokens 35] [--threads 2]
      [--repeats 30] --out F.json
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


class Model:
    def __init__(self, dir_, threads):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        t0 = time.perf_counter()
        self.session = ort.InferenceSession(os.path.join(dir_, "model.onnx"), opts, providers=["CPUExecutionProvider"])
        self.load_s = time.perf_counter() - t0
        self.tok = Tokenizer.from_file(os.path.join(dir_, "tokenizer.json"))
        cfg = json.load(open(os.path.join(dir_, "config.json")))
        self.kv = cfg.get("num_key_value_heads", cfg["num_attention_heads"])
        self.hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        self.inputs = self.session.get_inputs()
        self.past_names = [i.name for i in self.inputs if i.name.startswith("past_key_values")]
        self.present_names = [o.name for o in self.session.get_outputs() if o.name.startswith("present")]
        self.past_dtype = np.float16 if any("float16" in i.type for i in self.inputs if i.name in self.past_names) else np.float32

    def empty_past(self):
        return [np.zeros((1, self.kv, 0, self.hd), dtype=self.past_dtype) for _ in self.past_names]

    def step(self, ids, past):
        """Run `ids` after `past` (a list of tensors, one per past input); the last logits and
        the present tensors."""
        n_past = past[0].shape[2] if past else 0
        feed = {}
        for i in self.inputs:
            if i.name == "input_ids":
                feed[i.name] = np.array([ids], dtype=np.int64)
            elif i.name == "attention_mask":
                feed[i.name] = np.ones((1, n_past + len(ids)), dtype=np.int64)
            elif i.name == "position_ids":
                feed[i.name] = np.arange(n_past, n_past + len(ids), dtype=np.int64)[None, :]
        for name, t in zip(self.past_names, past):
            feed[name] = t
        out = self.session.run(["logits"] + self.present_names, feed)
        return out[0][0, -1], out[1:]


def peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run(args):
    m = Model(args.model, args.threads)
    prompts = [json.loads(l) for l in open(args.prompts)]
    letter_ids = {}
    per_prompt = []
    prev, past = [], m.empty_past()
    evaluated = 0
    t0 = time.perf_counter()
    for p in prompts:
        ids = m.tok.encode(p["prompt"], add_special_tokens=False).ids
        lcp = 0
        while lcp < min(len(prev), len(ids)) and prev[lcp] == ids[lcp]:
            lcp += 1
        lcp = min(lcp, len(ids) - 1)
        past = [t[:, :, :lcp, :] for t in past]
        logits, past = m.step(ids[lcp:], past)
        evaluated += len(ids) - lcp
        prev = ids
        lids = [letter_ids.setdefault(l, m.tok.token_to_id(l)) for l in p["letters"]]
        per_prompt.append({"id": p["id"], "letter_logits": [float(logits[i]) for i in lids]})
    wall = time.perf_counter() - t0
    out = {"engine": "onnxruntime", "onnxruntime": ort.__version__, "model": os.path.abspath(args.model),
           "setup": "prefix-reuse (past cut to the longest common prefix with the previous prompt)",
           "threads": args.threads, "prompts": len(prompts), "tokens_evaluated": evaluated, "wall_s": wall,
           "model_load_s": m.load_s, "peak_rss_bytes": peak_rss(), "per_prompt": per_prompt}
    json.dump(out, open(args.out, "w"), indent=1)
    print(f"onnxruntime: {len(prompts)} prompts in {wall:.1f} s ({evaluated} tokens evaluated)", file=sys.stderr)


def logit_cost(args):
    m = Model(args.model, args.threads)
    # Text enough for the longest suffix; the prefix is its first N tokens.
    text = ("The customer writes that the invoice for March shows the same subscription charged twice, "
            "asks for one of the two payments to be refunded, and mentions that the support chat did not answer. ") * 8
    ids = m.tok.encode(text, add_special_tokens=False).ids
    prefix = ids[:args.prefix_tokens]
    _, past = m.step(prefix, m.empty_past())
    rows = []
    for n in [int(s) for s in args.suffix.split(",")]:
        suffix = ids[args.prefix_tokens:args.prefix_tokens + n]
        for _ in range(args.warmups):
            m.step(suffix, past)
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            m.step(suffix, past)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        rows.append({"suffix_tokens": n, "median_ms": statistics.median(times),
                     "p10_ms": times[len(times) // 10], "p90_ms": times[(9 * len(times)) // 10]})
    xs = np.array([r["suffix_tokens"] for r in rows], dtype=float)
    ys = np.array([r["median_ms"] for r in rows])
    per_token, fixed = np.polyfit(xs, ys, 1)
    out = {"engine": "onnxruntime", "onnxruntime": ort.__version__, "model": os.path.abspath(args.model),
           "threads": args.threads, "prefix_tokens": args.prefix_tokens, "repeats": args.repeats,
           "points": rows, "fit": {"fixed_ms": float(fixed), "per_token_ms": float(per_token)},
           "peak_rss_bytes": peak_rss()}
    json.dump(out, open(args.out, "w"), indent=1)
    print(f"onnxruntime logit cost: {fixed:.2f} ms + {per_token:.3f} ms a token", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--model", required=True)
    r.add_argument("--prompts", required=True)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--out", required=True)
    c = sub.add_parser("logit-cost")
    c.add_argument("--model", required=True)
    c.add_argument("--prefix-tokens", type=int, default=35)
    c.add_argument("--suffix", default="1,8,16,32,64,96")
    c.add_argument("--repeats", type=int, default=30)
    c.add_argument("--warmups", type=int, default=3)
    c.add_argument("--threads", type=int, default=2)
    c.add_argument("--out", required=True)
    args = ap.parse_args()
    {"run": run, "logit-cost": logit_cost}[args.cmd](args)


if __name__ == "__main__":
    main()
