"""Model selection for sparse PCA: the SPCA-TV paper's criteria (section III).

- :func:`reconstruction_error`: held-out Frobenius reconstruction error
  (Tables I, II and IV of the paper); :func:`neg_reconstruction_error` is the
  same as a scikit-learn scorer (``GridSearchCV(..., scoring=...)``).
- :func:`dice_index`, :func:`pairwise_dice`: stability of the loading supports
  across folds or data sets, after matching the components.
- :func:`match_components`, :func:`mse_to_truth`: comparison with a ground
  truth after matching, sign and scale alignment.
- :func:`sparsity_rule`: at least half zeros in components 2 and 3.
- :func:`sign_permutation_test`: the paper's sign-flip permutation p-value.
- :func:`grid_search_cv`: K-fold grid over estimator parameters, e.g.
  ``(alpha, l1_ratio, tv_ratio)``, parallel through joblib, so that
  ``joblib.parallel_config(backend="dask")`` runs it on a dask cluster.
"""

import logging
import numbers
import time
import warnings

import numpy as np
from joblib import Parallel, delayed
from scipy.optimize import linear_sum_assignment
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid, check_cv

from .decomposition import reconstruction_error
from .decomposition._base import _as_2d, _components_of

logger = logging.getLogger("neurospca")

__all__ = [
    "reconstruction_error",
    "neg_reconstruction_error",
    "dice_index",
    "pairwise_dice",
    "match_components",
    "mse_to_truth",
    "sparsity_rule",
    "sign_permutation_test",
    "grid_search_cv",
    "format_grid_table",
    "select_penalty",
    "PenaltySelection",
    "one_se_refit",
    "dice_to_truth",
    "corrected_stability",
]


# --------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------


def neg_reconstruction_error(estimator, X, y=None):
    """Scorer for scikit-learn tools: minus :func:`reconstruction_error`.

    Has the ``scorer(estimator, X, y)`` signature that
    :class:`sklearn.model_selection.GridSearchCV` and
    :func:`sklearn.model_selection.cross_val_score` accept as ``scoring``
    (greater is better, hence the minus sign). Works with any fitted
    estimator exposing ``components_`` and ``mean_`` (SPCATV, SparsePCA,
    PCA).

    Parameters
    ----------
    estimator : fitted estimator
    X : array-like of shape (n_samples, n_features)
    y : ignored

    Returns
    -------
    float
    """
    return -reconstruction_error(X, estimator)


# --------------------------------------------------------------------------
# supports, Dice, matching
# --------------------------------------------------------------------------


def _support(v, threshold):
    return np.abs(v) > threshold


def dice_index(a, b, threshold=0.0):
    """Dice index of the supports of two loading vectors.

    .. math::

        D(a, b) = \\frac{2 |S_a \\cap S_b|}{|S_a| + |S_b|}, \\qquad
        S_a = \\{ j : |a_j| > t \\}

    Signs are ignored (a loading and its negative have the same support).
    Two empty supports give 1 (they agree); one empty support gives 0.

    Parameters
    ----------
    a, b : array-like of shape (n_features,)
    threshold : float, default=0.0
        ``t``: entries with ``|a_j| <= t`` are outside the support.

    Returns
    -------
    float in [0, 1]
    """
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same size, got {a.size} and {b.size}.")
    if not threshold >= 0:
        raise ValueError(f"threshold must be >= 0, got {threshold!r}.")
    sa, sb = _support(a, threshold), _support(b, threshold)
    denom = int(sa.sum()) + int(sb.sum())
    if denom == 0:
        return 1.0
    return 2.0 * int((sa & sb).sum()) / denom


def _abs_corr(A, B):
    """|cosine| between the rows of A and of B (rows need not be centred).

    The loadings are compared as vectors (uncentred correlation, i.e. the
    cosine), which is what matters for supports and spans. Zero rows have
    similarity 0 with everything.
    """
    na = np.linalg.norm(A, axis=1)
    nb = np.linalg.norm(B, axis=1)
    na = np.where(na > 0, na, np.inf)
    nb = np.where(nb > 0, nb, np.inf)
    return np.abs((A / na[:, None]) @ (B / nb[:, None]).T)


