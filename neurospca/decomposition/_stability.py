"""Split-half stability of a decomposition, and the penalty it chooses (issue 20).

A component a researcher can trust comes back when the study is repeated. The
closest a single data set gets is to split its samples in two halves, fit each
half with the same settings and compare the components: the matched absolute
correlation of the loadings (Hungarian matching, as in Groves et al. and the
split-half reproducibility of nilearn's decomposition examples).

- :func:`split_halves` draws the halves (random rows for arrays; even and odd
  rows for memmaps and dask arrays, which stay views, never copies);
- :func:`matched_abs_corr` pairs the components of two fits;
- :func:`component_stability` gives each component of a full fit the split-half
  reproducibility of the pair of half components it matches;
- :func:`choose_alpha_rel` chooses along one split's path, :func:`choose_point`
  across the splits searched (:data:`AUTO_SPLITS`): the rule of
  ``SPCATV(alpha_rel="auto")``; :func:`split_search` fits one split's
  halves along its path, :func:`auto_path` and :func:`auto_fit` drive them.
"""

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.utils import check_random_state

#: Components whose split-half reproducibility is below this are flagged
#: (a warning, the report) as not reproducible.
STABILITY_THRESHOLD = 0.5


def split_halves(X, random_state=None):
    """Two disjoint halves of the rows of ``X``.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask.array of shape (n_samples, n_features)
    random_state : int, RandomState or None
        Seed of the random halves of an in-memory array.

    Returns
    -------
    XA, XB : array-like
        Random halves (``floor(N / 2)`` rows each) of an ndarray; the even and
        the odd rows of a memmap or a dask array (strided views, no copy).
    """
    from ._data import is_out_of_core

    if is_out_of_core(X):
        return X[0::2], X[1::2]
    X = np.asarray(X)
    idx = check_random_state(random_state).permutation(X.shape[0])
    h = X.shape[0] // 2
    return X[np.sort(idx[:h])], X[np.sort(idx[h : 2 * h])]


def _abs_corr(A, B):
    """absolute correlation between the rows of ``A`` and of ``B`` (0 for a constant row)."""
    Ac = A - A.mean(axis=1, keepdims=True)
    Bc = B - B.mean(axis=1, keepdims=True)
    na = np.linalg.norm(Ac, axis=1, keepdims=True)
    nb = np.linalg.norm(Bc, axis=1, keepdims=True)
    Ac = np.divide(Ac, na, out=np.zeros_like(Ac), where=na > 0)
    Bc = np.divide(Bc, nb, out=np.zeros_like(Bc), where=nb > 0)
    return np.abs(Ac @ Bc.T)


def matched_abs_corr(A, B):
    """Match the rows of two component matrices by absolute correlation (Hungarian).

    Parameters
    ----------
    A, B : ndarray of shape (n_components, n_features)

    Returns
    -------
    match : ndarray of int, shape (n_components,)
        ``B[match[k]]`` is the row matched to ``A[k]``.
    corr : ndarray of shape (n_components,)
        ``|corr(A[k], B[match[k]])|``; 0 where either row is empty.
    """
    C = _abs_corr(np.asarray(A, float), np.asarray(B, float))
    rows, cols = linear_sum_assignment(-C)
    match = np.empty(C.shape[0], dtype=int)
    match[rows] = cols
    return match, C[rows, cols][np.argsort(rows)]


def component_stability(components, half_a, half_b):
    """Split-half reproducibility of each component of a full fit.

    Component ``k`` is matched to a component of half A (Hungarian on
    absolute correlation); its stability is the absolute correlation between
    that half-A component and the half-B component matched to it. An empty component scores 0.

    Parameters
    ----------
    components : ndarray of shape (n_components, n_features)
        The full fit's components.
    half_a, half_b : ndarray of shape (n_components, n_features)
        The components of the fits on the two halves.

    Returns
    -------
    ndarray of shape (n_components,), in [0, 1]
    """
    to_a, _ = matched_abs_corr(components, half_a)
    _, ab = matched_abs_corr(half_a, half_b)
    stab = ab[to_a]
    stab[~np.any(np.asarray(components) != 0, axis=1)] = 0.0
    return np.clip(stab, 0.0, 1.0)


