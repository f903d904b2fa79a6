"""Pieces shared by the v-step solvers: the result record and kernel plumbing."""

import os
from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

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
    atw : tuple or None
        The compiled dual kernels' ``A^T w`` of the returned ``w`` (float64 solves):
        ``(values, order)``, ``order`` the features' locality order (``out[order] =
        values``) or None; None when not kept.
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
    atw: object = None


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
            cache = tuple(
                a.astype(np.float32) if a.dtype == np.float64 else a
                for a in operator_arrays(operator)
            )
            operator._kernel_arrays_f32 = cache
        return cache
    cache = getattr(operator, "_kernel_arrays", None)
    if cache is None:
        A, At = operator.matrix, operator.matrix_t
        if max(A.nnz, A.shape[0], A.shape[1]) >= np.iinfo(np.int32).max:
            raise ValueError(f"operator is too large for the int32 kernels ({A.nnz} non-zeros).")
        cache = tuple(
            np.ascontiguousarray(a, dtype=dt)
            for a, dt in (
                (A.indptr, np.int32),
                (A.indices, np.int32),
                (A.data, np.float64),
                (At.indptr, np.int32),
                (At.indices, np.int32),
                (At.data, np.float64),
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

    Parameters
    ----------
    n_threads : int or None
        Threads asked for; None: the default of :func:`set_n_threads`, else the
        cores this process may run on.

    Returns
    -------
    int
        A positive thread count.

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
    if isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)) or n_threads < 1:
        raise ValueError(
            f"n_threads must be a positive int or None (all cores), got {n_threads!r}."
        )
    return int(n_threads)


#: Rows below which a chunk of the difference kernel is not worth a thread.
#: Two chunks of the 3 mm MNI grid (179,789 rows) ran one iteration 1.7-1.8x
#: faster on two threads than one chunk on one, once waiting threads spin
#: briefly before they sleep (benchmarks/RESULTS.md, issue 14).
MIN_ROWS_PER_CHUNK = 65536

#: Rows below which the CSR kernel runs on one thread (its threads were not
#: measured to pay below this).
MIN_ROWS_PER_CSR_THREAD = 262144


