"""A memmap's pages given back after every row block, or kept mapped
(``_data.GIVE_BACK_PAGES``, issue 22 round 19): the same products bit for
bit, and no page given back when kept. Seeds 3747-3748."""

import numpy as np
import pytest

from neurospca.decomposition import _data
from neurospca.decomposition._data import DataOperator


@pytest.fixture
def memmap_x(tmp_path):
    rng = np.random.default_rng(3747)
    X = (rng.standard_normal((97, 531)) + 2.0).astype(np.float32)
    path = tmp_path / "X.npy"
    np.save(path, X)
    return np.load(path, mmap_mode="r")


def _passes(X, monkeypatch, give_back):
    """A scan with its sketch, a fused pass and a Gram pass; the pages given back."""
    given = []
    monkeypatch.setattr(_data, "GIVE_BACK_PAGES", give_back)
    monkeypatch.setattr(_data._Pages, "give", lambda self, B: given.append(B.shape[0]))
    op = DataOperator(X, block_bytes=16 * 531 * 4, n_threads=2).scan(sketch=8)
    op.centre(op.stats["mean"])
    rng = np.random.default_rng(3748)
    v, W = rng.standard_normal(531), rng.standard_normal((531, 8))
    out = [op.sketch["XW"], op.sketch["XtXW"], *op.fused(v), *op.gram(W)]
    return out, given


def test_pages_kept_or_given_back_give_the_same_products(memmap_x, monkeypatch):
    kept, given_kept = _passes(memmap_x, monkeypatch, False)
    back, given_back = _passes(memmap_x, monkeypatch, True)
    assert given_kept == []
    assert sum(given_back) == 3 * memmap_x.shape[0]  # every row, once per pass
    for a, b in zip(kept, back, strict=True):
        np.testing.assert_array_equal(a, b)
    Xc = np.asarray(memmap_x, dtype=np.float64)
    Xc = Xc - Xc.mean(axis=0)
    z, g = kept[2], kept[3]
    v = np.random.default_rng(3748).standard_normal(531)
    np.testing.assert_allclose(z, Xc @ v, rtol=1e-10)
    np.testing.assert_allclose(g, Xc.T @ (Xc @ v), rtol=1e-9)
