"""Split-half stability of a decomposition (issue 20).

A component a researcher can trust comes back when the study is repeated. The
closest a single data set gets is to split its samples in two halves, fit each
half with the same settings and compare the components: the matched absolute
correlation of the loadings (Hungarian matching, as in Groves et al. and the
split-half reproducibility of nilearn's decomposition examples).

- :func:`split_halves` draws the halves (random rows for arrays; even and odd
  rows for memmaps and dask arrays, which stay views, never copies; whole
  groups of rows with ``fit``'s ``split_groups``, :mod:`._split_groups`);
- :func:`matched_abs_corr` pairs the components of two fits;
- :func:`component_stability` gives each component of a full fit the split-half
  reproducibility of the pair of half components it matches;
- :func:`fit_halves` fits the halves at a sequence of settings and
  :func:`set_stability` sets a fitted model's ``stability_``.

The penalty ``alpha_rel="auto"`` chooses from these halves lives in
:mod:`._auto`. A series (rows in order alike, e.g. a run's time points, or
near-copies in any order: :func:`is_series`) is scored on halves of contiguous
blocks instead (:func:`series_stability`).

Size: 900+ lines, every resampling behind ``stability_`` (halves, subsamples,
series and their detection, the noise floor) in one place, so that their seeds
and splits stay consistent; and the measure that compares their components
(:func:`_similarity`).
"""

import numbers

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.utils import check_random_state

from .._utils.naming import component_names
from ._split_groups import group_blocks, group_halves, groups_of, permute_groups

#: Components whose split-half reproducibility is below this are flagged
#: (a warning, the report) as not reproducible.
STABILITY_THRESHOLD = 0.5


def split_halves(X, random_state=None, groups=None):
    """Two disjoint halves of the rows of ``X``.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask.array of shape (n_samples, n_features)
    random_state : int, RandomState or None
        Seed of the random halves of an in-memory array (or of the groups).
    groups : ndarray of int of shape (n_samples,), optional
        Row groups (``fit``'s ``split_groups``, validated): each kept in one
        half (:func:`._split_groups.group_halves`).

    Returns
    -------
    XA, XB : array-like
        Random halves (``floor(N / 2)`` rows each) of an ndarray; the even and
        the odd rows of a memmap or a dask array (strided views, no copy);
        with ``groups``, halves of whole groups.
    """
    from ._data import is_out_of_core

    if groups is not None:
        return group_halves(X, groups, random_state)
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
    return _abs_cos(Ac, Bc)


def _abs_cos(A, B):
    """absolute cosine (uncentred) between the rows of ``A`` and of ``B`` (0 for an empty row)."""
    na = np.linalg.norm(A, axis=1, keepdims=True)
    nb = np.linalg.norm(B, axis=1, keepdims=True)
    A = np.divide(A, na, out=np.zeros_like(A), where=na > 0)
    B = np.divide(B, nb, out=np.zeros_like(B), where=nb > 0)
    return np.abs(A @ B.T)


#: A component at least this fraction non-zero is *whole-map*: a signal spread
#: over the whole map (a site or scanner offset, a global signal, an effect of
#: age), not a region (:data:`._auto.WHOLE_MAP`, issue 20 round 14).
WHOLE_MAP = 0.9


def _similarity(A, B):
    """:func:`_abs_corr` between the rows of ``A`` and of ``B``, and the
    uncentred :func:`_abs_cos` between two whole-map rows (:data:`WHOLE_MAP`).

    Centring a whole-map row over the features removes its offset, which is
    most of it: on a simulated three-site cohort the site offset's
    ``stability_`` was 0.07-0.98 (median 0.14), and the default fits of two
    disjoint halves correlated at 0.14-0.22 while their cosine was 1.00
    (benchmarks/RESULTS.md, issue 20 round 15). A sparse row's mean is near
    0, so centring changes little there."""
    S = _abs_corr(A, B)
    both = np.outer(_whole_rows(A), _whole_rows(B))
    if both.any():
        S[both] = _abs_cos(A, B)[both]
    return S


def _whole_rows(A):
    return np.mean(A != 0, axis=1) >= WHOLE_MAP


def matched_abs_corr(A, B, whole_map=False):
    """Match the rows of two component matrices by absolute correlation (Hungarian).

    Parameters
    ----------
    A, B : ndarray of shape (n_components, n_features)
    whole_map : bool, default=False
        Two whole-map rows (at least :data:`WHOLE_MAP` non-zero) are compared
        by their uncentred absolute cosine (:func:`_similarity`), as
        ``stability_`` does.

    Returns
    -------
    match : ndarray of int, shape (n_components,)
        ``B[match[k]]`` is the row matched to ``A[k]``.
    corr : ndarray of shape (n_components,)
        ``|corr(A[k], B[match[k]])|`` (or the absolute cosine of two
        whole-map rows, with ``whole_map``); 0 where either row is empty.
    """
    A, B = np.asarray(A, float), np.asarray(B, float)
    C = _similarity(A, B) if whole_map else _abs_corr(A, B)
    rows, cols = linear_sum_assignment(-C)
    match = np.empty(C.shape[0], dtype=int)
    match[rows] = cols
    return match, C[rows, cols][np.argsort(rows)]


