"""Structured sparse PCA (Jenatton, Obozinski, Bach 2010), grid half-space
groups and the group-lasso operator."""

import warnings

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from sklearn.decomposition import SparsePCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from neurospca import (
    SSPCA,
    grid_halfspace_groups,
    group_lasso_operator,
    sspca,
    stack_operators,
    tv_from_mask,
)
from neurospca.datasets import make_structured_images
from neurospca.decomposition._sspca import _membership, _objective, structured_norm
from neurospca.groups import check_groups

cp = pytest.importorskip("cvxpy")


# ------------------------------------------------------------------ grid groups


def test_grid_groups_count_2d_3d():
    # each direction with K distinct values of <o, x> gives 2 (K - 1) groups
    assert len(grid_halfspace_groups((5, 7), diagonals=False)) == 2 * 4 + 2 * 6
    # diagonals (1, 1) and (1, -1) take h + w - 1 values each
    assert len(grid_halfspace_groups((6, 6))) == 2 * 5 * 2 + 2 * 2 * 10
    assert len(grid_halfspace_groups((3, 4, 5), diagonals=False)) == 2 * (2 + 3 + 4)
    g3 = grid_halfspace_groups((3, 4, 5))
    assert len(g3) == 2 * (2 + 3 + 4) + 2 * ((3 + 4 - 2) * 2 + (3 + 5 - 2) * 2 + (4 + 5 - 2) * 2)


def test_grid_groups_are_half_spaces_and_give_rectangles():
    h, w = 7, 9
    groups = grid_halfspace_groups((h, w), diagonals=False)
    yy, xx = np.mgrid[:h, :w]
    yy, xx = yy.ravel(), xx.ravel()
    for g in groups:
        ind = np.zeros(h * w, bool)
        ind[g] = True
        # a half-space: a threshold on y or on x
        ok = any(
            np.array_equal(ind, cmp(c, t))
            for c in (yy, xx)
            for t in range(10)
            for cmp in (np.less_equal, np.greater_equal)
        )
        assert ok
    rng = np.random.default_rng(0)
    for _ in range(50):
        pick = rng.choice(len(groups), size=rng.integers(1, 6), replace=False)
        zero = np.zeros(h * w, bool)
        for k in pick:
            zero[groups[k]] = True
        supp = ~zero
        if supp.any():  # the complement of a union of half-spaces is a rectangle
            box = (
                (yy >= yy[supp].min())
                & (yy <= yy[supp].max())
                & (xx >= xx[supp].min())
                & (xx <= xx[supp].max())
            )
            np.testing.assert_array_equal(supp, box)


def test_grid_groups_with_mask():
    rng = np.random.default_rng(1)
    mask = rng.random((6, 8)) > 0.3
    groups = grid_halfspace_groups(mask=mask)
    full = grid_halfspace_groups(mask.shape)
    col = -np.ones(mask.size, dtype=int)
    col[mask.ravel()] = np.arange(mask.sum())
    restricted = {tuple(np.sort(col[g][col[g] >= 0])) for g in full}
    assert all(tuple(g) in restricted for g in groups)
    assert all(0 < g.size < mask.sum() for g in groups)
    assert len({tuple(g) for g in groups}) == len(groups)  # no duplicates
    check_groups(groups, int(mask.sum()))  # they cover the mask
    with pytest.raises(TypeError, match="mask must be a boolean"):
        grid_halfspace_groups(mask=mask.astype(int))
    with pytest.raises(ValueError, match="mask is empty"):
        grid_halfspace_groups(mask=np.zeros((3, 3), bool))
    with pytest.raises(ValueError, match="2-D or 3-D"):
        grid_halfspace_groups((5,))


# -------------------------------------------------------- group-lasso operator


def test_group_lasso_operator_value_and_norm():
    rng = np.random.default_rng(0)
    groups = grid_halfspace_groups((5, 6))
    weights = [rng.uniform(0.5, 2.0, g.size) for g in groups]
    op = group_lasso_operator(groups, 30, weights)
    v = rng.standard_normal(30)
    expected = sum(np.linalg.norm(d * v[g]) for g, d in zip(groups, weights, strict=True))
    assert op.value(v) == pytest.approx(expected, rel=1e-12)
    assert structured_norm(v, groups, exponent=1.0, weights=weights) == pytest.approx(
        expected, rel=1e-12
    )
    dense = op.matrix.toarray()
    assert op.norm2 == pytest.approx(np.linalg.norm(dense, 2) ** 2, rel=1e-12)
    assert op.n_groups == len(groups)
    # per-group scalar weights
    op2 = group_lasso_operator(groups, 30, np.full(len(groups), 2.0))
    assert op2.value(v) == pytest.approx(2 * group_lasso_operator(groups, 30).value(v))


