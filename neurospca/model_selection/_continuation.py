"""Evidence fits as guarded continuations (issue 20 round 16).

A judged model's evidence (``_returned.returned_evidence``) is four fits at
its point, on two subsamples and two halves, each started from the model's
components. Until round 15 each was a joint fit whose other starts (deflation,
the data's top singular subspace) still ran and competed on the objective:
measured (benchmarks/RESULTS.md, round 15), that cost more than a cold full fit.
Here each is first a *continuation* (``warm_start=True``: the sweeps from the
start only), 4-8x cheaper and, on SPCA-TV, the same evidence to 0.001.

The continuation can settle far from the start's optimum: on ElasticNet PCA
with co-varying scores (paper simulation, r = 0.7, development seed 3285, the
default fit's halves) both continuations captured 0.09-0.12 of the variance
the start's components capture on their half (the competing fits 1.6-1.8),
and the stability fell from 0.70 / 0.13 / 0.00 to 0.22 / 0.19 / 0.19.
:func:`guarded_fit` therefore keeps a continuation only when it captures at
least :data:`KEEP_CAPTURED` of that variance and empties no component the
start has; otherwise that fit is made as before (the competing starts), and
its evidence is the old one. Where one continuation of a search does not
hold, none of the later ones is tried (:func:`continuations`): on that seed
every one failed, and each failed try costs about half a fit.

Only with TV (``tv_ratio > 0``). Without it (ElasticNet PCA) the continuations
held and halved the search's CPU, but scored a component that no model
reproduces higher (the competing starts' restarts find another one each
time): 0.02-0.15 -> 0.23-0.24 on fresh seed 3531 (r = 0), which moved the
choice from (0.5, 0) 0.25 (the Dice-best) to (0.2, 0) 0.5 (the MSE-best);
with TV every judged row's evidence was the old one to 0.003 (benchmarks/
RESULTS.md, round 16). A start that is not the winner of the competing
starts (e.g. a deflation fit that merged two patterns) keeps its merge under
a continuation: the search judges only joint fits on all the samples whose
competing starts ran.

Round 17 (:data:`CHAIN`): without TV each evidence fit is first a
continuation of the same sample's own previous evidence fit of the search
(:func:`chained_start`: the two subsamples and two halves are four
independent chains, so a component no model reproduces is not carried into
both samples from one start), kept when it holds rank by rank against the
judged model's components (:func:`chain_holds`); the first model a search
judges, and every fit after a continuation that does not hold, are the
competing starts' fits as before (benchmarks/RESULTS.md, round 17).

Round 18 (:data:`CHAIN_FULL`): without TV the full fit of a judged row (the
model returned there, ``_returned.fit_returned``) is first a continuation of
the search's full fit of the same split at the nearest l1 weight
(:func:`continued_full`), kept when it holds rank by rank against the row's
half fit, the start of the fit it replaces (:func:`chain_holds`), and its joint
objective is not above a continuation's from that half fit by more than
:data:`CHAIN_FULL_GAP` of the explained part (:func:`_not_above`); else that
fit is made as before and the search tries no more full continuations.

Round 19 (:data:`EVIDENCE_STARTS`): without TV, an evidence fit made with the
competing starts runs two of them: the judged model's components (swept, with
restarts) and deflation's fit unswept, the lower joint objective kept. Logged
over main's searches (benchmarks/RESULTS.md, round 19): with co-varying scores
deflation's unswept fit won every such fit but one (39 of 40), its objective
below the swept starts' by about 5e-4 (relative); with independent scores
the given start won 18 of 24, deflation swept or the subspace start the other
6 by at most 3e-7; the subspace start and deflation's sweeps were 1.7-3.0 default
fits per search. With :data:`DEFL0_FIRST`, once a search's first such fit
was deflation's unswept fit, the later ones are that start alone when it holds
rank by rank (:func:`_two_starts`). The same returned model on 6 fresh and 14
recorded instances. The starts are set for the fit's call in its own thread
(``decomposition.joint_starts``, a context variable): fits in other threads keep
theirs.
"""

