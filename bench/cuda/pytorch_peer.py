#!/usr/bin/env python3
"""PyTorch + transformers peer for Readout on a GPU (or, with --device cpu, on the CPU): the very same prompts (`readout prompts`),
the same weights, the same precision, letter logits read at the answer position.

The model is one of:
  --model DIR             a Hugging Face directory (config.json + safetensors + tokenizer.json),
                          e.g. the Qwen3-0.6B-shaped one `readout bench make-model` writes (the
                          same random weights Readout loads: no download)
  --model DIR --gguf F    a GGUF file in DIR, read by transformers' GGUF loader (needs the `gguf`
                          package), which dequantises every tensor as Readout does

Weights and arithmetic are float32, as Readout computes by default (TF32 is off: torch's default
for matmuls); `--precision tf32` lets the f32 matmuls use TF32 (`torch.set_float32_matmul_precision
("high")`), and `--precision bf16` holds the whole model in bfloat16 (what a GPU user runs), as
Readout's `--precision` does for its own matmuls. Attention is torch's scaled-dot-product
attention (`attn_implementation="sdpa"`).

Two ways of batching, each timed whole (tokenisation included, model load not):
  padded   every prompt whole; prompts sorted by length, left-padded into batches of B with an
           attention mask and explicit positions; one forward per batch.
  prefix   the prompts are split into at most 8 groups by a shared token prefix (the system turn
           and the shots block: a run has one or two shot sets); each group's prefix is computed
           once, its KV cache repeated to batch size, and each batch of B suffixes of the group
           runs on top of it (left-padded, masked, positions continuing the prefix).
The LM head runs only at each prompt's last position (the base model's last hidden state,
gathered, then lm_head), as Readout's trimmed head does. Every batch size in --batch-sizes is
run; the fastest is the figure. Before timing, a few prompts are checked against an unbatched
forward of the whole prompt (same logits within --check-tol).

PROMPTS.jsonl: one object per line, {"id", "prompt", "letters"} (`readout prompts` writes it).

With `--compile default|reduce-overhead`, the decoder runs under `torch.compile` (Inductor;
`reduce-overhead` adds its CUDA graphs): what a GPU user who wants PyTorch's best would run. Shapes
are static per graph (`dynamic=False`), so batches are padded to a width that is a multiple of
--pad-multiple (default 64 when compiling) and the number of graphs stays small. Compilation is
timed apart: the first run over every prompt (each shape compiled there) is `compile_and_first_run_s`,
and the figure is the run after it. The `prefix` mode's KV cache (transformers' DynamicCache) is
left to Dynamo's guards; where it cannot be traced the setup's error is recorded and the others
kept.

Usage:
  python3 pytorch_peer.py --model DIR [--gguf FILE] --prompts P.jsonl --out R.json \\
      [--modes padded,prefix] [--batch-sizes 16,64,144] [--compile none|default|reduce-overhead]
"""

import argparse
import copy
import json
import os
import platform
import resource
import sys
import time

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer


def die(msg):
    print(f"pytorch_peer: {msg}", file=sys.stderr)
    sys.exit(1)