def match_components(reference, components):
    """Match components to reference components (order and sign).

    The assignment maximises the sum of the absolute cosines
    ``|<r_i, c_j>| / (||r_i|| ||c_j||)`` over permutations (Hungarian
    algorithm, :func:`scipy.optimize.linear_sum_assignment`), so a component
    found in another order, or with the opposite sign, is paired with its
    counterpart.

    Parameters
    ----------
    reference : array-like of shape (n_ref, n_features) or estimator
    components : array-like of shape (n_components, n_features) or estimator

    Returns
    -------
    order : ndarray of int, shape (min(n_ref, n_components),)
        ``components[order[i]]`` is matched to ``reference[i]``.
    signs : ndarray of shape (min(n_ref, n_components),)
        +1 or -1: ``signs[i] * components[order[i]]`` has a non-negative inner
        product with ``reference[i]``.
    similarity : ndarray of shape (min(n_ref, n_components),)
        The absolute cosines of the matched pairs.
    """
    R = _components_of(reference, "reference")
    C = _as_2d(_components_of(components), "components", R.shape[1])
    sim = _abs_corr(R, C)
    rows, cols = linear_sum_assignment(-sim)
    # rows come sorted when n_ref <= n_components; keep the reference order
    order = np.empty(len(rows), dtype=int)
    order[rows] = cols
    n = len(rows)
    signs = np.sign(np.einsum("ij,ij->i", R[:n], C[order]))
    signs[signs == 0] = 1.0
    return order, signs, sim[np.arange(n), order]


def pairwise_dice(components_list, threshold=0.0, match=True):
    """Pairwise Dice indices between loadings fitted on different folds.

    For every pair ``(i, j)``, ``i < j``, of fits, the components of fit
    ``j`` are matched to those of fit ``i`` with :func:`match_components`
    (unless ``match=False``: then component k is paired with component k) and
    the Dice index (:func:`dice_index`) of each matched pair of supports is
    computed. The paper's stability score is the mean of these values.

    Parameters
    ----------
    components_list : list of array-like (n_components, n_features) or estimators
        At least two fits.
    threshold : float, default=0.0
        Support threshold, see :func:`dice_index`.
    match : bool, default=True

    Returns
    -------
    dice : ndarray of shape (n_pairs, n_components)
        Rows in the order ``(0, 1), (0, 2), ..., (1, 2), ...``; ``n_pairs =
        n_fits (n_fits - 1) / 2``. ``dice.mean()`` is the mean pairwise Dice.
    """
    comps = [_components_of(c, f"components_list[{i}]") for i, c in enumerate(components_list)]
    if len(comps) < 2:
        raise ValueError(f"components_list needs at least 2 fits, got {len(comps)}.")
    shape = comps[0].shape
    for i, c in enumerate(comps):
        if c.shape != shape:
            raise ValueError(
                f"components_list[{i}] has shape {c.shape}, expected {shape} (all fits "
                "must have the same number of components and features)."
            )
    rows = []
    for i in range(len(comps)):
        for j in range(i + 1, len(comps)):
            order = match_components(comps[i], comps[j])[0] if match else np.arange(shape[0])
            rows.append([dice_index(comps[i][k], comps[j][order[k]], threshold)
                         for k in range(shape[0])])
    return np.asarray(rows)


def mse_to_truth(components, truth):
    """Squared error between estimated and true loadings, after alignment.

    Components are matched to the true patterns with
    :func:`match_components`, both are scaled to unit Euclidean norm and the
    estimate's sign is aligned with the truth; the score is the mean over
    the true components of the squared distance,

    .. math::

        \\mathrm{MSE} = \\frac1K \\sum_k \\left\\| \\frac{t_k}{\\|t_k\\|}
        - s_k \\frac{c_{\\pi(k)}}{\\|c_{\\pi(k)}\\|} \\right\\|_2^2
        = \\frac1K \\sum_k 2 (1 - |\\cos(t_k, c_{\\pi(k)})|),

    in [0, 2] (0: perfect recovery; a zero component scores 2). It is
    invariant to the order, sign and scale of the components, which no
    sparse PCA method identifies.

    Parameters
    ----------
    components : array-like of shape (n_components, n_features) or estimator
    truth : array-like of shape (n_true, n_features)
        ``n_true <= n_components``.

    Returns
    -------
    float
    """
    T = _as_2d(truth, "truth")
    C = _as_2d(_components_of(components), "components", T.shape[1])
    if C.shape[0] < T.shape[0]:
        raise ValueError(
            f"components has {C.shape[0]} rows, fewer than truth ({T.shape[0]})."
        )
    if np.any(np.linalg.norm(T, axis=1) == 0):
        raise ValueError("truth has a zero row: every true pattern must be non-zero.")
    order, _, sim = match_components(T, C)
    return float(np.mean(2.0 * (1.0 - sim)))


