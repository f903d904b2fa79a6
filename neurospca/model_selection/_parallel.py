"""How many components: parallel analysis of the explained variance.

Three nulls, each keeping component k while its explained variance exceeds the
``quantile`` of the k-th variance under the null:

- ``null="edge"`` (the default): the top edge of the residual's own spectrum
  (universal Tracy-Widom shape of a Wishart matrix, located and scaled by least
  squares on the next ``window`` eigenvalues; see ``_edge``). Robust to
  spatially correlated noise of any spectrum: on smooth cortical noise it keeps
  0 or 1 rank where the nulls below keep 4 to 30.
- ``null="effective"``: Gaussian data with the residual's effective
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

Cost (``"permutation"``): ``n_permutations + 1`` truncated SVDs of an N x P matrix (exact via the
N x N Gram matrix for N <= 2,000, randomized otherwise) and one permuted copy of
the data at a time; the number of components considered is capped by
``max_components``.
"""

import warnings

import numpy as np

from .._utils.validation import check_data, check_int
from ._edge import _wishart_tops, edge_null

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
    return _wishart_tops(n, p, 1, rng, size)[:, 0]


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


def _gram_spectrum(Xc, m, rng, null):
    """The non-zero eigenvalues of the Gram matrix, descending: all of them for N <= 4000
    (the nulls need the moments); above, ``"effective"`` uses the top m (as before) and
    ``"edge"`` the whole spectrum of 4,000 random samples (less power, same validity)."""
    if Xc.shape[0] > 4000:
        if null == "effective":
            w = _top_singular_values(Xc, m, rng) ** 2
            return w[w > 1e-10 * w[0]]
        total = np.sum(Xc**2)
        Xc = Xc[np.sort(rng.choice(Xc.shape[0], 4000, replace=False))]
        Xc = Xc - Xc.mean(axis=0)
        Xc = Xc * np.sqrt(total / np.sum(Xc**2))  # explained-variance ratios of the whole
    w = np.linalg.eigvalsh(Xc @ Xc.T)[::-1][: Xc.shape[0] - 1]
    return w[w > 1e-10 * w[0]]  # confounds regressed out lower the rank: drop their zeros


