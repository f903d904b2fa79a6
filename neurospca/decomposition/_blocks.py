"""Block kernels of :mod:`neurospca.decomposition._data`: one pass's work on one row block.

Each ``_blk_*`` function takes ``(B, sl, acc, rows, cols, ...)``: ``B`` is a
row block (rows ``sl`` of ``X``), processed by column tiles of ``cols``
columns; what is summed over blocks is added IN PLACE into the accumulator
``acc`` (``acc[tile] += ...``: no P-long partial per block is allocated or
summed), the block's rows part is written into ``rows`` (its rows of the
output). They run on the driver's worker threads, or as dask tasks on
workers (:func:`_dask_group`).
"""

import numpy as np
from threadpoolctl import ThreadpoolController

_CONTROLLER = []


def _single_threaded_blas():
    """BLAS limited to one thread (context manager).

    One ``ThreadpoolController`` is made and kept: building one scans the
    loaded libraries (about 5 ms), which a fit would otherwise pay per product.
    """
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")


#: Float32 tiles with at least this many rows and columns compute a block's
#: ``T^T Y`` (``Y`` with several columns) as ``(Y^T T)^T``: OpenBLAS's kernel
#: for that layout is 1.3-1.6x faster on such tiles (10,000 x 10,242 float32:
#: row blocks of 204 rows, tiles of 5,121 columns). Its float32 rounding
#: differs from ``T^T Y``'s, so smaller tiles (every test instance with a stored
#: reference) keep ``T^T Y``; float64 data always do (bit for bit).
TRANSPOSED_MIN_ROWS = 128
TRANSPOSED_MIN_COLUMNS = 1024


def _transposed(T, Y):
    """Whether :func:`_add_tproduct` uses ``(Y^T T)^T`` for this tile."""
    return (
        T.dtype == np.float32
        and Y.ndim == 2
        and Y.shape[1] > 1
        and T.shape[0] >= TRANSPOSED_MIN_ROWS
        and T.shape[1] >= TRANSPOSED_MIN_COLUMNS
    )


def _add_tproduct(acc, T, Y, Yt=None):
    """``acc += T^T Y`` for a tile ``T`` and rows ``Y`` of the tile's type
    (``Yt``: ``Y^T`` C-contiguous, made here when not given)."""
    if _transposed(T, Y):
        Yt = np.ascontiguousarray(Y.T) if Yt is None else Yt
        acc += (Yt @ T).T
    else:
        acc += T.T @ Y


def _wide8(B, dtype, k, padded=False):
    """The compiled 8-column products (:func:`_products`' ``matmat8`` and
    ``rmatmat8``) for this block and ``k`` columns, or None: float32 blocks
    with contiguous rows and a multiple of 8 columns (``padded``: any ``k >
    1``, the columns completed by zeros: ``B W`` only), when compiled for a
    CPU with AVX-512 (``FAST``; else BLAS is as fast)."""
    if not (dtype == np.float32 and B.dtype == np.float32 and k > 1):
        return None
    if k % 8 and not padded:
        return None
    if B.shape[0] and B.strides[1] != B.itemsize:
        return None
    kernels = _products()
    return kernels if getattr(kernels, "FAST", False) else None


