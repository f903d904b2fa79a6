"""Issue 20 round 8: every row of select_penalty's search fitted as it would be returned.

Per seed (paper simulation, ``--corr``), one search (``select_penalty(est, X,
random_state=seed, keep_default=False, refit=False, truth=P)``) and, for every
row, the full-sample fit started from the row's first half fit (``start_from``:
as ``select_penalty``'s refit and the default fit are started); per row: the
halves' reproducibility, the warm full fit's MSE / Dice to the truth and
non-zero fractions, and two reproducibility measures of that full fit:
``sub`` (``subsample_stability`` started from its components: two 0.9 N
subsamples sharing 0.8 N, overlap-corrected, as ``stability_``) and ``half``
(the two random halves of the search's first sample split, started from its
components). Also the default fit and the same two measures of it. One JSON
per seed and method (``--out``), replayed by ``bench_select20g_replay.py``.

    OMP_NUM_THREADS=1 python benchmarks/bench_select20g_rows.py --seed 3167 --corr 0.7 \\
        [--method spcatv|elasticnet] --out /tmp/rows_3167.json
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_select20g import METHODS, default_fit, quiet  # noqa: E402

from neurospca import model_selection as ms  # noqa: E402
from neurospca.decomposition import matched_abs_corr, split_halves, start_from, subsample_stability  # noqa: E402
from neurospca.model_selection._halves import reproducibility_search  # noqa: E402
from neurospca.model_selection._select import DEFAULT_ALPHA_REL_GRID, _check_splits, _seeds  # noqa: E402


def half_repro(est, X, params, start, seed):
    """Matched |corr| of the two halves' fits started from ``start``."""
    keep = dict(stability=False, certify_support=False, **params)
    comps = [
        quiet(start_from(clone(est).set_params(**keep), start).fit, h).components_
        for h in split_halves(X, seed)
    ]
    return matched_abs_corr(*comps)[1]


def measure(est, X, P, model, params, seed):
    t0 = time.process_time()
    sub = quiet(subsample_stability, model, X, params, start=model.components_)
    t1 = time.process_time()
    half = half_repro(est, X, params, model.components_, seed)
    t2 = time.process_time()
    C = model.components_
    return {
        "mse": ms.mse_to_truth(C, P),
        "dice": ms.dice_to_truth(C, P),
        "nonzero": np.mean(C != 0, axis=1).tolist(),
        "sub": np.asarray(sub).tolist(),
        "half": np.asarray(half).tolist(),
        "cpu_sub": t1 - t0,
        "cpu_half": t2 - t1,
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--corr", type=float, default=0.0)
    p.add_argument("--method", default="spcatv", choices=METHODS)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    seed = args.seed
    X, P, est, d, cpu_default = default_fit(seed, args.corr, args.method)
    t0 = time.process_time()
    splits = _check_splits(None, est, "reproducibility")
    results, halves = quiet(
        reproducibility_search, est, X, splits, np.array(DEFAULT_ALPHA_REL_GRID), _seeds(seed, 2), P
    )
    cpu_search = time.process_time() - t0
    round7 = int(ms.choose_reproducible(results, None, ms.default_path_starts(est)))
    rows = []
    for i, r in enumerate(results):
        params = dict(r["params"])
        t0 = time.process_time()
        m = quiet(
            start_from(clone(est).set_params(**params, stability=False), halves[i][0][0]).fit, X
        )
        cpu_fit = time.process_time() - t0
        row = {
            k: r[k] for k in ("alpha_rel", "l1_ratio", "tv_ratio", "reproducibility", "admissible")
        }
        row["halves_per_component"] = np.asarray(r["reproducibility_per_component"]).tolist()
        row["halves_nonzero"] = np.asarray(r["nonzero_fraction"]).tolist()
        row["halves_mse"], row["halves_dice"] = r.get("mse"), r.get("dice_truth")
        row.update(measure(est, X, P, m, params, seed), cpu_fit=cpu_fit)
        rows.append(row)
        print(
            seed,
            params,
            f"{row['mse']:.3f}/{row['dice']:.3f}",
            np.round(row["sub"], 2),
            np.round(row["half"], 2),
            flush=True,
        )
    dparams = {
        "alpha": None,
        "alpha_rel": d.alpha_rel_,
        "l1_ratio": d.l1_ratio_,
        "tv_ratio": d.tv_ratio_,
    }
    default = {"alpha_rel": d.alpha_rel_, "l1_ratio": d.l1_ratio_, "tv_ratio": d.tv_ratio_}
    default.update(measure(est, X, P, d, dparams, seed), cpu=cpu_default)
    out = {
        "seed": seed,
        "corr": args.corr,
        "method": args.method,
        "rows": rows,
        "default": default,
        "cpu_search": cpu_search,
        "round7_choice": round7,
    }
    Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
