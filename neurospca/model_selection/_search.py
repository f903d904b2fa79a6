"""K-fold grid search over estimator parameters with the paper's criteria.

:func:`grid_search_cv` fits every (setting, fold) pair through joblib (so
``joblib.parallel_config(backend="dask")`` runs it on a dask cluster);
:func:`format_grid_table` prints its results.
"""

import logging
import time

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid, check_cv

from .._utils.validation import check_matrix
from ._metrics import check_sparsity_rule, mse_to_truth, pairwise_dice, reconstruction_error

logger = logging.getLogger("neurospca")

__all__ = ["grid_search_cv", "format_grid_table"]


def _fit_and_score(estimator, params, X, train, test, truth):
    """One (parameters, fold) fit: test error, components, timings."""
    est = clone(estimator).set_params(**params)
    t0 = time.perf_counter()
    est.fit(X[train])
    fit_time = time.perf_counter() - t0
    C = np.asarray(est.components_, dtype=np.float64)
    out = {
        "test_error": reconstruction_error(X[test], C, getattr(est, "mean_", None)),
        "components": C,
        "zero_fraction": np.mean(C == 0, axis=1),
        "fit_time": fit_time,
    }
    if truth is not None:
        out["mse"] = mse_to_truth(C, truth)
    return out


def _progress(iterator, total, progress):
    """Wrap with tqdm when asked and available; else log each finished fit."""
    if progress:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            logger.info(
                "tqdm is not installed: progress is logged instead "
                "(pip install tqdm for a progress bar)."
            )
        else:
            yield from tqdm(iterator, total=total, desc="grid_search_cv")
            return
    for i, item in enumerate(iterator, 1):
        logger.info("grid_search_cv: %d/%d fits done", i, total)
        yield item