class _Wide:
    """A float32 ``W`` (p x k, k > 1) as the 8-column kernel takes it, made
    once per pass (:meth:`DataOperator._cast_wide`), not per row block: its
    columns zero-padded to a multiple of 8, each run of 8 columns with its
    ``pair_rows`` (at P = 327,684 making them took 0.8x a streaming pass
    per pass, issue 22 round 14). ``W``: the array itself (the BLAS path)."""

    def __init__(self, W, kernels):
        self.W = W
        k = W.shape[1]
        k8 = -(-k // 8) * 8
        Wp = np.zeros((W.shape[0], k8), np.float32)
        Wp[:, :k] = W
        self.runs = [
            (Wp[:, c : c + 8], kernels.pair_rows(Wp[:, c : c + 8])) for c in range(0, k8, 8)
        ]

    @property
    def shape(self):
        return self.W.shape

    @property
    def ndim(self):
        return 2


def _plain(W):
    """The array of ``W`` (a :class:`_Wide` or an array)."""
    return W.W if isinstance(W, _Wide) else W


def _rows8(kernels, B, W):
    """``B W`` (float64) of a float32 block by the 8-column kernel (``W``: an
    array or its :class:`_Wide`)."""
    if not isinstance(W, _Wide):
        W = _Wide(W, kernels)
    k = W.shape[1]
    Z = np.zeros((B.shape[0], 8 * len(W.runs)))
    for i, (Wc, pairs) in enumerate(W.runs):
        kernels.matmat8(B, Wc, pairs, Z[:, 8 * i : 8 * i + 8])
    return Z if k == Z.shape[1] else np.ascontiguousarray(Z[:, :k])


def _tproduct8(kernels, acc, B, Y):
    """``acc += B^T Y`` of a float32 block by the 8-column kernel."""
    Y = np.ascontiguousarray(Y, dtype=np.float32)
    for c in range(0, Y.shape[1], 8):
        kernels.rmatmat8(B, Y[:, c : c + 8], acc[:, c : c + 8])


def _tile_slices(p, cols):
    return [slice(c, min(c + cols, p)) for c in range(0, p, cols)]


def _typed(T, dtype):
    T = np.asarray(T)
    return T if T.dtype == dtype else T.astype(dtype)


class _Stats:
    """Column statistics accumulated in place, block by block (Chan et al.'s
    pairwise update of the centred sums of squares)."""

    def __init__(self, p, width=0):
        self.n = 0
        self.mean = np.zeros(p)
        self.m2 = np.zeros(p)
        self.min = np.full(p, np.inf)
        self.max = np.full(p, -np.inf)
        self.bad = 0
        # the start's sketch: X^T (X W) of a random W, in the same pass
        self.gram = np.zeros((p, width)) if width else None

    def add(self, T, c, n_block, kernels):
        """Merge a tile ``T`` (``n_block`` rows, columns ``c``); ``kernels``:
        the compiled column statistics or their twins (:func:`_products`)."""
        T = np.asarray(T)
        if not (T.dtype in (np.float32, np.float64) and T.strides[1] == T.itemsize):
            from .._kernels import load

            kernels = load("products", kernels="numpy")  # the NumPy twin
        # the tile's moments merged in place by one compiled call (issue 22 round 18)
        if kernels.scan_tile(T, self.n, self.mean[c], self.m2[c], self.min[c], self.max[c]):
            self.bad += int(T.size - np.count_nonzero(np.isfinite(T)))

    def _merge(self, c, nb, mean_b, m2_b):
        na = self.n
        n = na + nb
        delta = mean_b - self.mean[c]
        self.m2[c] += m2_b + delta * delta * (na * nb / n)
        self.mean[c] += delta * (nb / n)

    def merged(self, other):
        """Both accumulations (in place on self)."""
        if other.n:
            if self.n == 0:
                return other
            with np.errstate(invalid="ignore", over="ignore"):
                self._merge(slice(None), other.n, other.mean, other.m2)
            self.n += other.n
            np.minimum(self.min, other.min, out=self.min)
            np.maximum(self.max, other.max, out=self.max)
            self.bad += other.bad
            if self.gram is not None:
                self.gram += other.gram
        return self


def _blk_stats(B, sl, acc, rows, cols, dtype, W, kernels):
    n_block = B.shape[0]
    tiles = _tile_slices(B.shape[1], cols)
    wide = None if W is None else _wide8(B, dtype, W.shape[1])
    Y = None if W is None or wide is not None else np.zeros((n_block, W.shape[1]))
    for c in tiles:
        T = np.asarray(B[:, c])
        acc.add(T, c, n_block, kernels)
        if Y is not None:
            Y += _typed(T, dtype) @ _plain(W)[c]
    acc.n += n_block
    if wide is not None:
        rows[...] = Y = _rows8(wide, B, W)
        with np.errstate(invalid="ignore", over="ignore"):
            _tproduct8(wide, acc.gram, B, Y)
    elif W is not None:
        rows[...] = Y
        Y = Y.astype(dtype)
        Yt = np.ascontiguousarray(Y.T)
        with np.errstate(invalid="ignore", over="ignore"):
            for c in tiles:
                _add_tproduct(acc.gram[c], _typed(B[:, c], dtype), Y, Yt)


def _rows_product(B, cols, dtype, W):
    """``B W`` (float64) for a vector or a matrix ``W``, tile by tile."""
    wide = _wide8(B, dtype, W.shape[1] if W.ndim == 2 else 0, padded=True)
    if wide is not None:
        return _rows8(wide, B, W)
    W = _plain(W)
    Z = np.zeros((B.shape[0],) + W.shape[1:])
    for c in _tile_slices(B.shape[1], cols):
        Z += _typed(B[:, c], dtype) @ W[c]
    return Z


def _blk_matvec(B, sl, acc, rows, cols, dtype, W):
    """``X W`` (rows) for a vector or a matrix ``W``."""
    rows[...] = _rows_product(B, cols, dtype, W)


def _blk_rmatvec(B, sl, acc, rows, cols, dtype, Z):
    """``X^T Z`` (summed) for a vector or a matrix ``Z``."""
    wide = _wide8(B, dtype, Z.shape[1] if Z.ndim == 2 else 0)
    if wide is not None:
        _tproduct8(wide, acc, B, Z[sl])
        return
    Zb = Z[sl].astype(dtype)
    Zt = np.ascontiguousarray(Zb.T) if Zb.ndim == 2 else None
    for c in _tile_slices(B.shape[1], cols):
        _add_tproduct(acc[c], _typed(B[:, c], dtype), Zb, Zt)


def _products():
    """The data-path kernels (compiled, or their NumPy twins)."""
    from .._kernels import load

    return load("products")


def _exact_kernel():
    """The float32-data, float64-arithmetic ``B^T z`` (compiled, or its twin)."""
    return _products().rmatvec_exact


def _blk_rmatvec64(B, sl, acc, rows, cols, kernel, u):
    """``acc += B^T u`` of a float32 block in float64 arithmetic."""
    ub = u[sl]
    for c in _tile_slices(B.shape[1], cols):
        kernel(B[:, c], ub, acc[c])


def _blk_rmatvecs(B, sl, acc, rows, cols, dtype, kernel, us):
    """``acc[j] += B^T u_j`` for each vector ``u_j`` of ``us``, one read of the
    block: each column's arithmetic is that of :func:`_blk_rmatvec` (or of
    :func:`_blk_rmatvec64` with ``kernel``), so the results are those of one
    pass per vector, bit for bit."""
    for j, u in enumerate(us):
        if kernel is None:
            _blk_rmatvec(B, sl, acc[j], rows, cols, dtype, u)
        else:
            _blk_rmatvec64(B, sl, acc[j], rows, cols, kernel, u)


def _blk_fused(B, sl, acc, rows, cols, dtype, v, shift, kernel=None):
    """``z = B v - shift`` (rows) and ``B^T z`` (summed), one read of the block.

    With ``kernel`` (float32 data, a vector ``v``): ``B^T z`` of the float64
    ``z`` in float64 arithmetic (:func:`_exact_kernel`), so that ``z / ||z||``
    and its product are a certified pair (no extra pass for the certificate).
    """
    tiles = _tile_slices(B.shape[1], cols)
    z = _rows_product(B, cols, dtype, v)
    z -= shift[sl]
    rows[...] = z
    if kernel is not None and B.dtype == np.float32:
        for c in tiles:
            kernel(B[:, c], z, acc[c])
        return
    wide = _wide8(B, dtype, z.shape[1] if z.ndim == 2 else 0)
    if wide is not None:
        _tproduct8(wide, acc, B, z)
        return
    zt = z.astype(dtype)
    ztt = np.ascontiguousarray(zt.T) if zt.ndim == 2 else None
    for c in tiles:
        _add_tproduct(acc[c], _typed(B[:, c], dtype), zt, ztt)


def _fused_kernel(dtype):
    """The compiled one-read fused kernel (``fused_exact``) for float32 data, or None."""
    kernels = _products()
    if dtype != np.float32 or not getattr(kernels, "FAST", False):
        return None  # the NumPy twin would convert whole blocks to float64
    return kernels.fused_exact


def _blk_fused_exact(B, sl, acc, rows, cols, v, shift, kernel):
    """``z = B v - shift`` (rows) and ``B^T z`` (summed) of a float32 block,
    every product in float64, each row read once for both (``kernel``:
    :func:`_fused_kernel`); a block with strided rows takes :func:`_blk_fused`."""
    if B.shape[0] and B.strides[1] != B.itemsize:
        v32 = v.astype(np.float32)
        _blk_fused(B, sl, acc, rows, cols, np.dtype(np.float32), v32, shift, _exact_kernel())
        return
    z = rows if rows.flags.c_contiguous else np.empty(B.shape[0])
    g = acc if acc.flags.c_contiguous else np.zeros(acc.shape)
    kernel(B, v, np.ascontiguousarray(shift[sl]), z, g)
    if z is not rows:  # a column of rows side by side (:mod:`._lockstep`)
        rows[...] = z
    if g is not acc:
        acc += g


class _Parts:
    """Accumulators of several products of one pass (one array each), added
    up part by part."""

    def __init__(self, shapes):
        self.parts = [np.zeros(shape) for shape in shapes]

    def merged(self, other):
        for a, b in zip(self.parts, other.parts, strict=True):
            a += b
        return self


def _blk_fused_groups(B, sl, acc, rows, cols, dtype, Ws, shifts, Zs):
    """:func:`_blk_fused` of each block ``Ws[i]`` in turn on the same row block
    (one read of it): the arithmetic of one pass per block, part by part
    (rows into ``Zs[i]``, sums into ``acc.parts[i]``)."""
    for W, shift, Z, part in zip(Ws, shifts, Zs, acc.parts, strict=True):
        _blk_fused(B, sl, part, Z[sl], cols, dtype, W, shift)


def _blk_fused_groups_rows(B, sl, acc, rows, cols, dtype, Ws, shifts):
    """:func:`_blk_fused_groups` with the rows of every block ``Ws[i]`` side by
    side in ``rows`` (the rows part of a dask task: its columns ``Ws[0]``'s,
    then ``Ws[1]``'s...): the same arithmetic, part by part."""
    lo = 0
    for W, shift, part in zip(Ws, shifts, acc.parts, strict=True):
        _blk_fused(B, sl, part, rows[:, lo : lo + W.shape[1]], cols, dtype, W, shift)
        lo += W.shape[1]


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, (_Stats, _Parts)):
        return a.merged(b)
    a += b
    return a


