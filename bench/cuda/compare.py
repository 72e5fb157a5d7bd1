#!/usr/bin/env python3
"""Combine Readout's GPU result file with the PyTorch peer's output (and, optionally, a CPU result
file of the same configuration) into one comparison file: both wall times and their ratio, how
many rows get the same cyclic prediction, and the largest probability differences.

Usage: compare.py --ours GPU.json --peer PEER.json [--cpu CPU.json ...] --out OUT.json --command CMD
"""

import argparse
import datetime
import json
import math


def softmax(x):
    m = max(x)
    e = [math.exp(v - m) for v in x]
    s = sum(e)
    return [v / s for v in e]


def against_peer(ours, peer):
    """The peer's cyclic prediction per row: its rotations averaged by option id, as Readout does."""
    by_row = {}
    for p in peer["per_prompt"]:
        row, k = p["id"].rsplit("#", 1)
        by_row.setdefault(row, {})[int(k)] = softmax(p["letter_logits"])
    same, diffs, differ = 0, [], []
    for r in ours["rows"]:
        n = len(r["option_ids"])
        acc = [0.0] * n
        for k, o in enumerate(r["orderings"]):
            for slot, opt in enumerate(o["order"]):
                acc[opt] += by_row[r["id"]][k][slot] / len(r["orderings"])
        pred = max(range(n), key=lambda i: acc[i])
        same += pred == r["predicted"]
        if pred != r["predicted"]:
            differ.append(r["id"])
        diffs.append(max(abs(a - b) for a, b in zip(acc, r["probs"])))
    return {"same_predictions": same, "rows": len(ours["rows"]),
            "largest_combined_probability_difference": max(diffs), "differing_rows": differ}


def against_run(ours, other, path):
    """Row by row against another Readout result file of the same configuration."""
    base = {r["id"]: r for r in other["rows"]}
    same, dp, dq, prompts_same, prompts = 0, 0.0, 0.0, 0, 0
    differ = []
    for r in ours["rows"]:
        b = base[r["id"]]
        same += r["predicted"] == b["predicted"]
        if r["predicted"] != b["predicted"]:
            differ.append(r["id"])
        dp = max(dp, max(abs(x - y) for x, y in zip(r["probs"], b["probs"])))
        for o, q in zip(r["orderings"], b["orderings"]):
            prompts += 1
            prompts_same += o["prompt_sha256"] == q["prompt_sha256"]
            dq = max(dq, max(abs(x - y) for x, y in zip(o["letter_probs"], q["letter_probs"])))
    return {"file": path, "device": other["machine"]["device"], "wall_seconds": other["timing"]["wall_seconds"],
            "same_predictions": same, "rows": len(ours["rows"]), "differing_rows": differ,
            "largest_combined_probability_difference": dp, "largest_ordering_probability_difference": dq,
            "identical_prompts": prompts_same, "prompts": prompts}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True)
    ap.add_argument("--ours-name", help="the result file's path as committed")
    ap.add_argument("--peer", required=True)
    ap.add_argument("--cpu", action="append", default=[], help="NAME=PATH of a CPU result file")
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True)
    a = ap.parse_args()
    ours, peer = json.load(open(a.ours)), json.load(open(a.peer))
    best = peer["best"]
    res = {
        "schema": "readout.bench.whole-run-gpu" if peer.get("gpu") else "readout.bench.whole-run-vs-pytorch-cpu", "schema_version": 1, "label": "MEASURED",
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": a.command, "gpu": peer["gpu"],
        "eval_set": ours["eval_set"]["name"], "rows": len(ours["rows"]),
        "config": {k: ours["config"][k] for k in ("mode", "shots", "debias", "prompt_version", "levers")},
        "model": ours["model"], "machine": ours["machine"],
        "readout": {"result_file": a.ours_name or a.ours, "device": ours["machine"]["device"],
                    "wall_seconds": ours["timing"]["wall_seconds"],
                    "model_load_seconds": ours["timing"]["model_load_seconds"],
                    "tokens_computed": ours["plan"]["computed_tokens"], "prompt_tokens": ours["plan"]["prompt_tokens"],
                    "arithmetic": "float32 (weights dequantised or upcast to f32; cuBLAS SGEMM, no TF32)",
                    "mean_family_balanced_accuracy": ours["metrics"]["mean_family_balanced_accuracy"]},
        "pytorch": {"torch": peer["torch"], "transformers": peer["transformers"], "cuda": peer["cuda"],
                    "dtype": peer["dtype"], "tf32": peer["tf32"], "attn_implementation": peer["attn_implementation"],
                    "gguf_file": peer.get("gguf_file"), "model_load_seconds": peer["model_load_s"],
                    "best": best, "runs": peer["runs"]},
        "speed_ratio_pytorch_over_readout": best["wall_s"] / ours["timing"]["wall_seconds"],
        "vs_pytorch": against_peer(ours, peer),
    }
    for spec in a.cpu:
        name, path = spec.split("=", 1)
        res.setdefault("vs_cpu", {})[name] = against_run(ours, json.load(open(path)), path)
    json.dump(res, open(a.out, "w"), indent=1)
    v = res["vs_pytorch"]
    print(f"{res['model']['name']}: readout {ours['timing']['wall_seconds']:.3f} s, pytorch {best['wall_s']:.3f} s "
          f"({best['mode']} B={best['batch_size']}): {res['speed_ratio_pytorch_over_readout']:.2f}x; "
          f"same cyclic predictions {v['same_predictions']}/{v['rows']}, max |dp| {v['largest_combined_probability_difference']:.2e}")
    for name, c in res.get("vs_cpu", {}).items():
        print(f"  vs {name}: same {c['same_predictions']}/{c['rows']}, max |dp| combined "
              f"{c['largest_combined_probability_difference']:.2e}, per ordering {c['largest_ordering_probability_difference']:.2e}, "
              f"identical prompts {c['identical_prompts']}/{c['prompts']}")


if __name__ == "__main__":
    main()
