#!/usr/bin/env python3
"""llama.cpp peer for Readout (through the PyPI package llama-cpp-python).

Why this exists: Readout scores rubric prompts by reading the next-token
logits of the option letters (A, B, C, ...) from a small GGUF model with its
own Rust inference code. This script runs the same prompts through llama.cpp,
an independent and widely used implementation, for two jobs:

  fixture  Writes a fidelity fixture: for each prompt, the token ids llama.cpp
           produces and the last-position logits of each option letter. The
           Rust test renders the prompt itself, checks that its token ids
           match, and compares its letter logits with these. The fixture holds
           numbers only, never the prompt text.

  tokens   Writes a tokenizer fixture: llama.cpp's token ids (BOS as the
           model's metadata asks, special tokens matched) for texts Readout
           rendered (tests/all/sentencepiece.rs), from the vocabulary alone.
           Numbers only; each text's ids as how many it shares with the
           previous text's, then the rest.

  bench    Times prefill-to-letter-logits over all prompts, as the speed peer
           for Readout's benchmark, in two setups: "cold" (empty KV cache and
           the whole prompt evaluated each time) and "prefix-reuse" (the
           longest common token prefix with the previous prompt stays in the
           KV cache; only the rest is evaluated).

PROMPTS.jsonl holds one object per line:
  {"id": str, "prompt": str, "letters": ["A", "B", ...]}
where "prompt" is the fully rendered chat prompt, special tokens included,
ending exactly where the answer letter would be emitted. Other fields are
ignored.

Notes for llama-cpp-python 0.3.36: with logits_all=False, Llama.scores is
never filled, so the last position's logits are read from
llm._ctx.get_logits() (llama_get_logits: the row of the last token that
asked for logits, which Llama.eval sets on the last token of each batch).

Usage:
  python3 bench/llamacpp_peer.py fixture --model M.gguf --prompts P.jsonl --out F.json
  python3 bench/llamacpp_peer.py tokens --model M.gguf --texts T.json --out F.json
  python3 bench/llamacpp_peer.py bench --model M.gguf --prompts P.jsonl \
      --threads 2 --repeats 3 --out R.json
"""

import argparse
import hashlib
import json
import math
import os
import platform
import statistics
import sys
import time

import llama_cpp
from llama_cpp import Llama

N_CTX = 4096
REUSE_CHECK_PROMPTS = 5  # prompts whose reuse logits must match cold
REUSE_TOLERANCE = 1e-3


def die(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(1)


def load_prompts(path):
    items = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                die(f"{path}:{lineno}: invalid JSON: {e}")
            for key in ("id", "prompt", "letters"):
                if key not in obj:
                    die(f"{path}:{lineno}: missing field {key!r}")
            if not isinstance(obj["letters"], list) or not obj["letters"]:
                die(f"{path}:{lineno}: 'letters' must be a non-empty list")
            items.append(obj)
    if not items:
        die(f"{path}: no prompts")
    return items


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def loadavg():
    """1/5/15-minute load averages, recorded so contended runs can be spotted."""
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def load_model(path, threads):
    t0 = time.perf_counter()
    llm = Llama(
        model_path=path,
        n_ctx=N_CTX,
        n_threads=threads,
        n_threads_batch=threads,  # prefill runs on the batch threads
        logits_all=False,
        verbose=False,
    )
    return llm, time.perf_counter() - t0


def tokenize_prompt(llm, prompt):
    # BOS as the file's metadata asks (Gemma: yes; the GPT-2 vocabularies of SmolLM2 and Qwen3
    # carry no key, and llama.cpp adds none for them), as Readout's tokenizer does.
    add_bos = llm.metadata.get("tokenizer.ggml.add_bos_token") == "true"
    ids = llm.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=True)
    if not ids:
        die("prompt tokenized to zero tokens")
    if len(ids) >= llm.n_ctx():
        die(f"prompt has {len(ids)} tokens, context is {llm.n_ctx()}")
    return list(ids)


def letter_ids(llm, letters, cache):
    out = []
    for letter in letters:
        if letter not in cache:
            toks = llm.tokenize(letter.encode("utf-8"), add_bos=False, special=False)
            if len(toks) != 1:
                die(f"letter {letter!r} tokenizes to {len(toks)} tokens {list(toks)}, need exactly 1")
            cache[letter] = toks[0]
        out.append(cache[letter])
    return out


