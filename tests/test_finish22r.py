"""Issue 22 round 18 (finish22r): the finishing's certificates computed with
less work must say the same, and what they say must hold.

* the support labels' regions (``_region_labels``) are the connected
  components of the features of ``R`` through the groups they share;
* the restart checks on the Gram path take each loading's ``Xc v`` once per
  state (``_start.matvec_once``): fewer passes, the same fit bit for bit;
* ``certify_support`` projects the dual point once for its radius and its
  zero test: the radius and labels of the two separate computations;
* the joint finishing (``_finish_block``, from another v-step's dual point):
  its reported gap bounds the true suboptimality (cvxpy / the 1e-12 dual
  reference), its radius meets the resolution, and no certified zero is a
  non-zero of the exact solution. Seeds 3707-3710 (fresh, round 18).
"""

import numpy as np
import pytest

from neurospca import icosphere, tv_from_mask, tv_from_mesh
from neurospca.decomposition._joint_certify import _finish_block
from neurospca.solvers import ProxProblem, certify_support, prox_dual
from neurospca.solvers._registry import SOLVERS
from neurospca.solvers.penalties import L1, GroupNorm
from neurospca.solvers.support import ROUNDING, _columns, _region_labels, _zero_test, pair_radius

from ._certificates import cvxpy_solution, prox_objective, reference


def _operator(kind):
    if kind == "grid":
        return tv_from_mask(np.ones((9, 10, 8), dtype=bool))
    coords, faces = icosphere(3)
    return tv_from_mesh(coords, faces)


def _components_through_groups(op, R):
    """Reference labels: union-find over the features of ``R``, joining the
    features of ``R`` that one group touches."""
    parent = np.arange(R.size)

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    M = _columns(op).M.tocsr()
    for g in range(M.shape[0]):
        feats = [j for j in M.indices[M.indptr[g] : M.indptr[g + 1]] if R[j]]
        for j in feats[1:]:
            parent[find(j)] = find(feats[0])
    idx = np.flatnonzero(R)
    return np.array([find(j) for j in idx]), idx


@pytest.mark.parametrize("kind", ["grid", "mesh"])
@pytest.mark.parametrize("share", [0.1, 0.25, 0.8])
def test_region_labels_are_the_components_through_shared_groups(kind, share):
    op = _operator(kind)
    R = np.random.default_rng(3707).random(op.n_features) < share
    labels, idx = _region_labels(_columns(op), R)
    ref, ref_idx = _components_through_groups(op, R)
    assert np.array_equal(idx, ref_idx)
    pairs = np.unique(np.stack([labels, ref]), axis=1).shape[1]
    # the same partition: each label of one is exactly one label of the other
    assert pairs == np.unique(labels).size == np.unique(ref).size
    if share < 0.5:  # a split R: the test can tell partitions apart
        assert np.unique(ref).size > 1


@pytest.mark.parametrize("kind", ["grid", "mesh"])
@pytest.mark.parametrize("scale", [1.0, 3.0])
def test_the_certificate_projects_its_dual_point_once(kind, scale):
    """Radius and labels as :func:`pair_radius` and the zero test compute them
    apart; ``scale`` 3 makes the state infeasible (the projection matters)."""
    op = _operator(kind)
    rng = np.random.default_rng(3708)
    y = np.zeros(op.n_features)
    y[rng.choice(op.n_features, 12, replace=False)] = 4.0
    y += 0.3 * rng.standard_normal(op.n_features)
    problem = ProxProblem(y, [L1(0.5), GroupNorm(op, 0.1)])
    res = prox_dual(y, op, 0.5, 0.1, tol=1e-6, max_iter=20000)
    state = scale * res.w
    gap = problem.certificate(res.v, state)[0]
    cert = certify_support(problem, res.v, gap, state)
    p0 = 0.5 * float(y @ y)
    radius = min(np.sqrt(2.0 * (gap + ROUNDING * p0)), pair_radius(problem, res.v, state))
    assert cert.radius == radius
    nonzero = np.abs(res.v) > radius
    zero, rounds = _zero_test(problem, y, res.v, radius, nonzero, state)
    assert np.array_equal(cert.nonzero, nonzero)
    assert np.array_equal(cert.zero, zero) and cert.rounds == rounds
    assert zero.any()


