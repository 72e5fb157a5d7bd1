#!/usr/bin/env python3
"""Summarise one model of bench/cuda/h200-run's `limit` phase (issue 39, the GPU at its limit):
Readout's runs (each build and precision, rounds in turns) and the PyTorch peer's setups (eager and
torch.compile) into one result file, with each run's passes summed from its -vv log.

Why this exists: the phase's figures are ratios between engines and builds measured in one call,
and where the time goes (host queuing against waiting for the GPU, the first pass against the
rest); this puts them in one file that the README's GPU table is made from.

Usage: limit_summary.py --label L --gpu NAME --dir TMPDIR --out F.json --command "..."
       limit_summary.py --table limit-*.json          (docs/gpu.md's GPU table)
       limit_summary.py --readme-table limit-*.json   (README.md's)
  TMPDIR holds readout-KEY-ROUND.json and log-KEY-ROUND.txt (KEY: BUILD-PRECISION) and
  peer-SETUP.json (SETUP: eager-bf16, compile-default-bf16, ...).
"""

import argparse
import datetime
import glob
import json
import os
import re
import statistics

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def passes(log):
    # The passes of the run: those after the prompts were rendered (the ones before are the
    # model's warm-up at load, which the run's wall does not hold).
    lines = [ANSI.sub("", l) for l in open(log)]
    start = next((i for i, l in enumerate(lines) if "prompts rendered" in l), -1)
    load = sum(1 for l in lines[: max(start, 0)] if "total_ms" in l)
    rows = [dict(re.findall(r"(\w+)=([0-9.]+)", l)) for l in lines[start + 1:] if "total_ms" in l]
    if not rows:
        return None
    tot = [float(r["total_ms"]) for r in rows]
    s = lambda k: sum(float(r[k]) for r in rows)
    return {"load_warm_up_passes": load, "passes": len(rows), "rows": int(s("rows")), "forward_queued_ms": s("forward_queued_ms"),
            "read_ms": s("read_ms"), "total_ms": s("total_ms"), "first_pass_ms": tot[0],
            "other_passes_median_ms": statistics.median(tot[1:]) if len(tot) > 1 else None,
            "longest_passes_ms": sorted(tot)[::-1][:3]}


MODELS = {"qwen3-0.6b-shaped": "Qwen3-0.6B-shaped (random weights)", "qwen3-4b-shaped": "Qwen3-4B-shaped (random weights, one round)",
          "smollm2-135m-q4_1": "SmolLM2-135M Q4_1, the default model (real file)",
          "smollm2-135m-shaped-f16": "the default model's shape (random-weights twin, F16)"}


def table(files):
    """The GPU table of docs/gpu.md from limit-*.json result files (markdown)."""
    out = ["| model | Readout TF32, before → now | Readout bf16, before → now | PyTorch bf16, best setup (compile) | PyTorch ÷ Readout | peak device memory, Readout; PyTorch |",
           "|---|---|---|---|---|---|"]
    fmt = lambda r: f"{r['median_wall_seconds']:.3f} s" if r else "–"
    for f in files:
        d = json.load(open(f))
        r, best = d["readout"], d["best"]
        peer = d["pytorch"].get(best["pytorch"]["setup"]) if best.get("pytorch") else None
        compile_s = peer and peer["best"].get("compile_and_first_run_s")
        peer_txt = (f"{best['pytorch']['wall_s']:.3f} s, {peer['compile']}" + (f" ({compile_s:.0f} s)" if compile_s else "")) if peer else "–"
        ratio = best.get("ratio_pytorch_over_readout")
        key = best["readout"]["key"] if best.get("readout") else None
        mem = f"{r[key]['peak_device_bytes'] / 2**30:.2f} GiB" if key else "–"
        peer_mem = peer and peer["best"].get("peak_device_bytes")
        mem += f"; {peer_mem / 2**30:.2f} GiB" if peer_mem else "; not recorded"
        out.append(f"| {MODELS.get(d['model_label'], d['model_label'])} | {fmt(r.get('base-tf32'))} → **{fmt(r.get('new-tf32'))}** | "
                   f"{fmt(r.get('base-bf16'))} → **{fmt(r.get('new-bf16'))}** | {peer_txt} | "
                   f"{f'{ratio:.2f}×' if ratio else '–'} | {mem} |")
    return "\n".join(out)


SHORT = {"qwen3-0.6b-shaped": "Qwen3-0.6B-shaped", "qwen3-4b-shaped": "Qwen3-4B-shaped",
         "smollm2-135m-q4_1": "SmolLM2-135M Q4_1 (default)"}


def short_table(files):
    """README.md's GPU table: the best of each precision, PyTorch's best compiled setup."""
    out = ["| model | Readout TF32 | Readout bf16 | PyTorch bf16, compiled | PyTorch ÷ Readout | Readout's peak device memory |",
           "|---|---|---|---|---|---|"]
    for f in files:
        d = json.load(open(f))
        if d["model_label"] not in SHORT:
            continue
        r, best = d["readout"], d["best"]
        tf, bf = r["new-tf32"]["median_wall_seconds"], r["new-bf16"]["median_wall_seconds"]
        cell = lambda x: f"**{x:.3f} s**" if x == min(tf, bf) else f"{x:.3f} s"
        mem = r[best["readout"]["key"]]["peak_device_bytes"] / 2**30
        out.append(f"| {SHORT[d['model_label']]} | {cell(tf)} | {cell(bf)} | {best['pytorch']['wall_s']:.3f} s | "
                   f"{best['ratio_pytorch_over_readout']:.2f}× | {mem:.2f} GiB |")
    return "\n".join(out)


