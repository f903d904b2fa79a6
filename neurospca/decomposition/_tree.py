"""Tree-structured sparsity: the exact proximal operator and the norm.

Jenatton, Mairal, Obozinski and Bach, *Proximal methods for sparse
hierarchical dictionary learning* (ICML 2010). The ``p`` dictionary elements
are the nodes of a rooted tree (or forest) given by a parent array; the group
``g_j`` of node ``j`` holds ``j`` and all its descendants, and

.. math::

    \\Omega(\\alpha) = \\sum_{j=1}^p w_j \\|\\alpha_{|g_j}\\| ,
    \\qquad \\|\\cdot\\| \\in \\{\\ell_2, \\ell_\\infty\\}.

A zero group is a whole subtree, so a selected node has all its ancestors
selected. The proximal operator of ``alpha * Omega`` is computed exactly in one
pass of group soft-thresholdings visited from the leaves to the root
(Proposition 1 of the paper); visiting the root first is *not* exact.
The dictionary learning built on it (FISTA coding, dictionary update,
:class:`~neurospca.HierarchicalDictionaryLearning`) is in ``_dictionary``.
"""

import numpy as np

from .._kernels import load as _load_kernel  # compiled twin of _prox_tree_core, or None
from .._utils.validation import check_finite_array, check_nonneg, check_real
from ..trees import check_tree
from ._base import _renamed
from ._projections import _project_l1_ball

__all__ = ["prox_tree", "tree_norm"]

_NORMS = ("l2", "linf")


def _check_weights(weights, n_nodes, name="weights"):
    if weights is None:
        return np.ones(n_nodes)
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 0:
        w = np.full(n_nodes, float(w))
    if w.shape != (n_nodes,):
        raise ValueError(f"{name} must be a scalar or have shape ({n_nodes},), got {w.shape}.")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    if np.any(w < 0):
        raise ValueError(f"{name} must be >= 0, got a minimum of {w.min()}.")
    return w


def _check_norm(norm):
    if norm not in _NORMS:
        raise ValueError(f"norm must be one of {_NORMS}, got {norm!r}.")
    return norm


def _prox_tree_fast(Z, tree, radii, norm, root_first=False, row_scale=None):
    """The Cython kernel: same result as :func:`_prox_tree_core`."""
    order = tree.order
    Zp = np.ascontiguousarray(Z[:, order], dtype=np.float64)
    scale = (
        np.ones(Zp.shape[0])
        if row_scale is None
        else np.ascontiguousarray(row_scale, dtype=np.float64)
    )
    _load_kernel("tree").prox_tree_rows(
        Zp,
        tree.end,
        np.ascontiguousarray(radii[order]),
        scale,
        int(norm == "linf"),
        int(root_first),
    )
    out = np.empty_like(Zp)
    out[:, order] = Zp
    return out


def _prox_tree(Z, tree, radii, norm, row_scale=None):
    """Fastest exact path: Cython kernel for ℓ∞, level recursion for ℓ2."""
    if norm == "l2":
        return _prox_l2_levels(Z, tree, radii, row_scale)
    if _load_kernel("tree") is not None:
        return _prox_tree_fast(Z, tree, radii, norm, row_scale=row_scale)
    return _prox_tree_core(Z, tree, radii, norm, row_scale=row_scale)


def _prox_tree_core(Z, tree, radii, norm, root_first=False, return_dual=False, row_scale=None):
    """Leaves-to-root (or, wrongly, root-first) group shrinkages.

    ``Z`` is (n, p) in the node order of the tree; ``radii[j] = alpha * w_j``,
    multiplied by ``row_scale[i]`` for row ``i`` if given (FISTA steps). With
    ``return_dual`` also returns the dual variables ``xi_g`` of Algorithm 1 as
    a dict ``node -> (xi (n, |g|), node indices of g)``.
    """
    order, end = tree.order, tree.end
    Zp = Z[:, order]
    positions = range(order.size) if root_first else range(order.size - 1, -1, -1)
    duals = {}
    for i in positions:
        r = radii[order[i]]
        if r <= 0.0:
            continue
        if row_scale is not None:
            r = r * row_scale
        block = Zp[:, i : end[i]]
        if norm == "l2":
            nrm = np.sqrt(np.einsum("ij,ij->i", block, block))
            scale = np.where(nrm > r, 1.0 - r / np.where(nrm > 0, nrm, 1.0), 0.0)
            xi = block * (1.0 - scale)[:, None]
            block *= scale[:, None]
        else:
            xi = _project_l1_ball(block, r)
            block -= xi
        if return_dual:
            duals[order[i]] = (xi.copy(), order[i : end[i]].copy())
    out = np.empty_like(Zp)
    out[:, order] = Zp
    if return_dual:
        return out, duals
    return out


def _prox_l2_levels(Z, tree, radii, row_scale=None):
    """The ℓ2 tree prox by the level recursion (one array operation per depth).

    Post-order by depth (deepest level first; the groups of a level are
    disjoint): ``sq_j = u_j^2 + sum_{c child of j} N_c``,
    ``s_j = max(0, 1 - r_j / sqrt(sq_j))``, ``N_j = s_j^2 sq_j``; then top-down
    ``C_j = s_j C_parent(j)`` and ``v_j = C_j u_j``. Same result as the
    group-by-group pass of :func:`_prox_tree_core` (its NumPy twin), with one
    array operation per level instead of one per node.
    """
    ZT = np.ascontiguousarray(Z.T)  # (p, n): rows are nodes
    sq = ZT * ZT
    scale = np.ones_like(ZT)
    parent = tree.parent
    for d in range(len(tree.levels) - 1, -1, -1):
        L = tree.levels[d]
        r = radii[L][:, None]
        if row_scale is not None:
            r = r * row_scale[None, :]
        sqL = sq[L]
        nrm = np.sqrt(sqL)
        sL = np.where(nrm > r, 1.0 - r / np.where(nrm > 0, nrm, 1.0), 0.0)
        sL = np.where(r > 0, sL, 1.0)
        scale[L] = sL
        if d > 0:
            np.add.at(sq, parent[L], sL * sL * sqL)
    for d in range(1, len(tree.levels)):
        L = tree.levels[d]
        scale[L] *= scale[parent[L]]
    return (ZT * scale).T


