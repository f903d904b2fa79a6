"""Exact-prox dual solver for the SPCA-TV v-step (the default solver).

With ``u`` fixed, the v-step is the proximal problem

.. math::

    \\min_v P(v) = \\tfrac12 \\|v - y\\|_2^2 + a \\|v\\|_1 + b \\sum_g \\|A_g v\\|_2 .

Writing ``b \\|A_g v\\| = \\max_{\\|w_g\\| \\le b} w_g^T A_g v`` and minimising in
``v`` gives ``v(w) = \\mathrm{soft}(y - A^T w, a)`` and the dual

.. math::

    \\max_{\\|w_g\\|_2 \\le b} D(w) = \\tfrac12 \\|y\\|^2 - \\tfrac12
    \\|\\mathrm{soft}(y - A^T w, a)\\|^2 ,

a smooth concave function with gradient ``A v(w)``, Lipschitz with constant
``\\|A\\|_2^2``. Accelerated projected gradient on ``w`` solves it without
smoothing; ``P(v(w)) - D(w) \\ge P(v(w)) - P(v^*)`` is a tight, certified gap.
"""

import logging

import numpy as np

from .._validation import check_nonneg, check_operator
from ._base import SolverResult, get_kernels, operator_arrays

logger = logging.getLogger(__name__)


def _check_prox_input(y, operator, l1, group, tol, max_iter, gap_every):
    y = np.ascontiguousarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array, got {y.ndim}-D.")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values.")
    check_operator(operator, y.size)
    l1 = check_nonneg(l1, "l1")
    group = check_nonneg(group, "group")
    tol = check_nonneg(tol, "tol", strict=True)
    for name, value in (("max_iter", max_iter), ("gap_every", gap_every)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}.")
    return y, l1, group, tol


def prox_dual(y, operator, l1, group, *, tol=1e-3, max_iter=10000, w0=None,
              gap_every=10, restart=True, kernels="cython", check_input=True):
    """Solve the SPCA-TV v-step prox problem by accelerated dual ascent.

    .. math::

        \\min_v \\tfrac12 \\|v - y\\|_2^2 + l_1 \\|v\\|_1
        + \\mathrm{group} \\sum_g \\|A_g v\\|_2

    Parameters
    ----------
    y : ndarray of shape (n_features,)
        The point at which the prox is taken.
    operator : GroupOperator
        The structure ``A`` and its groups.
    l1 : float
        Weight ``a >= 0`` of the l1 norm.
    group : float
        Weight ``b >= 0`` of the group norm (radius of the dual balls).
    tol : float, default=1e-3
        Scale-free tolerance: stop when the certified gap is at most
        ``tol * ||y||^2 / 2`` (``P(0) = ||y||^2 / 2``).
    max_iter : int, default=10000
        Maximum number of accelerated iterations.
    w0 : ndarray of shape (n_rows,), optional
        Warm start for the dual variables (projected onto the balls first).
    gap_every : int, default=10
        Evaluate the gap every ``gap_every`` iterations.
    restart : bool, default=True
        Gradient-based momentum restart.
    kernels : {"cython", "numpy"}, default="cython"
    check_input : bool, default=True
        Validate the inputs (callers that already did pass False).

    Returns
    -------
    SolverResult
        ``w`` holds the final dual variables, to warm-start the next call.
    """
    if check_input:
        y, l1, group, tol = _check_prox_input(y, operator, l1, group, tol, max_iter, gap_every)
    K = get_kernels(kernels)
    tol_abs = tol * 0.5 * float(y @ y)
    v = np.empty_like(y)
    if group == 0.0 or operator.n_rows == 0 or operator.norm2 == 0.0:
        K.soft_threshold(y, l1, v)
        obj = 0.5 * float(np.sum((v - y) ** 2)) + l1 * float(np.abs(v).sum())
        if group:
            obj += group * operator.value(v)
        return SolverResult(v=v, gap=0.0, tol_abs=tol_abs, n_iter=0, converged=True,
                            gap_history=[(0, 0.0)], w=np.zeros(operator.n_rows),
                            objective=obj)
    A_ip, A_ix, A_d, At_ip, At_ix, At_d, gptr = operator_arrays(operator)
    n_rows = operator.n_rows
    if w0 is None:
        w = np.zeros(n_rows)
    else:
        w = np.array(w0, dtype=np.float64)
        if w.shape != (n_rows,):
            raise ValueError(f"w0 must have shape ({n_rows},), got {w.shape}.")
        K.project_groups(w, gptr, group)
    ATw = np.empty_like(y)
    K.csr_matvec(At_ip, At_ix, At_d, w, ATw)
    w_old, ATw_old = w.copy(), ATw.copy()
    vq = np.empty_like(y)
    step = 1.0 / operator.norm2
    t, n_iter, history = 1.0, 0, []
    while True:
        primal, dual, _ = K.dual_gap_terms(A_ip, A_ix, A_d, gptr, y, ATw, l1, group, v)
        gap = max(primal - dual, 0.0)
        history.append((n_iter, gap))
        if gap <= tol_abs or n_iter >= max_iter:
            break
        n_run = min(gap_every, max_iter - n_iter)
        t, _ = K.dual_iterations(n_run, A_ip, A_ix, A_d, At_ip, At_ix, At_d, gptr,
                                 y, l1, group, step, w, w_old, ATw, ATw_old,
                                 vq, t, restart)
        n_iter += n_run
    logger.debug("prox_dual: %d iterations, gap %.3e (tol %.3e)", n_iter, gap, tol_abs)
    return SolverResult(v=v, gap=gap, tol_abs=tol_abs, n_iter=n_iter,
                        converged=gap <= tol_abs, gap_history=history, w=w,
                        objective=primal)
