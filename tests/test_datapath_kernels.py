"""The data path's per-tile kernels (issue 22, round 8): the scan's fused
column moments, and the transposed block products of large float32 tiles."""

import numpy as np
import pytest

from neurospca._kernels import _numpy_products, compiled_available, load
from neurospca.decomposition import _blocks
from neurospca.decomposition._data import DataOperator


def _modules():
    return [_numpy_products] + ([load("products")] if compiled_available("products") else [])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(23, 40), (205, 1500), (3, 700), (1, 5)])
def test_column_moments_are_the_two_kernels_bit_for_bit(dtype, shape):
    """``column_moments`` (by column chunks) gives what ``column_stats``,
    ``s / n`` and ``column_m2`` give, bit for bit, for strided tiles whose
    row count is not a multiple of four and whose columns span several chunks."""
    rng = np.random.default_rng(5)
    n, p = shape
    T = (rng.standard_normal((n, p + 9)) * 3 + 1e3).astype(dtype)[:, 4 : 4 + p]
    for mod in _modules():
        s, lo, hi, m2 = (np.empty(p) for _ in range(4))
        mod.column_stats(T, s, lo, hi)
        mean = s / n
        mod.column_m2(T, mean, m2)
        got = [np.empty(p) for _ in range(5)]
        mod.column_moments(T, *got)
        for a, b in zip(got, (s, lo, hi, mean, m2), strict=True):
            np.testing.assert_array_equal(a, b)
        T64 = T.astype(np.float64)
        np.testing.assert_array_equal(got[1], T64.min(axis=0))
        np.testing.assert_allclose(got[4], ((T64 - T64.mean(axis=0)) ** 2).sum(axis=0), rtol=1e-9)


def test_column_moments_show_non_finite_values():
    T = np.ones((9, 300), np.float32)
    T[4, 200], T[7, 3] = np.nan, np.inf
    for mod in _modules():
        out = [np.empty(300) for _ in range(5)]
        mod.column_moments(T, *out)
        assert np.isnan(out[0][200]) and out[0][3] == np.inf and out[2][3] == np.inf
        assert np.isfinite(out[0][np.r_[0:3, 4:200, 201:300]]).all()


def _wide(dtype, n=300, p=2100, seed=2):
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((n, 3)) * [5.0, 3.0, 2.0]
    return (S @ rng.standard_normal((3, p)) + rng.standard_normal((n, p)) + 2.0).astype(dtype)


def test_large_float32_tiles_use_the_transposed_products_to_float32_accuracy():
    """Tiles of 150 rows x 2,100 columns of float32 data take ``(Y^T T)^T``;
    the scan's sketch, ``gram`` and ``rmatmat`` then agree with float64
    arithmetic to float32 accuracy (and float64 data never take it)."""
    X = _wide(np.float32)
    op = DataOperator(X, block_bytes=150 * X.shape[1] * 4, n_threads=2)
    rows = op._offsets[1] - op._offsets[0]
    T = X[:rows, : op._cols]
    assert _blocks._transposed(T, np.zeros((rows, 4), np.float32))
    assert not _blocks._transposed(T.astype(np.float64), np.zeros((rows, 4)))
    assert not _blocks._transposed(T, np.zeros(rows, np.float32))  # vectors: BLAS gemv
    op.scan(sketch=8, random_state=3)
    X64 = X.astype(np.float64)
    W = op.sketch["W"]
    XW = X64 @ W.astype(np.float32).astype(np.float64)
    scale = np.abs(X64).sum(axis=0)[:, None] * np.abs(XW).max()
    err = np.abs(op.sketch["XtXW"] - X64.T @ XW) / scale
    assert err.max() < 1e-6
    op.centre(op.stats["mean"])
    Xc = X64 - X64.mean(axis=0)
    W = np.random.default_rng(4).standard_normal((X.shape[1], 5))
    Z, G = op.gram(W)
    Zref = Xc @ W.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(Z, Zref, rtol=0, atol=2e-5 * np.abs(Zref).max())
    Gref = Xc.T @ Zref
    np.testing.assert_allclose(G, Gref, rtol=0, atol=2e-5 * np.abs(Gref).max())
    Y = np.random.default_rng(6).standard_normal((X.shape[0], 3))
    R = op.rmatmat(Y)
    Rref = Xc.T @ Y
    np.testing.assert_allclose(R, Rref, rtol=0, atol=2e-5 * np.abs(Rref).max())