import warnings
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
from sklearn.base import clone

from ..decomposition import (
    component_stability,
    fitted_objective,
    groups_of,
    joint_starts,
    overlap_corrected,
    overlapping_subsamples,
    row_groups,
    start_from,
)

#: Evidence fits are guarded continuations (False: the fits of round 15).
CONTINUATION = True
#: A continuation is kept when the variance its components capture on its
#: rows is at least this fraction of what the start's components capture
#: there (:func:`captured`); the collapse it guards against kept 0.04
#: (development seed 3285, ElasticNet PCA r = 0.7).
KEEP_CAPTURED = 0.5

#: Without TV, evidence fits continue each sample's own previous evidence fit
#: of the search (:func:`chained_start`; False: the cold fits of round 16).
CHAIN = True
#: The evidence fits kept per sample and split for :func:`chained_start` (the latest):
#: a search judges at most a few models per split, and each fit is
#: ``n_components x n_features``.
CHAIN_KEEP = 3

#: Without TV, after a chained continuation that does not hold, the search's
#: later evidence fits are all made with the competing starts (round 17; False:
#: each later fit still tries its own chain first).
CHAIN_STOP = True
#: Without TV, the full fit of a judged row continues the search's full fit of
#: the same split at the nearest l1 weight (:func:`continued_full`; False: the
#: fits of round 17, from the row's half fit with the competing starts).
CHAIN_FULL = True
#: Without TV, a half's evidence fit continues the walk's fit of the same half at
#: the same point when that fit holds against the judged model (:func:`walk_start`;
#: False: the sample's previous evidence fit, or the competing starts, round 17).
#: Off: measured (round 18, development seed 3353), the sparse split's first
#: model's third rank scored 0.017 where the competing starts scored 0.095, and
#: the choice moved from (0.5, 0) 0.25 to (0.2, 0) 0.5 (MSE 0.36 -> 0.33, Dice
#: 0.595 -> 0.512).
WALK_EVIDENCE = False
#: The same for the default fit's evidence only (its split walked first,
#: ``_shared_walk.walk_first``). Off: measured (round 18), it scored the default
#: fit's third rank, which no model reproduces, 0.0006 where the competing starts
#: scored 0.19 and moved the choice on round 17's recorded instance 3638.
WALK_DEFAULT = False
#: A full continuation is also kept only when its joint objective is not above
#: that of a continuation from the row's half fit by more than :data:`CHAIN_FULL_GAP`
#: of that continuation's explained part (:func:`_not_above`). Measured (round 18):
#: on recorded 3534 (r = 0.7) the continuation at (0.05, 0) 4 explained 0.55 less
#: (a component no fit reproduces kept, its evidence 0.01 where main's model's was
#: 0.63); where the two settle together the difference was 3e-4 (3667).
CHAIN_FULL_OBJECTIVE = True
CHAIN_FULL_GAP = 0.01
#: Without TV, the starts of an evidence fit with the competing starts
#: (:func:`_evidence_starts`): None, all (the judged model's components, the
#: data's top singular subspace, deflation swept and unswept); ``"given"``, the
#: judged model's components alone first, kept when it holds
#: (:func:`chain_holds`), else all; ``"given+defl0"``, the judged model's
#: components and deflation's unswept fit, the lower joint objective kept.
EVIDENCE_STARTS = "given+defl0"
#: With ``"given+defl0"``: after a search's first such fit was deflation's unswept
#: fit, the later ones are that start alone when it holds (:func:`_two_starts`).
DEFL0_FIRST = True
#: The same for the full fit of a judged row made from its half fit with the
#: competing starts (``_returned.fit_returned``).
FULL_STARTS = None
#: The evidence fits' ``tol`` (None: the estimator's).
EVIDENCE_TOL = None
#: The sample key of the full fits in the search's chains.
FULL = "full"

