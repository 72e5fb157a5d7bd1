#!/usr/bin/env python3
"""Readout's `--precision f32|tf32|bf16` on one model, measured: the wall time of each (every
round, engines taking turns with the PyTorch peer in the same precision), and each one's drift
against Readout's f32 run (same predictions? the largest |Δp| of the combined probabilities and
of any ordering's letter probabilities; the rows whose f32 top two are within 0.01, where a
changed prediction is a near tie). Written as one result file, the GPU named.

Keys are free-form (`f32`, `tf32-kernel`, ...); `--base` names the one drift is measured against
(default `f32`). A key ending in `-fused` (a run with `--fused-kernels on`) is also compared with
the same key without it (its unfused twin): drift `vs_unfused` and the ratio
`readout_KEY_over_readout_KEY-fused` (the speed-up from the fused kernels). Each run's recorded
precision, attention path and fused-kernels setting are kept beside its walls.

Usage: precision.py --label L --gpu NAME --readout f32=R1.json[,R2.json] --readout tf32=... \\
           [--peer f32=PEER.json ...] [--base KEY] --out OUT.json --command CMD
"""

import argparse
import datetime
import json

from compare import against_peer


def drift(run, base):
    """`run` row by row against `base` (Readout's f32 file of the same configuration)."""
    by_id = {r["id"]: r for r in base["rows"]}
    same, dp, dq, differ, near = 0, 0.0, 0.0, [], 0
    for r in run["rows"]:
        b = by_id[r["id"]]
        top = sorted(b["probs"], reverse=True)
        tie = len(top) > 1 and top[0] - top[1] < 0.01
        near += tie
        if r["predicted"] == b["predicted"]:
            same += 1
        else:
            differ.append({"id": r["id"], "f32_top_two_gap": top[0] - top[1] if len(top) > 1 else None})
        dp = max(dp, max(abs(x - y) for x, y in zip(r["probs"], b["probs"])))
        for o, q in zip(r["orderings"], b["orderings"]):
            dq = max(dq, max(abs(x - y) for x, y in zip(o["letter_probs"], q["letter_probs"])))
    return {"same_predictions": same, "rows": len(run["rows"]), "differing_rows": differ,
            "largest_abs_dp_combined": dp, "largest_abs_dp_letter_probs": dq,
            "f32_rows_with_top_two_within_0.01": near}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--label", required=True)
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--readout", action="append", required=True, help="PRECISION=FILE[,FILE...] (rounds)")
    ap.add_argument("--peer", action="append", default=[], help="PRECISION=PEER.json")
    ap.add_argument("--base", default="f32", help="the Readout key drift is measured against")
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True)
    a = ap.parse_args()
    runs = {}
    for spec in a.readout:
        p, files = spec.split("=", 1)
        runs[p] = [(f, json.load(open(f))) for f in files.split(",") if f]
    if a.base not in runs:
        raise SystemExit(f"precision.py: needs Readout's {a.base} run (--readout {a.base}=...), the base")
    base = runs[a.base][0][1]
    vs_base = f"vs_readout_{a.base}"
    out = {
        "schema": "readout.bench.precision-gpu", "schema_version": 1, "label": "MEASURED",
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": a.command, "gpu": a.gpu, "model_label": a.label, "base": a.base,
        "model": base["model"], "eval_set": base["eval_set"]["name"], "rows": len(base["rows"]),
        "config": base["config"], "machine": base["machine"], "readout": {}, "pytorch": {}, "ratios": {},
    }
    for p, rounds in runs.items():
        walls = [d["timing"]["wall_seconds"] for _, d in rounds]
        first = rounds[0][1]
        out["readout"][p] = {
            "result_files": [f for f, _ in rounds], "precision_recorded": first["model"].get("precision", "f32"),
            "attention_recorded": first["model"].get("attention", "matmuls"),
            "fused_kernels_recorded": first["model"].get("fused_kernels", "off"),
            "wall_seconds": walls, "best_wall_seconds": min(walls),
            "model_load_seconds": [d["timing"]["model_load_seconds"] for _, d in rounds],
            vs_base: drift(first, base),
            "mean_family_balanced_accuracy": first.get("metrics", {}).get("mean_family_balanced_accuracy"),
        }
        unfused = p[: -len("-fused")] if p.endswith("-fused") else None
        if unfused in runs:
            out["readout"][p]["vs_unfused"] = drift(first, runs[unfused][0][1])
    for spec in a.peer:
        p, f = spec.split("=", 1)
        try:
            d = json.load(open(f))
        except FileNotFoundError:
            out["pytorch"][p] = {"error": f"{f}: not written (the peer failed; see the log)"}
            continue
        out["pytorch"][p] = {
            "file": f, "torch": d["torch"], "transformers": d["transformers"], "dtype": d["dtype"], "tf32": d["tf32"],
            "best": d["best"], "runs": d["runs"], "model_load_s": d["model_load_s"],
            vs_base: against_peer(base, d),
        }
    for p, r in out["readout"].items():
        for q, peer in out["pytorch"].items():
            if "best" in peer:
                out["ratios"][f"pytorch_{q}_over_readout_{p}"] = peer["best"]["wall_s"] / r["best_wall_seconds"]
        out["ratios"][f"readout_{a.base}_over_readout_{p}"] = out["readout"][a.base]["best_wall_seconds"] / r["best_wall_seconds"]
        unfused = p[: -len("-fused")] if p.endswith("-fused") else None
        if unfused in out["readout"]:
            out["ratios"][f"readout_{unfused}_over_readout_{p}"] = out["readout"][unfused]["best_wall_seconds"] / r["best_wall_seconds"]
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"precision.py: {a.label}")
    for p, r in out["readout"].items():
        v = r.get("vs_unfused", r[vs_base])
        against = "unfused" if "vs_unfused" in r else a.base
        print(f"  readout {p:5s} wall {', '.join(f'{w:.3f}' for w in r['wall_seconds'])} s; vs {against}: "
              f"{v['same_predictions']}/{v['rows']} same, |dp| {v['largest_abs_dp_combined']:.2e} "
              f"(letters {v['largest_abs_dp_letter_probs']:.2e})")
    for p, peer in out["pytorch"].items():
        if "best" in peer:
            v = peer[vs_base]
            print(f"  pytorch {p:5s} best {peer['best']['wall_s']:.3f} s ({peer['best']['mode']} B={peer['best']['batch_size']}); "
                  f"vs readout {a.base}: {v['same_predictions']}/{v['rows']} same, |dp| {v['largest_combined_probability_difference']:.2e}")
        else:
            print(f"  pytorch {p:5s} {peer['error']}")
    for k, v in out["ratios"].items():
        print(f"  {k}: {v:.2f}")


if __name__ == "__main__":
    main()
