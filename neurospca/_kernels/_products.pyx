# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython kernel of the data path: ``X^T z`` of float32 data in float64.

The NumPy twin is :mod:`neurospca._kernels._numpy_products`; the tests check
they agree; :func:`neurospca._kernels.load` chooses. No validation here: the
caller (:mod:`neurospca.decomposition._data`) passes a column tile of a row
block (rows strided, columns contiguous).

Every product and sum is computed in double from the float32 values (exact
conversions), so the result has float64 accuracy, as converting the tile to
float64 and calling BLAS would, without writing that float64 copy: the tile
is read once, four rows at a time, and ``out`` (the tile's columns of the
float64 accumulator) stays in cache.
"""


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
