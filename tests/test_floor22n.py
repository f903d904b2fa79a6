"""The 8-column kernels by column tiles and W prepared once per pass (issue 22, round 14).

``matmat8`` runs by tiles of 4,096 columns (W's tile stays in the L2 cache),
``rmatmat8`` by tiles of 1,024 columns and groups of 8 rows (each row read as
a run); both keep the chunked float32 sums of before, so the result of a wide
block is the result of the same kernel on column slices narrower than a tile,
bit for bit. Checked against float64 NumPy on odd sizes, strided blocks and
memmaps, with the AVX-512 kernels and with the plain loops of CPUs without
them. Seeds 3500-3503.
"""

import numpy as np
import pytest

from neurospca._kernels import compiled_available, load
from neurospca.decomposition import _blocks
from neurospca.decomposition._data import DataOperator

pytestmark = pytest.mark.skipif(
    not compiled_available("products"), reason="the compiled kernels are not built"
)

#: Columns of one tile of ``matmat8`` (2,048 pairs) and of ``rmatmat8``.
XW_TILE, TY_TILE = 4096, 1024


@pytest.fixture(params=["avx512", "plain"])
def kernels(request):
    """The compiled kernels, with the AVX-512 loops or the plain C loops."""
    mod = load("products")
    if request.param == "avx512" and not mod.FAST:
        pytest.skip("this CPU has no AVX-512")
    before = mod._use_avx512(request.param == "avx512")
    yield mod
    mod._use_avx512(before)


def _strided(rng, n, p):
    """A float32 block with strided rows (columns 3: of a wider array)."""
    return (rng.standard_normal((n, p + 7)) + 1.5).astype(np.float32)[:, 3 : 3 + p]


@pytest.mark.parametrize("shape", [(300, 8195), (261, 4097), (9, 2051), (8, 1)])
def test_tiled_products_agree_with_float64(kernels, shape):
    """``B W`` and ``B^T Y`` across tile and chunk boundaries (more than 256
    rows, odd columns past a tile, rows not a multiple of 8) agree with
    float64 NumPy to float32 accuracy, and add into what was there."""
    rng = np.random.default_rng(3500)
    n, p = shape
    B = _strided(rng, n, p)
    W = rng.standard_normal((p, 8)).astype(np.float32)
    Y = rng.standard_normal((n, 8)).astype(np.float32)
    B64 = B.astype(np.float64)
    Z = np.full((n, 8), 2.0)
    kernels.matmat8(B, W, kernels.pair_rows(W), Z)
    want = B64 @ W.astype(np.float64)
    np.testing.assert_allclose(Z - 2.0, want, rtol=0, atol=1e-5 * np.sqrt(p))
    G = np.full((p, 8), -1.0)
    kernels.rmatmat8(B, Y, G)
    want = B64.T @ Y.astype(np.float64)
    np.testing.assert_allclose(G + 1.0, want, rtol=0, atol=1e-5 * np.sqrt(n))


def test_tiles_keep_the_bits_of_one_tile(kernels):
    """A wide block gives, bit for bit, what the kernel gives on its column
    slices of at most one tile (where the tiles change nothing): the sums
    are those of the untiled loops."""
    rng = np.random.default_rng(3501)
    n, p = 37, 2 * XW_TILE + 333
    B = _strided(rng, n, p)
    W = rng.standard_normal((p, 8)).astype(np.float32)
    Y = rng.standard_normal((n, 8)).astype(np.float32)
    Z = np.zeros((n, 8))
    kernels.matmat8(B, W, kernels.pair_rows(W), Z)
    Zs = np.zeros((n, 8))
    for lo in range(0, p, XW_TILE):
        Ws = W[lo : lo + XW_TILE]
        kernels.matmat8(B[:, lo : lo + XW_TILE], Ws, kernels.pair_rows(Ws), Zs)
    np.testing.assert_array_equal(Z, Zs)
    G = np.zeros((p, 8))
    kernels.rmatmat8(B, Y, G)
    Gs = np.zeros((p, 8))
    for lo in range(0, p, 32):  # one strip of 32 columns at a time
        kernels.rmatmat8(B[:, lo : lo + 32], Y, Gs[lo : lo + 32])
    np.testing.assert_array_equal(G, Gs)