def choose_alpha_rel(path):
    """The rule of ``alpha_rel="auto"`` on a path of split-half fits.

    Parameters
    ----------
    path : list of dict
        Per ``alpha_rel``: ``"alpha_rel"``, ``"reproducibility"`` (split-half
        matched absolute correlation per component pair),
        ``"nonzero_fraction"`` (per component of both halves).

    Returns
    -------
    int
        Index into ``path`` of the chosen point: the highest mean split-half
        reproducibility among the admissible points (every component of both
        halves non-empty and at most :data:`MAX_NONZERO` non-zero; all points
        if none is admissible); an exact tie goes to the stronger penalty.
    """
    score = np.array([np.mean(p["reproducibility"]) for p in path])
    ok = np.array(
        [
            np.all(p["nonzero_fraction"] > 0) and np.all(p["nonzero_fraction"] <= MAX_NONZERO)
            for p in path
        ]
    )
    if not ok.any():
        ok[:] = True
    strength = np.array([p["alpha_rel"] for p in path])
    candidates = np.flatnonzero(ok & (score == np.max(score[ok])))
    return int(candidates[np.argmax(strength[candidates])])


#: An admissible point of the automatic path has every component at most this
#: fraction non-zero (a component that covers most of the brain is not a region).
MAX_NONZERO = 0.5

#: Most back-fitting sweeps of a half fit (``method="joint"``): the selection
#: compares penalties, it does not need the last digits.
HALF_MAX_SWEEPS = 15

#: The documented fixed split ``(l1_ratio, tv_ratio)``: what ``l1_ratio="auto"``
#: and ``tv_ratio="auto"`` mean when the split is not searched.
DEFAULT_SPLIT = (0.05, 0.1)
#: The path of relative penalties of a fixed split under ``alpha_rel="auto"``.
AUTO_ALPHA_REL_PATH = (0.5, 1.0, 2.0, 4.0, 8.0)
#: The splits searched by ``alpha_rel="auto"`` when ``l1_ratio`` and
#: ``tv_ratio`` are "auto": ``(split, its path)``. The sparse split puts more
#: of ``alpha`` on l1 and TV, so its path is weaker.
AUTO_SPLITS = (
    (DEFAULT_SPLIT, AUTO_ALPHA_REL_PATH),
    ((0.3, 0.3), (0.125, 0.25, 0.5, 1.0, 2.0, 4.0)),
)
#: A split's path stops after a point that reproduces worse than an earlier
#: admissible point which reproduced at least this (:func:`split_search`).
STOP_REPRODUCIBILITY = 0.9
#: A split other than the first one searched is chosen only when its best
#: point is more reproducible by more than this (mean matched |corr|).
SPLIT_MARGIN = 0.02
#: The other splits are searched only when the first split's best point
#: reproduces below this (mean matched |corr|): they are the fallback for a
#: default split whose components do not reproduce. Measured (benchmarks/
#: RESULTS.md, issue 20 round 4): the sparse split won only where the default
#: split's best was 0.64-0.82; where it was 0.96-0.97 (four instances) the
#: sparse split reached at most 0.97 and its walk was 30-70 % of the fit's
#: time. (Before: ``1 - SPLIT_MARGIN``, where no other split can win.)
OTHER_SPLITS_BELOW = 0.95


def _half_models(estimator):
    """Two clones of ``estimator`` for the halves: warm-started, no stability, no
    certified support, at most :data:`HALF_MAX_SWEEPS` sweeps, marked ``_half_fit``
    (one scan per half, no diagnostics: ``_spcatv._data_operator``)."""
    from sklearn.base import clone

    sweeps = min(estimator.max_sweeps, HALF_MAX_SWEEPS)
    keep = dict(stability=False, warm_start=True, verbose=0, max_sweeps=sweeps)
    models = [clone(estimator).set_params(certify_support=False, **keep) for _ in range(2)]
    for m in models:
        m._half_fit = True
    return models


