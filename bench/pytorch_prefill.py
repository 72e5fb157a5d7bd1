#!/usr/bin/env python3
"""PyTorch + transformers prefill peer on CPU: each prompt of a `readout prompts` file computed
whole, one after another (the "cold" setup of `readout bench prefill`), letter logits read at the
last position; the median wall time of REPEATS passes over all prompts.

The model is the very GGUF file Readout loads, read by transformers' GGUF loader (the `gguf`
package), which dequantises every tensor to float32 as Readout does; arithmetic is float32 on
`--threads` threads. Tokenisation happens before the clock starts (as in the other peers).

Usage:
  python3 bench/pytorch_prefill.py --model models/X.gguf --prompts P.jsonl --out R.json \\
      [--threads 2] [--repeats 3]
"""

import argparse
import json
import os
import statistics
import sys
import time


def die(msg):
    print(f"pytorch_prefill: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a GGUF file")
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if args.repeats < 1:
        die("--repeats must be at least 1")
    if not os.path.isfile(args.model):
        die(f"{args.model}: no such file (fetch the default model with models/fetch)")
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # The prompts file is read as the GPU peer reads it (same checks, same messages).
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda"))
    from pytorch_peer import load_prompts

    torch.set_num_threads(args.threads)
    prompts = load_prompts(args.prompts)
    d, name = os.path.split(os.path.abspath(args.model))
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(d, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, torch_dtype=torch.float32)
    model.eval()
    load_s = time.perf_counter() - t0
    base = model.get_decoder() if hasattr(model, "get_decoder") else model.model
    head = model.get_output_embeddings()
    # The prompt text is already rendered with the chat template: no special tokens added.
    ids = [tok(p["prompt"], add_special_tokens=False, return_tensors="pt").input_ids for p in prompts]
    letter_ids = []
    for p in prompts:
        row = []
        for letter in p["letters"]:
            t = tok(letter, add_special_tokens=False).input_ids
            if len(t) != 1:
                die(f"letter {letter!r} is {len(t)} tokens for this tokenizer")
            row.append(t[0])
        letter_ids.append(row)

    def one_pass():
        logits = []
        start = time.perf_counter()
        with torch.inference_mode():
            for x, lids in zip(ids, letter_ids):
                h = base(input_ids=x, use_cache=False).last_hidden_state[:, -1, :]
                logits.append(head(h)[0, lids].tolist())
        return time.perf_counter() - start, logits

    one_pass()  # warm-up, not timed
    walls, logits = [], None
    for _ in range(args.repeats):
        w, logits = one_pass()
        walls.append(w)
    med = statistics.median(walls)
    tokens = sum(int(x.shape[1]) for x in ids)
    out = {
        "generator": "bench/pytorch_prefill.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "dtype": "float32",
        "threads": args.threads,
        "model_file": name,
        "model_load_s": load_s,
        "loadavg_before": list(os.getloadavg()),
        "setups": {"cold": {"wall_s_median": med, "wall_s_all": walls, "prompt_tokens": tokens,
                            "prompt_tokens_per_s": tokens / med, "ms_per_prompt": 1000.0 * med / len(prompts)}},
        "per_prompt": [{"id": p["id"], "prompt_tokens": int(x.shape[1]),
                        "argmax_letter": p["letters"][max(range(len(l)), key=l.__getitem__)], "letter_logits": l}
                       for p, x, l in zip(prompts, ids, logits)],
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"pytorch: {len(prompts)} prompts, {tokens} tokens, {med:.2f} s median ({1000 * med / len(prompts):.0f} ms a prompt)")


if __name__ == "__main__":
    main()
