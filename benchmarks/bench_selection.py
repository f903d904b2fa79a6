"""Which selection rule picks penalties that recover structure? (issue 12, part 2)

On the paper's simulation (Table I set-up: 100x100 images, three dot
patterns, SNR 0.1, 250 training images; seeds 1001+ used nowhere else) and
on the cortical-atrophy simulation (fsaverage5, 100 subjects), run
``select_penalty`` over the default grid ``alpha_rel = 0.25 ... 8`` (5-fold
CV, warm-started paths) and report, per rule, the chosen ``alpha_rel`` and the
MSE and Dice to the truth of the chosen setting (mean over the fold fits),
against the weakest penalty of the grid. Then measures the warm-start
saving along a 12-point path.

    OMP_NUM_THREADS=1 python benchmarks/bench_selection.py [--seeds 5]
"""

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neurospca import (  # noqa: E402
    SPCATV,
    make_cortical_atrophy,
    make_paper_simulation,
    tv_from_hemispheres,
    tv_from_mask,
)
from neurospca.model_selection import SELECTION_RULES, _choose, select_penalty  # noqa: E402

# the K-fold rules of issue 12 (the split-half rule of issue 20 is measured by
# benchmarks/bench_select_issue20.py)
FOLD_RULES = [r for r in SELECTION_RULES if r != "reproducibility"]


def instances(kind, n_seeds, first_seed=1001):
    for seed in range(first_seed, first_seed + n_seeds):
        if kind == "paper":
            X, P, mask = make_paper_simulation(250, random_state=seed)
            yield seed, X, P, tv_from_mask(mask)
        else:
            d = make_cortical_atrophy(100, random_state=seed)
            op, _ = tv_from_hemispheres(d.mesh_left, d.mesh_right)
            yield seed, d.X, d.patterns, op


def selection_table(kind, n_seeds, n_jobs, first_seed=1001, dump=None):
    rows = {r: [] for r in FOLD_RULES}
    weakest = []
    print(f"\n## {kind}: chosen alpha_rel per seed and rule; MSE / Dice to truth")
    print(
        f"{'seed':>5s} " + " ".join(f"{r:>17s}" for r in FOLD_RULES) + f" {'weakest (0.25)':>17s}"
    )
    for seed, X, truth, op in instances(kind, n_seeds, first_seed):
        sel = select_penalty(
            SPCATV(3, operator=op),
            X,
            truth=truth,
            random_state=seed,
            refit=False,
            n_jobs=n_jobs,
            rule="weakest_stable",
        )
        res = sel.results_
        if dump is not None:
            dump.append(
                {
                    "kind": kind,
                    "seed": seed,
                    "results": [
                        {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in r.items()}
                        for r in res
                    ],
                }
            )
        w = res[0]
        weakest.append((w["mse"], w["dice_truth"]))
        cells = []
        for rule in FOLD_RULES:
            i = _choose(res, rule, 5)
            rows[rule].append((res[i]["alpha_rel"], res[i]["mse"], res[i]["dice_truth"]))
            cells.append(
                f"{res[i]['alpha_rel']:4.2g} {res[i]['mse']:.3f}/{res[i]['dice_truth']:.2f}"
            )
        print(
            f"{seed:5d} "
            + " ".join(f"{c:>17s}" for c in cells)
            + f" {w['mse']:.3f}/{w['dice_truth']:.2f}".rjust(18),
            flush=True,
        )
        if seed == first_seed:
            print(sel.table())
    print(f"\n{'rule':>17s} {'mean MSE':>9s} {'mean Dice':>9s} {'beats weakest (MSE & Dice)':>27s}")
    wm = np.array(weakest)
    for rule in FOLD_RULES:
        a = np.array(rows[rule])
        beats = int(np.sum((a[:, 1] < wm[:, 0]) & (a[:, 2] > wm[:, 1])))
        print(f"{rule:>17s} {a[:, 1].mean():9.3f} {a[:, 2].mean():9.3f} {beats:>20d}/{len(a)}")
    print(f"{'weakest':>17s} {wm[:, 0].mean():9.3f} {wm[:, 1].mean():9.3f}")


def warm_start_saving():
    X, P, mask = make_paper_simulation(250, random_state=1001)
    op = tv_from_mask(mask)
    grid = np.geomspace(0.25, 8.0, 12)
    out = {}
    for warm in (False, True):
        est = SPCATV(3, operator=op, warm_start=warm)
        t0, inner = time.perf_counter(), 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for a in grid:
                est.set_params(alpha_rel=float(a)).fit(X)
                inner += int(np.sum(est.n_inner_iter_))
        out[warm] = (time.perf_counter() - t0, inner)
    print(f"\n## warm starts along {len(grid)} neighbouring alpha_rel (0.25..8), paper simulation")
    print(
        f"cold: {out[False][0]:.2f} s, {out[False][1]} solver iterations; "
        f"warm: {out[True][0]:.2f} s, {out[True][1]} solver iterations; "
        f"speed-up {out[False][0] / out[True][0]:.2f}x (iterations "
        f"{out[False][1] / max(out[True][1], 1):.2f}x)"
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--atrophy-seeds", type=int, default=5)
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--skip", default="", help="comma list of: paper,atrophy,warm")
    p.add_argument("--first-seed", type=int, default=1001)
    p.add_argument("--json", default=None, help="write the per-seed results here")
    args = p.parse_args()
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"python {platform.python_version()}"
    )
    skip = set(args.skip.split(","))
    if "warm" not in skip:
        warm_start_saving()
    dump = []
    if "paper" not in skip:
        selection_table("paper", args.seeds, args.n_jobs, args.first_seed, dump)
    if "atrophy" not in skip:
        selection_table("atrophy", args.atrophy_seeds, args.n_jobs, args.first_seed, dump)
    if args.json:
        import json

        with open(args.json, "w") as f:
            json.dump(dump, f)


if __name__ == "__main__":
    main()
