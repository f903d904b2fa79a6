"""The difference kernel in a locality order of the features (issue 14 part 3).

Operators whose features are numbered far from their neighbours (icospheres:
subdivision order) run the difference kernel in the reverse Cuthill-McKee
order of their feature graph. The order is internal: users' columns and rows
keep their order, the solution and the certificate are the CSR path's and
the NumPy twin's up to summation order, and the returned dual state is in the
user's rows (a warm start from it stops at once).
"""

import numpy as np
import pytest
import scipy.sparse as sp

from neurospca import GroupOperator, chain_operator, icosphere, tv_from_mask, tv_from_mesh
from neurospca._kernels import _numpy_prox as NK
from neurospca._kernels import _prox as CK
from neurospca.solvers import prox_dual
from neurospca.solvers._base import difference_arrays, difference_halos, locality_order


def _headed(heads, tails, P):
    """The operator with rows ``v[tail] - v[head]``, grouped by head (group g = feature g)."""
    heads, tails = np.asarray(heads), np.asarray(tails)
    order = np.argsort(heads, kind="stable")
    heads, tails = heads[order], tails[order]
    n = heads.size
    A = sp.csr_matrix(
        (np.r_[-np.ones(n), np.ones(n)], (np.r_[np.arange(n), np.arange(n)], np.r_[heads, tails])),
        shape=(n, P),
    )
    gptr = np.r_[0, np.cumsum(np.bincount(heads, minlength=P))]
    return GroupOperator(A, gptr)


def _relabelled(op, seed):
    """``op`` with its features numbered at random (neighbours far apart)."""
    form = op.difference_form()
    P = op.n_features
    label = np.random.default_rng(seed).permutation(P)
    return _headed(label[form.heads], label[form.tails], P)


def _ops():
    mesh = tv_from_mesh(*icosphere(3))
    grid = _relabelled(tv_from_mask(np.random.default_rng(0).random((9, 8, 7)) > 0.2), 1)
    chain = _relabelled(chain_operator(300), 2)
    return {"mesh": mesh, "grid": grid, "chain": chain}


OPS = _ops()


@pytest.fixture(params=sorted(OPS))
def op(request):
    return OPS[request.param]


def test_order_is_used_on_scattered_numberings_only(op):
    assert locality_order(op) is not None
    # raster grids and chains in their natural numbering are banded already
    assert locality_order(chain_operator(300)) is None
    assert locality_order(tv_from_mask(np.ones((9, 8, 7), bool))) is None


def test_reordered_arrays_are_the_permuted_operator(op):
    order = locality_order(op)
    P, R = op.n_features, op.n_rows
    np.testing.assert_array_equal(np.sort(order.features), np.arange(P))
    np.testing.assert_array_equal(np.sort(order.rows), np.arange(R))
    heads, tails, scale, hg, gptr, chunk_ptr = difference_arrays(op, 2, reorder=True)
    assert hg and heads.dtype == tails.dtype == gptr.dtype == np.int32
    n = heads.size
    A = sp.csr_matrix(
        (
            np.r_[-np.full(n, scale), np.full(n, scale)],
            (np.r_[np.arange(n), np.arange(n)], np.r_[heads, tails]),
        ),
        shape=(R, P),
    )
    expected = op.matrix[order.rows][:, order.features]
    assert abs(A - expected).max() == 0
    # every group is a user's group: its rows, contiguous and in their order
    np.testing.assert_array_equal(heads, np.repeat(np.arange(gptr.size - 1), np.diff(gptr)))
    user_group = op.row_group[order.rows]
    for g in range(gptr.size - 1):
        rows = order.rows[gptr[g] : gptr[g + 1]]
        assert np.all(np.diff(rows) == 1)
        assert np.unique(user_group[gptr[g] : gptr[g + 1]]).size <= 1
    assert chunk_ptr[0] == 0 and chunk_ptr[-1] == gptr.size - 1
    # and the band is narrow
    bw = np.abs(heads.astype(int) - tails).max()
    bw_user = np.abs(op.difference_form().heads.astype(int) - op.difference_form().tails).max()
    assert 4 * bw < bw_user


