"""The group operator shared by volumes, meshes and group penalties.

A structured penalty of the SPCA-TV paper (equation 8) is

.. math::

    s(v) = \\sum_{g \\in \\mathcal{G}} \\| A_g v \\|_2 ,

where ``A`` is the vertical stack of the blocks ``A_g``.  :class:`GroupOperator`
stores ``A`` as one CSR matrix plus ``group_ptr``: group ``g`` is the rows
``group_ptr[g]:group_ptr[g + 1]``.  Total variation on a mask or a mesh, group
lasso and overlapping groups are all instances.  Operators are never densified.
"""

from collections import namedtuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh

from ._utils.validation import check_group_ptr, check_norm2, check_sparse_matrix, norm2_lower_bound

__all__ = ["DifferenceForm", "GroupOperator", "chain_operator", "stack_operators"]

DifferenceForm = namedtuple("DifferenceForm", ["heads", "tails", "scale"])
DifferenceForm.__doc__ = """Rows of an operator that are all ``scale * (v[tail] - v[head])``.

Parameters
----------
heads, tails : ndarray of int32, shape (n_rows,)
    Column of the ``-scale`` and of the ``+scale`` entry of each row (read-only).
scale : float
    The common weight ``> 0`` of every row.
"""


class GroupOperator:
    """Sparse linear operator ``A`` with rows grouped into blocks ``A_g``.

    Parameters
    ----------
    matrix : scipy.sparse matrix of shape (n_rows, n_features)
        The stacked operator ``A``; validated (index dtypes and ranges,
        monotone ``indptr``, finite real data) and converted to canonical CSR
        (float64 data, int32 sorted indices, duplicates summed).
    group_ptr : array-like of int, shape (n_groups + 1,)
        Group ``g`` holds rows ``group_ptr[g]:group_ptr[g + 1]``. Must start at 0,
        be non-decreasing and end at ``n_rows``. A group may be empty.
    norm2 : float, optional
        An upper bound of the squared spectral norm ``||A||_2^2``. Builders pass
        a closed-form bound where one is tight (grids, meshes). If None, it is
        computed on first use by Lanczos and cached. A value below the largest
        squared row or column norm (a lower bound of ``||A||^2``, so 0 for any
        non-zero matrix) is rejected: an under-estimate breaks the certified
        gaps.
    norm2_is_exact : bool, default=False
        Whether ``norm2`` is the exact value rather than an upper bound
        (informational).

    Raises
    ------
    TypeError
        ``matrix`` not sparse, complex, or with non-integer indices;
        ``group_ptr`` not integer; ``norm2`` not a real number.
    ValueError
        Malformed CSR arrays, indices out of range, NaN/inf entries,
        ``group_ptr`` inconsistent with the rows, or ``norm2`` not finite or
        below the lower bound.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix
    group_ptr : ndarray of int64
    n_groups : int
    n_features : int
    """

    def __init__(self, matrix, group_ptr, norm2=None, norm2_is_exact=False):
        matrix = check_sparse_matrix(matrix, "matrix")
        group_ptr = check_group_ptr(group_ptr, matrix.shape[0], "group_ptr")
        if norm2 is not None:
            norm2 = check_norm2(norm2, matrix, "norm2")
        # validated once: read-only from here on, so that the arrays the nogil
        # kernels index cannot be corrupted after validation
        for arr in (matrix.data, matrix.indices, matrix.indptr, group_ptr):
            arr.flags.writeable = False
        self._matrix = matrix
        self._group_ptr = group_ptr
        self._norm2 = norm2
        self.norm2_is_exact = bool(norm2_is_exact)
        self._matrix_t = None
        self._row_group = None
        self._difference_form = None

    def __repr__(self):
        return (
            f"GroupOperator(n_rows={self.n_rows}, n_features={self.n_features}, "
            f"n_groups={self.n_groups}, nnz={self.matrix.nnz})"
        )

    @property
    def matrix(self):
        """The validated CSR matrix ``A`` (read-only arrays)."""
        return self._matrix

    @property
    def group_ptr(self):
        """The validated group pointers (int64, read-only)."""
        return self._group_ptr

    @property
    def n_features(self):
        """Number of columns ``P`` (voxels, vertices, features)."""
        return self.matrix.shape[1]

    @property
    def n_rows(self):
        """Number of rows of the stacked operator."""
        return self.matrix.shape[0]

    @property
    def n_groups(self):
        """Number of groups ``|G|``."""
        return self.group_ptr.size - 1

    @property
    def shape(self):
        """``(n_rows, n_features)`` of ``A``."""
        return self.matrix.shape

    @property
    def matrix_t(self):
        """``A^T`` as a CSR matrix (cached), for fast ``A^T w`` products."""
        if self._matrix_t is None:
            mt = self.matrix.T.tocsr()
            mt.sort_indices()
            for arr in (mt.data, mt.indices, mt.indptr):
                arr.flags.writeable = False
            self._matrix_t = mt
        return self._matrix_t

    def difference_form(self):
        """Rows as differences of two features, or None (detected once, cached).

        Grid TV (:func:`neurospca.tv_from_mask`), edge TV on meshes and
        :func:`chain_operator` have rows ``v[tail] - v[head]`` (one ``-1`` and
        one ``+1``); scaled copies (:meth:`scaled`) have ``scale * (...)``.
        Such operators get a dual kernel that needs neither ``A`` nor ``A^T``
        as a matrix. Any other operator (area-weighted gradients, group lasso,
        stacks with different weights) returns None and uses the CSR kernels.

        Returns
        -------
        DifferenceForm or None
        """
        cached = getattr(self, "_difference_form", None)
        if cached is None:
            cached = _detect_difference_form(self.matrix) or False
            self._difference_form = cached
        return cached or None

    @property
    def row_group(self):
        """Group index of each row, shape (n_rows,) (cached)."""
        if self._row_group is None:
            self._row_group = np.repeat(
                np.arange(self.n_groups, dtype=np.int64), np.diff(self.group_ptr)
            )
        return self._row_group

    @property
    def norm2(self):
        """Upper bound of ``||A||_2^2`` (closed form or Lanczos, cached)."""
        if self._norm2 is None:
            self._norm2 = max(lanczos_norm2(self.matrix), norm2_lower_bound(self.matrix))
        return self._norm2

    def group_norms(self, z):
        """Euclidean norm of each group of a row vector ``z = A v``.

        Parameters
        ----------
        z : ndarray of shape (n_rows,)

        Returns
        -------
        ndarray of shape (n_groups,)
        """
        sq = np.bincount(self.row_group, weights=z * z, minlength=self.n_groups)
        return np.sqrt(sq)

    def value(self, v):
        """The group penalty ``s(v) = sum_g ||A_g v||_2``.

        Parameters
        ----------
        v : ndarray of shape (n_features,)

        Returns
        -------
        float
        """
        v = np.asarray(v, dtype=np.float64)
        if v.shape != (self.n_features,):
            raise ValueError(f"v must have shape ({self.n_features},), got {v.shape}.")
        return float(self.group_norms(self.matrix @ v).sum())

    def matvec(self, v):
        """``A v``.

        Parameters
        ----------
        v : ndarray of shape (n_features,) or (n_features, k)

        Returns
        -------
        ndarray of shape (n_rows,) or (n_rows, k)
        """
        return self.matrix @ v

    def rmatvec(self, w):
        """``A^T w``.

        Parameters
        ----------
        w : ndarray of shape (n_rows,) or (n_rows, k)

        Returns
        -------
        ndarray of shape (n_features,) or (n_features, k)
        """
        return self.matrix_t @ w

    def scaled(self, weight):
        """Return the operator of ``weight * s(v)`` (rows multiplied by ``weight``).

        Parameters
        ----------
        weight : float
            A finite number ``>= 0``.

        Returns
        -------
        GroupOperator
            Same groups; ``norm2`` (if known) multiplied by ``weight ** 2``.

        Raises
        ------
        ValueError
            If ``weight`` is negative or not finite.
        """
        weight = float(weight)
        if not np.isfinite(weight) or weight < 0:
            raise ValueError(f"weight must be a finite number >= 0, got {weight!r}.")
        norm2 = None if self._norm2 is None else self._norm2 * weight**2
        return GroupOperator(self.matrix * weight, self.group_ptr, norm2, self.norm2_is_exact)


