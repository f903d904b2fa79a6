"""Tree-structured sparse coding: FISTA with the exact tree prox.

:func:`tree_sparse_coding` (public) and its worker :func:`_sparse_code`,
which :class:`~neurospca.HierarchicalDictionaryLearning` calls in each
alternation; split from :mod:`neurospca.decomposition._dictionary` (the
dictionary update and the estimator) by job.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._utils.validation import check_data, check_int, check_nonneg
from ..trees import check_tree
from ._base import _renamed
from ._tree import _check_norm, _check_weights, _prox_tree

__all__ = ["tree_sparse_coding", "_sparse_code", "_check_mask"]


def _masked_lipschitz(C, mask):
    """Per-sample ``||C diag(m_i) C^T||_2`` for 0/1 masks (rows of ``mask``)."""
    n = mask.shape[0]
    L = np.empty(n)
    chunk = max(1, 4_000_000 // max(C.size, 1))
    for s in range(0, n, chunk):
        M = mask[s : s + chunk]
        Ct = C[None, :, :] * M[:, None, :]  # (b, p, m)
        L[s : s + chunk] = np.linalg.norm(Ct, ord=2, axis=(1, 2)) ** 2
    return L


def _sparse_code(X, C, tree, radii, norm, l1, nonneg, mask, A0, max_iter, tol):
    """FISTA on ``sum_i 1/2 ||m_i o (x_i - a_i C)||^2 + Omega(a_i)`` (unchecked).

    Rows are independent problems sharing the dictionary ``C`` (p, m); each
    has its own step ``1 / L_i``, momentum, adaptive restart and stopping
    test ``||a_k - a_{k-1}|| <= tol ||a_k||`` (a converged row is frozen), so
    the code of a row does not depend on the other rows. Returns codes (n, p),
    the number of iterations and whether every row converged.
    """
    n, p = X.shape[0], C.shape[0]
    if mask is None:
        L = np.full(n, np.linalg.norm(C @ C.T, 2))
        CX = X @ C.T
    else:
        L = _masked_lipschitz(C, mask)
        CX = (X * mask) @ C.T
    step = 1.0 / np.maximum(L, 1e-12)
    G = C @ C.T
    A = np.zeros((n, p)) if A0 is None else np.array(A0, dtype=np.float64)
    Y = A.copy()
    t = np.ones(n)
    active = np.arange(n)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007  `it` is returned: the iterations run
        Ya, sa = Y[active], step[active]
        if mask is None:
            grad = Ya @ G - CX[active]
        else:
            grad = ((Ya @ C) * mask[active]) @ C.T - CX[active]
        Z = Ya - sa[:, None] * grad
        if nonneg:
            Z = np.maximum(Z, 0.0)
        if l1 > 0:
            Z = np.sign(Z) * np.maximum(np.abs(Z) - (sa * l1)[:, None], 0.0)
        A_new = _prox_tree(Z, tree, radii, norm, row_scale=sa)
        diff = A_new - A[active]
        ta = t[active]
        # adaptive restart (O'Donoghue and Candes): momentum against progress
        ta = np.where(np.einsum("ij,ij->i", Ya - A_new, diff) > 0, 1.0, ta)
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * ta * ta))
        Y[active] = A_new + ((ta - 1.0) / t_new)[:, None] * diff
        A[active] = A_new
        t[active] = t_new
        dn = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        an = np.sqrt(np.einsum("ij,ij->i", A_new, A_new))
        done = dn <= tol * np.maximum(an, 1e-12)
        if np.any(done):
            active = active[~done]
            if active.size == 0:
                break
    return A, it, active.size == 0


def _check_mask(mask, shape):
    if mask is None:
        return None
    M = np.asarray(mask)
    if M.shape != shape:
        raise ValueError(f"mask must have the shape of X {shape}, got {M.shape}.")
    if M.dtype != bool:
        if not np.all(np.isin(M, (0, 1))):
            raise ValueError("mask must be boolean (True = observed entry).")
    return M.astype(np.float64)


def tree_sparse_coding(
    X,
    dictionary,
    tree,
    alpha=None,
    *,
    weights=None,
    norm="l2",
    l1=0.0,
    nonneg=False,
    mask=None,
    init=None,
    max_iter=500,
    tol=1e-4,
    lam=None,
):
    """Tree-structured sparse coding by FISTA with the exact tree prox.

    Each row ``x_i`` of ``X`` is coded independently:

    .. math::

        \\min_{a_i} \\tfrac12 \\|m_i \\circ (x_i - D^T a_i)\\|_2^2
        + \\alpha \\sum_j w_j \\|a_{i|g_j}\\| + l_1 \\|a_i\\|_1

    where ``D`` is ``dictionary`` (atoms as rows) and ``m_i`` the optional 0/1
    observation mask (inpainting: missing entries are ignored, Jenatton et al.
    2010, section 4). The step of sample ``i`` is ``1 / ||D diag(m_i) D^T||``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The signals, one per row.
    dictionary : array-like of shape (n_nodes, n_features)
        The atoms, one per row.
    tree : array-like of int or Tree
        Parent array over the ``n_nodes`` atoms.
    alpha : float
        Weight of the tree norm (>= 0); required.
    weights : float or array-like of shape (n_nodes,), optional
        Group weights ``w_j >= 0`` (default 1).
    norm : {"l2", "linf"}, default="l2"
        The norm of each group.
    l1 : float, default=0.0
        Extra ℓ1 weight on the codes.
    nonneg : bool, default=False
        Nonnegative codes.
    mask : array-like of bool, shape (n_samples, n_features), optional
        True where ``X`` is observed; missing entries are ignored (they may
        be NaN).
    init : array-like of shape (n_samples, n_nodes), optional
        Warm start.
    max_iter : int, default=500
        Maximum FISTA iterations.
    tol : float, default=1e-4
        Stop when ``||A_k - A_{k-1}||_F <= tol ||A_k||_F``.
    lam : float, optional
        Deprecated name of ``alpha`` (FutureWarning).

    Returns
    -------
    codes : ndarray of shape (n_samples, n_nodes)
        The codes, one row per signal.
    """
    alpha = _renamed(lam, alpha, "lam", "alpha", "tree_sparse_coding")
    if alpha is None:
        raise TypeError(
            "tree_sparse_coding() missing the argument alpha (the weight of the tree norm)."
        )
    if mask is not None:  # missing entries may hold anything, NaN included
        X = np.asarray(X, dtype=np.float64)
        X = np.where(_check_mask(mask, X.shape) > 0, X, 0.0)
    X = check_data(X, min_samples=1)
    D = np.asarray(dictionary, dtype=np.float64)
    if D.ndim != 2 or D.shape[1] != X.shape[1]:
        raise ValueError(f"dictionary must have shape (n_nodes, {X.shape[1]}), got {D.shape}.")
    if not np.all(np.isfinite(D)):
        raise ValueError("dictionary contains NaN or infinite values.")
    tree = check_tree(tree, n_nodes=D.shape[0])
    alpha = check_nonneg(alpha, "alpha")
    l1 = check_nonneg(l1, "l1")
    norm = _check_norm(norm)
    w = _check_weights(weights, tree.n_nodes)
    M = _check_mask(mask, X.shape)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_nonneg(tol, "tol", strict=True)
    if init is not None:
        init = np.asarray(init, dtype=np.float64)
        if init.shape != (X.shape[0], D.shape[0]):
            raise ValueError(
                f"init must have shape ({X.shape[0]}, {D.shape[0]}), got {init.shape}."
            )
    A, n_iter, conv = _sparse_code(
        X, D, tree, alpha * w, norm, l1, bool(nonneg), M, init, max_iter, tol
    )
    if not conv:
        warnings.warn(
            f"tree_sparse_coding did not converge in {max_iter} iterations "
            f"(tol={tol}); increase max_iter.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return A
