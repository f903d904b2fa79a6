"""Covariance helpers shared by the covariance-based estimators.

Input handling of :class:`~neurospca.NonnegativeSparsePCA` and
:class:`~neurospca.KTraceNormPCA` (data or a covariance matrix), eigenvalue
thresholding onto the PSD cone and the truncated power iteration (the k-sparse
leading eigenvector), used by the (k, PSD) trace norm working-set algorithm
and the sequential sparse PCA baseline.
"""

import math

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from .._utils.validation import check_data, check_int, check_nonneg, check_not_constant, check_scale

__all__ = ["check_covariance", "covariance_input", "psd_threshold", "truncated_power_iteration"]

_INPUTS = ("data", "covariance")


def check_covariance(C, name="covariance"):
    """A finite, square, symmetric float64 matrix (relative tolerance 1e-8).

    Parameters
    ----------
    C : array-like of shape (p, p)
        The matrix.
    name : str, default="covariance"
        The argument's name, used in error messages.

    Returns
    -------
    ndarray of shape (p, p)
        ``(C + C^T) / 2`` as float64.

    Raises
    ------
    TypeError, ValueError
        With a message naming ``name``.
    """
    C = check_data(C, name=name, min_samples=1)
    if C.shape[0] != C.shape[1]:
        raise ValueError(
            f"{name} must be a square (n_features, n_features) matrix, got shape {C.shape}."
        )
    scale = max(float(np.max(np.abs(C))), np.finfo(float).tiny)
    asym = float(np.max(np.abs(C - C.T)))
    if asym > 1e-8 * scale:
        raise ValueError(
            f"{name} must be symmetric: max |C - C^T| = {asym:.3e}; "
            "pass (C + C.T) / 2 if the asymmetry is rounding."
        )
    if not np.any(C):
        raise ValueError(f"{name} is identically zero: there is no variance to decompose.")
    return 0.5 * (C + C.T)


def covariance_input(estimator, X):
    """Validate ``X`` for an estimator with ``input`` in {"data", "covariance"}.

    Parameters
    ----------
    estimator : estimator
        The estimator being fitted (its ``input`` parameter decides).
    X : array-like
        Data (n_samples, n_features) or a covariance (n_features, n_features).

    Returns
    -------
    mean : ndarray of shape (n_features,)
        Column means of the data (zeros for a covariance input).
    C : ndarray of shape (n_features, n_features)
        ``Xc^T Xc / N`` for data, the validated matrix for a covariance.
    n_samples : int
        ``N`` for data, ``n_features`` for a covariance (for ``n_components``).
    """
    if estimator.input == "covariance":
        X = validate_data(estimator, X, dtype=np.float64, ensure_min_samples=1)
        C = check_covariance(X, name="X")
        return np.zeros(C.shape[0]), C, C.shape[0]
    X = validate_data(estimator, X, dtype=np.float64, ensure_min_samples=2)
    X = check_data(X)
    mean = X.mean(axis=0)
    Xc = X - mean
    check_not_constant(Xc)
    C = Xc.T @ Xc / X.shape[0]
    try:
        check_scale(C, "C")
    except ValueError:
        raise ValueError(
            f"X has entries up to {np.max(np.abs(X)):.3g}: its covariance (entries up "
            f"to {np.max(np.abs(C)):.3g}) overflows or underflows the solvers' float64 "
            "arithmetic. Rescale X, e.g. X / np.abs(X).max() (alpha is in the "
            "units of the covariance)."
        ) from None
    return mean, C, X.shape[0]


def psd_threshold(M, t):
    """Eigenvalue soft-thresholding onto the PSD cone.

    .. math::

        \\arg\\min_{Z \\succeq 0} \\tfrac12 \\|Z - M\\|_F^2 + t \\operatorname{tr} Z
        = V \\operatorname{diag}(\\max(w - t, 0)) V^T

    for the symmetric ``M = V diag(w) V^T``: the proximal operator of the
    trace norm restricted to PSD matrices (the block update of the working
    set algorithm, and the "trace" baseline).

    Parameters
    ----------
    M : ndarray of shape (m, m), symmetric
    t : float

    Returns
    -------
    Z : ndarray of shape (m, m)
    """
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    w = w - t
    keep = w > 0
    if not np.any(keep):
        return np.zeros_like(M)
    Vk = V[:, keep]
    return (Vk * w[keep]) @ Vk.T


def _top_k_support(x, k):
    if k >= x.shape[0]:
        return np.arange(x.shape[0])
    return np.sort(np.argpartition(-np.abs(x), k - 1)[:k])


def _min_eigenvalue(K):
    p = K.shape[0]
    if p <= 1500:
        return float(np.linalg.eigvalsh(K)[0])
    from scipy.sparse.linalg import eigsh

    v0 = np.ones(p) / math.sqrt(p)
    return float(eigsh(K, k=1, which="SA", v0=v0, tol=1e-3, return_eigenvectors=False)[0])


