"""How many components: parallel analysis of the explained variance.

Two nulls, both keeping component k while its explained variance exceeds the
``quantile`` of the k-th variance under the null:

- ``null="effective"`` (the default): Gaussian data with the residual's effective
  number of independent features. After the first k components, the remaining
  eigenvalues of the N x N Gram matrix have mean m and spread s²; noise with any
  spatial covariance S has m = tr(S) and, per off-diagonal Gram entry, variance
  tr(S²), so P_eff = tr(S)² / tr(S²) (the number of independent features) is
  estimated from the spectrum's first two moments and the null is a Wishart
  matrix of that shape (drawn with the bidiagonal model of Dumitriu and
  Edelman 2002, O(N²) per draw). Spatially smooth noise (images, cortical maps)
  has P_eff far below P; this null accounts for it.
- ``null="permutation"``: Horn's parallel analysis (1965).
The singular values of the centred data are compared with those of data whose
columns were permuted independently (each feature keeps its values, the
samples' joint structure is destroyed): component k is kept while its singular
value exceeds the ``quantile`` of the k-th permuted singular values
(Glorfeld's 95th-percentile rule), i.e. while it explains more variance than
the same rank does in data without shared structure (Horn 1965; Glorfeld 1995).

Cost: ``n_permutations + 1`` truncated SVDs of an N x P matrix (exact via the
N x N Gram matrix for N <= 2,000, randomized otherwise) and one permuted copy of
the data at a time; the number of components considered is capped by
``max_components``.
"""

import numpy as np
from scipy.linalg import eigvalsh_tridiagonal

from .._utils.validation import check_data, check_int

__all__ = ["parallel_analysis"]


def _top_singular_values(Xc, m, rng):
    n = Xc.shape[0]
    if n <= 2000:
        w = np.linalg.eigvalsh(Xc @ Xc.T)[::-1][:m]
        return np.sqrt(np.maximum(w, 0.0))
    from sklearn.utils.extmath import randomized_svd

    return randomized_svd(Xc, m, n_iter=4, random_state=int(rng.integers(2**31)))[1]


def _wishart_top(n, p, rng, size):
    """Largest eigenvalue of Z Zᵀ, Z (n, p) standard normal: ``size`` draws."""
    n, p = min(n, p), max(n, p)
    i = np.arange(n)
    out = np.empty(size)
    for b in range(size):
        d = np.sqrt(rng.chisquare(p - i))
        e = np.sqrt(rng.chisquare(n - 1 - i[:-1]))
        out[b] = eigvalsh_tridiagonal(
            d**2 + np.r_[0.0, e**2], e * d[:-1], select="i", select_range=(n - 1, n - 1)
        )[0]
    return out


def _effective_null(w, m, n_draws, quantile, rng):
    """Per rank k < m: the null quantile of the k-th Gram eigenvalue (w: all of them,
    descending) from the residual spectrum w[k:]; stops after the first miss."""
    threshold, p_eff = np.full(m, np.nan), np.full(m, np.nan)
    for k in range(m):
        rest = w[k:]
        n = rest.size
        mean = rest.mean()
        spread = (np.sum(rest**2) - n * mean**2) / (n * (n + 1))
        p_eff[k] = p = max(int(round(mean**2 / spread)), 1) if spread > 0 else 10**9
        threshold[k] = np.quantile(_wishart_top(n, p, rng, n_draws), quantile) * mean / p
        if w[k] <= threshold[k]:
            break
    return threshold, p_eff


def parallel_analysis(
    X, *, max_components=30, n_permutations=20, quantile=0.95, null="effective", random_state=0
):
    """The number of components whose variance exceeds that of permuted data.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    max_components : int, default=30
        At most this many components are considered (and at most N - 1).
    n_permutations : int, default=20
        Permuted copies of the data (or draws of the Gaussian null).
    quantile : float, default=0.95
        Quantile of the permuted singular values a component must exceed.
    null : {"effective", "permutation"}, default="effective"
        The Gaussian null with the residual's effective number of features
        (robust to spatially smooth noise), or Horn's column permutations.
    random_state : int, default=0

    Returns
    -------
    n_components : int
        At least 1.
    evidence : dict
        ``observed`` and ``null`` (the quantile) explained-variance ratios per
        rank (lists), ``n_components``, ``n_permutations``, ``quantile``,
        ``rule`` (a sentence for the report).
    """
    X = check_data(X, "X")
    check_int(max_components, "max_components", minimum=1)
    check_int(n_permutations, "n_permutations", minimum=5)
    if not 0.5 <= float(quantile) < 1:
        raise ValueError(f"quantile must be in [0.5, 1), got {quantile!r}.")
    if null not in ("effective", "permutation"):
        raise ValueError(f"null must be 'effective' or 'permutation', got {null!r}.")
    rng = np.random.default_rng(random_state)
    Xc = X - X.mean(axis=0)
    m = int(min(max_components, X.shape[0] - 1, X.shape[1]))
    total = float(np.sum(Xc**2))
    if null == "effective":
        w = (
            np.linalg.eigvalsh(Xc @ Xc.T)[::-1][: X.shape[0] - 1]
            if X.shape[0] <= 4000
            else _top_singular_values(Xc, m, rng) ** 2
        )
        if w.size > m and X.shape[0] > 4000:
            raise ValueError(
                "null='effective' needs N <= 4000 (the whole spectrum); use null='permutation'."
            )
        w = w[w > 1e-10 * w[0]]  # confounds regressed out lower the rank: drop their zeros
        m = min(m, w.size)
        threshold, p_eff = _effective_null(w, m, n_permutations, quantile, rng)
        observed, threshold = w[:m] / total, threshold / total
        above = observed > np.nan_to_num(threshold, nan=np.inf)
        null_text = (
            f"{n_permutations} draws of Gaussian data with the residual's effective "
            "number of independent features (from the spectrum's first two "
            f"moments; {int(p_eff[0]):,} for the first rank)"
        )
    else:
        observed = _top_singular_values(Xc, m, rng) ** 2 / total
        draws = np.empty((n_permutations, m))
        for b in range(n_permutations):
            draws[b] = _top_singular_values(rng.permuted(Xc, axis=0), m, rng) ** 2 / total
        threshold = np.quantile(draws, quantile, axis=0)
        above = observed > threshold
        null_text = (
            f"{n_permutations} copies of the data with every column permuted "
            "independently (Horn 1965)"
        )
    n_above = int(np.argmin(above)) if not above.all() else m
    k = max(n_above, 1)
    outcome = (
        f"{k} of the first {m}"
        if n_above
        else f"none of the first {m} exceeds it, 1 kept (no evidence of shared structure)"
    )
    return k, {
        "observed": observed.tolist(),
        "null": [None if not np.isfinite(t) else float(t) for t in threshold],
        "n_components": k,
        "n_permutations": int(n_permutations),
        "quantile": float(quantile),
        "null_kind": null,
        "rule": (
            f"Number of components by parallel analysis: components kept while "
            f"their explained variance exceeds the {100 * quantile:g}th "
            f"percentile of the same rank in {null_text}: {outcome}."
        ),
    }
