"""Issue 20, item 1: ``select_penalty`` with the split-half rule (seeds 2101+).

1. Never worse than a method's own default: on the paper's simulation
   (``make_paper_simulation(250, random_state=seed)``, Table I set-up), MSE and
   Dice to the truth of ``select_penalty(est, X).best_estimator_`` against
   ``est``'s default fit, for SPCA-TV (``SPCATV(3, operator=op)``) and
   ElasticNet PCA (the same with ``tv_ratio=0``).
2. Within one grid step of the truth-best point: on the paper's set-up with
   scores correlated at r = 0.7 (and ``--atrophy``: ``benchmarks/_trust.py``'s
   ``atrophy("fsaverage5", 0.6, seed)``), the chosen point against the grid
   point with the lowest MSE to the truth (mean over the half fits; and, since
   issue 20 round 6, of fits on all samples along each split's path); steps
   along ``alpha_rel`` and along the splits (ordered as searched).

    OMP_NUM_THREADS=1 python benchmarks/bench_select_issue20.py [--part default|steps]
        [--seeds 2101 2102 2103] [--atrophy]
"""

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np  # noqa: F401
from sklearn.base import clone

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neurospca import SPCATV, make_paper_simulation, tv_from_mask  # noqa: E402
from neurospca.model_selection import (  # noqa: E402
    choose_reproducible,
    default_path_starts,
    dice_to_truth,
    mse_to_truth,
    select_penalty,
)


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


TOLERANCES = (None, 0.0, 0.01)  # None: the default rule since issue 20 round 6


def _replay(sel, est, X, tolerance, cache):
    """The row chosen at ``tolerance`` and the estimator refitted there (cached)."""
    i = choose_reproducible(sel.results_, tolerance, default_path_starts(est))
    params = sel.results_[i]["params"]
    key = tuple(sorted(params.items(), key=lambda kv: kv[0]))
    if key not in cache:
        cache[key] = _quiet(clone(est).set_params(**params).fit, X)
    return i, cache[key]


def default_vs_selected(seeds):
    print("\n## never worse than the default (paper simulation, 250 images)")
    print(
        f"{'seed':>5s} {'method':>11s} {'default a: MSE/Dice':>20s} "
        + " ".join(f"{'tol ' + str(t) + ' (l1, tv) a: MSE/Dice':>33s}" for t in TOLERANCES)
        + f" {'time sel/def':>13s}"
    )
    for seed in seeds:
        X, P, mask = make_paper_simulation(250, random_state=seed)
        op = tv_from_mask(mask)
        for name, est in (
            ("SPCA-TV", SPCATV(3, operator=op, random_state=0)),
            ("ElasticNet", SPCATV(3, operator=op, tv_ratio=0.0, random_state=0)),
        ):
            t0 = time.perf_counter()
            d = _quiet(clone(est).fit, X)
            t_def = time.perf_counter() - t0
            t0 = time.perf_counter()
            sel = _quiet(select_penalty, est, X, random_state=seed, refit=False)
            t_sel = time.perf_counter() - t0
            cache, cells = {}, []
            for tol in TOLERANCES:
                i, b = _replay(sel, est, X, tol, cache)
                r = sel.results_[i]
                cells.append(
                    f"({r['l1_ratio']:.2f}, {r['tv_ratio']:.2f}) {r['alpha_rel']:4.2g}: "
                    f"{mse_to_truth(b, P):.3f}/{dice_to_truth(b, P):.3f}"
                )
            print(
                f"{seed:5d} {name:>11s} {d.alpha_rel_:4.2g}: {mse_to_truth(d, P):.3f}/"
                f"{dice_to_truth(d, P):.3f} "
                + " ".join(f"{c:>32s}" for c in cells)
                + f" {t_sel:6.1f}/{t_def:4.1f} s",
                flush=True,
            )


def steps(sel, i, key):
    """Row ``i`` vs the truth-best row by ``key`` (lowest "mse" or highest
    "dice_truth", half fits): steps along alpha_rel and along the splits."""
    res = sel.results_
    splits = list(dict.fromkeys((r["l1_ratio"], r["tv_ratio"]) for r in res))
    grid = sorted({r["alpha_rel"] for r in res})
    sign = 1 if key == "mse" else -1
    best = min(range(len(res)), key=lambda j: sign * res[j][key])
    c, t = res[i], res[best]
    da = abs(grid.index(c["alpha_rel"]) - grid.index(t["alpha_rel"]))
    ds = abs(
        splits.index((c["l1_ratio"], c["tv_ratio"])) - splits.index((t["l1_ratio"], t["tv_ratio"]))
    )
    return t, da, ds


