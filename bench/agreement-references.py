#!/usr/bin/env python3
# requires: numpy==2.4.6 scipy==1.17.1 scikit-learn==1.9.1 krippendorff==0.9.0 ppi-python==0.2.3
"""Reference values for Readout's agreement and rates modules, from the packages people cite.

Why this exists: `crates/readout/src/agreement.rs` (Cohen's kappa, Krippendorff's alpha) and
`crates/readout/src/rates.rs` (prediction-powered shares, the classical interval) claim to give
the same numbers as scikit-learn, the `krippendorff` package and ppi-python. This script builds
fixed cases (literal lists and a seeded NumPy generator), asks the packages, and writes the
inputs and their answers to `crates/readout/testdata/agreement-references.json`; the library's
unit tests read that file and check every case to 1e-9.

Where a package gives nan the expected value is null and `note` says "nan"; where it raises, the
expected value is null and `note` says "raises: <message>". The Rust side documents what it
returns in both cases (None, or for PPI with a constant judge the classical estimate).

Versions used to write the committed file (pip install into a venv):
  numpy 2.4.6, scipy 1.17.1, scikit-learn 1.9.1, krippendorff 0.9.0, ppi-python 0.2.3

Usage:
  python3 bench/agreement-references.py            # write the JSON
  python3 bench/agreement-references.py --check    # recompute the answers from the committed
                                                   # inputs; exit 1 naming any that differ
                                                   # (relative tolerance 1e-12)
"""

import argparse
import json
import math
import os
import sys
import warnings
from importlib.metadata import version

import numpy as np
import krippendorff
from sklearn.metrics import cohen_kappa_score
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate, classical_mean_ci

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "crates", "readout", "testdata", "agreement-references.json")
ALPHA_LEVEL = 0.05
TOLERANCE = 1e-12


def finite_or_none(x):
    """(value, note): the float, or None with "nan" when the package gave nan."""
    x = float(x)
    return (None, "nan") if math.isnan(x) else (x, None)


