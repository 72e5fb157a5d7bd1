#!/usr/bin/env python3
"""Gemma 3 next-token logits, Readout against llama.cpp, on the same token ids.

Why this exists: Readout's gemma3 code (sliding-window layers, norms after attention and MLP,
GELU MLP, scaled embedding) is checked here against llama.cpp on the real file, on token ids
that llama.cpp's tokenizer makes, so that the comparison does not depend on Readout's own
tokenizer for the model. For every prompt it reads the full next-token logits at the last
position from llama.cpp (llama-cpp-python) and from `readout bench logits`, and reports the
largest |Δlogit| over the whole vocabulary, whether the argmax agrees, the largest |Δp| over the
vocabulary, and the largest |Δp| on the answer letters (softmax over " A" .. " D") where the
prompt asks for one. Two prompts are longer than the model's 512-token window.

Run by bench/gemma3-logits-vs-llamacpp, which builds Readout and makes the F32 twin.

Usage:
  python3 bench/gemma3_logits_vs_llamacpp.py --readout BIN --model Q.gguf --twin F32.gguf \
      --threads 2 --out R.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from llama_cpp import Llama

N_CTX = 4096
LETTERS = [" A", " B", " C", " D"]


def prompts(repo):
    """(id, text, letters?) — short ones, a question with letters, and two past the window (about 750 and 1,750 tokens)."""
    states = []
    with open(os.path.join(repo, "bench/evalsets/authored144.jsonl"), encoding="utf-8") as f:
        for line in f:
            s = json.loads(line)["state"]
            if s not in states:
                states.append(s)
    passage = lambda n: "\n\n".join(states[:n])  # noqa: E731
    question = (
        "\n\nQuestion: Which team should handle the ticket above?\n"
        "A. billing\nB. technical\nC. sales\nD. other\nAnswer:"
    )
    return [
        ("capital", "The capital of France is", False),
        ("sky", "Question: Is the sky blue on a clear day?\nA. Yes\nB. No\nAnswer:", True),
        ("ticket", "Ticket: I was charged twice this month, please refund one of them." + question, True),
        ("long-1", passage(40) + question, True),
        ("long-2", passage(75) + question, True),
    ]


def llama_logits(model, items, threads):
    llm = Llama(model_path=model, n_ctx=N_CTX, n_threads=threads, n_threads_batch=threads,
                logits_all=False, verbose=False)
    out = []
    for it in items:
        llm.reset()
        llm.eval(it["token_ids"])
        ptr = llm._ctx.get_logits()  # the last evaluated position's row
        out.append(np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float64).copy())
    del llm
    return out


def readout_logits(binary, model, weights, ids_path, threads, tmp):
    out_path = os.path.join(tmp, f"readout-{os.path.basename(model)}-{weights}.json")
    cmd = [binary, "bench", "logits", "--device", "cpu", "--model", model, "--weights", weights,
           "--threads", str(threads), "--ids", ids_path, "--split", "0.5", "--out", out_path]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    seconds = time.perf_counter() - t0
    doc = json.load(open(out_path))
    return doc, [np.array(i["logits"], dtype=np.float64) for i in doc["items"]], seconds


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def compare(a, b, letter_ids):
    """Figures of logits `b` against the reference `a`."""
    d = np.abs(a - b)
    r = {
        "max_abs_dlogit": float(d.max()),
        "mean_abs_dlogit": float(d.mean()),
        "argmax_same": bool(a.argmax() == b.argmax()),
        "argmax": [int(a.argmax()), int(b.argmax())],
        "max_abs_dp_vocab": float(np.abs(softmax(a) - softmax(b)).max()),
    }
    if letter_ids:
        pa, pb = softmax(a[letter_ids]), softmax(b[letter_ids])
        r["letter_p_reference"] = [round(float(p), 6) for p in pa]
        r["max_abs_dp_letters"] = float(np.abs(pa - pb).max())
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--readout", required=True)
    ap.add_argument("--model", required=True, help="the quantised GGUF (Q4_K_M)")
    ap.add_argument("--twin", required=True, help="its F32 twin (readout quantize --mode f32)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    tok = Llama(model_path=a.model, vocab_only=True, verbose=False)
    letter_ids = []
    for letter in LETTERS:
        t = tok.tokenize(letter.encode(), add_bos=False, special=False)
        if len(t) != 1:
            sys.exit(f"letter {letter!r} is {len(t)} tokens")
        letter_ids.append(t[0])
    items = []
    for pid, text, asks in prompts(repo):
        ids = list(tok.tokenize(text.encode("utf-8"), add_bos=True, special=True))
        items.append({"id": pid, "token_ids": ids, "letters": asks})
    del tok

    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        ids_path = os.path.join(tmp, "ids.json")
        json.dump({"prompts": [{"id": i["id"], "token_ids": i["token_ids"]} for i in items]}, open(ids_path, "w"))
        for label, path in [("q4_k_m", a.model), ("f32_twin", a.twin)]:
            runs[("llama.cpp", label)] = llama_logits(path, items, a.threads)
            for weights in ["native", "f32"]:
                doc, logits, secs = readout_logits(a.readout, path, weights, ids_path, a.threads, tmp)
                runs[(f"readout-{weights}", label)] = logits
                runs[(f"readout-{weights}", label, "doc")] = doc

    comparisons = []

    def add(name, ref, other, note):
        rows = []
        for k, it in enumerate(items):
            r = compare(runs[ref][k], runs[other][k], letter_ids if it["letters"] else None)
            r.update({"id": it["id"], "tokens": len(it["token_ids"])})
            split = runs.get(other + ("doc",))
            if split:
                r["prefix_split_max_abs_dlogit"] = split["items"][k].get("split_max_abs_diff")
            rows.append(r)
        comparisons.append({"name": name, "reference": list(ref), "other": list(other), "note": note, "prompts": rows})

    for label in ["q4_k_m", "f32_twin"]:
        for weights in ["native", "f32"]:
            add(f"readout --weights {weights} vs llama.cpp, {label}", ("llama.cpp", label),
                (f"readout-{weights}", label), "the same file in both engines")
    add("llama.cpp q4_k_m vs llama.cpp f32_twin", ("llama.cpp", "f32_twin"), ("llama.cpp", "q4_k_m"),
        "how far llama.cpp's own quantised arithmetic moves it from the same weights in f32")
    add("readout --weights f32: q4_k_m vs f32_twin", ("readout-f32", "f32_twin"), ("readout-f32", "q4_k_m"),
        "the same dequantised weights: should be identical")
    add("readout --weights native vs --weights f32, q4_k_m", ("readout-f32", "q4_k_m"), ("readout-native", "q4_k_m"),
        "Readout's integer kernel (16-bit activations) against its f32 path")

    info = runs[("readout-native", "q4_k_m", "doc")]["model"]
    result = {
        "what": "Gemma 3 270M next-token logits at the last position, Readout against llama.cpp on the same token ids",
        "model": os.path.basename(a.model),
        "readout_model": info,
        "llama_cpp": "llama-cpp-python " + __import__("llama_cpp").__version__,
        "threads": a.threads,
        "letters": LETTERS,
        "letter_ids": letter_ids,
        "prompts": [{"id": i["id"], "tokens": len(i["token_ids"])} for i in items],
        "comparisons": comparisons,
    }
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")

    for c in comparisons:
        print(f"\n{c['name']}  ({c['note']})")
        print(f"  {'prompt':<8} {'tokens':>6} {'max|Δlogit|':>12} {'mean|Δlogit|':>13} {'argmax':>7} "
              f"{'max|Δp| vocab':>14} {'max|Δp| letters':>16} {'split':>9}")
        for r in c["prompts"]:
            letters = f"{r['max_abs_dp_letters']:.2e}" if "max_abs_dp_letters" in r else "-"
            split = r.get("prefix_split_max_abs_dlogit")
            split = f"{split:.1e}" if split is not None else "-"
            print(f"  {r['id']:<8} {r['tokens']:>6} {r['max_abs_dlogit']:>12.4g} {r['mean_abs_dlogit']:>13.3g} "
                  f"{'same' if r['argmax_same'] else 'DIFF':>7} {r['max_abs_dp_vocab']:>14.2e} {letters:>16} {split:>9}")
    print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()