def grid_search_cv(
    estimator,
    X,
    param_grid,
    *,
    cv=5,
    truth=None,
    min_zero_fraction=0.5,
    sparse_indices=(1, 2),
    n_jobs=None,
    progress=False,
):
    """K-fold grid search for sparse PCA with the paper's criteria.

    For each parameter setting and each fold, a clone of ``estimator`` is fitted
    on the training part; the held-out :func:`reconstruction_error`, the
    fraction of exact zeros per component and (with ``truth``)
    :func:`mse_to_truth` are recorded; the stability of the loadings across
    folds is the mean :func:`pairwise_dice`. The best setting has the lowest
    mean test error among those that pass :func:`sparsity_rule` on every fold
    (as in section III of the paper); if none pass, the lowest error overall
    (``best_passes_sparsity`` is then False).

    The ``n_settings * n_folds`` fits are independent and run through
    :class:`joblib.Parallel`, so the same call uses a dask.distributed cluster
    inside ``with joblib.parallel_config(backend="dask"):`` (results are those
    of the serial run: each fit is deterministic and results are gathered in
    submission order).

    Parameters
    ----------
    estimator : estimator
        E.g. :class:`neurospca.SPCATV` (with its ``operator``) or
        :class:`sklearn.decomposition.SparsePCA`; must expose ``components_``
        after fit (and ``mean_``, else the data are assumed centred).
    X : array-like of shape (n_samples, n_features)
    param_grid : dict or list of dicts
        As for :class:`sklearn.model_selection.ParameterGrid`, e.g.
        ``{"alpha": [...], "l1_ratio": [...], "tv_ratio": [...]}``.
    cv : int, cross-validation splitter or iterable, default=5
        As for scikit-learn (an int is an unshuffled ``KFold``).
    truth : array-like of shape (n_true, n_features), optional
        Ground-truth loadings: adds ``mean_mse`` to the table.
    min_zero_fraction : float, default=0.5
    sparse_indices : sequence of int, default=(1, 2)
        The sparsity rule's components (0-based): the paper's 2nd and 3rd.
    n_jobs : int, optional
        Number of joblib workers (None: the active joblib configuration).
    progress : bool, default=False
        Show a tqdm progress bar (if installed). Finished fits are always
        logged at INFO level on the ``"neurospca"`` logger.

    Returns
    -------
    results : dict
        ``params`` (list of dicts), ``mean_test_error``, ``std_test_error``,
        ``fold_test_error`` (n_settings, n_folds), ``mean_dice``,
        ``min_zero_fraction`` (smallest zero fraction over the rule's
        components and folds), ``passes_sparsity``, ``mean_fit_time``,
        ``mean_mse`` (if ``truth``), ``components`` (per setting, a list of
        per-fold arrays), ``best_index``, ``best_params``,
        ``best_passes_sparsity``. :func:`format_grid_table` prints it.
    """
    X = check_matrix(X, "X")
    if truth is not None:
        truth = check_matrix(truth, "truth", X.shape[1])
    sparse_indices = check_sparsity_rule(min_zero_fraction, sparse_indices)
    if not hasattr(estimator, "fit") or not hasattr(estimator, "get_params"):
        raise TypeError(f"estimator must be a scikit-learn estimator, got {estimator!r}.")
    params = list(ParameterGrid(param_grid))
    if not params:
        raise ValueError("param_grid is empty.")
    for p in params:  # fail early on a misspelt parameter
        clone(estimator).set_params(**p)
    folds = list(check_cv(cv).split(X))
    if len(folds) < 2:
        raise ValueError(f"cv must give at least 2 folds, got {len(folds)}.")
    tasks = [(i, f) for i in range(len(params)) for f in range(len(folds))]
    logger.info(
        "grid_search_cv: %d settings x %d folds = %d fits", len(params), len(folds), len(tasks)
    )
    parallel = Parallel(n_jobs=n_jobs, return_as="generator")
    gen = parallel(
        delayed(_fit_and_score)(estimator, params[i], X, folds[f][0], folds[f][1], truth)
        for i, f in tasks
    )
    outs = list(_progress(gen, len(tasks), progress))

    n_set, n_fold = len(params), len(folds)
    err = np.array([o["test_error"] for o in outs]).reshape(n_set, n_fold)
    comps = [[outs[i * n_fold + f]["components"] for f in range(n_fold)] for i in range(n_set)]
    zero = [[outs[i * n_fold + f]["zero_fraction"] for f in range(n_fold)] for i in range(n_set)]
    rule_rows = lambda z: [z[k] for k in sparse_indices if k < len(z)]  # noqa: E731
    min_zero = np.array([min(min(rule_rows(z), default=1.0) for z in zs) for zs in zero])
    passes = min_zero >= min_zero_fraction
    dice = np.array([pairwise_dice(c).mean() for c in comps])
    results = {
        "params": params,
        "mean_test_error": err.mean(axis=1),
        "std_test_error": err.std(axis=1),
        "fold_test_error": err,
        "mean_dice": dice,
        "min_zero_fraction": min_zero,
        "passes_sparsity": passes,
        "mean_fit_time": np.array([o["fit_time"] for o in outs]).reshape(n_set, n_fold).mean(1),
        "components": comps,
    }
    if truth is not None:
        results["mean_mse"] = np.array([o["mse"] for o in outs]).reshape(n_set, n_fold).mean(1)
    candidates = np.flatnonzero(passes) if passes.any() else np.arange(n_set)
    best = int(candidates[np.argmin(results["mean_test_error"][candidates])])
    results["best_index"] = best
    results["best_params"] = params[best]
    results["best_passes_sparsity"] = bool(passes[best])
    return results


def format_grid_table(results, float_format="{:.4g}"):
    """The table of :func:`grid_search_cv` as aligned plain text.

    One row per setting: its parameters, mean and standard deviation of the
    test error, mean pairwise Dice, smallest zero fraction, sparsity rule,
    mean MSE (if computed); the selected row is marked with ``*``.

    Parameters
    ----------
    results : dict
        What :func:`grid_search_cv` returned.
    float_format : str, default="{:.4g}"
        Format of the floating-point cells (:meth:`str.format` syntax).

    Returns
    -------
    str
        The table, one line per setting under a header line.
    """
    keys = sorted({k for p in results["params"] for k in p})
    cols = keys + ["test_error", "std", "dice", "min_zeros", "sparse"]
    has_mse = "mean_mse" in results
    if has_mse:
        cols.append("mse")
    rows = []
    for i, p in enumerate(results["params"]):
        row = [
            float_format.format(p[k]) if isinstance(p.get(k), float) else str(p.get(k, ""))
            for k in keys
        ]
        row += [
            float_format.format(results["mean_test_error"][i]),
            float_format.format(results["std_test_error"][i]),
            float_format.format(results["mean_dice"][i]),
            float_format.format(results["min_zero_fraction"][i]),
            "yes" if results["passes_sparsity"][i] else "no",
        ]
        if has_mse:
            row.append(float_format.format(results["mean_mse"][i]))
        rows.append(("*" if i == results["best_index"] else " ", row))
    widths = [max(len(c), *(len(r[j]) for _, r in rows)) for j, c in enumerate(cols)]
    lines = ["  " + "  ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True))]
    for mark, r in rows:
        lines.append(mark + " " + "  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)))
    return "\n".join(lines)
