"""Joint SPCA-TV: the components fitted together by back-fitting (issue 20).

Deflation (paper Algorithm 3) fits component ``k`` on ``X`` minus the
components before it, so the first component takes the leading PCA direction
of the data: when regions co-vary (atrophy that shares a disease severity),
that direction merges them and the later components cannot undo it. The joint
fit starts from deflation's components and then sweeps: each component is
fitted again, with the same certified v-step, on the data minus ALL the other
components,

.. math::

    R_k = X - \\sum_{j \\ne k} d_j u_j v_j^T, \\qquad
    \\min_{\\|u_k\\|_2 \\le 1, v_k} -\\frac1N u_k^T R_k v_k + \\lambda_2 \\|v_k\\|_2^2
    + \\lambda_1 \\|v_k\\|_1 + \\lambda \\sum_g \\|A_g v_k\\|_2

(block-coordinate descent on the sum of rank-one fits, as scikit-learn's
SparsePCA and dictionary learning update one atom at a time), until a sweep
changes the loadings by at most ``max(tol, SWEEP_TOL)`` (relative, Frobenius
norm). A rank-one term of the unpenalised sum can be rotated within the top
singular subspace at no cost in fit, so the sweeps let the l1 and TV penalties
choose the rotation: separated regions. Each returned ``v_k`` is certified for its final ``u_k``
against the residual of the final other components.

The joint objective ``J`` (:mod:`~neurospca.decomposition._objective`) judges
the fit's choices between settled fits (the sweeps are not a descent of ``J``):
once the sweeps settle, each component is restarted from the top singular
direction of the residual of the others and kept if the re-settled ``J`` is
lower (:func:`_restarts`); the fit is also run from deflation's start (when it
started from given scores) and from the data's top singular subspace, and the
lowest ``J`` is kept, deflation's own included (:func:`_search`; the starts
side by side, sharing each pass over ``X``). A warm-started fit (a
continuation along a path) runs none of this.

The sweeps serve a product with ``X`` that an earlier pass already gave
(the next refit's ``X_k^T u_k``, the fit's ``Z = X V``) from a
:class:`~neurospca.decomposition._joint_certify.ProductCache`: one pass per
refit of a component instead of three (:data:`REUSE_PRODUCTS`).

With :data:`COPIES_GUARD` (off by default) a continuation's sweeps stop before
copies of one pattern: ``J`` rewards copies (each pays its own ridge), and cold
sweeps were seen to drift there for tens of sweeps; once the loadings' largest
|cos| is above 0.5 and rose in each of the last 3 sweeps, the state before that
climb is returned
(:class:`~neurospca.decomposition._joint_starts.CopiesWatch`, issue 20 round 12).

Size: 850+ lines, the sweeps, restarts and starts of one fit; the checks,
starts' helpers and certification are in modules of their own already.
"""

import copy
import threading
import time
import warnings
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._utils.routed_warnings import emit, recorded
from ._alternation import _alternate, _say, _vstep_blas
from ._data import uses_gram
from ._deflated import _Deflated
from ._joint_certify import (
    ProductCache,
    _certify_all,
    _ordered,
    _others,
    kept_rmatvecs,
    know_products,
)
from ._joint_starts import (
    CopiesWatch,
    _pca_products,
    _pca_scores,
    copies_message,
    restart_starts,
    subspace_first,
    unsettled_message,
)
from ._lockstep import run_side_by_side
from ._objective import joint_objective
from ._rotation import rotate_pairs
from ._start import LookAhead, gram_direction, signed_start, start_u
from ._subspace import cached_subspace
from ._sweep_pass import one_pass_sweep

#: The sweeps stop when the loadings move by at most ``max(tol, SWEEP_TOL)``
#: (relative, Frobenius norm) in one sweep. Near-equal components can keep
#: rotating into each other by a fraction of a percent per sweep for hundreds of
#: sweeps on real data (measured on brainspace's rs-fMRI run: 0.2-1 % per sweep
#: after 50 sweeps) while the separation of co-varying regions happens in moves
#: of 2-25 % per sweep (benchmarks/RESULTS.md, issue 20); every returned
#: component is certified for the returned model either way.
SWEEP_TOL = 1e-2


#: The sweeps also stop (settled) after a sweep that rotated no pair and
#: raised the joint objective ``J`` (:func:`_sweeps`): the refits no longer
#: improve the fit that the starts and restarts are judged by. At N = 100, P =
#: 1,906,624 each start's sweeps lowered ``J`` for 5 sweeps, then raised it in
#: each of the next 5 (+0.2 to +0.4 each) until the loadings moved by at most
#: :data:`SWEEP_TOL` (issue 22 round 17). Off: measured, it ended a fresh cube
#: (P = 216,000) at a higher ``J`` (+0.018, above the gaps) and moved the
#: real-data check's choice (half B to a stronger penalty with two empty
#: components; the halves agreed at 0.17 instead of 0.43): the continuations'
#: sweeps rise in ``J`` on their way too (benchmarks/RESULTS.md).
SWEEP_J_STOP = False


#: Keys of the sweeps' settings that are not :func:`_alternate`'s.
_OWN_KEYS = ("max_iter_full", "products")


