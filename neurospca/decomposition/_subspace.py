"""The data's top right singular subspace by a block Krylov method, in few passes.

The starts of the alternation (:mod:`~neurospca.decomposition._alternation`)
and ``pca_explained_variance_ratio_`` need the top singular subspace of the
centred data ``Xc``. Each pass over ``X`` applies the Gram matrix
``A = Xc^T Xc`` to a block of directions (``Xc W`` and ``Xc^T (Xc W)`` from
one read of every row block, :meth:`DataOperator.gram`), and the first block
rides on the data's scan (:meth:`DataOperator.scan` with ``sketch``). The
Rayleigh-Ritz projection of ``A`` on the whole Krylov space
``span(W, A W, ..., A^q W)`` then uses every product computed (a randomized
SVD keeps only the last block and spends two passes per power iteration).

Returned with the subspace are its images ``Xc R`` and ``A R`` (exact up to
the products' rounding), so the start of any deflated component in its span
costs no pass over the data.
"""

import numpy as np
from scipy.linalg import solve_triangular

__all__ = [
    "SKETCH_WIDTH",
    "KRYLOV_PASSES",
    "krylov_subspace",
    "cached_subspace",
    "orthonormal",
    "is_tall",
]

#: Columns of the first Krylov block (the scan's sketch); ``k +``
#: :data:`SKETCH_OVERSAMPLE` when wider. Each of the start's three passes
#: (the scan's sketch and two Gram passes) costs ``4 N P`` flops per column:
#: compute-bound, 6-12x a plain pass at 16 columns. 8 columns (16 before issue
#: 22 round 12), with the blocks kept side by side, cut a 3-component fit's CPU
#: by 16-18 % out of core (2,000 x 327,684 float32) and 11-29 % in memory
#: (10,000 x 10,242) with the same passes (the starts of later components are
#: refined by Davidson steps, :func:`._start._init_svd`); the components moved
#: by 1.4e-8 there, 1.6e-7 on the tests' instance.
SKETCH_WIDTH = 8
#: Gram passes over the data after the scan.
KRYLOV_PASSES = 2
#: Every Ritz pair of the Krylov space is kept (else the best block's worth).
KEEP_SPAN = False
#: Columns of the first Krylov block beyond ``k`` (10 before issue 22 round 12).
SKETCH_OVERSAMPLE = 5


def _centred_sketch(op, width, random_state):
    """``(W, Xc W, Xc^T Xc W)`` of a seeded Gaussian ``W``: from the scan's raw
    sketch when it has ``width`` columns (centred here: no pass), else by one
    Gram pass."""
    sk = op.sketch
    if sk is None or sk["W"].shape[1] != width:
        W = np.random.RandomState(random_state).standard_normal((op.shape[1], width))
        return (W,) + op.gram(W)
    W, XW, G = sk["W"], sk["XW"], sk["XtXW"]
    m = op.mean if op._resid is not None else None
    if m is None:
        return W, XW.copy(), G.copy()
    # Xc = X - 1 m^T with the data's column means xbar (X^T 1 = N xbar):
    # Xc^T Xc W = X^T X W - N xbar (m.W) - m (1^T X W) + N m (m.W)
    n, xbar, mW = op.shape[0], op.stats["mean"], m @ W
    XcW = XW - mW
    AW = G - np.column_stack([xbar - m, m]) @ np.vstack([n * mW, XW.sum(axis=0)])
    return W, XcW, AW


def right_solve(M, T):
    """``M T^-1`` for an upper-triangular ``T``: the small inverse by a
    triangular solve, then one matrix product (BLAS-3; ``np.linalg.solve``
    with P right-hand sides took seconds at P = 327,684, and a triangular
    solve with them 2.5x the product)."""
    return M @ solve_triangular(T, np.eye(T.shape[0]), lower=False)


#: Blocks with at least this many rows per column are "tall": orthonormalised
#: by CholeskyQR2 (:func:`orthonormal`), smaller ones by Householder QR (the
#: results of small problems, e.g. every test instance, are those of QR).
TALL_ROWS_PER_COLUMN = 128


def is_tall(n_rows, n_cols):
    """True when :func:`orthonormal` uses CholeskyQR2 for a block of this shape."""
    return n_rows >= TALL_ROWS_PER_COLUMN * max(1, n_cols)


