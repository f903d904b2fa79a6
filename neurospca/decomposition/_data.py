"""Products with a data matrix in memory, in a NumPy memmap or in a dask array.

:class:`DataOperator` is the one place that touches ``X``: everything the
alternation of :func:`neurospca.spca_tv` needs (``X v``, ``X^T u``, the fused
``X^T (X v)``, products with a few columns, column statistics) is computed by
row blocks, so an in-memory array, a memmap streamed from disk and a dask array
(map/reduce on its row chunks, e.g. on a ``dask.distributed`` cluster) share
the same code and ``X`` is never copied, centred or converted as a whole.

Centring is implicit: with ``m`` the column means, ``(X - 1 m^T) w = X w -
1 (m . w)`` and ``(X - 1 m^T)^T z = X^T z - m sum(z)``, rank-one corrections
computed on the driver (no centred copy, not even of a block). Products run in
the data type through BLAS; what is summed over blocks is accumulated in
float64; ``rmatvec(exact=True)`` converts each block to float64 and centres it
there (the certificates' ``X^T u``).
"""

import mmap
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import ThreadpoolController

from sklearn.utils.validation import _check_feature_names, _check_n_features, validate_data

from .._utils.validation import check_real
from ._sources import check_unchanged, compute, file_identity, warn_embedded_memmaps

__all__ = ["DataOperator", "as_data_operator", "is_dask_array", "is_out_of_core"]

#: Bytes of one row block of an in-memory array (a few MB: cache friendly).
BLOCK_BYTES = 8 * 2**20
#: Bytes of one row block read from a memmap.
MEMMAP_BLOCK_BYTES = 16 * 2**20

_KEPT = (np.dtype(np.float64), np.dtype(np.float32))


_CONTROLLER = []


def _single_threaded_blas():
    """BLAS limited to one thread (context manager).

    One ``ThreadpoolController`` is made and kept: building one scans the
    loaded libraries (about 5 ms), which a fit would otherwise pay per product.
    """
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")


