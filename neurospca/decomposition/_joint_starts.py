"""Starts of a joint fit: the top singular subspace's, and the restart
checks side by side (issue 22).

:func:`_pca_scores` starts every component together from the data's top
singular subspace, with the first products from its kept images
(:func:`_pca_products`).

Before a component ``k`` of a settled joint fit is restarted
(:func:`~neurospca.decomposition._joint._restarts`), the start it would take,
the top singular direction of the data minus the other components, is
compared with its own scores: no restart when they are within
``RESTART_SAME`` (|cosine|). That start is the one of
:func:`~neurospca.decomposition._start.start_u` (Rayleigh-Ritz on the data's
top singular subspace and the removed components, then Davidson steps of one
pass each). Here the starts of several components are computed in lockstep
on the same state: each Davidson step of all of them in ONE pass over the
data (:func:`~neurospca.decomposition._deflated.gram_blocks`), the same
iterations and the same numbers as one at a time (bit for bit).
"""

import numpy as np

from . import _start
from ._data import uses_gram
from ._deflated import gram_blocks
from ._joint_certify import ProductCache, _others, know_products
from ._start import START_MAX_ITER, centred_gram, ritz_step
from ._subspace import SKETCH_OVERSAMPLE, SKETCH_WIDTH, cached_subspace


def svd_starts(defls, basis):
    """``start_u(defl, "svd", ...)`` of every deflation in ``defls`` (data not
    on the Gram path, each one's removed products known: a start with no
    pass), the Davidson steps of all of them in one pass each. Returns the
    list of ``(u, X_k^T u)``."""
    starts = [defl.deflated_basis(basis) for defl in defls]
    found = [None] * len(defls)
    active = list(range(len(defls)))
    for _ in range(START_MAX_ITER):
        more = []
        for i in active:
            done, found[i], Rv = ritz_step(starts[i], _start.CHECK_TOL)
            if not done:
                more.append((i, Rv))
        if not more:
            break
        blocks = gram_blocks([defls[i] for i, _ in more], [Rv for _, Rv in more])
        for (i, Rv), (ZR, GR) in zip(more, blocks, strict=True):
            starts[i] = tuple(
                np.column_stack([M, x]) for M, x in zip(starts[i], (Rv, ZR, GR), strict=True)
            )
        active = [i for i, _ in more]
    return found


def restart_starts(op, sqnorm, U, V, d, Z, ks, cache, same):
    """The restart checks of the components ``ks`` on the current state, side
    by side (:func:`svd_starts`; data not on the Gram path, ``init="svd"``).

    Returns ``{k: u0}`` for each ``k`` whose removed components' products are
    all kept (``Z`` and ``cache``, :func:`know_products`): ``u0`` the start of
    its restart (a column), or False when that start's scores are within
    ``same`` (|cosine|) of ``u_k`` (no restart). The others are left to the
    one-at-a-time check.
    """
    batch, out, basis = [], {}, cached_subspace(op, 1)[1:]
    for k in ks:
        defl = _others(op, sqnorm, U, V, d, Z, k)
        if not know_products(defl, Z, cache):
            continue
        if _clearly_same(op, sqnorm, (U, V, d, Z), k, cache, same, basis):
            out[k] = False
        else:
            batch.append((k, defl))
    if not batch:
        return out
    starts = svd_starts([defl for _, defl in batch], basis)
    out.update(
        (k, False if abs(float(u @ U[:, k])) >= same else u[:, None])
        for (k, _), (u, _) in zip(batch, starts, strict=True)
    )
    return out


#: Where the restart checks look ahead and are first tried in the larger span
#: (:func:`checks_ahead`, :func:`_clearly_same`), as ``_start.LOOK_AHEAD``:
#: ``"expensive"`` (round 17), where the passes this fit made say a pass is
#: expensive (:func:`~._data.pass_is_expensive`); ``"memmap"``, when a pass
#: reads the data from a file (a memmap or a dask array); True, everywhere;
#: False, nowhere. In memory they saved no pass on 30 trust instances (their
#: checks need more than the one direction ahead) and cost 7-17 % CPU (issue
#: 22 round 16); on a memmap in the page cache more CPU than they save.
CHECKS_WHERE = "expensive"


def _checks_here(op):
    """Whether the checks of ``op``'s fits look ahead (:data:`CHECKS_WHERE`)."""
    return _start.where_passes_cost(CHECKS_WHERE, op)


#: The restart checks are first tried in a span that holds the loadings whose
#: ``Xc^T Xc v`` the last sweep's pass kept (:func:`_known_loadings`,
#: :func:`_clearly_same`; issue 22 round 16).
CHECK_LOADINGS = True


def _known_loadings(defl, U, V, Z, k, cache):
    """Add to the check's span (:meth:`_Deflated.start_basis`) every loading
    ``v_j`` whose ``Xc v_j`` (``Z``) and ``Xc^T Xc v_j`` the sweeps' cache
    holds: the removed ones' as theirs, ``v_k``'s as a vector seen."""
    kept = getattr(cache, "av", [])  # a cache of Xc^T u only: none
    av = [ProductCache._find(kept, v) for v in V.T]
    defl.AV = [av[j] for j in defl.keep]
    if av[k] is not None and np.any(V[:, k]):
        defl.seen = [(V[:, k], Z[:, k], av[k])]


