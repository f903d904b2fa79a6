"""Objectives and duality gaps of the v-step, in one place.

The v-step of SPCA-TV (paper eq. 3 with ``u`` fixed) is the proximal problem

.. math::

    \\min_v P(v) = \\tfrac12 \\|v - y\\|_2^2 + a \\|v\\|_1 + b \\sum_g \\|A_g v\\|_2,

with ``y = X^T u / (2 N \\lambda_2)``, ``a = \\lambda_1 / (2 \\lambda_2)`` and
``b = \\lambda / (2 \\lambda_2)``; ``f(v) = 2 \\lambda_2 (P(v) - \\|y\\|^2/2)``.
The paper's CONESTA works on eq. 17, ``f / \\lambda_2`` up to a constant, that is
``2 P(v)`` up to a constant, with ``y' = 2 y``, ``\\kappa = 2 b`` and
``\\eta = 2 a``; its gaps are twice the prox gaps.
"""

import numpy as np


def prox_objective(v, y, operator, l1, group):
    """``P(v)`` of the prox problem, in plain NumPy (for tests and reports).

    Parameters
    ----------
    v : ndarray of shape (n_features,)
        A primal point.
    y : ndarray of shape (n_features,)
        The point at which the prox is taken.
    operator : GroupOperator
        The structure ``A``.
    l1 : float
        Weight of the l1 norm.
    group : float
        Weight of the group norm.

    Returns
    -------
    float
        ``||v - y||^2 / 2 + l1 ||v||_1 + group sum_g ||A_g v||_2``.
    """
    v = np.asarray(v, dtype=np.float64)
    value = 0.5 * float(np.sum((v - y) ** 2)) + l1 * float(np.abs(v).sum())
    if group:
        value += group * operator.value(v)
    return value


def spca_objective(v, Xtu_over_n, l1, l2, tv, operator):
    """``f(v)`` of paper eq. 3 for fixed ``u``, given ``X^T u / N``.

    Parameters
    ----------
    v : ndarray of shape (n_features,)
        The loadings.
    Xtu_over_n : ndarray of shape (n_features,)
        ``X^T u / N``.
    l1, l2, tv : float
        The weights of eq. 3.
    operator : GroupOperator
        The TV operator.

    Returns
    -------
    float
        ``-X^T u . v / N + l2 ||v||^2 + l1 ||v||_1 + tv sum_g ||A_g v||_2``.
    """
    v = np.asarray(v, dtype=np.float64)
    value = -float(Xtu_over_n @ v) + l2 * float(v @ v) + l1 * float(np.abs(v).sum())
    if tv:
        value += tv * operator.value(v)
    return value


def mu_opt(eps, gamma, M, norm2, L=2.0):
    """The optimal smoothing parameter of eq. 25.

    .. math::

        \\mu_{opt}(\\varepsilon) = \\frac{-\\gamma M \\|A\\|^2 +
        \\sqrt{(\\gamma M \\|A\\|^2)^2 + M L \\|A\\|^2 \\varepsilon}}{M L}

    Parameters
    ----------
    eps : float
        The precision to reach.
    gamma : float
        Weight of the smoothed penalty in the objective (``kappa`` of eq. 17).
    M : float
        ``max_{alpha in K} ||alpha||^2 / 2`` = number of groups / 2 (eq. 15).
    norm2 : float
        ``||A||_2^2``.
    L : float
        Lipschitz constant of the smooth loss gradient (2 in eq. 17).

    Returns
    -------
    float
        ``mu_opt(eps)``.
    """
    gM = gamma * M * norm2
    num = -gM + np.sqrt(gM * gM + M * L * norm2 * eps)
    if num <= 0.0:
        # catastrophic cancellation when gM^2 >> M L ||A||^2 eps: use the
        # algebraically equal form c eps / (gM + sqrt(...)).
        num = M * L * norm2 * eps / (gM + np.sqrt(gM * gM + M * L * norm2 * eps))
    return float(num / (M * L))


def conesta_gap(terms, kappa, eta, mu):
    """Assemble the gaps of eqs. 20-24 from :func:`conesta_gap_terms`.

    Returns
    -------
    gap_mu : float
        ``Gap_mu(v) = f_mu(v) + L*(sigma) + psi*_mu(-sigma)`` (eq. 20), in the
        units of eq. 17.
    gap_0 : float
        The same Fenchel certificate for the unsmoothed problem:
        ``f(v) + L*(sigma) + psi*_0(-sigma)`` with the same ``alpha`` (a valid
        bound since ``alpha`` is dual feasible), also in eq.-17 units.
    f_v : float
        The unsmoothed objective of eq. 17 at ``v``.
    """
    aa, ax, sx, quad, vv, l1sum, lstar, psi = terms
    s_mu = ax - 0.5 * mu * aa
    base = 0.5 * quad + 0.5 * vv + eta * l1sum
    f_mu = base + kappa * s_mu
    f_v = base + kappa * sx
    gap_mu = f_mu + lstar + psi + 0.5 * kappa * mu * aa
    gap_0 = f_v + lstar + psi
    return max(gap_mu, 0.0), max(gap_0, 0.0), f_v


