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
float64; ``rmatvec(exact=True)`` and the fused pass compute ``X^T z`` of
float32 data in float64 arithmetic (the certificates' ``X^T u``, a compiled
kernel of :mod:`neurospca._kernels`).

A pass costs O(N P) at any P: row blocks hold at least :data:`MIN_BLOCK_ROWS`
rows, are processed by column tiles of at most :data:`TILE_BYTES`, and add
what they contribute to a P-long result in place into one accumulator per
worker thread (:mod:`._blocks`); block ``i`` goes to thread ``i % n_threads``,
so the sums do not depend on timing. ``n_passes`` counts the passes.

Size: :class:`DataOperator` is the one reader of ``X``: every kind of pass a
fit makes is one of its methods, so they share its blocks, threads and
centring; the block kernels themselves live in :mod:`._blocks`.
"""

import mmap
import os
import queue
import threading

import numpy as np
from sklearn.utils.validation import _check_feature_names, _check_n_features, validate_data

from .._utils.validation import check_real
from ._blocks import (
    _add,
    _add_parts,
    _blk_fused,
    _blk_fused_exact,
    _blk_fused_groups,
    _blk_fused_groups_rows,
    _blk_matvec,
    _blk_rmatvec,
    _blk_rmatvec64,
    _blk_rmatvecs,
    _blk_stats,
    _chunk_groups,
    _dask_group,
    _dask_read_group,
    _exact_kernel,
    _fused_kernel,
    _none,
    _Parts,
    _products,
    _single_threaded_blas,
    _Stats,
    _tree,
    _Wide,
)
from ._sources import check_unchanged, compute, dask_threads, file_identity, warn_embedded_memmaps

__all__ = ["DataOperator", "as_data_operator", "is_dask_array", "is_out_of_core"]

#: Bytes of one row block of an in-memory array (a view; a few MB: cache friendly).
BLOCK_BYTES = 8 * 2**20
#: Bytes of one row block of a memmap (a view of the mapped file, no buffer:
#: large blocks cost no memory of the process). Large so that the P-long
#: accumulators a block adds into (P x 16 float64 in the start's passes: as
#: many bytes as 32 float32 rows) are little traffic beside the block, and the
#: products are BLAS-3 shaped (:data:`._blocks.TRANSPOSED_MIN_ROWS`): a joint
#: fit's passes took 10.8 CPU s with 256 MiB blocks, 12.4 with 32 MiB
#: (2,000 x 327,684 float32, issue 22 round 11).
MEMMAP_BLOCK_BYTES = 256 * 2**20
#: Whether a memmap's row blocks are given back once their products are done
#: (:class:`_Pages`: the process's resident memory stays a few blocks). Off,
#: the pages stay mapped while the memmap is open (resident memory up to
#: the file's size, shared with the page cache) and a pass faults none in
#: again: 0.1-0.14 CPU s less per pass at 2,000 x 327,684 float32 (issue 22
#: round 19: a fixed fit's 11 passes 4.9-5.1 -> 3.4-3.9 CPU s); on, as before.
GIVE_BACK_PAGES = True
#: Fewest rows of a row block (unless the data have fewer): what a block adds
#: into the P-long accumulators costs O(P) per block, so blocks of a few rows
#: of a very wide X would make a pass O(N P^2 / block size). Wide rows are
#: instead taken this many at a time and split into column tiles.
MIN_BLOCK_ROWS = 32
#: Bytes of one column tile of a row block: the unit of the BLAS products, so
#: that a tile's partial results stay in cache while they are added in place.
TILE_BYTES = 4 * 2**20
#: Bytes of rows one dask task processes: consecutive row chunks of a dask
#: array go to one task and one accumulator, so that the P-long partial result
#: each task returns (and the tree that adds them up) stays small beside the
#: data (a 32 MB chunk of a P = 327,684 array would add a 42 MB partial in a
#: 16-column pass). A task holds its chunks in memory at once.
DASK_TASK_BYTES = 256 * 2**20
#: The attribute of a dask array (set by :func:`neurospca.npy_to_dask`) holding
#: ``reader(lo, hi)``, the rows ``lo:hi`` of ``X`` read (viewed) from its file
#: inside a task, after checking the file: a pass then makes one task per
#: thread of the dask cluster (as the memmap path has one accumulator per
#: thread), each reading its consecutive blocks of :data:`DASK_TASK_BYTES` of
#: rows one at a time, whatever the array's chunks: no task per chunk, rows
#: never sent between tasks, one P-long partial result per thread.
ROW_READER = "_neurospca_row_reader"
#: Fewest columns of a tile.
MIN_TILE_COLUMNS = 256

_KEPT = (np.dtype(np.float64), np.dtype(np.float32))


def is_dask_array(X):
    """True for a ``dask.array.Array`` (without importing dask)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "to_delayed")


