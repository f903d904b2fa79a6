"""Exact-prox dual solver for the SPCA-TV v-step (the default solver).

:func:`prox_dual` is the front door of the l1-plus-group-norm problem below;
:func:`solve_dual` solves any :class:`~neurospca.solvers.ProxProblem` (the
compiled kernels for that problem, a generic NumPy path with one block of
dual variables per composite piece otherwise).

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

from .._utils.validation import check_nonneg, check_real, check_warm_start
from ..operators import check_operator
from ._base import SolverResult, get_kernels, resolve_n_threads
from ._dual_kernels import dual_fast, record_gap
from ._problem import ProxProblem
from .penalties import L1, GroupNorm

logger = logging.getLogger(__name__)


def _check_prox_input(y, operator, l1, group, tol, max_iter, gap_every):
    """Validate a v-step once, before any array reaches the compiled kernels."""
    check_real(y, "y")
    # float32 stays float32 (the float32 kernels); any other input becomes float64
    dtype = np.float32 if getattr(y, "dtype", None) == np.float32 else np.float64
    try:
        y = np.array(y, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"y must be a numeric array: {exc}") from None
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array, got {y.ndim}-D.")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values.")
    y = np.ascontiguousarray(y)
    check_operator(operator, y.size)
    l1 = check_nonneg(l1, "l1")
    group = check_nonneg(group, "group")
    tol = check_nonneg(tol, "tol", strict=True)
    for name, value in (("max_iter", max_iter), ("gap_every", gap_every)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}.")
    return y, l1, group, tol


def _scale_of(y):
    """The factor by which a prox problem is rescaled, or 1.0.

    The prox is positively homogeneous: ``v*(s y; s a, s b) = s v*(y; a, b)``,
    gaps scale by ``s^2``. Inputs whose largest entry is beyond ``1e100`` (or
    non-zero below ``1e-100``) are solved at unit scale so that ``||y||^2``
    and the gaps neither overflow nor underflow.
    """
    top = float(np.max(np.abs(y))) if y.size else 0.0
    if not np.isfinite(float(np.sum((y / top) ** 2)) * top * top if top > 0 else 0.0):
        raise ValueError(
            f"y has entries up to {top:.3g}: ||y||^2 / 2, the scale of the objective "
            "and of the gaps, overflows float64. Divide y, l1 and group by a common "
            "factor (the solution scales with it)."
        )
    if top > 1e100 or 0.0 < top < 1e-100:
        return top
    return 1.0


#: A float32 ``y`` whose largest entry is outside this range is solved in
#: float64: float32 iterates would leave the normal numbers (below 1.2e-38 they
#: lose bits; sums of a few entries near 3.4e38 overflow).
FLOAT32_RANGE = (1e-30, 1e30)


def _float32_in_range(y):
    """Whether the float32 kernels can run at ``y`` (its largest entry in :data:`FLOAT32_RANGE`)."""
    top = float(np.max(np.abs(y))) if y.size else 0.0
    return top == 0.0 or FLOAT32_RANGE[0] <= top <= FLOAT32_RANGE[1]


def _unscale(res, s):
    """Map a result solved at scale ``1/s`` back to the caller's scale."""
    s2 = s * s
    res.v = res.v * s
    res.gap = res.gap * s2
    res.tol_abs = res.tol_abs * s2
    res.objective = res.objective * s2
    if res.w is not None:
        res.w = res.w * s
    res.gap_history = [(i, g * s2) for i, g in res.gap_history]
    res.mu_history = [(i, mu, e * s2) for i, mu, e in res.mu_history]
    res.atw = None  # the kernel's A^T w is at the solved scale
    return res