def prox_gap(v, y, operator, l1, group, w):
    """Exact Fenchel duality gap ``P(v) - D(w)`` of the prox problem.

    ``w`` is first projected onto the dual balls ``||w_g||_2 <= group`` (a
    float64 copy, :func:`feasible_dual`) and everything is evaluated in
    float64 (also for float32 ``v``, ``y`` or ``w``), so for ANY finite ``w``
    the result is an upper bound of ``P(v) - P(v*)``:
    ``D(w) = ||y||^2/2 - ||soft(y - A^T w, l1)||^2/2 <= P(v*)`` by weak duality.

    Parameters
    ----------
    v : ndarray of shape (n_features,)
        Any primal point.
    y, operator, l1, group
        The prox problem.
    w : ndarray of shape (n_rows,)
        Any dual point (projected here).

    Returns
    -------
    gap : float
        ``P(v) - D(w)`` (``inf`` if not finite).
    primal : float
        ``P(v)``.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return _prox_gap(v, y, operator, l1, group, w)


def feasible_dual(w, operator, group):
    """``w`` in float64 (a copy), each group scaled into the ball ``||w_g||_2 <= group``.

    Parameters
    ----------
    w : array_like of shape (n_rows,)
        Any finite dual point (float32 from a float32 solve, or float64).
    operator : GroupOperator
        The structure ``A`` and its groups.
    group : float
        The radius of the balls.

    Returns
    -------
    ndarray of shape (n_rows,)
        The dual point at which :func:`prox_gap` evaluates ``D``.
    """
    w = np.array(w, dtype=np.float64)
    nrm = operator.group_norms(w)
    scale = np.where(nrm > group, group / np.where(nrm > 0, nrm, 1.0), 1.0)
    w *= scale[operator.row_group]
    return w


def _prox_gap(v, y, operator, l1, group, w, primal=None):
    """:func:`prox_gap` (``primal``: ``P(v)`` when known, :func:`_prox_primal`),
    with few ``P``- and row-long temporaries: the same operations in the same
    order as before, so the same bits (at P = 1.9M a certificate took more CPU
    than a 10-iteration v-step, issue 22 round 15)."""
    if primal is None:
        primal = _prox_primal(v, y, operator, l1, group)
    y = np.asarray(y, dtype=np.float64)
    z = operator.rmatvec(_feasible(w, operator, group))
    np.subtract(y, z, out=z)
    u = np.sign(z)
    np.abs(z, out=z)
    z -= l1
    np.maximum(z, 0.0, out=z)
    u *= z  # soft(y - A^T w, l1)
    dual = 0.5 * float(y @ y) - 0.5 * float(u @ u)
    gap = primal - dual
    if not np.isfinite(gap):
        return np.inf, primal
    return max(gap, 0.0), primal


def _prox_primal(v, y, operator, l1, group, norms=None):
    """``P(v)`` as :func:`prox_gap` evaluates it (``norms``: the group norms
    of ``A v``, when known)."""
    v = np.asarray(v, dtype=np.float64)
    d = v - np.asarray(y, dtype=np.float64)
    np.multiply(d, d, out=d)  # (v - y) ** 2
    if norms is None:
        norms = operator.group_norms(operator.matvec(v))
    return 0.5 * float(np.sum(d)) + l1 * float(np.abs(v).sum()) + group * float(norms.sum())


def _feasible(w, operator, group):
    """:func:`feasible_dual` without a copy when ``w`` is float64 and feasible
    already (only the groups outside the ball are scaled, by the same factors)."""
    w = np.asarray(w, dtype=np.float64)
    nrm = operator.group_norms(w)
    out = np.flatnonzero(nrm > group)
    if out.size == 0:
        return w
    scale = np.ones(nrm.size)
    scale[out] = group / nrm[out]
    return w * scale[operator.row_group]


def primal_certificate(v, y, operator, l1, group, mus=()):
    """The best exact Fenchel gap at ``v`` over a few dual candidates.

    The candidates are ``w = group * proj(A v / mu)`` (the Nesterov dual of
    eq. 12, scaled to the ball of radius ``group``) for each ``mu`` in ``mus``
    and ``mu -> 0`` (``w_g = group A_g v / ||A_g v||``). Each is a valid bound
    (:func:`prox_gap`), so their minimum is too.

    Parameters
    ----------
    v : ndarray of shape (n_features,)
        Any primal point.
    y, operator, l1, group
        The prox problem.
    mus : sequence of float
        Smoothing levels of the candidates.

    Returns
    -------
    gap : float
    primal : float
        ``P(v)``.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        Av = operator.matvec(np.asarray(v, dtype=np.float64))
        nrm = operator.group_norms(Av)
        primal = _prox_primal(v, y, operator, l1, group, nrm)  # as prox_gap's, once
    best = np.inf
    for mu in tuple(mus) + (0.0,):
        denom = np.maximum(nrm, mu)
        scale = np.where(denom > 0, group / np.where(denom > 0, denom, 1.0), 0.0)
        with np.errstate(over="ignore", invalid="ignore"):
            gap, primal = _prox_gap(
                v, y, operator, l1, group, Av * scale[operator.row_group], primal
            )
        best = min(best, gap)
    return best, primal
