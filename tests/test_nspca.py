"""Nonnegative sparse PCA (Zass and Shashua): mathematics, kernels, estimator."""

import numpy as np
import pytest
from neurospca._kernels._nspca import best_entry, nspca_sweep
from scipy.optimize import minimize_scalar
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from neurospca import NonnegativeSparsePCA, nspca
from neurospca.decomposition import _nspca as nspca_mod
from neurospca.decomposition._base import adjusted_variance
from neurospca.decomposition._nspca import (
    _best_entry_numpy,
    _entry_coefficients,
    _sweep_numpy,
    nspca_objective,
)

from ._helpers import sparse_pca_at_cardinality


def _cov(seed=0, n=60, p=15):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) @ rng.standard_normal((p, p)) * 0.5
    X -= X.mean(axis=0)
    return X.T @ X / n


def _parts_data(seed=0, n=300, p=24, n_parts=3, noise=0.3):
    """Nonnegative overlapping parts model: three supports of 10, overlap 3."""
    rng = np.random.default_rng(seed)
    W = np.zeros((n_parts, p))
    for i in range(n_parts):
        W[i, 7 * i : 7 * i + 10] = rng.uniform(0.5, 1.5, 10)
    X = rng.standard_normal((n, n_parts)) * np.array([3.0, 2.5, 2.0]) @ W
    return X + noise * rng.standard_normal((n, p))


def _caches(C, U):
    Ut = np.ascontiguousarray(U.T)
    return Ut, np.ascontiguousarray(Ut @ C), Ut @ Ut.T


# --------------------------------------------------------------------- scalar update


def test_entry_coefficients_match_the_objective():
    """c1, c2 from the caches reproduce F(U) as a quartic in one entry."""
    rng = np.random.default_rng(1)
    C = _cov(1, p=8)
    U = np.abs(rng.standard_normal((8, 3)))
    alpha, beta = 0.7, 0.2
    Ut, AUt, G = _caches(C, U)
    for r, s in [(0, 0), (2, 5), (1, 7)]:
        c1, c2 = _entry_coefficients(C, Ut, AUt, G, alpha, beta, r, s)
        x0 = U[s, r]
        for x in [0.0, 0.3, 1.7]:
            V = U.copy()
            V[s, r] = x
            lhs = nspca_objective(C, V, alpha, beta) - nspca_objective(C, U, alpha, beta)
            rhs = nspca_mod._quartic(x, alpha, c2, c1) - nspca_mod._quartic(x0, alpha, c2, c1)
            assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_entry_update_is_the_exact_maximiser_on_half_line(seed):
    """Kernel and twin return the global maximiser over [0, inf) of eq. 4,
    checked against a dense grid refined by scipy's bounded minimize_scalar."""
    rng = np.random.default_rng(seed)
    for _ in range(300):
        alpha = 10 ** rng.uniform(-2, 2)
        c2 = rng.standard_normal() * 10 ** rng.uniform(-2, 2)
        c1 = rng.standard_normal() * 10 ** rng.uniform(-2, 2)

        def f(t, alpha=alpha, c2=c2, c1=c1):
            return -alpha / 4 * t**4 + c2 / 2 * t**2 + c1 * t

        hi = 2.0 * (1.0 + np.sqrt(abs(c2) / alpha) + abs(c1 / alpha) ** (1 / 3))
        grid = np.linspace(0.0, hi, 20001)
        j = int(np.argmax(f(grid)))
        lo_b, hi_b = grid[max(j - 1, 0)], grid[min(j + 1, grid.size - 1)]
        res = minimize_scalar(
            lambda t: -f(t), bounds=(lo_b, hi_b), method="bounded", options={"xatol": 1e-12}
        )
        ref = max(f(grid[j]), -res.fun, 0.0)
        x_c = best_entry(alpha, c2, c1)
        x_n = _best_entry_numpy(alpha, c2, c1)
        assert x_c >= 0.0
        assert f(x_c) >= ref - 1e-9 * max(1.0, abs(ref))
        assert x_n == pytest.approx(x_c, rel=1e-12, abs=1e-14)