def last_logits(llm, ids):
    """Letter logits at the last evaluated position (pointer into llama.cpp)."""
    ptr = llm._ctx.get_logits()
    return [float(ptr[i]) for i in ids]


RECOMPUTED = {"prompts": 0}


def truncate_cache(llm, keep):
    """Drop KV cache entries from position `keep` on, for all sequences. A recurrent model's
    memory (Qwen3.5's DeltaNet states) cannot be cut back: llama.cpp refuses, and the prompt is
    then evaluated from the start (counted in RECOMPUTED)."""
    ctx = llm._ctx
    # 0.3.36: _ctx.kv_cache_seq_rm wraps llama_memory_seq_rm (and maps seq -1 to 0)
    rm = getattr(ctx, "kv_cache_seq_rm", None) or getattr(ctx, "memory_seq_rm")
    if not rm(-1, keep, -1):
        RECOMPUTED["prompts"] += 1
        llm.reset()
        return 0
    llm.n_tokens = keep
    return keep


def eval_cold(llm, ids):
    llm.reset()
    llm.eval(ids)
    return len(ids)


def eval_reuse(llm, ids, prev):
    lcp = 0
    if prev is not None:
        n = min(len(prev), len(ids))
        while lcp < n and prev[lcp] == ids[lcp]:
            lcp += 1
    # evaluate at least one token so the last position's logits are fresh
    lcp = min(lcp, len(ids) - 1)
    lcp = truncate_cache(llm, lcp)
    llm.eval(ids[lcp:])
    return len(ids) - lcp


def argmax(xs):
    return max(range(len(xs)), key=lambda i: xs[i])


