"""Issue 20 round 8: select_penalty against the truth-best of warm full fits and its default.

Per seed and method on the paper simulation (``--corr 0``: Table I set-up, 250
images; ``--corr 0.7``: scores correlated r = 0.7):

- the method's default fit (``alpha_rel="auto"``), MSE / Dice to the truth;
- ``select_penalty(est, X, random_state=seed)`` as the tree on ``PYTHONPATH``
  has it (run this file once with main's tree, once with this branch's), its
  chosen point and returned model's MSE / Dice, its CPU seconds;
- with ``--truth-best`` (this branch only): the truth-best yardstick, every
  grid point of the same search fitted on all samples as the returned model
  is fitted there (started from the point's first half fit), and the default
  fit at its own point (the returned model there when the default is kept);
  the MSE-best and Dice-best points and the steps (alpha_rel / split, splits
  in the search's order) from the chosen point to them.

One JSON line per seed and method is appended to ``--out``.

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_select20g.py --seed 3191 \\
        --corr 0.7 [--method spcatv|elasticnet] [--truth-best] --out rows.jsonl
"""

import argparse
import json
import math
import time
import warnings

import numpy as np
from sklearn.base import clone

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca import model_selection as ms

METHODS = {"spcatv": {}, "elasticnet": {"tv_ratio": 0.0}}


def quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def point(params):
    return [float(params["l1_ratio"]), float(params["tv_ratio"]), float(params["alpha_rel"])]


def truth_best(est, X, P, seed, default):
    """Every grid point of the search fitted on all samples from its first half
    fit; the default fit stands at its own point when it is better."""
    from neurospca.decomposition import start_from
    from neurospca.model_selection._halves import reproducibility_search
    from neurospca.model_selection._select import DEFAULT_ALPHA_REL_GRID, _check_splits, _seeds

    splits = _check_splits(None, est, "reproducibility")
    results, halves = quiet(
        reproducibility_search, est, X, splits, np.array(DEFAULT_ALPHA_REL_GRID), _seeds(seed, 2)
    )
    grid = []
    for r, h in zip(results, halves, strict=True):
        if not np.any(r["nonzero_fraction"]):
            continue  # every half component empty: not fitted (the full fit is empty too)
        m = quiet(start_from(clone(est).set_params(**r["params"], stability=False), h[0][0]).fit, X)
        grid.append(point(r["params"]) + [ms.mse_to_truth(m, P), ms.dice_to_truth(m, P)])
    return {"splits": [list(s) for s in splits], "grid": grid, "default": default}


def steps(splits, a, b):
    """(alpha_rel steps, split steps) between two points [l1, tv, alpha_rel]."""
    order = [tuple(s) for s in splits]
    da = abs(math.log2(a[2] / b[2]))
    ds = abs(order.index(tuple(a[:2])) - order.index(tuple(b[:2])))
    return int(round(da)), ds


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--corr", type=float, default=0.0)
    p.add_argument("--method", default="spcatv", choices=METHODS)
    p.add_argument("--truth-best", action="store_true")
    p.add_argument("--tag", default="")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    seed = args.seed
    X, P, mask = make_paper_simulation(250, random_state=seed, correlation=args.corr)
    est = SPCATV(3, operator=tv_from_mask(mask), random_state=0, **METHODS[args.method])
    t0 = time.process_time()
    d = quiet(clone(est).set_params(stability=False).fit, X)
    cpu_default = time.process_time() - t0
    t0 = time.process_time()
    one = quiet(
        clone(est)
        .set_params(
            alpha_rel=d.alpha_rel_, l1_ratio=d.l1_ratio_, tv_ratio=d.tv_ratio_, stability=False
        )
        .fit,
        X,
    )
    cpu_one = time.process_time() - t0
    del one
    t0 = time.process_time()
    sel = quiet(ms.select_penalty, est, X, random_state=seed)
    cpu_select = time.process_time() - t0
    b = sel.best_estimator_
    default = point({"alpha_rel": d.alpha_rel_, "l1_ratio": d.l1_ratio_, "tv_ratio": d.tv_ratio_})
    row = {
        "tag": args.tag,
        "tree": __import__("neurospca").__file__,
        "seed": seed,
        "corr": args.corr,
        "method": args.method,
        "default": default + [ms.mse_to_truth(d, P), ms.dice_to_truth(d, P)],
        "chosen": point(sel.best_params_) + [ms.mse_to_truth(b, P), ms.dice_to_truth(b, P)],
        "kept_default": sel.best_index_ == getattr(sel, "default_index_", None),
        "cpu_default": cpu_default,
        "cpu_one_fit": cpu_one,
        "cpu_select": cpu_select,
    }
    if args.truth_best:
        tb = truth_best(est, X, P, seed, row["default"])
        grid = tb["grid"] + [row["default"]]
        mse_best = min(grid, key=lambda g: g[3])
        dice_best = max(grid, key=lambda g: g[4])
        row.update(
            truth_grid=tb["grid"],
            mse_best=mse_best,
            dice_best=dice_best,
            steps_mse=steps(tb["splits"], row["chosen"], mse_best),
            steps_dice=steps(tb["splits"], row["chosen"], dice_best),
        )
    with open(args.out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row)[:400], flush=True)


if __name__ == "__main__":
    main()