@pytest.mark.parametrize("with_tv", [False, True])
def test_group_lasso_operator_through_engine_solvers(with_tv):
    from neurospca.solvers import conesta, prox_dual
    from tests._helpers import cvxpy_prox

    rng = np.random.default_rng(2)
    shape = (5, 5)
    groups = grid_halfspace_groups(shape)
    op = group_lasso_operator(groups, 25)
    if with_tv:
        op = stack_operators([op, tv_from_mask(np.ones(shape, bool))], weights=[1.0, 0.5])
    y = rng.standard_normal(25)
    ref, f_ref = cvxpy_prox(y, op, 0.05, 0.1)
    res = prox_dual(y, op, 0.05, 0.1, tol=1e-10, max_iter=100000)
    np.testing.assert_allclose(res.v, ref, atol=1e-5)
    assert res.objective <= f_ref + 1e-7
    res = conesta(y, op, 0.05, 0.1, tol=1e-7)
    assert res.objective <= f_ref + 1e-5 * abs(f_ref)
    np.testing.assert_allclose(res.v, ref, atol=5e-3)


def test_group_lasso_operator_bad_input():
    with pytest.raises(ValueError, match="outside"):
        group_lasso_operator([[0, 5]], 4)
    with pytest.raises(ValueError, match="group_weights must be > 0"):
        group_lasso_operator([[0, 1], [2, 3]], 4, [1.0, -1.0])
    with pytest.raises(ValueError, match="n_features"):
        group_lasso_operator([[0, 1]], 0)
    with pytest.raises(TypeError, match="ints"):
        group_lasso_operator([[0.5, 1.0]], 4)


# ------------------------------------------------------------------ the model


def test_variational_lemma():
    """Lemma 3.1: ||y||_alpha = min_z 1/2 sum y^2/z + 1/2 ||z||_beta, attained at
    z = |y|^(2-alpha) ||y||_alpha^(alpha-1)."""
    rng = np.random.default_rng(0)
    y = rng.standard_normal(7)
    for alpha in (0.5, 0.8, 1.0):
        beta = alpha / (2 - alpha)
        na = (np.abs(y) ** alpha).sum() ** (1 / alpha)

        def f(z, beta=beta):
            return 0.5 * (y**2 / z).sum() + 0.5 * (z**beta).sum() ** (1 / beta)

        zs = np.abs(y) ** (2 - alpha) * na ** (alpha - 1)
        assert f(zs) == pytest.approx(na, rel=1e-12)
        for _ in range(20):
            assert f(zs * np.exp(0.3 * rng.standard_normal(7))) >= na - 1e-12


def test_convex_case_matches_cvxpy_given_codes():
    """alpha = 1: at convergence V solves the convex group-lasso problem in V
    with U fixed (checked against cvxpy on the objective)."""
    rng = np.random.default_rng(0)
    n, h = 30, 6
    p = h * h
    X = rng.standard_normal((n, p))
    X[:, :12] += 3 * rng.standard_normal((n, 1))
    X -= X.mean(0)
    groups = grid_halfspace_groups((h, h))
    gs, wts = check_groups(groups, p)
    M = _membership(gs, wts, p)
    for lam in (3e-4, 1e-3):
        U, V, info = sspca(
            X,
            2,
            groups=groups,
            alpha=lam,
            exponent=1.0,
            max_iter=5000,
            tol=1e-12,
            eps=1e-8,
            random_state=0,
        )
        Vc = cp.Variable((p, 2))
        obj = cp.sum_squares(X - U @ Vc.T) / (2 * n * p) + lam * sum(
            cp.norm(Vc[g, k], 2) for g in groups for k in range(2)
        )
        cp.Problem(cp.Minimize(obj)).solve(solver=cp.CLARABEL)
        f_ours = _objective(X, U, V, M, lam, 1.0)
        f_ref = _objective(X, U, Vc.value, M, lam, 1.0)
        assert f_ours <= f_ref + 1e-8 * abs(f_ref)
        assert np.abs(V).max() > 0.1  # not the trivial zero solution