def prox_tree(v, tree, alpha=1.0, *, weights=None, norm="l2", l1=0.0, nonneg=False, lam=None):
    """Exact proximal operator of the tree-structured norm (plus ℓ1).

    .. math::

        \\mathrm{prox}(u) = \\arg\\min_v \\tfrac12 \\|v - u\\|_2^2
        + \\alpha \\sum_{j} w_j \\|v_{|g_j}\\| + l_1 \\|v\\|_1
        \\;[+\\, \\iota_{v \\ge 0}]

    where ``g_j`` is node ``j`` and its descendants and ``||.||`` is ℓ2 or ℓ∞.
    One pass of group shrinkages from the leaves to the root is exact
    (Jenatton et al. 2010, Proposition 1); ℓ1 adds singleton groups, which are
    processed first (soft-thresholding). With ``nonneg`` the prox is taken at
    ``max(u, 0)``.

    Parameters
    ----------
    v : array-like of shape (n_nodes,) or (n_samples, n_nodes)
        Point(s) ``u``; each row is a separate problem.
    tree : array-like of int or Tree
        Parent array (``-1`` for roots); see :func:`check_tree`.
    alpha : float, default=1.0
        Weight of the tree norm (>= 0).
    weights : float or array-like of shape (n_nodes,), optional
        Group weights ``w_j >= 0`` (default 1).
    norm : {"l2", "linf"}, default="l2"
        The norm of each group.
    l1 : float, default=0.0
        Weight of the ℓ1 norm (>= 0).
    nonneg : bool, default=False
        Add the constraint ``v >= 0``.
    lam : float, optional
        Deprecated name of ``alpha`` (FutureWarning).

    Returns
    -------
    ndarray of the shape of ``v``

    Examples
    --------
    >>> import numpy as np
    >>> from neurospca import prox_tree
    >>> prox_tree(np.array([3.0, 0.5, 2.0]), [-1, 0, 0], alpha=0.5)
    array([2.5527..., 0.        , 1.2763...])
    """
    alpha = _renamed(lam, alpha, "lam", "alpha", "prox_tree")
    tree = check_tree(tree)
    check_real(v, "v")
    V = np.array(v, dtype=np.float64)
    if V.ndim not in (1, 2) or V.shape[-1] != tree.n_nodes:
        raise ValueError(
            f"v must have shape ({tree.n_nodes},) or (n_samples, {tree.n_nodes}) to match "
            f"the tree, got {V.shape}."
        )
    if not np.all(np.isfinite(V)):
        raise ValueError("v contains NaN or infinite values.")
    alpha = check_nonneg(alpha, "alpha")
    l1 = check_nonneg(l1, "l1")
    norm = _check_norm(norm)
    w = _check_weights(weights, tree.n_nodes)
    out = _prox(np.atleast_2d(V), tree, alpha * w, norm, l1, bool(nonneg))
    return out[0] if V.ndim == 1 else out


def _prox(Z, tree, radii, norm, l1, nonneg):
    """Unchecked prox on (n, p) rows."""
    if nonneg:
        Z = np.maximum(Z, 0.0)
    if l1 > 0:
        Z = np.sign(Z) * np.maximum(np.abs(Z) - l1, 0.0)
    return _prox_tree(Z, tree, radii, norm)


def tree_norm(v, tree, *, weights=None, norm="l2"):
    """Value of ``sum_j w_j ||v_{g_j}||`` for each row of ``v``.

    Parameters
    ----------
    v : array-like of shape (n_nodes,) or (n_samples, n_nodes)
        The vector(s).
    tree : array-like of int or Tree
        Parent array (``-1`` for roots) or a :class:`~neurospca.trees.Tree`.
    weights : float or array-like of shape (n_nodes,), optional
        Group weights ``w_j >= 0`` (default 1).
    norm : {"l2", "linf"}, default="l2"
        The norm of each group.

    Returns
    -------
    float or ndarray of shape (n_samples,)
    """
    tree = check_tree(tree)
    V = check_finite_array(v, "v")
    if V.ndim not in (1, 2) or V.shape[-1] != tree.n_nodes:
        raise ValueError(
            f"v must have shape ({tree.n_nodes},) or (n_samples, {tree.n_nodes}) to match "
            f"the tree, got {V.shape}."
        )
    w = _check_weights(weights, tree.n_nodes)
    norm = _check_norm(norm)
    val = _tree_norm(np.atleast_2d(V), tree, w, norm)
    return float(val[0]) if V.ndim == 1 else val


def _tree_norm(Z, tree, w, norm):
    Zp = np.abs(Z[:, tree.order])
    total = np.zeros(Z.shape[0])
    for i, node in enumerate(tree.order):
        if w[node] == 0:
            continue
        block = Zp[:, i : tree.end[i]]
        if norm == "l2":
            total += w[node] * np.sqrt(np.einsum("ij,ij->i", block, block))
        else:
            total += w[node] * block.max(axis=1)
    return total
