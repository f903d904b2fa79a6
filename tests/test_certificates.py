"""Certificates are true bounds, and nothing crashes, hangs or over-claims.

* Both v-step solvers: on random prox problems (grids, chains, meshes,
  random and overlapping groups; penalties over six decades; cold, warm and
  hostile warm starts; tight and loose tolerances; generous and tiny iteration
  caps) the reported gap is at least the true suboptimality measured against a
  high-precision reference, and ``converged`` implies ``gap <= tol_abs``.
  ``NEUROSPCA_CERT_SWEEP=400`` runs a larger sweep (the benchmark
  ``benchmarks/bench_certificates.py`` prints the table).
* spca_tv / SPCATV: ``dual_gaps_`` certify the RETURNED (u, v) pairs.
* SSPCA with l1 codes: monotone objective, codes inside the ball, also at
  extreme scales. KTraceNormPCA: converged only when certified.
* Hostile inputs: malformed operators (in a subprocess: a crash fails the
  test), warm starts, non-finite gaps, complex input, extreme scales, and
  atomic refits.
"""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from neurospca import (
    SPCATV,
    SSPCA,
    GroupOperator,
    HierarchicalDictionaryLearning,
    KTraceNormPCA,
    NonnegativeSparsePCA,
    chain_operator,
    tv_from_mask,
)
from neurospca.decomposition import prox_tree
from neurospca.decomposition._ktrace import ktrace_objective, ktrace_pca
from neurospca.decomposition._projections import project_l1_ball
from neurospca.decomposition._spcatv import spca_tv
from neurospca.solvers import conesta, prox_dual, prox_objective
from neurospca.trees import balanced_tree

from ._certificates import assert_pairs_certified, check_case, reference

N_CASES = int(os.environ.get("NEUROSPCA_CERT_SWEEP", "28"))


def _assert_rows(rows):
    for r in rows:
        assert np.isfinite(r["gap"]), r
        # the reported gap bounds the true suboptimality (up to the reference's
        # floating-point resolution)
        assert r["subopt"] <= r["gap"] + r["slack"], r
        # converged only when certified
        if r["converged"]:
            assert r["gap"] <= r["tol_abs"], r


@pytest.mark.parametrize("start", [0, 1])
def test_solver_gaps_bound_true_suboptimality(start):
    rows = []
    for i in range(start, N_CASES, 2):
        rows += check_case(i, seed=0)
    _assert_rows(rows)
    # the sweep covers both outcomes of both solvers
    outcomes = {(r["solver"], r["converged"]) for r in rows}
    assert {("dual", True), ("conesta", True), ("conesta", False)} <= outcomes


def test_conesta_hostile_start_regression():
    """A hostile v0 on a 3-D grid where the old CONESTA certificate
    (``min(eps, gap_0) / 2``) was 1.2-1.5x below the true suboptimality and
    claimed converged=True above tol."""
    _assert_rows(check_case(8, seed=7, tols=(1e-3, 1e-4), max_iters=(160, 640)))


def test_reference_agrees_with_cvxpy():
    """The dual reference and cvxpy agree; the certificates hold against both."""
    for i in range(7):  # one case per structure
        rows = check_case(i, seed=3, use_cvxpy=True, tols=(1e-3,), max_iters=(100_000,))
        _assert_rows(rows)


def test_conesta_certificate_is_the_exact_gap_at_the_returned_v():
    op = tv_from_mask(np.ones((6, 6), dtype=bool))
    rng = np.random.default_rng(5)
    for trial in range(6):
        y = rng.standard_normal(op.n_features)
        a, b = 0.05 * trial, 10.0 ** (trial - 3)
        p_ref, _ = reference(y, op, a, b)
        for max_iter in (5, 30, 100_000):
            res = conesta(y, op, a, b, tol=1e-3, max_iter=max_iter)
            assert res.objective == pytest.approx(prox_objective(res.v, y, op, a, b))
            assert res.objective - p_ref <= res.gap + 1e-12 * float(y @ y)
            assert res.converged == (res.gap <= res.tol_abs)
            assert res.n_iter <= max_iter


# ------------------------------------------------------------------ warm starts