def is_dask_array(X):
    """True for a ``dask.array.Array`` (without importing dask)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "to_delayed")


def is_out_of_core(X):
    """True for inputs that must not be converted to one NumPy array."""
    return isinstance(X, np.memmap) or is_dask_array(X)


def _work_dtype(dtype):
    dtype = np.dtype(dtype)
    return dtype if dtype in _KEPT else np.dtype(np.float64)


# ---------------------------------------------------------------- block kernels
# Module-level functions of (block, lo, hi, ...) -> (rows part, summed part):
# they run on the driver, or as dask tasks on workers.

def _centred(B, dtype, shift):
    B = np.asarray(B)
    if B.dtype != dtype:
        B = B.astype(dtype)
    return B if shift is None else B - shift


def _blk_stats(B, lo, hi, dtype):
    B = np.asarray(B)
    n = B.shape[0]
    s = B.sum(axis=0, dtype=np.float64)
    lo_v = B.min(axis=0).astype(np.float64)
    hi_v = B.max(axis=0).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        mean = s / n
        D = np.subtract(B, mean, dtype=np.float64)
        m2 = np.einsum("ij,ij->j", D, D)
    bad = 0
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(lo_v))
            and np.all(np.isfinite(hi_v))):
        bad = int(B.size - np.count_nonzero(np.isfinite(B)))
    return None, (n, mean, m2, lo_v, hi_v, bad)


def _comb_stats(a, b):
    na, ma, qa, la, ha, ba = a
    nb, mb, qb, lb, hb, bb = b
    n = na + nb
    with np.errstate(invalid="ignore", over="ignore"):
        delta = mb - ma
        mean = ma + delta * (nb / n)
        m2 = qa + qb + delta * delta * (na * nb / n)
    return n, mean, m2, np.minimum(la, lb), np.maximum(ha, hb), ba + bb


def _blk_matvec(B, lo, hi, dtype, shift, v):
    return (_centred(B, dtype, shift) @ v).astype(np.float64), None


def _blk_rmatvec(B, lo, hi, dtype, shift, u):
    Bs = _centred(B, dtype, shift)
    return None, (u[lo:hi].astype(dtype) @ Bs).astype(np.float64)


def _blk_rmatvec64(B, lo, hi, mean, u):
    B = np.asarray(B)
    step = max(1, BLOCK_BYTES // max(1, 8 * B.shape[1]))  # float64 copies of <= 8 MB
    g = np.zeros(B.shape[1])
    for i in range(0, B.shape[0], step):
        D = np.array(B[i:i + step], dtype=np.float64)
        if mean is not None:
            D -= mean
        g += u[lo + i:lo + i + D.shape[0]] @ D
    return None, g


def _blk_fused(B, lo, hi, dtype, shift, v, c):
    Bs = _centred(B, dtype, shift)
    z = (Bs @ v).astype(np.float64) - c[lo:hi]
    return z, (z.astype(dtype) @ Bs).astype(np.float64)


def _blk_matmat(B, lo, hi, dtype, shift, W):
    return (_centred(B, dtype, shift) @ W).astype(np.float64), None


def _blk_rmatmat(B, lo, hi, dtype, shift, Z):
    Bs = _centred(B, dtype, shift)
    return None, (Bs.T @ Z[lo:hi].astype(dtype)).astype(np.float64)


def _add(a, b):
    if a is None:
        return b
    return a if b is None else a + b


def _run_block(fn, B, lo, hi, *args):
    # one BLAS thread per task: the workers' threads are the parallelism
    with _single_threaded_blas():
        return fn(B, lo, hi, *args)


def _first(t):
    return t[0]


def _second(t):
    return t[1]


def _tree(items, combine, delayed):
    items = list(items)
    while len(items) > 1:
        nxt = [delayed(combine)(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    return items[0]


# ---------------------------------------------------------------- memmap reader

def _memmap_file_position(X):
    """Byte position of ``X[0, 0]`` in ``X.filename``, or None if it cannot be
    read with plain file reads (not C-contiguous, private copy-on-write map)."""
    mm = getattr(X, "_mmap", None)
    filename = getattr(X, "filename", None)
    if (mm is None or filename is None or not X.flags.c_contiguous
            or getattr(X, "mode", "r") in ("c", "copyonwrite")):
        return None
    try:
        base = np.frombuffer(mm, dtype=np.uint8).ctypes.data
    except (TypeError, ValueError):
        return None
    offset = int(getattr(X, "offset", 0))
    start = offset - offset % mmap.ALLOCATIONGRANULARITY
    return start + (X.ctypes.data - base)


class DataOperator:
    """``X`` (optionally centred, ``X - 1 mean^T``) as products by row blocks.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask.array.Array of shape (n_samples, n_features)
        Float32 and float64 data are used in their own type; other numeric
        types are converted block by block to float64.
    name : str
        Used in error messages.
    block_bytes : int, optional
        Size of one row block (in-memory arrays and memmaps; dask arrays use
        their own row chunks).
    """

    def __init__(self, X, name="X", block_bytes=None, n_threads=None):
        if X.ndim != 2:
            raise ValueError(
                f"{name} must be a 2-D array (n_samples, n_features), got {X.ndim}-D."
            )
        self.name = name
        self.shape = tuple(int(s) for s in X.shape)
        self.dtype = _work_dtype(X.dtype)
        self.mean = None
        self._shift = None
        self._resid = None
        self.stats = None
        if n_threads is None:
            n_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
                else (os.cpu_count() or 1)
        self.n_threads = n_threads
        if is_dask_array(X):
            self.kind = "dask"
            warn_embedded_memmaps(name, X)
            if X.numblocks[1] > 1:
                X = X.rechunk({1: -1})
            self._offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(int)
        else:
            self.kind = "memmap" if isinstance(X, np.memmap) else "array"
            if self.kind == "array":
                X = np.asarray(X)
            if block_bytes is None:
                block_bytes = MEMMAP_BLOCK_BYTES if self.kind == "memmap" else BLOCK_BYTES
            row_bytes = max(1, self.shape[1] * np.dtype(X.dtype).itemsize)
            rows = int(max(1, min(self.shape[0], block_bytes // row_bytes)))
            n = self.shape[0]
            self._offsets = np.append(np.arange(0, n, rows), n).astype(int) if n else \
                np.array([0])
        self._pos = self._identity = None
        if self.kind == "memmap":
            self._pos = _memmap_file_position(X)
            if getattr(X, "filename", None) is not None and getattr(X, "_mmap", None) is not None:
                self._identity = file_identity(name, X, self._pos or int(X.offset))
        self.X = X

    # ------------------------------------------------------------ execution
    def _blocks(self):
        X, off = self.X, self._offsets
        if self.kind == "memmap":
            pos = self._pos
            if pos is not None:
                row_bytes = self.shape[1] * X.dtype.itemsize
                with open(X.filename, "rb", buffering=0) as fh:
                    check_unchanged(self.name, X, fh, self._identity)
                    for lo, hi in zip(off[:-1], off[1:]):
                        B = np.empty((hi - lo, self.shape[1]), dtype=X.dtype)
                        buf = memoryview(B).cast("B")
                        got, want = 0, B.nbytes
                        while got < want:
                            k = os.preadv(fh.fileno(), [buf[got:]],
                                          pos + lo * row_bytes + got)
                            if k <= 0:
                                raise OSError(f"{self.name}: short read from {X.filename}")
                            got += k
                        yield lo, hi, B
                return
            for lo, hi in zip(off[:-1], off[1:]):
                yield lo, hi, np.array(X[lo:hi])
            return
        for lo, hi in zip(off[:-1], off[1:]):
            yield lo, hi, X[lo:hi]

    def _map(self, fn, args, combine=_add):
        """Apply ``fn`` to every row block; rows parts stacked, sums combined."""
        if self.kind == "dask":
            import dask

            delayed = dask.delayed
            dargs = [delayed(a) if isinstance(a, np.ndarray) and a.size > 64 else a
                     for a in args]
            blocks = self.X.to_delayed()[:, 0]
            tasks = [delayed(_run_block)(fn, b, int(lo), int(hi), *dargs)
                     for b, lo, hi in zip(blocks, self._offsets[:-1], self._offsets[1:])]
            rows = [delayed(_first)(t) for t in tasks]
            total = _tree([delayed(_second)(t) for t in tasks], combine, delayed)
            rows, total = compute(self.name, rows, total)
        else:
            rows, total = [], None

            def take(out):
                nonlocal total
                r, s = out
                rows.append(r)
                if s is not None:
                    total = s if total is None else combine(total, s)

            # Blocks in parallel Python threads, each with single-threaded
            # BLAS: threaded BLAS on thin blocks (z^T B with a few hundred
            # rows) is up to 10x slower than one thread per block. Results are
            # combined in block order (deterministic); at most 2 blocks per
            # thread are in flight (a memmap is never read ahead further).
            n_threads = self.n_threads
            with _single_threaded_blas():
                if n_threads <= 1 or len(self._offsets) <= 2:
                    for lo, hi, B in self._blocks():
                        take(fn(B, lo, hi, *args))
                else:
                    pending = deque()
                    with ThreadPoolExecutor(n_threads) as pool:
                        for lo, hi, B in self._blocks():
                            pending.append(pool.submit(fn, B, lo, hi, *args))
                            if len(pending) >= 2 * n_threads:
                                take(pending.popleft().result())
                        while pending:
                            take(pending.popleft().result())
        rows = None if not rows or rows[0] is None else np.concatenate(rows, axis=0)
        return rows, total

    # ------------------------------------------------------------ statistics
    def scan(self, min_samples=2, min_features=1):
        """The one pass over ``X``: finiteness, scale, means, centred column
        sums of squares, minima and maxima (float64). Raises ValueError with
        the messages of :func:`neurospca._utils.validation.check_data`."""
        from .._utils.validation import check_scale_value

        name = self.name
        n, p = self.shape
        if n == 0 or p == 0:
            raise ValueError(f"{name} has shape {self.shape}; it must not be empty.")
        _, st = self._map(_blk_stats, (self.dtype,), combine=_comb_stats)
        _, mean, m2, lo_v, hi_v, bad = st
        if bad:
            raise ValueError(
                f"{name} contains {bad} NaN or infinite values; remove or impute them."
            )
        if n < min_samples:
            raise ValueError(
                f"{name} has {n} sample(s); at least {min_samples} are required."
            )
        check_scale_value(max(float(np.abs(lo_v).max()), float(np.abs(hi_v).max())),
                          n * p, name)
        if p < min_features:
            raise ValueError(
                f"{name} has {p} feature(s); at least {min_features} are required."
            )
        self.stats = {"mean": mean, "m2": np.maximum(m2, 0.0), "min": lo_v, "max": hi_v}
        return self

    def is_constant(self):
        """True when every column is constant (centred data identically 0)."""
        return bool(np.all(self.stats["min"] == self.stats["max"]))

    def is_zero(self):
        return bool(np.all(self.stats["min"] == 0) and np.all(self.stats["max"] == 0))

    def col_sqnorms(self):
        """Squared column norms of the operator's matrix (float64)."""
        st = self.stats
        if self.mean is None:
            return st["m2"] + self.shape[0] * st["mean"] ** 2
        d = st["mean"] - self.mean  # 0 when centred at the data's own means
        return st["m2"] + self.shape[0] * d * d

    def sqnorm(self):
        return float(np.sum(self.col_sqnorms()))

    def centre(self, mean):
        """Apply ``X - 1 mean^T`` implicitly from now on."""
        mean = np.asarray(mean, dtype=np.float64)
        self.mean = mean
        self._shift = None  # rank-one corrections only
        self._resid = mean if np.any(mean) else None
        return self

    # ------------------------------------------------------------ products
    def _cast(self, w):
        return np.ascontiguousarray(w, dtype=self.dtype)

    def matvec(self, v):
        """``Xc v`` (float64, length n_samples)."""
        z, _ = self._map(_blk_matvec, (self.dtype, self._shift, self._cast(v)))
        if self._resid is not None:
            z -= float(self._resid @ v)
        return z

    def rmatvec(self, u, exact=False):
        """``Xc^T u`` (float64). ``exact``: blocks converted to float64 first
        (float64 accuracy for float32 data; used by the certificates)."""
        u = np.asarray(u, dtype=np.float64)
        if exact and self.dtype != np.float64:
            _, g = self._map(_blk_rmatvec64, (self.mean, u))
            return g
        _, g = self._map(_blk_rmatvec, (self.dtype, self._shift, u))
        if self._resid is not None:
            g -= self._resid * float(u.sum())
        return g

    def fused(self, v, c=None):
        """``z = Xc v - c`` and ``Xc^T z`` in one pass over ``X``."""
        c = np.zeros(self.shape[0]) if c is None else np.asarray(c, dtype=np.float64)
        if self._resid is not None:
            c = c + float(self._resid @ v)
        z, g = self._map(_blk_fused, (self.dtype, self._shift, self._cast(v), c))
        if self._resid is not None:
            g -= self._resid * float(z.sum())
        return z, g

    def matmat(self, W):
        """``Xc W`` for ``W`` of shape (n_features, k) (float64)."""
        W = np.asarray(W, dtype=np.float64)
        Z, _ = self._map(_blk_matmat, (self.dtype, self._shift, self._cast(W)))
        if self._resid is not None:
            Z -= self._resid @ W
        return Z

    def rmatmat(self, Z):
        """``Xc^T Z`` for ``Z`` of shape (n_samples, k) (float64)."""
        Z = np.asarray(Z, dtype=np.float64)
        _, G = self._map(_blk_rmatmat, (self.dtype, self._shift, Z))
        if self._resid is not None:
            G -= np.outer(self._resid, Z.sum(axis=0))
        return G


