"""Findings: component scores against the participants' groups and covariates.

For every component and every variable:

- a group column (categories): Kruskal-Wallis H (rank-based, ties corrected,
  as ``scipy.stats.kruskal``); effect size eta²_H = (H - G + 1) / (N - G)
  (Tomczak and Tomczak 2014), G groups, N subjects;
- a covariate (numbers): Spearman's rho (as ``scipy.stats.spearmanr``); the
  effect size is rho.

p-values come from permutations: the participants' rows are permuted
jointly (every variable moves with its subject, so the variables keep their
correlations, and so do the components' scores), ``p`` is the share of
permutations (the observed one included) whose statistic is at least the
observed one (H, or |rho|). ``p_corrected`` controls the family-wise error
over all components x variables by the Westfall-Young single-step min-P
method: the share of permutations whose smallest asymptotic p-value over the
whole family is at most the observed asymptotic p-value of the test (the
asymptotic p, chi² for H and Student's t for rho, only puts the different
statistics on one scale). The smallest possible p is 1 / (n_permutations + 1).
"""

import numpy as np
from scipy import stats

__all__ = ["associations", "ASSOCIATION_COLUMNS"]

#: the columns of the associations table (and of associations.tsv)
ASSOCIATION_COLUMNS = [
    "component",
    "variable",
    "test",
    "statistic",
    "effect_size",
    "effect_size_measure",
    "n",
    "p_asymptotic",
    "p",
    "p_corrected",
]


def _ranks(a):
    return stats.rankdata(a, axis=0)


def _kruskal(rank_scores, onehot, tie):
    """H for every permutation: onehot (B, N, G), rank_scores (N, K) -> (B, K)."""
    n = rank_scores.shape[0]
    sums = np.einsum("bng,nk->bgk", onehot, rank_scores)
    sizes = onehot.sum(axis=1)  # (B, G)
    h = 12.0 / (n * (n + 1)) * (sums**2 / sizes[:, :, None]).sum(axis=1) - 3 * (n + 1)
    return h / tie


def _spearman(rank_scores, rank_cov):
    """rho for every permutation: rank_cov (B, N), rank_scores (N, K) -> (B, K)."""
    zs = (rank_scores - rank_scores.mean(0)) / rank_scores.std(0)
    zc = (rank_cov - rank_cov.mean(1, keepdims=True)) / rank_cov.std(1, keepdims=True)
    return zc @ zs / rank_scores.shape[0]


def _rho_p(rho, n):
    with np.errstate(divide="ignore", invalid="ignore"):
        t = rho * np.sqrt((n - 2) / np.maximum(1.0 - rho**2, 1e-300))
    return 2 * stats.t.sf(np.abs(t), n - 2)


def _statistics(scores, groups, covariates, perms):
    """Statistic and asymptotic p of every test, for every permutation (row 0: none).

    Returns a list of (variable, kind, stat (B, K), p_asym (B, K), dof).
    """
    n = scores.shape[0]
    rank_scores = _ranks(scores)
    out = []
    for name, labels in groups.items():
        levels, codes = np.unique(labels, return_inverse=True)
        onehot = np.eye(levels.size)[codes[perms]]
        tie = np.ones(scores.shape[1])
        for k in range(scores.shape[1]):
            t = np.unique(scores[:, k], return_counts=True)[1]
            tie[k] = 1 - (t**3 - t).sum() / (n**3 - n)
        h = _kruskal(rank_scores, onehot, tie)
        out.append((name, "group", h, stats.chi2.sf(h, levels.size - 1), levels.size))
    for name, values in covariates.items():
        rc = _ranks(values)[perms]
        rho = _spearman(rank_scores, rc)
        out.append((name, "covariate", rho, _rho_p(rho, n), None))
    return out


