#!/usr/bin/env python3
"""Native weights against the f32 path and llama.cpp, on one GGUF file: speed, peak memory, answers.

Why this exists: Readout keeps a model's weights in the file's encoding (`--weights native`) and
multiplies them with integer kernels; before that every weight was expanded to f32 at load. This
runs authored144 `--shots 3 --debias cyclic` (optionally `--limit N`) on one model file with
three engines, taking turns round after round (the VM's speed drifts over minutes, so no engine
gets a slow stretch to itself):

  native     readout run --weights native (16-bit activations and an f16 KV cache, the defaults)
  int8       readout run --weights native --int8-activations (with --int8)
  f32        readout run --weights f32 --kv-cache f32 (the path every weight used to take, with
             the f32 KV cache: the reference the others' answers are held to)
  llamacpp   llama.cpp through llama-cpp-python on the very prompts Readout scores
             (`readout prompts`), keeping the longest common prefix with the previous prompt

Each engine's figure is its median round; peak resident memory is the largest of its rounds
(Readout records it in every result file; the peer reads its own getrusage). Answers: every
native probability against the f32 path's (per ordering and combined), the rows whose prediction
differs, and for those the f32 path's gap between its top two; llama.cpp's cyclic predictions
against the f32 path's. Writes bench/results/native-weights/LABEL.json and keeps the first
round's Readout result files beside it (LABEL-native.json, LABEL-f32.json, LABEL-int8.json).

With `--device cuda` (and `--readout BIN`, a CUDA build, on the GPU machine: bench/cuda/h200-run's
`native` phase) it compares `--weights native` with `--weights f32` on the GPU, peak device
memory recorded beside peak RSS.

Usage:
  python3 bench/native_weights.py --model M.gguf --label L [--limit 40] [--rounds 2]
      [--threads 2] [--llama-python PY] [--int8] [--no-llamacpp] [--device cuda --readout BIN]
  python3 bench/native_weights.py --table bench/README.md
      (the table of every summary in bench/results/native-weights/, put between the markers
      `<!-- native-weights: begin -->` and `<!-- native-weights: end -->`)
"""

import argparse
import datetime
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

SET = "bench/evalsets/authored144.jsonl"


def target_dir():
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], check=True,
                          capture_output=True, text=True).stdout
    return json.loads(meta)["target_directory"]


def softmax(xs):
    m = max(xs)
    e = [math.exp(v - m) for v in xs]
    s = sum(e)
    return [v / s for v in e]


def compare_readout(a, b):
    """Probabilities of run b against run a (the f32 path), row by row."""
    rows_b = {r["id"]: r for r in b["rows"]}
    per_ordering, combined, differ = 0.0, 0.0, []
    for ra in a["rows"]:
        rb = rows_b[ra["id"]]
        for oa, ob in zip(ra["orderings"], rb["orderings"]):
            per_ordering = max(per_ordering, max(abs(x - y) for x, y in zip(oa["letter_probs"], ob["letter_probs"])))
        combined = max(combined, max(abs(x - y) for x, y in zip(ra["probs"], rb["probs"])))
        if ra["predicted"] != rb["predicted"]:
            top = sorted(ra["probs"], reverse=True)
            differ.append({"id": ra["id"], "f32_top_two_gap": top[0] - top[1], "f32": ra["predicted_id"],
                           "other": rb["predicted_id"]})
    return {
        "largest_probability_difference_per_ordering": per_ordering,
        "largest_combined_probability_difference": combined,
        "same_predictions": len(a["rows"]) - len(differ),
        "differing_rows": differ,
        "differing_rows_outside_top_two_within_0.01": sum(d["f32_top_two_gap"] > 0.01 for d in differ),
    }


def compare_llamacpp(ours, peer):
    """llama.cpp's cyclic predictions (rotations averaged by option id) against a Readout run's."""
    by_row = {}
    for p in peer["per_prompt"]:
        row, k = p["id"].rsplit("#", 1)
        by_row.setdefault(row, {})[int(k)] = softmax(p["letter_logits"])
    same, diffs = 0, []
    for r in ours["rows"]:
        acc = [0.0] * len(r["option_ids"])
        for k, o in enumerate(r["orderings"]):
            for slot, opt in enumerate(o["order"]):
                acc[opt] += by_row[r["id"]][k][slot] / len(r["orderings"])
        same += max(range(len(acc)), key=lambda i: acc[i]) == r["predicted"]
        diffs.append(max(abs(x - y) for x, y in zip(acc, r["probs"])))
    return {"same_predictions": same, "largest_combined_probability_difference": max(diffs)}


def mib(b):
    return f"{b / 2**20:,.0f} MiB"


