"""Euclidean projections shared by several estimators (no estimator here).

:func:`project_l1_ball` is used by the ℓ∞ tree prox (its Moreau dual) and by
the ℓ1 code constraint of structured sparse PCA.
"""

import numpy as np

from .._utils.validation import check_finite_array

__all__ = ["project_l1_ball"]


def project_l1_ball(Z, radius):
    """Euclidean projection of each row of ``Z`` on the ℓ1 ball of ``radius``.

    .. math::

        \\Pi(z) = \\arg\\min_{\\|x\\|_1 \\le r} \\|x - z\\|_2

    Sort-based (Duchi et al. 2008), vectorised over rows, written so that it
    does not cancel when ``|z| >> r``: the support size ``rho`` is the largest
    ``j`` with ``sum_{i <= j} (s_i - s_j) < r`` (``s`` sorted decreasingly; always
    true for ``j = 0``), and the result is
    ``x_j = [r - (sum_{i <= rho} s_i - (rho + 1) |z_j|)] / (rho + 1)`` clipped at
    0, rescaled onto the sphere if rounding left it outside. The output is
    always inside the ball.

    Parameters
    ----------
    Z : ndarray of shape (n, d) or (d,)
    radius : float or ndarray of shape (n,)
        Non-negative radius (per row).

    Returns
    -------
    ndarray of the shape of ``Z``
    """
    Z = check_finite_array(Z, "Z")
    if Z.ndim not in (1, 2):
        raise ValueError(f"Z must be 1-D or 2-D, got {Z.ndim}-D.")
    r = check_finite_array(radius, "radius")
    if np.any(r < 0):
        raise ValueError("radius must be >= 0.")
    n_rows = 1 if Z.ndim == 1 else Z.shape[0]
    if r.ndim > 1 or (r.ndim == 1 and r.size != n_rows):
        raise ValueError(f"radius must be a number or have shape ({n_rows},), got {r.shape}.")
    return _project_l1_ball(Z, r)


def _project_l1_ball(Z, radius):
    """:func:`project_l1_ball` without validation (hot loops)."""
    Z = np.asarray(Z, dtype=np.float64)
    one_d = Z.ndim == 1
    Z2 = np.atleast_2d(Z)
    r = np.broadcast_to(np.asarray(radius, dtype=np.float64), (Z2.shape[0],))
    A = np.abs(Z2)
    inside = A.sum(axis=1) <= r
    out = Z2.copy()
    if not np.all(inside):
        rows = np.flatnonzero(~inside)
        Ar, rr = A[rows], r[rows]
        S = -np.sort(-Ar, axis=1)
        cs = np.cumsum(S, axis=1)
        k = np.arange(1, S.shape[1] + 1)
        cond = (cs - k * S) < rr[:, None]  # sum_{i<=j} (s_i - s_j) < r
        rho = S.shape[1] - 1 - np.argmax(cond[:, ::-1], axis=1)
        idx = np.arange(rows.size)
        n_sup = (rho + 1).astype(np.float64)
        X = (rr[:, None] - (cs[idx, rho][:, None] - n_sup[:, None] * Ar)) / n_sup[:, None]
        X = np.maximum(X, 0.0)
        X[rr <= 0] = 0.0
        total = X.sum(axis=1)
        over = total > rr
        X[over] *= (rr[over] / total[over])[:, None]
        out[rows] = np.sign(Z2[rows]) * X
    return out[0] if one_d else out
