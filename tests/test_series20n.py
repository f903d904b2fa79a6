"""Issue 20 round 14: ``stability_`` of a series whose rows are not in order
(near-copies anywhere: :func:`row_redundancy`, :func:`series_order`)."""

import warnings

import numpy as np
import pytest

from neurospca import SPCATV
from neurospca.decomposition._stability import (
    REDUNDANCY,
    SERIES_CORRELATION,
    SERIES_DRAWS,
    SERIES_NOTE,
    is_series,
    row_redundancy,
    serial_correlation,
    series_order,
    series_stability,
    spearman_brown,
)

from .test_stability20m import OP, _series  # smooth noise in time, a planted pattern


def _cohort(seed, n=133):
    """Exchangeable rows: three patterns with correlated Gaussian weights plus noise."""
    rng = np.random.default_rng(seed)
    patterns = np.zeros((3, 144))
    for k in range(3):
        patterns[k, 40 * k : 40 * k + 30] = 1.0
    weights = rng.multivariate_normal(np.zeros(3), 0.3 + 0.7 * np.eye(3), size=n)
    return 2.0 * weights @ patterns + rng.standard_normal((n, 144))


def test_row_redundancy_finds_near_copies_in_any_order():
    X, _ = _series(3480)
    shuffled = X[np.random.default_rng(3480).permutation(len(X))]
    assert abs(serial_correlation(shuffled)) < SERIES_CORRELATION  # the old check misses it
    assert row_redundancy(shuffled) > 3 * REDUNDANCY
    assert row_redundancy(X[::12]) < REDUNDANCY  # every 12th point: no near-copies left


@pytest.mark.parametrize("seed", [3481, 3482])
def test_exchangeable_rows_are_not_redundant(seed):
    assert row_redundancy(_cohort(seed)) < REDUNDANCY
    assert row_redundancy(np.random.default_rng(seed).standard_normal((100, 300))) < REDUNDANCY


def test_series_order_puts_near_copies_next_to_each_other():
    X, _ = _series(3483)
    perm = np.random.default_rng(3483).permutation(len(X))
    steps = np.abs(np.diff(perm[series_order(X[perm])]))
    assert np.mean(steps <= 3) > 0.9, np.mean(steps <= 3)
    assert sorted(series_order(X[perm])) == list(range(len(X)))


def test_a_shuffled_series_is_a_series_and_a_cohort_is_not():
    X, _ = _series(3484)
    shuffled = X[np.random.default_rng(3484).permutation(len(X))]
    model = SPCATV(2, operator=OP, random_state=0)
    assert is_series(model, shuffled)
    assert not is_series(model, _cohort(3484))


def test_a_shuffled_noise_series_does_not_claim_to_reproduce():
    """Smooth noise, rows shuffled: random halves hold near-copies of each other's
    rows (the serial check sees nothing); each component is now flagged."""
    X, _ = _series(3485)
    X = X[np.random.default_rng(3485).permutation(len(X))]
    with pytest.warns(UserWarning, match="contiguous blocks") as record:
        m = SPCATV(2, operator=OP, random_state=0).fit(X)
    assert np.all(m.stability_ < 0.5), m.stability_
    said = [str(w.message) for w in record if "contiguous blocks" in str(w.message)]
    assert said and said[0].endswith(SERIES_NOTE)


def test_a_pattern_of_a_shuffled_series_keeps_its_stability():
    X, pattern = _series(3486, strength=2.0)
    X = X[np.random.default_rng(3486).permutation(len(X))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(2, operator=OP, random_state=0).fit(X)
    k = int(np.argmax(np.abs(m.components_ @ pattern)))
    cos = abs(m.components_[k] @ pattern) / np.linalg.norm(m.components_[k]) / 4.0
    assert cos > 0.9 and m.stability_[k] > 0.9, (cos, m.stability_)


def test_spearman_brown_carries_half_fits_to_full_fits():
    np.testing.assert_allclose(spearman_brown([0.0, 0.5, 1.0]), [0.0, 2.0 / 3.0, 1.0])
    r = np.linspace(0.0, 1.0, 11)
    assert np.all(spearman_brown(r) >= r) and np.all(np.diff(spearman_brown(r)) > 0)


def test_a_series_claim_is_the_median_of_its_draws(monkeypatch):
    """One lucky draw of six does not carry a component (the mean of three did);
    the median is not size-corrected by default (SERIES_SIZE_CORRECTION)."""
    from neurospca.decomposition import _stability

    draws = iter(np.array([[0.9, 0.8], [0.0, 0.8], [0.1, 0.7], [0.0, 0.9], [0.1, 0.8], [0.0, 0.6]]))
    monkeypatch.setattr(_stability, "component_stability", lambda *a: next(draws))
    X, _ = _series(3487)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(2, operator=OP, random_state=0, stability=False).fit(X)
    out = series_stability(m, X, {"alpha": None, "alpha_rel": 1.0})
    assert SERIES_DRAWS == 6
    np.testing.assert_allclose(out, [0.05, 0.8])
    assert out[0] < 0.5 <= out[1]
    draws = iter(np.array([[0.9, 0.8], [0.0, 0.8], [0.1, 0.7], [0.0, 0.9], [0.1, 0.8], [0.0, 0.6]]))
    monkeypatch.setattr(_stability, "SERIES_SIZE_CORRECTION", True)
    out = series_stability(m, X, {"alpha": None, "alpha_rel": 1.0})
    np.testing.assert_allclose(out, spearman_brown(np.array([0.05, 0.8])))


def test_a_default_fit_asks_once_whether_its_rows_are_a_series(monkeypatch):
    """The check reads every row (and, in no order, each row's nearest
    neighbour): ``set_stability`` hands its answer to ``halves_stability``."""
    from neurospca.decomposition import _stability

    calls = []
    real = _stability.is_series
    monkeypatch.setattr(_stability, "is_series", lambda *a: calls.append(1) or real(*a))
    X, _ = _series(3487)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(2, operator=OP, random_state=0).fit(X)
    assert len(calls) == 1
    assert np.all(np.isfinite(m.stability_))