def test_objective_decreases_and_restarts():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 64))
    X[:, 8:24] += 2 * rng.standard_normal((40, 1))
    X -= X.mean(0)
    groups = grid_halfspace_groups((8, 8))
    for alpha in (0.5, 1.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _, _, info = sspca(
                X,
                2,
                groups=groups,
                alpha=1e-5 if alpha == 1 else 1e-7,
                exponent=alpha,
                random_state=0,
                max_iter=300,
                tol=1e-8,
            )
        obj = np.asarray(info["objective"])
        assert np.all(np.diff(obj) <= 1e-10 * obj[:-1])
    _, _, info = sspca(X, 2, groups=groups, alpha=1e-7, n_init=4, random_state=0)
    assert info["objective"][-1] == pytest.approx(info["objectives"].min())
    assert info["objectives"].size == 4


def test_code_constraints():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((30, 16))
    X -= X.mean(0)
    for cons, order in (("l2", 2), ("l1", 1)):
        U, V, _ = sspca(X, 3, alpha=1e-4, exponent=1.0, code_constraint=cons, random_state=0)
        assert np.all(np.linalg.norm(U, ord=order, axis=0) <= 1 + 1e-10)
        # the constraint is active (the loss wants large codes)
        assert np.all(np.linalg.norm(U, ord=order, axis=0) > 0.999)


# ---------------------------------------------------- support recovery vs SPCA


def make_images(seed, n=100, **kwargs):
    X, supports, _ = make_structured_images(seed, n_samples=n, **kwargs)
    return X, supports


def support_dice(components, supports, threshold=0.05):
    """Dice of thresholded supports (|v| > threshold max|v|), matched by Hungarian.

    Returns the Dice of each true support and its matched estimated support."""
    est = np.abs(components) > threshold * np.abs(components).max(axis=1, keepdims=True)
    D = np.array([[2 * (e & s).sum() / max(e.sum() + s.sum(), 1) for s in supports] for e in est])
    r, c = linear_sum_assignment(-D)
    order = np.empty(len(supports), dtype=int)
    order[c] = r
    return D[order, np.arange(len(supports))], est[order]


def test_sspca_recovers_convex_supports_where_sparse_pca_does_not():
    # weak pixels (loadings fall to 30% of their peak at the support's edge,
    # noise 2.5) and overlapping supports: docs/figures/make_sspca_figure.py
    from scipy import ndimage

    groups = grid_halfspace_groups((16, 16))
    eight = np.ones((3, 3))
    for seed in (0, 1, 2):
        X, supports = make_images(seed, noise=2.5, floor=0.3, layout="overlapping")
        ss = SSPCA(3, alpha=2e-7, exponent=0.5, groups=groups, n_init=10, random_state=0).fit(X)
        d_ss, est_ss = support_dice(ss.components_, supports)
        # plain l1 sparse PCA with its best penalty (an oracle: 4 and 5 are the
        # best of 0.5 ... 16 on these seeds, see the figure script)
        d_sp, est_sp = max(
            (
                support_dice(
                    SparsePCA(3, alpha=a, method="cd", random_state=0).fit(X).components_, supports
                )
                for a in (4, 5)
            ),
            key=lambda t: t[0].mean(),
        )
        pieces_ss = [ndimage.label(e.reshape(16, 16), structure=eight)[1] for e in est_ss]
        pieces_sp = [ndimage.label(e.reshape(16, 16), structure=eight)[1] for e in est_sp]
        # SSPCA: each support found, in one piece
        assert d_ss.mean() >= 0.92 and d_ss.min() >= 0.88, (seed, d_ss)
        assert pieces_ss == [1, 1, 1], (seed, pieces_ss)
        # l1: lower Dice, and supports broken into scattered pieces
        assert d_sp.mean() <= 0.87, (seed, d_sp)
        assert d_ss.mean() - d_sp.mean() >= 0.08, (seed, d_ss, d_sp)
        assert sum(pieces_sp) >= 6, (seed, pieces_sp)
        assert ss.supports_.shape == (3, 256)


def test_estimator_attributes_and_transform():
    X, _ = make_images(0, n=40)
    model = SSPCA(3, alpha=1e-7, groups=grid_halfspace_groups((16, 16)), random_state=0)
    S = model.fit_transform(X)
    assert S.shape == (40, 3)
    assert model.components_.shape == (3, 256)
    np.testing.assert_allclose(np.linalg.norm(model.components_, axis=1), 1.0)
    assert model.loadings_.shape == (256, 3) and model.scores_.shape == (40, 3)
    assert model.eta_.shape == (len(grid_halfspace_groups((16, 16))), 3)
    # least-squares scores: reconstruction is the projection on span(components)
    R = model.inverse_transform(S)
    C = model.components_
    P = C.T @ np.linalg.pinv(C @ C.T) @ C
    np.testing.assert_allclose(R - model.mean_, (X - model.mean_) @ P, atol=1e-8)
    # the fitted U V^T is nearly as good a rank-3 fit as PCA (the optimum)
    Xc = X - model.mean_
    err = np.linalg.norm(Xc - model.scores_ @ model.loadings_.T)
    s = np.linalg.svd(Xc, compute_uv=False)
    err_pca = np.sqrt((s[3:] ** 2).sum())
    assert err_pca <= err <= 1.05 * err_pca


def test_convergence_warning():
    X, _ = make_images(0, n=20)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        SSPCA(2, alpha=1e-7, max_iter=1, random_state=0).fit(X)


# -------------------------------------------------------------------- bad input


def test_bad_input():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 16))
    groups = grid_halfspace_groups((4, 4))
    Xn = X.copy()
    Xn[2, 3] = np.nan
    with pytest.raises(ValueError, match="X contains 1 NaN"):
        SSPCA(2, groups=groups).fit(Xn)
    with pytest.raises(ValueError, match="n_components=11 must be between 1 and"):
        SSPCA(11).fit(X)
    with pytest.raises(TypeError, match="'n_components' parameter of SSPCA must be an int"):
        SSPCA(2.5).fit(X)
    with pytest.raises(ValueError, match="constant"):
        SSPCA(2).fit(np.ones((10, 16)))
    with pytest.raises(ValueError, match="group_weights must be > 0"):
        SSPCA(2, groups=groups, group_weights=-np.ones(len(groups))).fit(X)
    with pytest.raises(ValueError, match="group_weights has 2 entries"):
        SSPCA(2, groups=groups, group_weights=[np.ones(3), np.ones(2)]).fit(X)
    with pytest.raises(ValueError, match="groups must cover every feature"):
        SSPCA(2, groups=[[0, 1, 2]]).fit(X)
    with pytest.raises(ValueError, match=r"groups\[0\] has indices outside"):
        SSPCA(2, groups=[[0, 99]] + groups).fit(X)
    # the function's own checks (the estimator's are _parameter_constraints,
    # tests/test_param_validation.py)
    Xc = X - X.mean(0)
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        sspca(Xc, 2, alpha=-1.0)
    with pytest.raises(ValueError, match="alpha_rel must be > 0"):
        sspca(Xc, 2, alpha_rel=0.0)
    with pytest.raises(ValueError, match="'alpha_rel' parameter of SSPCA must be"):
        SSPCA(2, alpha_rel=-1.0).fit(X)
    with pytest.raises(ValueError, match="exponent must be in"):
        sspca(Xc, 2, exponent=1.5)
    with pytest.raises(ValueError, match="exponent must be > 0"):
        sspca(Xc, 2, exponent=0.0)
    with pytest.raises(ValueError, match="code_constraint must be one of"):
        sspca(Xc, 2, code_constraint="linf")
    with pytest.raises(ValueError, match="n_init must be an int >= 1"):
        sspca(Xc, 2, n_init=0)
    with pytest.raises(ValueError, match="'support_threshold' parameter of SSPCA must be"):
        SSPCA(2, support_threshold=-1).fit(X)
    model = SSPCA(2, groups=groups, random_state=0).fit(X)
    with pytest.raises(ValueError, match="16 features"):
        model.transform(X[:, :5])
    with pytest.raises(ValueError, match=r"X must have shape \(n_samples, 2\)"):
        model.inverse_transform(np.ones((3, 4)))


