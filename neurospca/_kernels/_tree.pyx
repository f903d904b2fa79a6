# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython kernel of the tree-structured prox (Jenatton et al. 2010, Prop. 1).

The NumPy twin is :func:`neurospca.decomposition._tree._prox_tree_core`; the
tests check they agree; :func:`neurospca._kernels.load` chooses. No validation here: callers validate once.

Rows of ``Z`` are independent problems whose columns are already in the
tree's depth-first pre-order, so the group of the node at position ``i`` is
the slice ``i:end[i]`` and walking the positions backwards visits every node
after its descendants (leaves to root).
"""

from libc.math cimport sqrt, fabs
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, free, qsort


cdef int _cmp_desc(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0]
    cdef double y = (<const double*>b)[0]
    if x < y:
        return 1
    if x > y:
        return -1
    return 0


cdef double _l1_ball_threshold(const double* v, Py_ssize_t k, double radius,
                               double* buf) noexcept nogil:
    """Soft-threshold level of the projection of ``v`` on the l1 ball, or -1
    if ``v`` is inside the ball (sort-based, Duchi et al. 2008)."""
    cdef Py_ssize_t j
    cdef double total = 0.0, cs = 0.0, theta = 0.0
    for j in range(k):
        buf[j] = fabs(v[j])
        total = total + buf[j]
    if total <= radius:
        return -1.0
    qsort(buf, k, sizeof(double), _cmp_desc)
    # support: sum_{i<=j} (s_i - s_j) < radius (always true at j = 0); this
    # form does not cancel when |v| >> radius, unlike s_j > (cs_j - radius)/(j+1)
    for j in range(k):
        cs = cs + buf[j]
        if cs - (j + 1) * buf[j] < radius:
            theta = (cs - radius) / (j + 1)
    if theta < 0:
        theta = 0.0
    return theta


def prox_tree_rows(double[:, ::1] Z, const int64_t[::1] end, const double[::1] radii,
                   const double[::1] row_scale, int linf, int root_first):
    """Group shrinkages in place on pre-ordered rows.

    Parameters
    ----------
    Z : (n, p) float64, C-contiguous, columns in pre-order (modified)
    end : (p,) int64, one past the subtree of each position
    radii : (p,) float64, ``lam * w`` of the node at each position
    row_scale : (n,) float64, multiplies the radii of each row (FISTA steps)
    linf : 0 for the l2 norm, 1 for the l-infinity norm
    root_first : 1 to visit the root first (wrong order, for tests)
    """
    cdef Py_ssize_t n = Z.shape[0], p = Z.shape[1]
    cdef Py_ssize_t i, s, pos, j, k
    cdef double r, nrm, scale, theta, a
    cdef double* buf
    cdef double* row
    with nogil:
        buf = <double*>malloc((p if p > 0 else 1) * sizeof(double))
        for i in range(n):
            row = &Z[i, 0]
            for s in range(p):
                pos = s if root_first else p - 1 - s
                r = radii[pos] * row_scale[i]
                if r <= 0:
                    continue
                k = end[pos] - pos
                if linf == 0:
                    nrm = 0.0
                    for j in range(pos, end[pos]):
                        nrm = nrm + row[j] * row[j]
                    nrm = sqrt(nrm)
                    if nrm > r:
                        scale = 1.0 - r / nrm
                    else:
                        scale = 0.0
                    for j in range(pos, end[pos]):
                        row[j] = row[j] * scale
                else:
                    theta = _l1_ball_threshold(row + pos, k, r, buf)
                    if theta < 0:
                        for j in range(pos, end[pos]):
                            row[j] = 0.0
                    else:
                        # v - proj(v) = sign(v) min(|v|, theta)
                        for j in range(pos, end[pos]):
                            a = fabs(row[j])
                            if a > theta:
                                row[j] = theta if row[j] > 0 else -theta
        free(buf)