@pytest.mark.parametrize("solver, name, size", [(prox_dual, "w0", 9), (conesta, "v0", 10)])
@pytest.mark.parametrize(
    "bad, exc",
    [
        ("short", ValueError),
        ("2d", ValueError),
        ("nan", ValueError),
        ("inf", ValueError),
        ("complex", TypeError),
        ("text", TypeError),
    ],
)
def test_warm_start_validation(solver, name, size, bad, exc):
    op = chain_operator(10)
    y = np.random.default_rng(0).standard_normal(10)
    x = {
        "short": np.ones(size - 1),
        "2d": np.ones((size, 1)),
        "nan": np.r_[np.nan, np.ones(size - 1)],
        "inf": np.full(size, np.inf),
        "complex": np.ones(size) * (1 + 1j),
        "text": ["a"] * size,
    }[bad]
    with pytest.raises(exc, match=name):
        solver(y, op, 0.1, 0.5, **{name: x})


def test_prox_dual_nan_w0_no_longer_certifies_zero():
    op = chain_operator(10)
    y = np.random.default_rng(0).standard_normal(10)
    with pytest.raises(ValueError, match="w0"):
        prox_dual(y, op, 0.1, 0.5, w0=np.full(9, np.nan))


def test_hostile_w0_outside_the_dual_ball_is_projected():
    op = chain_operator(30)
    rng = np.random.default_rng(1)
    y = rng.standard_normal(30)
    p_ref, _ = reference(y, op, 0.1, 0.5)
    for w0 in (1e8 * rng.standard_normal(29), np.full(29, -1e300)):
        res = prox_dual(y, op, 0.1, 0.5, w0=w0, tol=1e-6, max_iter=3)
        assert np.all(np.abs(res.w) <= 0.5 * (1 + 1e-12))
        assert res.objective - p_ref <= res.gap + 1e-12


@pytest.mark.parametrize("solver", [prox_dual, conesta])
def test_non_finite_gap_stops_without_certifying(solver):
    """Weights so large that the gap overflows: the loop stops at once, with
    converged=False, an infinite gap and a ConvergenceWarning (it used to spin
    forever in CONESTA)."""
    op = chain_operator(20)
    y = np.random.default_rng(0).standard_normal(20)
    if solver is prox_dual:
        with pytest.warns(ConvergenceWarning, match="non-finite"):
            res = solver(y, op, 0.0, 1e300, max_iter=1000, w0=np.full(19, 1e300))
        assert not res.converged and res.gap == np.inf and res.n_iter <= 1000
        return
    # CONESTA drops a warm start whose objective overflows and starts cold; its
    # reported gap must still bound the suboptimality (v* = mean(y), TV -> inf)
    res = solver(y, op, 0.0, 1e300, max_iter=1000, v0=np.full(20, 1e300))
    assert not res.converged and res.n_iter <= 1000 and np.all(np.isfinite(res.v))
    p_res = 0.5 * np.sum((res.v - y) ** 2) + 1e300 * np.abs(np.diff(res.v)).sum()
    p_opt = 0.5 * np.sum((y.mean() - y) ** 2)
    assert res.gap >= p_res - p_opt > 0


def test_solvers_rescale_extreme_y():
    op = chain_operator(15)
    y = np.random.default_rng(2).standard_normal(15)
    ref = prox_dual(y, op, 0.1, 0.3, tol=1e-10)
    for s in (1e-200, 1e140):
        for solver in (prox_dual, conesta):
            res = solver(y * s, op, 0.1 * s, 0.3 * s, tol=1e-8)
            assert res.converged and np.all(np.isfinite(res.v))
            np.testing.assert_allclose(res.v / s, ref.v, atol=1e-3)
    with pytest.raises(ValueError, match="overflows"):
        prox_dual(y * 1e300, op, 0.1, 0.3)


def _run_python(code, timeout=120):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=os.getcwd(),
    )


