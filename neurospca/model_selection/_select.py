"""Choosing SPCA-TV's relative penalty by held-out fit and stability (issue 12).

:func:`select_penalty` fits each fold along a warm-started path of relative
penalties and applies one of :data:`SELECTION_RULES`; it returns a
:class:`PenaltySelection`. :func:`one_se_refit` is the one-standard-error rule
as a ``refit`` callable for scikit-learn's ``GridSearchCV``.
"""

import logging
import numbers
import time
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import KFold, check_cv

from .._utils.validation import check_matrix
from ._metrics import (
    corrected_stability, dice_to_truth, match_components, mse_to_truth, pairwise_dice,
)

logger = logging.getLogger("neurospca")

__all__ = ["select_penalty", "PenaltySelection", "one_se_refit", "DEFAULT_ALPHA_REL_GRID",
           "SELECTION_RULES", "STABLE_TOLERANCE"]

#: Default grid of :func:`select_penalty` (relative penalties, weakest first).
DEFAULT_ALPHA_REL_GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
SELECTION_RULES = ("weakest_stable", "one_se_stability", "stability", "one_se", "sparsity",
                   "score")
#: ``rule="weakest_stable"``: stability within this fraction of the best.
STABLE_TOLERANCE = 0.1


def _fit_path(estimator, grid, X, train, test, truth):
    """One fold: fit the grid weakest-first, each fit warm-started from the last."""
    est = clone(estimator)
    warm = "warm_start" in est.get_params()
    if warm:
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
        rec = {"score": float(est.score(X[test])), "components": C,
               "zero_fraction": np.mean(C == 0, axis=1), "fit_time": fit_time}
        if truth is not None:
            rec["mse"] = mse_to_truth(C, truth)
            rec["dice_truth"] = dice_to_truth(C, truth)
        out.append(rec)
    return out


class PenaltySelection:
    """What :func:`select_penalty` returns.

    Parameters
    ----------
    **kwargs
        The attributes below, set by :func:`select_penalty` (this class is a
        plain record; it is not meant to be built by hand).

    Attributes
    ----------
    best_params_ : dict
        The chosen parameters (e.g. ``{"alpha": None, "alpha_rel": 1.0}``).
    best_index_ : int
    results_ : list of dict
        One per grid point (weakest penalty first): ``params``, ``alpha_rel``,
        ``mean_score`` / ``std_score`` (held-out :meth:`SPCATV.score` across
        folds), ``fold_scores``, ``stability`` (mean pairwise Dice of the fold
        fits), ``stability_corrected`` (the same, chance-corrected),
        ``zero_fraction`` (mean over folds and components),
        ``zero_fraction_per_component``, ``n_empty`` (fold fits with an
        all-zero component), ``passes_sparsity``, ``within_one_se``,
        ``mean_fit_time``, and with ``truth`` ``mse`` and ``dice_truth``.
    rule : str
    component_stability_ : ndarray of shape (n_components,)
        Mean pairwise Dice of each component of the chosen setting across the
        fold fits (components in the order of ``best_estimator_``).
    best_estimator_ : estimator or None
        Refitted on all the data with ``best_params_`` (None if ``refit=False``).
    fold_components_ : list of ndarray
        The chosen setting's components on each fold.
    """

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            setattr(self, key, value)

    def __repr__(self):
        return (f"PenaltySelection(rule={self.rule!r}, best_params_={self.best_params_!r}, "
                f"n_settings={len(self.results_)})")

    def table(self, float_format="{:.4g}"):
        """The results as aligned plain text (the chosen row marked ``*``).

        Parameters
        ----------
        float_format : str, default="{:.4g}"
            Format of the floating-point cells (:meth:`str.format` syntax).

        Returns
        -------
        str
            One line per grid point (weakest penalty first) under a header.
        """
        cols = ["alpha_rel", "score", "std", "stability", "corrected", "zeros", "empty"]
        has_truth = "mse" in self.results_[0]
        if has_truth:
            cols += ["mse", "dice_truth"]
        lines = ["  " + "  ".join(f"{c:>10s}" for c in cols)]
        for i, r in enumerate(self.results_):
            vals = [r["alpha_rel"], r["mean_score"], r["std_score"], r["stability"],
                    r["stability_corrected"], r["zero_fraction"], r["n_empty"]]
            if has_truth:
                vals += [r["mse"], r["dice_truth"]]
            cells = [f"{float_format.format(v):>10s}" if isinstance(v, float)
                     else f"{v!s:>10s}" for v in vals]
            lines.append(("*" if i == self.best_index_ else " ") + " " + "  ".join(cells))
        return "\n".join(lines)


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


