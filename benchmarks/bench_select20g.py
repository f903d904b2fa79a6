"""Issue 20 round 8: select_penalty against the truth-best of warm full fits and its default.

Per seed and method on the paper simulation (``--corr 0``: Table I set-up, 250
images; ``--corr 0.7``: scores correlated r = 0.7):

- the method's default fit (``alpha_rel="auto"``), MSE / Dice to the truth;
- ``select_penalty(est, X, random_state=seed)`` as the tree on ``PYTHONPATH``
  has it (run this file once with main's tree, once with this branch's), its
  chosen point and returned model's MSE / Dice, its CPU seconds;
- with ``--truth-best`` (this branch only): the truth-best yardstick, every
  grid point of the same search (its rows and halves kept as the search
  returns them) fitted on all samples as the returned model is fitted there
  (started from the point's first half fit; the points select_penalty judged
  are that very fit, with ``truth=``, which changes nothing in the choice),
  and the default fit at its own point (the returned model there when the
  default is kept);
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


def capture_search():
    """Keep what ``select_penalty``'s search returns (rows and every row's
    halves), to fit the truth-best yardstick from the same halves: wraps the
    name ``reproducibility_search`` in ``_select``'s namespace (observation
    only, the search is called as before). None on a tree without it."""
    try:
        from neurospca.model_selection import _select
    except ImportError:
        return None
    if not hasattr(_select, "reproducibility_search"):
        return None
    inner, kept = _select.reproducibility_search, {}

    def search(*args, **kw):
        kept["results"], kept["halves"] = out = inner(*args, **kw)
        return out

    _select.reproducibility_search = search
    return kept


def truth_best(est, X, P, kept):
    """Every grid point of the search fitted on all samples from its first half
    fit (the rows ``select_penalty`` judged: that very fit, ``returned_mse`` /
    ``returned_dice``); rows whose halves are all empty are not fitted."""
    from neurospca.decomposition import start_from

    grid, splits = [], []
    for r, h in zip(kept["results"], kept["halves"], strict=True):
        split = [float(r["l1_ratio"]), float(r["tv_ratio"])]
        if split not in splits:
            splits.append(split)
        if "returned_mse" in r:
            grid.append(point(r["params"]) + [r["returned_mse"], r["returned_dice"]])
            continue
        if not np.any(r["nonzero_fraction"]):
            continue  # every half component empty: not fitted (the full fit is empty too)
        m = quiet(start_from(clone(est).set_params(**r["params"], stability=False), h[0][0]).fit, X)
        grid.append(point(r["params"]) + [ms.mse_to_truth(m, P), ms.dice_to_truth(m, P)])
    return {"splits": splits, "grid": grid}


def steps(splits, a, b):
    """(alpha_rel steps, split steps) between two points [l1, tv, alpha_rel]."""
    order = [tuple(s) for s in splits]
    da = abs(math.log2(a[2] / b[2]))
    ds = abs(order.index(tuple(a[:2])) - order.index(tuple(b[:2])))
    return int(round(da)), ds


def default_fit(seed, corr, method):
    """The paper simulation of ``seed`` (scores correlated ``corr``), the
    estimator of ``method`` and its default fit (no ``stability_``), with the
    fit's CPU seconds: ``(X, P, est, default, cpu)``."""
    X, P, mask = make_paper_simulation(250, random_state=seed, correlation=corr)
    est = SPCATV(3, operator=tv_from_mask(mask), random_state=0, **METHODS[method])
    t0 = time.process_time()
    d = quiet(clone(est).set_params(stability=False).fit, X)
    return X, P, est, d, time.process_time() - t0


def select_row(args, X, P, est, d, cpu_default, truth=None):
    """One fit at the default's point and ``select_penalty`` (CPU seconds of
    each), and the JSON row: ``(row, selection)``."""
    t0 = time.process_time()
    quiet(
        clone(est)
        .set_params(
            alpha_rel=d.alpha_rel_, l1_ratio=d.l1_ratio_, tv_ratio=d.tv_ratio_, stability=False
        )
        .fit,
        X,
    )
    cpu_one = time.process_time() - t0
    t0 = time.process_time()
    sel = quiet(ms.select_penalty, est, X, random_state=args.seed, truth=truth)
    cpu_select = time.process_time() - t0
    b = sel.best_estimator_
    default = point({"alpha_rel": d.alpha_rel_, "l1_ratio": d.l1_ratio_, "tv_ratio": d.tv_ratio_})
    row = {
        "tag": args.tag,
        "tree": __import__("neurospca").__file__,
        "seed": args.seed,
        "corr": args.corr,
        "method": args.method,
        "default": default + [ms.mse_to_truth(d, P), ms.dice_to_truth(d, P)],
        "chosen": point(sel.best_params_) + [ms.mse_to_truth(b, P), ms.dice_to_truth(b, P)],
        "kept_default": sel.best_index_ == getattr(sel, "default_index_", None),
        "cpu_default": cpu_default,
        "cpu_one_fit": cpu_one,
        "cpu_select": cpu_select,
    }
    return row, sel


def add_truth_best(row, tb):
    """The truth-best points of ``tb`` (``splits``, ``grid``) and the default
    fit, and the steps from the chosen point to them."""
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
    return row


def base_parser():
    """The options every select bench takes (this one and ``bench_select20h.py``)."""
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--corr", type=float, default=0.0)
    p.add_argument("--method", default="spcatv", choices=METHODS)
    p.add_argument("--truth-best", action="store_true")
    p.add_argument("--tag", default="")
    p.add_argument("--out", required=True)
    return p


def main():
    args = base_parser().parse_args()
    X, P, est, d, cpu_default = default_fit(args.seed, args.corr, args.method)
    kept = capture_search() if args.truth_best else None
    row, _ = select_row(args, X, P, est, d, cpu_default, truth=P if kept else None)
    if args.truth_best:
        add_truth_best(row, truth_best(est, X, P, kept))
    with open(args.out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row)[:400], flush=True)


if __name__ == "__main__":
    main()