def test_transposed_products_keep_every_block_row_and_column():
    """``_add_tproduct`` adds ``T^T Y`` in both layouts (a wrong transpose or a
    dropped tile would be off by the whole product)."""
    rng = np.random.default_rng(8)
    T = rng.standard_normal((200, 1100)).astype(np.float32)
    Y = rng.standard_normal((200, 3)).astype(np.float32)
    ref = T.astype(np.float64).T @ Y.astype(np.float64)
    for tile in (T, T[:100, :500]):
        acc = np.ones((tile.shape[1], 3))
        _blocks._add_tproduct(acc, tile, Y[: tile.shape[0]])
        sub = tile.astype(np.float64).T @ Y[: tile.shape[0]].astype(np.float64)
        np.testing.assert_allclose(acc - 1.0, sub, rtol=0, atol=1e-4 * np.abs(ref).max())


def _four_rows(T, f):
    """``f`` of four rows at a time then of the remaining rows one by one, in
    float64 elementwise NumPy (each operation one IEEE operation per column):
    the compiled kernels' order of operations."""
    n = T.shape[0]
    R = T.astype(np.float64)
    acc = np.zeros(T.shape[1])
    i = 0
    while i + 4 <= n:
        acc = acc + f(i, R[i], R[i + 1], R[i + 2], R[i + 3])
        i += 4
    while i < n:
        acc = acc + f(i, R[i])
        i += 1
    return acc


@pytest.mark.skipif(not compiled_available("products"), reason="kernels not built")
@pytest.mark.parametrize("n", [1, 6, 11, 40])
def test_compiled_loops_do_each_operation_as_written(n):
    """The compiled loops (AVX2 or baseline, chosen at load) give the bits of
    their operations done one by one in float64: no fused multiply-add and no
    reassociation (so both versions agree, and agree with the C source)."""
    rng = np.random.default_rng(n)
    B = (rng.standard_normal((n, 263)) * 10).astype(np.float32)
    z = rng.standard_normal(n)
    mod = load("products")

    def prod(i, *rows):
        if len(rows) == 4:
            a, b, c, d = rows
            return (z[i] * a + z[i + 1] * b) + (z[i + 2] * c + z[i + 3] * d)
        return z[i] * rows[0]

    out = np.zeros(263)
    mod.rmatvec_exact(B, z, out)
    np.testing.assert_array_equal(out, _four_rows(B, prod))
    got = [np.empty(263) for _ in range(5)]
    mod.column_moments(B, *got)
    np.testing.assert_array_equal(
        got[0], _four_rows(B, lambda i, *r: (r[0] + r[1]) + (r[2] + r[3]) if len(r) == 4 else r[0])
    )
    m = got[3]

    def sq(i, *r):
        d = [x - m for x in r]
        return (
            (d[0] * d[0] + d[1] * d[1]) + (d[2] * d[2] + d[3] * d[3]) if len(r) == 4 else d[0] ** 2
        )

    np.testing.assert_array_equal(got[4], _four_rows(B, sq))


@pytest.mark.parametrize("shape", [(205, 1501), (7, 33), (9, 2), (1, 64)])
def test_eight_column_products_agree_with_float64_to_float32_accuracy(shape):
    """``matmat8`` / ``rmatmat8`` (the start's 8-column products; compiled and
    twin) give ``B W`` and ``B^T Y`` of strided blocks to float32 accuracy,
    added into slices of wider float64 arrays, whatever the row and column
    tails (rows not a multiple of 8, an odd number of columns)."""
    rng = np.random.default_rng(3456)
    n, p = shape
    B = rng.standard_normal((n, p + 5)).astype(np.float32)[:, 2 : 2 + p]
    W = rng.standard_normal((p, 16)).astype(np.float32)
    Y = rng.standard_normal((n, 8)).astype(np.float32)
    B64 = B.astype(np.float64)
    for mod in _modules():
        Z = np.ones((n, 16))
        mod.matmat8(B, W[:, 8:].copy(), mod.pair_rows(W[:, 8:]), Z[:, 8:])
        want = B64 @ W[:, 8:].astype(np.float64)
        np.testing.assert_array_equal(Z[:, :8], 1.0)
        np.testing.assert_allclose(Z[:, 8:] - 1.0, want, rtol=0, atol=1e-5 * np.sqrt(p))
        G = np.ones((p, 16))
        mod.rmatmat8(B, Y, G[:, :8])
        np.testing.assert_array_equal(G[:, 8:], 1.0)
        want = B64.T @ Y.astype(np.float64)
        np.testing.assert_allclose(G[:, :8] - 1.0, want, rtol=0, atol=1e-5 * np.sqrt(n))