def _refit(op, sqnorm, U, V, d, Z, k, w, kw, certify=True):
    """Component ``k`` fitted again on the residual of the others (warm start;
    ``certify``: :func:`_alternate`'s certify step)."""
    one = kw["max_iter"] == 1  # its residual's norm is not used (_others)
    defl = _others(op, sqnorm, U, V, d, Z, k, kw.get("products"), norm=not one)
    with recorded() as caught:
        u, v, info = _alternate(
            op,
            1,
            u0=U[:, [k]],
            w0=[w],
            defl=defl,
            certify=certify,
            **{key: val for key, val in kw.items() if key not in _OWN_KEYS},
        )
    return u[:, 0], v[:, 0], info, caught


def _revive(op, sqnorm, U, V, d, Z, k, info, kw, same=None, u0=None):
    """Fit component ``k`` from a fresh start (``init``: the top singular
    direction of the residual of the others) on that residual (full
    alternation); put it in place and return True if it is not empty.

    ``same``: with ``init="svd"``, no fit when that start's scores are within
    this |cosine| of ``u_k`` (the alternation would start where ``k`` is);
    returns False then. ``u0``: that start, already checked
    (:func:`~neurospca.decomposition._joint_checks.restart_starts`)."""
    defl = _others(op, sqnorm, U, V, d, Z, k)
    if u0 is None and same is not None and kw["init"] == "svd":
        if uses_gram(op):  # the check needs the direction only: X_k^T u after it
            u0 = gram_direction(defl, [Z[:, j] for j in defl.keep] if KNOWN_XV else None)
            if abs(float(u0 @ U[:, k])) >= same:
                return False
            u0 = signed_start(defl, u0)[0][:, None]
        else:
            if RESTART_CHECK_KNOWN:
                know_products(defl, Z, kw.get("products"))
            u0 = start_u(defl, "svd", kw["rng"], cached_subspace(op, 1)[1:])[0][:, None]
            if abs(float(u0[:, 0] @ U[:, k])) >= same:
                return False
    with recorded("ignore"):
        u, v, new = _alternate(
            op,
            1,
            u0=u0,
            w0=None,
            defl=defl,
            **dict(
                {key: val for key, val in kw.items() if key not in _OWN_KEYS},
                max_iter=kw["max_iter_full"],
            ),
        )
    if np.any(v):
        U[:, k], V[:, k], d[k] = u[:, 0], v[:, 0], new["d"][0]
        Z[:, k] = _xv(op, V[:, k], kw)
        _merge_info(info, k, new)
        return True
    return False


def _xv(op, v, kw):
    """``Xc v``: from the sweeps' :class:`ProductCache` when it holds it, else one pass."""
    cache = kw.get("products")
    return op.matvec(v) if cache is None else cache.matvec(op, v)


def _merge_info(info, k, new):
    """Component ``k``'s record after a refit: counts add up, histories continue."""
    offset = int(info["n_inner_iter"][k])
    for key in ("gap_history", "rel_gap_history"):
        info[key][k] = info[key][k] + [(offset + i, g) for i, g in new[key][0]]
    info["mu_history"][k] = info["mu_history"][k] + [
        (offset + i, mu, e) for i, mu, e in new["mu_history"][0]
    ]
    for key in ("n_iter", "n_inner_iter", "time"):
        info[key][k] += new[key][0]
    for key in ("d", "gaps", "rel_gaps", "converged"):
        info[key][k] = new[key][0]
    info["w"][k] = new["w"][0]
    info["y"][k] = new["y"][0]


def _sweep(op, sqnorm, U, V, d, Z, info, kw):
    """One back-fitting sweep: each non-empty component gets one u-step and one
    v-step on the residual of the others. Returns the v-step warnings."""
    done, caught = (
        one_pass_sweep(op, sqnorm, U, V, d, Z, info, kw, _merge_info) if ONE_PASS else (0, [])
    )
    for k in range(done, U.shape[1]):
        if not np.any(V[:, k]):  # it may come back once the others have split
            _revive(op, sqnorm, U, V, d, Z, k, info, kw)
            continue
        u, v, new, warned = _refit(op, sqnorm, U, V, d, Z, k, info["w"][k], kw)
        caught.extend(
            w
            for w in warned
            if issubclass(w.category, ConvergenceWarning) and "v-step" in str(w.message)
        )
        U[:, k], V[:, k], d[k] = u, v, new["d"][0]
        Z[:, k] = _xv(op, v, kw) if np.any(v) else 0.0
        _merge_info(info, k, new)
    return caught


@dataclass
class _Loop:
    """How the sweeps run: rotation step, most sweeps, the change that settles
    them, progress lines, the relative change of each sweep (appended), whether
    they stop before copies (:class:`CopiesWatch`) and, once they did, its trace."""

    rotate: bool
    restart: bool
    max_sweeps: int
    settle: float
    verbose: int
    changes: list
    guard: bool = False
    stopped: list = None


def _objective(op, U, V, Z, kw):
    """The joint objective of the current fit (:func:`joint_objective`)."""
    return joint_objective(op, U, V, kw["l2"], kw["pieces"], Z=Z)


def _snapshot(U, V, d, Z, info):
    """A copy of the fit's state (arrays and record) to return to."""
    return U.copy(), V.copy(), d.copy(), Z.copy(), copy.deepcopy(info)


