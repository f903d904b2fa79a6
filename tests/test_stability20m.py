"""Issue 20 round 13: ``stability_`` of a series (rows in order alike, e.g. the
time points of a run) from halves of contiguous blocks, not random rows."""

import warnings

import numpy as np
import pytest
from scipy.ndimage import gaussian_filter1d

from neurospca import SPCATV, tv_from_mask
from neurospca.decomposition._stability import (
    SERIES_BLOCKS,
    SERIES_CORRELATION,
    serial_correlation,
    series_halves,
)

OP = tv_from_mask(np.ones((12, 12), dtype=bool))


def _series(seed, strength=0.0, n=240):
    """Spatially white noise smoothed in time (each row ~ its neighbours), plus
    ``strength`` times a smooth time course on a 4 x 4 pattern."""
    rng = np.random.default_rng(seed)
    X = gaussian_filter1d(rng.standard_normal((n, 144)), 4.0, axis=0)
    pattern = np.zeros((12, 12))
    pattern[2:6, 2:6] = 1.0
    course = gaussian_filter1d(rng.standard_normal(n), 4.0)
    X = X / X.std(axis=0) + strength * (course / course.std())[:, None] * pattern.ravel()
    return X, pattern.ravel()


def _fit(X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SPCATV(2, operator=OP, random_state=0).fit(X)


def test_serial_correlation_tells_a_series_from_exchangeable_rows():
    X, _ = _series(3434)
    assert serial_correlation(X) > 0.8
    rows = np.random.default_rng(3434).permutation(len(X))
    assert abs(serial_correlation(X[rows])) < SERIES_CORRELATION
    assert abs(serial_correlation(np.random.default_rng(3435).standard_normal((60, 30)))) < 0.1


def test_series_halves_are_disjoint_contiguous_blocks():
    X = np.arange(40.0)[:, None] * np.ones((1, 3))
    a, b = series_halves(X, 3436)
    rows = np.sort(np.concatenate([a[:, 0], b[:, 0]]))
    np.testing.assert_array_equal(rows, np.arange(40.0))
    assert len(a) == len(b) == 20
    assert np.sum(np.diff(a[:, 0]) > 1) < SERIES_BLOCKS // 2  # runs of whole blocks


@pytest.mark.parametrize("seed", [3430, 3431])
def test_a_noise_series_does_not_claim_to_reproduce(seed):
    """Smooth noise with no pattern: random halves of the rows are near-copies
    and agreed (stability_ 0.73-1.00 before round 13) while fits of the first
    and second half of the series do not agree; now every component is flagged."""
    X, _ = _series(seed)
    with pytest.warns(UserWarning, match="contiguous blocks"):
        m = SPCATV(2, operator=OP, random_state=0).fit(X)
    assert np.all(m.stability_ < 0.5), m.stability_


def test_a_pattern_of_a_series_keeps_its_stability():
    X, pattern = _series(3432, strength=2.0)
    m = _fit(X)
    k = int(np.argmax(np.abs(m.components_ @ pattern)))
    cos = abs(m.components_[k] @ pattern) / np.linalg.norm(m.components_[k]) / 4.0
    assert cos > 0.9 and m.stability_[k] > 0.9, (cos, m.stability_)
