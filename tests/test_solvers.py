"""v-step solvers: certified gaps against an independent solver (cvxpy)."""

import numpy as np
import pytest

from neurospca import chain_operator, tv_from_mask
from neurospca._kernels import _prox as CK
from neurospca.solvers import conesta, fista, mu_opt, prox_dual, prox_objective
from neurospca.solvers._base import operator_arrays

from ._helpers import cvxpy_prox, random_group_operator

pytest.importorskip("cvxpy")


def _problems():
    rng = np.random.default_rng(0)
    return [
        ("tv2d", tv_from_mask(rng.random((8, 7)) > 0.2), 0.2, 0.4),
        ("tv3d", tv_from_mask(np.ones((4, 4, 3), dtype=bool)), 0.1, 0.3),
        ("random_groups", random_group_operator(40, 30, rng), 0.3, 0.2),
        ("no_l1", chain_operator(30), 0.0, 0.8),
    ]


PROBLEMS = _problems()


@pytest.fixture(scope="module")
def references():
    out = {}
    for seed, (name, op, a, b) in enumerate(PROBLEMS):
        y = np.random.default_rng(100 + seed).standard_normal(op.n_features)
        out[name] = (y,) + cvxpy_prox(y, op, a, b)
    return out


@pytest.mark.parametrize("solver", [prox_dual, conesta])
@pytest.mark.parametrize("tol", [1e-2, 1e-5])
@pytest.mark.parametrize("case", PROBLEMS, ids=[p[0] for p in PROBLEMS])
def test_gap_is_certified(case, tol, solver, references):
    name, op, a, b = case
    y, v_ref, p_ref = references[name]
    res = solver(y, op, a, b, tol=tol)
    p = prox_objective(res.v, y, op, a, b)
    assert res.converged
    assert 0.0 <= res.gap <= tol * 0.5 * (y @ y)
    # the gap bounds the true suboptimality (cvxpy is accurate to ~1e-9)
    assert p - p_ref <= res.gap + 1e-8
    # and the solution is near the reference: strong convexity gives
    # ||v - v*||^2 / 2 <= P(v) - P(v*) <= gap
    assert 0.5 * np.sum((res.v - v_ref) ** 2) <= res.gap + 1e-7
    assert res.objective == pytest.approx(p, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("case", PROBLEMS, ids=[p[0] for p in PROBLEMS])
def test_solvers_agree(case, references):
    name, op, a, b = case
    y = references[name][0]
    r1 = prox_dual(y, op, a, b, tol=1e-6)
    r2 = conesta(y, op, a, b, tol=1e-6)
    p1 = prox_objective(r1.v, y, op, a, b)
    p2 = prox_objective(r2.v, y, op, a, b)
    assert abs(p1 - p2) <= r1.gap + r2.gap + 1e-12


def test_gap_decreases_to_zero():
    op = tv_from_mask(np.ones((10, 10), dtype=bool))
    y = np.random.default_rng(5).standard_normal(op.n_features)
    res = prox_dual(y, op, 0.1, 0.5, tol=1e-10, max_iter=20000)
    gaps = [g for _, g in res.gap_history]
    assert gaps[-1] <= 1e-10 * 0.5 * y @ y
    assert gaps[-1] < 1e-6 * gaps[0]


def test_warm_start_needs_fewer_iterations():
    op = tv_from_mask(np.ones((12, 12), dtype=bool))
    rng = np.random.default_rng(6)
    y = rng.standard_normal(op.n_features)
    cold = prox_dual(y, op, 0.1, 0.5, tol=1e-6)
    y2 = y + 1e-3 * rng.standard_normal(op.n_features)
    warm = prox_dual(y2, op, 0.1, 0.5, tol=1e-6, w0=cold.w)
    cold2 = prox_dual(y2, op, 0.1, 0.5, tol=1e-6)
    assert warm.converged and warm.n_iter < cold2.n_iter


def test_penalties_vanish_give_closed_forms():
    op = chain_operator(20)
    y = np.random.default_rng(7).standard_normal(20)
    np.testing.assert_allclose(prox_dual(y, op, 0.0, 0.0).v, y)
    soft = np.sign(y) * np.maximum(np.abs(y) - 0.3, 0)
    np.testing.assert_allclose(prox_dual(y, op, 0.3, 0.0).v, soft)
    np.testing.assert_allclose(conesta(y, op, 0.3, 0.0, tol=1e-10).v, soft, atol=1e-5)


def test_kernels_numpy_and_cython_give_same_solution():
    op = tv_from_mask(np.ones((6, 6), dtype=bool))
    y = np.random.default_rng(8).standard_normal(op.n_features)
    for solver in (prox_dual, conesta):
        a = solver(y, op, 0.1, 0.3, tol=1e-5, kernels="cython")
        b = solver(y, op, 0.1, 0.3, tol=1e-5, kernels="numpy")
        np.testing.assert_allclose(a.v, b.v, atol=1e-9)
        assert a.n_iter == b.n_iter


def test_smoothed_gradient_matches_finite_differences():
    """grad s_mu(v) = A^T alpha*_mu(v) (eq. 13) against central differences."""
    op = tv_from_mask(np.random.default_rng(9).random((6, 6)) > 0.2)
    A_ip, A_ix, A_d, _, _, _, gptr = operator_arrays(op)
    rng = np.random.default_rng(10)
    v = rng.standard_normal(op.n_features)
    mu = 0.3

    def s_mu(x):
        alpha = np.empty(op.n_rows)
        aa, ax, _ = CK.smoothed_alpha(A_ip, A_ix, A_d, gptr, x, mu, alpha)
        return ax - 0.5 * mu * aa, alpha

    _, alpha = s_mu(v)
    grad = op.rmatvec(alpha)
    h = 1e-6
    num = np.array(
        [(s_mu(v + h * e)[0] - s_mu(v - h * e)[0]) / (2 * h) for e in np.eye(op.n_features)]
    )
    np.testing.assert_allclose(grad, num, atol=1e-6)
    # Nesterov's bound (eq. 15): s_mu <= s <= s_mu + mu M
    s = op.value(v)
    assert s_mu(v)[0] <= s <= s_mu(v)[0] + mu * op.n_groups / 2


def test_mu_opt_minimises_the_iteration_bound():
    """eq. 25 minimises (L + gamma ||A||^2 / mu) / (eps - mu gamma M)."""
    gamma, M, norm2, eps = 0.7, 500.0, 12.0, 1e-2
    mu = mu_opt(eps, gamma, M, norm2)
    bound = lambda m: (2 + gamma * norm2 / m) / (eps - m * gamma * M)  # noqa: E731
    assert 0 < mu < eps / (gamma * M)
    assert bound(mu) < bound(mu * 1.01) and bound(mu) < bound(mu * 0.99)
    # tiny eps: the stable branch stays positive
    assert mu_opt(1e-30, 10.0, 1e5, 12.0) > 0


def test_conesta_continuation_decreases_eps():
    op = tv_from_mask(np.ones((8, 8), dtype=bool))
    y = np.random.default_rng(11).standard_normal(op.n_features)
    res = conesta(y, op, 0.1, 0.5, tol=1e-5)
    mus = [m for _, m, _ in res.mu_history]
    assert len(mus) >= 3
    assert all(m2 < m1 for m1, m2 in zip(mus[:-1], mus[1:], strict=True))
    assert res.mu_history[-1][2] <= res.tol_abs or res.gap <= res.tol_abs


def test_fista_fixed_mu_certifies_smoothed_problem():
    op = tv_from_mask(np.ones((6, 6), dtype=bool))
    y = np.random.default_rng(12).standard_normal(op.n_features)
    res = fista(y, op, 0.1, 0.5, mu=1e-3, eps=1e-6, max_iter=50000)
    assert res.converged
    ref = prox_dual(y, op, 0.1, 0.5, tol=1e-9)
    # smoothing error of f at most gamma mu M in eq.-17 units (half in prox units)
    assert prox_objective(res.v, y, op, 0.1, 0.5) - ref.objective <= (
        1e-6 + 0.5 * 1e-3 * op.n_groups / 2 + ref.gap
    )


@pytest.mark.parametrize("solver", [prox_dual, conesta])
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(y=np.array([1.0, np.nan, 0.0])), "y"),
        (dict(y=np.ones((3, 1))), "y"),
        (dict(l1=-0.1), "l1"),
        (dict(group=-1.0), "group"),
        (dict(tol=0.0), "tol"),
        (dict(max_iter=0), "max_iter"),
        (dict(operator="tv"), "operator"),
        (dict(operator=chain_operator(4)), "operator"),
    ],
)
def test_bad_input(solver, kwargs, match):
    args = dict(y=np.ones(3), operator=chain_operator(3), l1=0.1, group=0.1)
    args.update(kwargs)
    y, op, l1, group = args.pop("y"), args.pop("operator"), args.pop("l1"), args.pop("group")
    with pytest.raises((ValueError, TypeError), match=match):
        solver(y, op, l1, group, **args)


