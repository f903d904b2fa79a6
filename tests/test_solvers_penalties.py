"""The penalty pieces, the v-step problem type and the solver registry.

The new piece (graph-Laplacian smoothness ``c v^T D^T D v``) is checked
against cvxpy: its certified gap bounds the true suboptimality, weight 0 is
the problem without it, a large weight smooths.
"""

import warnings

import numpy as np
import pytest

from neurospca import SPCATV, chain_operator, spca_tv, tv_from_mask
from neurospca.solvers import SOLVERS, ProxProblem, get_solver, prox_dual
from neurospca.solvers.penalties import L1, GraphLaplacian, GroupNorm, eq3_pieces
from neurospca.solvers.prox import solve_dual

from ._helpers import random_group_operator


def _cvxpy_value(y, pieces):
    """``min_v ||v - y||^2 / 2 + sum of pieces`` with cvxpy (each piece by hand)."""
    import cvxpy as cp

    v = cp.Variable(y.size)
    obj = 0.5 * cp.sum_squares(v - y)
    for p in pieces:
        if isinstance(p, L1):
            obj = obj + p.weight * cp.norm1(v)
        elif isinstance(p, GroupNorm):
            A, ptr = p.operator.matrix.tocsr(), p.operator.group_ptr
            norms = [
                cp.norm(A[ptr[g] : ptr[g + 1]] @ v, 2)
                for g in range(p.operator.n_groups)
                if ptr[g + 1] > ptr[g]
            ]
            if norms:
                obj = obj + p.weight * cp.sum(cp.hstack(norms))
        else:
            obj = obj + p.weight * cp.sum_squares(p.operator.matrix.tocsr() @ v)
    cp.Problem(cp.Minimize(obj)).solve(solver=cp.CLARABEL)
    vs = np.asarray(v.value).ravel()
    return vs, ProxProblem(y, pieces).objective(vs)


def _cases():
    rng = np.random.default_rng(7)
    chain = chain_operator(12)
    grid = tv_from_mask(np.ones((4, 4), bool))
    rand = random_group_operator(10, 5, np.random.default_rng(3))
    return [
        (rng.standard_normal(12), [L1(0.1), GroupNorm(chain, 0.3), GraphLaplacian(chain, 0.5)]),
        (rng.standard_normal(16), [L1(0.05), GroupNorm(grid, 0.2), GraphLaplacian(grid, 2.0)]),
        (3 * rng.standard_normal(10), [L1(0.2), GroupNorm(rand, 0.4), GraphLaplacian(rand, 0.1)]),
        (rng.standard_normal(12), [GraphLaplacian(chain, 1.0)]),
        # two group norms (no compiled kernel): the generic path too
        (rng.standard_normal(16), [L1(0.1), GroupNorm(grid, 0.1), GroupNorm(grid, 0.2)]),
    ]


@pytest.mark.parametrize("case", range(5))
@pytest.mark.parametrize("tol, max_iter", [(1e-2, 5), (1e-2, 40), (1e-8, 20000)])
def test_gap_bounds_true_suboptimality_against_cvxpy(case, tol, max_iter):
    y, pieces = _cases()[case]
    problem = ProxProblem(y, pieces)
    assert problem.fast_form() is None  # the generic dual path
    _, p_star = _cvxpy_value(y, pieces)
    res = solve_dual(problem, tol=tol, max_iter=max_iter, gap_every=5)
    sub = problem.objective(res.v) - p_star
    assert res.gap >= sub - 1e-7 * max(1.0, abs(p_star))
    assert res.objective == pytest.approx(problem.objective(res.v), rel=1e-12)
    if tol == 1e-8:  # tight: the solution agrees with cvxpy's
        assert res.converged and sub <= 1e-6
    # any dual point certifies (weak duality), also a hostile one
    w = 10 * np.random.default_rng(case).standard_normal(problem.n_dual)
    assert problem.gap(res.v, w)[0] >= sub - 1e-7 * max(1.0, abs(p_star))
    assert problem.certificate(res.v, res.state)[0] >= sub - 1e-7 * max(1.0, abs(p_star))
    # with tol_abs the state's gap is returned as soon as it certifies tol_abs
    state_gap = problem.gap(res.v, res.state)[0]
    best, primal = problem.certificate(res.v, res.state, (1e-3,))
    assert best <= state_gap and primal == pytest.approx(res.objective, rel=1e-12)
    assert problem.certificate(res.v, res.state, (1e-3,), tol_abs=state_gap) == (
        state_gap,
        problem.gap(res.v, res.state)[1],
    )
    assert problem.certificate(res.v, res.state, (1e-3,), tol_abs=0.5 * best)[0] == best


