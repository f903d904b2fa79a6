"""The data path at any P (issue 22): blocks and tiles, in-place sums, the
Krylov subspace and the pass-free starts, the passes of a fit, and the same
components as before the change."""

import itertools
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from neurospca import SPCATV, tv_from_mask
from neurospca._kernels import _numpy_products, compiled_available, load
from neurospca.decomposition import _data, _subspace
from neurospca.decomposition._data import DataOperator, _block_rows
from neurospca.decomposition._deflated import _Deflated, _extended
from neurospca.decomposition._subspace import krylov_subspace, orthonormal

DATA = Path(__file__).parent / "data"
SIDE = 12


def _instance(n=400, side=SIDE, seed=7):
    """3 smooth blobs with random scores + noise on a cube, mean 2.5 (the
    instance of ``tests/data/datapath_before.npz``)."""
    rng = np.random.default_rng(seed)
    grid = np.indices((side,) * 3).reshape(3, -1).T / side
    X = rng.standard_normal((n, grid.shape[0]))
    S = rng.standard_normal((n, 3)) * np.array([3.0, 2.0, 1.5])
    for k, c in enumerate(rng.uniform(0.25, 0.75, (3, 3))):
        X += np.outer(S[:, k], np.exp(-((grid - c) ** 2).sum(axis=1) / 0.02))
    return X + 2.5


def _op():
    return tv_from_mask(np.ones((SIDE,) * 3, bool))