def _fit_point(models, halves, params, n_jobs=1):
    """Both halves fitted at ``params`` (each warm-started from its previous fit),
    on two threads when ``n_jobs`` >= 2 (the same arithmetic as one after the
    other: each half has its own model, data and kernels' thread count)."""
    import warnings
    from concurrent.futures import ThreadPoolExecutor

    def fit(i):
        return models[i].set_params(**params).fit(halves[i]).components_.copy()

    # one warnings context around both threads: the fits' own contexts may
    # interleave (not thread-safe before Python 3.14); this one restores the
    # process's filters once both are done
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if n_jobs >= 2:
            with ThreadPoolExecutor(2) as pool:
                comps = list(pool.map(fit, range(2)))
        else:
            comps = [fit(0), fit(1)]
    _, corr = matched_abs_corr(*comps)
    return dict(
        params,
        components=tuple(comps),
        reproducibility=corr,
        nonzero_fraction=np.concatenate([np.mean(c != 0, axis=1) for c in comps]),
    )


def _all_empty(point):
    return bool(np.all(point["nonzero_fraction"] == 0))


def fit_halves(estimator, X, settings, random_state=None):
    """Fit the two halves of ``X`` at each of a sequence of settings (warm-started).

    Parameters
    ----------
    estimator : SPCATV
        Its settings are copied (``clone``); each half is fitted with
        ``stability=False`` and each entry of ``settings`` in turn,
        warm-started from the previous one (scores and dual variables).
    X : array-like, numpy.memmap or dask.array
        The training data (not centred: each half is centred on its own mean).
    settings : sequence of dict
        Parameters to set for each point, e.g.
        ``[{"alpha": None, "alpha_rel": a} for a in (1, 2, 4)]``.
    random_state : int, RandomState or None
        Seed of the halves (:func:`split_halves`); None means 0, so that
        default fits are reproducible.

    Returns
    -------
    list of dict
        Per point (the path stops after a point where every component of
        both halves is empty): its settings, ``"components"`` (a pair of
        arrays, the halves' ``components_``), ``"reproducibility"`` (matched
        absolute correlation per pair), ``"nonzero_fraction"`` (per component
        of both halves).
    """
    # None: a fixed seed, so that a default fit gives the same model every time
    halves = split_halves(X, 0 if random_state is None else random_state)
    models = _half_models(estimator)
    n_jobs = half_jobs(estimator, X)
    path = []
    for params in settings:
        if path and _all_empty(path[-1]):
            break  # every half component empty: stronger penalties only empty more
        path.append(_fit_point(models, halves, params, n_jobs))
    return path


def half_jobs(estimator, X):
    """Threads for the two halves of a path point: 2 when the estimator may use
    at least two cores (``n_threads``) and ``X`` is in memory (a memmap or dask
    array is read by one fit at a time), else 1. Each half keeps the kernels'
    thread count of a sequential fit, so that its arithmetic (and therefore
    the choice of ``alpha_rel="auto"``) does not depend on this."""
    from ..solvers import resolve_n_threads
    from ._data import is_out_of_core

    return 2 if resolve_n_threads(estimator.n_threads) >= 2 and not is_out_of_core(X) else 1


def _split_of(point):
    return point.get("l1_ratio"), point.get("tv_ratio")


def _admissible(point):
    nz = point["nonzero_fraction"]
    return bool(np.all(nz > 0) and np.all(nz <= MAX_NONZERO))


def _has_empty(point):
    return bool(np.any(point["nonzero_fraction"] == 0))


