#!/usr/bin/env python3
"""The pass size on the CPU: wall time and peak memory of one run at several `--pass-tokens`.

Why this exists: on the CPU two passes run side by side, and each holds its activations and the
keys and values of the prefixes it extends, so the pass size decides most of a run's memory
beyond the weights; the answers never depend on it (a row's numbers are its own, whatever shares
its pass), so the pass size is chosen on time and memory alone. This runs authored144
`--shots 3 --debias cyclic` (optionally `--limit N`) on each model at each size, the sizes taking
turns round after round (the VM's speed drifts over minutes), and checks that every row's
probabilities are the same bits at every size.

Usage:
  python3 bench/pass_tokens_cpu.py --out bench/results/pass-tokens-cpu-LABEL.json
      [--model M.gguf[:LIMIT] ...] [--sizes 256,512,1024] [--rounds 2] [--threads 2]
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

SET = "bench/evalsets/authored144.jsonl"


def target_dir():
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], check=True,
                          capture_output=True, text=True).stdout
    return json.loads(meta)["target_directory"]


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", action="append",
                    help="a model file, optionally :LIMIT (rows); default: the default model, every row")
    ap.add_argument("--sizes", default="256,512,1024")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    subprocess.run(["cargo", "build", "--release", "--quiet"], check=True)
    bin_ = os.path.join(target_dir(), "release", "readout")
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = tempfile.mkdtemp()
    models = []
    for spec in args.model or ["models/SmolLM2-135M-Instruct.Q4_1.gguf"]:
        path, _, limit = spec.partition(":")
        runs = {n: [] for n in sizes}
        probs = {}
        for rnd in range(args.rounds):
            order = sizes[rnd % len(sizes):] + sizes[:rnd % len(sizes)]
            for n in order:
                out = os.path.join(tmp, f"{os.path.basename(path)}-{n}-{rnd}.json")
                cmd = [bin_, "run", SET, "--model", path, "--shots", "3", "--debias", "cyclic", "--threads",
                       str(args.threads), "--pass-tokens", str(n), "--out", out, "--force"]
                if limit:
                    cmd += ["--limit", limit]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                d = json.load(open(out))
                runs[n].append({"wall_seconds": d["timing"]["wall_seconds"],
                                "peak_rss_bytes": d["timing"]["peak_rss_bytes"]})
                probs[n] = [[o["letter_probs"] for o in r["orderings"]] for r in d["rows"]]
                print(f"{os.path.basename(path)} round {rnd + 1}: {n} tokens a pass "
                      f"{runs[n][-1]['wall_seconds']:.1f} s, peak RSS {runs[n][-1]['peak_rss_bytes'] / 2**20:.0f} MiB",
                      file=sys.stderr)
        models.append({
            "model": d["model"]["file"] if "file" in d["model"] else os.path.basename(path),
            "rows": len(d["rows"]),
            "limit": int(limit) if limit else None,
            "same_probabilities_at_every_size": all(probs[n] == probs[sizes[0]] for n in sizes),
            "sizes": {str(n): {"median_wall_seconds": statistics.median(r["wall_seconds"] for r in runs[n]),
                               "peak_rss_bytes": max(r["peak_rss_bytes"] for r in runs[n]),
                               "rounds": runs[n]} for n in sizes},
        })
    result = {
        "schema": "readout.bench.pass-tokens-cpu",
        "schema_version": 1,
        "label": "MEASURED",
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python3 bench/pass_tokens_cpu.py " + " ".join(sys.argv[1:]),
        "eval_set": "authored144",
        "config": {"mode": "readout", "shots": 3, "debias": "cyclic", "threads": args.threads},
        "machine": {"cpu": cpu_name(), "cpus": os.cpu_count(), "arch": platform.machine()},
        "rounds_each": args.rounds,
        "models": models,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