def _restore(snap, U, V, d, Z, info):
    """Put a :func:`_snapshot` back in place."""
    for dst, src in zip((U, V, d, Z), snap[:4], strict=True):
        dst[...] = src
    info.clear()
    info.update(snap[4])


def _sweeps(op, sqnorm, U, V, d, Z, info, kw, loop):
    """Back-fitting sweeps (each after a pair rotation) until the loadings move
    by at most ``loop.settle``, at most ``loop.max_sweeps`` in this call; with
    :data:`SWEEP_J_STOP` also (settled) after a sweep that rotated no pair and
    raised ``J``. With
    ``loop.guard`` they also stop when :class:`CopiesWatch` sees a steady climb
    towards copies; its foot's state is put back and its trace left in
    ``loop.stopped`` (not settled).

    Returns
    -------
    settled : bool
    caught : list
        The last sweep's v-step warnings.
    value : float
        The joint objective of the state reached.
    """
    caught, last = [], None
    watch = CopiesWatch(V, partial(_snapshot, U, V, d, Z, info)) if loop.guard else None
    for _ in range(loop.max_sweeps):
        t0 = time.perf_counter()
        V_old = V.copy()
        rotated = rotate_pairs(op, U, V, d, Z, info) if loop.rotate else 0
        caught = _sweep(op, sqnorm, U, V, d, Z, info, kw)
        change = float(np.linalg.norm(V - V_old) / max(np.linalg.norm(V), 1e-300))
        loop.changes.append(change)
        if loop.verbose:
            _say(
                "joint sweep %d: %d pairs rotated, relative change of the loadings %.2e (%.2f s)",
                len(loop.changes),
                rotated,
                change,
                time.perf_counter() - t0,
            )
        if change <= loop.settle:
            return True, caught, _objective(op, U, V, Z, kw)
        if SWEEP_J_STOP:  # J rose in a sweep that rotated nothing: the sweeps stalled
            value, before = _objective(op, U, V, Z, kw), last
            last = value
            if before is not None and not rotated and value > before:
                return True, caught, value
        if watch is not None and watch.climbed(V):  # drifting to copies: the foot of the climb
            _restore(watch.before, U, V, d, Z, info)
            loop.stopped = watch.trace
            if loop.verbose:
                _say("joint sweeps stopped before copies: loadings' |cos| %s", watch.trace)
            return False, [], _objective(op, U, V, Z, kw)
    return False, caught, _objective(op, U, V, Z, kw)


def _restarts(op, sqnorm, U, V, d, Z, info, kw, loop, value):
    """Each component, weakest first, fitted again from the top singular
    direction of the residual of the others (:func:`_revive`; not when that
    direction is the component's own, :data:`RESTART_SAME`), then the sweeps
    until they settle again; the new settled state is kept only if its joint
    objective is lower by more than :data:`RESTART_GAIN` of its explained part
    (settled states are compared: the sweeps are not a descent of ``J``, so a
    state part-way is no answer). A component that the sweeps left empty, or
    on a few noise features with scores that follow no pattern, is replaced
    this way by the pattern the residual still holds (issue 20 round 4, the
    paper's set-up with correlated weights).

    Returns
    -------
    replaced : int
    value : float
        The joint objective of the state left in place.
    """
    base = op.sqnorm() / (2.0 * op.shape[0])
    strength = d * np.linalg.norm(V, axis=0)
    replaced = 0
    order = [int(k) for k in np.argsort(strength, kind="stable")]
    checks = None  # the batched checks of the state in place
    for i, k in enumerate(order):
        if checks is None:
            checks = _checks(op, sqnorm, U, V, d, Z, order[i:], kw)
        if checks.get(k) is False:
            continue
        snap = _snapshot(U, V, d, Z, info), len(loop.changes)
        if not _revive(op, sqnorm, U, V, d, Z, k, info, kw, same=RESTART_SAME, u0=checks.get(k)):
            continue
        settled, _, new = _sweeps(op, sqnorm, U, V, d, Z, info, kw, loop)
        if settled and new < value - RESTART_GAIN * abs(base - value):
            value, replaced, checks = new, replaced + 1, None
        else:  # the same state again: the checks made on it hold
            _restore(snap[0], U, V, d, Z, info)
            del loop.changes[snap[1] :]
    return replaced, value


def _checks(op, sqnorm, U, V, d, Z, ks, kw):
    """The restart checks of components ``ks`` side by side, one pass per
    Davidson step for all (:data:`BATCH_CHECKS`; data not on the Gram path,
    ``init="svd"``, products kept: :data:`RESTART_CHECK_KNOWN`): ``{k: u0 or
    False}``; a component not in it is checked by :func:`_revive`."""
    if not (BATCH_CHECKS and RESTART_CHECK_KNOWN) or uses_gram(op) or kw["init"] != "svd":
        return {}
    return restart_starts(op, sqnorm, U, V, d, Z, ks, kw.get("products"), RESTART_SAME)