def split_search(models, halves, split, alpha_rels, n_jobs=1):
    """One split of the penalty: its halves along its path, weakest first.

    Each point is warm-started from the previous one (a start from the
    weaker, denser point keeps co-varying regions apart: started cold in the
    middle of the path, the halves of a severity-correlated cohort settled on
    merged components, benchmarks/RESULTS.md, issue 20 round 3). The path
    stops after the first point with an empty half component (it is not
    admissible, and stronger penalties only empty more), and after the first
    point that reproduces worse than an earlier admissible point which
    reproduced at least :data:`STOP_REPRODUCIBILITY` (:func:`_past_best`;
    below that, reproducibility along the path is not monotone: measured
    0.55, 0.23, 0.65 along one split and 0.65, 0.50, 0.28, 0.99 along the other
    on one cohort).

    Parameters
    ----------
    models : list of two SPCATV
        :func:`_half_models`.
    halves : tuple of two arrays
    split : (float, float)
        ``(l1_ratio, tv_ratio)``.
    alpha_rels : sequence of float
        The split's path, weakest first.
    n_jobs : int
        Threads for the two halves of a point (:func:`half_jobs`).

    Returns
    -------
    list of dict
        :func:`fit_halves`' records with ``l1_ratio`` and ``tv_ratio``,
        weakest first.
    """
    base = {"l1_ratio": float(split[0]), "tv_ratio": float(split[1])}
    points = []
    for a in alpha_rels:
        if points and (_has_empty(points[-1]) or _past_best(points)):
            break
        points.append(_fit_point(models, halves, dict(base, alpha_rel=float(a)), n_jobs))
    return points


def _past_best(points):
    """True when the last point reproduces worse than the best admissible point
    before it and that one reproduced at least :data:`STOP_REPRODUCIBILITY`."""
    score = [float(np.mean(p["reproducibility"])) for p in points]
    best = [score[i] for i, p in enumerate(points[:-1]) if _admissible(p)]
    return bool(best) and max(best) >= STOP_REPRODUCIBILITY and score[-1] < max(best)


def _standard_error(point):
    """Standard error of a point's mean reproducibility over its components
    (sample standard deviation / sqrt(K); 0 for one component)."""
    r = np.asarray(point["reproducibility"], float)
    return float(np.std(r, ddof=1) / np.sqrt(r.size)) if r.size > 1 else 0.0


def choose_least_shrunk(path):
    """The default fit's rule on one split's path: the least shrunk point that
    reproduces within one standard error of the best (issue 20, round 5).

    The most reproducible admissible point (:func:`choose_alpha_rel`) is the
    reference. A point's mean reproducibility over its components has the
    standard error :func:`_standard_error`; a point is *near* the reference
    when its mean is at least the reference's minus the standard error of
    the difference of the two means (``hypot`` of the two errors: the
    components of two points are not paired). Among the admissible near
    points the weakest penalty is chosen, the path's first (weakest,
    cold-started) point excepted while another admissible point exists.

    Why (benchmarks/RESULTS.md, issue 20 round 5; docs/trust.rst): the halves
    have half the samples and reproduce best at a penalty that shrinks the
    weakest pattern of the full fit (the most reproducible point merged or lost
    a pattern on 12 of 16 development instances, where a weaker point separated
    every one), and the differences were mostly within the error; the first
    point's half fits never settle (cold start).

    Parameters
    ----------
    path : list of dict
        One split's records (``alpha_rel``, ``reproducibility``,
        ``nonzero_fraction``), weakest first.

    Returns
    -------
    int
        Index into ``path``.
    """
    ref = choose_alpha_rel(path)
    if not _admissible(path[ref]):
        return ref
    best, err = np.mean(path[ref]["reproducibility"]), _standard_error(path[ref])
    near = [
        i
        for i, p in enumerate(path)
        if _admissible(p)
        and np.mean(p["reproducibility"]) >= best - np.hypot(err, _standard_error(p))
    ]
    later = [i for i in near if i > 0]
    return min(later or near, key=lambda i: path[i]["alpha_rel"])


