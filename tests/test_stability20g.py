"""Issue 20 round 8: stability_ under alpha_rel="auto" from the walk's split
halves, and the noise floor's early stop."""

import warnings

import numpy as np
import pytest

from neurospca import SPCATV, tv_from_mask
from neurospca.decomposition import _stability, below_noise, component_stability
from neurospca.decomposition._stability import _chosen_params, halves_stability


def _planted(seed, strength=2.0):
    rng = np.random.default_rng(seed)
    pattern = np.zeros((12, 12))
    pattern[2:6, 2:6] = 1.0
    noise = rng.standard_normal((120, 144))
    return strength * rng.standard_normal((120, 1)) * pattern.ravel() + noise, pattern.ravel()


def _fit(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SPCATV(2, operator=tv_from_mask(np.ones((12, 12), dtype=bool)), **kw).fit(X)


def test_halves_that_reproduce_are_the_stability_without_a_refit():
    """Every component reproduced by the given halves: their split-half
    measure is returned as it is (nothing is refitted)."""
    X, _ = _planted(3183)
    m = _fit(X, random_state=0, stability=False)
    rng = np.random.default_rng(3183)
    halves = [m.components_ + 0.05 * rng.standard_normal(m.components_.shape) for _ in range(2)]
    expected = component_stability(m.components_, *halves)
    assert np.all(expected >= 0.5)
    got = halves_stability(m, X, _chosen_params(m), halves)
    np.testing.assert_array_equal(got, expected)


def test_a_pattern_the_halves_missed_is_refitted_before_it_is_flagged():
    """Half B's fit missed the planted pattern (its components are noise): the
    split-half measure alone says 0.1 or so; the halves refitted from the full
    fit find the pattern in both halves, so it is not flagged. The noise
    component's refit is not trusted: the noise floor sets it to 0."""
    X, pattern = _planted(3184)
    m = _fit(X, random_state=0, stability=False)
    k = int(np.argmax(np.abs(m.components_ @ pattern)))
    rng = np.random.default_rng(3184)
    missed = rng.standard_normal(m.components_.shape)
    assert component_stability(m.components_, m.components_, missed)[k] < 0.5
    params = _chosen_params(m)
    stab = halves_stability(m, X, params, (m.components_, missed))
    assert stab[k] > 0.9, stab
    flags = below_noise(m, X, params)
    assert not flags[k] and flags[1 - k]


def test_default_fit_flags_noise_and_keeps_the_planted_pattern():
    X, pattern = _planted(3185)
    with pytest.warns(UserWarning, match="not reproduce across split halves"):
        m = SPCATV(2, operator=tv_from_mask(np.ones((12, 12), dtype=bool)), random_state=0).fit(X)
    k = int(np.argmax(np.abs(m.components_ @ pattern)))
    assert m.stability_[k] > 0.9 and m.stability_[1 - k] == 0.0, m.stability_
    noise, _ = _planted(3185, strength=0.0)
    with pytest.warns(UserWarning, match="not reproduce across split halves"):
        m = SPCATV(2, operator=tv_from_mask(np.ones((12, 12), dtype=bool)), random_state=0).fit(
            noise
        )
    assert np.all(m.stability_ == 0.0), m.stability_


@pytest.mark.parametrize("strength", [0.0, 2.0])
def test_noise_floor_stop_gives_the_flags_of_all_permutations(monkeypatch, strength):
    """The floor's early stop (no component within NOISE_MARGIN above the floor
    of the first NOISE_FIRST permutations) flags what all nine flag."""
    X, _ = _planted(3186, strength)
    m = _fit(X, random_state=0, stability=False)
    params = _chosen_params(m)
    early = below_noise(m, X, params)
    monkeypatch.setattr(_stability, "NOISE_FIRST", _stability.NOISE_PERMUTATIONS)
    np.testing.assert_array_equal(early, below_noise(m, X, params))
    assert early.all() if strength == 0.0 else early.sum() == 1