def main():
    import sys
    if len(sys.argv) > 1 and sys.argv[1] in ("--table", "--readme-table"):
        print((table if sys.argv[1] == "--table" else short_table)(sys.argv[2:]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True)
    a = ap.parse_args()
    readout = {}
    for f in sorted(glob.glob(os.path.join(a.dir, "readout-*-*.json"))):
        key, rnd = os.path.basename(f)[len("readout-"):-len(".json")].rsplit("-", 1)
        d = json.load(open(f))
        log = os.path.join(a.dir, f"log-{key}-{rnd}.txt")
        r = readout.setdefault(key, {"rounds": [], "model": d["model"], "levers": d["config"]["levers"]})
        r["rounds"].append({"round": int(rnd), "wall_seconds": d["timing"]["wall_seconds"],
                            "model_load_seconds": d["timing"]["model_load_seconds"],
                            "peak_device_bytes": d["timing"].get("peak_device_bytes"),
                            "peak_rss_bytes": d["timing"]["peak_rss_bytes"],
                            "passes": passes(log) if os.path.exists(log) else None,
                            "accuracy": d["metrics"]["overall"].get("accuracy")})
        r.setdefault("letters", {})[rnd] = {f"{row['id']}#{k}": o["letter_probs"] for row in d["rows"]
                                             for k, o in enumerate(row["orderings"])}
    for key, r in readout.items():
        r["median_wall_seconds"] = statistics.median(x["wall_seconds"] for x in r["rounds"])
        r["best_wall_seconds"] = min(x["wall_seconds"] for x in r["rounds"])
        r["peak_device_bytes"] = max((x["peak_device_bytes"] or 0) for x in r["rounds"])
    # Drift (largest |Δp| of any ordering's letter probability): each run against the f32 run
    # (the accuracy table), and the new build against the base build in the same precision (the
    # change's own effect).
    drift = {}
    first = lambda key: next(iter(readout[key]["letters"].values()))
    def largest(a, b):
        x, y = first(a), first(b)
        return max(abs(p - q) for k in x for p, q in zip(x[k], y[k]))
    # Predictions against f32 (each ordering's letter): how many differ, and how many of those
    # were near-ties in f32 (its top two within 0.01), where any rounding may flip the letter.
    def flips(a, b):
        x, y = first(a), first(b)
        top = lambda ps: max(range(len(ps)), key=lambda i: ps[i])
        differ = [k for k in x if top(x[k]) != top(y[k])]
        near = lambda ps: (sorted(ps)[-1] - sorted(ps)[-2]) < 0.01 if len(ps) > 1 else False
        return {"orderings": len(x), "differing": len(differ), "differing_f32_near_ties": sum(near(y[k]) for k in differ),
                "f32_near_ties": sum(near(y[k]) for k in y)}
    predictions = {}
    for key in readout:
        if key != "new-f32" and "new-f32" in readout:
            drift[f"{key} vs new-f32"] = largest(key, "new-f32")
            predictions[f"{key} vs new-f32"] = flips(key, "new-f32")
        build, prec = key.split("-", 1)
        if build == "new" and f"base-{prec}" in readout:
            drift[f"{key} vs base-{prec}"] = largest(key, f"base-{prec}")
    for r in readout.values():
        del r["letters"]
    peers = {}
    for f in sorted(glob.glob(os.path.join(a.dir, "peer-*.json"))):
        d = json.load(open(f))
        setup = os.path.basename(f)[len("peer-"):-len(".json")]
        peers[setup] = {"best": d["best"], "runs": d["runs"], "torch": d["torch"], "transformers": d["transformers"],
                        "compile": d.get("compile", "none"), "precision": d["precision"],
                        "model_load_s": d["model_load_s"]}
    best_peer = min(peers.items(), key=lambda kv: kv[1]["best"]["wall_s"]) if peers else None
    fast = {k: v for k, v in readout.items() if k != "new-f32"}
    best_readout = min(fast.items(), key=lambda kv: kv[1]["median_wall_seconds"]) if fast else None
    res = {
        "schema": "readout.bench.gpu-limit", "schema_version": 1, "label": "MEASURED",
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": a.command, "gpu": a.gpu, "model_label": a.label, "eval_set": "authored144",
        "config": {"shots": 3, "debias": "cyclic", "attention": "kernel", "fused_kernels": "on"},
        "readout": readout, "drift_max_abs_dp": drift, "predictions_vs_f32": predictions, "pytorch": peers,
        "best": {
            "readout": best_readout and {"key": best_readout[0], "median_wall_seconds": best_readout[1]["median_wall_seconds"]},
            "pytorch": best_peer and {"setup": best_peer[0], "wall_s": best_peer[1]["best"]["wall_s"],
                                      "mode": best_peer[1]["best"]["mode"], "batch_size": best_peer[1]["best"]["batch_size"]},
        },
    }
    if best_peer and best_readout:
        res["best"]["ratio_pytorch_over_readout"] = best_peer[1]["best"]["wall_s"] / best_readout[1]["median_wall_seconds"]
    json.dump(res, open(a.out, "w"), indent=1)
    print(json.dumps(res["best"], indent=1))
    for key, r in sorted(readout.items()):
        p = r["rounds"][-1]["passes"] or {}
        print(f"{key:12s} median {r['median_wall_seconds']:.3f} s  device peak {r['peak_device_bytes'] / 2**30:.2f} GiB  "
              f"queued {p.get('forward_queued_ms', 0):.0f} ms / in all {p.get('total_ms', 0):.0f} ms, first pass "
              f"{p.get('first_pass_ms', 0):.0f} ms, others {p.get('other_passes_median_ms') or 0:.0f} ms")
    for k, v in drift.items():
        print(f"drift {k}: {v:.2e}" + (f"  {predictions[k]}" if k in predictions else ""))


if __name__ == "__main__":
    main()
