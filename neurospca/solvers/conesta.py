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

import numpy as np

from ._base import SolverResult, get_kernels, operator_arrays
from .gap import conesta_gap, mu_opt
from .prox import _check_prox_input

logger = logging.getLogger(__name__)


class _Problem:
    """The eq.-17 data of one v-step, with the kernel arrays."""

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
        terms = self.K.conesta_gap_terms(A_ip, A_ix, A_d, At_ip, At_ix, At_d, gptr,
                                         self.yp, self.kappa, self.eta, mu, v,
                                         self.alpha)
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
        k = prob.K.fista_iterations(n_run, k, A_ip, A_ix, A_d, At_ip, At_ix, At_d,
                                    gptr, prob.yp, prob.kappa, prob.eta, mu, step,
                                    v, v_old, z, prob.alpha)
        n_iter += n_run
        gap_mu, gap_0, _ = prob.gaps(v, mu)
        history.append((n_iter, gap_mu, gap_0))
    return v, n_iter, gap_mu, gap_0, history


def fista(y, operator, l1, group, mu, *, eps=1e-6, v0=None, max_iter=10000,
          gap_every=10, kernels="cython"):
    """FISTA on the smoothed v-step for a fixed ``mu`` (the paper's Algorithm 1).

    Parameters
    ----------
    y, operator, l1, group
        The prox problem (see :func:`neurospca.solvers.prox_dual`).
    mu : float
        Smoothing parameter (> 0).
    eps : float
        Stop when the smoothed gap ``Gap_mu`` (prox units) is at most ``eps``.
    v0 : ndarray, optional
        Starting point (default 0).

    Returns
    -------
    SolverResult
        ``gap`` is the certified gap of the unsmoothed problem (prox units).
    """
    y, l1, group, _ = _check_prox_input(y, operator, l1, group, 1.0, max_iter, gap_every)
    if not mu > 0:
        raise ValueError(f"mu must be > 0, got {mu!r}.")
    prob = _Problem(y, operator, l1, group, kernels)
    v = np.zeros_like(y) if v0 is None else np.array(v0, dtype=np.float64)
    v, n_iter, gap_mu, gap_0, hist = _fista(prob, v, mu, 2.0 * eps, max_iter, gap_every)
    _, gap_0, f_v = prob.gaps(v, mu)
    return SolverResult(v=v, gap=gap_0 / 2.0, tol_abs=eps, n_iter=n_iter,
                        converged=gap_mu / 2.0 <= eps,
                        gap_history=[(i, g0 / 2.0) for i, _, g0 in hist],
                        objective=0.5 * (f_v - float(y @ y)))


def conesta(y, operator, l1, group, *, tol=1e-3, v0=None, tau=0.5, max_iter=100000,
            gap_every=10, kernels="cython", check_input=True):
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
        Scale-free: stop when the certified ``eps`` of Algorithm 2 is at most
        ``tol * ||y||^2 / 2`` in prox units.
    v0 : ndarray, optional
        Initial ``v^0`` (default 0).
    tau : float, default=0.5
        Decrease factor of the precision per continuation step.
    max_iter : int, default=100000
        Maximum total number of FISTA iterations.
    gap_every : int, default=10
        FISTA checks its stopping gap every ``gap_every`` iterations (the
        paper's reference code does it at every one).
    kernels : {"cython", "numpy"}
    check_input : bool, default=True

    Returns
    -------
    SolverResult
        ``gap`` is the certified bound on ``P(v) - P(v*)``: the smaller of the
        paper's ``eps = Gap_mu + mu gamma M`` and the unsmoothed Fenchel
        certificate at the final ``v`` (both are valid bounds). ``mu_history``
        lists ``(iteration, mu, eps)`` per continuation step.
    """
    if check_input:
        y, l1, group, tol = _check_prox_input(y, operator, l1, group, tol, max_iter, gap_every)
        if not 0.0 < tau < 1.0:
            raise ValueError(f"tau must be in (0, 1), got {tau!r}.")
    prob = _Problem(y, operator, l1, group, kernels)
    tol_abs = tol * 0.5 * float(y @ y)
    eps_target = 2.0 * tol_abs  # eq.-17 units
    v = np.zeros_like(y) if v0 is None else np.array(v0, dtype=np.float64)
    smoothing = prob.kappa > 0.0 and prob.norm2 > 0.0 and prob.M > 0.0
    gamma_M = prob.kappa * prob.M if smoothing else 0.0

    def _mu(eps):
        return mu_opt(eps, prob.kappa, prob.M, prob.norm2) if smoothing else 1.0

    gap_mu, gap_0, _ = prob.gaps(v, 1e-8 if smoothing else 1.0)
    n_iter, history, mu_history = 0, [(0, gap_0 / 2.0)], []
    eps = tau * gap_mu  # Algorithm 2, line 2
    if gap_0 <= eps_target:  # v0 is already certified: nothing to do
        eps = gap_0
    while gap_0 > eps_target and n_iter < max_iter:
        mu = _mu(eps)  # lines 3 and 9
        eps_mu = eps - mu * gamma_M  # line 5
        v, it, gap_mu, gap_0, hist = _fista(prob, v, mu, eps_mu, max_iter - n_iter, gap_every)
        history.extend((n_iter + i, g0 / 2.0) for i, _, g0 in hist)  # line 6
        n_iter += it
        eps = gap_mu + mu * gamma_M  # line 7
        mu_history.append((n_iter, mu, eps / 2.0))
        if eps <= eps_target:  # line 10
            break
        eps = tau * eps  # line 8
    certified = min(eps, gap_0) / 2.0
    _, _, f_v = prob.gaps(v, 1.0)
    objective = 0.5 * (f_v - float(y @ y))  # P(v) = (f_17(v) - ||y||^2) / 2
    logger.debug("conesta: %d FISTA iterations, %d continuations, gap %.3e (tol %.3e)",
                 n_iter, len(mu_history), certified, tol_abs)
    return SolverResult(v=v, gap=certified, tol_abs=tol_abs, n_iter=n_iter,
                        converged=certified <= tol_abs, gap_history=history,
                        mu_history=mu_history, objective=objective)