def select_penalty(estimator, X, *, alpha_rel=DEFAULT_ALPHA_REL_GRID, cv=5,
                   rule="weakest_stable", n_jobs=None, random_state=None, refit=True,
                   truth=None, min_zero_fraction=0.5, sparse_indices=(1, 2)):
    """Choose SPCA-TV's relative penalty by held-out fit AND stability.

    For each cross-validation fold a clone of ``estimator`` is fitted along
    the grid of relative penalties (weakest first, each fit warm-started from
    the previous one: scores and dual variables), giving the held-out
    :meth:`SPCATV.score` (fraction of variance explained) and the components.
    Per grid point: mean and standard deviation of the held-out score, the
    stability (mean pairwise Dice of the supports across the fold fits,
    :func:`pairwise_dice`; and chance-corrected, :func:`corrected_stability`,
    which the rules use), the zero fractions. Settings where a fold fit has
    an all-zero component are excluded. Rules:

    - ``"weakest_stable"`` (default): the weakest penalty whose corrected
      stability is within 10 % (:data:`STABLE_TOLERANCE`) of the most stable
      setting's: as reproducible as the penalties allow, with the least
      shrinkage (the shrinkage of the loadings grows with the penalty);
    - ``"one_se_stability"``: among the settings whose mean score is within
      one standard error of the best, the most stable one;
    - ``"stability"``: the most stable setting;
    - ``"one_se"``: the strongest penalty within one standard error of the
      best score (as :func:`one_se_refit` does for ``GridSearchCV``);
    - ``"sparsity"``: the paper's rule, best score among settings whose
      components ``sparse_indices`` are at least ``min_zero_fraction`` zeros
      on every fold;
    - ``"score"``: the best held-out score alone (it prefers the weakest
      penalty; kept for comparison).

    "Within one standard error": ``mean_i >= mean_best - SE_i`` with
    ``SE_i`` the standard error of the fold-paired differences
    ``score_i - score_best`` (``std(ddof=1) / sqrt(n_folds)``): the folds
    share their test sets, so their own difficulty cancels.

    Parameters
    ----------
    estimator : SPCATV
        With its ``operator`` and other settings; ``alpha`` is set to None and
        ``alpha_rel`` to each grid value.
    X : array-like of shape (n_samples, n_features)
    alpha_rel : sequence of float, default=(0.25, 0.5, 1, 2, 4, 8)
        Relative penalties (``alpha_ = alpha_rel * l1_max_``).
    cv : int, cross-validation splitter or iterable, default=5
        An int is a shuffled ``KFold`` seeded by ``random_state``.
    rule : str, default="weakest_stable"
    n_jobs : int, optional
        Folds run in parallel through joblib.
    random_state : int, optional
    refit : bool, default=True
        Refit the chosen setting on all of ``X`` (``best_estimator_``).
    truth : array-like of shape (n_true, n_features), optional
        Known patterns (simulations): adds ``mse`` and ``dice_truth``.
    min_zero_fraction : float, default=0.5
    sparse_indices : sequence of int, default=(1, 2)
        For ``rule="sparsity"``.

    Returns
    -------
    PenaltySelection

    Raises
    ------
    ValueError
        Unknown rule, empty or non-positive grid, fewer than 2 folds.
    """
    X = check_matrix(X, "X")
    if rule not in SELECTION_RULES:
        raise ValueError(f"rule must be one of {SELECTION_RULES}, got {rule!r}.")
    grid_values = np.atleast_1d(np.asarray(alpha_rel, dtype=np.float64))
    if grid_values.size == 0 or not np.all(np.isfinite(grid_values)) \
            or np.any(grid_values <= 0):
        raise ValueError(f"alpha_rel must be a non-empty sequence of positive floats, "
                         f"got {alpha_rel!r}.")
    grid_values = np.unique(grid_values)  # weakest first
    if not hasattr(estimator, "fit") or "alpha_rel" not in estimator.get_params():
        raise TypeError(f"estimator must be an SPCATV-like estimator with an alpha_rel "
                        f"parameter, got {estimator!r}.")
    if truth is not None:
        truth = check_matrix(truth, "truth", X.shape[1])
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        cv = KFold(int(cv), shuffle=True, random_state=random_state)
    folds = list(check_cv(cv).split(X))
    if len(folds) < 2:
        raise ValueError(f"cv must give at least 2 folds, got {len(folds)}.")
    grid = [{"alpha": None, "alpha_rel": float(a)} for a in grid_values]
    logger.info("select_penalty: %d settings x %d folds (warm-started paths)",
                len(grid), len(folds))
    paths = Parallel(n_jobs=n_jobs)(
        delayed(_fit_path)(estimator, grid, X, tr, te, truth) for tr, te in folds)
    n_fold = len(folds)
    results = []
    for i, params in enumerate(grid):
        recs = [paths[f][i] for f in range(n_fold)]
        comps = [r["components"] for r in recs]
        zeros = np.array([r["zero_fraction"] for r in recs])
        scores = np.array([r["score"] for r in recs])
        rule_rows = [k for k in sparse_indices if k < zeros.shape[1]]
        res = {
            "params": params,
            "alpha_rel": params["alpha_rel"],
            "mean_score": float(scores.mean()),
            "std_score": float(scores.std()),
            "fold_scores": scores,
            "stability": float(pairwise_dice(comps).mean()),
            "stability_corrected": float(corrected_stability(comps).mean()),
            "zero_fraction": float(zeros.mean()),
            "zero_fraction_per_component": zeros.mean(axis=0),
            "n_empty": int(np.sum(np.any(zeros == 1.0, axis=1))),
            "passes_sparsity": bool(np.all(zeros[:, rule_rows] >= min_zero_fraction)),
            "mean_fit_time": float(np.mean([r["fit_time"] for r in recs])),
        }
        if truth is not None:
            res["mse"] = float(np.mean([r["mse"] for r in recs]))
            res["dice_truth"] = float(np.mean([r["dice_truth"] for r in recs]))
        results.append(res)
    best = _choose(results, rule, n_fold)
    best_params = dict(grid[best])
    fold_comps = [paths[f][best]["components"] for f in range(n_fold)]
    best_estimator = None
    reference = fold_comps[0]
    if refit:
        best_estimator = clone(estimator).set_params(**best_params).fit(X)
        reference = best_estimator.components_
    aligned = [C[match_components(reference, C)[0]] for C in fold_comps]
    component_stability = pairwise_dice(aligned, match=False).mean(axis=0)
    logger.info("select_penalty (%s): alpha_rel=%g", rule, best_params["alpha_rel"])
    return PenaltySelection(best_params_=best_params, best_index_=best, results_=results,
                            rule=rule, component_stability_=component_stability,
                            best_estimator_=best_estimator, fold_components_=fold_comps)


