"""The scale of SSPCA's penalty and the test of a collapsed component.

SSPCA's objective (:mod:`neurospca.decomposition._sspca`),

.. math::

    f(U, V) = \\frac{1}{2np} \\|X - U V^T\\|_F^2 + \\alpha \\sum_k \\Omega^q(V^k),
    \\quad \\Omega_u(U^k) \\le 1,

has ``V = 0`` as a minimiser exactly when ``alpha >= alpha_max`` with

.. math::

    \\alpha_{max} = \\frac{1}{np} \\sup_{d \\ne 0}
    \\frac{\\Omega_u^*(X d)}{\\Omega^q(d)}

(``Omega_u^*`` is the dual norm of the code constraint: ℓ2 for the ℓ2 ball,
ℓ∞ for the ℓ1 ball; with ``nonneg`` the positive part of ``X d`` and
``d >= 0``). Proof: ``Omega^q`` is positively homogeneous, so along
``V^k = t d`` the objective changes by ``t (alpha Omega^q(d) - u^T X d / (np))``
plus a term in ``t^2`` that is never negative. The supremum is exact on
singleton groups (``max_j`` of the column norms over ``Omega^q(e_j)``); for
overlapping groups it is a non-convex problem, and :func:`alpha_max` returns
the largest ratio over candidate directions: the singletons and the leading
right singular vectors of ``X`` cut to their ``m`` largest entries for a
geometric range of ``m``. That is a lower bound of the exact value (below it,
``V = 0`` is certainly not a minimiser). Measured on the half-space groups of
:func:`neurospca.grid_halfspace_groups` (20 image sets), every component was
kept at 0.7 times it and every one had collapsed at 1.5 times it
(benchmarks/RESULTS.md, issue 20, item 5): it is the scale of the problem, as
``l1_max_`` is SPCA-TV's.
"""

import numpy as np
from sklearn.utils.extmath import randomized_svd

__all__ = ["alpha_max", "collapsed_components"]

#: Sizes ``m`` of the cut singular vectors tried per vector (geometric in [1, p]).
N_CUTS = 24

#: A component is collapsed when it lowers the objective by at most this
#: fraction of the objective at ``V = 0`` (``||X||_F^2 / (2np)``).
COLLAPSE_RTOL = 1e-9


def _gain(Z, code_constraint, nonneg):
    """``Omega_u^*`` of each column of ``Z`` (positive parts with ``nonneg``)."""
    if nonneg:
        Z = np.maximum(Z, 0.0)
    if code_constraint == "l1":
        return np.abs(Z).max(axis=0)
    return np.sqrt((Z * Z).sum(axis=0))


def _omega_columns(Msq, D, exponent):
    """``Omega^q`` of each column of ``D`` (``Msq``: squared group weights)."""
    N = np.sqrt(np.maximum(Msq @ (D * D), 0.0))
    if exponent == 1.0:
        return N.sum(axis=0)
    return (N**exponent).sum(axis=0) ** (1.0 / exponent)


def alpha_max(X, Msq, exponent, n_components, *, code_constraint="l2", nonneg=False):
    """The smallest ``alpha`` at which ``V = 0`` minimises SSPCA (a lower bound).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The data as it is fitted (centred or not).
    Msq : sparse matrix of shape (n_groups, n_features)
        The squared group weights ``(d^G_j)^2``.
    exponent : float in (0, 1]
        The exponent ``q`` of the group quasi-norm.
    n_components : int
        Number of leading singular vectors used as candidates.
    code_constraint : {"l2", "l1"}, default="l2"
        The unit ball of the codes.
    nonneg : bool, default=False
        Nonnegative codes and loadings.

    Returns
    -------
    float
        ``max_d Omega_u^*(X d) / (n p Omega^q(d))`` over the candidate
        directions ``d`` (see the module docstring); exact for singleton
        groups, a lower bound otherwise.
    """
    n, p = X.shape
    single = np.asarray(Msq.power(exponent / 2.0).sum(axis=0)).ravel() ** (1.0 / exponent)
    ratios = [np.max(_gain(X, code_constraint, nonneg) / single)]
    k = min(n_components, min(n, p))
    _, _, Vt = randomized_svd(X, k, random_state=0)
    sizes = np.unique(np.round(np.geomspace(1, p, N_CUTS)).astype(int))
    for vec in Vt:
        for sign in (1.0, -1.0) if nonneg else (1.0,):
            w = np.maximum(sign * vec, 0.0) if nonneg else vec
            order = np.argsort(-np.abs(w))
            D = np.zeros((p, sizes.size))
            for i, m in enumerate(sizes):
                D[order[:m], i] = w[order[:m]]
            om = _omega_columns(Msq, D, exponent)
            ok = om > 0
            if np.any(ok):
                ratios.append(np.max(_gain(X @ D[:, ok], code_constraint, nonneg) / om[ok]))
    return float(max(ratios)) / (n * p)


def collapsed_components(objective, X, V):
    """Which components do not lower the objective below that of dropping them.

    Parameters
    ----------
    objective : callable
        ``objective(V)``: SSPCA's objective at the codes ``U`` of the fit.
    X : ndarray of shape (n_samples, n_features)
        The fitted data.
    V : ndarray of shape (n_features, n_components)
        The loadings.

    Returns
    -------
    ndarray of bool, shape (n_components,)
        True where setting ``V^k = 0`` lowers the objective or raises it by at
        most :data:`COLLAPSE_RTOL` times the objective at ``V = 0``: the
        component is then no better than none (its loadings are what is left
        of a collapse, not a pattern).
    """
    n, p = X.shape
    f0 = 0.5 * float(np.einsum("ij,ij->", X, X)) / (n * p)
    f = objective(V)
    out = np.zeros(V.shape[1], dtype=bool)
    for k in range(V.shape[1]):
        Vk = V.copy()
        Vk[:, k] = 0.0
        out[k] = objective(Vk) - f <= COLLAPSE_RTOL * f0
    return out