def cmd_fixture(args):
    prompts = load_prompts(args.prompts)
    llm, _ = load_model(args.model, args.threads)
    cache = {}
    items = []
    for p in prompts:
        ids = tokenize_prompt(llm, p["prompt"])
        lids = letter_ids(llm, p["letters"], cache)
        eval_cold(llm, ids)
        logits = last_logits(llm, lids)
        for v in logits:
            if not math.isfinite(v):
                die(f"prompt {p['id']}: non-finite logit {v}")
        items.append({
            "id": p["id"],
            "token_ids": ids,
            "letters": list(p["letters"]),
            "letter_token_ids": lids,
            "letter_logits": logits,
        })
    out = {
        "generator": "bench/llamacpp_peer.py fixture",
        "llama_cpp_python": llama_cpp.__version__,
        "model_file": os.path.basename(args.model),
        "model_sha256": sha256_file(args.model),
        "items": items,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {len(items)} items to {args.out}")


def cmd_tokens(args):
    """Token ids of Readout's texts as llama.cpp's own tokenizer makes them."""
    with open(args.texts, encoding="utf-8") as f:
        doc = json.load(f)
    llm = Llama(model_path=args.model, vocab_only=True, verbose=False)
    add_bos = llm.metadata.get("tokenizer.ggml.add_bos_token", "true") == "true"
    letters = []
    for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        toks = llm.tokenize(letter.encode("utf-8"), add_bos=False, special=True)
        if len(toks) != 1:
            die(f"letter {letter!r} tokenizes to {list(toks)}, need exactly one token")
        letters.append(toks[0])
    out, prev = [], []
    for p in doc["prompts"]:
        ids = list(llm.tokenize(p["text"].encode("utf-8"), add_bos=add_bos, special=True))
        shared = 0
        while shared < min(len(ids), len(prev)) and ids[shared] == prev[shared]:
            shared += 1
        out.append({"id": p["id"], "shared": shared, "rest": ids[shared:]})
        prev = ids
    fixture = {
        "made_by": f"bench/make-tokenizer-fixture with llama-cpp-python {llama_cpp.__version__}",
        "model_sha256": sha256_file(args.model),
        "prompts_sha256": doc["prompts_sha256"],
        "add_bos": add_bos,
        "letters": letters,
        "prompts": out,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {args.out}: {len(out)} texts, {sum(len(p['rest']) for p in out)} ids stored")


def run_pass(llm, toks, lids, reuse):
    """One pass over all prompts; returns (wall seconds, tokens evaluated, logits)."""
    llm.reset()
    prev = None
    evaluated = 0
    logits = []
    t0 = time.perf_counter()
    for ids, li in zip(toks, lids):
        if reuse:
            evaluated += eval_reuse(llm, ids, prev)
            prev = ids
        else:
            evaluated += eval_cold(llm, ids)
        logits.append(last_logits(llm, li))
    return time.perf_counter() - t0, evaluated, logits


def cmd_run(args):
    """A whole run's prompts, once, in its best simple setup (prefix reuse with the previous prompt)."""
    prompts = load_prompts(args.prompts)
    load_before = loadavg()
    llm, load_s = load_model(args.model, args.threads)
    cache = {}
    toks = [tokenize_prompt(llm, p["prompt"]) for p in prompts]
    lids = [letter_ids(llm, p["letters"], cache) for p in prompts]
    wall, evaluated, logits = run_pass(llm, toks, lids, reuse=True)
    out = {
        "generator": "bench/llamacpp_peer.py run",
        "llama_cpp_python": llama_cpp.__version__,
        "llama_cpp_system_info": llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip(),
        "model_file": os.path.basename(args.model),
        "model_sha256": sha256_file(args.model),
        "cpu_model": cpu_model(),
        "n_threads": args.threads,
        "model_load_s": load_s,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
        "setup": "prefix-reuse",
        "wall_s": wall,
        "prompts": len(prompts),
        "prompt_tokens": sum(len(t) for t in toks),
        "tokens_evaluated": evaluated,
        "prompts_recomputed_whole": RECOMPUTED["prompts"],
        "peak_rss_bytes": peak_rss_bytes(),
        "per_prompt": [
            dict({"id": p["id"], "letter_logits": l},
                 **({"token_ids": t, "letter_token_ids": li} if args.token_ids else {}))
            for p, l, t, li in zip(prompts, logits, toks, lids)
        ],
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"llama.cpp: {len(prompts)} prompts in {wall:.1f} s ({evaluated} tokens evaluated)")


def peak_rss_bytes():
    """This process's peak resident memory (Python and llama.cpp together), as Readout records its own."""
    import resource
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib if sys.platform == "darwin" else kib * 1024


def cmd_bench(args):
    prompts = load_prompts(args.prompts)
    if args.repeats < 1:
        die("--repeats must be at least 1")
    load_before = loadavg()
    llm, load_s = load_model(args.model, args.threads)
    cache = {}
    toks = [tokenize_prompt(llm, p["prompt"]) for p in prompts]
    lids = [letter_ids(llm, p["letters"], cache) for p in prompts]
    prompt_tokens = sum(len(t) for t in toks)

    # warm-up (not timed): one cold evaluation of the first prompt
    eval_cold(llm, toks[0])

    setups = {}
    logits_by_setup = {}
    for name, reuse in (("cold", False), ("prefix-reuse", True)):
        walls = []
        evaluated = None
        for _ in range(args.repeats):
            wall, ev, logits = run_pass(llm, toks, lids, reuse)
            walls.append(wall)
            evaluated = ev
            logits_by_setup.setdefault(name, logits)
        med = statistics.median(walls)
        setups[name] = {
            "wall_s_median": med,
            "wall_s_all": walls,
            "tokens_evaluated": evaluated,
            "prompt_tokens": prompt_tokens,
            "tokens_evaluated_per_s": evaluated / med if med > 0 else None,
            "prompt_tokens_per_s": prompt_tokens / med if med > 0 else None,
            "ms_per_prompt": 1000.0 * med / len(prompts),
        }

    cold_l = logits_by_setup["cold"]
    reuse_l = logits_by_setup["prefix-reuse"]
    diffs = [max(abs(a - b) for a, b in zip(c, r)) for c, r in zip(cold_l, reuse_l)]
    checked = min(REUSE_CHECK_PROMPTS, len(prompts))
    bad = [(prompts[i]["id"], diffs[i]) for i in range(checked) if diffs[i] > REUSE_TOLERANCE]
    for pid, d in bad:
        print(f"WARNING: prefix-reuse logits differ from cold for {pid}: "
              f"max |diff| = {d:.3g} > {REUSE_TOLERANCE}", file=sys.stderr)

    per_prompt = []
    for i, p in enumerate(prompts):
        letters = p["letters"]
        per_prompt.append({
            "id": p["id"],
            "prompt_tokens": len(toks[i]),
            "argmax_letter": letters[argmax(cold_l[i])],
            "argmax_letter_prefix_reuse": letters[argmax(reuse_l[i])],
            "letter_logits": cold_l[i],
        })

    result = {
        "generator": "bench/llamacpp_peer.py bench",
        "llama_cpp_python": llama_cpp.__version__,
        "llama_cpp_system_info": llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip(),
        "model_file": os.path.basename(args.model),
        "model_sha256": sha256_file(args.model),
        "cpu_model": cpu_model(),
        "n_threads": args.threads,
        "n_ctx": N_CTX,
        "n_batch": llm.n_batch,
        "repeats": args.repeats,
        "warmup_prompts": 1,
        "n_prompts": len(prompts),
        "model_load_s": load_s,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
        "setups": setups,
        "reuse_check": {
            "prompts_checked": checked,
            "tolerance": REUSE_TOLERANCE,
            "max_abs_diff_checked": max(diffs[:checked]),
            "max_abs_diff_all": max(diffs),
            "ok": not bad,
        },
        "argmax_agree_cold_vs_reuse": sum(
            a["argmax_letter"] == a["argmax_letter_prefix_reuse"] for a in per_prompt),
        "per_prompt": per_prompt,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")

    print(f"llama-cpp-python {llama_cpp.__version__}, {args.threads} threads, "
          f"{len(prompts)} prompts, {prompt_tokens} prompt tokens, "
          f"model load {load_s:.3f}s, median of {args.repeats}, "
          f"loadavg before/after {load_before[0]:.2f}/{result['loadavg_after'][0]:.2f}")
    for name, s in setups.items():
        print(f"  {name:13s} {s['wall_s_median']:8.3f}s  {s['tokens_evaluated']:6d} tok evaluated  "
              f"{s['tokens_evaluated_per_s']:9.1f} tok/s evaluated  "
              f"{s['prompt_tokens_per_s']:9.1f} prompt tok/s  {s['ms_per_prompt']:7.2f} ms/prompt")
    print(f"  reuse vs cold: max |logit diff| {max(diffs):.3g} "
          f"({'ok' if not bad else 'MISMATCH'} on first {checked}), "
          f"argmax agree {result['argmax_agree_cold_vs_reuse']}/{len(prompts)}")
    print(f"wrote {args.out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    fx = sub.add_parser("fixture", help="write letter-logit fidelity fixture")
    fx.add_argument("--model", required=True, help="GGUF model file")
    fx.add_argument("--prompts", required=True, help="PROMPTS.jsonl")
    fx.add_argument("--out", required=True, help="fixture JSON to write")
    fx.add_argument("--threads", type=int, default=2)
    fx.set_defaults(func=cmd_fixture)

    tk = sub.add_parser("tokens", help="write a tokenizer fixture (token ids only)")
    tk.add_argument("--model", required=True, help="GGUF model file (only its vocabulary is read)")
    tk.add_argument("--texts", required=True, help="JSON from tests/all/sentencepiece.rs")
    tk.add_argument("--out", required=True, help="fixture JSON to write")
    tk.set_defaults(func=cmd_tokens)

    bn = sub.add_parser("bench", help="time prefill-to-letter-logits")
    bn.add_argument("--model", required=True, help="GGUF model file")
    bn.add_argument("--prompts", required=True, help="PROMPTS.jsonl")
    bn.add_argument("--threads", type=int, default=2)
    bn.add_argument("--repeats", type=int, default=3)
    bn.add_argument("--out", required=True, help="result JSON to write")
    bn.set_defaults(func=cmd_bench)

    rn = sub.add_parser("run", help="a whole run's prompts once, with prefix reuse")
    rn.add_argument("--model", required=True, help="GGUF model file")
    rn.add_argument("--prompts", required=True, help="PROMPTS.jsonl")
    rn.add_argument("--threads", type=int, default=2)
    rn.add_argument("--out", required=True, help="result JSON to write")
    rn.add_argument("--token-ids", action="store_true",
                    help="also record each prompt's token ids and letter token ids (a fidelity check on every prompt)")
    rn.set_defaults(func=cmd_run)

    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
