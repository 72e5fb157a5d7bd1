#!/usr/bin/env python3
"""Sum a run's GPU kernel times by kernel from Nsight Compute's raw CSV (bench/cuda/h200-run limit:
`ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw readout run ...`).

Why this exists: issue 39 asks where a pass's GPU time goes (the products, the attention kernel,
the element-wise steps); the -vv pass lines say how long the host queued against how long it
waited, not which kernels the GPU spent the time in. ncu times every launch alone (serialised), so
the sums are the kernels' own times without overlap or launch gaps, not the run's wall.

Usage: kernel_profile.py NCU.csv --out F.json --label L --gpu NAME --command "..." [--top 25]
"""

import argparse
import collections
import csv
import datetime
import json

SCALE = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}


def family(name):
    n = name.lower()
    for key, fam in [("tree_attention_tf32", "attention (tensor cores)"), ("tree_attention", "attention (f32 kernel)"),
                     ("gemm", "products (cuBLAS)"), ("sm90_xmma", "products (cuBLAS)"), ("cutlass", "products (cuBLAS)"),
                     ("nvjet", "products (cuBLAS)"), ("add_rms", "fused add and norm"), ("qkv", "fused q, k, v heads"),
                     ("gated", "fused gated activation"), ("f32_to_bf16", "casts"), ("cast", "casts"),
                     ("rope", "rope"), ("copy", "copies"), ("index_select", "gathers"), ("gather", "gathers")]:
        if key in n:
            return fam
    return "other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--out", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    lines = [l for l in open(a.csv, errors="replace") if l.startswith('"')]
    rows = list(csv.reader(lines))
    head, units, data = rows[0], rows[1], rows[2:]
    name_i, time_i = head.index("Kernel Name"), head.index("gpu__time_duration.sum")
    scale = SCALE.get(units[time_i].strip(), 1e-6)
    by_kernel = collections.defaultdict(lambda: [0, 0.0])
    for r in data:
        try:
            ms = float(r[time_i].replace(",", "")) * scale
        except (ValueError, IndexError):
            continue
        k = by_kernel[r[name_i]]
        k[0] += 1
        k[1] += ms
    total = sum(v[1] for v in by_kernel.values())
    fams = collections.defaultdict(lambda: [0, 0.0])
    for name, (n, ms) in by_kernel.items():
        f = fams[family(name)]
        f[0] += n
        f[1] += ms
    top = sorted(by_kernel.items(), key=lambda kv: -kv[1][1])[: a.top]
    out = {
        "schema": "readout.bench.kernel-profile", "schema_version": 1, "label": "MEASURED",
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": a.command, "gpu": a.gpu, "model_label": a.label,
        "note": "each launch timed alone by Nsight Compute (gpu__time_duration.sum, --clock-control none): "
                "the kernels' own times, no overlap or launch gaps; the model's load and warm-up passes included",
        "launches": sum(v[0] for v in by_kernel.values()), "kernel_ms_total": total,
        "by_family": {k: {"launches": v[0], "ms": v[1], "share": v[1] / total if total else None}
                      for k, v in sorted(fams.items(), key=lambda kv: -kv[1][1])},
        "top_kernels": [{"kernel": k[:160], "launches": v[0], "ms": v[1]} for k, v in top],
    }
    json.dump(out, open(a.out, "w"), indent=1)
    print(f"{a.label}: {out['launches']} launches, {total:.1f} ms of kernels")
    for k, v in out["by_family"].items():
        print(f"  {k:28s} {v['launches']:6d} launches {v['ms']:9.1f} ms  {100 * (v['share'] or 0):5.1f} %")


if __name__ == "__main__":
    main()
