"""CONESTA: continuation with Nesterov smoothing (SPCA-TV paper, Algorithms 1-2).

The v-step prox problem ``min_v ||v - y||^2/2 + a ||v||_1 + b sum_g ||A_g v||``
is solved in the paper's formulation (eq. 17), which is twice it up to a
constant:

.. math::

    f(v) = \\tfrac12 \\|v - y'\\|^2 + \\tfrac12 \\|v\\|^2 + \\kappa s(v)
    + \\eta \\|v\\|_1, \\quad y' = 2y, \\ \\kappa = 2b, \\ \\eta = 2a .

``s`` is smoothed (eq. 11) with ``alpha*_mu = proj_K(A v / mu)`` (eq. 12),
FISTA (Algorithm 1, eqs. 18-19) minimises ``f_mu`` until the gap of eqs.
20-24 reaches ``eps - mu gamma M``, and the continuation (Algorithm 2) shrinks
``eps`` by ``tau`` and sets ``mu = mu_opt(eps)`` (eq. 25) until the certified
``eps = Gap_mu + mu gamma M <= tol``. ``gamma = kappa`` and ``M = |G| / 2``.
Gaps returned to the caller are in prox units (half of eq.-17 units).
"""

import logging
import numbers
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._utils.validation import check_nonneg, check_warm_start
from ._base import SolverResult, get_kernels, operator_arrays
from ._problem import ProxProblem
from .gap import conesta_gap, mu_opt, primal_certificate, prox_objective
from .penalties import L1, GroupNorm
from .prox import _check_prox_input, _scale_of, _unscale

logger = logging.getLogger(__name__)


class _SmoothedProblem:
    """The smoothed v-step of CONESTA (paper eq. 17): its data, with the kernel arrays."""

    def __init__(self, y, operator, l1, group, kernels):
        self.K = get_kernels(kernels)
        self.yp = 2.0 * y
        self.kappa = 2.0 * group
        self.eta = 2.0 * l1
        self.arrays = operator_arrays(operator)
        self.norm2 = operator.norm2
        self.M = operator.n_groups / 2.0
        self.alpha = np.empty(operator.n_rows)

    def gaps(self, v, mu):
        A_ip, A_ix, A_d, At_ip, At_ix, At_d, gptr = self.arrays
        terms = self.K.conesta_gap_terms(
            A_ip,
            A_ix,
            A_d,
            At_ip,
            At_ix,
            At_d,
            gptr,
            self.yp,
            self.kappa,
            self.eta,
            mu,
            v,
            self.alpha,
        )
        return conesta_gap(terms, self.kappa, self.eta, mu)


def _fista(prob, v, mu, eps_mu, max_iter, gap_every):
    """Algorithm 1 from ``v`` with smoothing ``mu`` until ``Gap_mu <= eps_mu``.

    Returns ``(v, n_iter, gap_mu, gap_0, history)``; ``v`` is updated in place.
    """
    A_ip, A_ix, A_d, At_ip, At_ix, At_d, gptr = prob.arrays
    step = 1.0 / (2.0 + prob.kappa * prob.norm2 / mu)  # eq. 19
    v_old, z = v.copy(), np.empty_like(v)
    k, n_iter, history = 2, 0, []
    gap_mu, gap_0, _ = prob.gaps(v, mu)
    while gap_mu > eps_mu and n_iter < max_iter:
        n_run = min(gap_every, max_iter - n_iter)
        k = prob.K.fista_iterations(
            n_run,
            k,
            A_ip,
            A_ix,
            A_d,
            At_ip,
            At_ix,
            At_d,
            gptr,
            prob.yp,
            prob.kappa,
            prob.eta,
            mu,
            step,
            v,
            v_old,
            z,
            prob.alpha,
        )
        n_iter += n_run
        gap_mu, gap_0, _ = prob.gaps(v, mu)
        history.append((n_iter, gap_mu, gap_0))
    return v, n_iter, gap_mu, gap_0, history


#: Where CONESTA's iterate is no better than ``v = 0`` (``P(v) >= P(0)``), it
#: stops only once ``P(0) - D`` (the certified gap of 0) is at most this
#: fraction of ``tol_abs`` (then 0 is returned), or once ``P(v) < P(0)``.
ZERO_GAP_FRACTION = 0.01


