"""Issue 20 round 16: rows sorted by a grouping (subjects sorted by site) are not a
series for ``stability_``; a time series, a random walk and near-copies still are;
half components that agree with each other but not with the full component do not
carry its claim (``capped_stability``)."""

import warnings

import numpy as np
from scipy.ndimage import gaussian_filter1d

from neurospca import SPCATV, tv_from_mask
from neurospca.decomposition._stability import (
    SERIES_CORRELATION,
    HalfFits,
    capped_stability,
    component_stability,
    halves_stability,
    is_series,
    serial_correlation,
    serial_decay,
)

OP = tv_from_mask(np.ones((12, 12), dtype=bool))
PATTERN = np.zeros((12, 12))
PATTERN[2:6, 2:6] = 1.0
PATTERN = PATTERN.ravel()


def _sorted_by_site(seed, n=120, sites=3, offset=0.7, strength=0.0):
    """White noise plus one offset map per site (rows sorted by site), plus
    ``strength`` times a subject score on a 4 x 4 pattern."""
    rng = np.random.default_rng(seed)
    site = np.repeat(np.arange(sites), n // sites)
    X = rng.standard_normal((site.size, 144)) + offset * rng.standard_normal((sites, 144))[site]
    X += strength * rng.standard_normal(site.size)[:, None] * PATTERN
    return X - X.mean(axis=0)


def test_rows_sorted_by_site_are_alike_without_decay():
    X = _sorted_by_site(3578)
    assert serial_correlation(X) > 2 * SERIES_CORRELATION  # a series for round 13's check
    assert serial_decay(X) < SERIES_CORRELATION / 2
    assert not is_series(SPCATV(2), X)
    rows = np.random.default_rng(3578).permutation(len(X))
    assert abs(serial_correlation(X[rows])) < SERIES_CORRELATION


def test_a_series_a_random_walk_and_near_copies_stay_series():
    rng = np.random.default_rng(3579)
    smooth = gaussian_filter1d(rng.standard_normal((240, 144)), 4.0, axis=0)
    assert serial_decay(smooth) > 2 * SERIES_CORRELATION
    walk = rng.standard_normal((240, 144)).cumsum(axis=0)
    assert serial_decay(walk) < SERIES_CORRELATION  # no decay within the sample ...
    pairs = np.repeat(rng.standard_normal((120, 144)), 2, axis=0)
    pairs += 0.1 * rng.standard_normal(pairs.shape)
    for X in (smooth, walk, pairs):  # ... but near-copies next to each other
        assert is_series(SPCATV(2), X)


def test_a_pattern_of_rows_sorted_by_site_is_scored_on_random_halves():
    """No "contiguous blocks" warning (main: a series), and the planted pattern reproduces."""
    X = _sorted_by_site(3581, strength=3.0)
    assert serial_correlation(X) > SERIES_CORRELATION  # a series for main
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = SPCATV(2, operator=OP, random_state=0).fit(X)
    assert not any("contiguous blocks" in str(w.message) for w in caught)
    k = int(np.argmax(np.abs(m.components_ @ PATTERN)))
    cos = abs(m.components_[k] @ PATTERN) / np.linalg.norm(m.components_[k]) / 4.0
    assert cos > 0.9 and m.stability_[k] > 0.9, (cos, m.stability_)


def _maps(seed, k=3, p=144):
    """``k`` sparse unrelated maps (rows)."""
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((k, p)) * (rng.random((k, p)) < 0.2)
    return M / np.linalg.norm(M, axis=1, keepdims=True)


def test_capped_stability_is_the_split_half_value_when_the_halves_hold_the_component():
    C = _maps(3582)
    rng = np.random.default_rng(3582)
    A = C + 0.02 * rng.standard_normal(C.shape)
    B = C[::-1] + 0.02 * rng.standard_normal(C.shape)  # any order
    np.testing.assert_allclose(capped_stability(C, A, B), component_stability(C, A, B))
    assert np.all(capped_stability(C, A, B) > 0.8)


def test_halves_that_agree_on_another_pattern_do_not_carry_the_claim():
    """Both halves hold a pattern the full fit does not have where the full fit
    holds its second component: they agree with each other (main claimed 1.0),
    not with it."""
    C, other = _maps(3581, 2), _maps(3580, 1)
    halves = HalfFits((np.vstack([C[0], other[0]]), np.vstack([other[0], C[0]])))
    halves.refit = tuple(halves)  # the refit from the full fit holds the other pattern too
    np.testing.assert_allclose(component_stability(C, *halves), [1.0, 1.0])
    model = SPCATV(2, random_state=0)
    model.components_ = C
    stab = halves_stability(model, None, {}, halves, series=False)
    assert stab[0] > 0.99 and stab[1] < 0.2, stab