@parametrize_with_checks(
    [SSPCA(2, max_iter=20), SSPCA(2, exponent=1.0, code_constraint="l1", max_iter=20)]
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


# ------------------------------------------- the scale-free default (issue 20, item 5)


def _halfspace_problem(seed, shape=(16, 16), exponent=0.5):
    from neurospca.decomposition._sspca_scale import alpha_max

    X, supports = make_images(seed)
    Xc = X - X.mean(0)
    groups = grid_halfspace_groups(shape)
    gs, wts = check_groups(groups, Xc.shape[1])
    Msq = _membership(gs, wts, Xc.shape[1])
    return X, Xc, supports, groups, Msq, alpha_max(Xc, Msq, exponent, 3)


def test_alpha_max_is_exact_on_singletons():
    """Singleton groups: alpha_max = max_j ||X_j|| / (n p) for every exponent, and
    V = 0 is optimal from there on (the loss gains nothing along any axis)."""
    from neurospca.decomposition._sspca_scale import alpha_max

    rng = np.random.default_rng(3)
    X = rng.standard_normal((20, 9)) * rng.uniform(0.5, 3.0, 9)
    gs, wts = check_groups([np.array([j]) for j in range(9)], 9)
    Msq = _membership(gs, wts, 9)
    expected = np.linalg.norm(X, axis=0).max() / X.size
    for q in (0.5, 1.0):
        assert alpha_max(X, Msq, q, 2) == pytest.approx(expected, rel=1e-12)
    # l1 codes: the dual norm is the largest entry
    assert alpha_max(X, Msq, 1.0, 2, code_constraint="l1") == pytest.approx(
        np.abs(X).max() / X.size, rel=1e-12
    )


def test_alpha_max_is_a_lower_bound_and_the_collapse_point():
    """Below alpha_max some direction d lowers the objective from V = 0 (a
    lower bound, checked on the ratio); fits keep every component at half of it
    and lose them all at twice it (measured: all lost by 1.25-1.5 x on 20 sets).
    Scale-free: X -> 10 X scales alpha_max by 10."""
    X, Xc, _, groups, Msq, amax = _halfspace_problem(20)
    from neurospca.decomposition._sspca_scale import alpha_max

    assert alpha_max(10 * Xc, Msq, 0.5, 3) == pytest.approx(10 * amax, rel=1e-10)
    n, p = Xc.shape
    rng = np.random.default_rng(0)
    for _ in range(20):  # no random direction beats the candidates by much
        d = rng.standard_normal(p) * (rng.random(p) < 0.2)
        nrm = np.sqrt(Msq @ d**2)
        ratio = np.linalg.norm(Xc @ d) / ((np.sqrt(nrm).sum()) ** 2 * n * p)
        assert ratio <= amax
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        full = SSPCA(3, alpha=2 * amax, groups=groups, random_state=0).fit(X)
    half = SSPCA(3, alpha_rel=0.5, groups=groups, random_state=0).fit(X)
    assert full.collapsed_.all() and not half.collapsed_.any()
    assert half.alpha_ == pytest.approx(0.5 * amax) and half.alpha_rel_ == pytest.approx(0.5)
    assert half.alpha_max_ == pytest.approx(amax)


@pytest.mark.parametrize("seed", [20, 21, 22])
def test_default_is_non_empty_on_halfspace_groups(seed):
    """The issue's case: with the paper's half-space groups the default fit keeps
    every component, with supports that are neither empty nor the whole grid
    and match the planted ones (the old default alpha=1e-3 collapsed them all)."""
    X, supports = make_images(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no collapse warning
        model = SSPCA(3, groups=grid_halfspace_groups((16, 16)), random_state=0).fit(X)
    assert not model.collapsed_.any()
    sizes = model.supports_.sum(axis=1)
    assert np.all(sizes >= 10) and np.all(sizes <= 128), sizes
    np.testing.assert_allclose(np.linalg.norm(model.components_, axis=1), 1.0)
    dice, _ = support_dice(model.components_, supports)
    assert dice.mean() >= 0.75, dice


def test_collapse_warns_and_leaves_empty_supports():
    """At a huge alpha every component collapses: a UserWarning names alpha and
    the fix, components_ rows are zero and supports_ are empty (no renormalised
    noise); the raw loadings stay in loadings_."""
    X, _ = make_images(23)
    groups = grid_halfspace_groups((16, 16))
    with pytest.warns(UserWarning, match=r"collapsed: at alpha=0\.001.*Decrease alpha_rel"):
        model = SSPCA(3, alpha=1e-3, groups=groups, random_state=0).fit(X)
    assert model.collapsed_.all()
    assert not model.supports_.any()
    assert not np.any(model.components_)
    assert model.alpha_ == 1e-3 and model.alpha_rel_ > 100
    assert np.linalg.norm(model.loadings_) < 1e-6 * np.linalg.norm(X - model.mean_)
    assert np.all(model.transform(X) == 0)
    # the function says the same
    with pytest.warns(UserWarning, match="collapsed"):
        _, _, info = sspca(X - X.mean(0), 2, groups=groups, alpha_rel=3.0, random_state=0)
    assert info["collapsed"].all() and info["alpha"] == pytest.approx(3 * info["alpha_max"])
