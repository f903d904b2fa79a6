# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython sweep of nonnegative sparse PCA (Zass and Shashua, Algorithm 1).

One call updates every entry of ``U`` once (column by column), each to the
global maximiser over ``[0, inf)`` of the quartic of eq. 4, with the O(P + K)
cached update of ``A U`` and ``U^T U``.  The pure NumPy twin is
:func:`neurospca.decomposition._nspca._sweep_numpy`; the tests check they agree;
:func:`neurospca._kernels.load` chooses.

Layouts (all C-contiguous float64): ``A`` (P, P) symmetric, ``Ut = U^T``
(K, P), ``AUt = (A U)^T`` (K, P), ``G = U^T U`` (K, K).  No validation here:
:func:`neurospca.decomposition._nspca.nspca` validates once.
"""

from libc.math cimport sqrt, cbrt, cos, acos, fabs, copysign

cdef double _TWO_PI_3 = 2.0943951023931957  # 2 pi / 3


cdef inline double _quartic(double x, double alpha, double c2, double c1) noexcept nogil:
    """``-(alpha/4) x^4 + (c2/2) x^2 + c1 x`` (eq. 4 without its constant)."""
    return x * (c1 + x * (0.5 * c2 - 0.25 * alpha * x * x))


cdef inline double _polish(double t, double alpha, double c2, double c1) noexcept nogil:
    """Two guarded Newton steps on the cubic ``-alpha t^3 + c2 t + c1``."""
    cdef int it
    cdef double g, dg, tn, gn
    for it in range(2):
        g = c1 + t * (c2 - alpha * t * t)
        dg = c2 - 3.0 * alpha * t * t
        if dg == 0.0:
            return t
        tn = t - g / dg
        gn = c1 + tn * (c2 - alpha * tn * tn)
        if fabs(gn) >= fabs(g):
            return t
        t = tn
    return t


cdef double _best_entry(double alpha, double c2, double c1, double x0) noexcept nogil:
    """Maximiser over ``{0, x0} U {nonnegative real roots of eq. 5}``.

    ``x0`` (the current value) is a candidate too so that rounding can never
    make an update decrease the objective.
    """
    cdef double p = -c2 / alpha
    cdef double q = -c1 / alpha
    cdef double D = 0.25 * q * q + p * p * p / 27.0
    cdef double roots[3]
    cdef int n_roots, j
    cdef double w, s, m, arg, th, t, f
    cdef double best = 0.0
    cdef double fbest = 0.0
    if D > 0.0:
        s = sqrt(D)
        w = cbrt(-0.5 * q - copysign(s, q))
        roots[0] = w - p / (3.0 * w) if w != 0.0 else 0.0
        n_roots = 1
    elif p < 0.0:
        m = 2.0 * sqrt(-p / 3.0)
        arg = (1.5 * q / p) * sqrt(-3.0 / p)
        if arg > 1.0:
            arg = 1.0
        elif arg < -1.0:
            arg = -1.0
        th = acos(arg) / 3.0
        for j in range(3):
            roots[j] = m * cos(th - _TWO_PI_3 * j)
        n_roots = 3
    else:  # p == q == 0: triple root at 0
        n_roots = 0
    for j in range(n_roots):
        t = roots[j]
        if t > 0.0:
            t = _polish(t, alpha, c2, c1)
            if t > 0.0:
                f = _quartic(t, alpha, c2, c1)
                if f > fbest:
                    best = t
                    fbest = f
    if x0 > 0.0 and _quartic(x0, alpha, c2, c1) > fbest:
        best = x0
    return best


def best_entry(double alpha, double c2, double c1, double x0=0.0):
    """Python access to the scalar update (for tests)."""
    return _best_entry(alpha, c2, c1, x0)


def nspca_sweep(const double[:, ::1] A, double[:, ::1] Ut, double[:, ::1] AUt,
                double[:, ::1] G, double alpha, double beta):
    """One coordinate-ascent sweep over all entries of ``U``, in place.

    Returns the objective increase of the sweep (sum of the exact 1-D gains).
    """
    cdef Py_ssize_t K = Ut.shape[0]
    cdef Py_ssize_t P = Ut.shape[1]
    cdef Py_ssize_t r, s, q, i
    cdef double x, xn, d, ass, cross, rown, usq, c1, c2
    cdef double gain = 0.0
    with nogil:
        for r in range(K):
            for s in range(P):
                x = Ut[r, s]
                ass = A[s, s]
                cross = 0.0
                rown = 0.0
                for q in range(K):
                    if q != r:
                        usq = Ut[q, s]
                        cross = cross + usq * (G[q, r] - x * usq)
                        rown = rown + usq * usq
                c1 = AUt[r, s] - ass * x - alpha * cross - beta
                c2 = ass + alpha - alpha * (G[r, r] - x * x) - alpha * rown
                xn = _best_entry(alpha, c2, c1, x)
                if xn != x:
                    d = xn - x
                    gain = gain + _quartic(xn, alpha, c2, c1) - _quartic(x, alpha, c2, c1)
                    Ut[r, s] = xn
                    for i in range(P):
                        AUt[r, i] = AUt[r, i] + d * A[s, i]
                    for q in range(K):
                        if q != r:
                            G[q, r] = G[q, r] + d * Ut[q, s]
                            G[r, q] = G[q, r]
                    G[r, r] = G[r, r] + xn * xn - x * x
    return gain