def n_chunks_for(n_rows, n_threads):
    """Chunks of the difference kernel for ``n_threads`` threads and ``n_rows`` rows.

    The iterates depend (to rounding) on the chunks, so on this number only.
    """
    return int(max(1, min(n_threads, n_rows // MIN_ROWS_PER_CHUNK)))


def csr_threads_for(n_rows, n_threads):
    """Threads of the CSR dual kernel for ``n_threads`` threads and ``n_rows`` rows."""
    return _kernels.kernel_threads(max(1, min(n_threads, n_rows // MIN_ROWS_PER_CSR_THREAD)), False)


#: Seconds per iteration of the difference kernel on one thread and on
#: several, by problem shape, shared by the solves of this process.
_THREAD_TIMES = {}

#: A block on the slower choice every PROBE_EVERY blocks: the load of the
#: machine changes, and with it which choice is faster.
PROBE_EVERY = 32


class ThreadChooser:
    """Run each block of kernel iterations on several threads or on one, the faster now.

    The difference kernel's iterates depend on its chunks and never on the
    threads that run them (tested bit for bit), so this changes no result,
    only the time. Two threads gain 1.7-1.8x on a quiet 2-core machine but
    lose 5-40 % when another process holds a core; the chooser times every
    block (seconds per iteration; the latest time of each choice is kept),
    runs the faster choice, and every :data:`PROBE_EVERY` blocks the other
    one. Times are shared by the solves of one process through
    ``key`` (the problem's shape).

    Parameters
    ----------
    key : hashable
        The shape of the problem (the time of one iteration depends on it).
    n_threads : int
        The most threads a block may use; 1 disables the choice.
    """

    def __init__(self, key, n_threads):
        self.n_threads = int(n_threads)
        self.times = _THREAD_TIMES.setdefault(key, {1: None, "many": None, "blocks": 0})

    def choose_threads(self):
        """The threads of the next block: ``n_threads`` or 1 (always 1 in a process
        forked from one that ran the kernels: :func:`neurospca._kernels.kernel_threads`)."""
        if _kernels.kernel_threads(self.n_threads) <= 1:
            return 1
        times = self.times
        if times["many"] is None:
            return self.n_threads
        if times[1] is None:
            return 1
        fast, slow = (1, self.n_threads) if times[1] < times["many"] else (self.n_threads, 1)
        times["blocks"] += 1
        if times["blocks"] % PROBE_EVERY == 0:
            return slow
        return fast

    def record(self, threads, seconds, n_iter):
        """Note that ``n_iter`` iterations on ``threads`` threads took ``seconds``."""
        if self.n_threads <= 1 or n_iter < 2:  # a lone gap evaluation says little
            return
        self.times[1 if threads == 1 else "many"] = seconds / n_iter


def difference_arrays(operator, n_chunks, reorder=False):
    """``(heads, tails, scale, heads_are_groups, group_ptr, chunk_ptr)``, or None.

    The arrays of the difference kernel; ``heads_are_groups`` is True when the
    head of every row is the index of its group (grids, meshes).

    ``chunk_ptr`` splits the groups into ``n_chunks`` contiguous chunks of
    nearly equal row counts (fewer when there are fewer groups); cached on
    the operator per chunk count.

    With ``reorder`` (and an operator whose heads are its groups), the arrays
    are those of the operator with features, groups and rows permuted by
    :func:`locality_order`: the kernel then runs on ``y[order.features]`` and
    its rows are ``order.rows`` of the user's. Otherwise the user's order.
    """
    form = operator.difference_form()
    if form is None:
        return None
    cache = getattr(operator, "_chunk_cache", None)
    if cache is None:
        cache = {"heads_are_groups": bool(np.array_equal(form.heads, operator.row_group))}
        operator._chunk_cache = cache
    gptr = operator_arrays(operator)[-1]
    heads, tails = form.heads, form.tails
    key = n_chunks
    if reorder and locality_order(operator) is not None:
        heads, tails, gptr = cache["reordered"]
        key = ("reordered", n_chunks)
    if key not in cache:
        cache[key] = _chunk_ptr(gptr, n_chunks)
    return (heads, tails, form.scale, cache["heads_are_groups"], gptr, cache[key])


def difference_halos(operator, n_chunks, reorder=False):
    """``(segs, halos, halo_size)`` of the difference kernel's halo mode, or None.

    For operators whose heads are their groups, split into more than one
    chunk by :func:`difference_arrays` (same ``n_chunks`` and ``reorder``).
    Chunk ``c`` owns the features of its groups (the first from 0, the last
    to ``n_features``); its groups with a tail outside them ("edge" groups)
    lie before or after its longest run of interior groups, which scatters
    straight into ``A^T w``. The edge groups below and above that run scatter
    their tails into two halo buffers covering the range of those tails.
    ``segs`` (int32, ``4 n_chunks``) holds ``g0, a, b, g1`` per chunk;
    ``halos`` (int32, ``6 n_chunks``) holds ``lo, hi, offset`` per halo, the
    offset into one buffer of ``halo_size`` doubles. Cached on the operator.
    """
    diff = difference_arrays(operator, n_chunks, reorder=reorder)
    if diff is None:
        return None
    heads, tails, _, heads_are_groups, gptr, chunk_ptr = diff
    if not heads_are_groups or chunk_ptr.size <= 2:
        return None
    cache = operator._chunk_cache
    key = ("halos", bool(reorder and locality_order(operator) is not None), n_chunks)
    if key not in cache:
        cache[key] = _halos(tails, gptr, chunk_ptr, operator.n_features)
    return cache[key]


def _halos(tails, gptr, chunk_ptr, P):
    """The segments and halos of :func:`difference_halos`."""
    n_chunks = chunk_ptr.size - 1
    gptr = gptr.astype(np.int64)
    segs = np.zeros(4 * n_chunks, dtype=np.int64)
    halos = np.zeros(6 * n_chunks, dtype=np.int64)
    offset = 0
    for c in range(n_chunks):
        g0, g1 = int(chunk_ptr[c]), int(chunk_ptr[c + 1])
        lo, hi = (0 if c == 0 else g0), (P if c == n_chunks - 1 else g1)
        t = tails[gptr[g0] : gptr[g1]]
        # edge groups: any row with its tail outside the chunk's features
        n_out = np.concatenate([[0], np.cumsum((t < lo) | (t >= hi))])
        rel = gptr[g0 : g1 + 1] - gptr[g0]
        per_group = n_out[rel[1:]] - n_out[rel[:-1]]
        edges = np.concatenate([[g0 - 1], g0 + np.flatnonzero(per_group), [g1]])
        k = int(np.argmax(np.diff(edges)))  # the longest run of interior groups
        a, b = int(edges[k]) + 1, int(edges[k + 1])
        segs[4 * c : 4 * c + 4] = g0, a, b, g1
        for h, (s0, s1) in enumerate(((g0, a), (b, g1))):
            tt = tails[gptr[s0] : gptr[s1]]
            t_lo, t_hi = (int(tt.min()), int(tt.max()) + 1) if tt.size else (0, 0)
            halos[6 * c + 3 * h : 6 * c + 3 * h + 3] = t_lo, t_hi, offset
            offset += t_hi - t_lo
    segs, halos = segs.astype(np.int32), halos.astype(np.int32)
    for arr in (segs, halos):
        arr.flags.writeable = False
    return segs, halos, offset


def _chunk_ptr(gptr, n_chunks):
    """Split the groups of ``gptr`` into contiguous chunks of nearly equal row counts."""
    n_groups = gptr.size - 1
    n_chunks_eff = max(1, min(n_chunks, n_groups))
    targets = np.arange(1, n_chunks_eff) * (gptr[-1] / n_chunks_eff)
    inner = np.searchsorted(gptr, targets, side="left")
    return np.concatenate([[0], inner, [n_groups]]).astype(np.int32)


#: :func:`locality_order` is used when it divides the bandwidth of the
#: operator's rows by more than this.
REORDER_MIN_GAIN = 4

#: A permutation of an operator's features and rows that the difference kernel
#: runs in: ``features[k]`` is the user's feature at position ``k``, ``rows[i]``
#: the user's row at position ``i``.
LocalityOrder = namedtuple("LocalityOrder", ["features", "rows"])


def locality_order(operator):
    """A bandwidth-reducing order of a difference operator's features, or None.

    The reverse Cuthill-McKee order of the feature graph (an edge per row,
    :func:`scipy.sparse.csgraph.reverse_cuthill_mckee`): neighbours get
    nearby indices, so the gathers ``vq[tails]`` and scatters of ``A^T w``
    of the difference kernel touch a narrow band of the feature vectors, and
    two chunks of groups share only the features near their boundary. The
    subdivision order of icospheres puts neighbours up to ``P / 3`` apart;
    raster-ordered grids and chains are already banded.

    Used only where it narrows the band: when the operator's own bandwidth
    ``max |head - tail|`` is more than :data:`REORDER_MIN_GAIN` times that
    of the new order (icospheres: 122,885 against 641 at ``icosphere(7)``;
    the 3 mm MNI grid: 1,878 against 1,594, kept as it is).

    Only for operators whose heads are their groups (grids, meshes, chains;
    see :func:`difference_arrays`): the groups follow the features and each
    group keeps its rows in their order. Computed once and cached on the
    operator with the permuted ``heads``, ``tails`` and ``group_ptr``.

    Returns
    -------
    LocalityOrder or None
        None when the operator has no difference form, its heads are not its
        groups, or the order would not narrow its band enough.
    """
    form = operator.difference_form()
    if form is None:
        return None
    difference_arrays(operator, 1)  # fills the cache's "heads_are_groups"
    cache = operator._chunk_cache
    if not cache["heads_are_groups"] or operator.n_groups > operator.n_features:
        return None
    if "order" not in cache:
        cache["order"], cache["reordered"] = _reorder(operator, form)
    return cache["order"] or None


def _reorder(operator, form):
    """The RCM order of ``operator`` and its permuted ``(heads, tails, group_ptr)``."""
    P, n_rows = operator.n_features, operator.n_rows
    gptr = np.asarray(operator.group_ptr, dtype=np.int64)
    graph = sp.csr_matrix((np.ones(n_rows, dtype=np.int8), (form.heads, form.tails)), shape=(P, P))
    perm = reverse_cuthill_mckee((graph + graph.T).tocsr(), symmetric_mode=True)
    perm = perm.astype(np.int64)
    inverse = np.empty(P, dtype=np.int64)
    inverse[perm] = np.arange(P)
    # heads are the groups: group g is feature g and follows it; features
    # without a group (g >= n_groups) get an empty one
    n_groups = gptr.size - 1
    counts = np.zeros(P, dtype=np.int64)
    counts[:n_groups] = np.diff(gptr)
    starts = np.zeros(P, dtype=np.int64)
    starts[:n_groups] = gptr[:-1]
    counts, starts = counts[perm], starts[perm]
    new_ptr = np.concatenate([[0], np.cumsum(counts)])
    rows = np.repeat(starts - new_ptr[:-1], counts) + np.arange(n_rows)
    heads = inverse[form.heads[rows]].astype(np.int32)
    tails = inverse[form.tails[rows]].astype(np.int32)
    if _bandwidth(form.heads, form.tails) <= REORDER_MIN_GAIN * _bandwidth(heads, tails):
        return False, None
    new_ptr = new_ptr.astype(np.int32)
    for arr in (heads, tails, new_ptr, rows, perm):
        arr.flags.writeable = False
    return LocalityOrder(features=perm, rows=rows), (heads, tails, new_ptr)


def _bandwidth(heads, tails):
    """``max |head - tail|`` over the rows (0 without rows)."""
    if heads.size == 0:
        return 0
    return int(np.max(np.abs(heads.astype(np.int64) - tails)))
