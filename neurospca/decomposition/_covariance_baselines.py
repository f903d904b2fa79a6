"""The baselines of Table 2 of Richard, Obozinski and Vert (2014).

Covariance estimates compared with the (k, PSD) trace norm
(:func:`neurospca.ktrace_pca`): the sample covariance, entrywise
soft-thresholding (l1), eigenvalue thresholding (trace), trace + l1 with the
paper's Gamma_mu, and sequential sparse PCA with projection deflation. The
simulation and the protocol of the table are in ``benchmarks/_ktrace_protocol.py``.
"""

import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._utils.validation import check_data, check_int, check_n_components, check_nonneg
from ._covariance import _min_eigenvalue, _tpi, check_covariance, psd_threshold

__all__ = [
    "sample_covariance",
    "soft_threshold_covariance",
    "trace_psd_covariance",
    "trace_l1_covariance",
    "sequential_spca_covariance",
]


def sample_covariance(X):
    """``(1/n) sum_i x_i x_i^T`` (the paper's input; data are not centred).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The data.

    Returns
    -------
    ndarray of shape (n_features, n_features)
    """
    X = check_data(X, min_samples=1)
    return X.T @ X / X.shape[0]


def soft_threshold_covariance(S, alpha):
    """The l1 baseline: ``argmin_Z 1/2 ||Z - S||_F^2 + alpha ||Z||_1``.

    .. math::

        \\hat Z_{ij} = \\operatorname{sign}(S_{ij}) \\max(|S_{ij}| - \\alpha, 0)

    Parameters
    ----------
    S : ndarray of shape (p, p), symmetric
        The empirical covariance.
    alpha : float
        The threshold, >= 0.

    Returns
    -------
    Z : ndarray of shape (p, p)
        The estimate.
    """
    S = check_covariance(S, name="S")
    alpha = check_nonneg(alpha, "alpha")
    return np.sign(S) * np.maximum(np.abs(S) - alpha, 0.0)


def trace_psd_covariance(S, alpha):
    """The trace baseline: eigenvalue thresholding.

    .. math::

        \\hat Z = \\arg\\min_{Z \\succeq 0} \\tfrac12 \\|Z - S\\|_F^2
        + \\alpha \\operatorname{tr} Z

    Parameters
    ----------
    S : ndarray of shape (p, p), symmetric
        The empirical covariance.
    alpha : float
        The eigenvalue threshold, >= 0.

    Returns
    -------
    Z : ndarray of shape (p, p)
        The estimate.
    """
    S = check_covariance(S, name="S")
    alpha = check_nonneg(alpha, "alpha")
    return psd_threshold(S, alpha)


