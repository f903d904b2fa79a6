# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython kernels of the data path: ``X^T z`` of float32 data in float64, and
the column statistics of the scan.

The NumPy twin is :mod:`neurospca._kernels._numpy_products`; the tests check
they agree; :func:`neurospca._kernels.load` chooses. No validation here: the
caller (:mod:`neurospca.decomposition._data`) passes a column tile of a row
block (rows strided, columns contiguous).

Every product and sum is computed in double from the float32 values (exact
conversions), so the result has float64 accuracy, as converting the tile to
float64 and calling BLAS would, without writing that float64 copy: the tile
is read once, four rows at a time, and ``out`` (the tile's columns of the
float64 accumulator) stays in cache. ``column_stats`` and ``column_m2`` are
the scan's two reads of a tile (sums, minima, maxima; centred sums of
squares), float64 accumulators per column.
"""

from cython cimport floating
from libc.math cimport INFINITY


def rmatvec_exact(const float[:, :] B, const double[::1] z, double[::1] out):
    """``out += B^T z`` in float64 (``B`` float32 with contiguous rows)."""
    cdef Py_ssize_t i, j, n = B.shape[0], p = B.shape[1]
    cdef double z0, z1, z2, z3
    cdef const float *r0
    cdef const float *r1
    cdef const float *r2
    cdef const float *r3
    cdef double* acc
    if n == 0 or p == 0:
        return
    if B.strides[1] != sizeof(float):
        raise ValueError("rmatvec_exact: the rows of B must be contiguous")
    acc = &out[0]
    with nogil:
        i = 0
        while i + 4 <= n:
            z0, z1, z2, z3 = z[i], z[i + 1], z[i + 2], z[i + 3]
            r0, r1, r2, r3 = &B[i, 0], &B[i + 1, 0], &B[i + 2, 0], &B[i + 3, 0]
            for j in range(p):
                acc[j] += (z0 * <double>r0[j] + z1 * <double>r1[j]) \
                    + (z2 * <double>r2[j] + z3 * <double>r3[j])
            i += 4
        while i < n:
            z0 = z[i]
            r0 = &B[i, 0]
            for j in range(p):
                acc[j] += z0 * <double>r0[j]
            i += 1


cdef inline void _stats_cols(const floating* T0, Py_ssize_t rs, Py_ssize_t n,
                             Py_ssize_t j0, Py_ssize_t j1,
                             double* s, double* lo, double* hi) noexcept nogil:
    """Sums, minima, maxima of columns ``j0:j1`` (``rs``: the row stride in
    elements): four rows per sweep of the accumulators."""
    cdef Py_ssize_t i, j
    cdef double x0, x1, x2, x3, a, b
    cdef const floating* r0
    cdef const floating* r1
    cdef const floating* r2
    cdef const floating* r3
    for j in range(j0, j1):
        s[j] = 0.0
        lo[j] = INFINITY
        hi[j] = -INFINITY
    i = 0
    while i + 4 <= n:
        r0, r1, r2, r3 = T0 + i * rs, T0 + (i + 1) * rs, T0 + (i + 2) * rs, T0 + (i + 3) * rs
        for j in range(j0, j1):
            x0, x1, x2, x3 = <double>r0[j], <double>r1[j], <double>r2[j], <double>r3[j]
            s[j] += (x0 + x1) + (x2 + x3)
            a = x0 if x0 < x1 else x1
            b = x2 if x2 < x3 else x3
            a = a if a < b else b
            lo[j] = a if a < lo[j] else lo[j]
            a = x0 if x0 > x1 else x1
            b = x2 if x2 > x3 else x3
            a = a if a > b else b
            hi[j] = a if a > hi[j] else hi[j]
        i += 4
    while i < n:
        r0 = T0 + i * rs
        for j in range(j0, j1):
            x0 = <double>r0[j]
            s[j] += x0
            lo[j] = x0 if x0 < lo[j] else lo[j]
            hi[j] = x0 if x0 > hi[j] else hi[j]
        i += 1


cdef inline void _m2_cols(const floating* T0, Py_ssize_t rs, Py_ssize_t n,
                          Py_ssize_t j0, Py_ssize_t j1,
                          const double* mean, double* m2) noexcept nogil:
    """Centred sums of squares of columns ``j0:j1``: four rows per sweep."""
    cdef Py_ssize_t i, j
    cdef double d0, d1, d2, d3, mj
    cdef const floating* r0
    cdef const floating* r1
    cdef const floating* r2
    cdef const floating* r3
    for j in range(j0, j1):
        m2[j] = 0.0
    i = 0
    while i + 4 <= n:
        r0, r1, r2, r3 = T0 + i * rs, T0 + (i + 1) * rs, T0 + (i + 2) * rs, T0 + (i + 3) * rs
        for j in range(j0, j1):
            mj = mean[j]
            d0 = <double>r0[j] - mj
            d1 = <double>r1[j] - mj
            d2 = <double>r2[j] - mj
            d3 = <double>r3[j] - mj
            m2[j] += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3)
        i += 4
    while i < n:
        r0 = T0 + i * rs
        for j in range(j0, j1):
            d0 = <double>r0[j] - mean[j]
            m2[j] += d0 * d0
        i += 1


cdef Py_ssize_t _row_stride(const floating[:, :] T, str name) except -1:
    if T.shape[0] and T.shape[1] and T.strides[1] != sizeof(floating):
        raise ValueError(f"{name}: the rows of T must be contiguous")
    return T.strides[0] // sizeof(floating) if T.shape[0] else 0


def column_stats(const floating[:, :] T, double[::1] s, double[::1] lo, double[::1] hi):
    """Column sums (float64), minima and maxima of ``T`` (rows contiguous),
    written into ``s``, ``lo``, ``hi``: one read of ``T``, four rows per sweep
    of the accumulators (a quarter of their loads and stores)."""
    cdef Py_ssize_t n = T.shape[0], p = T.shape[1], rs = _row_stride(T, "column_stats")
    if p == 0:
        return
    with nogil:
        _stats_cols(&T[0, 0] if n else NULL, rs, n, 0, p, &s[0], &lo[0], &hi[0])


def column_m2(const floating[:, :] T, const double[::1] mean, double[::1] m2):
    """Centred column sums of squares ``sum_i (T_ij - mean_j)^2`` (float64)
    into ``m2``: one read of ``T``, four rows per sweep of ``m2``."""
    cdef Py_ssize_t n = T.shape[0], p = T.shape[1], rs = _row_stride(T, "column_m2")
    if p == 0:
        return
    with nogil:
        _m2_cols(&T[0, 0] if n else NULL, rs, n, 0, p, &mean[0], &m2[0])


#: Columns per chunk of :func:`column_moments`: a chunk of a few hundred rows
#: stays in the core's cache between its two reads.
MOMENT_CHUNK_BYTES = 256 * 1024


def column_moments(const floating[:, :] T, double[::1] s, double[::1] lo, double[::1] hi,
                   double[::1] mean, double[::1] m2):
    """:func:`column_stats`, ``mean = s / n`` and :func:`column_m2` about that
    mean, by chunks of columns small enough that the second read of a chunk
    comes from the cache: per column, the arithmetic of the two calls (the
    same results, bit for bit), one read of ``T`` from memory."""
    cdef Py_ssize_t n = T.shape[0], p = T.shape[1], rs = _row_stride(T, "column_moments")
    cdef Py_ssize_t j, j0, j1, width
    cdef const floating* T0
    if p == 0:
        return
    width = MOMENT_CHUNK_BYTES // max(1, n * <Py_ssize_t>sizeof(floating))
    width = max(64, width - width % 8)
    T0 = &T[0, 0] if n else NULL
    with nogil:
        j0 = 0
        while j0 < p:
            j1 = min(p, j0 + width)
            _stats_cols(T0, rs, n, j0, j1, &s[0], &lo[0], &hi[0])
            for j in range(j0, j1):
                mean[j] = s[j] / n
            _m2_cols(T0, rs, n, j0, j1, &mean[0], &m2[0])
            j0 = j1