def ask(fn):
    """Call a package; (value, note) with note "raises: ..." when it raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    except Exception as e:  # the package's own refusal is the reference
        return None, f"raises: {type(e).__name__}: {e}"


# ---------------------------------------------------------------- cases (inputs only)


def kappa_inputs(rng):
    cases = []
    # The 2x2 table worked by hand in agreement.rs: (0,0) 20, (0,1) 5, (1,0) 10, (1,1) 15.
    y1 = [0] * 20 + [0] * 5 + [1] * 10 + [1] * 15
    y2 = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    for w in ("none", "linear", "quadratic"):
        cases.append({"name": f"2x2 by hand ({w})", "y1": y1, "y2": y2, "k": 2, "weights": w})
    # Three categories, independent raters.
    a = rng.integers(0, 3, 60).tolist()
    b = rng.integers(0, 3, 60).tolist()
    for w in ("none", "linear", "quadratic"):
        cases.append({"name": f"k=3 independent ({w})", "y1": a, "y2": b, "k": 3, "weights": w})
    # Five ordered levels, the second rater off by -1, 0 or +1 (clipped).
    a = rng.integers(0, 5, 80)
    b = np.clip(a + rng.integers(-1, 2, 80), 0, 4)
    for w in ("none", "linear", "quadratic"):
        cases.append(
            {"name": f"k=5 near misses ({w})", "y1": a.tolist(), "y2": b.tolist(), "k": 5, "weights": w}
        )
    # Four categories declared, three used.
    a = rng.integers(0, 3, 30).tolist()
    b = rng.integers(0, 3, 30).tolist()
    for w in ("none", "quadratic"):
        cases.append({"name": f"k=4, 3 used ({w})", "y1": a, "y2": b, "k": 4, "weights": w})
    # One category only: expected disagreement 0.
    cases.append({"name": "one category", "y1": [0] * 6, "y2": [0] * 6, "k": 2, "weights": "none"})
    cases.append({"name": "one category (quadratic)", "y1": [1] * 4, "y2": [1] * 4, "k": 3, "weights": "quadratic"})
    # No pairs.
    cases.append({"name": "empty", "y1": [], "y2": [], "k": 2, "weights": "none"})
    return cases


def alpha_inputs(rng):
    cases = []
    # Krippendorff's own example (values 1..4 shifted to 0..3), as in the package's docstring.
    n = None
    data = [
        [n, n, n, n, n, 3, 4, 1, 2, 1, 1, 3, 3, n, 3],
        [1, n, 2, 1, 3, 3, 4, 3, n, n, n, n, n, n, n],
        [n, n, 2, 1, 3, 4, 4, n, 2, 1, 1, 3, 3, n, 4],
    ]
    data = [[None if v is None else v - 1 for v in row] for row in data]
    for level in ("nominal", "interval"):
        cases.append({"name": f"Krippendorff's example ({level})", "data": data, "k": 4, "level": level})
    # The case worked by hand in agreement.rs: units (0,0,-), (1,1,1), (0,1,-), (1,-,-).
    data = [[0, 1, 0, 1], [0, 1, 1, None], [None, 1, None, None]]
    for level in ("nominal", "interval"):
        cases.append({"name": f"by hand, one value missing ({level})", "data": data, "k": 2, "level": level})
    # Three raters, 40 units, five levels, a fifth of the values missing.
    truth = rng.integers(0, 5, 40)
    data = []
    for _ in range(3):
        row = np.clip(truth + rng.integers(-1, 2, 40), 0, 4).astype(object)
        row[rng.random(40) < 0.2] = None
        data.append([None if v is None else int(v) for v in row])
    for level in ("nominal", "interval"):
        cases.append({"name": f"3 raters x 40 units, missing ({level})", "data": data, "k": 5, "level": level})
    # Two raters (the judge and a person), some pairs with one side missing.
    a = rng.integers(0, 3, 50).astype(object)
    b = np.where(rng.random(50) < 0.7, a, rng.integers(0, 3, 50)).astype(object)
    a[rng.random(50) < 0.1] = None
    b[rng.random(50) < 0.1] = None
    data = [[None if v is None else int(v) for v in a], [None if v is None else int(v) for v in b]]
    for level in ("nominal", "interval"):
        cases.append({"name": f"2 raters, missing ({level})", "data": data, "k": 3, "level": level})
    # One category only: expected disagreement 0 (the package divides 0 by 0).
    data = [[2, 2, None, 2], [2, 2, 2, None]]
    for level in ("nominal", "interval"):
        cases.append({"name": f"one category ({level})", "data": data, "k": 3, "level": level})
    # No unit with two values.
    cases.append({"name": "nothing pairable", "data": [[0, None], [None, 1]], "k": 2, "level": "nominal"})
    # A one-value domain.
    cases.append({"name": "k=1", "data": [[0, 0], [0, 0]], "k": 1, "level": "nominal"})
    return cases


def judge_population(rng, n):
    """True labels ~ Bernoulli(0.3); a judge's probability of 1, its argmax right 80 % of the time."""
    y = (rng.random(n) < 0.3).astype(float)
    right = rng.random(n) < 0.8
    p = np.round(0.5 + 0.5 * rng.random(n), 4)
    f = np.where((y == 1) == right, p, 1 - p)
    return y, np.round(f, 4)


def ppi_inputs(rng):
    y, f = judge_population(rng, 350)
    cases = [
        {
            "name": "50 labelled, 300 unlabelled",
            "y": y[:50].tolist(),
            "f_labelled": f[:50].tolist(),
            "f_unlabelled": f[50:].tolist(),
        }
    ]
    # A judge that says the same thing everywhere: the tuned lambda is 0/0 in the package. Every
    # lambda gives the classical figures; the package gives them where rounding leaves the
    # variance of the judge's values a hair above 0, and nan where it is exactly 0 (which of the
    # two depends on the values: the two cases below show both).
    for n, m in ((20, 40), (10, 30)):
        cases.append(
            {
                "name": f"constant judge, {n} + {m}",
                "y": y[50 : 50 + n].tolist(),
                "f_labelled": [0.5] * n,
                "f_unlabelled": [0.5] * m,
            }
        )
    return cases


def inputs():
    rng = np.random.default_rng(20240611)
    return {
        "kappa": kappa_inputs(rng),
        "alpha": alpha_inputs(rng),
        "ppi": ppi_inputs(rng),
    }


# ---------------------------------------------------------------- answers


