"""The scan's tile in one compiled call (issue 22 round 18, branch scan22r).

``scan_tile`` computes a tile's column moments and merges them into the
running statistics in place: the same bits as ``column_moments`` followed by
the NumPy merge the scan used before, compiled (AVX-512 or plain loops) and
NumPy twin; the scan's statistics against NumPy for every kind of input; the
non-finite values found wherever they are.
"""

import numpy as np
import pytest

from neurospca._kernels import _numpy_products, compiled_available, load
from neurospca.decomposition import _data
from neurospca.decomposition._data import DataOperator

SEED = 3693


def _modules():
    return [_numpy_products] + ([load("products")] if compiled_available("products") else [])


def _before(mod, T, n_before, mean, m2, lo, hi):
    """The scan's arithmetic before round 18: ``column_moments``, then
    Chan's merge of ``_blocks._Stats.add`` (here column by column, in Python
    floats: the same IEEE operations in the same order)."""
    n, w = T.shape
    s, lo_b, hi_b, mean_b, m2_b = (np.empty(w) for _ in range(5))
    mod.column_moments(T, s, lo_b, hi_b, mean_b, m2_b)
    f_m2, f_mean = n_before * n / (n_before + n), n / (n_before + n)
    for j in range(w):
        d = float(mean_b[j]) - float(mean[j])
        m2[j] = float(m2[j]) + (float(m2_b[j]) + d * d * f_m2)
        mean[j] = float(mean[j]) + d * f_mean
        lo[j], hi[j] = min(lo[j], lo_b[j]), max(hi[j], hi_b[j])
    return not (np.isfinite(s).all() and np.isfinite(lo_b).all() and np.isfinite(hi_b).all())


def _running(rng, p, n_before):
    if n_before == 0:
        return [np.zeros(p), np.zeros(p), np.full(p, np.inf), np.full(p, -np.inf)]
    return [
        rng.standard_normal(p) * 50,
        rng.uniform(0, 1e3, p),
        rng.uniform(-60, 0, p),
        rng.uniform(0, 60, p),
    ]