def test_same_solution_as_csr_path_and_twin(op):
    y = 2 * np.random.default_rng(3).standard_normal(op.n_features)
    ref = prox_dual(y, op, 0.3, 0.6, tol=1e-12, max_iter=100_000, kernel_path="csr")
    scale = np.abs(ref.v).max()
    for kernels in ("cython", "numpy"):
        new = prox_dual(
            y,
            op,
            0.3,
            0.6,
            tol=1e-12,
            max_iter=100_000,
            kernel_path="difference",
            kernels=kernels,
            n_threads=1,
        )
        assert new.converged and ref.converged and new.gap <= new.tol_abs
        # within their certified distance of v* (||v - v*||^2 / 2 <= gap)
        dist = np.linalg.norm(new.v - ref.v)
        assert dist <= np.sqrt(2 * new.gap) + np.sqrt(2 * ref.gap)
        np.testing.assert_allclose(new.v, ref.v, rtol=0, atol=1e-7 * scale)
        assert new.objective == pytest.approx(ref.objective, rel=1e-12)
    # a loose tolerance: the same iterations and gaps as the CSR path, to rounding
    ref = prox_dual(y, op, 0.3, 0.6, tol=1e-4, kernel_path="csr")
    new = prox_dual(y, op, 0.3, 0.6, tol=1e-4, kernel_path="difference")
    assert new.n_iter == ref.n_iter
    np.testing.assert_allclose(
        np.array(new.gap_history), np.array(ref.gap_history), rtol=1e-10, atol=1e-12 * float(y @ y)
    )
    np.testing.assert_allclose(new.v, ref.v, rtol=0, atol=1e-10 * np.abs(ref.v).max())
    np.testing.assert_allclose(new.w, ref.w, rtol=0, atol=1e-10 * np.abs(ref.w).max())


def test_dual_state_is_in_the_users_rows(op):
    rng = np.random.default_rng(4)
    y = 2 * rng.standard_normal(op.n_features)
    first = prox_dual(y, op, 0.3, 0.6, tol=1e-8)
    again = prox_dual(y, op, 0.3, 0.6, tol=1e-8, w0=first.w)
    assert first.n_iter > 0 and again.n_iter == 0 and again.converged
    np.testing.assert_allclose(again.v, first.v, rtol=0, atol=1e-14)
    # and it is a dual point of the user's operator: v = soft(y - A^T w, l1)
    v = y - op.rmatvec(first.w)
    v = np.sign(v) * np.maximum(np.abs(v) - 0.3, 0.0)
    np.testing.assert_allclose(v, first.v, rtol=0, atol=1e-12)
    # a w0 of the wrong shape is still named
    with pytest.raises(ValueError, match="w0"):
        prox_dual(y, op, 0.3, 0.6, w0=first.w[:-1])


def test_one_and_two_threads_agree(op, monkeypatch):
    from neurospca.solvers import _base

    monkeypatch.setattr(_base, "MIN_ROWS_PER_CHUNK", 1)
    y = 2 * np.random.default_rng(5).standard_normal(op.n_features)
    one = prox_dual(y, op, 0.3, 0.6, tol=1e-8, n_threads=1)
    two = prox_dual(y, op, 0.3, 0.6, tol=1e-8, n_threads=2)
    two_again = prox_dual(y, op, 0.3, 0.6, tol=1e-8, n_threads=2)
    assert difference_arrays(op, 2, reorder=True)[-1].size == 3
    np.testing.assert_array_equal(two.v, two_again.v)
    np.testing.assert_array_equal(two.w, two_again.w)
    assert two.n_iter == one.n_iter
    np.testing.assert_allclose(two.v, one.v, rtol=0, atol=1e-12)
    np.testing.assert_allclose(two.w, one.w, rtol=0, atol=1e-12)


# ------------------------------------------------------------------ halos


def _run(K, op, n_chunks, reorder, halo, n_iter, n_threads, with_gap=True, dtype=np.float64):
    """The difference kernel from a fixed state (rounded to ``dtype``); returns the
    outputs and full ``A^T w``."""
    heads, tails, scale, hg, gptr, chunk_ptr = difference_arrays(op, n_chunks, reorder=reorder)
    order = locality_order(op) if reorder else None
    P, R = op.n_features, op.n_rows
    rng = np.random.default_rng(6)
    y = rng.standard_normal(P)
    w = 0.3 * rng.standard_normal(R)
    w_old = w + 0.05 * rng.standard_normal(R)
    if order is not None:
        y, w, w_old = y[order.features], w[order.rows], w_old[order.rows]
    y, w, w_old = y.astype(dtype), w.astype(dtype), w_old.astype(dtype)
    ATw, ATw_old = np.empty(P, dtype), np.empty(P, dtype)
    CK.diff_rmatvec(heads, tails, scale, w, ATw)
    CK.diff_rmatvec(heads, tails, scale, w_old, ATw_old)
    extra, bufs = (), np.zeros((chunk_ptr.size - 2, P), dtype)
    if halo:
        segs, halos, size = difference_halos(op, n_chunks, reorder=reorder)
        extra, bufs = (segs, halos, np.zeros(size, dtype)), np.zeros((0, P), dtype)
    vq, vw = np.empty(P, dtype), np.zeros(P, dtype)
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
        1.3,
        True,
        with_gap,
        n_threads,
        *extra,
    )
    if out[2]:
        w, w_old, ATw, ATw_old = w_old, w, ATw_old, ATw
    full = ATw + bufs.sum(axis=0, dtype=np.float64)
    if halo:
        for lo, hi, off in halos.reshape(-1, 3):
            full[lo:hi] += extra[2][off : off + hi - lo].astype(np.float64)
    return out, w, w_old, full, ATw_old, vw