def _settle(op, sqnorm, U, V, d, Z, info, kw, loop):
    """Sweeps (:func:`_sweeps`); once they settle, restarts of single
    components (:func:`_restarts`), at most :data:`RESTART_PASSES` passes.
    Returns ``(settled, caught, joint objective)``."""
    if loop.restart and kw.get("products") is not None:  # the sweeps look ahead to the checks
        kw["products"].want_checks = loop.settle if kw["init"] == "svd" else 0.0
    settled, caught, value = _sweeps(op, sqnorm, U, V, d, Z, info, kw, loop)
    for _ in range(RESTART_PASSES if loop.restart and settled else 0):
        replaced, value = _restarts(op, sqnorm, U, V, d, Z, info, kw, loop, value)
        if loop.verbose:
            _say("joint restarts: %d components replaced, objective %.10g", replaced, value)
        if not replaced:
            break
    return settled, caught, value


def _deflation_start(op, n_components, u0, w0, tol, kw, cache=None):
    """Deflation's fit (paper Algorithm 3; warm-started from ``u0``, ``w0`` when
    given) as the state ``(U, V, d, Z, info)`` of the sweeps.

    ``Z = Xc V`` and each ``Xc^T u_k`` (into ``cache``, the sweeps'
    :class:`ProductCache`) come from the alternation's own last passes, kept
    undeflated by its :class:`_Deflated` (:data:`DEFLATION_PRODUCTS`), when it
    kept them for every component; else ``Z`` is one pass. Its u-steps look
    ahead to the next start (:class:`~._start.LookAhead`)."""
    defl = LookAhead(op, n_components) if u0 is None and kw["init"] == "svd" else _Deflated(op)
    U, V, info = _alternate(
        op, n_components, u0=u0, w0=w0, tol=tol, verbose=0, defl=defl, moved=MOVED_GAPS, **kw
    )
    info = {key: list(val) for key, val in info.items()}
    d = np.asarray(info["d"], dtype=np.float64)
    live = int(np.count_nonzero(np.any(V != 0, axis=0)))
    if not (DEFLATION_PRODUCTS and defl.known() and len(defl.XV) == live):
        return U, V, d, op.matmat(V), info
    Z = np.zeros((op.shape[0], n_components))
    for k in range(live):
        Z[:, k] = defl.XV[k]
        if cache is not None:
            cache._put(cache.xtu, U[:, k], defl.XtU[k])
    return U, V, d, Z, info


def _run_from(op, sqnorm, state, refit_kw, loop):
    """The sweeps and restarts (:func:`_settle`) from ``state`` (changed in
    place), with a sweep count of their own; returns a :class:`_Candidate`."""
    own = replace(loop, changes=[])
    settled, caught, value = _settle(op, sqnorm, *state, refit_kw, own)
    if loop.verbose:
        _say("joint fit settled=%s, objective %.10g", settled, value)
    kept = kept_rmatvecs(state[0], state[1], refit_kw.get("products"))
    return _Candidate(state, settled, caught, own.changes, value, kept, stopped=own.stopped)


@dataclass
class _Candidate:
    """A joint fit from one start: its state ``(U, V, d, Z, info)``, whether the
    sweeps settled, the last sweep's warnings, the sweeps' changes, ``J`` and
    the kept ``Xc^T u_k`` of its scores (:func:`kept_rmatvecs`)."""

    state: tuple
    settled: bool
    caught: list
    changes: list
    value: float
    kept: dict = field(default_factory=dict)
    swept: tuple = None
    stopped: list = None


def _search(op, n_components, sqnorm, first, tol, kw, refit_kw, loop):
    """The joint fit of lowest joint objective among its starts.

    ``first = (job, kind)``: ``job(refit_kw)``, the fit from the given start,
    gives ``(candidate, deflation's state or None)``; ``kind`` "svd" or "warm"
    (deflation's, from ``init="svd"`` or from given scores) or "scores"
    (``alpha_rel="auto"``'s chosen half fit: then deflation's fit is a start
    too, a half fit that lost a pattern must not do worse). Also fitted: the
    start from the data's top singular subspace (:func:`_pca_scores`; all
    components at once, where deflation's first component merges co-varying
    regions, issue 20 round 4). The starts run side by side, sharing each
    pass over ``X`` (:func:`~neurospca.decomposition._lockstep.run_side_by_side`,
    each with its own :class:`ProductCache`: the numbers of one after the
    other). Settled fits are compared (the sweeps are not a descent of ``J``),
    and deflation's own state is kept when its ``J`` is lower still.
    """
    given, deflation, deflation_sweeps, subspace = start_switches()
    jobs = [first[0]]
    if first[1] != "scores" and subspace and not DEFLATION_SWEEPS:
        jobs[0] = partial(jobs[0], sweep=False)
    if first[1] == "scores" and deflation:
        defl = partial(_deflation_job, sweep=deflation_sweeps)
        jobs.append(partial(defl, op, n_components, sqnorm, None, None, tol, kw, loop))
    if subspace:
        jobs.append(partial(_scores_job, op, n_components, sqnorm, None, None, loop))
    if first[1] == "scores" and not given and len(jobs) > 1:
        jobs = jobs[1:]
    own = refit_kw.get("products") is not None  # a cache of its own for each start
    jobs = [
        partial(job, dict(refit_kw, products=ProductCache(4 * n_components)) if own else refit_kw)
        for job in jobs
    ]
    jobs = [partial(_start_recorded, job) for job in jobs]
    if kw["init"] == "svd" and subspace_first(op, n_components, first[1] == "svd"):
        got = run_side_by_side(op, jobs)
    else:  # the same numbers, one after the other
        got = [job() for job in jobs]
    found = [(c, logs) for c, _, logs in got if c is not None]
    defl, defl_log = next(((d, logs[0]) for _, d, logs in got if d is not None), (None, []))
    value = np.inf if defl is None else _objective(op, defl[0], defl[1], defl[3], refit_kw)
    if not found:  # deflation's unswept state alone (the subspace start failed)
        emit(defl_log)
        kept = kept_rmatvecs(defl[0], defl[1], refit_kw.get("products"))
        return _Candidate(defl, True, [], [], value, kept)
    best, logs = min(found, key=lambda c: (not c[0].settled, c[0].value))
    if value < best.value:  # the unsettled sweeps' scores, for the warning
        swept = None if best.settled else (best.state[0], best.value)
        best = _Candidate(defl, best.settled, [], best.changes, value, swept=swept)
        logs = (defl_log, [])
    emit(logs[0] + logs[1])  # the returned start's warnings only
    if loop.verbose:
        _say("joint fit: objectives %s; deflation's %.10g", [c.value for c, _ in found], value)
    return best


