"""The certified support (issue 20, item 3): labels checked against a high-precision reference.

The reference is the dual solver run to a relative gap of 1e-12; its own
certificate bounds its distance to the exact solution (``r_ref``), so every
claim of :func:`neurospca.solvers.certify_support` can be checked: a
certified zero is within ``r_ref`` of 0 in the reference, a certified
non-zero keeps its sign there with at least ``|v_j| - r - r_ref``, and
``||v - v_ref|| <= r + r_ref``.
"""

import warnings

import numpy as np
import pytest

from neurospca import SPCATV, chain_operator, icosphere, tv_from_mask, tv_from_mesh
from neurospca.masking import VolumeMasker
from neurospca.persistence import load_model, save_model
from neurospca.reporting import cluster_table, make_report
from neurospca.solvers import ProxProblem, certify_support, prox_dual
from neurospca.solvers.penalties import L1, GroupNorm
from neurospca.solvers.support import ROUNDING, _feasible_dual, _RegionTest, restricted_problem

from ._certificates import assert_pairs_certified


def _operator(kind):
    if kind == "chain":
        return chain_operator(300)
    if kind == "grid":
        return tv_from_mask(np.ones((14, 15), dtype=bool))
    coords, faces = icosphere(3)
    return tv_from_mesh(coords, faces)


def _instance(kind, regime, seed):
    """``(y, op, a, b)``: a few smooth blobs plus noise; l1-dominated or TV-dominated."""
    rng = np.random.default_rng([seed, len(kind), len(regime)])
    op = _operator(kind)
    P = op.n_features
    signal = np.zeros(P)
    for _ in range(3):  # blobs along the feature order, smoothed by the operator's graph
        centre = int(rng.integers(P))
        signal[centre] = rng.choice([-1.0, 1.0]) * rng.uniform(2, 5)
    L = (op.matrix.T @ op.matrix).tocsr()
    for _ in range(6):
        signal = signal - 0.12 * (L @ signal)
    signal *= 4.0 / np.abs(signal).max()
    signal[np.abs(signal) < 0.2] = 0.0
    y = signal + 0.3 * rng.standard_normal(P)
    a = 0.5 if regime == "l1" else 0.2
    b = 0.1 if regime == "l1" else 0.4
    return y, op, a, b


def _reference(y, op, a, b):
    """``(v_ref, r_ref)``: the dual solver at a 1e-12 relative gap and its radius."""
    ref = prox_dual(y, op, a, b, tol=1e-12, max_iter=400_000, gap_every=50)
    p0 = 0.5 * float(y @ y)
    return ref.v, float(np.sqrt(2.0 * (ref.gap + ROUNDING * p0)))


def check_labels(y, op, a, b, cert, v):
    """Assert every claim of ``cert`` (for the point ``v``) against the reference."""
    v_ref, r_ref = _reference(y, op, a, b)
    r = cert.radius
    assert np.linalg.norm(v - v_ref) <= r + r_ref
    # certified zeros: zero in the reference, and exactly 0 in the returned v
    assert np.all(np.abs(v_ref[cert.zero]) <= r_ref)
    assert np.all(cert.v[cert.zero] == 0.0)
    assert np.array_equal(cert.v[~cert.zero], v[~cert.zero])
    # certified non-zeros: same sign, at least |v_j| - r away from 0
    nz = cert.nonzero
    s = np.sign(v[nz])
    assert np.all(s * v_ref[nz] >= np.abs(v[nz]) - r - r_ref)
    clear = nz & (np.abs(v) - r > r_ref)
    assert np.all(np.sign(v_ref[clear]) == np.sign(v[clear]))
    assert not np.any(cert.zero & cert.nonzero)
    return int(cert.zero.sum()), int(nz.sum())


CASES = [(kind, regime) for kind in ("chain", "grid", "mesh") for regime in ("l1", "tv")]


