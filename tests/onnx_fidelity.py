#!/usr/bin/env python3
"""Readout against onnxruntime on the committed ONNX exports (tests/fixtures/onnx/, made by
bench/make-onnx-fixtures): every letter probability of every ordering.

Why this exists: Readout reads an ONNX export's weights out of its graph and runs them through
its own forward; onnxruntime runs the graph itself. On the same prompts (`readout prompts`,
tokenized by `tokenizer.json` with the `tokenizers` package) the fp32 exports must give every
per-ordering letter probability within 0.005 of onnxruntime's, and the int4 exports (MatMulNBits)
the same answer wherever onnxruntime's top two differ by more than 0.05. Each prompt goes through
onnxruntime whole, its past empty (the graphs take `past_key_values.*` of length 0).

The seed's levers as graph edits (`readout onnx trim`, `readout onnx prune --to ABCD`, and both)
are checked here too: onnxruntime on each edited graph gives the unedited graph's letter
probabilities within 1e-5. A MatMulNBits node with `accuracy_level` 4 (the builder's default for
the CPU since genai 0.8) lets onnxruntime quantise its input to 8 bits by a path that depends on
the product's width, so a head cut to four rows is computed differently from the whole one (by
~1e-3 on Qwen3's fixtures); those graphs' edits are checked on a copy whose nodes say
`accuracy_level` 0 (the exact product), and the movement under the graph's own level is printed.
A graph whose logits are f16 (the q4f16 layout) is computed by onnxruntime's f16 kernels, whose
order of sums also follows the product's width: its edits must stay within 1e-3 (a logit of 8 in
f16 has a step of 2^-7, ~4e-3 of probability at worst).

Usage: python3 tests/onnx_fidelity.py READOUT_BINARY [--rows 12]
Needs numpy, onnx, onnxruntime and tokenizers (CI: a venv with onnxruntime==1.23.2, onnx==1.17.0,
tokenizers==0.20.3).
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

SET = "bench/evalsets/authored144.jsonl"


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()


def ort_letter_probs(session, tok, prompt, letters, kv_heads, head_dim, kept=None):
    ids = tok.encode(prompt, add_special_tokens=False).ids
    n = len(ids)
    feed = {}
    for i in session.get_inputs():
        dtype = np.float16 if "float16" in i.type else np.float32
        if i.name == "input_ids":
            feed[i.name] = np.array([ids], dtype=np.int64)
        elif i.name == "attention_mask":
            feed[i.name] = np.ones((1, n), dtype=np.int64)
        elif i.name == "position_ids":
            feed[i.name] = np.arange(n, dtype=np.int64)[None, :]
        elif i.name.startswith("past_key_values"):
            feed[i.name] = np.zeros((1, kv_heads, 0, head_dim), dtype=dtype)
        else:
            raise SystemExit(f"onnx_fidelity: the graph's input `{i.name}` is not one this test feeds")
    logits = session.run(["logits"], feed)[0][0, -1].astype(np.float64)
    if kept is not None:
        # A pruned head: logit i is letter kept[i]'s.
        return softmax(np.array([logits[kept.index(l)] for l in letters]))
    return softmax(np.array([logits[tok.token_to_id(l)] for l in letters]))


def exact_products(d, to):
    """`d` itself, or a copy at `to` whose MatMulNBits nodes say accuracy_level 0 where any said more."""
    import onnx
    m = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
    levels = [a for n in m.graph.node if n.op_type == "MatMulNBits" for a in n.attribute if a.name == "accuracy_level"]
    if not any(a.i for a in levels):
        return d
    for a in levels:
        a.i = 0
    shutil.copytree(d, to)
    onnx.save(m, os.path.join(to, "model.onnx"))
    return to


def level(src, to, original):
    """A copy of the edited graph `src` at `to` with each MatMulNBits node's accuracy_level as `original` has it."""
    import onnx
    want = {}
    for n in onnx.load(os.path.join(original, "model.onnx"), load_external_data=False).graph.node:
        for a in n.attribute:
            if a.name == "accuracy_level":
                want[n.name] = a.i
    m = onnx.load(os.path.join(src, "model.onnx"), load_external_data=False)
    for n in m.graph.node:
        for a in n.attribute:
            if a.name == "accuracy_level":
                a.i = want.get(n.name, max(want.values()))
    shutil.copytree(src, to, symlinks=True)
    onnx.save(m, os.path.join(to, "model.onnx"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("readout")
    ap.add_argument("--rows", type=int, default=12)
    args = ap.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    exports = sorted(d for d in glob.glob("tests/fixtures/onnx/*/*") if os.path.exists(os.path.join(d, "model.onnx")))
    # genai 0.9.2's Gemma 3 graph is not transformers' model: onnxruntime on it is 0.46 off
    # transformers' logits after 10 tokens, where Readout's reading of it gives the safetensors
    # directory's logits to the bit (tests/all/onnx.rs). No reference, so no check here.
    skipped = [d for d in exports if "/gemma3/" in d]
    for d in skipped:
        print(f"{d}: skipped (onnxruntime on the builder's Gemma 3 graph does not give transformers' logits)")
    exports = [d for d in exports if d not in skipped]
    if not exports:
        raise SystemExit("onnx_fidelity: no exports under tests/fixtures/onnx/")
    failures = []
    tmp = tempfile.mkdtemp()
    for d in exports:
        common = ["--limit", str(args.rows), "--debias", "cyclic", "-m", d]
        prompts = [json.loads(l) for l in subprocess.run([args.readout, "prompts", SET] + common, check=True,
                                                         capture_output=True, text=True).stdout.splitlines()]
        out = os.path.join(tmp, os.path.basename(os.path.dirname(d)) + "-" + os.path.basename(d) + ".json")
        subprocess.run([args.readout, "run", SET] + common + ["--out", out, "--force"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ours = {}
        for r in json.load(open(out))["rows"]:
            for k, o in enumerate(r["orderings"]):
                ours[f"{r['id']}#{k}"] = o["letter_probs"]
        cfg = json.load(open(os.path.join(d, "config.json")))
        kv = cfg.get("num_key_value_heads", cfg["num_attention_heads"])
        hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        session = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
        tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        int4 = any(q in os.path.basename(d) for q in ("int4", "q4"))  # MatMulNBits: int4, q4f16
        worst, checked, clear = 0.0, 0, 0
        for p in prompts:
            theirs = ort_letter_probs(session, tok, p["prompt"], p["letters"], kv, hd)
            mine = np.array(ours[p["id"]])
            checked += 1
            if int4:
                top = np.sort(theirs)[::-1]
                if top[0] - top[1] > 0.05:
                    clear += 1
                    if int(np.argmax(mine)) != int(np.argmax(theirs)):
                        failures.append(f"{d} {p['id']}: Readout answers {p['letters'][int(np.argmax(mine))]} "
                                        f"({mine.round(4).tolist()}), onnxruntime {p['letters'][int(np.argmax(theirs))]} "
                                        f"({theirs.round(4).tolist()})")
            worst = max(worst, float(np.max(np.abs(mine - theirs))))
        if not int4 and worst > 0.005:
            failures.append(f"{d}: a letter probability differs from onnxruntime's by {worst:.4g} (> 0.005)")
        what = f"{clear} with a clear answer, the same answer" if int4 else "within 0.005"
        print(f"{d}: {checked} prompts, largest |Δp| {worst:.2e}; {what}")
        # The levers as edits, on the first six prompts.
        exact = exact_products(d, os.path.join(tmp, os.path.basename(out) + "-level0"))
        if exact != d:
            shown = [ort_letter_probs(session, tok, p["prompt"], p["letters"], kv, hd) for p in prompts[:6]]
            session = ort.InferenceSession(os.path.join(exact, "model.onnx"), providers=["CPUExecutionProvider"])
        base = [ort_letter_probs(session, tok, p["prompt"], p["letters"], kv, hd) for p in prompts[:6]]
        edits = {"trim": [["onnx", "trim"]], "prune": [["onnx", "prune", "--to", "ABCD"]],
                 "trim+prune": [["onnx", "trim"], ["onnx", "prune", "--to", "ABCD"]]}
        for name, steps in edits.items():
            src = exact
            for i, step in enumerate(steps):
                dst = os.path.join(tmp, f"{os.path.basename(out)}-{name}-{i}")
                subprocess.run([args.readout] + step + ["-m", src, "-o", dst], check=True, capture_output=True)
                src = dst
            edited = ort.InferenceSession(os.path.join(src, "model.onnx"), providers=["CPUExecutionProvider"])
            kept = list("ABCD") if "prune" in name else None
            moved = max(float(np.max(np.abs(ort_letter_probs(edited, tok, p["prompt"], p["letters"], kv, hd, kept) - b)))
                        for p, b in zip(prompts[:6], base))
            bound = 1e-3 if next(o.type for o in session.get_outputs() if o.name == "logits") == "tensor(float16)" else 1e-5
            if moved > bound:
                failures.append(f"{d} {name}: the edited graph moves a letter probability by {moved:.2e} (> {bound:g})")
            note = ""
            if exact != d:
                own = os.path.join(tmp, f"{os.path.basename(out)}-{name}-own")
                level(src, own, original=d)
                s2 = ort.InferenceSession(os.path.join(own, "model.onnx"), providers=["CPUExecutionProvider"])
                m2 = max(float(np.max(np.abs(ort_letter_probs(s2, tok, p["prompt"], p["letters"], kv, hd, kept) - b)))
                         for p, b in zip(prompts[:6], shown))
                note = f" (at accuracy_level 0; at the graph's own level onnxruntime's 8-bit path moves them by {m2:.1e})"
            print(f"  {name}: letter probabilities within {moved:.1e} of the unedited graph's{note}")
    shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("\n".join(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