def table(markdown, folder):
    """The summaries' table, between the markers in `markdown`."""
    rows = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        d = json.load(open(os.path.join(folder, name)))
        if d.get("schema") != "readout.bench.native-weights":
            continue
        e, r, nf = d["engines"], d["ratios"], d.get("native_vs_f32")
        run = f"{d['rows']} rows" + (f" (`--limit {d['limit']}`)" if d.get("limit") else "")
        run += f", {d['machine']['device']}"
        def cell(n):
            if n not in e:
                return "—"
            dev = f" (device {mib(e[n]['peak_device_bytes'])})" if e[n].get("peak_device_bytes") else ""
            return f"{e[n]['wall_seconds']:.1f} s, {mib(e[n]['peak_rss_bytes'])}{dev}"
        llama_ratio = f"{r['llamacpp_wall_over_native']:.2f}×" if "llamacpp_wall_over_native" in r else "—"
        int8_ratio = f"{r['llamacpp_wall_over_int8']:.2f}×" if "llamacpp_wall_over_int8" in r else "—"
        f32_ratio = f"{r['f32_wall_over_native']:.2f}×" if "f32_wall_over_native" in r else "—"
        answers = (f"{nf['same_predictions']}/{d['rows']}, {nf['largest_probability_difference_per_ordering']:.1e}"
                   if nf else "— (no f32 run)")
        if nf and nf["differing_rows"]:
            n, outside = len(nf["differing_rows"]), nf["differing_rows_outside_top_two_within_0.01"]
            answers += f" ({n - outside} of the {n} others: f32's top two within 0.01)"
        file = f"`{d['model']['file']}` ({d['model']['quantisation']}, {d['model_file_bytes'] / 1e6:,.0f} MB)"
        cells = [file, run, cell("native"), cell("int8"), cell("f32"), cell("llamacpp"), f32_ratio, llama_ratio,
                 int8_ratio, answers, f"[`{name}`]({os.path.relpath(os.path.join(folder, name), os.path.dirname(os.path.abspath(markdown)))})"]
        rows.append("| " + " | ".join(cells) + " |")
    head = ("| model file | run | native (CPU: 16-bit act.): wall, peak RSS | native, `--int8-activations` | f32 weights | llama.cpp "
            "| f32 ÷ native | llama.cpp ÷ native | llama.cpp ÷ int8 | native vs f32: same predictions, largest \\|Δp\\| | summary |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|")
    text = open(markdown).read()
    folder = os.path.abspath(folder)
    begin, end = "<!-- native-weights: begin -->", "<!-- native-weights: end -->"
    a, b = text.index(begin) + len(begin), text.index(end)
    text = text[:a] + "\n" + head + "\n" + "\n".join(rows) + "\n" + text[b:]
    open(markdown, "w").write(text)
    print(f"wrote {len(rows)} rows into {markdown}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", help="write the table of the summaries into this Markdown file, and stop")
    ap.add_argument("--model")
    ap.add_argument("--label")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--llama-python", default=os.environ.get("LLAMA_PYTHON", "python3"))
    ap.add_argument("--int8", action="store_true", help="also run --int8-activations")
    ap.add_argument("--no-llamacpp", action="store_true")
    ap.add_argument("--no-f32", action="store_true", help="skip the f32 path (a 4B model expanded to f32 is 16 GB)")
    ap.add_argument("--out-dir", default="bench/results/native-weights")
    ap.add_argument("--device", default="cpu", help="the device Readout runs on (cuda: the GPU check, no llama.cpp)")
    ap.add_argument("--readout", help="a built readout binary (default: cargo build --release here)")
    args = ap.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if args.table:
        return table(args.table, args.out_dir)
    if not (args.model and args.label):
        ap.error("--model and --label are needed for a run")
    if args.readout:
        bin_ = os.path.abspath(args.readout)
    else:
        subprocess.run(["cargo", "build", "--release", "--quiet"], check=True)
        bin_ = os.path.join(target_dir(), "release", "readout")
    tmp = tempfile.mkdtemp()
    common = ["--model", args.model, "--shots", "3", "--debias", "cyclic"]
    if args.limit:
        common += ["--limit", str(args.limit)]
    prompts = os.path.join(tmp, "prompts.jsonl")
    with open(prompts, "w") as f:
        subprocess.run([bin_, "prompts", SET] + common + ["--device", "cpu"], check=True, stdout=f)
    common += ["--device", args.device]

    engines = {"native": [bin_, "run", SET] + common + ["--threads", str(args.threads), "--weights", "native"]}
    if not args.no_f32:
        engines["f32"] = [bin_, "run", SET] + common + ["--threads", str(args.threads), "--weights", "f32", "--kv-cache", "f32"]
    if args.int8:
        engines["int8"] = engines["native"] + ["--int8-activations"]
    if not args.no_llamacpp:
        engines["llamacpp"] = [args.llama_python, "bench/llamacpp_peer.py", "run", "--model", args.model,
                               "--prompts", prompts, "--threads", str(args.threads)]
    names = list(engines)
    runs = {n: [] for n in names}
    for rnd in range(args.rounds):
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for n in order:
            out = os.path.join(tmp, f"{n}-{rnd}.json")
            cmd = engines[n] + ["--out", out] + (["--force"] if n != "llamacpp" else [])
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            d = json.load(open(out))
            if n == "llamacpp":
                runs[n].append({"file": out, "wall_seconds": d["wall_s"], "model_load_seconds": d["model_load_s"],
                                "peak_rss_bytes": d["peak_rss_bytes"], "package": "llama-cpp-python " + d["llama_cpp_python"],
                                "system_info": d["llama_cpp_system_info"], "tokens_evaluated": d["tokens_evaluated"]})
            else:
                runs[n].append({"file": out, "wall_seconds": d["timing"]["wall_seconds"],
                                "model_load_seconds": d["timing"]["model_load_seconds"],
                                "peak_rss_bytes": d["timing"]["peak_rss_bytes"],
                                "peak_device_bytes": d["timing"].get("peak_device_bytes"),
                                "weights": d["model"]["weights"], "activations": d["model"]["activations"],
                                "kv_cache": d["model"].get("kv_cache", "f32"),
                                "tokens_computed": d["plan"]["computed_tokens"]})
            dev = runs[n][-1].get("peak_device_bytes")
            print(f"round {rnd + 1}: {n} {runs[n][-1]['wall_seconds']:.1f} s, "
                  f"peak RSS {runs[n][-1]['peak_rss_bytes'] / 2**20:.0f} MiB"
                  + (f", peak device {dev / 2**20:.0f} MiB" if dev else ""), file=sys.stderr)

    def summary(n):
        rs = runs[n]
        per_round = ("wall_seconds", "peak_rss_bytes", "peak_device_bytes")
        s = {k: v for k, v in rs[0].items() if k not in per_round + ("file", "model_load_seconds")}
        s.update({"wall_seconds": statistics.median(r["wall_seconds"] for r in rs),
                  "model_load_seconds": statistics.median(r["model_load_seconds"] for r in rs),
                  "peak_rss_bytes": max(r["peak_rss_bytes"] for r in rs),
                  "rounds": [{k: r[k] for k in per_round if r.get(k) is not None} for r in rs]})
        if any(r.get("peak_device_bytes") for r in rs):
            s["peak_device_bytes"] = max(r.get("peak_device_bytes") or 0 for r in rs)
        return s

    first = {n: json.load(open(runs[n][0]["file"])) for n in names}
    file_bytes = os.path.getsize(args.model)
    res = {
        "schema": "readout.bench.native-weights", "schema_version": 1, "label": "MEASURED",
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python3 bench/native_weights.py " + " ".join(sys.argv[1:]),
        "eval_set": "authored144", "rows": len(first["native"]["rows"]), "limit": args.limit,
        "config": {"mode": "readout", "shots": 3, "debias": "cyclic"},
        "model": first["native"]["model"], "model_file_bytes": file_bytes,
        "machine": first["native"]["machine"], "device": args.device, "threads": args.threads, "rounds_each": args.rounds,
        "engines": {n: summary(n) for n in names},
    }
    # Answers against the f32 path, or (without it) against the native run.
    base = "f32" if "f32" in first else "native"
    if base == "f32":
        res["native_vs_f32"] = compare_readout(first["f32"], first["native"])
    if "int8" in first:
        res[f"int8_vs_{base}"] = compare_readout(first[base], first["int8"])
    if "llamacpp" in first:
        res[f"llamacpp_vs_{base}"] = compare_llamacpp(first[base], first["llamacpp"])
    e = res["engines"]
    res["ratios"] = {"native_peak_rss_over_file": e["native"]["peak_rss_bytes"] / file_bytes}
    if "f32" in e and e["native"].get("peak_device_bytes") and e["f32"].get("peak_device_bytes"):
        res["ratios"]["f32_peak_device_over_native"] = e["f32"]["peak_device_bytes"] / e["native"]["peak_device_bytes"]
    if "f32" in e:
        res["ratios"]["f32_wall_over_native"] = e["f32"]["wall_seconds"] / e["native"]["wall_seconds"]
        res["ratios"]["f32_peak_rss_over_native"] = e["f32"]["peak_rss_bytes"] / e["native"]["peak_rss_bytes"]
    if "llamacpp" in e:
        res["ratios"]["llamacpp_wall_over_native"] = e["llamacpp"]["wall_seconds"] / e["native"]["wall_seconds"]
        res["ratios"]["native_peak_rss_over_llamacpp"] = e["native"]["peak_rss_bytes"] / e["llamacpp"]["peak_rss_bytes"]
    if "int8" in e and "f32" in e:
        res["ratios"]["f32_wall_over_int8"] = e["f32"]["wall_seconds"] / e["int8"]["wall_seconds"]
    if "int8" in e:
        if "llamacpp" in e:
            res["ratios"]["llamacpp_wall_over_int8"] = e["llamacpp"]["wall_seconds"] / e["int8"]["wall_seconds"]
    os.makedirs(args.out_dir, exist_ok=True)
    out = os.path.join(args.out_dir, f"{args.label}.json")
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    for n in names:
        if n != "llamacpp":
            shutil.copy(runs[n][0]["file"], os.path.join(args.out_dir, f"{args.label}-{n}.json"))
    r = res["ratios"]
    print(f"wrote {out}: " + ", ".join(f"{k} {v:.2f}" for k, v in r.items()))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