HALO_OPS = dict(OPS, raster=tv_from_mask(np.random.default_rng(7).random((9, 8, 7)) > 0.2))


@pytest.mark.parametrize("name", sorted(HALO_OPS))
@pytest.mark.parametrize("n_chunks", [2, 3, 5])
def test_halo_segments_and_ranges(name, n_chunks):
    op = HALO_OPS[name]
    reorder = locality_order(op) is not None
    heads, tails, _, _, gptr, chunk_ptr = difference_arrays(op, n_chunks, reorder=reorder)
    segs, halos, size = difference_halos(op, n_chunks, reorder=reorder)
    segs, halos = segs.reshape(-1, 4), halos.reshape(-1, 2, 3)
    P, n = op.n_features, chunk_ptr.size - 1
    assert n == n_chunks and size < (n_chunks - 1) * P  # smaller than the full buffers
    offsets = []
    for c in range(n):
        g0, a, b, g1 = segs[c]
        assert (g0, g1) == (chunk_ptr[c], chunk_ptr[c + 1]) and g0 <= a <= b <= g1
        lo, hi = (0 if c == 0 else g0), (P if c == n - 1 else g1)
        inner = tails[gptr[a] : gptr[b]]
        assert np.all((inner >= lo) & (inner < hi))  # the interior writes its own features
        for (s0, s1), (t_lo, t_hi, off) in zip(((g0, a), (b, g1)), halos[c], strict=True):
            t = tails[gptr[s0] : gptr[s1]]
            assert np.all((t >= t_lo) & (t < t_hi))
            offsets.append((off, t_hi - t_lo))
    assert sum(length for _, length in offsets) == size
    starts = np.cumsum([0] + [length for _, length in offsets[:-1]])
    np.testing.assert_array_equal([off for off, _ in offsets], starts)
    if name == "mesh" and n_chunks > 1:  # one connected sphere: real halos
        assert size > 0


@pytest.mark.parametrize("name", sorted(HALO_OPS))
@pytest.mark.parametrize("n_chunks", [2, 3, 5])
@pytest.mark.parametrize("n_iter", [1, 6])
def test_halo_kernel_equals_full_buffers_and_twin(name, n_chunks, n_iter):
    op = HALO_OPS[name]
    reorder = locality_order(op) is not None
    ref = _run(CK, op, n_chunks, reorder, False, n_iter, 1)
    for K in (CK, NK):
        got = _run(K, op, n_chunks, reorder, True, n_iter, 1)
        assert got[0][:3] == pytest.approx(ref[0][:3], rel=1e-12)
        np.testing.assert_allclose(got[0][3:], ref[0][3:], rtol=1e-12)
        for a, b in zip(got[1:], ref[1:], strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    # the threads never change a bit
    one = _run(CK, op, n_chunks, reorder, True, n_iter, 1)
    two = _run(CK, op, n_chunks, reorder, True, n_iter, 2)
    assert one[0] == two[0]
    for a, b in zip(one[1:], two[1:], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(HALO_OPS))
def test_float32_halo_kernel_equals_float64_and_twin(name):
    """float32 storage with halos: the float64 kernel's iterates to float32 rounding."""
    op = HALO_OPS[name]
    reorder = locality_order(op) is not None
    ref = _run(CK, op, 3, reorder, True, 6, 1)
    for K in (CK, NK):
        got = _run(K, op, 3, reorder, True, 6, 1, dtype=np.float32)
        assert got[1].dtype == got[4].dtype == got[5].dtype == np.float32
        np.testing.assert_allclose(got[0][3:], ref[0][3:], rtol=1e-5)
        for a, b in zip(got[1:], ref[1:], strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * max(1.0, np.abs(b).max()))
    one = _run(CK, op, 3, reorder, True, 6, 1, dtype=np.float32)
    two = _run(CK, op, 3, reorder, True, 6, 2, dtype=np.float32)
    assert one[0] == two[0]
    for a, b in zip(one[1:], two[1:], strict=True):
        np.testing.assert_array_equal(a, b)


def test_halo_arguments_checked():
    op = OPS["mesh"]
    segs, halos, size = difference_halos(op, 2, reorder=True)
    heads, tails, scale, hg, gptr, chunk_ptr = difference_arrays(op, 2, reorder=True)
    P = op.n_features
    with pytest.raises(ValueError, match="halos"):  # halos with full buffers
        CK.diff_dual_iterations(
            1,
            heads,
            tails,
            scale,
            hg,
            gptr,
            chunk_ptr,
            np.zeros(P),
            0.1,
            0.1,
            0.1,
            np.zeros(op.n_rows),
            np.zeros(op.n_rows),
            np.zeros(P),
            np.zeros(P),
            np.zeros((1, P)),
            np.zeros(P),
            np.zeros(P),
            1.0,
            True,
            False,
            1,
            segs,
            halos,
            np.zeros(size),
        )