#: ``[failed, chains, full failed, walks, defl0 won]`` of the search under way
#: (:func:`continuations`), else None; ``chains``: ``{(sample, l1_ratio): [(l1
#: weight, components), ...]}``; ``walks``: a split's walk made before its turn
#: (``_shared_walk.walk_split``).
_SEARCH = ContextVar("neurospca_continuations", default=None)


@contextmanager
def continuations():
    """One search's evidence fits: after a continuation that does not hold
    (:func:`continuation_holds`), the later ones are fitted with the competing
    starts only."""
    token = _SEARCH.set([False, {}, False, {}, None])
    try:
        yield
    finally:
        _SEARCH.reset(token)


def captured(data, components):
    """Variance of the centred ``data`` along each row of ``components``
    (unit or zero rows): ``||Xc c_k||^2 / n``."""
    data = np.asarray(data, dtype=np.float64)
    Z = (data - data.mean(axis=0)) @ np.asarray(components, dtype=np.float64).T
    return np.sum(Z * Z, axis=0) / data.shape[0]


def continuation_holds(data, start, components):
    """True when ``components`` (a continuation's fit on ``data``) capture at
    least :data:`KEEP_CAPTURED` of the variance ``start`` captures there and
    have no more empty rows than ``start``."""
    empty = np.sum(~np.any(np.asarray(components) != 0, axis=1))
    if empty > np.sum(~np.any(np.asarray(start) != 0, axis=1)):
        return False
    return captured(data, components).sum() >= KEEP_CAPTURED * captured(data, start).sum()


def chain_holds(data, start, components):
    """True when ``components`` (a chained continuation's fit on ``data``) have
    no more empty rows than ``start`` (the judged model's components) and each
    captures at least :data:`KEEP_CAPTURED` of the variance ``start``'s
    component of the same rank captures (both sorted by captured variance):
    a continuation from a weaker point's fit can keep two patterns merged in
    one component with the sum held (development, round 15's instance 3530
    r = 0: ranks 1.38 / 0.13 / 0.16 of the model's, sum 0.78, and the
    evidence of its second component 0.61 -> 0.17)."""
    if not continuation_holds(data, start, components):
        return False
    got = np.sort(captured(data, components))[::-1]
    return bool(np.all(got >= KEEP_CAPTURED * np.sort(captured(data, start))[::-1]))


def _l1_weight(params):
    return float(params["l1_ratio"]) * float(params["alpha_rel"])


def chained_start(sample, params):
    """Without TV, the components of the search's earlier evidence fit on the
    same ``sample`` (a key naming its rows) and the same split of the penalty
    (a point of the same path) whose l1 weight ``l1_ratio * alpha_rel`` is
    nearest to ``params``' (on a log scale, the weaker on a tie), else None.
    A split's first judged model is fitted with the competing starts: chained
    across splits (from the own split's fits to (0.5, 0) 0.25), the third
    rank, which no model reproduces, scored 0.006 where those fits scored
    0.23 and moved the choice on round 12's 3391 and round 15's 3531."""
    search = _SEARCH.get()
    if not CHAIN or sample is None or search is None or params["tv_ratio"] != 0:
        return None
    fits, w = search[1].get((sample, float(params["l1_ratio"])), []), _l1_weight(params)
    if not fits or not w > 0:  # no l1 weight (l1_ratio 0 in a user's grid): nothing to match
        return None
    return min(fits, key=lambda f: (abs(np.log(f[0] / w)), f[0]))[1]


def remember_full(params, components):
    """Keep a judged row's full fit for :func:`continued_full`."""
    if CHAIN_FULL:
        _remember(FULL, params, components)


