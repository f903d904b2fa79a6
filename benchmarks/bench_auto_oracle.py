"""The automatic penalty's path next to the truth (issue 20, round 5): an oracle table.

For each evidence set and seed (benchmarks/_trust.py), the two split halves of
``SPCATV(3, operator=op, random_state=0)`` are walked along every point of
both searched splits (warm-started, weakest first, as ``alpha_rel="auto"``
does, but without its early stops), and at every point the full data are
fitted from scratch at the same penalty. One row per point: what the halves
show (per-component matched |corr|, non-zero fractions, the Dice of the
matched halves' supports) beside what only the truth shows (the full fit's
matched |cos| and Dice to the planted patterns). The rule of
``alpha_rel="auto"`` may use the first columns only.

    OMP_NUM_THREADS=1 python benchmarks/bench_auto_oracle.py --sets fs5-0.8 --seeds 2901 \
        [--json out.jsonl]
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import recovery  # noqa: E402
from bench_trust_defaults import fmt, load  # noqa: E402

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition import AUTO_SPLITS, split_halves  # noqa: E402
from neurospca.decomposition._stability import _fit_point, _half_models  # noqa: E402

HEADER = (
    "| set | seed | (l1, tv) alpha_rel | halves: matched abs corr | halves: non-zero "
    "(A then B) | halves: support Dice | full fit: abs cos | full fit: Dice | s |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def half_dice(comps):
    """Dice of the supports of the matched half components (pairs as matched by |corr|)."""
    from neurospca.decomposition import matched_abs_corr

    a, b = comps
    match, _ = matched_abs_corr(a, b)
    out = []
    for k, j in enumerate(match):
        s = np.sum(a[k] != 0) + np.sum(b[j] != 0)
        out.append(2.0 * np.sum((a[k] != 0) & (b[j] != 0)) / s if s else 0.0)
    return np.array(out)


def walk(X, op, split, alpha_rels):
    models = _half_models(SPCATV(3, operator=op, random_state=0))
    halves = split_halves(X, 0)
    base = {"l1_ratio": float(split[0]), "tv_ratio": float(split[1])}
    points = []
    for a in alpha_rels:
        if points and np.all(points[-1]["nonzero_fraction"] == 0):
            break
        points.append(_fit_point(models, halves, dict(base, alpha_rel=float(a)), 1))
    return points


def run(name, seed, out):
    X, op, P = load(name, seed)
    for split, alpha_rels in AUTO_SPLITS:
        for p in walk(X, op, split, alpha_rels):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = SPCATV(
                    3, operator=op, alpha_rel=p["alpha_rel"], l1_ratio=split[0], tv_ratio=split[1]
                ).fit(X)
            cos, dice = recovery(m.components_, P)
            rec = {
                "set": name,
                "seed": seed,
                "split": list(split),
                "alpha_rel": p["alpha_rel"],
                "repro": p["reproducibility"].tolist(),
                "nonzero": p["nonzero_fraction"].tolist(),
                "half_dice": half_dice(p["components"]).tolist(),
                "cos": cos.tolist(),
                "dice": dice.tolist(),
                "full_nonzero": np.mean(m.components_ != 0, axis=1).tolist(),
            }
            print(
                f"| {name} | {seed} | ({split[0]:g}, {split[1]:g}) {p['alpha_rel']:g} | "
                f"{fmt(p['reproducibility'])} | {fmt(p['nonzero_fraction'])} | "
                f"{fmt(rec['half_dice'])} | {fmt(cos)} | {fmt(dice)} | "
                f"{time.perf_counter() - t0:.0f} s |",
                flush=True,
            )
            if out:
                with open(out, "a") as f:
                    f.write(json.dumps(rec) + "\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=["fs5-0.8"])
    p.add_argument("--seeds", nargs="+", type=int, default=[2901])
    p.add_argument("--json", default=None)
    args = p.parse_args()
    print(HEADER)
    for name, seed in ((n, s) for n in args.sets for s in args.seeds):
        run(name, seed, args.json)


if __name__ == "__main__":
    main()