def test_conesta_tiny_l2_terminates_in_a_subprocess():
    """SPCATV(solver="conesta") with l2 = 1e-300 used to loop forever."""
    out = _run_python(
        """
        import numpy as np
        from neurospca import SPCATV
        X = np.random.default_rng(0).standard_normal((20, 12))
        try:
            SPCATV(2, alpha=1e-300, solver="conesta").fit(X)
        except ValueError as exc:
            print("ValueError", exc)
    """,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "ValueError" in out.stdout and "alpha" in out.stdout
    assert "decrease alpha" not in out.stdout


# ------------------------------------------------------------------ spca_tv pairs


@pytest.mark.parametrize("solver", ["dual", "conesta"])
def test_spca_tv_gaps_certify_the_returned_pairs(solver):
    rng = np.random.default_rng(4)
    mask = np.ones((5, 6), dtype=bool)
    op = tv_from_mask(mask)
    X = rng.standard_normal((25, 30))
    X[:, 5:15] += 2.0 * rng.standard_normal((25, 1))
    X -= X.mean(axis=0)
    l1, l2, tv = 0.02, 0.1, 0.05
    tol = 1e-3
    U, V, info = spca_tv(X, 3, l1=l1, l2=l2, tv=tv, operator=op, tol=tol, solver=solver)
    assert_pairs_certified(X, U, V, info, op, l1, l2, tv, tol=tol)


# ------------------------------------------------------------------ SSPCA, KTrace


def test_project_l1_ball_does_not_cancel():
    np.testing.assert_allclose(project_l1_ball(np.array([1e17, 3e16]), 1.0), [1.0, 0.0])
    np.testing.assert_allclose(
        project_l1_ball(np.array([-1e17, 3e16, 5e16]), 2.0), [-2.0, 0.0, 0.0]
    )
    rng = np.random.default_rng(0)
    for _ in range(300):
        z = rng.standard_normal(int(rng.integers(1, 12))) * 10.0 ** rng.uniform(-20, 20)
        r = 10.0 ** rng.uniform(-5, 5)
        x = project_l1_ball(z, r)
        assert np.abs(x).sum() <= r * (1 + 1e-12)
        assert np.all(x * z >= 0)
        if np.abs(z).sum() > r:  # on the sphere, and z - x = theta sign(z) on the support
            assert np.abs(x).sum() == pytest.approx(r, rel=1e-9)
            theta = np.abs(z) - np.abs(x)
            sup = np.abs(x) > 0
            res = 1e-12 * np.abs(z).max()
            assert np.ptp(theta[sup]) <= res + 1e-9 * r
            assert np.all(np.abs(z[~sup]) <= theta[sup].min() + res + 1e-9 * r)


def test_prox_tree_linf_does_not_cancel():
    tree = balanced_tree([2])
    v = np.array([1e17, 3e16, 5e16])
    out = prox_tree(v, tree, 1.0, norm="linf")
    # v - prox is the projection of each subtree on an l1 ball of radius 1
    assert np.abs(v - out).sum() <= 3.0 + 1e-6 * 3
    assert np.all(out > 0.5 * np.abs(v))


def test_sspca_l1_codes_monotone_and_inside_the_ball():
    for seed in range(30):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((15, 16)) * 10.0 ** rng.uniform(-6, 6)
        lam = 10.0 ** rng.uniform(-6, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            m = SSPCA(3, alpha=lam, code_constraint="l1", random_state=seed, max_iter=50).fit(X)
        h = np.asarray(m.objective_history_)
        assert np.all(np.isfinite(h)) and np.all(np.isfinite(m.components_))
        assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1])), seed
        assert np.all(np.abs(m.scores_).sum(axis=0) <= 1 + 1e-12), seed


def _spd(p, seed, n):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, :3] += 2 * rng.standard_normal((n, 1))
    return X.T @ X / n


@pytest.mark.parametrize("seed", range(4))
def test_ktrace_converged_only_when_certified(seed):
    S = _spd(7, seed, 12)
    alpha = [0.2, 0.4, 0.8, 1.5][seed]
    _, _, exact = ktrace_pca(S, 3, alpha, tol=1e-9, max_iter=3000, exact_polar=True)
    ref = exact["objective"][-1] - exact["dual_gap"]  # a lower bound of the optimum
    for n_restarts in (1, 3, 30):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            Z, blocks, info = ktrace_pca(
                S, 3, alpha, tol=1e-4, n_restarts=n_restarts, random_state=seed
            )
        obj = ktrace_objective(S, Z, alpha, blocks)
        assert obj - ref <= info["dual_gap"] + 1e-9  # the gap is a true bound
        if info["converged"]:
            assert info["certified"] and info["dual_gap"] <= info["tol_abs"]