def _detect_difference_form(matrix):
    """A :class:`DifferenceForm` of a canonical CSR matrix, or None."""
    n_rows = matrix.shape[0]
    if n_rows == 0 or matrix.nnz != 2 * n_rows:
        return None
    if not np.all(np.diff(matrix.indptr) == 2):
        return None
    data = matrix.data.reshape(n_rows, 2)
    scale = float(abs(data[0, 0]))
    if not (scale > 0.0 and np.isfinite(scale)):
        return None
    if not (np.all(np.abs(data) == scale) and np.all(data[:, 0] == -data[:, 1])):
        return None
    cols = matrix.indices.reshape(n_rows, 2)
    first_is_head = data[:, 0] < 0
    heads = np.where(first_is_head, cols[:, 0], cols[:, 1]).astype(np.int32)
    tails = np.where(first_is_head, cols[:, 1], cols[:, 0]).astype(np.int32)
    if np.any(heads == tails):
        return None
    heads.flags.writeable = False
    tails.flags.writeable = False
    return DifferenceForm(heads, tails, scale)


def lanczos_norm2(matrix, tol=1e-6, safety=1e-3):
    """Squared spectral norm of a sparse matrix, computed once by Lanczos.

    The top eigenvalue of ``A^T A`` (or ``A A^T``, whichever is smaller) is
    computed with a fixed start vector, so the result is reproducible, then
    inflated by ``safety`` so that it can serve as a Lipschitz bound.

    Parameters
    ----------
    matrix : scipy.sparse matrix
    tol : float
        Relative tolerance passed to ``eigsh``.
    safety : float
        Relative inflation of the result.

    Returns
    -------
    float
    """
    matrix = sp.csr_matrix(matrix)
    n_rows, n_cols = matrix.shape
    if matrix.nnz == 0:
        return 0.0
    small = min(n_rows, n_cols)
    if small <= 200:
        dense = matrix.toarray()
        return float(np.linalg.norm(dense, 2) ** 2) * (1.0 + 1e-12)
    mt = matrix.T.tocsr()
    if n_cols <= n_rows:
        gram = sp.linalg.LinearOperator(
            (n_cols, n_cols), matvec=lambda x: mt @ (matrix @ x), dtype=np.float64
        )
        n = n_cols
    else:
        gram = sp.linalg.LinearOperator(
            (n_rows, n_rows), matvec=lambda x: matrix @ (mt @ x), dtype=np.float64
        )
        n = n_rows
    v0 = np.random.default_rng(0).standard_normal(n)
    val = eigsh(gram, k=1, which="LA", v0=v0, tol=tol, return_eigenvectors=False)[0]
    return float(val) * (1.0 + safety)