def kappa_answer(c):
    w = None if c["weights"] == "none" else c["weights"]
    return ask(lambda: finite_or_none(cohen_kappa_score(c["y1"], c["y2"], labels=list(range(c["k"])), weights=w)))


def alpha_answer(c):
    data = np.array([[np.nan if v is None else v for v in row] for row in c["data"]], dtype=float)
    return ask(
        lambda: finite_or_none(
            krippendorff.alpha(
                reliability_data=data, level_of_measurement=c["level"], value_domain=list(range(c["k"]))
            )
        )
    )


def ppi_answers(c):
    y = np.array(c["y"], dtype=float)
    fl = np.array(c["f_labelled"], dtype=float)
    fu = np.array(c["f_unlabelled"], dtype=float)
    out = {}
    for name, lam in (("tuned", None), ("lam1", 1.0), ("lam0.5", 0.5)):

        def run(lam=lam):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                point = float(np.asarray(ppi_mean_pointestimate(y, fl, fu, lam=lam)).reshape(-1)[0])
                lo, hi = ppi_mean_ci(y, fl, fu, alpha=ALPHA_LEVEL, lam=lam)
            vals = [point, float(np.asarray(lo).reshape(-1)[0]), float(np.asarray(hi).reshape(-1)[0])]
            if any(math.isnan(v) for v in vals):
                return {"point": None, "lo": None, "hi": None, "note": "nan"}
            return {"point": vals[0], "lo": vals[1], "hi": vals[2]}

        out[name] = run()
    lo, hi = classical_mean_ci(y, alpha=ALPHA_LEVEL)
    out["classical"] = {"point": float(y.mean()), "lo": float(lo), "hi": float(hi)}
    return out


def answer_all(doc):
    for c in doc["kappa"]:
        c["expected"], note = kappa_answer(c)
        c.pop("note", None)
        if note:
            c["note"] = note
    for c in doc["alpha"]:
        c["expected"], note = alpha_answer(c)
        c.pop("note", None)
        if note:
            c["note"] = note
    for c in doc["ppi"]:
        c["expected"] = ppi_answers(c)
    return doc


def versions():
    return {p: version(p) for p in ("numpy", "scipy", "scikit-learn", "krippendorff", "ppi-python")}


# ---------------------------------------------------------------- check


def differences(path, want, got, out):
    """Append to `out` every leaf where `got` differs from `want` (floats to TOLERANCE, relative)."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            differences(f"{path}.{key}", want.get(key), got.get(key), out)
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (w, g) in enumerate(zip(want, got)):
            differences(f"{path}[{i}]", w, g, out)
    elif isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if abs(want - got) > TOLERANCE * max(abs(want), abs(got), 1e-300):
            out.append(f"{path}: committed {want!r}, now {got!r}")
    elif want != got:
        out.append(f"{path}: committed {want!r}, now {got!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare with the committed file")
    args = ap.parse_args()
    if args.check:
        with open(OUT) as fh:
            committed = json.load(fh)
        # The answers are recomputed from the committed inputs, so that the check is about the
        # packages, not about NumPy's generator.
        fresh = answer_all(json.loads(json.dumps({k: committed[k] for k in ("kappa", "alpha", "ppi")})))
        diffs = []
        for key in ("kappa", "alpha", "ppi"):
            for i, (w, g) in enumerate(zip(committed[key], fresh[key])):
                differences(f"{key}[{i}] ({w['name']})", w.get("expected"), g.get("expected"), diffs)
                differences(f"{key}[{i}] ({w['name']}).note", w.get("note"), g.get("note"), diffs)
        if diffs:
            print(f"{len(diffs)} value(s) differ from {os.path.relpath(OUT)}:", file=sys.stderr)
            for d in diffs:
                print("  " + d, file=sys.stderr)
            print(f"versions now: {versions()}; committed with: {committed.get('versions')}", file=sys.stderr)
            sys.exit(1)
        print(f"all values match {os.path.relpath(OUT)} (versions {versions()})")
        return
    doc = {
        "about": "Written by bench/agreement-references.py; read by the unit tests of "
        "crates/readout/src/agreement.rs and rates.rs. alpha level of the intervals: 0.05.",
        "versions": versions(),
    }
    doc.update(answer_all(inputs()))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    print(f"wrote {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
