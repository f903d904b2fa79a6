"""The edge null of :func:`~neurospca.model_selection.parallel_analysis` (``null="edge"``).

Noise with any spatial covariance (smooth maps, cortical surfaces) has sample
eigenvalues whose top end follows one universal shape near the bulk's edge
(the soft edge of random-matrix theory: Tracy-Widom fluctuations, spacings
growing as ``j^(2/3)``), up to the edge's location and scale, which depend on
the noise's spatial spectrum. The null of rank k is therefore read off the
eigenvalues just below it: the expected top ``window + 1`` eigenvalues of a
Wishart matrix of the data's shape (its effective number of features from the
spectrum's first two moments) are mapped by least squares onto the ``window``
eigenvalues below rank k that did not themselves exceed their null (ranks are
calibrated from the bottom up, so a strong component just below k cannot
inflate k's edge), as Wishart eigenvalues 2 to ``window + 1``; the image of
the Wishart's largest eigenvalue under that map is the null of rank k.
Component k is kept while its eigenvalue exceeds the ``quantile`` of that
null; the first miss stops.

Why not the other nulls: Horn's column permutations destroy the spatial
smoothness of the noise (every smooth-noise rank exceeds them); a Gaussian
null with the effective number of features matches the spectrum's first two
moments but not the top edge of a heavy-tailed spatial spectrum (it kept 4 to
8 ranks of pure smooth noise on fsaverage5); flipping or rotating the
subjects of the residual leaves its singular values unchanged, so it cannot
serve as a null of them. Measured in ``benchmarks/RESULTS.md`` ("Issue 21,
item 4").

Cost: one eigendecomposition of the N x N Gram matrix (the whole spectrum is
needed for the moments) and ``n_draws`` tridiagonal eigenvalue problems of size
N (Dumitriu-Edelman bidiagonal model, top ``window + 1`` eigenvalues only),
shared by every rank: about 0.5-2 s for N = 133-652.
"""

import numpy as np
from scipy.linalg import eigvalsh_tridiagonal

__all__ = ["edge_null"]


def _wishart_tops(n, p, m, rng, size):
    """The top ``m`` eigenvalues (descending) of Z Zᵀ, Z (n, p) standard normal: ``size`` draws."""
    n, p = min(n, p), max(n, p)
    i = np.arange(n)
    out = np.empty((size, m))
    for b in range(size):
        d = np.sqrt(rng.chisquare(p - i))
        e = np.sqrt(rng.chisquare(n - 1 - i[:-1]))
        top = eigvalsh_tridiagonal(
            d**2 + np.r_[0.0, e**2], e * d[:-1], select="i", select_range=(n - m, n - 1)
        )
        out[b] = top[::-1]
    return out


def _effective_features(rest):
    """tr(S)² / tr(S²) of the noise from the spectrum ``rest`` of its Gram matrix."""
    n = rest.size
    mean = rest.mean()
    spread = (np.sum(rest**2) - n * mean**2) / (n * (n + 1))
    return max(int(round(mean**2 / spread)), n + 1) if spread > 0 else 10**9


def edge_null(w, m, n_draws, quantile, rng, window=10, skip=2):
    """Per rank k < m: the null quantile of the k-th Gram eigenvalue; stops after the first miss.

    Parameters
    ----------
    w : ndarray
        All non-zero eigenvalues of the centred data's Gram matrix, descending.
    m : int
        Ranks to test at most; ``m + skip + window + 1 <= w.size`` is needed.
    n_draws : int
        Wishart draws per rank.
    quantile : float
    rng : numpy.random.Generator
    window : int, default=10
        Eigenvalues that calibrate the edge of rank k: ranks
        ``k + skip + 1`` to ``k + skip + window``.
    skip : int, default=2
        Eigenvalues just below k left out of the calibration (up to ``skip``
        further strong components there cannot inflate k's edge: masking).

    Returns
    -------
    threshold : ndarray of shape (m,)
        NaN after the first miss.
    scale : ndarray of shape (m,)
        The fitted scale of the edge (Wishart units to data units), per rank.
    """
    threshold, scale = np.full(m, np.nan), np.full(m, np.nan)
    first = slice(skip + 1, skip + window + 1)
    for k in range(m):
        rest = w[k:]
        draws = _wishart_tops(rest.size, _effective_features(rest), skip + window + 1, rng, n_draws)
        b, a = np.polyfit(draws.mean(axis=0)[first], rest[first], 1)
        scale[k] = b
        threshold[k] = np.quantile(a + b * draws[:, 0], quantile)
        if w[k] <= threshold[k]:
            break
    return threshold, scale
