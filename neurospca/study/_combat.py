"""ComBat site harmonisation with fit/apply semantics (Johnson et al. 2007; Fortin et al.
2017, 2018; Pomponio et al. 2020).

Model, for feature ``j`` of subject ``i`` at site ``s``::

    y_ij = a_j + x_i b_j + g_sj + sqrt(d_sj) e_ij,    e_ij ~ N(0, v_j)

``x_i`` holds the covariates whose effects are preserved (e.g. diagnosis, age,
sex), ``g_sj``/``d_sj`` the additive and multiplicative site effects, shrunk
towards their across-feature means by empirical Bayes (parametric priors:
normal for ``g``, inverse gamma for ``d``). The harmonised value is::

    y*_ij = (y_ij - a_j - x_i b_j - sqrt(v_j) g*_sj) / sqrt(d*_sj) + a_j + x_i b_j

:func:`combat_fit` learns ``a, b, v, g*, d*`` on training subjects;
:func:`combat_apply` applies them to any subjects of the training sites
(held-out subjects included), never re-estimating anything. The estimates
are those of ``neuroHarmonize.harmonizationLearn`` (2.5.2, linear covariates,
no reference site); ``tests/test_study.py`` checks both functions against it
to 1e-6. Vectorised over features: O(N P) memory and time per iteration.
"""

import numpy as np

__all__ = ["combat_fit", "combat_apply"]

#: relative change at which the empirical Bayes iterations stop (neuroCombat's)
CONVERGENCE = 1e-4


def _site_codes(sites, labels, name):
    index = {s: i for i, s in enumerate(labels)}
    unknown = sorted({str(s) for s in sites if s not in index})
    if unknown:
        raise ValueError(
            f"{name}: site(s) {unknown[:5]} were not in the training data "
            f"(sites {[str(x) for x in labels][:10]}); ComBat can only harmonise subjects "
            "of the sites it was fitted on."
        )
    return np.array([index[s] for s in sites], dtype=np.int64)


def _design(codes, n_sites, covariates):
    onehot = np.zeros((codes.size, n_sites))
    onehot[np.arange(codes.size), codes] = 1.0
    return np.hstack([onehot, covariates])


def _priors(delta_hat):
    m = delta_hat.mean(axis=1)
    s2 = delta_hat.var(axis=1, ddof=1)
    return (2 * s2 + m**2) / s2, (m * s2 + m**3) / s2


def _shrink(s_site, g_hat, d_hat, g_bar, t2, a, b):
    """Parametric empirical Bayes estimates of one site (neuroCombat's ``it_sol``)."""
    n = s_site.shape[0]
    g_old, d_old = g_hat.copy(), d_hat.copy()
    change = 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        while change > CONVERGENCE:
            g_new = (t2 * n * g_hat + d_old * g_bar) / (t2 * n + d_old)
            sum2 = ((s_site - g_new) ** 2).sum(axis=0)
            d_new = (0.5 * sum2 + b) / (n / 2.0 + a - 1.0)
            change = max(
                (np.abs(g_new - g_old) / g_old).max(), (np.abs(d_new - d_old) / d_old).max()
            )
            g_old, d_old = g_new, d_new
    return g_new, d_new


