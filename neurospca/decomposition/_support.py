"""The certified support of a fitted SPCA-TV model (issue 20, item 3).

Each returned ``v_k`` is certified for its own v-step (``y_k = X_k^T u_k /
(2 N l2)``, kept by the alternation in ``info["y"]``): its gap bounds the
distance to that v-step's exact solution ``v_k*``, so
:func:`neurospca.solvers.certify_support` tells which loadings are surely
non-zero (with their sign) or surely zero in ``v_k*``; the rest are
uncertain. When the radius is larger than :data:`SUPPORT_RESOLUTION` times
the peak loading, the v-step is first *finished*: re-solved for the same
``y_k``, warm started from its dual point, until every loading above that
fraction of the peak is certified or an iteration budget proportional to the
fit's own (:data:`FINISH_BUDGET`) is spent. It is re-solved on a working set
(the groups near the support, the other dual variables fixed) when that set
is small (:data:`WORKING_BELOW`), then, if needed, on the loadings not
certified zero once most are, else on all; every gap is certified on the
full problem.

:func:`set_certified_support` is called once at the end of ``SPCATV.fit``.
"""

import threading
import time

import numpy as np

from .. import _kernels
from ..solvers import ProxProblem, certify_support, resolve_n_threads
from ..solvers.penalties import eq3_pieces
from ..solvers.prox import solve_dual
from ..solvers.support import ROUNDING, pair_radius, restricted_problem, working_set
from ._alternation import _say

__all__ = ["SUPPORT_RESOLUTION", "set_certified_support"]

#: The v-step of a component is finished until its radius is at most this
#: fraction of its peak loading: every loading above it is then certified
#: non-zero.
SUPPORT_RESOLUTION = 1e-2


#: The finishing of a component runs at most this many times the solver
#: iterations its fit took (and at least :data:`FINISH_MIN_ITER`, at most
#: ``max_inner_iter``): its cost stays proportional to the fit's; when the
#: budget runs out first, the radius is larger and more loadings uncertain.
FINISH_BUDGET = 5
FINISH_MIN_ITER = 200

#: The finishing re-solves the v-step on the features not certified zero once
#: they are fewer than this fraction of all features (the gap-safe screening
#: makes the problem smaller; its gaps stay valid for the full one).
RESTRICT_BELOW = 0.5


#: The finishing first re-solves the v-step on a working set (the groups
#: within :data:`WORKING_MARGIN` hops of the support, the other dual variables
#: fixed, :func:`~neurospca.solvers.support.working_set`) when it holds fewer
#: than this fraction of the operator's rows: an iteration there costs about
#: twice its share of the rows, so below a quarter it is several times cheaper
#: (above, the finishing is as before). The gap of the pair it returns is
#: always certified on the full problem.
WORKING_BELOW = 0.25
WORKING_MARGIN = 2
WORKING_ROUNDS = 3
#: A working set is solved to this fraction of the target gap (the groups and
#: features off it keep a small part of the full gap).
WORKING_TOL = 0.7
#: With ``settle`` (:func:`_finish`), the first working set is solved for at
#: most this many iterations, then the set is built again: a dual point from
#: another v-step (the joint fit's sweeps, for the snapshot's v-step) leaves
#: zero loadings infeasible all over the background, each adding its groups to
#: the first set (3x the rows of the support's on the joint fit's cube86
#: component 2); a few iterations settle most of them.
WORKING_FIRST = 50


#: The components' finishings (each on its own v-step: independent of the
#: others' results) run side by side on the fit's threads
#: (:func:`each_component`); False: one after the other.
PARALLEL_FINISH = True

#: With :data:`PARALLEL_FINISH`, True runs the components' finishings ALL at
#: once (up to :data:`AT_ONCE_PER_CORE` threads per core of the fit), the cores
#: shared between them by the system; False (the default): one thread per core,
#: each taking the next component when its own is done. Not the default: on the
#: 2-core VM (issue 22 round 20, ``benchmarks/bench_fin22t.py``) the three
#: components of cube86 all at once took 6.1-7.3 s against 5.6-6.5 s on a quiet
#: machine and more under load (more run-queue waits, the GIL held by a thread
#: the system put aside); one thread per core there already keeps both cores
#: busy (1.75 cores). The numbers never change: each finishing reads nothing
#: another writes, and a kernel's chunks never depend on the threads that run it.
SHARE_CORES = False
AT_ONCE_PER_CORE = 2