def prox_dual(
    y,
    operator,
    l1,
    group,
    *,
    tol=1e-3,
    max_iter=10000,
    w0=None,
    gap_every=10,
    restart=True,
    kernels="cython",
    check_input=True,
    n_threads=None,
    kernel_path="auto",
):
    """Solve the SPCA-TV v-step prox problem by accelerated dual ascent.

    .. math::

        \\min_v \\tfrac12 \\|v - y\\|_2^2 + l_1 \\|v\\|_1
        + \\mathrm{group} \\sum_g \\|A_g v\\|_2

    Parameters
    ----------
    y : ndarray of shape (n_features,)
        The point at which the prox is taken. A float32 ``y`` is solved in
        float32 (iterates, ``v`` and ``w`` stored in float32, arithmetic in
        float64: half the memory traffic) and certified in float64, see
        Notes, unless its largest entry is outside ``[1e-30, 1e30]``
        (:data:`FLOAT32_RANGE`: then it is solved in float64); any other
        dtype is converted to float64.
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
        Warm start for the dual variables: finite, real, of shape
        ``(n_rows,)``; any such ``w0`` is projected onto the dual balls
        ``||w_g|| <= group`` first, so the certificate holds for every warm
        start.
    gap_every : int, default=10
        Evaluate the gap every ``gap_every`` iterations.
    restart : bool, default=True
        Gradient-based momentum restart.
    kernels : {"cython", "numpy"}, default="cython"
    check_input : bool, default=True
        Validate the inputs (callers that already did pass False).
    n_threads : int, optional
        OpenMP threads of the difference kernel; None uses
        :data:`neurospca.solvers._base.N_THREADS` (set by
        :func:`neurospca.solvers.set_n_threads`), by default the machine's
        cores. The groups are split into ``min(n_threads, n_rows // 65536)``
        chunks (at least one; small operators run on one thread): the
        iterates depend on the chunks (to rounding, ~1e-16 relative), never
        on how many threads actually run. Each block of ``gap_every``
        iterations runs on up to ``n_threads`` threads or on one, whichever
        is faster at the time (:class:`~neurospca.solvers._base.ThreadChooser`:
        two threads lose when another process holds a core). The CSR kernel
        uses ``min(n_threads, n_rows // 262144)`` threads.
    kernel_path : {"auto", "difference", "csr"}, default="auto"
        "auto" uses the difference kernel when every row of the operator is
        ``c (v[tail] - v[head])`` (:meth:`GroupOperator.difference_form`:
        grid and mesh-edge TV, chains) and the CSR kernel otherwise.
        "difference" requires such an operator; "csr" forces the general path.
        Both compute the same iterates and certificates (bit for bit with one
        thread); the difference kernel fuses the gap into its passes. Meshes
        whose numbering puts neighbours far apart (icospheres) run it in a
        bandwidth-reducing order of their features
        (:func:`~neurospca.solvers._base.locality_order`), internally: ``v``
        and ``w`` come back in the user's order, equal to the CSR path's up
        to the order of floating-point sums.

    Returns
    -------
    SolverResult
        ``w`` (also ``state``) holds the final dual variables, to warm-start
        the next call.
        ``gap = P(v) - D(w)`` is the exact Fenchel duality gap at the returned
        pair: ``v = soft(y - A^T w, l1)`` and a dual-feasible ``w``, so
        ``P(v) - P(v*) <= gap`` always. ``converged`` is True only when
        ``gap <= tol_abs``; a non-finite gap stops the loop with
        ``converged=False`` and a ``ConvergenceWarning``.

    Raises
    ------
    ValueError, TypeError
        ``y`` not a finite real 1-D array, ``w0`` of the wrong shape or not
        finite, a negative weight, a non-positive ``tol`` or ``max_iter``, a
        bad ``n_threads`` or ``kernel_path``.

    Notes
    -----
    A float32 solve is certified in float64: when the kernel's gap reaches
    ``tol_abs`` (or stops improving, or at ``max_iter``), the dual point is
    copied to float64 and scaled into the balls, ``v`` is recomputed from it
    (and rounded to float32: the returned ``v``) and the gap ``P(v) - D(w)``
    is evaluated in float64 (it equals ``neurospca.solvers.gap.prox_gap(res.v,
    y, operator, l1, group, res.w)`` to float64 rounding). Only that gap is
    reported, and ``converged`` is True only when it is at most ``tol_abs``;
    otherwise the iterations go on. float32 rounding limits what that gap
    can reach: it stalls between about ``1e-9`` and ``1e-6`` of ``||y||^2 /
    2`` depending on the problem (measured on grid and mesh TV with various
    weights: 2e-9 to 6e-7), so ``tol=1e-6`` was reached on every problem
    measured but a ``tol`` much below ``1e-6`` may be unreachable in
    float32. When the float64 gap stops decreasing (not halved in 1,000
    iterations) above ``tol_abs``, the solve stops with ``converged=False``
    and a ``ConvergenceWarning`` that says so (pass a float64 ``y`` for a
    smaller ``tol``). ``gap_history`` holds the kernel's gaps, replaced by the
    float64 gap at each float64 evaluation.
    """
    if kernel_path not in ("auto", "difference", "csr"):
        raise ValueError(f"kernel_path must be 'auto', 'difference' or 'csr', got {kernel_path!r}.")
    n_threads = resolve_n_threads(n_threads)
    if check_input:
        y, l1, group, tol = _check_prox_input(y, operator, l1, group, tol, max_iter, gap_every)
        if w0 is not None:
            w0 = check_warm_start(w0, operator.n_rows, "w0")
    problem = ProxProblem(y, [L1(l1), GroupNorm(operator, group)])
    return solve_dual(
        problem,
        tol=tol,
        max_iter=max_iter,
        w0=w0,
        gap_every=gap_every,
        restart=restart,
        kernels=kernels,
        n_threads=n_threads,
        kernel_path=kernel_path,
    )