def test_zero_weight_is_exactly_the_problem_without_the_piece():
    op = tv_from_mask(np.ones((5, 6), bool))
    y = np.random.default_rng(1).standard_normal(30)
    without = solve_dual(ProxProblem(y, [L1(0.1), GroupNorm(op, 0.3)]), tol=1e-6)
    with0 = solve_dual(
        ProxProblem(y, [L1(0.1), GroupNorm(op, 0.3), GraphLaplacian(op, 0.0)]), tol=1e-6
    )
    np.testing.assert_array_equal(with0.v, without.v)
    # a vanishing weight (generic path) converges to the same solution
    tiny = solve_dual(
        ProxProblem(y, [L1(0.1), GroupNorm(op, 0.3), GraphLaplacian(op, 1e-9)]),
        tol=1e-10,
        max_iter=50000,
    )
    np.testing.assert_allclose(tiny.v, without.v, atol=1e-4)


def test_generic_path_agrees_with_the_kernels():
    """One group norm split in two halves (generic) equals the kernel path."""
    op = tv_from_mask(np.ones((6, 5), bool))
    y = np.random.default_rng(2).standard_normal(30)
    fast = prox_dual(y, op, 0.1, 0.4, tol=1e-10, max_iter=50000)
    generic = solve_dual(
        ProxProblem(y, [L1(0.1), GroupNorm(op, 0.2), GroupNorm(op, 0.2)]), tol=1e-10, max_iter=50000
    )
    np.testing.assert_allclose(generic.v, fast.v, atol=1e-5)
    assert generic.state.shape == (2 * op.n_rows,)


def test_rescaled_extreme_y_generic_path():
    op = chain_operator(8)
    y = np.random.default_rng(4).standard_normal(8)
    pieces = [L1(0.1), GroupNorm(op, 0.2), GraphLaplacian(op, 0.3)]
    ref = solve_dual(ProxProblem(y, pieces), tol=1e-10, max_iter=50000)
    s = 1e120
    big = solve_dual(
        ProxProblem(y * s, [L1(0.1 * s), GroupNorm(op, 0.2 * s), GraphLaplacian(op, 0.3)]),
        tol=1e-10,
        max_iter=50000,
    )
    np.testing.assert_allclose(big.v / s, ref.v, atol=1e-6)
    assert np.isfinite(big.gap)


@pytest.fixture(scope="module")
def sim():
    from neurospca import make_paper_simulation

    X, _, mask = make_paper_simulation(60, snr=0.5, random_state=11, shape=(12, 12))
    Xc = X - X.mean(0)
    SCALE.append(np.sqrt((Xc**2).sum(0)).max() / len(X))  # l1_max of the data
    KW.update(l1=0.05 * SCALE[0], l2=SCALE[0], tv=0.1 * SCALE[0])
    return Xc, tv_from_mask(mask)


SCALE = []
KW = dict(tol=1e-6)


