"""float32 v-steps (issue 14): float32 kept float32 in the dual kernels, certified in float64.

The kernels take float32 arrays (fused types; sums in double): the float32
kernels must equal their NumPy twins and the CSR path to float32 precision,
follow the float64 kernels to float32 precision, and keep their dtype.
A float32 ``prox_dual`` reports only a gap evaluated in float64 at the
returned pair, so its gap bounds the true suboptimality (checked against
float64 solves and cvxpy), even when the kernel's own gap lies; a tol below
float32 reach ends with ``converged=False`` and a warning, not a loop.
Float32 and float64 SPCA-TV fits agree to float32 precision.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from neurospca import SPCATV, icosphere, spca_tv, tv_from_mask, tv_from_mesh
from neurospca._kernels import _numpy_prox as NK
from neurospca._kernels import _prox as CK
from neurospca.solvers import ProxProblem, prox_dual, prox_objective
from neurospca.solvers import prox as prox_mod
from neurospca.solvers._base import difference_arrays, operator_arrays
from neurospca.solvers.gap import feasible_dual, prox_gap
from neurospca.solvers.penalties import L1, GroupNorm

from ._certificates import assert_pairs_certified
from ._helpers import cvxpy_prox

F32, F64 = np.float32, np.float64
L1W, GW = 0.2, 0.4  # weights of the kernel-level runs


def _ops():
    rng = np.random.default_rng(0)
    coords, faces = icosphere(2)
    return {"grid": tv_from_mask(rng.random((7, 6, 5)) > 0.25), "mesh": tv_from_mesh(coords, faces)}


OPS = _ops()


@pytest.fixture(params=sorted(OPS))
def op(request):
    return OPS[request.param]


def _float64_gap(res, y, op, l1, group):
    """``prox_gap`` at the returned pair; equal to ``res.gap`` up to float64 rounding."""
    gap, primal = prox_gap(res.v, y, op, l1, group, res.w)
    slack = 1e-13 * float(np.asarray(y, F64) @ np.asarray(y, F64))
    assert abs(res.gap - gap) <= slack and abs(res.objective - primal) <= slack
    return gap


def _rel(a, b):
    a, b = np.asarray(a, F64), np.asarray(b, F64)
    return float(np.abs(a - b).max() / np.abs(b).max())


def _start(op, seed=3):
    rng = np.random.default_rng(seed)
    y = 2 * rng.standard_normal(op.n_features)
    w = feasible_dual(0.3 * rng.standard_normal(op.n_rows), op, GW)
    w_old = feasible_dual(w + 0.05 * rng.standard_normal(op.n_rows), op, GW)
    return y, w, w_old


def _run_diff(K, op, dtype, n_chunks, n_iter, restart=False, n_threads=1, seed=3):
    """``diff_dual_iterations`` from a fixed state; the full state in ``dtype``."""
    y, w, w_old = (a.astype(dtype) for a in _start(op, seed))
    heads, tails, scale, hg, gptr, chunk_ptr = difference_arrays(op, n_chunks)
    ATw, ATw_old = np.empty_like(y), np.empty_like(y)
    K.diff_rmatvec(heads, tails, scale, w, ATw)
    K.diff_rmatvec(heads, tails, scale, w_old, ATw_old)
    bufs = np.zeros((chunk_ptr.size - 2, y.size), dtype)
    vq, vw = np.empty_like(y), np.zeros_like(y)
    out = K.diff_dual_iterations(
        n_iter,
        heads,
        tails,
        scale,
        hg,
        gptr,
        chunk_ptr,
        y,
        L1W,
        GW,
        1.0 / op.norm2,
        w,
        w_old,
        ATw,
        ATw_old,
        bufs,
        vq,
        vw,
        1.0,
        restart,
        True,
        n_threads,
    )
    if out[2]:
        w, w_old, ATw, ATw_old = w_old, w, ATw_old, ATw
    return out, [w, w_old, ATw + bufs.sum(axis=0), ATw_old, vw]


def _run_csr(K, op, dtype, n_iter, restart=False, seed=3):
    y, w, w_old = (a.astype(dtype) for a in _start(op, seed))
    arrs = operator_arrays(op, dtype)
    ATw, ATw_old = np.empty_like(y), np.empty_like(y)
    K.csr_matvec(*arrs[3:6], w, ATw)
    K.csr_matvec(*arrs[3:6], w_old, ATw_old)
    t, n_restarts = K.dual_iterations(
        n_iter,
        *arrs,
        y,
        L1W,
        GW,
        1.0 / op.norm2,
        w,
        w_old,
        ATw,
        ATw_old,
        np.empty_like(y),
        1.0,
        restart,
    )
    v = np.empty_like(y)
    terms = K.dual_gap_terms(*arrs[:3], arrs[-1], y, ATw_old, L1W, GW, v)
    return (t, n_restarts) + terms, [w, w_old, ATw, ATw_old, v]


# ------------------------------------------------------------------ kernels


@pytest.mark.parametrize("n_chunks", [1, 2])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_float32_diff_kernel_equals_twin_csr_and_float64(op, n_chunks, n_threads):
    n_iter = 12
    c32 = _run_diff(CK, op, F32, n_chunks, n_iter, n_threads=n_threads)
    n32 = _run_diff(NK, op, F32, n_chunks, n_iter)
    r32 = _run_csr(CK, op, F32, n_iter)
    c64 = _run_diff(CK, op, F64, n_chunks, n_iter)
    for arrays in (c32[1], n32[1], r32[1]):
        assert all(a.dtype == F32 for a in arrays)
    # w, w_old, A^T w, A^T w_old, v(w_old): float32 precision (rounded at 6e-8)
    for i, (a, b, c, d) in enumerate(zip(c32[1], n32[1], r32[1], c64[1], strict=True)):
        assert _rel(a, b) < 2e-6, i
        assert _rel(a, c) < 2e-6, i
        assert _rel(a, d) < 2e-6, i
        assert _rel(a, d) > 0 or not np.any(d)  # it did run in float32
    # the fused gap terms (P(v), D(w), TV) at w_old
    np.testing.assert_allclose(c32[0][3:], n32[0][3:], rtol=1e-6)
    np.testing.assert_allclose(c32[0][3:], r32[0][2:], rtol=1e-6)
    np.testing.assert_allclose(c32[0][3:], c64[0][3:], rtol=1e-6)


def test_float32_threads_do_not_change_the_result():
    op = OPS["mesh"]
    a = _run_diff(CK, op, F32, 2, 9, restart=True, n_threads=1)
    b = _run_diff(CK, op, F32, 2, 9, restart=True, n_threads=2)
    assert a[0] == b[0]
    for x, z in zip(a[1], b[1], strict=True):
        np.testing.assert_array_equal(x, z)


def test_float32_csr_kernel_equals_twin(op):
    c, n = _run_csr(CK, op, F32, 10), _run_csr(NK, op, F32, 10)
    np.testing.assert_allclose(c[0][2:], n[0][2:], rtol=1e-6)
    for a, b in zip(c[1], n[1], strict=True):
        assert a.dtype == b.dtype == F32
        assert _rel(a, b) < 2e-6


def test_float32_small_kernels(op):
    rng = np.random.default_rng(1)
    gptr = operator_arrays(op)[-1]
    x = rng.standard_normal(op.n_rows)
    for K in (CK, NK):
        z32, z64 = x.astype(F32), x.copy()
        K.project_groups(z32, gptr, 0.5)
        K.project_groups(z64, gptr, 0.5)
        assert z32.dtype == F32 and _rel(z32, z64) < 1e-6
        assert K.group_norm_sum(z32, gptr) == pytest.approx(K.group_norm_sum(z64, gptr), rel=1e-6)
        out = np.empty(op.n_features, F32)
        K.soft_threshold(x[: op.n_features].astype(F32), 0.3, out)
        ref = np.empty(op.n_features)
        K.soft_threshold(x[: op.n_features], 0.3, ref)
        np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-7)


def test_mixed_dtypes_are_refused():
    op = OPS["grid"]
    y = np.zeros(op.n_features, F32)
    heads, tails, scale, *_ = difference_arrays(op, 1)
    with pytest.raises(ValueError, match="dtype mismatch"):
        CK.diff_rmatvec(heads, tails, scale, np.zeros(op.n_rows), y)  # float64 w, float32 out
    with pytest.raises(ValueError, match="dtype"):
        operator_arrays(op, np.float16)


# ------------------------------------------------------------------ prox_dual


def _p_star(y, op, l1, group):
    """A float64 lower bound of ``P*``: ``P(v) - gap`` of a tight float64 solve."""
    ref = prox_dual(np.asarray(y, F64), op, l1, group, tol=1e-12, max_iter=100_000)
    return ref.objective - ref.gap


@pytest.mark.parametrize("kernels", ["cython", "numpy"])
@pytest.mark.parametrize("path", ["difference", "csr"])
@pytest.mark.parametrize("tol", [1e-3, 1e-6])
def test_float32_prox_dual_is_certified_in_float64(op, kernels, path, tol):
    y = (2 * np.random.default_rng(7).standard_normal(op.n_features)).astype(F32)
    res = prox_dual(y, op, 0.3, 0.6, tol=tol, kernels=kernels, kernel_path=path)
    assert res.v.dtype == F32 and res.w.dtype == F32
    assert res.converged
    # the reported gap IS the float64 gap of the returned pair
    _float64_gap(res, y, op, 0.3, 0.6)
    assert res.gap_history[-1] == (res.n_iter, res.gap)
    assert res.gap <= res.tol_abs == tol * 0.5 * float(y.astype(F64) @ y.astype(F64))
    # and it bounds the true suboptimality
    subopt = prox_objective(res.v, y.astype(F64), op, 0.3, 0.6) - _p_star(y, op, 0.3, 0.6)
    assert subopt <= res.gap
    # the float64 solve of the same y agrees to its certified distance
    r64 = prox_dual(y.astype(F64), op, 0.3, 0.6, tol=tol)
    assert np.linalg.norm(res.v - r64.v) <= np.sqrt(2 * res.gap) + np.sqrt(2 * r64.gap)


def test_float32_certificate_against_cvxpy():
    pytest.importorskip("cvxpy")
    op = OPS["grid"]
    y = (3 * np.random.default_rng(2).standard_normal(op.n_features)).astype(F32)
    v_cvx, p_cvx = cvxpy_prox(y.astype(F64), op, 0.4, 0.5)
    for tol in (1e-2, 1e-4, 1e-6):
        res = prox_dual(y, op, 0.4, 0.5, tol=tol, max_iter=5)  # few iterations: gap > 0
        p = prox_objective(res.v, y.astype(F64), op, 0.4, 0.5)
        # cvxpy's P is at least P*: P(v) - P(v_cvx) <= P(v) - P* <= gap
        assert p - p_cvx <= res.gap + 1e-9 * float(y.astype(F64) @ y.astype(F64))
        res = prox_dual(y, op, 0.4, 0.5, tol=tol)
        assert res.converged
        p = prox_objective(res.v, y.astype(F64), op, 0.4, 0.5)
        assert p - p_cvx <= res.gap + 1e-9 * float(y.astype(F64) @ y.astype(F64))
        assert np.linalg.norm(res.v - v_cvx) <= np.sqrt(2 * res.gap) + 1e-3


def test_float32_unreachable_tol_warns_and_stops():
    op = OPS["mesh"]
    y = (2 * np.random.default_rng(5).standard_normal(op.n_features)).astype(F32)
    for path in ("difference", "csr"):
        with pytest.warns(ConvergenceWarning, match="float32 precision"):
            res = prox_dual(y, op, 0.3, 0.6, tol=1e-14, max_iter=100_000, kernel_path=path)
        assert not res.converged and res.gap > res.tol_abs
        assert res.n_iter < 20_000  # stopped at the floor, not at max_iter
        _float64_gap(res, y, op, 0.3, 0.6)
        assert res.gap <= 1e-6 * 0.5 * float(y.astype(F64) @ y.astype(F64))  # float32 reach
        # a float64 y reaches what float32 cannot
        assert prox_dual(y.astype(F64), op, 0.3, 0.6, tol=1e-14, max_iter=100_000).converged


class _LyingKernels:
    """The compiled kernels, but the fused gap always claims 0 (primal = dual)."""

    def __getattr__(self, name):
        return getattr(CK, name)

    @staticmethod
    def diff_dual_iterations(*args):
        out = CK.diff_dual_iterations(*args)
        return out[:3] + (out[4], out[4], out[5])


def test_a_lying_kernel_gap_is_not_reported(monkeypatch):
    """The float64 check is what certifies a float32 solve: a kernel gap of 0 is not trusted."""
    op = OPS["grid"]
    y = (2 * np.random.default_rng(9).standard_normal(op.n_features)).astype(F32)
    p_star = _p_star(y, op, 0.3, 0.6)  # with the honest kernels
    monkeypatch.setattr(prox_mod, "get_kernels", lambda kernels: _LyingKernels())
    res = prox_dual(y, op, 0.3, 0.6, tol=1e-6, kernel_path="difference")
    assert _float64_gap(res, y, op, 0.3, 0.6) > 0.0
    assert res.converged == (res.gap <= res.tol_abs)
    assert prox_objective(res.v, y.astype(F64), op, 0.3, 0.6) - p_star <= res.gap
    # the float64 path trusts its kernel: the same lie is reported there (the test can fail)
    assert prox_dual(y.astype(F64), op, 0.3, 0.6, tol=1e-6, kernel_path="difference").gap == 0.0


def test_float32_edge_cases():
    op = OPS["grid"]
    y = (2 * np.random.default_rng(4).standard_normal(op.n_features)).astype(F32)
    # no group norm: the direct soft threshold, its float32 rounding certified in float64
    res = prox_dual(y, op, 0.3, 0.0)
    assert res.v.dtype == F32 and res.converged
    _float64_gap(res, y, op, 0.3, 0.0)
    # warm starts across dtypes
    r64 = prox_dual(y.astype(F64), op, 0.3, 0.6, tol=1e-6)
    r32 = prox_dual(y, op, 0.3, 0.6, tol=1e-6, w0=r64.w)
    assert r32.converged and r32.n_iter <= r64.n_iter and r32.w.dtype == F32
    assert prox_dual(y.astype(F64), op, 0.3, 0.6, tol=1e-6, w0=r32.w).converged
    # other dtypes are float64, as before
    assert prox_dual(y.astype(np.float16), op, 0.3, 0.6).v.dtype == F64
    assert prox_dual([1.0, 2.0, 3.0], tv_from_mask(np.ones(3, bool)), 0.1, 0.1).v.dtype == F64
    # a generic problem (two group norms) with a float32 y runs in float64
    pieces = [L1(0.3), GroupNorm(op, 0.3), GroupNorm(op, 0.2)]
    gen = prox_mod.solve_dual(ProxProblem(y, pieces), tol=1e-6)
    assert gen.converged and gen.v.dtype == F64


# ------------------------------------------------------------------ SPCA-TV


def _data(n=80, shape=(8, 9), seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, shape[0] * shape[1])) + 3.0
    X[:, 5:20] += 3 * rng.standard_normal((n, 1))
    X[:, 40:55] += 2.5 * rng.standard_normal((n, 1))
    return X


@pytest.fixture
def vstep_dtypes(monkeypatch):
    """The dtypes of the ``y`` of every dual v-step solved while the test runs."""
    from neurospca.solvers import _registry

    dtypes = []
    inner = prox_mod.solve_dual

    def spy(problem, **kw):
        dtypes.append(problem.y.dtype)
        return inner(problem, **kw)

    monkeypatch.setattr(_registry, "solve_dual", spy)
    return dtypes


def test_spcatv_runs_float32_vsteps_and_agrees_with_float64(vstep_dtypes):
    dtypes = vstep_dtypes
    X = _data()
    kw = dict(n_components=2, alpha_rel=0.5, tol=1e-5, operator=tv_from_mask(np.ones((8, 9), bool)))
    m64 = SPCATV(**kw).fit(X)
    assert set(dtypes) == {np.dtype(F64)}
    dtypes.clear()
    m32 = SPCATV(**kw).fit(X.astype(F32))
    # float32 v-steps; the final certification of each pair in float64 (exact y)
    assert np.dtype(F32) in dtypes
    assert m32.components_.dtype == F64  # the public dtype
    assert _rel(m32.components_, m64.components_) < 1e-4
    assert np.all(m32.rel_gaps_ <= kw["tol"])


def test_spca_tv_float32_pairs_certified():
    X = _data(n=60, seed=3).astype(F32)
    Xc = X - X.mean(axis=0)
    op = tv_from_mask(np.ones((8, 9), bool))
    for tol in (1e-3, 1e-6):
        U, V, info = spca_tv(Xc, 2, l1=0.02, l2=0.1, tv=0.05, operator=op, tol=tol)
        assert_pairs_certified(Xc, U, V, info, op, 0.02, 0.1, 0.05, tol=tol)
        assert all(info["converged"])


def test_spca_tv_float32_with_conesta_stays_float64():
    X = _data(n=40, seed=1).astype(F32)
    Xc = X - X.mean(axis=0)
    op = tv_from_mask(np.ones((8, 9), bool))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        U, V, info = spca_tv(
            Xc, 1, l1=0.02, l2=0.1, tv=0.05, operator=op, tol=1e-3, solver="conesta", max_iter=3
        )
    assert np.any(V)


def test_float32_floor_in_a_fit_falls_back_to_float64(monkeypatch, vstep_dtypes):
    """A float32 v-step that meets its floor is finished in float64 (and the later ones)."""
    from neurospca.decomposition import _alternation
    from neurospca.solvers import _precision

    dtypes = vstep_dtypes
    monkeypatch.setattr(_alternation, "FLOAT32_VSTEP_MIN_TOL", 0.0)
    monkeypatch.setattr(_precision, "FLOOR_ITERS", 30)
    X = _data(n=50, seed=2).astype(F32)
    Xc = X - X.mean(axis=0)
    op = tv_from_mask(np.ones((8, 9), bool))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the outer loop's max_iter
        warnings.filterwarnings("error", message=".*float32")  # the v-step's floor: handled
        U, V, info = spca_tv(
            Xc,
            1,
            l1=0.02,
            l2=0.1,
            tv=0.05,
            operator=op,
            tol=1e-12,
            max_iter=3,
            max_inner_iter=100_000,
        )
    # the first v-step met the floor and was finished in float64; float64 from then on
    assert dtypes[:2] == [F32, F64] and dtypes.count(np.dtype(F32)) == 1 and len(dtypes) > 2
    assert info["rel_gaps"][0] <= 1e-12
    assert_pairs_certified(Xc, U, V, info, op, 0.02, 0.1, 0.05)


def test_tight_tol_fits_run_float64_vsteps(vstep_dtypes):
    SPCATV(
        n_components=1, alpha_rel=0.5, tol=1e-6, operator=tv_from_mask(np.ones((8, 9), bool))
    ).fit(_data().astype(F32))
    assert set(vstep_dtypes) == {np.dtype(F64)}


@pytest.mark.parametrize("scale", [1e-41, 1e-29, 1e-12, 1e12, 1e29, 1e37])
def test_float32_extreme_scales(scale):
    """Scale-free in float32's normal range; outside it the float64 solve (subnormals, overflow)."""
    op = OPS["mesh"]
    y = 2 * np.random.default_rng(6).standard_normal(op.n_features)
    ref = prox_dual(y.astype(F32), op, 0.3, 0.6, tol=1e-6)
    ys = (y * scale).astype(F32)
    res = prox_dual(ys, op, 0.3 * scale, 0.6 * scale, tol=1e-6)
    assert res.converged
    if 1e-30 <= scale <= 1e30:
        assert res.v.dtype == F32 and res.n_iter == ref.n_iter
    else:
        assert res.v.dtype == F64
    gap = _float64_gap(res, ys, op, 0.3 * scale, 0.6 * scale)
    assert gap <= 1e-6 * 0.5 * float(ys.astype(F64) @ ys.astype(F64))