def truncated_power_iteration(K, k, *, n_restarts=10, max_iter=100, tol=1e-8, random_state=None):
    """Rank-one k-sparse PCA by truncated power iteration with restarts.

    Approximates the polar of the (k, PSD) gauge,

    .. math::

        \\Omega^\\circ(K) = \\max_{\\|a\\|_2 = 1,\\ \\|a\\|_0 \\le k} a^T K a
        = \\max_{|I| = k} \\lambda_{\\max}(K_{II}),

    by the iteration ``x <- T_k((K + cI) x) / ||.||`` (``T_k`` keeps the k
    largest magnitudes, ``c = max(0, -lambda_min(K))`` makes the matrix PSD
    without changing the maximiser). Starts: ``T_k`` of the columns of ``K``
    with the largest k-sparse norms (about half the restarts) and random
    vectors (the rest); the support with the largest exact
    ``lambda_max(K_II)`` is kept. A lower bound on the polar (NP-hard).

    Parameters
    ----------
    K : ndarray of shape (p, p), symmetric
    k : int
        Support size, ``1 <= k <= p``.
    n_restarts : int, default=10
    max_iter : int, default=100
    tol : float, default=1e-8
        Stop a run when its iterate changes by at most ``tol`` (l2).
    random_state : int, RandomState or None

    Returns
    -------
    value : float
        ``lambda_max(K_II)`` on the best support found.
    support : ndarray of int, shape (k,)
        Sorted indices ``I``.
    vector : ndarray of shape (p,)
        The unit leading eigenvector of ``K_II`` embedded in R^p.
    """
    K = check_covariance(K, name="K")
    p = K.shape[0]
    k = check_int(k, "k", minimum=1, maximum=p)
    n_restarts = check_int(n_restarts, "n_restarts", minimum=1)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_nonneg(tol, "tol")
    rng = check_random_state(random_state)
    shift = max(0.0, -_min_eigenvalue(K))
    return _tpi(K, k, n_restarts, max_iter, tol, rng, shift)


def _tpi(K, k, n_restarts, max_iter, tol, rng, shift):
    """Best ``(value, support, vector)`` of :func:`_tpi_candidates`."""
    value, support, vec = _tpi_candidates(K, k, n_restarts, max_iter, tol, rng, shift)[0]
    x = np.zeros(K.shape[0])
    x[support] = vec
    return value, support, x


def _tpi_candidates(K, k, n_restarts, max_iter, tol, rng, shift):
    """Truncated power iteration from several starts.

    ``shift`` must make ``K + shift * I`` PSD (at least on k-sparse vectors).

    Returns the distinct supports reached, as ``(lambda_max(K_II), I, v)``
    sorted by decreasing value (``v`` is the unit eigenvector on ``I``).
    """
    p = K.shape[0]
    if k >= p:
        w, V = np.linalg.eigh(K)
        return [(float(w[-1]), np.arange(p), V[:, -1].copy())]
    # deterministic starts: T_k of the columns with the largest k-sparse norms
    absK = np.abs(K)
    part = np.partition(absK, p - k, axis=0)[p - k :]
    scores = np.sum(part * part, axis=0)
    n_det = max(1, (n_restarts + 1) // 2)
    cols = np.argsort(-scores, kind="stable")[:n_det]
    X = K[:, cols].copy()
    n_rand = n_restarts - n_det
    if n_rand > 0:
        X = np.hstack([X, rng.standard_normal((p, n_rand))])
    X = _truncate_columns(X, k)
    for _ in range(max_iter):
        Y = K @ X + shift * X
        Y = _truncate_columns(Y, k)
        # align signs before measuring the change
        signs = np.sign(np.sum(Y * X, axis=0))
        signs[signs == 0] = 1.0
        change = np.max(np.linalg.norm(Y * signs - X, axis=0))
        X = Y
        if change <= tol:
            break
    out = []
    seen = set()
    for j in range(X.shape[1]):
        support = _top_k_support(X[:, j], k)
        key = support.tobytes()
        if key in seen:
            continue
        seen.add(key)
        w, V = np.linalg.eigh(K[np.ix_(support, support)])
        out.append((float(w[-1]), support, V[:, -1]))
    out.sort(key=lambda c: -c[0])
    return out


def _truncate_columns(X, k):
    p = X.shape[0]
    idx = np.argpartition(-np.abs(X), k - 1, axis=0)[:k]
    out = np.zeros_like(X)
    cols = np.arange(X.shape[1])
    out[idx, cols] = X[idx, cols]
    norms = np.linalg.norm(out, axis=0)
    bad = norms == 0
    if np.any(bad):  # a zero column restarts from a fixed unit vector
        out[:, bad] = 0.0
        out[np.arange(min(k, p)), np.flatnonzero(bad)[:, None]] = 1.0
        norms = np.linalg.norm(out, axis=0)
    return out / norms