def sparsity_rule(components, indices=(1, 2), min_zero_fraction=0.5):
    """The paper's sparsity criterion: enough exact zeros in some components.

    Section III: "at least half of the features of the second and third
    components have to be zero" (``indices=(1, 2)``, 0-based). Indices past
    the number of components are ignored.

    Parameters
    ----------
    components : array-like of shape (n_components, n_features) or estimator
    indices : sequence of int, default=(1, 2)
    min_zero_fraction : float, default=0.5

    Returns
    -------
    bool
    """
    C = _components_of(components)
    if not 0 <= min_zero_fraction <= 1:
        raise ValueError(f"min_zero_fraction must be in [0, 1], got {min_zero_fraction!r}.")
    rows = [k for k in indices if k < C.shape[0]]
    return bool(all(np.mean(C[k] == 0) >= min_zero_fraction for k in rows))


def sign_permutation_test(differences, n_permutations=1000, random_state=0):
    """Sign-flip permutation test of a mean paired difference (two-sided).

    Under the null, each difference is as likely positive as negative; the
    signs are flipped at random ``n_permutations`` times and the p-value is

    .. math::

        p = \\frac{1 + \\#\\{b : |\\bar d^{(b)}| \\ge |\\bar d|\\}}{1 + B}.

    This is how the paper tests Dice differences (section III), since the
    pairwise Dice values are not independent.

    Parameters
    ----------
    differences : array-like of shape (n,)
    n_permutations : int, default=1000
    random_state : int, default=0

    Returns
    -------
    statistic : float
        The observed mean difference.
    pvalue : float
    """
    d = np.asarray(differences, dtype=np.float64).ravel()
    if d.size == 0 or not np.all(np.isfinite(d)):
        raise ValueError("differences must be a non-empty array of finite values.")
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, numbers.Integral) \
            or n_permutations < 1:
        raise ValueError(f"n_permutations must be an int >= 1, got {n_permutations!r}.")
    rng = np.random.default_rng(random_state)
    observed = float(d.mean())
    signs = rng.choice(np.array([-1.0, 1.0]), size=(int(n_permutations), d.size))
    null = (signs * d).mean(axis=1)
    count = int(np.sum(np.abs(null) >= abs(observed) - 1e-12 * max(abs(observed), 1.0)))
    return observed, (1.0 + count) / (1.0 + n_permutations)


# --------------------------------------------------------------------------
# grid search
# --------------------------------------------------------------------------


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
            logger.info("tqdm is not installed: progress is logged instead "
                        "(pip install tqdm for a progress bar).")
        else:
            yield from tqdm(iterator, total=total, desc="grid_search_cv")
            return
    for i, item in enumerate(iterator, 1):
        logger.info("grid_search_cv: %d/%d fits done", i, total)
        yield item


