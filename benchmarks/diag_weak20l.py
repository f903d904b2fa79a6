"""Is a lost pattern the penalty's or the optimisation's? (issue 20 round 12, a diagnostic)

Per instance and fixed point ``split:alpha_rel``: the cold fit and the fit
started from the planted patterns (``start_from``), their recovery (abs cos,
certified Dice), non-zero fractions and joint objective ``J`` at that point
(lower is the better optimum of the same objective). ``--peers A ...`` adds
PCA and scikit-learn ``SparsePCA(3, alpha=A)`` on the centred data::

    OMP_NUM_THREADS=1 python benchmarks/diag_weak20l.py paper-0.7:3324 \\
        --points 0.05,0.1:1 0.3,0.3:0.25 [--peers 1 4]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import certified_dice, joint_objective_of, recovery  # noqa: E402
from bench_trust_defaults import fmt, load  # noqa: E402

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition._warm import start_from  # noqa: E402


def fixed_fits(name, seed, X, op, P, points):
    for point in points:
        split, alpha_rel = point.split(":")
        l1, tv = (float(x) for x in split.split(","))
        for how in ("cold", "planted"):
            m = SPCATV(3, operator=op, alpha_rel=float(alpha_rel), l1_ratio=l1, tv_ratio=tv)
            if how == "planted":
                start_from(m, P)
            t = time.process_time()
            m.fit(X)
            print(
                f"| {name} | {seed} | ({l1:g}, {tv:g}) {alpha_rel} | {how} | "
                f"{fmt(recovery(m.components_, P)[0])} | {fmt(certified_dice(m, P))} | "
                f"{fmt(np.mean(m.components_ != 0, axis=1))} | "
                f"{joint_objective_of(m, X, op):.8g} | {time.process_time() - t:.1f} |",
                flush=True,
            )


def peers(name, seed, X, P, alphas):
    """PCA and SparsePCA at each alpha on the centred data: abs cos, Dice, non-zero."""
    from sklearn.decomposition import PCA, SparsePCA

    Xc = X - X.mean(axis=0)
    fits = [("PCA", lambda: PCA(3).fit(Xc))]
    fits += [
        (f"SparsePCA {a:g}", lambda a=a: SparsePCA(3, alpha=a, random_state=0).fit(Xc))
        for a in alphas
    ]
    for label, fit in fits:
        t = time.process_time()
        C = fit().components_
        cos, dice = recovery(C, P)
        print(
            f"| {name} | {seed} | {label} | {fmt(cos)} | {fmt(dice)} | "
            f"{fmt(np.mean(C != 0, axis=1))} | {time.process_time() - t:.0f} |",
            flush=True,
        )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("instances", nargs="+", help="set:seed")
    p.add_argument("--points", nargs="*", default=["0.05,0.1:1"], help="l1,tv:alpha_rel")
    p.add_argument("--peers", nargs="*", type=float, default=[])
    args = p.parse_args()
    warnings.simplefilter("ignore")
    for arg in args.instances:
        name, seed = arg.split(":")
        X, op, P = load(name, int(seed))
        fixed_fits(name, seed, X, op, P, args.points)
        if args.peers:
            peers(name, seed, X, P, args.peers)


if __name__ == "__main__":
    main()