#: A check is decided "no restart" with no pass when the start found in a
#: larger span with no Davidson step (:func:`_clearly_same`) is within
#: ``same + CHECK_MARGIN * (1 - same)`` (|cosine|) of ``u_k``. A check that
#: says "restart" there is made again as before (its numbers, and so the
#: restart's start, bit for bit). 0.5 (half the distance to 1) kept the
#: memmap test's weakest component (0.9906) at two passes (round 16).
CHECK_MARGIN = 0.0


def _check_span(op, sqnorm, state, k, cache, basis):
    """The span of :func:`_clearly_same`: the data's top singular subspace, the
    kept loadings (:func:`_known_loadings`) and the look-ahead direction of
    ``k`` (``cache.ahead``), as ``(defl, (Q, X_k Q, X_k^T X_k Q))``, or None."""
    U, V, d, Z = state
    defl = _others(op, sqnorm, U, V, d, Z, k)
    if not (np.any(V[:, k]) and know_products(defl, Z, cache)):
        return None
    _known_loadings(defl, U, V, Z, k, cache)
    return defl, defl.deflated_basis(basis)


def _clearly_same(op, sqnorm, state, k, cache, same, basis):
    """Whether the restart check of ``k`` says "no restart" (with
    :data:`CHECK_MARGIN`) from the larger span of :func:`_check_span`, the
    look-ahead direction added when the first Ritz vector is not settled:
    a Ritz vector that passes :data:`~._start.CHECK_TOL` there, with no pass."""
    if not (CHECK_LOADINGS and _checks_here(op)):
        return False
    got = _check_span(op, sqnorm, state, k, cache, basis)
    if got is None:
        return False
    defl, start = got
    done, (u, _), _ = ritz_step(start, _start.CHECK_TOL)
    ahead = getattr(cache, "ahead", {}).get(k)
    if not done and ahead is not None:
        defl.seen = defl.seen + [ahead]
        done, (u, _), _ = ritz_step(defl.deflated_basis(basis), _start.CHECK_TOL)
    nu = float(np.linalg.norm(u))
    if not done or nu == 0.0:
        return False
    return abs(float(u @ state[0][:, k])) / nu >= same + CHECK_MARGIN * (1.0 - same)


#: A sweep's pass also computes the restart checks' first Davidson directions
#: on the state before it (:func:`checks_ahead`, issue 22 round 16).
CHECKS_AHEAD = True


def checks_ahead(op, sqnorm, U, V, d, Z, cache):
    """The restart checks' first Davidson direction of each component on the
    state ``(U, V, d, Z)`` (as :func:`restart_starts` would take it, with no
    pass), for a sweep from that state to compute in its own pass: ``{k: w}``
    (empty when no check would take a step). Once the sweep settles, the
    checks of its state (near this one) try their span with ``w`` added
    before their first Davidson step (``cache.ahead``)."""
    if not (CHECKS_AHEAD and CHECK_LOADINGS and getattr(cache, "want_checks", 0.0) > 0.0):
        return {}
    if uses_gram(op) or not _checks_here(op):
        return {}
    basis, out = cached_subspace(op, 1)[1:], {}
    for k in range(U.shape[1]):
        got = _check_span(op, sqnorm, (U, V, d, Z), k, cache, basis)
        if got is None:
            continue
        done, _, Rv = ritz_step(got[1], _start.CHECK_TOL)
        if not done and Rv is not None and Rv.shape[1]:
            out[k] = Rv[:, 0]
    return out


def _pca_scores(op, n_components):
    """The data's top ``n_components`` left singular vectors (unnormalised
    scores ``Xc r_k``): every component started together, as scikit-learn's
    SparsePCA starts from the SVD."""
    if uses_gram(op):
        return np.linalg.eigh(centred_gram(op))[1][:, ::-1][:, :n_components].copy()
    return cached_subspace(op, n_components)[2][:, :n_components].copy()


def _pca_products(op, u0, cache):
    """Put ``Xc^T u_k`` of the PCA start's unit scores in the sweeps' cache
    (data not on the Gram path): ``u0 = Xc R`` and ``Xc^T Xc R`` are the
    subspace's kept images, so the start's first products need no pass. The
    keys are the unit scores exactly as :func:`_start_from_scores` and the
    alternation's start normalise them."""
    if cache is None or uses_gram(op):
        return
    K = u0.shape[1]
    AR = cached_subspace(op, K)[3]
    units = u0 / np.linalg.norm(u0, axis=0)
    for k in range(K):
        n1, n2 = float(np.linalg.norm(u0[:, k])), float(np.linalg.norm(units[:, k]))
        cache._put(cache.xtu, units[:, k] / n2, AR[:, k] / (n1 * n2))