#: Only the returned start's warnings reach the caller (:func:`_start_recorded`):
#: a losing start's (e.g. deflation's "component k is identically zero" when
#: the subspace start wins) are dropped (issue 22 round 20).
RETURNED_WARNINGS_ONLY = True


def _start_recorded(job):
    """``job()`` of :func:`_search` (``(candidate, deflation's state)``) with its
    warnings recorded: ``(candidate, state, (warnings of deflation's fit,
    warnings after it))``; the start's own fit and its sweeps are told apart
    (``_deflation_job`` records its fit's). Warnings go on as they come when
    :data:`RETURNED_WARNINGS_ONLY` is off."""
    if not RETURNED_WARNINGS_ONLY:
        return job() + (([], []),)
    try:
        with recorded("start") as log:
            _FIRST.log, _FIRST.split = log, 0
            candidate, state = job()
    finally:
        _FIRST.log = None
    return candidate, state, (log[: _FIRST.split], log[_FIRST.split :])


#: Per thread: the list of :func:`_start_recorded`'s start (``.log``) and how
#: many of its first warnings are deflation's fit's (``.split``).
_FIRST = threading.local()


def _deflation_job(op, n_components, sqnorm, u0, w0, tol, kw, loop, refit_kw, sweep=True):
    """The start from deflation's fit (from ``u0``, ``w0``): ``(candidate, its
    state)``; with ``sweep=False`` (:data:`DEFLATION_SWEEPS`) no sweeps: ``(None,
    its state)``, deflation's fit a candidate as it is."""
    log = getattr(_FIRST, "log", None)  # recorded: deflation's fit's warnings told apart
    with recorded("start") if log is not None else nullcontext() as first:
        state = _deflation_start(op, n_components, u0, w0, tol, kw, refit_kw.get("products"))
    if log is not None:
        emit(first)
        _FIRST.split = len(log)
    defl = _snapshot(*state)
    if not sweep:
        return None, defl
    return _run_from(op, sqnorm, state, refit_kw, loop), defl


def _scores_job(op, n_components, sqnorm, u0, w0, loop, refit_kw):
    """The start from the scores ``u0`` (None: the data's top singular
    subspace's, its first products kept): ``(candidate or None, None)``."""
    if u0 is None:
        u0 = _pca_scores(op, n_components)
        if not np.all(np.any(u0 != 0, axis=0)):
            return None, None
        _pca_products(op, u0, refit_kw.get("products"))
        if PCA_START_SIDE_BY_SIDE:
            state = _start_side_by_side(op, sqnorm, u0, refit_kw)
            return _run_from(op, sqnorm, state, refit_kw, loop), None
    state = _start_from_scores(op, sqnorm, u0, w0, refit_kw)
    return _run_from(op, sqnorm, state, refit_kw, loop), None


#: A restarted component is kept when the joint objective falls by more than
#: this fraction of its explained part ``|J - ||X||^2 / (2N)|``.
RESTART_GAIN = 1e-6

#: A component is not restarted when the restart's start (the top singular
#: direction of the residual of the others) has scores within this |cosine| of
#: its own: the restart would begin where it is (1 - :data:`SWEEP_TOL`).
RESTART_SAME = 1.0 - SWEEP_TOL

#: A joint fit started from given scores also runs from deflation's start
#: (:func:`_search`) and keeps the lower joint objective.
DEFLATION_START = True
#: That start is swept like the others (False: its unswept fit competes as it is;
#: ``select_penalty``'s ElasticNet evidence fits, issue 20 round 19).
DEFLATION_START_SWEEPS = True
#: The given scores' start runs (False: the others only; issue 20 round 19).
GIVEN_START = True


#: The starts set by :func:`joint_starts` in this thread / context, else None.
_STARTS = ContextVar("neurospca_joint_starts", default=None)