def solve_dual(
    problem,
    *,
    tol=1e-3,
    max_iter=10000,
    w0=None,
    gap_every=10,
    restart=True,
    kernels="cython",
    n_threads=None,
    kernel_path="auto",
):
    """The dual method on a :class:`ProxProblem` (inputs already validated).

    An l1 plus one group norm runs the compiled kernels (the fused difference
    kernel when the operator has a difference form); any other set of pieces
    runs the generic NumPy dual method, one block of dual variables per
    composite piece. See :func:`prox_dual` for the parameters.

    Parameters
    ----------
    problem : ProxProblem
        The v-step; a float32 ``problem.y`` runs the float32 kernels and is
        certified in float64 (see :func:`prox_dual`, Notes), or is solved in
        float64 when out of :data:`FLOAT32_RANGE`.
    tol : float, default=1e-3
        Scale-free tolerance (gap at most ``tol * ||y||^2 / 2``).
    max_iter : int, default=10000
        Maximum number of accelerated iterations.
    w0 : ndarray of shape (problem.n_dual,), optional
        Warm start of the dual variables (made feasible first).
    gap_every : int, default=10
        Evaluate the gap every ``gap_every`` iterations.
    restart : bool, default=True
        Gradient-based momentum restart.
    kernels : {"cython", "numpy"}, default="cython"
        The kernels of the l1-plus-group-norm problem.
    n_threads : int, optional
        OpenMP threads of the difference kernel.
    kernel_path : {"auto", "difference", "csr"}, default="auto"
        Kernel of the l1-plus-group-norm problem.

    Returns
    -------
    SolverResult
        ``w`` (and ``state``) hold the final dual variables.
    """
    n_threads = resolve_n_threads(n_threads)
    K = get_kernels(kernels)
    y = problem.y
    if y.dtype != np.float64 and not _float32_in_range(y):
        problem = ProxProblem(np.asarray(y, dtype=np.float64), problem.pieces)
        y = problem.y
    s = _scale_of(y)
    if s != 1.0:
        res = solve_dual(
            problem.rescaled(s),
            tol=tol,
            max_iter=max_iter,
            w0=None if w0 is None else w0 / s,
            gap_every=gap_every,
            restart=restart,
            kernels=kernels,
            n_threads=n_threads,
            kernel_path=kernel_path,
        )
        res = _unscale(res, s)
        res.state = res.w
        return res
    y64 = np.asarray(y, dtype=np.float64)
    tol_abs = tol * 0.5 * float(y64 @ y64)
    fast = problem.fast_form()
    if fast is None:  # float32 only on the kernels: the generic path runs in float64
        if y.dtype != np.float64:
            problem = ProxProblem(y64, problem.pieces)
        res = _dual_generic(problem, tol_abs, max_iter, w0, gap_every, restart)
    else:
        l1, operator, group = fast
        res = dual_fast(
            K,
            y,
            operator,
            l1,
            group,
            tol_abs,
            max_iter,
            w0,
            gap_every,
            restart,
            n_threads,
            kernel_path,
        )
    res.state = res.w
    return res


