"""Overlapping groups of features: grid half-spaces and the group-lasso operator.

Structured sparse PCA (Jenatton, Obozinski and Bach 2010) penalises the
loadings with

.. math::

    \\Omega(v) = \\sum_{G \\in \\mathcal{G}} \\|d^G \\circ v\\|_2 ,

which zeroes whole groups, so a support is the complement of a union of
groups. With all half-spaces of a grid as groups the supports are
rectangles (axis-aligned half-spaces) or convex polygons (half-spaces at
multiples of pi/4). A group set is a list of integer index arrays into the
features (columns of ``X``); :func:`group_lasso_operator` turns it into a
:class:`~neurospca.operators.GroupOperator` so the same penalty can be stacked
with total variation and solved by the SPCA-TV solvers.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from ._utils.validation import check_int
from .operators import GroupOperator

__all__ = ["grid_halfspace_groups", "group_lasso_operator", "check_groups"]

_DIRECTIONS = {
    2: {"axes": [(1, 0), (0, 1)], "diagonals": [(1, 1), (1, -1)]},
    3: {
        "axes": [(1, 0, 0), (0, 1, 0), (0, 0, 1)],
        "diagonals": [(1, 1, 0), (1, -1, 0), (1, 0, 1), (1, 0, -1), (0, 1, 1), (0, 1, -1)],
    },
}


def grid_halfspace_groups(shape=None, mask=None, *, diagonals=True):
    """All half-spaces of a 2-D or 3-D grid, intersected with a mask.

    For each direction ``o`` (the axes, and with ``diagonals`` the directions
    at 45 degrees, i.e. angles that are multiples of pi/4) and each threshold
    ``t`` taken by ``<o, x>`` on the grid, the groups ``{x : <o, x> <= t}`` and
    ``{x : <o, x> >= t}`` restricted to the mask, keeping the non-empty proper
    subsets (duplicates removed). Zeroing a union of such groups leaves a
    rectangle (axes only) or a convex polygon (with diagonals) as support.
    There are ``O(sum of the grid sides)`` groups.

    Parameters
    ----------
    shape : tuple of int, optional
        Grid shape ``(h, w)`` or ``(h, w, d)``; features are the grid points in
        C order. Not needed if ``mask`` is given.
    mask : array-like of bool, optional
        Features are the True points of the mask, in C order (as
        :func:`neurospca.tv_from_mask` and ``X[:, mask.ravel()]``).
    diagonals : bool, default=True
        Add the half-spaces at 45 degrees to the axis-aligned ones.

    Returns
    -------
    list of ndarray of int64
        Sorted feature indices of each group.
    """
    if mask is None:
        if shape is None:
            raise ValueError("give shape or mask.")
        shape = tuple(check_int(s, f"shape[{i}]", minimum=1) for i, s in enumerate(shape))
        mask = np.ones(shape, dtype=bool)
    else:
        mask = np.asarray(mask)
        if mask.dtype != bool:
            raise TypeError(f"mask must be a boolean array, got dtype {mask.dtype}.")
        if shape is not None and tuple(shape) != mask.shape:
            raise ValueError(f"shape {tuple(shape)} differs from the mask shape {mask.shape}.")
        if not mask.any():
            raise ValueError("mask is empty (no True entry).")
    if mask.ndim not in (2, 3):
        raise ValueError(f"grid groups need a 2-D or 3-D grid, got {mask.ndim}-D.")
    coords = np.argwhere(mask)  # C order matches mask.ravel()[mask.ravel()]
    dirs = list(_DIRECTIONS[mask.ndim]["axes"])
    if diagonals:
        dirs += _DIRECTIONS[mask.ndim]["diagonals"]
    groups, seen = [], set()
    n = coords.shape[0]
    for o in dirs:
        s = coords @ np.asarray(o)
        order = np.argsort(s, kind="stable")
        ss = s[order]
        cuts = np.flatnonzero(np.diff(ss)) + 1  # positions where s increases
        for c in cuts:
            for idx in (order[:c], order[c:]):
                g = np.sort(idx).astype(np.int64)
                key = g.tobytes()
                if 0 < g.size < n and key not in seen:
                    seen.add(key)
                    groups.append(g)
    return groups


def _check_group_indices(groups, n_features, name):
    """Each group as a non-empty int64 array of distinct indices in range."""
    if isinstance(groups, np.ndarray) and groups.ndim == 2:
        groups = list(groups)
    if isinstance(groups, (str, bytes)) or not hasattr(groups, "__len__"):
        raise TypeError(f"{name} must be a sequence of integer index arrays.")
    if len(groups) == 0:
        raise ValueError(f"{name} is empty; give at least one group.")
    out = []
    for i, g in enumerate(groups):
        arr = np.asarray(g)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"{name}[{i}] must be a non-empty 1-D array of feature indices.")
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"{name}[{i}] must hold ints, got dtype {arr.dtype}.")
        if arr.min() < 0 or arr.max() >= n_features:
            raise ValueError(
                f"{name}[{i}] has indices outside [0, {n_features - 1}] (the data has "
                f"{n_features} features)."
            )
        if np.unique(arr).size != arr.size:
            raise ValueError(f"{name}[{i}] has repeated feature indices.")
        out.append(arr.astype(np.int64))
    return out


def _check_cover(groups, n_features, name):
    """Every feature in at least one group."""
    covered = np.zeros(n_features, dtype=bool)
    for g in groups:
        covered[g] = True
    if not covered.all():
        raise ValueError(
            f"{name} must cover every feature; feature {np.flatnonzero(~covered)[0]} "
            f"(and {int((~covered).sum()) - 1} more) is in no group."
        )


def _group_weight_vectors(groups, weights, weights_name):
    """``d^G`` on each group from one weight per group or one array (or scalar)
    per group."""
    if isinstance(weights, numbers.Real) or (isinstance(weights, np.ndarray) and weights.ndim == 0):
        raise TypeError(f"{weights_name} must be one weight per group or one array per group.")
    if all(np.ndim(w) == 0 for w in weights) and len(weights) == len(groups):
        return [np.full(g.size, float(w)) for g, w in zip(groups, weights, strict=True)]
    if len(weights) != len(groups):
        raise ValueError(f"{weights_name} has {len(weights)} entries for {len(groups)} groups.")
    wts = []
    for i, (g, w) in enumerate(zip(groups, weights, strict=True)):
        w = np.asarray(w, dtype=np.float64)
        if w.ndim == 0:
            w = np.full(g.size, float(w))
        if w.shape != g.shape:
            raise ValueError(f"{weights_name}[{i}] must be a scalar or have shape {g.shape}.")
        wts.append(w)
    return wts


def check_groups(
    groups,
    n_features,
    weights=None,
    name="groups",
    weights_name="group_weights",
    require_cover=True,
):
    """Validate a group set and its weights.

    Parameters
    ----------
    groups : sequence of array-like of int
        Feature indices of each group.
    n_features : int
    weights : None, array-like of shape (n_groups,), or sequence of arrays
        One positive weight per group, or the vector ``d^G`` (one positive
        entry per feature of the group) for each group. Default 1.
    name : str, default="groups"
        The groups' argument name, used in error messages.
    weights_name : str, default="group_weights"
        The weights' argument name, used in error messages.
    require_cover : bool, default=True
        Require every feature to belong to at least one group.

    Returns
    -------
    groups : list of ndarray of int64
    weights : list of ndarray of float64
        ``d^G`` restricted to each group.
    """
    out = _check_group_indices(groups, n_features, name)
    if require_cover:
        _check_cover(out, n_features, name)
    if weights is None:
        return out, [np.ones(g.size) for g in out]
    wts = _group_weight_vectors(out, weights, weights_name)
    for i, w in enumerate(wts):
        if not np.all(np.isfinite(w)):
            raise ValueError(f"{weights_name}[{i}] contains NaN or infinite values.")
        if np.any(w <= 0):
            raise ValueError(
                f"{weights_name} must be > 0; {weights_name}[{i}] has minimum {w.min()}."
            )
    return out, wts


def group_lasso_operator(groups, n_features, weights=None):
    """The (overlapping) group-lasso norm as a :class:`GroupOperator`.

    .. math::

        \\Omega(v) = \\sum_G \\|A_G v\\|_2, \\qquad
        A_G = \\mathrm{Diag}(d^G) \\text{ restricted to the rows in } G.

    ``A^T A = Diag(sum_{G ∋ j} (d^G_j)^2)`` is diagonal, so ``||A||_2^2`` is
    its largest entry, exactly (no Lanczos). Stack it with total variation
    (:func:`neurospca.stack_operators`) and pass it to
    :func:`neurospca.solvers.prox_dual` or :func:`neurospca.solvers.conesta`.

    Parameters
    ----------
    groups : sequence of array-like of int
        E.g. from :func:`grid_halfspace_groups`.
    n_features : int
    weights : None, array-like of shape (n_groups,) or sequence of arrays
        See :func:`check_groups`.

    Returns
    -------
    GroupOperator
    """
    n_features = check_int(n_features, "n_features", minimum=1)
    groups, wts = check_groups(groups, n_features, weights, require_cover=False)
    cols = np.concatenate(groups)
    data = np.concatenate(wts)
    sizes = np.array([g.size for g in groups])
    rows = np.arange(cols.size)
    mat = sp.csr_matrix((data, (rows, cols)), shape=(cols.size, int(n_features)))
    diag = np.bincount(cols, weights=data**2, minlength=int(n_features))
    group_ptr = np.concatenate([[0], np.cumsum(sizes)])
    return GroupOperator(mat, group_ptr, norm2=float(diag.max()), norm2_is_exact=True)