@contextmanager
def joint_starts(given=True, deflation=True, deflation_sweeps=True, subspace=True):
    """The starts of the joint fits made within, in this thread only (for
    :data:`GIVEN_START`, :data:`DEFLATION_START`, :data:`DEFLATION_START_SWEEPS`,
    :data:`PCA_START`): ``select_penalty``'s ElasticNet evidence fits (issue 20
    round 19). A context variable, so fits in other threads (a threaded joblib
    or dask worker) keep theirs."""
    token = _STARTS.set((given, deflation, deflation_sweeps, subspace))
    try:
        yield
    finally:
        _STARTS.reset(token)


def start_switches():
    """``(given, deflation, deflation_sweeps, subspace)``: :func:`joint_starts`'s
    in this context, else the module's switches."""
    got = _STARTS.get()
    if got is not None:
        return got
    return GIVEN_START, DEFLATION_START, DEFLATION_START_SWEEPS, PCA_START


#: The joint fit also runs from the data's top singular subspace
#: (:func:`_search`) and keeps the lower joint objective.
PCA_START = True

#: Deflation's start (from ``init="svd"`` or warm scores) is swept like the
#: others (:func:`_search`); False: its fit is a candidate as it is and only
#: the other starts sweep (a pass count of the subspace start's instead of
#: deflation's plus its sweeps: memmap test 20 -> 19 passes; recovery the same
#: on 15 fresh trust instances, but ``J`` higher than with the swept start by
#: more than the certified gaps on 2 of them, issue 22 round 14:
#: benchmarks/RESULTS.md; kept on).
DEFLATION_SWEEPS = True

#: The start from the data's top singular subspace fits its components side
#: by side, each on the whole data (:func:`_start_side_by_side`: one pass for
#: all) instead of each on the residual of those before it with a certify step
#: (:func:`_start_from_scores`: two passes each).
PCA_START_SIDE_BY_SIDE = False

#: The returned scores' ``Xc^T u`` kept in the returned order and signs
#: (:func:`keep_returned`): the support's snapshot needs no pass when signs flip.
#: Off: measured (issue 22 round 13), the support's finishing then took 2-3x the
#: wall time on cube86 / cube124 and the fit +30 % CPU at N = 100, P = 636,056,
#: for one pass saved; not understood yet.
KEEP_RETURNED = False

#: The sweeps keep the products with ``X`` they computed (``Xc v`` of each
#: loading, ``Xc^T u`` of each u-step's scores) and serve a later product with
#: the same vector from them (:class:`ProductCache`): two of the three passes
#: over ``X`` of a component's refit in a sweep (issue 22).
REUSE_PRODUCTS = True

#: The restart check of data not on the Gram path (:func:`_revive`) starts
#: from the data's top singular subspace deflated by the other components'
#: kept products (``Z`` and the sweeps' :class:`ProductCache`), with no pass,
#: instead of a pass for the Ritz vector of the undeflated subspace (issue 22).
RESTART_CHECK_KNOWN = True

#: Passes saved (issue 22): the restart checks of a settled state side by side
#: (:func:`_checks`, one pass per Davidson step for all components); the
#: certification's ``Xc^T u_k`` from the fit's last passes (:func:`kept_rmatvecs`);
#: deflation's start's ``Xc V`` and ``Xc^T u_k`` from its alternation's kept
#: products (:func:`_deflation_start`).
BATCH_CHECKS = CERTIFY_KEPT = DEFLATION_PRODUCTS = True

#: The certify steps of the fit's alternations (its starts, sweeps and
#: restarts) take :func:`~neurospca.decomposition._alternation.moved_gap`'s
#: bound as a pair's gap when it certifies (below
#: :data:`~neurospca.decomposition._alternation.MOVED_SHARE` of the tolerance):
#: the same iterates without the certificate's products (issue 22 round 15: the
#: sweeps' certificates were 18 of 52 CPU s at N = 100, P = 1,906,624); the
#: returned pairs are certified afresh (:func:`_certify_all`).
MOVED_GAPS = True

#: The restart check on the Gram path (:func:`_revive`) takes the other
#: components' ``Xc v_j`` from the fit's ``Z`` instead of a pass each (issue 22
#: round 15). Off with :data:`._sweep_pass.ON_GRAM_PATH`: the lead's merge kept
#: the Gram path's fits bit for bit as before (a small float64 half fit at
#: alpha_rel 4 got 3 non-zero loadings where it was empty,
#: tests/test_split_search_settled.py).
KNOWN_XV = False

#: A sweep's components refitted with one pass over ``X`` for all
#: (:func:`~neurospca.decomposition._sweep_pass.one_pass_sweep`; issue 22 round 15).
ONE_PASS = True

#: Most restart passes of one joint fit.
RESTART_PASSES = 2

#: A continuation's sweeps (``search=False``) stop before copies of one pattern
#: (:class:`~neurospca.decomposition._joint_starts.CopiesWatch`, issue 20 round 12).
#: Off: measured, it cut the cost's tail (7.4x -> 5.4x on fresh seeds) but the
#: states it keeps made one recovered component's ``stability_`` a false flag
#: (0.01) on one of four more instances; a false "does not reproduce" costs more trust
#: than the seconds it saves (docs/trust.rst).
COPIES_GUARD = False