@pytest.mark.parametrize("kind,regime", CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_labels_hold_in_a_high_precision_reference(kind, regime, seed):
    y, op, a, b = _instance(kind, regime, seed)
    problem = ProxProblem(y, [L1(a), GroupNorm(op, b)])
    counts = []
    for tol in (1e-3, 1e-8):
        res = prox_dual(y, op, a, b, tol=tol, max_iter=100_000)
        cert = certify_support(problem, res.v, res.gap, res.w)
        counts.append(check_labels(y, op, a, b, cert, res.v))
        # the zeros found by the incremental rounds pass the whole test at once
        test = _RegionTest(
            op, y, res.v, cert.radius, a, b, _feasible_dual(op, b, res.v, res.w), 0.0
        )
        assert np.all(test.passes(cert.zero)[cert.zero])
        assert cert.n_uncertain == y.size - counts[-1][0] - counts[-1][1]
    n_zero, n_nonzero = counts[-1]
    assert n_nonzero > 0
    if regime == "l1":  # the gap-safe test fires where l1 dominates
        v_ref, r_ref = _reference(y, op, a, b)
        assert n_zero >= 0.25 * np.count_nonzero(np.abs(v_ref) <= r_ref)
    # a tighter gap certifies at least as many non-zeros, here
    assert counts[1][1] >= counts[0][1]


@pytest.mark.parametrize("kind", ["chain", "grid", "mesh"])
def test_zero_test_fires_where_the_group_term_dominates_inside_zero_regions(kind):
    """With b > a the plain l1 rule (|y_j - v_j| + r < a - b c_j) never fires; the
    region test does, once the solution is accurate near the edges of the support."""
    y, op, _, _ = _instance(kind, "l1", 5)
    a, b = 0.5, 0.7 if kind == "chain" else 0.3
    problem = ProxProblem(y, [L1(a), GroupNorm(op, b)])
    res = prox_dual(y, op, a, b, tol=1e-10, max_iter=200_000)
    cert = certify_support(problem, res.v, res.gap, res.w)
    assert check_labels(y, op, a, b, cert, res.v)[0] > 0


def test_the_check_fails_on_an_under_reported_gap():
    """The checks can fail: a loose solution labelled with gap 0 claims too much."""
    failures = 0
    for kind, regime in CASES:
        y, op, a, b = _instance(kind, regime, 0)
        res = prox_dual(y, op, a, b, tol=0.5, max_iter=3)
        problem = ProxProblem(y, [L1(a), GroupNorm(op, b)])
        cert = certify_support(problem, res.v, 0.0, res.w)
        try:
            check_labels(y, op, a, b, cert, res.v)
        except AssertionError:
            failures += 1
    assert failures >= 3


@pytest.mark.parametrize("kind", ["chain", "grid", "mesh"])
def test_restricted_problem_solves_the_full_one_off_the_certified_zeros(kind):
    y, op, a, b = _instance(kind, "l1", 3)
    problem = ProxProblem(y, [L1(a), GroupNorm(op, b)])
    res = prox_dual(y, op, a, b, tol=1e-6, max_iter=100_000)
    keep = ~certify_support(problem, res.v, res.gap, res.w).zero
    assert 0 < keep.sum() < y.size
    sub, rows = restricted_problem(problem, keep)
    assert sub.y.size == keep.sum() and rows.size < op.n_rows
    sol = prox_dual(
        sub.y, sub.composite[0].operator, a, b, tol=1e-10, w0=res.w[rows], max_iter=100_000
    )
    v = np.zeros_like(y)
    v[keep] = sol.v
    v_ref, r_ref = _reference(y, op, a, b)
    # the restricted gap bounds the full suboptimality, hence the distance
    assert np.linalg.norm(v - v_ref) <= np.sqrt(2 * (sol.gap + ROUNDING * 0.5 * y @ y)) + r_ref
    full_gap = problem.gap(v, res.w)[0]
    assert problem.objective(v) - problem.objective(v_ref) <= sol.gap + 1e-12 * (y @ y)
    assert full_gap >= 0.0


def test_l1_only_and_other_pieces():
    rng = np.random.default_rng(0)
    y = rng.standard_normal(50) * 2
    cert = certify_support(
        ProxProblem(y, [L1(1.0)]), np.sign(y) * np.maximum(np.abs(y) - 1, 0), 0.0
    )
    assert np.array_equal(cert.zero, np.abs(y) < 1.0 - cert.radius)
    assert np.array_equal(cert.nonzero, np.abs(y) > 1.0 + cert.radius)
    # no l1 piece: nothing is certified zero, non-zeros still are
    op = chain_operator(50)
    cert = certify_support(ProxProblem(y, [GroupNorm(op, 0.1)]), y, 1e-6)
    assert not cert.zero.any() and cert.nonzero.any()


@pytest.mark.parametrize(
    "bad",
    [
        dict(v=np.zeros(3)),
        dict(v=np.full(10, np.nan)),
        dict(gap=-1.0),
        dict(gap=np.inf),
        dict(state=np.zeros(2)),
    ],
)
def test_bad_input_is_a_clear_error(bad):
    op = chain_operator(10)
    kw = dict(v=np.zeros(10), gap=0.1, state=None)
    kw.update(bad)
    with pytest.raises(ValueError, match="v must|gap must|state must"):
        certify_support(ProxProblem(np.ones(10), [L1(0.1), GroupNorm(op, 0.1)]), **kw)


# --------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------


def _paper(seed, shape=(40, 40), n=100):
    from neurospca import make_paper_simulation

    X, _, mask = make_paper_simulation(n, random_state=seed, shape=shape)
    mask = mask[..., None]
    return X, tv_from_mask(mask), VolumeMasker(mask)


def _fit(X, op, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SPCATV(3, operator=op, **kw).fit(X)


@pytest.mark.parametrize(
    "shape,n,kw",
    [((30, 30), 80, {}), ((40, 40), 100, dict(alpha_rel=0.5, l1_ratio=0.7, tv_ratio=0.2))],
)
def test_spcatv_certified_support_against_the_reference(shape, n, kw):
    X, op, _ = _paper(1, shape=shape, n=n)
    m = _fit(X, op, **kw)
    K, P = m.components_.shape
    assert m.certified_support_.shape == m.certified_zeros_.shape == (K, P)
    assert m.certified_support_.dtype == bool and m.certified_zeros_.dtype == bool
    assert np.array_equal(
        m.n_uncertain_, P - m.certified_support_.sum(1) - m.certified_zeros_.sum(1)
    )
    assert np.all(m.components_[m.certified_zeros_] == 0.0)
    assert np.all(m.components_[m.certified_support_] != 0.0)
    # the returned (finished) pairs are certified, with their own gaps and scales
    w = m.penalty_weights_
    Xc = X - m.mean_
    norms = np.linalg.norm(m.loadings_, axis=0)
    info = dict(
        gaps=m.dual_gaps_,
        rel_gaps=m.rel_gaps_,
        converged=m.converged_,
        d=m.singular_values_ / norms,
    )
    assert_pairs_certified(Xc, m.scores_, m.loadings_, info, op, w["l1"], w["l2"], w["tv"])
    # each label against the reference of its v-step
    a, b = w["l1"] / (2 * w["l2"]), w["tv"] / (2 * w["l2"])
    Xk = Xc.copy()
    for k in range(K):
        u, v = m.scores_[:, k], m.loadings_[:, k]
        y = Xk.T @ u / (2 * X.shape[0] * w["l2"])
        v_ref, r_ref = _reference(y, op, a, b)
        r = m.support_radius_[k] * norms[k]
        assert np.linalg.norm(v - v_ref) <= r + r_ref
        assert np.all(np.abs(v_ref[m.certified_zeros_[k]]) <= r_ref)
        nz = m.certified_support_[k]
        assert np.all(np.sign(v[nz]) * v_ref[nz] >= np.abs(v[nz]) - r - r_ref)
        Xk = Xk - info["d"][k] * np.outer(u, v)
        assert r <= 3e-2 * np.abs(v).max()  # finished (to 1 % of the peak, or its budget)
    if kw:  # l1-dominated: most loadings are certified zero
        assert np.all(m.certified_zeros_.sum(1) > 0.5 * P)


def _specks(comp, space, support=None):
    peak = np.abs(comp if support is None else comp[support]).max()
    clusters = cluster_table(comp, space, support=support)
    return sum(abs(c.peak.value) < 1e-3 * peak for c in clusters), len(clusters)


def test_no_cluster_of_the_certified_support_is_a_speck():
    """Clusters of the non-zero loadings include specks (peak below 1e-3 of the
    component's peak) on these fits; clusters of the certified support never do."""
    raw_specks = 0
    for seed in (0, 1, 2):
        X, op, space = _paper(seed)
        m = _fit(X, op)
        for k in range(3):
            comp = m.components_[k]
            raw_specks += _specks(comp, space)[0]
            specks, n = _specks(comp, space, m.certified_support_[k])
            assert n >= 1 and specks == 0
    assert raw_specks >= 1


def test_model_file_round_trip_and_old_files(tmp_path):
    X, op, space = _paper(0)
    m = _fit(X, op)
    path = save_model(m, tmp_path / "m.npz", space=space)
    loaded = load_model(path).estimator
    for name in ("certified_support_", "certified_zeros_", "n_uncertain_", "support_radius_"):
        got, want = getattr(loaded, name), getattr(m, name)
        assert got.dtype == want.dtype and np.array_equal(got, want)
    html = make_report(loaded)
    assert "certified support" in html and "uncertain" in html
    # a file written before the certified support: loads, and reports the non-zeros
    for name in (
        "certified_support_",
        "certified_zeros_",
        "n_uncertain_",
        "support_radius_",
        "support_time_",
    ):
        delattr(m, name)
    old = load_model(save_model(m, tmp_path / "old.npz", space=space)).estimator
    assert not hasattr(old, "certified_support_")
    html = make_report(old)
    assert "certified support" not in html and "uncertain" not in html
    assert ">support<" in html


def test_fit_summary_lines():
    from neurospca._commands._fitting import support_summary

    X, op, _ = _paper(0)
    m = _fit(X, op)
    lines = support_summary(m)
    assert len(lines) == 3
    assert f"{int(m.certified_support_[0].sum()):,} loadings certified non-zero" in lines[0]
    assert "uncertain" in lines[0]


def test_cluster_table_support_is_checked():
    X, op, space = _paper(0)
    with pytest.raises(ValueError, match="support must be a boolean array"):
        cluster_table(np.ones(space.n_features), space, support=np.ones(3, bool))


@pytest.mark.parametrize("kind", ["chain", "grid", "mesh"])
def test_local_rounds_compute_the_same_coefficients(kind):
    y, op, a, b = _instance(kind, "l1", 4)
    res = prox_dual(y, op, a, b, tol=1e-4, max_iter=100_000)
    test = _RegionTest(op, y, res.v, 0.01, a, b, _feasible_dual(op, b, res.v, res.w), 0.0)
    rng = np.random.default_rng(0)
    for _ in range(5):
        R = rng.random(y.size) < 0.8
        feats = np.flatnonzero(rng.random(y.size) < 0.3)
        assert np.array_equal(test.passes_local(R, feats), test.passes(R)[feats])
        assert np.array_equal(test.passes(R, feats), test.passes(R)[feats])