def test_spca_tv_zero_weight_is_the_fit_without_it(sim):
    Xc, op = sim
    U, V, info = spca_tv(Xc, 2, operator=op, **KW)
    U0, V0, info0 = spca_tv(Xc, 2, operator=op, penalties=[GraphLaplacian(op, 0.0)], **KW)
    np.testing.assert_array_equal(V0, V)
    np.testing.assert_array_equal(info0["gaps"], info["gaps"])
    U1, V1, _ = spca_tv(Xc, 2, operator=op, penalties=[GraphLaplacian(op, 1e-9 * SCALE[0])], **KW)
    cos = np.abs(np.sum(V * V1, 0)) / np.linalg.norm(V, axis=0) / np.linalg.norm(V1, axis=0)
    assert np.all(cos > 1 - 1e-6), cos


def _roughness(V, op):
    DV = op.matrix @ V
    return np.sum(DV**2, axis=0) / np.sum(V**2, axis=0)


def test_large_weight_smooths(sim):
    Xc, op = sim
    rough = []
    for weight in (0.0, 0.5, 5.0):
        _, V, info = spca_tv(
            Xc, 1, operator=op, penalties=[GraphLaplacian(op, weight * SCALE[0])], **KW
        )
        assert np.all(info["converged"])
        rough.append(_roughness(V, op)[0])
    assert rough[0] > rough[1] > rough[2], rough
    assert rough[2] < 0.5 * rough[0]


def test_spca_tv_gaps_certify_the_returned_pairs_with_the_new_piece(sim):
    """``info['gaps']`` bound the v-step suboptimality of the returned (u, v) (cvxpy)."""
    Xc, op = sim
    extra = [GraphLaplacian(op, 0.3 * SCALE[0])]
    U, V, info = spca_tv(
        Xc, 2, operator=op, penalties=extra, tol=1e-3, **{k: v for k, v in KW.items() if k != "tol"}
    )
    n, l2 = Xc.shape[0], KW["l2"]
    X_k = Xc.copy()
    for k in range(2):
        u, v = U[:, k], V[:, k]
        y = X_k.T @ u / (2 * n * l2)
        pieces = eq3_pieces(KW["l1"], KW["tv"], op, l2, extra)
        _, p_star = _cvxpy_value(y, pieces)
        sub = 2 * l2 * (ProxProblem(y, pieces).objective(v) - p_star)
        assert info["gaps"][k] >= sub - 1e-9
        assert info["rel_gaps"][k] <= 1e-3
        X_k -= info["d"][k] * np.outer(u, v)


def test_solver_that_cannot_handle_a_piece_names_both(sim):
    Xc, op = sim
    with pytest.raises(ValueError, match=r"'conesta'.*'l2_graph'"):
        spca_tv(Xc, 1, operator=op, solver="conesta", penalties=[GraphLaplacian(op, 0.1)], **KW)
    with pytest.raises(ValueError, match=r"'conesta'.*'l2_graph'"):
        SPCATV(
            1, alpha=0.1, operator=op, solver="conesta", penalties=[GraphLaplacian(op, 0.1)]
        ).fit(Xc)
    with pytest.raises(ValueError, match=r"conesta.*l2_graph"):
        SOLVERS["conesta"].solve(
            ProxProblem(Xc[0], [GraphLaplacian(op, 0.1)]), tol=1e-3, max_iter=10
        )


@pytest.mark.parametrize(
    "penalties, exc, match",
    [
        (GraphLaplacian(chain_operator(144), 0.1), TypeError, "penalties must be a list"),
        (["smooth"], TypeError, "penalties must hold"),
        ([L1(0.1)], TypeError, "penalties must hold"),
        ([GraphLaplacian(chain_operator(144), 0.1)] * 2, ValueError, "'l2_graph' is used twice"),
        ([GroupNorm(chain_operator(144), 0.1)], ValueError, "'tv' is used twice"),
        ([GraphLaplacian(chain_operator(10), 0.1)], ValueError, "operator of l2_graph acts on 10"),
    ],
)
def test_bad_penalties(sim, penalties, exc, match):
    Xc, op = sim
    with pytest.raises(exc, match=match):
        spca_tv(Xc, 1, operator=op, penalties=penalties, **KW)


