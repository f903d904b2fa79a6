"""Pure NumPy twins of the Cython kernels in ``_prox.pyx``.

Same signatures and the same in-place semantics; the tests check that each
twin agrees with its kernel. They are also the readable statement of what the
kernels compute.

Like the kernels, the twins of the dual solver take float64 or float32 arrays
(all of one dtype) and keep them in that dtype: they compute in float64
(:func:`_f64`) and round when they store into the caller's arrays. The
float32 kernels do their element-wise arithmetic in float32, so float32 twins
and kernels agree to float32 precision; float64 ones give exactly what they
always did.
"""

import numpy as np
import scipy.sparse as sp


def _f64(a):
    """``a`` in float64 (``a`` itself when it is float64 already)."""
    return np.asarray(a, dtype=np.float64)


def _csr(indptr, indices, data, n_cols):
    return sp.csr_matrix((_f64(data), indices, indptr), shape=(indptr.size - 1, n_cols))


def _group_sqnorms(z, group_ptr):
    z = _f64(z)
    sizes = np.diff(group_ptr)
    ids = np.repeat(np.arange(sizes.size), sizes)
    return np.bincount(ids, weights=z * z, minlength=sizes.size), ids


def soft_threshold(x, t, out):
    x = _f64(x)
    out[:] = np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


def csr_matvec(indptr, indices, data, x, out):
    out[:] = _csr(indptr, indices, data, x.size) @ _f64(x)


def project_groups(z, group_ptr, radius):
    sq, ids = _group_sqnorms(z, group_ptr)
    nrm = np.sqrt(sq)
    scale = np.where(nrm > radius, radius / np.where(nrm > 0, nrm, 1.0), 1.0)
    z[:] = _f64(z) * scale[ids]


def group_norm_sum(z, group_ptr):
    return float(np.sqrt(_group_sqnorms(z, group_ptr)[0]).sum())


def _momentum(t):
    """``(t_new, beta)`` of the accelerated method."""
    t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
    return t_new, (t - 1.0) / t_new


def _ascent_step(A, vq, w, w_old, beta, step, group_ptr, radius):
    """``w <- proj(q + step A vq)`` at ``q = w + beta (w - w_old)``; ``w_old <- w``.

    Returns the gradient-restart inner product ``(w+ - q)^T (w+ - w)``.
    """
    q = _f64(w) + beta * (_f64(w) - _f64(w_old))
    w_old[:] = w
    w[:] = q + step * (A @ _f64(vq))
    project_groups(w, group_ptr, radius)
    return float(np.dot(_f64(w) - q, _f64(w) - _f64(w_old)))


def dual_iterations(
    n_iter,
    A_indptr,
    A_indices,
    A_data,
    At_indptr,
    At_indices,
    At_data,
    group_ptr,
    y,
    l1,
    radius,
    step,
    w,
    w_old,
    ATw,
    ATw_old,
    vq,
    t,
    restart,
    n_threads=1,
):
    A = _csr(A_indptr, A_indices, A_data, y.size)
    At = _csr(At_indptr, At_indices, At_data, w.size)
    n_restarts = 0
    for _ in range(n_iter):
        t_new, beta = _momentum(t)
        soft_threshold(_f64(y) - (_f64(ATw) + beta * (_f64(ATw) - _f64(ATw_old))), l1, vq)
        align = _ascent_step(A, vq, w, w_old, beta, step, group_ptr, radius)
        ATw_old[:] = ATw
        ATw[:] = At @ _f64(w)
        t = t_new
        if restart and align < 0.0:
            t = 1.0
            n_restarts += 1
    return t, n_restarts


def dual_gap_terms(A_indptr, A_indices, A_data, group_ptr, y, ATw, l1, radius, v):
    y = _f64(y)
    soft_threshold(y - _f64(ATw), l1, v)
    z = _csr(A_indptr, A_indices, A_data, y.size) @ _f64(v)
    tv = group_norm_sum(z, group_ptr)
    v = _f64(v)
    primal = 0.5 * np.sum((v - y) ** 2) + l1 * np.abs(v).sum() + radius * tv
    dual = 0.5 * np.dot(y, y) - 0.5 * np.dot(v, v)
    return float(primal), float(dual), float(tv)


def smoothed_alpha(A_indptr, A_indices, A_data, group_ptr, x, mu, alpha):
    z = _csr(A_indptr, A_indices, A_data, x.size) @ x
    sq, ids = _group_sqnorms(z, group_ptr)
    nrm = np.sqrt(sq)
    scale = np.where(nrm > mu, 1.0 / np.where(nrm > 0, nrm, 1.0), 1.0 / mu)
    alpha[:] = z * scale[ids]
    return float(alpha @ alpha), float(alpha @ z), float(nrm.sum())


