"""The difference-form dual kernel (issue 14 part 3).

Every row of grid TV, mesh-edge TV and chains is ``c (v[tail] - v[head])``;
such operators get a kernel with neither ``A`` nor ``A^T`` as a matrix, the
certified gap fused into its passes and OpenMP chunks. It must produce the
iterates of the general CSR kernel (bit for bit with one chunk), equal its
NumPy twin, give the same certificate, and not depend on the thread count.
(Meshes run in a locality order: tests/test_locality_order.py.)
"""

import numpy as np
import pytest

from neurospca import (
    GroupOperator,
    chain_operator,
    group_lasso_operator,
    icosphere,
    stack_operators,
    tv_from_hemispheres,
    tv_from_mask,
    tv_from_mesh,
)
from neurospca._kernels import _numpy_prox as NK
from neurospca._kernels import _prox as CK
from neurospca.solvers import prox_dual, prox_objective, set_n_threads
from neurospca.solvers._base import (
    difference_arrays,
    locality_order,
    operator_arrays,
    resolve_n_threads,
)

from ._helpers import random_group_operator


def _mesh():
    coords, faces = icosphere(2)
    return tv_from_mesh(coords, faces)


def _diff_ops():
    rng = np.random.default_rng(0)
    grid = tv_from_mask(rng.random((7, 6, 5)) > 0.25)
    mesh = _mesh()
    A = mesh.matrix
    perm = rng.permutation(A.shape[0])
    # rows shuffled and negated: heads are no longer the groups
    shuffled = GroupOperator(-A[perm], np.r_[np.arange(0, A.shape[0], 3), A.shape[0]])
    return {
        "grid": grid,
        "chain": chain_operator(57),
        "mesh": mesh,
        "scaled": grid.scaled(0.37),
        "shuffled": shuffled,
    }


DIFF_OPS = _diff_ops()


@pytest.fixture(params=sorted(DIFF_OPS))
def op(request):
    return DIFF_OPS[request.param]


# ------------------------------------------------------------------ detection


def test_difference_form_detected_and_exact(op):
    form = op.difference_form()
    assert form is not None
    assert form.heads.dtype == np.int32 and form.tails.dtype == np.int32
    assert not form.heads.flags.writeable
    v = np.random.default_rng(1).standard_normal(op.n_features)
    np.testing.assert_allclose(
        form.scale * (v[form.tails] - v[form.heads]), op.matrix @ v, rtol=0, atol=1e-14
    )
    assert op.difference_form() is form  # cached


def test_heads_are_groups_on_grids_and_meshes():
    for name in ("grid", "chain", "mesh", "scaled"):
        assert difference_arrays(DIFF_OPS[name], 1)[3], name
    assert not difference_arrays(DIFF_OPS["shuffled"], 1)[3]


def test_scaled_operator_keeps_its_weight():
    form = DIFF_OPS["scaled"].difference_form()
    assert form.scale == pytest.approx(0.37, rel=1e-15)


def test_hemispheres_edges_detected_gradient_not():
    coords, faces = icosphere(2)
    op_e, _ = tv_from_hemispheres((coords, faces), (coords, faces), kind="edges")
    op_g, _ = tv_from_hemispheres((coords, faces), (coords, faces), kind="gradient")
    assert op_e.difference_form() is not None
    assert op_g.difference_form() is None
    assert tv_from_mesh(coords, faces, kind="gradient").difference_form() is None


def _unequal_pair():
    import scipy.sparse as sp

    # rows with one -1 and one +2: not a difference
    return GroupOperator(sp.csr_matrix(np.array([[-1.0, 2.0, 0.0], [0.0, -1.0, 2.0]])), [0, 2])


@pytest.mark.parametrize(
    "make",
    [
        lambda: group_lasso_operator([[0, 1, 2], [2, 3]], 6),
        lambda: random_group_operator(30, 10, np.random.default_rng(2)),
        lambda: stack_operators([chain_operator(20), chain_operator(20)], [1.0, 0.5]),
        lambda: chain_operator(10).scaled(0.0),
        _unequal_pair,
    ],
)
def test_general_operators_not_detected(make):
    assert make().difference_form() is None