def test_plain_loops_agree_with_the_avx512_kernels():
    """On a CPU with AVX-512, the plain loops (what a CPU without it runs)
    give the same products to float32 accuracy."""
    mod = load("products")
    if not mod.FAST:
        pytest.skip("this CPU has no AVX-512")
    rng = np.random.default_rng(3502)
    B = _strided(rng, 203, 5001)
    W = rng.standard_normal((5001, 8)).astype(np.float32)
    Y = rng.standard_normal((203, 8)).astype(np.float32)
    out = {}
    for on in (True, False):
        before = mod._use_avx512(on)
        try:
            Z, G = np.zeros((203, 8)), np.zeros((5001, 8))
            mod.matmat8(B, W, mod.pair_rows(W), Z)
            mod.rmatmat8(B, Y, G)
        finally:
            mod._use_avx512(before)
        out[on] = Z, G
    for a, b in zip(out[True], out[False], strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * np.abs(b).max())


class _Counting:
    """The kernel module, counting ``pair_rows`` calls."""

    def __init__(self, mod):
        self._mod, self.pairs = mod, 0
        self.__name__ = mod.__name__

    def pair_rows(self, W):
        self.pairs += 1
        return self._mod.pair_rows(W)

    def __getattr__(self, name):
        return getattr(self._mod, name)


def _memmap(tmp_path, X):
    path = tmp_path / "x.npy"
    np.save(path, X)
    return np.load(path, mmap_mode="r")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_passes_prepare_w_once_and_match_numpy(tmp_path, monkeypatch, dtype):
    """The scan's sketch, ``gram`` and ``matmat`` of many row blocks: float32
    data pair W's rows once per pass (not per block) and give the same bits
    from a memmap as in memory; both data types agree with float64 NumPy."""
    mod = load("products")
    counting = _Counting(mod)
    monkeypatch.setattr(_blocks, "_products", lambda: counting)
    monkeypatch.setattr("neurospca.decomposition._data._products", lambda: counting)
    rng = np.random.default_rng(3503)
    n, p = 211, 1301
    X = rng.standard_normal((n, 3)) @ rng.standard_normal((3, p)) + rng.standard_normal((n, p))
    X = (X + 2.0).astype(dtype)
    W = rng.standard_normal((p, 8))
    results = []
    for data in (X, _memmap(tmp_path, X)):
        op = DataOperator(data, block_bytes=32 * p * X.itemsize, n_threads=2)
        assert len(op._offsets) - 1 >= 6  # blocks of 32 rows (MIN_BLOCK_ROWS)
        op.scan(sketch=8, random_state=1)
        op.centre(op.stats["mean"])
        counting.pairs = 0
        Z, G = op.gram(W)
        M = op.matmat(W[:, :3])
        wide = dtype == np.float32 and mod.FAST
        assert counting.pairs == (2 if wide else 0)  # one per pass, not per block
        results.append((op.sketch["XtXW"], Z, G, M))
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)
    X64 = X.astype(np.float64)
    Xc = X64 - X64.mean(axis=0)
    Wd = W.astype(dtype).astype(np.float64)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    _, Z, G, M = results[0]
    np.testing.assert_allclose(Z, Xc @ Wd, rtol=0, atol=tol * np.abs(Z).max())
    np.testing.assert_allclose(G, Xc.T @ Z, rtol=0, atol=tol * np.abs(G).max())
    np.testing.assert_allclose(M, Xc @ Wd[:, :3], rtol=0, atol=tol * np.abs(M).max())


def test_passes_without_avx512_match_numpy(monkeypatch):
    """Where the CPU has no AVX-512 (``FAST`` false: the data path keeps
    BLAS, no W is prepared), the float32 passes still agree with NumPy."""
    mod = load("products")
    monkeypatch.setattr(mod, "FAST", False)
    rng = np.random.default_rng(3500)
    X = (rng.standard_normal((157, 903)) + 3.0).astype(np.float32)
    op = DataOperator(X, block_bytes=16 * 903 * 4, n_threads=2).scan(sketch=8)
    op.centre(op.stats["mean"])
    W = rng.standard_normal((903, 8))
    assert isinstance(op._cast_wide(W), np.ndarray)
    Xc = X.astype(np.float64) - X.astype(np.float64).mean(axis=0)
    Z, G = op.gram(W)
    np.testing.assert_allclose(Z, Xc @ W, rtol=0, atol=1e-5 * np.abs(Z).max())
    np.testing.assert_allclose(G, Xc.T @ Z, rtol=0, atol=1e-5 * np.abs(G).max())