@pytest.mark.parametrize("shape", [(205, 1501), (7, 33), (16, 9), (3, 1)])
def test_the_one_read_fused_kernel_is_float64_arithmetic(shape):
    """``fused_exact`` gives ``z = B v - shift`` and adds ``B^T z`` in float64
    arithmetic (to 1e-13) on strided float32 blocks, for groups of 8 rows
    and the rows left."""
    rng = np.random.default_rng(3457)
    n, p = shape
    B = (rng.standard_normal((n, p + 3)) + 2.0).astype(np.float32)[:, 1 : 1 + p]
    v, shift = rng.standard_normal(p), rng.standard_normal(n)
    B64 = B.astype(np.float64)
    z_want = B64 @ v - shift
    for mod in _modules():
        z, acc = np.empty(n), np.full(p, 0.5)
        mod.fused_exact(B, v, shift, z, acc)
        np.testing.assert_allclose(z, z_want, rtol=1e-13, atol=1e-13 * np.abs(z_want).max())
        g = B64.T @ z_want
        np.testing.assert_allclose(acc - 0.5, g, rtol=1e-12, atol=1e-13 * np.abs(g).max())


def test_float32_passes_take_the_compiled_kernels_and_keep_float64_accuracy(monkeypatch):
    """A float32 operator's fused pass (one read per row block) and Gram pass
    (8-column kernels) give the products of the float64 data: ``X^T z`` in
    float64 arithmetic for the pass's ``z``, Gram products to float32 accuracy."""
    if not (compiled_available("products") and load("products").FAST):
        pytest.skip("kernels not built, or no AVX-512 (the data path keeps BLAS)")
    calls = []
    kernels = load("products")
    monkeypatch.setattr(_blocks, "_products", lambda: _Counting(kernels, calls))
    rng = np.random.default_rng(3458)
    X = (rng.standard_normal((203, 700)) + 3.0).astype(np.float32)
    op = DataOperator(X, block_bytes=40 * 700 * 4, n_threads=2).scan(sketch=8)
    op.centre(op.stats["mean"])
    Xc = X.astype(np.float64) - X.astype(np.float64).mean(axis=0)
    v, W = rng.standard_normal(700), rng.standard_normal((700, 8))
    z, g = op.fused(v)
    np.testing.assert_allclose(z, Xc @ v, rtol=1e-9, atol=1e-12 * np.abs(z).max())
    np.testing.assert_allclose(g, Xc.T @ z, rtol=1e-11, atol=1e-12 * np.abs(g).max())
    Z, G = op.gram(W)
    np.testing.assert_allclose(Z, Xc @ W, rtol=0, atol=1e-5 * np.abs(Z).max())
    np.testing.assert_allclose(G, Xc.T @ Z, rtol=0, atol=1e-5 * np.abs(G).max())
    np.testing.assert_allclose(op.matmat(W[:, :3]), Xc @ W[:, :3], atol=1e-5 * np.abs(Z).max())
    assert {"fused_exact", "matmat8", "rmatmat8"} <= set(calls)


class _Counting:
    """A kernel module that records the names of the kernels used."""

    def __init__(self, mod, calls):
        self._mod, self._calls, self.__name__ = mod, calls, mod.__name__

    def __getattr__(self, name):
        self._calls.append(name)
        return getattr(self._mod, name)