def _start_from_scores(op, sqnorm, u0, w0, kw):
    """A warm start from given scores (e.g. a fit at a stronger penalty): one
    u-step and v-step per component from ``u0[:, k]`` on the residual of the
    components already started, instead of deflation (which would pull the
    first component back to the merged leading direction)."""
    U, V, d, Z, info = _empty_state(op, u0, w0)
    for k in range(u0.shape[1]):
        u, v, new, _ = _refit(op, sqnorm, U, V, d, Z, k, info["w"][k], kw)
        U[:, k], V[:, k], d[k] = u, v, new["d"][0]
        Z[:, k] = _xv(op, v, kw) if np.any(v) else 0.0
        _merge_info(info, k, new)
    return U, V, d, Z, info


def _start_side_by_side(op, sqnorm, u0, kw):
    """The start from the scores ``u0`` with every component fitted on the
    whole data (none removed: one u-step and v-step from ``u0[:, k]``, no
    certify step), the components side by side (:func:`run_side_by_side`:
    one shared pass for all; :data:`PCA_START_SIDE_BY_SIDE`). For the data's
    top singular subspace, whose scores are orthogonal, the others' share of
    each one's residual is small, and the sweeps that follow refit each one on
    the residual of the others."""
    U, V, d, Z, info = _empty_state(op, u0, None)
    empty = U.copy(), V.copy(), d.copy(), Z.copy()  # d = 0: nothing removed
    jobs = [partial(_refit, op, sqnorm, *empty, k, None, kw, False) for k in range(u0.shape[1])]
    for k, (u, v, new, _) in enumerate(run_side_by_side(op, jobs)):
        U[:, k], V[:, k], d[k] = u, v, new["d"][0]
        Z[:, k] = _xv(op, v, kw) if np.any(v) else 0.0
        _merge_info(info, k, new)
    return U, V, d, Z, info


def _empty_state(op, u0, w0):
    """The sweeps' state ``(U, V, d, Z, info)`` of unit scores ``u0`` and no
    loadings yet (``w0``: the v-steps' solver states, or None)."""
    n_samples, K = u0.shape
    U = u0 / np.linalg.norm(u0, axis=0)
    V = np.zeros((op.shape[1], K))
    d, Z = np.zeros(K), np.zeros((n_samples, K))
    info = {
        key: [val] * K
        for key, val in (
            ("d", 0.0),
            ("gaps", np.nan),
            ("rel_gaps", np.nan),
            ("n_iter", 0),
            ("n_inner_iter", 0),
            ("converged", False),
            ("time", 0.0),
        )
    }
    for key in ("gap_history", "rel_gap_history", "mu_history"):
        info[key] = [[] for _ in range(K)]
    info["w"] = list(w0) if w0 is not None else [None] * K
    info["y"] = [None] * K
    return U, V, d, Z, info


def _joint(op, n_components, *, tol, verbose, max_sweeps, from_scores, rotate, restart, search, kw):
    """Deflation (or, with ``from_scores``, a start from the scores ``u0``),
    then back-fitting sweeps (inputs validated, BLAS held).

    Returns ``U, V, info`` as :func:`~neurospca.decomposition._alternation._spca_tv`,
    plus ``info["n_sweeps"]`` and ``info["sweep_change"]`` (relative change of
    the loadings per sweep). The sweeps stop after one in which the loadings
    moved by at most ``max(tol, SWEEP_TOL)`` (relative); the gaps are then
    evaluated for the returned model (:func:`_certify_all`).
    """
    u0, w0 = kw.pop("u0"), kw.pop("w0")
    refit_kw = dict(
        kw, tol=tol, verbose=0, max_iter=1, max_iter_full=kw["max_iter"], moved=MOVED_GAPS
    )
    if REUSE_PRODUCTS:
        refit_kw["products"] = ProductCache(4 * n_components)
    sqnorm = op.sqnorm()
    from_u0 = from_scores and u0 is not None and np.all(np.any(u0 != 0, axis=0))
    loop = _Loop(rotate, restart and search, max_sweeps, max(tol, SWEEP_TOL), verbose, [])
    loop.guard, stopped = COPIES_GUARD and not search, None
    if n_components > 1 and search:
        if from_u0:
            first = partial(_scores_job, op, n_components, sqnorm, u0, w0, loop), "scores"
        else:
            job = partial(_deflation_job, op, n_components, sqnorm, u0, w0, tol, kw, loop)
            first = job, "svd" if u0 is None else "warm"
        best = _search(op, n_components, sqnorm, first, tol, kw, refit_kw, loop)
        state, settled, caught, changes, kept = (
            best.state, best.settled, best.caught, best.changes, best.kept
        )  # fmt: skip
        swept = None if best.swept is None else best.swept + (best.value,)
    else:
        if from_u0:
            state = _start_from_scores(op, sqnorm, u0, w0, refit_kw)
        else:
            state = _deflation_start(op, n_components, u0, w0, tol, kw, refit_kw.get("products"))
        settled, caught, changes = True, [], []  # one component: nothing to rotate or restart
        kept, swept = kept_rmatvecs(state[0], state[1], refit_kw.get("products")), None
        if n_components > 1:  # a continuation: the sweeps from its start only
            first = _run_from(op, sqnorm, state, refit_kw, loop)
            settled, caught, changes, kept = first.settled, first.caught, first.changes, first.kept
            stopped = first.stopped
    U, V, d, Z, info = state
    if stopped is not None:
        warnings.warn(copies_message(len(changes), stopped), ConvergenceWarning, stacklevel=2)
    elif not settled:
        msg = unsettled_message(max_sweeps, changes[-1], max(tol, SWEEP_TOL), U, swept)
        warnings.warn(msg, ConvergenceWarning, stacklevel=2)
    for w in caught:  # the last sweep's v-steps that stopped short of tol
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    _certify_all(op, sqnorm, U, V, d, Z, info, kw, tol, settled, kept if CERTIFY_KEPT else None)
    if verbose:
        for k in range(n_components):
            _say(
                "component %d done: %d alternations, %d solver iterations, gap %.3e, %.2f s",
                k,
                info["n_iter"][k],
                info["n_inner_iter"][k],
                info["gaps"][k],
                info["time"][k],
            )
    info["d"] = d
    info["n_sweeps"] = len(changes)
    info["sweep_change"] = changes
    value = _objective(op, U, V, Z, kw)  # J of the fit returned (no data pass)
    live = [k for k in range(n_components) if np.any(V[:, k])]
    xv = [(V[:, k].copy(), Z[:, k].copy()) for k in live] if KEPT_SCORES else None
    if not KEEP_RETURNED:
        U, V, info = _ordered(U, V, info)
        info["objective"], info["xv"] = value, xv
        return U, V, info
    us = [U[:, k].copy() for k in live]
    kept = list(zip(us, op.rmatvecs(us, exact=True), strict=True))  # served: _certify_all's
    U, V, info = _ordered(U, V, info)
    info["objective"], info["xv"] = value, xv
    keep_returned(op, U, V, kept)
    return U, V, info


