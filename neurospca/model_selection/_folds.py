"""The K-fold rules of :func:`select_penalty` (issue 12): held-out score and
support stability across folds.

Each fold fits the grid weakest penalty first, each fit warm-started from the
last; per grid point the held-out :meth:`SPCATV.score`, the Dice stability of
the supports across the fold fits and the zero fractions; :func:`_choose`
applies one of the rules ``"weakest_stable"``, ``"one_se_stability"``,
``"stability"``, ``"one_se"``, ``"sparsity"``, ``"score"``.
"""

import numbers
import time
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import KFold, check_cv

from ._metrics import (
    corrected_stability,
    dice_to_truth,
    match_components,
    mse_to_truth,
    pairwise_dice,
)

#: The rules of :func:`fold_search` (the one of issue 12's default first).
FOLD_RULES = ("weakest_stable", "one_se_stability", "stability", "one_se", "sparsity", "score")
#: ``rule="weakest_stable"``: stability within this fraction of the best.
STABLE_TOLERANCE = 0.1


def _fit_path(estimator, grid, X, train, test, truth):
    """One fold: fit the grid weakest-first, each fit warm-started from the last."""
    est = clone(estimator)
    if "warm_start" in est.get_params():
        est.set_params(warm_start=True)
    out = []
    for params in grid:
        est.set_params(**params)
        t0 = time.perf_counter()
        with warnings.catch_warnings():  # empty components are recorded (n_empty)
            warnings.simplefilter("ignore")
            est.fit(X[train])
        fit_time = time.perf_counter() - t0
        C = np.array(est.components_, dtype=np.float64)
        rec = {
            "score": float(est.score(X[test])),
            "components": C,
            "zero_fraction": np.mean(C == 0, axis=1),
            "fit_time": fit_time,
        }
        if truth is not None:
            rec["mse"] = mse_to_truth(C, truth)
            rec["dice_truth"] = dice_to_truth(C, truth)
        out.append(rec)
    return out


def _paired_se(folds, best):
    """Standard error of each setting's mean score difference to ``best``,
    paired by fold (the folds' own difficulty cancels)."""
    d = folds - folds[best]
    n = folds.shape[1]
    return d.std(axis=1, ddof=1) / np.sqrt(n) if n > 1 else np.zeros(len(folds))


def _choose(results, rule, n_folds):
    """Index of the chosen grid point (grid ordered weakest penalty first)."""
    n = len(results)
    ok = np.array([r["n_empty"] == 0 for r in results])
    cand = np.flatnonzero(ok) if ok.any() else np.arange(n)
    score = np.array([r["mean_score"] for r in results])
    folds = np.array([r["fold_scores"] for r in results])
    stab = np.array([r["stability_corrected"] for r in results])
    best = cand[np.argmax(score[cand])]
    se = _paired_se(folds, best)
    within = cand[score[cand] >= score[best] - se[cand]]
    for i in range(n):
        results[i]["within_one_se"] = bool(i in within)
    if rule == "score":
        return int(best)
    if rule == "one_se":  # strongest penalty within one standard error
        return int(within.max())
    if rule == "stability":  # most stable; ties to the weaker penalty
        return int(cand[np.argmax(stab[cand])])
    if rule == "one_se_stability":
        return int(within[np.argmax(stab[within])])
    if rule == "weakest_stable":  # weakest penalty nearly as stable as the most stable
        top = stab[cand].max()
        return int(cand[stab[cand] >= top - STABLE_TOLERANCE * abs(top)].min())
    # "sparsity": the paper's rule, then the best score
    passing = cand[[results[i]["passes_sparsity"] for i in cand]]
    pool = passing if passing.size else cand
    return int(pool[np.argmax(score[pool])])


def _fold_row(params, recs, sparse_indices, min_zero_fraction):
    """The results row of one grid point from its fold fits."""
    comps = [r["components"] for r in recs]
    zeros = np.array([r["zero_fraction"] for r in recs])
    scores = np.array([r["score"] for r in recs])
    rule_rows = [k for k in sparse_indices if k < zeros.shape[1]]
    row = dict({k: v for k, v in params.items() if k != "alpha"}, params=params)
    row.update(
        {
            "mean_score": float(scores.mean()),
            "std_score": float(scores.std()),
            "fold_scores": scores,
            "stability": float(pairwise_dice(comps).mean()),
            "stability_corrected": float(corrected_stability(comps).mean()),
            "zero_fraction": float(zeros.mean()),
            "support": float(1.0 - zeros.mean()),
            "zero_fraction_per_component": zeros.mean(axis=0),
            "n_empty": int(np.sum(np.any(zeros == 1.0, axis=1))),
            "passes_sparsity": bool(np.all(zeros[:, rule_rows] >= min_zero_fraction)),
            "mean_fit_time": float(np.mean([r["fit_time"] for r in recs])),
        }
    )
    for key in ("mse", "dice_truth"):
        if key in recs[0]:
            row[key] = float(np.mean([r[key] for r in recs]))
    return row


def fold_search(
    estimator, X, grid, *, cv, random_state, n_jobs, truth, min_zero_fraction, sparse_indices
):
    """Fit every fold along ``grid`` (list of parameter dicts, weakest first).

    Returns
    -------
    results : list of dict
        One row per grid point.
    fold_components : list of list of ndarray
        Per grid point, its components on each fold.
    """
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        cv = KFold(int(cv), shuffle=True, random_state=random_state)
    folds = list(check_cv(cv).split(X))
    if len(folds) < 2:
        raise ValueError(f"cv must give at least 2 folds, got {len(folds)}.")
    paths = Parallel(n_jobs=n_jobs)(
        delayed(_fit_path)(estimator, grid, X, tr, te, truth) for tr, te in folds
    )
    results = [
        _fold_row(params, [p[i] for p in paths], sparse_indices, min_zero_fraction)
        for i, params in enumerate(grid)
    ]
    return results, [[p[i]["components"] for p in paths] for i in range(len(grid))]


def fold_stability(reference, fold_components):
    """Mean pairwise Dice of each component of ``reference`` across the fold fits."""
    aligned = [C[match_components(reference, C)[0]] for C in fold_components]
    return pairwise_dice(aligned, match=False).mean(axis=0)