def load_prompts(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                o = json.loads(line)
                for k in ("id", "prompt", "letters"):
                    if k not in o:
                        die(f"{path}:{n}: missing {k!r}")
                out.append(o)
    if not out:
        die(f"{path}: no prompts")
    return out


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


class Peer:
    def __init__(self, model, tok, device, compile_mode="none", pad_multiple=1):
        self.model, self.tok, self.device = model, tok, device
        self.base = model.get_decoder() if hasattr(model, "get_decoder") else model.model
        self.pad_multiple = max(1, pad_multiple)
        if compile_mode != "none":
            self.base = torch.compile(self.base, mode=compile_mode, dynamic=False, fullgraph=False)
        self.head = model.get_output_embeddings()
        self.letter_cache = {}
        self.max_groups = 8

    def letter_ids(self, letters):
        out = []
        for letter in letters:
            if letter not in self.letter_cache:
                ids = self.tok(letter, add_special_tokens=False)["input_ids"]
                if len(ids) != 1:
                    die(f"letter {letter!r} is {len(ids)} tokens")
                self.letter_cache[letter] = ids[0]
            out.append(self.letter_cache[letter])
        return out

    def encode(self, prompts):
        return self.tok([p["prompt"] for p in prompts], add_special_tokens=False)["input_ids"]

    @torch.inference_mode()
    def last_hidden(self, seqs, past=None, past_len=0):
        """Left-pad `seqs` into one batch on top of `past` (a cache of `past_len` tokens, already
        batch-sized) and return the final hidden state at each sequence's last token."""
        b, width = len(seqs), max(len(s) for s in seqs)
        width = -(-width // self.pad_multiple) * self.pad_multiple
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        ids = torch.full((b, width), pad, dtype=torch.long)
        mask = torch.zeros((b, past_len + width), dtype=torch.long)
        pos = torch.zeros((b, width), dtype=torch.long)
        mask[:, :past_len] = 1
        for i, s in enumerate(seqs):
            n = len(s)
            ids[i, width - n:] = torch.tensor(s, dtype=torch.long)
            mask[i, past_len + width - n:] = 1
            pos[i, width - n:] = torch.arange(past_len, past_len + n)
        ids, mask, pos = ids.to(self.device), mask.to(self.device), pos.to(self.device)
        out = self.base(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=past,
                        use_cache=past is not None)
        return out.last_hidden_state[:, -1, :]

    @torch.inference_mode()
    def letter_logits(self, hidden, letters):
        """The LM head at `hidden` ([b, H]); only the letters' columns come back to the host."""
        ids = sorted({j for ls in letters for j in self.letter_ids(ls)})
        col = {j: c for c, j in enumerate(ids)}
        sub = self.head(hidden).float()[:, torch.tensor(ids, device=hidden.device)].cpu().tolist()
        return [[sub[i][col[j]] for j in self.letter_ids(ls)] for i, ls in enumerate(letters)]

    @torch.inference_mode()
    def prefix_cache(self, prefix):
        ids = torch.tensor([prefix], dtype=torch.long, device=self.device)
        out = self.base(input_ids=ids, use_cache=True)
        return out.past_key_values

    @staticmethod
    def repeat_cache(cache, b):
        c = copy.deepcopy(cache)
        if hasattr(c, "batch_repeat_interleave"):
            c.batch_repeat_interleave(b)
            return c
        for layer in c.layers:  # transformers' DynamicLayer
            layer.keys = layer.keys.repeat_interleave(b, dim=0)
            layer.values = layer.values.repeat_interleave(b, dim=0)
        return c

    def run(self, prompts, mode, bs):
        """Letter logits of every prompt, in the prompts' order, and the timing."""
        sync()
        t0 = time.perf_counter()
        enc = self.encode(prompts)
        t_tok = time.perf_counter() - t0
        letters = [p["letters"] for p in prompts]
        result = [None] * len(prompts)
        order = sorted(range(len(prompts)), key=lambda i: len(enc[i]))
        tokens_run = 0
        if mode == "padded":
            for s in range(0, len(order), bs):
                idx = order[s:s + bs]
                h = self.last_hidden([enc[i] for i in idx])
                tokens_run += len(idx) * max(len(enc[i]) for i in idx)
                for i, row in zip(idx, self.letter_logits(h, [letters[i] for i in idx])):
                    result[i] = row
            prefix_len = 0
        elif mode == "prefix":
            groups = prefix_groups(enc, self.max_groups)
            prefix_len = 0
            for plen, members in groups:
                cache = self.prefix_cache(enc[members[0]][:plen])
                tokens_run += plen
                prefix_len += plen
                members = sorted(members, key=lambda i: len(enc[i]))
                for s in range(0, len(members), bs):
                    idx = members[s:s + bs]
                    past = self.repeat_cache(cache, len(idx))
                    sufs = [enc[i][plen:] for i in idx]
                    h = self.last_hidden(sufs, past=past, past_len=plen)
                    tokens_run += len(idx) * max(len(x) for x in sufs)
                    for i, row in zip(idx, self.letter_logits(h, [letters[i] for i in idx])):
                        result[i] = row
        else:
            die(f"unknown mode {mode}")
        sync()
        wall = time.perf_counter() - t0
        return result, {"mode": mode, "batch_size": bs, "wall_s": wall, "tokenize_s": t_tok,
                        "prefix_tokens": prefix_len, "tokens_run_padded": tokens_run,
                        "prompt_tokens": sum(len(e) for e in enc)}


def prefix_groups(seqs, max_groups):
    """Split the prompts into at most `max_groups` groups by a shared token prefix (the system
    turn and the shots block: a run uses one or two shot sets), as long a prefix as that allows;
    each group keeps its own longest common prefix (leaving every suffix at least one token).
    Returns [(prefix_len, [prompt indices])]."""
    lo, hi = 0, min(len(s) for s in seqs) - 1
    while lo < hi:  # the largest L with at most max_groups distinct L-token prefixes
        mid = (lo + hi + 1) // 2
        if len({tuple(s[:mid]) for s in seqs}) <= max_groups:
            lo = mid
        else:
            hi = mid - 1
    by = {}
    for i, s in enumerate(seqs):
        by.setdefault(tuple(s[:lo]), []).append(i)
    out = []
    for members in by.values():
        group = [seqs[i] for i in members]
        out.append((min(common_prefix_len(group), min(len(g) for g in group) - 1), members))
    return out


def common_prefix_len(seqs):
    n = min(len(s) for s in seqs)
    first = seqs[0]
    for s in seqs[1:]:
        k = 0
        while k < n and s[k] == first[k]:
            k += 1
        n = k
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--gguf")
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--modes", default="padded,prefix")
    ap.add_argument("--batch-sizes", default="16,64,144")
    ap.add_argument("--check", type=int, default=4, help="prompts checked against an unbatched forward")
    ap.add_argument("--check-tol", type=float, help="largest |Δ logit| of a batched prompt against its unbatched forward "
                    "[default: 1e-3 in f32, 0.05 in tf32, 0.5 in bf16, whose batched sums round differently]")
    ap.add_argument("--precision", default="f32", choices=["f32", "tf32", "bf16"],
                    help="f32 (TF32 off), tf32 (f32 weights, TF32 matmuls) or bf16 (the model in bfloat16)")
    ap.add_argument("--device", default="cuda", help="cuda (the GPU peer) or cpu (the same batching on CPU)")
    ap.add_argument("--threads", type=int, help="CPU threads (with --device cpu)")
    ap.add_argument("--compile", default="none", choices=["none", "default", "reduce-overhead"],
                    help="run the decoder under torch.compile in this mode (reduce-overhead: with CUDA graphs)")
    ap.add_argument("--pad-multiple", type=int, help="pad each batch's width to a multiple of this "
                    "[default: 64 with --compile, else 1]")
    a = ap.parse_args()
    if a.pad_multiple is None:
        a.pad_multiple = 64 if a.compile != "none" else 1
    if a.device == "cpu":
        dev = torch.device("cpu")
        if a.threads:
            torch.set_num_threads(a.threads)
    elif not torch.cuda.is_available():
        die("no CUDA device visible to torch (pass --device cpu for the CPU)")
    else:
        dev = torch.device("cuda:0")
    tf32 = a.precision == "tf32"
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    torch.backends.cudnn.allow_tf32 = tf32
    dtype = torch.bfloat16 if a.precision == "bf16" else torch.float32
    if a.check_tol is None:
        a.check_tol = {"f32": 1e-3, "tf32": 0.05, "bf16": 0.5}[a.precision]
    prompts = load_prompts(a.prompts)

    sync()
    t0 = time.perf_counter()
    kw = {"gguf_file": a.gguf} if a.gguf else {}
    tok = AutoTokenizer.from_pretrained(a.model, **kw)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=dtype, attn_implementation="sdpa", **kw)
    model.to(dev).eval()
    sync()
    load_s = time.perf_counter() - t0
    peer = Peer(model, tok, dev, a.compile, a.pad_multiple)

    # Correctness first: a few prompts, whole and alone, against each batched mode.
    ref_idx = list(range(min(a.check, len(prompts))))
    ref = []
    for i in ref_idx:
        ids = peer.encode([prompts[i]])[0]
        h = peer.last_hidden([ids])
        ref.append(peer.letter_logits(h, [prompts[i]["letters"]])[0])

    modes = [m for m in a.modes.split(",") if m]
    sizes = [int(x) for x in a.batch_sizes.split(",") if x]
    runs, best, best_logits, checks = [], None, None, {}
    for mode in modes:
        for bs in sizes:
            try:
                # Warm-up at these shapes: compiled, every prompt (each shape's graph is made here).
                t_first = time.perf_counter()
                peer.run(prompts if a.compile != "none" else prompts[: min(len(prompts), 2 * bs)], mode, bs)
                first_s = time.perf_counter() - t_first
                if dev.type == "cuda":
                    torch.cuda.reset_peak_memory_stats()
                logits, timing = peer.run(prompts, mode, bs)
                if dev.type == "cuda":
                    # What PyTorch's allocator held at most during the timed run (weights included).
                    timing["peak_device_bytes"] = torch.cuda.max_memory_allocated()
                if a.compile != "none":
                    timing["compile_and_first_run_s"] = first_s
            except Exception as e:  # keep the other setups' figures
                runs.append({"mode": mode, "batch_size": bs, "error": f"{type(e).__name__}: {e}"})
                print(f"pytorch_peer: {mode} B={bs} failed: {e}", file=sys.stderr)
                torch.cuda.empty_cache()
                continue
            d = max(abs(x - y) for i in ref_idx for x, y in zip(logits[i], ref[i]))
            timing["max_abs_logit_diff_vs_unbatched"] = d
            checks[f"{mode}/{bs}"] = d
            if d > a.check_tol:
                timing["error"] = f"batched logits differ from the unbatched forward by {d}"
            runs.append(timing)
            print(f"pytorch_peer: {mode:6s} B={bs:4d}: {timing['wall_s']:.3f} s (check {d:.2e})", file=sys.stderr)
            if "error" not in timing and (best is None or timing["wall_s"] < best["wall_s"]):
                best, best_logits = timing, logits
    if best is None:
        die("no setup ran correctly")
    res = {
        "torch": torch.__version__, "transformers": transformers.__version__,
        "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0) if dev.type == "cuda" else None, "device": str(dev), "threads": torch.get_num_threads(),
        "python": platform.python_version(), "dtype": str(dtype).removeprefix("torch."), "tf32": tf32,
        "precision": a.precision, "check_tol": a.check_tol,
        "attn_implementation": "sdpa", "model": os.path.abspath(a.model), "gguf_file": a.gguf,
        "compile": a.compile, "pad_multiple": a.pad_multiple,
        "model_load_s": load_s, "prompts": len(prompts), "runs": runs, "best": best,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "per_prompt": [{"id": p["id"], "letter_logits": lg} for p, lg in zip(prompts, best_logits)],
    }
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"pytorch_peer: best {best['mode']} B={best['batch_size']}: {best['wall_s']:.3f} s; wrote {a.out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