def full_path_truth(est, X, P, results):
    """The grid points fitted on ALL samples (each split's path warm-started, weakest
    first): ``{(l1_ratio, tv_ratio, alpha_rel): (mse, dice)}`` to the truth."""
    out = {}
    for split in dict.fromkeys((r["l1_ratio"], r["tv_ratio"]) for r in results):
        m = clone(est).set_params(warm_start=True, stability=False, certify_support=False)
        for a in sorted(r["alpha_rel"] for r in results if (r["l1_ratio"], r["tv_ratio"]) == split):
            _quiet(
                m.set_params(alpha=None, alpha_rel=a, l1_ratio=split[0], tv_ratio=split[1]).fit, X
            )
            out[split + (a,)] = (mse_to_truth(m, P), dice_to_truth(m, P))
    return out


def full_steps(sel, i, full):
    """Steps (alpha_rel / split) from row ``i`` to the full-sample MSE-best and Dice-best."""
    res = sel.results_
    splits = list(dict.fromkeys((r["l1_ratio"], r["tv_ratio"]) for r in res))
    grid = sorted({r["alpha_rel"] for r in res})
    keys = [(r["l1_ratio"], r["tv_ratio"], r["alpha_rel"]) for r in res]
    out = []
    for col, sign in ((0, 1), (1, -1)):
        t = min(keys, key=lambda k: sign * full[k][col])
        c = keys[i]
        da = abs(grid.index(c[2]) - grid.index(t[2]))
        ds = abs(splits.index(c[:2]) - splits.index(t[:2]))
        out.append(
            f"({t[0]:.2f}, {t[1]:.2f}) {t[2]:g}: {full[t][0]:.3f}/{full[t][1]:.2f} ({da}/{ds})"
        )
    return out


def one_step(name, seeds, make):
    print(
        f"\n## {name}: chosen vs truth-best grid points (MSE/Dice: mean over the half "
        "fits; refit and default: on all samples)"
    )

    def cell(r):
        return (
            f"({r['l1_ratio']:.2f}, {r['tv_ratio']:.2f}) {r['alpha_rel']:4.2g}: "
            f"{r['mse']:.3f}/{r['dice_truth']:.2f}"
        )

    for seed in seeds:
        X, op, P = make(seed)
        est = SPCATV(3, operator=op, random_state=0)
        d = _quiet(clone(est).fit, X)
        t0 = time.perf_counter()
        sel = _quiet(select_penalty, est, X, truth=P, random_state=seed, refit=False)
        t_sel = time.perf_counter() - t0
        cache = {}
        full = full_path_truth(est, X, P, sel.results_)
        print(
            f"{seed:5d} default (alpha_rel {d.alpha_rel_:g}): {mse_to_truth(d, P):.3f}/"
            f"{dice_to_truth(d, P):.2f}; selection {t_sel:.1f} s",
            flush=True,
        )
        for tol in TOLERANCES:
            i, b = _replay(sel, est, X, tol, cache)
            tm, am, sm = steps(sel, i, "mse")
            td, ad, sd = steps(sel, i, "dice_truth")
            print(
                f"      tol {tol!s:>4s} chosen {cell(sel.results_[i]):>30s}  MSE-best "
                f"{cell(tm):>30s} ({am}/{sm} steps)  Dice-best {cell(td):>30s} ({ad}/{sd} "
                f"steps)  refit {mse_to_truth(b, P):.3f}/{dice_to_truth(b, P):.2f}; full-sample "
                "MSE-best {} Dice-best {}".format(*full_steps(sel, i, full)),
                flush=True,
            )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=["default", "steps", "all"], default="all")
    ap.add_argument("--seeds", type=int, nargs="+", default=[2101, 2102, 2103])
    ap.add_argument("--atrophy", action="store_true")
    ap.add_argument("--atrophy-only", action="store_true")
    args = ap.parse_args()
    print(
        f"# {platform.machine()} {platform.processor() or ''}, python "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    if args.part in ("default", "all"):
        default_vs_selected(args.seeds)
    if args.part in ("steps", "all"):

        def paper(seed):
            X, P, mask = make_paper_simulation(250, random_state=seed, correlation=0.7)
            return X, tv_from_mask(mask), P

        if not args.atrophy_only:
            one_step("paper 2-D, scores correlated r = 0.7", args.seeds, paper)
        if args.atrophy or args.atrophy_only:
            from _trust import atrophy

            one_step(
                "atrophy fsaverage5, r = 0.6 (age/sex regressed out)",
                args.seeds,
                lambda seed: atrophy("fsaverage5", 0.6, seed),
            )


if __name__ == "__main__":
    main()