def test_same_weight_stack_is_a_difference():
    op = stack_operators([chain_operator(20), chain_operator(20)], [0.5, 0.5])
    form = op.difference_form()
    assert form is not None and form.scale == 0.5


# ------------------------------------------------------------------ kernels


def _state(op, rng, n_chunks):
    heads, tails, scale, hg, gptr, chunk_ptr = difference_arrays(op, n_chunks)
    P, R = op.n_features, op.n_rows
    w = 0.3 * rng.standard_normal(R)
    w_old = w + 0.05 * rng.standard_normal(R)
    ATw = op.matrix.T @ w
    ATw_old = op.matrix.T @ w_old
    bufs = np.zeros((chunk_ptr.size - 2, P))
    return (heads, tails, scale, hg, gptr, chunk_ptr), [w, w_old, ATw, ATw_old, bufs]


def _run_diff(K, op, y, arrays, state, n_iter, t, with_gap, n_threads=1):
    heads, tails, scale, hg, gptr, chunk_ptr = arrays
    w, w_old, ATw, ATw_old, bufs = [a.copy() for a in state]
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
        0.2,
        0.4,
        1.0 / op.norm2,
        w,
        w_old,
        ATw,
        ATw_old,
        bufs,
        vq,
        vw,
        t,
        True,
        with_gap,
        n_threads,
    )
    if out[2]:  # swapped roles
        w, w_old, ATw, ATw_old = w_old, w, ATw_old, ATw
    ATw_full = ATw + bufs.sum(axis=0)
    return out, w, w_old, ATw_full, ATw_old, vw


