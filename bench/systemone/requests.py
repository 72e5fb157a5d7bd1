#!/usr/bin/env python3
"""Write the System One request bodies of the side-by-side bench: the example rubric's three
questions (topic: choice, refund: noul, urgency: score) on each authored144 state, in file order,
model "jev-latest". One JSON body per line.

    python3 bench/systemone/requests.py [-o bench/systemone/requests-authored144.jsonl]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sysone_common import AUTHORED144, questions, states  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", type=Path, default=Path(__file__).resolve().parent / "requests-authored144.jsonl")
    ap.add_argument("--evalset", type=Path, default=AUTHORED144)
    ap.add_argument("--model", default="jev-latest")
    args = ap.parse_args()
    qs = questions()
    bodies = [{"model": args.model, "state": s, "questions": qs} for s in states(args.evalset)]
    with open(args.out, "w", encoding="utf-8") as f:
        for b in bodies:
            f.write(json.dumps(b, ensure_ascii=False) + "\n")
    print(f"wrote {len(bodies)} requests to {args.out}")


if __name__ == "__main__":
    main()
