"""SSPCA options: shared patterns (a partition of the components) and the
nonnegative (NMF-like) variant of Jenatton, Obozinski and Bach (2010, §3.2)."""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from sklearn.exceptions import ConvergenceWarning

from neurospca import SSPCA, grid_halfspace_groups
from neurospca.decomposition import sspca
from neurospca.decomposition._sspca_solver import _project_code

SHAPE = (10, 10)


def rect(y0, y1, x0, x1):
    m = np.zeros(SHAPE, dtype=bool)
    m[y0:y1, x0:x1] = True
    return m.ravel()


def dice(a, b):
    return 2 * (a & b).sum() / (a.sum() + b.sum())


def block_objective(X, U, V, groups, lam, alpha, partition):
    """Eq. (2) with the shared-pattern penalty, written out group by group."""
    n, p = X.shape
    loss = 0.5 * np.sum((X - U @ V.T) ** 2) / (n * p)
    pen = 0.0
    for block in partition:
        norms = np.array([np.linalg.norm(V[np.ix_(g, block)]) for g in groups])
        pen += np.sum(norms**alpha) ** (1 / alpha)
    return loss + lam * pen


def shared_data(seed, n=60):
    """Components 0 and 1 live on one rectangle with independent values; 2 on another."""
    rng = np.random.default_rng(seed)
    s1, s2 = rect(1, 6, 1, 7), rect(5, 10, 6, 10)
    V = np.zeros((100, 3))
    for k, s in enumerate((s1, s1, s2)):
        V[s, k] = rng.choice([-1, 1], s.sum()) * rng.uniform(0.5, 1.5, s.sum())
    V /= np.linalg.norm(V, axis=0)
    X = 6 * rng.standard_normal((n, 3)) @ V.T + 0.3 * rng.standard_normal((n, 100))
    return X - X.mean(0), (s1, s1, s2)