def grid_search_cv(estimator, X, param_grid, *, cv=5, truth=None, min_zero_fraction=0.5,
                   sparse_indices=(1, 2), n_jobs=None, progress=False):
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
    X = _as_2d(X, "X")
    if truth is not None:
        truth = _as_2d(truth, "truth", X.shape[1])
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
    logger.info("grid_search_cv: %d settings x %d folds = %d fits",
                len(params), len(folds), len(tasks))
    parallel = Parallel(n_jobs=n_jobs, return_as="generator")
    gen = parallel(delayed(_fit_and_score)(estimator, params[i], X, folds[f][0],
                                           folds[f][1], truth)
                   for i, f in tasks)
    outs = list(_progress(gen, len(tasks), progress))

    n_set, n_fold = len(params), len(folds)
    err = np.array([o["test_error"] for o in outs]).reshape(n_set, n_fold)
    comps = [[outs[i * n_fold + f]["components"] for f in range(n_fold)] for i in range(n_set)]
    zero = [[outs[i * n_fold + f]["zero_fraction"] for f in range(n_fold)] for i in range(n_set)]
    rule_rows = lambda z: [z[k] for k in sparse_indices if k < len(z)]  # noqa: E731
    min_zero = np.array([min((min(rule_rows(z), default=1.0) for z in zs)) for zs in zero])
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

    Returns
    -------
    str
    """
    keys = sorted({k for p in results["params"] for k in p})
    cols = keys + ["test_error", "std", "dice", "min_zeros", "sparse"]
    has_mse = "mean_mse" in results
    if has_mse:
        cols.append("mse")
    rows = []
    for i, p in enumerate(results["params"]):
        row = [float_format.format(p[k]) if isinstance(p.get(k), float) else str(p.get(k, ""))
               for k in keys]
        row += [float_format.format(results["mean_test_error"][i]),
                float_format.format(results["std_test_error"][i]),
                float_format.format(results["mean_dice"][i]),
                float_format.format(results["min_zero_fraction"][i]),
                "yes" if results["passes_sparsity"][i] else "no"]
        if has_mse:
            row.append(float_format.format(results["mean_mse"][i]))
        rows.append(("*" if i == results["best_index"] else " ", row))
    widths = [max(len(c), *(len(r[j]) for _, r in rows)) for j, c in enumerate(cols)]
    lines = ["  " + "  ".join(c.rjust(w) for c, w in zip(cols, widths))]
    for mark, r in rows:
        lines.append(mark + " " + "  ".join(v.rjust(w) for v, w in zip(r, widths)))
    return "\n".join(lines)


# --------------------------------------------------------------------------
# penalty selection that selects (issue 12)
# --------------------------------------------------------------------------

#: Default grid of :func:`select_penalty` (relative penalties, weakest first).
DEFAULT_ALPHA_REL_GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
SELECTION_RULES = ("weakest_stable", "one_se_stability", "stability", "one_se", "sparsity",
                   "score")
#: ``rule="weakest_stable"``: stability within this fraction of the best.
STABLE_TOLERANCE = 0.1


def corrected_stability(components_list):
    """Chance-corrected pairwise Dice stability of the supports across fits.

    For every pair of fits, after matching (:func:`match_components`), each
    pair of supports with non-zero fractions ``f1, f2`` has Dice ``D`` and
    chance Dice ``E = 2 f1 f2 / (f1 + f2)`` (two random supports of those
    sizes); the corrected value is ``(D - E) / (1 - E)`` (1: identical, 0: as
    random). Dense supports are trivially "stable" under the raw Dice
    (two 95 % supports overlap by chance); the correction removes that.

    Parameters
    ----------
    components_list : list of array-like (n_components, n_features)

    Returns
    -------
    ndarray of shape (n_pairs, n_components)
    """
    comps = [_components_of(c, f"components_list[{i}]") for i, c in enumerate(components_list)]
    if len(comps) < 2:
        raise ValueError(f"components_list needs at least 2 fits, got {len(comps)}.")
    rows = []
    for i in range(len(comps)):
        for j in range(i + 1, len(comps)):
            order = match_components(comps[i], comps[j])[0]
            row = []
            for k in range(len(order)):
                a, b = comps[i][k] != 0, comps[j][order[k]] != 0
                f1, f2 = a.mean(), b.mean()
                if f1 + f2 == 0:
                    row.append(0.0)
                    continue
                d = dice_index(comps[i][k], comps[j][order[k]])
                e = 2.0 * f1 * f2 / (f1 + f2)
                row.append((d - e) / (1.0 - e) if e < 1 else 0.0)
            rows.append(row)
    return np.asarray(rows)


def dice_to_truth(components, truth, threshold=0.0):
    """Mean Dice index between matched estimated and true supports.

    Components are matched to the true patterns with :func:`match_components`;
    the support of a true pattern is its non-zero entries.

    Returns
    -------
    float in [0, 1]
    """
    T = _as_2d(truth, "truth")
    C = _as_2d(_components_of(components), "components", T.shape[1])
    order = match_components(T, C)[0]
    return float(np.mean([dice_index(C[order[k]], T[k], threshold)
                          for k in range(len(order))]))


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
        """The results as aligned plain text (the chosen row marked ``*``)."""
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
    from sklearn.model_selection import KFold

    X = _as_2d(X, "X")
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
        truth = _as_2d(truth, "truth", X.shape[1])
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