@pytest.mark.parametrize("avx512", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 5), (3, 700), (23, 40), (205, 1500), (33, 9000)])
@pytest.mark.parametrize("n_before", [0, 611])
def test_scan_tile_is_the_moments_and_merge_bit_for_bit(avx512, dtype, shape, n_before):
    """Strided tiles, row counts not a multiple of 4, widths not a multiple of
    16 and spanning several 1 MB chunks (9,000 columns of 33 rows): the same
    bits as before, from the AVX-512 and the plain loops alike."""
    rng = np.random.default_rng(SEED)
    n, p = shape
    T = (rng.standard_normal((n, p + 9)) * 30 + 7e2).astype(dtype)[:, 4 : 4 + p]
    T[:, :3] = -2.5  # constant columns
    for mod in _modules():
        before = mod._use_avx512(avx512) if mod is not _numpy_products else None
        try:
            want = _running(np.random.default_rng(1), p, n_before)
            got = [a.copy() for a in want]
            flag = _before(mod, T, n_before, *want)
            assert mod.scan_tile(T, n_before, *got) == 0
            assert not flag
            for a, b in zip(got, want, strict=True):
                np.testing.assert_array_equal(a, b)
        finally:
            if before is not None:
                mod._use_avx512(before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_scan_tile_counts_the_columns_with_non_finite_values(dtype, value):
    """Anywhere in the tile: the first and the last row (a row left over from
    the groups of 4), the last column (past the last 16), a vector column."""
    rng = np.random.default_rng(SEED + 1)
    for mod in _modules():
        for i, j in [(0, 0), (-1, -1), (-1, 36), (17, 5)]:
            T = rng.standard_normal((37, 50)).astype(dtype)
            T[i, j] = value
            stats = _running(rng, 50, 0)
            assert mod.scan_tile(T, 0, *stats) == 1
        T[3, 7] = value
        assert mod.scan_tile(T, 0, *_running(rng, 50, 0)) == 2


def _data_sets(tmp_path, rng):
    X = (rng.standard_normal((301, 2600)) * [[3.0]] + 1e2).astype(np.float32)
    X[:, 5] = 4.0
    path = tmp_path / "X.npy"
    np.save(path, X)
    out = {
        "float32 C": X,
        "float32 F": np.asfortranarray(X),
        "float64": X.astype(np.float64),
        "memmap": np.load(path, mmap_mode="r"),
    }
    try:
        import dask.array as da

        out["dask"] = da.from_array(X, chunks=(64, 2600))
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("kernels", ["cython", "numpy"])
def test_scan_statistics_against_numpy(tmp_path, monkeypatch, kernels):
    """Means, centred sums of squares, minima and maxima of every kind of
    input (small blocks and tiles: many merges) against NumPy in float64."""
    if kernels == "numpy":
        monkeypatch.setenv("NEUROSPCA_KERNELS", "numpy")
    monkeypatch.setattr(_data, "MIN_BLOCK_ROWS", 1)
    monkeypatch.setattr(_data, "TILE_BYTES", 40 * 1000 * 4)
    rng = np.random.default_rng(SEED + 2)
    for name, X in _data_sets(tmp_path, rng).items():
        X64 = np.asarray(X, dtype=np.float64)
        op = DataOperator(X, block_bytes=40 * X64.shape[1] * 8, n_threads=2).scan()
        mean = X64.mean(axis=0)
        np.testing.assert_allclose(op.stats["mean"], mean, rtol=1e-13, err_msg=name)
        m2 = ((X64 - mean) ** 2).sum(axis=0)
        np.testing.assert_allclose(op.stats["m2"], m2, rtol=1e-11, atol=1e-9, err_msg=name)
        np.testing.assert_array_equal(op.stats["min"], X64.min(axis=0), err_msg=name)
        np.testing.assert_array_equal(op.stats["max"], X64.max(axis=0), err_msg=name)
        assert op.stats["m2"][5] == 0.0


def test_scan_statistics_the_same_with_and_without_avx512():
    if not compiled_available("products"):
        pytest.skip("compiled kernels not built")
    kernels = load("products")
    X = (np.random.default_rng(SEED + 3).standard_normal((407, 3000)) + 5.0).astype(np.float32)
    before = kernels._use_avx512(True)
    try:
        fast = DataOperator(X, n_threads=2).scan().stats
        kernels._use_avx512(False)
        plain = DataOperator(X, n_threads=2).scan().stats
    finally:
        kernels._use_avx512(before)
    for key in fast:
        np.testing.assert_array_equal(fast[key], plain[key])


@pytest.mark.parametrize("kernels", ["cython", "numpy"])
def test_scan_finds_non_finite_values_in_the_last_block(tmp_path, monkeypatch, kernels):
    """The count and message of before, for a NaN and an inf in the last row
    block's last row and last column (and one in the first block)."""
    if kernels == "numpy":
        monkeypatch.setenv("NEUROSPCA_KERNELS", "numpy")
    rng = np.random.default_rng(SEED + 4)
    for name, X in _data_sets(tmp_path, rng).items():
        if name == "memmap":
            bad = np.load(tmp_path / "X.npy")
            bad[-1, -1], bad[-1, 1000], bad[0, 3] = np.nan, np.inf, -np.inf
            np.save(tmp_path / "bad.npy", bad)
            X = np.load(tmp_path / "bad.npy", mmap_mode="r")
        elif name == "dask":
            X = X.copy()
            X[-1, -1], X[-1, 1000], X[0, 3] = np.nan, np.inf, -np.inf
        else:
            X = X.copy(order="K")
            X[-1, -1], X[-1, 1000], X[0, 3] = np.nan, np.inf, -np.inf
        op = DataOperator(X, block_bytes=50 * 2600 * 8, n_threads=2)
        with pytest.raises(ValueError, match="^X contains 3 NaN or infinite values; remove"):
            op.scan()
