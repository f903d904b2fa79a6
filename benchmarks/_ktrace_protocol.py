"""The simulation and protocol of Table 2 of Richard, Obozinski and Vert (2014).

Used by ``benchmarks/bench_ktrace.py`` only (not part of the package): the
paper's section 6.2 simulation (:func:`make_sparse_covariance_problem`) and
the hyper-parameter selection and error of each estimator on one sample
(:func:`covariance_estimation_errors`).
"""

import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from neurospca import ktrace_pca, psd_threshold, sequential_spca_covariance, trace_l1_covariance
from neurospca._utils.validation import check_data
from neurospca.decomposition._covariance_baselines import sample_covariance

__all__ = ["TABLE2_METHODS", "make_sparse_covariance_problem", "covariance_estimation_errors"]


def make_sparse_covariance_problem(
    n_samples=80, n_features=200, *, k=10, n_atoms=3, overlap=3, sigma=0.8, random_state=None
):
    """The simulation of the paper's section 6.2.

    ``Sigma* = sum_i a_i a_i^T`` with ``n_atoms`` unit atoms of ``k`` nonzeros
    equal to ``1/sqrt(k)`` on consecutive supports, each overlapping the next
    by ``overlap`` indices ("3 x 3 overlaps"); ``n_samples`` draws of
    ``N(0, Sigma* + sigma^2 I)``. Paper: p = 200, n = 80, k = 10, sigma = 0.8.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    sigma_star : ndarray of shape (n_features, n_features)
    atoms : ndarray of shape (n_atoms, n_features)
    """
    rng = check_random_state(random_state)
    step = k - overlap
    if step <= 0 or (n_atoms - 1) * step + k > n_features:
        raise ValueError(
            f"k={k}, overlap={overlap} and n_atoms={n_atoms} do not fit in n_features={n_features}."
        )
    atoms = np.zeros((n_atoms, n_features))
    for i in range(n_atoms):
        atoms[i, i * step : i * step + k] = 1.0 / math.sqrt(k)
    sigma_star = atoms.T @ atoms
    X = rng.standard_normal((n_samples, n_atoms)) @ atoms
    X += sigma * rng.standard_normal((n_samples, n_features))
    return X, sigma_star, atoms


TABLE2_METHODS = ("sample", "trace", "l1", "trace+l1", "sequential", "ktrace")


def _fit_method(method, S, param, k, random_state):
    if method == "sample":
        return S
    if method == "trace":
        return psd_threshold(S, param)
    if method == "l1":
        return np.sign(S) * np.maximum(np.abs(S) - param, 0.0)
    if method == "trace+l1":
        alpha, mu = param
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return trace_l1_covariance(S, alpha, mu, k, tol=1e-5, max_iter=300)
    if method == "sequential":
        return sequential_spca_covariance(S, k, param, random_state=random_state)[0]
    if method == "ktrace":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return ktrace_pca(S, k, param, max_blocks=100, random_state=random_state)[0]
    raise ValueError(f"unknown method {method!r}; expected one of {TABLE2_METHODS}.")


def covariance_estimation_errors(
    X,
    sigma_star,
    k,
    *,
    methods=TABLE2_METHODS,
    tuning="holdout",
    n_alphas=8,
    alpha_range=(0.1, 1.0),
    mus=(0.5,),
    max_components=6,
    val_fraction=0.25,
    random_state=None,
):
    """The protocol of the paper's Table 2 on one sample.

    With ``tuning="holdout"`` (the paper's protocol) hyper-parameters are
    chosen on a split: the estimate from the training part that best
    approximates, in Frobenius norm, the empirical covariance
    ``(1/n) sum x x^T`` of the validation part; the chosen estimator is then
    refitted on all of ``X``. ``tuning="holdout-offdiag"`` scores the
    off-diagonal entries only: the validation covariance estimates
    ``Sigma* + sigma^2 I``, whose noise diagonal the full score rewards
    although the error is measured against ``Sigma*``. With
    ``tuning="oracle"`` each method gets the
    hyper-parameter of its grid closest to ``Sigma*`` (its best case). The
    true ``k`` is given to every method. Grids: ``alpha`` geometric over
    ``alpha_range`` times the largest eigenvalue of the (training) covariance
    (l1: times its largest absolute entry), ``mu`` in ``mus`` (trace + l1),
    ``r = 1..max_components`` (sequential).

    Returns
    -------
    errors : dict
        Method name to the relative error ``||Z - Sigma*||_F / ||Sigma*||_F``.
    params : dict
        Method name to the chosen hyper-parameter.
    """
    X = check_data(X)
    if tuning not in ("holdout", "holdout-offdiag", "oracle"):
        raise ValueError(
            f"tuning must be 'holdout', 'holdout-offdiag' or 'oracle', got {tuning!r}."
        )
    rng = check_random_state(random_state)
    n = X.shape[0]
    S = sample_covariance(X)
    if tuning != "oracle":
        perm = rng.permutation(n)
        n_val = max(1, int(round(val_fraction * n)))
        S_tr = sample_covariance(X[perm[n_val:]])
        target = sample_covariance(X[perm[:n_val]])
    else:
        S_tr, target = S, sigma_star
    top = float(np.linalg.eigvalsh(S_tr)[-1])
    rel = np.geomspace(alpha_range[0], alpha_range[1], n_alphas)
    seed = int(rng.randint(2**31 - 1))
    norm_star = float(np.linalg.norm(sigma_star))
    errors, params = {}, {}
    for method in methods:
        if method == "sample":
            grid = [None]
        elif method in ("trace", "ktrace"):
            grid = [float(a) for a in top * rel]
        elif method == "l1":
            grid = [float(a) for a in float(np.max(np.abs(S_tr))) * rel]
        elif method == "trace+l1":
            grid = [(float(a), float(m)) for a in top * rel for m in mus]
        elif method == "sequential":
            grid = list(range(1, max_components + 1))
        else:
            raise ValueError(f"unknown method {method!r}; expected one of {TABLE2_METHODS}.")
        fits = [_fit_method(method, S_tr, g, k, seed) for g in grid]
        if tuning == "holdout-offdiag":
            off = ~np.eye(S.shape[0], dtype=bool)
            scores = [float(np.linalg.norm((Z - target)[off])) for Z in fits]
        else:
            scores = [float(np.linalg.norm(Z - target)) for Z in fits]
        i = int(np.argmin(scores))
        Z = fits[i] if tuning == "oracle" else _fit_method(method, S, grid[i], k, seed)
        errors[method] = float(np.linalg.norm(Z - sigma_star)) / norm_star
        params[method] = grid[i]
    return errors, params