def returned_signs(V):
    """The signs of the returned components (+1 or -1 per column of ``V``):
    each one's largest-|loading| positive (the estimator's convention)."""
    j = np.argmax(np.abs(V), axis=0)
    return np.where(V[j, np.arange(V.shape[1])] < 0, -1.0, 1.0)


#: The fit hands its kept ``Xc v_k`` to the diagnostics (``info["xv"]``,
#: :func:`kept_scores`): ``explained_variance_`` with no pass when the finishing
#: did not move the loadings (issue 22 round 16).
KEPT_SCORES = True


def kept_scores(V, xv):
    """``Xc C^T`` of the unit loadings ``C^T`` (columns of ``V`` normalised)
    from ``xv = [(v, Xc v)]``, the fit's kept products (``info["xv"]``), when
    each non-zero column of ``V`` is one of those ``v`` or its negative (bit for
    bit: the finishing did not move it); else None (a pass), also when nothing
    was kept (every component empty)."""
    if not xv:  # none kept, or every component empty (then the pass gives the rows)
        return None
    Z = np.zeros((xv[0][1].shape[0], V.shape[1]))
    for k in range(V.shape[1]):
        nrm = float(np.linalg.norm(V[:, k]))
        if nrm == 0.0:
            continue
        found = [s * z for v, z in xv for s in (1.0, -1.0) if np.array_equal(s * v, V[:, k])]
        if not found:
            return None
        Z[:, k] = found[0] / nrm
    return Z


def keep_returned(op, U, V, kept):
    """Keep ``Xc^T u`` of the pairs ``kept = [(u, Xc^T u)]`` for the returned
    scores as the estimator asks for them (its support's snapshot): in the
    returned order and signed by :func:`returned_signs` (a negated product is
    exact), so that they need no pass."""
    signs = returned_signs(V)
    us, values = [], []
    for k in range(V.shape[1]):
        if np.any(V[:, k]):
            found = [g for u, g in kept if np.array_equal(u, U[:, k])]
            if not found:
                return
            us.append(signs[k] * U[:, k])
            values.append(signs[k] * found[0])
    op.keep_rmatvecs(us, values, exact=True)


def _joint_spca_tv(
    op,
    n_components,
    *,
    tol,
    verbose,
    n_threads,
    max_sweeps,
    from_scores=False,
    rotate=True,
    restart=True,
    search=True,
    **kw,
):
    """:func:`_joint` with BLAS held for the whole fit (see ``_spca_tv``).

    ``from_scores``: start the sweeps from the scores ``u0`` (the chosen half
    fit of ``alpha_rel="auto"``) instead of deflation; else ``u0`` is
    deflation's warm start. ``rotate``: each sweep starts with
    :func:`~neurospca.decomposition._rotation.rotate_pairs` (an l1 penalty is
    what makes one rotation of a pair better than another). ``search``: the
    restarts and the other starts of :func:`_search`; off for a
    continuation (a warm-started fit along a path, e.g. the split halves of
    ``alpha_rel="auto"``, which follow their previous point: measured, issue 20
    round 4, the halves of ``select_penalty``'s paper simulation reproduced at
    0.63 with the search against 0.79 without, and the choice moved to a worse
    point)."""
    with _vstep_blas(n_threads):
        return _joint(
            op,
            n_components,
            tol=tol,
            verbose=verbose,
            max_sweeps=max_sweeps,
            from_scores=from_scores,
            rotate=rotate,
            restart=restart,
            search=search,
            kw=dict(kw, n_threads=n_threads),
        )
