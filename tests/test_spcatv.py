"""SPCATV / spca_tv: known limits, recovery, scikit-learn contract, bad input."""

import itertools
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from neurospca import (
    SPCATV,
    chain_operator,
    ratios_from_weights,
    spca_tv,
    tv_from_mask,
    weights_from_ratios,
)
from neurospca.solvers import prox_dual, spca_objective

from ._instances import example_weights, simulation_2d


def _dice(a, b):
    return 2.0 * np.sum(a & b) / (a.sum() + b.sum())


@pytest.fixture(scope="module")
def small_data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((30, 40)) @ np.diag(np.linspace(2, 0.5, 40))


def test_vanishing_penalties_give_pca(small_data):
    X = small_data
    model = SPCATV(3, alpha=1e-8, l1_ratio=0.0, tv_ratio=0.0, tol=1e-10).fit(X)
    Xc = X - X.mean(0)
    _, s, vt = np.linalg.svd(Xc, full_matrices=False)
    cos = np.abs(np.sum(model.components_ * vt[:3], axis=1))
    np.testing.assert_allclose(cos, 1.0, atol=1e-6)
    # explained variance equals PCA's for orthogonal components
    np.testing.assert_allclose(
        model.explained_variance_ratio_, s[:3] ** 2 / np.sum(s**2), rtol=1e-6
    )
    np.testing.assert_allclose(model.singular_values_, s[:3], rtol=1e-6)


def test_paper_simulation_recovers_dot_supports():
    X, patterns, mask = simulation_2d(seed=0)
    l1, l2, tv = example_weights(X)
    model = SPCATV(
        3,
        alpha=l1 + l2 + tv,
        l1_ratio=l1 / (l1 + l2 + tv),
        tv_ratio=tv / (l1 + l2 + tv),
        operator=tv_from_mask(mask),
        tol=1e-3,
    )
    C = model.fit(X).components_
    truth = patterns > 0
    best = max(
        itertools.permutations(range(3)),
        key=lambda p: sum(_dice(C[p[i]] != 0, truth[i]) for i in range(3)),
    )
    dices = [_dice(C[best[i]] != 0, truth[i]) for i in range(3)]
    assert min(dices) >= 0.8, dices
    # every v-step certified to tol (that the gaps bound the true suboptimality
    # is tests/test_certificates.py's job)
    assert np.all(model.converged_), model.rel_gaps_
    assert np.all(model.rel_gaps_ <= model.tol), model.rel_gaps_


def test_elastic_net_pca_fixed_point(small_data):
    """tv_ratio = 0 is ElasticNet PCA: v = soft(X^T u / N, l1) / (2 l2), u = Xv/||Xv||."""
    model = SPCATV(1, alpha=0.2, l1_ratio=0.5, tv_ratio=0.0, tol=1e-10).fit(small_data)
    Xc = small_data - model.mean_
    v = model.loadings_[:, 0]
    u = Xc @ v / np.linalg.norm(Xc @ v)
    l1, l2 = 0.1, 0.1
    z = Xc.T @ u / Xc.shape[0]
    expected = np.sign(z) * np.maximum(np.abs(z) - l1, 0) / (2 * l2)
    np.testing.assert_allclose(v, expected, atol=1e-6)
    nnz = np.count_nonzero(v)
    assert 0 < nnz < small_data.shape[1]


def test_spca_tv_returns_a_stationary_point(small_data):
    """At convergence, v solves its v-step for the returned u (to the gap)."""
    Xc = small_data - small_data.mean(0)
    op = chain_operator(Xc.shape[1])
    l1, l2, tv = 0.05, 0.5, 0.1
    U, V, info = spca_tv(Xc, 2, l1=l1, l2=l2, tv=tv, operator=op, tol=1e-8)
    n = Xc.shape[0]
    u, v = U[:, 0], V[:, 0]
    np.testing.assert_allclose(np.linalg.norm(u), 1.0)
    np.testing.assert_allclose(u, Xc @ v / np.linalg.norm(Xc @ v), atol=1e-6)
    y = Xc.T @ u / (2 * n * l2)
    ref = prox_dual(y, op, l1 / (2 * l2), tv / (2 * l2), tol=1e-12, max_iter=100000)
    f = spca_objective(v, Xc.T @ u / n, l1, l2, tv, op)
    f_ref = spca_objective(ref.v, Xc.T @ u / n, l1, l2, tv, op)
    assert f - f_ref <= info["gaps"][0] + 1e-10
    assert info["gaps"][0] <= 1e-8 * 2 * l2 * 0.5 * (y @ y) * 1.0001
    # deflation: d is the least-squares scale of the rank-one fit
    d = info["d"][0]
    assert d == pytest.approx(u @ Xc @ v / (v @ v))