def is_out_of_core(X):
    """True for inputs that must not be converted to one NumPy array."""
    return isinstance(X, np.memmap) or is_dask_array(X)


#: Up to this many samples (float64, in memory) the starts of the alternation
#: come from the exact eigendecomposition of the small N x N Gram matrix (at
#: most 8 MB and a fraction of a second): cheaper than passes over the data.
GRAM_MAX_SAMPLES = 1000


def uses_gram(op):
    """True when the starts use the N x N Gram matrix (small float64 data in memory)."""
    return op.dtype == np.float64 and op.kind == "array" and op.shape[0] <= GRAM_MAX_SAMPLES


def _block_rows(n, row_bytes, block_bytes, n_threads):
    """Rows of one row block: ``block_bytes`` of rows, at least
    :data:`MIN_BLOCK_ROWS`, and at most an equal share of the rows per
    thread (every worker thread gets a block)."""
    rows = max(block_bytes // max(1, row_bytes), MIN_BLOCK_ROWS)
    if n_threads > 1:
        rows = min(rows, -(-n // n_threads))
    return int(max(1, min(n, rows)))


def _run_workers(run, blocks, n_workers):
    """``run(t, lo, hi, B)`` for every block on ``n_workers`` threads: block i
    goes to thread ``i % n_workers`` (so each thread adds into its own
    accumulator in a fixed order: the result does not depend on timing); at
    most two blocks per thread are queued (a memmap is never read further
    ahead). The first error of a worker is raised here."""
    queues = [queue.Queue(maxsize=2) for _ in range(n_workers)]
    errors = []

    def work(t):
        while True:
            item = queues[t].get()
            if item is None:
                return
            if not errors:
                try:
                    run(t, *item)
                except BaseException as exc:  # noqa: BLE001  re-raised by the driver thread
                    errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(n_workers)]
    for th in threads:
        th.start()
    try:
        for i, item in enumerate(blocks):
            if errors:
                break
            queues[i % n_workers].put(item)
    finally:
        for q in queues:
            q.put(None)
        for th in threads:
            th.join()
    if errors:
        raise errors[0]


def _work_dtype(dtype):
    dtype = np.dtype(dtype)
    return dtype if dtype in _KEPT else np.dtype(np.float64)


# ---------------------------------------------------------------- memmap reader


def _memmap_file_position(X):
    """Byte position of ``X[0, 0]`` in ``X.filename``, or None if it cannot be
    read with plain file reads (not C-contiguous, private copy-on-write map)."""
    mm = getattr(X, "_mmap", None)
    filename = getattr(X, "filename", None)
    if (
        mm is None
        or filename is None
        or not X.flags.c_contiguous
        or getattr(X, "mode", "r") in ("c", "copyonwrite")
    ):
        return None
    try:
        base = np.frombuffer(mm, dtype=np.uint8).ctypes.data
    except (TypeError, ValueError):
        return None
    offset = int(getattr(X, "offset", 0))
    start = offset - offset % mmap.ALLOCATIONGRANULARITY
    return start + (X.ctypes.data - base)


def storage_reads():
    """Bytes this process has caused to be read from storage so far
    (``read_bytes`` of ``/proc/self/io``, all threads), or None where the
    system does not say (not Linux, no task I/O accounting)."""
    try:
        with open("/proc/self/io", "rb") as fh:
            for line in fh:
                if line.startswith(b"read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


#: A pass over a memmap is "expensive" (:func:`pass_is_expensive`) when the
#: last one read at least this share of its bytes from storage: the file was
#: not in the page cache (larger than memory, or dropped), so a pass costs a
#: read of the disk, not the products (issue 22 round 17).
STORAGE_SHARE = 0.5


def pass_is_expensive(op):
    """Whether a pass over ``op``'s data costs more than the work that saves
    one (the look-ahead of deflation's start, the restart checks' larger span:
    issue 22 round 17), decided from the passes this fit already made.

    In memory: never (round 16: no pass saved on 30 trust instances, 2-3 %
    more CPU). A memmap: when its last pass read at least
    :data:`STORAGE_SHARE` of its bytes from storage (``op.last_pass_reads``),
    i.e. the file is not kept in the page cache between passes; a pass of a
    memmap in the page cache costs 0.15-0.2 s at 300 x 327,684, less than that
    extra work (7-20 % more CPU, round 16). Where the reads are not known (not
    Linux, no pass yet), and for a dask array (its tasks may read in other
    processes), a pass is taken to be expensive, as before round 17.
    """
    if op.kind == "dask":
        return True
    if op.kind != "memmap":
        return False
    read = getattr(op, "last_pass_reads", None)
    return read is None or read >= STORAGE_SHARE * op.X.nbytes


class _Pages:
    """The pages of a memmap's row blocks, given back once a block's products
    are done (``madvise(MADV_DONTNEED)``: the process's resident memory stays
    a few blocks, as with reads into buffers; the page cache keeps them).

    The blocks are views of the mapped file (no copy: a copy out of the page
    cache cost 2-4x the products of a pass). Only shared read mappings are
    viewed (:func:`_memmap_file_position`), so giving pages back never drops
    data of the process's own.
    """

    def __init__(self, X):
        self._mm = X._mmap
        self._base = np.frombuffer(self._mm, dtype=np.uint8).ctypes.data

    def give(self, B):
        start = B.ctypes.data - self._base
        end = start + B.nbytes
        start -= start % mmap.PAGESIZE
        if end > start and hasattr(self._mm, "madvise"):
            self._mm.madvise(mmap.MADV_DONTNEED, start, end - start)


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
        their own row chunks, those of :func:`neurospca.npy_to_dask` blocks of
        :data:`DASK_TASK_BYTES` that each task reads itself).
    """

    def __init__(self, X, name="X", block_bytes=None, n_threads=None):
        if X.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array (n_samples, n_features), got {X.ndim}-D.")
        self.name = name
        self.shape = tuple(int(s) for s in X.shape)
        self.dtype = _work_dtype(X.dtype)
        self.mean = None
        self._resid = None
        self.stats = None
        self.sketch = None
        self.n_passes = 0
        # bytes the last pass over a memmap read from storage (None: unknown)
        self.last_pass_reads = None
        # the last rmatvecs() call (vectors and products): an equal call is
        # served from it (a joint fit's certification and support, issue 22)
        self._kept_rmatvecs = None
        if n_threads is None:
            n_threads = (
                len(os.sched_getaffinity(0))
                if hasattr(os, "sched_getaffinity")
                else (os.cpu_count() or 1)
            )
        self.n_threads = n_threads
        n, p = self.shape
        self._reader = None
        if is_dask_array(X):
            self.kind = "dask"
            warn_embedded_memmaps(name, X)
            self._reader = getattr(X, ROW_READER, None)
            if X.numblocks[1] > 1:
                X = X.rechunk({1: -1})
            if self._reader is not None:  # tasks of DASK_TASK_BYTES of rows, read by each task
                rows = _block_rows(n, p * np.dtype(X.dtype).itemsize, DASK_TASK_BYTES, 1)
                self._offsets = np.append(np.arange(0, n, rows), n).astype(int)
            else:
                self._offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(int)
                rows = max(X.chunks[0]) if X.chunks[0] else 1
        else:
            self.kind = "memmap" if isinstance(X, np.memmap) else "array"
            if self.kind == "array":
                X = np.asarray(X)
            if block_bytes is None:
                block_bytes = MEMMAP_BLOCK_BYTES if self.kind == "memmap" else BLOCK_BYTES
            rows = _block_rows(n, p * np.dtype(X.dtype).itemsize, block_bytes, self.n_threads)
            self._offsets = np.append(np.arange(0, n, rows), n).astype(int) if n else np.array([0])
        # column tiles: a tile of a row block is at most TILE_BYTES
        itemsize = max(np.dtype(X.dtype).itemsize, self.dtype.itemsize)
        self._cols = int(max(MIN_TILE_COLUMNS, TILE_BYTES // max(1, rows * itemsize)))
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
            if self._pos is not None:
                yield from self._mapped_blocks()
                return
            for lo, hi in zip(off[:-1], off[1:], strict=True):
                yield lo, hi, np.array(X[lo:hi])
            return
        for lo, hi in zip(off[:-1], off[1:], strict=True):
            yield lo, hi, X[lo:hi]

    def _mapped_blocks(self):
        """Row blocks of a memmap as views of its mapped file. Before each block
        is touched, the file is checked to be the one mapped, of the same size
        (a view past the end of a truncated file would kill the process with
        SIGBUS): a file changed between blocks gives the ValueError of
        :func:`check_unchanged`."""
        X, off = self.X, self._offsets
        A = X.view(np.ndarray)
        with open(X.filename, "rb", buffering=0) as fh:
            for lo, hi in zip(off[:-1], off[1:], strict=True):
                check_unchanged(self.name, X, fh, self._identity)
                yield lo, hi, A[lo:hi]

    def _map(self, fn, args, make_acc=None, rows_tail=None):
        """One pass over ``X``: ``fn`` on every row block.

        ``make_acc()`` makes an accumulator that ``fn`` adds into in place
        (one per worker thread, added up in a fixed order at the end);
        ``rows_tail`` is the shape of one row of the rows part (``()`` for a
        vector, ``(k,)`` for a matrix, None for none). Returns ``(rows, acc)``.
        """
        self.n_passes += 1
        if self.kind == "dask":
            return self._map_dask(fn, args, make_acc, rows_tail)
        n = self.shape[0]
        rows = None if rows_tail is None else np.empty((n,) + rows_tail)
        n_workers = max(1, min(self.n_threads, len(self._offsets) - 1))
        accs = [make_acc() if make_acc is not None else None for _ in range(n_workers)]

        mapped = self.kind == "memmap" and self._pos is not None
        pages = _Pages(self.X) if mapped and GIVE_BACK_PAGES else None
        read0 = storage_reads() if self.kind == "memmap" else None

        def run(t, lo, hi, B):
            fn(B, slice(lo, hi), accs[t], None if rows is None else rows[lo:hi], self._cols, *args)
            if pages is not None:
                pages.give(B)

        with _single_threaded_blas():
            if n_workers == 1:
                for lo, hi, B in self._blocks():
                    run(0, lo, hi, B)
            else:
                _run_workers(run, self._blocks(), n_workers)
        read1 = storage_reads() if read0 is not None else None
        if read1 is not None:
            self.last_pass_reads = read1 - read0
        acc = accs[0]
        for other in accs[1:]:
            acc = _add(acc, other)
        return rows, acc

    def _map_dask(self, fn, args, make_acc, rows_tail):
        import dask

        delayed = dask.delayed
        dargs = [
            delayed(a) if isinstance(a, _Wide) or (isinstance(a, np.ndarray) and a.size > 64) else a
            for a in args
        ]
        make = make_acc if make_acc is not None else _none
        off = self._offsets
        if self._reader is not None:  # tasks read (view) their own rows: no chunk tasks
            bounds = [(int(lo), int(hi)) for lo, hi in zip(off[:-1], off[1:], strict=True)]
            tasks = [
                delayed(_dask_read_group)(
                    self._reader, fn, [bounds[i] for i in g], make, rows_tail, self._cols, *dargs
                )
                for g in np.array_split(np.arange(len(bounds)), min(len(bounds), dask_threads()))
            ]
        else:
            blocks = self.X.to_delayed()[:, 0]
            row_bytes = self.shape[1] * self.X.dtype.itemsize
            tasks = [
                delayed(_dask_group)(
                    fn,
                    [blocks[i] for i in g],
                    [(int(off[i]), int(off[i + 1])) for i in g],
                    make,
                    rows_tail,
                    self._cols,
                    *dargs,
                )
                for g in _chunk_groups(np.diff(off), row_bytes, DASK_TASK_BYTES)
            ]
        # one tree adds the tasks' accumulators and joins their rows, in row order
        ((rows, total),) = compute(self.name, _tree(tasks, _add_parts, delayed))
        return rows, total

    def _vec_acc(self, width=None):
        p = self.shape[1]
        return (lambda: np.zeros(p)) if width is None else (lambda: np.zeros((p, width)))

    # ------------------------------------------------------------ statistics
    def scan(self, min_samples=2, min_features=1, sketch=0, random_state=0):
        """The one pass over ``X``: finiteness, scale, means, centred column
        sums of squares, minima and maxima (float64). Raises ValueError with
        the messages of :func:`neurospca._utils.validation.check_data`.

        ``sketch > 0``: the same pass also applies the Gram matrix of the
        centred data to ``sketch`` seeded Gaussian directions (the first block
        of the start's Krylov space, :mod:`~neurospca.decomposition._subspace`),
        kept as ``self.sketch = (W, Xc W, Xc^T Xc W)``.
        """
        from .._utils.validation import check_scale_value

        name = self.name
        n, p = self.shape
        if n == 0 or p == 0:
            raise ValueError(f"{name} has shape {self.shape}; it must not be empty.")
        W = None
        if sketch:
            W = np.random.RandomState(random_state).standard_normal((p, sketch))
        XW, st = self._map(
            _blk_stats,
            (self.dtype, None if W is None else self._cast_wide(W), _products()),
            make_acc=lambda: _Stats(p, sketch),
            rows_tail=None if W is None else (sketch,),
        )
        mean, m2, lo_v, hi_v, bad = st.mean, st.m2, st.min, st.max, st.bad
        if bad:
            raise ValueError(
                f"{name} contains {bad} NaN or infinite values; remove or impute them."
            )
        if n < min_samples:
            raise ValueError(f"{name} has {n} sample(s); at least {min_samples} are required.")
        check_scale_value(max(float(np.abs(lo_v).max()), float(np.abs(hi_v).max())), n * p, name)
        if p < min_features:
            raise ValueError(f"{name} has {p} feature(s); at least {min_features} are required.")
        self.stats = {"mean": mean, "m2": np.maximum(m2, 0.0), "min": lo_v, "max": hi_v}
        if W is not None:  # raw products (the centring is applied where used)
            self.sketch = {"W": W, "XW": XW, "XtXW": st.gram}
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
        self._resid = mean if np.any(mean) else None
        self._kept_rmatvecs = None
        self._subspace = None
        return self

    # ------------------------------------------------------------ products
    def _cast(self, w):
        return np.ascontiguousarray(w, dtype=self.dtype)

    def _cast_wide(self, W):
        """:meth:`_cast` of a matrix, as a :class:`._blocks._Wide` (made once
        per pass) when its blocks take the 8-column kernels."""
        W = self._cast(W)
        if self.dtype != np.float32 or W.shape[1] < 2:
            return W
        kernels = _products()
        return _Wide(W, kernels) if getattr(kernels, "FAST", False) else W

    def matvec(self, v):
        """``Xc v`` (float64, length n_samples)."""
        z, _ = self._map(_blk_matvec, (self.dtype, self._cast(v)), rows_tail=())
        if self._resid is not None:
            z -= float(self._resid @ v)
        return z

    def rmatvec(self, u, exact=False):
        """``Xc^T u`` (float64). ``exact``: float64 arithmetic on float32 data
        (float64 accuracy; used by the certificates)."""
        u = np.ascontiguousarray(u, dtype=np.float64)
        if exact and self.dtype == np.float32:
            _, g = self._map(_blk_rmatvec64, (_exact_kernel(), u), make_acc=self._vec_acc())
        else:
            _, g = self._map(_blk_rmatvec, (self.dtype, u), make_acc=self._vec_acc())
        if self._resid is not None:
            g -= self._resid * float(u.sum())
        return g

    def rmatvecs(self, us, exact=False):
        """``[Xc^T u for u in us]`` in one pass over ``X``, each equal bit for
        bit to :meth:`rmatvec` ``(u, exact)`` (the same per-vector arithmetic
        on the same row blocks, added up in the same order)."""
        us = [np.ascontiguousarray(u, dtype=np.float64) for u in us]
        if not us:
            return []
        kept = self._kept_rmatvecs
        if (
            kept is not None
            and kept[0] == (bool(exact), self._resid is None)
            and _same(kept[1], us)
        ):
            return [g.copy() for g in kept[2]]
        kernel = _exact_kernel() if exact and self.dtype == np.float32 else None
        p, k = self.shape[1], len(us)
        _, G = self._map(_blk_rmatvecs, (self.dtype, kernel, us), make_acc=lambda: np.zeros((k, p)))
        if self._resid is not None:
            for g, u in zip(G, us, strict=True):
                g -= self._resid * float(u.sum())
        self._kept_rmatvecs = ((bool(exact), self._resid is None), us, [g.copy() for g in G])
        return list(G)

    def keep_rmatvecs(self, us, values, exact=False):
        """Serve the next :meth:`rmatvecs` ``(us, exact)`` with ``values``
        (products an earlier pass gave, to the same accuracy), with no pass."""
        us = [np.ascontiguousarray(u, dtype=np.float64) for u in us]
        self._kept_rmatvecs = ((bool(exact), self._resid is None), us, [g.copy() for g in values])

    def fused(self, v, c=None):
        """``z = Xc v - c`` and ``Xc^T z`` in one pass over ``X``.

        ``Xc^T z`` is computed in float64 arithmetic for the float64 ``z``
        (float32 data too), as ``rmatvec(z, exact=True)`` would.
        """
        c = np.zeros(self.shape[0]) if c is None else np.asarray(c, dtype=np.float64)
        if self._resid is not None:
            c = c + float(self._resid @ v)
        one_read = _fused_kernel(self.dtype)
        if one_read is not None:  # float32: z in float64 too, one read of each row
            z, g = self._map(
                _blk_fused_exact,
                (np.ascontiguousarray(v, dtype=np.float64), c, one_read),
                make_acc=self._vec_acc(),
                rows_tail=(),
            )
        else:
            kernel = _exact_kernel() if self.dtype == np.float32 else None
            z, g = self._map(
                _blk_fused,
                (self.dtype, self._cast(v), c, kernel),
                make_acc=self._vec_acc(),
                rows_tail=(),
            )
        if self._resid is not None:
            g -= self._resid * float(z.sum())
        return z, g

    def gram(self, W, C=None):
        """``Z = Xc W - C`` and ``Xc^T Z`` for ``W`` of shape (n_features, k),
        in one pass over ``X`` (float64)."""
        W = np.asarray(W, dtype=np.float64)
        shift = (
            np.zeros((self.shape[0], W.shape[1])) if C is None else np.array(C, dtype=np.float64)
        )
        if self._resid is not None:
            shift += self._resid @ W
        Z, G = self._map(
            _blk_fused,
            (self.dtype, self._cast_wide(W), shift),
            make_acc=self._vec_acc(W.shape[1]),
            rows_tail=(W.shape[1],),
        )
        if self._resid is not None:
            G -= np.outer(self._resid, Z.sum(axis=0))
        return Z, G

    def gram_groups(self, Ws, Cs):
        """``[self.gram(W, C) for W, C in zip(Ws, Cs)]`` in ONE pass over ``X``
        (a dask array too: the rows come back side by side), each equal bit
        for bit to its own :meth:`gram` (the same arithmetic per row block,
        part by part)."""
        Ws = [np.asarray(W, dtype=np.float64) for W in Ws]
        shifts = [np.array(C, dtype=np.float64) for C in Cs]
        if self._resid is not None:
            for W, shift in zip(Ws, shifts, strict=True):
                shift += self._resid @ W
        n, p = self.shape

        def make_acc():
            return _Parts([(p, W.shape[1]) for W in Ws])

        if self.kind == "dask":
            widths = [W.shape[1] for W in Ws]
            Z, acc = self._map(
                _blk_fused_groups_rows,
                (self.dtype, [self._cast(W) for W in Ws], shifts),
                make_acc=make_acc,
                rows_tail=(sum(widths),),
            )
            Zs = [np.ascontiguousarray(z) for z in np.split(Z, np.cumsum(widths)[:-1], axis=1)]
        else:
            Zs = [np.empty((n, W.shape[1])) for W in Ws]
            _, acc = self._map(
                _blk_fused_groups,
                (self.dtype, [self._cast(W) for W in Ws], shifts, Zs),
                make_acc=make_acc,
            )
        out = []
        for Z, G in zip(Zs, acc.parts, strict=True):
            if self._resid is not None:
                G -= np.outer(self._resid, Z.sum(axis=0))
            out.append((Z, G))
        return out

    def matmat(self, W):
        """``Xc W`` for ``W`` of shape (n_features, k) (float64)."""
        W = np.asarray(W, dtype=np.float64)
        Z, _ = self._map(_blk_matvec, (self.dtype, self._cast_wide(W)), rows_tail=(W.shape[1],))
        if self._resid is not None:
            Z -= self._resid @ W
        return Z

    def rmatmat(self, Z):
        """``Xc^T Z`` for ``Z`` of shape (n_samples, k) (float64)."""
        Z = np.asarray(Z, dtype=np.float64)
        _, G = self._map(_blk_rmatvec, (self.dtype, Z), make_acc=self._vec_acc(Z.shape[1]))
        if self._resid is not None:
            G -= np.outer(self._resid, Z.sum(axis=0))
        return G


def _same(a, b):
    """Whether two lists of vectors are equal element for element."""
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


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
            X = X.astype(X.dtype if X.dtype in (np.float32, np.float64) else np.float64, copy=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a numeric array: {exc}") from None
        op = DataOperator(X, name=name, n_threads=n_threads)
    from ._subspace import SKETCH_WIDTH

    return op.scan(min_samples=min_samples, sketch=0 if uses_gram(op) else SKETCH_WIDTH)


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
            raise ValueError(f"X must be a 2-D array (n_samples, n_features), got {X.ndim}-D.")
        _check_feature_names(estimator, X, reset=reset)
        _check_n_features(estimator, X, reset=reset)
        return as_data_operator(X, min_samples=min_samples, n_threads=n_threads)
    check_real(X, "X")
    ndim = getattr(X, "ndim", None)
    if ndim is not None and ndim != 2:
        raise ValueError(
            f"X must be a 2-D array (n_samples, n_features), got {ndim}-D "
            f"of shape {tuple(X.shape)}; reshape it, e.g. "
            "X.reshape(len(X), -1)."
        )
    X = validate_data(
        estimator,
        X,
        reset=reset,
        dtype=(np.float64, np.float32),
        ensure_min_samples=min_samples,
        ensure_all_finite=False,
    )
    return as_data_operator(X, min_samples=min_samples, n_threads=n_threads)