def test_ktrace_large_problem_is_not_claimed_converged_without_certificate():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 40))
    X[:, :4] += 2 * rng.standard_normal((60, 1))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        m = KTraceNormPCA(k=4, alpha=0.2, random_state=0).fit(X)
    if m.converged_:
        assert m.dual_gaps_[0] <= 1e-4 * 0.5 * np.sum(np.cov(X.T, bias=True) ** 2) * 1.0001
    else:
        assert any(
            "not certified" in str(w.message)
            or "did not" in str(w.message)
            or "stopped" in str(w.message)
            for w in rec
        )


# ------------------------------------------------------------------ operators


_MALFORMED = {
    "column index out of range": "mat.indices[1] = 10 ** 6",
    "negative column index": "mat.indices[0] = -5",
    "non-monotone indptr": "mat.indptr[2] = 0",
    "indptr past the data": "mat.indptr[-1] = 10 ** 6",
    "NaN data": "mat.data[0] = np.nan",
    "float indices": "mat.indices = mat.indices.astype(float)",
}


def test_malformed_operators_are_rejected_in_a_subprocess():
    """These used to segfault through fit, .value() and the norm bound; one
    subprocess runs them all (a crash is a non-zero return code, not a dead
    test runner)."""
    cases = "\n".join(
        f"""
mat = chain_operator(6).matrix.copy()
{code}
try:
    op = GroupOperator(mat, np.arange(6))
except (ValueError, TypeError) as exc:
    print({case!r}, "|", type(exc).__name__, "|", exc, flush=True)
else:
    op.value(np.ones(6)); op.norm2
    SPCATV(1, alpha=0.1, operator=op).fit(np.random.default_rng(0).standard_normal((5, 6)))
    print({case!r}, "| ACCEPTED", flush=True)
"""
        for case, code in sorted(_MALFORMED.items())
    )
    out = _run_python(
        "import numpy as np\nfrom neurospca import GroupOperator, SPCATV, chain_operator\n" + cases
    )
    assert out.returncode == 0, f"crashed with {out.returncode}: {out.stderr[-500:]}"
    lines = out.stdout.strip().splitlines()
    assert len(lines) == len(_MALFORMED), out.stdout
    for line in lines:
        case, kind, msg = (part.strip() for part in line.split("|", 2))
        assert kind in ("ValueError", "TypeError") and "matrix" in msg, line


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(group_ptr=[0, 3, 2, 5]), "group_ptr"),
        (dict(group_ptr=[1, 5]), "group_ptr"),
        (dict(group_ptr=[0, 4]), "group_ptr"),
        (dict(group_ptr=np.array([0.0, 5.0])), "group_ptr"),
        (dict(norm2=0.0), "norm2"),
        (dict(norm2=-1.0), "norm2"),
        (dict(norm2=np.nan), "norm2"),
        (dict(norm2=1.0), "norm2"),  # below the largest squared row norm (2)
    ],
)
def test_group_operator_rejects_inconsistent_groups_and_norm2(kwargs, match):
    mat = chain_operator(6).matrix
    args = dict(group_ptr=np.arange(6), norm2=None) | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        GroupOperator(mat, args["group_ptr"], norm2=args["norm2"])


def test_group_operator_other_formats_and_canonical_form():
    coo = sp.coo_matrix((np.ones(3), (np.array([0, 1, 1]), np.array([0, 2, 2]))), shape=(2, 3))
    op = GroupOperator(coo, [0, 2])
    assert op.matrix.indices.dtype == np.int32 and op.matrix.has_canonical_format
    assert op.matrix[1, 2] == 2.0  # duplicates summed
    bad = sp.coo_matrix((np.ones(1), (np.array([0]), np.array([0]))), shape=(2, 3))
    bad.col[0] = 7
    with pytest.raises(ValueError, match="matrix"):
        GroupOperator(bad, [0, 2])
    with pytest.raises(TypeError, match="matrix"):
        GroupOperator(sp.csr_matrix(np.eye(2) * 1j), [0, 2])
    assert GroupOperator(sp.csr_matrix((2, 3)), [0, 2], norm2=0.0).norm2 == 0.0