def one_se_refit(cv_results, param="param_alpha_rel"):
    """``refit`` callable for ``GridSearchCV``: the one-standard-error rule.

    Among the candidates whose mean test score is within one standard error
    of the best (standard error of the split-paired differences to the best,
    as in :func:`select_penalty`), returns the index
    of the one with the largest ``param`` (the strongest penalty), as
    ``select_penalty(..., rule="one_se")`` does. Use it as
    ``GridSearchCV(SPCATV(operator=op), {"alpha_rel": [...]}, refit=one_se_refit)``
    (for a Pipeline pass ``param="param_spcatv__alpha_rel"`` through
    :func:`functools.partial`).

    Parameters
    ----------
    cv_results : dict
        ``GridSearchCV.cv_results_``.
    param : str, default="param_alpha_rel"

    Returns
    -------
    int
    """
    if param not in cv_results:
        raise ValueError(f"cv_results has no {param!r} column; pass param= the "
                         f"'param_<name>' of the penalty (columns: "
                         f"{sorted(k for k in cv_results if k.startswith('param_'))}).")
    mean = np.asarray(cv_results["mean_test_score"], dtype=float)
    splits = sorted((k for k in cv_results
                     if k.startswith("split") and k.endswith("_test_score")),
                    key=lambda k: int(k[5:].split("_")[0]))
    folds = np.column_stack([np.asarray(cv_results[k], dtype=float) for k in splits])
    values = np.asarray(cv_results[param], dtype=float)
    finite = np.isfinite(mean)
    if not finite.any():
        raise ValueError("cv_results has no finite mean_test_score.")
    best = int(np.nanargmax(np.where(finite, mean, -np.inf)))
    se = _paired_se(folds, best)
    within = np.flatnonzero(finite & (mean >= mean[best] - se))
    return int(within[np.argmax(values[within])])
