"""Readout on Ray (Ray Data): score many texts, or run an eval set, on a Ray cluster — this
machine's cores or many machines — with one Readout actor per slot, each loading the model once.

Texts (a JSON Lines file of objects with `text` and an optional `id`) → `map_batches` with a
Readout actor class → one answer row per text (its `index`, `id`, each criterion's chosen option
and probability, and the whole decision as `readout score --json` writes it), written as JSON
Lines or Parquet (a folder of files, one per block, as Ray writes them):

    python examples/ray_score.py texts --rubric examples/support-ticket.rubric.json \\
        --texts texts.jsonl --out answers/ --format parquet --actors 2 --cpus-per-actor 1

An eval set, split by item group into shards (each shard's prefix tree still shares its shots;
every row gets the shots of the whole set), one actor run per shard, the shards' rows merged into
the result file a single run writes (metrics recomputed over all rows):

    python examples/ray_score.py evalset bench/evalsets/authored144.jsonl --shots 3 \\
        --debias cyclic --actors 2 --out authored144-ray.json

`--gpus N`: N actors, each with one GPU of its own (`num_gpus=1`, `device=cuda`). `--address`:
the cluster to join (`auto`: the one this machine belongs to, as `ray start` made it; default:
`RAY_ADDRESS` if set, else a local cluster started for the run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Optional

import ray

import readout


class TextScorer:
    """A Ray actor: the model loaded once, then batches of texts scored against the rubric."""

    def __init__(self, model: Optional[str], rubric: dict, debias: str, threads: int, device: str) -> None:
        self.judge = readout.Judge(model, device, threads=threads)
        self.rubric = rubric
        self.debias = debias

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        texts = [{"text": str(t), "id": None if i is None else str(i)} for t, i in zip(batch["text"], batch["id"])]
        results = self.judge.score(texts, self.rubric, self.debias)
        out: dict[str, list] = {"index": list(batch["index"]), "id": [t["id"] for t in texts]}
        for c in self.rubric["questions"]:
            out[c] = []
            out[f"{c}_p"] = []
        for r in results:
            for c in r["criteria"]:
                out[c["criterion"]].append(c["chosen"])
                out[f"{c['criterion']}_p"].append(c["probability"])
        out["decision"] = [json.dumps(r) for r in results]
        return out


class ShardRunner:
    """A Ray actor: the model loaded once, then shards (sets of item groups) of an eval set run."""

    def __init__(self, model: Optional[str], evalset: str, options: dict, threads: int, device: str) -> None:
        self.judge = readout.Judge(model, device, threads=threads)
        self.evalset = evalset
        self.options = options

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        results = []
        for groups in batch["groups"]:
            result = self.judge.run(self.evalset, groups=[str(g) for g in groups], **self.options)
            results.append(json.dumps(result))
        return {"shard": list(batch["shard"]), "result": results}


def read_texts(path: str) -> list[dict[str, Any]]:
    """Each line a JSON string or an object with `text` (and an optional `id`), as `readout score --texts` reads them."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            v = json.loads(line)
            if isinstance(v, str):
                v = {"text": v}
            rows.append({"index": len(rows), "text": v["text"], "id": None if v.get("id") is None else str(v["id"])})
    return rows


def actor_options(args: argparse.Namespace) -> tuple[dict[str, Any], str, int]:
    """Ray's resources per actor, the device and the threads each Readout engine uses."""
    if args.gpus:
        return {"concurrency": args.gpus, "num_gpus": 1, "num_cpus": args.cpus_per_actor}, "cuda", args.cpus_per_actor
    return {"concurrency": args.actors, "num_cpus": args.cpus_per_actor}, "cpu", args.cpus_per_actor