def chain_operator(n_features):
    """First differences on a 1-D chain of features: ``(A v)_g = v[g+1] - v[g]``.

    This is the default structure of :class:`neurospca.SPCATV` on plain arrays.
    Group ``g`` holds the single row of feature ``g`` (the last group is empty).

    Parameters
    ----------
    n_features : int

    Returns
    -------
    GroupOperator
    """
    n = int(n_features)
    if n < 1:
        raise ValueError(f"n_features must be >= 1, got {n_features}.")
    rows = np.arange(n - 1)
    data = np.concatenate([-np.ones(n - 1), np.ones(n - 1)])
    mat = sp.csr_matrix(
        (data, (np.concatenate([rows, rows]), np.concatenate([rows, rows + 1]))), shape=(n - 1, n)
    )
    group_ptr = np.concatenate([np.arange(n), [n - 1]])
    # A^T A is the path-graph Laplacian, whose eigenvalues are < 4.
    return GroupOperator(mat, group_ptr, norm2=4.0)


def stack_operators(operators, weights=None):
    """Stack operators on the same features: ``sum_i w_i s_i(v)`` as one operator.

    Parameters
    ----------
    operators : sequence of GroupOperator
        All with the same ``n_features``.
    weights : sequence of float, optional
        Non-negative weight of each penalty (default 1).

    Returns
    -------
    GroupOperator
        Groups of the first operator come first; ``norm2`` is the sum of the
        (weighted) bounds, an upper bound of the stacked norm.
    """
    operators = list(operators)
    if not operators:
        raise ValueError("operators must hold at least one GroupOperator.")
    if weights is None:
        weights = [1.0] * len(operators)
    if len(weights) != len(operators):
        raise ValueError(f"weights has {len(weights)} entries for {len(operators)} operators.")
    n_features = operators[0].n_features
    parts, ptrs, offset, norm2 = [], [], 0, 0.0
    for op, w in zip(operators, weights, strict=True):
        if not isinstance(op, GroupOperator):
            raise TypeError(f"operators must be GroupOperator, got {type(op).__name__}.")
        if op.n_features != n_features:
            raise ValueError(f"operators disagree on n_features: {op.n_features} != {n_features}.")
        op = op.scaled(w)
        parts.append(op.matrix)
        ptrs.append(op.group_ptr[:-1] + offset)
        offset += op.n_rows
        norm2 += op.norm2
    group_ptr = np.concatenate(ptrs + [[offset]])
    return GroupOperator(sp.vstack(parts, format="csr"), group_ptr, norm2=norm2)


def check_operator(operator, n_features, name="operator"):
    """A GroupOperator whose columns match the data's features."""
    if not isinstance(operator, GroupOperator):
        raise TypeError(
            f"{name} must be a neurospca GroupOperator (e.g. from tv_from_mask or "
            f"tv_from_mesh), got {type(operator).__name__}."
        )
    if operator.n_features != n_features:
        raise ValueError(
            f"{name} acts on {operator.n_features} features but the data has "
            f"{n_features} columns; build the operator from the same mask or mesh."
        )
    return operator
