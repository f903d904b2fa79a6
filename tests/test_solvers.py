"""v-step solvers: certified gaps against an independent solver (cvxpy)."""

import numpy as np
import pytest

from neurospca import chain_operator, tv_from_mask
from neurospca.solvers import conesta, fista, mu_opt, prox_dual, prox_objective
from neurospca._kernels import _prox as CK
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
    num = np.array([(s_mu(v + h * e)[0] - s_mu(v - h * e)[0]) / (2 * h)
                    for e in np.eye(op.n_features)])
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
    assert all(m2 < m1 for m1, m2 in zip(mus, mus[1:]))
    assert res.mu_history[-1][2] <= res.tol_abs or res.gap <= res.tol_abs


def test_fista_fixed_mu_certifies_smoothed_problem():
    op = tv_from_mask(np.ones((6, 6), dtype=bool))
    y = np.random.default_rng(12).standard_normal(op.n_features)
    res = fista(y, op, 0.1, 0.5, mu=1e-3, eps=1e-6, max_iter=50000)
    assert res.converged
    ref = prox_dual(y, op, 0.1, 0.5, tol=1e-9)
    # smoothing error of f at most gamma mu M in eq.-17 units (half in prox units)
    assert prox_objective(res.v, y, op, 0.1, 0.5) - ref.objective <= (
        1e-6 + 0.5 * 1e-3 * op.n_groups / 2 + ref.gap)


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