@pytest.mark.parametrize("n_iter", [1, 2, 7])
@pytest.mark.parametrize("n_chunks", [1, 3])
def test_diff_kernel_equals_numpy_twin(op, n_iter, n_chunks):
    rng = np.random.default_rng(3)
    y = rng.standard_normal(op.n_features)
    arrays, state = _state(op, rng, n_chunks)
    for t in (1.0, 2.5):
        c = _run_diff(CK, op, y, arrays, state, n_iter, t, True)
        n = _run_diff(NK, op, y, arrays, state, n_iter, t, True)
        assert c[0][:3] == pytest.approx(n[0][:3], rel=1e-12)
        np.testing.assert_allclose(c[0][3:], n[0][3:], rtol=1e-11)
        for a, b in zip(c[1:], n[1:], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("n_iter", [1, 4, 9])
def test_diff_kernel_equals_csr_kernel_bit_for_bit(op, n_iter):
    """One chunk: exactly the iterates of the general CSR kernel."""
    rng = np.random.default_rng(4)
    y = rng.standard_normal(op.n_features)
    arrays, state = _state(op, rng, 1)
    A_ip, A_ix, A_d, At_ip, At_ix, At_d, gptr = operator_arrays(op)
    w, w_old, ATw, ATw_old, _ = [a.copy() for a in state]
    # the CSR kernel keeps A^T w as computed by its own gather
    CK.csr_matvec(At_ip, At_ix, At_d, w, ATw)
    CK.csr_matvec(At_ip, At_ix, At_d, w_old, ATw_old)
    state_d = [w.copy(), w_old.copy(), ATw.copy(), ATw_old.copy(), state[4]]
    (t_d, nr_d, _, *_), w_d, w_old_d, ATw_d, ATw_old_d, _ = _run_diff(
        CK, op, y, arrays, state_d, n_iter, 1.7, False
    )
    t_c, nr_c = CK.dual_iterations(
        n_iter,
        A_ip,
        A_ix,
        A_d,
        At_ip,
        At_ix,
        At_d,
        gptr,
        y,
        0.2,
        0.4,
        1.0 / op.norm2,
        w,
        w_old,
        ATw,
        ATw_old,
        np.empty_like(y),
        1.7,
        True,
    )
    assert (t_d, nr_d) == (t_c, nr_c)
    np.testing.assert_array_equal(w_d, w)
    np.testing.assert_array_equal(w_old_d, w_old)
    np.testing.assert_array_equal(ATw_d, ATw)
    np.testing.assert_array_equal(ATw_old_d, ATw_old)


@pytest.mark.parametrize("n_chunks", [1, 2, 5])
def test_fused_gap_equals_separate_gap(op, n_chunks):
    rng = np.random.default_rng(5)
    y = rng.standard_normal(op.n_features)
    arrays, state = _state(op, rng, n_chunks)
    out, w, w_old, ATw, ATw_old, vw = _run_diff(CK, op, y, arrays, state, 3, 1.0, True)
    primal, dual, tv = out[3:]
    A_ip, A_ix, A_d, *_, gptr = operator_arrays(op)
    v = np.empty_like(y)
    ref = CK.dual_gap_terms(A_ip, A_ix, A_d, gptr, y, ATw_old, 0.2, 0.4, v)
    if n_chunks == 1:
        assert (primal, dual, tv) == ref
        np.testing.assert_array_equal(vw, v)
    np.testing.assert_allclose((primal, dual, tv), ref, rtol=1e-13)
    np.testing.assert_allclose(vw, v, rtol=0, atol=1e-14)
    # and the terms are what they claim: P(v(w_old)) and D(w_old)
    assert primal == pytest.approx(prox_objective(v, y, op, 0.2, 0.4), rel=1e-12)
    assert dual == pytest.approx(0.5 * y @ y - 0.5 * v @ v, rel=1e-12)


def test_chunks_not_threads_set_the_result():
    op = DIFF_OPS["grid"]
    rng = np.random.default_rng(6)
    y = rng.standard_normal(op.n_features)
    arrays, state = _state(op, rng, 2)
    a = _run_diff(CK, op, y, arrays, state, 6, 1.0, True, n_threads=1)
    b = _run_diff(CK, op, y, arrays, state, 6, 1.0, True, n_threads=2)
    assert a[0] == b[0]
    for x, z in zip(a[1:], b[1:], strict=True):
        np.testing.assert_array_equal(x, z)


# ------------------------------------------------------------------ prox_dual


@pytest.mark.parametrize("tol", [1e-3, 1e-9])
def test_prox_dual_difference_equals_csr_path(op, tol):
    rng = np.random.default_rng(7)
    y = 2 * rng.standard_normal(op.n_features)
    ref = prox_dual(y, op, 0.3, 0.6, tol=tol, kernel_path="csr")
    new = prox_dual(y, op, 0.3, 0.6, tol=tol, kernel_path="difference", n_threads=1)
    assert new.n_iter == ref.n_iter and new.converged == ref.converged
    if locality_order(op) is None:  # the user's order: the CSR path's sums
        assert new.gap_history == ref.gap_history
        np.testing.assert_array_equal(new.v, ref.v)
        np.testing.assert_array_equal(new.w, ref.w)
        assert new.objective == ref.objective
    else:  # meshes run in their locality order: A^T w summed in another order
        # gaps are differences of objectives of size ||y||^2: rounding of those
        np.testing.assert_allclose(
            np.array(new.gap_history),
            np.array(ref.gap_history),
            rtol=1e-10,
            atol=1e-12 * float(y @ y),
        )
        np.testing.assert_allclose(new.v, ref.v, rtol=0, atol=1e-10 * np.abs(ref.v).max())
        np.testing.assert_allclose(new.w, ref.w, rtol=0, atol=1e-10 * np.abs(ref.w).max())
    twin = prox_dual(y, op, 0.3, 0.6, tol=tol, kernel_path="difference", kernels="numpy")
    # the twin sums in another order: same iterates to rounding, which long
    # runs amplify; both are within their certified distance of v*
    # (the prox objective is 1-strongly convex: ||v - v*||^2 / 2 <= gap)
    dist = np.linalg.norm(twin.v - ref.v)
    assert dist <= np.sqrt(2 * twin.gap) + np.sqrt(2 * ref.gap) + 1e-12
    if tol >= 1e-3:
        assert twin.n_iter == ref.n_iter
        np.testing.assert_allclose(twin.v, ref.v, rtol=0, atol=1e-10)


def test_prox_dual_threads_deterministic(monkeypatch):
    from neurospca.solvers import _base

    monkeypatch.setattr(_base, "MIN_ROWS_PER_CHUNK", 1)  # two chunks on a small operator
    op = DIFF_OPS["mesh"]
    y = 2 * np.random.default_rng(8).standard_normal(op.n_features)
    one = prox_dual(y, op, 0.3, 0.6, tol=1e-7, n_threads=1)
    two = prox_dual(y, op, 0.3, 0.6, tol=1e-7, n_threads=2)
    two_again = prox_dual(y, op, 0.3, 0.6, tol=1e-7, n_threads=2)
    assert difference_arrays(op, 2)[-1].size == 3
    np.testing.assert_array_equal(two.v, two_again.v)
    np.testing.assert_array_equal(two.w, two_again.w)
    assert two.gap_history == two_again.gap_history
    assert two.n_iter == one.n_iter
    np.testing.assert_allclose(two.v, one.v, rtol=0, atol=1e-12)
    np.testing.assert_allclose(two.w, one.w, rtol=0, atol=1e-12)


def test_thread_chooser_runs_the_faster_and_probes_the_other(monkeypatch):
    from neurospca.solvers import _base

    monkeypatch.setattr(_base, "_THREAD_TIMES", {})
    chooser = _base.ThreadChooser("shape", 2)
    assert chooser.choose_threads() == 2  # untimed: each choice is tried once
    chooser.record(2, 0.20, 10)
    assert chooser.choose_threads() == 1
    chooser.record(1, 0.10, 10)
    chooser.record(1, 0.10, 1)  # a lone gap evaluation is not a timing
    picks = [chooser.choose_threads() for _ in range(2 * _base.PROBE_EVERY)]
    assert picks.count(2) == 2 and set(picks) == {1, 2}  # one probe per PROBE_EVERY
    chooser.record(2, 0.01, 10)  # the machine got quiet: a probe times 2 threads fast
    assert chooser.choose_threads() == 2
    # the times are shared by the next solve of the same shape, not of another
    assert _base.ThreadChooser("shape", 2).choose_threads() == 2
    assert _base.ThreadChooser("other", 2).choose_threads() == 2
    assert _base.ThreadChooser("other", 2).choose_threads() == 2  # still untimed
    one = _base.ThreadChooser("single", 1)
    one.record(1, 1.0, 10)
    assert one.choose_threads() == 1 and _base._THREAD_TIMES["single"][1] is None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_prox_dual_result_whatever_threads_the_chooser_picks(monkeypatch, dtype):
    """Blocks on 2 threads or on 1 (the chooser's call): the same solve, bit for bit."""
    from neurospca.solvers import _base

    monkeypatch.setattr(_base, "MIN_ROWS_PER_CHUNK", 1)  # two chunks
    op = DIFF_OPS["grid"]
    y = (2 * np.random.default_rng(9).standard_normal(op.n_features)).astype(dtype)
    results, picked = [], []
    for choice in ("many", "one", "alternate"):
        calls = []

        def choose_threads(self, choice=choice, calls=calls):
            calls.append(1)
            if choice == "alternate":
                return 1 if len(calls) % 2 else self.n_threads
            return self.n_threads if choice == "many" else 1

        monkeypatch.setattr(_base.ThreadChooser, "choose_threads", choose_threads)
        results.append(prox_dual(y, op, 0.3, 0.6, tol=1e-6, n_threads=2))
        picked.append(len(calls))
    assert min(picked) > 3  # every block asked the chooser
    for res in results[1:]:
        assert res.n_iter == results[0].n_iter and res.gap_history == results[0].gap_history
        np.testing.assert_array_equal(res.v, results[0].v)
        np.testing.assert_array_equal(res.w, results[0].w)


def test_module_default_threads():
    try:
        set_n_threads(3)
        assert resolve_n_threads(None) == 3
        assert resolve_n_threads(1) == 1
    finally:
        set_n_threads(None)
    assert resolve_n_threads(None) >= 1


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_n_threads(bad):
    op = chain_operator(10)
    with pytest.raises(ValueError, match="n_threads"):
        prox_dual(np.ones(10), op, 0.1, 0.2, n_threads=bad)
    with pytest.raises(ValueError, match="n_threads"):
        set_n_threads(bad)


def test_bad_kernel_path():
    with pytest.raises(ValueError, match="kernel_path"):
        prox_dual(np.ones(10), chain_operator(10), 0.1, 0.2, kernel_path="fast")
    op = group_lasso_operator([[0, 1], [2, 3]], 4)
    with pytest.raises(ValueError, match="difference_form"):
        prox_dual(np.ones(4), op, 0.1, 0.2, kernel_path="difference")
    # auto falls back to the CSR path
    res = prox_dual(np.arange(4.0), op, 0.1, 0.2, tol=1e-10)
    assert res.converged


def test_certificate_bounds_true_suboptimality(op, monkeypatch):
    from neurospca.solvers import _base

    monkeypatch.setattr(_base, "MIN_ROWS_PER_CHUNK", 1)
    rng = np.random.default_rng(9)
    y = 3 * rng.standard_normal(op.n_features)
    a, b = 0.2, 0.8
    best = prox_dual(y, op, a, b, tol=1e-11, max_iter=50_000, kernel_path="csr")
    p_star_upper = best.objective
    p_star_lower = best.objective - best.gap
    for n_threads in (1, 2):
        for max_iter in (1, 10, 40):
            res = prox_dual(y, op, a, b, tol=1e-12, max_iter=max_iter, n_threads=n_threads)
            assert res.n_iter <= max_iter
            obj = prox_objective(res.v, y, op, a, b)
            assert obj == pytest.approx(res.objective, rel=1e-12)
            # P(v) - P(v*) <= gap, with P(v*) >= p_star_lower
            assert obj - p_star_lower <= res.gap + 1e-12 * abs(p_star_upper) + best.gap


def test_warm_start_at_the_solution_stops_at_once():
    op = DIFF_OPS["grid"]
    y = np.random.default_rng(10).standard_normal(op.n_features)
    first = prox_dual(y, op, 0.1, 0.3, tol=1e-6)
    again = prox_dual(y, op, 0.1, 0.3, tol=1e-6, w0=first.w)
    assert again.n_iter == 0 and again.converged
    np.testing.assert_allclose(again.v, first.v, rtol=0, atol=1e-14)


def test_overflowing_state_is_not_certified():
    op = chain_operator(20)
    y = np.random.default_rng(11).standard_normal(20)
    w0 = np.full(op.n_rows, 1e300)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # projected onto the ball first: still certified
        res = prox_dual(y, op, 0.1, 0.3, w0=w0, tol=1e-6)
    assert res.converged and np.isfinite(res.gap)


def test_csr_kernel_threads_identical():
    """The general CSR kernel on 2 threads: every entry computed as on one."""
    op = random_group_operator(400, 150, np.random.default_rng(12))
    rng = np.random.default_rng(13)
    y = rng.standard_normal(op.n_features)
    w = 0.2 * rng.standard_normal(op.n_rows)
    arrays = operator_arrays(op)
    results = []
    for n_threads in (1, 2):
        state = [w.copy(), w.copy(), op.matrix.T @ w, op.matrix.T @ w]
        t, n_restarts = CK.dual_iterations(
            25, *arrays, y, 0.1, 0.3, 1.0 / op.norm2, *state, np.empty_like(y), 1.0, True, n_threads
        )
        results.append(((t, n_restarts), state))
    assert results[0][0] == results[1][0]
    for a, b in zip(results[0][1], results[1][1], strict=True):
        np.testing.assert_array_equal(a, b)
