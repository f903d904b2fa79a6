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

The inner loops are C (below), compiled twice where GCC supports function
multi-versioning (x86-64 with glibc's ifunc resolver): for AVX2 (four doubles
per instruction, chosen at load time on CPUs that have it) and for the
baseline. AVX2 without
FMA: every product and sum is the same IEEE operation in both, so the two
give the same bits (the loops run over independent columns; nothing is
reassociated).
"""

from cython cimport floating
from libc.math cimport INFINITY


cdef extern from *:
    """
    #include <math.h>
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
    #define NSP_CLONES __attribute__((target_clones("avx2", "default")))
    #else
    #define NSP_CLONES
    #endif

    NSP_CLONES static void nsp_rmatvec_exact(const float *B, Py_ssize_t rs, Py_ssize_t n,
                                             Py_ssize_t p, const double *z, double *acc)
    {
        Py_ssize_t i = 0, j;
        for (; i + 4 <= n; i += 4) {
            const float *r0 = B + i * rs, *r1 = r0 + rs, *r2 = r1 + rs, *r3 = r2 + rs;
            double z0 = z[i], z1 = z[i + 1], z2 = z[i + 2], z3 = z[i + 3];
            for (j = 0; j < p; j++)
                acc[j] += (z0 * (double)r0[j] + z1 * (double)r1[j])
                          + (z2 * (double)r2[j] + z3 * (double)r3[j]);
        }
        for (; i < n; i++) {
            const float *r0 = B + i * rs;
            double z0 = z[i];
            for (j = 0; j < p; j++)
                acc[j] += z0 * (double)r0[j];
        }
    }

    #define NSP_STATS(NAME, T)                                                          \
    NSP_CLONES static void NAME(const T *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t j0, \
                                Py_ssize_t j1, double *s, double *lo, double *hi)        \
    {                                                                                   \
        Py_ssize_t i = 0, j;                                                            \
        double x0, x1, x2, x3, a, b;                                                    \
        for (j = j0; j < j1; j++) { s[j] = 0.0; lo[j] = INFINITY; hi[j] = -INFINITY; }  \
        for (; i + 4 <= n; i += 4) {                                                    \
            const T *r0 = T0 + i * rs, *r1 = r0 + rs, *r2 = r1 + rs, *r3 = r2 + rs;      \
            for (j = j0; j < j1; j++) {                                                 \
                x0 = (double)r0[j]; x1 = (double)r1[j];                                 \
                x2 = (double)r2[j]; x3 = (double)r3[j];                                 \
                s[j] += (x0 + x1) + (x2 + x3);                                          \
                a = x0 < x1 ? x0 : x1; b = x2 < x3 ? x2 : x3; a = a < b ? a : b;        \
                lo[j] = a < lo[j] ? a : lo[j];                                          \
                a = x0 > x1 ? x0 : x1; b = x2 > x3 ? x2 : x3; a = a > b ? a : b;        \
                hi[j] = a > hi[j] ? a : hi[j];                                          \
            }                                                                           \
        }                                                                               \
        for (; i < n; i++) {                                                            \
            const T *r0 = T0 + i * rs;                                                  \
            for (j = j0; j < j1; j++) {                                                 \
                x0 = (double)r0[j];                                                     \
                s[j] += x0;                                                             \
                lo[j] = x0 < lo[j] ? x0 : lo[j];                                        \
                hi[j] = x0 > hi[j] ? x0 : hi[j];                                        \
            }                                                                           \
        }                                                                               \
    }

    #define NSP_M2(NAME, T)                                                             \
    NSP_CLONES static void NAME(const T *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t j0, \
                                Py_ssize_t j1, const double *mean, double *m2)          \
    {                                                                                   \
        Py_ssize_t i = 0, j;                                                            \
        double d0, d1, d2, d3, mj;                                                      \
        for (j = j0; j < j1; j++) m2[j] = 0.0;                                          \
        for (; i + 4 <= n; i += 4) {                                                    \
            const T *r0 = T0 + i * rs, *r1 = r0 + rs, *r2 = r1 + rs, *r3 = r2 + rs;      \
            for (j = j0; j < j1; j++) {                                                 \
                mj = mean[j];                                                           \
                d0 = (double)r0[j] - mj; d1 = (double)r1[j] - mj;                       \
                d2 = (double)r2[j] - mj; d3 = (double)r3[j] - mj;                       \
                m2[j] += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);                     \
            }                                                                           \
        }                                                                               \
        for (; i < n; i++) {                                                            \
            const T *r0 = T0 + i * rs;                                                  \
            for (j = j0; j < j1; j++) { d0 = (double)r0[j] - mean[j]; m2[j] += d0 * d0; } \
        }                                                                               \
    }

    NSP_STATS(nsp_stats_f, float)
    NSP_STATS(nsp_stats_d, double)
    NSP_M2(nsp_m2_f, float)
    NSP_M2(nsp_m2_d, double)
    """
    void nsp_rmatvec_exact(const float *B, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,
                           const double *z, double *acc) noexcept nogil
    void nsp_stats_f(const float *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t j0,
                     Py_ssize_t j1, double *s, double *lo, double *hi) noexcept nogil
    void nsp_stats_d(const double *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t j0,
                     Py_ssize_t j1, double *s, double *lo, double *hi) noexcept nogil
    void nsp_m2_f(const float *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t j0,
                  Py_ssize_t j1, const double *mean, double *m2) noexcept nogil
    void nsp_m2_d(const double *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t j0,
                  Py_ssize_t j1, const double *mean, double *m2) noexcept nogil


def rmatvec_exact(const float[:, :] B, const double[::1] z, double[::1] out):
    """``out += B^T z`` in float64 (``B`` float32 with contiguous rows)."""
    cdef Py_ssize_t n = B.shape[0], p = B.shape[1]
    if n == 0 or p == 0:
        return
    if B.strides[1] != sizeof(float):
        raise ValueError("rmatvec_exact: the rows of B must be contiguous")
    with nogil:
        nsp_rmatvec_exact(&B[0, 0], B.strides[0] // sizeof(float), n, p, &z[0], &out[0])


cdef inline void _stats_cols(const floating* T0, Py_ssize_t rs, Py_ssize_t n,
                             Py_ssize_t j0, Py_ssize_t j1,
                             double* s, double* lo, double* hi) noexcept nogil:
    """Sums, minima, maxima of columns ``j0:j1`` (``rs``: the row stride in
    elements): four rows per sweep of the accumulators."""
    if floating is float:
        nsp_stats_f(T0, rs, n, j0, j1, s, lo, hi)
    else:
        nsp_stats_d(T0, rs, n, j0, j1, s, lo, hi)


cdef inline void _m2_cols(const floating* T0, Py_ssize_t rs, Py_ssize_t n,
                          Py_ssize_t j0, Py_ssize_t j1,
                          const double* mean, double* m2) noexcept nogil:
    """Centred sums of squares of columns ``j0:j1``: four rows per sweep."""
    if floating is float:
        nsp_m2_f(T0, rs, n, j0, j1, mean, m2)
    else:
        nsp_m2_d(T0, rs, n, j0, j1, mean, m2)


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
