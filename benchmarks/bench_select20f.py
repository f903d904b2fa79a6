"""Issue 20 round 7: select_penalty against the method's own default fit.

Per seed and method, on the paper simulation (``--corr 0``: Table I set-up,
250 images; ``--corr 0.7``: scores correlated r = 0.7): the method's default
fit (``alpha_rel="auto"``), one search (``select_penalty(est, X,
random_state=seed, keep_default=False, refit=False)``) and from its rows

- ``round 6``: the rule's row (``choose_reproducible``), refitted cold (the
  refit before this round);
- ``warm``: the same row, refitted from its first half fit (``start_from``);
- ``new``: the row ``select_penalty`` now keeps (``prefer_default`` with the
  default fit's row), as ``select_penalty`` now returns it (the default fit
  itself when its row is kept, else the warm refit).

MSE / Dice to the truth of each (``mse_to_truth``, ``dice_to_truth``).

    OMP_NUM_THREADS=1 python benchmarks/bench_select20f.py --seeds 3167 3168 \\
        [--methods spcatv elasticnet deflation] [--corr 0.7]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

from sklearn.base import clone

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neurospca import SPCATV, make_paper_simulation, tv_from_mask  # noqa: E402
from neurospca import model_selection as ms  # noqa: E402
from neurospca.decomposition import start_from  # noqa: E402
from neurospca.model_selection._default import default_row, prefer_default  # noqa: E402

METHODS = {
    "spcatv": ("SPCA-TV", {}),
    "elasticnet": ("ElasticNet", {"tv_ratio": 0.0}),
    "deflation": ("SPCA-TV deflation", {"method": "deflation"}),
}


def quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def point(r):
    return f"({r['l1_ratio']:.2f}, {r['tv_ratio']:.2f}) {r['alpha_rel']:g}"


def cell(m, P):
    return f"{ms.mse_to_truth(m, P):.3f} / {ms.dice_to_truth(m, P):.3f}"


def run(seed, key, corr):
    X, P, mask = make_paper_simulation(250, random_state=seed, correlation=corr)
    name, extra = METHODS[key]
    est = SPCATV(3, operator=tv_from_mask(mask), random_state=0, **extra)
    t0 = time.perf_counter()
    d = quiet(clone(est).set_params(stability=False).fit, X)
    t_def = time.perf_counter() - t0
    t0 = time.perf_counter()
    sel = quiet(ms.select_penalty, est, X, random_state=seed, keep_default=False, refit=False)
    t_sel = time.perf_counter() - t0
    res = sel.results_
    old = ms.choose_reproducible(res, None, ms.default_path_starts(est))
    params = res[old]["params"]
    cold = quiet(clone(est).set_params(**params).fit, X)
    warm = quiet(start_from(clone(est).set_params(**params), sel.fold_components_[0][0]).fit, X)
    drow = default_row(res, d)
    new = prefer_default(res, old, drow)
    refit = d if new == drow else warm  # select_penalty returns the default fit at its row
    print(
        f"| {seed} | {name} | {d.alpha_rel_:g} ({d.l1_ratio_:g}, {d.tv_ratio_:g}): {cell(d, P)} | "
        f"{point(res[old])}: {cell(cold, P)} | {cell(warm, P)} | "
        f"{point(res[new])}{' (default)' if new == drow else ''}: {cell(refit, P)} | "
        f"{'-' if drow is None else point(res[drow])} | {t_def:.0f} / {t_sel:.0f} |",
        flush=True,
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", nargs="+", type=int, default=[3167])
    p.add_argument("--methods", nargs="+", default=["spcatv", "elasticnet"], choices=METHODS)
    p.add_argument("--corr", type=float, default=0.0)
    args = p.parse_args()
    print(
        "| seed | method | default: point, MSE / Dice | round 6: row, cold refit MSE / Dice | "
        "same row, warm refit | new: row, refit MSE / Dice | default's row | s default / search |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        for key in args.methods:
            run(seed, key, args.corr)


if __name__ == "__main__":
    main()