def _dual_generic(problem, tol_abs, max_iter, w0, gap_every, restart):
    """The dual method in NumPy for any pieces: one dual block per composite piece.

    ``v(w) = prox_sep(y - sum_p D_p^T w_p)``; accelerated proximal gradient
    ascent on ``D(w)`` (step ``1 / sum_p ||D_p||^2``, the same momentum and
    restart as the kernels), each block updated by its piece's
    ``prox_conjugate``; the gap ``P(v(w)) - D(w)`` is exact at every check.
    """
    y, pieces = problem.y, problem.composite
    n_dual = problem.n_dual
    if w0 is None:
        w = np.zeros(n_dual)
    else:
        w = np.array(w0, dtype=np.float64)
        if w.shape != (n_dual,):
            raise ValueError(f"w0 must have shape ({n_dual},), got {w.shape}.")
        w = np.concatenate(
            [np.zeros(0)] + [p.feasible(b) for p, b in zip(pieces, problem.split(w), strict=True)]
        )
    norm2 = float(sum(p.norm2 for p in pieces))
    step = 1.0 / norm2 if norm2 > 0.0 else 0.0

    def adjoint(w):
        out = np.zeros_like(y)
        for p, b in zip(pieces, problem.split(w), strict=True):
            out += p.rmatvec(b)
        return out

    ATw = adjoint(w)
    w_old, ATw_old = w.copy(), ATw.copy()
    t, n_iter, history = 1.0, 0, []
    while True:
        with np.errstate(over="ignore", invalid="ignore"):
            x = y - ATw
            v = problem.primal_of(x)
            primal = problem.objective(v)
            dual = problem.dual_value(x, v, problem.split(w))
        gap = record_gap(primal - dual, n_iter, history, 5)
        if gap == np.inf or gap <= tol_abs or n_iter >= max_iter or step == 0.0:
            break
        for _ in range(min(gap_every, max_iter - n_iter)):
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            beta = (t - 1.0) / t_new
            vq = problem.primal_of(y - (ATw + beta * (ATw - ATw_old)))
            q = w + beta * (w - w_old)
            w_old = w
            w = np.concatenate(
                [np.zeros(0)]
                + [
                    p.prox_conjugate(b + step * p.matvec(vq), step)
                    for p, b in zip(pieces, problem.split(q), strict=True)
                ]
            )
            align = float(np.dot(w - q, w - w_old))
            ATw_old, ATw = ATw, adjoint(w)
            t = 1.0 if restart and align < 0.0 else t_new
            n_iter += 1
    logger.debug("prox_dual (generic): %d iterations, gap %.3e (tol %.3e)", n_iter, gap, tol_abs)
    return SolverResult(
        v=v,
        gap=gap,
        tol_abs=tol_abs,
        n_iter=n_iter,
        converged=gap <= tol_abs,
        gap_history=history,
        w=w,
        objective=primal,
    )