@pytest.mark.parametrize("bad, exc", [(-1.0, ValueError), (np.nan, ValueError), ("a", TypeError)])
def test_piece_weight_is_checked(bad, exc):
    with pytest.raises(exc, match="weight"):
        GraphLaplacian(chain_operator(3), bad)
    with pytest.raises(TypeError, match="GroupOperator"):
        GraphLaplacian(np.eye(3), 0.1)


def test_get_solver_and_registry():
    assert set(SOLVERS) == {"dual", "conesta"}
    assert get_solver("dual").default_max_iter == 10_000
    assert get_solver("conesta").default_max_iter == 100_000
    with pytest.raises(ValueError, match="solver must be one of"):
        get_solver("newton")
    with pytest.raises(ValueError, match="at most one separable"):
        ProxProblem(np.zeros(3), [L1(0.1), L1(0.2)])


def test_estimator_penalty_weights_and_warm_start(sim):
    Xc, op = sim
    a = SCALE[0]
    est = SPCATV(
        2,
        alpha=a,
        l1_ratio=0.1,
        tv_ratio=0.2,
        operator=op,
        penalties=[GraphLaplacian(op, 0.05 * a)],
        warm_start=True,
    ).fit(Xc)
    assert est.penalty_weights_ == pytest.approx(
        {"l1": 0.1 * a, "l2": 0.7 * a, "tv": 0.2 * a, "l2_graph": 0.05 * a}
    )
    assert est._duals[0].shape == (2 * op.n_rows,)
    again = est.fit(Xc)  # warm: states of the same shape are reused
    assert np.all(again.rel_gaps_ <= 1e-3)
    plain = SPCATV(2, operator=op).fit(Xc)
    assert set(plain.penalty_weights_) == {"l1", "l2", "tv"}
    assert sum(plain.penalty_weights_.values()) == pytest.approx(plain.alpha_)
    # the split used is the fitted l1_ratio_ (l1_ratio="auto" is searched, issue 20 round 3)
    assert plain.penalty_weights_["l1"] == pytest.approx(plain.alpha_ * plain.l1_ratio_)
    assert plain.penalty_weights_["tv"] == pytest.approx(plain.alpha_ * plain.tv_ratio_)
    # switching the penalties drops the old states instead of failing on their shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.set_params(penalties=None).fit(Xc)
    assert est._duals[0].shape == (op.n_rows,)


def test_front_doors_are_the_registered_solvers_bit_for_bit():
    from neurospca.solvers import conesta

    op = tv_from_mask(np.ones((6, 7), bool))
    y = np.random.default_rng(5).standard_normal(42)
    problem = ProxProblem(y, [L1(0.1), GroupNorm(op, 0.3)])
    a = prox_dual(y, op, 0.1, 0.3, tol=1e-6)
    b = SOLVERS["dual"].solve(problem, tol=1e-6, max_iter=10000)
    np.testing.assert_array_equal(a.v, b.v)
    np.testing.assert_array_equal(a.w, b.state)
    c = conesta(y, op, 0.1, 0.3, tol=1e-4, v0=np.zeros(42))
    d = SOLVERS["conesta"].solve(problem, tol=1e-4, max_iter=100000, v=np.zeros(42))
    np.testing.assert_array_equal(c.v, d.v)
    assert d.state is None and c.gap == d.gap
    # the first CONESTA v-step of spca_tv starts from the l1-only prox
    e = SOLVERS["conesta"].solve(problem, tol=1e-4, max_iter=100000)
    f = conesta(y, op, 0.1, 0.3, tol=1e-4, v0=np.sign(y) * np.maximum(np.abs(y) - 0.1, 0))
    np.testing.assert_array_equal(e.v, f.v)