def choose_point(path):
    """The rule of ``alpha_rel="auto"`` over one or several splits of the penalty.

    Each split's point is :func:`choose_least_shrunk` of its own points (the
    least shrunk point within one standard error of the split's most
    reproducible admissible point). The first split (the documented default,
    ``(0.05, 0.1)``) is kept unless another split's best point (the most
    reproducible admissible one) is more reproducible than the first
    split's best by more than :data:`SPLIT_MARGIN` and by more than the
    standard error of the first split's best (or the first split has no
    admissible point and another has): differences within that error are
    not evidence (issue 20 round 5). Among the other splits the most
    reproducible best point wins.

    Parameters
    ----------
    path : list of dict
        Records with ``alpha_rel``, ``l1_ratio``, ``tv_ratio``,
        ``reproducibility``, ``nonzero_fraction``; a split's records are
        contiguous, the first split's first.

    Returns
    -------
    int
        Index into ``path``.
    """
    groups = {}
    for i, p in enumerate(path):
        groups.setdefault(_split_of(p), []).append(i)
    best = []
    for idx in groups.values():
        points = [path[i] for i in idx]
        j = idx[choose_alpha_rel(points)]
        best.append((idx, _admissible(path[j]), float(np.mean(path[j]["reproducibility"])), j))
    chosen, ok, score, j0 = best[0]
    margin = max(SPLIT_MARGIN, _standard_error(path[j0]))
    others = sorted((b for b in best[1:] if b[1]), key=lambda b: -b[2])  # admissible ones
    for idx, _, score_j, _ in others[:1]:
        if not ok or score_j > score + margin:
            chosen = idx
    return chosen[choose_least_shrunk([path[i] for i in chosen])]


def _unbeatable(path):
    """True when the first split's best point is admissible and reproduces at
    least :data:`OTHER_SPLITS_BELOW`: its components reproduce, and the other
    splits are not searched (below ``1 - SPLIT_MARGIN`` one could still win in
    principle; on the four measured instances where the default split's best
    reproduced at 0.96-0.97, none did)."""
    first = [p for p in path if _split_of(p) == _split_of(path[0])]
    best = first[choose_alpha_rel(first)]
    return _admissible(best) and np.mean(best["reproducibility"]) >= OTHER_SPLITS_BELOW


def auto_path(estimator, X):
    """``alpha_rel="auto"``: the halves fitted along each searched split (else nothing).

    The halves are drawn once (``random_state``) and shared by every split;
    each split is searched by :func:`split_search` along its own path
    (:func:`searched_splits`). The other splits are not searched when the
    first split's best point already reproduces (:func:`_unbeatable`).

    Returns
    -------
    halves : (ndarray, ndarray) or None
        The two halves' components at the chosen point.
    path : list of dict
        The records of every split (``auto_path_`` once :func:`auto_fit`
        has removed their components), split by split, weakest first.
    """
    from ._alternation import _say

    splits = searched_splits(estimator)
    if not splits:
        return None, []
    seed = 0 if estimator.random_state is None else estimator.random_state
    halves = split_halves(X, seed)
    path = []
    for split, alpha_rels in splits:
        if path and _unbeatable(path):
            break  # the first split's components reproduce: the other splits are a fallback
        path += split_search(
            _half_models(estimator), halves, split, alpha_rels, half_jobs(estimator, X)
        )
    if estimator.verbose:
        for p in path:
            _say(
                "l1_ratio=%g tv_ratio=%g alpha_rel=%g: split-half reproducibility %s, non-zero %s",
                p["l1_ratio"],
                p["tv_ratio"],
                p["alpha_rel"],
                np.array2string(p["reproducibility"], precision=2),
                np.array2string(p["nonzero_fraction"], precision=3),
            )
    return path[choose_point(path)]["components"], path


def fixed_split(l1_ratio, tv_ratio):
    """``(l1_ratio, tv_ratio)`` as numbers: "auto" is the documented default
    (:data:`DEFAULT_SPLIT`) when the split is not searched."""
    return (
        DEFAULT_SPLIT[0] if isinstance(l1_ratio, str) else float(l1_ratio),
        DEFAULT_SPLIT[1] if isinstance(tv_ratio, str) else float(tv_ratio),
    )