def top_subspace(op, k, n_iter="auto", random_state=0):
    """Top ``k`` singular values of ``op``'s matrix, with a basis of its top
    right singular subspace, without forming the matrix.

    Exact (SVD of ``Xc`` through products with the identity of the small side)
    when ``min(n_samples, n_features) <= k + 10``; else the randomized range
    finder of Halko et al. (``k + 10`` columns, ``n_iter`` QR-normalised power
    iterations; "auto": 7, or 4 above 10^7 entries, sklearn's rule), as
    :func:`sklearn.utils.extmath.randomized_svd`.

    Returns
    -------
    s : ndarray of shape (k,)
    R : ndarray of shape (n_features, l)
        Orthonormal approximate right singular vectors (``l >= k``), best first.
    XR : ndarray of shape (n_samples, l)
        ``Xc R`` (exact in the exact case, its range-finder approximation else).
    """
    n, p = op.shape
    if n_iter == "auto":
        n_iter = 7 if n * p <= 10**7 else 4
    if min(n, p) <= k + 10:
        if p <= n:
            A, S, Rt = np.linalg.svd(op.matmat(np.eye(p)), full_matrices=False)
            return S[:k], Rt.T, A * S
        R, S, At = np.linalg.svd(op.rmatmat(np.eye(n)), full_matrices=False)
        return S[:k], R, At.T * S
    rng = np.random.RandomState(random_state)
    Q = rng.standard_normal((p, k + 10))
    Y = op.matmat(Q)
    for _ in range(n_iter):
        Y, _ = np.linalg.qr(Y)
        Q, _ = np.linalg.qr(op.rmatmat(Y))
        Y = op.matmat(Q)
    Y, _ = np.linalg.qr(Y)
    B = op.rmatmat(Y)  # (p, l) = Xc^T Y; Xc ~ Y B^T
    R, S, At = np.linalg.svd(B, full_matrices=False)  # B^T = A S R^T
    return S[:k], R, Y @ (At.T * S)