def _spectral_null(Xc, m, n_draws, quantile, null, rng):
    """``(observed, threshold, m, text)`` of the "edge" and "effective" nulls (unnormalised)."""
    w = _gram_spectrum(Xc, m, rng, null)
    if null == "effective":
        m = min(m, w.size)
        threshold, p_eff = _effective_null(w, m, n_draws, quantile, rng)
        return (
            w[:m],
            threshold,
            m,
            (
                f"{n_draws} draws of Gaussian data with the residual's effective "
                "number of independent features (from the spectrum's first two "
                f"moments; {int(p_eff[0]):,} for the first rank)"
            ),
        )
    window = min(10, max(3, w.size // 3))
    m = min(m, w.size - window - 3)
    if m < 1:
        raise ValueError(
            f"X: null='edge' needs at least 8 samples with independent variation, got {w.size + 1}."
        )
    threshold, _ = edge_null(w, m, n_draws, quantile, rng, window=window)
    return (
        w[:m],
        threshold,
        m,
        (
            f"{n_draws} draws of the top edge of a Wishart spectrum (the noise's universal "
            f"edge shape), located and scaled on the 3rd to {window + 2}th eigenvalues "
            "below each rank (robust to spatially smooth noise)"
        ),
    )


def _permutation_null(Xc, m, n_permutations, quantile, rng):
    observed = _top_singular_values(Xc, m, rng) ** 2
    draws = np.empty((n_permutations, m))
    for b in range(n_permutations):
        draws[b] = _top_singular_values(rng.permuted(Xc, axis=0), m, rng) ** 2
    text = (
        f"{n_permutations} copies of the data with every column permuted independently (Horn 1965)"
    )
    return observed, np.quantile(draws, quantile, axis=0), m, text


def _check(max_components, n_permutations, quantile, null):
    check_int(max_components, "max_components", minimum=1)
    if n_permutations is not None:
        check_int(n_permutations, "n_permutations", minimum=5)
    if isinstance(quantile, bool) or not isinstance(quantile, (int, float, np.floating)):
        raise TypeError(f"quantile must be a float, got {type(quantile).__name__}.")
    if not 0.5 <= float(quantile) < 1:
        raise ValueError(f"quantile must be in [0.5, 1), got {quantile!r}.")
    if null not in NULLS:
        raise ValueError(f"null must be one of {', '.join(map(repr, NULLS))}, got {null!r}.")


NULLS = ("edge", "effective", "permutation")


def _table(observed, threshold, k):
    """The first ranks as ``rank: observed % vs null %`` (the report's text)."""
    rows = []
    for r in range(min(observed.size, k + 1)):
        t = "-" if not np.isfinite(threshold[r]) else f"{100 * threshold[r]:.2f} %"
        rows.append(f"{r + 1}: {100 * observed[r]:.2f} % vs {t}")
    return "; ".join(rows)


def parallel_analysis(
    X, *, max_components=30, n_permutations=None, quantile=None, null="edge", random_state=0
):
    """The number of components whose variance exceeds that of data without shared structure.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    max_components : int, default=30
        At most this many components are considered (and at most N - 1).
    n_permutations : int, optional
        Permuted copies of the data (``"permutation"``) or draws of the null;
        default 200 for ``"edge"``, 20 for the others.
    quantile : float, optional
        Quantile of the null a component must exceed: default 0.99 for
        ``"edge"`` (its false-positive rate on smooth cortical noise was 4/20
        at 0.95, 0/20 at 0.99), 0.95 for the others.
    null : {"edge", "effective", "permutation"}, default="edge"
        The residual spectrum's own top edge (robust to spatially smooth
        noise), the Gaussian null with the residual's effective number of
        features, or Horn's column permutations (see the module's notes).
    random_state : int, default=0

    Returns
    -------
    n_components : int
        At least 1 (with a warning when no component exceeds the null).
    evidence : dict
        ``observed`` and ``null`` (the quantile) explained-variance ratios per
        rank (lists), ``n_components``, ``n_above`` (ranks above the null, may
        be 0), ``n_permutations``, ``quantile``, ``null_kind``, ``rule`` (a
        sentence for the report, with the first ranks' numbers).

    Raises
    ------
    ValueError
        A bad ``max_components``, ``n_permutations``, ``quantile`` or ``null``;
        ``null="edge"`` or ``"effective"`` with more than 4,000 samples, or
        ``"edge"`` with fewer than 6 samples.
    """
    X = check_data(X, "X")
    _check(max_components, n_permutations, 0.95 if quantile is None else quantile, null)
    draws = n_permutations or (200 if null == "edge" else 20)
    quantile = quantile if quantile is not None else (0.99 if null == "edge" else 0.95)
    rng = np.random.default_rng(random_state)
    Xc = X - X.mean(axis=0)
    m = int(min(max_components, X.shape[0] - 1, X.shape[1]))
    total = float(np.sum(Xc**2))
    if null == "permutation":
        observed, threshold, m, null_text = _permutation_null(Xc, m, draws, quantile, rng)
    else:
        observed, threshold, m, null_text = _spectral_null(Xc, m, draws, quantile, null, rng)
    observed, threshold = observed / total, threshold / total
    above = observed > np.nan_to_num(threshold, nan=np.inf)
    n_above = int(np.argmin(above)) if not above.all() else m
    k = max(n_above, 1)
    if n_above:
        outcome = f"{k} of the first {m}"
    else:
        outcome = f"none of the first {m} exceeds it, 1 kept (no evidence of shared structure)"
        warnings.warn(
            f"parallel_analysis: no component exceeds the null ({null_text}); "
            "n_components=1 is returned, but the data show no shared structure.",
            UserWarning,
            stacklevel=2,
        )
    return k, {
        "observed": observed.tolist(),
        "null": [None if not np.isfinite(t) else float(t) for t in threshold],
        "n_components": k,
        "n_above": n_above,
        "n_permutations": int(draws),
        "quantile": float(quantile),
        "null_kind": null,
        "rule": (
            f"Number of components by parallel analysis: components kept while "
            f"their explained variance exceeds the {100 * quantile:g}th "
            f"percentile of the same rank in {null_text}: {outcome} "
            f"(rank: explained variance vs null, {_table(observed, threshold, n_above)})."
        ),
    }