def component_stability(components, half_a, half_b):
    """Split-half reproducibility of each component of a full fit.

    Component ``k`` is matched to a component of half A (Hungarian on
    absolute correlation); its stability is the absolute correlation between
    that half-A component and the half-B component matched to it. An empty
    component scores 0. Two whole-map half components (at least
    :data:`WHOLE_MAP` non-zero) are compared by their uncentred absolute
    cosine (:func:`_similarity`, issue 20 round 15): their correlation
    centres away the offset they share.

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
    to_a, _ = matched_abs_corr(components, half_a, whole_map=True)
    _, ab = matched_abs_corr(half_a, half_b, whole_map=True)
    stab = ab[to_a]
    stab[~np.any(np.asarray(components) != 0, axis=1)] = 0.0
    return np.clip(stab, 0.0, 1.0)


def capped_stability(components, half_a, half_b):
    """:func:`component_stability`, capped by the full component's own agreement
    with the two half components it is scored on (issue 20 round 16).

    The two half components matched to component ``k`` may agree with each
    other and not with it (the halves hold another pattern there); the value
    is then the least of the three similarities ``(A, B)``, ``(C, A)``,
    ``(C, B)``. A half fit of fewer rows agrees with the full fit at least as
    well as with the other half in expectation, so the cap moves a component
    only where its halves hold something else. On a simulated three-site
    cohort (fresh seed 3574, benchmarks/RESULTS.md) a component claimed 0.94
    from half components that matched it at 0.17 and 0.01, while the other
    half of the cohort reproduced it at 0.71.

    Parameters
    ----------
    components, half_a, half_b : ndarray of shape (n_components, n_features)

    Returns
    -------
    ndarray of shape (n_components,), in [0, 1]
    """
    C, A, B = (np.asarray(M, dtype=float) for M in (components, half_a, half_b))
    to_a, ca = matched_abs_corr(C, A, whole_map=True)
    a_to_b, _ = matched_abs_corr(A, B, whole_map=True)
    cb = _similarity(C, B)[np.arange(C.shape[0]), a_to_b[to_a]]
    return np.minimum(component_stability(C, A, B), np.clip(np.minimum(ca, cb), 0.0, 1.0))


#: Most back-fitting sweeps of a half fit (``method="joint"``): the selection
#: compares penalties, it does not need the last digits.
HALF_MAX_SWEEPS = 15


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
    halves = split_halves(X, 0 if random_state is None else random_state, groups_of(estimator))
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


#: Overlapping subsamples of ``stability_``: the fraction of the rows both
#: share and the fraction each has of its own (each subsample has 0.9 N rows).
#: Measured (benchmarks/RESULTS.md, issue 20 round 6): on three draws each of
#: two paper seeds, the weakest co-varying pattern, found by the full fit, was
#: found by both subsamples on 4 of 6 draws with 0.8 N (0.6 shared) and on 6
#: of 6 with 0.9 N; over eight fresh seeds (one draw) it was lost on 2 of the
#: 6 where the full fit found it (split halves: 4 of 6). Noise components
#: scored at most 0.22 after the correction (0.10 with 0.8 N).
SUBSAMPLE_SHARED, SUBSAMPLE_OWN = 0.8, 0.1
#: Contiguous blocks of rows the subsamples are made of (rows of a time series
#: next to each other stay in the same block: ``overlapping_subsamples``).
SUBSAMPLE_BLOCKS = 10


def overlapping_subsamples(n_samples, random_state=None, groups=None):
    """The rows of two subsamples that share :data:`SUBSAMPLE_SHARED` of them.

    The rows are cut, in order, into :data:`SUBSAMPLE_BLOCKS` contiguous
    blocks; a random 80 % of the blocks are in both subsamples and each
    subsample has a further 10 % of its own (0.9 N rows each). Blocks rather
    than rows, so that neighbouring rows of a time series (near-copies) are not
    split between a subsample's own rows and the shared ones.

    Parameters
    ----------
    n_samples : int
        At least :data:`SUBSAMPLE_BLOCKS`.
    random_state : int, RandomState or None
    groups : ndarray of int of shape (n_samples,), optional
        Row groups: the blocks are made of whole groups
        (:func:`._split_groups.group_blocks`; at least :data:`SUBSAMPLE_BLOCKS`).

    Returns
    -------
    rows_a, rows_b : ndarray of int
        Sorted row indices.
    shared : float
        The overlap ``|A & B| / sqrt(|A| |B|)``.
    """
    blocks = np.array_split(np.arange(n_samples), SUBSAMPLE_BLOCKS)
    if groups is not None:
        blocks = group_blocks(groups, SUBSAMPLE_BLOCKS)
    order = check_random_state(random_state).permutation(SUBSAMPLE_BLOCKS)
    n_shared = int(round(SUBSAMPLE_SHARED * SUBSAMPLE_BLOCKS))
    n_own = int(round(SUBSAMPLE_OWN * SUBSAMPLE_BLOCKS))
    common = [blocks[i] for i in order[:n_shared]]
    own_a = [blocks[i] for i in order[n_shared : n_shared + n_own]]
    own_b = [blocks[i] for i in order[n_shared + n_own : n_shared + 2 * n_own]]
    rows_a = np.sort(np.concatenate(common + own_a))
    rows_b = np.sort(np.concatenate(common + own_b))
    n_common = sum(len(b) for b in common)
    return rows_a, rows_b, n_common / np.sqrt(len(rows_a) * len(rows_b))


def overlap_corrected(corr, shared):
    """The correlation two fits on independent samples would have, from two on
    samples that share a fraction ``shared`` of their rows, in [0, 1].

    To first order a fitted component is its population value plus a sum of
    per-sample terms, so the sampling errors of two overlapping fits are
    correlated by ``shared``: ``corr = rho + shared (1 - rho)`` where ``rho`` is
    the correlation of fits on independent samples of the same size, so
    ``rho = (corr - shared) / (1 - shared)``, clipped to [0, 1]. A noise
    component, which is not a smooth function of the data, shares less than
    that (measured with 0.9 N subsamples sharing 0.8 N: raw 0.01-0.91 on
    noise components, corrected at most 0.22; benchmarks/RESULTS.md, issue 20
    round 6).

    Parameters
    ----------
    corr : ndarray
        Matched absolute correlations of the two overlapping fits.
    shared : float
        In [0, 1).

    Returns
    -------
    ndarray
    """
    return np.clip((np.asarray(corr, float) - shared) / (1.0 - shared), 0.0, 1.0)


def subsample_stability(estimator, X, params, start=None):
    """``stability_`` of a full fit from two overlapping subsamples (0.9 N each).

    Both subsamples (:func:`overlapping_subsamples`, seeded by the
    estimator's ``random_state``, None meaning 0) are fitted at ``params``
    with the estimator's other settings (no certified support, no
    stability), cold or, with ``start``, started from those components
    (:func:`._warm.start_from`: the fit's other starts compete on the
    objective), on two threads when :func:`half_jobs` allows; the full
    fit's components are matched to them (:func:`component_stability`) and
    the matched absolute correlation is corrected for the overlap
    (:func:`overlap_corrected`).

    Parameters
    ----------
    estimator : SPCATV
        Fitted (``components_``).
    X : ndarray of shape (n_samples, n_features)
        In memory (a subsample is a copy of 0.9 N rows).
    params : dict
        The chosen penalty: ``alpha`` or ``alpha_rel``, ``l1_ratio``, ``tv_ratio``.
    start : ndarray of shape (n_components, n_features), optional
        The components both subsample fits start from (the full fit's, when
        ``alpha_rel="auto"`` started it warm: issue 20 round 7).

    Returns
    -------
    ndarray of shape (n_components,), in [0, 1]
    """
    from sklearn.base import clone

    from ._warm import start_from

    seed = 0 if estimator.random_state is None else estimator.random_state
    X = np.asarray(X)
    rows_a, rows_b, shared = overlapping_subsamples(X.shape[0], seed, groups_of(estimator))
    keep = dict(stability=False, warm_start=False, verbose=0, certify_support=False)
    models = [start_from(clone(estimator).set_params(**keep), start) for _ in range(2)]
    point = _fit_point(models, (X[rows_a], X[rows_b]), params, half_jobs(estimator, X))
    return overlap_corrected(
        component_stability(estimator.components_, *point["components"]), shared
    )


def _chosen_params(estimator):
    """The penalty of a fitted model as parameters of a fit at a fixed penalty."""
    same = (
        {"alpha": estimator.alpha}
        if estimator.alpha is not None
        else {"alpha": None, "alpha_rel": estimator.alpha_rel_}
    )
    same.update(l1_ratio=estimator.l1_ratio_, tv_ratio=estimator.tv_ratio_)
    return same


def halves_stability(estimator, X, params, halves, series=None):
    """``stability_`` under ``alpha_rel="auto"``: the split halves' reproducibility
    at the chosen point (issue 20 round 8).

    The walk of ``alpha_rel="auto"`` fitted the two disjoint halves at the
    chosen point already: each component's value is the matched absolute
    correlation of the two half components matched to it
    (:func:`capped_stability`: :func:`component_stability` capped by the full
    component's agreement with those two, issue 20 round 16; no extra fit).
    The halves reach the chosen
    point from the path's cold first point and may miss a weak pattern that
    the full fit, started from the chosen half fit, finds (benchmarks/
    RESULTS.md, issue 20 round 7). Before a component is flagged (below
    :data:`STABILITY_THRESHOLD`), the two halves are fitted again at the
    chosen point from the full fit's components (:func:`._warm.start_from`:
    the fit's other starts compete on each half's own objective), and that
    fit's value replaces it: it is flagged when neither fit of the halves
    reproduces it.

    Parameters
    ----------
    estimator : SPCATV
        Fitted (``components_``).
    X : array-like, numpy.memmap or dask.array
        The training data (the halves are :func:`split_halves` with the
        estimator's ``random_state``, None meaning 0: the walk's halves).
    params : dict
        The chosen penalty.
    halves : tuple of two ndarrays
        The walk's half components at the chosen point; a :class:`HalfFits`
        whose ``refit`` is set (``alpha_rel="auto"`` refitted the halves
        already, to decide whether to search the other splits: issue 20
        round 9) gives that refit instead of a new one.
    series : bool or None
        Whether ``X`` is a series (:func:`is_series`), when the caller knows
        it already; None: found here.

    Returns
    -------
    ndarray of shape (n_components,), in [0, 1]
    """
    C = estimator.components_
    if is_series(estimator, X) if series is None else series:
        return series_stability(estimator, X, params)
    stab = capped_stability(C, *halves)
    low = np.any(C != 0, axis=1) & (stab < STABILITY_THRESHOLD)
    if low.any():
        refit = getattr(halves, "refit", None)
        if refit is None:
            seed = 0 if estimator.random_state is None else estimator.random_state
            data = split_halves(X, seed, groups_of(estimator))
            refit = refit_halves(estimator, data, params, C, half_jobs(estimator, X))
        stab[low] = capped_stability(C, *refit)[low]
    return stab


#: Rows whose neighbours (in order) are more alike than random pairs of rows
#: by more than this (mean correlation across the features,
#: :func:`serial_correlation`) are a *series*, e.g. the time points of a run.
#: Random halves of a series hold near-copies of each other's rows and agree
#: whatever the data say: on brainspace's resting-state run (consecutive rows
#: 0.97 alike, random pairs 0.0) the walk's halves of the run's second half
#: claimed 0.74 and 0.89 for two components that its first half reproduced at
#: 0.10 and 0.09 (benchmarks/RESULTS.md, issue 20 round 13). The simulated
#: cohorts: -0.01 to 0.01.
SERIES_CORRELATION = 0.1
#: A series' halves for ``stability_``: its rows cut, in order, into this many
#: contiguous blocks, half of them (at random) in each half (:func:`series_stability`).
SERIES_BLOCKS = 10
#: Draws of :func:`series_halves` behind :func:`series_stability`. A draw's
#: score of a component is nearly all or nothing (on brainspace's run one
#: component scored 0.65, 0.78 and 0.00 on three draws, reproduced at 0.04
#: by the other half of the run): the median of six draws, not the mean of
#: three (round 13), is what keeps one lucky draw from carrying the claim
#: (issue 20 round 14, benchmarks/RESULTS.md).
SERIES_DRAWS = 6
#: Carry the median of the draws from quarter-size fits to half-size ones with
#: :func:`spearman_brown`. Off: on the recorded draws of round 14 (lead's
#: re-scoring of branch series20n's records, benchmarks/RESULTS.md) the
#: corrected median overclaimed more on the simulated series (10-13 of 100
#: components above their actual value by more than 0.2, against 7-9 for the
#: plain median) and its worst overclaim on brainspace's run moved with the
#: number of draws (0.17-0.46 for 4-8 draws, against 0.04-0.30 plain): the claim
#: stays on the safe side, pessimistic for components that reproduce.
SERIES_SIZE_CORRECTION = False
#: A series' block halves reach the chosen point along the chosen split's path
#: (its weaker points in ``auto_path_``, each fit warm-started from the one
#: before), as the walk's halves do, instead of a cold fit there (issue 20
#: round 17, :func:`_walked_fit`): cold quarter fits at a strong penalty often
#: held a component in one quarter only.
SERIES_WALK = False
#: Said with a series' flag: on brainspace's run 5 of the 6 components that the
#: other half of the run reproduces (0.56-0.75) were flagged (round 14).
SERIES_NOTE = (
    " The rows are a series: each half was fitted on a quarter of them, so the"
    " score is conservative (not shown to reproduce, rather than shown not to)."
)


def serial_correlation(X, random_state=0, chunk=256):
    """How much more alike consecutive rows of ``X`` are than random pairs.

    The mean correlation (across the features, each row centred on the
    column means) of rows ``i`` and ``i + 1``, minus that of random pairs of
    rows (a permutation seeded by ``random_state``); near 0 for exchangeable
    rows (subjects), near 1 for a smooth time series. ``chunk`` rows at a time
    (no copy of ``X``).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    random_state : int, RandomState or None
    chunk : int

    Returns
    -------
    float
    """
    X = np.asarray(X)
    n = X.shape[0]
    if n < 3:
        return 0.0
    mean = X.mean(axis=0)
    perm = check_random_state(random_state).permutation(n)

    def unit(rows):
        R = X[rows] - mean
        norms = np.linalg.norm(R, axis=1, keepdims=True)
        return np.divide(R, norms, out=np.zeros_like(R, dtype=float), where=norms > 0)

    lag = rnd = 0.0
    for s in range(0, n - 1, chunk):
        i = np.arange(s, min(s + chunk, n - 1))
        lag += np.einsum("ij,ij->", unit(i), unit(i + 1))
        rnd += np.einsum("ij,ij->", unit(perm[i]), unit(perm[i + 1]))
    return float((lag - rnd) / (n - 1))


#: Rows in any order are *redundant* when each one's nearest neighbour (the
#: largest correlation with another row) is more alike than the largest of
#: ``n - 1`` exchangeable pairs would be by more than this
#: (:func:`row_redundancy`), e.g. a run's time points shuffled. Measured
#: (benchmarks/RESULTS.md, issue 20 round 14): halves of brainspace's run 0.30
#: and 0.45 in any order (every 8th time point -0.08), simulated AR(1) series of
#: coefficient 0.7-0.97 0.11-0.32 (0.5: -0.09), the simulated cohorts (paper,
#: fsaverage5, conte69) and Gaussian rows -0.03 to -0.01.
REDUNDANCY = 0.1
#: :func:`row_redundancy` and :func:`series_order` look at most this many rows
#: (an ``n x n`` correlation matrix); larger data are checked in order only.
REDUNDANCY_MAX_ROWS = 3000


def _unit_rows(X, max_features=4096, random_state=0):
    """Rows of ``X`` centred on the column means and scaled to unit norm, on at
    most ``max_features`` random columns (seeded)."""
    cols = np.arange(X.shape[1])
    if X.shape[1] > max_features:
        cols = np.sort(check_random_state(random_state).choice(X.shape[1], max_features, False))
    R = np.asarray(X[:, cols], dtype=np.float64)
    R = R - R.mean(axis=0)
    norms = np.linalg.norm(R, axis=1, keepdims=True)
    return np.divide(R, norms, out=np.zeros_like(R), where=norms > 0)


def row_redundancy(X, random_state=0):
    """How much more alike each row's nearest neighbour is than exchangeable rows allow.

    The mean over rows of the largest correlation with another row, minus the
    largest of ``n - 1`` draws expected from the pairwise correlations
    (median + 1.4826 MAD x sqrt(2 ln(n - 1)), robust to the few near-copies):
    near 0 or below for exchangeable rows (subjects), large when every row has
    a near-copy (the time points of a run, in any order).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        At most :data:`REDUNDANCY_MAX_ROWS` rows.
    random_state : int, RandomState or None
        Seed of the columns used (at most 4096).

    Returns
    -------
    float
    """
    U = _unit_rows(np.asarray(X), random_state=random_state)
    n = U.shape[0]
    if n < 3:
        return 0.0
    C = U @ U.T
    pairs = C[np.triu_indices(n, 1)]
    med = np.median(pairs)
    spread = 1.4826 * np.median(np.abs(pairs - med))
    np.fill_diagonal(C, -np.inf)
    return float(np.mean(C.max(axis=1)) - (med + spread * np.sqrt(2 * np.log(n - 1))))


def series_order(X, random_state=0):
    """An order of the rows in which near-copies are next to each other: a
    greedy nearest-neighbour chain from row 0 (each step to the most correlated
    row not yet visited). A shuffled time series comes back in runs of its time
    order (brainspace's run: every row's nearest neighbour is within 3 time
    points of it)."""
    U = _unit_rows(np.asarray(X), random_state=random_state)
    C = U @ U.T
    n = C.shape[0]
    order = np.empty(n, dtype=int)
    seen = np.zeros(n, dtype=bool)
    cur = 0
    for i in range(n):
        order[i], seen[cur] = cur, True
        if i < n - 1:
            cur = int(np.argmax(np.where(seen, -np.inf, C[cur])))
    return order


def is_series(estimator, X):
    """True when ``stability_`` treats the rows of ``X`` as a series: in
    memory, without ``split_groups`` (whose halves keep the groups whole), at
    least ``2 * SERIES_BLOCKS`` rows, and either in order
    (:data:`SERIES_CORRELATION`) or, with at most :data:`REDUNDANCY_MAX_ROWS`
    rows, redundant in any order (:data:`REDUNDANCY`)."""
    X = _series_data(estimator, X)
    if X is None:
        return False
    seed = _seed(estimator)
    if serial_correlation(X, seed) > SERIES_CORRELATION:
        return True
    return X.shape[0] <= REDUNDANCY_MAX_ROWS and row_redundancy(X, seed) > REDUNDANCY


def _seed(estimator):
    return 0 if estimator.random_state is None else estimator.random_state


def _series_data(estimator, X):
    """``X`` as a float array when it may be a series, else None."""
    from ._data import is_out_of_core

    if is_out_of_core(X) or groups_of(estimator) is not None:
        return None
    X = np.asarray(X)
    if X.shape[0] < 2 * SERIES_BLOCKS:
        return None
    if X.dtype.kind not in "fc":  # e.g. an object array the fit accepted (validated)
        X = X.astype(np.float64)
    return X


def series_halves(X, random_state=None):
    """Two halves of a series: :data:`SERIES_BLOCKS` contiguous blocks of
    rows, half of them (chosen with ``random_state``) in each half."""
    X = np.asarray(X)
    blocks = np.array_split(np.arange(X.shape[0]), SERIES_BLOCKS)
    order = check_random_state(random_state).permutation(SERIES_BLOCKS)
    h = SERIES_BLOCKS // 2
    rows = [np.sort(np.concatenate([blocks[i] for i in part])) for part in (order[:h], order[h:])]
    return X[rows[0]], X[rows[1]]


def spearman_brown(r):
    """The split-half correlation ``r`` of fits on half the rows carried to
    fits on all of them: ``2 r / (1 + r)`` (Spearman-Brown), in [0, 1] for
    ``r`` in [0, 1].

    Parameters
    ----------
    r : float or ndarray

    Returns
    -------
    float or ndarray
    """
    r = np.clip(np.asarray(r, dtype=float), 0.0, 1.0)
    return 2.0 * r / (1.0 + r)


def series_stability(estimator, X, params):
    """``stability_`` of a fit to a series (:func:`is_series`): the two
    :func:`series_halves` fitted cold at the chosen point (walked along the
    chosen split's path with :data:`SERIES_WALK`, off), each component
    scored by :func:`component_stability`; the median over
    :data:`SERIES_DRAWS` draws of the halves (carried from fits of half the
    rows to fits of all of them by :func:`spearman_brown` only where
    :data:`SERIES_SIZE_CORRECTION` is on; it is off: fits of a quarter of the
    run are pessimistic about fits of half of it). Rows given in no order
    (:func:`row_redundancy`) are put in :func:`series_order` first. Issue 20
    round 13: the walk's random halves and a refit from the full fit both
    stayed near the full fit's components on brainspace's resting-state run;
    round 14: the median (benchmarks/RESULTS.md).

    Parameters
    ----------
    estimator : SPCATV
        Fitted (``components_``).
    X : ndarray of shape (n_samples, n_features)
    params : dict
        The chosen penalty.

    Returns
    -------
    ndarray of shape (n_components,), in [0, 1]
    """
    seed = _seed(estimator)
    X = np.asarray(X)
    if X.dtype.kind not in "fc":  # e.g. an object array the fit accepted (validated)
        X = X.astype(np.float64)
    if serial_correlation(X, seed) <= SERIES_CORRELATION:  # redundant rows, in no order
        X = X[series_order(X, seed)]
    stab = []
    for i in range(SERIES_DRAWS):
        # int seeds: seed, seed + 1, ...; a RandomState gives a new draw each time
        halves = series_halves(X, seed + i if isinstance(seed, numbers.Integral) else seed)
        comps = _walked_fit(estimator, halves, params, half_jobs(estimator, X))
        stab.append(component_stability(estimator.components_, *comps["components"]))
    stab = np.median(stab, axis=0)
    return spearman_brown(stab) if SERIES_SIZE_CORRECTION else stab


def _walked_fit(estimator, halves, params, n_jobs=1):
    """Both ``halves`` fitted at ``params``: with :data:`SERIES_WALK`, reached
    along the chosen split's weaker points of ``auto_path_`` (each half
    warm-started from its previous fit, as the walk's halves are), else cold."""
    models, path = _half_models(estimator), getattr(estimator, "auto_path_", None) or []
    split, chosen = (params.get("l1_ratio"), params.get("tv_ratio")), params.get("alpha_rel")
    weaker = {
        p["alpha_rel"]
        for p in path
        if (p["l1_ratio"], p["tv_ratio"]) == split
        and chosen is not None
        and p["alpha_rel"] < chosen
    }
    for alpha_rel in sorted(weaker) if SERIES_WALK else []:
        _fit_point(models, halves, dict(params, alpha_rel=alpha_rel), n_jobs)
    return _fit_point(models, halves, params, n_jobs)


class HalfFits(tuple):
    """The walk's two half components at the chosen point (a tuple), with
    ``refit``: the two halves fitted again there from the full fit's
    components (:func:`refit_halves`), or None."""

    refit = None


def refit_halves(estimator, halves, params, components, n_jobs=1):
    """Both halves fitted at ``params`` from ``components`` (a full fit's):
    :func:`._warm.start_from` on fresh :func:`_half_models`, whose other
    starts compete on each half's own objective.

    Parameters
    ----------
    estimator : SPCATV
    halves : tuple of two arrays
        The data's halves (:func:`split_halves`).
    params : dict
        The penalty.
    components : ndarray of shape (n_components, n_features)
    n_jobs : int
        :func:`half_jobs`.

    Returns
    -------
    tuple of two ndarrays
        The halves' ``components_``.
    """
    from ._warm import start_from

    models = [start_from(m, components) for m in _half_models(estimator)]
    return _fit_point(models, halves, params, n_jobs)["components"]


def _dense_note(estimator):
    """What the warning of :func:`set_stability` adds when ``alpha_rel="auto"``
    saw a whole-map signal at weaker points (``auto_path_``'s
    ``"dense_effect"``), else "". Lead, issue 20 round 16: with the age effect
    left in (fresh seed 3615, rows shuffled) two components of 34 % and 9 %
    non-zero held no planted pattern and did not reproduce, and only the
    methods paragraph named the signal."""
    from ._auto import _dense_text

    text = _dense_text(estimator)
    if not text:
        return ""
    return (
        f"{text}; components that do not reproduce may hold part of it: remove it first "
        "(ImageSPCATV's confounds=, site harmonisation with neurospca.study) and fit again."
    )


def set_stability(estimator, X, halves):
    """Set ``stability_`` (issue 20 rounds 6-8).

    Computed with ``stability=True``, and with "auto" when ``alpha_rel="auto"``
    chose the penalty (``halves`` not None). Under "auto":
    :func:`halves_stability` (the split halves of the chosen point, refitted
    from the full fit's components before a component is flagged). At a
    fixed penalty, in memory (at least ``2 * SUBSAMPLE_BLOCKS`` samples):
    :func:`subsample_stability` (two cold fits on overlapping subsamples of
    0.9 N, their agreement corrected for the overlap); out of core or with
    fewer samples, two half fits (:func:`component_stability`). In memory, 0
    for a component :func:`below_noise` (round 7: a noise component of a few
    pixels is selected alike by two fits that share rows or a start). NaN
    when not computed; a UserWarning names the non-empty components below
    :data:`STABILITY_THRESHOLD`. With ``split_groups`` (:mod:`._split_groups`)
    every half, subsample and permutation keeps the groups whole; at a fixed
    penalty, with fewer than :data:`SUBSAMPLE_BLOCKS` groups, two half fits.
    """
    import warnings

    from ._data import is_out_of_core

    C = estimator.components_
    if not (estimator.stability is True or (halves is not None and estimator.stability == "auto")):
        estimator.stability_ = np.full(C.shape[0], np.nan)
        return
    if not is_out_of_core(X):
        X = np.asarray(X)  # array-likes (no np.shape on every array-like)
    params = _chosen_params(estimator)
    few = is_out_of_core(X) or X.shape[0] < 2 * SUBSAMPLE_BLOCKS or few_groups(estimator)
    where = "split halves" if halves is not None or few else "subsamples"
    series = halves is not None and is_series(estimator, X)
    if series:
        where = "split halves of contiguous blocks"
    if halves is not None:
        estimator.stability_ = halves_stability(estimator, X, params, halves, series)
    elif few:
        halves = fit_halves(estimator, X, [params], estimator.random_state)[0]["components"]
        estimator.stability_ = component_stability(C, *halves)
    else:
        estimator.stability_ = subsample_stability(estimator, X, params)
    if not is_out_of_core(X) and X.shape[0] >= 2 * SUBSAMPLE_BLOCKS:
        estimator.stability_[below_noise(estimator, X, params)] = 0.0
    low = np.flatnonzero(np.any(C != 0, axis=1) & (estimator.stability_ < STABILITY_THRESHOLD))
    if low.size:
        warnings.warn(
            f"{component_names(low)} {'does' if low.size == 1 else 'do'} not reproduce "
            f"across {where} (stability_ {np.round(estimator.stability_[low], 2).tolist()} < "
            f"{STABILITY_THRESHOLD}): do not interpret {'it' if low.size == 1 else 'them'} "
            "without replication." + (SERIES_NOTE if series else "") + _dense_note(estimator),
            UserWarning,
            stacklevel=2,
        )


def few_groups(estimator):
    """True when ``split_groups`` cannot make :data:`SUBSAMPLE_BLOCKS` blocks of
    whole groups: ``stability_`` at a fixed penalty then fits two halves."""
    groups = groups_of(estimator)
    return groups is not None and group_blocks(groups, SUBSAMPLE_BLOCKS) is None


#: Column permutations of the data behind the noise floor of ``stability_``
#: (:func:`below_noise`): the floor is the largest of their rank-one fits, so
#: a noise component as strong as theirs passes it with probability
#: ``1 / (NOISE_PERMUTATIONS + 1)`` (Horn's parallel analysis). Measured with
#: 3 (round 7): 1 of 10 noise-only data sets kept a component at 0.99.
NOISE_PERMUTATIONS = 9
#: The noise floor stops after this many permutations when every component is
#: either at or below it (flagged whatever the others give) or above
#: :data:`NOISE_MARGIN` times it (issue 20 round 8): the rank-one fits of
#: permuted copies vary little (29.1-29.9 over nine on paper seed 3108, against
#: 83-91 for its weakest pattern), so the other permutations would not move
#: a component that far above it. Not on a floor of 0 (every permuted fit so
#: far empty at this penalty): any component is "above" it, and later
#: permutations were not empty (issue 20 round 9, noise-only 12 x 12 seed 3233:
#: 0, 0, 0, 0, then 10.9-11.7 against components at 11.5 and 11.9).
NOISE_FIRST, NOISE_MARGIN = 3, 1.25


def below_noise(estimator, X, params):
    """The components whose singular value is not above what noise supports at
    the same penalty (issue 20 round 7).

    Permuting every column of ``X`` independently keeps each feature's values
    and removes all co-variation: what a fit at this penalty finds there is
    noise (Horn's parallel analysis, applied to the penalised fit). The floor
    is the largest singular value of one rank-one fit (deflation's first
    component: the strongest single component) on each of
    :data:`NOISE_PERMUTATIONS` permuted copies, seeded by ``random_state``
    (None: 0); after :data:`NOISE_FIRST` of them the rest are skipped when
    the floor so far is positive and no component is within
    :data:`NOISE_MARGIN` above it.
    A component no stronger than that is not a pattern, whatever
    its subsamples say: two subsamples that share 80 % of the rows select the
    same few noisiest features (measured: one-pixel components of noise-only
    data scored 0.87-1.00 before this check).

    Parameters
    ----------
    estimator : SPCATV
        Fitted (``singular_values_``).
    X : ndarray of shape (n_samples, n_features)
    params : dict
        The penalty of the fit.

    Returns
    -------
    ndarray of bool, shape (n_components,)
    """
    import warnings

    from sklearn.base import clone

    seed = 0 if estimator.random_state is None else estimator.random_state
    gen = np.random.default_rng(check_random_state(seed).randint(2**31 - 1))
    keep = dict(stability=False, warm_start=False, verbose=0, certify_support=False)
    one = clone(estimator).set_params(n_components=1, method="deflation", **keep, **params)
    noise = np.empty_like(X)
    floor, sv = 0.0, np.asarray(estimator.singular_values_)
    for i in range(NOISE_PERMUTATIONS):
        if i >= NOISE_FIRST and floor > 0 and np.all((sv <= floor) | (sv > NOISE_MARGIN * floor)):
            break  # no component near the floor: the other permutations decide nothing
        if groups_of(estimator) is None:
            _permute_columns(X, gen, out=noise)
        else:  # whole groups moved (split_groups: issue 20 round 9)
            permute_groups(X, groups_of(estimator), gen, out=noise)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            floor = max(floor, float(one.fit(noise).singular_values_[0]))
    return sv <= floor


def _permute_columns(X, gen, out, width=4096):
    """``out[:, j]`` = column ``j`` of ``X`` with its rows in an independent
    uniformly random order (``Generator.permuted``, ``width`` columns at a time;
    a column loop of ``rng.permutation`` cost 1.2 s of the demo's 1 s fit)."""
    for s in range(0, X.shape[1], width):
        cols = slice(s, min(s + width, X.shape[1]))
        out[:, cols] = gen.permuted(np.asarray(X[:, cols]), axis=0)
    return out


def scores_of(op, components):
    """Unit scores ``Xc c_k / ||Xc c_k||`` of the data on given loadings (a warm
    start of the joint fit from the chosen half fit); None if one is empty."""
    Z = op.matmat(np.asarray(components, dtype=np.float64).T)
    norms = np.linalg.norm(Z, axis=0)
    return None if np.any(norms == 0) else Z / norms