def each_component(step, ks, n_threads):
    """``{k: (step(k), seconds)}`` for ``k`` in ``ks``, on up to ``n_threads`` threads.

    Each ``step(k)`` must read nothing another step writes (component ``k``'s
    finishing reads its own v-step and writes its own column and entries). The
    components are taken last first by whichever thread is free (the fit's
    components come by decreasing singular value: the last, the weakest, has
    the smallest target gap, the longest finishing: on cube86, 4,460 iterations
    against 2,150 for the first, so it starts first and the others share the
    other thread). With :data:`SHARE_CORES`, up to :data:`AT_ONCE_PER_CORE`
    threads per core (all the components at once when they are few). A
    thread's kernels run on ``n_threads // busy`` OpenMP threads (at least
    one; ``busy``: the threads still on a component;
    :data:`neurospca._kernels.THREAD_CAP`), so the last component takes both
    cores back. The results do not depend on
    which thread runs a step, or when: a v-step solve's numbers depend on its
    kernel's chunks (set by ``n_threads``), never on the threads that run them.
    With one thread, one component or :data:`PARALLEL_FINISH` off: one after the
    other. The first error of a step is raised once every thread stopped (no
    step starts after an error).
    """
    ks, total = list(ks), resolve_n_threads(n_threads)
    if not PARALLEL_FINISH or total < 2 or len(ks) < 2:
        return {k: _timed(step, k) for k in ks}
    out, errors, lock, stop = {}, [], threading.Lock(), threading.Event()
    workers = total * AT_ONCE_PER_CORE if SHARE_CORES else total
    todo, busy = iter(ks[::-1]), [min(workers, len(ks))]

    def work():
        _kernels.THREAD_CAP.cap = lambda: max(1, total // busy[0])
        try:
            while not stop.is_set():
                with lock:
                    k = next(todo, None)
                if k is None:
                    break
                out[k] = _timed(step, k)
        except BaseException as exc:  # noqa: BLE001  raised by the calling thread
            errors.append(exc)
            stop.set()
        finally:
            with lock:
                busy[0] -= 1

    threads = [threading.Thread(target=work, daemon=True) for _ in range(busy[0])]
    for th in threads:
        th.start()
    try:
        for th in threads:
            th.join()
    finally:  # e.g. a signal's exception here: no new step
        stop.set()
    if errors:
        raise errors[0]
    return {k: out[k] for k in ks}


def _timed(step, k):
    """``(step(k), seconds)``."""
    t0 = time.perf_counter()
    return step(k), time.perf_counter() - t0


def _finish(problem, solver, v, gap, state, target, max_iter, n_threads, settle=False):
    """Finish a v-step (:func:`_finish_working` first, then :func:`_finish_full`).

    ``gap`` is any certified gap of ``v``; ``target`` is a gap of a dual
    solver's pair (:func:`_target`). Nothing is done when the radius of ``(v,
    gap, state)`` already meets the target's (the pair's radius is looked at
    only when ``gap`` is within 4x the target). The rounds compare the gaps of
    the pairs ``(v, state)`` (:func:`~neurospca.solvers.support.pair_radius`).
    ``settle``: ``state`` comes from another v-step (the joint fit's sweeps),
    so the first working set is solved for :data:`WORKING_FIRST` iterations
    only, then built again. Returns ``(v, gap, state, iterations, gap history)``.
    """
    p0 = 0.5 * float(problem.y @ problem.y)
    goal = np.sqrt(max(target, 0.0) + ROUNDING * p0)
    radius = np.sqrt(2.0 * (gap + ROUNDING * p0))
    if goal < radius and gap <= 4.0 * target:  # else the pair's radius is not worth a look
        radius = min(radius, pair_radius(problem, v, state))
    if radius <= goal:
        return v, gap, state, 0, []
    pair = gap  # >= the gap of the pair (v, state): a round must beat it
    n_iter, history = 0, []
    if pair > target:
        v, pair, state, n_iter, history, cost = _finish_working(
            problem, v, pair, state, target, max_iter, n_threads, settle
        )
        max_iter -= int(np.ceil(cost))
    if pair > target and max_iter > 0:
        v, pair, state, more, extra = _finish_full(
            problem, solver, v, pair, state, target, max_iter, n_threads
        )
        history += [(n_iter + i, g) for i, g in extra]
        n_iter += more
    return v, (min(gap, pair) if n_iter == 0 else pair), state, n_iter, history


def _finish_working(problem, v, gap, state, target, max_iter, n_threads, settle=False):
    """Re-solve the v-step on working sets around the support of ``v`` (the dual
    variables of the other groups fixed, :func:`~neurospca.solvers.support.working_set`)
    until the *full* problem's certified gap is at most ``target``.

    An iteration on a working set of ``m`` of the ``n`` rows costs ``m / n`` of
    the budget ``max_iter`` (full iterations). A round whose full gap is not
    below the one before ends the finishing here (the pair before is kept).
    With ``settle``, the first round runs at most :data:`WORKING_FIRST`
    iterations (one more round is allowed).
    Returns ``(v, gap, state, iterations, gap history, cost in full iterations)``;
    the history holds the full gap after each round.
    """
    n_iter, history, cost = 0, [], 0.0
    for round_ in range(WORKING_ROUNDS + int(settle)):
        sub, rows, cols = working_set(problem, v, state, WORKING_MARGIN)
        if sub is None:
            break
        n_rows = problem.composite[0].operator.n_rows  # a working set: l1 + one group norm
        allowed = int((max_iter - cost) * n_rows / max(rows.size, 1))
        p0 = 0.5 * float(sub.y @ sub.y)  # the solver's tolerance is relative to its own y
        if rows.size >= WORKING_BELOW * n_rows or allowed <= 0 or p0 == 0.0:
            break
        cap = WORKING_FIRST if settle and round_ == 0 else allowed
        res = solve_dual(
            sub,
            tol=max(WORKING_TOL * target / p0, 1e-15),
            max_iter=min(allowed, cap),
            w0=np.asarray(state, dtype=np.float64)[rows],
            restart=False,  # about twice fewer iterations than with restarts on these sets
            n_threads=n_threads,
        )
        n_iter += res.n_iter
        cost += res.n_iter * rows.size / n_rows
        v_new, w_new = v.copy(), np.array(state, dtype=np.float64)
        v_new[cols], w_new[rows] = res.v, res.state
        new_gap = float(problem.gap(v_new, w_new)[0])  # the pair's gap (pair_radius)
        if not new_gap < gap:
            break
        v, gap, state = v_new, new_gap, w_new
        history.append((n_iter, gap))
        if gap <= target or res.n_iter >= allowed:
            break
    return v, gap, state, n_iter, history, cost


def _finish_full(problem, solver, v, gap, state, target, max_iter, n_threads):
    """Re-solve a v-step until its gap is at most ``target``.

    Stages: certify, restrict to the features not certified zero (when few
    are left), re-solve warm started to a gap 100 times smaller (or
    ``target``; straight to ``target`` once a stage certifies no zero).
    Returns ``(v, gap, state, iterations, gap history)``; the gap is that of
    the last (possibly restricted) problem, a valid bound for the full one
    since the features left out are certified zero.
    """
    n_iter, history, screened = 0, [], True
    while gap > target and n_iter < max_iter:
        keep = ~certify_support(problem, v, gap, state).zero
        # stages while the screening helps; straight to target once it certifies nothing
        stage = max(target, 1e-2 * gap) if screened else target
        if keep.mean() < RESTRICT_BELOW:  # a restricted pair's radius is sqrt(2 gap)
            stage = min(stage, 0.5 * target)
        screened = not keep.all()
        sub, rows = (
            restricted_problem(problem, keep) if keep.mean() < RESTRICT_BELOW else (None, None)
        )
        current = problem if sub is None else sub
        p0 = 0.5 * float(current.y @ current.y)
        if p0 == 0.0:
            break
        w0 = state if sub is None or state is None else np.asarray(state)[rows]
        res = solver.solve(
            current,
            tol=max(stage / p0, 1e-15),
            max_iter=max_iter - n_iter,
            gap_every=10,
            kernels="cython",
            v=v if sub is None else v[keep],
            state=w0,
            n_threads=n_threads,
        )
        history += [(n_iter + i, g) for i, g in res.gap_history]
        n_iter += res.n_iter
        if not res.gap < gap or not np.any(res.v):  # keep the better certified pair
            break
        v = np.zeros_like(v)
        v[keep if sub is not None else slice(None)] = res.v
        gap = float(res.gap)
        state = res.state if sub is None else _full_state(state, rows, res.state)
    return v, gap, state, n_iter, history


def _full_state(state, rows, sub_state):
    """The full problem's dual point with the restricted problem's rows replaced."""
    full = np.zeros(0) if state is None else np.array(state, dtype=np.float64)
    if sub_state is None or full.size == 0:
        return state
    full[rows] = sub_state
    return full


def _returned_gap(problem, v, state, zero):
    """The gap of the returned pair: the best of the full and the restricted certificates."""
    gap = problem.certificate(v, state)[0]
    if zero.any() and not zero.all():
        sub, rows = restricted_problem(problem, ~zero)
        if sub is not None:
            w = None if state is None or rows.size == 0 else np.asarray(state)[rows]
            gap = min(gap, sub.certificate(v[~zero], w)[0])
    return gap


def _target(problem, v, resolution):
    """The gap of a dual solver's pair at which its radius (``sqrt(G + ROUNDING *
    P(0))``, :func:`~neurospca.solvers.support.pair_radius`) is ``0.9 * resolution``
    times the peak (0.9: the peak may move)."""
    p0 = 0.5 * float(problem.y @ problem.y)
    return (0.9 * resolution * float(np.max(np.abs(v)))) ** 2 - ROUNDING * p0


def _record_final(info, k, gap, rel_gap):
    """End component ``k``'s gap histories on its reported gap (if not already)."""
    hist = info["gap_history"][k]
    if hist and hist[-1][1] == gap:
        return
    done = int(info["n_inner_iter"][k])
    info["gap_history"][k] = list(hist) + [(done, gap)]
    info["rel_gap_history"][k] = list(info["rel_gap_history"][k]) + [(done, rel_gap)]


def _certify_component(
    k, V, info, pieces, solver, l2, n_samples, max_inner_iter, n_threads, resolution
):
    """Finish and label component ``k``; updates ``V[:, k]`` and ``info`` in place.

    Returns ``(SupportCertificate or None, seconds)``; None for a vanished
    component.
    """
    y, v = info["y"][k], V[:, k]
    if y is None or not np.any(v):
        return None, 0.0
    # the fit may have flipped (u_k, v_k) after the alternation; y_k . v_k > 0
    y = y if float(y @ v) >= 0.0 else -y
    problem = ProxProblem(y, pieces)
    state = info["w"][k]
    t0 = time.perf_counter()
    gap = float(info["gaps"][k]) / (2.0 * l2)
    n_iter, history = 0, []
    if solver.name == "dual":
        budget = min(
            max_inner_iter, max(FINISH_MIN_ITER, FINISH_BUDGET * int(info["n_inner_iter"][k]))
        )
        v, gap, state, n_iter, history = _finish(
            problem, solver, v, gap, state, _target(problem, v, resolution), budget, n_threads
        )
    cert = certify_support(problem, v, gap, state)
    V[:, k] = cert.v
    p0 = 0.5 * float(y @ y)
    if n_iter:
        info["n_inner_iter"][k] += n_iter
        base = info["gap_history"][k][-1][0] if info["gap_history"][k] else 0
        info["gap_history"][k].extend((base + i, 2.0 * l2 * g) for i, g in history)
        info["rel_gap_history"][k].extend((base + i, g / p0) for i, g in history)
        info["w"][k] = state
    if cert.zero.any() or n_iter:  # the returned pair changed: its own gap and scale
        gap = _returned_gap(problem, cert.v, state, cert.zero)
    vv = float(cert.v @ cert.v)
    # d = u^T X_k v / ||v||^2 and X_k^T u = 2 N l2 y: no pass over the data
    info["d"][k] = 2.0 * n_samples * l2 * float(y @ cert.v) / vv if vv > 0 else 0.0
    info["gaps"][k] = 2.0 * l2 * gap
    info["rel_gaps"][k] = gap / p0
    _record_final(info, k, 2.0 * l2 * gap, gap / p0)
    seconds = time.perf_counter() - t0
    info["time"][k] += seconds
    return cert, seconds


def set_certified_support(
    estimator, V, info, weights, checked, n_samples, *, resolution=SUPPORT_RESOLUTION
):
    """Finish each component's v-step, certify its support and set the fitted attributes.

    ``V`` (n_features x n_components, signs as returned) and ``info`` (from
    the alternation, with ``info["y"]``) are updated in place: finished
    loadings with their certified zeros set to exactly 0, and the gaps,
    scales ``d``, iterations and times of the returned pairs. Sets on
    ``estimator``: ``certified_support_``, ``certified_zeros_``,
    ``n_uncertain_``, ``support_radius_`` and ``support_time_`` (see
    :class:`SPCATV`).

    Parameters
    ----------
    estimator : SPCATV
        Being fitted.
    V : ndarray of shape (n_features, n_components)
        The raw loadings.
    info : dict
        The alternation's info (``y``, ``w``, ``gaps``, ``d``...).
    weights : dict
        ``{"l1", "l2", "tv"}`` and the extra pieces' weights, eq. 3 units.
    checked : tuple
        ``(operator, extra pieces, solver, max_inner_iter)`` of the fit.
    n_samples : int
        Rows of the data.
    resolution : float, default=SUPPORT_RESOLUTION
        Finish a v-step until its radius is at most this fraction of its
        peak loading.
    """
    operator, extra, solver, max_inner_iter = checked
    l2 = weights["l2"]
    pieces = eq3_pieces(weights["l1"], weights["tv"], operator, l2, extra)
    n_features, n_components = V.shape
    support = np.zeros((n_components, n_features), dtype=bool)
    zeros = np.zeros((n_components, n_features), dtype=bool)
    radius = np.full(n_components, np.nan)
    seconds = np.zeros(n_components)
    n_threads = estimator.n_threads or None

    def step(k):  # each component's own v-step: side by side (each_component)
        return _certify_component(
            k, V, info, pieces, solver, l2, n_samples, max_inner_iter, n_threads, resolution
        )

    done = each_component(step, range(n_components), n_threads)
    for k in range(n_components):
        (cert, seconds[k]), _ = done[k]
        if cert is None:  # a vanished component: not certified (every loading uncertain)
            continue
        support[k], zeros[k] = cert.nonzero, cert.zero
        norm = float(np.linalg.norm(cert.v))
        radius[k] = cert.radius / norm if norm > 0 else np.nan
        if estimator.verbose:
            _say(
                "component %d support certified in %.2f s: %d non-zero, %d zero, %d uncertain",
                k,
                seconds[k],
                cert.nonzero.sum(),
                cert.zero.sum(),
                cert.n_uncertain,
            )
    estimator.certified_support_ = support
    estimator.certified_zeros_ = zeros
    estimator.n_uncertain_ = np.count_nonzero(~(support | zeros), axis=1)
    estimator.support_radius_ = radius
    estimator.support_time_ = seconds


def certify_fit(estimator, op, U, V, info, weights, checked):
    """The certified support of a fit (``estimator.certify_support``), BLAS held as
    during the fit; for ``method="joint"`` each pair is then certified again
    against the returned other components (:func:`recheck_support`).

    ``V`` and ``info`` are updated in place (see :func:`set_certified_support`).
    """
    from ._alternation import _vstep_blas
    from ._joint_certify import certifies_jointly, recheck_support

    if not estimator.certify_support:  # the half fits of alpha_rel="auto"
        for name in (
            "certified_support_",
            "certified_zeros_",
            "n_uncertain_",
            "support_radius_",
            "support_time_",
            "support_others_",
        ):
            setattr(estimator, name, None)
        return
    operator, extra, solver, max_inner_iter = checked
    estimator.support_others_ = None  # set by a joint fit's certify_joint
    with _vstep_blas(op.n_threads):
        if estimator.method == "joint":
            kw = {
                "l2": weights["l2"],
                "solver": solver,
                "max_inner_iter": max_inner_iter,
                "gap_every": 10,
                "kernels": "cython",
                "n_threads": op.n_threads,
                "pieces": eq3_pieces(weights["l1"], weights["tv"], operator, weights["l2"], extra),
            }
            if not certifies_jointly(kw):  # certify_joint starts from the fit's loadings
                set_certified_support(estimator, V, info, weights, checked, op.shape[0])
            recheck_support(estimator, op, U, V, info, kw, estimator.tol)
        else:
            set_certified_support(estimator, V, info, weights, checked, op.shape[0])