def subspace_first(op, n_components, svd_first):
    """Whether the starts may share their passes: the data's top singular
    subspace they use is computed here first (its numbers those of the
    subspace the starts would compute one after the other: the first start is
    deflation's from ``init="svd"``, whose first component asks for it, or
    every start asks for the same one). On the Gram path no subspace is used."""
    if not uses_gram(op):
        n, p = op.shape
        same = n_components + SKETCH_OVERSAMPLE <= SKETCH_WIDTH < min(n, p)
        if not (same or svd_first):
            return False
        cached_subspace(op, n_components)
    return True


def _collinearity(U):
    """The largest ``|u_j . u_k|`` (j != k) of unit scores (0 for one)."""
    C = np.abs(U.T @ U)
    np.fill_diagonal(C, 0.0)
    return float(C.max()) if C.size else 0.0


def loadings_cos(V):
    """The largest ``|cos|`` between two non-empty loadings (columns of ``V``; 0
    for fewer than two): near 1, two components are copies of one pattern."""
    norms = np.linalg.norm(V, axis=0)
    live = V[:, norms > 0] / norms[norms > 0]
    C = np.abs(live.T @ live)
    np.fill_diagonal(C, 0.0)
    return float(C.max()) if C.size else 0.0


#: A continuation's sweeps (``search=False``) stop when the loadings' largest
#: |cos| (:func:`loadings_cos`) is above COPIES_COS and rose in each of the last
#: COPIES_RISES sweeps: the sweeps are drifting to copies of one pattern, which
#: the joint objective rewards (each copy pays its own ridge; issue 20 rounds
#: 11-12). Separated fits of co-varying regions were seen to climb for 3-7
#: sweeps to 0.41-0.49 and then separate.
COPIES_COS = 0.5
COPIES_RISES = 3


class CopiesWatch:
    """The loadings' largest |cos| sweep after sweep (:func:`loadings_cos`), and
    the state at the foot of its current climb (``snap()`` taken there).

    ``climbed(V)`` after each sweep: True when the sweeps must stop
    (:data:`COPIES_COS`, :data:`COPIES_RISES`); ``before`` is then the state to
    return, and ``trace`` the |cos| of the start and of each sweep."""

    def __init__(self, V, snap):
        self.snap = snap
        self.trace = [loadings_cos(V)]
        self.rises = 0
        self.before = snap()

    def climbed(self, V):
        self.trace.append(loadings_cos(V))
        self.rises = self.rises + 1 if self.trace[-1] > self.trace[-2] else 0
        if self.rises == 0:
            self.before = self.snap()
        return self.trace[-1] > COPIES_COS and self.rises >= COPIES_RISES


def copies_message(n_sweeps, trace):
    """The ConvergenceWarning of a continuation stopped by :class:`CopiesWatch`
    after ``n_sweeps`` sweeps (``trace``: the loadings' largest |cos| of the
    start and of each sweep)."""
    foot = len(trace) - 1 - COPIES_RISES
    while foot > 0 and trace[foot] > trace[foot - 1]:
        foot -= 1
    return (
        f"the joint fit's sweeps were stopped after {n_sweeps} sweeps: the largest |cos| "
        f"between two loadings rose from {trace[foot]:.2f} to {trace[-1]:.2f} sweep after "
        "sweep, towards copies of one pattern (which the joint objective rewards), so the "
        f"state before that climb (after sweep {foot}) is returned. Each component's "
        "certified gap holds for the returned model. Fewer components, a stronger "
        "penalty or method='deflation' avoid this."
    )


def unsettled_message(max_sweeps, change, settle, U, swept):
    """The ConvergenceWarning of a joint fit whose sweeps did not settle.

    ``U``: the returned scores; ``swept``: None when the returned model is
    where the sweeps went, else ``(scores, J)`` of where they went and
    deflation's ``J`` (the returned model: the start with the lowest joint
    objective). Scores near collinear are what keeps the sweeps moving:
    components that fit the same pattern (or noise) trade loadings sweep after
    sweep, and no answer of the joint fit is settled there."""
    head = (
        f"the joint fit did not settle in max_sweeps={max_sweeps} sweeps (last relative "
        f"change of the loadings {change:.3e} > {settle:g})"
    )
    tail = (
        "Each component's certified gap holds for the returned model. Fewer "
        "components, a stronger penalty or method='deflation' avoid this."
    )
    if swept is None:
        return (
            f"{head}: the components are still trading loadings among themselves "
            f"(largest |u_j . u_k| of their scores {_collinearity(U):.2f}: near 1, two "
            f"components fit nearly the same scores). {tail}"
        )
    scores, value, returned = swept
    return (
        f"{head} from any start, and where they went the components' scores are "
        f"nearly collinear (largest |u_j . u_k| {_collinearity(scores):.2f}) and the "
        f"joint objective is higher ({value:.6g}) than deflation's ({returned:.6g}): the "
        "data do not hold this many distinct patterns at this penalty, so the returned "
        f"model is deflation's fit, the lowest joint objective. {tail}"
    )
