"""Table I (``table1.py``) evaluated fit by fit, each result saved as it finishes.

The same data sets, methods, settings and scores as ``table1.py --chosen``
(its ``run_one``, ``tests`` and :func:`neurospca.model_selection.pairwise_dice`),
but each (method, seed) fit appends one JSON line to ``--out`` and saves its
components next to it, so a stopped run keeps what it fitted. ``--summary``
prints the table (means, sd) and the tests of SPCA-TV against the others from
the fits of every method on the seeds all methods have.

    OMP_NUM_THREADS=1 python benchmarks/table1_perfit20d.py --methods SPCA-TV \
        --seeds 3021 3022 --chosen '{"SPCA-TV": {...}}' --out t1.jsonl
    python benchmarks/table1_perfit20d.py --summary --out t1.jsonl
"""

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from table1 import METHODS, run_one, tests  # noqa: E402

from neurospca.model_selection import pairwise_dice  # noqa: E402


def fit(method, params, seed, out):
    r = run_one(method, params, seed)
    npy = f"{out}.{method.replace(' ', '_')}.{seed}.npy"
    with open(npy + ".tmp", "wb") as fh:
        np.save(fh, r.pop("components"))
    os.replace(npy + ".tmp", npy)
    with open(out, "a") as fh:
        fh.write(json.dumps({**r, "npy": npy}) + "\n")
    print(method, seed, f"error {r['error']:.2f} mse {r['mse']:.3f} {r['time']:.0f} s", flush=True)


def summary(out, n_permutations):
    recs = list(
        {
            (r["method"], r["seed"]): r
            for r in (json.loads(line) for line in open(out) if line.strip())
        }.values()
    )
    seeds = sorted(
        set.intersection(*[{r["seed"] for r in recs if r["method"] == m} for m in METHODS])
    )
    scores = {}
    for m in METHODS:
        res = sorted(
            (r for r in recs if r["method"] == m and r["seed"] in seeds), key=lambda r: r["seed"]
        )
        dice = pairwise_dice([np.load(r["npy"]) for r in res])
        scores[m] = {
            "error": np.array([r["error"] for r in res]),
            "mse": np.array([r["mse"] for r in res]),
            "dice_pairs": dice.mean(axis=1),
            "time": [r["time"] for r in res],
            "params": res[0]["params"],
        }
    print(f"seeds {seeds}\n")
    print(
        "| method | test reconstruction error | MSE to truth | Dice | setting | wall per fit (s) |"
    )
    print("|---|---:|---:|---:|---|---|")
    for m in METHODS:
        s = scores[m]
        print(
            f"| {m} | {s['error'].mean():.1f} (sd {s['error'].std(ddof=1):.1f}) | "
            f"{s['mse'].mean():.3f} (sd {s['mse'].std(ddof=1):.3f}) | "
            f"{s['dice_pairs'].mean():.3f} | {s['params']} | "
            f"{' '.join(f'{t:.0f}' for t in s['time'])} |"
        )
    print(json.dumps(tests(scores, n_permutations), indent=1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--seeds", nargs="+", type=int, default=[3021, 3022, 3023, 3024, 3025])
    p.add_argument("--chosen", default=None, help="JSON {method: params}")
    p.add_argument("--out", required=True)
    p.add_argument("--summary", action="store_true")
    p.add_argument("--n-permutations", type=int, default=1000)
    args = p.parse_args()
    if args.summary:
        summary(args.out, args.n_permutations)
        return
    chosen = json.loads(args.chosen)
    for method in args.methods:
        for seed in args.seeds:
            fit(method, chosen[method], seed, args.out)


if __name__ == "__main__":
    main()