def fista_iterations(
    n_iter,
    k,
    A_indptr,
    A_indices,
    A_data,
    At_indptr,
    At_indices,
    At_data,
    group_ptr,
    yp,
    kappa,
    eta,
    mu,
    step,
    v,
    v_old,
    z,
    alpha,
):
    At = _csr(At_indptr, At_indices, At_data, alpha.size)
    for _ in range(n_iter):
        beta = (k - 2.0) / (k + 1.0)
        z[:] = v + beta * (v - v_old)
        smoothed_alpha(A_indptr, A_indices, A_data, group_ptr, z, mu, alpha)
        grad = 2.0 * z - yp + kappa * (At @ alpha)
        v_old[:] = v
        soft_threshold(z - step * grad, step * eta, v)
        k += 1
    return k


def conesta_gap_terms(
    A_indptr,
    A_indices,
    A_data,
    At_indptr,
    At_indices,
    At_data,
    group_ptr,
    yp,
    kappa,
    eta,
    mu,
    v,
    alpha,
):
    aa, ax, sx = smoothed_alpha(A_indptr, A_indices, A_data, group_ptr, v, mu, alpha)
    ata = _csr(At_indptr, At_indices, At_data, alpha.size) @ alpha
    sig = v - yp
    lstar = 0.5 * sig @ sig + sig @ yp
    d = np.maximum(np.abs(-sig - kappa * ata) - eta, 0.0)
    return (
        aa,
        ax,
        sx,
        float(sig @ sig),
        float(v @ v),
        float(np.abs(v).sum()),
        float(lstar),
        float(0.5 * d @ d),
    )


def _diff_matrix(heads, tails, scale, n_features):
    n = heads.size
    rows = np.arange(n)
    data = np.concatenate([np.full(n, -scale), np.full(n, scale)])
    return sp.csr_matrix(
        (data, (np.concatenate([rows, rows]), np.concatenate([heads, tails]))),
        shape=(n, n_features),
    )


def diff_rmatvec(heads, tails, scale, w, out):
    out[:] = _diff_matrix(heads, tails, scale, out.size).T @ _f64(w)


def diff_dual_iterations(
    n_iter,
    heads,
    tails,
    scale,
    heads_are_groups,
    group_ptr,
    chunk_ptr,
    y,
    l1,
    radius,
    step,
    w,
    w_old,
    ATw,
    ATw_old,
    bufs,
    vq,
    vw,
    t,
    restart,
    with_gap,
    n_threads,
    segs=None,
    halos=None,
    hbuf=None,
):
    A = _diff_matrix(heads, tails, scale, y.size)
    dtype = y.dtype  # the iterates are stored (rounded) in it, as in the kernel
    at_w = _f64(ATw) + _f64(bufs).sum(axis=0)
    if segs is not None:  # the halos' partial sums of A^T w
        for lo, hi, off in np.asarray(halos).reshape(-1, 3):
            at_w[lo:hi] += _f64(hbuf[off : off + hi - lo])
        hbuf[:] = 0.0
    at_w = np.asarray(at_w, dtype=dtype)
    at_old = ATw_old.copy()
    w_arr, w_old_arr = w, w_old
    w, w_old = w.copy(), w_old.copy()
    terms = (float("nan"),) * 3
    n_restarts = 0
    for it in range(n_iter):
        if with_gap and it == n_iter - 1:
            terms = dual_gap_terms(A.indptr, A.indices, A.data, group_ptr, y, at_w, l1, radius, vw)
        t_new, beta = _momentum(t)
        soft_threshold(_f64(y) - (_f64(at_w) + beta * (_f64(at_w) - _f64(at_old))), l1, vq)
        align = _ascent_step(A, vq, w, w_old, beta, step, group_ptr, radius)
        at_old, at_w = at_w, np.asarray(A.T @ _f64(w), dtype=dtype)
        t = t_new
        if restart and align < 0.0:
            t = 1.0
            n_restarts += 1
    swapped = bool(n_iter % 2)
    (w_old_arr if swapped else w_arr)[:] = w
    (w_arr if swapped else w_old_arr)[:] = w_old
    (ATw_old if swapped else ATw)[:] = at_w
    (ATw if swapped else ATw_old)[:] = at_old
    bufs[:] = 0.0
    return (t, n_restarts, swapped) + tuple(terms)