def orthonormal(B):
    """``(Q, T)`` with ``B = Q T``, ``Q`` orthonormal and ``T`` upper
    triangular, for a tall block ``B`` of full column rank.

    CholeskyQR2: twice the Gram matrix, its Cholesky factor and a triangular
    solve, all BLAS-3 (10-30x faster than LAPACK's Householder QR for P x
    16-64 blocks on the build's OpenBLAS, which took 4-10 s at P = 327,684);
    Householder QR for blocks that are not tall (:func:`is_tall`), when the
    Gram matrix is not numerically positive definite or when the first round
    lost orthogonality (condition number above ~1e7).
    """
    if not is_tall(*B.shape):
        return np.linalg.qr(B)
    Q, T = B, None
    for rnd in range(2):
        G = Q.T @ Q
        if rnd and np.abs(G - np.eye(G.shape[0])).max() > 1e-2:
            return np.linalg.qr(B)
        try:
            U = np.linalg.cholesky(G).T
        except np.linalg.LinAlgError:
            return np.linalg.qr(B)
        Q = right_solve(Q, U)
        T = U if T is None else U @ T
    return Q, T


def _orthonormal_block(K, Q):
    """``K`` orthogonalised against the orthonormal columns of ``Q`` (twice),
    then orthonormalised (:func:`orthonormal`)."""
    for _ in range(2):
        K = K - Q @ (Q.T @ K)
    return orthonormal(K)[0]


def _exact(op, k):
    """SVD of ``Xc`` through products with the identity of its small side."""
    n, p = op.shape
    if p <= n:
        A, S, Rt = np.linalg.svd(op.matmat(np.eye(p)), full_matrices=False)
        return S[:k], Rt.T, A * S, Rt.T * S**2
    R, S, At = np.linalg.svd(op.rmatmat(np.eye(n)), full_matrices=False)
    return S[:k], R, At.T * S, R * S**2


def krylov_subspace(op, k, n_passes=KRYLOV_PASSES, random_state=0):
    """Top ``k`` singular values of ``op``'s matrix ``Xc`` with a basis of its
    top right singular subspace and the basis' images, without forming ``Xc``.

    Exact when ``min(n_samples, n_features) <= k + 10``; else block Krylov:
    the blocks ``W`` (seeded Gaussian, ``max(SKETCH_WIDTH, k +
    SKETCH_OVERSAMPLE)`` columns, from the scan when it sketched), then ``n_passes`` blocks
    ``A Q`` orthonormalised against the previous ones, each applied to ``A``
    by one pass; the Ritz vectors of ``A`` on their span.

    Returns
    -------
    s : ndarray of shape (k,)
        Ritz estimates of the top singular values (``sqrt`` of ``A``'s Ritz values).
    R : ndarray of shape (n_features, l)
        Orthonormal Ritz vectors, best first (``l >= k``).
    XR : ndarray of shape (n_samples, l)
        ``Xc R``.
    AR : ndarray of shape (n_features, l)
        ``Xc^T Xc R``.
    """
    n, p = op.shape
    if min(n, p) <= k + 10:
        return _exact(op, k)
    W, XW, AW = _centred_sketch(op, max(SKETCH_WIDTH, k + SKETCH_OVERSAMPLE), random_state)
    b = W.shape[1]
    # the Krylov blocks side by side (Q, Xc Q, A Q): BLAS-3 products of the
    # whole span, no stacking (P-long float64 blocks: memory-bound)
    Q, XQ, AQ = (np.empty((m, b * (n_passes + 1))) for m in (p, n, p))
    Q[:, :b], T = orthonormal(W)
    # Xc Q = Xc W T^-1 (T upper triangular, well conditioned for Gaussian W)
    if is_tall(*W.shape):
        XQ[:, :b], AQ[:, :b] = right_solve(XW, T), right_solve(AW, T)
    else:
        XQ[:, :b], AQ[:, :b] = np.linalg.solve(T.T, XW.T).T, np.linalg.solve(T.T, AW.T).T
    for i in range(1, n_passes + 1):
        lo, hi = i * b, (i + 1) * b
        K = _orthonormal_block(AQ[:, lo - b : lo], Q[:, :lo])
        Q[:, lo:hi] = K
        XQ[:, lo:hi], AQ[:, lo:hi] = op.gram(K)
    H = Q.T @ AQ
    theta, V = np.linalg.eigh(0.5 * (H + H.T))
    keep = np.argsort(theta)[::-1][: b * (n_passes + 1) if KEEP_SPAN else b]
    theta, V = theta[keep], V[:, keep]
    return np.sqrt(np.clip(theta[:k], 0.0, None)), Q @ V, XQ @ V, AQ @ V


def cached_subspace(op, k):
    """:func:`krylov_subspace` computed once per operator (and centring)."""
    cache = getattr(op, "_subspace", None)
    if cache is None or cache[0] < k:
        op._subspace = (k,) + krylov_subspace(op, k)
    _, s, R, XR, AR = op._subspace
    return s[:k], R, XR, AR
