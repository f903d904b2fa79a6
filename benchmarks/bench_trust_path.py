"""Cost of a selection path for back-fitting: cold fits vs a warm-started path (issue 20).

For one data set and split, fits the back-fitting prototype at each alpha_rel of a
path (strong to weak) on both halves and on all rows, cold (deflation then
sweeps, as bench_trust.py) and warm (sweeps started from the previous path
point's U, V, d and dual variables, no new deflation), and prints times, sweeps,
the agreement of warm and cold loadings (matched |cos|) and, where there is a
truth, recovery of both.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_trust_path.py \
        --set atrophy-fs5 --corr 0.5 --seed 2001 --split-seed 0
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _trust import _cos, recovery  # noqa: E402
from bench_trust import backfit_sweeps, compare, halves, l1_max, load  # noqa: E402

from neurospca import spca_tv  # noqa: E402
from neurospca.decomposition._weights import _weights  # noqa: E402


def fit(X, op, K, alpha_rel, l1r, tvr, state=None):
    Xc = X - X.mean(0)
    l1, l2, tv = _weights(alpha_rel * l1_max(Xc), l1r, tvr)
    t0 = time.perf_counter()
    if state is None or not np.any(state[1]):
        U, V, info = spca_tv(Xc, K, l1=l1, l2=l2, tv=tv, operator=op)
        d, W = np.array(info["d"], float), list(info["w"])
    else:
        U, V, d, W = (a.copy() if isinstance(a, np.ndarray) else list(a) for a in state)
    U, V, d, W, n = backfit_sweeps(Xc, op, K, U, V, d, W, l1, l2, tv)
    return (U, V, d, W), n, time.perf_counter() - t0


def agree(A, B):
    sim = _cos(A, B)
    r, c = linear_sum_assignment(-sim)
    return sim[r, c]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--set", required=True)
    p.add_argument("--corr", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=2001)
    p.add_argument("--split-seed", type=int, default=0)
    p.add_argument("--split", type=str, default="0.05,0.1")
    p.add_argument("--alphas", type=float, nargs="+", default=[8.0, 4.0, 2.0, 1.0])
    args = p.parse_args()
    warnings.simplefilter("ignore")
    l1r, tvr = map(float, args.split.split(","))
    X, op, pat, K = load(args.set, args.corr, args.seed)
    a, b = halves(len(X), args.split_seed)
    print(
        f"# {args.set} corr={args.corr} seed={args.seed} split seed={args.split_seed} "
        f"split=({l1r}, {tvr}) X={X.shape}",
        flush=True,
    )
    tot = {"cold": 0.0, "warm": 0.0}
    prev = {"A": None, "B": None, "full": None}
    for alpha in args.alphas:
        row = f"alpha_rel={alpha:g}"
        res = {}
        for part, rows in (("A", a), ("B", b), ("full", slice(None))):
            cs, nc, tc = fit(X[rows], op, K, alpha, l1r, tvr)
            ws, nw, tw = fit(X[rows], op, K, alpha, l1r, tvr, state=prev[part])
            prev[part] = ws
            res[part] = (cs, ws)
            if part != "full":
                tot["cold"] += tc
                tot["warm"] += tw
            ag = agree(cs[1].T, ws[1].T)
            row += (
                f" | {part}: cold {tc:.1f}s/{nc}sw warm {tw:.1f}s/{nw}sw agree min {ag.min():.2f}"
            )
        for name, i in (("cold", 0), ("warm", 1)):
            corr, _, _, sd = compare(res["A"][i][1].T, res["B"][i][1].T)
            row += (
                f" | {name} half corr {corr.mean():.2f} min {corr.min():.2f} sDice {sd.mean():.2f}"
            )
            if pat is not None:
                cos, dice = recovery(res["full"][i][1].T, pat)
                row += (
                    " truth cos "
                    + "/".join(f"{x:.2f}" for x in cos)
                    + " Dice "
                    + "/".join(f"{x:.2f}" for x in dice)
                )
        row += f" | cumulative half-fit s: cold {tot['cold']:.1f} warm {tot['warm']:.1f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