def test_entry_update_known_cases():
    # c1 <= 0, c2 <= 0: the quartic decreases on [0, inf): stay at zero
    assert best_entry(1.0, -1.0, -0.5) == 0.0
    # c2 = 0: maximiser of -t^4/4 + c1 t is cbrt(c1)
    assert best_entry(1.0, 0.0, 8.0) == pytest.approx(2.0, rel=1e-14)
    # c1 = 0, c2 > 0: -a t^4/4 + c2 t^2/2 peaks at sqrt(c2/a)
    assert best_entry(2.0, 8.0, 0.0) == pytest.approx(2.0, rel=1e-14)
    # three real roots; the right local maximum beats zero
    alpha, c2, c1 = 1.0, 3.0, -0.5
    x = best_entry(alpha, c2, c1)
    assert -alpha * x**3 + c2 * x + c1 == pytest.approx(0.0, abs=1e-12)
    assert x > 1.0


# --------------------------------------------------------------------- sweep kernels


@pytest.mark.parametrize("seed", range(4))
def test_cython_sweep_equals_numpy_twin(seed):
    rng = np.random.default_rng(seed)
    p, K = rng.integers(5, 30), rng.integers(1, 5)
    C = _cov(seed, p=p)
    U = np.abs(rng.standard_normal((p, K))) * (rng.random((p, K)) < 0.7)
    alpha, beta = 10 ** rng.uniform(-1, 1), rng.uniform(0, 0.3)
    a = _caches(C, U)
    b = tuple(x.copy() for x in a)
    for _ in range(3):
        gain_c = nspca_sweep(C, *a, alpha, beta)
        gain_n = _sweep_numpy(C, *b, alpha, beta)
        assert gain_c == pytest.approx(gain_n, rel=1e-9, abs=1e-12)
        for x, y in zip(a, b, strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


def test_sweep_caches_stay_exact_and_gain_is_the_objective_increase():
    C = _cov(3, p=12)
    U = np.abs(np.random.default_rng(3).standard_normal((12, 3)))
    alpha, beta = 0.5, 0.05
    Ut, AUt, G = _caches(C, U)
    before = nspca_objective(C, Ut.T, alpha, beta)
    gain = nspca_sweep(C, Ut, AUt, G, alpha, beta)
    after = nspca_objective(C, Ut.T, alpha, beta)
    assert after - before == pytest.approx(gain, rel=1e-9)
    assert gain > 0
    np.testing.assert_allclose(AUt, Ut @ C, atol=1e-12)
    np.testing.assert_allclose(G, Ut @ Ut.T, atol=1e-12)
    assert np.all(Ut >= 0)


# --------------------------------------------------------------------- the solver


@pytest.mark.parametrize("kernels", ["cython", "numpy"])
@pytest.mark.parametrize("init", ["svd", "random"])
def test_objective_never_decreases(kernels, init):
    C = _cov(4, p=20)
    alpha, beta = 0.3, 0.05
    U, info = nspca(
        C,
        3,
        alpha=alpha,
        beta=beta,
        init=init,
        random_state=0,
        kernels=kernels,
        tol=1e-10,
        max_iter=60,
        n_init=1,
    )
    hist = info["objective"]
    assert len(hist) > 5
    assert np.all(np.diff(hist) >= -1e-12 * np.abs(hist[1:]))
    assert hist[-1] == pytest.approx(nspca_objective(C, U, alpha, beta), rel=1e-10)
    assert np.all(U >= 0)


def test_cython_and_numpy_solvers_agree():
    C = _cov(5, p=12)
    U1, i1 = nspca(C, 3, alpha=0.5, beta=0.02, kernels="cython", n_init=1)
    U2, i2 = nspca(C, 3, alpha=0.5, beta=0.02, kernels="numpy", n_init=1)
    assert i1["n_iter"] == i2["n_iter"]
    np.testing.assert_allclose(U1, U2, rtol=1e-8, atol=1e-10)


def test_fixed_point_is_a_kkt_point():
    """At convergence the gradient is <= 0 on zeros and ~0 on positives."""
    C = _cov(6, p=15)
    alpha, beta = 0.4, 0.05
    U, info = nspca(C, 3, alpha=alpha, beta=beta, tol=1e-14, max_iter=2000, n_init=1)
    grad = C @ U + alpha * U @ (np.eye(3) - U.T @ U) - beta
    pos = U > 0
    assert np.max(np.abs(grad[pos])) < 1e-5
    assert np.max(grad[~pos], initial=-np.inf) <= 1e-8


def test_restarts_keep_the_best_run():
    C = _cov(7, p=15)
    U, info = nspca(C, 3, alpha=0.2, beta=0.05, init="random", n_init=4, random_state=0)
    assert info["objectives"].shape == (4,)
    assert info["objective"][-1] == pytest.approx(info["objectives"].max())


def test_nonnegativity_forces_disjoint_supports_for_large_alpha():
    """Paper eq. 1: orthonormal and nonnegative => disjoint supports."""
    C = _cov(8, p=16)
    U, _ = nspca(C, 3, alpha=1e3, beta=0.0, tol=1e-9, max_iter=2000, n_init=1)
    G = U.T @ U
    assert np.allclose(np.diag(G), 1.0, atol=5e-2)  # ||u_r||^2 ~ 1 + lambda / alpha
    assert np.max(np.abs(G - np.diag(np.diag(G)))) < 1e-2
    # each feature is (essentially) in one component only
    assert np.max(np.count_nonzero(U > 0.05, axis=1)) <= 1


# --------------------------------------------------------------------- alpha, beta effects (Fig. 3)


def test_overlap_falls_as_alpha_grows():
    X = _parts_data()
    alphas = [0.5, 2.0, 8.0, 32.0, 128.0]
    overlaps = [
        NonnegativeSparsePCA(3, alpha=a, beta=0.0, max_iter=500).fit(X).overlap_ for a in alphas
    ]
    assert np.all(np.diff(overlaps) < 0), overlaps
    assert overlaps[-1] < 0.1 * overlaps[0]


def test_cardinality_falls_as_beta_grows():
    X = _parts_data()
    betas = [0.0, 0.3, 1.0, 2.0, 3.0]
    cards = [
        NonnegativeSparsePCA(3, alpha=2.0, beta=b, max_iter=500).fit(X).cardinality_.sum()
        for b in betas
    ]
    assert np.all(np.diff(cards) <= 0), cards
    assert cards[-1] < cards[0]


def test_recovers_nonnegative_parts():
    X = _parts_data(noise=0.1)
    model = NonnegativeSparsePCA(3, alpha=20.0, beta=0.5, max_iter=500).fit(X)
    supports = [set(np.flatnonzero(c > 1e-2 * c.max())) for c in model.components_]
    truth = [set(range(7 * i, 7 * i + 10)) for i in range(3)]
    for t in truth:
        best = max(len(t & s) / len(t | s) for s in supports)
        assert best >= 0.6


# --------------------------------------------------------------------- several starts (issue 20)


def test_default_starts_keep_the_best_objective_and_are_reproducible():
    """n_init defaults to 10; the first start is the SVD start of n_init=1, so
    the kept objective is >= the single start's and >= every start's."""
    X = _parts_data(seed=3)
    assert NonnegativeSparsePCA().n_init == nspca_mod.DEFAULT_N_INIT == 10
    one = NonnegativeSparsePCA(3, alpha=10.0, beta=10.0, n_init=1).fit(X)
    many = NonnegativeSparsePCA(3, alpha=10.0, beta=10.0, random_state=0).fit(X)
    assert many.init_objectives_.shape == (10,)
    assert many.init_objectives_[0] == pytest.approx(one.objective_, rel=1e-12)
    assert many.objective_ == many.init_objectives_.max()
    assert np.all(many.objective_ >= many.init_objectives_)
    assert many.objective_ > one.objective_  # here a random start does better
    again = NonnegativeSparsePCA(3, alpha=10.0, beta=10.0, random_state=0).fit(X)
    np.testing.assert_array_equal(again.components_, many.components_)


def test_explained_variance_is_competitive_with_sparse_pca():
    """At matched cardinality (SparsePCA's alpha by bisection) the default
    explains >= 0.9x SparsePCA's adjusted variance on the seed where one start
    fell to 0.46x (benchmarks/RESULTS.md, issue 20, item 5)."""
    X = _parts_data(seed=3)
    Xc = X - X.mean(axis=0)
    C = Xc.T @ Xc / X.shape[0]
    ratios = {}
    for n_init in (1, 10):
        m = NonnegativeSparsePCA(3, alpha=10.0, beta=10.0, n_init=n_init, random_state=0).fit(X)
        comps, card = sparse_pca_at_cardinality(X, int(m.cardinality_.sum()))
        assert card == m.cardinality_.sum()
        ev_sp = adjusted_variance(C, comps)[1].sum()
        ratios[n_init] = m.explained_variance_ratio_.sum() / ev_sp
    assert ratios[10] >= 0.9, ratios
    assert ratios[1] < 0.6, ratios  # the single SVD start: a poor local maximum


# --------------------------------------------------------------------- estimator


def test_estimator_data_and_covariance_inputs_agree():
    X = _parts_data(n=100)
    Xc = X - X.mean(axis=0)
    C = Xc.T @ Xc / X.shape[0]
    m1 = NonnegativeSparsePCA(3, alpha=2.0, beta=0.1, random_state=0).fit(X)
    m2 = NonnegativeSparsePCA(3, alpha=2.0, beta=0.1, input="covariance", random_state=0).fit(C)
    np.testing.assert_allclose(m1.components_, m2.components_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(m1.mean_, X.mean(axis=0))
    assert m1.objective_ == pytest.approx(nspca_objective(C, m1.components_.T, 2.0, 0.1), rel=1e-10)
    assert m1.objective_history_[-1] == m1.objective_
    assert m1.n_iter_ >= 1
    assert m1.components_.shape == (3, X.shape[1])
    S = m1.transform(X)
    assert S.shape == (X.shape[0], 3)
    assert np.all(m1.explained_variance_ratio_ > 0)
    assert m1.explained_variance_ratio_.sum() <= 1 + 1e-12
    # transform is the least-squares fit: residual orthogonal to the components
    R = (X - m1.mean_) - m1.inverse_transform(S) + m1.mean_
    np.testing.assert_allclose(R @ m1.components_.T, 0, atol=1e-8)


def test_get_set_params_and_random_state():
    m = NonnegativeSparsePCA(2, alpha=3.0)
    assert m.get_params()["alpha"] == 3.0
    m.set_params(beta=0.5, init="random", random_state=3)
    X = _parts_data(n=80)
    a = m.fit(X).components_
    b = NonnegativeSparsePCA(2, alpha=3.0, beta=0.5, init="random", random_state=3).fit(X)
    np.testing.assert_array_equal(a, b.components_)


def test_convergence_warning():
    X = _parts_data(n=80)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        NonnegativeSparsePCA(3, alpha=1.0, tol=1e-15, max_iter=1).fit(X)


# --------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "params, X_kind, exc, match",
    [
        ({"alpha": -1.0}, "ok", ValueError, "alpha"),
        ({"alpha": 0.0}, "ok", ValueError, "alpha"),
        ({"beta": -0.1}, "ok", ValueError, "beta"),
        ({"alpha": "big"}, "ok", TypeError, "alpha"),
        ({"n_components": 50}, "ok", ValueError, "n_components"),
        ({"n_components": 0}, "ok", ValueError, "n_components"),
        ({"n_components": 2.5}, "ok", TypeError, "n_components"),
        ({}, "nan", ValueError, "NaN"),
        ({}, "inf", ValueError, "X contains inf"),
        ({}, "constant", ValueError, "constant"),
        ({"input": "covariance"}, "asym", ValueError, "symmetric"),
        ({"input": "covariance"}, "ok", ValueError, "square"),
        ({"input": "gram"}, "ok", ValueError, "input"),
        ({"init": "nope"}, "ok", ValueError, "init"),
        ({"max_iter": 0}, "ok", ValueError, "max_iter"),
        ({"kernels": "fortran"}, "ok", ValueError, "kernels"),
    ],
)
def test_bad_input(params, X_kind, exc, match):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 10))
    if X_kind == "nan":
        X[3, 2] = np.nan
    elif X_kind == "inf":
        X[0, 0] = np.inf
    elif X_kind == "constant":
        X = np.ones((20, 10))
    elif X_kind == "asym":
        X = rng.standard_normal((10, 10))
    with pytest.raises(exc, match=match):
        NonnegativeSparsePCA(**{"n_components": 2, **params}).fit(X)


def test_function_validates_covariance():
    with pytest.raises(ValueError, match="C must be symmetric"):
        nspca(np.arange(9.0).reshape(3, 3), 1, alpha=1.0)
    with pytest.raises(ValueError, match="U_init"):
        nspca(np.eye(3), 1, alpha=1.0, U_init=-np.ones((3, 1)))
    with pytest.raises(ValueError, match="n_components"):
        nspca(np.eye(3), 4, alpha=1.0)


@parametrize_with_checks([NonnegativeSparsePCA(n_components=1, max_iter=50)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
