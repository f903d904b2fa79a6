"""The stop rule of the dual loops, and the float64 certificate of float32 solves.

A float64 solve stops when the kernel's gap is at most ``tol_abs`` or at
``max_iter``, and reports that gap. A float32 solve (``y`` float32, iterates
in float32) cannot trust its kernel's gap: it is summed in double from
float32-rounded ``A^T w`` and ``v``, and may be smaller than the true one. So
when the kernel claims convergence, stalls or reaches ``max_iter``,
:class:`Float64Check` evaluates the exact gap in float64 and only that is
reported.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._base import operator_arrays

#: Gap evaluations without a 1 % decrease of the kernel's gap after which a
#: float32 solve checks its gap in float64 (it may have reached its floor).
STALL_EVALS = 10

#: A float32 solve stops at its precision floor when its float64 gap (checked
#: at least every ``max(20, n_iter // 8)`` iterations while the kernel claims
#: convergence or stalls) has not been divided by ``1 / FLOOR_FACTOR`` in
#: ``FLOOR_ITERS`` iterations above ``tol_abs``. Measured: float64 solves halve
#: their gap within 1,000 iterations even in slow phases (large TV weights);
#: at the float32 floor the gap creeps (halving every 1,000-3,000 iterations).
FLOOR_ITERS = 1000
FLOOR_FACTOR = 0.5


def stop_rule(K, y, operator, l1, group, tol_abs, max_iter):
    """``stop(gap, n_iter, w, history) -> bool`` for the dual loop of ``y``'s dtype.

    Parameters
    ----------
    K : module
        The v-step kernels (compiled or NumPy twins): the float64 check runs on them.
    y : ndarray of shape (n_features,)
        float64 (the kernel's gap is exact) or float32 (a :class:`Float64Check`).
    operator, l1, group
        The prox problem.
    tol_abs : float
        The absolute gap to reach.
    max_iter : int
        The iteration budget.

    Returns
    -------
    callable
        Called after each gap evaluation with the kernel's gap, the
        iteration count, the dual point of the certified pair and the gap
        history; True when the loop must stop.
    """
    if y.dtype == np.float64:
        return lambda gap, n_iter, w, history: gap <= tol_abs or n_iter >= max_iter
    return Float64Check(K, y, operator, l1, group, tol_abs, max_iter)


def certified(stop, res):
    """``res`` with the float64-certified pair of a float32 solve (``res`` itself for float64)."""
    return stop.result(res) if isinstance(stop, Float64Check) else res


class Float64Check:
    """Stop rule and float64 certificate of a float32 dual solve.

    At a dual point ``w`` (float32), :meth:`pair` copies ``w`` to float64,
    scales it into the balls, forms ``u = soft(y - A^T w, l1)``, the dual value
    ``D(w) = ||y||^2 / 2 - ||u||^2 / 2``, rounds ``u`` to float32 (the returned
    ``v``) and evaluates ``P(v)``: all in float64, on the float64 kernels
    (the value of :func:`~neurospca.solvers.gap.prox_gap` at ``(v, w)``, to
    float64 rounding). The best pair checked is kept and :meth:`result`
    reports it.

    Parameters
    ----------
    K : module
        The v-step kernels.
    y : ndarray of shape (n_features,), float32
        The point of the prox (the certificate uses its exact float64 copy).
    operator, l1, group
        The prox problem.
    tol_abs : float
        The absolute gap to reach.
    max_iter : int
        The iteration budget.
    """

    def __init__(self, K, y, operator, l1, group, tol_abs, max_iter):
        self.K, self.y, self.y64 = K, y, np.asarray(y, dtype=np.float64)
        self.operator, self.l1, self.group = operator, l1, group
        self.tol_abs, self.max_iter = tol_abs, max_iter
        self.best = None  # (gap, primal, v, w) of the best float64 check
        self.kernel_best, self.since = np.inf, 0
        self.next_check, self.floor = 0, False
        self.progress = (np.inf, 0)  # (float64 gap, iteration) of the last halving

    def pair(self, w):
        """``(v, gap, primal)`` of the dual point ``w``, in float64 (``v`` rounded to float32)."""
        K, y, l1, group = self.K, self.y64, self.l1, self.group
        A_ip, A_ix, A_d, At_ip, At_ix, At_d, gptr = operator_arrays(self.operator)
        w64 = np.array(w, dtype=np.float64)
        K.project_groups(w64, gptr, group)
        u = np.empty_like(y)
        K.csr_matvec(At_ip, At_ix, At_d, w64, u)
        K.soft_threshold(y - u, l1, u)
        v = u.astype(self.y.dtype)
        v64 = v.astype(np.float64)
        Av = np.empty_like(w64)
        K.csr_matvec(A_ip, A_ix, A_d, v64, Av)
        with np.errstate(over="ignore", invalid="ignore"):
            primal = (
                0.5 * float(np.sum((v64 - y) ** 2))
                + l1 * float(np.abs(v64).sum())
                + group * K.group_norm_sum(Av, gptr)
            )
            gap = primal - (0.5 * float(y @ y) - 0.5 * float(u @ u))
        return v, (max(gap, 0.0) if np.isfinite(gap) else np.inf), primal

    def __call__(self, gap, n_iter, w, history):
        """Whether to stop after the kernel's ``gap`` at ``n_iter``; checks in float64 when due."""
        if gap < 0.99 * self.kernel_best:
            self.kernel_best, self.since = gap, 0
        else:
            self.since += 1
        at_max = n_iter >= self.max_iter
        claims = gap <= self.tol_abs or self.since >= STALL_EVALS
        if not (at_max or (claims and n_iter >= self.next_check)):
            return False
        v, gap64, primal = self.pair(w)
        history[-1] = (n_iter, gap64)  # the kernel's gap may be below the true one
        if gap64 < FLOOR_FACTOR * self.progress[0]:
            self.progress = (gap64, n_iter)
        if self.best is None or gap64 < self.best[0]:
            self.best = (gap64, primal, v, np.array(w))
        if self.best[0] <= self.tol_abs or at_max:
            return True
        self.next_check = n_iter + max(20, n_iter // 8)
        self.floor = n_iter - self.progress[1] >= FLOOR_ITERS
        return self.floor

    def result(self, res):
        """``res`` with the best checked pair, its float64 gap and ``converged``."""
        if self.best is None:  # a non-finite kernel gap, or the direct solve (no group)
            if not np.isfinite(res.gap):
                return res
            v, gap64, primal = self.pair(res.w)
            res.gap_history[-1] = (res.n_iter, gap64)
            self.best = (gap64, primal, v, res.w)
        gap, primal, v, w = self.best
        res.v, res.w, res.gap, res.objective = v, w, gap, primal
        res.converged = bool(gap <= self.tol_abs)
        if self.floor:
            rel = 2.0 * gap / max(float(self.y64 @ self.y64), 1e-300)
            warnings.warn(
                f"prox_dual: a float32 solve stopped at the limit of float32 precision: "
                f"its gap evaluated in float64 is {gap:.3e} > tol * ||y||^2 / 2 = "
                f"{self.tol_abs:.3e} (relative {rel:.1e});"
                " a float32 y reaches 1e-6 of ||y||^2 / 2 or less depending on the problem "
                "(tol much below 1e-6 may be unreachable); a smaller gap needs a float64 y.",
                ConvergenceWarning,
                stacklevel=4,
            )
        return res