def test_both_solvers_reach_similar_first_components(small_data):
    kw = dict(alpha=0.3, l1_ratio=0.1, tv_ratio=0.2, tol=1e-6)
    a = SPCATV(1, solver="dual", **kw).fit(small_data)
    b = SPCATV(1, solver="conesta", **kw).fit(small_data)
    assert abs(a.components_[0] @ b.components_[0]) > 0.999


def test_transform_inverse_transform(small_data):
    model = SPCATV(3, alpha=0.2).fit(small_data)
    S = model.transform(small_data)
    assert S.shape == (30, 3)
    R = model.inverse_transform(S)
    # projecting the reconstruction again is the identity (least-squares scores)
    np.testing.assert_allclose(model.transform(R), S, atol=1e-10)
    np.testing.assert_allclose(model.fit_transform(small_data), S, atol=1e-10)
    # adjusted variance (QR of the scores) of unit-norm loadings: the first is
    # ||Xc c_1||^2 / ||Xc||_F^2; none exceeds PCA's first, and the total is at
    # most PCA's top-3 total (Ky Fan); sparse loadings are not ordered by it.
    evr, pca = model.explained_variance_ratio_, model.pca_explained_variance_ratio_
    Xc = small_data - small_data.mean(0)
    c1 = model.components_[0]
    assert evr[0] == pytest.approx(np.sum((Xc @ c1) ** 2) / np.sum(Xc**2), rel=1e-10)
    assert np.all(evr > 0)
    assert evr.max() <= pca[0] * (1 + 1e-10)
    assert evr.sum() <= pca.sum() * (1 + 1e-10)


def test_parametrisation_round_trip():
    l1, l2, tv = weights_from_ratios(2.0, 0.25, 0.5)
    assert (l1, l2, tv) == (0.5, 0.5, 1.0)
    np.testing.assert_allclose(ratios_from_weights(l1, l2, tv), (2.0, 0.25, 0.5))


def test_convergence_warning_carries_gap_and_tol(small_data):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SPCATV(1, alpha=0.3, tol=1e-12, max_inner_iter=3, max_iter=2).fit(small_data)
    messages = [str(w.message) for w in caught if w.category is ConvergenceWarning]
    assert any("certified gap" in m and "tol=1e-12" in m for m in messages), messages
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        SPCATV(1, alpha=0.3, max_iter=1).fit(small_data)


def test_too_strong_penalty_warns_and_gives_zero(small_data):
    with pytest.warns(UserWarning, match="identically zero"):
        model = SPCATV(2, alpha=100.0, l1_ratio=0.5, tv_ratio=0.0).fit(small_data)
    assert not np.any(model.components_)


def test_random_init_is_reproducible(small_data):
    kw = dict(alpha=0.2, init="random", random_state=3)
    a = SPCATV(2, **kw).fit(small_data).components_
    b = SPCATV(2, **kw).fit(small_data).components_
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "kwargs, X, match",
    [
        ({}, "nan", "NaN"),
        ({}, "inf", "NaN or inf"),
        (dict(l1_ratio=0.6, tv_ratio=0.4), None, "l1_ratio \\+ tv_ratio"),
        (dict(alpha=-1.0), None, "alpha"),
        (dict(l1_ratio=-0.1), None, "l1_ratio"),
        (dict(tv_ratio=-0.1), None, "tv_ratio"),
        (dict(operator=chain_operator(7)), None, "operator"),
        (dict(n_components=31), None, "n_components"),
        (dict(n_components=0), None, "n_components"),
        ({}, "constant", "constant"),
        (dict(solver="newton"), None, "solver"),
        (dict(tol=0), None, "tol"),
    ],
)
def test_bad_input(kwargs, X, match, small_data):
    data = small_data.copy()
    if X == "nan":
        data[3, 4] = np.nan
    elif X == "inf":
        data[3, 4] = np.inf
    elif X == "constant":
        data = np.ones_like(data)
    with pytest.raises((ValueError, TypeError), match=match):
        SPCATV(**kwargs).fit(data)


def test_spca_tv_bad_weights(small_data):
    with pytest.raises(ValueError, match="l2"):
        spca_tv(small_data, 1, l1=0.1, l2=0.0, tv=0.1)
    with pytest.raises(ValueError, match="tv"):
        spca_tv(small_data, 1, l1=0.1, l2=1.0, tv=-0.1)


@parametrize_with_checks([SPCATV(n_components=1, alpha=0.01), SPCATV(n_components=1)])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)