def trace_l1_covariance(S, alpha, mu, k, *, tol=1e-6, max_iter=1000):
    """The trace + l1 baseline with the paper's :math:`\\Gamma_\\mu` (eq. 11).

    .. math::

        \\hat Z = \\arg\\min_{Z \\succeq 0} \\tfrac12 \\|Z - S\\|_F^2
        + \\alpha \\Big( \\frac{\\mu}{k} \\|Z\\|_1
        + (1 - \\mu) \\operatorname{tr} Z \\Big)

    (on the PSD cone the trace norm is the trace; ``sqrt(k q) = k``). The
    trace term shifts ``S`` to ``Y = S - alpha (1 - mu) I``; the remaining
    problem ``min_{Z psd} 1/2 ||Z - Y||^2 + t ||Z||_1`` (``t = alpha mu / k``)
    is solved on its dual, ``max_{|W_ij| <= t} g(W)`` with
    ``Z(W) = Pi_psd(Y - W)`` and ``grad g = Z(W)`` (1-Lipschitz), by
    accelerated projected gradient (FISTA), until the primal-dual gap is at
    most ``tol * ||Y||_F^2 / 2``.

    Parameters
    ----------
    S : ndarray of shape (p, p), symmetric
    alpha : float, >= 0
    mu : float in [0, 1]
    k : int
        The sparsity in ``Gamma_mu``.
    tol : float, default=1e-6
    max_iter : int, default=1000

    Returns
    -------
    Z : ndarray of shape (p, p)
    """
    S = check_covariance(S, name="S")
    alpha = check_nonneg(alpha, "alpha")
    mu = check_nonneg(mu, "mu")
    if mu > 1:
        raise ValueError(f"mu must be in [0, 1], got {mu}.")
    k = check_int(k, "k", minimum=1, maximum=S.shape[0])
    tol = check_nonneg(tol, "tol", strict=True)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    Y = S - alpha * (1.0 - mu) * np.eye(S.shape[0])
    t = alpha * mu / k
    tol_abs = tol * max(0.5 * float(np.sum(Y * Y)), np.finfo(float).tiny)
    W = np.clip(Y, -t, t)  # a start where Y - W has small entries
    V = W.copy()
    theta = 1.0
    Z = psd_threshold(Y - W, 0.0)
    for _ in range(max_iter):
        Zv = psd_threshold(Y - V, 0.0)
        W_new = np.clip(V + Zv, -t, t)
        theta_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * theta * theta))
        V = W_new + ((theta - 1.0) / theta_new) * (W_new - W)
        W, theta = W_new, theta_new
        Z = psd_threshold(Y - W, 0.0)
        R = Z - Y
        primal = 0.5 * float(np.sum(R * R)) + t * float(np.sum(np.abs(Z)))
        dual = 0.5 * float(np.sum(R * R)) + float(np.sum(W * Z))
        if primal - dual <= tol_abs:
            break
    else:
        warnings.warn(
            f"trace_l1_covariance did not reach tol={tol} in "
            f"max_iter={max_iter} iterations (gap {primal - dual:.3e}).",
            ConvergenceWarning,
            stacklevel=2,
        )
    return Z


def sequential_spca_covariance(
    S, k, n_components, *, n_restarts=10, tpi_max_iter=100, random_state=None
):
    """The sequential sparse PCA baseline with projection deflation.

    For ``t = 1..r``: ``u_t`` = truncated power iteration (k-sparse leading
    eigenvector) of ``Z_t`` (``Z_1 = S``), ``d_t = u_t^T Z_t u_t``, then
    ``Z_{t+1} = (I - u_t u_t^T) Z_t (I - u_t u_t^T)`` (Mackey 2009). The
    estimate is

    .. math::

        \\hat Z = \\sum_{t=1}^r d_t\\, u_t u_t^T .

    Parameters
    ----------
    S : ndarray of shape (p, p), symmetric
        The empirical covariance.
    k : int
        Support size of each component.
    n_components : int
        Number of components ``r``.
    n_restarts : int, default=10
        Restarts of the truncated power iteration.
    tpi_max_iter : int, default=100
        Iterations of each truncated power iteration.
    random_state : int, RandomState or None
        Seed of the random restarts.

    Returns
    -------
    Z : ndarray of shape (p, p)
    U : ndarray of shape (r, p)
        Unit k-sparse components.
    d : ndarray of shape (r,)
    """
    S = check_covariance(S, name="S")
    p = S.shape[0]
    k = check_int(k, "k", minimum=1, maximum=p)
    n_components = check_n_components(n_components, p, p)
    n_restarts = check_int(n_restarts, "n_restarts", minimum=1)
    tpi_max_iter = check_int(tpi_max_iter, "tpi_max_iter", minimum=1)
    rng = check_random_state(random_state)
    # projection deflation keeps lambda_min >= min(lambda_min(S), 0)
    shift = max(0.0, -_min_eigenvalue(S))
    Zt = S.copy()
    U = np.zeros((n_components, p))
    d = np.zeros(n_components)
    for t in range(n_components):
        _, _, u = _tpi(Zt, k, n_restarts, tpi_max_iter, 1e-10, rng, shift)
        d[t] = float(u @ Zt @ u)
        U[t] = u
        Pu = np.eye(p) - np.outer(u, u)
        Zt = Pu @ Zt @ Pu
        Zt = 0.5 * (Zt + Zt.T)
    return (U.T * d) @ U, U, d