# ------------------------------------------------- exact zeros (issue 20, item 5)


def _zero_optimum(seed, shape=(12, 12), l1=0.3, group=0.5, margin=0.5):
    """A v-step whose optimum is exactly v* = 0: ``y = A^T w0 + e`` with
    ``||w0_g|| <= margin * group`` and ``|e_j| <= margin * l1``, so ``w0`` is a
    dual point at which ``soft(y - A^T w0, l1) = 0`` (zero is optimal)."""
    rng = np.random.default_rng(seed)
    op = tv_from_mask(np.ones(shape, dtype=bool))
    w0 = rng.standard_normal(op.n_rows)
    w0 *= (margin * group / np.maximum(op.group_norms(w0), 1e-12))[op.row_group]
    y = op.rmatvec(w0) + rng.uniform(-margin, margin, op.n_features) * l1
    return y, op, l1, group


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("tol", [1e-2, 1e-3])
def test_conesta_returns_exact_zero_where_the_optimum_is_zero(seed, tol):
    """Where v* = 0, CONESTA (started away from 0, as SPCA-TV starts it) returns
    exactly 0, as the dual solver does, with a gap that bounds the true
    suboptimality P(v) - P(0) = 0 and certifies tol. (Before, it returned
    ~100 small non-zeros whose objective was above P(0), within tol.)"""
    y, op, l1, group = _zero_optimum(seed)
    v0 = np.sign(y) * np.maximum(np.abs(y) - l1, 0.0)  # the l1-only prox: non-zero
    assert np.count_nonzero(v0) > 0
    res = conesta(y, op, l1, group, tol=tol, v0=v0)
    ref = prox_dual(y, op, l1, group, tol=1e-10, max_iter=100000)
    assert not np.any(ref.v)  # the construction: v* = 0
    assert not np.any(res.v), np.count_nonzero(res.v)
    p0 = 0.5 * float(y @ y)
    assert res.objective == pytest.approx(p0, rel=1e-14)
    assert res.converged and 0.0 <= res.gap <= res.tol_abs
    assert res.gap >= res.objective - p0 - 1e-12 * p0  # gap >= true suboptimality


