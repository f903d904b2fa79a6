"""Pieces shared by the v-step solvers: the result record and kernel plumbing."""

import os
from dataclasses import dataclass, field

import numpy as np

from .. import _kernels


@dataclass
class SolverResult:
    """What a v-step solver returns.

    Parameters
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
    state : object or None
        The solver's warm-start state for the next v-step (opaque to callers;
        None or an object that supports negation, since the prox is odd in
        ``y``): the dual variables for the dual method, None for CONESTA.
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
    state: object = None


def get_kernels(kernels):
    """The v-step kernel module: compiled (``"cython"``) or its NumPy twin (``"numpy"``).

    Parameters
    ----------
    kernels : {"cython", "numpy"}
        The solvers' ``kernels`` option.

    Returns
    -------
    module
        :mod:`neurospca._kernels._prox` or :mod:`neurospca._kernels._numpy_prox`,
        as chosen by :func:`neurospca._kernels.load` (``NEUROSPCA_KERNELS=numpy``
        forces the twin; a missing build falls back to it with one warning).

    Raises
    ------
    ValueError
        ``kernels`` is not ``"cython"`` or ``"numpy"``.
    """
    return _kernels.load("prox", kernels)


def operator_arrays(operator, dtype=np.float64):
    """CSR arrays of ``A`` and ``A^T`` with int32 indices, cached on the operator.

    int32 halves the memory traffic of the index arrays, which dominates the
    sparse products of the hot loop. ``dtype`` (float64 or float32) is that
    of the two data arrays: the float32 kernels take float32 data (a copy
    rounded from the float64 one, cached too).
    """
    dtype = np.dtype(dtype)
    if dtype not in (np.float64, np.float32):
        raise ValueError(f"dtype must be float64 or float32, got {dtype}.")
    if dtype == np.float32:
        cache = getattr(operator, "_kernel_arrays_f32", None)
        if cache is None:
            cache = tuple(a.astype(np.float32) if a.dtype == np.float64 else a
                          for a in operator_arrays(operator))
            operator._kernel_arrays_f32 = cache
        return cache
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


#: Threads of the OpenMP kernels when a solver gets ``n_threads=None``; None
#: means the cores this process may run on. Change with :func:`set_n_threads`.
N_THREADS = None


def set_n_threads(n_threads):
    """Set the module-level default thread count of the v-step kernels.

    Parameters
    ----------
    n_threads : int or None
        A positive number of OpenMP threads, or None for the machine's cores.

    Raises
    ------
    ValueError
        ``n_threads`` not None and not a positive int.
    """
    global N_THREADS
    N_THREADS = None if n_threads is None else resolve_n_threads(n_threads)


def resolve_n_threads(n_threads):
    """The thread count a kernel runs with: ``n_threads``, the default, or the cores.

    Raises
    ------
    ValueError
        ``n_threads`` not None and not a positive int.
    """
    if n_threads is None:
        n_threads = N_THREADS
    if n_threads is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - not on Linux
            return max(1, os.cpu_count() or 1)
    if isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)) \
            or n_threads < 1:
        raise ValueError(
            f"n_threads must be a positive int or None (all cores), got {n_threads!r}."
        )
    return int(n_threads)


#: Rows below which a chunk of the dual kernels is not worth a thread: at the
#: 3 mm MNI grid (179,789 rows) two threads gained 0.8-1.5x on a 2-core
#: machine (benchmarks/RESULTS.md, issue 14), so such sizes run on one.
MIN_ROWS_PER_CHUNK = 262144


def n_chunks_for(n_rows, n_threads):
    """Chunks of the difference kernel for ``n_threads`` threads and ``n_rows`` rows.

    The iterates depend (to rounding) on the chunks, so on this number only.
    """
    return int(max(1, min(n_threads, n_rows // MIN_ROWS_PER_CHUNK)))


def difference_arrays(operator, n_chunks):
    """``(heads, tails, scale, heads_are_groups, group_ptr, chunk_ptr)``, or None.

    The arrays of the difference kernel; ``heads_are_groups`` is True when the
    head of every row is the index of its group (grids, meshes).

    ``chunk_ptr`` splits the groups into ``n_chunks`` contiguous chunks of
    nearly equal row counts (fewer when there are fewer groups); cached on
    the operator per chunk count.
    """
    form = operator.difference_form()
    if form is None:
        return None
    cache = getattr(operator, "_chunk_cache", None)
    if cache is None:
        cache = {"heads_are_groups": bool(np.array_equal(form.heads, operator.row_group))}
        operator._chunk_cache = cache
    if n_chunks not in cache:
        gptr = operator_arrays(operator)[-1]
        n_groups = gptr.size - 1
        n_chunks_eff = max(1, min(n_chunks, n_groups))
        targets = np.arange(1, n_chunks_eff) * (gptr[-1] / n_chunks_eff)
        inner = np.searchsorted(gptr, targets, side="left")
        chunk_ptr = np.concatenate([[0], inner, [n_groups]]).astype(np.int32)
        cache[n_chunks] = chunk_ptr
    return (form.heads, form.tails, form.scale, cache["heads_are_groups"],
            operator_arrays(operator)[-1], cache[n_chunks])