def _settled(gap, objective, p0, tol_abs):
    """Algorithm 2's stopping test (line 10) on the true certificate, with v = 0 in mind.

    ``gap <= tol_abs`` alone accepts an iterate whose objective is above that
    of ``v = 0`` when the optimum is 0 (or within ``tol_abs`` of it): it would
    return small non-zeros where the dual solver returns none. So an iterate
    that does not beat 0 is accepted only when 0 itself is certified to
    :data:`ZERO_GAP_FRACTION` of ``tol_abs``; :func:`exact_finish` then
    returns 0.
    """
    if gap > tol_abs:
        return False
    dual = objective - gap  # the best dual value found
    return objective < p0 or p0 - dual <= ZERO_GAP_FRACTION * tol_abs


def exact_finish(v, y, operator, l1, group, mus, tol_abs):
    """The sparsest certified of ``v``, the exact prox step on its dual point, and 0.

    FISTA on the smoothed problem leaves small non-zeros where the exact
    prox is zero (the smoothed group norm has no kink at 0), and CONESTA
    accepts them once the gap is below ``tol_abs``. Its dual point gives
    exact zeros instead: for each Nesterov dual ``w = group * proj(A v / mu)``
    (``mu`` in ``mus`` and ``mu -> 0``; feasible), ``v(w) = soft(y - A^T w, l1)``
    is the exact minimiser of the Lagrangian at ``w`` (the primal point of the
    dual solver), and ``D(w) = ||y||^2/2 - ||v(w)||^2/2`` bounds ``P(v*)``
    from below. With the best of these dual values ``D``, each candidate ``c``
    in ``(0, v(w), v)`` has the exact gap ``P(c) - D``, a bound of
    ``P(c) - P(v*)``. Of the candidates whose gap is at most ``tol_abs``, the
    one with the fewest non-zeros is returned (ties: the lower objective); if
    none is, the one with the lowest objective. Its gap is never above that of
    ``v`` when ``v`` is returned, and where ``v* = 0`` the candidate 0 (whose
    gap is ``P(0) - D``) is certified as soon as ``D`` is within ``tol_abs``
    of ``P(0)``.

    Parameters
    ----------
    v : ndarray of shape (n_features,)
        CONESTA's iterate.
    y, operator, l1, group
        The prox problem.
    mus : sequence of float
        Smoothing levels of the dual candidates (the last continuation's).
    tol_abs : float
        The absolute gap asked for.

    Returns
    -------
    v : ndarray of shape (n_features,)
        The chosen candidate.
    gap : float
        Its certified gap ``P(v) - D``.
    objective : float
        ``P(v)``.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        Av = operator.matvec(v)
        nrm = operator.group_norms(Av)
        dual, v_dual = -np.inf, None
        for mu in tuple(mus) + (0.0,):
            denom = np.maximum(nrm, mu)
            scale = np.where(denom > 0, group / np.where(denom > 0, denom, 1.0), 0.0)
            z = y - operator.rmatvec(Av * scale[operator.row_group])
            vw = np.sign(z) * np.maximum(np.abs(z) - l1, 0.0)
            value = 0.5 * float(y @ y) - 0.5 * float(vw @ vw)
            if value > dual:
                dual, v_dual = value, vw
    if not np.isfinite(dual):
        return v, np.inf, prox_objective(v, y, operator, l1, group)
    candidates = [np.zeros_like(v), v_dual, v]
    objectives = [prox_objective(c, y, operator, l1, group) for c in candidates]
    best = int(np.argmin(objectives))  # the first of equals: the sparsest
    return candidates[best], max(objectives[best] - dual, 0.0), objectives[best]


def _check_v0(v0, y):
    return np.zeros_like(y) if v0 is None else check_warm_start(v0, y.size, "v0")


def _warn_nonfinite(n_iter):
    warnings.warn(
        f"conesta: the duality gap became non-finite after {n_iter} FISTA iterations "
        "(overflow); the result is not certified.",
        ConvergenceWarning,
        stacklevel=3,
    )


def fista(
    y, operator, l1, group, mu, *, eps=1e-6, v0=None, max_iter=10000, gap_every=10, kernels="cython"
):
    """FISTA on the smoothed v-step for a fixed ``mu`` (the paper's Algorithm 1).

    Parameters
    ----------
    y, operator, l1, group
        The prox problem (see :func:`neurospca.solvers.prox_dual`).
    mu : float
        Smoothing parameter (> 0, finite).
    eps : float
        Stop when the smoothed gap ``Gap_mu`` (prox units) is at most ``eps``.
    v0 : ndarray, optional
        Starting point (default 0); finite, real, of shape ``(n_features,)``.
    max_iter : int, default=10000
        Maximum number of FISTA iterations.
    gap_every : int, default=10
        Check the smoothed gap every ``gap_every`` iterations.
    kernels : {"cython", "numpy"}, default="cython"
        The kernels.

    Returns
    -------
    SolverResult
        ``gap`` is the exact Fenchel gap of the unsmoothed problem at the
        returned ``v`` (prox units, a true bound of ``P(v) - P(v*)``);
        ``converged`` says that the SMOOTHED gap reached ``eps`` (the problem
        FISTA solves), not the unsmoothed one.
    """
    y, l1, group, _ = _check_prox_input(y, operator, l1, group, 1.0, max_iter, gap_every)
    mu = check_nonneg(mu, "mu", strict=True)
    eps = check_nonneg(eps, "eps", strict=True)
    v = _check_v0(v0, y)
    prob = _SmoothedProblem(y, operator, l1, group, kernels)
    v, n_iter, gap_mu, gap_0, hist = _fista(prob, v, mu, 2.0 * eps, max_iter, gap_every)
    gap, objective = primal_certificate(v, y, operator, l1, group, (mu,))
    if not np.isfinite(gap):
        _warn_nonfinite(n_iter)
    return SolverResult(
        v=v,
        gap=gap,
        tol_abs=eps,
        n_iter=n_iter,
        converged=bool(np.isfinite(gap) and gap_mu / 2.0 <= eps),
        gap_history=[(i, g0 / 2.0) for i, _, g0 in hist] + [(n_iter, gap)],
        objective=objective,
    )


def conesta(
    y,
    operator,
    l1,
    group,
    *,
    tol=1e-3,
    v0=None,
    tau=0.5,
    max_iter=100000,
    gap_every=10,
    kernels="cython",
    check_input=True,
):
    """Solve the v-step prox problem with CONESTA (the paper's Algorithm 2).

    .. math::

        \\min_v \\tfrac12 \\|v - y\\|_2^2 + l_1 \\|v\\|_1
        + \\mathrm{group} \\sum_g \\|A_g v\\|_2

    Parameters
    ----------
    y : ndarray of shape (n_features,)
    operator : GroupOperator
    l1, group : float
        Weights (>= 0) of the l1 and group norms.
    tol : float, default=1e-3
        Scale-free: stop when the certified gap is at most ``tol * ||y||^2 / 2``
        (``P(0)``) in prox units.
    v0 : ndarray, optional
        Initial ``v^0`` (default 0); finite, real, of shape ``(n_features,)``.
    tau : float, default=0.5
        Decrease factor of the precision per continuation step.
    max_iter : int, default=100000
        Maximum total number of FISTA iterations (also bounds the number of
        continuation steps).
    gap_every : int, default=10
        FISTA checks its stopping gap every ``gap_every`` iterations (the
        paper's reference code does it at every one).
    kernels : {"cython", "numpy"}, default="cython"
        The kernels.
    check_input : bool, default=True
        Validate the inputs (callers that already did pass False).

    Returns
    -------
    SolverResult
        ``gap`` is the exact (unsmoothed) Fenchel duality gap at the returned
        ``v`` (eqs. 20-24 with ``mu = 0``, the dual point taken from the
        Nesterov dual ``alpha*_mu(v)`` of eq. 12 and its ``mu -> 0`` limit, the
        best of these): a true bound of ``P(v) - P(v*)`` in prox units,
        evaluated at the ``v`` that is returned. ``v`` is the one with the
        lowest objective of the last iterate, the exact prox step
        ``soft(y - A^T w, l1)`` on its dual point and ``0``
        (:func:`exact_finish`); an iterate whose objective is not below that
        of ``v = 0`` is accepted only once 0 is certified to
        :data:`ZERO_GAP_FRACTION` of ``tol_abs``, so where the optimum is 0,
        ``v`` is exactly 0. ``converged`` is True only when
        ``gap <= tol_abs``. The paper's running precision ``eps`` of Algorithm 2
        drives the continuation only; ``mu_history`` lists
        ``(iteration, mu, eps)`` per continuation step. A non-finite gap stops
        the solver with ``converged=False`` and a ``ConvergenceWarning``.

    Raises
    ------
    ValueError, TypeError
        ``y`` or ``v0`` not finite real 1-D arrays of the right length, a
        negative weight, ``tau`` outside (0, 1), a non-positive ``tol`` or
        ``max_iter``.
    """
    if check_input:
        y, l1, group, tol = _check_prox_input(y, operator, l1, group, tol, max_iter, gap_every)
        if isinstance(tau, bool) or not isinstance(tau, numbers.Real) or not 0.0 < tau < 1.0:
            raise ValueError(f"tau must be a number in (0, 1), got {tau!r}.")
        v0 = None if v0 is None else check_warm_start(v0, y.size, "v0")
    problem = ProxProblem(y, [L1(l1), GroupNorm(operator, group)])
    return solve_conesta(
        problem, tol=tol, v0=v0, tau=tau, max_iter=max_iter, gap_every=gap_every, kernels=kernels
    )


def _l1_plus_group(problem):
    """``(l1, operator, group)`` of a problem CONESTA can solve (an l1 norm
    plus one group norm); a ValueError otherwise."""
    fast = problem.fast_form()
    if fast is None:
        names = [p.name for p in problem.pieces]
        raise ValueError(
            f"solver 'conesta' handles an l1 norm plus one group norm (tv), got the "
            f"penalties {names}; use solver='dual'."
        )
    return fast


@dataclass
class _Run:
    """The state of one CONESTA run (Algorithm 2) between its steps."""

    v: np.ndarray
    gap: float  # the exact gap at v (its certificate)
    objective: float
    gap_mu: float  # the gap of the smoothed problem
    smoothing: bool
    n_iter: int = 0
    n_cont: int = 0
    history: list = field(default_factory=list)
    mu_history: list = field(default_factory=list)
    mus_last: tuple = ()
    finite: bool = True


def _start(prob, v0, y, operator, l1, group):
    """The run at ``v0`` (0 by default, or when ``v0``'s objective overflows)."""
    v = np.zeros_like(y) if v0 is None else np.array(v0, dtype=np.float64)
    smoothing = prob.kappa > 0.0 and prob.norm2 > 0.0 and prob.M > 0.0
    mu0 = 1e-8 if smoothing else 1.0
    gap_mu, _, _ = prob.gaps(v, mu0)
    gap, objective = primal_certificate(v, y, operator, l1, group, (mu0,))
    if v0 is not None and not (np.isfinite(gap) and np.isfinite(gap_mu)):
        # a hostile warm start whose objective overflows: start cold instead
        logger.debug("conesta: v0's objective is not finite; starting from v = 0")
        v = np.zeros_like(y)
        gap_mu, _, _ = prob.gaps(v, mu0)
        gap, objective = primal_certificate(v, y, operator, l1, group, (mu0,))
    return _Run(
        v=v,
        gap=gap,
        objective=objective,
        gap_mu=gap_mu,
        smoothing=smoothing,
        history=[(0, gap)],
        mus_last=(mu0,),
        finite=np.isfinite(gap) and np.isfinite(gap_mu),
    )


def _continue(run, prob, y, operator, l1, group, tol_abs, tau, max_iter, gap_every):
    """The continuation of Algorithm 2: FISTA on ever less smoothed problems
    until the exact gap is certified below ``tol_abs``, ``max_iter`` or a
    non-finite iterate (``run.finite`` False)."""
    gamma_M = prob.kappa * prob.M if run.smoothing else 0.0
    eps = tau * run.gap_mu  # Algorithm 2, line 2
    p0 = 0.5 * float(y @ y)
    while (
        run.finite
        and not _settled(run.gap, run.objective, p0, tol_abs)
        and run.n_iter < max_iter
        and run.n_cont < max_iter
    ):
        # lines 3 and 9
        mu = mu_opt(eps, prob.kappa, prob.M, prob.norm2) if run.smoothing else 1.0
        if not (np.isfinite(mu) and mu > 0.0):  # eps underflowed: nothing left to gain
            break
        eps_mu = eps - mu * gamma_M  # line 5
        run.v, it, gap_mu, _, hist = _fista(
            prob, run.v, mu, eps_mu, max_iter - run.n_iter, gap_every
        )
        run.history.extend((run.n_iter + i, g0 / 2.0) for i, _, g0 in hist)  # line 6
        run.n_iter += it
        run.n_cont += 1
        eps = gap_mu + mu * gamma_M  # line 7
        run.mu_history.append((run.n_iter, mu, eps / 2.0))
        # the returned certificate: the exact gap at the current v
        run.mus_last = (mu,)
        run.gap, run.objective = primal_certificate(run.v, y, operator, l1, group, run.mus_last)
        run.history.append((run.n_iter, run.gap))
        run.finite = bool(np.isfinite(run.gap) and np.isfinite(eps) and np.all(np.isfinite(run.v)))
        if not run.finite or _settled(run.gap, run.objective, p0, tol_abs):  # line 10, certified
            break
        eps = tau * eps  # line 8


def solve_conesta(
    problem, *, tol=1e-3, v0=None, tau=0.5, max_iter=100000, gap_every=10, kernels="cython"
):
    """CONESTA on a :class:`ProxProblem` (inputs already validated).

    See :func:`conesta` for the parameters.

    Parameters
    ----------
    problem : ProxProblem
        The v-step; CONESTA smooths one group norm, so the problem must be
        an l1 norm plus one group norm.
    tol : float, default=1e-3
        Scale-free tolerance.
    v0 : ndarray of shape (n_features,), optional
        Initial ``v^0`` (default 0).
    tau : float, default=0.5
        Decrease factor of the precision per continuation step.
    max_iter : int, default=100000
        Maximum total number of FISTA iterations.
    gap_every : int, default=10
        FISTA checks its stopping gap every ``gap_every`` iterations.
    kernels : {"cython", "numpy"}, default="cython"
        The kernels.

    Returns
    -------
    SolverResult

    Raises
    ------
    ValueError
        The problem is not an l1 norm plus one group norm.
    """
    l1, operator, group = _l1_plus_group(problem)
    y = problem.y
    s = _scale_of(y)
    if s != 1.0:  # solve at unit scale (positively homogeneous problem)
        res = solve_conesta(
            problem.rescaled(s),
            tol=tol,
            v0=None if v0 is None else np.asarray(v0) / s,
            tau=tau,
            max_iter=max_iter,
            gap_every=gap_every,
            kernels=kernels,
        )
        return _unscale(res, s)
    prob = _SmoothedProblem(y, operator, l1, group, kernels)
    tol_abs = tol * 0.5 * float(y @ y)
    run = _start(prob, v0, y, operator, l1, group)
    _continue(run, prob, y, operator, l1, group, tol_abs, tau, max_iter, gap_every)
    if not run.finite:
        run.gap = np.inf
        _warn_nonfinite(run.n_iter)
    else:
        run.v, run.gap, run.objective = exact_finish(
            run.v, y, operator, l1, group, run.mus_last, tol_abs
        )
        run.history.append((run.n_iter, run.gap))
    logger.debug(
        "conesta: %d FISTA iterations, %d continuations, gap %.3e (tol %.3e)",
        run.n_iter,
        run.n_cont,
        run.gap,
        tol_abs,
    )
    return SolverResult(
        v=run.v,
        gap=run.gap,
        tol_abs=tol_abs,
        n_iter=run.n_iter,
        converged=bool(run.gap <= tol_abs),
        gap_history=run.history,
        mu_history=run.mu_history,
        objective=run.objective,
    )