def associations(scores, groups=None, covariates=None, *, n_permutations=9999, random_state=0):
    """Tests of every component's scores against groups and covariates.

    Parameters
    ----------
    scores : array-like of shape (n_samples, n_components)
    groups : dict of str -> array-like of shape (n_samples,), optional
        Categorical variables (e.g. ``{"dx": ["CN", "AD", ...]}``).
    covariates : dict of str -> array-like of shape (n_samples,), optional
        Numeric variables (e.g. ``{"age": [...], "mmse": [...]}``).
    n_permutations : int, default=9999
        Joint permutations of the subjects' rows (>= 99).
    random_state : int, default=0
        Seed of the permutations.

    Returns
    -------
    pandas.DataFrame
        One row per component and variable, columns :data:`ASSOCIATION_COLUMNS`
        (component numbered from 1; test ``"Kruskal-Wallis"`` or
        ``"Spearman"``; effect size eta²_H or rho).

    Raises
    ------
    ValueError
        Wrong lengths, non-finite values, a group with one level, fewer than 3
        subjects or 99 permutations.
    """
    import pandas as pd

    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[0] < 3 or not np.all(np.isfinite(scores)):
        raise ValueError(
            "scores must be a finite (n_samples >= 3, n_components) array, got "
            f"shape {scores.shape}."
        )
    n = scores.shape[0]
    if (
        isinstance(n_permutations, bool)
        or not isinstance(n_permutations, (int, np.integer))
        or n_permutations < 99
    ):
        raise ValueError(f"n_permutations must be an int >= 99, got {n_permutations!r}.")
    groups = {str(k): np.asarray(v).astype(str) for k, v in (groups or {}).items()}
    covariates = {str(k): np.asarray(v, dtype=np.float64) for k, v in (covariates or {}).items()}
    for argument, table in (("groups", groups), ("covariates", covariates)):
        for k, v in table.items():
            if v.shape != (n,):
                raise ValueError(f"{argument}: {k!r} has shape {v.shape}, expected ({n},).")
    for k, v in groups.items():
        if np.unique(v).size < 2:
            raise ValueError(f"groups: column {k!r} has a single value; nothing to compare.")
    for k, v in covariates.items():
        if not np.all(np.isfinite(v)):
            raise ValueError(f"covariates: column {k!r} has NaN or infinite values.")
    rng = np.random.default_rng(random_state)
    rows = []
    tests = []
    for start in range(0, n_permutations + 1, 2000):
        b = min(2000, n_permutations + 1 - start)
        perms = np.stack([rng.permutation(n) for _ in range(b)])
        if start == 0:
            perms[0] = np.arange(n)
        tests.append(_statistics(scores, groups, covariates, perms))
    merged = []
    for i, (name, kind, _, _, dof) in enumerate(tests[0]):
        stat = np.concatenate([t[i][2] for t in tests])
        p_asym = np.concatenate([t[i][3] for t in tests])
        merged.append((name, kind, stat, p_asym, dof))
    min_p = np.min(np.hstack([m[3] for m in merged]), axis=1)  # (B + 1,)
    total = n_permutations + 1
    for name, kind, stat, p_asym, dof in merged:
        for k in range(scores.shape[1]):
            s0, pa = stat[0, k], p_asym[0, k]
            exceed = (
                stat[:, k] >= s0 - 1e-12
                if kind == "group"
                else np.abs(stat[:, k]) >= abs(s0) - 1e-12
            )
            effect = (s0 - dof + 1) / (n - dof) if kind == "group" else s0
            rows.append(
                {
                    "component": k + 1,
                    "variable": name,
                    "test": "Kruskal-Wallis" if kind == "group" else "Spearman",
                    "statistic": float(s0),
                    "effect_size": float(effect),
                    "effect_size_measure": "eta2_H" if kind == "group" else "rho",
                    "n": n,
                    "p_asymptotic": float(pa),
                    "p": float(exceed.sum() / total),
                    "p_corrected": float(np.sum(min_p <= pa * (1 + 1e-9)) / total),
                }
            )
    table = pd.DataFrame(rows, columns=ASSOCIATION_COLUMNS)
    return table.sort_values(["component", "variable"], kind="stable").reset_index(drop=True)