def _fit(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SPCATV(3, operator=_op(), tol=1e-3, random_state=0, **kw).fit(X)


class _Reads:
    """Counts the bytes of the row blocks :class:`DataOperator` hands to the
    products (wrapping its one reader; the blocks are passed on unchanged)."""

    def __init__(self, monkeypatch):
        self.bytes = 0
        original = DataOperator._blocks

        def counted(op):
            for lo, hi, B in original(op):
                self.bytes += B.nbytes
                yield lo, hi, B

        monkeypatch.setattr(DataOperator, "_blocks", counted)


def _as_read_from_disk(monkeypatch):
    """Every pass over a memmap as if its file were read from storage (a file
    larger than the page cache): the process's storage reads
    (:func:`~neurospca.decomposition._data.storage_reads`) grow by far more
    than the file at each call, so :func:`~neurospca.decomposition._data.
    pass_is_expensive` says yes after any pass (issue 22 round 17)."""
    calls = itertools.count()
    monkeypatch.setattr(_data, "storage_reads", lambda: next(calls) * 2**40)


def _rchar():
    """Bytes this process read with read(2)/pread(2) (Linux), or None."""
    try:
        with open("/proc/self/io") as fh:
            return int(next(line for line in fh if line.startswith("rchar")).split()[1])
    except (OSError, StopIteration):
        return None


# ---------------------------------------------------------------- layout
@pytest.mark.parametrize("p", [72, 10_000, 2_000_000])
def test_wide_rows_come_in_blocks_of_many_rows_split_into_tiles(p):
    """A row block holds at least MIN_BLOCK_ROWS rows however wide X is, and
    the tiles it is cut into stay near TILE_BYTES: what a block adds into the
    P-long accumulators (O(P)) is then at most 1/MIN_BLOCK_ROWS of its data."""
    n = 1000
    for n_threads in (1, 2):
        rows = _block_rows(n, p * 8, _data.BLOCK_BYTES, n_threads)
        assert rows >= min(_data.MIN_BLOCK_ROWS, -(-n // n_threads))
        assert rows * n_threads >= n or rows * p * 8 <= max(
            _data.BLOCK_BYTES, _data.MIN_BLOCK_ROWS * p * 8
        )
    op = DataOperator(np.zeros((n, 8)), n_threads=1)
    assert op._offsets.tolist() == [0, n]  # narrow data: one block
    wide = DataOperator(np.lib.stride_tricks.as_strided(np.zeros(1), (n, p), (0, 0)), n_threads=1)
    block_rows = int(wide._offsets[1])
    assert block_rows >= min(n, _data.MIN_BLOCK_ROWS)
    assert block_rows * wide._cols * 8 <= max(
        _data.TILE_BYTES, block_rows * _data.MIN_TILE_COLUMNS * 8
    )


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_tiles_and_threads_give_the_products_of_the_whole_matrix(monkeypatch, n_threads):
    """Many row blocks, ragged column tiles, several worker threads each
    adding into its own accumulator: the products of the explicit matrix,
    and the same numbers on every run (the blocks go to fixed threads)."""
    monkeypatch.setattr(_data, "BLOCK_BYTES", 7 * 50 * 4)
    monkeypatch.setattr(_data, "MIN_BLOCK_ROWS", 1)
    monkeypatch.setattr(_data, "TILE_BYTES", 7 * 11 * 8)
    monkeypatch.setattr(_data, "MIN_TILE_COLUMNS", 1)
    rng = np.random.default_rng(0)
    X = (rng.standard_normal((61, 50)) + 4.0).astype(np.float32)
    Xc = X.astype(np.float64) - X.astype(np.float64).mean(axis=0)
    op = DataOperator(X, n_threads=n_threads).scan()
    op.centre(op.stats["mean"])
    assert len(op._offsets) - 1 >= 5 and op._cols < 50
    v, u, W = rng.standard_normal(50), rng.standard_normal(61), rng.standard_normal((50, 4))
    z, g = op.fused(v)
    np.testing.assert_allclose(z, Xc @ v, rtol=1e-5, atol=1e-5 * np.abs(Xc @ v).max())
    # X^T z in float64 arithmetic for the float64 z that the pass computed
    np.testing.assert_allclose(g, Xc.T @ z, rtol=1e-12, atol=1e-12 * np.abs(g).max())
    np.testing.assert_allclose(
        op.rmatvec(u, exact=True), Xc.T @ u, rtol=1e-12, atol=1e-12 * np.abs(Xc.T @ u).max()
    )
    Z, G = op.gram(W)
    np.testing.assert_allclose(Z, Xc @ W, rtol=1e-4, atol=1e-5 * np.abs(Z).max())
    np.testing.assert_allclose(G, Xc.T @ Z, rtol=1e-4, atol=1e-5 * np.abs(G).max())
    np.testing.assert_allclose(op.stats["m2"], (Xc**2).sum(axis=0), rtol=1e-9)
    np.testing.assert_array_equal(op.fused(v)[1], g)  # deterministic


@pytest.mark.parametrize("n_threads", [1, 2])
def test_memmap_blocks_are_views_of_the_mapped_file(tmp_path, monkeypatch, n_threads):
    """The row blocks of a memmap are views of its mapped file (no copy), their
    pages given back once each block's products are done, and every product
    equals the in-memory one bit for bit (the same blocks)."""
    monkeypatch.setattr(_data, "BLOCK_BYTES", 3 * 40 * 4)
    monkeypatch.setattr(_data, "MEMMAP_BLOCK_BYTES", 3 * 40 * 4)
    monkeypatch.setattr(_data, "MIN_BLOCK_ROWS", 1)
    given = []
    monkeypatch.setattr(_data._Pages, "give", lambda self, B: given.append(B))
    rng = np.random.default_rng(3366)
    X = (rng.standard_normal((90, 40)) + 2.0).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    Xm = np.load(tmp_path / "x.npy", mmap_mode="r")
    ops = [DataOperator(A, n_threads=n_threads).scan(sketch=3) for A in (X, Xm)]
    for op in ops:
        op.centre(op.stats["mean"])
    assert len(ops[1]._offsets) - 1 == 30  # 30 blocks of 3 rows
    v, W = rng.standard_normal(40), rng.standard_normal((40, 4))
    (z0, g0), (z1, g1) = (op.fused(v) for op in ops)
    np.testing.assert_array_equal(z1, z0)
    np.testing.assert_array_equal(g1, g0)
    (Z0, G0), (Z1, G1) = (op.gram(W) for op in ops)
    np.testing.assert_array_equal(Z1, Z0)
    np.testing.assert_array_equal(G1, G0)
    np.testing.assert_array_equal(ops[1].sketch["XtXW"], ops[0].sketch["XtXW"])
    assert len(given) == 3 * 30  # every block of the three passes (scan, fused, gram)
    assert all(np.shares_memory(B, Xm) for B in given)


def test_memmap_pages_given_back_keep_the_data(tmp_path):
    """Giving a block's pages back (``MADV_DONTNEED``, rounded out to whole
    pages, so a neighbour's pages too) keeps every value: the next read maps
    them again from the file."""
    X = np.arange(5000 * 3, dtype=np.float64).reshape(5000, 3)
    np.save(tmp_path / "x.npy", X)
    Xm = np.load(tmp_path / "x.npy", mmap_mode="r")
    pages = _data._Pages(Xm)
    A = Xm.view(np.ndarray)
    for lo in range(0, 5000, 700):
        pages.give(A[lo + 1 : lo + 300])
    np.testing.assert_array_equal(np.asarray(Xm), X)


def test_a_memmap_truncated_between_blocks_is_refused(tmp_path):
    """A file truncated during a pass: the next block is checked before it is
    touched, so a ValueError naming X, never a SIGBUS (the blocks are views of
    the mapped file)."""
    from .test_faults import run_child

    code = f"""
        import os, numpy as np
        from neurospca.decomposition import _data
        _data.MIN_BLOCK_ROWS = 1
        path = {str(tmp_path / "x.npy")!r}
        np.save(path, np.ones((400, 1000)))
        op = _data.DataOperator(np.load(path, mmap_mode="r"), block_bytes=8000, n_threads=1)
        seen = []

        def truncating(B, sl, acc, rows, cols):
            if not seen:
                with open(path, "r+b") as fh:
                    fh.truncate(os.path.getsize(path) // 2)
            seen.append(float(B.sum()))

        try:
            op._map(truncating, ())
        except ValueError as exc:
            assert str(exc).startswith("X: ") and "changed during" in str(exc), exc
            print("refused after", len(seen), "block(s)")
    """
    assert run_child(code).stdout.splitlines() == ["refused after 1 block(s)"]


def test_dask_tasks_take_runs_of_chunks_into_one_accumulator(monkeypatch):
    """A dask array of many small row chunks: consecutive chunks go to one
    task (``DASK_TASK_BYTES`` of rows), whose products are those of the whole
    matrix, rows in order."""
    da = pytest.importorskip("dask.array")
    from neurospca.decomposition._blocks import _chunk_groups

    assert _chunk_groups([5, 5, 5, 5, 5], 8, 80) == [[0, 1], [2, 3], [4]]
    assert _chunk_groups([5, 5], 8, 1) == [[0], [1]]
    assert _chunk_groups([3, 2], 8, 10**9) == [[0, 1]]
    rng = np.random.default_rng(3302)
    X = rng.standard_normal((61, 30)) + 3.0
    Xc = X - X.mean(axis=0)
    monkeypatch.setattr(_data, "DASK_TASK_BYTES", 3 * 4 * 30 * 8)  # 3 chunks of 4 rows
    seen = []
    original = _data._dask_group

    def counted(fn, Bs, bounds, *args):
        seen.append(len(Bs))
        return original(fn, Bs, bounds, *args)

    monkeypatch.setattr(_data, "_dask_group", counted)
    op = DataOperator(da.from_array(X, chunks=(4, 30))).scan(sketch=2)
    assert seen[:6] == [3, 3, 3, 3, 3, 1]  # 16 chunks, 6 tasks
    np.testing.assert_allclose(op.stats["m2"], (Xc**2).sum(axis=0), rtol=1e-12)
    _check_centred_products(op, Xc, rng)


def _check_centred_products(op, Xc, rng):
    """``op`` centred: its fused and Gram products are those of ``Xc``."""
    op.centre(op.stats["mean"])
    v, W = rng.standard_normal(Xc.shape[1]), rng.standard_normal((Xc.shape[1], 3))
    z, g = op.fused(v)
    np.testing.assert_allclose(z, Xc @ v, rtol=1e-12, atol=1e-12 * np.abs(z).max())
    np.testing.assert_allclose(g, Xc.T @ (Xc @ v), rtol=1e-11, atol=1e-11 * np.abs(g).max())
    Z, G = op.gram(W)
    np.testing.assert_allclose(Z, Xc @ W, rtol=1e-12, atol=1e-12 * np.abs(Z).max())
    np.testing.assert_allclose(G, Xc.T @ Z, rtol=1e-11, atol=1e-11 * np.abs(G).max())
    return v


def test_a_pass_over_npy_to_dask_reads_its_rows_in_its_tasks(tmp_path, monkeypatch):
    """A pass over an npy_to_dask array makes one task per thread of the scheduler,
    each reading (viewing, read-only) its consecutive blocks of DASK_TASK_BYTES of
    rows itself, whatever ``chunk_rows``: products those of the matrix; a file
    rewritten between two passes is a ValueError naming the path, not other
    numbers."""
    dask = pytest.importorskip("dask")
    from neurospca import npy_to_dask

    path = tmp_path / "X.npy"
    rng = np.random.default_rng(3407)
    X = rng.standard_normal((61, 30)) + 3.0
    Xc = X - X.mean(axis=0)
    np.save(path, X)
    Xd = npy_to_dask(path, chunk_rows=4)
    monkeypatch.setattr(_data, "DASK_TASK_BYTES", 12 * 30 * 8)  # 12 rows per task
    monkeypatch.setattr(_data, "MIN_BLOCK_ROWS", 1)
    seen, reader = [], Xd._neurospca_row_reader

    def counted(lo, hi):
        B = reader(lo, hi)
        seen.append((lo, hi, B.flags.writeable))
        return B

    Xd._neurospca_row_reader = counted
    tasks, original = [], _data._dask_read_group

    def task(reader, fn, bounds, *args):
        tasks.append(bounds)
        return original(reader, fn, bounds, *args)

    monkeypatch.setattr(_data, "_dask_read_group", task)
    with dask.config.set(scheduler="sync", num_workers=3):
        op = DataOperator(Xd).scan(sketch=2)
        assert sorted(seen) == [(lo, min(lo + 12, 61), False) for lo in range(0, 61, 12)]
        assert sorted(tasks) == [[(0, 12), (12, 24)], [(24, 36), (36, 48)], [(48, 60), (60, 61)]]
        v = _check_centred_products(op, Xc, rng)
        assert len(seen) == 3 * 6
        with open(path, "r+b") as fh:  # rewritten in place: same inode and size
            fh.seek(-8, os.SEEK_END)
            fh.write(np.float64(7.0).tobytes())
        os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
        with pytest.raises(ValueError, match=r"path: .*X\.npy' changed after npy_to_dask"):
            op.fused(v)


def test_gram_groups_on_dask_is_one_pass_equal_to_its_grams():
    """A dask array's ``gram_groups`` makes one pass (the rows of the groups
    side by side in each task), each group's products bit for bit its own
    ``gram``."""
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(3408)
    X = rng.standard_normal((37, 20)) + 1.0
    op = DataOperator(da.from_array(X, chunks=(8, 20)))
    op.centre(X.mean(axis=0))
    Ws = [rng.standard_normal((20, k)) for k in (1, 3, 2)]
    Cs = [rng.standard_normal((37, k)) for k in (1, 3, 2)]
    before = op.n_passes
    out = op.gram_groups(Ws, Cs)
    assert op.n_passes == before + 1
    for (Z, G), W, C in zip(out, Ws, Cs, strict=True):
        Z1, G1 = op.gram(W, C)
        np.testing.assert_array_equal(Z, Z1)
        np.testing.assert_array_equal(G, G1)
        np.testing.assert_allclose(Z, (X - X.mean(axis=0)) @ W - C, rtol=1e-12, atol=1e-12)


def test_the_scan_finds_bad_values_in_any_tile(monkeypatch):
    monkeypatch.setattr(_data, "MIN_BLOCK_ROWS", 1)
    monkeypatch.setattr(_data, "TILE_BYTES", 8 * 8 * 3)
    monkeypatch.setattr(_data, "MIN_TILE_COLUMNS", 1)
    X = np.ones((9, 40))
    X[8, 39] = np.inf
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains 2 NaN or infinite values"):
        DataOperator(X, n_threads=2).scan(sketch=4)


# ---------------------------------------------------------------- kernels
@pytest.mark.parametrize("rows", [0, 1, 3, 4, 9])
def test_exact_product_kernel_and_its_twin(rows):
    """float32 data times a float64 vector in float64 arithmetic, on a column
    tile (strided rows): the compiled kernel, its NumPy twin, and the float64
    product of the exactly converted data agree to rounding."""
    rng = np.random.default_rng(rows)
    B = rng.standard_normal((rows, 37)).astype(np.float32)
    tile = B[:, 5:31]
    z = rng.standard_normal(rows)
    ref = z @ tile.astype(np.float64)
    twin = np.ones(26)
    _numpy_products.rmatvec_exact(tile, z, twin)
    np.testing.assert_allclose(twin - 1.0, ref, rtol=1e-13, atol=1e-13)
    if compiled_available("products"):
        out = np.ones(26)
        load("products").rmatvec_exact(tile, z, out)
        np.testing.assert_allclose(out, twin, rtol=1e-14, atol=1e-14)
        if rows:
            with pytest.raises(ValueError, match="contiguous"):
                load("products").rmatvec_exact(B[:, ::2], z, np.zeros(19))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_statistics_kernels_and_their_twins(dtype):
    """The scan's column sums, minima, maxima and centred sums of squares of a
    tile (strided rows), compiled and twin, against float64 NumPy; a NaN or
    an infinity shows in the sums."""
    rng = np.random.default_rng(1)
    T = (rng.standard_normal((23, 40)) * 3 + 1e3).astype(dtype)[:, 4:33]
    T64 = T.astype(np.float64)
    mods = [_numpy_products] + ([load("products")] if compiled_available("products") else [])
    for mod in mods:
        s, lo, hi, m2 = (np.empty(29) for _ in range(4))
        mod.column_stats(T, s, lo, hi)
        mod.column_m2(T, s / 23, m2)
        np.testing.assert_allclose(s, T64.sum(axis=0), rtol=1e-13)
        np.testing.assert_array_equal(lo, T64.min(axis=0))
        np.testing.assert_array_equal(hi, T64.max(axis=0))
        np.testing.assert_allclose(m2, ((T64 - T64.mean(axis=0)) ** 2).sum(axis=0), rtol=1e-9)
        bad = T.copy()
        bad[5, 2], bad[7, 9] = np.nan, -np.inf
        mod.column_stats(bad, s, lo, hi)
        assert np.isnan(s[2]) and s[9] == -np.inf and lo[9] == -np.inf


# ---------------------------------------------------------------- subspace, starts
def test_krylov_subspace_finds_the_top_singular_subspace_with_exact_images():
    rng = np.random.default_rng(3)
    n, p = 300, 900
    U = np.linalg.qr(rng.standard_normal((n, 5)))[0]
    V = np.linalg.qr(rng.standard_normal((p, 5)))[0]
    X = (U * [300.0, 200.0, 150.0, 100.0, 75.0]) @ V.T + rng.standard_normal((n, p))
    Xc = X - X.mean(axis=0)
    op = DataOperator(X, n_threads=2).scan(sketch=_subspace.SKETCH_WIDTH)
    op.centre(op.stats["mean"])
    s, R, XR, AR = krylov_subspace(op, 3)
    true = np.linalg.svd(Xc, compute_uv=False)[:3]
    np.testing.assert_allclose(s, true, rtol=1e-4)  # Ritz values: from below
    np.testing.assert_allclose(R.T @ R, np.eye(R.shape[1]), atol=1e-10)
    np.testing.assert_allclose(XR, Xc @ R, atol=1e-9 * np.abs(XR).max())
    np.testing.assert_allclose(AR, Xc.T @ (Xc @ R), atol=1e-9 * np.abs(AR).max())
    # the top 3 right singular vectors lie in span(R)
    Vt = np.linalg.svd(Xc, full_matrices=False)[2][:3]
    assert np.linalg.norm(Vt.T - R @ (R.T @ Vt.T)) < 1e-2
    assert np.all(s <= true * (1 + 1e-12))
    assert op.n_passes == 1 + 2  # the scan (with the first block) and two Gram passes


@pytest.mark.parametrize("tall", [False, True])
def test_deflated_start_basis_needs_no_pass_and_is_exact(monkeypatch, tall):
    """The products of X_k = Xc - sum_j d_j u_j v_j^T with any vector of the
    start's span, from the subspace's images and the kept Xc v_j, Xc^T u_j,
    Xc^T Xc v_j: equal to the explicit products, with no pass over X (with
    Householder QR, and with CholeskyQR2 and Gram-Schmidt as for tall blocks)."""
    if tall:
        monkeypatch.setattr(_subspace, "TALL_ROWS_PER_COLUMN", 1)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((80, 200)) + 1.0
    Xc = X - X.mean(axis=0)
    op = DataOperator(X, n_threads=1).scan(sketch=_subspace.SKETCH_WIDTH)
    op.centre(op.stats["mean"])
    basis = krylov_subspace(op, 3)[1:]
    defl, Xk = _Deflated(op), Xc.copy()
    for _ in range(2):
        v = rng.standard_normal(200) * (rng.random(200) < 0.2)  # sparse, off the span
        z, g = defl.gram(v)
        u, d = z / np.linalg.norm(z), 0.7
        defl.deflate(u, v, d, xv=z, xtu=g / np.linalg.norm(z), xtxv=g)
        Xk -= d * np.outer(u, v)
    passes = op.n_passes
    Q, XQ, AQ = defl.deflated_basis(basis)
    assert op.n_passes == passes
    assert Q.shape[1] > basis[0].shape[1]  # the removed v_j and the seen vectors added
    np.testing.assert_allclose(Q.T @ Q, np.eye(Q.shape[1]), atol=1e-9)
    np.testing.assert_allclose(XQ, Xk @ Q, atol=1e-9 * np.abs(XQ).max())
    np.testing.assert_allclose(AQ, Xk.T @ (Xk @ Q), atol=1e-9 * np.abs(AQ).max())
    Qc, XQc, AQc = defl.start_basis(basis)  # the same span at the level of Xc
    np.testing.assert_allclose(XQc, Xc @ Qc, atol=1e-9 * np.abs(XQc).max())
    np.testing.assert_allclose(AQc, Xc.T @ (Xc @ Qc), atol=1e-9 * np.abs(AQc).max())
    assert op.n_passes == passes


def test_extended_span_drops_dependent_vectors_and_keeps_exact_images():
    """The start's span extended by new vectors (Gram-Schmidt twice, all kept
    vectors at once): a vector in the span of the basis and one that is a sum
    of two others add nothing; the two independent ones are added, the result
    is orthonormal and its images are Xc Q and Xc^T Xc Q."""
    rng = np.random.default_rng(3401)
    Xc = rng.standard_normal((60, 3000))
    R = orthonormal(rng.standard_normal((3000, 5)))[0]
    basis = (R, Xc @ R, Xc.T @ (Xc @ R))
    e1, e2 = rng.standard_normal(3000), rng.standard_normal(3000)
    E = np.array([e1, R @ rng.standard_normal(5), e2, 2.0 * e1 - e2])
    Q, XQ, AQ = _extended(basis, E, E @ Xc.T, (E @ Xc.T) @ Xc)
    assert Q.shape[1] == 5 + 2
    np.testing.assert_array_equal(Q[:, :5], R)
    np.testing.assert_allclose(Q.T @ Q, np.eye(7), atol=1e-12)
    np.testing.assert_allclose(XQ, Xc @ Q, atol=1e-10 * np.abs(XQ).max())
    np.testing.assert_allclose(AQ, Xc.T @ (Xc @ Q), atol=1e-10 * np.abs(AQ).max())
    assert np.linalg.norm(e2 - Q @ (Q.T @ e2)) < 1e-10 * np.linalg.norm(e2)


def test_orthonormal_tall_blocks_cholesky_qr2_and_fallback():
    """B = Q T with Q orthonormal and T upper triangular: by CholeskyQR2 for a
    tall block (also badly scaled columns, condition 1e5), by Householder QR
    for a rank-deficient one (the Cholesky factor does not exist)."""
    rng = np.random.default_rng(11)
    B = rng.standard_normal((5000, 12)) * np.logspace(0, -5, 12)
    B[:, 3] += B[:, 0]
    D = B.copy()
    D[:, 5] = D[:, 2]  # rank-deficient
    for M in (B, D):
        Q, T = orthonormal(M)
        np.testing.assert_allclose(Q.T @ Q, np.eye(12), atol=1e-12)
        np.testing.assert_allclose(Q @ T, M, atol=1e-12 * np.abs(M).max())
        assert np.allclose(T, np.triu(T))
    Q = orthonormal(B)[0]
    np.testing.assert_allclose(Q.T @ B, np.triu(Q.T @ B), atol=1e-12)  # same nested spans


# ---------------------------------------------------------------- passes, components
@pytest.mark.parametrize("method", ["deflation", "joint"])
def test_passes_over_a_memmap_for_three_components(tmp_path, monkeypatch, method):
    """3 components at tol 1e-3 on a float32 memmap, fixed penalty: every pass
    over X is counted where the data are read (the row blocks handed to the
    products, and the bytes the process read from the file)."""
    X = _instance(n=3000).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    Xm = np.load(tmp_path / "x.npy", mmap_mode="r")
    reads = _Reads(monkeypatch)
    _as_read_from_disk(monkeypatch)  # in the page cache: 16 (test_look22q.py)
    _fit(Xm, alpha_rel=1.0, method=method)  # warm (imports, lazy modules)
    reads.bytes = 0
    before = _rchar()
    m = _fit(Xm, alpha_rel=1.0, method=method)
    read = _rchar()
    passes = reads.bytes / X.nbytes
    assert np.all(m.converged_) and np.all(m.rel_gaps_ <= 1e-3)
    # the target of issue 22 for a fit; the joint fit's sweeps and re-checks
    # (decomposition/_joint.py) add passes of their own: 38 measured (78 before);
    # since issue 20's round 4 it also settles two more starts (deflation's and
    # the top singular subspace) and restarts, and keeps the lowest joint
    # objective: 86 measured; since issue 20's round 5 the sweeps serve the
    # products they already computed (Xc v, Xc^T u): 62 measured; since round 6
    # the restart checks, the PCA start and the final certification use kept
    # products and one block pass: 47 measured; since issue 22 round 9 the
    # restart checks of a state run side by side, deflation's start and the
    # certification take the products their passes kept: 34 measured; since
    # round 10 the starts run side by side, sharing each pass: 20 measured;
    # round 14: 20 measured again (the default; deflation's fit unswept, not
    # the default: 19; in memory the starts now share passes too, 34 -> 20);
    # round 15: each sweep reads X once for all its components (_sweep_pass):
    # 16 measured (the longest start, deflation's: 8 + 2 sweeps + 2 checks);
    # round 16: deflation's u-steps look ahead to the next start, the restart
    # checks decided in the kept span: 12 measured (each start's chain 8);
    # round 17: those two only where a pass is expensive (read from storage,
    # as here; a file in the page cache: 16, tests/test_look22q.py)
    limit = 12
    assert passes <= limit, passes
    if before is not None and read is not None:  # mapped blocks: no copy by read(2)
        assert (read - before) / X.nbytes < 0.5


#: The joint row of ``datapath_before.npz`` was stored when the certified-support
#: finishing stopped at 1 % of the peak; since issue 20 round 7 the joint fit's
#: support is certified by a Jacobi step finished to 0.3 % of the peak, which moves
#: this instance's loadings by 5.5e-6 (inside their certified radii, 2.4e-3 to
#: 6.7e-3 of the norm). The data path itself is still compared to 1e-6 (the other
#: rows, and the tall start against the QR start).
JOINT_FINISHING_MOVE = 1e-5

#: Since issue 22 round 12 the finishing stops on the radius of the solver's
#: primal-dual pair (``solvers.support.pair_radius``), a different certified
#: point: component 0 of the deflation rows moves by 1.55e-5 (its certified
#: radius 2.7e-3), the others by <= 5.3e-7. The data path is still compared to
#: 1e-6: the rows against each other (memory, memmap, float32).
FINISHING_MOVE = 2e-5


def test_components_as_before_the_change(tmp_path):
    """The components of the code before issue 22 (``datapath_before.npz``,
    same instance, same settings): float64 in memory (N x N Gram start) and
    from a memmap (Krylov start instead of Lanczos), float32 joint fit in
    memory, float32 deflation from a memmap."""
    before = np.load(DATA / "datapath_before.npz", allow_pickle=False)
    X = _instance()
    np.save(tmp_path / "x32.npy", X.astype(np.float32))
    np.save(tmp_path / "x64.npy", X)
    got = {
        "f64_memory_deflation": _fit(X, alpha_rel=1.0, method="deflation"),
        "f64_memmap_deflation": _fit(
            np.load(tmp_path / "x64.npy", mmap_mode="r"), alpha_rel=1.0, method="deflation"
        ),
        # warm_start on a fresh estimator: the joint sweeps from deflation's start
        # without the round-4 search over starts (issue 20), the algorithm the
        # reference was stored with; this test is about the data path
        "f32_memory_joint": _fit(X.astype(np.float32), alpha_rel=1.0, warm_start=True),
        "f32_memmap_deflation": _fit(
            np.load(tmp_path / "x32.npy", mmap_mode="r"), alpha_rel=1.0, method="deflation"
        ),
    }
    for name, m in got.items():
        diff = np.abs(m.components_ - before[name]).max()
        # float32 from a memmap: X^T z is now computed in float64 arithmetic;
        # the old float32 products were 1.0e-6 away from the float64 fit
        limit = JOINT_FINISHING_MOVE if name == "f32_memory_joint" else FINISHING_MOVE
        assert diff <= limit, (name, diff)
    # the data path: the memmaps and float32 give the float64 in-memory fit to 1e-6
    reference = got["f64_memory_deflation"].components_
    for name in ("f64_memmap_deflation", "f32_memmap_deflation"):
        assert np.abs(got[name].components_ - reference).max() <= 1e-6, name


@pytest.mark.parametrize("method", ["deflation", "joint"])
def test_tall_block_start_gives_the_components_of_the_qr_start(monkeypatch, method):
    """The start's CholeskyQR2 / Gram-Schmidt (used for tall blocks, i.e. large
    P) against Householder QR (small blocks, as before) on the same float32
    fit: the same components to 1e-6, both within 1e-6 of the code before
    issue 22 where it is stored."""
    X = _instance().astype(np.float32)
    kw = {"warm_start": True} if method == "joint" else {}  # as stored (see above)
    ref = _fit(X, alpha_rel=1.0, method=method, **kw)
    monkeypatch.setattr(_subspace, "TALL_ROWS_PER_COLUMN", 1)
    tall = _fit(X, alpha_rel=1.0, method=method, **kw)
    assert np.abs(tall.components_ - ref.components_).max() <= 1e-6
    np.testing.assert_allclose(tall.explained_variance_ratio_, ref.explained_variance_ratio_, 1e-6)
    if method == "joint":
        before = np.load(DATA / "datapath_before.npz", allow_pickle=False)["f32_memory_joint"]
        assert np.abs(tall.components_ - before).max() <= JOINT_FINISHING_MOVE
