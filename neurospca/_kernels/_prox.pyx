# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython kernels of the SPCA-TV v-step solvers.

Size: about 700 lines, one module that mirrors its NumPy twin function by function,
so that the solvers swap the two through one name.

Every kernel has a pure NumPy twin in :mod:`neurospca._kernels._numpy_prox`
and the tests check they agree; :func:`neurospca._kernels.load` chooses. No
validation happens here: callers (:mod:`neurospca.solvers.prox`,
:mod:`neurospca.solvers.conesta`) validate once. The inner loops share the
``cdef inline`` helpers of ``_helpers.pxd`` (CSR row product, ascent row,
group projection).

Sparse matrices are passed as CSR arrays ``(indptr, indices, data)`` with
int32 indices (``idx_t``); ``A`` has ``n_rows`` rows grouped by ``group_ptr``
and ``At`` is its transpose in CSR form.

The dual-solver kernels (``dual_iterations``, ``dual_gap_terms``,
``diff_dual_iterations`` and the small kernels they use) take float64 or
float32 arrays (Cython's fused ``floating``; all arrays of one call share the
dtype, a mix raises ValueError): float32 arrays are read and written in
float32 while every scalar, product and sum is computed in double and only
rounded when stored (the scatter of ``A^T w`` rounds each term first and adds
in float32: no conversion on its store-to-load chain). Measured: float32 arithmetic in the hot loops made the
difference kernel ~10 % faster but raised the floor of the certified gap of
float32 solves on problems with large TV weights from 5e-9..6e-7 to
5e-7..1.4e-6 of ``||y||^2 / 2`` (tol 1e-6 then failed on 3 of 8 problems). The float64 specialisations compute exactly what the
double-only kernels did (bit for bit). The CONESTA kernels are float64 only.
"""

from cython cimport floating
from cython.parallel cimport prange
from libc.math cimport sqrt, fabs

from ._helpers cimport (idx_t, soft as _soft, csr_row_dot, ascent_row, ball_scale,
                        range_sqnorm, scale_range)

import numpy as np


def soft_threshold(const floating[::1] x, double t, floating[::1] out):
    """``out = sign(x) * max(|x| - t, 0)``."""
    cdef Py_ssize_t j, n = x.shape[0]
    with nogil:
        for j in range(n):
            out[j] = _soft(x[j], t)


def csr_matvec(const idx_t[::1] indptr, const idx_t[::1] indices,
               const floating[::1] data, const floating[::1] x, floating[::1] out):
    """``out = M x`` for a CSR matrix ``M``."""
    cdef Py_ssize_t i, n = out.shape[0]
    with nogil:
        for i in range(n):
            out[i] = csr_row_dot(&indptr[0], &indices[0], &data[0], &x[0], i)


def project_groups(floating[::1] z, const idx_t[::1] group_ptr, double radius):
    """Project each group of ``z`` onto the Euclidean ball of ``radius``, in place."""
    cdef Py_ssize_t g, n_groups = group_ptr.shape[0] - 1
    cdef double nrm, r2 = radius * radius
    with nogil:
        for g in range(n_groups):
            nrm = range_sqnorm(&z[0], group_ptr[g], group_ptr[g + 1])
            if nrm > r2:
                scale_range(&z[0], group_ptr[g], group_ptr[g + 1], radius / sqrt(nrm))


def group_norm_sum(const floating[::1] z, const idx_t[::1] group_ptr):
    """``sum_g ||z_g||_2`` for a row vector ``z`` split by ``group_ptr``."""
    cdef Py_ssize_t g, n_groups = group_ptr.shape[0] - 1
    cdef double total = 0.0
    with nogil:
        for g in range(n_groups):
            total = total + sqrt(range_sqnorm(&z[0], group_ptr[g], group_ptr[g + 1]))
    return total


# ---------------------------------------------------------------------------
# Exact-prox dual solver (accelerated projected gradient on the group duals)
# ---------------------------------------------------------------------------

cdef inline double _csr_group_step(Py_ssize_t g, const idx_t* group_ptr,
                                   const idx_t* A_indptr, const idx_t* A_indices,
                                   const floating* A_data, const floating* vq, floating* w,
                                   floating* w_old, double beta, double step,
                                   double radius) noexcept nogil:
    """Ascent step and projection of group ``g``; ``w_old <- w``.

    Returns the group's term ``sum_r (w+_r - q_r)(w+_r - w_r)`` of the
    gradient-restart test, from the sums of :func:`ascent_row` (with the
    projection scale ``c``: ``c^2 nrm - c sqs + sqw``).
    """
    cdef Py_ssize_t r, r0 = group_ptr[g], r1 = group_ptr[g + 1]
    cdef double wr, scale, nrm = 0.0, sqs = 0.0, sqw = 0.0
    for r in range(r0, r1):
        wr = w[r]
        w[r] = ascent_row(wr, w_old[r], csr_row_dot(A_indptr, A_indices, A_data, vq, r),
                          beta, step, &nrm, &sqs, &sqw)
        w_old[r] = wr
    scale = ball_scale(nrm, radius)
    if nrm > radius * radius:
        scale_range(w, r0, r1, scale)
    return scale * scale * nrm - scale * sqs + sqw


def dual_iterations(int n_iter,
                    const idx_t[::1] A_indptr, const idx_t[::1] A_indices,
                    const floating[::1] A_data,
                    const idx_t[::1] At_indptr, const idx_t[::1] At_indices,
                    const floating[::1] At_data,
                    const idx_t[::1] group_ptr,
                    const floating[::1] y, double l1, double radius, double step,
                    floating[::1] w, floating[::1] w_old,
                    floating[::1] ATw, floating[::1] ATw_old,
                    floating[::1] vq, double t, bint restart, int n_threads=1):
    """Run ``n_iter`` accelerated projected-gradient steps on the prox dual.

    The dual of ``min_v ||v - y||^2/2 + l1 ||v||_1 + radius sum_g ||A_g v||`` is
    ``max_{||w_g|| <= radius} D(w) = ||y||^2/2 - ||soft(y - A^T w, l1)||^2/2``;
    its gradient is ``A v(w)`` with ``v(w) = soft(y - A^T w, l1)``, Lipschitz
    with constant ``||A||^2`` (``step = 1/||A||^2``).

    The state ``(w, w_old, ATw = A^T w, ATw_old = A^T w_old, t)`` is updated in
    place. ``A^T q`` at the extrapolated point ``q = w + beta (w - w_old)`` is
    formed from ``ATw`` and ``ATw_old`` by linearity, so one iteration costs one
    product with ``A`` (fused with the ascent step and the projection) and one
    with ``A^T``. With ``restart``, momentum is reset (``t = 1``) when it
    opposes the projected ascent step, ``(w+ - q)^T (w+ - w) < 0`` (gradient
    restart of O'Donoghue and Candes); that inner product is accumulated per
    group from three sums, so ``q`` is never stored.

    Returns
    -------
    t : float
        The momentum parameter after the last iteration.
    n_restarts : int
    """
    cdef Py_ssize_t it, j, g
    cdef Py_ssize_t P = y.shape[0]
    cdef Py_ssize_t n_groups = group_ptr.shape[0] - 1
    cdef double t_new, beta, s, align
    cdef int n_restarts = 0
    if n_threads < 1:
        n_threads = 1
    with nogil:
        for it in range(n_iter):
            t_new = 0.5 * (1.0 + sqrt(1.0 + 4.0 * t * t))
            beta = (t - 1.0) / t_new
            # v at the extrapolated point q = w + beta (w - w_old)
            for j in prange(P, num_threads=n_threads, schedule="static"):
                s = ATw[j] + beta * (ATw[j] - ATw_old[j])
                vq[j] = _soft(y[j] - s, l1)
            # ascent step from q, projected group by group; w_old <- w
            # (a static schedule: each thread sums align over a fixed range)
            align = 0.0
            for g in prange(n_groups, num_threads=n_threads, schedule="static"):
                align += _csr_group_step(g, &group_ptr[0], &A_indptr[0], &A_indices[0],
                                         &A_data[0], &vq[0], &w[0], &w_old[0], beta,
                                         step, radius)
            # ATw_old <- ATw ; ATw <- A^T w
            for j in prange(P, num_threads=n_threads, schedule="static"):
                ATw_old[j] = ATw[j]
                ATw[j] = csr_row_dot(&At_indptr[0], &At_indices[0], &At_data[0], &w[0], j)
            t = t_new
            if restart and align < 0.0:
                t = 1.0
                n_restarts = n_restarts + 1
    return t, n_restarts


def dual_gap_terms(const idx_t[::1] A_indptr, const idx_t[::1] A_indices,
                   const floating[::1] A_data, const idx_t[::1] group_ptr,
                   const floating[::1] y, const floating[::1] ATw,
                   double l1, double radius, floating[::1] v):
    """Primal and dual objectives of the prox problem at ``w`` (given ``A^T w``).

    Fills ``v = soft(y - A^T w, l1)`` and returns
    ``(P(v), D(w), sum_g ||A_g v||)`` with
    ``P(v) = ||v - y||^2/2 + l1 ||v||_1 + radius sum_g ||A_g v||`` and
    ``D(w) = ||y||^2/2 - ||v||^2/2``. ``P(v) - D(w)`` is the certified gap.
    """
    cdef Py_ssize_t j, g, r
    cdef Py_ssize_t P = y.shape[0]
    cdef Py_ssize_t n_groups = group_ptr.shape[0] - 1
    cdef double s, d, nrm, quad = 0.0, l1sum = 0.0, vv = 0.0, yy = 0.0, tv = 0.0
    with nogil:
        for j in range(P):
            s = _soft(y[j] - ATw[j], l1)
            v[j] = s
            d = s - y[j]
            quad = quad + d * d
            l1sum = l1sum + fabs(s)
            vv = vv + s * s
            yy = yy + y[j] * y[j]
        for g in range(n_groups):
            nrm = 0.0
            for r in range(group_ptr[g], group_ptr[g + 1]):
                s = csr_row_dot(&A_indptr[0], &A_indices[0], &A_data[0], &v[0], r)
                nrm = nrm + s * s
            tv = tv + sqrt(nrm)
    return (0.5 * quad + l1 * l1sum + radius * tv, 0.5 * yy - 0.5 * vv, tv)


# ---------------------------------------------------------------------------
# Exact-prox dual solver for difference operators: every row of A is
# scale * (v[tail] - v[head]) (grid TV, mesh-edge TV, chains).  No matrix, no
# transpose: A v gathers two entries per row, A^T w scatters two.
# ---------------------------------------------------------------------------

def diff_rmatvec(const idx_t[::1] heads, const idx_t[::1] tails, double scale,
                 const floating[::1] w, floating[::1] out):
    """``out = A^T w`` for a difference operator (rows in order, as CSR sums them)."""
    cdef Py_ssize_t r, n_rows = heads.shape[0]
    cdef double s
    with nogil:
        for r in range(out.shape[0]):
            out[r] = 0.0
        for r in range(n_rows):
            s = scale * w[r]
            out[tails[r]] = out[tails[r]] + s
            out[heads[r]] = out[heads[r]] - s


cdef void _diff_feature_chunk(Py_ssize_t j0, Py_ssize_t j1, Py_ssize_t P,
                              const floating* y, floating* X, floating* Y,
                              floating* bufs, Py_ssize_t n_bufs,
                              double beta, double l1, floating* vq, floating* vw,
                              bint do_gap, double* out) noexcept nogil:
    """Feature pass of one chunk: finish ``A^T w`` (X), ``vq``, zero Y, gap sums."""
    cdef Py_ssize_t j, b
    cdef double a, s, d, yj, quad = 0.0, l1sum = 0.0, vv = 0.0, yy = 0.0
    if n_bufs == 0 and not do_gap:  # the hot case, unswitched
        for j in range(j0, j1):
            a = X[j]
            s = a + beta * (a - Y[j])
            Y[j] = 0.0
            vq[j] = _soft(y[j] - s, l1)
        out[0] = 0.0
        out[1] = 0.0
        out[2] = 0.0
        out[3] = 0.0
        return
    for j in range(j0, j1):
        a = X[j]
        if n_bufs > 0:
            for b in range(n_bufs):
                a = a + bufs[b * P + j]
                bufs[b * P + j] = 0.0
            X[j] = a
        yj = y[j]
        s = a + beta * (a - Y[j])
        Y[j] = 0.0
        vq[j] = _soft(yj - s, l1)
        if do_gap:
            s = _soft(yj - a, l1)
            vw[j] = s
            d = s - yj
            quad = quad + d * d
            l1sum = l1sum + fabs(s)
            vv = vv + s * s
            yy = yy + yj * yj
    out[0] = quad
    out[1] = l1sum
    out[2] = vv
    out[3] = yy


cdef double _diff_group_chunk(Py_ssize_t g0, Py_ssize_t g1,
                              const idx_t* gptr, const idx_t* heads,
                              const idx_t* tails, bint heads_are_groups, double cs,
                              const floating* vq, const floating* vw, bint do_gap,
                              const floating* w, floating* w_new, floating* tgt,
                              floating* ttgt, Py_ssize_t tlo,
                              double beta, double step, double radius,
                              double* tv_out) noexcept nogil:
    """Group pass over groups ``g0:g1``: ascent step, projection, scatter of ``A^T w``.

    Reads ``w`` and the previous iterate from ``w_new``, which it overwrites
    with the new iterate (the caller then swaps the roles of the two arrays).
    With ``heads_are_groups`` the head of every row of group ``g`` is feature
    ``g`` (grids, meshes) and ``heads`` is not read. Heads are scattered into
    ``tgt``, tails into ``ttgt[tail - tlo]`` (``tgt`` itself with ``tlo = 0``,
    or a halo buffer of the features ``tlo:`` that another chunk owns).
    Returns the restart sum; adds the group norms of ``A vw`` to ``tv_out``.
    """
    cdef Py_ssize_t g, r
    cdef idx_t h, tt
    cdef double s, d, nrm, sqs, sqw, tvn, scale, vh, dh, hacc
    cdef double align = 0.0, tv = 0.0, r2 = radius * radius
    for g in range(g0, g1):
        nrm = 0.0
        sqs = 0.0
        sqw = 0.0
        tvn = 0.0
        if heads_are_groups:
            vh = cs * vq[g]
            if do_gap:
                dh = cs * vw[g]
        for r in range(gptr[g], gptr[g + 1]):
            tt = tails[r]
            if heads_are_groups:
                s = cs * vq[tt] - vh
                if do_gap:
                    d = cs * vw[tt] - dh
                    tvn = tvn + d * d
            else:
                h = heads[r]
                s = cs * vq[tt] - cs * vq[h]
                if do_gap:
                    d = cs * vw[tt] - cs * vw[h]
                    tvn = tvn + d * d
            w_new[r] = ascent_row(w[r], w_new[r], s, beta, step, &nrm, &sqs, &sqw)
        scale = ball_scale(nrm, radius)
        hacc = tgt[g]  # with heads_are_groups, tgt[g] is accumulated here
        for r in range(gptr[g], gptr[g + 1]):
            s = w_new[r]
            if nrm > r2:
                s = s * scale
                w_new[r] = s
            s = cs * s
            ttgt[tails[r] - tlo] = ttgt[tails[r] - tlo] + <floating>s
            if heads_are_groups:
                hacc = hacc - s
            else:
                tgt[heads[r]] = tgt[heads[r]] - <floating>s
        if heads_are_groups:
            tgt[g] = hacc
        align = align + (scale * scale * nrm - scale * sqs + sqw)
        if do_gap:
            tv = tv + sqrt(tvn)
    tv_out[0] = tv_out[0] + tv
    return align


cdef double _diff_group_chunk_fast(Py_ssize_t g0, Py_ssize_t g1, const idx_t* gptr,
                                   const idx_t* tails, double cs, const floating* vq,
                                   const floating* w, floating* w_new, floating* tgt,
                                   floating* ttgt, Py_ssize_t tlo, double beta,
                                   double step, double radius) noexcept nogil:
    """:func:`_diff_group_chunk` with heads that are the groups and no gap (the hot case)."""
    cdef Py_ssize_t g, r, r0, r1
    cdef idx_t tt
    cdef double s, nrm, sqs, sqw, scale, vh, hacc
    cdef double align = 0.0, r2 = radius * radius
    for g in range(g0, g1):
        r0 = gptr[g]
        r1 = gptr[g + 1]
        nrm = 0.0
        sqs = 0.0
        sqw = 0.0
        vh = cs * vq[g]
        for r in range(r0, r1):
            s = cs * vq[tails[r]] - vh
            w_new[r] = ascent_row(w[r], w_new[r], s, beta, step, &nrm, &sqs, &sqw)
        hacc = tgt[g]
        if nrm > r2:
            scale = radius / sqrt(nrm)
            for r in range(r0, r1):
                s = w_new[r] * scale
                w_new[r] = s
                s = cs * s
                tt = tails[r] - tlo
                ttgt[tt] = ttgt[tt] + <floating>s
                hacc = hacc - s
        else:
            scale = 1.0
            for r in range(r0, r1):
                s = cs * w_new[r]
                tt = tails[r] - tlo
                ttgt[tt] = ttgt[tt] + <floating>s
                hacc = hacc - s
        tgt[g] = hacc
        align = align + (scale * scale * nrm - scale * sqs + sqw)
    return align


cdef void _diff_group_pass(Py_ssize_t c, Py_ssize_t P, const idx_t* chunk_ptr,
                           const idx_t* segs, const idx_t* halos, floating* hbuf,
                           const idx_t* gptr, const idx_t* heads, const idx_t* tails,
                           bint heads_are_groups, bint fast, double cs, const floating* vq,
                           const floating* vw, bint do_gap, const floating* w, floating* w_new,
                           floating* Y, floating* bufs, double beta, double step,
                           double radius, double* out) noexcept nogil:
    """Group pass of chunk ``c``: its groups, in up to three segments.

    Without halos (``segs`` NULL), chunk 0 scatters into ``Y`` and chunk
    ``c > 0`` into its own full buffer ``bufs[c - 1]``. With halos, chunk
    ``c`` has the groups ``segs[4c]:segs[4c+3]``; the interior segment
    ``segs[4c+1]:segs[4c+2]`` scatters into ``Y`` (all its tails are features
    of the chunk), the low and high segments scatter their tails into the
    halo buffers ``2c`` and ``2c + 1`` (``halos[3h:3h+3] = lo, hi, offset``
    into ``hbuf``) and their heads into ``Y``.
    """
    cdef floating* tgt = Y
    cdef double align = 0.0
    cdef Py_ssize_t k, h, g0, g1
    out[1] = 0.0
    if segs == NULL:
        if c > 0:
            tgt = bufs + (c - 1) * P
        if fast:
            align = _diff_group_chunk_fast(chunk_ptr[c], chunk_ptr[c + 1], gptr, tails, cs,
                                           vq, w, w_new, tgt, tgt, 0, beta, step, radius)
        else:
            align = _diff_group_chunk(chunk_ptr[c], chunk_ptr[c + 1], gptr, heads, tails,
                                      heads_are_groups, cs, vq, vw, do_gap, w, w_new, tgt,
                                      tgt, 0, beta, step, radius, out + 1)
        out[0] = align
        return
    for k in range(3):
        g0 = segs[4 * c + k]
        g1 = segs[4 * c + k + 1]
        if g1 <= g0:
            continue
        if k == 1:
            tgt = Y
            h = -1
        else:
            h = 2 * c + k // 2
            tgt = hbuf + halos[3 * h + 2]
        if fast:
            align = align + _diff_group_chunk_fast(
                g0, g1, gptr, tails, cs, vq, w, w_new, Y, tgt,
                0 if h < 0 else halos[3 * h], beta, step, radius)
        else:
            align = align + _diff_group_chunk(
                g0, g1, gptr, heads, tails, heads_are_groups, cs, vq, vw, do_gap, w,
                w_new, Y, tgt, 0 if h < 0 else halos[3 * h], beta, step, radius, out + 1)
    out[0] = align


cdef void _add_halos(Py_ssize_t j0, Py_ssize_t j1, Py_ssize_t n_halos,
                     const idx_t* halos, floating* hbuf, floating* X) noexcept nogil:
    """``X[j] += halo[j]`` and clear it, for the features ``j0:j1`` of every halo in turn."""
    cdef Py_ssize_t h, j, lo, hi, off
    for h in range(n_halos):
        lo = halos[3 * h]
        hi = halos[3 * h + 1]
        off = halos[3 * h + 2] - lo
        if lo < j0:
            lo = j0
        if hi > j1:
            hi = j1
        for j in range(lo, hi):
            X[j] = X[j] + hbuf[off + j]
            hbuf[off + j] = 0.0


def diff_dual_iterations(int n_iter,
                         const idx_t[::1] heads, const idx_t[::1] tails,
                         double scale, bint heads_are_groups,
                         const idx_t[::1] group_ptr, const idx_t[::1] chunk_ptr,
                         const floating[::1] y, double l1, double radius, double step,
                         floating[::1] w, floating[::1] w_old,
                         floating[::1] ATw, floating[::1] ATw_old, floating[:, ::1] bufs,
                         floating[::1] vq, floating[::1] vw, double t, bint restart,
                         bint with_gap, int n_threads, const idx_t[::1] segs=None,
                         const idx_t[::1] halos=None, floating[::1] hbuf=None):
    """:func:`dual_iterations` for a difference operator, two passes per iteration.

    Rows are ``scale * (v[tails[r]] - v[heads[r]])``; ``heads_are_groups``
    says that ``heads[r]`` is the group of row ``r`` (then not read). Groups are split into
    the ``len(chunk_ptr) - 1`` contiguous chunks ``chunk_ptr`` (run in
    parallel on up to ``n_threads`` OpenMP threads; the results depend on the
    chunks, never on the threads). One iteration is

    1. a pass over the features that completes ``A^T w`` of the previous
       iteration (chunk partial sums added in chunk order), forms ``vq =
       soft(y - A^T q, l1)`` at the extrapolated point and clears the buffer
       the next scatter writes into;
    2. a pass over the groups: gradient step ``q + step A vq``, projection onto
       the ball, gradient-restart sums and scatter of ``A^T w`` of the new
       ``w``.

    With ``with_gap``, the last iteration also computes, in the same two
    passes, the certified gap terms at the ``w`` it starts from (which is
    ``w_old`` on return): ``vw = soft(y - A^T w, l1)`` and
    ``(P(vw), D(w), sum_g ||A_g vw||)`` exactly as :func:`dual_gap_terms`.

    State on entry and on return: ``ATw`` holds chunk 0's part of ``A^T w``
    and ``bufs[c - 1]`` chunk ``c``'s part; ``ATw_old = A^T w_old`` complete.

    Halos (``segs``, ``halos``, ``hbuf``; only with ``heads_are_groups``, and
    then ``bufs`` has no rows): chunk ``c`` owns groups ``segs[4c]:segs[4c+3]``
    split at ``segs[4c+1]`` and ``segs[4c+2]``; its interior segment scatters
    into ``ATw`` directly (all its tails are features only this chunk
    writes), its low and high segments scatter their tails into the halos
    ``2c`` and ``2c + 1``: ``hbuf[off:off + hi - lo]`` for the features
    ``lo:hi`` (``halos[3h:3h+3] = lo, hi, off``), added in halo order by the
    next feature pass. Then ``A^T w`` is ``ATw`` plus the halos, and the
    buffers cost the features near chunk boundaries instead of ``P`` per
    chunk.
    The roles of ``(w, w_old)`` and of ``(ATw, ATw_old)`` alternate each
    iteration (no copies): when the returned ``swapped`` is True the caller
    must exchange ``w`` with ``w_old`` and ``ATw`` with ``ATw_old``.

    Returns
    -------
    t : float
    n_restarts : int
    swapped : bool
    primal, dual, tv : float
        The gap terms at ``w_old`` (NaN without ``with_gap``).
    """
    cdef Py_ssize_t P = y.shape[0]
    cdef Py_ssize_t n_chunks = chunk_ptr.shape[0] - 1
    cdef Py_ssize_t n_bufs = bufs.shape[0]
    cdef Py_ssize_t it, c
    cdef double t_new, beta, align
    cdef double quad = 0.0, l1sum = 0.0, vv = 0.0, yy = 0.0, tv = 0.0
    cdef bint do_gap
    cdef int n_restarts = 0
    cdef double[:, ::1] fpart = np.zeros((n_chunks, 4))
    cdef double[:, ::1] gpart = np.zeros((n_chunks, 2))
    cdef floating* X = &ATw[0]
    cdef floating* Y = &ATw_old[0]
    cdef floating* tmp
    cdef floating* W = &w[0]
    cdef floating* Wo = &w_old[0]
    cdef floating* bp = NULL
    cdef double* fp = &fpart[0, 0]
    cdef double* gq = &gpart[0, 0]
    cdef const idx_t* sp = NULL
    cdef const idx_t* hp = NULL
    cdef floating* hb = NULL
    cdef Py_ssize_t n_halos = 0
    if segs is not None:
        if (not heads_are_groups or n_bufs != 0 or halos is None or hbuf is None
                or segs.shape[0] != 4 * n_chunks or halos.shape[0] != 6 * n_chunks):
            raise ValueError("halos need heads_are_groups, no bufs rows, segs of "
                             "4 * n_chunks and halos of 6 * n_chunks entries.")
        sp = &segs[0]
        hp = &halos[0]
        n_halos = 2 * n_chunks
        if hbuf.shape[0] > 0:
            hb = &hbuf[0]
    elif n_bufs != n_chunks - 1 or (n_bufs > 0 and bufs.shape[1] != P):
        raise ValueError("bufs must have shape (len(chunk_ptr) - 2, n_features).")
    if n_bufs > 0:
        bp = &bufs[0, 0]
    if n_threads > n_chunks:
        n_threads = n_chunks
    if n_threads < 1:
        n_threads = 1
    with nogil:
        for it in range(n_iter):
            do_gap = with_gap and it == n_iter - 1
            t_new = 0.5 * (1.0 + sqrt(1.0 + 4.0 * t * t))
            beta = (t - 1.0) / t_new
            for c in prange(n_chunks, num_threads=n_threads, schedule="static", chunksize=1):
                if n_halos > 0:
                    _add_halos(P * c // n_chunks, P * (c + 1) // n_chunks, n_halos, hp,
                               hb, X)
                _diff_feature_chunk(P * c // n_chunks, P * (c + 1) // n_chunks, P,
                                    &y[0], X, Y, bp, n_bufs, beta, l1, &vq[0], &vw[0],
                                    do_gap, fp + 4 * c)
            for c in prange(n_chunks, num_threads=n_threads, schedule="static", chunksize=1):
                _diff_group_pass(c, P, &chunk_ptr[0], sp, hp, hb, &group_ptr[0],
                                 &heads[0], &tails[0], heads_are_groups,
                                 heads_are_groups and not do_gap, scale, &vq[0], &vw[0],
                                 do_gap, W, Wo, Y, bp, beta, step, radius, gq + 2 * c)
            align = 0.0
            for c in range(n_chunks):
                align = align + gq[2 * c]
            tmp = X
            X = Y
            Y = tmp
            tmp = W
            W = Wo
            Wo = tmp
            t = t_new
            if restart and align < 0.0:
                t = 1.0
                n_restarts = n_restarts + 1
        if with_gap and n_iter > 0:
            for c in range(n_chunks):
                quad = quad + fp[4 * c]
                l1sum = l1sum + fp[4 * c + 1]
                vv = vv + fp[4 * c + 2]
                yy = yy + fp[4 * c + 3]
                tv = tv + gq[2 * c + 1]
    if not (with_gap and n_iter > 0):
        return t, n_restarts, bool(n_iter % 2), float("nan"), float("nan"), float("nan")
    return (t, n_restarts, bool(n_iter % 2), 0.5 * quad + l1 * l1sum + radius * tv,
            0.5 * yy - 0.5 * vv, tv)


# ---------------------------------------------------------------------------
# CONESTA: FISTA on the Nesterov-smoothed problem (paper eqs. 11-19) and the
# Fenchel gap of eqs. 20-24, in the paper's formulation (eq. 17):
#   f_mu(v) = ||v - yp||^2/2 + ||v||^2/2 + kappa s_mu(v) + eta ||v||_1
# ---------------------------------------------------------------------------

cdef double _smoothed_alpha(const idx_t* A_indptr, const idx_t* A_indices,
                            const double* A_data, const idx_t* group_ptr,
                            Py_ssize_t n_groups, const double* x, double mu,
                            double* alpha, double* out) noexcept nogil:
    """alpha = proj_{unit balls}(A x / mu); returns ||alpha||^2.

    Sets ``out[0] = alpha^T A x`` and ``out[1] = sum_g ||A_g x||``.
    """
    cdef Py_ssize_t g, r
    cdef double s, nrm, scale, aa = 0.0, ax = 0.0, sx = 0.0
    for g in range(n_groups):
        nrm = 0.0
        for r in range(group_ptr[g], group_ptr[g + 1]):
            s = csr_row_dot(A_indptr, A_indices, A_data, x, r)
            alpha[r] = s
            nrm = nrm + s * s
        nrm = sqrt(nrm)
        sx = sx + nrm
        # A_g x / mu projected on the unit ball
        scale = 1.0 / mu
        if nrm > mu:
            scale = 1.0 / nrm
        for r in range(group_ptr[g], group_ptr[g + 1]):
            ax = ax + alpha[r] * alpha[r] * scale
            alpha[r] = alpha[r] * scale
            aa = aa + alpha[r] * alpha[r]
    out[0] = ax
    out[1] = sx
    return aa


def smoothed_alpha(const idx_t[::1] A_indptr, const idx_t[::1] A_indices,
                   const double[::1] A_data, const idx_t[::1] group_ptr,
                   const double[::1] x, double mu, double[::1] alpha):
    """``alpha*_mu(x) = proj_K(A x / mu)`` (eq. 12), written into ``alpha``.

    Returns ``(||alpha||^2, alpha^T A x, sum_g ||A_g x||)``, so that
    ``s_mu(x) = alpha^T A x - mu ||alpha||^2 / 2`` (eq. 11) and ``s(x)`` is the
    third value.
    """
    cdef double out[2]
    cdef double aa
    with nogil:
        aa = _smoothed_alpha(&A_indptr[0], &A_indices[0], &A_data[0], &group_ptr[0],
                             group_ptr.shape[0] - 1, &x[0], mu, &alpha[0], out)
    return aa, out[0], out[1]


def fista_iterations(int n_iter, int k,
                     const idx_t[::1] A_indptr, const idx_t[::1] A_indices,
                     const double[::1] A_data,
                     const idx_t[::1] At_indptr, const idx_t[::1] At_indices,
                     const double[::1] At_data,
                     const idx_t[::1] group_ptr,
                     const double[::1] yp, double kappa, double eta, double mu,
                     double step,
                     double[::1] v, double[::1] v_old, double[::1] z,
                     double[::1] alpha):
    """Run ``n_iter`` FISTA iterations of the paper's Algorithm 1.

    ``z = v + (k-2)/(k+1) (v - v_old)``;
    ``v <- soft(z - step * ((2 z - yp) + kappa A^T alpha*_mu(z)), step * eta)``
    (gradient of eq. 18, exact prox of ``eta ||.||_1``). ``k`` is the FISTA
    counter of Algorithm 1 (starts at 2). Returns the updated ``k``.
    """
    cdef Py_ssize_t it, j
    cdef Py_ssize_t P = yp.shape[0]
    cdef double beta, s, grad, thr = step * eta
    cdef double out[2]
    with nogil:
        for it in range(n_iter):
            beta = (k - 2.0) / (k + 1.0)
            for j in range(P):
                z[j] = v[j] + beta * (v[j] - v_old[j])
            _smoothed_alpha(&A_indptr[0], &A_indices[0], &A_data[0], &group_ptr[0],
                            group_ptr.shape[0] - 1, &z[0], mu, &alpha[0], out)
            for j in range(P):
                s = csr_row_dot(&At_indptr[0], &At_indices[0], &At_data[0], &alpha[0], j)
                grad = 2.0 * z[j] - yp[j] + kappa * s
                v_old[j] = v[j]
                v[j] = _soft(z[j] - step * grad, thr)
            k = k + 1
    return k


def conesta_gap_terms(const idx_t[::1] A_indptr, const idx_t[::1] A_indices,
                      const double[::1] A_data,
                      const idx_t[::1] At_indptr, const idx_t[::1] At_indices,
                      const double[::1] At_data,
                      const idx_t[::1] group_ptr,
                      const double[::1] yp, double kappa, double eta, double mu,
                      const double[::1] v, double[::1] alpha):
    """The terms of the Fenchel gap of eqs. 20-24 at ``v`` for smoothing ``mu``.

    With ``alpha = alpha*_mu(v)`` (written into ``alpha``) and
    ``sigma = v - yp`` (eq. 22), returns a tuple
    ``(||alpha||^2, alpha^T A v, s(v), ||v - yp||^2, ||v||^2, ||v||_1,
    L*(sigma), c)`` where ``L*(sigma) = ||sigma||^2/2 + sigma^T yp`` (eq. 23) and
    ``c = 1/2 sum_j [|-sigma_j - kappa (A^T alpha)_j| - eta]_+^2``, the first
    term of ``psi*_mu(-sigma)`` (eq. 24). :func:`neurospca.solvers.gap.conesta_gap`
    assembles the gap from them.
    """
    cdef Py_ssize_t j
    cdef Py_ssize_t P = yp.shape[0]
    cdef double aa, s, d, sig, quad = 0.0, vv = 0.0, l1sum = 0.0
    cdef double lstar = 0.0, psi = 0.0
    cdef double out[2]
    with nogil:
        aa = _smoothed_alpha(&A_indptr[0], &A_indices[0], &A_data[0], &group_ptr[0],
                             group_ptr.shape[0] - 1, &v[0], mu, &alpha[0], out)
        for j in range(P):
            s = csr_row_dot(&At_indptr[0], &At_indices[0], &At_data[0], &alpha[0], j)
            sig = v[j] - yp[j]
            quad = quad + sig * sig
            vv = vv + v[j] * v[j]
            l1sum = l1sum + fabs(v[j])
            lstar = lstar + 0.5 * sig * sig + sig * yp[j]
            d = fabs(-sig - kappa * s) - eta
            if d > 0.0:
                psi = psi + 0.5 * d * d
    return aa, out[0], out[1], quad, vv, l1sum, lstar, psi
