"""SSPCA's algorithm: the paper's Algorithm 1 on validated arguments.

The group norms, the objective and the cyclic minimisation over the
variational weights ``eta``, the codes ``U`` and the loadings ``V`` of
:func:`neurospca.decomposition.sspca` (Jenatton, Obozinski and Bach 2010),
split from :mod:`neurospca.decomposition._sspca` (the public function and
the estimator) by job.
"""

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._utils.naming import component_names
from ._base import progress
from ._projections import _project_l1_ball
from ._sspca_scale import alpha_max, collapsed_components

__all__ = ["_fit_once", "_sspca", "_objective", "_membership", "_group_norms", "_omega"]


def _membership(groups, weights, n_features):
    """Sparse (n_groups, n_features) matrix of squared weights ``(d^G_j)^2``."""
    rows = np.repeat(np.arange(len(groups)), [g.size for g in groups])
    cols = np.concatenate(groups)
    data = np.concatenate(weights) ** 2
    return sp.csr_matrix((data, (rows, cols)), shape=(len(groups), n_features))


def _group_norms(Msq, V, classes=None):
    """``N[G, k] = ||d^G o V^k||_2``, shape (n_groups, r).

    With ``classes`` (an (r, n_classes) 0/1 matrix of a partition of the
    components), the block norms ``N[G, M] = ||(d^G_j V_jk)_{j in G, k in M}||_F``
    of the shared-pattern model, shape (n_groups, n_classes).
    """
    sq = Msq @ (V * V)
    if classes is not None:
        sq = sq @ classes
    return np.sqrt(np.maximum(sq, 0.0))


def _omega(N, exponent):
    """``(sum_G N_G^exponent)^(1/exponent)`` per column of N."""
    if exponent == 1.0:
        return N.sum(axis=0)
    return (N**exponent).sum(axis=0) ** (1.0 / exponent)


def _project_code(w, constraint, nonneg=False):
    """Euclidean projection on the unit ball of ``Omega_u`` (intersected with the
    nonnegative orthant if ``nonneg``: clipping first, then the ball, is exact
    for these balls centred at 0)."""
    if nonneg:
        w = np.maximum(w, 0.0)
    if constraint == "l2":
        nrm = np.sqrt(float(w @ w))
        return w / nrm if nrm > 1.0 else w
    return _project_l1_ball(w, 1.0)


def _objective(X, U, V, Msq, alpha, exponent, classes=None):
    n, p = X.shape
    R = X - U @ V.T
    return 0.5 * float(np.einsum("ij,ij->", R, R)) / (n * p) + alpha * float(
        _omega(_group_norms(Msq, V, classes), exponent).sum()
    )


def _fit_once(
    X,
    r,
    Msq,
    alpha,
    exponent,
    code_constraint,
    eps,
    n_inner,
    max_iter,
    tol,
    rng,
    classes=None,
    label=None,
    nonneg=False,
    U0=None,
    verbose=0,
):
    """One run of Algorithm 1 from ``U0`` (random if None).

    Returns ``U, V, eta, history, n_iter, converged``; logs each alternation's
    objective and relative decrease when ``verbose``.
    """
    n, p = X.shape
    U = rng.standard_normal((n, r)) if U0 is None else U0.copy()
    U = np.abs(U) if nonneg else np.linalg.qr(U)[0]
    U = np.array([_project_code(u, code_constraint, nonneg) for u in U.T]).T
    V = X.T @ U
    if nonneg:
        V = np.maximum(V, 0.0)
    if label is None:
        label = np.arange(r)
    npl = n * p * alpha
    history = [_objective(X, U, V, Msq, alpha, exponent, classes)]
    eta = None
    converged = False
    for it in range(1, max_iter + 1):
        # eta-step (Lemma 3.1): eta_G = N_G^(2-exponent) ||N||_alpha^(exponent-1) + eps,
        # one column per component (or per class of the partition)
        N = _group_norms(Msq, V, classes)
        nrm = _omega(N, exponent)
        safe = np.where(nrm > 0, nrm, 1.0)
        eta = N ** (2.0 - exponent) * safe ** (exponent - 1.0)
        top = eta.max(axis=0)
        eta = eta + eps * np.where(top > 0, top, 1.0)[None, :]
        # zeta_jk = 1 / sum_{G ∋ j} (d^G_j)^2 / eta^G_k (eta of the class of k)
        zeta = (1.0 / (Msq.T @ (1.0 / eta)))[:, label]
        # U-step: projected BCD on the columns
        XV = X @ V
        VtV = V.T @ V
        for _ in range(n_inner):
            for k in range(r):
                if VtV[k, k] <= 0:
                    continue
                w = U[:, k] + (XV[:, k] - U @ VtV[:, k]) / VtV[k, k]
                U[:, k] = _project_code(w, code_constraint, nonneg)
        # V-step: closed-form diagonal BCD on the columns
        XtU = X.T @ U
        UtU = U.T @ U
        for _ in range(n_inner):
            for k in range(r):
                c = XtU[:, k] - V @ UtU[:, k] + UtU[k, k] * V[:, k]
                v = zeta[:, k] * c / (UtU[k, k] * zeta[:, k] + npl)
                # the problem is separable in the coordinates: clipping is exact
                V[:, k] = np.maximum(v, 0.0) if nonneg else v
        history.append(_objective(X, U, V, Msq, alpha, exponent, classes))
        prev, cur = history[-2], history[-1]
        progress(
            "SSPCA",
            verbose,
            "iteration %d: objective %.10g, relative decrease %.2e",
            it,
            cur,
            abs(prev - cur) / max(abs(cur), 1e-300),
        )
        if abs(prev - cur) <= tol * max(abs(cur), 1e-300):
            converged = True
            break
    return U, V, eta, history, it, converged