def continued_full(estimator, X, params, start, groups=None):
    """Without TV, within a search: the full fit at ``params`` continued from
    the search's full fit of the same split at the nearest l1 weight
    (:func:`chained_start`), when it holds rank by rank against ``start``
    (the row's half fit, from which the fit it replaces starts:
    :func:`chain_holds`); else None, and the search tries no more full
    continuations. The model keeps ``estimator``'s ``warm_start``."""
    search = _SEARCH.get()
    prev = chained_start(FULL, params) if CHAIN_FULL else None
    if prev is None or search[2]:
        return None
    model = clone(estimator).set_params(**params, stability=False, warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = start_from(model, prev).fit(X, split_groups=groups)
    model.set_params(warm_start=estimator.get_params()["warm_start"])
    if chain_holds(X, start, model.components_) and _not_above(estimator, X, params, start, model):
        return model
    search[2] = True
    return None


def _not_above(estimator, X, params, start, model):
    """Without :data:`CHAIN_FULL_OBJECTIVE`, True; else True when ``model``'s
    joint objective ``J`` is above that of the continuation from ``start`` (the
    half fit the fit it replaces starts from) by at most
    :data:`CHAIN_FULL_GAP` of that continuation's explained part
    ``||Xc||^2 / (2N) - J``."""
    if not CHAIN_FULL_OBJECTIVE:
        return True
    own = clone(estimator).set_params(**params, stability=False, warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        own = start_from(own, start).fit(X, split_groups=groups_of(estimator))
    operator = estimator.get_params()["operator"]
    chained, other = fitted_objective(model, X, operator), fitted_objective(own, X, operator)
    Xc = np.asarray(X, dtype=np.float64) - np.mean(X, axis=0)
    base = float(np.sum(Xc * Xc)) / (2.0 * Xc.shape[0])
    return bool(chained - other <= CHAIN_FULL_GAP * abs(base - other))


def _remember(sample, params, components):
    """Keep an evidence fit of ``sample`` for :func:`chained_start`."""
    search = _SEARCH.get()
    ok = search is not None and params["tv_ratio"] == 0 and _l1_weight(params) > 0
    if CHAIN and sample is not None and ok:
        fits = search[1].setdefault((sample, float(params["l1_ratio"])), [])
        fits.append((_l1_weight(params), components))
        del fits[:-CHAIN_KEEP]


def walk_start(data, params, start, walked):
    """The walk's half fit ``walked`` at the evidence fit's own point (the same
    half, the same ``params``) as the chain's start, when the search's chains
    are on, without TV, and it already holds rank by rank against ``start``
    (:func:`chain_holds`); else None."""
    search = _SEARCH.get()
    if not CHAIN or walked is None or search is None or (CHAIN_STOP and search[0]):
        return None
    if params["tv_ratio"] != 0 or not chain_holds(data, start, walked):
        return None
    return walked


def guarded_fit(model, data, params, start, sample=None, walked=None):
    """:func:`_guarded_fit`; without TV, first a continuation of ``sample``'s
    own previous evidence fit of the search (:func:`chained_start`), kept when
    it holds against ``start``, the judged model's components, rank by rank
    (:func:`chain_holds`; against the previous fit, at a weaker penalty,
    legitimate moves captured 0.44-0.60 of its variance, development seed
    3637), so that each sample's fits stay
    independent of the others' (a continuation from the judged model's
    components scored a component that no fit reproduces up to 0.21 higher,
    round 16). Each result is kept for the next point (issue 20 round 17).
    ``walked``: the walk's fit of the same half at ``params``, the chain's
    start when it holds (:func:`walk_start`, round 18)."""
    chained = walk_start(data, params, start, walked)
    if chained is None:
        chained = chained_start(sample, params)
    search = _SEARCH.get()
    if chained is not None and not (CHAIN_STOP and search[0]):
        keep = _evidence_settings(params)
        fit = clone(model).set_params(**keep, warm_start=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            comps = start_from(fit, chained).fit(data).components_
        if chain_holds(data, start, comps):
            _remember(sample, params, comps)
            return comps, True
        search[0] = True
    comps, warm = _guarded_fit(model, data, params, start)
    _remember(sample, params, comps)
    return comps, warm


def _guarded_fit(model, data, params, start):
    """Components of ``model``'s settings fitted on ``data`` at ``params`` from
    ``start``: the continuation when :func:`continuation_holds`, else the
    fit with the competing starts; that fit only without TV (``tv_ratio``
    0: ElasticNet PCA), with :data:`CONTINUATION` off, or after a
    continuation of the same search did not hold (:func:`continuations`).

    Returns
    -------
    components : ndarray
    warm : bool
        True when the continuation was kept.
    """
    keep = _evidence_settings(params)
    search = _SEARCH.get()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if CONTINUATION and params["tv_ratio"] > 0 and not (search and search[0]):
            fit = clone(model).set_params(**keep, warm_start=True)
            comps = start_from(fit, start).fit(data).components_
            if continuation_holds(data, start, comps):
                return comps, True
            if search is not None:
                search[0] = True
        fit = clone(model).set_params(**keep, warm_start=False)
        if params["tv_ratio"] == 0 and EVIDENCE_STARTS is not None:
            return _two_starts(fit, data, start, search), False
        return start_from(fit, start).fit(data).components_, False


def _starts_fit(fit, data, start, mode):
    """Components of ``fit`` (a clone) from ``start`` with the starts of ``mode``."""
    with _evidence_starts(mode):
        return start_from(clone(fit), start).fit(data).components_


def _two_starts(fit, data, start, search):
    """Without TV, the evidence fit with the starts of :data:`EVIDENCE_STARTS`.
    With :data:`DEFL0_FIRST`, within a search: its first such fit also fits
    deflation's unswept start alone, and when that is the fit kept (it won),
    each later one is that start alone, kept when it holds rank by rank
    against ``start`` (:func:`chain_holds`), else both starts' fit."""
    if EVIDENCE_STARTS == "given":
        comps = _starts_fit(fit, data, start, "given")
        return comps if chain_holds(data, start, comps) else _starts_fit(fit, data, start, None)
    won = None if search is None or not DEFL0_FIRST else search[4]
    if won:
        comps = _starts_fit(fit, data, start, "defl0")
        if chain_holds(data, start, comps):
            return comps
    comps = _starts_fit(fit, data, start, EVIDENCE_STARTS)
    if won is None and search is not None and DEFL0_FIRST:
        search[4] = bool(np.array_equal(_starts_fit(fit, data, start, "defl0"), comps))
    return comps


def _evidence_settings(params):
    """An evidence fit's settings at ``params`` (:data:`EVIDENCE_TOL`)."""
    keep = dict(params, stability=False, certify_support=False, verbose=0)
    if EVIDENCE_TOL is not None:
        keep["tol"] = EVIDENCE_TOL
    return keep


def full_starts(params):
    """:func:`_evidence_starts` of :data:`FULL_STARTS` (without TV) for a judged
    row's full fit at ``params``."""
    return _evidence_starts(FULL_STARTS if params["tv_ratio"] == 0 else None)


#: The joint fit's starts (:func:`~neurospca.decomposition.joint_starts`) per
#: mode of :data:`EVIDENCE_STARTS` (``"defl0"``: deflation's unswept fit alone).
_STARTS = {
    None: {},
    "given": {"deflation": False, "subspace": False},
    "given+defl0": {"deflation_sweeps": False, "subspace": False},
    "defl0": {"given": False, "deflation_sweeps": False, "subspace": False},
}


def _evidence_starts(mode):
    """The joint fit's starts for ``mode`` (:data:`EVIDENCE_STARTS`)."""
    return joint_starts(**_STARTS[mode])


def subsample_fits(model, X, params, groups=None):
    """The subsample stability of ``model``'s components (as
    ``decomposition.subsample_stability`` started from them: the same two
    overlapping subsamples and correction) from :func:`guarded_fit`."""
    seed = 0 if model.random_state is None else model.random_state
    X = np.asarray(X)
    with row_groups(model, X, groups):
        rows_a, rows_b, shared = overlapping_subsamples(X.shape[0], seed, groups_of(model))
        start = model.components_
        comps = [
            guarded_fit(model, X[rows], params, start, ("sub", k, seed))[0]
            for k, rows in enumerate((rows_a, rows_b))
        ]
    return overlap_corrected(component_stability(start, *comps), shared)