def score_texts(args: argparse.Namespace) -> dict[str, Any]:
    if args.debias in ("pride", "batch"):
        # Each Ray batch is scored on its own, so a prior estimated from the texts' own rows would
        # come from one batch, not from all the texts: the answers would differ from one process's.
        sys.exit(f"--debias {args.debias} estimates its prior from all the texts scored together; "
                 "score them in one process (`readout score`), or use none, cyclic, permutation or calibrate")
    with open(args.rubric, encoding="utf-8") as f:
        rubric = json.load(f)
    rows = read_texts(args.texts)
    ds = ray.data.from_items(rows, override_num_blocks=max(1, len(rows) // args.batch_size))
    resources, device, threads = actor_options(args)
    t0 = time.perf_counter()
    answers = ds.map_batches(
        TextScorer,
        fn_constructor_kwargs={
            "model": args.model,
            "rubric": rubric,
            "debias": args.debias,
            "threads": threads,
            "device": device,
        },
        batch_size=args.batch_size,
        **resources,
    )
    if args.format == "parquet":
        answers.write_parquet(args.out)
    else:
        answers.write_json(args.out)
    seconds = time.perf_counter() - t0
    return {"texts": len(rows), "seconds": seconds, "texts_per_second": len(rows) / seconds, "out": args.out}


def run_evalset(args: argparse.Namespace) -> dict[str, Any]:
    options = {"shots": args.shots, "debias": args.debias, "limit": args.limit, "shot_seed": args.shot_seed}
    n = args.gpus or args.actors
    shards = readout.shard_groups(args.evalset, n * args.shards_per_actor, args.shots, args.debias, args.limit, shot_seed=args.shot_seed)
    ds = ray.data.from_items([{"shard": i, "groups": g} for i, g in enumerate(shards)], override_num_blocks=len(shards))
    resources, device, threads = actor_options(args)
    t0 = time.perf_counter()
    parts = ds.map_batches(
        ShardRunner,
        fn_constructor_kwargs={
            "model": args.model,
            "evalset": args.evalset,
            "options": options,
            "threads": threads,
            "device": device,
        },
        batch_size=1,
        **resources,
    ).take_all()
    parts.sort(key=lambda p: p["shard"])
    merged = readout.merge([json.loads(p["result"]) for p in parts], args.evalset)
    seconds = time.perf_counter() - t0
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(merged, f, indent=2)
    return {"shards": len(shards), "rows": len(merged["rows"]), "seconds": seconds, "out": args.out}


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--address", default=None, help="the Ray cluster to join: auto, or ray://HOST:PORT (default: RAY_ADDRESS, else a local cluster)")
    p.add_argument("--model", default=None, help="a GGUF file or a Hugging Face directory (default: the default model)")
    p.add_argument("--actors", type=int, default=max(1, (os.cpu_count() or 1)), help="Readout actors (CPU)")
    p.add_argument("--cpus-per-actor", type=int, default=1, help="CPU slots per actor (its engine's threads)")
    p.add_argument("--gpus", type=int, default=0, help="N actors with one GPU each (device cuda)")
    p.add_argument("--debias", default="none")
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("texts", help="score a JSON Lines file of texts against a rubric")
    t.add_argument("--rubric", required=True)
    t.add_argument("--texts", required=True)
    t.add_argument("--out", required=True, help="a folder: Ray writes one file per block")
    t.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    t.add_argument("--batch-size", type=int, default=64, help="texts per batch (one prefix tree each)")
    e = sub.add_parser("evalset", help="run an eval set in shards of item groups, merged into one result file")
    e.add_argument("evalset")
    e.add_argument("--shots", type=int, default=0)
    e.add_argument("--shot-seed", type=int, default=0)
    e.add_argument("--limit", type=int, default=None)
    e.add_argument("--shards-per-actor", type=int, default=1)
    e.add_argument("--out", required=True, help="the merged result file")
    args = p.parse_args(argv)
    ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    try:
        summary = score_texts(args) if args.what == "texts" else run_evalset(args)
    finally:
        ray.shutdown()
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