def _sspca(
    X,
    r,
    Msq,
    classes,
    label,
    alpha,
    alpha_rel,
    exponent,
    code_constraint,
    nonneg,
    init,
    eps,
    n_inner,
    max_iter,
    tol,
    n_init,
    random_state,
    verbose=0,
):
    """:func:`sspca` on validated arguments (the estimator calls it directly)."""
    a_max = alpha_max(X, Msq, exponent, r, code_constraint=code_constraint, nonneg=nonneg)
    if alpha is None:
        alpha = alpha_rel * a_max
    rng = check_random_state(random_state)
    best, finals = None, []
    U0 = np.linalg.svd(X, full_matrices=False)[0][:, :r] if init == "svd" else None
    for run in range(n_init):
        res = _fit_once(
            X,
            r,
            Msq,
            alpha,
            exponent,
            code_constraint,
            eps,
            n_inner,
            max_iter,
            tol,
            rng,
            classes,
            label,
            nonneg,
            U0 if run == 0 else None,
            verbose,
        )
        finals.append(res[3][-1])
        progress(
            "SSPCA", verbose, "run %d: %d iterations, objective %.10g", run, res[4], res[3][-1]
        )
        if best is None or res[3][-1] < best[3][-1]:
            best = res
    U, V, eta, history, n_iter, converged = best
    if not (np.all(np.isfinite(U)) and np.all(np.isfinite(V)) and np.isfinite(history[-1])):
        raise ValueError(
            "SSPCA diverged to non-finite values (overflow); rescale X to unit scale "
            f"and/or change alpha (alpha={alpha:.3g})."
        )
    if not converged:
        warnings.warn(
            f"sspca did not converge in {max_iter} iterations (relative decrease "
            f"{abs(history[-2] - history[-1]) / max(abs(history[-1]), 1e-300):.2e} > "
            f"tol={tol}); increase max_iter.",
            ConvergenceWarning,
            stacklevel=3,
        )
    collapsed = collapsed_components(
        lambda W: _objective(X, U, W, Msq, alpha, exponent, classes), X, V
    )
    if np.any(collapsed):
        warnings.warn(
            f"SSPCA: {component_names(np.flatnonzero(collapsed), r)} collapsed: "
            f"at alpha={alpha:.3g} ({alpha / a_max:.3g} x alpha_max={a_max:.3g}) their "
            "loadings do not lower the objective below that of V = 0, so they are set "
            "to zero in components_ and supports_. Decrease alpha_rel (with alpha=None) "
            "or alpha, or ask for fewer components.",
            UserWarning,
            stacklevel=3,
        )
    info = {
        "objective": history,
        "eta": eta,
        "n_iter": n_iter,
        "converged": converged,
        "objectives": np.asarray(finals),
        "alpha": float(alpha),
        "alpha_max": a_max,
        "collapsed": collapsed,
    }
    return U, V, info