@pytest.mark.parametrize("seed", range(3))
def test_conesta_never_returns_worse_than_zero_and_gap_bounds_suboptimality(seed):
    """On problems whose optimum is near zero (scaled-down y, non-zero v*),
    CONESTA's answer has P(v) <= P(0), and its gap bounds P(v) - P(v*) against
    a high-precision reference."""
    rng = np.random.default_rng(10 + seed)
    op = tv_from_mask(np.ones((10, 10), dtype=bool))
    l1, group = 0.2, 0.3
    y = rng.standard_normal(100) * rng.uniform(0.2, 0.6)
    ref = prox_dual(y, op, l1, group, tol=1e-12, max_iter=100000)
    v0 = np.sign(y) * np.maximum(np.abs(y) - l1, 0.0)
    res = conesta(y, op, l1, group, tol=1e-3, v0=v0)
    p0 = 0.5 * float(y @ y)
    assert res.objective <= p0 + 1e-12 * p0
    assert res.gap >= res.objective - ref.objective - 1e-10 * p0
    assert res.gap <= res.tol_abs
    assert res.objective == pytest.approx(prox_objective(res.v, y, op, l1, group), rel=1e-12)


def test_conesta_and_dual_give_the_same_empty_model():
    """The issue's case: an SPCA-TV fit whose v-steps have v* = 0. With the
    dual solver every component is empty; CONESTA used to return 19, 5 and 0
    non-zeros (objectives above that of v = 0, accepted within tol); now both
    are empty."""
    import warnings

    from neurospca import SPCATV
    from neurospca.datasets import make_paper_simulation

    X, _, mask = make_paper_simulation(random_state=0, shape=(30, 30), n_samples=100)
    op = tv_from_mask(mask)
    models = {}
    for solver in ("dual", "conesta"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            models[solver] = SPCATV(
                3, alpha=None, alpha_rel=6.0, operator=op, solver=solver, random_state=0
            ).fit(X)
        assert any("identically zero" in str(w.message) for w in caught)
    for model in models.values():
        assert not np.any(model.components_)