def cached_subspace(op, k):
    """:func:`top_subspace` computed once per operator (and centring)."""
    cache = getattr(op, "_subspace", None)
    if cache is None or cache[0] < k:
        op._subspace = (k,) + top_subspace(op, k)
    _, s, R, XR = op._subspace
    return s[:k], R, XR


def as_data_operator(X, name="X", min_samples=2, n_threads=None):
    """``X`` as a scanned :class:`DataOperator` (an in-memory array, a
    ``numpy.memmap`` or a ``dask.array``; float32 kept float32).

    The scan validates the data (finite, real, at least ``min_samples``
    rows) block by block; a :class:`DataOperator` is returned as it is.

    Parameters
    ----------
    X : ndarray, numpy.memmap, dask.array or DataOperator
        The data, (n_samples, n_features).
    name : str, default="X"
        The argument's name in error messages.
    min_samples : int, default=2
        Fewest rows accepted.
    n_threads : int, optional
        Threads over row blocks (default: the cores this process may use);
        a given :class:`DataOperator` keeps its own.

    Returns
    -------
    DataOperator
        Scanned (statistics computed, data validated).

    Raises
    ------
    TypeError, ValueError
        Sparse, complex, non-numeric or non-finite data, too few rows.
    """
    if isinstance(X, DataOperator):
        return X
    if is_out_of_core(X):
        check_real(X, name)
        op = DataOperator(X, name=name, n_threads=n_threads)
    else:
        if hasattr(X, "toarray") or hasattr(X, "tocsr"):
            raise TypeError(f"{name} must be a dense array; sparse input is not supported.")
        check_real(X, name)
        try:
            X = np.asarray(X)
            X = X.astype(X.dtype if X.dtype in (np.float32, np.float64) else np.float64,
                         copy=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a numeric array: {exc}") from None
        op = DataOperator(X, name=name, n_threads=n_threads)
    return op.scan(min_samples=min_samples)


def validated_data_operator(estimator, X, reset, min_samples, n_threads=None):
    """scikit-learn's input bookkeeping, then a scanned :class:`DataOperator`.

    NumPy arrays go through ``validate_data`` (float32 kept); memmaps and dask
    arrays are never converted: their shape and feature names are recorded
    and they are validated block by block during the one scan.

    Parameters
    ----------
    estimator : BaseEstimator
        Records ``n_features_in_`` and ``feature_names_in_``.
    X : array-like, numpy.memmap or dask.array
        The data, (n_samples, n_features).
    reset : bool
        True in ``fit`` (record), False after (compare).
    min_samples : int
        Fewest rows accepted.
    n_threads : int, optional
        Threads over row blocks (see :func:`as_data_operator`).

    Returns
    -------
    DataOperator
        Scanned.
    """
    if is_out_of_core(X):
        check_real(X, "X")
        if X.ndim != 2:
            raise ValueError(
                f"X must be a 2-D array (n_samples, n_features), got {X.ndim}-D."
            )
        _check_feature_names(estimator, X, reset=reset)
        _check_n_features(estimator, X, reset=reset)
        return as_data_operator(X, min_samples=min_samples, n_threads=n_threads)
    check_real(X, "X")
    ndim = getattr(X, "ndim", None)
    if ndim is not None and ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got {ndim}-D "
                         f"of shape {tuple(X.shape)}; reshape it, e.g. "
                         "X.reshape(len(X), -1).")
    X = validate_data(estimator, X, reset=reset, dtype=(np.float64, np.float32),
                      ensure_min_samples=min_samples, ensure_all_finite=False)
    return as_data_operator(X, min_samples=min_samples, n_threads=n_threads)
