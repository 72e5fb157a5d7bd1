#!/usr/bin/env python3
"""Readout's `--precision f32|tf32|bf16` on one model, measured: the wall time of each (every
round, engines taking turns with the PyTorch peer in the same precision), and each one's drift
against Readout's f32 run (same predictions? the largest |Δp| of the combined probabilities and
of any ordering's letter probabilities; the rows whose f32 top two are within 0.01, where a
changed prediction is a near tie). Written as one result file, the GPU named.

Usage: precision.py --label L --gpu NAME --readout f32=R1.json[,R2.json] --readout tf32=... \\
           [--peer f32=PEER.json ...] --out OUT.json --command CMD
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
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True)
    a = ap.parse_args()
    runs = {}
    for spec in a.readout:
        p, files = spec.split("=", 1)
        runs[p] = [(f, json.load(open(f))) for f in files.split(",") if f]
    if "f32" not in runs:
        raise SystemExit("precision.py: needs Readout's f32 run (--readout f32=...)")
    base = runs["f32"][0][1]
    out = {
        "schema": "readout.bench.precision-gpu", "schema_version": 1, "label": "MEASURED",
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": a.command, "gpu": a.gpu, "model_label": a.label,
        "model": base["model"], "eval_set": base["eval_set"]["name"], "rows": len(base["rows"]),
        "config": base["config"], "machine": base["machine"], "readout": {}, "pytorch": {}, "ratios": {},
    }
    for p, rounds in runs.items():
        walls = [d["timing"]["wall_seconds"] for _, d in rounds]
        first = rounds[0][1]
        out["readout"][p] = {
            "result_files": [f for f, _ in rounds], "precision_recorded": first["model"].get("precision", "f32"),
            "attention_recorded": first["model"].get("attention", "matmuls"),
            "wall_seconds": walls, "best_wall_seconds": min(walls),
            "model_load_seconds": [d["timing"]["model_load_seconds"] for _, d in rounds],
            "vs_readout_f32": drift(first, base),
            "mean_family_balanced_accuracy": first.get("metrics", {}).get("mean_family_balanced_accuracy"),
        }
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
            "vs_readout_f32": against_peer(base, d),
        }
    f32_peer = out["pytorch"].get("f32", {}).get("best", {}).get("wall_s")
    for p, r in out["readout"].items():
        for q, peer in out["pytorch"].items():
            if "best" in peer:
                out["ratios"][f"pytorch_{q}_over_readout_{p}"] = peer["best"]["wall_s"] / r["best_wall_seconds"]
        if f32_peer:
            out["ratios"][f"readout_f32_over_readout_{p}"] = out["readout"]["f32"]["best_wall_seconds"] / r["best_wall_seconds"]
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"precision.py: {a.label}")
    for p, r in out["readout"].items():
        v = r["vs_readout_f32"]
        print(f"  readout {p:5s} wall {', '.join(f'{w:.3f}' for w in r['wall_seconds'])} s; vs f32: "
              f"{v['same_predictions']}/{v['rows']} same, |dp| {v['largest_abs_dp_combined']:.2e} "
              f"(letters {v['largest_abs_dp_letter_probs']:.2e})")
    for p, peer in out["pytorch"].items():
        if "best" in peer:
            v = peer["vs_readout_f32"]
            print(f"  pytorch {p:5s} best {peer['best']['wall_s']:.3f} s ({peer['best']['mode']} B={peer['best']['batch_size']}); "
                  f"vs readout f32: {v['same_predictions']}/{v['rows']} same, |dp| {v['largest_combined_probability_difference']:.2e}")
        else:
            print(f"  pytorch {p:5s} {peer['error']}")
    for k, v in out["ratios"].items():
        print(f"  {k}: {v:.2f}")


if __name__ == "__main__":
    main()