# ------------------------------------------------------------------ estimators


def _estimators():
    return [
        SPCATV(2, alpha=0.1),
        SSPCA(2, random_state=0),
        NonnegativeSparsePCA(2),
        KTraceNormPCA(k=2, alpha=0.1, random_state=0),
        HierarchicalDictionaryLearning(balanced_tree([2]), random_state=0),
    ]


@pytest.mark.parametrize("est", _estimators(), ids=lambda e: type(e).__name__)
def test_failed_refit_leaves_the_fitted_model_untouched(est):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 12))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X)
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(est).items()}
    X2 = rng.standard_normal((20, 9)) + 100.0
    X2[3, 4] = np.nan
    with pytest.raises(ValueError):
        est.fit(X2)
    assert set(vars(est)) == set(before)
    for k, v in before.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(vars(est)[k], v)
    assert est.n_features_in_ == 12
    est.transform(X)  # still the old, consistent model


def test_interrupted_refit_restores_the_model():
    """A failure after mean_ was computed (inside spca_tv) restores everything."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 12))
    est = SPCATV(2, alpha=0.1).fit(X)
    mean, comps = est.mean_.copy(), est.components_.copy()
    est.set_params(operator=chain_operator(7))  # wrong size: raises inside spca_tv
    with pytest.raises(ValueError, match="operator"):
        est.fit(X + 5.0)
    np.testing.assert_array_equal(est.mean_, mean)
    np.testing.assert_array_equal(est.components_, comps)


@pytest.mark.parametrize("est", _estimators(), ids=lambda e: type(e).__name__)
def test_complex_input_is_a_type_error_naming_x(est):
    X = np.random.default_rng(0).standard_normal((20, 12)) * (1 + 0.5j)
    with pytest.raises(TypeError, match="X is complex"):
        est.fit(X)


@pytest.mark.parametrize("est", _estimators(), ids=lambda e: type(e).__name__)
def test_extreme_scales_give_a_result_or_a_clear_error(est):
    X = np.random.default_rng(0).standard_normal((20, 12))
    for scale in (1e200, 1e-200, 1e60, 1e-60):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                warnings.simplefilter("error", RuntimeWarning)
                est.fit(X * scale)
        except ValueError as exc:
            # names the data (rescale it) or the penalty that does not suit its scale
            assert "Rescale X" in str(exc) or "alpha" in str(exc), str(exc)
        else:
            assert np.all(np.isfinite(est.components_))


def test_tiny_alpha_errors_name_alpha():
    X = np.random.default_rng(0).standard_normal((20, 12))
    with pytest.raises(ValueError, match="alpha"):
        SPCATV(2, alpha=1e-300).fit(X)
    with pytest.raises(ValueError, match="alpha"):
        NonnegativeSparsePCA(2, alpha=1e-300).fit(X)


@pytest.mark.parametrize(
    "func, name",
    [
        (lambda v: prox_tree(v, balanced_tree([2, 2]), 1.0), "v"),
        (lambda v: prox_tree(v, balanced_tree([2, 2]), 1.0, norm="linf"), "v"),
        (lambda v: project_l1_ball(v, 1.0), "Z"),
    ],
)
@pytest.mark.parametrize(
    "bad, exc",
    [
        (np.r_[np.nan, np.ones(6)], ValueError),
        (np.full(7, np.inf), ValueError),
        (np.ones(7) * (1 + 1j), TypeError),
    ],
)
def test_tree_functions_reject_non_finite_and_complex(func, name, bad, exc):
    with pytest.raises(exc, match=name):
        func(bad)


def test_project_l1_ball_rejects_bad_radius():
    for r, match in ((np.nan, "radius"), (-1.0, "radius"), (np.ones(2), "radius")):
        with pytest.raises(ValueError, match=match):
            project_l1_ball(np.ones((3, 3)), r)
