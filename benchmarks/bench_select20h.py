"""Issue 20 round 9: select_penalty against the truth-best of warm full fits and its default.

As ``bench_select20g.py`` (one JSON line per seed and method, the same fields,
read by ``summarise_select20g.py``), but the truth-best yardstick no longer
comes from the search's own rows: since round 9 ``select_penalty`` walks the
other splits only when the estimator's own split does not reproduce, so the
yardstick walks every split itself, with the search's first sample split
(``reproducibility_search`` with the first of ``select_penalty``'s seeds: the
same halves as main's search, whose returned models start from the first
half fit of that split), and fits every grid point on all samples from its
first half fit (rows whose halves are all empty are not fitted), plus the
default fit at its own point. Extra fields: ``l1_weight`` of the chosen,
MSE-best and Dice-best points (``l1_ratio * alpha_rel``: without TV the
only parameter of the model, see ``_returned.same_model``), the rows the
search judged (``judged``) and its splits searched.

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_select20h.py --seed 3221 \\
        --corr 0.7 [--method spcatv|elasticnet] [--truth-best] --tag after --out rows.jsonl
"""

import json
import sys
from pathlib import Path

import numpy as np
from sklearn.base import clone

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_select20g import add_truth_best, base_parser, default_fit, point, quiet, select_row  # noqa: E402

from neurospca import model_selection as ms  # noqa: E402
from neurospca.decomposition import start_from  # noqa: E402
from neurospca.model_selection._halves import reproducibility_search  # noqa: E402
from neurospca.model_selection._select import DEFAULT_ALPHA_REL_GRID, _check_splits, _seeds  # noqa: E402


def _commit():
    import subprocess

    tree = Path(__import__("neurospca").__file__).resolve().parents[1]
    out = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True
    )
    return out.stdout.decode().strip()


#: The tree's commit when this run started (the rule it measures).
COMMIT = _commit()


def truth_best(est, X, P, seed):
    """Every grid point of every split fitted on all samples from its first
    half fit (the search's first sample split)."""
    splits = _check_splits(None, est, "reproducibility")
    results, halves = quiet(
        reproducibility_search, est, X, splits, np.array(DEFAULT_ALPHA_REL_GRID), _seeds(seed, 1)
    )
    grid = []
    for r, h in zip(results, halves, strict=True):
        if not np.any(r["nonzero_fraction"]):
            continue  # every half component empty: not fitted (the full fit is empty too)
        m = quiet(start_from(clone(est).set_params(**r["params"], stability=False), h[0][0]).fit, X)
        grid.append(point(r["params"]) + [ms.mse_to_truth(m, P), ms.dice_to_truth(m, P)])
    return {"splits": [[float(a), float(b)] for a, b in splits], "grid": grid}


def main():
    p = base_parser()
    p.add_argument(
        "--yardstick-only",
        action="store_true",
        help="no select_penalty: the default fit and the truth-best grid (tag yardstick)",
    )
    args = p.parse_args()
    seed = args.seed
    X, P, est, d, cpu_default = default_fit(seed, args.corr, args.method)
    if args.yardstick_only:
        write(args.out, yardstick_row(args, X, P, est, d, cpu_default))
        return
    row, sel = select_row(args, X, P, est, d, cpu_default)
    row.update(
        commit=COMMIT,
        searched=[point(r["params"]) for r in sel.results_],
        judged=[point(r["params"]) for r in sel.results_ if "returned_stability" in r],
        tied=[point(r["params"]) for r in sel.results_ if r.get("tied")],
    )
    if args.truth_best:
        add_truth_best(row, truth_best(est, X, P, seed))
        row["l1_weight"] = [g[0] * g[2] for g in (row["chosen"], row["mse_best"], row["dice_best"])]
    write(args.out, row)


def yardstick_row(args, X, P, est, d, cpu_default):
    """The default fit and every grid point's warm full fit (no search)."""
    default = point({"alpha_rel": d.alpha_rel_, "l1_ratio": d.l1_ratio_, "tv_ratio": d.tv_ratio_})
    tb = truth_best(est, X, P, args.seed)
    return {
        "tag": "yardstick",
        "seed": args.seed,
        "corr": args.corr,
        "method": args.method,
        "default": default + [ms.mse_to_truth(d, P), ms.dice_to_truth(d, P)],
        "cpu_default": cpu_default,
        "truth_splits": tb["splits"],
        "truth_grid": tb["grid"],
    }


def write(path, row):
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row)[:400], flush=True)


if __name__ == "__main__":
    main()
