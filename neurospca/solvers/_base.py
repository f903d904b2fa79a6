"""Pieces shared by the v-step solvers: the result record and kernel plumbing."""

from dataclasses import dataclass, field

import numpy as np

from . import _numpy_kernels

try:
    from . import _kernels as _cython_kernels
except ImportError:  # pragma: no cover - only without a compiled build
    _cython_kernels = None


@dataclass
class SolverResult:
    """What a v-step solver returns.

    Attributes
    ----------
    v : ndarray of shape (n_features,)
        The solution of the prox problem.
    gap : float
        Certified duality gap: an upper bound of ``P(v) - P(v*)`` for the prox
        problem ``P(v) = ||v - y||^2/2 + l1 ||v||_1 + group sum_g ||A_g v||``.
    tol_abs : float
        The absolute gap that was asked for (``tol * ||y||^2 / 2``).
    n_iter : int
        Iterations of the accelerated method (FISTA iterations for CONESTA).
    converged : bool
        Whether ``gap <= tol_abs``.
    gap_history : list of tuple
        ``(iteration, gap)`` at each gap evaluation (for CONESTA the certified
        unsmoothed gap and, per continuation step, ``mu`` in ``mu_history``).
    mu_history : list of tuple
        CONESTA only: ``(iteration, mu, eps)`` at each continuation step.
    w : ndarray or None
        Dual variables of the group norm (dual solver; use as a warm start).
    objective : float
        ``P(v)``.
    """

    v: np.ndarray
    gap: float
    tol_abs: float
    n_iter: int
    converged: bool
    gap_history: list = field(default_factory=list)
    mu_history: list = field(default_factory=list)
    w: np.ndarray = None
    objective: float = float("nan")


def get_kernels(kernels):
    """Return the kernel module: ``"cython"`` (default) or ``"numpy"``."""
    if kernels == "numpy":
        return _numpy_kernels
    if kernels == "cython":
        if _cython_kernels is None:
            raise ImportError(
                "the compiled kernels of neurospca are missing; reinstall with "
                "`pip install -e .` (needs a C compiler) or pass kernels='numpy'."
            )
        return _cython_kernels
    raise ValueError(f"kernels must be 'cython' or 'numpy', got {kernels!r}.")


def operator_arrays(operator):
    """CSR arrays of ``A`` and ``A^T`` with int32 indices, cached on the operator.

    int32 halves the memory traffic of the index arrays, which dominates the
    sparse products of the hot loop.
    """
    cache = getattr(operator, "_kernel_arrays", None)
    if cache is None:
        A, At = operator.matrix, operator.matrix_t
        if max(A.nnz, A.shape[0], A.shape[1]) >= np.iinfo(np.int32).max:
            raise ValueError(
                f"operator is too large for the int32 kernels ({A.nnz} non-zeros)."
            )
        cache = tuple(
            np.ascontiguousarray(a, dtype=dt)
            for a, dt in (
                (A.indptr, np.int32), (A.indices, np.int32), (A.data, np.float64),
                (At.indptr, np.int32), (At.indices, np.int32), (At.data, np.float64),
                (operator.group_ptr, np.int32),
            )
        )
        operator._kernel_arrays = cache
    return cache
