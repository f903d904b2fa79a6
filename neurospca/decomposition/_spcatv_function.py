"""SPCA-TV on raw weights: the paper's Algorithm 3 as a function.

:func:`spca_tv` validates its inputs once and calls the private worker
:func:`~neurospca.decomposition._alternation._spca_tv`; the estimator
:class:`~neurospca.SPCATV` (``_spcatv``) wraps the same worker with the
paper's ``(alpha, l1_ratio, tv_ratio)`` parametrisation.
"""

import numpy as np
from sklearn.utils import check_random_state

from .._utils.validation import check_int, check_n_components, check_nonneg, check_not_constant
from ..operators import chain_operator, check_operator
from ..solvers import get_solver, resolve_n_threads
from ..solvers.penalties import check_penalties, eq3_pieces
from ._alternation import _check_l2_scale, _spca_tv
from ._data import as_data_operator

__all__ = ["spca_tv"]


def spca_tv(
    X,
    n_components,
    *,
    l1,
    l2,
    tv,
    operator=None,
    tol=1e-3,
    max_iter=100,
    solver="dual",
    max_inner_iter=None,
    init="svd",
    random_state=None,
    gap_every=10,
    kernels="cython",
    verbose=0,
    u0=None,
    w0=None,
    penalties=None,
    n_threads=None,
):
    """SPCA-TV by alternating minimisation and deflation (paper Algorithm 3).

    Component ``k`` solves, on the deflated matrix ``X_k`` (``X_0 = X``),

    .. math::

        \\min_{\\|u\\|_2 \\le 1, v} -\\frac1N u^T X_k v + \\lambda_2 \\|v\\|_2^2
        + \\lambda_1 \\|v\\|_1 + \\lambda \\sum_g \\|A_g v\\|_2

    alternating ``u = X_k v / ||X_k v||`` (eq. 5) with the v-step, until the
    relative change of ``||X_k - d u v^T||_F`` (eq. 26, least-squares ``d``) is
    at most ``tol``; then ``X_{k+1} = X_k - d u v^T`` with
    ``d = u^T X_k v / ||v||^2``.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask.array of shape (n_samples, n_features)
        Data, used as given (centre it first; :class:`SPCATV` does, implicitly).
        float32 is kept float32 (products in float32, sums, v-steps and
        certificates in float64); a memmap is streamed from disk by row
        blocks and a dask array is reduced block by block as dask tasks,
        never materialised.
    n_components : int
    l1, l2, tv : float
        The weights ``lambda_1 >= 0``, ``lambda_2 > 0``, ``lambda >= 0``.
    operator : GroupOperator, optional
        The structure ``A``; default a 1-D chain over the features.
    tol : float, default=1e-3
        Scale-free tolerance of the v-steps (certified gap at most ``tol``
        times the prox objective at 0) and of the outer loop (eq. 26).
    max_iter : int, default=100
        Maximum alternations per component.
    solver : {"dual", "conesta"}, default="dual"
        The v-step solver: the exact-prox dual method, or the paper's CONESTA.
    max_inner_iter : int, optional
        Iteration cap of one v-step (default 10,000 for "dual", 100,000 for
        "conesta").
    init : {"svd", "random"}, default="svd"
        Initial ``u``: leading left singular vector of ``X_k``, or random.
    random_state : int, RandomState or None
        Used by ``init="random"``.
    gap_every : int, default=10
        Evaluate the certified gap every ``gap_every`` inner iterations.
    kernels : {"cython", "numpy"}, default="cython"
    verbose : int, default=0
        When > 0, log progress at INFO level (logger ``"neurospca"``); the
        lines are also printed to stdout unless a handler is attached to that
        logger.
    u0 : ndarray of shape (n_samples, n_components), optional
        Warm start: initial ``u`` of each component (a zero column falls back
        to ``init``), e.g. the ``U`` of a fit at neighbouring penalties.
    w0 : list of ndarray of shape (operator.n_rows,) or None, optional
        Warm start of the solver state of each component's v-steps (the
        dual variables for ``solver="dual"``; ignored by CONESTA), e.g.
        ``info["w"]`` of a neighbouring fit with the same penalties.
    penalties : list of penalty pieces, optional
        Further penalties added to eq. 3, e.g.
        ``[neurospca.solvers.penalties.GraphLaplacian(operator, weight)]``
        for ``weight * v^T D^T D v``; weights in the units of eq. 3 (as
        ``l1``, ``l2``, ``tv``). A solver that cannot handle a piece raises
        a ValueError naming both (CONESTA handles none).
    n_threads : int, optional
        Threads for the v-step kernels (OpenMP) and for the row blocks of the
        data products; None: the default of
        :func:`neurospca.solvers.set_n_threads`, else the cores this process
        may use. BLAS runs on one thread while a multi-threaded v-step runs,
        so the two never oversubscribe the cores.

    Returns
    -------
    U : ndarray of shape (n_samples, n_components)
        Unit-norm components ``u_k``.
    V : ndarray of shape (n_features, n_components)
        The raw loadings ``v_k`` of eq. 3 (not renormalised).
    info : dict
        ``d`` (rank-one scales), ``gaps`` (certified v-step gaps of the
        RETURNED pairs, in units of ``f``, eq. 3: ``f_{u_k}(v_k) - min_v
        f_{u_k}(v) <= gaps[k]`` with ``X_k^T u_k`` from the returned ``u_k``;
        the last v-step is re-solved for the final ``u_k`` when needed; see
        docs/certificates.rst), ``rel_gaps`` (gap over the prox objective at 0),
        ``n_iter`` (alternations), ``n_inner_iter`` (solver iterations),
        ``gap_history`` (per component, ``(cumulative inner iteration, gap in f
        units)``), ``rel_gap_history`` (the same gaps over the prox objective
        at 0 of their v-step, the quantity compared with ``tol``),
        ``mu_history`` (CONESTA), ``converged``, ``time``, ``w`` (final solver
        state per component: the dual variables of the dual method, None for
        CONESTA; see ``w0``), ``y`` (per component, the ``y_k`` of the
        returned pair's v-step, prox form; None for a vanished component).

    Raises
    ------
    ValueError, TypeError
        Bad data, weights, operator, penalties, warm starts or settings; the
        message names the argument.
    """
    n_threads = resolve_n_threads(n_threads)
    op = as_data_operator(X, n_threads=n_threads)
    n_samples, n_features = op.shape
    n_components = check_n_components(n_components, n_samples, n_features)
    l1 = check_nonneg(l1, "l1")
    l2 = check_nonneg(l2, "l2", strict=True)
    tv = check_nonneg(tv, "tv")
    tol = check_nonneg(tol, "tol", strict=True)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    gap_every = check_int(gap_every, "gap_every", minimum=1)
    the_solver = get_solver(solver)
    if init not in ("svd", "random"):
        raise ValueError(f"init must be 'svd' or 'random', got {init!r}.")
    if max_inner_iter is None:
        max_inner_iter = the_solver.default_max_iter
    max_inner_iter = check_int(max_inner_iter, "max_inner_iter", minimum=1)
    if operator is None:
        operator = chain_operator(n_features)
    check_operator(operator, n_features)
    extra = check_penalties(penalties, n_features, the_solver)
    if op.is_constant() if op.mean is not None else op.is_zero():
        check_not_constant(np.zeros(1))  # raises the constant-data error
    rng = check_random_state(random_state)
    if u0 is not None:
        u0 = np.asarray(u0, dtype=np.float64)
        if u0.shape != (n_samples, n_components) or not np.all(np.isfinite(u0)):
            raise ValueError(
                f"u0 must be a finite array of shape ({n_samples}, "
                f"{n_components}), got shape {u0.shape}."
            )
    if w0 is not None and len(w0) != n_components:
        raise ValueError(
            f"w0 must hold one dual vector (or None) per component ({n_components}), got {len(w0)}."
        )
    _check_l2_scale(op, l2)
    return _spca_tv(
        op,
        n_components,
        l2=l2,
        pieces=eq3_pieces(l1, tv, operator, l2, extra),
        solver=the_solver,
        weights_msg=f"l1={l1:.3g}, tv={tv:.3g}",
        tol=tol,
        max_iter=max_iter,
        max_inner_iter=max_inner_iter,
        init=init,
        rng=rng,
        gap_every=gap_every,
        kernels=kernels,
        verbose=verbose,
        u0=u0,
        w0=w0,
        n_threads=n_threads,
    )