def searched_splits(estimator):
    """The splits ``alpha_rel="auto"`` searches: ``[(split, path)]``.

    None searched (an empty list) at a fixed penalty (``alpha`` given or
    ``alpha_rel`` a number). With ``l1_ratio`` and ``tv_ratio`` both "auto":
    :data:`AUTO_SPLITS`; otherwise the one fixed split (an "auto" ratio
    taking its default) along :data:`AUTO_ALPHA_REL_PATH`.
    """
    if estimator.alpha is not None or not isinstance(estimator.alpha_rel, str):
        return []
    if isinstance(estimator.l1_ratio, str) and isinstance(estimator.tv_ratio, str):
        return list(AUTO_SPLITS)
    split = fixed_split(estimator.l1_ratio, estimator.tv_ratio)
    return [(split, AUTO_ALPHA_REL_PATH)]


def auto_fit(path, run, start):
    """The full fit of ``alpha_rel="auto"`` at the chosen point of ``path``.

    The fit starts from the chosen half fit (``start(halves)``: scores, or
    None). The admissibility of :func:`choose_alpha_rel` is checked on the
    halves; the full sample passes more features, so when a returned
    component is more than :data:`MAX_NONZERO` non-zero the next admissible
    point of the same split toward stronger penalties (the most reproducible
    one) is fitted instead, if there is one.

    Parameters
    ----------
    path : list of dict
        :func:`auto_path`'s records; their ``"components"`` are removed here.
    run : callable
        ``run(point, u0)`` fits the full data at a record's ``alpha_rel``,
        ``l1_ratio``, ``tv_ratio``; returns ``(U, V, ...)``.
    start : callable
        ``start((half_a, half_b))``: the start scores ``u0`` of the full fit.

    Returns
    -------
    point : dict
        The record fitted (``alpha_rel``, ``l1_ratio``, ``tv_ratio``).
    halves : (ndarray, ndarray)
        The two halves' components at the point fitted.
    result : tuple
        What ``run`` returned.
    """
    i = choose_point(path)
    while True:
        halves = path[i]["components"]
        result = run(path[i], start(halves))
        stronger = [
            j
            for j in range(i + 1, len(path))
            if _admissible(path[j]) and _split_of(path[j]) == _split_of(path[i])
        ]
        if np.all(np.mean(result[1] != 0, axis=0) <= MAX_NONZERO) or not stronger:
            break
        i = stronger[choose_alpha_rel([path[j] for j in stronger])]
    point = {k: path[i][k] for k in ("alpha_rel", "l1_ratio", "tv_ratio")}
    for p in path:  # keep the summary, not every half's maps
        del p["components"]
    return point, halves, result


def set_stability(estimator, X, halves):
    """Set ``stability_``: from the chosen path point, or two half fits on request.

    NaN when not computed (``stability="auto"`` at a fixed penalty, or
    False); a UserWarning names the non-empty components below
    :data:`STABILITY_THRESHOLD`.
    """
    import warnings

    C = estimator.components_
    if halves is None and estimator.stability is True:
        same = (
            {"alpha": estimator.alpha}
            if estimator.alpha is not None
            else {"alpha_rel": estimator.alpha_rel_}
        )
        same.update(l1_ratio=estimator.l1_ratio_, tv_ratio=estimator.tv_ratio_)
        halves = fit_halves(estimator, X, [same], estimator.random_state)[0]["components"]
    if halves is None:
        estimator.stability_ = np.full(C.shape[0], np.nan)
        return
    estimator.stability_ = component_stability(C, *halves)
    low = np.flatnonzero(np.any(C != 0, axis=1) & (estimator.stability_ < STABILITY_THRESHOLD))
    if low.size:
        warnings.warn(
            f"components {low.tolist()} do not reproduce across split halves "
            f"(stability_ {np.round(estimator.stability_[low], 2).tolist()} < "
            f"{STABILITY_THRESHOLD}): do not interpret them without replication.",
            UserWarning,
            stacklevel=2,
        )


def scores_of(op, components):
    """Unit scores ``Xc c_k / ||Xc c_k||`` of the data on given loadings (a warm
    start of the joint fit from the chosen half fit); None if one is empty."""
    Z = op.matmat(np.asarray(components, dtype=np.float64).T)
    norms = np.linalg.norm(Z, axis=0)
    return None if np.any(norms == 0) else Z / norms