def combat_fit(X, sites, covariates=None, *, empirical_bayes=True, name="harmonize"):
    """Learn ComBat's parameters on training subjects.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    sites : array-like of str, shape (n_samples,)
        Each subject's site (scanner); at least 2 subjects per site.
    covariates : ndarray of shape (n_samples, n_covariates), optional
        Numeric effects to preserve (one-hot encode categories first).
    empirical_bayes : bool, default=True
        Shrink the site effects (False: the per-site least-squares estimates).
    name : str
        The argument named in errors.

    Returns
    -------
    dict
        ``sites`` (labels, sorted), ``grand_mean`` (P,), ``var_pooled`` (P,),
        ``beta`` (n_covariates, P), ``gamma`` and ``delta`` (n_sites, P),
        ``counts`` (subjects per site): everything :func:`combat_apply` needs,
        as arrays.
    """
    X = np.asarray(X, dtype=np.float64)
    sites = np.asarray(sites).astype(str)
    n = X.shape[0]
    covariates = np.zeros((n, 0)) if covariates is None else np.asarray(covariates, float)
    labels, counts = np.unique(sites, return_counts=True)
    if labels.size < 2:
        raise ValueError(
            f"{name}: all subjects are at one site ('{labels[0]}'); there is nothing to harmonise."
        )
    small = labels[counts < 2]
    if small.size:
        raise ValueError(
            f"{name}: site(s) {[str(x) for x in small]} have a single subject; ComBat "
            "needs at least 2 per site (merge or leave them out)."
        )
    codes = _site_codes(sites, labels, name)
    D = _design(codes, labels.size, covariates)
    if np.linalg.matrix_rank(D) < D.shape[1]:
        raise ValueError(
            f"{name}: the covariates kept by ComBat are confounded with the "
            "sites (the design is rank deficient), e.g. a group seen at one "
            "site only; ComBat cannot separate them."
        )
    B = np.linalg.solve(D.T @ D, D.T @ X)
    grand_mean = (counts / n) @ B[: labels.size]
    var_pooled = ((X - D @ B) ** 2).mean(axis=0)
    if np.any(var_pooled <= 0):
        raise ValueError(
            f"{name}: {int(np.sum(var_pooled <= 0))} feature(s) have no "
            "residual variance; leave constant features out (mask)."
        )
    beta = B[labels.size :]
    s = (X - grand_mean - covariates @ beta) / np.sqrt(var_pooled)
    gamma_hat = np.stack([s[codes == i].mean(axis=0) for i in range(labels.size)])
    delta_hat = np.stack([s[codes == i].var(axis=0, ddof=1) for i in range(labels.size)])
    if empirical_bayes and X.shape[1] > 1:
        g_bar, t2 = gamma_hat.mean(axis=1), gamma_hat.var(axis=1, ddof=1)
        a, b = _priors(delta_hat)
        shrunk = [
            _shrink(s[codes == i], gamma_hat[i], delta_hat[i], g_bar[i], t2[i], a[i], b[i])
            for i in range(labels.size)
        ]
        gamma = np.stack([g for g, _ in shrunk])
        delta = np.stack([d for _, d in shrunk])
    else:
        gamma, delta = gamma_hat, delta_hat
    return {
        "sites": labels,
        "counts": counts.astype(np.int64),
        "grand_mean": grand_mean,
        "var_pooled": var_pooled,
        "beta": beta,
        "gamma": gamma,
        "delta": delta,
    }


def combat_apply(X, sites, covariates, params, *, name="harmonize"):
    """Harmonise subjects with parameters learnt by :func:`combat_fit`.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    sites : array-like of str, shape (n_samples,)
        Sites seen at fit.
    covariates : ndarray of shape (n_samples, n_covariates) or None
        The same columns as at fit.
    params : dict
        From :func:`combat_fit`.
    name : str

    Returns
    -------
    ndarray of shape (n_samples, n_features)
    """
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(params["sites"]).astype(str)
    codes = _site_codes(np.asarray(sites).astype(str), list(labels), name)
    beta = np.asarray(params["beta"], dtype=np.float64)
    covariates = np.zeros((X.shape[0], 0)) if covariates is None else np.asarray(covariates, float)
    if covariates.shape != (X.shape[0], beta.shape[0]):
        raise ValueError(
            f"{name}: covariates have shape {covariates.shape}, expected "
            f"({X.shape[0]}, {beta.shape[0]}) (the columns used at fit)."
        )
    if X.shape[1] != beta.shape[1]:
        raise ValueError(
            f"{name}: X has {X.shape[1]} features, the ComBat parameters {beta.shape[1]}."
        )
    mean = params["grand_mean"] + covariates @ beta
    scale = np.sqrt(params["var_pooled"])
    s = (X - mean) / scale
    s = (s - params["gamma"][codes]) / np.sqrt(params["delta"][codes])
    return s * scale + mean