@pytest.mark.parametrize("seed", [3707, 3708])
def test_the_joint_finishing_gap_bounds_the_suboptimality(seed):
    """A v-step finished from the dual point of another ``y`` (as the joint
    finishing starts from the sweeps'): its gap bounds ``P(v) - P*`` (cvxpy
    and the dual reference), its radius is within the resolution of its peak,
    its certified zeros are zeros of the exact solution."""
    op = tv_from_mask(np.ones((12, 11, 10), dtype=bool))
    rng = np.random.default_rng(seed)
    P = op.n_features
    grid = np.indices((12, 11, 10)).reshape(3, -1).T / 12.0
    y = sum(
        rng.uniform(2, 4) * np.exp(-((grid - c) ** 2).sum(axis=1) / 0.01)
        for c in rng.uniform(0.2, 0.8, (2, 3))
    )
    y = y + 0.2 * rng.standard_normal(P)
    a, b = 0.4, 0.15
    y_before = y + 0.05 * rng.standard_normal(P)  # the sweeps' v-step
    first = prox_dual(y_before, op, a, b, tol=1e-3, max_iter=5000)
    problem = ProxProblem(y, [L1(a), GroupNorm(op, b)])
    kw = {"solver": SOLVERS["dual"], "n_threads": 1}
    resolution = 3e-3
    v, gap, state, n_iter = _finish_block(problem, first.v, first.w, kw, 100_000, resolution)
    assert n_iter > 0 and np.isfinite(gap)
    p_star, err = reference(y, op, a, b, use_cvxpy=True)
    assert prox_objective(v, y, op, a, b) - p_star <= gap + err
    cert = certify_support(problem, v, gap, state)
    assert cert.radius <= resolution * np.abs(v).max()
    v_cvx = cvxpy_solution(y, op, a, b)
    v_ref = prox_dual(y, op, a, b, tol=1e-12, max_iter=400_000, gap_every=50).v
    assert cert.zero.any() and cert.nonzero.any()
    assert np.all(v_ref[cert.zero] == 0.0)
    if v_cvx is not None:  # an interior-point solution: zeros to its accuracy
        assert np.abs(v_cvx[cert.zero]).max() <= 1e-6 * np.abs(v_cvx).max()
    assert np.all(np.sign(v_ref[cert.nonzero]) == np.sign(v[cert.nonzero]))


def test_the_gram_restart_checks_pass_over_each_loading_once(monkeypatch):
    """``_start.MATVEC_ONCE``: the fit reads the data fewer times and is the
    same bit for bit (components, gaps, sweeps); a kept product is served only
    for the same loading and the same centring."""
    import neurospca.decomposition._start as start

    from .test_datapath import _fit, _instance, _Reads

    X = _instance(n=120, seed=3709)
    reads = _Reads(monkeypatch)
    got = {}
    for once in (False, True):
        monkeypatch.setattr(start, "MATVEC_ONCE", once)
        reads.bytes = 0
        got[once] = (_fit(X, alpha_rel=1.0), reads.bytes / X.nbytes)
    assert got[True][1] < got[False][1]
    a, b = got[True][0], got[False][0]
    assert np.array_equal(a.components_, b.components_)
    assert np.array_equal(a.dual_gaps_, b.dual_gaps_) and a.n_sweeps_ == b.n_sweeps_
    op = SimpleOp(np.random.default_rng(3710).standard_normal((5, 7)))
    v = np.arange(7.0)
    z = start.matvec_once(op, v)
    assert np.array_equal(z, op.matvec(v)) and op.calls == 2
    assert np.array_equal(start.matvec_once(op, v.copy()), z) and op.calls == 2  # served
    start.matvec_once(op, v + 1e-300)  # another loading (its first entry's bits): computed
    assert op.calls == 3
    op.mean = op.mean.copy()  # another centring: computed again
    start.matvec_once(op, v)
    assert op.calls == 4


class SimpleOp:
    """An operator with ``matvec`` and a centring, counting its products."""

    def __init__(self, X):
        self.X, self.mean, self.calls = X, np.zeros(X.shape[1]), 0

    def matvec(self, v):
        self.calls += 1
        return self.X @ v
