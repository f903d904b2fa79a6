"""How many components: Horn's parallel analysis of the explained variance.

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

from .._utils.validation import check_data, check_int

__all__ = ["parallel_analysis"]


def _top_singular_values(Xc, m, rng):
    n = Xc.shape[0]
    if n <= 2000:
        w = np.linalg.eigvalsh(Xc @ Xc.T)[::-1][:m]
        return np.sqrt(np.maximum(w, 0.0))
    from sklearn.utils.extmath import randomized_svd

    return randomized_svd(Xc, m, n_iter=4, random_state=int(rng.integers(2**31)))[1]


def parallel_analysis(X, *, max_components=30, n_permutations=20, quantile=0.95,
                      random_state=0):
    """The number of components whose variance exceeds that of permuted data.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    max_components : int, default=30
        At most this many components are considered (and at most N - 1).
    n_permutations : int, default=20
        Permuted copies of the data.
    quantile : float, default=0.95
        Quantile of the permuted singular values a component must exceed.
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
    rng = np.random.default_rng(random_state)
    Xc = X - X.mean(axis=0)
    m = int(min(max_components, X.shape[0] - 1, X.shape[1]))
    total = float(np.sum(Xc**2))
    observed = _top_singular_values(Xc, m, rng) ** 2 / total
    null = np.empty((n_permutations, m))
    for b in range(n_permutations):
        null[b] = _top_singular_values(rng.permuted(Xc, axis=0), m, rng) ** 2 / total
    threshold = np.quantile(null, quantile, axis=0)
    above = observed > threshold
    n_above = int(np.argmin(above)) if not above.all() else m
    k = max(n_above, 1)
    outcome = (f"{k} of the first {m}" if n_above else
               f"none of the first {m} exceeds it, 1 kept (no evidence of shared structure)")
    return k, {"observed": observed.tolist(), "null": threshold.tolist(), "n_components": k,
               "n_permutations": int(n_permutations), "quantile": float(quantile),
               "rule": (f"Number of components by parallel analysis: components kept while "
                        f"their explained variance exceeds the {100 * quantile:g}th "
                        f"percentile of the same rank in {n_permutations} copies of the data "
                        f"with every column permuted independently (Horn 1965): {outcome}.")}