def test_singleton_partition_is_the_plain_model():
    X, _ = shared_data(0)
    groups = grid_halfspace_groups(SHAPE)
    kw = dict(groups=groups, alpha=1e-5, max_iter=30, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        U0, V0, i0 = sspca(X, 3, **kw)
        U1, V1, i1 = sspca(X, 3, partition=[[2], [0], [1]], **kw)
    np.testing.assert_allclose(U1, U0, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(V1, V0, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(i1["objective"], i0["objective"], rtol=1e-12)


@pytest.mark.parametrize("alpha", [0.5, 1.0])
def test_shared_objective_is_the_block_norm_and_decreases(alpha):
    X, _ = shared_data(1)
    groups = grid_halfspace_groups(SHAPE)
    partition = [[0, 2], [1]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        U, V, info = sspca(
            X,
            3,
            groups=groups,
            alpha=1e-5,
            exponent=alpha,
            partition=partition,
            max_iter=40,
            random_state=0,
        )
    assert info["eta"].shape == (len(groups), 2)
    obj = np.asarray(info["objective"])
    np.testing.assert_allclose(
        obj[-1], block_objective(X, U, V, groups, 1e-5, alpha, partition), rtol=1e-10
    )
    # cyclic exact minimisation of a majoriser: the objective never increases
    assert np.all(np.diff(obj) <= 1e-10 * np.abs(obj[:-1]))


def matched_dice(supports, truth):
    D = np.array([[dice(a, b) for b in truth] for a in supports])
    r, c = linear_sum_assignment(-D)
    return D[r, c].mean()


def test_shared_patterns_share_the_support():
    groups = grid_halfspace_groups(SHAPE)
    kw = dict(alpha=1e-6, groups=groups, n_init=5, tol=1e-6, support_threshold=0.05, random_state=0)
    shared, alone = [], []
    for seed in range(5):
        X, truth = shared_data(seed)
        S = SSPCA(3, partition=[[0, 1], [2]], **kw).fit(X).supports_
        # the block is a constraint of the model: 0 and 1 share one support...
        assert dice(S[0], S[1]) >= 0.95, seed
        # ...the true shared rectangle, and 2 finds the other one
        assert dice(S[0] | S[1], truth[0]) >= 0.95, (seed, dice(S[0] | S[1], truth[0]))
        assert dice(S[2], truth[2]) >= 0.95, (seed, dice(S[2], truth[2]))
        shared.append(matched_dice(S, truth))
        alone.append(matched_dice(SSPCA(3, **kw).fit(X).supports_, truth))
    # sharing the known structure helps recovery (the paper's observation)
    assert np.mean(shared) > np.mean(alone) + 0.02, (shared, alone)


# --------------------------------------------------------------- nonnegative


@pytest.mark.parametrize("constraint", ["l2", "l1"])
def test_nonneg_code_projection_matches_cvxpy(constraint):
    rng = np.random.default_rng(4)
    for _ in range(5):
        w = 0.6 * rng.standard_normal(12)
        u = cp.Variable(12)
        norm = cp.norm(u, 2) if constraint == "l2" else cp.norm(u, 1)
        cp.Problem(cp.Minimize(cp.sum_squares(u - w)), [u >= 0, norm <= 1]).solve(
            solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10
        )
        ours = _project_code(w, constraint, nonneg=True)
        order = 2 if constraint == "l2" else 1
        # feasible, at least as close to w as the generic solver's point, and that point
        assert np.all(ours >= 0) and np.linalg.norm(ours, order) <= 1 + 1e-12
        assert np.sum((ours - w) ** 2) <= np.sum((u.value - w) ** 2) + 1e-9
        np.testing.assert_allclose(ours, u.value, atol=1e-6)


def nonneg_data(seed, n=80):
    """Nonnegative mixtures of three nonnegative rectangular patterns (not centred)."""
    rng = np.random.default_rng(seed)
    truth = (rect(0, 4, 0, 5), rect(3, 9, 5, 9), rect(6, 10, 0, 4))
    V = np.array([t * (1 + rng.random(100)) for t in truth]).T
    U = rng.exponential(1.0, (n, 3))
    X = U @ V.T + 0.05 * rng.random((n, 100))
    return X, truth


def test_nonneg_factorisation_is_nonnegative_and_recovers_parts():
    groups = grid_halfspace_groups(SHAPE)
    X, truth = nonneg_data(0)
    m = SSPCA(
        3,
        alpha=1e-7,
        groups=groups,
        nonneg=True,
        center=False,
        n_init=3,
        support_threshold=0.05,
        random_state=0,
    ).fit(X)
    assert np.all(m.scores_ >= 0) and np.all(m.loadings_ >= 0)
    np.testing.assert_array_equal(m.mean_, 0.0)
    obj = np.asarray(m.objective_history_)
    assert np.all(np.diff(obj) <= 1e-10 * np.abs(obj[:-1]))
    for t in truth:
        assert max(dice(s, t) for s in m.supports_) >= 0.9
    # the parts explain the data: relative residual of the nonnegative fit
    R = X - m.scores_ @ m.loadings_.T
    assert np.linalg.norm(R) <= 0.1 * np.linalg.norm(X)
    # without the constraint the same fit has negative entries (the sign is free)
    free = SSPCA(3, alpha=1e-7, groups=groups, center=False, random_state=1).fit(X)
    assert (free.loadings_ < -1e-8).any() or (free.scores_ < -1e-8).any()


def test_partition_and_nonneg_bad_input():
    X, _ = shared_data(0, n=20)
    for part, msg in (
        ([[0, 1]], "cover every component"),
        ([[0, 1], [1, 2]], "disjoint"),
        ([[0, 1, 3], [2]], r"\[0, n_components=3\)"),
        ([[0, 1], []], "non-empty"),
        ([[0.5, 1], [2]], "int component indices"),
    ):
        with pytest.raises(ValueError, match=msg):
            SSPCA(3, partition=part).fit(X)
    with pytest.raises(TypeError, match="'partition' parameter of SSPCA must be an array-like"):
        SSPCA(3, partition=3).fit(X)
    with pytest.raises(TypeError, match="partition must be a sequence"):
        sspca(X, 3, partition=3)
    with pytest.raises(TypeError, match="'nonneg' parameter of SSPCA must be"):
        SSPCA(3, nonneg="yes").fit(X)
    with pytest.raises(TypeError, match="nonneg must be a bool"):
        sspca(X, 3, nonneg="yes")


def test_svd_init_is_the_leading_singular_subspace():
    X, _ = shared_data(2)
    kw = dict(groups=grid_halfspace_groups(SHAPE), alpha=1e-6, init="svd", max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        U1, V1, _ = sspca(X, 3, random_state=0, **kw)
        U2, V2, _ = sspca(X, 3, random_state=1, **kw)
        Ur, _, _ = sspca(X, 3, random_state=0, **{**kw, "init": "random"})
    # the start does not depend on the seed...
    np.testing.assert_array_equal(U1, U2)
    np.testing.assert_array_equal(V1, V2)
    assert not np.allclose(U1, Ur)
    # ...and after one iteration the codes still span about the leading left
    # singular subspace (the data are rank 3 plus weak noise)
    Q = np.linalg.svd(X, full_matrices=False)[0][:, :3]
    cos = np.linalg.svd(Q.T @ np.linalg.qr(U1)[0], compute_uv=False)
    assert cos.min() > 0.99
    with pytest.raises(ValueError, match="init must be one of"):
        sspca(X, 3, init="pca")
