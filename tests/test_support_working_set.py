"""The certified-support finishing on a working set (issue 22, round 3).

:func:`neurospca.solvers.support.working_set` re-solves a v-step on the groups
near the support, the other dual variables fixed; the pair put back is a pair
of the full problem, certified there. Checked against the dual solver at a
1e-12 relative gap (its own radius ``r_ref``), as in ``test_certified_support``.
"""

import warnings

import numpy as np
import pytest

from neurospca import SPCATV, tv_from_mask
from neurospca.decomposition import _support
from neurospca.solvers import ProxProblem, prox_dual
from neurospca.solvers.penalties import L1, GroupNorm
from neurospca.solvers.support import ROUNDING, working_set


def _blobs(side, seed, noise=0.3):
    """A cube of ``side**3`` features: two small blobs plus noise."""
    rng = np.random.default_rng(seed)
    grid = np.indices((side,) * 3).reshape(3, -1).T / side
    y = noise * rng.standard_normal(grid.shape[0])
    for c in rng.uniform(0.3, 0.7, (2, 3)):
        y += 3.0 * np.exp(-((grid - c) ** 2).sum(axis=1) / 0.004)
    return y, tv_from_mask(np.ones((side,) * 3, bool))


def _reference(y, op, a, b):
    ref = prox_dual(y, op, a, b, tol=1e-12, max_iter=400_000, gap_every=50)
    return ref.v, float(np.sqrt(2.0 * (ref.gap + ROUNDING * 0.5 * float(y @ y))))


@pytest.mark.parametrize("seed", [0, 1])
def test_working_set_pair_is_certified_on_the_full_problem(seed):
    y, op = _blobs(16, seed)
    a, b = 0.4, 0.3
    problem = ProxProblem(y, [L1(a), GroupNorm(op, b)])
    start = prox_dual(y, op, a, b, tol=1e-2, max_iter=30)
    sub, rows, cols = working_set(problem, start.v, start.w, margin=2)
    # a few whole groups: rows are complete groups, in order, and much fewer
    groups = np.unique(op.row_group[rows])
    assert np.array_equal(
        rows, np.concatenate([np.arange(*op.group_ptr[g : g + 2]) for g in groups])
    )
    assert 0 < cols.size < 0.5 * y.size and rows.size < 0.5 * op.n_rows
    sol = prox_dual(
        sub.y, sub.composite[0].operator, a, b, tol=1e-11, w0=start.w[rows], max_iter=100_000
    )
    v, w = start.v.copy(), np.array(start.w)
    v[cols], w[rows] = sol.v, sol.w
    gap = problem.certificate(v, w)[0]
    v_ref, r_ref = _reference(y, op, a, b)
    # the full problem's gap bounds the suboptimality and the distance of the merged pair
    assert problem.objective(v) - problem.objective(v_ref) <= gap + 1e-12 * float(y @ y)
    assert np.linalg.norm(v - v_ref) <= np.sqrt(2 * (gap + ROUNDING * 0.5 * y @ y)) + r_ref
    # and the working set did the job: the full gap fell with the working set's
    assert gap <= 1e-4 * start.gap


def test_working_set_needs_a_group_norm_and_a_state():
    y, op = _blobs(8, 0)
    v = np.where(np.abs(y) > 1, y, 0.0)
    assert working_set(ProxProblem(y, [L1(0.1)]), v, None)[0] is None
    problem = ProxProblem(y, [L1(0.1), GroupNorm(op, 0.1)])
    assert working_set(problem, v, None)[0] is None
    assert working_set(problem, np.zeros_like(y), np.zeros(op.n_rows))[0] is None


