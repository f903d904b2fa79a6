# cython: language_level=3
"""Shared ``cdef inline`` helpers of the compiled kernels (``cimport``-ed, no module).

Every helper takes raw pointers (no memoryview reference counting in the hot
loops) and sums in the order of the loops it replaces, so that inlining it
changes no bit of any result.

Arrays are ``floating`` (float32 or float64, Cython's fused type): a float32
array is read and written in float32 (half the memory traffic) while every
scalar, product and sum is in double, so the float64 specialisations compute
exactly what the double-only helpers did.
"""

from cython cimport floating
from libc.math cimport sqrt
from libc.stdint cimport int32_t, int64_t

# CSR index type of the v-step kernels: int32 halves the memory traffic of the
# index arrays (neurospca.solvers._base.operator_arrays checks the sizes fit).
ctypedef int32_t idx_t


cdef inline double soft(double x, double t) noexcept nogil:
    """``sign(x) max(|x| - t, 0)``, branch-free (max/min instructions)."""
    # the sign of x is unpredictable: no branch
    cdef double a = x - t
    cdef double b = x + t
    a = a if a > 0.0 else 0.0
    b = b if b < 0.0 else 0.0
    return a + b


cdef inline double csr_row_dot(const idx_t* indptr, const idx_t* indices,
                               const floating* data, const floating* x,
                               Py_ssize_t row) noexcept nogil:
    """``(M x)[row]`` for the CSR matrix ``(indptr, indices, data)``, summed in order (in double)."""
    cdef Py_ssize_t k
    cdef double s = 0.0
    for k in range(indptr[row], indptr[row + 1]):
        s = s + data[k] * x[indices[k]]
    return s


cdef inline double ascent_row(double wr, double w_prev, double grad, double beta,
                              double step, double* nrm, double* sqs,
                              double* sqw) noexcept nogil:
    """One row of the accelerated ascent step on the group duals.

    From the iterate ``wr`` and the previous one ``w_prev``: the extrapolated
    point ``q = wr + beta (wr - w_prev)`` and the unprojected step
    ``s = q + step grad`` (returned). Adds ``s^2`` to ``nrm``, ``s (q + wr)``
    to ``sqs`` and ``q wr`` to ``sqw``: with the group's projection scale
    these give the gradient-restart test without storing ``q``.
    """
    cdef double q = wr + beta * (wr - w_prev)
    cdef double s = q + step * grad
    nrm[0] = nrm[0] + s * s
    sqs[0] = sqs[0] + s * (q + wr)
    sqw[0] = sqw[0] + q * wr
    return s


cdef inline double ball_scale(double sqnorm, double radius) noexcept nogil:
    """Scale that projects a group of squared norm ``sqnorm`` on the ball of ``radius``."""
    if sqnorm > radius * radius:
        return radius / sqrt(sqnorm)
    return 1.0


cdef inline double range_sqnorm(const floating* z, Py_ssize_t r0, Py_ssize_t r1) noexcept nogil:
    """``sum_{r0 <= r < r1} z[r]^2``, summed in order (in double)."""
    cdef Py_ssize_t r
    cdef double nrm = 0.0
    for r in range(r0, r1):
        nrm = nrm + z[r] * z[r]
    return nrm


cdef inline void scale_range(floating* z, Py_ssize_t r0, Py_ssize_t r1, double scale) noexcept nogil:
    """``z[r0:r1] *= scale``."""
    cdef Py_ssize_t r
    for r in range(r0, r1):
        z[r] = z[r] * scale