def _dask_group(fn, Bs, bounds, make_acc, rows_tail, cols, *args):
    """One dask task: consecutive row chunks ``Bs`` (rows ``bounds``) into ONE
    accumulator, in place, as the driver's threads do; so a pass makes one
    P-long partial result per task, not per chunk (one BLAS thread per task:
    the workers' threads are the parallelism)."""
    acc = make_acc()
    lo0 = bounds[0][0]
    rows = None if rows_tail is None else np.empty((bounds[-1][1] - lo0,) + rows_tail)
    with _single_threaded_blas():
        for B, (lo, hi) in zip(Bs, bounds, strict=True):
            part = None if rows is None else rows[lo - lo0 : hi - lo0]
            fn(np.asarray(B), slice(lo, hi), acc, part, cols, *args)
    return rows, acc


def _dask_read_group(reader, fn, bounds, make_acc, rows_tail, cols, *args):
    """One dask task of an array whose tasks read their own rows
    (:func:`neurospca.npy_to_dask`): the row blocks ``bounds`` of ``X``, each
    from ``reader(lo, hi)`` (a read-only view of the file's rows, the file
    checked first) just before its products and dropped after them, into ONE
    accumulator (:func:`_dask_group`): no task per chunk, nothing read
    before the task that uses it."""
    blocks = (reader(lo, hi) for lo, hi in bounds)
    return _dask_group(fn, blocks, bounds, make_acc, rows_tail, cols, *args)


def _chunk_groups(chunk_rows, row_bytes, group_bytes):
    """Runs of consecutive chunk indices holding about ``group_bytes`` of rows each."""
    groups, run, size = [], [], 0
    for i, r in enumerate(chunk_rows):
        run.append(i)
        size += int(r) * row_bytes
        if size >= group_bytes:
            groups.append(run)
            run, size = [], 0
    if run:
        groups.append(run)
    return groups


def _add_parts(a, b):
    """Two dask tasks' ``(rows, acc)`` results (``a``'s rows first) as one."""
    rows = None if a[0] is None else np.concatenate([a[0], b[0]], axis=0)
    return rows, _add(a[1], b[1])


def _tree(items, combine, delayed):
    items = list(items)
    while len(items) > 1:
        nxt = [delayed(combine)(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    return items[0]


def _none():
    return None