def test_fit_finished_on_working_sets_against_the_reference(monkeypatch):
    """A fit whose components are small blobs in a large field: the finishing runs
    on working sets (counted), reaches its resolution and every label holds in
    the reference of its v-step."""
    side, n = 18, 60
    rng = np.random.default_rng(5)
    grid = np.indices((side,) * 3).reshape(3, -1).T / side
    X = rng.standard_normal((n, grid.shape[0]))
    for k, c in enumerate(rng.uniform(0.3, 0.7, (2, 3))):
        X += np.outer(rng.standard_normal(n) * (3.0 - k), np.exp(-((grid - c) ** 2).sum(1) / 0.01))
    op = tv_from_mask(np.ones((side,) * 3, bool))
    calls = []
    original = _support.working_set

    def counted(problem, v, state, margin):
        out = original(problem, v, state, margin)
        calls.append((out[1].size, op.n_rows))
        return out

    monkeypatch.setattr(_support, "working_set", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(2, operator=op, alpha_rel=1.0, method="deflation", random_state=0).fit(X)
    assert any(r < _support.WORKING_BELOW * n_rows for r, n_rows in calls)
    w = m.penalty_weights_
    a, b = w["l1"] / (2 * w["l2"]), w["tv"] / (2 * w["l2"])
    Xk = X - m.mean_
    norms = np.linalg.norm(m.loadings_, axis=0)
    for k in range(2):
        u, v = m.scores_[:, k], m.loadings_[:, k]
        y = Xk.T @ u / (2 * n * w["l2"])
        v_ref, r_ref = _reference(y, op, a, b)
        r = m.support_radius_[k] * norms[k]
        assert r <= _support.SUPPORT_RESOLUTION * np.abs(v).max()  # the rule, met
        assert np.linalg.norm(v - v_ref) <= r + r_ref
        assert np.all(np.abs(v_ref[m.certified_zeros_[k]]) <= r_ref)
        nz = m.certified_support_[k]
        assert nz.any()
        assert np.all(np.sign(v[nz]) * v_ref[nz] >= np.abs(v[nz]) - r - r_ref)
        Xk = Xk - m.singular_values_[k] / norms[k] * np.outer(u, v)


def test_settled_finishing_from_another_v_steps_dual_point(monkeypatch):
    """The joint fit's finishing starts from the dual point of ANOTHER v-step (the
    sweeps' ``y``); with ``settle`` its first working set runs
    :data:`~neurospca.decomposition._support.WORKING_FIRST` iterations and is
    built again, smaller. Both ways the returned pair is certified on the full
    problem: its gap is the pair's own, it meets the target, and the reference
    lies within the pair's radius (fresh seed 3450)."""
    from neurospca.solvers import get_solver
    from neurospca.solvers.support import pair_radius

    y, op = _blobs(20, 3450, noise=0.2)
    rng = np.random.default_rng(3450)
    a, b = 0.3, 0.4
    problem = ProxProblem(y, [L1(a), GroupNorm(op, b)])
    other = y + 0.05 * rng.standard_normal(y.size)  # the sweeps' v-step
    start = prox_dual(other, op, a, b, tol=1e-3, max_iter=2000)
    v_ref, r_ref = _reference(y, op, a, b)
    target = _support._target(problem, start.v, 1e-3)
    gap0 = problem.certificate(start.v, start.w)[0]
    sizes, caps = [], []
    original = _support.solve_dual

    def recorded(sub, **kw):
        sizes.append(sub.composite[0].operator.n_rows)
        caps.append(kw["max_iter"])
        return original(sub, **kw)

    monkeypatch.setattr(_support, "solve_dual", recorded)
    for settle in (False, True):
        sizes.clear(), caps.clear()
        v, gap, w, n_iter, _ = _support._finish(
            problem, get_solver("dual"), start.v, gap0, start.w, target, 20_000, 1, settle
        )
        assert n_iter > 0 and gap <= target
        assert problem.gap(v, w)[0] <= gap * (1 + 1e-9) + 1e-15
        p0 = 0.5 * float(y @ y)
        radius = min(np.sqrt(2 * (gap + ROUNDING * p0)), pair_radius(problem, v, w))
        assert np.linalg.norm(v - v_ref) <= radius + r_ref
        if settle:  # the first set capped, the second one smaller
            assert caps[0] == _support.WORKING_FIRST and len(sizes) >= 2
            assert sizes[1] < sizes[0]
        else:
            assert caps[0] > _support.WORKING_FIRST
